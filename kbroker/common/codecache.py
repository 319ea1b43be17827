"""Compiled code of the methods that class decorators generate, kept between starts.

A dataclass gets its ``__init__``, ``__repr__``, ``__eq__``... by writing their source and
``exec``-ing it (``dataclasses._create_fn``), attrs (under trio) by ``compile``-ing its own,
and ``collections.namedtuple`` its ``__new__`` by ``eval``. Parsing and compiling those
few hundred snippets was about a third of the instructions of ``kbroker serve`` up to its
first acknowledged produce (issue 32, start-up; callgrind: ``_PyParser_ASTFromString``
reached through ``PyRun_StringFlags``). This module keeps their code objects in a file, as
Python keeps a module's in its ``.pyc``: :func:`install` puts a caching ``exec``/``eval``/
``compile`` into the namespaces of ``dataclasses``, ``collections`` and ``attr._make`` (a
module's global shadows the builtin of the same name), which look the snippet up by its
exact text, file name, mode and compiler flags and compile only what the file lacks. A
module not yet imported gets its twin before its body runs (a finder first on
``sys.meta_path`` until then), so the classes attrs declares for itself when trio imports
it come from the file too. The message codecs kbroker generates (``kbroker/wire/codegen.py``:
a reader or writer per message and version, a class's ``__init__``) are looked up the same
way, by their text. The message schema's JSON, read at every start, is kept parsed beside
it the same way, one entry of its list at a time (:func:`read_json_entries`, at the end of this
module).

Regular expressions too: ``re`` keeps compiled patterns for the life of a process only, and
turning a pattern's text into the engine's program is pure Python (``re._parser`` and
``re._compiler``; the ~30 patterns the standard library, idna and kbroker compile in a start
were ~17 M instructions). :func:`install` also replaces ``re._compiler.compile`` (what
``re.compile`` and the module-level functions reach on a miss of ``re``'s own cache) with
:func:`_regex_compiled`, which keeps, per pattern (its text, str or bytes) and flags, the
arguments ``re`` passes to ``_sre.compile`` -- final flags, program, number of groups,
group names both ways -- and on the next start makes the pattern object from them with
``_sre.compile`` alone. An entry that cannot be read, or whose program the engine rejects
(it checks every program it is given), is compiled afresh. Only patterns compiled after
:func:`install` go through it. A warning the parser gives for a
pattern (a possible nested set...) comes only from the start that compiled it. What a
process keeps is bounded: past that, the patterns a running broker compiles for its
clients are left to ``re``.

Rules kept:
- The same code as without the cache: the key is everything ``compile`` depends on (the
  source text, the name, the mode and the ``__future__`` flags the calling module would
  have passed on), so a snippet changed by a new Python, attrs or class definition simply
  misses and is compiled as before. The text itself is the key, not a digest of it: a start
  looks up ~640 snippets, and hashing each with BLAKE2b was ~4 M instructions, against
  ~0.3 M for Python's own string hash and reading the ~0.4 MB of text with the file.
  The file is tagged with the interpreter's byte-code magic number and this module's format
  (with the regular expression engine's format number, code unit and repeat limit, which its
  programs depend on); another interpreter's file, or an older format's, is ignored (and
  replaced at the next clean stop). A regular expression is keyed by all ``re`` compiles it
  from: its type, its text and its flags. One
  exception, exact too: attrs writes into each ``__hash__`` the ``hash()`` of a name, which
  differs per process (randomized string hashes); that one number is keyed as a stand-in
  and put back into the cached code.
- Written at build time: ``python -m kbroker.node.codecache_build`` (``make setup``, the
  image's app stage) starts a node in a temporary directory, loads every API module, adds
  what a real ``kbroker serve`` compiles (one started with an empty file of its own) and
  writes ``__pycache__/codecache.<cache tag>.bin`` beside this module (an ignored folder,
  as ``.pyc`` files are). A package installed by ``pip install kbroker`` has no build step
  of its own, so a ``kbroker serve`` that found no usable file writes one at its clean exit
  with what it compiled (:func:`save_if_compiled`), as Python writes a ``.pyc`` on first
  import: the next start reads it back (without a file, a start costs ~1.5x the
  instructions); a start that compiled only regular expressions writes it too. A start
  that read a file never rewrites it (no churn, no growth from restarts). Where the
  package's folder is not writable nothing is written, said at debug level;
  ``KBROKER_CODECACHE_FILE`` names another file. Without the file, or with one that cannot
  be read, everything is compiled as usual.
- Only ``kbroker serve`` installs it (``kbroker/__main__.py``, before the command line's
  own imports, so their patterns and classes come from the file too; the CLI's ``serve``
  again, which does nothing then); a broker started in process (tests) compiles as it
  always did.
"""
from __future__ import annotations

