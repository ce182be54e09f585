"""The cost budget of a query: what its forms that read stored text row by row may cost the partitions.

Most predicates run on an index: words, phrases and prefixes on Tantivy, keywords, counts and dates on
SQLite's columns and indexes. A few forms cannot; each pass of theirs goes over every candidate row of
every partition, and the partition does it in full whatever the request's deadline:

- `contains:"…"` (and `session.contains:`): every message's dialogue text decoded from its stored row
  and matched literally (LITERAL_SCAN);
- full text on a unit without a full-text index (every unit but messages and blocks: `actions where
  text:…`, `runs where ~"…"`): a substring test over each row's stored text, per word (ROW_SCAN);
- fields read from each row's stored record rather than a column (ROW_SCANNED_FIELDS: `words`,
  `cost_usd`, `model` on runs, `instruction`, …), and substrings of stored tool text (`command:`,
  `output:`), per value (ROW_SCAN).

Measured on the sample archive (3,000 messages, one partition): a `contains:` pass ~46 ms, a message
field read from the record (`words >= 5`) ~5 ms, a substring of tool output <1 ms. The weights follow
that ratio, and the budget lets a query hold several of each (every example query of the language
costs at most 8 of it), where 600 `contains:e` (6 KB of query) cost 5 s of a partition's CPU.

The compiler charges each such part as it lowers it (`Meter.charge`), so a query past the budget fails
QUERY_TOO_COSTLY at the part that went past it, before any partition is asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from quarry.dsl.ast import Span
from quarry.dsl.errors import query_error
from quarry.v1 import errors_pb2

BUDGET = 64
LITERAL_SCAN = 8
ROW_SCAN = 1

# Units whose full-text leaves are substring tests over stored text (messages and blocks have Tantivy).
SCANNED_TEXT_UNITS = frozenset(
    {"actions", "files", "assertions", "runs", "observed-events", "context-snapshots", "delegations"}
)
# Per unit, the fields (as the plan names them) a partition reads from each row's stored record, or finds
# by a substring of stored tool text (quarry.index.lexical.predicates and unit_tables).
ROW_SCANNED_FIELDS: dict[str, frozenset[str]] = {
    "messages": frozenset({"words", "word_count", "cost_usd"}),
    "actions": frozenset({"command", "output"}),
    "runs": frozenset({"model", "provider", "branch", "duration_ms", "tool_uses", "total_tokens", "cost_usd"}),
    "observed-events": frozenset({"object_ref"}),
    "context-snapshots": frozenset({"trigger", "model", "branch", "inheritance", "cwd", "tokens_before"}),
    "delegations": frozenset({"tool", "child_model", "instruction", "is_error"}),
}


def field_weight(unit: str, field: str) -> int:
    """What one value of `field` on `unit` (sessions for a session field) costs: 0 when indexed."""
    if unit == "sessions" and field == "contains":
        return LITERAL_SCAN
    return ROW_SCAN if field in ROW_SCANNED_FIELDS.get(unit, ()) else 0


def text_weight(unit: str) -> int:
    """What one word of a full-text leaf on `unit` costs: 0 where a full-text index answers it."""
    return ROW_SCAN if unit in SCANNED_TEXT_UNITS else 0


@dataclass
class Meter:
    """The cost of a query so far, charged part by part in the order the compiler lowers them."""

    spent: int = 0

    def charge(self, weight: int, written: str, span: Span | None) -> None:
        """Add a part's cost; QUERY_TOO_COSTLY at its span when it takes the query past the budget."""
        if not weight:
            return
        self.spent += weight
        if self.spent > BUDGET:
            raise query_error(
                errors_pb2.QUERY_TOO_COSTLY,
                f"the query reads stored text row by row too often: `{written}` takes its cost to {self.spent}, "
                f"past the budget of {BUDGET} per query (a contains: literal costs {LITERAL_SCAN}, full text on a "
                f"unit other than messages and blocks, or a field read from each stored row, {ROW_SCAN} per "
                "word or value); use indexed forms (words, phrases, keyword fields) or split the query",
                span,
                written,
            )
