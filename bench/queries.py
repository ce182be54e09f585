"""The benchmark's query set, and how its latency is measured (the same way for every engine).

Four classes, drawn deterministically from the synthetic generator's lexicon with a spread of term
frequencies (terms are picked log-uniformly over frequency rank, so common, middling and rare terms
all occur):

- `and`: two terms, both required. Half the pairs come from one topic (terms that co-occur in the
  sessions about it), half from anywhere;
- `or`: two terms, either;
- `phrase`: a two-word collocation the generator emits;
- `and_role`: like `and`, restricted to assistant messages.

Each query carries the Quarry query string (the compact DSL) and the equivalent FTS5 MATCH string
plus role condition.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from quarry.cli import synthetic

CLASSES = ("and", "or", "phrase", "and_role")
# Words that are operators or field names in the query DSL or FTS5: a user would not search for them
# bare, and keeping them out means both engines parse every query as plain terms.
_RESERVED = frozenset(
    (  # noqa: SIM905 - a word list reads better as words
        "and or not near where sessions messages blocks actions files runs sort group by count limit exists "
        "seq semantic role lane text tool path repo title since until"
    ).split()
)


@dataclass(frozen=True)
class BenchQuery:
    kind: str  # one of CLASSES
    words: tuple[str, ...]  # the two terms, or the phrase's two words
    quarry: str  # the Quarry DSL query
    fts_match: str  # the FTS5 MATCH expression
    role: str  # "" or the role the query is restricted to


def term_pool() -> list[str]:
    """Searchable single words of the lexicon in frequency-rank order (most frequent first)."""
    return [
        w
        for w in synthetic.LEXICON
        if w.isascii() and w.isalpha() and w not in synthetic.FUNCTION_WORDS and w.lower() not in _RESERVED
    ]


def _spread_pick(rnd: random.Random, pool: Sequence[str]) -> str:
    """A term at a log-uniformly drawn rank: frequent and rare terms are equally likely to be asked."""
    return pool[min(len(pool) - 1, int(math.exp(rnd.random() * math.log(len(pool)))) - 1)]


def _pair(rnd: random.Random, pool: list[str], topical: bool) -> tuple[str, str]:
    allowed = set(pool)
    while True:
        if topical:
            topic = [w for w in rnd.choice(synthetic.TOPICS) if w in allowed]
            if len(topic) < 2:
                continue
            a, b = rnd.sample(topic, 2)
        else:
            a, b = _spread_pick(rnd, pool), _spread_pick(rnd, pool)
        if a != b:
            return a, b


def _phrases() -> list[tuple[str, str]]:
    out = []
    for c in synthetic.COLLOCATIONS:
        words = c.split()
        if len(words) == 2 and all(w.isascii() and w.isalpha() for w in words):
            out.append((words[0], words[1]))
    return out


def build_queries(per_class: int = 50, seed: int = 11) -> list[BenchQuery]:
    """`per_class` distinct queries of each class, the same for the same arguments."""
    rnd = random.Random(seed)
    pool = term_pool()
    queries: list[BenchQuery] = []

    def distinct_pairs(topical_every_other: bool) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = []
        while len(pairs) < per_class:
            pair = _pair(rnd, pool, topical=topical_every_other and len(pairs) % 2 == 0)
            if pair not in pairs and pair[::-1] not in pairs:
                pairs.append(pair)
        return pairs

    for a, b in distinct_pairs(topical_every_other=True):
        queries.append(BenchQuery("and", (a, b), f"{a} {b}", f'"{a}" AND "{b}"', ""))
    for a, b in distinct_pairs(topical_every_other=False):
        queries.append(BenchQuery("or", (a, b), f"{a} OR {b}", f'"{a}" OR "{b}"', ""))
    phrases = _phrases()
    rnd.shuffle(phrases)
    for i in range(per_class):  # more than the collocations there are would repeat them
        a, b = phrases[i % len(phrases)]
        queries.append(BenchQuery("phrase", (a, b), f'"{a} {b}"', f'"{a} {b}"', ""))
    for a, b in distinct_pairs(topical_every_other=True):
        queries.append(BenchQuery("and_role", (a, b), f"{a} {b} role:assistant", f'"{a}" AND "{b}"', "assistant"))
    return queries


@dataclass(frozen=True)
class Latency:
    """Per-query wall times of one class, in milliseconds."""

    samples_ms: tuple[float, ...]

    @property
    def p50(self) -> float:
        return float(np.percentile(self.samples_ms, 50))

    @property
    def p95(self) -> float:
        return float(np.percentile(self.samples_ms, 95))

    def as_dict(self) -> dict[str, float]:
        return {"p50_ms": round(self.p50, 3), "p95_ms": round(self.p95, 3), "n": len(self.samples_ms)}


def measure(
    run: Callable[[BenchQuery], object], queries: Sequence[BenchQuery], warmup: bool = True
) -> dict[str, Latency]:
    """Wall time of `run(query)` per query, grouped by class plus `all`, after one untimed warm-up pass
    (so both engines are measured with warm caches)."""
    if warmup:
        for q in queries:
            run(q)
    by_class: dict[str, list[float]] = {k: [] for k in CLASSES}
    for q in queries:
        started = time.perf_counter()
        run(q)
        by_class[q.kind].append((time.perf_counter() - started) * 1000)
    out = {k: Latency(tuple(v)) for k, v in by_class.items() if v}
    out["all"] = Latency(tuple(x for v in by_class.values() for x in v))
    return out
