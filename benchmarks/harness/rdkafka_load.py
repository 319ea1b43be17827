"""librdkafka loads (confluent-kafka), one process per run, result as one JSON line on stdout.

    python -m benchmarks.harness.rdkafka_load produce  --bootstrap B --topic T --num N --size S
    python -m benchmarks.harness.rdkafka_load consume  --bootstrap B --topic T --bytes N
    python -m benchmarks.harness.rdkafka_load latency  --bootstrap B --topic T --rate R --seconds D
    python -m benchmarks.harness.rdkafka_load firstack --bootstrap B --topic T
    (any mode) --conf security.protocol=SASL_SSL --conf ...   librdkafka settings for all clients

* produce: N records of S bytes as fast as the client goes (``acks``, ``compression``
  options); records/s and MB/s from the first send to the last delivery report, and the
  client's own CPU seconds in that time (all its threads, and the Python thread that
  calls ``produce()`` and runs the delivery callbacks). ``--stats`` adds librdkafka's
  statistics: Produce requests, records per request, round-trip and queue times.
* consume: assign every partition from the beginning (no group, so no coordinator time in
  the number) and read until N bytes of values arrived; MB/s of values from the first
  record to the last. ``fetch.queue.backoff.ms`` is 10 ms, not librdkafka's 1,000
  (`CONSUME_QUEUE_BACKOFF_MS`); ``short_calls`` counts the ``consume()`` calls that
  returned fewer records than asked (they waited out their 10 s timeout). ``--stats``
  adds ``fetch_idle_s``: the time in which the consumer sent no Fetch request
  (librdkafka's statistics, 100 ms apart).
* latency: a producer sends R records/s of S bytes (``linger.ms=0``) for D seconds; a
  consumer in the same process (assigned at the end of the partition) computes
  receive time - send time per record from a CLOCK_MONOTONIC stamp in the payload (its
  first 8 bytes; the next 8 hold the wall clock's);
  p50/p99/p99.9 in milliseconds. The rate is fixed, not closed-loop; it starts once the
  consumer has received an unstamped warm-up record. ``--max-in-flight`` bounds the
  producer's unanswered requests per connection (librdkafka's default is 1,000,000; the
  Java producer's, and librdkafka's own with idempotence, is 5): a broker answers one
  request of a connection at a time, so with acks=all and ``linger.ms=0`` an unbounded
  producer queues one-record requests that each wait a replication round, and the
  latency measured is that queue's (benchmarks/README.md, "Three-node latency"). The
  result also counts the Produce requests of the timed part (librdkafka's statistics), so
  records per request show how much the client batched. ``--timeline FILE`` also writes
  every timed record's (send time in CLOCK_MONOTONIC ns, latency in ms) to FILE as JSON,
  for benchmarks/latency_timeline.py. ``--split`` (a topic with LogAppendTime) adds the p50
  and p99 of send -> the broker's append time and of append time -> receive.
* firstack: prints ``ready`` once loaded, waits for ``go`` on stdin, then produces one
  record with connection and metadata retries every 5 ms and prints the CLOCK_MONOTONIC time of the
  delivery report (see brokers.timed_start).
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
import threading
import time

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

MIB = 1024 * 1024  # Kafka's perf tools' "MB" is 2^20 bytes; so is ours


# client settings of every client of the run (--conf key=value: TLS/SASL for the security group)
CONF: dict[str, str] = {}


def _producer(bootstrap: str, **extra) -> Producer:
    conf = {"bootstrap.servers": bootstrap, "queue.buffering.max.kbytes": 1048576,
            "queue.buffering.max.messages": 1_000_000, **CONF}
    conf.update({(k if callable(v) else k.replace("_", ".")): v for k, v in extra.items()
                 if v is not None})
    return Producer(conf)


def _partitions(bootstrap: str, topic: str) -> list[int]:
    md = AdminClient({"bootstrap.servers": bootstrap, **CONF}).list_topics(topic, timeout=30)
    return sorted(md.topics[topic].partitions)


def produce(a) -> dict:
    stats: list[dict] = []      # with --stats: librdkafka's statistics, newest last
    extra = {}
    if a.stats:
        extra = {"statistics_interval_ms": 200, "stats_cb": lambda j: stats.append(json.loads(j))}
    p = _producer(a.bootstrap, acks=a.acks, compression_type=a.compression,
                  linger_ms=a.linger_ms, batch_size=a.batch_size, **extra)
    payload = bytes((i * 7 + 3) & 0xFF for i in range(a.size))
    done = [0]
    errors = [0]

    def on_delivery(err, msg):
        if err is not None:
            errors[0] += 1
        done[0] += 1

    # warm up: metadata, connections
    p.produce(a.topic, payload, on_delivery=on_delivery)
    p.flush(30)
    done[0] = 0
    t0 = time.monotonic()
    cpu0 = _cpu_seconds()
    main0 = _thread_times(threading.get_native_id())
    switches0 = _thread_switches(threading.get_native_id())
    produce_ = p.produce
    for _ in range(a.num):
        while True:
            try:
                produce_(a.topic, payload, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.001)
    p.flush(120)
    dt = time.monotonic() - t0
    out = {"records": done[0], "errors": errors[0], "seconds": dt,
           "records_per_s": done[0] / dt, "mb_per_s": done[0] * a.size / dt / MIB,
           "client_cpu_s": _cpu_seconds() - cpu0,
           # the Python thread that calls produce() and runs the delivery callbacks: at
           # ``seconds`` it is the client's bottleneck
           "client_main_thread_cpu_s": _thread_cpu_seconds(threading.get_native_id()) - sum(main0)}
    main1 = _thread_times(threading.get_native_id())
    switches1 = _thread_switches(threading.get_native_id())
    out["client_main_thread_user_s"] = main1[0] - main0[0]
    out["client_main_thread_system_s"] = main1[1] - main0[1]
    out["client_main_thread_switches"] = [switches1[0] - switches0[0], switches1[1] - switches0[1]]
    if a.stats:
        out.update(_produce_stats(p, stats))
    return out


def _thread_cpu_seconds(tid: int) -> float:
    """CPU time of one thread of this process so far, from /proc (nan where unreadable)."""
    user, system = _thread_times(tid)
    return user + system


def _thread_times(tid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of one thread of this process, from /proc."""
    import os
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan"), float("nan")
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _thread_switches(tid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of one thread so far, from /proc."""
    counts = {}
    try:
        with open(f"/proc/self/task/{tid}/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    key, value = line.split(":")
                    counts[key] = int(value)
    except OSError:
        pass
    return counts.get("voluntary_ctxt_switches", -1), counts.get("nonvoluntary_ctxt_switches", -1)


def _cpu_seconds() -> float:
    """CPU time of this process so far, all its threads (librdkafka's included)."""
    import resource
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _produce_stats(p, stats: list[dict]) -> dict:
    """What the producer's own statistics say of the run (the warm-up record included):
    Produce requests, records per request, and librdkafka's round-trip and queue times
    (its windows restart with every report: averages weighted by count over the reports,
    the highest p99)."""
    reports = len(stats)
    deadline = time.monotonic() + 5
    while len(stats) == reports and time.monotonic() < deadline:
        p.poll(0.05)            # the next report comes after the last answer
    if not stats:
        return {}
    brokers = [b for b in stats[-1].get("brokers", {}).values() if b.get("nodeid", -1) >= 0]
    requests = sum(b.get("req", {}).get("Produce", 0) for b in brokers)

    def window(name: str) -> dict:
        cnt = total = p99 = 0
        for s in stats:
            for b in s.get("brokers", {}).values():
                w = b.get(name) or {}
                cnt += w.get("cnt", 0)
                total += w.get("sum", 0)
                p99 = max(p99, w.get("p99", 0))
        return {"avg": total / cnt / 1000 if cnt else float("nan"), "p99": p99 / 1000}

    return {"produce_requests": requests,
            "records_per_request": stats[-1].get("txmsgs", 0) / requests if requests else float("nan"),
            "rtt_ms": window("rtt"), "outbuf_latency_ms": window("outbuf_latency"),
            "int_latency_ms": window("int_latency")}


# librdkafka stops fetching a partition once its local queue holds queued.min.messages
# (100,000) records or queued.max.messages.kbytes (64 MiB), and looks again only after
# fetch.queue.backoff.ms, 1,000 ms by default, however soon the application empties the
# queue. A reader that is slower than the broker fills that queue every ~64 MiB and then
# waits out the rest of the second: how many such stalls a pass gets depends on a race
# between the broker and the Python loop, and that made the consume row's repetitions
# differ 2x (benchmarks/README.md, "The librdkafka consume row's first repetition"). At
# 10 ms the fetcher resumes while the queue still holds records, as the Java consumer's
# fetcher does once poll() has taken its buffered data.
CONSUME_QUEUE_BACKOFF_MS = 10
CONSUME_BATCH = 10_000          # records per consume() call
CONSUME_CALL_TIMEOUT = 10.0     # s; a call asks for no more records than remain, so it waits
                                # this long only if the records do not come


def consume(a) -> dict:
    parts = _partitions(a.bootstrap, a.topic)
    reports: list[tuple[float, str]] = []     # with --stats: (arrival, librdkafka's JSON)
    extra = {}
    if a.stats:
        extra = {"statistics.interval.ms": 100,
                 "stats_cb": lambda j: reports.append((time.monotonic(), j))}
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "rdkafka-consume-bench",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 1048576,
                  "fetch.queue.backoff.ms": CONSUME_QUEUE_BACKOFF_MS, **extra, **CONF})
    c.assign([TopicPartition(a.topic, p, 0) for p in parts])
    got = count = biggest = short = 0
    t0 = None
    want = 1        # the first call returns with the first record: the clock starts there
    deadline = time.monotonic() + a.timeout
    while got < a.bytes and time.monotonic() < deadline:
        msgs = c.consume(want, CONSUME_CALL_TIMEOUT)
        short += len(msgs) < want           # the call waited out its timeout
        for m in msgs:
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError(m.error())
            if t0 is None:
                t0 = time.monotonic()
            size = len(m.value())
            got += size
            count += 1
            biggest = max(biggest, size)
        # never ask for more records than the missing bytes can still be: consume(n)
        # returns when n records are there or at its timeout, so the last call would
        # otherwise wait out the timeout for records that never come (it did, 1 s of
        # every pass, with 10,000 asked and 7,153 left)
        if biggest:
            want = max(1, min(CONSUME_BATCH, -(-(a.bytes - got) // biggest)))
    t1 = time.monotonic()
    dt = t1 - (t0 or t1)
    c.close()
    out = {"bytes": got, "records": count, "seconds": dt,
           "mb_per_s": got / dt / MIB if dt else 0.0, "records_per_s": count / dt if dt else 0.0,
           "short_calls": short}
    if a.stats:
        out["fetch_idle_s"] = _fetch_idle(reports, t0 or t1, t1)
    return out


def _fetch_idle(reports: list[tuple[float, str]], start: float, end: float) -> float:
    """Seconds of [start, end] in statistics intervals (100 ms) in which the consumer sent
    no Fetch request: its fetcher was backed off (or one request took the whole interval)."""
    idle = 0.0
    last_t = last_n = None
    for t, raw in reports:
        s = json.loads(raw)
        n = sum(b.get("req", {}).get("Fetch", 0) for b in s.get("brokers", {}).values())
        if last_t is not None and n == last_n and start <= last_t and t <= end:
            idle += t - last_t
        last_t, last_n = t, n
    return idle


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    idx = min(len(sorted_values) - 1, max(0, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[idx]


def latency(a) -> dict:
    parts = _partitions(a.bootstrap, a.topic)
    c = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "rdkafka-latency-bench",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 500,
                  "fetch.error.backoff.ms": 10})
    # start at the end of every partition
    ends = []
    for p in parts:
        _, high = c.get_watermark_offsets(TopicPartition(a.topic, p), timeout=30)
        ends.append(TopicPartition(a.topic, p, high))
    c.assign(ends)
    timed: list[tuple[int, float]] = []     # (send stamp ns, latency ms) in receive order
    split: list[tuple[float, float]] | None = [] if a.split else None
    expected = int(a.rate * a.seconds)
    stop = threading.Event()
    warm = threading.Event()

    def reader():
        while not stop.is_set() and len(timed) < expected:
            m = c.poll(0.1)  # returns as soon as one record is there (consume(n) would wait for n)
            if m is None or m.error():
                continue
            now = time.monotonic_ns()
            (sent,) = struct.unpack_from(">q", m.value(), 0)
            if sent == 0:      # the warm-up record: the consumer is fetching
                warm.set()
                continue
            timed.append((sent, (now - sent) / 1e6))
            if split is not None:
                kind, appended_ms = m.timestamp()
                if kind == TIMESTAMP_LOG_APPEND_TIME:
                    (sent_wall,) = struct.unpack_from(">q", m.value(), 8)
                    wall_ms = time.time_ns() / 1e6
                    split.append((appended_ms - sent_wall / 1e6, wall_ms - appended_ms))

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    time.sleep(1.0)  # let the consumer's first fetch park on the broker
    stats: list[dict] = []      # librdkafka's statistics, newest last (Produce requests sent)
    p = _producer(a.bootstrap, acks=a.acks, linger_ms=0,
                  max_in_flight_requests_per_connection=a.max_in_flight,
                  statistics_interval_ms=100, stats_cb=lambda j: stats.append(json.loads(j)))
    p.produce(a.topic, b"\0" * a.size, partition=parts[0])  # warm-up: connections
    p.flush(30)
    # the clock starts once the consumer has received the warm-up record (on a loaded
    # machine its first fetch can take seconds, which would count as latency otherwise)
    if not warm.wait(60):
        raise RuntimeError("the consumer did not receive the warm-up record in 60 s")
    timed.clear()
    p.poll(0.25)                # a statistics report after the warm-up
    produce_requests_before = _produce_requests(stats)
    pad = b"x" * max(0, a.size - 16)
    interval = 1.0 / a.rate
    start = time.monotonic()
    for i in range(expected):
        target = start + i * interval
        while True:
            now = time.monotonic()
            if now >= target:
                break
            time.sleep(min(target - now, 0.001))
        p.produce(a.topic, struct.pack(">qq", time.monotonic_ns(), time.time_ns()) + pad,
                  partition=parts[i % len(parts)])
        p.poll(0)
    p.flush(30)
    reports = len(stats)
    deadline = time.monotonic() + 5
    while len(stats) == reports and time.monotonic() < deadline:
        p.poll(0.05)            # one more statistics report, after the last answer
    t.join(a.seconds + 30)
    stop.set()
    c.close()
    if a.timeline:
        with open(a.timeline, "w") as f:
            json.dump(timed, f)
    values = sorted(ms for _, ms in timed)
    requests = _produce_requests(stats) - produce_requests_before
    extra = {}
    if split:
        before = sorted(b for b, _ in split)
        after = sorted(a_ for _, a_ in split)
        extra = {"to_append_p50_ms": _percentile(before, 0.50), "to_append_p99_ms": _percentile(before, 0.99),
                 "after_append_p50_ms": _percentile(after, 0.50), "after_append_p99_ms": _percentile(after, 0.99)}
    return {**extra, "records": len(values), "expected": expected,
            "p50_ms": _percentile(values, 0.50), "p99_ms": _percentile(values, 0.99),
            "p999_ms": _percentile(values, 0.999),
            "max_ms": values[-1] if values else float("nan"),
            "produce_requests": requests,
            "records_per_request": expected / requests if requests > 0 else float("nan")}


def _produce_requests(stats: list[dict]) -> int:
    """Produce requests the producer sent so far, over every broker (its newest statistics)."""
    if not stats:
        return 0
    return sum(b.get("req", {}).get("Produce", 0) for b in stats[-1].get("brokers", {}).values())


def firstack(a) -> None:
    # connections and metadata asked again every millisecond, without librdkafka's
    # exponential growth: with retry.backoff.max.ms 50 the re-query after the auto-created
    # topic's first UNKNOWN_TOPIC_OR_PARTITION answer came up to ~45 ms later (its timer had
    # grown while the broker was starting), a client wait that set a third of kbroker's
    # figure. Each of the probe's timers (a first connection, the one to the advertised
    # broker, the topic's next query) adds half its period on average to any broker's
    # figure, ~7 ms at the 5 ms used before: 6 % of a kbroker start, 0.3 % of Kafka's. At
    # 1 ms, kbroker's ack came 4 ms sooner in alternating starts (medians of 10: 0.111 and
    # 0.120 s against 0.107 and 0.110 s); Kafka's starts did not move (2.39-2.69 s against
    # 2.37-2.45 s) and the probe used 0.02 cpu-s more over them
    p = _producer(a.bootstrap, acks="1", linger_ms=0, reconnect_backoff_ms=1,
                  reconnect_backoff_max_ms=1, retry_backoff_ms=1, retry_backoff_max_ms=1,
                  topic_metadata_refresh_interval_ms=100, message_timeout_ms=int(a.timeout * 1000),
                  # an auto-created topic can take longer than librdkafka's default 30 s to
                  # appear on a loaded machine; the message must wait for it, not fail
                  topic_metadata_propagation_max_ms=int(a.timeout * 1000),
                  socket_connection_setup_timeout_ms=5000)
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit(2)
    acked: list[float] = []

    def on_delivery(err, msg):
        if err is None:
            acked.append(time.monotonic())
        else:
            print(f"delivery failed: {err}", file=sys.stderr)

    p.produce(a.topic, b"first", on_delivery=on_delivery)
    deadline = time.monotonic() + a.timeout
    while not acked and time.monotonic() < deadline:
        p.poll(0.002)
    if not acked:
        print("timed out", file=sys.stderr)
        raise SystemExit(1)
    print(f"{acked[0]:.6f}", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["produce", "consume", "latency", "firstack"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--num", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--acks", default="1")
    ap.add_argument("--compression", default="none")
    ap.add_argument("--linger-ms", type=int, default=None)     # librdkafka's default: 5
    ap.add_argument("--batch-size", type=int, default=None)    # librdkafka's default: 1 MB
    ap.add_argument("--max-in-flight", type=int, default=None)  # latency; librdkafka's default: 1,000,000
    ap.add_argument("--bytes", type=int, default=1 << 30)
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--stats", action="store_true",
                    help="produce: add librdkafka's statistics (requests, round trips) to the "
                         "result; consume: the time in which no Fetch request was sent")
    ap.add_argument("--split", action="store_true",
                    help="latency, on a topic with LogAppendTime: also the p50/p99 of send -> "
                         "the broker's append time and append time -> receive (wall clock, "
                         "the append time in whole milliseconds)")
    ap.add_argument("--timeline", default=None, metavar="FILE",
                    help="latency: write every record's (send ns, latency ms) here as JSON")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a librdkafka setting for every client (repeatable)")
    a = ap.parse_args(argv)
    CONF.update(item.split("=", 1) for item in a.conf)
    if a.mode == "firstack":
        firstack(a)
        return
    result = {"produce": produce, "consume": consume, "latency": latency}[a.mode](a)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
