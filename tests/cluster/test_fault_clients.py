"""The fault test's ``GroupCommitter`` (``fault_clients.py``) stops when told, whatever the
cluster does: with the cluster up it commits its last position and leaves the group; with
the cluster gone its last commit waits for a coordinator nobody can reach (the state in
which its synchronous commit never returned, and in which librdkafka's close waits for
every commit it holds) and it gives that commit up and is gone. A real ``kbroker serve``
and a real confluent-kafka consumer."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

from tests.clients.conftest import create_topic
from tests.support.broker_proc import BrokerProcess

from .fault_clients import GroupCommitter, committed_offsets
from .support import wait_for

TOPIC = "committed"


@pytest.fixture
def broker(tmp_path):
    proc = BrokerProcess(tmp_path / "data")
    proc.start()
    try:
        create_topic(proc.bootstrap, TOPIC, 2)
        p = Producer({"bootstrap.servers": proc.bootstrap, "linger.ms": 20})
        for i in range(2_000):
            p.produce(TOPIC, b"%d" % i, partition=i % 2)
        assert p.flush(60) == 0
        yield proc
    finally:
        proc.kill()


def _stopped(committer: GroupCommitter) -> None:
    committer.stop.set()
    committer.join(committer.DRAIN_S + 120)
    assert not committer.is_alive(), "the committer did not stop"
    assert committer.exc is None, repr(committer.exc)


def test_a_stop_with_the_cluster_up_commits_the_last_position_and_leaves(broker):
    committer = GroupCommitter(broker.bootstrap, TOPIC)
    committer.start()
    wait_for(lambda: committer.commits >= 1, timeout=120, what="an acknowledged commit")
    _stopped(committer)
    assert not committer.abandoned and committer.pending == 0
    got = committed_offsets(broker.bootstrap, TOPIC, [0, 1])
    # a partition it read nothing of by the stop has no committed offset (OFFSET_INVALID)
    assert {p: o for p, o in got.items() if o >= 0} == committer.acked, (got, committer.acked)


def test_a_stop_reaches_a_committer_whose_commit_waits_for_a_gone_coordinator(broker):
    committer = GroupCommitter(broker.bootstrap, TOPIC)
    committer.DRAIN_S = 5.0
    committer.start()
    wait_for(lambda: committer.commits >= 1, timeout=120, what="an acknowledged commit")
    broker.kill()
    # its last commit now goes to a coordinator that is gone (a synchronous one never
    # returned): the stop still ends the thread, without the close
    _stopped(committer)
    assert committer.abandoned and committer.pending == 1
