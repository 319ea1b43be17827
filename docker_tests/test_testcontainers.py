"""testcontainers' Kafka modules start kbroker's image unchanged — the Python module here, the
Java and Go modules through the small projects next to this file — and a record goes through
the port each module maps and advertises.

What each module runs (read from their sources; the image's side is docker/compat and
kbroker/container): testcontainers-python 4.15 overrides the command with a wait loop, copies
in a script that exports the advertised listeners and runs ``/etc/confluent/docker/configure``
and ``launch`` — after ``zookeeper-server-start`` by default, after editing ``configure`` to
format the storage with ``with_kraft()`` — and waits for ``[KafkaServer id=N] started`` (resp.
``Kafka Server started``). testcontainers-java's ``org.testcontainers.kafka.KafkaContainer``
(apache/kafka images) runs ``/etc/kafka/docker/run``, its ``ConfluentKafkaContainer``
``/etc/confluent/docker/run``; testcontainers-go's module runs
``/etc/confluent/docker/configure`` and ``launch`` after the same edits; both wait for
``Transitioning from RECOVERY to RUNNING``.

Testcontainers' Ryuk sidecar (it removes containers when the test process dies) cannot be
pulled here: it is disabled (``TESTCONTAINERS_RYUK_DISABLED=true``), and every container gets
the suite's label so that ``conftest.purge`` removes what an interrupted run leaves.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
from testcontainers.community.kafka import KafkaContainer  # noqa: E402

from tests.support.go_build import DOWNLOADS, go_settings  # noqa: E402

from .conftest import IMAGE, LABEL, OWNER, REPO, consume_all, create_topic, logs, produce  # noqa: E402

# testcontainers-python's with_kraft() reads the image tag as a Confluent Platform version and
# wants 7.0.0 or later; the images get such a tag for that test only
CP_TAG = "7.9.0"
# side by side (make docker-test-kafka): Apache Kafka 4.3.1 as benchmarks/docker_kafka builds it,
# which answers the same entry points, through the same modules and the same checks
KAFKA_IMAGE = os.environ.get("KBROKER_TC_KAFKA_IMAGE")
IMAGES = {"kbroker": IMAGE, **({"kafka": KAFKA_IMAGE} if KAFKA_IMAGE else {})}
PYTHON_CASES = [("kbroker", "zookeeper"), ("kbroker", "kraft")] + (
    [("kafka", "kraft")] if KAFKA_IMAGE else [])      # Kafka 4 has no ZooKeeper mode


@pytest.fixture(scope="module")
def cp_tagged(dk):
    """target → its image under a Confluent-Platform-like tag, removed afterwards."""
    out = {}
    for target, image in IMAGES.items():
        repo = f"kbroker-tc/{target}-as-cp-kafka"
        dk.images.get(image).tag(repo, CP_TAG)
        out[target] = f"{repo}:{CP_TAG}"
    yield out
    for tagged in out.values():
        dk.images.remove(tagged, noprune=True)


def start(container: KafkaContainer) -> KafkaContainer:
    container.with_kwargs(labels={LABEL: OWNER})
    try:
        container.start(timeout=120)
    except Exception:
        wrapped = container.get_wrapped_container()
        text = logs(wrapped) if wrapped is not None else "(no container)"
        container.stop()
        pytest.fail(f"testcontainers could not start {container.image}:\n{text[-3000:]}")
    return container


def round_trip(bootstrap: str, topic: str) -> None:
    create_topic(bootstrap, topic)
    values = [f"{topic}-{i}".encode() for i in range(5)]
    assert produce(bootstrap, topic, values) == values
    assert consume_all(bootstrap, topic) == values


@pytest.mark.parametrize("target,mode", PYTHON_CASES)
def test_testcontainers_python_kafka_module(dk, cp_tagged, target, mode):
    if mode == "kraft":
        kafka = start(KafkaContainer(image=cp_tagged[target]).with_kraft())
    else:
        kafka = start(KafkaContainer(image=IMAGES[target]))
    try:
        # the clients are sent to the advertised listener: the module's mapped port
        round_trip(kafka.get_bootstrap_server(), f"tc-python-{mode}")
        if target != "kbroker":
            return
        text = logs(kafka.get_wrapped_container())
        # configured through Confluent's entry points, from the variables the module set
        assert "exec kbroker serve --kafka-start-lines --config /etc/kafka/kafka.properties" in text
        assert "advertised.listeners <- KAFKA_ADVERTISED_LISTENERS" in text
        if mode == "kraft":
            # the storage was formatted with the module's cluster id by the line it appended
            assert "(node 1, cluster MkU3OEVBNTcwNTJENDM2Qk," in text
        else:
            assert "zookeeper.connect (KAFKA_ZOOKEEPER_CONNECT) left out" in text
    finally:
        kafka.stop()


def run_project(cmd: list[str], cwd, env: dict, image: str, timeout: float = 900) -> str:
    # this machine is itself a container: the Java and Go modules would look for the Docker
    # host through its default gateway (Java runs an alpine image for that, which cannot be
    # pulled); the engine runs here, so its published ports are on localhost
    full = dict(os.environ, TESTCONTAINERS_RYUK_DISABLED="true", KBROKER_IMAGE=image,
                KBROKER_DOCKER_TEST_OWNER=OWNER, **env)
    full.setdefault("TESTCONTAINERS_HOST_OVERRIDE", "localhost")
    r = subprocess.run(cmd, cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}):\n{out[-6000:]}"
    return out


@pytest.mark.parametrize("target", list(IMAGES))
def test_testcontainers_java_kafka_module(dk, target):
    """docker_tests/java: JUnit 5, org.testcontainers.kafka.KafkaContainer with the image
    declared a compatible substitute for apache/kafka, and ConfluentKafkaContainer (the same
    variables, /etc/confluent/docker/run) for confluentinc/cp-kafka; jars from Maven Central,
    cached."""
    if shutil.which("mvn") is None:
        pytest.fail("mvn is missing (Debian's maven package)")
    out = run_project(["mvn", "-q", "-B", "-Dmaven.repo.local=" + str(DOWNLOADS / "m2"),
                       "-Dsurefire.printSummary=true", "test"], REPO / "docker_tests" / "java", {},
                      IMAGES[target])
    reports = list((REPO / "docker_tests" / "java" / "target" / "surefire-reports").glob("TEST-*.xml"))
    assert reports, out[-3000:]
    text = "".join(r.read_text() for r in reports)
    # both modules: KafkaContainer (apache/kafka) and ConfluentKafkaContainer (cp-kafka)
    assert 'tests="2"' in text and 'failures="0"' in text and 'errors="0"' in text
    assert 'skipped="0"' in text


@pytest.mark.parametrize("target", list(IMAGES))
def test_testcontainers_go_kafka_module(dk, target):
    """docker_tests/go: testcontainers-go's kafka module and sarama (its own test client)."""
    if shutil.which("go") is None:
        pytest.fail("go is missing")
    env = go_settings()
    out = run_project(["go", "test", "-count=1", "-v", "./..."], REPO / "docker_tests" / "go", env,
                      IMAGES[target])
    assert re.search(r"^--- PASS: TestKafkaModuleStartsKbroker", out, re.M), out[-3000:]
    assert "--- SKIP" not in out
