"""Optional rows: kbroker's schema registry and REST gateway beside Karapace's (issues #28, #35).

Run only when a Karapace install is given (``bench.py --karapace-venv DIR`` or the
``KBROKER_BENCH_KARAPACE`` variable; how to install it: compat_tests/README.md, "HTTP
differential"), since Karapace is on no package registry. In the table the ``kbroker`` column
is kbroker's own registry and gateway (one ``kbroker serve`` with both listeners); the
``Kafka`` column is Karapace's registry and REST proxy beside Apache Kafka (the same pinned
Kafka as the other rows), on the same machine.

The two sides alternate — repetition 1 kbroker then Karapace, repetition 2 Karapace then
kbroker, ... — each on fresh data directories, so that a change in the machine's load (it is
shared) falls on both; the table shows medians of the repetitions. Per repetition and side:

1. **register**: ``schemas`` distinct Avro records (NONE level, 10 subjects in turn), one
   ``POST /subjects/{s}/versions`` after the other on one keep-alive connection;
2. **lookup by id** (``GET /schemas/ids/{id}``) and **by schema** (``POST /subjects/{s}``),
   ``lookups`` each in a seeded random order;
3. **REST produce**: ``rest_records`` binary records of ``record_size`` bytes to a
   one-partition topic, ``per_request`` records per ``POST /topics/{t}``, one request after
   the other; records/s from the first request to the last answer;
4. **REST consume**: a v2 consumer instance (binary, assigned the partition, from the
   beginning) polls ``GET .../records`` until it has read them all; records/s from the first
   poll to the last record.

Latency is client side per request (median and p99 in ms, the p99 in the raw values).
Karapace's REST producer lingers 100 ms by default; it runs here with
``KARAPACE_PRODUCER_LINGER_MS=5`` (the linger the other librdkafka rows use), otherwise one
request after the other measures the linger.
"""
from __future__ import annotations

import base64
import http.client
import json
import os
import random
import shutil
import statistics
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from kbroker.testing.processes import Admin, KbrokerProcess, free_port

SR = "application/vnd.schemaregistry.v1+json"
V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"
ENV = "KBROKER_BENCH_KARAPACE"


@dataclass
class Sizes:
    schemas: int = 200
    lookups: int = 1000
    rest_records: int = 20_000
    per_request: int = 100
    record_size: int = 100
    reps: int = 3


class Http:
    """One keep-alive connection; ``call`` → (status, body, seconds)."""

    def __init__(self, url: str):
        u = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)

    def call(self, method: str, path: str, body=None, ctype: str | None = None,
             accept: str | None = None):
        data = None if body is None else json.dumps(body).encode()
        headers = {}
        if data is not None:
            headers["Content-Type"] = ctype or SR
        if accept:
            headers["Accept"] = accept
        t0 = time.perf_counter()
        self.conn.request(method, path, body=data, headers=headers)
        resp = self.conn.getresponse()
        raw = resp.read()
        dt = time.perf_counter() - t0
        try:
            value = json.loads(raw) if raw else None
        except ValueError:
            value = raw.decode(errors="replace")
        return resp.status, value, dt

    def close(self):
        self.conn.close()


def _schema(i: int) -> str:
    fields = [{"name": f"f{j}", "type": "string", "default": ""} for j in range(i % 20 + 1)]
    return json.dumps({"type": "record", "name": f"R{i}", "namespace": "bench", "fields": fields})


def _lat(samples: list[float]) -> tuple[float, float]:
    ms = sorted(s * 1000 for s in samples)
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


