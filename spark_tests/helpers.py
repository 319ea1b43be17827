"""Spark-side helpers: reading a topic with format("kafka") into comparable Python tuples."""

from __future__ import annotations

import json

from spark_tests.kafka_io import Rec


# Columns as the tests compare them: the timestamp as epoch milliseconds (no time-zone games).
COLUMNS = ["topic", "partition", "offset", "key", "value",
           "unix_millis(timestamp) AS timestamp", "timestampType"]


def reader(spark, bootstrap: str, **options):
    r = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v if isinstance(v, str) else json.dumps(v))
    return r


def batch_rows(spark, bootstrap: str, headers: bool = False, **options) -> list[tuple]:
    """Read with format("kafka") (batch) and return sorted (topic, partition, offset, key, value,
    timestamp_ms, timestampType[, headers]) tuples; bytes as bytes, headers as (key, value) lists."""
    if headers:
        options["includeHeaders"] = "true"
    df = reader(spark, bootstrap, **options).load()
    cols = COLUMNS + (["headers"] if headers else [])
    out = []
    for row in df.selectExpr(*cols).collect():
        t = (row.topic, row.partition, row.offset, _b(row.key), _b(row.value), row.timestamp,
             row.timestampType)
        if headers:
            t += ([(h.key, _b(h.value)) for h in (row.headers or [])],)
        out.append(t)
    return sorted(out, key=lambda t: (t[0], t[1], t[2]))


def expected_rows(topic: str, records: list[Rec], headers: bool = False) -> list[tuple]:
    out = []
    for r in records:
        t = (topic, r.partition, r.offset, r.key, r.value, r.timestamp, 0)
        if headers:
            t += ([(k, v) for k, v in r.headers],)
        out.append(t)
    return sorted(out, key=lambda t: (t[0], t[1], t[2]))


def _b(value):
    return bytes(value) if value is not None else None
