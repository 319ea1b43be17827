"""Does the web console cost the produce/fetch paths anything? (issue 23)

One kbroker process; rounds alternate between no console client and Debian's chromium
(Playwright, the system browser) showing the busy topic's page with its live tail on (it
polls ``/api/console/messages`` every second, up to 500 records a poll). Each round
produces ``--records`` records of ``--size`` bytes with confluent-kafka (acks=1) and reads
them back with a consumer; the medians of produce and consume throughput are printed for
both conditions. A benchmark, not a test: nothing here asserts a timing.

    .venv/bin/python -m benchmarks.console_bench --records 300000 --rounds 3
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer

from benchmarks.harness.rdkafka_load import CONSUME_QUEUE_BACKOFF_MS
from kbroker.testing.processes import Admin, KbrokerProcess


class TailingBrowser:
    """chromium on the topic page with the live tail checked, in its own thread."""

    def __init__(self, url: str):
        self.url = url
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from playwright.sync_api import sync_playwright
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=shutil.which("chromium"),
                                  args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
            page = b.new_page()
            page.goto(self.url)
            page.check("#browse-tail")
            self.ready.set()
            while not self.stop.is_set():
                page.wait_for_timeout(200)
            b.close()

    def __enter__(self):
        self.thread.start()
        if not self.ready.wait(60):
            raise RuntimeError("the browser did not open the page")
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


def one_round(bootstrap: str, topic: str, records: int, size: int, group: str) -> tuple[float, float]:
    payload = b"x" * size
    p = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5})
    t = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                p.produce(topic, payload)
                break
            except BufferError:
                p.poll(0.05)
    p.flush(120)
    produce = records / (time.perf_counter() - t)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "fetch.max.bytes": 8 * 1024 * 1024,
                  "fetch.queue.backoff.ms": CONSUME_QUEUE_BACKOFF_MS})
    c.subscribe([topic])
    got, t = 0, time.perf_counter()
    while got < records:
        # no more than can still come: consume(n) waits out its timeout otherwise
        for m in c.consume(min(10000, records - got), 1.0):
            if not m.error():
                got += 1
    consume = records / (time.perf_counter() - t)
    c.close()
    return produce, consume


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="console-bench-"))
    broker = KbrokerProcess(root / "data").start()
    results: dict[str, list[tuple[float, float]]] = {"no console": [], "browser tailing": []}
    try:
        for r in range(args.rounds):
            for condition in ("no console", "browser tailing"):
                topic = f"bench-{r}-{condition.replace(' ', '-')}"
                Admin(broker.bootstrap_servers).create_topic(topic, partitions=1, replication_factor=1)
                if condition == "no console":
                    res = one_round(broker.bootstrap_servers, topic, args.records, args.size, topic)
                else:
                    with TailingBrowser(f"http://{broker.http_address}/topics/{topic}"):
                        res = one_round(broker.bootstrap_servers, topic, args.records, args.size, topic)
                results[condition].append(res)
                print(f"round {r + 1} {condition:16s} produce {res[0]:10,.0f} rec/s  consume {res[1]:10,.0f} rec/s",
                      flush=True)
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)
    for condition, rows in results.items():
        print(f"median {condition:16s} produce {statistics.median(r[0] for r in rows):10,.0f} rec/s  "
              f"consume {statistics.median(r[1] for r in rows):10,.0f} rec/s")


if __name__ == "__main__":
    main()
