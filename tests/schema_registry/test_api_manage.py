"""Deleting (soft and permanent), config, mode, the compatibility endpoint, references and
``normalize`` — Confluent's answers and error codes, over real HTTP."""
from __future__ import annotations

import json

from .conftest import avro_record

A1 = avro_record("User", ("name", "string"))
A2 = avro_record("User", ("name", "string"), ("age", "int"), age=0)
A3 = avro_record("User", ("name", "string"), ("age", "int"), ("email", "string"), age=0, email="")
INCOMPATIBLE = avro_record("User", ("name", "int"))     # a field's type changes: string -> int


def register(registry, subject, schema, **extra):
    return registry.call("POST", f"/subjects/{subject}/versions", {"schema": schema, **extra})


def versions(registry, subject, deleted=False):
    return registry.call("GET", f"/subjects/{subject}/versions" + ("?deleted=true" if deleted else ""))


# ---------------------------------------------------------------------------- delete

def test_soft_delete_of_a_version(registry, subject):
    register(registry, subject, A1)
    _, b2 = register(registry, subject, A2)
    assert registry.call("DELETE", f"/subjects/{subject}/versions/2") == (200, 2)
    assert versions(registry, subject) == (200, [1])
    assert versions(registry, subject, deleted=True) == (200, [1, 2])
    status, body = registry.call("GET", f"/subjects/{subject}/versions/2")
    assert (status, body["error_code"]) == (404, 40402)
    assert registry.call("GET", f"/subjects/{subject}/versions/2?deleted=true")[1]["id"] == b2["id"]
    # the id still serves its schema (readers of old data need it)
    assert registry.call("GET", f"/schemas/ids/{b2['id']}")[0] == 200
    status, body = registry.call("DELETE", f"/subjects/{subject}/versions/2")
    assert (status, body["error_code"]) == (404, 40406)


def test_permanent_delete_of_a_version_needs_a_soft_delete_first(registry, subject):
    register(registry, subject, A1)
    register(registry, subject, A2)
    status, body = registry.call("DELETE", f"/subjects/{subject}/versions/2?permanent=true")
    assert (status, body["error_code"]) == (404, 40407)
    assert registry.call("DELETE", f"/subjects/{subject}/versions/2")[0] == 200
    assert registry.call("DELETE", f"/subjects/{subject}/versions/2?permanent=true") == (200, 2)
    assert versions(registry, subject, deleted=True) == (200, [1])
    # the next version is 3: a permanently deleted number is not handed out again... as
    # Confluent does, numbering continues after the highest version still stored
    status, _ = register(registry, subject, A3)
    assert status == 200 and versions(registry, subject)[1][-1] >= 2


def test_soft_then_permanent_delete_of_a_subject(registry, subject):
    _, b1 = register(registry, subject, A1)
    register(registry, subject, A2)
    status, body = registry.call("DELETE", f"/subjects/{subject}?permanent=true")
    assert (status, body["error_code"]) == (404, 40405)
    assert registry.call("DELETE", f"/subjects/{subject}") == (200, [1, 2])
    assert subject not in registry.call("GET", "/subjects")[1]
    assert subject in registry.call("GET", "/subjects?deleted=true")[1]
    status, body = registry.call("DELETE", f"/subjects/{subject}")
    assert (status, body["error_code"]) == (404, 40404)
    # a lookup of a soft-deleted subject's schema finds it only with deleted=true
    assert registry.call("POST", f"/subjects/{subject}", {"schema": A1})[1]["error_code"] == 40401
    assert registry.call("POST", f"/subjects/{subject}?deleted=true", {"schema": A1})[1]["id"] == b1["id"]
    assert registry.call("DELETE", f"/subjects/{subject}?permanent=true") == (200, [1, 2])
    assert subject not in registry.call("GET", "/subjects?deleted=true")[1]
    status, body = registry.call("DELETE", f"/subjects/{subject}")
    assert (status, body["error_code"]) == (404, 40401)


