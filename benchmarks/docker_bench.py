"""The container image: its size above its base, and start-up to the first acknowledged produce.

    .venv/bin/python -m benchmarks.docker_bench [--image kbroker:test] [--base kbroker-base:bookworm]
                                                [--reps 5] [--kafka]

Start-up: from ``docker run`` (create + start) of a fresh container with an empty data volume to
the first record a librdkafka producer on the host gets acknowledged (acks=all, auto-created
topic), through the published port; the median of ``--reps`` runs. ``--kafka`` builds and measures
Apache Kafka 4.3.1 the same way (``benchmarks/docker_kafka``: the compat suite's jars on the same
Debian base with Debian's JRE, configured by the same KAFKA_* variables). Needs the engine and the
images of ``make docker-image``. Writes benchmarks/results/docker/results.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import tempfile
import time
from pathlib import Path

import docker
from confluent_kafka import Producer

ROOT = Path(__file__).resolve().parents[1]
KAFKA_LIBS = ROOT / ".cache" / "kafka" / "4.3.1" / "libs"
LABEL = "kbroker-docker-bench"


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def env_for(port: int) -> dict:
    return {
        "KAFKA_NODE_ID": "1", "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://:19092,CONTROLLER://:9093,PLAINTEXT_HOST://:9092",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://bench:19092,PLAINTEXT_HOST://127.0.0.1:{port}",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER", "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@bench:9093",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT", "CLUSTER_ID": "MkU3OEVBNTcwNTJENDM2Qg",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1", "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1", "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    }


def first_ack_seconds(dk, image: str, timeout: float = 120) -> float:
    port = free_port()
    t0 = time.monotonic()
    c = dk.containers.run(image, detach=True, hostname="bench", environment=env_for(port),
                          ports={"9092/tcp": ("127.0.0.1", port)}, labels={LABEL: "1"})
    try:
        acked = []
        p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "acks": "all",
                      "message.timeout.ms": 1000, "reconnect.backoff.ms": 10,
                      "reconnect.backoff.max.ms": 50, "topic.metadata.refresh.interval.ms": 50,
                      "log_level": 0})
        while not acked and time.monotonic() - t0 < timeout:
            p.produce("startup", b"x", on_delivery=lambda err, msg: err is None and acked.append(1))
            p.flush(1.5)
        if not acked:
            raise RuntimeError(f"{image}: no ack within {timeout} s:\n{c.logs().decode()[-2000:]}")
        return time.monotonic() - t0
    finally:
        c.remove(force=True, v=True)


def size_mb(dk, image: str) -> float:
    return dk.images.get(image).attrs["Size"] / 1e6


def build_kafka(dk, base: str, tag: str) -> None:
    if not KAFKA_LIBS.is_dir():
        raise SystemExit(f"{KAFKA_LIBS} missing: run `make kafka-dist` first")
    with tempfile.TemporaryDirectory() as d:
        shutil.copytree(KAFKA_LIBS, Path(d) / "libs")
        for f in ("Dockerfile", "launch", "log4j2.properties", "kafka-run", "confluent-configure",
                  "confluent-launch", "confluent-run", "kafka-storage"):
            shutil.copy(Path(__file__).parent / "docker_kafka" / f, Path(d) / f)
        dk.images.build(path=d, tag=tag, buildargs={"BASE": base}, rm=True, forcerm=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", default="kbroker:test")
    ap.add_argument("--base", default="kbroker-base:bookworm")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--kafka", action="store_true", help="also Kafka 4.3.1 built on the same base")
    ap.add_argument("--kafka-image", default="kbroker-bench-kafka:4.3.1")
    a = ap.parse_args()
    dk = docker.from_env(timeout=300)
    images = {"kbroker": a.image}
    if a.kafka:
        build_kafka(dk, a.base, a.kafka_image)
        images["Kafka 4.3.1"] = a.kafka_image
    base = size_mb(dk, a.base)
    rows = {}
    for label, image in images.items():
        times = [first_ack_seconds(dk, image) for _ in range(a.reps)]
        size = size_mb(dk, image)
        rows[label] = {"image": image, "size_mb": round(size, 1), "above_base_mb": round(size - base, 1),
                       "startup_s": [round(t, 3) for t in times],
                       "startup_median_s": round(statistics.median(times), 3)}
    out = ROOT / "benchmarks" / "results" / "docker"
    out.mkdir(parents=True, exist_ok=True)
    result = {"base": a.base, "base_mb": round(base, 1), "reps": a.reps, "images": rows,
              "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"base {a.base}: {base:.0f} MB; median of {a.reps} start-ups")
    print("| image | size | above the base | start-up to first acknowledged produce |")
    print("|---|---:|---:|---:|")
    for label, r in rows.items():
        print(f"| {label} (`{r['image']}`) | {r['size_mb']:.0f} MB | {r['above_base_mb']:.0f} MB "
              f"| {r['startup_median_s']:.2f} s |")


if __name__ == "__main__":
    main()
