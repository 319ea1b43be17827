"""The image installs kbroker's wheel without dependencies, from ``docker/requirements.lock``:
every runtime dependency that ``pyproject.toml`` names must be pinned there, or a command
inside the image fails on its first import (the CLI's client, the schema registry's parsers)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def test_every_runtime_dependency_is_pinned_in_the_image_lock():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    lock = {}
    for line in (ROOT / "docker" / "requirements.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            lock[_name(name)] = version
    missing = sorted(_name(d) for d in deps if _name(d) not in lock)
    assert missing == []
    assert all(lock.values()), "every line of the lock pins an exact version"
