"""The conformance archive on a real cluster of 1 and 3 partitions, for both conformance tables."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dsl.conformance_archive import ConformanceCluster


@pytest.fixture(scope="module", params=[1, 3], ids=["1-partition", "3-partitions"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConformanceCluster]:
    built = ConformanceCluster(Path(tmp_path_factory.mktemp("conformance")), request.param)
    yield built
    built.close()
