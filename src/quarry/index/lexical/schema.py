"""The Tantivy schema of a lexical partition: one document per message that has searchable text.

Fields
- `text`: the dialogue text (text / code / thinking blocks joined), exact (analyzer.py `folded`):
  quoted words, phrases, prefixes, identifiers and paths match here.
- `text_stem`: the same text for ranking (analyzer.py `folded_stem`: no stopwords, English stems);
  unquoted single words match here. Term frequencies only: phrases go to `text`.
- `actions`: the action text (tool names, tool_use summaries, commands, paths, tool_result output;
  never the bodies of Write/Edit inputs), exact. The `actions` lane searches it. Paths and commands
  have no stemmed twin: stems would not help them and would cost indexing CPU.
- `role`, `origin`, `scope`, `repo`, `tag`: raw, lowercased, indexed: const-score filters.
- `sess`: the session's ordinal in the SQLite store (i64, fast + indexed). Collapsing hits to sessions
  reads it as a fast field; a session's documents are deleted by its term; session ids (allow-lists,
  `session:`) and SQL-evaluated session sets filter on it by term set, mapped to ordinals in SQL (a
  session id field would cost ~15% of the indexing CPU for a term every document repeats).
- `msg`: the message's ordinal in the SQLite store (i64, fast): hits map to message rows through it.
- `time`: the message time in epoch ms (i64, fast).

Nothing is stored: the SQLite store holds every message, and the few hits a search shows get their
id and text (for snippets) from there. A stored copy would cost ingest CPU and disk for every
message, and a unique message-id term per document would bloat the term dictionary.

The index directory holds a file `ANALYZER` with the analyzer version it was built with. `open_index`
replaces an index of another version (or one that predates the file) by an empty one, which the partition
then fills from its store: the store's records never change, only the searchable text.

Integer fields are signed on purpose: unsigned fast fields panic the indexing thread when given
Python ints through `Document(...)` (see the library notes).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import tantivy

from quarry.core import lanes
from quarry.core.vocab import DIALOGUE_BLOCK_TYPES
from quarry.index.lexical import analyzer
from quarry.v1 import units_pb2

TEXT = "text"
TEXT_STEM = "text_stem"
ACTIONS = "actions"
ROLE = "role"
ORIGIN = "origin"
SCOPE = "scope"
REPO = "repo"
TAG = "tag"
SESSION_ORD = "sess"
MESSAGE_ORD = "msg"
TIME = "time"

LANE_FIELDS = {lanes.DIALOGUE: TEXT, lanes.ACTIONS: ACTIONS}  # the field each lexical lane searches
STEMMED = {TEXT: TEXT_STEM}  # the ranking twin of an exact field
VERSION_FILE = "ANALYZER"

_log = logging.getLogger(__name__)


FIELDS = (TEXT, TEXT_STEM, ACTIONS, ROLE, ORIGIN, SCOPE, REPO, TAG, SESSION_ORD, MESSAGE_ORD, TIME)


def build_schema(omit: str | None = None) -> tantivy.Schema:
    """The partition's schema; `omit` leaves one field out (bench/index_size.py measures each field's cost)."""
    sb = tantivy.SchemaBuilder()
    text_fields = [
        (TEXT, analyzer.ANALYZER_NAME, "position"),
        (TEXT_STEM, analyzer.STEM_ANALYZER_NAME, "freq"),
        (ACTIONS, analyzer.ANALYZER_NAME, "position"),
        *((name, "raw", "basic") for name in (ROLE, ORIGIN, SCOPE, REPO, TAG)),
    ]
    for name, tokenizer, option in text_fields:
        if name != omit:
            sb.add_text_field(name, tokenizer_name=tokenizer, index_option=option)
    if omit != SESSION_ORD:
        sb.add_integer_field(SESSION_ORD, indexed=True, fast=True)
    for name in (MESSAGE_ORD, TIME):
        if name != omit:
            sb.add_integer_field(name, fast=True)
    return sb.build()


def open_index(directory: Path) -> tantivy.Index:
    """Create or reopen the index, re-register the analyzers, and take manual reloads.

    An index built with another analyzer version is replaced by an empty one (the caller refills it)."""
    _replace_outdated(directory)
    directory.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(build_schema(), path=str(directory), reuse=True)
    _write_version(directory)
    analyzer.register(index)
    index.config_reader(reload_policy="manual")
    return index


def index_version(directory: Path) -> int | None:
    """The analyzer version of the index in `directory`: None when there is no index, 1 for an index
    that predates the version file."""
    if not (directory / "meta.json").exists():
        return None
    try:
        return int((directory / VERSION_FILE).read_text())
    except FileNotFoundError:
        return 1


def _replace_outdated(directory: Path) -> None:
    version = index_version(directory)
    if version is None or version == analyzer.VERSION:
        return
    _log.warning(
        "the Tantivy index in %s was built with analyzer version %d, this build uses %d: "
        "it is rebuilt from the store (searchable text only; records are unchanged)",
        directory,
        version,
        analyzer.VERSION,
    )
    shutil.rmtree(directory)


def _write_version(directory: Path) -> None:
    """Record the analyzer version, durably, before any document is indexed with it."""
    path = directory / VERSION_FILE
    if path.exists():
        return
    temporary = directory / (VERSION_FILE + ".tmp")
    with open(temporary, "w") as out:
        out.write(str(analyzer.VERSION))
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


def dialogue_text(message: units_pb2.Message) -> str:
    return "\n".join([text for b in message.blocks if b.type in DIALOGUE_BLOCK_TYPES and (text := b.text)])


def action_text(message: units_pb2.Message, commands: Mapping[str, str]) -> str:
    """Tool traffic of a message: what a user remembers of an action, not the file bodies it wrote.

    `commands` maps a tool_use block id to its normalized action's command, which some agents
    keep only inside the input JSON.
    """
    parts: list[str] = []
    for block in message.blocks:
        if block.type == "tool_use":
            parts.extend((block.tool_name, block.text, block.path))
            command = commands.get(block.id, "")
            if command and command not in block.text:
                parts.append(command)
        elif block.type == "tool_result":
            parts.append(block.text)
    return "\n".join(p for p in parts if p)
