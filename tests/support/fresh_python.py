"""A script run in a fresh interpreter, its JSON answer read back: for checks that change
the process they run in (``kbroker.common.codecache.install`` hooks dataclasses, attrs,
``re``...) or that compare what two processes with different string hashes make."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def run_json(script: str, *args: str, seed: str = "1", env: dict | None = None,
             cwd=None) -> dict:
    """``python -c script args`` with ``PYTHONHASHSEED=seed`` (and ``env`` over this
    process's environment, a value None removing the variable), run in ``cwd``; what it
    printed, as JSON."""
    env = {**os.environ, "PYTHONHASHSEED": seed, **(env or {})}
    env = {k: v for k, v in env.items() if v is not None}
    out = subprocess.run([sys.executable, "-c", script, *args], cwd=cwd,
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)
