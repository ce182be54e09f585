"""Generate the Python stubs of proto/quarry/v1 into src/quarry/v1 (or another root).

`make proto` runs this; tests/contract/test_stubs_fresh.py runs it into a temporary folder and
fails when the committed stubs differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grpc_tools import protoc

REPO = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO / "proto"
PACKAGE = Path("quarry/v1")
INIT_TEXT = '"""Generated gRPC and protobuf stubs of proto/quarry/v1 (make proto). Do not edit."""\n'


def generate(out_root: Path) -> list[Path]:
    """Run protoc over every .proto file and return the files written, sorted."""
    out_dir = out_root / PACKAGE
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob("*_pb2*.py*"):
        stale.unlink()
    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / PACKAGE).glob("*.proto"))
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{Path(protoc.__file__).parent / '_proto'}",
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        f"--grpc_python_out={out_root}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    (out_dir / "__init__.py").write_text(INIT_TEXT)
    return sorted(out_dir.iterdir())


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "src"
    for path in generate(root):
        print(path.relative_to(root))
