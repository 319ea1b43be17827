"""kafkajs with ``@kafkajs/confluent-schema-registry`` (pinned in ``kafkajs/package.json``)
against a ``kbroker serve`` with the registry on: the Node program ``kafkajs/driver.js``
registers through the package (and has it set the subject's level), encodes and produces,
consumes and decodes with a fresh client that fetches the schema by id; for a schema this
test registers by hand over HTTP it finds the id by subject, by schema and by version and
decodes records that confluent-kafka's ``AvroSerializer`` produced. This test asserts on what
the program printed, and decodes the package's records with confluent-kafka in turn.

``npm ci`` runs on first use (``make sr-clients`` does it up front) into the ignored
``kafkajs/node_modules``, stamped by ``.installed``."""
from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

HERE = Path(__file__).resolve().parent / "kafkajs"
ROOT = HERE.parents[2]
STAMP = HERE / "node_modules" / ".installed"

SCHEMA = json.dumps({"type": "record", "name": "Order", "namespace": "kbroker.test", "fields": [
    {"name": "id", "type": "long"}, {"name": "item", "type": "string"},
    {"name": "note", "type": ["null", "string"], "default": None}]})


def ensure_kafkajs() -> list[str]:
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        pytest.fail("node/npm not installed (see make sr-clients)", pytrace=False)
    (ROOT / ".cache").mkdir(exist_ok=True)
    with open(ROOT / ".cache" / "sr-kafkajs-install.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        sources = [HERE / "package.json", HERE / "package-lock.json"]
        if not (STAMP.exists() and all(STAMP.stat().st_mtime >= s.stat().st_mtime for s in sources)):
            result = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                                    cwd=HERE, capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                pytest.fail(f"npm ci failed:\n{result.stdout}\n{result.stderr}", pytrace=False)
            STAMP.touch()
    return [node, str(HERE / "driver.js")]


def consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < count:
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error():
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def test_kafkajs_schema_registry_package(registry):
    command = ensure_kafkajs()
    bootstrap = registry.broker.bootstrap_servers
    run = uuid.uuid4().hex[:8]
    auto = {"subject": f"orders-auto-{run}-value", "topic": f"orders-auto-{run}",
            "values": [{"id": 1, "item": "tea", "note": None},
                       {"id": 2 ** 40, "item": "cake", "note": "for two"}]}

    # registered by hand: the REST call, then records through confluent-kafka's serializer
    manual_topic = f"orders-manual-{run}"
    manual_subject = f"{manual_topic}-value"
    status, body = registry.call("POST", f"/subjects/{manual_subject}/versions", {"schema": SCHEMA})
    assert status == 200
    manual_id = body["id"]
    client = SchemaRegistryClient({"url": registry.url})
    serializer = AvroSerializer(client, SCHEMA, conf={"auto.register.schemas": False,
                                                      "use.latest.version": True})
    manual_values = [{"id": 7, "item": "bread", "note": "rye"}, {"id": 8, "item": "milk", "note": None}]
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in manual_values:
        producer.produce(manual_topic, value=serializer(value, SerializationContext(manual_topic, MessageField.VALUE)))
    assert producer.flush(30) == 0

    payload = {"registry": registry.url, "brokers": bootstrap, "schema": SCHEMA, "auto": auto,
               "manual": {"subject": manual_subject, "topic": manual_topic, "count": len(manual_values)},
               "missing": f"missing-{run}"}
    proc = subprocess.run(command, input=json.dumps(payload), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    out = json.loads(proc.stdout)

    # automatic registration: one id for the same schema, the level the package asked for
    auto_id = out["auto_id"]
    assert auto_id > 0 and out["auto_id_again"] == auto_id
    status, body = registry.call("GET", f"/subjects/{auto['subject']}/versions")
    assert (status, body) == (200, [1])
    status, body = registry.call("GET", f"/config/{auto['subject']}")
    assert status == 200 and body["compatibilityLevel"] == "FULL"
    assert out["auto_headers"] == ["00" + auto_id.to_bytes(4, "big").hex()] * 2
    # avsc decodes a long beyond 2^31 as a JS number: exact below 2^53
    assert out["auto_decoded"] == auto["values"]

    # by hand: the package finds the id three ways and decodes confluent-kafka's records
    assert out["manual_latest_id"] == out["manual_id_by_schema"] == out["manual_version_id"] == manual_id
    assert out["manual_decoded"] == manual_values
    assert out["missing"]["status"] == 404

    # and confluent-kafka decodes what the package encoded
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))
    values = consume(bootstrap, auto["topic"], 2)
    assert [deserializer(v, SerializationContext(auto["topic"], MessageField.VALUE)) for v in values] == auto["values"]
