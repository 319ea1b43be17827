"""franz-go's schema registry client (``pkg/sr``) and its kgo producer/consumer against a
``kbroker serve`` with the registry on: the Go program in ``franzgo/`` registers, looks up,
reads by id and version, checks compatibility, lists subjects, then produces and consumes
records framed with Confluent's 5-byte header; this test asserts on what it printed.

The program is built on first use (``make sr-clients`` does it up front) into
``.cache/bin/franzgo-sr-<hash of its sources>``, module and build caches under ``$KBROKER_CACHE/go``
as the Makefile's ``franzgo`` target keeps them."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka import Consumer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.support.go_build import go_env

HERE = Path(__file__).resolve().parent / "franzgo"
ROOT = HERE.parents[2]


def build_franzgo() -> Path:
    if shutil.which("go") is None:
        pytest.fail("go not installed (the franz-go test needs Go 1.21+; see make sr-clients)", pytrace=False)
    sources = [HERE / "go.mod", HERE / "go.sum", *sorted(HERE.glob("*.go"))]
    digest = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()[:12]
    binary = ROOT / ".cache" / "bin" / f"franzgo-sr-{digest}"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        env = go_env()
        tmp = binary.with_name(f"{binary.name}.tmp{os.getpid()}")
        result = subprocess.run(["go", "build", "-o", str(tmp), "."], cwd=HERE, env=env,
                                capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            pytest.fail(f"go build failed:\n{result.stdout}\n{result.stderr}", pytrace=False)
        os.replace(tmp, binary)
    return binary


def test_franzgo_sr_client_and_framed_records(registry):
    binary = build_franzgo()
    topic = f"franzgo-users-{uuid.uuid4().hex[:8]}"
    subject = f"{topic}-value"     # TopicNameStrategy, which confluent-kafka's deserializer names
    proc = subprocess.run([str(binary), registry.url, registry.broker.bootstrap_servers, subject, topic],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    out = json.loads(proc.stdout)

    assert set(out["types"]) >= {"AVRO", "JSON", "PROTOBUF"}
    schema_id = out["registered"]["id"]
    assert schema_id > 0 and out["registered"]["version"] == 1
    assert out["lookup"] == {"id": schema_id, "version": 1, "subject": subject}
    assert out["by_id"]["type"] == "AVRO"
    assert json.loads(out["by_id"]["schema"])["name"] == "User"
    assert out["latest"] == {"id": schema_id, "version": 1}
    assert out["compatible"] is True
    assert out["incompatible"]["is"] is False and out["incompatible"]["messages"]
    assert out["global_level"] == "BACKWARD"
    assert subject in out["subjects"]
    assert out["missing"] == {"status": 404, "error_code": 40401}

    assert out["consumed"] == [{"name": "ada", "favorite_number": 1},
                               {"name": "grace", "favorite_number": 42},
                               {"name": "edsger", "favorite_number": -7}]
    assert out["headers"] == ["00" + schema_id.to_bytes(4, "big").hex()] * 3

    # The same records decode with confluent-kafka's deserializer: franz-go's framing and the
    # hand-written Avro are the Confluent wire format, and the schema comes from kbroker by id.
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))
    consumer = Consumer({"bootstrap.servers": registry.broker.bootstrap_servers,
                         "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < 3:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            got.append(deserializer(msg.value(), SerializationContext(topic, MessageField.VALUE)))
    finally:
        consumer.close()
    assert got == out["consumed"]
