"""What a dormant connection's next request costs the broker (issue 32, item 4).

Two ``kbroker serve`` under ``valgrind --tool=callgrind`` (instrumentation on only for
the measured phase, as ``request_cost_bench.py``), one per value of
``kbroker.connections.dormant.after.ms`` (default ``0,250``: idle connections keep their
task / give it up after 250 ms). N connections are answered twice, left idle for 3 s, then
each sends one ApiVersions, one after the other; printed: the broker's instructions per
request. The difference is the cost of a wake-up (a new task) and of the connection
going back to sleep (the sweep's notice, the task's end, the epoll set), instructions
being independent of the machine's load.

    .venv/bin/python -m benchmarks.dormant_wake_cost -n 400 --after-ms 0,250
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from kbroker.wire import messages as M

from .request_cost_bench import CALLGRIND_DIR, CallgrindCounter, Conn


def measure(n: int, after_ms: str) -> float:
    from tests.support.broker_proc import BrokerProcess
    broker = BrokerProcess(Path(tempfile.mkdtemp(prefix="dormant-cost-")) / "data",
                           overrides={"kbroker.connections.dormant.after.ms": after_ms})
    broker.start_timeout = 300.0
    broker.prefix = ["valgrind", *CallgrindCounter.prefix_args,
                     f"--callgrind-out-file={CALLGRIND_DIR}/callgrind.out.%p"]
    broker.start()
    try:
        conns = [Conn(broker.port, "dormant-cost") for _ in range(n)]
        body = M.ApiVersionsRequest(client_software_name="t", client_software_version="1")
        for _ in range(2):                  # answered, and the code paths warm
            for c in conns:
                c.call(18, 3, body)
        time.sleep(3)                       # idle: parked, or dormant
        frames = [c.frame(18, 3, body) for c in conns]
        counter = CallgrindCounter(broker.proc.pid)
        for c, f in zip(conns, frames):
            c.sock.sendall(f)
            c.read_frame()
        total = counter.stop()
        for c in conns:
            c.sock.close()
        return total / n
    finally:
        broker.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=200, help="connections (one request each)")
    ap.add_argument("--after-ms", default="0,250",
                    help="values of kbroker.connections.dormant.after.ms, in this order")
    args = ap.parse_args(argv)
    for after in args.after_ms.split(","):
        per = measure(args.n, after)
        print(f"kbroker.connections.dormant.after.ms={after}: {per / 1000:.0f} k instructions "
              "per request on a connection idle for 3 s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
