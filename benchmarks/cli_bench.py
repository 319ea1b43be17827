#!/usr/bin/env python3
"""Start-up of the command line: `python -m benchmarks.cli_bench [--reps N]`.

Wall time from spawn to exit of `kbroker topics list` beside Kafka's `kafka-topics.sh --list`
(its main class, `org.apache.kafka.tools.TopicCommand`, on the cached jars with the JVM
options `kafka-run-class.sh` uses by default: `-Xmx256M`, G1), both against the same kbroker
with a few topics, alternating so load from other work on the machine falls on each alike;
and `kbroker --version` (start-up alone, no connection). Prints medians and the ratio. Not a
test: nothing asserts a time. Needs the Kafka jars (`make kafka-dist`).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from compat_tests.kafka_runner import TOOLS_LOG4J, java, kafka_libs  # noqa: E402
from compat_tests.runner import KBrokerProcess  # noqa: E402


def timed(cmd: list[str], env: dict) -> tuple[float, str]:
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    elapsed = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr[-2000:]}")
    return elapsed, r.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory(prefix="cli-bench-") as tmp:
        broker = KBrokerProcess(Path(tmp) / "kbroker", {"group.initial.rebalance.delay.ms": "0"}).start()
        try:
            bs = broker.bootstrap_servers
            for i in range(5):
                timed([sys.executable, "-m", "kbroker", "topics", "create", f"bench-{i}", "-p", "3", "-b", bs], env)
            commands = {
                "kbroker --version": [sys.executable, "-m", "kbroker", "--version"],
                "kbroker topics list": [sys.executable, "-m", "kbroker", "topics", "list", "-b", bs],
                "kafka-topics.sh --list": [java(), "-Xmx256M", "-server", "-XX:+UseG1GC",
                                           "-Djava.awt.headless=true",
                                           f"-Dlog4j2.configurationFile={TOOLS_LOG4J}",
                                           "-cp", f"{kafka_libs()}/*", "org.apache.kafka.tools.TopicCommand",
                                           "--bootstrap-server", bs, "--list"],
            }
            times: dict[str, list[float]] = {name: [] for name in commands}
            outputs = {}
            for _ in range(args.reps):
                for name, cmd in commands.items():
                    elapsed, out = timed(cmd, env)
                    times[name].append(elapsed)
                    outputs[name] = out
            assert set(outputs["kbroker topics list"].split()) == set(outputs["kafka-topics.sh --list"].split()), outputs
        finally:
            broker.stop()
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"{'command':<26} {'median s':>9} {'min s':>7} {'max s':>7}   ({args.reps} runs each)")
    for name, v in times.items():
        print(f"{name:<26} {med[name]:>9.3f} {min(v):>7.3f} {max(v):>7.3f}")
    print(f"kafka-topics.sh --list / kbroker topics list: {med['kafka-topics.sh --list'] / med['kbroker topics list']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
