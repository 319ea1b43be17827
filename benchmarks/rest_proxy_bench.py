"""REST gateway benchmark (not a test): the broker's own produce/fetch rates with the gateway
off, on and idle, and on and busy (issue #35).

    python -m benchmarks.rest_proxy_bench [--records 100000] [--size 512] [--reps 3]
        [--rest-batch 100]

For each repetition (the order of the three cases turns by one each repetition, so that none
always runs first on a machine whose load drifts):

* **off**: a ``kbroker serve`` without the gateway; librdkafka produces ``--records`` records of
  ``--size`` bytes to a one-partition topic and reads them back (the same client and settings
  as ``benchmarks/schema_registry_bench.py``'s produce/fetch);
* **idle**: the same on a ``kbroker serve`` with ``kbroker.rest.proxy.listen`` set and nobody
  calling it;
* **busy**: the same broker, while one HTTP client (its own process: the Python client must
  not share the GIL of the one being measured) posts ``POST /topics/{t}`` v2 binary batches of
  ``--rest-batch`` records to another topic, one request after the other on a keep-alive
  connection, for the whole produce/fetch; the gateway's own records/s over that window is
  printed beside the rates.

The gateway runs in the broker's process and its event loop (it calls the broker through the
same in-process paths as the console), so a busy gateway takes its share of the broker's core:
the busy rows measure that share, they are not expected to equal the idle ones.

Results: a table on stdout, ``benchmarks/results/rest_proxy/results.json`` and ``results.md``
(the folder is ignored by git). The 1-min load average is printed with the table.
"""
from __future__ import annotations

import argparse
import base64
import http.client
import json
import multiprocessing
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.schema_registry_bench import produce_fetch, report
from kbroker.testing.processes import KbrokerProcess, free_port

OUT = Path(__file__).resolve().parent / "results" / "rest_proxy"
CT = "application/vnd.kafka.binary.v2+json"


def _hammer(port: int, topic: str, batch: int, stop, counter) -> None:
    """Post binary batches to ``topic`` until ``stop`` is set; count acknowledged records."""
    value = base64.b64encode(os.urandom(100)).decode()
    body = json.dumps({"records": [{"value": value}] * batch}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        while not stop.is_set():
            conn.request("POST", f"/topics/{topic}", body=body, headers={"Content-Type": CT})
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                raise RuntimeError(f"REST produce answered {resp.status}")
            with counter.get_lock():
                counter.value += batch
    finally:
        conn.close()


def busy_produce_fetch(bootstrap: str, rest_port: int, args) -> dict:
    ctx = multiprocessing.get_context("spawn")
    stop, counter = ctx.Event(), ctx.Value("q", 0)
    topic = f"rest-{uuid.uuid4().hex[:8]}"
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
    proc = ctx.Process(target=_hammer, args=(rest_port, topic, args.rest_batch, stop, counter),
                       daemon=True)
    proc.start()
    try:
        # start measuring once the gateway has answered a first batch
        deadline = time.monotonic() + 60
        while counter.value == 0:
            if not proc.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the REST client did not get a first answer")
            time.sleep(0.05)
        start, before = time.perf_counter(), counter.value
        result = produce_fetch(bootstrap, args.records, args.size)
        result["rest_records_per_s"] = (counter.value - before) / (time.perf_counter() - start)
        return result
    finally:
        stop.set()
        proc.join(30)
        if proc.is_alive():
            proc.kill()


def one_case(case: str, tmp: Path, rep: int, args) -> dict:
    rest_port = free_port()
    overrides = {} if case == "off" else {"kbroker.rest.proxy.listen": f"127.0.0.1:{rest_port}"}
    broker = KbrokerProcess(tmp / f"{case}-{rep}", overrides).start()
    try:
        if case == "busy":
            return busy_produce_fetch(broker.bootstrap_servers, rest_port, args)
        return produce_fetch(broker.bootstrap_servers, args.records, args.size)
    finally:
        broker.stop()


CASES = ("off", "idle", "busy")


def run(args) -> dict:
    reps = []
    with tempfile.TemporaryDirectory(prefix="rest-bench-") as tmp:
        for rep in range(args.reps):
            order = CASES[rep % 3:] + CASES[:rep % 3]
            reps.append({case: one_case(case, Path(tmp), rep, args) for case in order})
            print(f"repetition {rep + 1}/{args.reps} done ({', '.join(order)})", flush=True)
    return {"args": vars(args), "load_average": os.getloadavg()[0], "repetitions": reps}


def median_of(reps: list[dict], case: str, key: str) -> float:
    return statistics.median(r[case][key] for r in reps)


def table(results: dict) -> str:
    reps = results["repetitions"]
    lines = [f"REST gateway benchmark: {len(reps)} repetition(s), medians; "
             f"1-min load average {results['load_average']:.2f}", "",
             "| broker | produce records/s | fetch records/s | gateway records/s meanwhile |",
             "|---|---:|---:|---:|"]
    for case, name in (("off", "gateway off"), ("idle", "gateway on, idle"),
                       ("busy", "gateway on, busy")):
        rest = (f"{median_of(reps, case, 'rest_records_per_s'):,.0f}" if case == "busy" else "–")
        lines.append(f"| {name} | {median_of(reps, case, 'produce_rate'):,.0f} "
                     f"| {median_of(reps, case, 'fetch_rate'):,.0f} | {rest} |")
    off = median_of(reps, "off", "produce_rate")
    lines.append("")
    for case in ("idle", "busy"):
        lines.append(f"produce rate {case}/off: {median_of(reps, case, 'produce_rate') / off:.2f}; "
                     f"fetch rate {case}/off: "
                     f"{median_of(reps, case, 'fetch_rate') / median_of(reps, 'off', 'fetch_rate'):.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--rest-batch", type=int, default=100)
    args = p.parse_args(argv)
    report(OUT, run(args), table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
