"""The projection's resource of a session: the agent as `service.name`, its provider, the session's
ids, origin, repo, branch, model and parent (docs/cluster.md#opentelemetry)."""

from __future__ import annotations

from opentelemetry.proto.resource.v1 import resource_pb2

from quarry.cli.otel_export.attributes import Attributes
from quarry.cli.otel_export.links import SessionRows
from quarry.cli.otel_export.redaction import PATH, ExportOptions, Redactor

# Agent (service.name) and provider (gen_ai.provider.name) of each origin.
AGENTS = {
    "claude-code-session": "claude-code",
    "codex-session": "codex",
    "chatgpt-export": "chatgpt",
    "gemini-cli-session": "gemini-cli",
    "claude-ai-export": "claude-ai",
    "cursor-session": "cursor",
    "copilot-chat-export": "copilot-chat",
    "cline-task": "cline",
    "roo-code-task": "roo-code",
    "opencode-session": "opencode",
    "crush-session": "crush",
    "aider-session": "aider",
    "goose-session": "goose",
}
# The agents that run several providers' models (Cursor, Cline, OpenCode, …) have no provider of their own.
PROVIDERS = {
    "claude-code-session": "anthropic",
    "codex-session": "openai",
    "chatgpt-export": "openai",
    "gemini-cli-session": "gcp.gemini",
    "claude-ai-export": "anthropic",
}


def session_resource(rows: SessionRows, options: ExportOptions) -> resource_pb2.Resource:
    """The resource every span and log record of the session `rows` hold carries."""
    s = rows.session
    redactor = Redactor(options, s.cwd)
    attrs = Attributes()
    attrs.add("service.name", AGENTS.get(s.origin, s.origin or "unknown"))
    attrs.add("gen_ai.provider.name", PROVIDERS.get(s.origin))
    attrs.add("quarry.ref", f"session:{s.id}")
    attrs.add("quarry.session.id", s.id)
    attrs.add("gen_ai.conversation.id", s.id)
    attrs.add("quarry.origin", s.origin)
    attrs.add("quarry.session.native_id", s.native_id)
    attrs.add("quarry.repo", s.repo)
    attrs.add("vcs.ref.head.name", s.branch)
    attrs.add("gen_ai.agent.name", s.agent)
    attrs.add("gen_ai.request.model", s.model)
    attrs.add("quarry.session.parent_id", s.parent_session_id)
    attrs.add("quarry.session.root_id", rows.trace_root or s.id)
    attrs.add("quarry.session.title", redactor.text(s.title))
    attrs.add("quarry.session.cwd", s.cwd if options.include_paths else None)
    attrs.add("quarry.session.source_path", redactor.path(s.source_path))
    if s.cwd and not options.include_paths:
        redactor.redacted.add(PATH)
    attrs.add("quarry.session.created_ms", s.created_ms)
    attrs.add("quarry.session.duration_ms", s.duration_ms)
    attrs.redacted(redactor)
    return resource_pb2.Resource(attributes=attrs.items)
