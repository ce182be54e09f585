"""Quarry: search over the session logs of AI coding agents. ARCHITECTURE.md is the map."""
