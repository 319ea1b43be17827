"""Runs the reference: Karapace's schema registry and REST proxy beside an Apache Kafka broker.

Karapace is not on any package registry: it runs from its public sources, installed into a
virtualenv of its own (compat_tests/README.md, "HTTP differential", says how; the recorded
transcripts name the tag). `KarapaceStack` starts a Kafka KRaft node with
`compat_tests.kafka_runner.KafkaBrokerProcess`, then ``python -m karapace`` (the registry) and
``python -m karapace.kafka_rest_apis`` (the REST proxy) from that virtualenv, configured
through their ``KARAPACE_*`` environment variables, each on a free loopback port, and waits
until both answer HTTP.

Rules kept: nothing here is imported by the suite's own tests (CI has no Karapace); the
children die with the parent; every start is from an empty Kafka data folder, so a recording
never depends on an earlier one.
"""
from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from pathlib import Path

from compat_tests.kafka_runner import KafkaBrokerProcess
from compat_tests.runner import die_with_parent, free_port, tail


def karapace_version(python: Path) -> str:
    out = subprocess.run([str(python), "-c", "import karapace.version as v; print(v.__version__)"],
                         capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or "unknown"


class KarapaceStack:
    """Kafka + Karapace registry + Karapace REST proxy; ``start()``, ``stop()``, the URLs."""

    def __init__(self, workdir: Path, venv: Path, *, rest: bool = True,
                 registry_extra: dict | None = None, rest_extra: dict | None = None):
        self.workdir = Path(workdir)
        self.python = Path(venv) / "bin" / "python"
        self.rest = rest
        self.kafka = KafkaBrokerProcess(self.workdir / "kafka")
        self.registry_port = free_port()
        self.rest_port = free_port()
        self.registry_extra = registry_extra or {}
        self.rest_extra = rest_extra or {}
        self.procs: list[tuple[subprocess.Popen, Path]] = []

    @property
    def registry_url(self) -> str:
        return f"http://127.0.0.1:{self.registry_port}"

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    def _env(self, port: int, extra: dict) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KARAPACE_")}
        env.update({
            "KARAPACE_BOOTSTRAP_URI": self.kafka.bootstrap_servers,
            "KARAPACE_HOST": "127.0.0.1",
            "KARAPACE_PORT": str(port),
            "KARAPACE_ADVERTISED_HOSTNAME": "127.0.0.1",
            "KARAPACE_REGISTRY_HOST": "127.0.0.1",
            "KARAPACE_REGISTRY_PORT": str(self.registry_port),
            "KARAPACE_REPLICATION_FACTOR": "1",
            "KARAPACE_LOG_LEVEL": "WARNING",
            "KARAPACE_LOG_HANDLER": "stdout",
            "KARAPACE_PROTOBUF_RUNTIME_DIRECTORY": str(self.workdir / "protobuf-runtime"),
        })
        env.update(extra)
        return env

    def _spawn(self, name: str, module: str, env: dict) -> None:
        log = self.workdir / f"{name}.log"
        out = log.open("wb")
        proc = subprocess.Popen([str(self.python), "-m", module], env=env, stdout=out,
                                stderr=subprocess.STDOUT, cwd=self.workdir,
                                preexec_fn=die_with_parent)
        self.procs.append((proc, log))

    def _wait_http(self, url: str, what: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc, log in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{what} exited ({proc.returncode}):\n{tail(log)}")
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    if r.status < 500:
                        return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.3)
        raise RuntimeError(f"{what} did not answer {url} in {timeout:.0f} s")

    def start(self) -> "KarapaceStack":
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "protobuf-runtime").mkdir(exist_ok=True)
        self.kafka.start()
        self._spawn("registry", "karapace", self._env(self.registry_port, {
            "KARAPACE_KARAPACE_REGISTRY": "true", **self.registry_extra}))
        # the registry answers /subjects once it has read _schemas and elected itself master
        self._wait_http(self.registry_url + "/subjects", "Karapace's registry")
        self._wait_master()
        if self.rest:
            self._spawn("rest", "karapace.kafka_rest_apis", self._env(self.rest_port, {
                "KARAPACE_KARAPACE_REST": "true", **self.rest_extra}))
            self._wait_http(self.rest_url + "/brokers", "Karapace's REST proxy")
        return self

    def _wait_master(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.registry_url + "/master_available", timeout=5) as r:
                    if b"true" in r.read():
                        return
            except Exception:  # noqa: BLE001
                pass
            time.sleep(0.3)

    def stop(self) -> None:
        for proc, _ in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs.clear()
        self.kafka.stop()
