"""``kbroker schemas`` against the registry of a real broker: list, get, register, check
(exit 1 when incompatible), delete, config; errors are one line with Confluent's code."""
from __future__ import annotations

import json
from pathlib import Path

from compat_tests import cli_fork

from .conftest import avro_record

V1 = avro_record("Cli", ("a", "int"))
V2 = avro_record("Cli", ("a", "int"), ("b", "string"), b="")
BAD = avro_record("Cli", ("a", "string"))


def kb(registry, *args, stdin: str | None = None, url: str | None = None):
    """``python -m kbroker schemas ARGS --registry URL`` (the registry's, or ``url``), forked from
    the test process's resident Python (compat_tests/cli_fork.py)."""
    r = cli_fork.kbroker("schemas", *args, "--registry", url or registry.url, input=stdin, cwd=Path.cwd())
    return r.returncode, r.stdout, r.stderr


def test_register_get_list_check_config_delete(registry, subject, tmp_path):
    path = tmp_path / "v1.avsc"
    path.write_text(V1)
    rc, out, err = kb(registry, "register", subject, "--file", str(path), "--json")
    assert rc == 0, err
    schema_id = json.loads(out)["id"]
    rc, out, _ = kb(registry, "register", subject, "--file", "-", stdin=V2)
    assert rc == 0 and subject in out
    rc, out, _ = kb(registry, "get", subject, "--version", "1")
    assert rc == 0 and json.loads(out) == json.loads(V1)
    rc, out, _ = kb(registry, "list", "--prefix", subject)
    assert rc == 0
    assert out.split("\n")[0].split() == ["SUBJECT", "VERSION", "ID", "TYPE"]
    row = out.split("\n")[1].split()
    assert row[:2] == [subject, "2"] and row[3] == "AVRO" and int(row[2]) > schema_id
    rc, out, _ = kb(registry, "check", subject, "--schema", V2)
    assert (rc, out.strip()) == (0, "compatible")
    rc, out, _ = kb(registry, "check", subject, "--schema", BAD)
    assert rc == 1 and out.startswith("incompatible") and "TYPE_MISMATCH" in out
    rc, out, _ = kb(registry, "config", subject)
    assert rc == 0 and "BACKWARD" in out
    rc, out, _ = kb(registry, "config", subject, "--set", "none")
    assert rc == 0 and "NONE" in out
    rc, out, _ = kb(registry, "check", subject, "--schema", BAD)
    assert rc == 0
    rc, out, _ = kb(registry, "delete", subject, "--version", "2")
    assert rc == 0 and "2" in out
    rc, out, _ = kb(registry, "delete", subject)
    assert rc == 0
    rc, out, _ = kb(registry, "delete", subject, "--permanent", "--json")
    assert rc == 0 and json.loads(out) == [1, 2]


def test_errors_are_one_line_with_the_registry_code(registry, subject):
    rc, out, err = kb(registry, "get", subject)
    assert rc == 1 and err.strip() == f"kbroker: Subject '{subject}' not found. (error 40401)"
    rc, _, err = kb(registry, "register", subject, "--schema", "{nope")
    assert rc == 1 and "(error 42201)" in err and "Traceback" not in err
    rc, _, err = kb(registry, "list", url="http://127.0.0.1:9")
    assert rc == 1 and "cannot reach the schema registry" in err
