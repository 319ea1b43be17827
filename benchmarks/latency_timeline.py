"""Where a latency row's p99 comes from: the slow records in clusters, beside the machine's own slow windows.

    .venv/bin/python -m benchmarks.latency_timeline                      # a fresh kbroker, 1,000 records/s, 10 s
    .venv/bin/python -m benchmarks.latency_timeline --broker kafka       # the same against Kafka 4.4.0
    .venv/bin/python -m benchmarks.latency_timeline --bootstrap H:P      # a broker already running
    .venv/bin/python -m benchmarks.latency_timeline --busy               # with the row's competing process

The client is the latency rows' own (`rdkafka_load latency`, one librdkafka producer at a
fixed rate with ``linger.ms=0``, 1 KiB records, acks=1, and a consumer with
``fetch.wait.max.ms=500`` in the same process), with ``--timeline`` so that every record's
send time and latency come back. Records slower than ``--slow-ms`` whose send times lie within
``--gap-ms`` of each other form a *cluster*: one stall seen from the client.

Beside it runs a *canary*: a separate process that times a small fixed piece of Python work
every 2 ms (`CANARY_WORK`). Its time only grows when the machine gives it less CPU than usual:
a core taken by someone else, or — as on the VM these rows were first measured on — every
vCPU running several times slower at once for tens of milliseconds every 1.5 s (found with
this tool: benchmarks/README.md, "The 1,000 records/s p99: the machine's slow windows"). Runs
of canary samples slower than ``--canary-factor`` times the canary's median are the machine's
*slow windows*; each cluster is printed with the window it overlaps, if any, so a stall of the
broker's own and a stall of the machine look different. The canary is not a broker process:
a window it sees with no broker running (``--canary-only``) is the machine's.

Nothing here asserts a time; tests/benchmarks/test_latency_timeline.py checks the grouping.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]

# Times one fixed piece of work (a few tens of microseconds) every 2 ms for the given seconds,
# then prints [[CLOCK_MONOTONIC ns at the end of the work, microseconds of work], ...].
CANARY_WORK = r"""
import json, sys, time
table = {i: str(i) for i in range(200)}
def work():
    s = 0
    for i in range(200):
        s += len(table[i]) + i * 3
    return s
out = []
end = time.monotonic() + float(sys.argv[1])
pc, ns = time.perf_counter, time.monotonic_ns
while time.monotonic() < end:
    t0 = pc(); work(); t1 = pc()
    out.append((ns(), round((t1 - t0) * 1e6, 1)))
    time.sleep(0.002)
print(json.dumps(out))
"""


class Span(NamedTuple):
    """A cluster of slow records (``start``/``end``: first send and last delivery, ns) or a
    slow window of the canary (first and last slow sample, ns)."""
    start: int
    end: int
    count: int
    worst: float        # cluster: the slowest record's ms; window: the slowest sample / median


def clusters(records: list[tuple[int, float]], slow_ms: float, gap_ms: float) -> list[Span]:
    """Group the records slower than ``slow_ms`` (``(send ns, latency ms)`` pairs, any order)
    whose send times lie within ``gap_ms`` of the previous slow one."""
    out: list[Span] = []
    gap = gap_ms * 1e6
    last = None
    for sent, ms in sorted(r for r in records if r[1] > slow_ms):
        done = sent + int(ms * 1e6)
        if last is None or sent - last > gap:
            out.append(Span(sent, done, 1, ms))
        else:
            c = out[-1]
            out[-1] = Span(c.start, max(c.end, done), c.count + 1, max(c.worst, ms))
        last = sent
    return out


def slow_windows(samples: list[tuple[int, float]], factor: float, gap_ms: float,
                 min_samples: int = 2) -> tuple[list[Span], float]:
    """The canary's slow windows (runs of at least ``min_samples`` samples slower than
    ``factor`` × the median, ``gap_ms`` apart at most) and the median sample in µs."""
    if not samples:
        return [], float("nan")
    median = statistics.median(us for _, us in samples)
    runs: list[Span] = []
    gap = gap_ms * 1e6
    last = None
    for t, us in sorted(samples):
        if us <= factor * median:
            continue
        ratio = us / median
        if last is None or t - last > gap:
            runs.append(Span(t - int(us * 1e3), t, 1, ratio))
        else:
            w = runs[-1]
            runs[-1] = Span(w.start, t, w.count + 1, max(w.worst, ratio))
        last = t
    return [w for w in runs if w.count >= min_samples], median


def overlapping(span: Span, windows: list[Span], margin_ms: float = 0.0) -> Span | None:
    """The first window that overlaps ``span`` (widened by ``margin_ms`` on both sides)."""
    m = margin_ms * 1e6
    for w in windows:
        if w.start - m <= span.end and span.start <= w.end + m:
            return w
    return None


def percentile(values: list[float], q: float) -> float:
    """The harness's percentile (`rdkafka_load._percentile`): nearest rank."""
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(q * len(v) + 0.5)) - 1))]


