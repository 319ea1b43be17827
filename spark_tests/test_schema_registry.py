"""Spark Structured Streaming decoding Avro values whose schema comes from kbroker's schema
registry: records are produced with confluent-kafka's ``AvroSerializer`` (the Confluent wire
format: magic byte 0, the schema id as 4 big-endian bytes, then Avro binary), the schema text
is fetched from the registry's REST API (``/subjects/{s}/versions/latest/schema``), and a
streaming query decodes ``substring(value, 6)`` with spark-avro's ``from_avro``
(``tools/spark_dist`` fetches spark-avro at the connector's Spark version).

Apache Kafka serves no schema registry, so this test does not take the suite's ``target``: it
runs once, on a ``kbroker serve`` of its own with the registry on."""
from __future__ import annotations

import json
import urllib.request
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kbroker.testing.processes import KbrokerProcess, free_port

CLIENT = "spark"
CT = "application/vnd.schemaregistry.v1+json"
SCHEMA = json.dumps({"type": "record", "name": "Click", "namespace": "kbroker.spark", "fields": [
    {"name": "user", "type": "string"}, {"name": "page", "type": "string"},
    {"name": "ms", "type": "long"}, {"name": "referrer", "type": ["null", "string"], "default": None}]})


@pytest.fixture(scope="module")
def registry_broker(tmp_path_factory):
    port = free_port()
    broker = KbrokerProcess(tmp_path_factory.mktemp("spark-sr") / "data",
                            {"kbroker.schema.registry.listen": f"127.0.0.1:{port}"})
    broker.start()
    try:
        yield broker, f"http://127.0.0.1:{port}"
    finally:
        broker.stop()


def http(method: str, url: str, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": CT} if data else {})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return resp.read().decode()


def test_from_avro_after_the_five_byte_header(spark, registry_broker, tmp_path):
    from pyspark.sql.avro.functions import from_avro
    from pyspark.sql.functions import col, conv, expr, hex

    broker, url = registry_broker
    bootstrap = broker.bootstrap_servers
    topic = f"clicks-{uuid.uuid4().hex[:8]}"
    subject = f"{topic}-value"
    schema_id = json.loads(http("POST", f"{url}/subjects/{subject}/versions", {"schema": SCHEMA}))["id"]

    serializer = AvroSerializer(SchemaRegistryClient({"url": url}), SCHEMA,
                                conf={"auto.register.schemas": False, "use.latest.version": True})
    sent = [{"user": f"u{i % 3}", "page": f"/p/{i}", "ms": 1_700_000_000_000 + i,
             "referrer": None if i % 2 else f"/r/{i}"} for i in range(20)]
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in sent:
        producer.produce(topic, value=serializer(value, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(30) == 0

    # the schema text as the registry serves it, and nothing else: Spark never sees `SCHEMA`
    schema_text = http("GET", f"{url}/subjects/{subject}/versions/latest/schema")
    assert json.loads(schema_text)["name"] == "Click"

    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest").load())
    decoded = stream.select(
        expr("substring(value, 1, 1)").alias("magic"),
        conv(hex(expr("substring(value, 2, 4)")), 16, 10).cast("int").alias("schema_id"),
        from_avro(expr("substring(value, 6)"), schema_text, {"mode": "FAILFAST"}).alias("click"))
    name = f"sr_{uuid.uuid4().hex[:8]}"
    query = (decoded.writeStream.format("memory").queryName(name).outputMode("append")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(180)
    assert query.exception() is None
    rows = spark.sql(f"SELECT magic, schema_id, click.* FROM {name}").collect()

    assert {bytes(r.magic) for r in rows} == {b"\x00"}
    assert {r.schema_id for r in rows} == {schema_id}
    got = sorted(({"user": r.user, "page": r.page, "ms": r.ms, "referrer": r.referrer} for r in rows),
                 key=lambda d: d["ms"])
    assert got == sent
