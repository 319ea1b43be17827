"""A real Kafka Streams application (kafka-streams 4.3.1, ``group.protocol=streams``) against a
kbroker process: the streams group protocol end to end (KIP-1071).

The word count of ``tests/streams/java/WordCountApp.java`` (compiled here with javac; the jars
come from ``tools/kafka_streams/fetch.sh``, which ``make kafka-streams-dist`` runs) has two
subtopologies joined by a repartition topic and a state store with a changelog topic:

- kbroker creates the internal topics the topology asks for and the counts come out right;
- two instances share the eight tasks (StreamsGroupDescribe shows a Stable group of two
  members, ListGroups lists it as a ``streams`` group);
- one instance is SIGKILLed: its session expires, its tasks move to the other one, which
  restores the counts from the changelog and goes on counting.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from kbroker.wire import messages
from kbroker.wire.protocol import decode_response, encode_request
from tests.support.broker_proc import REPO_ROOT, BrokerProcess
from tests.support.raw_wire import exchange

pytestmark = pytest.mark.slow

APP = "wordcount"
ALL_TASKS = {f"{s}_{p}" for s in (0, 1) for p in range(4)}
OVERRIDES = {"offsets.topic.replication.factor": 1, "offsets.topic.num.partitions": 3,
             "group.streams.session.timeout.ms": 6000,
             "group.streams.min.session.timeout.ms": 1000,
             "group.streams.heartbeat.interval.ms": 500,
             "group.streams.min.heartbeat.interval.ms": 100}


@pytest.fixture(scope="module")
def classpath(tmp_path_factory) -> str:
    libs = subprocess.run(["bash", str(REPO_ROOT / "tools/kafka_streams/fetch.sh")], check=True,
                          capture_output=True, text=True).stdout.strip().splitlines()[-1]
    out = tmp_path_factory.mktemp("wordcount-classes")
    subprocess.run(["javac", "-d", str(out), "-cp", f"{libs}/*",
                    str(REPO_ROOT / "tests/streams/java/WordCountApp.java")], check=True)
    return f"{out}{os.pathsep}{libs}/*"


class App:
    """One WordCountApp JVM; its stdout lines in ``out``."""

    def __init__(self, classpath: str, bootstrap: str, workdir: Path, name: str, port: int):
        self.out = workdir / f"{name}.out"
        self.err = workdir / f"{name}.err"
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.proc = subprocess.Popen(
                ["java", "-cp", classpath, "WordCountApp", bootstrap, APP, "lines", "counts",
                 str(workdir / f"state-{name}"), str(port)], stdout=o, stderr=e)

    def tasks(self) -> set[str] | None:
        """The active tasks of the last TASKS line."""
        lines = [x for x in self.out.read_text().splitlines() if x.startswith("TASKS ")]
        if not lines:
            return None
        active = lines[-1].split()[1].split("=", 1)[1]
        return set(active.split(",")) if active else set()

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


def test_word_count_two_instances_and_failover(tmp_path, classpath):
    broker = BrokerProcess(tmp_path / "data", overrides=OVERRIDES).start()
    apps: list[App] = []
    try:
        bs = broker.bootstrap
        admin = KafkaAdminClient(bootstrap_servers=bs)
        admin.create_topics([NewTopic("lines", 4, 1), NewTopic("counts", 1, 1)])
        admin.close()
        produce(bs, ["the quick brown fox", "jumps over the lazy dog", "The end"] * 10)
        want = {"the": 30, "quick": 10, "brown": 10, "fox": 10, "jumps": 10, "over": 10,
                "lazy": 10, "dog": 10, "end": 10}
        apps = [App(classpath, bs, tmp_path, "a", 7301), App(classpath, bs, tmp_path, "b", 7302)]
        a, b = apps
        wait_for("the counts", lambda: counts(bs) == want, apps)
        wait_for("two instances sharing the tasks",
                 lambda: (a.tasks() and b.tasks() and not (a.tasks() & b.tasks())
                          and a.tasks() | b.tasks() == ALL_TASKS), apps)

        # the broker created the internal topics with the derived partition counts
        md = raw(bs, 3, 12, messages.MetadataRequest(topics=None, allow_auto_topic_creation=False))
        internal = {t.name: len(t.partitions) for t in md.topics if t.name.startswith(APP + "-")}
        assert internal == {f"{APP}-words-repartition": 4,
                            f"{APP}-KSTREAM-AGGREGATE-STATE-STORE-0000000004-changelog": 4}

        # StreamsGroupDescribe and ListGroups see a streams group
        d = raw(bs, 89, 0, messages.StreamsGroupDescribeRequest(group_ids=[APP],
                                                                include_authorized_operations=False))
        (g,) = d.groups
        assert (g.error_code, g.group_state, len(g.members)) == (0, "Stable", 2)
        assert sorted(s.subtopology_id for s in g.topology.subtopologies) == ["0", "1"]
        assert {m.user_endpoint.port for m in g.members} == {7301, 7302}
        owned = sorted(f"{t.subtopology_id}_{p}" for m in g.members
                       for t in m.assignment.active_tasks for p in t.partitions)
        assert owned == sorted(ALL_TASKS)
        lg = raw(bs, 16, 5, messages.ListGroupsRequest(states_filter=[], types_filter=["streams"]))
        assert [(x.group_id, x.group_type, x.protocol_type) for x in lg.groups] == [
            (APP, "streams", "streams")]

        # one instance dies: the other one takes every task and goes on counting
        b.proc.kill()
        b.proc.wait()
        wait_for("the survivor running every task", lambda: a.tasks() == ALL_TASKS, apps)
        produce(bs, ["zebra yak", "yak"])
        wait_for("the counts after the failover",
                 lambda: {k: v for k, v in counts(bs).items() if k in ("zebra", "yak")}
                 == {"zebra": 1, "yak": 2}, apps)
        after = counts(bs)
        assert all(after[w] >= n for w, n in want.items())
    finally:
        for x in apps:
            x.stop()
        broker.stop()
