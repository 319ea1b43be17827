#!/usr/bin/env python3
"""kbroker's start-up alone, many times: `python -m benchmarks.startup_bench [--reps N] [SRC ...]`.

The same measurement as the full benchmark's "start-up to first produce ack, empty data dir"
(`benchmarks/harness/brokers.timed_start`: process spawn → first acknowledged librdkafka
produce, with the broker's CPU seconds at that moment), and, in a separate start, the time
from spawn to kbroker's `kbroker ready` log line; each on a fresh data dir, repeated.
`--instructions` counts instead, under callgrind, the instructions from spawn to ready and
from ready to a first produce's acknowledgement (one start per SRC). `--waits` runs each
start under strace and reports what it waited for: the fsyncs up to the ready line and up to
the first produce's acknowledgement (how many, and their time, which depends on the disk's
load) and the child processes started before ready.
With several SRC folders (each holding a `kbroker/` package, e.g. an exported older commit:
`git archive <rev> kbroker | tar -x -C /tmp/old`) the runs alternate between them, so that
load from other work on the machine falls on each alike; the first SRC defaults to this
checkout. Each SRC is byte-compiled first, as the full benchmark does, and started once to its
first produce and stopped cleanly, not measured (`warm_start`). The broker runs as a
user runs it: the venv's `kbroker` console script, with the generated-code cache that
`make setup` builds (a `pip install`ed package has it from its second start on; an exported
SRC needs `python -m kbroker.node.codecache_build` run from its folder). Kafka is not run:
the kbroker/Kafka ratio comes from `make bench` (Kafka's start-up is ~10× longer and varies
more than kbroker's).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness.brokers import COMMON_CONFIG, KBrokerBench, timed_start  # noqa: E402
from compat_tests.runner import BrokerStartError, die_with_parent  # noqa: E402


class KBrokerFrom(KBrokerBench):
    """kbroker imported from `src` instead of this checkout."""

    def __init__(self, workdir: Path, src: Path):
        super().__init__(workdir, overrides=dict(COMMON_CONFIG))
        self.src = src

    def env(self) -> dict[str, str]:
        env = super().env()
        env["PYTHONPATH"] = str(self.src)
        return env


def ready_seconds(broker: KBrokerFrom, timeout: float = 60.0) -> float:
    """Start `broker` and return seconds from spawn to its `kbroker ready` log line."""
    broker.prepare()
    os.sync()                   # as timed_start: no earlier writes' writeback in the start
    t0 = time.monotonic()
    broker.proc = subprocess.Popen(broker.command(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                   cwd=broker.workdir, env=broker.env(), start_new_session=True,
                                   preexec_fn=die_with_parent)
    broker.starts += 1
    for line in broker.proc.stderr:
        if "kbroker ready" in line:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            break
    raise BrokerStartError(f"no ready line from {broker}")


def _first_ack(bootstrap: str, topic: str, timeout: float) -> None:
    """One record produced with a fresh librdkafka producer (acks=all), waited for."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "socket.timeout.ms": 300_000,
                         "message.timeout.ms": int(timeout * 1000), "log_level": 3})
    result: list = []
    producer.produce(topic, b"x", on_delivery=lambda err, msg: result.append(err))
    deadline = time.monotonic() + timeout
    while not result and time.monotonic() < deadline:
        producer.poll(0.1)
    if not result or result[0] is not None:
        raise BrokerStartError(f"first produce not acknowledged: {result}")


