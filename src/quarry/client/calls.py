"""One unary call with Quarry's typed errors: a failed call raises the QuarryError its status carries."""

from __future__ import annotations

from typing import Any

import grpc

from quarry.core.errors import from_rpc_error

TIMEOUT_S = 60.0


def typed_call(method: Any, request: Any, timeout: float = TIMEOUT_S) -> Any:
    try:
        return method(request, timeout=timeout)
    except grpc.RpcError as error:
        raise from_rpc_error(error) from None
