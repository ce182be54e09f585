"""Where tests find ../shared (real logs, datasets). A user's clone has none: those tests skip."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
REAL_LOGS = SHARED / "real-logs"

needs_shared = pytest.mark.skipif(
    not REAL_LOGS.is_dir(),
    reason=f"{SHARED} is absent: the real agent logs live beside the repository, not in it (CI has them)",
)

# The folders a test cluster's ingest node may read by path (`--ingest-root`): the tests' temporary
# folders, the repository's fixtures and ../shared.
INGEST_ROOTS = [Path(tempfile.gettempdir()), REPO / "tests" / "fixtures", SHARED]
