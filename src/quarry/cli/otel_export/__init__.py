"""The OpenTelemetry projection (docs/cluster.md#opentelemetry): archive sessions as OpenTelemetry traces
and logs (`quarry export otel`).

The projection is a view for observability tools, not archive authority: trace and span ids are
stable export ids, and every span, log record and resource carries `quarry.ref`, the public ref
(`session:…`, `run:…`, `action:…`, `message:…`, `observed-event:…`, `context-snapshot:…`) that leads
back to the canonical object (`quarry read REF`).

What becomes what:

- one resource per session (`service.name` the agent: claude-code, codex, …; `gen_ai.conversation.id`
  and `quarry.session.id` the session id; origin, repo, branch, model, parent session);
- runs are spans `invoke_agent <agent>`; actions (tool calls) are spans `execute_tool <tool>`, children
  of their session's main run span, ending when their result arrived;
- a subagent run is a child of the action that dispatched it (its delegation's tool_use), else of its
  session's main run; the main run of a child session is a child of the parent's subagent run that
  started it, when the parent's run names the child. A family shares one trace: the trace id is
  derived from the session id of its lineage root;
- messages (`gen_ai.<role>.message`), observed events (`quarry.observed_event`) and context
  snapshots (`quarry.context_snapshot`) are log records carrying the trace id and the span they belong
  to: the action whose tool call or result they hold, else the main run of their session.

Ids are stable: the trace id is the first 16 bytes of SHA-256 of `quarry-otel/trace` and the root
session id, a span id the first 8 bytes of SHA-256 of `quarry-otel/span` and the object's ref, so
exporting the same sessions twice gives the same ids.

Attribute names follow the OpenTelemetry GenAI semantic conventions where one exists
(`gen_ai.operation.name`, `gen_ai.agent.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`, `gen_ai.request.model`,
`gen_ai.response.model`, `gen_ai.usage.*`, `gen_ai.conversation.id`, `gen_ai.provider.name`), else
`quarry.*`.

Redaction rule (the default leaves out three classes of content; each has its opt-in):

- outputs (`--include-outputs`): what tools returned: an action's output, the text of tool_result
  blocks. Left out, a span or record says `quarry.output.present` and `quarry.output.length`.
- text (`--include-text`): the archive's content: message text (other than tool results), tool call
  arguments and commands, observed-event descriptions, context-snapshot previews, session titles.
  Left out, a record keeps `quarry.text.length` (characters) and its ref; its body is empty.
- paths (`--include-paths`): absolute local paths: the session's cwd and source file, a snapshot's
  cwd, an action's path when it is absolute. Left out, a path under the session's cwd is given
  relative to it and any other absolute path is dropped; in text and outputs that are included, the
  cwd prefix is cut (`/home/me/app/db/pool.py` -> `db/pool.py`, the cwd itself -> `.`) and any other
  absolute path of two or more parts becomes `<path>`.

Whatever was left out of a span, record or resource is named in its `quarry.redacted` attribute
(`["output"]`, `["path", "text"]`, …), only when there was something to leave out.

The document (`OtelProjection.document`) is `{"resourceSpans": [...], "resourceLogs": [...]}`: the
standard OTLP/JSON encodings of ExportTraceServiceRequest and ExportLogsServiceRequest side by side
(hex ids, times as strings of Unix nanoseconds, enums as numbers). `push` sends each half to an
OTLP/HTTP collector (`<endpoint>/v1/traces`, `<endpoint>/v1/logs`).

The walk (`collect`, `export_otel`) pages through every session the query selects (Search with its
cursor) and reads their runs, actions, messages, observed events, context snapshots and delegations
through QueryUnits (`<unit> where session.id:(…)`, paged by offset), requiring every partition to
answer (PARTITION_UNAVAILABLE rather than a silently partial export).

The package's modules, by job: `ids` (trace and span ids), `redaction` (the rule above and its path
rewriting), `attributes`, `links` (one session's rows and the span each object belongs under),
`resource`, `spans`, `logs`, `projection` (`project`, the OTLP/JSON document), `walk` (over the
client) and `otlp_http` (`push`). What other code uses is importable from the package itself.
"""

from quarry.cli.otel_export.ids import span_id, trace_id
from quarry.cli.otel_export.links import SessionRows
from quarry.cli.otel_export.otlp_http import OtlpPushError, endpoint_urls, push
from quarry.cli.otel_export.projection import OtelProjection, project
from quarry.cli.otel_export.redaction import ExportOptions, scrub_paths
from quarry.cli.otel_export.walk import export_otel, session_scope

__all__ = [
    "ExportOptions",
    "OtelProjection",
    "OtlpPushError",
    "SessionRows",
    "endpoint_urls",
    "export_otel",
    "project",
    "push",
    "scrub_paths",
    "session_scope",
    "span_id",
    "trace_id",
]
