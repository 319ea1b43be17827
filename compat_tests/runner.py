"""Broker processes under test: start, wait until serving, stop, kill, restart.

`BrokerProcess` owns one broker OS process with its own work folder (data, config, logs) and a
fixed loopback port chosen once by binding to port 0; a restart reuses both, so data written
before a stop or a SIGKILL is visible after it. Subclasses only say how to prepare the folder and
which command to run: `KBrokerProcess` here, `KafkaBrokerProcess` in kafka_runner.py.

No orphans: every process runs in its own session (so the whole group can be signalled), gets
SIGKILL from the kernel if the test runner dies (PR_SET_PDEATHSIG), and is killed by an atexit
hook if the runner exits without the fixtures' finalisers having run.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path

from compat_tests.probe import ProbeError, wait_until_serving
from tests.support.broker_proc import free_port as _free_port

HOST = "127.0.0.1"
_LIVE: "weakref.WeakSet[BrokerProcess]" = weakref.WeakSet()


class BrokerStartError(RuntimeError):
    """The broker process exited or did not serve within its start timeout."""


def free_port() -> int:
    """A currently free loopback TCP port (under xdist from this worker's own block of ports;
    tests/support/broker_proc.py)."""
    return _free_port()


def die_with_parent() -> None:
    """preexec_fn: the kernel SIGKILLs the child when the test runner dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no output file)"
    return "\n".join(text.splitlines()[-lines:])


class BrokerProcess:
    """One broker under test. Use start()/stop()/kill()/restart(); see module docstring.

    Attributes: `target` ("kafka" | "kbroker"), `host`, `port`, `bootstrap_servers`
    ("127.0.0.1:<port>"), `workdir`, `data_dir`, `output_path` (the process's stdout+stderr),
    `overrides` (broker configs by Kafka name), `starts` (how many times it was started).
    """

    target = "?"
    start_timeout = 60.0
    stop_timeout = 30.0
    need_metadata = False  # readiness also requires Metadata to list a broker

    def __init__(self, workdir: Path, overrides: dict[str, str] | None = None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.data_dir = self.workdir / "data"
        self.output_path = self.workdir / "output.log"
        self.overrides = {k: str(v) for k, v in (overrides or {}).items()}
        self.host = HOST
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        _LIVE.add(self)

    # --- what subclasses provide -------------------------------------------------------------

    def prepare(self) -> None:
        """Called before every start; the first call finds an empty data dir."""

    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def start_hint(self) -> str:
        return ""

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> "BrokerProcess":
        """Start the process and return once it serves; raises BrokerStartError."""
        self.launch()
        return self.await_serving()

    def launch(self) -> None:
        """Start the process without waiting for it to serve. Call it from the thread that
        outlives the process (the child dies with the thread that spawned it, PR_SET_PDEATHSIG);
        nodes of a forming quorum are launched together, then awaited (in threads if need be)."""
        if self.is_running():
            raise RuntimeError(f"{self} is already running")
        self.prepare()
        cmd = self.command()
        with open(self.output_path, "ab") as out:
            out.write(f"\n=== start #{self.starts + 1}: {' '.join(cmd)}\n".encode())
            out.flush()
            try:
                self.proc = subprocess.Popen(
                    cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    cwd=self.workdir, env=self.env(), start_new_session=True,
                    preexec_fn=die_with_parent)
            except OSError as exc:
                raise BrokerStartError(f"{self.target}: cannot run {cmd[0]!r}: {exc}") from exc
        self.starts += 1
        self._launched = time.monotonic()
        self._cmd = cmd

    def await_serving(self) -> "BrokerProcess":
        """Return once the launched process serves; raises BrokerStartError."""
        started, cmd = self._launched, self._cmd
        try:
            wait_until_serving(self.host, self.port, need_metadata=self.need_metadata,
                               deadline=started + self.start_timeout, alive=self.is_running)
        except (ProbeError, TimeoutError) as exc:
            code = self.proc.poll()
            self.kill()
            status = f"exited with code {code}" if code is not None else "was killed"
            raise BrokerStartError(
                f"{self.target} did not start ({exc}); the process {status}.\n"
                f"command: {' '.join(cmd)}\n{self.start_hint()}"
                f"--- last lines of {self.output_path} ---\n{tail(self.output_path)}") from None
        self.start_seconds = time.monotonic() - started
        return self

    def _signal(self, sig: int) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float | None = None) -> int | None:
        """Graceful: SIGTERM, wait, SIGKILL after `timeout`. Returns the exit code."""
        if self.proc is None:
            return None
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout or self.stop_timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self._reap_group()
        return self.proc.returncode

    def kill(self) -> int | None:
        """SIGKILL the whole process group, as a crash would; returns the exit code."""
        if self.proc is None:
            return None
        self._signal(signal.SIGKILL)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        self._reap_group()
        return self.proc.returncode

    def _reap_group(self) -> None:
        # Children of the broker (if any) share its process group; make sure none outlive it.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def restart(self, *, hard: bool = False) -> "BrokerProcess":
        """Stop (or SIGKILL if `hard`) and start again on the same port and data dir."""
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.is_running() else "stopped"
        return f"<{self.target} broker {self.bootstrap_servers} {state} in {self.workdir}>"


# Settings a one-node broker needs (internal topics default to replication factor 3) plus test
# speed-ups Kafka's own integration tests use. Behaviour-relevant configs a test wants on both
# brokers go through `overrides` instead.
SINGLE_NODE_CONFIG = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    # After a SIGKILL the restarted node can only re-register once its previous broker session
    # expired (default 9 s); heartbeats stay well inside the shorter session.
    "broker.session.timeout.ms": "4500",
    "broker.heartbeat.interval.ms": "1000",
}


def combined_node_config(host: str, port: int, controller_port: int, data_dir: Path) -> dict[str, str]:
    """The static configuration (server.properties) of the suite's one-node cluster: node 1,
    broker and controller in one process, a static one-voter quorum on `controller_port`,
    clients on `port`. Both targets are started from it, so that what a broker reports about
    its own static configuration (DescribeConfigs, DescribeQuorum) can be compared."""
    return {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data_dir),
        **SINGLE_NODE_CONFIG,
    }


class KBrokerProcess(BrokerProcess):
    """kbroker: `<python> -m kbroker serve --config <workdir>/server.properties`.

    The properties file holds the same static configuration the Kafka target gets
    (`combined_node_config`, rewritten before every start) with the test's broker configs
    (Kafka names) over it; kbroker needs no format step.
    """

    target = "kbroker"
    start_timeout = 30.0

    def __init__(self, workdir: Path, overrides: dict[str, str] | None = None):
        super().__init__(workdir, overrides)
        self.controller_port = free_port()
        self.config_path = self.workdir / "server.properties"

    def config(self) -> dict[str, str]:
        cfg = combined_node_config(self.host, self.port, self.controller_port, self.data_dir)
        cfg.update(self.overrides)
        return cfg

    def command(self) -> list[str]:
        return [sys.executable, "-m", "kbroker", "serve", "--config", str(self.config_path)]

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.config().items()))

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def start_hint(self) -> str:
        return ("hint: kbroker's `serve` command must read --config and answer "
                "ApiVersions; until it exists run the suite with --targets kafka.\n")


@atexit.register
def _kill_leftovers() -> None:
    for broker in list(_LIVE):
        broker.kill()
