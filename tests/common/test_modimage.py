"""The start-up module image (``kbroker/common/modimage.py``, issue 32 start-up): the modules
a start imports are written into one file at a clean exit and imported from it by the next
start, as the same modules; a changed source, a file added where it could shadow one, another
``sys.path`` or a damaged entry are imported as usual. Each start is its own interpreter (the
finder changes the process's imports); the modules are a small package of the test's own in
folders made an hour old (the image keeps out a folder changed during the start that wrote it)."""
from __future__ import annotations

import compileall
import os
import shutil
import sys
import time
from pathlib import Path

from kbroker.common import modimage
from kbroker.node.codecache_build import serve_until_ready
from tests.support.fresh_python import run_json

ROOT = Path(__file__).resolve().parents[2]

_START = r'''
import inspect, json, sys
from importlib.machinery import SourceFileLoader
from kbroker.common import modimage
from kbroker.node.codecache_build import serve_until_ready
image = sys.argv[1]
modimage.install(image)
import mod_b, pkg_a
from pkg_a import sub
finder_installed = modimage._FINDER in sys.meta_path
modimage.note_ready()
out = {"served": sorted(modimage._served),
       "finder_installed": finder_installed,
       "finder_after_ready": modimage._FINDER in sys.meta_path,
       "data_after_ready": modimage._data is not None,
       "values": [mod_b.f(), sub.X, pkg_a.sub is sub],
       "source": inspect.getsource(mod_b.f),
       "loaders": [isinstance(m.__loader__, SourceFileLoader) and
                   m.__spec__.loader is m.__loader__ for m in (mod_b, pkg_a, sub)],
       "attrs": {m.__name__: [m.__file__, m.__cached__, m.__spec__.origin, m.__spec__.parent,
                              m.__spec__.submodule_search_locations, getattr(m, "__path__", None),
                              m.__spec__.has_location]
                 for m in (mod_b, pkg_a, sub)}}
out["written"] = modimage.save_if_incomplete(image)
print(json.dumps(out))
'''

HOUR_AGO = time.time() - 3600


def _age(*folders: Path) -> None:
    """Byte-compile (a first import's ``__pycache__`` changes its folder) and age."""
    for folder in folders:
        compileall.compile_dir(folder, quiet=1)
        for path in [folder, *folder.rglob("*")]:
            os.utime(path, (HOUR_AGO, HOUR_AGO))


def _lib(tmp_path: Path, name: str = "lib") -> Path:
    lib = tmp_path / name
    (lib / "pkg_a").mkdir(parents=True)
    (lib / "mod_b.py").write_text("VALUE = 1\n\n\ndef f():\n    return VALUE\n")
    (lib / "pkg_a" / "__init__.py").write_text("from . import sub\n")
    (lib / "pkg_a" / "sub.py").write_text('X = "sub"\n')
    return lib


def _start(tmp_path: Path, *lib: Path) -> dict:
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    return run_json(_START, str(tmp_path / "image.bin"), cwd=cwd, env={
        "PYTHONPATH": os.pathsep.join(map(str, lib)), "PYTHONDONTWRITEBYTECODE": None})


MODULES = ["mod_b", "pkg_a", "pkg_a.sub"]


def test_a_clean_exit_writes_the_modules_and_the_next_start_imports_the_same_from_it(tmp_path):
    lib = _lib(tmp_path)
    _age(lib)
    first = _start(tmp_path, lib)
    assert first["served"] == [] and not first["finder_installed"]
    assert first["written"] >= len(MODULES)
    second = _start(tmp_path, lib)
    assert second["finder_installed"] and set(MODULES) <= set(second["served"])
    assert second["written"] == 0           # answered completely: nothing to add
    # the same modules as a normal import makes: file, cached, spec, package path, loader
    assert second["attrs"] == first["attrs"]
    assert second["values"] == first["values"] == [1, "sub", True]
    assert second["source"] == first["source"] and "return VALUE" in second["source"]
    assert second["loaders"] == [True, True, True]
    # the start is over at the ready line: the finder leaves and the bytes are freed
    assert not second["finder_after_ready"] and not second["data_after_ready"]


def test_a_changed_source_is_imported_as_usual_and_written_again(tmp_path):
    lib = _lib(tmp_path)
    _age(lib)
    _start(tmp_path, lib)
    (lib / "mod_b.py").write_text("VALUE = 2\n\n\ndef f():\n    return VALUE\n")
    os.utime(lib / "mod_b.py", (HOUR_AGO + 60, HOUR_AGO + 60))
    changed = _start(tmp_path, lib)
    assert changed["values"][0] == 2
    assert "mod_b" not in changed["served"] and "pkg_a.sub" in changed["served"]
    assert changed["written"] >= 1
    again = _start(tmp_path, lib)
    assert "mod_b" in again["served"] and again["values"][0] == 2 and again["written"] == 0


