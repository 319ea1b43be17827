"""Confluent's REST API v1 against a real broker: register, lookup, get by id, versions,
subjects, types, and the answers to bad input (Confluent's status and error codes; nothing
stored). Real HTTP (``http.client``), one ``kbroker serve`` per module."""
from __future__ import annotations

import json

from .conftest import avro_record

A1 = avro_record("User", ("name", "string"))
A2 = avro_record("User", ("name", "string"), ("age", "int"), age=0)


def compact(text: str) -> str:
    """What Confluent stores and answers for an Avro schema: Avro's Schema.toString()."""
    return json.dumps(json.loads(text), separators=(",", ":"))


def register(registry, subject, schema, **extra):
    return registry.call("POST", f"/subjects/{subject}/versions", {"schema": schema, **extra})


def test_register_answers_an_id_and_the_same_schema_again_the_same_id(registry, subject):
    status, body = register(registry, subject, A1)
    assert status == 200 and set(body) == {"id"}
    first = body["id"]
    # the same schema, written differently (whitespace), is the same version and id
    assert register(registry, subject, json.dumps(json.loads(A1), indent=2)) == (200, {"id": first})
    assert registry.call("GET", f"/subjects/{subject}/versions") == (200, [1])


def test_a_second_schema_is_version_2_and_another_subject_reuses_the_id(registry, subject):
    _, b1 = register(registry, subject, A1)
    _, b2 = register(registry, subject, A2)
    assert b2["id"] != b1["id"]
    assert registry.call("GET", f"/subjects/{subject}/versions") == (200, [1, 2])
    other = subject + "-other"
    assert register(registry, other, A2) == (200, {"id": b2["id"]})
    status, versions = registry.call("GET", f"/schemas/ids/{b2['id']}/versions")
    assert status == 200
    assert {"subject": subject, "version": 2} in versions and {"subject": other, "version": 1} in versions
    assert registry.call("GET", f"/schemas/ids/{b2['id']}/subjects")[1] == sorted([subject, other])


def test_get_version_by_number_latest_and_minus_one(registry, subject):
    _, b1 = register(registry, subject, A1)
    _, b2 = register(registry, subject, A2)
    expect2 = {"subject": subject, "version": 2, "id": b2["id"], "schema": compact(A2)}
    assert registry.call("GET", f"/subjects/{subject}/versions/2") == (200, expect2)
    assert registry.call("GET", f"/subjects/{subject}/versions/latest") == (200, expect2)
    assert registry.call("GET", f"/subjects/{subject}/versions/-1") == (200, expect2)
    assert registry.call("GET", f"/subjects/{subject}/versions/1")[1]["id"] == b1["id"]
    # the raw schema
    status, raw = registry.call("GET", f"/subjects/{subject}/versions/1/schema")
    assert status == 200 and raw == json.loads(A1)


def test_get_schema_by_id(registry, subject):
    _, b = register(registry, subject, A1)
    assert registry.call("GET", f"/schemas/ids/{b['id']}") == (200, {"schema": compact(A1)})
    status, body = registry.call("GET", f"/schemas/ids/{b['id']}?subject={subject}&fetchMaxId=true")
    assert status == 200 and body["schema"] == compact(A1) and body["maxId"] >= b["id"]
    # the subject names a context (Confluent), not a filter: another subject finds it too
    status, body = registry.call("GET", f"/schemas/ids/{b['id']}?subject=not-{subject}")
    assert status == 200 and body["schema"] == compact(A1)
    status, raw = registry.call("GET", f"/schemas/ids/{b['id']}/schema")
    assert status == 200 and raw == json.loads(A1)


def test_lookup_finds_the_version_holding_a_schema(registry, subject):
    register(registry, subject, A1)
    _, b2 = register(registry, subject, A2)
    status, body = registry.call("POST", f"/subjects/{subject}", {"schema": A2})
    assert status == 200
    assert body == {"subject": subject, "version": 2, "id": b2["id"], "schema": compact(A2)}
    status, body = registry.call("POST", f"/subjects/{subject}",
                                 {"schema": avro_record("Other", ("x", "int"))})
    assert status == 404 and body["error_code"] == 40403
    status, body = registry.call("POST", f"/subjects/no-{subject}", {"schema": A1})
    assert (status, body["error_code"]) == (404, 40401)


