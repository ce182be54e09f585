"""A gRPC method handler rebuilt with its behaviour wrapped: what a server interceptor that runs code
around every call (who it runs for, when it may start) returns in the handler's place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc


def rebuilt(handler: grpc.RpcMethodHandler, wrap: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Any:
    """The same handler with its behaviour wrapped (one of the four call shapes)."""
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(
            wrap(handler.unary_unary), handler.request_deserializer, handler.response_serializer
        )
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(
            wrap(handler.unary_stream), handler.request_deserializer, handler.response_serializer
        )
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(
            wrap(handler.stream_unary), handler.request_deserializer, handler.response_serializer
        )
    return grpc.stream_stream_rpc_method_handler(
        wrap(handler.stream_stream), handler.request_deserializer, handler.response_serializer
    )