import __future__
import _sre
import builtins
import marshal
import os
import re
import struct
import sys
from collections.abc import Mapping
from importlib._bootstrap_external import MAGIC_NUMBER as _MAGIC
from pathlib import Path
from types import CodeType as _CodeType

from kbroker.common.filemap import indexed_bytes, map_indexed, piece, positions

_CACHE_FILE = Path(os.environ.get("KBROKER_CODECACHE_FILE") or (
    Path(__file__).with_name("__pycache__") / f"codecache.{sys.implementation.cache_tag}.bin"))

# (mode, flags, filename, source) -> code, or until first used where its marshalled bytes
# are: an int, ``offset << 32 | length`` in the mapped file (_mapped), or the bytes
# themselves (a code object compiled here and saved, an entry of a second file loaded)
# (a start uses about half of what the file holds: each entry is unmarshalled on its hit)
_code: dict[tuple, object] = {}
# (pattern is bytes, flags, pattern) -> what re's compiler hands to ``_sre.compile`` after
# the pattern, or until first used where its marshalled form is (as in _code)
_regex: dict[tuple, object] = {}
# the data of the first file loaded, mapped (kbroker.common.filemap): kept for the life of
# the process, since a class made later (a module imported on first use) may want its code
_mapped: memoryview | None = None
# what a file starts with: the byte-code magic number, then this module's format (4: the
# length of an index of code and one of regular expressions, the index, then each entry's
# marshalled form where the index says; 3: the same tables with the marshalled forms in
# them; both with the regular expression engine's own format number, code unit and repeat
# limit; 2: code only, keyed by the text; 1, untagged, by its BLAKE2b digest)
_HEADER = _MAGIC + b"kbroker codecache 4 sre %d %d %d\n" % (
    getattr(_sre, "MAGIC", 0), getattr(_sre, "CODESIZE", 0), getattr(_sre, "MAXREPEAT", 0))
_misses = 0
_regex_misses = 0
_regex_hits = 0
_installed = False
_read_a_file = False      # install() found a usable file: save_if_compiled leaves it alone
_ANNOTATIONS = __future__.annotations

# attrs writes a per-process number into every ``__hash__`` it generates (the ``hash()`` of
# a file name, and string hashes are randomized per process): the snippet is looked up with
# the number replaced by this stand-in, and the stand-in in the code replaced by the number
_HASH_LINE = re.compile(r"(hash\(\(\n[ ]+)(-?[0-9]+),\n")
_STAND_IN = 0x6B62726F6B6572     # b"kbroker"


def _unmarshalled(value):
    """An entry's object from where its marshalled form is (an int: in the mapped file)."""
    return marshal.loads(piece(_mapped, value) if type(value) is int else value)


def _compiled(source: str, filename: str, mode: str, flags: int):
    global _misses
    key = (mode, flags, filename, source)
    code = _code.get(key)
    if type(code) is int or type(code) is bytes:
        try:
            code = _unmarshalled(code)
        except (ValueError, EOFError, TypeError):   # a damaged entry: compiled instead
            code = None
        if type(code) is not _CodeType:
            code = None
        _code[key] = code
    if code is None:
        _misses += 1
        code = _code[key] = builtins.compile(source, filename, mode, flags, dont_inherit=True)
    return code


