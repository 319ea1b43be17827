"""Bad input to the gateway: malformed JSON, unknown embedded formats and content types, an
unacceptable Accept header, an oversized body, records for a missing partition, bad base64,
schema formats without a schema — each answers the right status and Confluent's error code,
writes nothing, and leaves the gateway and the broker serving."""
from __future__ import annotations

import socket

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from .conftest import BINARY, JSON, b64, rest_address


def _create(broker, name, partitions=1):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def _end(rest, topic, partition=0):
    status, _, body = rest.get(f"/topics/{topic}/partitions/{partition}/offsets")
    assert status == 200, body
    return body["end_offset"]


def test_refused_requests_write_nothing(rest, gateway_broker):
    _create(gateway_broker, "bad-in", 2)
    cases = [
        # (content type, raw body, status, error_code)
        (BINARY, b'{"records": [{"value": "aGk="}', 400, 400),                     # malformed JSON
        (BINARY, b'\xff\xfe{"records": []}', 400, 400),                             # not UTF-8
        (BINARY, b'[1, 2]', 422, 422),                                              # not an object
        (BINARY, b'{"records": []}', 422, 422),                                     # no records
        (BINARY, b'{"records": [{"value": "aGk="}, {"value": "%%%"}]}', 422, 42203),  # bad base64
        (BINARY, b'{"records": [{"value": "aGk="}, {"value": "aGk=", "partition": 9}]}', 404, 40402),
        (BINARY, b'{"records": [{"value": "aGk=", "partition": "one"}]}', 422, 42206),
        ("application/vnd.kafka.xml.v2+json", b'{"records": [{"value": 1}]}', 415, 415),
        ("text/plain", b'{"records": [{"value": 1}]}', 415, 415),
        ("application/vnd.kafka.json.v9+json", b'{"records": [{"value": 1}]}', 415, 415),
        ("application/vnd.kafka.avro.v2+json", b'{"records": [{"key": 1, "value": 1}], '
                                               b'"value_schema": "\\"int\\""}', 422, 42201),
        ("application/vnd.kafka.avro.v2+json", b'{"records": [{"value": 1}]}', 422, 42202),
        ("application/vnd.kafka.avro.v2+json", b'{"records": [{"value": 1}], '
                                               b'"value_schema": "\\"int\\""}', 422, 42207),
        # the schema-based formats without a registry on this broker
        ("application/vnd.kafka.protobuf.v2+json", b'{"records": [{"value": {}}], '
                                                   b'"value_schema_id": 1}', 422, 42207),
        ("application/vnd.kafka.jsonschema.v2+json", b'{"records": [{"value": 1}], '
                                                     b'"value_schema": "{}"}', 422, 42207),
        ("application/vnd.kafka.protobuf.v2+json", b'{"records": [{"value": {}}]}', 422, 42202),
    ]
    before = (_end(rest, "bad-in", 0), _end(rest, "bad-in", 1))
    for ct, raw, status, code in cases:
        got, _, body = rest.post("/topics/bad-in", raw=raw, content_type=ct)
        assert (got, body["error_code"]) == (status, code), (ct, raw, body)
        assert isinstance(body["message"], str) and body["message"]
    # the partition endpoint: a partition the topic has not, malformed JSON, an unknown format
    for path, ct, raw, status, code in [
            ("/topics/bad-in/partitions/9", BINARY, b'{"records": [{"value": "aGk="}]}', 404, 40402),
            ("/topics/bad-in/partitions/x", BINARY, b'{"records": [{"value": "aGk="}]}', 404, 40402),
            ("/topics/bad-in/partitions/0", BINARY, b'{"records": [', 400, 400),
            ("/topics/bad-in/partitions/0", "application/vnd.kafka.yaml.v2+json", b'{}', 415, 415)]:
        got, _, body = rest.post(path, raw=raw, content_type=ct)
        assert (got, body["error_code"]) == (status, code), (path, raw, body)
    assert (_end(rest, "bad-in", 0), _end(rest, "bad-in", 1)) == before == (0, 0)


def test_accept_header_that_no_answer_satisfies(rest):
    status, _, body = rest.get("/topics", accept="text/html")
    assert (status, body["error_code"]) == (406, 406)
    assert rest.get("/topics", accept="application/vnd.kafka.v2+json, */*;q=0.1")[0] == 200


def test_oversized_body_is_413_and_nothing_is_written(rest, gateway_broker):
    _create(gateway_broker, "big-in")
    big = {"records": [{"value": b64(b"x" * 70_000)}]}    # the fixture's limit is 65536 bytes
    status, _, body = rest.post("/topics/big-in", big, content_type=BINARY)
    assert status == 413 and body["error_code"] == 413
    assert _end(rest, "big-in") == 0
    # still serving, on a new connection
    status, _, body = rest.post("/topics/big-in", {"records": [{"value": b64(b"small")}]},
                                content_type=BINARY)
    assert status == 200 and body["offsets"][0]["offset"] == 0


def test_unknown_paths_and_methods(rest):
    status, _, body = rest.get("/no/such/path")
    assert (status, body) == (404, {"error_code": 404, "message": "HTTP 404 Not Found"})
    status, _, body = rest.call("PUT", "/topics")
    assert (status, body["error_code"]) == (405, 405)
    status, _, body = rest.get("/v3/clusters/x/nothing-here")
    assert (status, body["error_code"]) == (404, 404)


def test_garbage_http_then_the_gateway_and_the_broker_keep_serving(rest, gateway_broker):
    host, port = rest_address(gateway_broker).rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
        answer = s.recv(4096)
    assert answer.startswith(b"HTTP/1.1 400")
    assert rest.get("/brokers")[0] == 200
    _create(gateway_broker, "still-up")
    p = Producer({"bootstrap.servers": gateway_broker.bootstrap_servers})
    p.produce("still-up", b"by a Kafka client")
    assert p.flush(30) == 0
    status, _, body = rest.get("/topics/still-up/partitions/0/offsets")
    assert body["end_offset"] == 1


def test_consumer_instances_per_principal_are_limited(rest):
    from kbroker.rest_proxy.consumers import MAX_INSTANCES_PER_PRINCIPAL
    made = []
    try:
        for i in range(MAX_INSTANCES_PER_PRINCIPAL):
            status, _, body = rest.post("/consumers/g-limit", {"name": f"i{i}"})
            assert status == 200, body
            made.append(f"i{i}")
        status, _, body = rest.post("/consumers/g-limit", {"name": "one-too-many"})
        assert (status, body["error_code"]) == (429, 42901)
    finally:
        for name in made:
            rest.delete(f"/consumers/g-limit/instances/{name}")
    assert rest.post("/consumers/g-limit", {"name": "room-again"})[0] == 200
    rest.delete("/consumers/g-limit/instances/room-again")