def test_a_module_added_earlier_on_the_path_shadows_the_kept_one(tmp_path):
    early, lib = tmp_path / "early", _lib(tmp_path)
    early.mkdir()
    _age(early, lib)
    assert _start(tmp_path, early, lib)["written"] >= len(MODULES)
    (early / "mod_b.py").write_text("VALUE = 99\n\n\ndef f():\n    return VALUE\n")
    shadowed = _start(tmp_path, early, lib)
    assert shadowed["values"][0] == 99
    assert shadowed["served"] == []         # a folder of the image changed: not used at all
    assert shadowed["attrs"]["mod_b"][0] == str(early / "mod_b.py")


def test_the_first_path_entry_is_looked_through_not_keyed(tmp_path):
    # ``python -c``: sys.path[0] is the working directory, another one at every start
    lib = _lib(tmp_path)
    _age(lib)
    _start(tmp_path, lib)
    cwd = tmp_path / "cwd"
    (cwd / "mod_b").write_text("#!/bin/sh\n")       # a console script's name: not a module
    assert set(MODULES) <= set(_start(tmp_path, lib)["served"])
    (cwd / "mod_b.py").write_text("VALUE = 7\n\n\ndef f():\n    return VALUE\n")
    shadowed = _start(tmp_path, lib)
    assert shadowed["served"] == [] and shadowed["values"][0] == 7


def test_another_sys_path_has_another_file_and_does_not_use_this_one(tmp_path):
    lib, other = _lib(tmp_path), tmp_path / "other"
    other.mkdir()
    _age(lib, other)
    _start(tmp_path, lib)
    assert _start(tmp_path, lib, other)["served"] == []
    names = run_json("import json; from kbroker.common import modimage; "
                     "print(json.dumps(modimage.image_file()))",
                     env={"PYTHONPATH": str(lib), "KBROKER_MODIMAGE_FILE": None}), run_json(
        "import json; from kbroker.common import modimage; "
        "print(json.dumps(modimage.image_file()))",
        env={"PYTHONPATH": os.pathsep.join([str(lib), str(other)]), "KBROKER_MODIMAGE_FILE": None})
    assert names[0] != names[1]


def test_a_damaged_entry_is_imported_from_its_source(tmp_path):
    lib = _lib(tmp_path)
    _age(lib)
    _start(tmp_path, lib)
    image = tmp_path / "image.bin"
    data = bytearray(image.read_bytes())
    parsed = modimage._parse(str(image))
    assert parsed is not None
    entry, code_start = parsed[2]["mod_b"], len(data) - len(parsed[3])
    data[code_start + entry[5]:code_start + entry[5] + entry[6]] = b"\xff" * entry[6]
    image.write_bytes(bytes(data))
    damaged = _start(tmp_path, lib)
    assert "mod_b" in damaged["served"]             # found from the image, its code read again
    assert damaged["values"] == [1, "sub", True] and "return VALUE" in damaged["source"]


def test_kbroker_serve_writes_the_image_at_its_clean_exit_and_starts_from_it(tmp_path):
    # a copy of the package (its .pyc files and caches too) in folders an hour old, so that
    # nothing else changing the checkout meanwhile touches the image's folders
    src = tmp_path / "src"
    shutil.copytree(ROOT / "kbroker", src / "kbroker",
                    ignore=shutil.ignore_patterns("modimage.*.bin", "*.tmp"))
    _age(src)
    image = tmp_path / "image.bin"
    env = {**os.environ, "PYTHONPATH": str(src), "KBROKER_MODIMAGE_FILE": str(image)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def serve(n: int) -> str:
        work = tmp_path / f"run{n}"
        work.mkdir()
        return serve_until_ready([sys.executable, "-m", "kbroker"], str(work), env=env,
                                 extra=("--log-level", "DEBUG"), timeout=60)

    def count(log: str, what: str) -> int:
        line = next((l for l in log.splitlines() if "start-up module image: " in l and what in l), "")
        return int(line.split("start-up module image: ")[1].split()[0]) if line else 0

    first = serve(1)
    assert count(first, "modules imported from") == 0
    assert count(first, "modules written to") > 200
    assert image.exists()
    second = serve(2)
    assert count(second, "modules imported from") > 200
    assert count(second, "modules written to") == 0
    assert "kbroker ready" in second
