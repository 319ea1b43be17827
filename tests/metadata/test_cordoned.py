"""Cordoned log directories (KIP-1066) on a real one-voter quorum with virtual brokers: the
heartbeats' ``CordonedLogDirs`` written as registration changes, and placement leaving out a
broker whose dirs are all cordoned (automatic and manual assignments, CreatePartitions)."""
from __future__ import annotations

from kbroker.metadata.controller import NewTopic
from kbroker.wire.error_codes import ErrorCode as E

from .harness import Harness, comparable, dir_id


async def test_cordoned_dirs_are_recorded_and_take_no_new_replicas(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    await h.register(1)
    await h.register(2, log_dirs=[dir_id(2), dir_id(2, 1)])
    await h.register(3)
    # one of broker 2's two dirs cordoned: recorded, and broker 2 still takes replicas
    start = h.end
    await h.heartbeat(2, cordoned_dirs=[dir_id(2, 1)])
    assert h.image.brokers[2].cordoned_log_dirs == (dir_id(2, 1),)
    assert [type(r).__name__ for r in h.records(start)] == ["BrokerRegistrationChangeRecord"]
    start = h.end
    await h.heartbeat(2, cordoned_dirs=[dir_id(2, 1)])      # the same again: nothing written
    await h.heartbeat(2)                                     # null (not caught up yet): nothing
    assert h.end == start
    [res] = await h.controller.create_topics([NewTopic("a", 6, 1)])
    assert res.error_code == 0
    assert {p.replicas[0] for p in h.image.topics["a"].partitions.values()} == {1, 2, 3}
    # every dir of broker 3 cordoned: no new replica goes there
    await h.heartbeat(3, cordoned_dirs=[dir_id(3)])
    [res] = await h.controller.create_topics([NewTopic("b", 6, 2)])
    assert res.error_code == 0
    assert {r for p in h.image.topics["b"].partitions.values() for r in p.replicas} == {1, 2}
    code = (await h.controller.create_partitions([("b", 9, None)]))[0]
    assert {r for p in h.image.topics["b"].partitions.values() for r in p.replicas} == {1, 2}, code
    [res] = await h.controller.create_topics([NewTopic("c", assignments={0: [1, 3]})])
    assert (res.error_code, res.error_message) == (
        E.INVALID_REPLICA_ASSIGNMENT,
        "The manual partition assignment includes broker 3, but all its log directories are cordoned.")
    [res] = await h.controller.create_topics([NewTopic("d", 1, 3)])
    assert res.error_code == E.INVALID_REPLICATION_FACTOR
    # uncordoned (an empty list): it takes replicas again
    await h.heartbeat(3, cordoned_dirs=[])
    assert h.image.brokers[3].cordoned_log_dirs == ()
    [res] = await h.controller.create_topics([NewTopic("d", 1, 3)])
    assert res.error_code == 0
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_every_broker_cordoned(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    await h.register(1)
    await h.heartbeat(1, cordoned_dirs=[dir_id(1)])
    [res] = await h.controller.create_topics([NewTopic("a", 1, 1)])
    assert (res.error_code, res.error_message) == (
        E.INVALID_REPLICATION_FACTOR,
        "Unable to replicate the partition 1 time(s): All brokers are currently fenced, or have all "
            "their log directories cordoned.")
    h.close()
