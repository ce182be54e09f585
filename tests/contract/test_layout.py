"""The house rules a newcomer can rely on (ARCHITECTURE.md): a module's path is its import path; the nodes
never import one another; the SDK imports no node; the search vocabulary is declared in one module; only
the partition store and the two plan-to-SQL compilers hold SQL against the store's tables."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
PACKAGE = SRC / "quarry"
NODES = ("ingest", "index", "vector", "query")  # a process each: they talk over gRPC, never by import
LIBRARIES = ("core", "cluster", "dsl", "v1")  # what every node may import
VOCABULARY = {"LANES", "LEXICAL_LANES", "VECTOR_LANES", "CHANNELS", "RRF_K", "RRF", "MINMAX", "DEFAULT_WEIGHT"}
VOCABULARY_HOME = PACKAGE / "core" / "lanes.py"
# The partition store's tables, and the modules that may hold SQL against them: the store (with its schema)
# and the compilers of plans to SQL.
STORE_TABLES = (
    "sessions",
    "messages",
    "blocks",
    "actions",
    "files",
    "runs",
    "observed_events",
    "context_snapshots",
    "delegations",
    "session_tags",
    "log_events",
    "log_event_chunks",
    "held_payloads",
)
SQL_HOMES = ("store.py", "store_schema.py", "predicates.py", "rows.py")
_SQL = re.compile(rf"\b(?:FROM|JOIN|INTO|UPDATE)\s+(?:{'|'.join(STORE_TABLES)})\b")


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__main__.py")


def import_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every `quarry.…` module the file imports, at any depth (lazy imports too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {name for name in names if name == "quarry" or name.startswith("quarry.")}


def room(name: str) -> str:
    """The top-level room of an import name: `quarry.query.fusion` -> `query`."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_every_module_imports_by_its_path(path: Path) -> None:
    module = importlib.import_module(import_name(path))
    assert Path(module.__file__ or "").resolve() == path.resolve()


def test_the_package_has_no_other_roots() -> None:
    """Setuptools finds the packages under src/ and nothing maps an import name onto another folder."""
    project = (REPO / "pyproject.toml").read_text()
    assert "package-dir" not in project and 'where = ["src"]' in project
    assert sorted(p.name for p in SRC.iterdir() if not p.name.endswith(".egg-info")) == ["quarry"]


def crossings(may_import: dict[str, set[str]]) -> list[str]:
    """Every import of a room in `may_import` that reaches a room it may not."""
    found = []
    for path in modules():
        here = room(import_name(path))
        if here in may_import:
            found.extend(
                f"{path.relative_to(SRC)} imports {name}"
                for name in imported(path)
                if room(name) and room(name) not in may_import[here]
            )
    return found


def test_the_nodes_never_import_one_another() -> None:
    """A node imports the libraries and itself: never another node, the SDK or the application."""
    assert crossings({node: {*LIBRARIES, node} for node in NODES}) == []


def test_the_libraries_and_the_sdk_import_no_node() -> None:
    libraries = {library: set(LIBRARIES) for library in LIBRARIES}
    assert crossings(libraries | {"client": {*LIBRARIES, "client"}}) == []


def test_the_search_vocabulary_is_declared_once() -> None:
    declared = []
    for path in modules():
        if path == VOCABULARY_HOME:
            continue
        for node in ast.parse(path.read_text()).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            for target in targets:
                names = [t.id for t in ast.walk(target) if isinstance(t, ast.Name)]
                declared.extend(f"{path.relative_to(SRC)}: {n}" for n in names if n in VOCABULARY)
    assert declared == []


def test_only_the_store_and_the_compilers_hold_sql_against_the_partition_store() -> None:
    holders = []
    for path in sorted((PACKAGE / "index").rglob("*.py")):
        if path.name in SQL_HOMES:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.search(node.value):
                holders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert holders == []
