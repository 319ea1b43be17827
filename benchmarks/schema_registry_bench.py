"""Schema registry benchmark (not a test): registration and lookup rates and latency of kbroker's
built-in registry, and the broker's produce/fetch rates with the registry on and off.

    python -m benchmarks.schema_registry_bench [--schemas 300] [--lookups 2000]
        [--records 200000] [--size 512] [--reps 3]

For each repetition, in this order:

1. a ``kbroker serve`` with the registry on (``kbroker.schema.registry.listen``), started with
   ``kbroker.testing.processes.KbrokerProcess`` from this checkout;
2. **register**: ``--schemas`` distinct Avro records (one field more each time, NONE level so
   every one is accepted), one ``POST /subjects/{s}/versions`` after another on one
   keep-alive HTTP connection (``http.client``), 10 subjects in turn — each a write ordered
   through ``_schemas`` (acks=all) and its replay;
3. **lookup by id** (``GET /schemas/ids/{id}``, what a deserializer sends on a cache miss) and
   **lookup by schema** (``POST /subjects/{s}``, what a serializer without auto-registration
   sends), ``--lookups`` each, ids and schemas in random order (seeded);
4. **produce/fetch** with confluent-kafka (librdkafka): ``--records`` records of ``--size``
   bytes to a one-partition topic (acks=all, idempotent, linger.ms=5), then consumed back from
   offset 0 (assign, no group); records/s from the first send to the last delivery report,
   and from the first to the last record read;
5. the same produce/fetch on a second ``kbroker serve`` without the registry.

Latency is per request, client side (median, p99, max in ms); rates are requests or records
per second. The 1-min load average is printed with the table (the machine may be shared:
every number is noisier for it). A comparison with a reference registry (Confluent's or
Karapace) is not made here: none runs beside this benchmark yet.

Results: a table on stdout, ``benchmarks/results/schema_registry/results.json`` (every
repetition's values) and ``results.md`` (the table); the folder is ignored by git.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.harness.rdkafka_load import CONSUME_QUEUE_BACKOFF_MS
from kbroker.testing.processes import KbrokerProcess, free_port

CT = "application/vnd.schemaregistry.v1+json"
OUT = Path(__file__).resolve().parent / "results" / "schema_registry"


class Client:
    """One keep-alive HTTP connection to the registry; ``call`` → (status, JSON), timed."""

    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method: str, path: str, body=None) -> tuple[int, object, float]:
        data = None if body is None else json.dumps(body).encode()
        start = time.perf_counter()
        self.conn.request(method, path, body=data, headers={"Content-Type": CT} if data else {})
        resp = self.conn.getresponse()
        raw = resp.read()
        elapsed = time.perf_counter() - start
        return resp.status, json.loads(raw) if raw else None, elapsed

    def close(self) -> None:
        self.conn.close()


def schema(i: int) -> str:
    fields = [{"name": f"f{j}", "type": "long", "default": 0} for j in range(i + 1)]
    return json.dumps({"type": "record", "name": "Bench", "namespace": "kbroker.bench", "fields": fields})


def summary(latencies: list[float], seconds: float) -> dict:
    ms = sorted(x * 1000 for x in latencies)
    return {"count": len(ms), "rate": len(ms) / seconds if seconds else 0.0,
            "median_ms": statistics.median(ms), "p99_ms": ms[min(len(ms) - 1, int(len(ms) * 0.99))],
            "max_ms": ms[-1]}


def registry_phase(port: int, n_schemas: int, n_lookups: int, seed: int) -> dict:
    client = Client(port)
    try:
        status, _, _ = client.call("PUT", "/config", {"compatibility": "NONE"})
        assert status == 200, status
        subjects = [f"bench-{uuid.uuid4().hex[:6]}-{k}" for k in range(10)]
        registered, lat = [], []
        start = time.perf_counter()
        for i in range(n_schemas):
            subject = subjects[i % len(subjects)]
            status, body, dt = client.call("POST", f"/subjects/{subject}/versions", {"schema": schema(i)})
            if status != 200:
                raise RuntimeError(f"register answered {status}: {body}")
            registered.append((subject, i, body["id"]))
            lat.append(dt)
        register = summary(lat, time.perf_counter() - start)

        rng = random.Random(seed)
        lat = []
        start = time.perf_counter()
        for _ in range(n_lookups):
            _, _, sid = rng.choice(registered)
            status, _, dt = client.call("GET", f"/schemas/ids/{sid}")
            assert status == 200, status
            lat.append(dt)
        by_id = summary(lat, time.perf_counter() - start)

        lat = []
        start = time.perf_counter()
        for _ in range(n_lookups):
            subject, i, sid = rng.choice(registered)
            status, body, dt = client.call("POST", f"/subjects/{subject}", {"schema": schema(i)})
            assert status == 200 and body["id"] == sid, (status, body)
            lat.append(dt)
        by_schema = summary(lat, time.perf_counter() - start)
        return {"register": register, "lookup_by_id": by_id, "lookup_by_schema": by_schema}
    finally:
        client.close()


def produce_fetch(bootstrap: str, records: int, size: int) -> dict:
    from confluent_kafka import Consumer, Producer, TopicPartition
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    value = os.urandom(size)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "queue.buffering.max.kbytes": 32768})
    delivered = 0

    def report(err, _msg):
        nonlocal delivered
        if err is None:
            delivered += 1

    producer.produce(topic, value=value, on_delivery=report)   # creates the topic
    producer.flush(60)
    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value=value, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(120)
    produce_s = time.perf_counter() - start
    if delivered != records + 1:
        raise RuntimeError(f"{delivered} of {records + 1} records acknowledged")

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                         "enable.auto.commit": False, "fetch.max.bytes": 52428800,
                         "fetch.queue.backoff.ms": CONSUME_QUEUE_BACKOFF_MS})
    consumer.assign([TopicPartition(topic, 0, 1)])
    got = 0
    start = None
    while got < records:
        # no more than can still come: consume(n) waits out its timeout otherwise
        for msg in consumer.consume(min(1000, records - got), 5.0):
            if msg.error():
                continue
            if start is None:
                start = time.perf_counter()
            got += 1
    fetch_s = time.perf_counter() - start
    consumer.close()
    return {"produce_rate": records / produce_s, "fetch_rate": records / fetch_s,
            "produce_mb_s": records * size / produce_s / 1e6, "fetch_mb_s": records * size / fetch_s / 1e6}


def run(args) -> dict:
    reps = []
    with tempfile.TemporaryDirectory(prefix="sr-bench-") as tmp:
        for rep in range(args.reps):
            port = free_port()
            on = KbrokerProcess(Path(tmp) / f"on-{rep}", {"kbroker.schema.registry.listen": f"127.0.0.1:{port}"}).start()
            try:
                result = registry_phase(port, args.schemas, args.lookups, seed=rep)
                result["broker_registry_on"] = produce_fetch(on.bootstrap_servers, args.records, args.size)
            finally:
                on.stop()
            off = KbrokerProcess(Path(tmp) / f"off-{rep}", {}).start()
            try:
                result["broker_registry_off"] = produce_fetch(off.bootstrap_servers, args.records, args.size)
            finally:
                off.stop()
            reps.append(result)
            print(f"repetition {rep + 1}/{args.reps} done", flush=True)
    return {"args": vars(args), "load_average": os.getloadavg()[0], "repetitions": reps}


def median_of(reps: list[dict], *path: str) -> float:
    values = []
    for r in reps:
        v = r
        for p in path:
            v = v[p]
        values.append(v)
    return statistics.median(values)


def table(results: dict) -> str:
    reps = results["repetitions"]
    lines = [f"Schema registry benchmark: {len(reps)} repetition(s), medians; "
             f"1-min load average {results['load_average']:.2f}", "",
             "| operation | requests/s | median ms | p99 ms | max ms |", "|---|---|---|---|---|"]
    for key, name in (("register", "register (POST /subjects/{s}/versions)"),
                      ("lookup_by_id", "lookup by id (GET /schemas/ids/{id})"),
                      ("lookup_by_schema", "lookup by schema (POST /subjects/{s})")):
        lines.append(f"| {name} | {median_of(reps, key, 'rate'):,.0f} | {median_of(reps, key, 'median_ms'):.2f} "
                     f"| {median_of(reps, key, 'p99_ms'):.2f} | {median_of(reps, key, 'max_ms'):.2f} |")
    lines += ["", "| broker | produce records/s | fetch records/s |", "|---|---|---|"]
    for key, name in (("broker_registry_on", "registry on"), ("broker_registry_off", "registry off")):
        lines.append(f"| {name} | {median_of(reps, key, 'produce_rate'):,.0f} | {median_of(reps, key, 'fetch_rate'):,.0f} |")
    on, off = (median_of(reps, k, "produce_rate") for k in ("broker_registry_on", "broker_registry_off"))
    lines.append(f"\nproduce rate on/off: {on / off:.2f}")
    return "\n".join(lines)


def report(out: Path, results: dict, table) -> None:
    """Print ``table(results)`` and keep it with every repetition's values in ``out``
    (``results.md``, ``results.json``)."""
    text = table(results)
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2))
    (out / "results.md").write_text(text + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--schemas", type=int, default=300)
    p.add_argument("--lookups", type=int, default=2000)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)
    report(OUT, run(args), table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
