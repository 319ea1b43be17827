"""Clients in other languages (kafkajs on Node, franz-go in Go), driven through a small program.

Each program reads `{"brokers": ..., "ops": [{"op": name, ...}, ...]}` (plus an optional
`"security"`: CA PEM and SASL mechanism/user/password) as JSON on stdin, runs
the ops in order with one client, and prints a JSON array with one `{"ok": value}` or
`{"error": {...}}` per op (see compat_tests/kafkajs/driver.js and compat_tests/franzgo/main.go).

Set-up is idempotent and cached, like `make kafkajs` / `make franzgo`:
- kafkajs: `npm ci` into compat_tests/kafkajs/node_modules, stamped by `.installed`;
- franz-go: `go build` into .cache/bin/franzgo-driver-<hash of the sources> with module and
  build caches under $KBROKER_CACHE/go (tests/support/go_build.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from compat_tests.runner import die_with_parent
from tests.support.go_build import go_env

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KAFKAJS_DIR = HERE / "kafkajs"
KAFKAJS_STAMP = KAFKAJS_DIR / "node_modules" / ".installed"
FRANZGO_DIR = HERE / "franzgo"
FRANZGO_BIN = ROOT / ".cache" / "bin" / "franzgo-driver"


class OpFailed(AssertionError):
    """An op returned an error where the test expected a value."""


def _newer(target: Path, sources: list[Path]) -> bool:
    return target.exists() and all(target.stat().st_mtime >= s.stat().st_mtime for s in sources)


def ensure_kafkajs() -> list[str]:
    """The command running the kafkajs driver (installs node_modules first if needed)."""
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        pytest.fail("node/npm not installed (kafkajs tests need Node 18+)", pytrace=False)
    lock = KAFKAJS_DIR / "package-lock.json"
    # one `npm ci` at a time (xdist workers share the folder)
    (ROOT / ".cache").mkdir(exist_ok=True)
    with open(ROOT / ".cache" / "kafkajs-install.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not _newer(KAFKAJS_STAMP, [lock, KAFKAJS_DIR / "package.json"]):
            result = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                                    cwd=KAFKAJS_DIR, capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                pytest.fail(f"npm ci failed:\n{result.stdout}\n{result.stderr}", pytrace=False)
            KAFKAJS_STAMP.touch()
    return [node, str(KAFKAJS_DIR / "driver.js")]


def ensure_franzgo() -> list[str]:
    """The command running the franz-go driver (builds it first if needed)."""
    if shutil.which("go") is None:
        pytest.fail("go not installed (franz-go tests need Go 1.21+)", pytrace=False)
    import hashlib
    sources = [FRANZGO_DIR / "go.mod", FRANZGO_DIR / "go.sum", *sorted(FRANZGO_DIR.glob("*.go"))]
    # named by the sources' hash: checkouts sharing .cache never run each other's driver
    digest = hashlib.sha256(b"".join(s.read_bytes() for s in sources)).hexdigest()[:12]
    binary = FRANZGO_BIN.with_name(f"{FRANZGO_BIN.name}-{digest}")
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        tmp = binary.with_name(binary.name + f".tmp{os.getpid()}")
        result = subprocess.run(["go", "build", "-o", str(tmp), "."], cwd=FRANZGO_DIR,
                                env=go_env(), capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            pytest.fail(f"go build failed:\n{result.stdout}\n{result.stderr}", pytrace=False)
        os.replace(tmp, binary)
    return [str(binary)]


class Driver:
    """One client family's driver program. `run(bootstrap, ops)` → list of per-op results;
    `ok(bootstrap, op)` runs one op and returns its value (raising OpFailed on an error);
    `error(bootstrap, op)` runs one op that must fail and returns the error dict."""

    def __init__(self, command: list[str], name: str):
        self.command = command
        self.name = name

    def run(self, bootstrap: str, ops: list[dict], timeout: float = 90.0,
            security: dict | None = None) -> list[dict]:
        proc = self.start(bootstrap, ops, security)
        return self.wait(proc, timeout)

    def start(self, bootstrap: str, ops: list[dict], security: dict | None = None) -> subprocess.Popen:
        """Start the driver without waiting (for several concurrent group members)."""
        proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                preexec_fn=die_with_parent)
        payload = {"brokers": bootstrap, "ops": ops}
        if security:        # {"ca": PEM, "mechanism", "username", "password"}: TLS/SASL listeners
            payload["security"] = security
        proc.stdin.write(json.dumps(payload))
        proc.stdin.close()
        proc.stdin = None  # so that communicate() only reads
        proc._compat_ops = ops  # type: ignore[attr-defined]
        return proc

    def wait(self, proc: subprocess.Popen, timeout: float = 90.0) -> list[dict]:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(f"{self.name} driver timed out after {timeout}s\n"
                                 f"{err[-3000:]}") from None
        if proc.returncode != 0 or not out.strip():
            raise AssertionError(f"{self.name} driver exited {proc.returncode}\n"
                                 f"--- stdout ---\n{out}\n--- stderr ---\n{err[-3000:]}")
        results = json.loads(out.strip().splitlines()[-1])
        assert len(results) == len(proc._compat_ops), results  # type: ignore[attr-defined]
        return results

    def ok(self, bootstrap: str, op: dict, timeout: float = 90.0):
        (result,) = self.run(bootstrap, [op], timeout)
        return value(result, op)

    def error(self, bootstrap: str, op: dict, timeout: float = 90.0) -> dict:
        (result,) = self.run(bootstrap, [op], timeout)
        assert "error" in result, f"{op['op']} should have failed, got {result}"
        return result["error"]


def value(result: dict, op: dict | None = None):
    """The value of one op's result; OpFailed (with the error) if the op failed."""
    if "error" in result:
        raise OpFailed(f"{(op or {}).get('op', 'op')} failed: {json.dumps(result['error'])}")
    return result["ok"]


def error_types(err: dict) -> set[str]:
    """Every error type/code name in an error dict, nested errors included."""
    found = set()
    stack = [err]
    while stack:
        e = stack.pop()
        for key in ("type", "code", "name"):
            if isinstance(e.get(key), str) and e[key]:
                found.add(e[key])
        stack.extend(e.get("errors") or [])
        if e.get("cause"):
            stack.append(e["cause"])
    return found
