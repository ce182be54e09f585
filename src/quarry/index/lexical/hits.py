"""A ranked session search's hits, explained: each kept session's summary, its best message, the terms
that matched in it and a snippet.

Explaining is most of a search's cost, so only the hits that made the index node's top are explained
(leaf.PreparedSearch). The index stores no text: a hit's message text, for its matched terms and its
snippet, comes from the message row. Snippets mark matches with [ and ] (snippets.py); other text is kept
plain.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import NamedTuple

import tantivy
from tantivy import Occur, Query

from quarry.core.lanes import ACTIONS
from quarry.index.lexical import analyzer, fts, schema, snippets
from quarry.index.lexical.store import Store
from quarry.v1 import index_pb2, units_pb2


class Candidate(NamedTuple):
    """A session's best hit (its address None when explained from its message's place: leaf.explain)."""

    score: float
    address: tantivy.DocAddress | None
    ord: int


class Ranked(NamedTuple):
    candidate: Candidate
    session_id: str
    tool_uses: int  # the session's messages carrying a tool use


class HitWriter:
    """Explains ranked sessions on one searcher snapshot and the store."""

    def __init__(self, searcher: tantivy.Searcher, sch: tantivy.Schema, store: Store) -> None:
        self.searcher = searcher
        self.schema = sch
        self.store = store

    def fill(
        self,
        response: index_pb2.PartitionSearchResponse,
        top: Sequence[Ranked],
        ranking: fts.Fts,
        field: str,
        lane: str,
        with_snippets: bool,
        message_ords: Sequence[int] | None = None,
    ) -> None:
        """The ranked sessions as hits of `response`: session summary, best message, matched terms, snippet.
        `message_ords`: each one's best message, when known (else read at the candidates' addresses)."""
        if not top:
            return
        began = time.perf_counter()
        snippets_s = 0.0
        if message_ords is None:
            message_ords = self.searcher.fast_field_values(schema.MESSAGE_ORD, [r.candidate.address for r in top])
        rows = self.store.hit_rows([(r.candidate.ord, m) for r, m in zip(top, message_ords, strict=True)])
        # a session replaced since the snapshot (or since a rank-only answer named its place) is gone
        top = [r for r in top if r.candidate.ord in rows and rows[r.candidate.ord].session_id == r.session_id]
        messages = {r.candidate.ord: units_pb2.Message.FromString(rows[r.candidate.ord].message) for r in top}
        texts = self._texts(messages, lane)
        need_tokens = fts.needs_tokens(ranking)
        fixed_terms = [] if need_tokens else fts.query_terms(ranking)
        stemmed = field in schema.STEMMED
        snippets = _Snippets(self, ranking, field) if with_snippets else None
        surface = "action" if lane == ACTIONS else "message"
        add = response.hits.add
        for ranked in top:
            candidate, row = ranked.candidate, rows[ranked.candidate.ord]
            text = texts[candidate.ord]
            per_hit = snippets is not None and snippets.shared is None
            tokens = analyzer.tokens(text) if need_tokens or per_hit else []
            hit_terms = fts.matched_terms(ranking, tokens, stemmed) if need_tokens else fixed_terms
            snippet = ""
            if snippets is not None:
                started = time.perf_counter()
                snippet = snippets.of(text, tokens)
                snippets_s += time.perf_counter() - started
            hit = add(
                score=candidate.score,
                ranked=True,
                message_id=messages[candidate.ord].id,
                matched_terms=hit_terms,
                match_surface=surface,
                sort_time_ms=row.updated_ms,
                snippet=snippet,
                without_tool_calls=ranked.tool_uses == 0,
            )
            hit.session.ParseFromString(row.summary)
        response.snippets_ms = snippets_s * 1000.0
        response.hydrate_ms = (time.perf_counter() - began) * 1000.0 - response.snippets_ms

    def _texts(self, messages: dict[int, units_pb2.Message], lane: str) -> dict[int, str]:
        """The text each message (by session ordinal) was searched in: its action text on the actions
        lane (with the commands of its tool calls), its dialogue text otherwise."""
        if lane != ACTIONS:
            return {o: schema.dialogue_text(m) for o, m in messages.items()}
        tool_uses = [b.id for m in messages.values() for b in m.blocks if b.type == "tool_use"]
        commands = self.store.commands(list(messages), tool_uses) if tool_uses else {}
        return {o: schema.action_text(m, commands) for o, m in messages.items()}

    def generator(self, query: Query, field: str) -> tantivy.SnippetGenerator:
        generator = tantivy.SnippetGenerator.create(self.searcher, query, self.schema, field)
        generator.set_max_num_chars(snippets.WHOLE)  # the window is chosen after (snippets.py)
        return generator


class _Snippets:
    """The snippets of one search's hits: one generator for all of them, unless what a snippet marks
    differs per hit (prefixes, stems), then one per set of words to mark (hits marking the same words
    share one), highlighting exactly those words (a prefix query has no terms of its own to highlight,
    a stemmed word's are in another field)."""

    def __init__(self, writer: HitWriter, ranking: fts.Fts, field: str) -> None:
        self.writer = writer
        self.field = field
        self.highlight = fts.Highlighter(ranking, field)
        self.per_words: dict[tuple[str, ...], tantivy.SnippetGenerator] = {}
        self.shared: tantivy.SnippetGenerator | None = None
        if not fts.prefixes(ranking) and not (field in schema.STEMMED and fts.stemmed_leaves(ranking)):
            self.shared = writer.generator(fts.to_query(ranking, writer.schema, field), field)

    def of(self, text: str, tokens: list[str]) -> str:
        """The snippet of a hit's text (its `tokens` are needed when no generator is shared)."""
        marks = self.shared
        if marks is None:
            words = tuple(sorted(self.highlight(tokens)))
            marks = self.per_words.get(words)
            if marks is None:
                terms = [(Occur.Should, Query.term_query(self.writer.schema, self.field, w)) for w in words]
                marks = self.per_words[words] = self.writer.generator(Query.boolean_query(terms), self.field)
        return snippets.marked(marks, self.field, text)