def _compiled_attrs(source: str, filename: str, mode: str, flags: int):
    """:func:`_compiled` for attrs' snippets, whose ``__hash__`` carries a number that differs
    in every process."""
    found = _HASH_LINE.findall(source) if "hash((" in source else ()
    if len(found) != 1 or str(_STAND_IN) in source:
        return _compiled(source, filename, mode, flags)
    number = int(found[0][1])
    code = _compiled(_HASH_LINE.sub(rf"\g<1>{_STAND_IN},\n", source), filename, mode, flags)
    return _with_constant(code, _STAND_IN, number)


def _with_constant(code, old: int, new: int):
    """``code`` with the constant ``old`` replaced by ``new``, in nested code objects and in
    folded tuples too (``hash((number,))`` of a class without hashed fields is one constant)."""
    def swap(c):
        if type(c) is int:
            return new if c == old else c
        if type(c) is tuple:
            return tuple(swap(x) for x in c)
        if type(c) is _CodeType:
            return _with_constant(c, old, new)
        return c
    consts = tuple(swap(c) for c in code.co_consts)
    return code.replace(co_consts=consts) if consts != code.co_consts else code


def _flags(namespace: dict) -> int:
    """The compiler flags a compile called from the module of ``namespace`` inherits from its
    ``__future__`` imports (``annotations`` is the one that changes generated code)."""
    feature = namespace.get("annotations")
    return _ANNOTATIONS.compiler_flag if feature is _ANNOTATIONS else 0


def _exec_for(namespace: dict):
    def exec(source, globals=None, locals=None, /, **kw):   # noqa: A001 - shadows on purpose
        if type(source) is str:
            source = _compiled(source, "<string>", "exec", _flags(namespace))
        return builtins.exec(source, globals, locals, **kw)
    return exec


def _eval_for(namespace: dict):
    def eval(source, globals=None, locals=None, /):          # noqa: A001
        if type(source) is str:
            source = _compiled(source, "<string>", "eval", _flags(namespace))
        return builtins.eval(source, globals, locals)
    return eval


def _compile_for(namespace: dict):
    def compile(source, filename, mode, flags_=0, dont_inherit=False, optimize=-1, **kw):  # noqa: A001
        if type(source) is str and not flags_ and not dont_inherit and optimize == -1 and not kw:
            return _compiled_attrs(source, os.fsdecode(filename), mode, _flags(namespace))
        return builtins.compile(source, filename, mode, flags_, dont_inherit, optimize, **kw)
    return compile


# module -> its caching twins: (the builtin a twin shadows there, the maker of the twin)
_HOOKS = {"dataclasses": (("exec", _exec_for),), "collections": (("eval", _eval_for),),
          "attr._make": (("compile", _compile_for),),
          # a string annotation evaluated by typing (``ForwardRef`` compiles its text)
          "typing": (("compile", _compile_for),),
          # the message codecs (kbroker/wire/codegen.py), each compiled on its first use,
          # and the message classes' __init__, each run from text on its first construction
          "kbroker.wire.codegen": (("compile", _compile_for), ("exec", _exec_for))}


def _hook(module, twins) -> None:
    for name, make in twins:
        setattr(module, name, make(vars(module)))


class _HookBeforeBody:
    """A finder first on ``sys.meta_path`` until each module of ``pending`` is imported: it
    puts the caching twins into the module's namespace before the module's body runs, so
    the classes the module itself declares (attrs' own validators, converters...) are made
    from cached code too. The module keeps its ordinary loader and spec."""

    def __init__(self, pending: dict):
        self.pending = pending

    def find_spec(self, fullname, path=None, target=None):
        twins = self.pending.pop(fullname, None)
        if twins is None:
            return None
        meta = sys.meta_path
        # the spec the rest of the meta path gives (kbroker.common.modimage's finder, if
        # installed, then PathFinder)
        rest = meta[meta.index(self) + 1:] if self in meta else meta
        if not self.pending and self in meta:
            meta.remove(self)
        spec = None
        for finder in rest:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _InjectingLoader(spec.loader, twins)
        return spec


