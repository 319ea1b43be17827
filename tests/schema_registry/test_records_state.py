"""The ``_schemas`` records (Confluent's bytes) and the pure replay (``state.py``), row by
row: what each record does, the conflict rules that keep ids unique across writers."""
from __future__ import annotations

import json

import pytest

from kbroker.schema_registry import records as rec
from kbroker.schema_registry.records import Key, Reference, SchemaValue
from kbroker.schema_registry.state import RegistryState


def test_keys_are_confluents_bytes():
    assert Key(rec.SCHEMA, "t-value", 3).encode() == \
        b'{"keytype":"SCHEMA","subject":"t-value","version":3,"magic":1}'
    assert Key(rec.CONFIG, None).encode() == b'{"keytype":"CONFIG","subject":null,"magic":0}'
    assert Key(rec.MODE, "s").encode() == b'{"keytype":"MODE","subject":"s","magic":0}'
    assert Key(rec.DELETE_SUBJECT, "s").encode() == b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}'
    assert Key(rec.NOOP).encode() == b'{"keytype":"NOOP","magic":0}'


def test_schema_values_omit_avro_type_and_empty_references():
    v = SchemaValue("s", 1, 7, '"string"')
    assert json.loads(v.encode()) == {"subject": "s", "version": 1, "id": 7,
                                      "schema": '"string"', "deleted": False}
    j = SchemaValue("s", 2, 8, "{}", "JSON", (Reference("r.json", "r", 1),), True)
    assert json.loads(j.encode()) == {
        "subject": "s", "version": 2, "id": 8, "schemaType": "JSON",
        "references": [{"name": "r.json", "subject": "r", "version": 1}],
        "schema": "{}", "deleted": True}
    assert rec.decode_schema_value(j.encode()) == j


# what Confluent's registry writes, field order and spacing of other writers included
CONFLUENT_LOG = [
    (b'{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}',
     b'{"subject":"a","version":1,"id":1,"schema":"\\"string\\"","deleted":false}'),
    (b'{"magic":1,"keytype":"SCHEMA","subject":"b","version":1}',
     b'{"subject": "b", "version": 1, "id": 1, "schema": "\\"string\\"", "deleted": false}'),
    (b'{"keytype":"CONFIG","subject":null,"magic":0}', b'{"compatibilityLevel":"FULL"}'),
    (b'{"keytype":"CONFIG","subject":"a","magic":0}', b'{"compatibilityLevel":"NONE"}'),
    (b'{"keytype":"MODE","subject":"b","magic":0}', b'{"mode":"READONLY"}'),
    (b'{"keytype":"NOOP","magic":0}', None),
    (b'{"keytype":"SCHEMA","subject":"a","version":2,"magic":1}',
     b'{"subject":"a","version":2,"id":2,"schema":"\\"int\\"","deleted":false}'),
]


def replay(log) -> RegistryState:
    st = RegistryState()
    for offset, (k, v) in enumerate(log):
        st.apply(offset, k, v)
    return st


def test_a_confluent_log_replays():
    st = replay(CONFLUENT_LOG)
    assert st.subject_names() == ["a", "b"]
    assert [v.id for v in st.versions("a")] == [1, 2]
    assert st.users_of(1) == [("a", 1), ("b", 1)]
    assert st.effective_level("a") == "NONE" and st.effective_level("b") == "FULL"
    assert st.effective_mode("b") == "READONLY" and st.effective_mode("a") == "READWRITE"
    assert st.max_id == 2 and st.next_offset == len(CONFLUENT_LOG)


def test_soft_delete_subject_then_permanent_delete_keeps_the_id_reserved():
    log = CONFLUENT_LOG + [
        (b'{"keytype":"DELETE_SUBJECT","subject":"a","magic":0}', b'{"subject":"a","version":2}'),
    ]
    st = replay(log)
    assert st.subject_names() == ["b"] and st.subject_names(deleted=True) == ["a", "b"]
    assert all(v.deleted for v in st.versions("a", deleted=True))
    log += [(Key(rec.SCHEMA, "a", 1).encode(), None), (Key(rec.SCHEMA, "a", 2).encode(), None)]
    st = replay(log)
    assert st.subject_names(deleted=True) == ["b"]
    assert st.schema_by_id(2) is None and st.schema_by_id(1) is not None   # b still uses 1
    assert st.max_id == 2


def test_config_tombstone_removes_the_setting():
    st = replay(CONFLUENT_LOG + [(b'{"keytype":"CONFIG","subject":"a","magic":0}', None)])
    assert st.level("a") is None and st.effective_level("a") == "FULL"


@pytest.mark.parametrize("name, late, accepted", [
    ("same version, other id: refused",
     SchemaValue("a", 2, 3, '"long"'), False),
    ("same id, other schema: refused",
     SchemaValue("c", 1, 2, '"long"'), False),
    ("same id, same schema, other subject: accepted",
     SchemaValue("c", 1, 2, '"int"'), True),
    ("same version, same id (a deleted flag update): accepted",
     SchemaValue("a", 2, 2, '"int"', deleted=True), True),
])
def test_conflicting_writes_the_later_record_loses(name, late, accepted):
    st = replay(CONFLUENT_LOG)
    ok = st.apply(100, Key(rec.SCHEMA, late.subject, late.version).encode(), late.encode())
    assert ok is accepted, name
    if not accepted:
        assert st.stats["refused"] == 1


def test_unreadable_records_are_skipped():
    st = replay([(b"not json", b"x"), (b'{"keytype":"WHAT"}', b"{}"),
                 (b'{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}', b'{"broken'),
                 CONFLUENT_LOG[0]])
    assert st.stats["unreadable"] == 3 and st.subject_names() == ["a"]


def test_a_winner_written_again_after_a_refused_record_survives_compaction():
    """What the service writes after losing a race (``RegistryService._repairs``): the
    winner's value again, so that keeping only each key's last record (compaction) keeps
    the winner."""
    win = SchemaValue("a", 3, 3, '"long"')
    lose = SchemaValue("a", 3, 4, '"bytes"')
    key = Key(rec.SCHEMA, "a", 3).encode()
    log = CONFLUENT_LOG + [(key, win.encode()), (key, lose.encode()), (key, win.encode())]
    assert replay(log).version("a", 3) == win
    compacted = list({k: (k, v) for k, v in log}.values())   # the last record of each key
    compacted.sort(key=lambda kv: max(i for i, r in enumerate(log) if r[0] == kv[0]))
    assert replay(compacted).version("a", 3) == win
