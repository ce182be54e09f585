"""The archive's term statistics as the sum of its partitions' (BM25 with one IDF across partitions).

Summed by the query node from a TermStats fan-out, or by an index node that holds every partition of the
archive, within the search itself (`PartitionSearchRequest.node_term_stats`): the same sums either way.
"""

from __future__ import annotations

from collections.abc import Iterable

from quarry.v1 import index_pb2


def summed_stats(partitions: Iterable[index_pb2.PartitionTermStats]) -> index_pb2.GlobalTermStats:
    """Documents and each term's document frequency, summed over the partitions, in first-seen order."""
    docs = 0
    freqs: dict[tuple[str, str], int] = {}
    for stats in partitions:
        docs += stats.num_docs
        for term in stats.terms:
            key = (term.field, term.term)
            freqs[key] = freqs.get(key, 0) + term.doc_freq
    return index_pb2.GlobalTermStats(
        num_docs=docs,
        terms=[index_pb2.TermFrequency(field=f, term=t, doc_freq=n) for (f, t), n in freqs.items()],
    )
