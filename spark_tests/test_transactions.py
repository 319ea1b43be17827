"""kafka.isolation.level=read_committed over transactional data: Spark's source sees committed
records only, stops at the last stable offset while a transaction is open, and skips the
transaction markers' offsets. The data comes from librdkafka's transactional producer."""

from __future__ import annotations

from confluent_kafka import Producer

from spark_tests import kafka_io as kio
from spark_tests.helpers import reader

CLIENT = "spark"


def values(spark, bootstrap, topic, isolation, **options) -> list[str]:
    df = reader(spark, bootstrap, subscribe=topic, **{"kafka.isolation.level": isolation},
                **options).load()
    return sorted(r.v for r in df.selectExpr("CAST(value AS STRING) AS v").collect())


def test_read_committed(spark, bootstrap, topic_name, tmp_path):
    kio.create_topic(bootstrap, topic_name, partitions=2)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic_name}",
                         "transaction.timeout.ms": 60000, "linger.ms": 0})
    producer.init_transactions(20)

    def txn(prefix, n, end):
        producer.begin_transaction()
        for i in range(n):
            producer.produce(topic_name, value=f"{prefix}-{i}".encode(), partition=i % 2)
        producer.flush(20)
        if end == "commit":
            producer.commit_transaction(20)
        elif end == "abort":
            producer.abort_transaction(20)

    txn("c1", 6, "commit")
    txn("a1", 4, "abort")
    txn("c2", 4, "commit")
    txn("open", 4, "leave open")
    committed = sorted([f"c1-{i}" for i in range(6)] + [f"c2-{i}" for i in range(4)])
    everything = sorted(committed + [f"a1-{i}" for i in range(4)] + [f"open-{i}" for i in range(4)])

    # An open transaction: read_committed stops at the last stable offset, uncommitted reads all.
    assert values(spark, bootstrap, topic_name, "read_committed") == committed
    assert values(spark, bootstrap, topic_name, "read_uncommitted") == everything

    producer.abort_transaction(20)
    txn("c3", 2, "commit")
    committed += [f"c3-{i}" for i in range(2)]

    # A streaming query (AvailableNow) over the same log: committed records, each once.
    folder = tmp_path / "stream"
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic_name).option("startingOffsets", "earliest")
             .option("kafka.isolation.level", "read_committed").load()
             .selectExpr("CAST(value AS STRING) AS v").writeStream.format("parquet")
             .option("path", str(folder / "out")).option("checkpointLocation", str(folder / "cp"))
             .trigger(availableNow=True).start())
    assert query.awaitTermination(120)
    assert query.exception() is None
    assert sorted(r.v for r in spark.read.parquet(str(folder / "out")).collect()) == sorted(committed)
    # Offsets are not dense: each commit/abort marker takes one. Per partition: c1 0-2, marker
    # 3, a1 4-5, marker 6, c2 7-8, marker 9, open 10-11, marker 12, c3 13, marker 14.
    last = (reader(spark, bootstrap, subscribe=topic_name).load()
            .groupBy("partition").agg({"offset": "max"}).collect())
    assert sorted(tuple(r) for r in last) == [(0, 13), (1, 13)]
