"""AlterPartition on the quorum controller (Kafka's ``ReplicationControlManager.alterPartition``
rules, in Kafka's order), the elections of fencing / unfencing / controlled shutdown, and the
channel's local path.

A real one-voter quorum (tests/metadata/harness.py) with virtual brokers 2, 3, 4 that register
and heartbeat by calling the controller, as the controller-listener handlers would."""
from __future__ import annotations

import uuid

from kbroker.metadata.channel import AlterPartitionResult, ControllerChannel
from kbroker.metadata.controller import NewTopic
from kbroker.wire import messages as w
from kbroker.wire.error_codes import ErrorCode as E

from .harness import Harness, comparable

R = w.AlterPartitionRequest


def topic_data(h, topic: str, partition: int, isr, *, version: int = 3, leader_epoch=None,
               partition_epoch=None, epochs=None, recovery: int = 0):
    """One partition's AlterPartition entry, epochs from the image unless given."""
    t = h.image.topics.get(topic)
    p = t.partitions.get(partition) if t is not None else None
    le = leader_epoch if leader_epoch is not None else (p.leader_epoch if p else 0)
    pe = partition_epoch if partition_epoch is not None else (p.partition_epoch if p else 0)
    pd = R.PartitionData(partition_index=partition, leader_epoch=le, partition_epoch=pe,
                         leader_recovery_state=recovery)
    if version >= 3:
        epochs = epochs or {}
        pd.new_isr_with_epochs = [R.BrokerState(broker_id=r, broker_epoch=epochs.get(
            r, h.image.brokers[r].broker_epoch if r in h.image.brokers else -1)) for r in isr]
    else:
        pd.new_isr = list(isr)
    return R.TopicData(topic_id=t.topic_id if t is not None else uuid.uuid4(), partitions=[pd])


async def alter(h, broker: int, topic: str, partition: int, isr, *, version: int = 3,
                broker_epoch=None, **kw) -> AlterPartitionResult:
    epoch = h.image.brokers[broker].broker_epoch if broker_epoch is None else broker_epoch
    code, results = await h.controller.alter_partition(
        broker, epoch, [topic_data(h, topic, partition, isr, version=version, **kw)], version=version)
    if code:
        assert results == []
        return AlterPartitionResult(code)
    [(_, [(index, result)])] = results
    assert index == partition
    return result


async def cluster(tmp_path, nursery, brokers=(1, 2, 3, 4)):
    h = await Harness(tmp_path).start(nursery)
    for b in brokers:
        await h.register(b)
    # replicas in a fixed order: partition 0 led by 1, partition 1 led by 2
    [res] = await h.controller.create_topics([NewTopic("r", assignments={0: [1, 2, 3], 1: [2, 3, 1]})])
    assert res.error_code == 0
    return h


def state(h, topic="r", partition=0):
    p = h.image.topics[topic].partitions[partition]
    return p.leader, p.leader_epoch, p.isr, p.partition_epoch


