#!/usr/bin/env python3
"""The Java producer's produce rows with its own metrics: `python -m benchmarks.java_produce_bench`.

    .venv/bin/python -m benchmarks.java_produce_bench --reps 3 [--mib 128] [--kafka]
        [--acks 1,all] [--partitions 8] [--size 1024] [--prop key=value ...] [--override key=value ...]
        [--warmup-mib 256] [--profile DIR] [--perf] [SRC ...]

One broker per source (each SRC a folder holding a `kbroker/` package, e.g. an exported
older commit: `git archive <rev> kbroker | tar -x -C /tmp/old`; default this checkout) and,
with `--kafka`, one Apache Kafka broker (shipped JVM flags), each first given an unmeasured
librdkafka load (``--warmup-mib``, as bench.py's warm-up: Kafka's JIT sees the produce
path). Every repetition runs Kafka's ``ProducerPerformance`` as the benchmark's produce rows
do (1 KiB records unless `--size`, 20 % warm-up left out, the client's defaults but ``acks`` and
``compression.type``; ``--prop`` adds producer properties) against every broker in turn,
once per acks value, so load from other work on the shared machine falls on each alike.
(Kafka 4's client is idempotent by default unless acks is not ``all``: the acks=all row is
an idempotent producer, the acks=1 row is not.)

Reported per run and as medians per broker and acks (benchmarks/README.md "The Java
producer at 8 partitions"):

- MB/s; the broker's CPU seconds per GiB (user + system, /proc/PID/stat) and the client
  JVM's (its whole life: start-up and JIT included, so only comparable between brokers);
- contention: the share of the broker's runnable time spent waiting for a CPU (all its
  threads' /proc/PID/task/*/schedstat), the machine's idle share, and per Produce request
  how often the broker was preempted and how often it slept (context switches);
- the client's own metrics (``--print-metrics``): request latency, records per request,
  batch size, time records wait in the client, request rate. A slower answer per request
  means fewer requests per second at the same in-flight cap (5);
- ``--perf``: the broker's syscalls and context switches per Produce request (perf's
  tracepoints; this VM has no PMU for instruction counts); ``--profile DIR``: a py-spy
  profile of each kbroker run (``benchmarks/profile_summary.py``).

Wall-time figures move with the machine's load: report ``uptime`` beside them.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness import kafka_tools  # noqa: E402
from benchmarks.harness.admin import create_topics  # noqa: E402
from benchmarks.harness.run import rdkafka  # noqa: E402
from benchmarks.harness.brokers import COMMON_CONFIG, KafkaBench, cpu_seconds  # noqa: E402
from benchmarks.startup_bench import KBrokerFrom  # noqa: E402

# ProducerPerformance --print-metrics lines: "group:name:{tags} : value"
_METRIC = re.compile(r"^(producer-metrics|producer-node-metrics):([\w-]+):\{([^}]*)\}\s*:\s*([-\d.eE]+|NaN)\s*$")
SHOWN = [("request-latency-avg", "req ms"), ("records-per-request-avg", "records/req"),
         ("batch-size-avg", "batch B"), ("record-queue-time-avg", "queue ms"),
         ("requests-in-flight", "in flight"), ("request-rate", "req/s"),
         ("produce-throttle-time-avg", "throttle ms"), ("record-retry-rate", "retries/s")]


PERF_EVENTS = ["instructions:u", "context-switches", "syscalls:sys_enter_sendmsg",
               "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_epoll_wait",
               "syscalls:sys_enter_write", "syscalls:sys_enter_pwrite64"]


def _perf_counts(text: str) -> dict[str, float]:
    """`perf stat -x,` output: event → count."""
    counts = {}
    for line in text.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[0].replace(".", "").isdigit():
            counts[f[2].replace("syscalls:sys_enter_", "")] = float(f[0])
    return counts


def schedstat(pid: int) -> tuple[float, float]:
    """(seconds on a CPU, seconds runnable but waiting for one) of all threads of `pid`
    (/proc/PID/task/*/schedstat), a figure of CPU contention: time the broker wanted to run
    and did not."""
    on = wait = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                a, b, _ = f.read().split()
        except (OSError, ValueError):
            continue
        on += int(a)
        wait += int(b)
    return on / 1e9, wait / 1e9


def ctx_switches(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of all threads of `pid` so far: an
    involuntary one is the broker taken off its CPU while it had work (a woken client
    thread preempting it, or its time slice used up)."""
    vol = inv = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol += int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        inv += int(line.split()[1])
        except OSError:
            continue
    return vol, inv


def machine_idle() -> tuple[float, float]:
    """(idle, total) jiffies of all CPUs so far (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[3] + v[4], sum(v[:8])


def producer_run(bootstrap: str, topic: str, records: int, acks: str, props: list[str],
                 size: int = 1024) -> dict:
    """One ProducerPerformance run (20 % warm-up left out, as the benchmark's rows)."""
    warmup = int(records * 0.2)
    out = kafka_tools.run(kafka_tools.PRODUCER_PERF, [
        "--bootstrap-server", bootstrap, "--topic", topic, "--num-records", str(records),
        "--record-size", str(size), "--throughput", "-1", "--warmup-records", str(warmup),
        "--print-metrics", "--command-property", f"acks={acks}", "compression.type=none",
        *props], 900)
    final = kafka_tools._PRODUCER_FINAL.findall(out)
    if not final:
        raise kafka_tools.ToolError(f"no final report:\n{out[-2000:]}")
    metrics: dict[str, float] = {}
    for line in out.splitlines():
        m = _METRIC.match(line.strip())
        if m and m.group(1) == "producer-metrics":
            try:
                metrics[m.group(2)] = float(m.group(4))
            except ValueError:
                pass
    return {"mb_per_s": float(final[-1][2]), "records": int(final[-1][0]), "metrics": metrics}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="*", type=Path, help="folders holding a kbroker package")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mib", type=int, default=128, help="MiB produced per run")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--size", type=int, default=1024, help="record size in bytes")
    ap.add_argument("--acks", default="1,all", help="comma-separated acks values")
    ap.add_argument("--kafka", action="store_true", help="also run Apache Kafka in the rotation")
    ap.add_argument("--warmup-mib", type=int, default=256, help="unmeasured librdkafka load first")
    ap.add_argument("--profile", type=Path, help="py-spy profiles of the kbroker runs into DIR")
    ap.add_argument("--perf", action="store_true",
                    help="perf stat of each kbroker during its runs: instructions, syscalls per request")
    ap.add_argument("--prop", action="append", default=[], help="extra producer property k=v")
    ap.add_argument("--override", action="append", default=[],
                    help="kbroker config override k=v (every kbroker source)")
    a = ap.parse_args(argv)
    sources = [p.resolve() for p in (a.src or [ROOT])]
    for src in sources:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "kbroker")],
                       check=True, stdout=subprocess.DEVNULL)
    work = Path(tempfile.mkdtemp(prefix="kbroker-java-produce-"))
    brokers = []
    try:
        for n, src in enumerate(sources):
            b = KBrokerFrom(work / f"kbroker-{n}", src)
            for kv in a.override:
                k, v = kv.split("=", 1)
                b.overrides[k] = v
            brokers.append((f"kbroker {src}", b))
        if a.kafka:
            brokers.append(("kafka", KafkaBench(work / "kafka", overrides=dict(COMMON_CONFIG))))
        for name, b in brokers:
            b.start()
            if a.warmup_mib:
                # not measured: Kafka's JIT compilers see the produce path first (as bench.py)
                topic = f"warmup-{uuid.uuid4().hex[:8]}"
                create_topics(b.bootstrap_servers, [(topic, 8)])
                rdkafka("produce", b.bootstrap_servers, topic, "--num", str(a.warmup_mib * 1024),
                        "--size", "1024")
        results: dict[tuple[str, str], list[dict]] = {}
        records = a.mib * 2**20 // a.size
        for rep in range(a.reps):
            for acks in a.acks.split(","):
                for name, b in brokers:
                    topic = f"jp-{acks}-{uuid.uuid4().hex[:8]}"
                    create_topics(b.bootstrap_servers, [(topic, a.partitions)])
                    spy = None
                    if a.profile is not None and name != "kafka":
                        a.profile.mkdir(parents=True, exist_ok=True)
                        n = sources.index(Path(name.split(" ", 1)[1]))
                        spy = subprocess.Popen(
                            [str(Path(sys.executable).parent / "py-spy"), "record", "--pid",
                             str(b.pid), "--format", "raw", "--rate", "200", "--nonblocking",
                             "-o", str(a.profile / f"java-{a.partitions}p-acks{acks}-{n}-{rep}.txt")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    perf = None
                    if a.perf:
                        perf = subprocess.Popen(
                            ["perf", "stat", "-x", ",", "-e", ",".join(PERF_EVENTS), "-p", str(b.pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                    cpu0 = cpu_seconds(b.pid)
                    sched0, idle0, ctx0 = schedstat(b.pid), machine_idle(), ctx_switches(b.pid)
                    child0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    out = producer_run(b.bootstrap_servers, topic, records, acks, a.prop, a.size)
                    child1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu = cpu_seconds(b.pid) - cpu0
                    sched1, idle1, ctx1 = schedstat(b.pid), machine_idle(), ctx_switches(b.pid)
                    reqs = out["metrics"].get("request-total") or float("nan")
                    out["preempted_per_request"] = (ctx1[1] - ctx0[1]) / reqs
                    out["slept_per_request"] = (ctx1[0] - ctx0[0]) / reqs
                    on, wait = sched1[0] - sched0[0], sched1[1] - sched0[1]
                    out["broker_wait_share"] = wait / (on + wait) if on + wait else float("nan")
                    out["machine_idle"] = (idle1[0] - idle0[0]) / max(1, idle1[1] - idle0[1])
                    if spy is not None:
                        spy.send_signal(2)
                        spy.wait(30)
                    if perf is not None:
                        perf.send_signal(2)
                        counts = _perf_counts(perf.communicate(timeout=30)[1])
                        reqs = out["metrics"].get("request-total") or float("nan")
                        out["per_request"] = {k: v / reqs for k, v in counts.items()}
                        print("  per produce request: " + ", ".join(
                            f"{k} {v:.2f}" for k, v in out["per_request"].items()), file=sys.stderr)
                    gib = records * a.size / 2**30
                    out["client_cpu_per_gib"] = (child1.ru_utime + child1.ru_stime
                                                 - child0.ru_utime - child0.ru_stime) / gib
                    out["cpu_per_gib"] = cpu / gib
                    out["load"] = os.getloadavg()[0]
                    results.setdefault((name, acks), []).append(out)
                    m = out["metrics"]
                    shown = ", ".join(f"{label} {m.get(key, float('nan')):.2f}" for key, label in SHOWN)
                    print(f"[rep {rep}] {name} acks={acks}: {out['mb_per_s']:.1f} MB/s, "
                          f"{out['cpu_per_gib']:.2f} cpu-s/GiB (client {out['client_cpu_per_gib']:.2f}), "
                          f"broker waits for a CPU {out['broker_wait_share']:.0%} of its runnable time, "
                          f"machine idle {out['machine_idle']:.0%}, per request: broker preempted "
                          f"{out['preempted_per_request']:.2f}, slept {out['slept_per_request']:.2f}; {shown} (load {out['load']:.1f})",
                          file=sys.stderr, flush=True)
        head = " | ".join(label for _, label in SHOWN)
        print(f"\n| broker | acks | MB/s | broker cpu-s/GiB | client cpu-s/GiB | broker waits for CPU | machine idle | {head} | runs (MB/s) |")
        print("|---|---|" + "---:|" * (5 + len(SHOWN)) + "---|")
        for (name, acks), runs in results.items():
            med = lambda f: statistics.median(f(r) for r in runs)  # noqa: E731
            cols = " | ".join(f"{med(lambda r: r['metrics'].get(k, float('nan'))):.2f}" for k, _ in SHOWN)
            print(f"| {name} | {acks} | {med(lambda r: r['mb_per_s']):.1f} | "
                  f"{med(lambda r: r['cpu_per_gib']):.2f} | "
                  f"{med(lambda r: r['client_cpu_per_gib']):.2f} | "
                  f"{med(lambda r: r['broker_wait_share']):.0%} | {med(lambda r: r['machine_idle']):.0%} | {cols} | "
                  f"{', '.join('%.0f' % r['mb_per_s'] for r in runs)} |")
    finally:
        for _, b in brokers:
            b.kill()
        shutil.rmtree(work, ignore_errors=True)     # several GiB of logs after a full run
    return 0


if __name__ == "__main__":
    sys.exit(main())
