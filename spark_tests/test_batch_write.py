"""Batch writes with df.write.format("kafka"): a topic column or the topic option, keys,
headers, a partition column. What Spark wrote is read back with a plain client."""

from __future__ import annotations

from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructField,
                               StructType)

from spark_tests import kafka_io as kio

CLIENT = "spark"


HEADER = ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())]))


def writer(df, bootstrap):
    return df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap)


def got(bootstrap, topic):
    return sorted(((r.partition, r.key, r.value, [(k, v) for k, v in r.headers])
                   for r in kio.read_all(bootstrap, topic)), key=repr)


def test_topic_column_keys_headers_partitions(spark, bootstrap, topic_name):
    a, b = f"{topic_name}-a", f"{topic_name}-b"
    kio.create_topic(bootstrap, a, partitions=2)
    kio.create_topic(bootstrap, b, partitions=3)
    rows = [(a, f"k{i}".encode(), f"v{i}".encode(), [("i", str(i).encode()), ("n", None)], i % 2)
            for i in range(6)]
    rows += [(b, None, f"w{i}".encode(), [], i % 3) for i in range(6)]
    rows += [(b, b"", b"", [("e", b"")], 2)]
    schema = StructType([StructField("topic", StringType()), StructField("key", BinaryType()),
                         StructField("value", BinaryType()), StructField("headers", HEADER),
                         StructField("partition", IntegerType())])
    writer(spark.createDataFrame(rows, schema), bootstrap).save()

    for topic in (a, b):
        assert got(bootstrap, topic) == sorted(
            ((p, k, v, h) for t, k, v, h, p in rows if t == topic), key=repr)


def test_topic_option_string_columns(spark, bootstrap, topic_name):
    kio.create_topic(bootstrap, topic_name, partitions=2)
    df = spark.createDataFrame([(f"key-{i}", f"value-{i}") for i in range(10)], "key string, value string")
    writer(df, bootstrap).option("topic", topic_name).save()
    records = kio.read_all(bootstrap, topic_name)
    assert sorted((r.key, r.value) for r in records) == sorted(
        (f"key-{i}".encode(), f"value-{i}".encode()) for i in range(10))
    # Keyed records are spread by the Java client's murmur2 partitioner: equal keys, equal
    # partitions; both partitions are used.
    assert len({r.partition for r in records}) == 2


def test_value_only_round_trip(spark, bootstrap, topic_name):
    """What Spark writes, Spark reads back unchanged (no key, a transformation in between)."""
    kio.create_topic(bootstrap, topic_name)
    src = spark.range(0, 50).selectExpr("CAST(id AS STRING) AS value")
    writer(src, bootstrap).option("topic", topic_name).save()
    back = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic_name).load()
            .selectExpr("CAST(value AS STRING) AS v", "key"))
    rows = back.collect()
    assert sorted(int(r.v) for r in rows) == list(range(50))
    assert all(r.key is None for r in rows)
