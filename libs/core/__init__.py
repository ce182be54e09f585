"""Shared foundations: ids and shard routing, configuration, errors, telemetry, the embedder."""
