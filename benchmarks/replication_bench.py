"""Replication benchmark (not a test): produce and consume on a three-node cluster with
replication factor 3, kbroker beside Apache Kafka, same clients, same machine.

    python -m benchmarks.replication_bench [--targets kbroker,kafka] [--records 200000]
        [--size 1024] [--partitions 6] [--warmup-records 50000] [--rate 1000] [--rate-seconds 10]

For each target a fresh cluster of three combined (broker + controller) nodes is started on
loopback with ``benchmarks.controller_bench``'s start-up code (kbroker from this checkout,
byte-compiled first; Kafka from the compat harness's pinned jars with the JVM flags of
``kafka-server-start.sh``, ``benchmarks.harness.brokers.KafkaBench``). Then, with
confluent-kafka (librdkafka) in this process:

1. topics of ``--partitions`` partitions, replication factor 3, ``min.insync.replicas=2``;
   wait until every partition has a leader and all three replicas in its ISR;
2. warm-up (not measured): ``--warmup-records`` records, acks=all, to a topic of its own, so
   Kafka's JIT has compiled its produce and replication paths;
3. **acks=all**: ``--records`` records of ``--size`` bytes, idempotent producer,
   ``linger.ms=5``, as fast as the client goes (client queue bounded at 32 MiB, the Java
   producer's ``buffer.memory``). Throughput from the first send to the last delivery
   report; latency per record from ``produce()`` to its delivery report
   (``Message.latency()``) — at full speed mostly the time a record waits in the client's
   queue (about 32 MiB / throughput), as Kafka's ProducerPerformance reports it;
4. **acks=1** for contrast: the same load, not idempotent (librdkafka's idempotence needs
   acks=all), to a second topic;
5. **fixed rate**: ``--rate`` records/s for ``--rate-seconds`` s, acks=all, idempotent,
   ``linger.ms=0`` (far below saturation): produce → acknowledged latency, i.e. the time a
   leader needs to get the record onto every in-sync replica (all three here) and advance
   its high watermark;
6. **consume back** each topic from the leaders (partitions assigned from offset 0, no group)
   (MB/s from the first record to the end of every partition) and check that the count
   equals the acknowledged records and the sum of the partitions'
   high watermarks (a correctness check: the run is marked FAILED otherwise), and that every
   partition still has three replicas in its ISR.

Broker CPU (user + system seconds of the three node processes, from /proc) is recorded per
phase, and for ``--idle-seconds`` with no load after the topics are created. The 1-min load average at the start and end of each target is printed with the table
(the machine is shared; other work makes every number noisier).

Results: a table on stdout with kbroker/Kafka ratios, ``benchmarks/results/replication/
results.json`` (every value) and ``results.md`` (the table); the folder is ignored by git.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.controller_bench import kafka_cluster, kbroker_cluster, start_all, wait_for  # noqa: E402

MIB = 1024 * 1024
RESULTS = ROOT / "benchmarks" / "results" / "replication"
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ----------------------------------------------------------------------------- cluster

def cluster(target: str, root: Path) -> dict:
    """Three started nodes of ``target`` (controller_bench's start-up code)."""
    if target == "kbroker":
        from benchmarks.harness.brokers import compile_kbroker
        compile_kbroker()
        nodes = kbroker_cluster(root)
    else:
        from benchmarks.harness.brokers import KafkaBench
        nodes = kafka_cluster(root, base=KafkaBench)
    try:
        start_all(nodes)
    except BaseException:
        stop(nodes)
        raise
    return nodes


def stop(nodes: dict) -> None:
    for n in nodes.values():
        try:
            n.stop()
        except Exception:  # noqa: BLE001
            pass


def pids(nodes: dict) -> list[int]:
    return [n.proc.pid for n in nodes.values() if n.proc is not None]


def cpu_seconds(pid_list: list[int]) -> float:
    total = 0
    for pid in pid_list:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total / CLK_TCK


def rss_mib(pid_list: list[int]) -> float:
    total = 0
    for pid in pid_list:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total / MIB


# ----------------------------------------------------------------------------- client side

_ADMINS: dict = {}


def admin(bootstrap: str):
    """One AdminClient per cluster, kept alive (a dropped client fails its pending futures)."""
    if bootstrap not in _ADMINS:
        from confluent_kafka.admin import AdminClient
        _ADMINS[bootstrap] = AdminClient({"bootstrap.servers": bootstrap})
    return _ADMINS[bootstrap]


def wait_brokers(bootstrap: str, count: int, timeout: float = 120) -> bool:
    a = admin(bootstrap)
    return bool(wait_for(lambda: len(a.list_topics(timeout=5).brokers) >= count, timeout, 0.2))


def create_topic(bootstrap: str, name: str, partitions: int, rf: int, min_isr: int) -> None:
    from confluent_kafka.admin import NewTopic
    fut = admin(bootstrap).create_topics(
        [NewTopic(name, partitions, rf, config={"min.insync.replicas": str(min_isr)})],
        operation_timeout=60)[name]
    fut.result(90)


def replica_state(bootstrap: str, topic: str) -> dict:
    md = admin(bootstrap).list_topics(topic, timeout=10).topics[topic]
    parts = md.partitions.values()
    return {"partitions": len(md.partitions),
            "with_leader": sum(1 for p in parts if p.leader >= 0),
            "min_isr": min((len(p.isrs) for p in parts), default=0),
            "min_replicas": min((len(p.replicas) for p in parts), default=0),
            "leaders": sorted(p.leader for p in parts)}


def wait_fully_replicated(bootstrap: str, topic: str, partitions: int, rf: int, timeout: float = 120) -> bool:
    def ok():
        s = replica_state(bootstrap, topic)
        return s["partitions"] == partitions and s["with_leader"] == partitions and s["min_isr"] >= rf
    return bool(wait_for(ok, timeout, 0.2))


def _percentiles(values: list[float]) -> dict:
    v = sorted(values)
    if not v:
        return {}

    def q(x):
        return v[min(len(v) - 1, max(0, int(round(x * len(v) + 0.5)) - 1))] * 1000
    return {"min_ms": v[0] * 1000, "p50_ms": q(0.50), "p99_ms": q(0.99), "p999_ms": q(0.999),
            "max_ms": v[-1] * 1000}


def producer(bootstrap: str, acks: str, idempotent: bool, linger_ms: float):
    # The client's queue is bounded at 32 MiB, the Java producer's default buffer.memory: at
    # full speed a record's latency is then about 32 MiB / throughput (Little's law) plus
    # the broker's answer time, as ProducerPerformance would show it.
    from confluent_kafka import Producer
    return Producer({"bootstrap.servers": bootstrap, "acks": acks,
                     "enable.idempotence": idempotent, "linger.ms": linger_ms,
                     "queue.buffering.max.kbytes": 32768, "queue.buffering.max.messages": 1_000_000})


def produce_load(bootstrap: str, topic: str, num: int, size: int, acks: str, idempotent: bool,
                 linger_ms: float = 5) -> dict:
    """``num`` records as fast as librdkafka goes; throughput and per-record latency."""
    p = producer(bootstrap, acks, idempotent, linger_ms)
    payload = os.urandom(size)
    lat: list[float] = []
    errors: list[str] = []
    last = [0.0]

    def on_delivery(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            lat.append(msg.latency())
        last[0] = time.monotonic()

    # metadata and connections first (one record, not counted in the rates)
    p.produce(topic, payload, on_delivery=on_delivery)
    p.flush(60)
    first = len(lat)
    lat.clear()
    t0 = time.monotonic()
    produce_ = p.produce
    for _ in range(num):
        while True:
            try:
                produce_(topic, payload, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.001)
    left = p.flush(300)
    dt = (last[0] or time.monotonic()) - t0
    ok = len(lat)
    return {"records": ok, "acknowledged": first + ok, "sent": num + 1, "errors": len(errors), "first_error": errors[0] if errors else None,
            "undelivered": left, "seconds": dt, "records_per_s": ok / dt, "mb_per_s": ok * size / dt / MIB,
            **_percentiles(lat)}


def produce_rate(bootstrap: str, topic: str, rate: int, seconds: float, size: int) -> dict:
    """``rate`` records/s for ``seconds`` (acks=all, idempotent, linger 0); latency per record."""
    p = producer(bootstrap, "all", True, 0)
    payload = os.urandom(size)
    lat: list[float] = []
    errors = [0]

    def on_delivery(err, msg):
        if err is not None:
            errors[0] += 1
        else:
            lat.append(msg.latency())

    p.produce(topic, payload, on_delivery=on_delivery)
    p.flush(60)
    first = len(lat)
    lat.clear()
    n = int(rate * seconds)
    t0 = time.monotonic()
    for i in range(n):
        due = t0 + i / rate
        while True:
            now = time.monotonic()
            if now >= due:
                break
            p.poll(min(due - now, 0.005))
        p.produce(topic, payload, on_delivery=on_delivery)
        p.poll(0)
    p.flush(60)
    return {"records": len(lat), "acknowledged": first + len(lat), "sent": n + 1, "errors": errors[0], "rate": rate, **_percentiles(lat)}


def consume_all(bootstrap: str, topic: str, expected: int, timeout: float = 180) -> dict:
    """Read ``topic`` from offset 0 on every partition (from the leaders, no group) until
    ``expected`` records arrived or every partition reached its high watermark."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    from benchmarks.harness.rdkafka_load import CONSUME_BATCH, CONSUME_QUEUE_BACKOFF_MS
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "replication-bench",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 1048576,
                  "fetch.queue.backoff.ms": CONSUME_QUEUE_BACKOFF_MS})
    parts = sorted(c.list_topics(topic, timeout=30).topics[topic].partitions)
    highs = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    count = nbytes = 0
    eof: set[int] = set()
    t0 = None  # the clock starts at the first record (connections and metadata excluded)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not (count >= expected and len(eof) == len(parts)):
        # never more events than can still come (the records missing, one end-of-partition
        # event per partition not at its end): consume(n) waits out its timeout otherwise
        want = max(1, min(CONSUME_BATCH, expected - count + len(parts) - len(eof)))
        for m in c.consume(want, 1.0):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                    continue
                raise RuntimeError(m.error())
            if t0 is None:
                t0 = time.monotonic()
            count += 1
            nbytes += len(m.value())
    dt = time.monotonic() - (t0 or time.monotonic())
    c.close()
    return {"records": count, "high_watermarks": sum(highs.values()), "seconds": dt,
            "mb_per_s": nbytes / dt / MIB if dt else 0.0, "records_per_s": count / dt if dt else 0.0}


# ----------------------------------------------------------------------------- one target

def run_target(target: str, args) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"replication-bench-{target}-"))
    out: dict = {"load_start": os.getloadavg()[0]}
    t_start = time.monotonic()
    print(f"[{target}] starting three nodes in {root} ...", flush=True)
    nodes = cluster(target, root)
    try:
        bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in nodes.values())
        node_pids = pids(nodes)
        out["start_s"] = time.monotonic() - t_start
        if not wait_brokers(bootstrap, 3):
            raise RuntimeError("the cluster never listed three brokers")
        P, size = args.partitions, args.size
        topics = {"warm": "repl-warmup", "all": "repl-acks-all", "one": "repl-acks-1", "rate": "repl-rate"}
        for name in topics.values():
            create_topic(bootstrap, name, P, 3, 2)
        for name in topics.values():
            if not wait_fully_replicated(bootstrap, name, P, 3):
                raise RuntimeError(f"{name}: not every partition got a leader and three in-sync replicas")
        out["leaders"] = replica_state(bootstrap, topics["all"])["leaders"]

        def phase(key, fn):
            c0 = cpu_seconds(node_pids)
            print(f"[{target}] {key} ...", flush=True)
            r = fn()
            gc.collect()  # the phase's client is closed before the next one starts
            r["broker_cpu_s"] = cpu_seconds(node_pids) - c0
            out[key] = r
            return r

        phase("idle", lambda: (time.sleep(args.idle_seconds), {"seconds": args.idle_seconds})[1])
        if args.warmup_records:
            phase("warmup", lambda: produce_load(bootstrap, topics["warm"], args.warmup_records, size, "all", True))
        phase("acks_all", lambda: produce_load(bootstrap, topics["all"], args.records, size, "all", True))
        phase("acks_1", lambda: produce_load(bootstrap, topics["one"], args.records, size, "1", False))
        if args.rate and args.rate_seconds:
            phase("rate", lambda: produce_rate(bootstrap, topics["rate"], args.rate, args.rate_seconds, size))
        checks = []
        for key, topic in (("acks_all", topics["all"]), ("acks_1", topics["one"])):
            r = out[key]
            c = phase(f"consume_{key}", lambda: consume_all(bootstrap, topic, r["acknowledged"]))
            ok = c["records"] == r["acknowledged"] == c["high_watermarks"] and r["errors"] == 0 and not r["undelivered"]
            checks.append(ok)
            if not ok:
                print(f"[{target}] CHECK FAILED {topic}: acknowledged {r['acknowledged']} (errors {r['errors']}, "
                      f"undelivered {r['undelivered']}), consumed {c['records']}, "
                      f"sum of high watermarks {c['high_watermarks']}", flush=True)
        isr = {key: replica_state(bootstrap, t)["min_isr"] for key, t in topics.items()}
        out["min_isr_at_end"] = isr
        out["check_ok"] = all(checks) and min(isr.values()) >= 3
        out["peak_rss_mib"] = rss_mib(node_pids)
    finally:
        _ADMINS.clear()  # closed before the nodes stop, so it does not log their going away
        gc.collect()
        stop(nodes)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    out["load_end"] = os.getloadavg()[0]
    out["whole_s"] = time.monotonic() - t_start
    return out


# ----------------------------------------------------------------------------- report

# (label, unit, getter, higher is better)
ROWS = [
    ("produce acks=all, idempotent, linger 5 ms", "MB/s", lambda r: r["acks_all"]["mb_per_s"], True),
    ("  same, records/s", "records/s", lambda r: r["acks_all"]["records_per_s"], True),
    ("  same, latency p50 (incl. client queue)", "ms", lambda r: r["acks_all"].get("p50_ms"), False),
    ("  same, latency p99 (incl. client queue)", "ms", lambda r: r["acks_all"].get("p99_ms"), False),
    ("  same, broker CPU per GiB (3 nodes)", "cpu-s/GiB",
     lambda r: r["acks_all"]["broker_cpu_s"] / (r["acks_all"]["records"] * r["size"] / 1024 ** 3), False),
    ("produce acks=1, linger 5 ms", "MB/s", lambda r: r["acks_1"]["mb_per_s"], True),
    ("  same, latency p50 (incl. client queue)", "ms", lambda r: r["acks_1"].get("p50_ms"), False),
    ("  same, latency p99 (incl. client queue)", "ms", lambda r: r["acks_1"].get("p99_ms"), False),
    ("fixed rate, acks=all, linger 0: latency p50", "ms", lambda r: r["rate"].get("p50_ms"), False),
    ("  same, p99", "ms", lambda r: r["rate"].get("p99_ms"), False),
    ("  same, p99.9", "ms", lambda r: r["rate"].get("p999_ms"), False),
    ("  same, broker CPU (3 nodes), share of one core", "cores",
     lambda r: r["rate"]["broker_cpu_s"] / (r["rate"]["sent"] / r["rate"]["rate"]), False),
    ("idle after topic creation: broker CPU (3 nodes)", "cores",
     lambda r: r["idle"]["broker_cpu_s"] / r["idle"]["seconds"], False),
    ("consume back (acks=all topic, from leaders)", "MB/s", lambda r: r["consume_acks_all"]["mb_per_s"], True),
    ("peak RSS, sum of 3 nodes", "MiB", lambda r: r["peak_rss_mib"], False),
    ("cluster start (3 nodes, parallel)", "s", lambda r: r["start_s"], False),
]


def _get(fn, r):
    try:
        return fn(r)
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def _fmt(v) -> str:
    if v is None:
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def table(results: dict, args) -> str:
    k, a = results.get("kbroker", {}), results.get("kafka", {})
    lines = ["| scenario | unit | kbroker | Kafka | kbroker/Kafka | better |", "|---|---|---:|---:|---:|:-:|"]
    for label, unit, fn, higher in ROWS:
        kv = _get(fn, k) if "skipped" not in k else None
        av = _get(fn, a) if "skipped" not in a else None
        ratio = f"**{kv / av:.2f}**" if kv is not None and av else "—"
        lines.append(f"| {label} | {unit} | {_fmt(kv)} | {_fmt(av)} | {ratio} | {'↑' if higher else '↓'} |")
    notes = []
    for t, r in results.items():
        if "skipped" in r:
            notes.append(f"- {t}: skipped — {r['skipped']}")
            continue
        notes.append(f"- {t}: correctness check {'passed' if r.get('check_ok') else 'FAILED'} "
                     f"(acks=all: {r['acks_all']['acknowledged']:,} acknowledged = consumed "
                     f"{r['consume_acks_all']['records']:,} = sum of high watermarks "
                     f"{r['consume_acks_all']['high_watermarks']:,}; acks=1: {r['acks_1']['acknowledged']:,} / "
                     f"{r['consume_acks_1']['records']:,} / {r['consume_acks_1']['high_watermarks']:,}; "
                     f"min ISR at end {min(r['min_isr_at_end'].values())}); 1-min load average "
                     f"{r['load_start']:.1f} at start, {r['load_end']:.1f} at end; target run {r['whole_s']:.0f} s")
    head = (f"Three combined nodes on loopback, {args.partitions} partitions, replication factor 3, "
            f"min.insync.replicas=2; {args.records:,} records of {args.size} B per produce phase "
            f"(after {args.warmup_records:,} unmeasured), fixed rate {args.rate}/s for {args.rate_seconds:g} s; "
            f"confluent-kafka {_client_version()} in the benchmark process; MB = 2^20 bytes.")
    return "\n".join([head, "", *lines, "", *notes])


def _client_version() -> str:
    try:
        import confluent_kafka
        return f"{confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})"
    except ImportError:
        return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="kbroker,kafka")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--warmup-records", type=int, default=50_000)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--rate-seconds", type=float, default=10)
    ap.add_argument("--idle-seconds", type=float, default=5,
                    help="broker CPU is also measured this long with no load (after topic creation)")
    ap.add_argument("--keep", action="store_true", help="keep the data directories")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    results: dict = {}
    for target in [t.strip() for t in args.targets.split(",") if t.strip()]:
        try:
            results[target] = run_target(target, args)
            results[target]["size"] = args.size
        except Exception as e:  # noqa: BLE001 - e.g. no Kafka jars or Java: report and go on
            results[target] = {"skipped": f"{type(e).__name__}: {e}"}
            print(f"[{target}] skipped: {results[target]['skipped']}", flush=True)
    md = table(results, args)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    kafka_version = ""
    try:
        from compat_tests.kafka_runner import kafka_version as kv
        kafka_version = kv()
    except Exception:  # noqa: BLE001
        pass
    meta = {"run": stamp, "whole_run_s": time.monotonic() - t0, "python": platform.python_version(),
            "kafka": kafka_version, "cpus": os.cpu_count(), "args": {k: (str(v) if isinstance(v, Path) else v)
                                                                     for k, v in vars(args).items()}}
    header = (f"Run: {stamp} · {os.cpu_count()} cores · Kafka {kafka_version} · Python "
              f"{platform.python_version()} · whole run {meta['whole_run_s'] / 60:.1f} min")
    print()
    print(header)
    print(md)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2, default=str))
    (args.out / "results.md").write_text(header + "\n\n" + md + "\n")
    print(f"\nwritten: {args.out / 'results.json'}, {args.out / 'results.md'}")
    ok = all(r.get("check_ok") for r in results.values() if "skipped" not in r)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
