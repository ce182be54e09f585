"""The Python client SDK (`QuarryClient`), the local cluster launcher and the `quarry` CLI."""