def test_subjects_listing_and_prefix(registry, subject):
    register(registry, subject, A1)
    status, names = registry.call("GET", "/subjects")
    assert status == 200 and subject in names
    assert registry.call("GET", f"/subjects?subjectPrefix={subject[:8]}")[1] == \
        sorted(n for n in names if n.startswith(subject[:8]))


def test_types_and_root(registry):
    status, types = registry.call("GET", "/schemas/types")
    assert status == 200 and sorted(types) == ["AVRO", "JSON", "PROTOBUF"]
    assert registry.call("GET", "/") == (200, {})


def test_a_subject_with_a_slash_is_percent_encoded(registry, subject):
    name = f"{subject}/with/slash"
    status, b = register(registry, name.replace("/", "%2F"), A1)
    assert status == 200
    assert name in registry.call("GET", "/subjects")[1]
    assert registry.call("GET", f"/subjects/{name.replace('/', '%2F')}/versions/1")[1]["id"] == b["id"]


def test_answers_carry_the_registry_content_type(registry):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", registry.port, timeout=10)
    conn.request("GET", "/subjects")
    resp = conn.getresponse()
    resp.read()
    conn.close()
    assert resp.getheader("content-type") == "application/vnd.schemaregistry.v1+json"


# ---------------------------------------------------------------------------- bad input

def _nothing_stored(registry, subject):
    status, body = registry.call("GET", f"/subjects/{subject}/versions")
    assert (status, body["error_code"]) == (404, 40401)


def test_unknown_subject_version_and_id(registry, subject):
    assert registry.call("GET", f"/subjects/{subject}/versions")[1]["error_code"] == 40401
    assert registry.call("GET", f"/subjects/{subject}/versions/1")[1]["error_code"] == 40401
    register(registry, subject, A1)
    status, body = registry.call("GET", f"/subjects/{subject}/versions/7")
    assert (status, body) == (404, {"error_code": 40402, "message": "Version 7 not found."})
    status, body = registry.call("GET", "/schemas/ids/987654")
    assert (status, body["error_code"]) == (404, 40403)
    status, body = registry.call("GET", "/schemas/ids/abc")
    assert (status, body["error_code"]) == (404, 404)


def test_invalid_versions_are_42202(registry, subject):
    register(registry, subject, A1)
    for bad in ("0", "-2", "abc", str(2**31)):
        status, body = registry.call("GET", f"/subjects/{subject}/versions/{bad}")
        assert (status, body["error_code"]) == (422, 42202), bad
        assert f"'{bad}'" in body["message"]


def test_malformed_json_is_400_and_stores_nothing(registry, subject):
    status, body = registry.call("POST", f"/subjects/{subject}/versions", raw=b'{"schema": ')
    assert (status, body["error_code"]) == (400, 400)
    status, body = registry.call("POST", f"/subjects/{subject}/versions", raw=b"[" * 100_000)
    assert (status, body["error_code"]) == (400, 400)
    status, body = registry.call("POST", f"/subjects/{subject}/versions", raw=b"\xff\xfe")
    assert (status, body["error_code"]) == (400, 400)
    _nothing_stored(registry, subject)


def test_the_schemas_topic_is_compacted_with_one_partition(registry, subject):
    from confluent_kafka.admin import AdminClient, ConfigResource
    registry.call("POST", f"/subjects/{subject}/versions", {"schema": A1})
    admin = AdminClient({"bootstrap.servers": registry.broker.bootstrap_servers})
    [topic] = registry.broker.admin.metadata(["_schemas"]).topics
    assert len(topic.partitions) == 1
    assert len(topic.partitions[0].replica_nodes) == 1      # min(3, brokers) on one node
    [future] = admin.describe_configs([ConfigResource("topic", "_schemas")]).values()
    assert future.result(30)["cleanup.policy"].value == "compact"


