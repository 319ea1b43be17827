"""The byte-code of the modules ``kbroker serve`` imports before it is ready, read from one
file instead of ~300 (issue 32, start-up).

For every module it imports, Python walks ``sys.path`` (a ``FileFinder`` per directory), checks
the ``.pyc`` against its source with a ``stat``, opens and reads the ``.pyc`` and only then
unmarshals its code. For the ~300 source modules a start imports (kbroker's, trio's and
attrs', the standard library's) that walk and those files were ~21 M of its ~530 M
instructions and ~1,200 system calls. This module keeps those modules' code objects,
marshalled as a ``.pyc`` holds them, in one file beside the code cache
(``__pycache__/modimage.<cache tag>-<optimize>.<key of sys.path>.bin``), and puts a finder
just before ``PathFinder`` on ``sys.meta_path`` that answers them from it.

Rules kept:
- A module found here is the module a normal import makes: the same spec (name, origin,
  package path, ``cached``), and a ``SourceFileLoader`` whose ``get_code`` returns the kept
  code (so ``get_data``, resources, tracebacks and ``inspect`` work as before); a damaged
  entry is read from the ``.pyc`` or compiled instead.
- Never a stale or shadowed module. A file is used only by the interpreter it was written by
  (byte-code magic number, optimization level) and only for the ``sys.path`` it was written
  for (its name carries a checksum of the list, and the list is compared); every directory a
  module of the file was found in (each ``sys.path`` entry, each package's folder) must have
  the modification time it had then, since a file added to or removed from it could change
  what a name resolves to; and each module's source must have the size and modification time
  (in ns) its code was taken from, the check a ``.pyc`` gets. A top-level module is answered
  only while ``sys.path`` is that list, a submodule only when its folder is on the package's
  ``__path__``. Anything else is imported as usual.
- The file serves the start only: at the ready line (:func:`note_ready`) the finder leaves
  ``sys.meta_path`` and the file is unmapped (a node's idle memory is not charged for it);
  a module first imported later is found as usual. The file is mapped rather than read
  (:mod:`kbroker.common.filemap`): a module's code is unmarshalled straight from the page
  cache.
- Written like a ``.pyc``, by use: the clean exit of a ``kbroker serve`` that imported a
  module before its ready line that the file did not answer (there was no file, a source
  changed, a configuration needed another module) writes the modules of that start together
  with those the file still holds validly, so a fresh start and a restart (which import
  different modules) both end up covered; a start the file answered completely writes
  nothing. ``make setup`` runs one start (``kbroker.node.codecache_build``) so that the first
  ``kbroker serve`` of a checkout finds one. Nothing is written where the package's folder is
  not writable.
- Only ``kbroker serve`` installs it (``kbroker/__main__.py``, before the command line's own
  imports); tests that start brokers in process import as usual.
"""
from __future__ import annotations

import marshal
import os
import sys
import time
from importlib.machinery import PathFinder, SourceFileLoader, all_suffixes
from importlib.util import MAGIC_NUMBER, spec_from_file_location
from types import CodeType
from zlib import crc32

from kbroker.common.filemap import indexed_bytes, map_indexed

_HEADER = MAGIC_NUMBER + b"kbroker modimage 1\n"
_SUFFIXES = frozenset(all_suffixes())     # what makes a file in a sys.path folder a module

_installed = False
_paths: list[str] = []                # sys.path[1:] as the file was written for it
# name -> (origin, is package, folder it was found in, source mtime ns, source size, offset,
# length): the file's modules, each one's marshalled code at data[offset:offset + length]
_index: dict[str, tuple] = {}
_data: memoryview | None = None
_usable = False                       # the file exists, is ours and its folders are unchanged
_served: set[str] = set()             # modules answered from the file
_before: frozenset[str] = frozenset() # modules imported before install()
_at_ready: list[str] | None = None    # modules imported by the ready line
_since = 0                            # a folder changed after this (ns) may have changed under us