def report(records: list[tuple[int, float]], samples: list[tuple[int, float]], *,
           slow_ms: float, gap_ms: float, factor: float) -> dict:
    """The summary the tool prints (also returned as JSON with ``--json``)."""
    cl = clusters(records, slow_ms, gap_ms)
    windows, median = slow_windows(samples, factor, gap_ms)
    t0 = min((s for s, _ in records), default=min((t for t, _ in samples), default=0))
    rows = []
    for c in cl:
        w = overlapping(c, windows)
        rows.append({"at_s": round((c.start - t0) / 1e9, 3), "records": c.count,
                     "worst_ms": round(c.worst, 1), "span_ms": round((c.end - c.start) / 1e6, 1),
                     "machine_slow": None if w is None else {
                         "at_s": round((w.start - t0) / 1e9, 3),
                         "ms": round((w.end - w.start) / 1e6, 1),
                         "slowdown": round(w.worst, 1)}})
    lat = [ms for _, ms in records]
    p99 = percentile(lat, 0.99)
    tail = [(s, ms) for s, ms in records if ms > p99]
    tail_in = sum(1 for s, ms in tail if overlapping(Span(s, s + int(ms * 1e6), 1, ms), windows))
    # the same share over every record: what chance alone would give the tail
    all_in = sum(1 for s, ms in records if overlapping(Span(s, s + int(ms * 1e6), 1, ms), windows))
    return {"records": len(records), "p50_ms": percentile(lat, 0.50),
            "p99_ms": p99, "max_ms": max(lat, default=float("nan")),
            "above_p99": len(tail), "above_p99_in_machine_windows": tail_in,
            "all_in_machine_windows": all_in,
            "slow_records": sum(1 for ms in lat if ms > slow_ms),
            "clusters": len(cl), "clusters_in_machine_windows": sum(1 for r in rows if r["machine_slow"]),
            "canary_median_us": median, "machine_windows": len(windows),
            "machine_windows_at_s": [round((w.start - t0) / 1e9, 2) for w in windows],
            "machine_windows_ms": [round((w.end - w.start) / 1e6, 1) for w in windows],
            "cluster_rows": rows}


def _print(rep: dict, records_slow_ms: float) -> None:
    if rep["records"]:       # (none with --canary-only)
        print(f"{rep['records']} records: p50 {rep['p50_ms']:.2f} ms, p99 {rep['p99_ms']:.2f} ms, "
              f"max {rep['max_ms']:.1f} ms; {rep['slow_records']} slower than {records_slow_ms} "
              f"ms in {rep['clusters']} clusters, {rep['clusters_in_machine_windows']} of them "
              f"in a slow window of the machine")
        print(f"the {rep['above_p99']} records above p99: {rep['above_p99_in_machine_windows']} "
              f"were in flight during a slow window of the machine (of all records: "
              f"{100 * rep['all_in_machine_windows'] / rep['records']:.1f} %)")
    if rep["canary_median_us"] == rep["canary_median_us"]:
        print(f"machine: {rep['machine_windows']} slow windows (canary median "
              f"{rep['canary_median_us']:.0f} µs):")
        print("  " + ", ".join(f"{at:.2f} s ({ms:.0f} ms)" for at, ms in
                               zip(rep["machine_windows_at_s"], rep["machine_windows_ms"])))
    for r in rep["cluster_rows"]:
        m = r["machine_slow"]
        where = (f"machine slow from {m['at_s']:.3f} s for {m['ms']:.0f} ms, "
                 f"canary up to {m['slowdown']:.0f}x" if m else "machine not slow")
        print(f"  at {r['at_s']:7.3f} s: {r['records']:4d} records, worst {r['worst_ms']:6.1f} ms "
              f"({where})")


def _canary(seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CANARY_WORK, str(seconds)],
                            stdout=subprocess.PIPE, text=True)


