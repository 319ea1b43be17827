"""A real ``python -m kbroker serve`` in a subprocess, for client and crash tests.

    proc = BrokerProcess(tmp_path / "data")          # free port picked at start
    proc.start()                                       # waits for the ready line
    proc.launch()                                      # or not (a node that must fail)
    KafkaProducer(bootstrap_servers=proc.bootstrap)
    proc.restart(); proc.kill(); proc.stop()

``start()`` waits until the ``kbroker ready:`` line appears and the port accepts a
connection; the broker's stderr goes to ``<data_dir>/../kbroker-<port>.log`` (``log_text()``)
so a failing test can show it. ``stop()`` sends SIGTERM and waits (graceful: clean-shutdown
marker); ``kill()`` sends SIGKILL (crash). The same port is reused by ``restart()`` so
clients' bootstrap addresses stay valid.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


# Listener ports: each xdist worker takes them from its own block below the kernel's ephemeral
# range (kbroker/testing/processes.py, the one implementation, so that this module and the
# testing package's clusters never hand out the same port in one worker).
from kbroker.testing.processes import free_port, free_ports  # noqa: E402,F401


STOCK_PROPERTIES = REPO_ROOT / "tests" / "broker" / "data" / "kafka-4.3.1-server.properties"


def stock_properties(logs: Path, port: int, controller_port: int) -> str:
    """Kafka 4.3.1's stock ``config/server.properties`` with its log directory at ``logs`` and
    its listeners' ports 9092 and 9093 replaced by ``port`` and ``controller_port``, in one
    pass: a client port such as 19093 is not then rewritten again as the controller's."""
    text = STOCK_PROPERTIES.read_text().replace("/tmp/kraft-combined-logs", str(logs))
    return re.sub(r"\b909[23]\b", lambda m: str(port if m.group() == "9092" else controller_port), text)


class BrokerProcess:
    def __init__(self, data_dir, port: int | None = None, overrides: dict | None = None,
                 *, config_file=None, extra_args=(), python: str = sys.executable,
                 start_timeout: float = 30.0):
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.overrides = dict(overrides or {})
        self.config_file = config_file
        self.extra_args = list(extra_args)
        self.python = python
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir.parent / f"kbroker-{self.port}.log"
        self.returncode: int | None = None
        self.env: dict[str, str] = {}    # extra environment of the process (e.g. libfaketime's)
        self.host = "127.0.0.1"         # where it listens (a test host's address, tests/support/netns.py)
        self.prefix: list[str] = []      # runs the command elsewhere (``TestNet.enter``)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def addr(self) -> tuple[str, int]:
        return self.host, self.port

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "kbroker", "serve", "--listen", f"{self.host}:{self.port}",
               "--data-dir", str(self.data_dir)]
        if self.config_file:
            cmd += ["--config", str(self.config_file)]
        for k, v in self.overrides.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd + self.extra_args

    def launch(self) -> int:
        """Start the process without waiting for it to be ready (a node that must fail, or
        never become ready); returns where this start's output begins in the log."""
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError("broker already running")
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        start_at = log.tell()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
        env.update(self.env)
        self.proc = subprocess.Popen(self.prefix + self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     cwd=REPO_ROOT, env=env)
        log.close()
        return start_at

    def start(self) -> "BrokerProcess":
        start_at = self.launch()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                self.returncode = rc
                raise RuntimeError(f"kbroker exited with {rc} during startup:\n{self.log_text(start_at)}")
            if "kbroker ready:" in self.log_text(start_at) and self._port_open():
                return self
            time.sleep(0.02)
        self.kill()
        raise TimeoutError(f"kbroker not ready after {self.start_timeout}s:\n{self.log_text(start_at)}")

    def _port_open(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def log_text(self, start: int = 0) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(start)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM and wait: a graceful shutdown. Returns the exit code."""
        if self.proc is None:
            return self.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        self.returncode = self.proc.returncode
        self.proc = None
        return self.returncode

    def kill(self) -> None:
        """SIGKILL: a crash, no clean-shutdown marker."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.returncode = self.proc.returncode
            self.proc = None

    def restart(self, *, crash: bool = False) -> "BrokerProcess":
        self.kill() if crash else self.stop()
        return self.start()

    def __enter__(self) -> "BrokerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
