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
exact text, file name, mode and compiler flags and compile only what the file lacks.

Rules kept:
- The same code as without the cache: the key is everything ``compile`` depends on (the
  source text, the name, the mode and the ``__future__`` flags the calling module would
  have passed on; the text by its BLAKE2b digest), so a snippet changed by a new Python,
  attrs or class definition simply misses and is compiled as before. The file is tagged with the interpreter's byte-code
  magic number; another interpreter's file is ignored.
- Written at build time, not by a running broker: ``python -m kbroker.node.codecache_build``
  (``make setup``) starts a node in a temporary directory, loads every API module and
  writes ``__pycache__/codecache.<cache tag>.bin`` beside this module (an ignored folder,
  as ``.pyc`` files are). Without the file, or with one that cannot be read, everything is
  compiled as usual.
- Only ``kbroker serve`` installs it (the CLI, before its first heavy import); a broker
  started in process (tests) compiles as it always did.
"""
from __future__ import annotations

import builtins
import importlib.util
import marshal
import os
import sys
from hashlib import blake2b
from pathlib import Path

_CACHE_FILE = Path(__file__).with_name("__pycache__") / \
    f"codecache.{sys.implementation.cache_tag}.bin"
_MAGIC = importlib.util.MAGIC_NUMBER

_code: dict[tuple, object] = {}     # (mode, flags, filename, digest of source) -> code
_misses = 0
_installed = False


def _compiled(source: str, filename: str, mode: str, flags: int):
    global _misses
    # the text by its digest: the table stays small in memory and on disk
    key = (mode, flags, filename, blake2b(source.encode("utf-8", "surrogatepass"),
                                          digest_size=20).digest())
    code = _code.get(key)
    if code is None:
        _misses += 1
        code = _code[key] = builtins.compile(source, filename, mode, flags, dont_inherit=True)
    return code


def _exec_for(flags: int):
    def exec(source, globals=None, locals=None, /, **kw):   # noqa: A001 - shadows on purpose
        if type(source) is str:
            source = _compiled(source, "<string>", "exec", flags)
        return builtins.exec(source, globals, locals, **kw)
    return exec


def _eval_for(flags: int):
    def eval(source, globals=None, locals=None, /):          # noqa: A001
        if type(source) is str:
            source = _compiled(source, "<string>", "eval", flags)
        return builtins.eval(source, globals, locals)
    return eval


def _compile_for(flags: int):
    def compile(source, filename, mode, flags_=0, dont_inherit=False, optimize=-1, **kw):  # noqa: A001
        if type(source) is str and not flags_ and not dont_inherit and optimize == -1 and not kw:
            return _compiled(source, os.fsdecode(filename), mode, flags)
        return builtins.compile(source, filename, mode, flags_, dont_inherit, optimize, **kw)
    return compile


def _future_flags(module) -> int:
    """The compiler flags ``module``'s own ``__future__`` imports pass on to a compile it
    calls (``annotations`` is the one that changes generated code)."""
    import __future__
    feature = getattr(module, "annotations", None)
    return __future__.annotations.compiler_flag if feature is __future__.annotations else 0


def load(path: Path = _CACHE_FILE) -> int:
    """Read the cache file into memory; the number of code objects (0 without a usable file)."""
    try:
        data = path.read_bytes()
        if not data.startswith(_MAGIC):
            return 0
        table = marshal.loads(memoryview(data)[len(_MAGIC):])
    except (OSError, ValueError, EOFError, TypeError):
        return 0
    if isinstance(table, dict):
        for key, code in table.items():
            _code.setdefault(key, code)
    return len(_code)


def install(path: Path | None = _CACHE_FILE) -> None:
    """Load the cache (none with ``path`` None: the build starts afresh) and hook the three
    generators of code; idempotent."""
    global _installed
    if _installed:
        return
    _installed = True
    if path is not None:
        load(path)
    import collections
    import dataclasses
    dataclasses.exec = _exec_for(_future_flags(dataclasses))
    collections.eval = _eval_for(_future_flags(collections))
    try:
        import attr._make as attrs_make
    except ImportError:   # attrs comes with trio; without it there is nothing to hook
        return
    attrs_make.compile = _compile_for(_future_flags(attrs_make))


def statistics() -> dict:
    return {"code_objects": len(_code), "compiled": _misses, "file": str(_CACHE_FILE)}


def save(path: Path = _CACHE_FILE) -> None:
    """Write every code object known now (atomically: a reader sees the old file or this)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(_MAGIC + marshal.dumps(dict(_code)))
    os.replace(tmp, path)
