"""Standard modules a plain ``kbroker serve`` imports but never uses, run at their first use.

trio imports ``ssl`` (for ``trio.SSLStream``) and ``hmac`` (for its DTLS cookies) when
it is imported, and kbroker's security modules import ``ssl``, ``hmac`` and ``hashlib``
for the listeners and mechanisms a configuration may name. A node with PLAINTEXT
listeners and no SASL uses none of them, yet loading them cost about a tenth of its
start (issue 32, start-up): ``hashlib`` and ``ssl`` load OpenSSL's two libraries and
initialize them (``_hashlib``, ``_ssl``), ``ssl`` makes eleven enum classes (~140
members) by scanning ``_ssl``'s constants. While :func:`install` is in force (a
``kbroker serve`` until its ready line), an import of one of :data:`NAMES` makes the
module as usual (its spec, its ``__name__``, ``__file__``, ``__loader__``;
``sys.modules`` holds it) but does not run its body; the first look-up of anything else
in it (``ssl.SSLContext``, ``from hmac import compare_digest``, ``dir(ssl)``) runs the
body, and from then on it is an ordinary module. A node that serves TLS or SCRAM runs
them while it starts, as before, at the first use.

Rules kept:
- The module is the one a normal import makes, run by the loader the import found (the
  finder stands first on ``sys.meta_path`` and asks those after it: the start-up module
  image's, then Python's): only the moment differs. Modules of Python source only: an
  extension module is made by its library at import, as usual. Its dependencies
  (``_ssl``, ``_hashlib``...) are imported when its body runs.
- The import statement itself reads only what the module object already has (``import
  ssl`` again reads ``__spec__``; ``from ssl import X`` asks for ``X`` and so runs the
  body): Python's own ``importlib.util.LazyLoader`` (3.11) runs the body at any attribute
  read, which the second ``import`` statement of the module already does.
- A body that fails raises where it was first used, and the module leaves
  ``sys.modules`` as after a failed import.
- One lock for every first run: a thread that uses a module whose body another thread is
  running waits for it; the thread running it sees the module partly made, as in a
  circular import.
- Only names whose bodies have no effect beyond the module (no registration, no
  threads) are deferred; only a start installs it (``kbroker/__main__.py``, with the
  module image) and :func:`uninstall` at the ready line stops deferring new imports.
"""
from __future__ import annotations

import sys
import threading
from importlib.machinery import ModuleSpec, SourceFileLoader, SourcelessFileLoader
from types import ModuleType

NAMES = frozenset({
    "ssl", "hmac", "hashlib",          # OpenSSL: trio's SSLStream and DTLS, TLS and SCRAM
    # ctypes.util's (imported by trio for its threads' names), used by its other lookups
    "subprocess", "selectors", "tempfile", "shutil", "bz2", "lzma",
    "idna",                            # trio's host names that are not ASCII
    "traceback", "tokenize", "token",  # an exception's formatting, linecache's reading
})

_SOURCE = (SourceFileLoader, SourcelessFileLoader)
_names: frozenset[str] = frozenset()   # what install() was given
_lock = threading.RLock()
_running: set[str] = set()      # bodies being run now (by the thread holding _lock)


class _Deferred(ModuleType):
    """A module whose body has not run yet: the first look-up of a name it lacks runs it."""

    def __getattr__(self, name):
        if _run(self):
            return getattr(self, name)
        raise AttributeError(f"partially initialized module {self.__name__!r} has no "
                             f"attribute {name!r} (its body is running)")

    def __dir__(self):
        _run(self)
        return dir(self)


def _run(module: ModuleType) -> bool:
    """Run `module`'s body if it has not run; False while it is running in this thread."""
    with _lock:
        if type(module) is not _Deferred:
            return True
        name = module.__spec__.name
        if name in _running:
            return False
        spec = module.__spec__
        loader = spec.loader.real
        spec.loader = loader
        module.__loader__ = loader
        _running.add(name)
        try:
            loader.exec_module(module)
        except BaseException:
            if sys.modules.get(name) is module:
                del sys.modules[name]
            raise
        finally:
            _running.discard(name)
            module.__class__ = ModuleType
        return True


class _Loader:
    """Stands for the found loader until the body runs (``real``)."""

    def __init__(self, real):
        self.real = real

    def create_module(self, spec):
        return None                  # the default module object, which exec_module defers

    def exec_module(self, module):
        module.__class__ = _Deferred


class _Finder:
    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname not in _names:
            return None
        for finder in sys.meta_path:
            if finder is _FINDER or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            # a module of Python source (or byte-code) only: an extension module's object is
            # made by its library, which deferring would not save
            if type(spec) is ModuleSpec and isinstance(spec.loader, _SOURCE):
                spec.loader = _Loader(spec.loader)
            return spec
        return None


_FINDER = _Finder()


def install(names: frozenset[str] = NAMES) -> None:
    """Defer the bodies of `names` imported from now on (a module already imported stays as
    it is); idempotent."""
    global _names
    _names = frozenset(names)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall() -> None:
    """Import every module as usual from now on; those already deferred stay so until
    their first use."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


def pending() -> list[str]:
    """The deferred modules whose bodies have not run (for the start-up's debug line)."""
    return sorted(n for n in _names if type(sys.modules.get(n)) is _Deferred)