def image_file() -> str:
    """The file for this interpreter, optimization level and ``sys.path`` (but its first
    entry: see :func:`_shadowed`)."""
    here = os.path.dirname(os.path.abspath(__file__))
    key = crc32("\0".join(sys.path[1:]).encode("utf-8", "surrogateescape"))
    name = f"modimage.{sys.implementation.cache_tag}-{sys.flags.optimize}.{key:08x}.bin"
    return os.environ.get("KBROKER_MODIMAGE_FILE") or os.path.join(here, "__pycache__", name)


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return None


def _shadowed(index: dict) -> bool:
    """Whether ``sys.path[0]`` holds a file or folder named as a top-level module of the file.
    That first entry is the working directory under ``python -m`` (the script's folder for a
    console script), different from one start to the next, so it is not part of the file's
    key: its listing is checked instead (a name's ``.py``, ``.so``... or folder; a file
    named as the module without a suffix, such as a console script, is not a module)."""
    if not sys.path:
        return False
    try:
        names = os.listdir(sys.path[0] or ".")
    except OSError:
        return False
    top = {name for name in index if "." not in name}
    for n in names:
        stem, dot, suffix = n.partition(".")
        if stem in top and (dot and "." + suffix in _SUFFIXES
                            or not dot and os.path.isdir(os.path.join(sys.path[0], n))):
            return True
    return False


def _parse(path: str):
    """(sys.path, folders, index, code bytes) of an image file, or None. The file is mapped,
    not read (:mod:`kbroker.common.filemap`): each module's code is unmarshalled from the
    mapping when imported, and the mapping goes with the last view of it."""
    found = map_indexed(path, _HEADER)
    if found is None:
        return None
    head, data = found
    if type(head) is not tuple or len(head) != 3:
        return None
    paths, dirs, index = head
    if type(paths) is not list or type(dirs) is not dict or type(index) is not dict:
        return None
    return paths, dirs, index, data


class _Loader(SourceFileLoader):
    """A source module's loader whose code comes from the file."""

    def get_code(self, fullname):
        entry = _index.get(fullname)
        data = _data
        if entry is not None and entry[0] == self.path and data is not None:
            offset, length = entry[5], entry[6]
            try:
                code = marshal.loads(data[offset:offset + length])
            except (ValueError, EOFError, TypeError):
                code = None
            if type(code) is CodeType:
                return code
        return super().get_code(fullname)


class _Finder:
    @staticmethod
    def find_spec(fullname, path=None, target=None):
        entry = _index.get(fullname)
        if entry is None or not _usable:
            return None
        origin, is_package, where, mtime, size = entry[:5]
        if path is None:
            if sys.path[1:] != _paths:
                return None
        elif where not in path:
            return None
        try:
            st = os.stat(origin)
        except OSError:
            return None
        if st.st_mtime_ns != mtime or st.st_size != size:
            return None
        _served.add(fullname)
        return spec_from_file_location(fullname, origin, loader=_Loader(fullname, origin),
                                       submodule_search_locations=[os.path.dirname(origin)]
                                       if is_package else None)


_FINDER = _Finder()


def install(path: str | None = None) -> None:
    """Answer imports from the file (if usable) until :func:`note_ready`; idempotent."""
    global _installed, _usable, _before, _since, _paths, _index, _data
    if _installed:
        return
    _installed = True
    _before = frozenset(sys.modules)
    _since = time.time_ns() - 1_000_000_000
    image = _parse(path or image_file())
    if image is None or image[0] != sys.path[1:] or not all(
            _mtime(d) == t for d, t in image[1].items()) or _shadowed(image[2]):
        return
    _paths, _, _index, _data = image
    _usable = True
    meta = sys.meta_path
    meta.insert(meta.index(PathFinder) if PathFinder in meta else len(meta), _FINDER)


