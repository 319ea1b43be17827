"""The message schema's parsed copy (``kbroker.common.codecache.read_json_object``, which
``kbroker.wire.model.load_raw`` reads it through): a start reads the
marshalled form of ``schema/messages.json`` instead of parsing its JSON, only when the copy
was written from that very file (size and modification time, as a ``.pyc``), and what it
reads is what parsing gives."""
import json
import os
import shutil

from kbroker.common import codecache
from kbroker.wire import model


def _schema(tmp_path):
    path = tmp_path / "messages.json"
    shutil.copyfile(model.SCHEMA_FILE, path)
    return path


def test_the_copy_holds_what_parsing_gives(tmp_path):
    path = _schema(tmp_path)
    parsed = json.loads(path.read_bytes())
    assert not codecache.parsed_copy(path).exists()
    assert codecache.read_json_object(path, write=True) == parsed          # parsed, copy written
    copy = codecache.parsed_copy(path)
    assert copy.exists() and copy.parent == tmp_path / "__pycache__"
    # the JSON made unreadable, its size and time kept: what comes back is the copy's
    st = path.stat()
    path.write_bytes(b"\0" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    again = codecache.read_json_object(path, write=False)
    assert again == parsed and list(again) == list(parsed)
    assert [list(m) for m in again["messages"]] == [list(m) for m in parsed["messages"]]
    assert model.load_raw(path) == {m["name"]: m for m in parsed["messages"]}


def test_a_copy_of_another_version_of_the_file_is_not_used(tmp_path):
    path = _schema(tmp_path)
    codecache.read_json_object(path, write=True)
    copy = codecache.parsed_copy(path)
    text = json.loads(path.read_bytes())
    text["messages"] = text["messages"][:3]
    path.write_text(json.dumps(text))               # changed: another size and time
    assert codecache.read_json_object(path, write=False) == text
    # the same size, only the modification time differs: still parsed again
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    codecache.read_json_object(path, write=True)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert codecache.read_json_object(path, write=False) == text   # the copy names the newer time
    assert copy.read_bytes().startswith(codecache.PARSED_FORMAT)


def test_a_damaged_or_foreign_copy_is_ignored(tmp_path):
    path = _schema(tmp_path)
    parsed = json.loads(path.read_bytes())
    codecache.read_json_object(path, write=True)
    copy = codecache.parsed_copy(path)
    good = copy.read_bytes()
    stamp = good[:len(codecache.PARSED_FORMAT) + 16]
    for bad in (stamp + b"\xff\xfe not marshal", stamp + good[len(stamp):-100],
                b"\x00\x01\x02\x03" + good[4:]):             # another interpreter's
        copy.write_bytes(bad)
        assert codecache.read_json_object(path, write=False) == parsed
    assert codecache.read_json_object(path, write=True) == parsed      # and written again
    assert copy.read_bytes() == good


def test_no_copy_is_written_where_bytecode_is_not(tmp_path, monkeypatch):
    path = _schema(tmp_path)
    monkeypatch.setattr("sys.dont_write_bytecode", True)
    assert codecache.read_json_object(path) == json.loads(path.read_bytes())
    assert not codecache.parsed_copy(path).exists()