async def test_shrink_and_expand_write_one_record_each(tmp_path, nursery):
    h = await cluster(tmp_path, nursery)
    assert state(h) == (1, 0, (1, 2, 3), 0)
    start = h.end
    r = await alter(h, 1, "r", 0, [1, 2])
    assert r == AlterPartitionResult(E.NONE, 1, 0, (1, 2), 1)
    [rec] = h.records(start)
    assert type(rec).__name__ == "PartitionChangeRecord"
    assert (rec.topic_id, rec.partition_id, rec.isr, rec.leader) == (h.image.topics["r"].topic_id, 0, [1, 2], -2)
    assert state(h) == (1, 0, (1, 2), 1), "partition epoch + 1, leader epoch unchanged"

    start = h.end
    r = await alter(h, 1, "r", 0, [1, 2, 3])
    assert r == AlterPartitionResult(E.NONE, 1, 0, (1, 2, 3), 2)
    assert len(h.records(start)) == 1 and state(h) == (1, 0, (1, 2, 3), 2)

    # the same ISR again: no record, the current state
    start = h.end
    r = await alter(h, 1, "r", 0, [1, 2, 3])
    assert r == AlterPartitionResult(E.NONE, 1, 0, (1, 2, 3), 2)
    assert h.end == start

    # v2 without broker epochs (v0-v1, by topic name, are gone in Kafka 4)
    r = await alter(h, 2, "r", 1, [2, 3], version=2)
    assert r == AlterPartitionResult(E.NONE, 2, 0, (2, 3), 1)
    r = await alter(h, 2, "r", 1, [2, 3, 1], version=2)
    assert r == AlterPartitionResult(E.NONE, 2, 0, (2, 3, 1), 2)
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_every_refusal_in_kafkas_order_writes_nothing(tmp_path, nursery):
    h = await cluster(tmp_path, nursery)
    await alter(h, 1, "r", 0, [1, 2])                    # partition epoch 1 now
    start = h.end

    # the requester's broker epoch: the whole request
    assert (await alter(h, 1, "r", 0, [1], broker_epoch=12345)).error_code == E.STALE_BROKER_EPOCH
    code, results = await h.controller.alter_partition(9, 0, [topic_data(h, "r", 0, [1])])
    assert (code, results) == (E.STALE_BROKER_EPOCH, [])

    # unknown topic id; unknown partition
    code, [(_, answers)] = await h.controller.alter_partition(
        1, h.image.brokers[1].broker_epoch, [R.TopicData(topic_id=uuid.uuid4(), partitions=[
            R.PartitionData(partition_index=0), R.PartitionData(partition_index=1)])], version=3)
    assert code == 0 and [(i, r.error_code) for i, r in answers] == [(0, E.UNKNOWN_TOPIC_ID),
                                                                    (1, E.UNKNOWN_TOPIC_ID)]
    assert (await alter(h, 1, "r", 7, [1])).error_code == E.UNKNOWN_TOPIC_OR_PARTITION

    # epochs newer than the controller's: it is likely not the controller any more
    assert (await alter(h, 1, "r", 0, [1], leader_epoch=5)).error_code == E.NOT_CONTROLLER
    assert (await alter(h, 1, "r", 0, [1], partition_epoch=5)).error_code == E.NOT_CONTROLLER
    # an older leader epoch is checked before who asks
    assert (await alter(h, 2, "r", 0, [1], leader_epoch=-1)).error_code == E.FENCED_LEADER_EPOCH
    # not the leader
    assert (await alter(h, 2, "r", 0, [1, 2])).error_code == E.INVALID_REQUEST
    # an older partition epoch
    assert (await alter(h, 1, "r", 0, [1], partition_epoch=0)).error_code == E.INVALID_UPDATE_VERSION
    # ISR: a broker that is not a replica, a duplicate, without the leader
    assert (await alter(h, 1, "r", 0, [1, 4])).error_code == E.INVALID_REQUEST
    assert (await alter(h, 1, "r", 0, [1, 2, 2])).error_code == E.INVALID_REQUEST
    assert (await alter(h, 1, "r", 0, [2, 3])).error_code == E.INVALID_REQUEST
    # RECOVERING: kbroker never elects uncleanly
    assert (await alter(h, 1, "r", 0, [1], recovery=1)).error_code == E.INVALID_REQUEST
    # a member's broker epoch (v3) that is not its registration
    assert (await alter(h, 1, "r", 0, [1, 2, 3], epochs={3: 999})).error_code == E.INELIGIBLE_REPLICA
    assert h.end == start, "refusals write nothing"

    # a fenced broker is ineligible: INELIGIBLE_REPLICA (v2+)
    await h.heartbeat(3, want_fence=True)
    assert h.image.brokers[3].fenced and 3 not in h.image.topics["r"].partitions[0].isr
    start = h.end
    assert (await alter(h, 1, "r", 0, [1, 2, 3])).error_code == E.INELIGIBLE_REPLICA
    assert (await alter(h, 1, "r", 0, [1, 2, 3], version=2)).error_code == E.INELIGIBLE_REPLICA
    assert h.end == start
    h.close()