class _InjectingLoader:
    def __init__(self, loader, twins):
        self.loader, self.twins = loader, twins

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__spec__.loader = module.__loader__ = self.loader
        _hook(module, self.twins)
        self.loader.exec_module(module)


# re's compiler: a pattern's text parsed and turned into the program of the regular
# expression engine in pure Python (``re._parser.parse``, ``re._compiler._code``), about
# half a million instructions a pattern; the engine's ``_sre.compile`` then makes the
# pattern object from the program. The cached twin of ``re._compiler.compile`` keeps those
# arguments of ``_sre.compile``. Private API of the standard library: without it, no twin.
try:
    from re import _compiler as _re_compiler, _parser as _re_parser
    _RE_COMPILE = _re_compiler.compile
    _re_code, _re_parse, _sre_compile = _re_compiler._code, _re_parser.parse, _sre.compile
    _RE_DEBUG = _re_compiler.SRE_FLAG_DEBUG
except (ImportError, AttributeError):
    _RE_COMPILE = None
# what one process keeps is bounded: a start compiles ~50 patterns, but a running broker
# compiles its clients' too (a consumer group's subscription, ListTransactions' filter, a
# schema's): past this many, or longer than this, a pattern is left to re and not kept
_REGEX_KEPT = 256
_REGEX_LONGEST = 4096


def _regex_compiled(pattern, flags=0):
    """``re._compiler.compile`` through the cache: the pattern object made by ``_sre.compile``
    from the program kept for this pattern and these flags, else compiled as ``re`` does
    (its steps taken here, so that what is kept is what was used) and kept. A parsed
    pattern (``re.Scanner``), flags that are not a plain ``int`` and ``re.DEBUG``, which
    prints the program, go to ``re`` unchanged."""
    global _regex_misses, _regex_hits
    kind = type(pattern)
    if (kind is not str and kind is not bytes) or type(flags) is not int or flags & _RE_DEBUG:
        return _RE_COMPILE(pattern, flags)
    key = (kind is bytes, flags, pattern)      # the kind first: b"a" is never compared to "a"
    args = _regex.get(key)
    if args is not None:
        try:
            if type(args) is int or type(args) is bytes:
                args = _regex[key] = _unmarshalled(args)
            compiled = _sre_compile(pattern, *args)
            _regex_hits += 1
            return compiled
        except (ValueError, EOFError, TypeError, RuntimeError, OverflowError):
            pass        # a damaged entry (the engine checks the program): compiled instead
    elif len(_regex) >= _REGEX_KEPT or len(pattern) > _REGEX_LONGEST:
        return _RE_COMPILE(pattern, flags)
    parsed = _re_parse(pattern, flags)
    # before the state is read, as re does; the opcodes are named int subclasses, which
    # marshal does not take: the same numbers as plain ints (the engine copies them as such)
    code = list(map(int, _re_code(parsed, flags)))
    state = parsed.state
    indexgroup = [None] * state.groups
    for name, index in state.groupdict.items():
        indexgroup[index] = name
    args = (flags | state.flags, code, state.groups - 1, state.groupdict, tuple(indexgroup))
    compiled = _sre_compile(pattern, *args)
    _regex[key] = args
    _regex_misses += 1
    return compiled


def _read(path: Path):
    """The index of the cache file ``path`` and its data, mapped: ((code, regular
    expressions), data), each index entry's value ``offset << 32 | length`` of its
    marshalled form in the data; None without a usable file."""
    found = map_indexed(path, _HEADER)
    if found is None:
        return None
    tables = found[0]
    if type(tables) is not tuple or len(tables) != 2 or not all(type(t) is dict for t in tables):
        return None
    return found


