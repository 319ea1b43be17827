"""A real Apache Kafka broker for the compatibility suite, run from Maven Central jars.

The version is pinned once, in tools/kafka_dist/pom.xml; tools/fetch_kafka.sh copies its jars
into .cache/kafka/<version>/libs. `KafkaBrokerProcess` runs one KRaft node in combined mode
(broker + controller in one JVM, node id 1, a static single-voter quorum on its own loopback
port):

1. first start: write server.properties, format the data dir with the storage tool
   (`kafka.tools.StorageTool format`, through compat_tests/cli.py), using a fresh random
   cluster id;
2. every start: `java -Xmx1G ... kafka.Kafka server.properties`, logs through
   log4j2-broker.properties into <workdir>/logs/server.log (stdout stays almost silent);
3. ready when ApiVersions is answered and Metadata lists the broker (it has registered with
   its controller and is unfenced).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

from compat_tests.runner import (SINGLE_NODE_CONFIG, BrokerProcess, BrokerStartError,  # noqa: F401
                                 combined_node_config, free_port, tail)

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "tools" / "kafka_dist" / "pom.xml"
FETCH = ROOT / "tools" / "fetch_kafka.sh"
HERE = Path(__file__).resolve().parent
BROKER_LOG4J = HERE / "log4j2-broker.properties"
TOOLS_LOG4J = HERE / "log4j2-tools.properties"

# Main classes of the pinned release (Kafka 4.x moved most tools to org.apache.kafka.tools).
BROKER_MAIN = "kafka.Kafka"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"

# Short-lived tools: C1 only and a serial GC start a JVM about twice as fast.
FAST_START_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"]

# A second reference release (``pytest compat_tests --kafka-version=4.3.1`` sets it, and so may
# the environment): the Kafka target, its tools and the version-dependent expectations follow it.
VERSION_ENV = "KBROKER_KAFKA_VERSION"


def pinned_kafka_version() -> str:
    """The pinned Kafka version, read from the pom (the one place it is written)."""
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if not match:
        raise RuntimeError(f"no <kafka.version> in {POM}")
    return match.group(1).strip()


def kafka_version() -> str:
    """The Kafka release the suite runs against: the pin, or the one ``VERSION_ENV`` names."""
    return os.environ.get(VERSION_ENV) or pinned_kafka_version()


@functools.cache
def kafka_libs() -> Path:
    """The folder of the pinned Kafka's jars, fetching them first if needed (idempotent)."""
    version = kafka_version()
    libs = ROOT / ".cache" / "kafka" / version / "libs"
    if not (libs.parent / ".complete").exists():
        result = subprocess.run(["bash", str(FETCH), version], capture_output=True, text=True, timeout=900)
        if result.returncode != 0:
            raise RuntimeError(f"tools/fetch_kafka.sh failed ({result.returncode}):\n"
                               f"{result.stdout}\n{result.stderr}")
    if not any(libs.glob(f"kafka_2.13-{version}.jar")):
        raise RuntimeError(f"Kafka {version} jars missing in {libs}; run "
                           f"`make kafka-dist` (`bash tools/fetch_kafka.sh {version}`)")
    return libs


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise RuntimeError("java not found (Java 17+ is needed for the Kafka side)")
    return found


def java_command(main: str, args: list[str], *, heap: str, log4j: Path,
                 extra_jvm: list[str] = ()) -> list[str]:
    return [java(), f"-Xmx{heap}", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log4j}", *extra_jvm,
            "-cp", f"{kafka_libs()}/*", main, *args]


# --- class data sharing ------------------------------------------------------------------------
# The classes a Kafka JVM loads to start, read once from the jars into an archive under .cache
# and mapped by the next JVMs (JDK's dynamic AppCDS), cut its start-up CPU by about a third (a
# tool against a broker: 0.8 -> 0.45 s; a broker: 3 -> 2 s). The same classes run, from the
# archive instead of the jars: nothing Kafka does changes. One archive per kind of JVM ("tool",
# "broker"), java binary and jar folder. While there is none, one JVM of a kind at a time (per
# test process) writes its classes at exit into a private file; the file is published with
# os.replace only once a JVM started with it under -Xshare:on ran cleanly, because a damaged
# archive crashes the JVM instead of being ignored.
_DUMPING: set[str] = set()