async def test_fencing_elects_from_the_live_isr_in_replica_order(tmp_path, nursery):
    h = await cluster(tmp_path, nursery)
    res = await h.controller.create_topics([NewTopic("s", assignments={0: [1, 3, 2]}),
                                            NewTopic("u", assignments={0: [4]})])
    assert [r.error_code for r in res] == [0, 0]
    await h.heartbeat(1, want_fence=True)
    s0 = h.image.topics["s"].partitions[0]
    assert (s0.leader, s0.isr, s0.leader_epoch) == (3, (3, 2), 1), "first live ISR member in replica order"
    r1 = h.image.topics["r"].partitions[1]
    assert (r1.leader, r1.isr, r1.leader_epoch) == (2, (2, 3), 0), "a follower leaves the ISR, no election"

    # the only ISR member goes: leader -1, the ISR empties and it is an eligible leader
    # replica (ELR, KIP-966, on by default); back when it is unfenced
    await h.heartbeat(4, want_fence=True)
    s1 = h.image.topics["u"].partitions[0]
    assert (s1.leader, s1.isr, s1.elr) == (-1, (), (4,))
    code, _, fenced, _ = await h.heartbeat(4)
    assert (code, fenced) == (0, False)
    s1 = h.image.topics["u"].partitions[0]
    assert (s1.leader, s1.isr, s1.leader_epoch) == (4, (4,), 2)

    # unfencing 1 does not make it leader or ISR member again (the leader adds it back)
    await h.heartbeat(1)
    assert not h.image.brokers[1].fenced
    assert h.image.topics["s"].partitions[0].leader == 3 and 1 not in h.image.topics["s"].partitions[0].isr
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_controlled_shutdown_moves_leaderships_first(tmp_path, nursery):
    h = await cluster(tmp_path, nursery)
    start = h.end
    code, caught_up, fenced, shut = await h.heartbeat(1, want_shut_down=True)
    assert (code, caught_up, fenced, shut) == (0, True, False, False), "still serving while leaders move"
    b1 = h.image.brokers[1]
    assert b1.in_controlled_shutdown and not b1.fenced
    recs = h.records(start)
    assert type(recs[0]).__name__ == "BrokerRegistrationChangeRecord" and recs[0].in_controlled_shutdown == 1
    r0, r1 = h.image.topics["r"].partitions[0], h.image.topics["r"].partitions[1]
    assert (r0.leader, r0.isr) == (2, (2, 3)) and (r1.leader, r1.isr) == (2, (2, 3))

    # a broker shutting down gets no new partitions and may not join an ISR
    [res] = await h.controller.create_topics([NewTopic("later", 6, 1)])
    assert 1 not in {p.leader for p in h.image.topics["later"].partitions.values()}
    assert (await alter(h, 2, "r", 0, [2, 3, 1])).error_code == E.INELIGIBLE_REPLICA

    # granted once every active broker has reported an offset past the change
    assert (await h.heartbeat(1, want_shut_down=True))[3] is False
    for b in (2, 3, 4):
        await h.heartbeat(b)
    code, _, fenced, shut = await h.heartbeat(1, want_shut_down=True)
    assert (code, fenced, shut) == (0, True, True)
    assert h.image.brokers[1].fenced
    # heartbeats after that (without want_shut_down) do not unfence it
    assert (await h.heartbeat(1))[2:] == (True, True)
    assert h.image.brokers[1].fenced

    # a broker that leads nothing leaves at once
    await h.register(5)
    assert (await h.heartbeat(5, want_shut_down=True))[2:] == (True, True)
    assert h.image.brokers[5].fenced and not h.image.brokers[5].in_controlled_shutdown
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_single_broker_controlled_shutdown_and_restart(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    await h.register(1)
    await h.controller.create_topics([NewTopic("solo", 3, 1)])
    code, _, fenced, shut = await h.heartbeat(1, want_shut_down=True)
    assert (code, fenced, shut) == (0, False, False)
    assert all((p.leader, p.isr, p.elr) == (-1, (), (1,)) for p in h.image.topics["solo"].partitions.values())
    code, _, fenced, shut = await h.heartbeat(1, want_shut_down=True)
    assert (code, fenced, shut) == (0, True, True), "nobody else to wait for"
    # the restarted broker registers with a new incarnation and leads its partitions again
    h.incarnations.pop(1)
    await h.register(1)
    b = h.image.brokers[1]
    assert not b.fenced and not b.in_controlled_shutdown
    assert all(p.leader == 1 for p in h.image.topics["solo"].partitions.values())
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_channel_alter_partition_on_the_active_controller(tmp_path, nursery):
    h = await cluster(tmp_path, nursery)
    chan = ControllerChannel(h.config, h.quorum, h.controller)   # node 1: the active controller
    tid = h.image.topics["r"].topic_id
    epoch = h.image.brokers[1].broker_epoch
    r = await chan.alter_partition(epoch, tid, 0, 0, 0, [1, 3])
    assert r == AlterPartitionResult(E.NONE, 1, 0, (1, 3), 1)
    assert h.image.topics["r"].partitions[0].isr == (1, 3)
    r = await chan.alter_partition(epoch, tid, 0, 0, 0, [1])
    assert r.error_code == E.INVALID_UPDATE_VERSION
    r = await chan.alter_partition(epoch + 1, tid, 0, 0, 1, [1])
    assert r.error_code == E.STALE_BROKER_EPOCH
    h.close()


async def test_wire_round_trip_on_the_controller_listener(tmp_path, nursery):
    """AlterPartition v0-v3 through a real controller listener socket."""
    from types import SimpleNamespace

    from kbroker.config.broker import Listener
    from kbroker.controller_server import ControllerPlane
    from kbroker.server.controller_listener import ControllerServer
    from kbroker.raft.transport import RpcClient

    h = await cluster(tmp_path, nursery)
    # the plane reads only the node's config from its broker
    plane = ControllerPlane(SimpleNamespace(config=h.config), h.quorum, h.controller)
    server = await nursery.start(ControllerServer(plane, [Listener("CONTROLLER", "127.0.0.1", 0)]).run)
    addr = ("127.0.0.1", server.bound[0][2])
    rpc = RpcClient({}, client_id="test")
    tid = h.image.topics["r"].topic_id

    async def send(version, broker, partition, isr, epoch=None):
        td = topic_data(h, "r", partition, isr, version=version)
        req = R(broker_id=broker, broker_epoch=h.image.brokers[broker].broker_epoch if epoch is None else epoch,
                topics=[td])
        resp = await rpc.call_addr(addr, 56, version, req, 10.0)
        assert resp is not None
        return resp

    resp = await send(3, 1, 0, [1, 2])
    assert resp.error_code == 0
    [t] = resp.topics
    [p] = t.partitions
    assert t.topic_id == tid
    assert (p.partition_index, p.error_code, p.leader_id, p.leader_epoch, p.isr, p.partition_epoch) == \
        (0, 0, 1, 0, [1, 2], 1)
    assert h.image.topics["r"].partitions[0].isr == (1, 2)

    resp = await send(2, 1, 0, [1, 2, 3])
    assert resp.topics[0].partitions[0].isr == [1, 2, 3] and resp.topics[0].partitions[0].partition_epoch == 2
    resp = await send(2, 2, 1, [2, 3])
    assert resp.topics[0].topic_id == tid and resp.topics[0].partitions[0].isr == [2, 3]
    resp = await send(2, 2, 1, [2, 3, 4])
    assert resp.topics[0].partitions[0].error_code == E.INVALID_REQUEST     # 4 is not a replica
    resp = await send(3, 1, 0, [1], epoch=777)
    assert (resp.error_code, resp.topics) == (E.STALE_BROKER_EPOCH, [])
    await rpc.aclose()
    h.close()