def test_wrong_content_type_is_415_and_stores_nothing(registry, subject):
    status, body = registry.call("POST", f"/subjects/{subject}/versions", {"schema": A1},
                                 content_type="text/plain")
    assert (status, body) == (415, {"error_code": 415, "message": "HTTP 415 Unsupported Media Type"})
    _nothing_stored(registry, subject)
    # Confluent's other accepted types
    for ct in ("application/json", "application/vnd.schemaregistry+json", "application/octet-stream"):
        assert registry.call("POST", f"/subjects/{subject}/versions", {"schema": A1},
                             content_type=ct)[0] == 200


def test_invalid_schema_is_42201_and_stores_nothing(registry, subject):
    for text in ('{"type": "record", "name": "X"}', "not json", '{"type": "nosuchtype"}'):
        status, body = register(registry, subject, text)
        assert (status, body["error_code"]) == (422, 42201), (text, body)
    status, body = registry.call("POST", f"/subjects/{subject}/versions", {"schema": ""})
    assert (status, body["error_code"]) == (422, 42201)
    status, body = register(registry, subject, A1, schemaType="XML")
    assert (status, body["error_code"]) == (422, 42201)
    _nothing_stored(registry, subject)


def test_wrong_shapes_are_422(registry, subject):
    for body in ([1, 2], {"schema": 5}, {"schema": A1, "references": "x"}, "text"):
        status, answer = registry.call("POST", f"/subjects/{subject}/versions", body)
        assert status == 422 and answer["error_code"] == 422, body
    _nothing_stored(registry, subject)


def test_unknown_reference_is_42201(registry, subject):
    status, body = register(registry, subject, avro_record("R", ("x", "Missing")),
                            references=[{"name": "Missing", "subject": f"no-{subject}", "version": 1}])
    assert (status, body["error_code"]) == (422, 42201)
    _nothing_stored(registry, subject)


def test_oversized_body_is_413(registry, subject):
    """The limit is checked on the declared length, before the body is read (the answer
    comes while the client could still be sending, so the test reads it on a raw socket)."""
    import socket
    size = 1100 * 1024
    with socket.create_connection(("127.0.0.1", registry.port), timeout=30) as sock:
        sock.sendall((f"POST /subjects/{subject}/versions HTTP/1.1\r\nHost: x\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {size}\r\n\r\n").encode()
                     + b'{"schema": "' + b"x" * 1000)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ")
    assert json.loads(body)["error_code"] == 413
    _nothing_stored(registry, subject)
    assert registry.call("GET", "/subjects")[0] == 200       # the listener still serves


def test_unknown_path_and_method(registry):
    assert registry.call("GET", "/nope") == (404, {"error_code": 404, "message": "HTTP 404 Not Found"})
    status, body = registry.call("PATCH", "/subjects")
    assert (status, body["error_code"]) == (405, 405)


def test_unknown_fields_of_newer_clients_are_ignored(registry, subject):
    status, body = register(registry, subject, A1, metadata=None, ruleSet=None)
    assert status == 200 and "id" in body


def test_parallel_registrations_and_reads_on_one_node(registry, subject):
    """Writers queue on the node's write lock while readers replay the log beside them:
    every registration gets its own id and version, all of them readable at once."""
    import threading
    results, reads = {}, []

    def write(k):
        results[k] = register(registry, subject, avro_record("P", ("a", "int"), *[(f"f{i}", "int") for i in range(k)],
                                                            **{f"f{i}": 0 for i in range(k)}))

    def read():
        for _ in range(10):
            reads.append(registry.call("GET", f"/subjects/{subject}/versions")[0])

    threads = [threading.Thread(target=write, args=(k,)) for k in range(12)]
    threads += [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(status == 200 for status, _ in results.values()), results
    ids = [body["id"] for _, body in results.values()]
    assert len(set(ids)) == 12
    assert registry.call("GET", f"/subjects/{subject}/versions") == (200, list(range(1, 13)))
    assert set(reads) <= {200, 404}
