"""End-to-end latency as the load grows: fixed rates, acks=1 and acks=all, with a competing process.

Every row is `rdkafka_load latency` (one librdkafka producer at a fixed rate, `linger.ms=0`,
1 KiB records stamped with CLOCK_MONOTONIC, and a consumer in the same process assigned at
the end of the partition; receive − send per record, p50 and p99) against a 1-partition topic:

* ``lat-<rate>-a1``: one node, acks=1;
* ``lat-<rate>-a1-busy``: the same while another process spins on one core for the whole run
  (a pure CPU loop, `BUSY_LOOP`): what a single-threaded broker feels first when a client or
  any other job takes a core;
* ``lat-<rate>-aall-3n``: three combined nodes (`benchmarks.controller_bench` start-up code,
  Kafka with its shipped JVM flags), replication factor 3, ``min.insync.replicas=2``, acks=all,
  the producer with at most 5 requests in flight per connection (`ACKS_ALL_IN_FLIGHT`).

Why the acks=all rows bound the requests in flight: both brokers answer the requests of one
connection one at a time (Kafka mutes a channel until its answer is sent), and an acks=all
answer waits for a replication round (follower fetch, follower append, its next fetch).
librdkafka's default of 1,000,000 requests in flight with ``linger.ms=0`` turns every record
into a request of its own and sends them as long as the socket takes them, so at 1,000
records/s a queue of thousands of one-record requests built up in the sockets, each waiting
its round: seconds of latency on both brokers, falling as the rate grew (larger requests).
That measured librdkafka's pipelining policy, not replication; with 5 in flight (the Java
producer's default, and librdkafka's own when idempotent) waiting records join the next
request, as a real acks=all producer's do. benchmarks/README.md "Three-node latency" has the
before/after of both brokers.

The producer's pace is fixed and not closed-loop: when a broker falls behind the rate, the
records wait in the client and the latency shows it. Records received below the number sent
are reported in the raw values (`records` / `expected`).
"""
from __future__ import annotations

import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from compat_tests.runner import die_with_parent

BUSY_LOOP = "while True: pass"
ACKS_ALL_IN_FLIGHT = 5      # the Java producer's max.in.flight.requests.per.connection


def _titles(rate: int) -> dict[str, str]:
    return {"a1": f"end-to-end latency, 1 KiB, {rate:,} records/s, acks=1, 1 node",
            "a1-busy": f"end-to-end latency, 1 KiB, {rate:,} records/s, acks=1, 1 node, "
                       f"a CPU-bound process competing",
            "aall-3n": f"end-to-end latency, 1 KiB, {rate:,} records/s, acks=all, 3 nodes RF=3, "
                       f"{ACKS_ALL_IN_FLIGHT} requests in flight"}


def _declare(results, kind: str, rate: int) -> str:
    sid = f"lat-{rate}-{kind}"
    results.scenario(sid, title=_titles(rate)[kind], group="latency", unit="ms p99",
                     better="lower", secondary_unit="ms p50", target=1.0)
    return sid


def latency_client(bootstrap: str, topic: str, rate: int, seconds: float, acks: str,
                   *extra: str) -> dict:
    """One row's client run (`rdkafka_load latency`, 1 KiB records): its JSON result."""
    from .run import rdkafka
    return rdkafka("latency", bootstrap, topic, "--rate", str(rate), "--seconds", str(seconds),
                   "--size", "1024", "--acks", acks, *extra)


@contextmanager
def competing_process(on: bool = True):
    """The competing rows' CPU-bound process (`BUSY_LOOP`), for the block (none when off)."""
    busy = subprocess.Popen([sys.executable, "-c", BUSY_LOOP],
                            preexec_fn=die_with_parent) if on else None
    try:
        yield
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


def _measure(session, sid: str, bootstrap: str, topic: str, rate: int, acks: str,
             *extra: str) -> None:
    from .run import log
    out = latency_client(bootstrap, topic, rate, session.plan.latency_seconds, acks, *extra)
    log(f"{session.name}: {sid}: p50 {out['p50_ms']:.2f} p99 {out['p99_ms']:.2f} ms "
        f"({out['records']}/{out['expected']} received)")
    session.results.add(sid, session.name, out["p99_ms"], out["p50_ms"], out)


def single_node_blocks(session, b) -> list:
    """The acks=1 rows (with and without a competing process) on the loads broker `b`, one
    block per row (benchmarks/harness/paired.py)."""
    from .paired import Block
    blocks = []
    for rate in session.plan.latency_rates:
        for kind in ("a1", "a1-busy"):
            sid = _declare(session.results, kind, rate)
            blocks.append(Block(b.pid, session.plan.reps,
                                [(sid, partial(_single_node, session, b, sid, rate, kind))]))
    return blocks


def _single_node(session, b, sid: str, rate: int, kind: str) -> None:
    from .admin import create_topics
    topic = f"{sid}-{uuid.uuid4().hex[:8]}"
    create_topics(b.bootstrap_servers, [(topic, 1)])
    with competing_process(kind == "a1-busy"):
        _measure(session, sid, b.bootstrap_servers, topic, rate, "1")


def three_nodes(session) -> None:
    """The acks=all rows on a fresh three-node cluster of the session's broker; a failure
    (a cluster that does not start on a loaded machine) is logged and the session goes on."""
    from .run import log
    try:
        _three_nodes(session)
    except Exception as exc:  # noqa: BLE001 - a failed row is a result too
        log(f"{session.name}: three-node latency rows FAILED: {exc!r}")
        session.results.meta.setdefault("failed", []).append(
            f"{session.name}: three-node latency: {str(exc)[:300]}")


def _three_nodes(session) -> None:
    from benchmarks.controller_bench import kafka_cluster, kbroker_cluster, start_all
    from benchmarks import replication_bench
    from benchmarks.replication_bench import create_topic, stop, wait_brokers, wait_fully_replicated

    from .brokers import KafkaBench
    from .run import log
    root = Path(session.workroot) / "latency-3n"
    root.mkdir(parents=True, exist_ok=True)
    nodes = kbroker_cluster(root) if session.name == "kbroker" else kafka_cluster(root, base=KafkaBench)
    t0 = time.monotonic()
    bootstrap = ",".join(f"127.0.0.1:{n.port}" for n in nodes.values())
    try:
        start_all(nodes)
        if not wait_brokers(bootstrap, 3):
            raise RuntimeError("the cluster never listed three brokers")
        log(f"{session.name}: three nodes up in {time.monotonic() - t0:.1f} s")
        for rate in session.plan.latency_rates:
            sid = _declare(session.results, "aall-3n", rate)
            for _ in range(session.plan.reps):
                topic = f"{sid}-{uuid.uuid4().hex[:8]}"
                try:
                    create_topic(bootstrap, topic, 1, 3, 2)
                except Exception as exc:  # noqa: BLE001 - a retried CreateTopics under load
                    if "TOPIC_ALREADY_EXISTS" not in str(exc):
                        raise
                if not wait_fully_replicated(bootstrap, topic, 1, 3):
                    raise RuntimeError(f"{topic}: no leader with three in-sync replicas")
                _measure(session, sid, bootstrap, topic, rate, "all",
                         "--max-in-flight", str(ACKS_ALL_IN_FLIGHT))
    finally:
        stop(nodes)
        replication_bench._ADMINS.pop(bootstrap, None)   # its admin client would retry forever
