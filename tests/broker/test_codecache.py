"""The generated-code cache (``kbroker/common/codecache.py``, issue 32 start-up): what
dataclasses, namedtuple and attrs compile at import is kept in a file and read back, and
the classes built from the cached code behave as those built without it. Each check that
installs the hooks runs in its own interpreter (installing changes the ``dataclasses``,
``collections`` and ``attr._make`` modules of the process)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

from kbroker.common import codecache
from tests.support.fresh_python import run_json

_CLASSES = r'''
import json, sys
from pathlib import Path
from kbroker.common import codecache
path = Path(sys.argv[1])
codecache.install(path)
import dataclasses, collections, attr

@dataclasses.dataclass(frozen=True, order=True)
class Point:
    x: int
    y: int = 2

P = collections.namedtuple("P", "a b")

@attr.define
class Box:
    size: int = 0

@attr.frozen
class Key:              # hashable: attrs writes a per-process number into its __hash__
    name: str

@attr.frozen
class Empty:            # no hashed field: the number is folded into a tuple constant
    pass

import attr._make
type_hash = hash(attr._make._generate_unique_filename(Key, "hash"))
empty_hash = hash(attr._make._generate_unique_filename(Empty, "hash"))

# a message codec (kbroker/wire/codegen.py): reader and writer compiled, or read from the file
from kbroker.wire import messages
req = messages.MetadataRequest(topics=[messages.MetadataRequest.MetadataRequestTopic(name="t")],
                               allow_auto_topic_creation=True)
wire = req.encode(12)
back = messages.MetadataRequest.decode(wire, 12)

p = Point(1)
out = {"codec": [wire.hex(), [t.name for t in back.topics], back.allow_auto_topic_creation],
       "point": [repr(p), p == Point(1, 2), p < Point(2), hash(p) == hash(Point(1, 2))],
       "named": [repr(P(1, 2)), P(1, 2)._replace(b=3) == (1, 3)],
       "attrs": [repr(Box(3)), Box(3) == Box(3)],
       "hash": [hash(Key("k")) == hash((type_hash, "k")), hash(Key("k")) == hash(Key("k")),
                hash(Empty()) == hash((empty_hash,))],
       # the modules hooked before their body keep their ordinary loader
       "loaders": [type(m.__spec__.loader).__name__ for m in (attr._make, dataclasses)],
       "frozen": False}
try:
    p.x = 5
except dataclasses.FrozenInstanceError:
    out["frozen"] = True
out["stats"] = codecache.statistics()
if len(sys.argv) > 2:
    codecache.save(path)
print(json.dumps(out))
'''


def _run(path, *extra, seed: str = "1") -> dict:
    # string hashes differ between the runs
    return run_json(_CLASSES, str(path), *extra, seed=seed)


def test_classes_from_cached_code_behave_as_compiled_ones(tmp_path):
    path = tmp_path / "cache.bin"
    cold = _run(path, "save")              # no file: everything compiled, then written
    assert cold["stats"]["compiled"] > 0 and path.exists()
    warm = _run(path, seed="2")            # the same snippets read back, by another process
    assert warm["stats"]["compiled"] == 0
    assert {k: v for k, v in cold.items() if k != "stats"} == \
           {k: v for k, v in warm.items() if k != "stats"} == {
        "point": ["Point(x=1, y=2)", True, True, True],
        "named": ["P(a=1, b=2)", True],
        "attrs": ["Box(size=3)", True],
        "hash": [True, True, True],
        "codec": [cold["codec"][0], ["t"], True],
        "loaders": ["SourceFileLoader", "SourceFileLoader"],
        "frozen": True}


def test_the_cache_keys_on_everything_compile_depends_on(tmp_path):
    exec_ = codecache._exec_for({})
    before = codecache.statistics()["compiled"]
    ns1, ns2 = {}, {}
    exec_("def f(a, b=1):\n  return a + b\n", {}, ns1)
    exec_("def f(a, b=1):\n  return a + b\n", {}, ns2)
    assert codecache.statistics()["compiled"] == before + 1     # the second was a hit
    assert ns1["f"](1) == ns2["f"](1) == 2
    # the __future__ flags are part of the key: annotations stay objects or become text
    import __future__
    plain, future = {}, {}
    codecache._exec_for({})("def g(x: int): pass\n", {}, plain)
    codecache._exec_for({"annotations": __future__.annotations})("def g(x: int): pass\n", {}, future)
    assert plain["g"].__annotations__ == {"x": int}
    assert future["g"].__annotations__ == {"x": "int"}
    # what compile() makes is what the cache hands out
    code = codecache._compiled("x = 1\n", "<string>", "exec", 0)
    assert code == compile("x = 1\n", "<string>", "exec", dont_inherit=True)


def test_a_file_of_another_interpreter_or_damaged_is_ignored(tmp_path):
    path = tmp_path / "cache.bin"
    known = dict(codecache._code)
    path.write_bytes(b"\x00\x01\x02\x03" + b"not marshal data")     # another magic number
    assert codecache.load(path) == 0
    path.write_bytes(codecache._HEADER + b"\xff\xfe")                 # damaged
    assert codecache.load(path) == 0
    # the older format (keyed by a digest of the text, without the format line): ignored,
    # so that the next clean stop replaces it
    old_key = ("exec", 0, "<string>", bytes(20))
    path.write_bytes(codecache._MAGIC + codecache.marshal.dumps({old_key: b"code"}))
    assert codecache.load(path) == 0
    assert codecache.load(tmp_path / "missing.bin") == 0
    assert codecache._code == known                                   # nothing added


def test_a_damaged_entry_is_compiled_instead(tmp_path):
    path = tmp_path / "cache.bin"
    key = ("exec", 0, "<string>", "y = 2\n")
    damaged = b"\xff not marshal"
    index = codecache.marshal.dumps(({key: len(damaged)}, {}))     # at offset 0 of the data
    path.write_bytes(codecache._HEADER + len(index).to_bytes(4, "little") + index + damaged)
    assert codecache.load(path) >= 1
    before = codecache.statistics()["compiled"]
    ns = {}
    codecache._exec_for({})("y = 2\n", ns)
    assert ns["y"] == 2 and codecache.statistics()["compiled"] == before + 1


def _serve_once(tmp_path, cache, run: int) -> str:
    """A real ``kbroker serve`` with its cache file at ``cache``: started, stopped at its
    ready line by SIGINT (a clean stop); its log."""
    from tests.support.broker_proc import free_port
    env = {**os.environ, "KBROKER_CODECACHE_FILE": str(cache), "PYTHONUNBUFFERED": "1",
           "PYTHONHASHSEED": str(run)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbroker", "serve", "--data-dir", str(tmp_path / f"data{run}"),
         "--listen", f"127.0.0.1:{free_port()}", "--log-level", "DEBUG"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        cwd=tmp_path, env=env)
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line)
            if "kbroker ready" in line:
                proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return "".join(lines)


def test_a_start_without_the_file_writes_it_for_the_next(tmp_path):
    # as after `pip install kbroker`: no build step wrote the cache
    cache = tmp_path / "pycache" / "codecache.bin"
    first = _serve_once(tmp_path, cache, 1)
    assert "0 snippets cached" in first
    written = re.search(r"generated-code cache: (\d+) snippets compiled by this start written",
                        first)
    assert written and int(written.group(1)) > 100 and cache.exists(), first
    # what was written: the code and the regular expressions the start compiled
    (code, regexes), _ = codecache._read(cache)
    assert len(regexes) > 0 and len(code) + len(regexes) == int(written.group(1))
    # the next start reads them back, compiles nothing new, so writes nothing
    second = _serve_once(tmp_path, cache, 2)
    cached = re.search(r"generated code: (\d+) snippets cached", second)
    assert cached and int(cached.group(1)) == len(code), second
    assert "written to" not in second


def test_a_start_that_read_a_file_never_rewrites_it(tmp_path, monkeypatch):
    path = tmp_path / "cache.bin"
    key = ("exec", 0, "<snippet>", "x = 1")
    monkeypatch.setattr(codecache, "_code", {key: compile("x = 1", "<snippet>", "exec")})
    monkeypatch.setattr(codecache, "_regex", {})
    monkeypatch.setattr(codecache, "_regex_misses", 0)
    monkeypatch.setattr(codecache, "_installed", True)
    monkeypatch.setattr(codecache, "_misses", 3)          # some snippets compiled...
    monkeypatch.setattr(codecache, "_read_a_file", True)  # ...by a start that had a file
    assert codecache.save_if_compiled(path) == 0 and not path.exists()
    monkeypatch.setattr(codecache, "_read_a_file", False)  # no file at start: written
    assert codecache.save_if_compiled(path) == 3
    monkeypatch.setattr(codecache, "_code", {})            # the next start reads it back
    assert codecache.load(path) == 1 and list(codecache._code) == [key]
    # a start that compiled regular expressions only writes the file too
    monkeypatch.setattr(codecache, "_misses", 0)
    monkeypatch.setattr(codecache, "_regex_misses", 2)
    path.unlink()
    assert codecache.save_if_compiled(path) == 2 and path.exists()
    monkeypatch.setattr(codecache, "_installed", False)    # a broker in process: never
    path.unlink()
    assert codecache.save_if_compiled(path) == 0 and not path.exists()
