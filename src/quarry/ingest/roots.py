"""The folders of its own machine an ingest node may read (`quarry node ingest --ingest-root DIR`).

Reading server paths (IngestPaths) is an operator's tool: a caller names paths on the ingest node's
machine, and the node reads only below the roots its operator configured. A path is judged by where it
really leads (symlinks resolved), before anything is opened, and every file a folder holds is judged
again before it is read, so a symlink inside a root cannot lead out of it. A refused path gets the same
answer whether or not it exists. With no root configured the node reads no server path at all.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from quarry.core.errors import QuarryError
from quarry.v1 import errors_pb2

NO_ROOTS = (
    "this ingest node reads no paths of its machine (its operator gives it --ingest-root DIR to allow it); "
    "send your own logs with `quarry push`"
)


class IngestRoots:
    def __init__(self, roots: Iterable[Path]) -> None:
        self.roots = tuple(Path(os.path.realpath(root)) for root in roots)

    def admits(self, path: Path) -> bool:
        """Whether the file or folder `path` really leads to is below a root."""
        real = Path(os.path.realpath(path))
        return any(real.is_relative_to(root) for root in self.roots)

    def confine(self, paths: Sequence[str]) -> list[Path]:
        """The requested paths as real paths below the roots; PERMISSION_DENIED (saying nothing about the
        file) for one that is not, INVALID_REQUEST for one that is not absolute."""
        if not self.roots:
            raise QuarryError(errors_pb2.PERMISSION_DENIED, NO_ROOTS, parameter="paths")
        confined = []
        for n, text in enumerate(paths):
            path = Path(text)
            if not path.is_absolute():
                raise QuarryError(
                    errors_pb2.INVALID_REQUEST,
                    f"paths[{n}] must be an absolute path on the ingest node's machine",
                    parameter=f"paths[{n}]",
                )
            if not self.admits(path):
                raise QuarryError(
                    errors_pb2.PERMISSION_DENIED,
                    f"paths[{n}] is not below a folder this ingest node may read (its --ingest-root folders)",
                    parameter=f"paths[{n}]",
                )
            confined.append(Path(os.path.realpath(path)))
        return confined

    def within(self, paths: Iterable[Path]) -> list[Path]:
        """The paths below a root (the others dropped): the node's standard locations it may read."""
        return [path for path in paths if self.admits(path)]
