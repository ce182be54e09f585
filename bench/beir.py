"""BEIR-format retrieval datasets for Quarry: load a folder, turn its documents into sessions, score runs.

A BEIR folder holds `corpus.jsonl` ({_id, title, text}), `queries.jsonl` ({_id, text}) and
`qrels/<split>.tsv` (query-id, corpus-id, score; a header line). Each document becomes one session of
origin `chatgpt-export` (an imported conversation: no repo, no working directory) holding one user
message "title\\n\\ntext"; its native id is `beir-<doc id>`, so `doc_id(session_id)` recovers the
document from a hit. Only `_id`, `title` and `text` are read: some datasets (SciFact) keep the gold
evidence in `metadata`, which must never reach the index.

Metrics follow BEIR / pytrec_eval: nDCG@k with gain = relevance grade and discount log2(rank + 1),
the ideal DCG taken over the judged relevant documents of the query; recall@k = relevant documents
retrieved in the top k / relevant documents judged. Queries without a relevant judgment are not scored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from quarry.ingest.normalize import build_session
from quarry.ingest.sources import DraftBlock, DraftMessage, DraftSession
from quarry.v1 import units_pb2

ORIGIN = "chatgpt-export"
NATIVE_PREFIX = "beir-"
SESSION_PREFIX = f"{ORIGIN}:{NATIVE_PREFIX}"
# Every document gets the same time: a corpus has no chronology, and equal times keep runs byte-identical.
DOC_TIME_MS = 1_700_000_000_000

Qrels = dict[str, dict[str, int]]  # query id -> doc id -> relevance grade


@dataclass(frozen=True, slots=True)
class Doc:
    id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    docs: list[Doc]
    queries: dict[str, str]  # query id -> text, only the queries judged in the split
    qrels: Qrels


def load_dataset(folder: Path, split: str = "test") -> Dataset:
    """The corpus, the split's judgments and the queries they judge (in qrels order)."""
    folder = Path(folder)
    qrels = read_qrels(folder / "qrels" / f"{split}.tsv")
    all_queries = dict(_read_queries(folder / "queries.jsonl"))
    missing = [q for q in qrels if q not in all_queries]
    if missing:
        raise ValueError(f"{len(missing)} judged query ids are not in queries.jsonl, e.g. {missing[0]!r}")
    return Dataset(
        name=folder.name,
        docs=list(read_corpus(folder / "corpus.jsonl")),
        queries={q: all_queries[q] for q in qrels},
        qrels=qrels,
    )


def read_corpus(path: Path) -> Iterator[Doc]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                row = json.loads(line)
                yield Doc(id=str(row["_id"]), title=row.get("title") or "", text=row.get("text") or "")


def _read_queries(path: Path) -> Iterator[tuple[str, str]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                row = json.loads(line)
                yield str(row["_id"]), row["text"]


def read_qrels(path: Path) -> Qrels:
    """query id -> doc id -> grade; the header line is skipped, CRLF line ends are fine."""
    qrels: Qrels = {}
    rows = path.read_text(encoding="utf-8").splitlines()
    for number, row in enumerate(rows[1:], start=2):
        if not row.strip():
            continue
        fields = row.split("\t")
        if len(fields) != 3:
            raise ValueError(f"{path}:{number}: expected query-id, corpus-id, score separated by tabs")
        query_id, doc_id, score = fields
        qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


# ----- documents -> sessions ---------------------------------------------------------------------


def doc_session(doc: Doc) -> units_pb2.Session:
    """One session holding the document as one user message, through the ingest normalizer."""
    draft = DraftSession(origin=ORIGIN, native_id=NATIVE_PREFIX + doc.id, source_path="", title=doc.title.strip())
    message = draft.add_message(DraftMessage(role="user", authored=True, time_ms=DOC_TIME_MS))
    body = f"{doc.title}\n\n{doc.text}" if doc.title else doc.text
    draft.add_block(message, DraftBlock("text", text=body))
    return build_session(draft)


def doc_id(session_id: str) -> str:
    """The document a session was made from (the inverse of `doc_session`)."""
    if not session_id.startswith(SESSION_PREFIX):
        raise ValueError(f"{session_id!r} is not a session made from a BEIR document")
    return session_id[len(SESSION_PREFIX) :]


# ----- metrics -----------------------------------------------------------------------------------


def ndcg_at(ranked: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k of one ranked list of doc ids; 0 when the query has no relevant document."""
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    if idcg == 0:
        return 0.0
    dcg = sum(judged.get(d, 0) / math.log2(rank + 1) for rank, d in enumerate(ranked[:k], start=1))
    return dcg / idcg


def recall_at(ranked: Sequence[str], judged: Mapping[str, int], k: int = 100) -> float:
    """Share of the query's relevant documents in the top k; 0 when it has none."""
    relevant = {d for d, g in judged.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mean_metrics(runs: Mapping[str, Sequence[str]], qrels: Qrels) -> dict[str, float]:
    """Mean nDCG@10 and recall@100 over the judged queries with a relevant document; a judged query
    missing from `runs` counts as an empty answer."""
    scored = [q for q, judged in qrels.items() if any(g > 0 for g in judged.values())]
    if not scored:
        raise ValueError("no query has a relevant judgment")
    ndcg = sum(ndcg_at(runs.get(q, ()), qrels[q], 10) for q in scored) / len(scored)
    recall = sum(recall_at(runs.get(q, ()), qrels[q], 100) for q in scored) / len(scored)
    return {"ndcg@10": ndcg, "recall@100": recall}
