"""A Kafka Streams word count (``tests/streams/java/WordCountApp.java``, group.protocol=streams)
as a JVM subprocess, for the streams group tests and the compatibility suite (KIP-1071).

``build_classpath(dir)`` fetches Kafka Streams (``tools/kafka_streams/fetch.sh``, idempotent)
and compiles the app with javac once per source (into the ignored cache, beside the jars; ``dir``
only while that cannot be written); ``App`` runs one instance (C1 only and a serial GC, as the
suites' other short-lived JVMs) and reads the tasks it reports; ``counts`` reads the latest
count per word; ``raw`` sends one request frame.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer

from kbroker.wire.protocol import decode_response, encode_request
from tests.support.broker_proc import REPO_ROOT
from tests.support.raw_wire import exchange

APP = "wordcount"
ALL_TASKS = {f"{s}_{p}" for s in (0, 1) for p in range(4)}
REPARTITION = f"{APP}-words-repartition"
CHANGELOG = f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog"


def build_classpath(out: Path) -> str:
    libs = subprocess.run(["bash", str(REPO_ROOT / "tools/kafka_streams/fetch.sh")], check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]
    source = REPO_ROOT / "tests/streams/java/WordCountApp.java"
    cached = Path(libs).parent / f"wordcount-{hashlib.sha256(source.read_bytes()).hexdigest()[:12]}"
    if (cached / "WordCountApp.class").exists():
        return f"{cached}{os.pathsep}{libs}/*"
    subprocess.run(["javac", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-d", str(out),
                    "-cp", f"{libs}/*", str(source)], check=True)
    try:                        # publish whole, once: a copy per process, then a rename
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        shutil.copytree(out, tmp, dirs_exist_ok=True)
        os.replace(tmp, cached)
    except OSError:             # another process published it first, or no cache to write
        shutil.rmtree(tmp, ignore_errors=True)
        return f"{out}{os.pathsep}{libs}/*"
    return f"{cached}{os.pathsep}{libs}/*"


class App:
    """One WordCountApp JVM; its stdout lines in ``out``."""

    def __init__(self, classpath: str, bootstrap: str, workdir: Path, name: str, port: int):
        self.out = workdir / f"{name}.out"
        self.err = workdir / f"{name}.err"
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.proc = subprocess.Popen(
                ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath,
                 "WordCountApp", bootstrap, APP, "lines", "counts",
                 str(workdir / f"state-{name}"), str(port)], stdout=o, stderr=e)

    def tasks(self) -> set[str] | None:
        """The active tasks of the last TASKS line."""
        lines = [x for x in self.out.read_text().splitlines() if x.startswith("TASKS ")]
        if not lines:
            return None
        active = lines[-1].split()[1].split("=", 1)[1]
        return set(active.split(",")) if active else set()

    def hosts(self) -> dict[int, set[str]]:
        """What the last HOSTS line says: application server port → its topic partitions."""
        lines = [x for x in self.out.read_text().splitlines() if x.startswith("HOSTS")]
        out: dict[int, set[str]] = {}
        for entry in (lines[-1].split()[1:] if lines else []):
            port, _, parts = entry.partition("=")
            out[int(port)] = set(parts.split(",")) if parts else set()
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wait_for(what, check, apps, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    logs = "\n".join(f"--- {a.out.name}\n" + a.out.read_text()[-1500:]
                     + a.err.read_text()[-3000:] for a in apps)
    raise AssertionError(f"timed out waiting for {what}\n{logs}")


def counts(bootstrap: str) -> dict[str, int]:
    c = KafkaConsumer("counts", bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                      consumer_timeout_ms=1000)
    latest = {}
    for m in c:
        latest[m.key.decode()] = int(m.value)
    c.close()
    return latest


def produce(bootstrap: str, lines: list[str]) -> None:
    p = KafkaProducer(bootstrap_servers=bootstrap)
    for i, line in enumerate(lines):
        p.send("lines", key=str(i).encode(), value=line.encode())
    p.flush()
    p.close()


def raw(bootstrap: str, api_key: int, version: int, body):
    frame = exchange(bootstrap, encode_request(api_key, version, 7, "test", body))
    return decode_response(frame[4:], api_key, version)[1]