def ready_instructions(broker: KBrokerFrom, timeout: float = 600.0) -> tuple[int, int]:
    """Start `broker` under valgrind's callgrind and return the instructions it executed
    from spawn to its `kbroker ready` line, and then from there to its answer to a first
    produce (a client started at the ready line: Metadata, the topic's auto-creation,
    Produce); then a SIGINT stops it (its shutdown is not counted: the counter is dumped at
    each of the two points). Independent of the machine's load, unlike the timings, so an
    A/B on a busy machine still shows what a change saves."""
    import signal
    broker.prepare()
    out = broker.workdir / "callgrind.out"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *broker.command()]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, cwd=broker.workdir,
                            env=broker.env(), start_new_session=True, preexec_fn=die_with_parent)
    t0 = time.monotonic()
    try:
        for line in proc.stderr:
            if "kbroker ready" in line:
                subprocess.run(["callgrind_control", "--dump=ready", str(proc.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                _first_ack(broker.bootstrap_servers, "first", timeout)
                subprocess.run(["callgrind_control", "--dump=ack", str(proc.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
                break
            if time.monotonic() - t0 > timeout:
                raise BrokerStartError(f"no ready line from {broker} under valgrind")
        else:
            raise BrokerStartError(f"{broker} exited under valgrind before it was ready")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=timeout)
    counts: dict[str, int] = {}
    for dump in sorted(broker.workdir.glob("callgrind.out.*")):
        text = dump.read_text(errors="replace")
        trigger = re.search(r"^desc: Trigger: dump (\w+)$", text, re.M)
        m = re.search(r"^summary: (\d+)$", text, re.M)
        if trigger and m:
            counts[trigger.group(1)] = int(m.group(1))   # each dump counts from the last
    if set(counts) != {"ready", "ack"}:
        raise BrokerStartError(f"no callgrind dumps at ready and first ack in {broker.workdir}")
    return counts["ready"], counts["ack"]


_SYNCS = ("fsync", "fdatasync", "syncfs", "sync_file_range")
_STRACED = re.compile(r"^\d+\s+(\d+\.\d+) (\w+)\((.*)<([\d.]+)>$")


def start_waits(broker: KBrokerFrom, timeout: float = 180.0) -> dict:
    """Start `broker` under `strace -f` and return its waits: `{"ready": [(file, seconds)],
    "ack": [...], "children": [program, ...]}` -- the fsyncs made up to its ready line and up
    to its answer to a first produce (a client started at the ready line), and the programs
    it ran before ready (strace's own times: under strace, for the count and the order)."""
    import signal
    broker.prepare()
    out = broker.workdir / "strace.out"
    cmd = ["strace", "-f", "-y", "-T", "-ttt", "-s", "120", "-o", str(out),
           "-e", "trace=" + ",".join((*_SYNCS, "write", "execve")), *broker.command()]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, cwd=broker.workdir,
                            env=broker.env(), start_new_session=True, preexec_fn=die_with_parent)
    try:
        for line in proc.stderr:
            if "kbroker ready" in line:
                _first_ack(broker.bootstrap_servers, "first", timeout)
                acked = time.time()
                break
        else:
            raise BrokerStartError(f"{broker} exited under strace before it was ready")
    finally:
        # the broker (the trace's first pid) stops as a user's would; strace ends with it
        first = out.read_text(errors="replace").split(None, 1) if out.exists() else []
        os.kill(int(first[0]) if first and first[0].isdigit() else proc.pid, signal.SIGINT)
        proc.communicate(timeout=timeout)
    ready_at, syncs, children = None, [], []
    for line in out.read_text(errors="replace").splitlines():
        m = _STRACED.match(line)
        if m is None:
            continue
        at, call, args = float(m.group(1)), m.group(2), m.group(3)
        if call == "write" and ready_at is None and "kbroker ready" in args:
            ready_at = at
        elif call in _SYNCS:
            path = re.search(r"<([^>]*)>", args)
            syncs.append((at, os.path.basename(path.group(1)) if path else args, float(m.group(4))))
        elif call == "execve" and ready_at is None and ") = 0 " in args:
            children.append(args.split('"')[1])
    if ready_at is None:
        raise BrokerStartError(f"no ready line in {out}")
    return {"ready": [(f, s) for at, f, s in syncs if at <= ready_at],
            "ack": [(f, s) for at, f, s in syncs if at <= acked],
            "children": children[1:]}         # the first is the broker itself


def _print_waits(src: Path, runs: list[dict]) -> None:
    for point in ("ready", "ack"):
        counts = [len(r[point]) for r in runs]
        ms = [sum(s for _, s in r[point]) * 1000 for r in runs]
        print(f"{src}: up to {'the ready line' if point == 'ready' else 'the first ack'}: "
              f"{'/'.join(map(str, sorted(set(counts))))} fsyncs, {statistics.median(ms):.1f} ms "
              f"median (min {min(ms):.1f}, max {max(ms):.1f}) of {len(runs)} starts")
    print(f"{src}: fsyncs to the ready line, in order: {[f for f, _ in runs[-1]['ready']]}")
    print(f"{src}: child processes before ready: {runs[-1]['children']}")


def warm_start(sources: list[Path]) -> None:
    """One start of each SRC to its first produce, then a clean stop, not measured: the
    measured starts are a user's next ones, which find what a start leaves behind for the
    next (its ``.pyc`` files, the generated-code cache and the module image written at a
    clean exit) and its files in the page cache."""
    work = Path(tempfile.mkdtemp(prefix="kbroker-startup-warm-"))
    try:
        for n, src in enumerate(sources):
            b = KBrokerFrom(work / f"warm-{n}", src)
            try:
                timed_start(b, "first")
                b.stop()
            finally:
                b.kill()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _each_start(sources: list[Path], reps: int, kinds: tuple[str, ...]):
    """``reps`` rounds of fresh brokers, alternating over ``sources`` and, for each, over
    ``kinds`` (names of what is measured): yields ``(kind, src, broker)``; each broker is
    killed and its folder removed after its turn."""
    work = Path(tempfile.mkdtemp(prefix="kbroker-startup-"))
    try:
        for i in range(reps):
            for n, src in enumerate(sources):
                for kind in kinds:
                    b = KBrokerFrom(work / f"{kind}-{i}-{n}", src)
                    try:
                        yield kind, src, b
                    finally:
                        b.kill()
                        shutil.rmtree(b.workdir, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="*", type=Path, help="folders holding a kbroker package")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--instructions", action="store_true",
                    help="instead: instructions from spawn to ready and from ready to the "
                         "first produce acknowledged, under valgrind (one run each)")
    ap.add_argument("--waits", action="store_true",
                    help="instead: fsyncs up to ready and up to the first produce "
                         "acknowledged, and child processes, under strace (--reps each)")
    a = ap.parse_args(argv)
    sources = [p.resolve() for p in (a.src or [ROOT])]
    for src in sources:
        if not (src / "kbroker" / "__main__.py").exists():
            ap.error(f"{src} holds no kbroker package")
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "kbroker")],
                       check=True, stdout=subprocess.DEVNULL)
    warm_start(sources)
    if a.instructions:
        work = Path(tempfile.mkdtemp(prefix="kbroker-startup-ir-"))
        try:
            for n, src in enumerate(sources):
                b = KBrokerFrom(work / f"ir-{n}", src)
                try:
                    ready, ack = ready_instructions(b)
                    print(f"{src}: {ready / 1e6:.1f} M instructions from spawn to ready, "
                          f"{ack / 1e6:.1f} M from ready to the first produce acknowledged "
                          f"({(ready + ack) / 1e6:.1f} M in all)")
                finally:
                    b.kill()
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    if a.waits:
        waits: dict[Path, list[dict]] = {s: [] for s in sources}
        for _, src, b in _each_start(sources, a.reps, ("waits",)):
            waits[src].append(start_waits(b))
        for src in sources:
            _print_waits(src, waits[src])
        return 0
    first_ack: dict[Path, list[float]] = {s: [] for s in sources}
    ack_cpu: dict[Path, list[float]] = {s: [] for s in sources}   # broker cpu-s at the ack
    ready: dict[Path, list[float]] = {s: [] for s in sources}
    for what, src, b in _each_start(sources, a.reps, ("ack", "ready")):
        if what == "ack":
            first_ack[src].append(timed_start(b, "first"))
            ack_cpu[src].append(b.start_cpu_s)
        else:
            ready[src].append(ready_seconds(b))
    for src in sources:
        acks, rs = first_ack[src], ready[src]
        print(f"{src}: first produce ack median {statistics.median(acks):.3f} s "
              f"(min {min(acks):.3f}, max {max(acks):.3f}), broker CPU at the ack median "
              f"{statistics.median(ack_cpu[src]):.2f} cpu-s (min {min(ack_cpu[src]):.2f}); "
              f"ready line median "
              f"{statistics.median(rs):.3f} s (min {min(rs):.3f}); {len(acks)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
