"""Start-up through testcontainers: from ``KafkaContainer.start()`` (the module creates and starts
the container, copies its start script in, waits for the log line it expects) to the first
record a host producer gets acknowledged through the address the module hands out; and each
image's size.

    .venv/bin/python -m benchmarks.testcontainers_bench [--reps 5] [--kafka]

Cases: kbroker's image (``--image``, default kbroker:test) through testcontainers-python's
Kafka module in its default mode and with ``with_kraft()``; with ``--kafka``, Apache Kafka 4.3.1
built on the same base by ``benchmarks/docker_kafka`` (which answers the same entry points)
through ``with_kraft()`` (Kafka 4 has no ZooKeeper mode). Two times per run: until ``start()``
returns (the module's own readiness wait) and until the first acknowledged produce (acks=all,
auto-created topic, librdkafka on the host); the median of ``--reps``. Ryuk is disabled (its
image cannot be pulled here). Needs the engine, ``make docker-image`` and, for ``--kafka``,
``make kafka-dist``. Writes benchmarks/results/testcontainers/results.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import docker
from confluent_kafka import Producer

from benchmarks.docker_bench import ROOT, build_kafka, size_mb

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
from testcontainers.community.kafka import KafkaContainer  # noqa: E402

LABEL = "kbroker-docker-bench"
CP_TAG = "7.9.0"     # with_kraft() wants a Confluent Platform version of 7.0.0 or later


def one_run(image: str, kraft: bool, timeout: float = 180) -> tuple[float, float]:
    """(seconds until start() returned, seconds until the first acknowledged produce)."""
    kafka = KafkaContainer(image=image).with_kwargs(labels={LABEL: "1"})
    if kraft:
        kafka = kafka.with_kraft()
    t0 = time.monotonic()
    kafka.start(timeout=int(timeout))
    try:
        started = time.monotonic() - t0
        acked: list[int] = []
        p = Producer({"bootstrap.servers": kafka.get_bootstrap_server(), "acks": "all",
                      "message.timeout.ms": 1000, "reconnect.backoff.ms": 10,
                      "reconnect.backoff.max.ms": 50, "topic.metadata.refresh.interval.ms": 50,
                      "log_level": 0})
        while not acked and time.monotonic() - t0 < timeout:
            p.produce("startup", b"x", on_delivery=lambda err, msg: err is None and acked.append(1))
            p.flush(1.5)
        if not acked:
            raise RuntimeError(f"{image}: no ack within {timeout} s")
        return started, time.monotonic() - t0
    finally:
        kafka.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", default="kbroker:test")
    ap.add_argument("--base", default="kbroker-base:bookworm")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--kafka", action="store_true", help="also Kafka 4.3.1 built on the same base")
    ap.add_argument("--kafka-image", default="kbroker-bench-kafka:4.3.1")
    a = ap.parse_args()
    dk = docker.from_env(timeout=600)
    images = {"kbroker": a.image}
    if a.kafka:
        build_kafka(dk, a.base, a.kafka_image)
        images["Kafka 4.3.1"] = a.kafka_image
    tagged = {}
    for label, image in images.items():
        repo = "kbroker-bench/" + ("kbroker" if label == "kbroker" else "kafka") + "-as-cp-kafka"
        dk.images.get(image).tag(repo, CP_TAG)
        tagged[label] = f"{repo}:{CP_TAG}"
    cases = [("kbroker", "default mode", a.image, False), ("kbroker", "with_kraft()", tagged["kbroker"], True)]
    if a.kafka:
        cases.append(("Kafka 4.3.1", "with_kraft()", tagged["Kafka 4.3.1"], True))
    base = size_mb(dk, a.base)
    rows = []
    try:
        for label, mode, image, kraft in cases:
            runs = [one_run(image, kraft) for _ in range(a.reps)]
            size = size_mb(dk, images[label])
            rows.append({"image": label, "tag": images[label], "mode": mode,
                         "size_mb": round(size, 1), "above_base_mb": round(size - base, 1),
                         "started_s": [round(s, 3) for s, _ in runs],
                         "first_ack_s": [round(f, 3) for _, f in runs],
                         "started_median_s": round(statistics.median(s for s, _ in runs), 3),
                         "first_ack_median_s": round(statistics.median(f for _, f in runs), 3)})
    finally:
        for t in tagged.values():
            dk.images.remove(t, noprune=True)
    out = ROOT / "benchmarks" / "results" / "testcontainers"
    out.mkdir(parents=True, exist_ok=True)
    result = {"base": a.base, "base_mb": round(base, 1), "reps": a.reps, "rows": rows,
              "load_1min": round(os.getloadavg()[0], 1),
              "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"base {a.base}: {base:.0f} MB; median of {a.reps} runs; 1-min load {result['load_1min']}")
    print("| image | testcontainers-python | size | above the base | start() returned | first acknowledged produce |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['image']} | {r['mode']} | {r['size_mb']:.0f} MB | {r['above_base_mb']:.0f} MB "
              f"| {r['started_median_s']:.2f} s | {r['first_ack_median_s']:.2f} s |")


if __name__ == "__main__":
    main()