def measure(registry_url: str, rest_url: str, bootstrap: str, sizes: Sizes, log) -> dict:
    """One side, one repetition: every row's value and its latencies."""
    out = {}
    c = Http(registry_url)
    try:
        st, _, _ = c.call("PUT", "/config", {"compatibility": "NONE"})
        assert st == 200, st
        lat, ids, t0 = [], [], time.perf_counter()
        for i in range(sizes.schemas):
            st, body, dt = c.call("POST", f"/subjects/bench-{i % 10}/versions", {"schema": _schema(i)})
            assert st == 200, (st, body)
            lat.append(dt)
            ids.append((i, body["id"]))
        out["register"] = (sizes.schemas / (time.perf_counter() - t0), *_lat(lat))
        rng = random.Random(7)
        picks = [rng.choice(ids) for _ in range(sizes.lookups)]
        lat, t0 = [], time.perf_counter()
        for _, sid in picks:
            st, body, dt = c.call("GET", f"/schemas/ids/{sid}")
            assert st == 200, (st, body)
            lat.append(dt)
        out["lookup-id"] = (sizes.lookups / (time.perf_counter() - t0), *_lat(lat))
        lat, t0 = [], time.perf_counter()
        for i, _ in picks:
            st, body, dt = c.call("POST", f"/subjects/bench-{i % 10}", {"schema": _schema(i)})
            assert st == 200, (st, body)
            lat.append(dt)
        out["lookup-schema"] = (sizes.lookups / (time.perf_counter() - t0), *_lat(lat))
    finally:
        c.close()
    log(f"  registry: register {out['register'][0]:.0f}/s, by id {out['lookup-id'][0]:.0f}/s, "
        f"by schema {out['lookup-schema'][0]:.0f}/s")

    topic = "bench-rest"
    admin = Admin(bootstrap)
    admin.create_topic(topic, partitions=1)
    admin.wait_topic(topic, 1)
    r = Http(rest_url)
    try:
        value = base64.b64encode(b"x" * sizes.record_size).decode()
        batch = {"records": [{"value": value} for _ in range(sizes.per_request)]}
        # the proxy's metadata may lag the topic's creation: wait until it produces
        deadline = time.monotonic() + 60
        while True:
            st, body, _ = r.call("POST", f"/topics/{topic}", {"records": [{"value": value}]}, BINARY)
            if st == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert st == 200, (st, body)
        n = sizes.rest_records // sizes.per_request
        lat, t0 = [], time.perf_counter()
        for _ in range(n):
            st, body, dt = r.call("POST", f"/topics/{topic}", batch, BINARY)
            assert st == 200, (st, body)
            lat.append(dt)
        total = n * sizes.per_request
        out["rest-produce"] = (total / (time.perf_counter() - t0), *_lat(lat))
        st, body, _ = r.call("POST", "/consumers/bench-group", {
            "name": "bench-inst", "format": "binary", "auto.offset.reset": "earliest",
            "auto.commit.enable": "false"}, V2)
        assert st == 200, (st, body)
        base = "/consumers/bench-group/instances/bench-inst"
        part = {"partitions": [{"topic": topic, "partition": 0}]}
        st, body, _ = r.call("POST", base + "/assignments", part, V2)
        assert st == 204, (st, body)
        for _ in range(50):  # the reference applies an assignment asynchronously
            st, body, _ = r.call("POST", base + "/positions/beginning", part, V2)
            if st == 204:
                break
            time.sleep(0.1)
        assert st == 204, (st, body)
        want, got, lat, polls = total + 1, 0, [], 0
        t0 = time.perf_counter()
        deadline = time.monotonic() + 300
        while got < want and time.monotonic() < deadline:
            st, body, dt = r.call("GET", base + "/records?timeout=1000&max_bytes=4000000",
                                  accept=BINARY)
            assert st == 200, (st, body)
            got += len(body)
            polls += 1
            lat.append(dt)
        assert got >= want, f"consumed {got} of {want}"
        out["rest-consume"] = (got / (time.perf_counter() - t0), *_lat(lat))
        r.call("DELETE", base)
    finally:
        r.close()
    log(f"  rest: produce {out['rest-produce'][0]:.0f} records/s, consume "
        f"{out['rest-consume'][0]:.0f} records/s ({polls} polls)")
    return out


ROWS = {
    "register": ("schema registry: register Avro schemas, one request at a time", "requests/s"),
    "lookup-id": ("schema registry: GET /schemas/ids/{id}", "requests/s"),
    "lookup-schema": ("schema registry: POST /subjects/{s} (lookup by schema)", "requests/s"),
    "rest-produce": ("REST v2 produce, binary, 100 records of 100 B per request", "records/s"),
    "rest-consume": ("REST v2 consume, binary, one instance", "records/s"),
}


def _kbroker_side(workdir: Path, sizes: Sizes, log) -> dict:
    sr, rp = free_port(), free_port()
    b = KbrokerProcess(workdir / "data", {"kbroker.schema.registry.listen": f"127.0.0.1:{sr}",
                                          "kbroker.rest.proxy.listen": f"127.0.0.1:{rp}",
                                          "group.initial.rebalance.delay.ms": "0"}).start()
    try:
        return measure(f"http://127.0.0.1:{sr}", f"http://127.0.0.1:{rp}", b.bootstrap_servers,
                       sizes, log)
    finally:
        b.stop()


def _karapace_side(workdir: Path, venv: Path, sizes: Sizes, log) -> dict:
    from compat_tests.reference_http.karapace import KarapaceStack
    stack = KarapaceStack(workdir, venv, rest_extra={"KARAPACE_PRODUCER_LINGER_MS": "5"})
    try:
        stack.start()
        return measure(stack.registry_url, stack.rest_url, stack.kafka.bootstrap_servers, sizes, log)
    finally:
        stack.stop()


def run(results, workroot: Path, venv: Path, sizes: Sizes, log) -> None:
    """Alternating repetitions; rows added to ``results`` (kbroker / kafka = Karapace)."""
    from compat_tests.reference_http.karapace import karapace_version
    version = karapace_version(Path(venv) / "bin" / "python")
    results.meta["http_reference"] = f"Karapace {version} (registry + REST proxy) beside Kafka"
    for key, (title, unit) in ROWS.items():
        results.scenario(f"http-{key}", title=f"{title} (Kafka column: Karapace {version})",
                         group="http", unit=unit, better="higher", secondary_unit="ms p50")
    for rep in range(sizes.reps):
        order = ["kbroker", "kafka"] if rep % 2 == 0 else ["kafka", "kbroker"]
        for side in order:
            workdir = Path(workroot) / f"http-{side}-{rep}"
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir(parents=True)
            log(f"http rows: repetition {rep + 1}, {side if side == 'kbroker' else 'Karapace'} "
                f"(load {os.getloadavg()[0]:.1f})")
            got = (_kbroker_side(workdir, sizes, log) if side == "kbroker"
                   else _karapace_side(workdir, venv, sizes, log))
            for key, (rate, p50, p99) in got.items():
                results.add(f"http-{key}", side, rate, p50,
                            raw={"p50_ms": p50, "p99_ms": p99, "load": os.getloadavg()[0]})
            shutil.rmtree(workdir, ignore_errors=True)
