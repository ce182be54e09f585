"""An archive of assistant replies with models, tokens and recorded costs, on real partitions in this process
behind a QueryService server with a fixed clock: for the usage report and the groupings it runs on.

  S1 claude-code-session:u1  ledger  2026-06-17  two claude-sonnet-4-5 replies, no recorded cost
  S2 codex-session:u2        ledger  2026-06-18  two gpt-5-codex replies, the second recorded at $0.25
  S3 claude-code-session:u3  webapp  2026-06-18 23:00 a mystery-model-9 reply (no price anywhere), and on
                                     2026-06-19 a claude-sonnet-4-5 reply recorded at $0.50
  S4 gemini-cli-session:u4   webapp  2026-06-19  a reply without a model, a gemini-2.5-pro reply
  S5 claude-code-session:u5  ledger  2026-05-01  a claude-sonnet-4-5 reply: before the window `since:30d`

Every session opens with a user message. The clock is NOW, 2026-06-20 00:00 UTC, so `since:30d` starts at
2026-05-21 00:00 UTC.
"""

from __future__ import annotations

from concurrent import futures
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import grpc

from quarry.core.routing import partition_for
from quarry.query.root import Coordinator
from quarry.query.server import QueryServicer
from quarry.v1 import query_pb2, query_pb2_grpc, units_pb2
from tests.index.sessions import Msg, session
from tests.partition_servers import one_partition_each, topology


def at(month: int, day: int, hour: int = 10) -> int:
    return int(datetime(2026, month, day, hour, tzinfo=UTC).timestamp() * 1000)


NOW = at(6, 20, 0)


@dataclass(frozen=True)
class Reply:
    model: str
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost_usd: float = 0.0


S1, S2, S3 = "claude-code-session:u1", "codex-session:u2", "claude-code-session:u3"
S4, S5 = "gemini-cli-session:u4", "claude-code-session:u5"
SONNET, CODEX, GEMINI, MYSTERY = "claude-sonnet-4-5", "gpt-5-codex", "gemini-2.5-pro", "mystery-model-9"

# session id -> (repo, start, its replies)
REPLIES: dict[str, tuple[str, int, list[Reply]]] = {
    S1: ("ledger", at(6, 17), [Reply(SONNET, 100, 200, 1000, 50), Reply(SONNET, 10, 20)]),
    S2: ("ledger", at(6, 18), [Reply(CODEX, 1000, 500, 4000), Reply(CODEX, 100, 100, cost_usd=0.25)]),
    S3: ("webapp", at(6, 18, 23), [Reply(MYSTERY, 300, 30), Reply(SONNET, 5, 5, cost_usd=0.5)]),
    S4: ("webapp", at(6, 19), [Reply("", 7, 3), Reply(GEMINI, 2000, 100, 500)]),
    S5: ("ledger", at(5, 1), [Reply(SONNET, 999, 1)]),
}


def archive() -> list[units_pb2.Session]:
    out = []
    for sid, (repo, start_ms, replies) in REPLIES.items():
        origin, native = sid.split(":", 1)
        turns = [Msg("user", f"question of {native}"), *(Msg("assistant", f"answer {n}") for n in range(len(replies)))]
        s = session(native, turns, origin=origin, repo=repo, start_ms=start_ms)
        for message, reply in zip(s.messages[1:], replies, strict=True):
            message.model = reply.model
            message.input_tokens, message.output_tokens = reply.input, reply.output
            message.cache_read_tokens, message.cache_write_tokens = reply.cache_read, reply.cache_write
            message.cost_usd = reply.cost_usd
        if sid == S3:  # its last reply on the next day
            s.messages[-1].time_ms = s.updated_ms = at(6, 19, 1)
        out.append(s)
    return out


class UsageCluster:
    """The archive on `partitions` in-process partitions, a coordinator over them at NOW, and a QueryService."""

    def __init__(self, root: Path, partitions: int) -> None:
        self.nodes = one_partition_each(root, partitions)
        sessions = archive()
        for i, node in enumerate(self.nodes):
            node.lexical(i).upsert([s for s in sessions if partition_for(s.id, partitions) == i])
        self.coordinator = Coordinator(topology(self.nodes), None, None, clock=lambda: NOW)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        query_pb2_grpc.add_QueryServiceServicer_to_server(QueryServicer(self.coordinator), self.server)
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()
        self.channel = grpc.insecure_channel(self.address)
        self.stub = query_pb2_grpc.QueryServiceStub(self.channel)

    def units(self, query: str) -> query_pb2.QueryUnitEnvelope:
        return self.stub.QueryUnits(query_pb2.QueryUnitsRequest(query=query, limit=1000))

    def usage(self, **fields: object) -> query_pb2.UsageReport:
        return self.stub.Usage(query_pb2.UsageRequest(**fields))  # type: ignore[arg-type]

    def close(self) -> None:
        self.channel.close()
        self.server.stop(None)
        for node in self.nodes:
            node.stop()
