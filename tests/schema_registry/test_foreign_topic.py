"""A ``_schemas`` topic written by another registry is served: Confluent-format records are
produced into the topic with a plain Kafka producer (as copying the topic from a Confluent
or Karapace deployment would), and the registry answers from them, then goes on writing
after them (ids and versions continue, no id reused)."""
from __future__ import annotations

import json

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from .conftest import avro_record, start_registry

STRING, INT = json.dumps("string"), json.dumps("int")
RECORDS = [
    ({"keytype": "SCHEMA", "subject": "legacy-value", "version": 1, "magic": 1},
     {"subject": "legacy-value", "version": 1, "id": 21, "schema": STRING, "deleted": False}),
    ({"keytype": "SCHEMA", "subject": "legacy-value", "version": 2, "magic": 1},
     {"subject": "legacy-value", "version": 2, "id": 22, "schema": INT, "deleted": False}),
    ({"keytype": "SCHEMA", "subject": "other-value", "version": 1, "magic": 1},
     {"subject": "other-value", "version": 1, "id": 21, "schema": STRING, "deleted": False}),
    ({"keytype": "CONFIG", "subject": "legacy-value", "magic": 0}, {"compatibilityLevel": "NONE"}),
    ({"keytype": "NOOP", "magic": 0}, None),
    ({"keytype": "DELETE_SUBJECT", "subject": "other-value", "magic": 0},
     {"subject": "other-value", "version": 1}),
]


def test_a_topic_written_elsewhere_is_served_and_continued(tmp_path):
    reg = start_registry(tmp_path / "data")
    try:
        bootstrap = reg.broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic("_schemas", 1, 1, config={"cleanup.policy": "compact"})]).values():
            f.result(30)
        producer = Producer({"bootstrap.servers": bootstrap})
        for key, value in RECORDS:
            producer.produce("_schemas", key=json.dumps(key).encode(),
                             value=None if value is None else json.dumps(value).encode())
        assert producer.flush(30) == 0

        assert reg.call("GET", "/subjects") == (200, ["legacy-value"])
        assert reg.call("GET", "/subjects?deleted=true") == (200, ["legacy-value", "other-value"])
        assert reg.call("GET", "/subjects/legacy-value/versions/2")[1] == \
            {"subject": "legacy-value", "version": 2, "id": 22, "schema": INT}
        assert reg.call("GET", "/schemas/ids/21") == (200, {"schema": STRING})
        assert reg.call("GET", "/config/legacy-value") == (200, {"compatibilityLevel": "NONE"})
        # lookups find the foreign versions by canonical form
        status, found = reg.call("POST", "/subjects/legacy-value", {"schema": ' "int" '})
        assert status == 200 and found["id"] == 22
        # writing goes on after them
        status, body = reg.call("POST", "/subjects/legacy-value/versions",
                                {"schema": avro_record("New", ("n", "long"))})
        assert status == 200 and body["id"] == 23
        assert reg.call("GET", "/subjects/legacy-value/versions") == (200, [1, 2, 3])
        assert reg.call("POST", "/subjects/fresh-value/versions", {"schema": INT}) == (200, {"id": 22})
    finally:
        reg.broker.stop()