def load(path: Path = _CACHE_FILE) -> int:
    """Map the cache file (the first one loaded; a further one, as the build loads another
    process's, is copied into memory); the number of entries known then, code objects and
    regular expressions (0 without a usable file)."""
    global _mapped
    found = _read(path)
    if found is None:
        return 0
    tables, data = found
    end = len(data)
    for table, known in zip(tables, (_code, _regex)):
        for key, value in table.items():
            # span(value)[1] > end, written out: ~950 entries at every start
            if type(value) is not int or (value >> 32) + (value & 0xFFFFFFFF) > end:
                continue
            if _mapped is None:
                known.setdefault(key, value)
            elif key not in known:
                known[key] = bytes(piece(data, value))
    if _mapped is None:
        _mapped = data
    return len(_code) + len(_regex)


def install(path: Path | None = _CACHE_FILE) -> None:
    """Load the cache (none with ``path`` None: the build starts afresh) and hook the
    generators of code: at once in those already imported, before their body in the others
    (so call it early), and ``re``'s compiler for every pattern compiled from now on;
    idempotent."""
    global _installed, _read_a_file
    if _installed:
        return
    _installed = True
    if path is not None:
        _read_a_file = load(path) > 0
    pending = {}
    for module_name, twins in _HOOKS.items():
        module = sys.modules.get(module_name)
        if module is None:
            pending[module_name] = twins
        else:
            _hook(module, twins)
    if pending:
        sys.meta_path.insert(0, _HookBeforeBody(pending))
    if _RE_COMPILE is not None:
        _re_compiler.compile = _regex_compiled


def statistics() -> dict:
    return {"code_objects": len(_code), "compiled": _misses, "regexes": len(_regex),
            "regexes_compiled": _regex_misses, "regexes_from_cache": _regex_hits,
            "file": str(_CACHE_FILE)}


def save_if_compiled(path: Path = _CACHE_FILE) -> int:
    """At a clean exit of ``kbroker serve`` that found no usable file: write what this process
    compiled, so that the next start reads it back; the number written (0: nothing).
    ``OSError`` when the file cannot be written (a read-only installation)."""
    compiled = _misses + _regex_misses
    if not _installed or _read_a_file or not compiled:
        return 0
    save(path)
    return compiled


def save(path: Path = _CACHE_FILE) -> None:
    """Write every code object and regular expression known now (atomically: a reader sees
    the old file or this)."""
    def raw(value) -> bytes:
        if type(value) is int:
            return bytes(piece(_mapped, value))
        return value if type(value) is bytes else marshal.dumps(value)

    chunks = [raw(value) for known in (_code, _regex) for value in known.values()]
    where = iter(positions(chunks))
    tables = tuple({key: next(where) for key in known} for known in (_code, _regex))
    replace_file(path, indexed_bytes(_HEADER, tables, chunks))


