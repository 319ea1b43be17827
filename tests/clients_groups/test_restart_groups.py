"""Groups and committed offsets survive a broker restart — graceful (SIGTERM) and crash
(SIGKILL) — because they are records in ``__consumer_offsets``, replayed at start-up.
A consumer that keeps running across the restart stays in its (restored, Stable) group."""
from __future__ import annotations

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from tests.support.broker_proc import BrokerProcess

from .conftest import admin, create_topic, produce, wait_until
from .kp_helpers import ConsumerThread, consumer_config


@pytest.mark.parametrize("crash", [False, True], ids=["graceful", "sigkill"])
def test_offsets_and_groups_survive_restart(tmp_path, crash):
    proc = BrokerProcess(tmp_path / "data", overrides={"group.initial.rebalance.delay.ms": "0"})
    proc.start()
    try:
        bs = proc.bootstrap
        create_topic(bs, "t", 2)
        produce(bs, "t", 20, 2)
        # group "done": consumed, committed with metadata, closed (Empty)
        c = KafkaConsumer("t", **consumer_config(bs, "done"))

        def drained():
            c.poll(200)
            return len(c.assignment()) == 2 and all(
                c.position(TopicPartition("t", p)) == 10 for p in (0, 1))
        wait_until(drained, what="done consumed")
        c.commit({TopicPartition("t", 0): OffsetAndMetadata(10, "m0", -1),
                  TopicPartition("t", 1): OffsetAndMetadata(10, "m1", -1)})
        c.close()
        # group "live": a member that stays up across the restart
        live = ConsumerThread(bs, "live", "t")
        wait_until(lambda: len(live.records) == 20, what="live consumed")
        live.commit()
        a = admin(bs)
        before = [m["member_id"] for m in a.describe_groups(["live"])["live"]["members"]]
        a.close()

        proc.restart(crash=crash)

        a = admin(bs)
        groups = {g["group_id"]: g["group_state"] for g in a.list_groups()}
        assert groups.get("done") == "Empty" and "live" in groups
        offs = a.list_group_offsets("done")["done"]
        assert {tp.partition: (om.offset, om.metadata) for tp, om in offs.items()} == \
            {0: (10, "m0"), 1: (10, "m1")}
        live_offs = a.list_group_offsets("live")["live"]
        assert {tp.partition: om.offset for tp, om in live_offs.items()} == {0: 10, 1: 10}
        # the live member carries on: new records arrive once, old ones are not re-read
        produce(bs, "t", 4, 2)
        wait_until(lambda: len(live.records) == 24, 30, what="live after restart")
        assert sorted(live.values()) == sorted(str(i).encode() for i in list(range(20)) + list(range(4)))
        wait_until(lambda: a.describe_groups(["live"])["live"]["group_state"] == "Stable"
                   and len(a.describe_groups(["live"])["live"]["members"]) == 1, 20,
                   what="live group stable with its member")
        # the same member: it heartbeated into the restored generation, no rejoin needed
        assert [m["member_id"] for m in a.describe_groups(["live"])["live"]["members"]] == before
        live.close()
        # a new consumer of "done" starts from the committed offsets
        c2 = ConsumerThread(bs, "done", "t")
        wait_until(lambda: len(c2.records) == 4, 20, what="done resumes")
        assert sorted(o for _, o, _ in c2.records) == [10, 10, 11, 11]
        c2.close()
        a.close()
    finally:
        proc.stop()
