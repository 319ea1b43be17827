"""KIP-858 on the quorum controller: which log directory holds each replica, kept in the
metadata log as Kafka 4.3 keeps it (``kbroker/metadata/directories.py``).

- registrations carry the broker's log dir ids (checked as Kafka's ``ClusterControlManager``);
- ``PartitionRecord``/``PartitionChangeRecord`` carry ``Directories``, one per replica;
- AssignReplicasToDirs writes a ``PartitionChangeRecord`` naming the replica's directory;
- ``OfflineLogDirs`` in a heartbeat takes the replicas assigned to those dirs out of their
  ISRs and leaderships, and records the broker's remaining online dirs;
- all of it survives a controller restart (the log replayed by a new controller object) and
  a snapshot.

A real one-voter quorum (tests/metadata/harness.py) with virtual brokers; broker 2 has two
log dirs, ``A`` and ``B``, the others one each."""
from __future__ import annotations

import uuid

import trio

from kbroker.metadata import directories, snapshot
from kbroker.metadata.controller import NewTopic
from kbroker.metadata.image import PartitionImage, apply_partition_change, empty_image, replay_all
from kbroker.metadata.store import decode_record, encode_record, record_version
from kbroker.wire import messages as w
from kbroker.wire.error_codes import ErrorCode as E

from .harness import CLUSTER_ID, Harness, comparable, dir_id

A, B = dir_id(2, 0), dir_id(2, 1)
UNASSIGNED, MIGRATING, LOST = directories.UNASSIGNED, directories.MIGRATING, directories.LOST


def kinds(records) -> list[str]:
    return [type(r).__name__ for r in records]


def part(h, topic: str, index: int) -> PartitionImage:
    return h.image.topics[topic].partitions[index]


async def cluster(h) -> None:
    await h.register(1)
    await h.register(2, log_dirs=[B, A])
    await h.register(3)


async def placed(h) -> uuid.UUID:
    """Topic ``t`` (2 leads 0 and 1, follows in 2) and ``solo`` (only on 2); broker 2 reports
    t-0, t-2 and solo-0 in dir B, t-1 in dir A. Returns t's topic id."""
    [t, solo] = await h.controller.create_topics([
        NewTopic("t", assignments={0: [2, 1, 3], 1: [2, 3, 1], 2: [1, 2, 3]}),
        NewTopic("solo", assignments={0: [2]})])
    assert t.error_code == solo.error_code == E.NONE
    code, errors = await h.controller.assign_replicas_to_dirs(
        2, h.image.brokers[2].broker_epoch,
        {B: [(t.topic_id, 0), (t.topic_id, 2), (solo.topic_id, 0)], A: [(t.topic_id, 1)]})
    assert code == E.NONE and set(errors.values()) == {E.NONE}
    return t.topic_id


async def dir_b_offline(h, *, check_records: bool = True) -> None:
    """Broker 2 reports dir B offline; checks what the controller wrote (unless a snapshot
    may have taken the records' place in the log)."""
    start = h.end
    code, _, fenced, _ = await h.heartbeat(2, offline_dirs=[B])
    assert (code, fenced) == (E.NONE, False)
    if check_records:
        recs = h.records(start)
        assert kinds(recs) == ["PartitionChangeRecord"] * 3 + ["BrokerRegistrationChangeRecord"]
        assert (recs[-1].broker_id, recs[-1].log_dirs) == (2, [A])
    assert_dir_b_out(h)


def assert_dir_b_out(h) -> None:
    """Broker 2's replicas in B lead nothing and left their ISRs (solo-0 has no one else: no
    leader, its last member moved from the ISR to the ELR); its replica in A is untouched."""
    assert h.image.brokers[2].log_dirs == (A,)
    assert (part(h, "t", 0).leader, part(h, "t", 0).isr) == (1, (1, 3))
    assert (part(h, "t", 2).leader, part(h, "t", 2).isr) == (1, (1, 3))
    assert (part(h, "solo", 0).leader, part(h, "solo", 0).isr, part(h, "solo", 0).elr) == (-1, (), (2,))
    assert (part(h, "t", 1).leader, part(h, "t", 1).isr) == (2, (2, 3, 1))
    assert [part(h, "t", i).directory(2) for i in range(3)] == [B, A, B]


