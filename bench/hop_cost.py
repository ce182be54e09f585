"""What one gRPC hop costs on this machine: a unary call to a server in another process whose
handler answers at once, spins in Python for 2 ms, or sleeps 2 ms; the round trip minus the handler's
own time is the hop. A Quarry search crosses two hops (client -> query node -> partitions).

    python bench/hop_cost.py [--calls 500]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent import futures
from pathlib import Path

import grpc
import numpy as np

HANDLER_MS = 2.0
RESPONSE = b"x" * 12_000  # about a partition's answer to a 20-hit search
MODES = {"instant": 0, "spin": 1, "sleep": 2}


def _handle(request: bytes, context: grpc.ServicerContext) -> bytes:
    mode = request[0] if request else 0
    if mode == MODES["spin"]:
        end = time.perf_counter() + HANDLER_MS / 1000
        while time.perf_counter() < end:
            pass
    elif mode == MODES["sleep"]:
        time.sleep(HANDLER_MS / 1000)
    return RESPONSE


def _serve(port_file: Path) -> None:
    handler = grpc.method_handlers_generic_handler("bench.Hop", {"Call": grpc.unary_unary_rpc_method_handler(_handle)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    port_file.write_text(str(port))
    server.wait_for_termination()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        _serve(args.serve)
        return 0
    port_file = Path(f"/tmp/quarry-hop-{time.time_ns()}.port")
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file)])
    try:
        while not port_file.exists() or not port_file.read_text():
            time.sleep(0.05)
        with grpc.insecure_channel(f"127.0.0.1:{port_file.read_text()}") as channel:
            call = channel.unary_unary("/bench.Hop/Call")
            for name, mode in MODES.items():
                request = bytes([mode])
                for _ in range(50):
                    call(request, wait_for_ready=True)
                samples = []
                for _ in range(args.calls):
                    started = time.perf_counter()
                    call(request)
                    samples.append((time.perf_counter() - started) * 1000)
                handler = 0.0 if name == "instant" else HANDLER_MS
                p50, p95 = np.percentile(samples, 50), np.percentile(samples, 95)
                print(f"{name:<8} round trip p50 {p50:.2f} / p95 {p95:.2f} ms; hop p50 {p50 - handler:.2f} ms")
    finally:
        server.terminate()
        server.wait()
        port_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
