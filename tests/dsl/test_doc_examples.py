"""Every query the user documentation shows is one the language takes: each `quarry` search in a shell
block of README.md and docs/*.md, and each query of a table's `example` column, compiles as the CLI would
send it (read as prose or as the language by the same rule, `--plain` / `--syntax` obeyed). A command shown
failing (an `error CODE: …` line under it) fails with that code, and its `did you mean:` compiles."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

from quarry.cli.main import app, with_default_command
from quarry.core.errors import QuarryError
from quarry.dsl import compile_query
from quarry.dsl.reading import PROSE, QUERY_LANGUAGE, read

REPO = Path(__file__).resolve().parent.parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*```(\S*)\s*$")
SHELL = ("", "sh", "bash", "shell", "console")
SPAN = re.compile(r"`([^`]+)`")
PLACEHOLDER = re.compile(r"<[^<>]+>")  # `<session id>`, `<id>`
SOME_ID = "claude-code-session:4f1c2a9e"


@dataclass(frozen=True)
class Example:
    where: str  # page:line
    query: str
    reading: str = ""  # forced by --plain / --syntax
    error: str = ""  # the code a shown failure names
    correction: str = ""  # its `did you mean:`


def _shell_blocks(text: str) -> Iterator[list[tuple[int, str]]]:
    """Each shell block's lines (a line continued with `\\` joined to the next), with their numbers."""
    block: list[tuple[int, str]] | None = None
    kind, continued = "", ""
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence and block is None:
            block, kind = [], fence.group(1)
        elif fence:
            if kind in SHELL:
                yield block
            block = None
        elif block is not None and line.rstrip().endswith("\\"):
            continued += line.rstrip()[:-1] + " "
        elif block is not None:
            block.append((number, continued + line))
            continued = ""


def _options(command: Any) -> dict[str, bool]:
    """Each option of a click command -> whether it takes a value."""
    return {
        name: not (param.is_flag or param.count)
        for param in command.params
        if param.param_type_name == "option"
        for name in (*param.opts, *param.secondary_opts)
    }


_CLI = typer.main.get_command(app)
_SEARCH = _options(_CLI.commands["search"])
_GLOBAL = _options(_CLI)


def _search_words(argv: list[str]) -> tuple[str, list[str]] | None:
    """The query of a `quarry …` command line that searches, and the flags given to the search."""
    argv = with_default_command(argv)
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        i += 2 if _GLOBAL.get(argv[i]) else 1
    if i < len(argv) and argv[i] == "--":
        return " ".join(argv[i + 1 :]), []
    if i >= len(argv) or argv[i] != "search":
        return None
    words, flags, rest = [], [], argv[i + 1 :]
    j = 0
    while j < len(rest):
        if rest[j] == "--":
            words.extend(rest[j + 1 :])
            break
        if rest[j].startswith("-"):
            name = rest[j].split("=", 1)[0]
            flags.append(name)
            j += 1 if "=" in rest[j] or not _SEARCH.get(name) else 2
            continue
        words.append(rest[j])
        j += 1
    return " ".join(words), flags


def shell_examples(page: Path) -> Iterator[Example]:
    for block in _shell_blocks(page.read_text()):
        for k, (number, line) in enumerate(block):
            command = line.strip().removeprefix("$ ")
            if not command.startswith("quarry "):
                continue
            found = _search_words(shlex.split(command, comments=True)[1:])
            if found is None:
                continue
            text, flags = found
            reading = PROSE if "--plain" in flags else QUERY_LANGUAGE if "--syntax" in flags else ""
            after = [shown.strip() for _, shown in block[k + 1 :]]
            error = next((a.split()[1].rstrip(":") for a in after[:1] if a.startswith("error ")), "")
            fix = next((a.removeprefix("did you mean: ") for a in after if a.startswith("did you mean: ")), "")
            yield Example(f"{page.name}:{number}", text, reading, error, fix if error else "")


def _outside_parentheses(cell: str) -> Iterator[str]:
    """The code spans of a table cell that are not inside a parenthesised aside (`(as `repo:`)`)."""
    depth, last = 0, 0
    for match in SPAN.finditer(cell):
        between = cell[last : match.start()]
        depth += between.count("(") - between.count(")")
        last = match.end()
        if depth <= 0:
            yield match.group(1)


def table_examples(page: Path) -> Iterator[Example]:
    header: list[str] | None = None
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if header is None:
            header = cells
        elif header[-1] == "example" and not set(line) <= set("|-: "):
            for span in _outside_parentheses(cells[-1]):
                if "…" not in span:
                    yield Example(f"{page.name}:{number}", PLACEHOLDER.sub(SOME_ID, span.replace("\\|", "|")))


EXAMPLES = [example for page in PAGES for example in (*shell_examples(page), *table_examples(page))]


def test_the_documentation_shows_queries() -> None:
    pages = {example.where.split(":")[0] for example in EXAMPLES}
    assert {"README.md", "query-language.md", "searching.md"} <= pages
    assert len(EXAMPLES) > 150
    assert any(example.error for example in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.where} {e.query}" for e in EXAMPLES])
def test_a_documented_query_compiles(example: Example) -> None:
    query = read(example.query, example.reading).query
    if not example.error:
        compile_query(query)
        return
    with pytest.raises(QuarryError) as failed:
        compile_query(query)
    assert failed.value.code_name == example.error
    if example.correction:
        compile_query(example.correction)