def test_registering_again_after_a_soft_delete_is_a_new_version_with_the_same_id(registry, subject):
    _, b1 = register(registry, subject, A1)
    registry.call("DELETE", f"/subjects/{subject}")
    assert register(registry, subject, A1) == (200, {"id": b1["id"]})
    assert versions(registry, subject) == (200, [2])


# ---------------------------------------------------------------------------- config

def test_global_and_subject_config(registry, subject):
    assert registry.call("GET", "/config") == (200, {"compatibilityLevel": "BACKWARD"})
    status, body = registry.call("GET", f"/config/{subject}")
    assert (status, body["error_code"]) == (404, 40408)
    assert registry.call("GET", f"/config/{subject}?defaultToGlobal=true") == \
        (200, {"compatibilityLevel": "BACKWARD"})
    assert registry.call("PUT", f"/config/{subject}", {"compatibility": "full_transitive"}) == \
        (200, {"compatibility": "FULL_TRANSITIVE"})
    assert registry.call("GET", f"/config/{subject}") == (200, {"compatibilityLevel": "FULL_TRANSITIVE"})
    assert registry.call("DELETE", f"/config/{subject}") == (200, {"compatibilityLevel": "FULL_TRANSITIVE"})
    assert registry.call("GET", f"/config/{subject}")[1]["error_code"] == 40408
    status, body = registry.call("PUT", f"/config/{subject}", {"compatibility": "SIDEWAYS"})
    assert (status, body["error_code"]) == (422, 42203)
    status, body = registry.call("PUT", "/config", {"nothing": 1})
    assert (status, body["error_code"]) == (422, 42203)


def test_compatibility_level_decides_registration(registry, subject):
    register(registry, subject, A1)
    status, body = register(registry, subject, INCOMPATIBLE)
    assert (status, body["error_code"]) == (409, 409)
    assert "incompatible" in body["message"]
    assert versions(registry, subject) == (200, [1])            # nothing stored
    registry.call("PUT", f"/config/{subject}", {"compatibility": "NONE"})
    assert register(registry, subject, INCOMPATIBLE)[0] == 200
    assert versions(registry, subject) == (200, [1, 2])


# ---------------------------------------------------------------------------- mode

