"""The import rules of ARCHITECTURE.md hold on the tree (``tests/support/import_layers.py``):
imports point down the layers or sideways within one, and no module circle exists. The other
tests show that the check fails on a tree that breaks either rule."""
from __future__ import annotations

from pathlib import Path

from tests.support.import_layers import RANKS, check

ROOT = Path(__file__).resolve().parents[1] / "kbroker"


def test_the_tree_keeps_its_layers_and_has_no_import_circle():
    assert check(ROOT) == []


def test_every_package_has_a_rank():
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()}
    assert packages - set(RANKS) == set()


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "kbroker"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_an_import_up_a_layer_is_reported(tmp_path):
    root = _tree(tmp_path, {
        "wire/__init__.py": "",
        "wire/codec.py": "def f():\n    from kbroker.api import handler\n",
        "api/__init__.py": "",
        "api/handler.py": "",
    })
    assert check(root) == ["kbroker.wire.codec -> kbroker.api.handler: wire (rank 0) imports up "
                           "into api (rank 6)"]


def test_a_type_only_import_up_a_layer_is_reported_too(tmp_path):
    root = _tree(tmp_path, {
        "log/__init__.py": "",
        "log/segment.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                           "    from kbroker.replica.manager import ReplicaManager\n"),
        "replica/__init__.py": "",
        "replica/manager.py": "class ReplicaManager: ...\n",
    })
    assert check(root) == ["kbroker.log.segment -> kbroker.replica.manager: log (rank 4) imports "
                           "up into replica (rank 5)"]


def test_a_circle_inside_a_package_is_reported(tmp_path):
    root = _tree(tmp_path, {
        "group/__init__.py": "",
        "group/base.py": "from .manager import Manager\n",
        "group/manager.py": "def make():\n    from kbroker.group import base\n",
    })
    assert check(root) == ["import circle: kbroker.group.base <-> kbroker.group.manager"]


def test_sideways_and_downward_imports_pass(tmp_path):
    root = _tree(tmp_path, {
        "wire/__init__.py": "",
        "group/__init__.py": "from kbroker.wire import x\n",
        "txn/__init__.py": "from kbroker.group import y\n",
        "wire/x.py": "", "group/y.py": "",
    })
    assert check(root) == []


def test_an_unranked_package_is_reported(tmp_path):
    root = _tree(tmp_path, {"newpkg/__init__.py": "from kbroker.wire import x\n",
                            "wire/__init__.py": "", "wire/x.py": ""})
    assert check(root) == ["kbroker.newpkg -> kbroker.wire.x: package 'newpkg' has no rank in RANKS"]