def replace_file(path: Path, data: bytes) -> None:
    """``path`` replaced by ``data`` through a temporary file of this process: a reader (or
    another start writing the same file) sees the old file or a whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- parsed JSON
# A JSON file read at every start (the message schema, kbroker/wire/model.py) is kept
# parsed beside it, as Python keeps a module's byte-code: parsing the schema's 290 KB was
# ~15 M instructions of every start, reading its marshalled form back ~7 M. The copy is
# kept per entry of the object's list (a message definition each): a start looks up only
# the few it builds (6 of the schema's 269 before its ready line) and a handful of members
# of every entry (a message's type, API key, versions), kept in the copy's index; the rest
# of an entry is unmarshalled on its first lookup. The copy starts with the interpreter's
# byte-code magic number (marshal's format is the interpreter's), this format's line with
# what it was written for (the list, the key, the members in the index), and the JSON
# file's modification time in nanoseconds and size (a .pyc's check, finer): any
# difference, or a copy that cannot be read, and the JSON is parsed instead (and the copy
# written again, unless sys.dont_write_bytecode). It is mapped, like the code cache; an
# entry that cannot be read from it is taken from the JSON parsed then.
# `python -m kbroker.node.codecache_build` (make setup, the image's build) writes it.
PARSED_FORMAT = _MAGIC + b"kbroker json entries 1 "


def parsed_copy(path: Path) -> Path:
    """Where the parsed copy of the JSON file ``path`` is kept."""
    path = Path(path)
    return path.parent / "__pycache__" / f"{path.name}.{sys.implementation.cache_tag}.marshal"


def _stamp(st: os.stat_result, shape: bytes) -> bytes:
    return PARSED_FORMAT + shape + struct.pack("<QQ", st.st_mtime_ns, st.st_size)


class JsonEntries(Mapping):
    """The objects of one list of a JSON file's object, by one of their members, in the
    file's order (:func:`read_json_entries`); each read from the parsed copy on its first
    lookup, and :meth:`light` answers the members kept in the index without that."""

    def __init__(self, path: Path, shape: tuple, index: dict, data, full: dict,
                 write: bool | None = None):
        # shape: (list_key, key, light); index: key -> (the light members, offset << 32 |
        # length in data); full: key -> the whole object, for those read so far (all of
        # them when the JSON was parsed); write: the reading's ``write``, which also decides
        # whether a copy found damaged on a lookup is written again
        self._path, self._shape, self._index, self._data, self._full, self._write = (
            path, shape, index, data, full, write)

    def light(self, key) -> dict:
        """The members of entry ``key`` kept in the index (those it has of the ones asked for
        when reading)."""
        return self._index[key][0]

    def __getitem__(self, key):
        entry = self._full.get(key)
        if entry is None:
            where = self._index[key][1]
            try:
                entry = marshal.loads(piece(self._data, where))
            except (ValueError, EOFError, TypeError):
                entry = None
            if type(entry) is not dict:
                # a damaged entry: every entry from the JSON itself, and the copy written
                # again as the reading's ``write`` says (as for a copy that cannot be read)
                parsed = _parse_json_entries(self._path, *self._shape, write=self._write)
                self._full, self._data = parsed._full, None
                entry = self._full[key]
            self._full[key] = entry
        return entry

    def __contains__(self, key) -> bool:
        return key in self._index

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def _shape_line(list_key: str, key: str, light: tuple) -> bytes:
    return ("%s %s %s\n" % (list_key, key, " ".join(light))).encode()


def read_json_entries(path: Path, list_key: str, key: str, light: tuple[str, ...], *,
                      write: bool | None = None) -> JsonEntries:
    """The objects of the list ``list_key`` in the JSON object of the file ``path``, by their
    member ``key``, with the members ``light`` kept apart (:meth:`JsonEntries.light`): from
    the parsed copy when it was written from this very file for this same reading, else
    from the JSON parsed (and, with ``write`` -- by default unless
    ``sys.dont_write_bytecode`` -- the copy written for the next start; nothing where it
    cannot be written)."""
    path = Path(path)
    try:
        found = map_indexed(parsed_copy(path),
                            _stamp(os.stat(path), _shape_line(list_key, key, light)))
    except OSError:
        found = None
    if found is not None and type(found[0]) is dict:
        return JsonEntries(path, (list_key, key, light), found[0], found[1], {}, write)
    return _parse_json_entries(path, list_key, key, light, write=write)


def _parse_json_entries(path: Path, list_key: str, key: str, light: tuple, *,
                        write: bool | None) -> JsonEntries:
    import json
    with open(path, "rb") as f:
        stamp = _stamp(os.fstat(f.fileno()), _shape_line(list_key, key, light))
        objects = json.loads(f.read())[list_key]
    full = {o[key]: o for o in objects}
    index = {name: ({k: o[k] for k in light if k in o}, 0) for name, o in full.items()}
    if write if write is not None else not sys.dont_write_bytecode:
        chunks = [marshal.dumps(o) for o in full.values()]
        index = {name: (light_members, where) for (name, (light_members, _)), where
                 in zip(index.items(), positions(chunks))}
        try:
            replace_file(parsed_copy(path), indexed_bytes(stamp, index, chunks))
        except OSError:         # a read-only installation: parsed at every start
            pass
    return JsonEntries(path, (list_key, key, light), index, None, full, write)
