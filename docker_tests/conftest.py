"""Smoke tests of the container image against a real Docker engine (``make docker-test``).

They drive the engine with the ``docker`` SDK and real Kafka clients: confluent-kafka on the
host (through ports published on 127.0.0.1 only) and kafka-python in a client container
(``docker_tests/client``) on a user-defined network. Images: ``KBROKER_IMAGE`` (default
``kbroker:test``) and ``KBROKER_CLIENT_IMAGE`` (``kbroker-test-client:latest``), both built
by the Makefile. Everything a test creates carries the label ``kbroker-docker-test`` (its
value: the pid of the pytest session that made it; compose projects carry that pid in their
name) and is removed after the test. What an interrupted session left behind is removed when
the next session starts, but only once its session's process is gone: two sessions on one
engine (a developer's run beside `make flake-hunt`) never remove each other's containers.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

import docker
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

LABEL = "kbroker-docker-test"
IMAGE = os.environ.get("KBROKER_IMAGE", "kbroker:test")
CLIENT_IMAGE = os.environ.get("KBROKER_CLIENT_IMAGE", "kbroker-test-client:latest")
COMPOSE = os.environ.get("KBROKER_COMPOSE", "docker-compose")
COMPOSE_PREFIX = "kbrokerdockertest"
OWNER = str(os.getpid())      # this session's mark on what it creates
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
REPO = Path(__file__).resolve().parents[1]


def _removable(owner: str | None, mine_only: bool) -> bool:
    """Whether this session may remove what ``owner`` made: its own always; at start-up
    also what a session whose process is gone made, or an older run that marked nothing
    but ``1`` (or named its compose project without a pid)."""
    if owner == OWNER:
        return True
    if mine_only:
        return False
    if owner is None or not owner.isdigit() or owner == "1":
        return True
    try:
        os.kill(int(owner), 0)
    except ProcessLookupError:
        return True
    except OSError:            # alive, another user's
        return False
    return False


def project_name() -> str:
    """A compose project name that says which session made it."""
    return f"{COMPOSE_PREFIX}{OWNER}x{uuid.uuid4().hex[:8]}"


def _project_owner(project: str) -> str | None:
    rest = project[len(COMPOSE_PREFIX):]
    return rest.split("x", 1)[0] if "x" in rest else None


def purge(dk, mine_only: bool = False) -> None:
    for c in dk.containers.list(all=True, filters={"label": LABEL}):
        if _removable(c.labels.get(LABEL), mine_only):
            c.remove(force=True, v=True)
    for c in dk.containers.list(all=True, filters={"label": "com.docker.compose.project"}):
        project = c.labels.get("com.docker.compose.project", "")
        if project.startswith(COMPOSE_PREFIX) and _removable(_project_owner(project), mine_only):
            c.remove(force=True, v=True)
    for n in dk.networks.list():
        labels = n.attrs.get("Labels") or {}
        if (LABEL in labels and _removable(labels[LABEL], mine_only)) or \
                (n.name.startswith(COMPOSE_PREFIX) and _removable(_project_owner(n.name), mine_only)):
            n.remove()
    for v in dk.volumes.list():
        labels = v.attrs.get("Labels") or {}
        if (LABEL in labels and _removable(labels[LABEL], mine_only)) or \
                (v.name.startswith(COMPOSE_PREFIX) and _removable(_project_owner(v.name), mine_only)):
            v.remove(force=True)


@pytest.fixture(scope="session")
def dk():
    client = docker.from_env(timeout=120)
    client.ping()
    for image in (IMAGE, CLIENT_IMAGE):
        client.images.get(image)        # built by `make docker-test`
    purge(client)
    yield client
    purge(client, mine_only=True)
    client.close()


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def name(prefix: str) -> str:
    return f"kbt-{prefix}-{uuid.uuid4().hex[:6]}"


class Lab:
    """Creates labelled containers and networks for one test; ``close`` removes them."""

    def __init__(self, dk):
        self.dk = dk
        self.containers = []
        self.networks = []

    def network(self):
        n = self.dk.networks.create(name("net"), driver="bridge", labels={LABEL: OWNER})
        self.networks.append(n)
        return n

    def run(self, image=IMAGE, command=None, **kw):
        kw.setdefault("detach", True)
        labels = dict(kw.pop("labels", {}), **{LABEL: OWNER})
        c = self.dk.containers.run(image, command, labels=labels, **kw)
        self.containers.append(c)
        return c

    def broker(self, cname: str, env: dict, host_port: int | None = None, network=None, **kw):
        ports = {"9092/tcp": ("127.0.0.1", host_port)} if host_port else None
        return self.run(name=cname, hostname=cname, environment=env, ports=ports,
                        network=network.name if network else None, **kw)

    def client(self, script: str, network=None, timeout: float = 120, **kw) -> dict:
        """Run ``script`` in the kafka-python client container; its last stdout line as JSON."""
        c = self.run(CLIENT_IMAGE, ["-c", script], network=network.name if network else None, **kw)
        status = c.wait(timeout=timeout)["StatusCode"]
        out = c.logs(stdout=True, stderr=False).decode()
        assert status == 0, f"client failed ({status}):\n{c.logs().decode()[-3000:]}"
        return json.loads(out.strip().splitlines()[-1])

    def close(self):
        for c in self.containers:
            try:
                c.remove(force=True, v=True)
            except docker.errors.NotFound:
                pass
        for n in self.networks:
            n.remove()


@pytest.fixture
def lab(dk):
    lb = Lab(dk)
    yield lb
    lb.close()


def logs(c) -> str:
    return c.logs().decode(errors="replace")


def wait_ready(c, timeout: float = 60, starts: int = 1) -> None:
    """Until the broker has logged ``kbroker ready:`` ``starts`` times (the logs of a
    restarted container keep the earlier runs); fails with the logs if the container ends."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = logs(c)
        if text.count("kbroker ready:") >= starts:
            return
        c.reload()
        if c.status in ("exited", "dead"):
            pytest.fail(f"{c.name} exited:\n{text[-3000:]}")
        time.sleep(0.2)
    pytest.fail(f"{c.name} not ready within {timeout} s:\n{logs(c)[-3000:]}")


