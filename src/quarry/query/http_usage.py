"""The HTTP JSON API's usage route (docs/usage.md#http):

    GET /api/usage?by=day&since=30d&until=today&scopes=team-a      UsageRequest -> UsageReport

built by the API's own route maker (quarry.query.http_api.build_app passes it in), so it reads its
parameters, checks the caller's token and answers errors exactly as every other route does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.routing import Route

from quarry.query.root import Coordinator
from quarry.query.usage import usage_report
from quarry.v1 import query_pb2

RouteMaker = Callable[..., Route]  # http_api.build_app's `route(path, message_type, call, summary)`


def usage_routes(route: RouteMaker, coordinator: Coordinator) -> list[Route]:
    """The usage route over the coordinator."""

    def usage(request: Any) -> query_pb2.UsageReport:
        return usage_report(coordinator, request)

    return [
        route(
            "/api/usage",
            query_pb2.UsageRequest,
            usage,
            "Sessions, replies, tokens and cost (recorded and estimated) per day, model, origin or repo",
        )
    ]
