"""Shared foundations: ids and partition routing, configuration, errors, telemetry, the embedder."""