def run(a) -> dict:
    from benchmarks.harness.admin import create_topics
    from benchmarks.harness.brokers import cpu_seconds, make_broker
    if a.canary_only:
        proc = _canary(a.seconds)
        samples = json.loads(proc.communicate()[0])
        return report([], samples, slow_ms=a.slow_ms, gap_ms=a.gap_ms, factor=a.canary_factor)
    work = Path(tempfile.mkdtemp(prefix="latency-timeline-"))
    broker = None
    competing = ExitStack()
    try:
        bootstrap = a.bootstrap
        if bootstrap is None:
            broker = make_broker(a.broker, work / a.broker)
            broker.start()
            bootstrap = broker.bootstrap_servers
        topic = f"timeline-{uuid.uuid4().hex[:8]}"
        create_topics(bootstrap, [(topic, 1)])
        if a.busy:
            from benchmarks.harness.latency import competing_process
            competing.enter_context(competing_process())
        if a.warm > 0:
            # an untimed run first: Kafka's JIT compiles its hot paths in its first seconds
            # of load (its latency there is hundreds of ms), and kbroker's caches fill
            subprocess.run([sys.executable, "-m", "benchmarks.harness.rdkafka_load", "latency",
                            "--bootstrap", bootstrap, "--topic", topic, "--rate", str(a.rate),
                            "--seconds", str(a.warm), "--size", "1024", "--acks", a.acks],
                           cwd=ROOT, stdout=subprocess.DEVNULL, check=True, timeout=a.warm + 300)
        timeline = work / "timeline.json"
        cpu0 = cpu_seconds(broker.pid) if broker is not None else float("nan")
        client = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.harness.rdkafka_load", "latency",
             "--bootstrap", bootstrap, "--topic", topic, "--rate", str(a.rate),
             "--seconds", str(a.seconds), "--size", "1024", "--acks", a.acks,
             "--timeline", str(timeline)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        # the canary covers the client's set-up too (its timed part starts after a warm-up)
        canary = _canary(a.seconds + 8) if a.canary else None
        out, _ = client.communicate(timeout=a.seconds + 300)
        if client.returncode != 0:
            raise RuntimeError(f"rdkafka_load latency failed ({client.returncode})")
        cpu = (cpu_seconds(broker.pid) if broker is not None else float("nan")) - cpu0
        samples = json.loads(canary.communicate()[0]) if canary else []
        records = [tuple(r) for r in json.loads(timeline.read_text())]
        rep = report(records, samples, slow_ms=a.slow_ms, gap_ms=a.gap_ms, factor=a.canary_factor)
        # the broker's CPU (all threads) over the client's run, its set-up included
        rep["broker_cpu_ms_per_record"] = cpu * 1e3 / max(1, len(records))
        rep["client"] = json.loads(out.strip().splitlines()[-1])
        return rep
    finally:
        competing.close()
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--broker", choices=["kbroker", "kafka"], default="kbroker",
                    help="which broker to start (a fresh single node)")
    ap.add_argument("--bootstrap", default=None, help="use this running broker instead")
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--acks", default="1")
    ap.add_argument("--warm", type=float, default=5.0,
                    help="seconds of the same load, untimed, before the timed run")
    ap.add_argument("--busy", action="store_true", help="a CPU-bound process competes (the row's)")
    ap.add_argument("--slow-ms", type=float, default=5.0, help="a record slower than this is slow")
    ap.add_argument("--gap-ms", type=float, default=50.0, help="slow records this close form one cluster")
    ap.add_argument("--canary-factor", type=float, default=4.0,
                    help="a canary sample this many times its median marks the machine slow")
    ap.add_argument("--no-canary", dest="canary", action="store_false")
    ap.add_argument("--canary-only", action="store_true",
                    help="no broker, no client: the machine's slow windows alone")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    a = ap.parse_args(argv)
    rep = run(a)
    if a.json:
        print(json.dumps(rep))
    else:
        print(f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, 1-min load average "
              f"{os.getloadavg()[0]:.1f}")
        _print(rep, a.slow_ms)
        if rep.get("broker_cpu_ms_per_record", float("nan")) == rep.get("broker_cpu_ms_per_record"):
            print(f"broker CPU per record (all threads, user + system): "
                  f"{rep['broker_cpu_ms_per_record']:.3f} ms")


if __name__ == "__main__":
    main()
