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
it the same way (:func:`read_json_object`, at the end of this module).

Rules kept:
- The same code as without the cache: the key is everything ``compile`` depends on (the
  source text, the name, the mode and the ``__future__`` flags the calling module would
  have passed on), so a snippet changed by a new Python, attrs or class definition simply
  misses and is compiled as before. The text itself is the key, not a digest of it: a start
  looks up ~640 snippets, and hashing each with BLAKE2b was ~4 M instructions, against
  ~0.3 M for Python's own string hash and reading the ~0.4 MB of text with the file.
  The file is tagged with the interpreter's byte-code magic number and this module's format;
  another interpreter's file, or an older format's, is ignored (and replaced at the next
  clean stop). One
  exception, exact too: attrs writes into each ``__hash__`` the ``hash()`` of a name, which
  differs per process (randomized string hashes); that one number is keyed as a stand-in
  and put back into the cached code.
- Written at build time: ``python -m kbroker.node.codecache_build`` (``make setup``, the
  image's app stage) starts a node in a temporary directory, loads every API module and
  writes ``__pycache__/codecache.<cache tag>.bin`` beside this module (an ignored folder,
  as ``.pyc`` files are). A package installed by ``pip install kbroker`` has no build step
  of its own, so a ``kbroker serve`` that found no usable file writes one at its clean exit
  with what it compiled (:func:`save_if_compiled`), as Python writes a ``.pyc`` on first
  import: the next start reads it back (without a file, a start costs ~1.5x the
  instructions). A start that read a file never rewrites it (no churn, no growth from
  restarts). Where the package's folder is not writable nothing is written, said at debug
  level; ``KBROKER_CODECACHE_FILE`` names another file. Without the file, or with one that
  cannot be read, everything is compiled as usual.
- Only ``kbroker serve`` installs it (the CLI, before its first heavy import); a broker
  started in process (tests) compiles as it always did.
"""
from __future__ import annotations

import __future__
import builtins
import marshal
import os
import re
import struct
import sys
from importlib._bootstrap_external import MAGIC_NUMBER as _MAGIC
from pathlib import Path
from types import CodeType as _CodeType

_CACHE_FILE = Path(os.environ.get("KBROKER_CODECACHE_FILE") or (
    Path(__file__).with_name("__pycache__") / f"codecache.{sys.implementation.cache_tag}.bin"))

# (mode, flags, filename, source) -> code, or its marshalled bytes until first used
# (a start uses about half of what the file holds: each entry is unmarshalled on its hit)
_code: dict[tuple, object] = {}
# what a file starts with: the byte-code magic number, then this module's format (2: keyed
# by the text; 1, untagged, by its BLAKE2b digest)
_HEADER = _MAGIC + b"kbroker codecache 2\n"
_misses = 0
_installed = False
_read_a_file = False      # install() found a usable file: save_if_compiled leaves it alone
_ANNOTATIONS = __future__.annotations

# attrs writes a per-process number into every ``__hash__`` it generates (the ``hash()`` of
# a file name, and string hashes are randomized per process): the snippet is looked up with
# the number replaced by this stand-in, and the stand-in in the code replaced by the number
_HASH_LINE = re.compile(r"(hash\(\(\n[ ]+)(-?[0-9]+),\n")
_STAND_IN = 0x6B62726F6B6572     # b"kbroker"


def _compiled(source: str, filename: str, mode: str, flags: int):
    global _misses
    key = (mode, flags, filename, source)
    code = _code.get(key)
    if type(code) is bytes:
        try:
            code = marshal.loads(code)
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


def load(path: Path = _CACHE_FILE) -> int:
    """Read the cache file into memory; the number of code objects (0 without a usable file)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(_HEADER):
            return 0
        table = marshal.loads(memoryview(data)[len(_HEADER):])
    except (OSError, ValueError, EOFError, TypeError):
        return 0
    if isinstance(table, dict):
        for key, code in table.items():
            if type(code) is bytes:
                _code.setdefault(key, code)
    return len(_code)


def install(path: Path | None = _CACHE_FILE) -> None:
    """Load the cache (none with ``path`` None: the build starts afresh) and hook the
    generators of code: at once in those already imported, before their body in the others
    (so call it early); idempotent."""
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


def statistics() -> dict:
    return {"code_objects": len(_code), "compiled": _misses, "file": str(_CACHE_FILE)}


def save_if_compiled(path: Path = _CACHE_FILE) -> int:
    """At a clean exit of ``kbroker serve`` that found no usable file: write what this process
    compiled, so that the next start reads it back; the number written (0: nothing).
    ``OSError`` when the file cannot be written (a read-only installation)."""
    if not _installed or _read_a_file or not _misses:
        return 0
    save(path)
    return _misses


def save(path: Path = _CACHE_FILE) -> None:
    """Write every code object known now (atomically: a reader sees the old file or this)."""
    table = {key: code if type(code) is bytes else marshal.dumps(code)
             for key, code in _code.items()}
    _replace(path, _HEADER + marshal.dumps(table))


def _replace(path: Path, data: bytes) -> None:
    """``path`` replaced by ``data`` through a temporary file of this process: a reader (or
    another start writing the same file) sees the old file or a whole new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- parsed JSON
# A JSON file read at every start (the message schema, kbroker/wire/model.py) is kept
# parsed beside it, as Python keeps a module's byte-code: parsing the schema's 290 KB was
# ~15 M instructions of every start, reading its marshalled form back ~7 M. The copy starts
# with the interpreter's byte-code magic number (marshal's format is the interpreter's),
# this format's line, and the JSON file's modification time in nanoseconds and size (a
# .pyc's check, finer): any difference, or a copy that cannot be read, and the JSON is
# parsed instead (and the copy written again, unless sys.dont_write_bytecode).
# `python -m kbroker.node.codecache_build` (make setup, the image's build) writes it.
PARSED_FORMAT = _MAGIC + b"kbroker schema 1\n"


def parsed_copy(path: Path) -> Path:
    """Where the parsed copy of the JSON file ``path`` is kept."""
    path = Path(path)
    return path.parent / "__pycache__" / f"{path.name}.{sys.implementation.cache_tag}.marshal"


def _stamp(st: os.stat_result) -> bytes:
    return PARSED_FORMAT + struct.pack("<QQ", st.st_mtime_ns, st.st_size)


def read_json_object(path: Path, *, write: bool | None = None) -> dict:
    """The JSON object in the file ``path``: its parsed copy's when that copy was written from
    this very file, else the JSON parsed (and, with ``write`` -- by default unless
    ``sys.dont_write_bytecode`` -- the copy written for the next start; nothing where it
    cannot be written)."""
    try:
        stamp = _stamp(os.stat(path))
        with open(parsed_copy(path), "rb") as f:
            data = f.read()
        if data.startswith(stamp):
            raw = marshal.loads(memoryview(data)[len(stamp):])
            if type(raw) is dict:
                return raw
    except (OSError, ValueError, EOFError, TypeError):
        pass
    import json
    with open(path, "rb") as f:
        stamp = _stamp(os.fstat(f.fileno()))
        raw = json.loads(f.read())
    if write if write is not None else not sys.dont_write_bytecode:
        try:
            _replace(parsed_copy(path), stamp + marshal.dumps(raw))
        except OSError:         # a read-only installation: parsed at every start
            pass
    return raw
