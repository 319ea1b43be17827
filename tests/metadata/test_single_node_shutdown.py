"""The controlled shutdown of a cluster's only broker writes what Kafka 4.4's controller
writes, counted record by record: entering the state, one ``PartitionChangeRecord`` per
partition it leads (leader none: no other broker is acceptable; Kafka's
``handleBrokerInControlledShutdown`` → ``generateLeaderAndIsrUpdates`` over the broker's ISR
partitions, whose ``PartitionChangeBuilder`` elects ``NO_LEADER``), then, once it leads
nothing, the fencing record alone -- the partitions already say leader none, so nothing is
written for them twice. Unfencing after the restart gives them back, one record each
(Kafka's ``handleBrokerUnfenced`` over the leaderless partitions)."""
from __future__ import annotations

import uuid

from kbroker.metadata.controller import NewTopic

from .harness import CLUSTER_ID, Harness, dir_id

PARTITIONS = 30


def kinds(records) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in records:
        out[type(r).__name__] = out.get(type(r).__name__, 0) + 1
    return out


async def test_the_only_broker_leaves_with_one_record_per_led_partition(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    await h.register(1)
    await h.controller.create_topics([NewTopic("x", PARTITIONS, 1)])
    start = h.end
    code, _, fenced, shut = await h.heartbeat(1, want_shut_down=True)
    assert (code, fenced, shut) == (0, False, False)        # it led partitions: CONTROLLED_SHUTDOWN
    recs = h.records(start)
    assert kinds(recs) == {"BrokerRegistrationChangeRecord": 1, "PartitionChangeRecord": PARTITIONS}
    assert all(r.leader == -1 for r in recs if type(r).__name__ == "PartitionChangeRecord")
    assert all(p.leader == -1 for p in h.image.topics["x"].partitions.values())

    start = h.end
    code, _, fenced, shut = await h.heartbeat(1, want_shut_down=True)
    assert (code, fenced, shut) == (0, True, True)          # SHUTDOWN_NOW
    assert kinds(h.records(start)) == {"BrokerRegistrationChangeRecord": 1}

    # the clean restart: a new incarnation proves its clean shutdown (PreviousBrokerEpoch,
    # KIP-966) and writes nothing for the partitions; unfenced, it gets its leaderships back
    old_epoch = h.image.brokers[1].broker_epoch
    start = h.end
    code, _ = await h.controller.register_broker(
        1, CLUSTER_ID, uuid.uuid4(), [("PLAINTEXT", "127.0.0.1", 9001)], None,
        log_dirs=[dir_id(1)], previous_broker_epoch=old_epoch)
    assert code == 0
    assert kinds(h.records(start)) == {"RegisterBrokerRecord": 1}
    start = h.end
    await h.heartbeat(1)
    assert kinds(h.records(start)) == {"BrokerRegistrationChangeRecord": 1, "PartitionChangeRecord": PARTITIONS}
    assert all(p.leader == 1 for p in h.image.topics["x"].partitions.values())
    h.close()
