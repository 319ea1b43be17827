"""CRC32C (Castagnoli) of record batches and snapshot files, from the ``crc32c`` package's
C extension, loaded without running the package's ``__init__``.

That ``__init__`` imports ``importlib.metadata`` to read the package's own version (plus
a command-line module), which costs more at broker start-up than the whole codec layer it
serves (about 110 M instructions under callgrind: ``benchmarks/README.md``, "Start-up").
The extension module ``crc32c._crc32c`` has no dependency on its package, so it is loaded
straight from the package's folder; if that layout ever changes, the ordinary import is
the fallback. Same function, same results: ``crc32c(data, value=0) -> int``.
"""
from __future__ import annotations

import sys


def _load():
    try:
        import importlib.machinery
        import importlib.util
        mod = sys.modules.get("crc32c._crc32c")
        if mod is None:
            spec = importlib.util.find_spec("crc32c")   # locates the package, runs nothing
            for folder in (spec.submodule_search_locations or []) if spec else []:
                for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                    path = f"{folder}/_crc32c{suffix}"
                    loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                    ext = importlib.util.spec_from_file_location("crc32c._crc32c", path,
                                                                 loader=loader)
                    try:
                        mod = importlib.util.module_from_spec(ext)
                    except (ImportError, OSError):
                        continue
                    loader.exec_module(mod)
                    sys.modules["crc32c._crc32c"] = mod
                    break
                if mod is not None:
                    break
        if mod is not None:
            return mod.crc32c
    except (ImportError, AttributeError, ValueError):
        pass
    from crc32c import crc32c as fn   # the package's own import path
    return fn


crc32c = _load()
