"""The committed stubs under src/quarry/v1 are exactly what `make proto` makes from proto/."""

from __future__ import annotations

import importlib.util
import sys

from tests.shared_paths import REPO


def test_generated_stubs_match_the_protos(tmp_path):
    spec = importlib.util.spec_from_file_location("gen_proto", REPO / "scripts" / "gen_proto.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_proto"] = module
    spec.loader.exec_module(module)
    fresh = module.generate(tmp_path)
    committed_dir = REPO / "src" / "quarry" / "v1"
    committed = sorted(p.name for p in committed_dir.iterdir() if p.is_file())
    assert committed == [p.name for p in fresh], "run `make proto`: the set of generated files differs"
    stale = [p.name for p in fresh if (committed_dir / p.name).read_bytes() != p.read_bytes()]
    assert not stale, f"run `make proto`: these stubs are stale: {stale}"
