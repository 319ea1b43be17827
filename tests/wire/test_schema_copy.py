"""The message schema's parsed copy (``kbroker.common.codecache.read_json_entries``, which
``kbroker.wire.model.load_raw`` reads it through): a start reads the marshalled form of
``schema/messages.json`` instead of parsing its JSON, only when the copy was written from
that very file (size and modification time, as a ``.pyc``) for the same reading, each
definition only when looked up, and what it reads is what parsing gives."""
import json
import os
import shutil

from kbroker.common import codecache
from kbroker.wire import model


def _schema(tmp_path):
    path = tmp_path / "messages.json"
    shutil.copyfile(model.SCHEMA_FILE, path)
    return path


def _by_name(text: dict) -> dict:
    return {m["name"]: m for m in text["messages"]}


def _light(entries) -> dict:
    return {name: entries.light(name) for name in entries}


def _expected_light(parsed: dict) -> dict:
    return {name: {k: m[k] for k in model._LIGHT if k in m} for name, m in parsed.items()}


def test_the_copy_holds_what_parsing_gives(tmp_path):
    path = _schema(tmp_path)
    parsed = _by_name(json.loads(path.read_bytes()))
    assert not codecache.parsed_copy(path).exists()
    first = model.read_definitions(path, write=True)                  # parsed, copy written
    assert dict(first) == parsed and _light(first) == _expected_light(parsed)
    copy = codecache.parsed_copy(path)
    assert copy.exists() and copy.parent == tmp_path / "__pycache__"
    # the JSON made unreadable, its size and time kept: what comes back is the copy's
    st = path.stat()
    path.write_bytes(b"\0" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = model.read_definitions(path, write=False)
    assert list(again) == list(parsed) and _light(again) == _expected_light(parsed)
    assert again._full == {}                                  # nothing read but the index
    fetch = again["FetchRequest"]
    assert fetch == parsed["FetchRequest"] and list(fetch) == list(parsed["FetchRequest"])
    assert list(again._full) == ["FetchRequest"] and "FetchRequest" in again
    assert "NoSuchMessage" not in again and again.get("NoSuchMessage") is None
    assert dict(again) == parsed and [list(m) for m in again.values()] == \
        [list(m) for m in parsed.values()]
    assert model.load_raw(path) == parsed


def test_a_copy_of_another_version_of_the_file_is_not_used(tmp_path):
    path = _schema(tmp_path)
    model.read_definitions(path, write=True)
    copy = codecache.parsed_copy(path)
    text = json.loads(path.read_bytes())
    text["messages"] = text["messages"][:3]
    path.write_text(json.dumps(text))               # changed: another size and time
    assert dict(model.read_definitions(path, write=False)) == _by_name(text)
    # the same size, only the modification time differs: still parsed again
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    model.read_definitions(path, write=True)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert dict(model.read_definitions(path, write=False)) == _by_name(text)   # the newer time
    assert copy.read_bytes().startswith(codecache.PARSED_FORMAT)
    # a copy written for another reading of the same file (other members in its index)
    other = codecache.read_json_entries(path, "messages", "name", ("type",), write=True)
    assert other.light(text["messages"][0]["name"]) == {"type": text["messages"][0]["type"]}
    assert _light(model.read_definitions(path, write=False)) == _expected_light(_by_name(text))


def test_a_damaged_or_foreign_copy_is_ignored(tmp_path):
    path = _schema(tmp_path)
    parsed = _by_name(json.loads(path.read_bytes()))
    model.read_definitions(path, write=True)
    copy = codecache.parsed_copy(path)
    good = copy.read_bytes()
    # the index damaged, the copy cut short, another interpreter's: the JSON parsed
    for bad in (good[:200] + b"\xff\xfe not marshal", good[:len(good) // 3],
                b"\x00\x01\x02\x03" + good[4:]):
        copy.write_bytes(bad)
        assert dict(model.read_definitions(path, write=False)) == parsed
    # the index whole, the entries after it cut off (written in place only while no
    # mapping of it is alive): each of those from the JSON
    copy.write_bytes(good)
    entries = model.read_definitions(path, write=False)
    index_end = len(good) - len(entries._data)
    del entries
    copy.write_bytes(good[:index_end + 10])
    cut = model.read_definitions(path, write=False)
    assert cut._data is not None and dict(cut) == parsed
    # a damaged entry found on a lookup: the copy is written again only as the reading's
    # ``write`` says (not by sys.dont_write_bytecode's default: PYTHONDONTWRITEBYTECODE in
    # the environment once made this test fail)
    assert copy.read_bytes() == good[:index_end + 10]
    assert dict(model.read_definitions(path, write=True)) == parsed      # and written again
    assert copy.read_bytes() == good


def test_no_copy_is_written_where_bytecode_is_not(tmp_path, monkeypatch):
    path = _schema(tmp_path)
    monkeypatch.setattr("sys.dont_write_bytecode", True)
    assert dict(model.read_definitions(path)) == _by_name(json.loads(path.read_bytes()))
    assert not codecache.parsed_copy(path).exists()