def class_archive(kind: str) -> Path:
    key = hashlib.sha256(f"{os.path.realpath(java())}|{kafka_libs()}".encode()).hexdigest()[:12]
    return kafka_libs().parent / "cds" / f"{kind}-{key}.jsa"


def class_sharing(kind: str) -> tuple[list[str], Path | None]:
    """JVM flags for `kind` (see above) and the private file this JVM dumps to, if any; hand
    that file to `publish_class_archive` once the JVM has exited."""
    archive = class_archive(kind)
    quiet = "-Xlog:cds*=off"           # the dump's warnings would go to the tool's stdout
    if archive.exists():
        return [f"-XX:SharedArchiveFile={archive}", quiet], None
    if kind in _DUMPING:
        return [], None
    _DUMPING.add(kind)
    archive.parent.mkdir(parents=True, exist_ok=True)
    private = archive.with_name(f"{archive.stem}.{os.getpid()}.{uuid.uuid4().hex[:6]}.tmp")
    return [f"-XX:ArchiveClassesAtExit={private}", quiet], private


def publish_class_archive(kind: str, private: Path | None) -> None:
    if private is None:
        return
    _DUMPING.discard(kind)
    try:
        if private.exists() and private.stat().st_size > 0:
            check = subprocess.run([java(), "-Xshare:on", f"-XX:SharedArchiveFile={private}",
                                    *FAST_START_JVM[:2], "-cp", f"{kafka_libs()}/*", "-version"],
                                   capture_output=True, timeout=60)
            if check.returncode == 0:
                os.replace(private, class_archive(kind))
    except (OSError, subprocess.SubprocessError):
        pass
    finally:
        private.unlink(missing_ok=True)


def random_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, not starting with '-'."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


class KafkaBrokerProcess(BrokerProcess):
    """One Apache Kafka KRaft combined-mode node; see the module docstring."""

    target = "kafka"
    start_timeout = 120.0  # a cold JVM on 2 busy cores
    stop_timeout = 45.0
    need_metadata = True

    def __init__(self, workdir: Path, overrides: dict[str, str] | None = None):
        super().__init__(workdir, overrides)
        self.controller_port = free_port()
        self.config_path = self.workdir / "server.properties"
        self.logs_dir = self.workdir / "logs"
        self.version = kafka_version()

    def config(self) -> dict[str, str]:
        cfg = combined_node_config(self.host, self.port, self.controller_port, self.data_dir)
        cfg.update(self.overrides)
        return cfg

    def prepare(self) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.config().items()))
        if (self.data_dir / "meta.properties").exists():
            return  # already formatted: a restart
        from compat_tests.cli import run_tool     # cli imports this module
        # the paths are absolute: the tool runs in the test process's tool JVM (tool_jvm.py)
        result = run_tool(STORAGE_TOOL_MAIN, ["format", "-t", random_cluster_id(),
                                              "-c", str(self.config_path.resolve())], timeout=120)
        if result.returncode != 0:
            raise BrokerStartError(f"kafka storage format failed ({result.returncode}):\n"
                                   f"{result.stdout}\n{result.stderr}")

    def command(self) -> list[str]:
        # C1 only + serial GC halves start-up on 2 cores; the suite measures behaviour, not
        # Kafka's speed (benchmarks run Kafka with its own production flags).
        cds, self._class_dump = class_sharing("broker")
        return java_command(BROKER_MAIN, [str(self.config_path)], heap="1G", log4j=BROKER_LOG4J,
                            extra_jvm=[f"-Dkafka.logs.dir={self.logs_dir}", "-Xms256m",
                                       "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", *cds])

    def stop(self, timeout: float | None = None) -> int | None:
        try:
            return super().stop(timeout)
        finally:
            publish_class_archive("broker", getattr(self, "_class_dump", None))
            self._class_dump = None

    def kill(self) -> int | None:
        try:
            return super().kill()
        finally:                    # no dump at a SIGKILL: let another broker write one
            publish_class_archive("broker", getattr(self, "_class_dump", None))
            self._class_dump = None

    def start_hint(self) -> str:
        return f"--- last lines of {self.logs_dir / 'server.log'} ---\n" \
               f"{tail(self.logs_dir / 'server.log')}\n"