def note_ready() -> None:
    """The server is ready: remember what it imported, stop answering from the file and drop
    its mapping."""
    global _at_ready, _data, _usable
    if not _installed or _at_ready is not None:
        return
    _at_ready = list(sys.modules)
    _usable = False
    _data = None
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    from kbroker.common import deferred
    deferred.uninstall()
    import logging
    logging.getLogger("kbroker.modimage").debug(
        "start-up module image: %d modules imported from %s; not yet run: %s", len(_served),
        image_file(), ", ".join(deferred.pending()) or "none")


def _source_module(name: str):
    """(origin, is package, folder found in) of an imported source module, or None."""
    spec = getattr(sys.modules.get(name), "__spec__", None)
    loader = getattr(spec, "loader", None)
    origin = getattr(spec, "origin", None)
    if type(loader) not in (SourceFileLoader, _Loader) or getattr(spec, "name", None) != name \
            or not origin or not spec.has_location or not origin.endswith(".py"):
        return None
    is_package = spec.submodule_search_locations is not None
    folder = os.path.dirname(origin)
    where = os.path.dirname(folder) if is_package else folder
    if "." not in name and sys.path and where == os.path.abspath(sys.path[0] or ".") \
            and where not in sys.path[1:]:
        return None         # found in the first entry, which changes from start to start
    return origin, is_package, where


def save_if_incomplete(path: str | None = None) -> int:
    """At a clean exit of ``kbroker serve``: if its start imported a source module the file
    did not answer, write the start's modules with those the file still holds validly; the
    number of modules written (0: nothing written). ``OSError`` when it cannot be written.
    A folder modified since shortly before the start keeps its modules out (a file added
    there while they were imported could shadow one): the next start writes them."""
    if _at_ready is None:
        return 0
    path = path or image_file()
    paths = sys.path[1:]
    folders: dict[str, int | None] = {d: _mtime(d) for d in paths}

    def settled(folder: str) -> bool:
        if folder not in folders:
            folders[folder] = _mtime(folder)
        return folders[folder] is not None and folders[folder] < _since

    wanted = {}
    for name in _at_ready:
        if name in _served or name in _before:
            continue
        found = _source_module(name)
        if found is not None and settled(found[2]):
            wanted[name] = found
    if not wanted or not all(folders[d] is None or folders[d] < _since for d in paths):
        return 0
    entries, chunks, offset = {}, [], 0
    old = _parse(path)
    if old is not None and old[0] == paths:
        _, old_dirs, old_index, old_data = old
        for name, entry in old_index.items():
            origin, where, mtime, size = entry[0], entry[2], entry[3], entry[4]
            if name in wanted or not settled(where) or folders[where] != old_dirs.get(where):
                continue
            try:
                st = os.stat(origin)
            except OSError:
                continue
            if (st.st_mtime_ns, st.st_size) == (mtime, size):
                code = bytes(old_data[entry[5]:entry[5] + entry[6]])
                entries[name] = (*entry[:5], offset, len(code))
                chunks.append(code)
                offset += len(code)
    for name, (origin, is_package, where) in wanted.items():
        try:
            before = os.stat(origin)
            code = marshal.dumps(SourceFileLoader(name, origin).get_code(name))
            after = os.stat(origin)
        except (OSError, ImportError, SyntaxError, ValueError):
            continue
        if (after.st_mtime_ns, after.st_size) != (before.st_mtime_ns, before.st_size):
            continue                # changed while read: left to the next start
        entries[name] = (origin, is_package, where, before.st_mtime_ns, before.st_size,
                         offset, len(code))
        chunks.append(code)
        offset += len(code)
    used = {d: folders[d] for d in paths}
    used.update((e[2], folders[e[2]]) for e in entries.values())
    from pathlib import Path

    from kbroker.common.codecache import replace_file
    replace_file(Path(path), indexed_bytes(_HEADER, (paths, used, entries), chunks))
    return len(entries)
