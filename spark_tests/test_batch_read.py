"""Batch queries with spark.read.format("kafka"): subscribe, subscribePattern, assign,
starting/ending offsets (earliest, latest, per-partition JSON), by timestamp, minPartitions,
and every column of the source checked against what a plain client produced."""

from __future__ import annotations

import time

from spark_tests import kafka_io as kio
from spark_tests.helpers import batch_rows, expected_rows, reader
from spark_tests.kafka_io import T0_MS, Rec

CLIENT = "spark"


def test_subscribe_every_column(spark, bootstrap, topic_name):
    kio.create_topic(bootstrap, topic_name, partitions=2)
    records = kio.make_records(2, 4)
    records += [
        Rec(0, None, b"no key", T0_MS + 10_000, [("a", b"1"), ("b", None), ("a", b"2")]),
        Rec(1, b"tombstone", None, T0_MS + 11_000),
        Rec(1, b"", b"", T0_MS + 12_000, [("empty", b"")]),
        Rec(0, b"bin\x00\xff", bytes(range(256)), T0_MS + 13_000),
    ]
    kio.produce(bootstrap, topic_name, records)

    got = batch_rows(spark, bootstrap, headers=True, subscribe=topic_name)
    assert got == expected_rows(topic_name, records, headers=True)
    # Without includeHeaders there is no headers column at all.
    df = reader(spark, bootstrap, subscribe=topic_name).load()
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp",
                          "timestampType"]


def test_log_append_time_column(spark, bootstrap, topic_name):
    kio.create_topic(bootstrap, topic_name, **{"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    kio.produce(bootstrap, topic_name, kio.make_records(1, 3))
    after = int(time.time() * 1000)
    got = batch_rows(spark, bootstrap, subscribe=topic_name)
    assert [r[6] for r in got] == [1, 1, 1]  # timestampType 1 = LogAppendTime
    assert all(before - 1000 <= r[5] <= after + 1000 for r in got), got


def test_subscribe_pattern(spark, bootstrap, topic_name):
    names = [f"{topic_name}-a", f"{topic_name}-b", f"other-{topic_name}"]
    for n in names:
        kio.create_topic(bootstrap, n)
    sent = {n: kio.produce(bootstrap, n, kio.make_records(1, 3, prefix=n)) for n in names}
    pattern = topic_name.replace(".", r"\.") + "-.*"
    got = batch_rows(spark, bootstrap, subscribePattern=pattern)
    assert got == sorted(expected_rows(names[0], sent[names[0]])
                         + expected_rows(names[1], sent[names[1]]))


def test_assign(spark, bootstrap, topic_name):
    kio.create_topic(bootstrap, topic_name, partitions=3)
    records = kio.produce(bootstrap, topic_name, kio.make_records(3, 3))
    got = batch_rows(spark, bootstrap, assign={topic_name: [0, 2]})
    assert got == expected_rows(topic_name, [r for r in records if r.partition in (0, 2)])


def test_starting_and_ending_offsets(spark, bootstrap, topic_name):
    kio.create_topic(bootstrap, topic_name, partitions=2)
    records = kio.produce(bootstrap, topic_name, kio.make_records(2, 6))

    def rows(**opts):
        return batch_rows(spark, bootstrap, subscribe=topic_name, **opts)

    everything = expected_rows(topic_name, records)
    assert rows(startingOffsets="earliest", endingOffsets="latest") == everything
    # Per-partition JSON: explicit offsets, -2 = earliest, -1 = latest.
    got = rows(startingOffsets={topic_name: {"0": 2, "1": -2}},
               endingOffsets={topic_name: {"0": 5, "1": -1}})
    assert got == expected_rows(topic_name, [
        r for r in records if (r.partition == 0 and 2 <= r.offset < 5) or r.partition == 1])
    # Records produced after the query was defined but before it runs are seen: "latest" is
    # resolved when the batch runs (ListOffsets), not when the DataFrame is built.
    df = reader(spark, bootstrap, subscribe=topic_name, endingOffsets="latest").load()
    more = kio.produce(bootstrap, topic_name, [Rec(1, b"late", b"late", T0_MS + 99_000)])
    assert df.count() == len(records) + len(more)


def test_offsets_by_timestamp(spark, bootstrap, topic_name):
    kio.create_topic(bootstrap, topic_name, partitions=2)
    records = kio.produce(bootstrap, topic_name, kio.make_records(2, 6))  # T0 + i s

    def rows(**opts):
        return batch_rows(spark, bootstrap, subscribe=topic_name, **opts)

    # startingTimestamp: per partition, the first offset whose timestamp is >= the target.
    assert rows(startingTimestamp=str(T0_MS + 2500)) == expected_rows(
        topic_name, [r for r in records if r.timestamp >= T0_MS + 3000])
    got = rows(startingOffsetsByTimestamp={topic_name: {"0": T0_MS + 1000, "1": T0_MS + 4000}},
               endingOffsetsByTimestamp={topic_name: {"0": T0_MS + 3000, "1": T0_MS + 60_000}})
    assert got == expected_rows(topic_name, [
        r for r in records
        if (r.partition == 0 and T0_MS + 1000 <= r.timestamp < T0_MS + 3000)
        or (r.partition == 1 and r.timestamp >= T0_MS + 4000)])
    # A timestamp after every record matches nothing; with the "latest" strategy the query
    # then starts at the end (ListOffsets answers offset -1 for "no such record").
    assert rows(startingTimestamp=str(T0_MS + 3_600_000),
                startingOffsetsByTimestampStrategy="latest") == []


def test_min_partitions(spark, bootstrap, topic_name):
    kio.create_topic(bootstrap, topic_name)
    records = kio.produce(bootstrap, topic_name, kio.make_records(1, 20))
    df = reader(spark, bootstrap, subscribe=topic_name, minPartitions="4").load()
    assert df.rdd.getNumPartitions() >= 4
    got = [(r.offset, bytes(r.value)) for r in df.select("offset", "value").collect()]
    assert sorted(got) == [(r.offset, r.value) for r in records]
