"""The hybrid lane's fusion as one pure call, for tests: every fused hit built whole, in order."""

from __future__ import annotations

from typing import Any

from quarry.query.fusion import fuse, fused_hit
from quarry.v1 import query_pb2


def hybrid_hits(*args: Any, **kwargs: Any) -> list[query_pb2.SearchHit]:
    fused, channels = fuse(*args, **kwargs)
    return [fused_hit(one, channels) for one in fused]
