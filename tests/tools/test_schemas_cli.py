"""``kbroker schemas`` against a real ``kbroker serve`` with the schema registry on: every verb
run as a user runs it (``python -m kbroker schemas ...`` in a child process: compat_tests/cli_fork.py), its output and
exit code checked, and what it changed read back over the registry's REST API."""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from compat_tests import cli_fork
from tests.schema_registry.conftest import avro_record, start_registry

V1 = avro_record("User", ("name", "string"))
V2 = avro_record("User", ("name", "string"), ("age", "int"), age=0)        # BACKWARD-compatible
BAD = avro_record("User", ("name", "string"), ("age", "int"))              # no default: not


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    reg = start_registry(tmp_path_factory.mktemp("sr-cli") / "data")
    try:
        yield reg
    finally:
        reg.broker.stop()


@pytest.fixture
def subject():
    return f"cli-{uuid.uuid4().hex[:10]}"


def run(registry, *argv: str, stdin: str | None = None, url: str | None = None):
    """``python -m kbroker schemas ARGV`` in a process of its own, forked from the test
    process's resident Python with the modules imported (compat_tests/cli_fork.py)."""
    proc = cli_fork.run(["schemas", *argv, "--registry-url", url or registry.url], stdin,
                        dict(os.environ), Path.cwd(), timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def ok(registry, *argv: str, **kw) -> str:
    rc, out, err = run(registry, *argv, **kw)
    assert rc == 0, f"exit {rc}: {err}"
    assert err == ""
    return out


def fails(registry, *argv: str, **kw) -> str:
    rc, out, err = run(registry, *argv, **kw)
    assert rc == 1, f"exit {rc}: {out} {err}"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbroker: "), err
    return lines[0]


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_register_get_list(registry, subject, tmp_path):
    out = ok(registry, "register", subject, write(tmp_path, "v1.avsc", V1))
    assert out.startswith(f"registered {subject} version 1 id ")
    first_id = int(out.split()[-1])
    got = json.loads(ok(registry, "register", subject, write(tmp_path, "v2.avsc", V2), "--json"))
    assert got["version"] == 2 and got["subject"] == subject and got["id"] != first_id
    # the same schema again: the same id and version, nothing new
    again = json.loads(ok(registry, "register", subject, "-", "--json", stdin=V2))
    assert again == got
    status, versions = registry.call("GET", f"/subjects/{subject}/versions")
    assert (status, versions) == (200, [1, 2])

    # get prints the schema text alone (pretty), so it can go to a file; --json the answer
    assert json.loads(ok(registry, "get", subject)) == json.loads(V2)
    assert json.loads(ok(registry, "get", subject, "--version", "1")) == json.loads(V1)
    v1 = json.loads(ok(registry, "get", subject, "1", "--json"))
    assert (v1["version"], v1["id"], json.loads(v1["schema"])) == (1, first_id, json.loads(V1))
    assert fails(registry, "get", subject, "1", "--version", "2").startswith("kbroker: two versions given")
    assert json.loads(ok(registry, "get", "--id", str(first_id))) == json.loads(V1)
    by_id = json.loads(ok(registry, "get", "--id", str(first_id), "--json"))
    assert by_id["id"] == first_id and by_id["versions"] == [{"subject": subject, "version": 1}]

    listed = {row["subject"]: row for row in json.loads(ok(registry, "list", "--json"))}
    assert listed[subject] == {"subject": subject, "version": 2, "id": got["id"], "type": "AVRO",
                               "versions": [1, 2]}
    table = ok(registry, "list", "--prefix", subject).splitlines()
    assert table[0].split() == ["SUBJECT", "VERSION", "ID", "TYPE"]
    assert table[1].split() == [subject, "2", str(got["id"]), "AVRO"]
    assert len(table) == 2


def test_register_json_and_protobuf_with_references(registry, subject, tmp_path):
    js = json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}})
    out = json.loads(ok(registry, "register", subject + "-json", write(tmp_path, "s.json", js),
                        "--type", "json", "--json"))
    assert json.loads(ok(registry, "get", "--id", str(out["id"]), "--json"))["schemaType"] == "JSON"

    dep = 'syntax = "proto3";\npackage kb;\nmessage Money { int64 cents = 1; }\n'
    ok(registry, "register", subject + "-money", write(tmp_path, "money.proto", dep), "--type", "PROTOBUF")
    main = ('syntax = "proto3";\npackage kb;\nimport "money.proto";\n'
            'message Order { string id = 1; Money total = 2; }\n')
    path = write(tmp_path, "order.proto", main)
    inline = f"money.proto={subject}-money:1"
    got = json.loads(ok(registry, "register", subject + "-order", path, "--type", "PROTOBUF",
                        "--references", inline, "--json"))
    status, body = registry.call("GET", f"/subjects/{subject}-order/versions/1")
    assert status == 200 and body["id"] == got["id"]
    assert body["references"] == [{"name": "money.proto", "subject": f"{subject}-money", "version": 1}]
    # the same references as a JSON file
    refs = write(tmp_path, "refs.json", json.dumps(body["references"]))
    again = json.loads(ok(registry, "register", subject + "-order", path, "--type", "PROTOBUF",
                          "--references", refs, "--json"))
    assert again == got
    # and as the repeatable --reference
    again = json.loads(ok(registry, "register", subject + "-order", "--file", path, "--type", "PROTOBUF",
                          "--reference", inline, "--json"))
    assert again == got
    shown = json.loads(ok(registry, "get", subject + "-order", "--json"))
    assert shown["references"] == body["references"]
    # without the reference the import cannot be resolved: the registry's error, one line
    line = fails(registry, "register", subject + "-order2", path, "--type", "PROTOBUF")
    assert "(error 42201)" in line


