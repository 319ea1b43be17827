"""The example pipeline (examples/clickstream): its windowed counts are checked against counts
computed here, independently, in plain Python from the generated clicks.

`test_pipeline_counts` runs generator → job → consumer on the suite's broker (both targets)
and the shared SparkSession; `test_make_demo` runs the program `make demo` runs, as a
separate process with its own embedded kbroker and Spark, and checks the table it prints."""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys

from compat_tests.runner import free_port
from examples.clickstream import consumer, generator, job
from spark_tests import kafka_io as kio
from spark_tests.sparkenv import ROOT

CLIENT = "spark"
WINDOW_MS = 10_000


def independent_counts(clicks) -> dict[tuple[int, str], int]:
    counts: dict[tuple[int, str], int] = collections.defaultdict(int)
    for c in clicks:
        counts[(c.ts // WINDOW_MS * WINDOW_MS, c.page)] += 1
    return dict(counts)


def test_pipeline_counts(spark, bootstrap, topic_name, tmp_path):
    src, dst = f"{topic_name}-clicks", f"{topic_name}-counts"
    kio.create_topic(bootstrap, src, partitions=2)
    kio.create_topic(bootstrap, dst)
    start_ms = generator.minute_start()
    clicks = generator.clicks(start_ms, seconds=30, seed=11)
    query = job.start(spark, bootstrap, src, dst, str(tmp_path / "checkpoint"),
                      trigger="500 milliseconds")
    try:
        generator.produce(bootstrap, src, clicks, speedup=30)
        job.run_until(query, max(c.ts for c in clicks) // WINDOW_MS * WINDOW_MS + WINDOW_MS)
    finally:
        query.stop()
    got = consumer.read_counts(bootstrap, dst)
    assert got == independent_counts(clicks)
    assert sum(got.values()) == len(clicks)


TABLE_ROW = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s+\d\d:\d\d:\d\d\s+(\S+)\s+(\d+)\s*$")


def test_make_demo(tmp_path):
    report = tmp_path / "report.json"
    bootstrap = f"127.0.0.1:{free_port()}"
    # The demo's own Spark driver, with the JIT and GC settings of the suite's session
    # (sparkenv.py): C1 and a serial GC compile and collect far less for this small data
    # (the test's CPU from about 36 to 20 s; results are the same).
    env = dict(os.environ, JAVA_TOOL_OPTIONS=" ".join(
        filter(None, [os.environ.get("JAVA_TOOL_OPTIONS"), "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"])))
    proc = subprocess.run(
        [sys.executable, "-m", "examples.clickstream.run_demo", "--embedded",
         "--bootstrap", bootstrap, "--seconds", "30", "--speedup", "30", "--seed", "3",
         "--report", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    printed = {}
    for line in proc.stdout.splitlines():
        m = TABLE_ROW.match(line)
        if m:
            printed[(m.group(1), m.group(2))] = int(m.group(3))
    facts = json.loads(report.read_text())
    clicks = generator.clicks(facts["start_ms"], seconds=30, seed=3)
    want = {(consumer.utc(w), page): n for (w, page), n in independent_counts(clicks).items()}
    assert printed == want, proc.stdout[-3000:]