async def assert_b_never_elected(h) -> None:
    """Whatever happens next, broker 2's replica in B is not elected: not on unfencing, not
    by an election on request; nothing is written for them."""
    await h.heartbeat(2, want_fence=True)
    await h.heartbeat(2)
    assert not h.image.brokers[2].fenced
    assert part(h, "solo", 0).leader == -1, "unfencing must not elect a replica of an offline dir"
    start = h.end
    code, [(_, [(_, c, _)])] = await h.controller.elect_leaders(1, [("solo", [0])])
    assert (code, c) == (E.NONE, E.ELIGIBLE_LEADERS_NOT_AVAILABLE) and h.end == start
    # a heartbeat repeating the offline dir (as brokers do) writes nothing more
    await h.heartbeat(2, offline_dirs=[B])
    assert h.end == start


# ---------------------------------------------------------------------- records


async def test_registrations_and_partition_records_carry_directories(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    start = h.end
    await cluster(h)
    regs = [r for r in h.records(start) if type(r).__name__ == "RegisterBrokerRecord"]
    assert [r.log_dirs for r in regs] == [[dir_id(1)], [B, A], [dir_id(3)]]
    # the image keeps them in Kafka's Uuid order
    assert h.image.brokers[2].log_dirs == directories.sorted_dirs([A, B])

    start = h.end
    [t, u] = await h.controller.create_topics([NewTopic("t", assignments={0: [1, 2, 3]}),
                                               NewTopic("u", assignments={0: [3, 1]})])
    assert t.error_code == u.error_code == E.NONE
    recs = [r for r in h.records(start) if type(r).__name__ == "PartitionRecord"]
    # a broker with one dir gets it; broker 2 (two dirs) places the replica itself: UNASSIGNED
    assert [r.directories for r in recs] == [[dir_id(1), UNASSIGNED, dir_id(3)], [dir_id(3), dir_id(1)]]
    assert part(h, "t", 0).directory(2) == UNASSIGNED
    assert part(h, "u", 0).directory(2) == UNASSIGNED, "not a replica: UNASSIGNED"
    # written at the version metadata.version 4.0-IV1+ calls for (2: ELR fields, Directories since 1)
    node = h.quorum.driver.node
    raw = [bytes(e.payload) for e in node.log.entries(start, node.log.end_offset) if not e.control]
    assert [v[2] for v in raw if v[1] == 3] == [2, 2]

    # a reassignment adding broker 2 keeps the staying replicas' dirs and gives 2 its default
    start = h.end
    [(_, [(_, code, _)])] = await h.controller.alter_partition_reassignments([("u", [(0, [3, 1, 2])])])
    assert code == E.NONE
    [rec] = h.records(start)
    assert (rec.replicas, rec.directories) == ([3, 1, 2], [dir_id(3), dir_id(1), UNASSIGNED])
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_registration_log_dirs_are_checked(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    await h.register(1)

    async def register(broker_id, log_dirs):
        return (await h.controller.register_broker(broker_id, CLUSTER_ID, uuid.uuid4(),
                                                   [("PLAINTEXT", "127.0.0.1", 9005)], None,
                                                   log_dirs=log_dirs))[0]

    start = h.end
    assert await register(5, []) == E.INVALID_REGISTRATION
    assert await register(5, [LOST]) == E.INVALID_REGISTRATION
    assert await register(5, [A, A]) == E.INVALID_REGISTRATION
    assert await register(5, [dir_id(1)]) == E.INVALID_REGISTRATION, "broker 1's directory"
    assert h.end == start, "a refused registration writes nothing"
    assert await register(5, [A, B]) == E.NONE
    h.close()


# ---------------------------------------------------------------------- AssignReplicasToDirs


async def test_assign_replicas_to_dirs_writes_the_directory(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    await cluster(h)
    [t, other] = await h.controller.create_topics([NewTopic("t", assignments={0: [2, 1], 1: [3, 2]}),
                                                   NewTopic("other", assignments={0: [1, 3]})])
    epoch = h.image.brokers[2].broker_epoch
    unknown = uuid.uuid4()
    before = [(part(h, "t", i).leader, part(h, "t", i).leader_epoch, part(h, "t", i).isr) for i in (0, 1)]

    start = h.end
    code, errors = await h.controller.assign_replicas_to_dirs(2, epoch, {
        B: [(t.topic_id, 0), (t.topic_id, 7), (unknown, 0)],
        A: [(t.topic_id, 1), (other.topic_id, 0)]})
    assert code == E.NONE
    assert errors == {(B, t.topic_id, 0): E.NONE, (B, t.topic_id, 7): E.UNKNOWN_TOPIC_OR_PARTITION,
                      (B, unknown, 0): E.UNKNOWN_TOPIC_ID, (A, t.topic_id, 1): E.NONE,
                      (A, other.topic_id, 0): E.NOT_LEADER_OR_FOLLOWER}
    recs = h.records(start)
    assert kinds(recs) == ["PartitionChangeRecord"] * 2
    # the directory alone changes: no leader, ISR or replica change
    assert [(r.partition_id, r.directories, r.leader, r.isr, r.replicas) for r in recs] == [
        (0, [B, dir_id(1)], -2, None, None), (1, [dir_id(3), A], -2, None, None)]
    assert (part(h, "t", 0).directory(2), part(h, "t", 1).directory(2)) == (B, A)
    assert [(part(h, "t", i).leader, part(h, "t", i).leader_epoch, part(h, "t", i).isr)
            for i in (0, 1)] == before

    # the same assignment again: nothing to write, still answered NONE
    start = h.end
    code, errors = await h.controller.assign_replicas_to_dirs(2, epoch, {B: [(t.topic_id, 0)]})
    assert (code, errors, h.end) == (E.NONE, {(B, t.topic_id, 0): E.NONE}, start)
    # a moved replica (AlterReplicaLogDirs): the new directory is written
    code, _ = await h.controller.assign_replicas_to_dirs(2, epoch, {A: [(t.topic_id, 0)]})
    assert code == E.NONE and part(h, "t", 0).directory(2) == A
    # a stale registration is refused as a whole
    start = h.end
    code, errors = await h.controller.assign_replicas_to_dirs(2, epoch - 1, {B: [(t.topic_id, 0)]})
    assert (code, errors, h.end) == (E.STALE_BROKER_EPOCH, {}, start)
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


# ---------------------------------------------------------------------- offline dirs


async def test_an_offline_dir_moves_leadership_off_the_replicas_assigned_there(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    await cluster(h)
    await placed(h)
    await dir_b_offline(h)
    await assert_b_never_elected(h)

    # a new partition on broker 2 now gets its one online dir; a replica the broker then
    # reports in the offline dir (it placed it there before the failure) leaves its ISR
    [late] = await h.controller.create_topics([NewTopic("late", assignments={0: [2, 1]})])
    assert part(h, "late", 0).directory(2) == A
    start = h.end
    code, errors = await h.controller.assign_replicas_to_dirs(
        2, h.image.brokers[2].broker_epoch, {B: [(late.topic_id, 0)]})
    assert code == E.NONE and errors == {(B, late.topic_id, 0): E.NONE}
    assert kinds(h.records(start)) == ["PartitionChangeRecord"] * 2
    p = part(h, "late", 0)
    assert (p.directory(2), p.leader, p.isr) == (B, 1, (1,))
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_an_unknown_or_online_dir_reported_offline_changes_nothing(tmp_path, nursery):
    """Only directories the registration still lists count (Kafka's ``directoryIntersection``)."""
    h = await Harness(tmp_path).start(nursery)
    await cluster(h)
    await placed(h)
    start = h.end
    await h.heartbeat(2, offline_dirs=[dir_id(9)])
    await h.heartbeat(3, offline_dirs=[B])          # broker 2's dir, reported by broker 3
    assert h.end == start
    assert h.image.brokers[2].log_dirs == directories.sorted_dirs([A, B])
    assert part(h, "t", 0).leader == 2
    h.close()


async def test_a_new_controller_replaying_the_log_keeps_the_offline_replicas_out(tmp_path):
    """The controller is restarted on the same log (a failover of the one-voter quorum): the
    new controller object learns only from the records which replicas sat in the failed dir."""
    async with trio.open_nursery() as n:
        h = await Harness(tmp_path).start(n)
        await cluster(h)
        await placed(h)
        await dir_b_offline(h)
        before = comparable(h.image)
        n.cancel_scope.cancel()
    h.close()
    async with trio.open_nursery() as n:
        h2 = await Harness(tmp_path).start(n)
        assert comparable(h2.image) == before
        assert_dir_b_out(h2)
        await assert_b_never_elected(h2)
        n.cancel_scope.cancel()
    h2.close()


async def test_a_snapshot_carries_directories_and_online_dirs(tmp_path):
    async with trio.open_nursery() as n:
        h = await Harness(tmp_path, metadata_log_max_record_bytes_between_snapshots=2000).start(n)
        await cluster(h)
        await placed(h)
        await dir_b_offline(h, check_records=False)
        offline_at = h.end
        for i in range(20):
            await h.controller.create_topics([NewTopic(f"more{i}", 2, 1)])
        snap = h.quorum.driver.node.log.snapshot
        assert snap is not None and snap.snapshot_id.end_offset > offline_at, \
            "a snapshot taken after the dir went offline"
        # the snapshot alone rebuilds the directories and the broker's online dirs
        recs = [decode_record(r.value) for r in snapshot_values(snap.data)]
        [reg2] = [r for r in recs if type(r).__name__ == "RegisterBrokerRecord" and r.broker_id == 2]
        assert reg2.log_dirs == [A]
        loaded = snapshot.load(snap.data, CLUSTER_ID, 1, snap.snapshot_id.end_offset)
        assert loaded.brokers[2].log_dirs == (A,)
        assert [loaded.topics["t"].partitions[i].directory(2) for i in range(3)] == [B, A, B]
        assert loaded.topics["solo"].partitions[0].directories == (B,)
        before = comparable(h.image)
        n.cancel_scope.cancel()
    h.close()
    async with trio.open_nursery() as n:
        h2 = await Harness(tmp_path).start(n)
        assert comparable(h2.image) == before
        assert_dir_b_out(h2)
        await assert_b_never_elected(h2)
        n.cancel_scope.cancel()
    h2.close()


def snapshot_values(data: bytes):
    """The record values of a snapshot's data batches."""
    from kbroker.wire import records as rb
    for pos, header in rb.iter_batches(data):
        if not header.is_control:
            yield from (r for r in rb.decode_records(data, pos, header) if r.value is not None)


# ---------------------------------------------------------------------- replay, versions


def test_replay_of_records_with_and_without_directories():
    """Records as Kafka writes them: v0 (no Directories) and all-MIGRATING both mean
    MIGRATING; a change without Directories keeps them; a change of the replicas without
    Directories on a partition that has them is refused (Kafka's
    ``InvalidReplicaDirectoriesException``)."""
    tid = uuid.uuid4()
    d1, d2 = dir_id(1), dir_id(2)
    base = [w.TopicRecord(name="t", topic_id=tid)]

    def partition(i, directories):
        return w.PartitionRecord(partition_id=i, topic_id=tid, replicas=[1, 2], isr=[1, 2],
                                 removing_replicas=[], adding_replicas=[], leader=1, leader_epoch=0,
                                 partition_epoch=0, directories=directories)

    image = replay_all(empty_image(CLUSTER_ID, 1), base + [
        partition(0, []), partition(1, [MIGRATING, MIGRATING]), partition(2, [d1, d2])])
    ps = image.topics["t"].partitions
    assert ps[0].directories == ps[1].directories == ()
    assert (ps[0].directory(2), ps[1].directory_list()) == (MIGRATING, [MIGRATING, MIGRATING])
    assert ps[2].directory(2) == d2

    # a leader change alone keeps the directories
    after = apply_partition_change(ps[2], w.PartitionChangeRecord(partition_id=2, topic_id=tid, leader=2))
    assert after.directories == (d1, d2)
    # the directories of replicas that change with them
    after = apply_partition_change(ps[2], w.PartitionChangeRecord(
        partition_id=2, topic_id=tid, replicas=[2, 3], directories=[d2, UNASSIGNED]))
    assert after.directory(3) == UNASSIGNED and after.directory(1) == UNASSIGNED
    try:
        apply_partition_change(ps[2], w.PartitionChangeRecord(partition_id=2, topic_id=tid, replicas=[1, 2, 3]))
    except ValueError:
        pass
    else:
        raise AssertionError("replicas changed without their directories must be refused")


def test_record_versions_follow_the_metadata_version():
    """Kafka's ``MetadataVersion``: PartitionRecord/PartitionChangeRecord v1 from 3.7-IV2 (17)
    with Directories, v2 from 4.0-IV1 (23); RegisterBrokerRecord v3 (LogDirs) from 17;
    below 17 nothing of it is written and the controller makes up no directories."""
    rec = w.PartitionRecord(partition_id=0, topic_id=uuid.uuid4(), replicas=[1], isr=[1],
                            removing_replicas=[], adding_replicas=[], leader=1, leader_epoch=0,
                            partition_epoch=0, directories=[dir_id(1)])
    assert [record_version(rec, mv) for mv in (16, 17, 22, 23, 25)] == [0, 1, 1, 2, 2]
    reg = w.RegisterBrokerRecord(broker_id=1, log_dirs=[dir_id(1)])
    assert [record_version(reg, mv) for mv in (7, 8, 16, 17)] == [1, 2, 2, 3]
    rec.directories = []
    assert encode_record(rec, 16)[2] == 0
    rec.directories = [dir_id(1)]
    assert decode_record(encode_record(rec, 17)).directories == [dir_id(1)]
    old = empty_image(CLUSTER_ID, 1)
    old = replay_all(old, [w.FeatureLevelRecord(name="metadata.version", feature_level=16)])
    assert directories.rules(old) is None and directories.partition_dirs(old, [1, 2]) == []