def test_check(registry, subject, tmp_path):
    ok(registry, "register", subject, write(tmp_path, "v1.avsc", V1))
    out = ok(registry, "check", subject, write(tmp_path, "v2.avsc", V2))
    assert out.strip() == "compatible"
    assert ok(registry, "check", subject, "--schema", V2, "--version", "latest").strip() == "compatible"
    rc, out, err = run(registry, "check", subject, write(tmp_path, "bad.avsc", BAD), "--version", "1")
    assert rc == 1 and err == ""
    assert out.splitlines()[0] == "incompatible"
    assert len(out.splitlines()) > 1          # the registry's reasons (verbose)
    verdict = json.loads(run(registry, "check", subject, write(tmp_path, "b.avsc", BAD), "--json")[1])
    assert verdict["is_compatible"] is False and verdict["messages"]
    # nothing was registered by checking
    assert registry.call("GET", f"/subjects/{subject}/versions") == (200, [1])


def test_delete_soft_and_permanent(registry, subject, tmp_path):
    ok(registry, "register", subject, write(tmp_path, "v1.avsc", V1))
    ok(registry, "register", subject, write(tmp_path, "v2.avsc", V2))
    assert ok(registry, "delete", subject, "1").strip() == f"deleted {subject} version 1"
    assert registry.call("GET", f"/subjects/{subject}/versions") == (200, [2])
    assert registry.call("GET", f"/subjects/{subject}/versions?deleted=true") == (200, [1, 2])
    # version 1 is soft-deleted already: --permanent goes straight to the hard delete
    assert ok(registry, "delete", subject, "1", "--permanent").strip() == \
        f"permanently deleted {subject} version 1"
    assert registry.call("GET", f"/subjects/{subject}/versions?deleted=true") == (200, [2])
    # the whole subject, soft then hard in one command
    got = json.loads(ok(registry, "delete", subject, "--permanent", "--json"))
    assert got == [2]           # the registry's answer: the versions deleted for good
    status, body = registry.call("GET", f"/subjects/{subject}/versions?deleted=true")
    assert status == 404 and body["error_code"] == 40401
    assert subject not in json.loads(ok(registry, "list", "--deleted", "--json"))


def test_config_global_and_subject(registry, subject, tmp_path):
    ok(registry, "register", subject, write(tmp_path, "v1.avsc", V1))
    glob = ok(registry, "config").strip()
    assert glob == "global: BACKWARD"
    assert ok(registry, "config", subject).strip() == f"{subject}: BACKWARD (the global level)"
    assert ok(registry, "config", subject, "--set", "full").strip() == f"{subject}: FULL"
    assert registry.call("GET", f"/config/{subject}")[1]["compatibilityLevel"] == "FULL"
    got = json.loads(ok(registry, "config", subject, "--json"))
    assert (got["level"], got["from"]) == ("FULL", f"subject {subject}")
    # FULL now refuses what BACKWARD allowed the other way round: the check says so
    rc, out, _ = run(registry, "check", subject, write(tmp_path, "v2.avsc", V2))
    assert rc == 0                          # a field with a default is FULL-compatible
    ok(registry, "config", subject, "--delete")
    assert ok(registry, "config", subject).strip() == f"{subject}: BACKWARD (the global level)"
    status, body = registry.call("GET", f"/config/{subject}")
    assert status == 404 and body["error_code"] == 40408


def test_errors_are_one_line(registry, subject, tmp_path):
    line = fails(registry, "get", subject)
    assert line.startswith("kbroker: ") and line.endswith("(error 40401)")
    line = fails(registry, "register", subject, write(tmp_path, "bad.avsc", '{"type": "nope"}'))
    assert line.endswith("(error 42201)")
    assert fails(registry, "register", subject, str(tmp_path / "absent.avsc")).startswith(
        "kbroker: cannot read ")
    assert "NAME=SUBJECT:VERSION" in fails(registry, "register", subject,
                                           write(tmp_path, "v1.avsc", V1), "--references", "a=b")
    assert "NAME=SUBJECT:VERSION" in fails(registry, "register", subject, "--schema", V1,
                                           "--reference", "nothing")
    assert "needs the schema once" in fails(registry, "register", subject)
    assert "needs the schema once" in fails(registry, "register", subject, write(tmp_path, "a", V1),
                                            "--schema", V1)
    line = fails(registry, "list", url="http://127.0.0.1:1")
    assert line.startswith("kbroker: cannot reach the schema registry at http://127.0.0.1:1")
    line = fails(registry, "config", "--set", "BACKWARD", url=registry.url + "/nowhere")
    assert line.startswith("kbroker: ")
    # argparse refuses unknown levels and types before any request (usage error, exit 2)
    rc, _, err = run(registry, "config", "--set", "SIDEWAYS")
    assert rc == 2 and "invalid choice" in err
