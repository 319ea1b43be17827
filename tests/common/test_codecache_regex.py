"""Regular expressions kept by the code cache (``kbroker/common/codecache.py``, issue 32
start-up): the programs ``re`` compiles a pattern's text into are kept in the cache file and
read back by another process, and the pattern objects made from them are those ``re``
makes without the cache. The checks that install the hook run in their own interpreter
(installing replaces ``re``'s compiler for the whole process); the others call the hook's
function directly."""
from __future__ import annotations

import marshal
import re

import pytest

from kbroker.common import codecache
from tests.support.fresh_python import run_json

_COMPILE = r'''
import json, re, sys
from pathlib import Path
from kbroker.common import codecache
path = Path(sys.argv[1])
codecache.install(path)
import argparse, platform

PATTERNS = [
    # the standard library's own, as its modules compile them
    (platform._libc_search.pattern, re.ASCII),                  # bytes, alternatives
    (platform._sys_version_parser.pattern, re.ASCII),
    (platform._os_release_line.pattern, 0),                     # named groups, backreference
    (argparse.ArgumentParser()._negative_number_matcher.pattern, 0),
    (r"(?P<key>[a-z_.]+)\s*=\s*(?P<value>.*)", 0),
    (r""" ^ (?P<host> [\w.-]+ )   # a host name
          : (?P<port> \d{1,5} ) $ # and its port""", re.VERBOSE),
    (r"(stra(?:ss|ß)e|σας)", re.IGNORECASE),                    # case folding beyond ASCII
    (r"\b\w+(?<=[a-z]{2})\b", re.ASCII),                        # lookbehind
    (r"(?<!-)\b(\d+)(?:\.(\d+))?(?!\.)", re.MULTILINE | re.DOTALL),
    (rb"(?i)kafka[-_](\d+)\.(\d+)", 0),
    (rb"(?<!\\)\$\{(?P<var>\w+)\}", re.MULTILINE),
]
SAMPLES = ["broker-1.example:9092", "log.dirs = /tmp/x y", "STRASSE Straße strasse ΣΑΣ σας",
           "abc de1 xy Ab", "-12 3.14 -.5 7.", "ID=ubuntu\nNAME=\"Ubuntu\"\nX='a\"",
           "3.11.2 (main, Apr 28 2025, 14:11:48) [GCC 12.2.0]",
           "GLIBC_2.36 libc.so.6 __libc_init Kafka_3.9 ${HOME} \\${NOT}"]


def describe(pattern):
    samples = [s.encode() for s in SAMPLES] if isinstance(pattern.pattern, bytes) else SAMPLES
    found = [[(m.span(), m.groups(), m.groupdict()) for m in pattern.finditer(s)]
             for s in samples]
    return repr([pattern.pattern, pattern.flags, pattern.groups, dict(pattern.groupindex),
                 found, [pattern.fullmatch(s) is not None for s in samples]])


re.purge()      # each pattern below reaches re's compiler, not re's own cache
out = {"patterns": []}
for text, flags in PATTERNS:
    cached = re.compile(text, flags)
    plain = codecache._RE_COMPILE(text, int(flags))     # re's compiler, no cache
    out["patterns"].append([describe(cached), describe(plain), cached == plain])
out["hooked"] = re._compiler.compile is codecache._regex_compiled
out["stats"] = codecache.statistics()
if len(sys.argv) > 2:
    codecache.save(path)
print(json.dumps(out))
'''


def test_patterns_from_the_file_are_those_re_compiles(tmp_path):
    path = tmp_path / "cache.bin"
    # no file: compiled through the hook, then written
    cold = run_json(_COMPILE, str(path), "save", seed="1")
    assert cold["hooked"] and path.exists()
    assert cold["stats"]["regexes_compiled"] >= len(cold["patterns"])
    warm = run_json(_COMPILE, str(path), seed="2")     # another process reads them back
    assert warm["hooked"]
    assert warm["stats"]["regexes_compiled"] == 0
    assert warm["stats"]["regexes_from_cache"] >= len(warm["patterns"])
    for cached, plain, equal in warm["patterns"]:
        # Pattern's == compares the flags, the text and the engine's program
        assert cached == plain and equal
    assert warm["patterns"] == cold["patterns"]
    # what the samples found, so that the comparison above is about something
    found = "".join(cached for cached, _, _ in warm["patterns"])
    assert "'host': 'broker-1.example', 'port': '9092'" in found
    assert "'Straße'" in found and "'ΣΑΣ'" in found and "b'2.36'" in found


