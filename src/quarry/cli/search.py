"""`quarry search QUERY` (and a bare `quarry QUERY`): ranked sessions, or the rows of a unit query
(docs/search-api.md#search, docs/search-api.md#query-units). Its flags are the search controls
(docs/search-api.md#search-controls), given one by one or as --controls JSON, and the lane
(docs/search-api.md#lanes), given by --lane or a shortcut."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from quarry.cli.lazy import lazy_module, stdout
from quarry.cli.lines import stdout_lines
from quarry.cli.state import open_client, settings
from quarry.core.lanes import (
    ACTION,
    ACTIONS,
    AUTO,
    DIALOGUE,
    HYBRID,
    MINMAX,
    RRF,
    RRF_K,
    SEMANTIC,
    TEXT,
    VECTOR,
)

if TYPE_CHECKING:
    from quarry.v1 import query_pb2

render = lazy_module("quarry.cli.render")

# A control's place in the --controls JSON document -> (the flag that sets it, its value).
ControlFlags = dict[tuple[str, ...], tuple[str, object]]

Query = Annotated[list[str], typer.Argument(help="A query in the Quarry query language.")]
Lane = Annotated[
    str | None,
    typer.Option(
        help=f"{AUTO} (default: lexical) | {DIALOGUE} | {ACTIONS} (tool calls and output) | {SEMANTIC} | {HYBRID}"
    ),
]
Lexical = Annotated[bool, typer.Option("--lexical", help=f"Shortcut for --lane {DIALOGUE} (keywords only).")]
Semantic = Annotated[
    bool, typer.Option("--semantic", help=f"Shortcut for --lane {SEMANTIC} (the query as a similarity probe).")
]
Limit = Annotated[int, typer.Option(min=1, max=1000)]
Offset = Annotated[int, typer.Option(min=0)]
Cursor = Annotated[str, typer.Option(help="Continue a walk: the next_cursor of the previous page.")]
Plain = Annotated[
    bool,
    typer.Option("--plain", help="Read the text as prose whatever it holds: its words, no operators or fields."),
]
Syntax = Annotated[
    bool, typer.Option("--syntax", help="Read the text as the query language, even when it looks like prose.")
]
Controls = Annotated[
    str | None,
    typer.Option(
        "--controls",
        help=f'Search controls as JSON: {{"admission": {{...}}, "fusion": {{"method": "{RRF}", "params": '
        f'{{"rank_constant": {RRF_K}, "weights": {{"{TEXT}": 2}}}}}}, "min_score": 0.2, "include_scores": true}}.',
    ),
]
MinScore = Annotated[
    float | None, typer.Option("--min-score", help="Drop hits whose retrieval score (0..1) is below this.")
]
IncludeScores = Annotated[
    bool, typer.Option("--include-scores", help="Show each hit's retrieval score and raw channel scores.")
]
Coverage = Annotated[
    float | None, typer.Option("--coverage", help="Lexical admission: the share of query words a session needs.")
]
MinMatchedTerms = Annotated[
    int | None, typer.Option("--min-matched-terms", help="Lexical admission: at least this many words.")
]
MinSimilarity = Annotated[
    float | None, typer.Option("--min-similarity", help="Vector admission: cosine similarity -1..1.")
]
Fusion = Annotated[str | None, typer.Option("--fusion", help=f"{RRF} (default) | {MINMAX} ({HYBRID} lane).")]
RankConstant = Annotated[int | None, typer.Option("--rank-constant", help=f"{RRF}'s k (default {RRF_K}).")]
Weight = Annotated[
    list[str] | None,
    typer.Option("--weight", help=f"CHANNEL=W: {TEXT}, {ACTION} or {VECTOR} weight; repeatable."),
]
RequireComplete = Annotated[
    bool,
    typer.Option("--require-complete", help="Fail (PARTITION_UNAVAILABLE) rather than answer without a partition."),
]


def search(
    query: Query,
    lane: Lane = None,
    lexical: Lexical = False,
    semantic: Semantic = False,
    limit: Limit = 20,
    offset: Offset = 0,
    cursor: Cursor = "",
    plain: Plain = False,
    syntax: Syntax = False,
    controls: Controls = None,
    min_score: MinScore = None,
    include_scores: IncludeScores = False,
    coverage: Coverage = None,
    min_matched_terms: MinMatchedTerms = None,
    min_similarity: MinSimilarity = None,
    fusion: Fusion = None,
    rank_constant: RankConstant = None,
    weight: Weight = None,
    require_complete: RequireComplete = False,
) -> None:
    """Ranked sessions; a unit query (`messages|actions|blocks|files|assertions|runs|observed-events|
    context-snapshots|delegations where …`) returns rows, or groups for `… | group by FIELD | count`."""
    from quarry.dsl.shell import join_words

    text = join_words(query)
    reading = search_reading(plain=plain, syntax=syntax)
    settings.query = text
    chosen = search_lane(lane, lexical=lexical, semantic=semantic)
    flags = control_flags(
        {
            ("min_score",): ("--min-score", min_score),
            ("include_scores",): ("--include-scores", True if include_scores else None),
            ("admission", "lexical_coverage"): ("--coverage", coverage),
            ("admission", "lexical_min_matched_terms"): ("--min-matched-terms", min_matched_terms),
            ("admission", "min_semantic_similarity"): ("--min-similarity", min_similarity),
            ("fusion", "method"): ("--fusion", fusion),
            ("fusion", "params", "rank_constant"): ("--rank-constant", rank_constant),
        },
        parse_weights(weight or []),
    )
    chosen_controls = search_controls(controls, flags)
    with open_client() as client:
        if settings.explain:
            render.explain(client.explain(text, reading), settings.format, stdout())
        elif is_unit_query(text, reading):
            envelope = client.query_units(
                text, limit=limit, offset=offset, require_complete=require_complete, cursor=cursor
            )
            render.unit_envelope(envelope, settings.format, stdout_lines())
        else:
            envelope = client.search(
                text,
                lane=chosen,
                limit=limit,
                offset=offset,
                cursor=cursor,
                controls=chosen_controls,
                require_complete=require_complete,
                reading=reading,
            )
            render.search_envelope(envelope, settings.format, stdout_lines())


def search_reading(*, plain: bool, syntax: bool) -> str:
    """SearchRequest.reading of the flags: prose (--plain), query (--syntax), or "" (the text decides)."""
    if plain and syntax:
        from quarry.core.errors import QuarryError
        from quarry.v1 import errors_pb2

        raise QuarryError(errors_pb2.INVALID_REQUEST, "--plain and --syntax exclude each other", parameter="--syntax")
    return "prose" if plain else "query" if syntax else ""


def is_unit_query(text: str, reading: str = "") -> bool:
    """Whether `text` is a unit query (rows) rather than a search (sessions). Every unit query holds the
    keyword `where` (grammar.lark: `UNIT WHERE …`, the terminal lower-case only), so a query without it
    is a search, sent without compiling it here: building the Lark parser is the slowest step of a
    command's start (issue 13). The query node compiles it and answers INVALID_QUERY, with its
    position, as the local compile does."""
    if "where" not in text or reading == "prose":
        return False
    from quarry.dsl.reading import uses_the_language

    if not reading and not uses_the_language(text):
        return False
    from quarry.dsl import compile_query

    return compile_query(text).kind == "units"


def control_flags(single: ControlFlags, weights: dict[str, float]) -> ControlFlags:
    """The control flags given (a value of None is a flag left out), each `--weight` as the weight of
    its channel."""
    flags = {path: (flag, value) for path, (flag, value) in single.items() if value is not None}
    for channel, value in weights.items():
        flags[("fusion", "params", "weights", channel)] = ("--weight", value)
    return flags


def parse_weights(pairs: list[str]) -> dict[str, float]:
    """`--weight CHANNEL=W` values as channel -> weight; the query node checks the channel names."""
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    weights: dict[str, float] = {}
    for pair in pairs:
        channel, sep, value = pair.partition("=")
        try:
            number = float(value) if sep and channel else None
        except ValueError:
            number = None
        if number is None:
            raise QuarryError(
                errors_pb2.INVALID_REQUEST,
                f"--weight takes CHANNEL=NUMBER (e.g. {TEXT}=2), got {pair!r}",
                parameter="--weight",
            )
        if channel in weights:
            raise QuarryError(errors_pb2.INVALID_REQUEST, f"--weight {channel} is given twice", parameter="--weight")
        weights[channel] = number
    return weights


def search_controls(document: str | None, flags: ControlFlags) -> query_pb2.SearchControls | None:
    """--controls JSON merged with the flags that set single controls (a flag setting a field the JSON
    sets too is a contradiction); None when neither is given: the server's defaults."""
    if document is None and not flags:
        return None
    from quarry.client.controls_json import controls_from_json, controls_to_json, with_flags

    base = controls_to_json(controls_from_json(document)) if document is not None else {}
    return controls_from_json(with_flags(base, flags))


LANE_SHORTCUTS = {"--lexical": DIALOGUE, "--semantic": SEMANTIC}


def search_lane(lane: str | None, *, lexical: bool, semantic: bool) -> str:
    """The lane `search` asks for: --lane, or a shortcut's lane. The shortcuts exclude each other and a
    --lane naming another lane (INVALID_REQUEST); the query node validates the lane name itself."""
    from quarry.core.errors import QuarryError
    from quarry.v1 import errors_pb2

    shortcuts = [name for name, on in (("--lexical", lexical), ("--semantic", semantic)) if on]
    if len(shortcuts) > 1:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST, "--lexical and --semantic exclude each other", parameter="--semantic"
        )
    if not shortcuts:
        return lane or AUTO
    implied = LANE_SHORTCUTS[shortcuts[0]]
    if lane is not None and lane != implied:
        raise QuarryError(
            errors_pb2.INVALID_REQUEST,
            f"{shortcuts[0]} means --lane {implied}, which contradicts --lane {lane}",
            parameter=shortcuts[0],
        )
    return implied
