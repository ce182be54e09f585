"""An in-process replica of the dialogue and vector channels on a BEIR folder, for analyzer and fusion
experiments that a full `make bench-quality` (minutes of embedding per run) makes slow.

    python bench/quality_replica.py [--dataset ../shared/datasets/scifact] [--partitions 2]
        [--exact-weight 0 0.5] [--depth 100 200] [--no-stopwords]

It indexes every document with the partitions' own analyzers (quarry.index.lexical.analyzer), routed to
partitions as the ingest node routes sessions, ranks each query as an OR of its distinct stems (what the
dialogue lane does with `admission {lexical_coverage: 0, lexical_min_matched_terms: 1}`), optionally
adds the exact form's BM25 times `--exact-weight`, embeds each document's passages with the configured
MiniLM embedder and ranks a document by its nearest passage (FAISS inner product), and fuses the two
channels' top `--depth` with RRF at k = 60. It prints nDCG@10 and recall@100 for the dialogue ranking
and the fusion of each combination. Its figures agree with the cluster's to about 0.0002
(bench/RESULTS.md); the cluster stays the measurement of record.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import faiss  # noqa: E402
import tantivy  # noqa: E402

from bench.beir import Dataset, doc_session, load_dataset, ndcg_at, recall_at  # noqa: E402
from quarry.core.dialogue import embed_text  # noqa: E402
from quarry.core.routing import partition_for  # noqa: E402
from quarry.dsl import plain_text_query  # noqa: E402
from quarry.index.lexical import analyzer  # noqa: E402
from quarry.vector.embed import load_embedder  # noqa: E402

RRF_K = 60


def build_partitions(dataset: Dataset, partitions: int, stopwords: bool) -> list[tantivy.Index]:
    indexes = []
    for _ in range(partitions):
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("stem", tokenizer_name="stem", index_option="freq")
        builder.add_text_field("exact", tokenizer_name="exact", index_option="freq")
        builder.add_text_field("id", tokenizer_name="raw", stored=True)
        index = tantivy.Index(builder.build())
        stem = analyzer.build_stem_analyzer() if stopwords else _stem_without_stopwords()
        index.register_tokenizer("stem", stem)
        index.register_tokenizer("exact", analyzer.build_analyzer())
        indexes.append(index)
    writers = [index.writer(heap_size=100_000_000, num_threads=1) for index in indexes]
    for doc in dataset.docs:
        text = f"{doc.title}\n\n{doc.text}"
        writers[partition_for(doc_session(doc).id, partitions)].add_document(
            tantivy.Document(stem=text, exact=text, id=doc.id)
        )
    for index, writer in zip(indexes, writers, strict=True):
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
    return indexes


def _stem_without_stopwords() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(analyzer.MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def lexical(indexes: Sequence[tantivy.Index], text: str, exact_weight: float, depth: int) -> list[str]:
    tokens = [t for t in dict.fromkeys(analyzer.tokens(plain_text_query(text))) if analyzer.stem(t)]
    stems = list(dict.fromkeys(analyzer.stem(t) for t in tokens))
    hits: list[tuple[float, str]] = []
    for index in indexes:
        clauses = [(tantivy.Occur.Should, tantivy.Query.term_query(index.schema, "stem", s)) for s in stems]
        if exact_weight:
            clauses += [
                (
                    tantivy.Occur.Should,
                    tantivy.Query.boost_query(tantivy.Query.term_query(index.schema, "exact", t), exact_weight),
                )
                for t in tokens
            ]
        if not clauses:
            continue
        searcher = index.searcher()
        for score, address in searcher.search(tantivy.Query.boolean_query(clauses), limit=depth).hits:
            hits.append((-score, searcher.doc(address)["id"][0]))
    return [doc for _, doc in sorted(hits)[:depth]]


def semantic(dataset: Dataset, depth: int) -> dict[str, list[str]]:
    embedder = load_embedder("minilm")
    assert embedder is not None
    # Each document as the passages the vector node embeds (quarry.vector.passages), ranked by its nearest.
    owners = []
    passages = []
    for i, d in enumerate(dataset.docs):
        split = embedder.passages(embed_text("user", "current", [f"{d.title}\n\n{d.text}"]))
        passages += split
        owners += [i] * len(split)
    docs = embedder.embed(passages)
    ids = list(dataset.queries)
    queries = embedder.embed([plain_text_query(dataset.queries[q]) for q in ids])
    index = faiss.IndexFlatIP(docs.shape[1])
    index.add(docs)
    _, nearest = index.search(queries, depth * 4)
    ranked = {}
    for row, q in enumerate(ids):
        seen = dict.fromkeys(owners[i] for i in nearest[row] if i >= 0)
        ranked[q] = [dataset.docs[i].id for i in list(seen)[:depth]]
    return ranked


def rrf(rankings: Sequence[Sequence[str]]) -> list[str]:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (RRF_K + rank)
    return [doc for doc, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=REPO.parent / "shared" / "datasets" / "scifact")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--exact-weight", type=float, nargs="+", default=[0.0])
    parser.add_argument("--depth", type=int, nargs="+", default=[100, 200])
    parser.add_argument("--no-stopwords", action="store_true", help="keep stopwords in the stemmed field")
    args = parser.parse_args(argv)
    dataset = load_dataset(args.dataset)
    indexes = build_partitions(dataset, args.partitions, stopwords=not args.no_stopwords)
    vectors = semantic(dataset, max(args.depth))
    count = len(dataset.queries)
    for weight in args.exact_weight:
        for depth in args.depth:
            dialogue = fused = fused_recall = 0.0
            for qid, text in dataset.queries.items():
                judged = dataset.qrels[qid]
                ranking = lexical(indexes, text, weight, depth)
                fusion = rrf([ranking, vectors[qid][:depth]])[:100]
                dialogue += ndcg_at(ranking, judged)
                fused += ndcg_at(fusion, judged)
                fused_recall += recall_at(fusion, judged)
            print(
                f"partitions {args.partitions}  exact weight {weight:<5}  depth {depth:<4}  dialogue nDCG@10 "
                f"{dialogue / count:.4f}  RRF nDCG@10 {fused / count:.4f}  recall@100 {fused_recall / count:.4f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