@pytest.mark.parametrize("damage", [
    b"\xff not marshal",                                    # not readable
    marshal.dumps((32, [999, 1, 2], 0, {}, ())),            # a program the engine rejects
    marshal.dumps((32, 0)),                                 # not the engine's arguments
    marshal.dumps("text"),
], ids=["unreadable", "program rejected", "wrong arguments", "not a tuple"])
def test_a_damaged_entry_is_compiled_instead(monkeypatch, damage):
    key = (False, 0, "(?P<n>a+)b")
    monkeypatch.setattr(codecache, "_regex", {key: damage})
    monkeypatch.setattr(codecache, "_regex_misses", 0)
    pattern = codecache._regex_compiled("(?P<n>a+)b", 0)
    assert pattern == codecache._RE_COMPILE("(?P<n>a+)b", 0)
    assert pattern.match("aab").group("n") == "aa"
    assert codecache._regex_misses == 1 and type(codecache._regex[key]) is tuple
    # the entry compiled in its place is used from then on
    assert codecache._regex_compiled("(?P<n>a+)b", 0) == pattern
    assert codecache._regex_misses == 1


def test_str_and_bytes_and_flags_are_kept_apart(monkeypatch):
    monkeypatch.setattr(codecache, "_regex", {})
    monkeypatch.setattr(codecache, "_regex_misses", 0)
    text = codecache._regex_compiled("a.c", 0)
    raw = codecache._regex_compiled(b"a.c", 0)
    folded = codecache._regex_compiled("a.c", re.IGNORECASE.value)    # re passes an int
    assert codecache._regex_misses == 3 and len(codecache._regex) == 3
    assert text.match("abc") and raw.match(b"abc") and folded.match("ABC")
    assert not text.match("ABC")
    again = codecache._regex_compiled("a.c", 0), codecache._regex_compiled(b"a.c", 0)
    assert again == (text, raw)
    assert codecache._regex_misses == 3


def test_what_re_compiles_unusually_is_not_kept(monkeypatch, capsys):
    monkeypatch.setattr(codecache, "_regex", {})
    # DEBUG prints the program: left to re, which prints it
    codecache._regex_compiled("ab*", re.DEBUG)
    assert "MAX_REPEAT" in capsys.readouterr().out
    # an already parsed pattern (re.Scanner compiles its lexicon so)
    parsed = re._parser.parse("x|y", 0)
    assert codecache._regex_compiled(parsed, 0).match("y")
    assert codecache._regex == {}


def test_the_file_keeps_both_tables(tmp_path, monkeypatch):
    path = tmp_path / "cache.bin"
    code_key = ("exec", 0, "<snippet>", "x = 1")
    unused_key = ("exec", 0, "<snippet>", "y = 2")
    monkeypatch.setattr(codecache, "_code", {key: compile(key[3], key[2], key[0])
                                             for key in (code_key, unused_key)})
    monkeypatch.setattr(codecache, "_regex", {})
    monkeypatch.setattr(codecache, "_misses", 0)
    codecache._regex_compiled(r"k(\d+)", 0)
    codecache.save(path)
    (code, regex), _ = codecache._read(path)
    assert list(code) == [code_key, unused_key] and list(regex) == [(False, 0, r"k(\d+)")]
    monkeypatch.setattr(codecache, "_code", {})
    monkeypatch.setattr(codecache, "_regex", {})
    monkeypatch.setattr(codecache, "_mapped", None)
    assert codecache.load(path) == 3
    assert codecache._regex_compiled(r"k(\d+)", 0).match("k12").group(1) == "12"
    namespace = {}
    exec(codecache._compiled("x = 1", "<snippet>", "exec", 0), namespace)
    assert namespace["x"] == 1 and codecache._misses == 0
    # the file is mapped and only ever replaced by a rename: what it held stays readable,
    # and a save writes what was still unread in the mapping too
    codecache.replace_file(path, b"replaced")
    other = tmp_path / "again.bin"
    codecache.save(other)
    monkeypatch.setattr(codecache, "_code", {})
    monkeypatch.setattr(codecache, "_mapped", None)
    assert codecache.load(other) == 3
    exec(codecache._compiled("y = 2", "<snippet>", "exec", 0), namespace)
    assert namespace["y"] == 2 and codecache._misses == 0
    # a file of a format before (code only, no table of regular expressions; the tables
    # with the marshalled forms in them): ignored
    path.write_bytes(codecache._MAGIC + b"kbroker codecache 2\n" + marshal.dumps({code_key: b""}))
    assert codecache._read(path) is None
    path.write_bytes(codecache._HEADER.replace(b"codecache 4", b"codecache 3")
                     + marshal.dumps(({code_key: b""}, {})))
    assert codecache._read(path) is None


def test_what_a_process_keeps_is_bounded(monkeypatch):
    # a running broker compiles its clients' patterns too (a group's subscription...)
    monkeypatch.setattr(codecache, "_regex", {})
    monkeypatch.setattr(codecache, "_REGEX_KEPT", 2)
    patterns = [codecache._regex_compiled(f"topic-{i}.*", 0) for i in range(4)]
    assert [p.match(f"topic-{i}x") is not None for i, p in enumerate(patterns)] == [True] * 4
    assert list(codecache._regex) == [(False, 0, "topic-0.*"), (False, 0, "topic-1.*")]
    monkeypatch.setattr(codecache, "_regex", {})
    long = "a" * (codecache._REGEX_LONGEST + 1)
    assert codecache._regex_compiled(long, 0).fullmatch(long)
    assert codecache._regex == {}