def test_readonly_mode_refuses_writes_and_import_takes_ids(registry, subject):
    register(registry, subject, A1)
    assert registry.call("GET", "/mode") == (200, {"mode": "READWRITE"})
    assert registry.call("PUT", f"/mode/{subject}", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    status, body = register(registry, subject, A2)
    assert (status, body["error_code"]) == (422, 42205)
    status, body = registry.call("DELETE", f"/subjects/{subject}")
    assert (status, body["error_code"]) == (422, 42205)
    assert registry.call("GET", f"/mode/{subject}") == (200, {"mode": "READONLY"})
    assert registry.call("DELETE", f"/mode/{subject}") == (200, {"mode": "READONLY"})
    status, body = registry.call("GET", f"/mode/{subject}")
    assert (status, body["error_code"]) == (404, 40409)
    assert registry.call("GET", f"/mode/{subject}?defaultToGlobal=true") == (200, {"mode": "READWRITE"})
    status, body = registry.call("PUT", "/mode", {"mode": "SOMETIMES"})
    assert (status, body["error_code"]) == (422, 42204)


def test_import_mode_registers_with_the_given_id_and_version(registry, subject):
    status, body = register(registry, subject, A1, id=90001)
    assert (status, body["error_code"]) == (422, 42205)        # not in import mode
    # a subject with schemas cannot switch to IMPORT without force
    other = subject + "-full"
    register(registry, other, A1)
    status, body = registry.call("PUT", f"/mode/{other}", {"mode": "IMPORT"})
    assert (status, body["error_code"]) == (422, 42205)
    assert registry.call("PUT", f"/mode/{subject}", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
    assert register(registry, subject, A1, id=90001, version=5) == (200, {"id": 90001})
    assert registry.call("GET", f"/subjects/{subject}/versions/5")[1]["id"] == 90001
    status, body = register(registry, subject, A2, id=90001)
    assert (status, body["error_code"]) == (422, 42207)        # the id holds another schema
    registry.call("PUT", f"/mode/{subject}", {"mode": "READWRITE"})
    # ids given by hand move the counter: the next new schema gets a higher one
    status, body = register(registry, subject + "-next", avro_record("N", ("n", "long")))
    assert status == 200 and body["id"] > 90001


# ---------------------------------------------------------------------------- compatibility

def test_compatibility_endpoint(registry, subject):
    register(registry, subject, A1)
    register(registry, subject, A2)
    path = f"/compatibility/subjects/{subject}/versions"
    assert registry.call("POST", f"{path}/latest", {"schema": A3}) == (200, {"is_compatible": True})
    assert registry.call("POST", f"{path}/1", {"schema": A3}) == (200, {"is_compatible": True})
    status, body = registry.call("POST", f"{path}/latest?verbose=true", {"schema": INCOMPATIBLE})
    assert status == 200 and body["is_compatible"] is False and body["messages"]
    assert registry.call("POST", f"{path}/latest", {"schema": INCOMPATIBLE}) == (200, {"is_compatible": False})
    assert registry.call("POST", path, {"schema": A3}) == (200, {"is_compatible": True})
    assert registry.call("POST", f"{path}/9", {"schema": A3})[1]["error_code"] == 40402
    # a subject without versions: ``latest`` checks against nothing (Confluent 7+), a number
    # is a version that does not exist
    assert registry.call("POST", f"/compatibility/subjects/no-{subject}/versions/latest",
                         {"schema": A3}) == (200, {"is_compatible": True})
    assert registry.call("POST", f"/compatibility/subjects/no-{subject}/versions/1",
                         {"schema": A3})[1]["error_code"] == 40402
    assert registry.call("POST", f"{path}/latest", {"schema": "{bad"})[1]["error_code"] == 42201
    assert versions(registry, subject) == (200, [1, 2])         # checks store nothing


# ---------------------------------------------------------------------------- references

ADDRESS = avro_record("Address", ("street", "string"))
PERSON = json.dumps({"type": "record", "name": "Person",
                     "fields": [{"name": "name", "type": "string"},
                                {"name": "home", "type": "Address"}]})


def test_references_and_referencedby(registry, subject):
    _, addr = register(registry, f"{subject}-address", ADDRESS)
    refs = [{"name": "Address", "subject": f"{subject}-address", "version": 1}]
    status, person = register(registry, subject, PERSON, references=refs)
    assert status == 200, person
    status, body = registry.call("GET", f"/subjects/{subject}/versions/1")
    assert body["references"] == refs
    got = registry.call("GET", f"/schemas/ids/{person['id']}")[1]
    assert got["references"] == refs and json.loads(got["schema"]) == json.loads(PERSON)
    assert registry.call("GET", f"/subjects/{subject}-address/versions/1/referencedby") == (200, [person["id"]])
    # a referenced version cannot be deleted
    status, body = registry.call("DELETE", f"/subjects/{subject}-address/versions/1")
    assert (status, body["error_code"]) == (422, 42206)
    status, body = registry.call("DELETE", f"/subjects/{subject}-address")
    assert (status, body["error_code"]) == (422, 42206)
    # once the referrer is gone, it can
    registry.call("DELETE", f"/subjects/{subject}")
    assert registry.call("GET", f"/subjects/{subject}-address/versions/1/referencedby") == (200, [])
    assert registry.call("DELETE", f"/subjects/{subject}-address")[0] == 200


# ---------------------------------------------------------------------------- normalize

def test_normalize_stores_the_normalized_form_and_finds_equivalents(registry, subject):
    spaced = json.dumps(json.loads(A1), indent=4)
    status, body = registry.call("POST", f"/subjects/{subject}/versions?normalize=true",
                                 {"schema": spaced})
    assert status == 200
    stored = registry.call("GET", f"/subjects/{subject}/versions/1")[1]["schema"]
    assert stored != spaced and json.loads(stored) == json.loads(A1)
    assert " " not in stored
    status, found = registry.call("POST", f"/subjects/{subject}?normalize=true", {"schema": spaced})
    assert status == 200 and found["id"] == body["id"]