def health(c) -> str:
    c.reload()
    return c.attrs["State"].get("Health", {}).get("Status", "none")


def wait_healthy(c, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = health(c)
        if status == "healthy":
            return
        if c.status in ("exited", "dead"):
            pytest.fail(f"{c.name} exited:\n{logs(c)[-3000:]}")
        time.sleep(0.5)
    log = c.attrs["State"].get("Health", {}).get("Log", [])
    pytest.fail(f"{c.name} not healthy within {timeout} s: {log[-2:]}\n{logs(c)[-2000:]}")


def node_env(cname: str, node_id: int, voters: str, host_port: int, **extra) -> dict:
    """Two listeners, as with Kafka's image: PLAINTEXT for containers on the network
    (advertised by container name), PLAINTEXT_HOST for the host (the published port)."""
    env = {
        "KAFKA_NODE_ID": str(node_id),
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://:19092,CONTROLLER://:9093,PLAINTEXT_HOST://:9092",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{cname}:19092,PLAINTEXT_HOST://127.0.0.1:{host_port}",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": voters,
        "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
        "CLUSTER_ID": CLUSTER_ID,
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    }
    env.update({k: str(v) for k, v in extra.items()})
    return env


# ---------------------------------------------------------------- host-side Kafka clients

def create_topic(bootstrap: str, topic: str, partitions: int = 1, rf: int = 1, **config) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, partitions, rf, config={k: str(v) for k, v in config.items()})],
                              request_timeout=30)[topic]
    fut.result(timeout=60)


def produce(bootstrap: str, topic: str, values, **conf) -> list[bytes]:
    """Produce ``values`` with acks=all; the values the broker acknowledged."""
    acked: list[bytes] = []

    def on_delivery(err, msg):
        if err is None:
            acked.append(msg.value())

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 60000, **conf})
    for v in values:
        p.produce(topic, v, on_delivery=on_delivery)
        p.poll(0)
    assert p.flush(90) == 0, "records left unacknowledged"
    return acked


def consume_all(bootstrap: str, topic: str, timeout: float = 60) -> list[bytes]:
    """Every record of ``topic`` from the log start to the high watermarks (read_committed off)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": name("g"), "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        parts = c.list_topics(topic, timeout=30).topics[topic].partitions
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        out, pos = [], {p: 0 for p in parts}
        deadline = time.monotonic() + timeout
        while any(pos[p] < ends[p] for p in parts) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            out.append(m.value())
            pos[m.partition()] = m.offset() + 1
        assert all(pos[p] >= ends[p] for p in parts), f"read {pos}, ends {ends}"
        return out
    finally:
        c.close()


def compose(project: str, file: str, env: dict, *args: str, timeout: float = 180) -> str:
    full_env = dict(os.environ, **env)
    r = subprocess.run([COMPOSE, "-p", project, "-f", str(REPO / "docker" / file), *args],
                       env=full_env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{COMPOSE} {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout + r.stderr
