"""The Spark Structured Streaming job: clicks per page per 10-second window, with a watermark.

    clicks (JSON) ──readStream kafka──▶ parse ──withWatermark(ts, 5 s)──▶ window(10 s) × page
        ──count──▶ JSON ──writeStream kafka (append, checkpoint)──▶ page-counts

Append mode emits each (window, page) count once, when the watermark (newest event time seen
minus 5 s) passes the window's end. The generator's end-of-stream marker moves the watermark
past every window. It is not filtered out (Spark's optimizer pushes such a filter below the
watermark, which then never sees the marker); its own window lies beyond the watermark it
sets, so it is never emitted. Run as a
program, the job stops itself once the watermark is past `--until` (epoch ms), or runs until
interrupted without it.

Pointing Spark at kbroker needs nothing special: the connector jars (spark.jars) and
`kafka.bootstrap.servers` — see build_session() and start().

Usage: python -m examples.clickstream.job --bootstrap 127.0.0.1:9092 --input clicks \\
           --output page-counts --checkpoint /tmp/clicks-checkpoint
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WINDOW = "10 seconds"
WATERMARK_DELAY = "5 seconds"


def connector_jars() -> str:
    """The Kafka connector jars resolved by `make spark-dist`, comma-separated for spark.jars."""
    out = subprocess.run(["bash", str(ROOT / "tools" / "spark_dist" / "fetch.sh")], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return ",".join(sorted(glob.glob(os.path.join(out, "*.jar"))))


def build_session(app: str = "clickstream-page-counts"):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (SparkSession.builder.master("local[2]").appName(app)
             .config("spark.jars", connector_jars())
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def start(spark, bootstrap: str, input_topic: str, output_topic: str, checkpoint: str,
          trigger: str = "1 second"):
    """Start the query and return its StreamingQuery."""
    from pyspark.sql import functions as F

    schema = "user STRING, page STRING, ts LONG"
    clicks = (spark.readStream.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", input_topic)
              .option("startingOffsets", "earliest")
              .load()
              .select(F.from_json(F.col("value").cast("string"), schema).alias("c"))
              .select("c.page", F.timestamp_millis("c.ts").alias("event_time")))
    counts = (clicks.withWatermark("event_time", WATERMARK_DELAY)
              .groupBy(F.window("event_time", WINDOW), "page")
              .count())
    out = counts.select(
        F.col("page").alias("key"),
        F.to_json(F.struct(F.unix_millis("window.start").alias("window_start_ms"),
                           F.unix_millis("window.end").alias("window_end_ms"),
                           "page", "count")).alias("value"))
    return (out.writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", output_topic)
            .option("checkpointLocation", checkpoint)
            .outputMode("append")
            .trigger(processingTime=trigger)
            .queryName("page_counts")
            .start())


def watermark_ms(query) -> int | None:
    """The watermark the query's latest micro-batch ran with (epoch ms), if any yet."""
    progress = query.lastProgress
    mark = (progress or {}).get("eventTime", {}).get("watermark")
    if not mark:
        return None
    return int(dt.datetime.strptime(mark, "%Y-%m-%dT%H:%M:%S.%fZ")
               .replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


def run_until(query, until_ms: int, timeout: float = 120.0) -> None:
    """Wait until a micro-batch ran with a watermark past `until_ms` — every window ending by
    then has been written — then stop the query. Raises if the query fails or times out."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            if query.exception() is not None:
                raise RuntimeError(f"the query failed: {query.exception()}")
            mark = watermark_ms(query)
            if mark is not None and mark >= until_ms:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"watermark {mark} did not pass {until_ms} in {timeout}s")
            time.sleep(0.2)
    finally:
        query.stop()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", default="127.0.0.1:9092")
    ap.add_argument("--input", default="clicks")
    ap.add_argument("--output", default="page-counts")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--until", type=int, help="stop once the watermark passes this epoch ms")
    args = ap.parse_args(argv)
    spark = build_session()
    query = start(spark, args.bootstrap, args.input, args.output, args.checkpoint)
    if args.until is None:
        query.awaitTermination()
    else:
        run_until(query, args.until)
    spark.stop()


if __name__ == "__main__":
    main()
