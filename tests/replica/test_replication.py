"""Partition replication between ReplicaManagers on separate data dirs (real logs), driven by
hand-built images: follower fetching, high watermark, ISR expand/shrink through
AlterPartition, divergence and truncation after a leader change, acks=all."""
from __future__ import annotations

import pytest
import trio
import trio.testing

from kbroker.wire import records as rec
from kbroker.wire.error_codes import ErrorCode

from .replication_harness import LAG_MS, Cluster

T = "rep"


def batch(*values, **kw) -> bytes:
    return rec.build_batch([rec.SimpleRecord(None, v, (), 1_700_000_000_000) for v in values], **kw)


def produce(node, *values, topic=T, acks=1, **kw):
    return node.replicas.append(topic, 0, batch(*values, **kw), required_acks=acks)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


@pytest.fixture
async def running(cluster):
    """The managers' background work (AlterPartition calls, ISR timer, idle fetchers)."""
    async with trio.open_nursery() as n:
        for node in cluster.nodes.values():
            await n.start(node.replicas.run)
        yield cluster
        n.cancel_scope.cancel()


def hw(cluster, nid, topic=T):
    return cluster.nodes[nid].replica(topic, 0).log.high_watermark


def leo(cluster, nid, topic=T):
    return cluster.nodes[nid].replica(topic, 0).log.log_end_offset


# --------------------------------------------------------------------------- roles

async def test_every_replica_opens_a_log_and_only_the_leader_serves_clients(cluster):
    cluster.create(T, leader=1)
    for nid in (1, 2, 3):
        assert cluster.nodes[nid].replica(T, 0) is not None
    assert cluster.nodes[1].replica(T, 0).is_leader
    for nid in (2, 3):
        with pytest.raises(Exception) as e:
            cluster.nodes[nid].replicas.append(T, 0, batch(b"x"), required_acks=1)
        assert e.value.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        [r] = cluster.nodes[nid].replicas.read_all(
            [__import__("kbroker.replica", fromlist=["FetchSpec"]).FetchSpec(T, 0, 0, 1000)],
            1000, isolation_level=0)
        assert r.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def fetched_from(cluster, nid) -> dict[int, int]:
    """The partitions node ``nid``'s replica fetchers hold, per source broker."""
    return {lid: st["partitions"] for lid, st in cluster.nodes[nid].replicas.fetchers.statistics().items()}


async def test_a_follower_made_leader_leaves_its_fetcher(cluster):
    # the end of a reassignment [1, 2] -> [2, 3]: leadership moves from 1 to 2, 1 leaves
    cluster.create(T, leader=1, replicas=(1, 2), isr=(1, 2))
    assert fetched_from(cluster, 2) == {1: 1}
    old = cluster.nodes[2].replicas.fetchers._fetchers[1]
    cluster.set_partition(T, leader=2, replicas=(1, 2, 3), isr=(1, 2))
    assert cluster.nodes[2].replica(T, 0).is_leader
    assert fetched_from(cluster, 2) == {}, "the new leader still fetches from the old one"
    assert old.stopped and not old.partitions
    assert fetched_from(cluster, 1) == {2: 1} and fetched_from(cluster, 3) == {2: 1}
    cluster.set_partition(T, replicas=(2, 3), isr=(2, 3))
    assert fetched_from(cluster, 1) == {} and fetched_from(cluster, 3) == {2: 1}


async def test_a_fetcher_drops_partitions_it_no_longer_follows(cluster):
    """The fetcher's own check at each round, whatever the manager told it last: a partition
    whose replica became leader, follows another leader or is gone leaves the fetcher (and
    so its fetch session); the ones still following stay."""
    cluster.create(T, leader=1, replicas=(1, 2), isr=(1, 2))
    cluster.create("other", leader=1, replicas=(1, 2), isr=(1, 2))
    cluster.create("gone", leader=1, replicas=(1, 2), isr=(1, 2))
    node = cluster.nodes[2]
    fetcher = node.replicas.fetchers._fetchers[1]
    parts = [node.replica(t, 0) for t in (T, "other", "gone")]
    cluster.set_partition(T, leader=2)
    cluster.set_partition("gone", replicas=(1, 3), isr=(1,))
    fetcher.set_partitions(parts, ("127.0.0.1", 9091))     # as if no update had come since
    assert set(fetcher.partitions) == {(T, 0), ("other", 0), ("gone", 0)}
    fetcher._drop_ended()
    assert set(fetcher.partitions) == {("other", 0)}


async def test_replica_moved_away_drops_its_log(cluster):
    cluster.create(T, leader=1)
    d = cluster.nodes[3].replica(T, 0).log.dir
    assert d.exists()
    cluster.set_partition(T, replicas=(1, 2), isr=(1, 2))
    assert cluster.nodes[3].replica(T, 0) is None
    assert not d.exists()


# --------------------------------------------------------------------------- data + HW

ELR_ON = {"eligible.leader.replicas.version": 1, "metadata.version": 25}


@pytest.mark.parametrize("elr_on,replicas,min_isr,moves", [
    (True, (1, 2), 2, False),      # ISR of 1 below the minimum of 2: held
    (True, (1, 2), 3, False),      # the minimum capped by the replication factor: still 2
    (True, (1,), 2, True),         # capped at the replication factor of 1
    (True, (1, 2), 1, True),       # an ISR of min.insync.replicas members
    (False, (1, 2), 2, True),      # ELR off: the ISR alone decides
])
async def test_elr_holds_the_high_watermark_below_the_effective_min_isr(
        cluster, elr_on, replicas, min_isr, moves):
    """KIP-966: with ELR on, a leader whose committed ISR is smaller than
    min.insync.replicas (capped by the replication factor, at least 1) keeps its high
    watermark where it is; the ISR here is the leader alone."""
    if elr_on:
        cluster.features.update(ELR_ON)
    cluster.create(T, replicas=replicas, isr=(1,),
                   configs={"min.insync.replicas": str(min_isr)})
    produce(cluster.nodes[1], b"a", b"b")
    leader = cluster.nodes[1].replica(T)
    assert leader.log.log_end_offset == 2
    assert leader.log.high_watermark == (2 if moves else 0)


async def test_followers_become_byte_identical_and_hw_is_min_isr_leo(cluster):
    cluster.create(T, leader=1)
    leader = cluster.nodes[1]
    produce(leader, b"a", b"b", b"c")
    # nobody has fetched: the leader's HW stays at 0 (followers are in the ISR)
    assert leo(cluster, 1) == 3 and hw(cluster, 1) == 0
    await cluster.fetch_once(2, T)      # node 2 fetches from 0: its LEO as the leader sees it is 0
    await cluster.fetch_once(2, T)      # now at 3
    assert leo(cluster, 2) == 3
    assert hw(cluster, 1) == 0          # node 3 has nothing yet
    await cluster.fetch_once(3, T)
    await cluster.fetch_once(3, T)
    assert hw(cluster, 1) == 3
    produce(leader, b"d", b"e", producer_id=7, producer_epoch=0, base_sequence=0)
    produce(leader, b"f")
    await cluster.catch_up(T)
    data = cluster.nodes[1].log_bytes(T)
    assert data and cluster.nodes[2].log_bytes(T) == data and cluster.nodes[3].log_bytes(T) == data
    assert [hw(cluster, n) for n in (1, 2, 3)] == [6, 6, 6]
    # producer state followed the batches
    entry = cluster.nodes[2].replica(T, 0).log.producer_state.entry(7)
    assert entry is not None and entry.last_seq == 1


async def test_hw_never_goes_backwards(cluster):
    cluster.create(T, leader=1)
    produce(cluster.nodes[1], b"a", b"b")
    await cluster.catch_up(T)
    assert hw(cluster, 1) == 2
    # a follower that restarted from an older position (fetches at 0 again)
    cluster.nodes[3].replica(T, 0).log.truncate_to(0)
    await cluster.fetch_once(3, T)
    assert hw(cluster, 1) == 2
    produce(cluster.nodes[1], b"c")
    await cluster.catch_up(T)
    assert hw(cluster, 1) == 3


# --------------------------------------------------------------------------- ISR

async def test_isr_expands_after_catch_up(running):
    cluster = running
    cluster.create(T, leader=1, isr=(1,))
    produce(cluster.nodes[1], b"a", b"b")
    assert hw(cluster, 1) == 2          # ISR is the leader alone
    await cluster.fetch_once(2, T)
    await cluster.fetch_once(2, T)      # caught up: LEO 2 >= HW 2
    await trio.testing.wait_all_tasks_blocked()
    assert cluster.partition(T).isr == (1, 2)
    assert cluster.nodes[1].replica(T, 0).isr == (1, 2)
    # while node 2 is in the ISR the HW waits for it
    produce(cluster.nodes[1], b"c")
    assert hw(cluster, 1) == 2
    await cluster.fetch_once(2, T)
    await cluster.fetch_once(2, T)
    assert hw(cluster, 1) == 3


async def test_a_refused_expansion_waits_for_a_new_registration(running):
    """INELIGIBLE_REPLICA (e.g. the leader's image still has a restarted follower's old
    broker epoch): the leader does not ask again on every fetch, only once the image shows
    another registration of that broker."""
    cluster = running
    cluster.create(T, leader=1, isr=(1,))
    produce(cluster.nodes[1], b"a")
    cluster.controller.fail_with = ErrorCode.INELIGIBLE_REPLICA
    for _ in range(4):
        await cluster.fetch_once(2, T)
        await trio.testing.wait_all_tasks_blocked()
    assert [c[4] for c in cluster.controller.calls] == [(1, 2)]     # asked once
    assert cluster.nodes[1].replica(T, 0).isr == (1,)
    cluster.controller.fail_with = None
    cluster.broker_epochs[2] = 77                  # node 2 registered again (fenced at first)
    cluster.fenced.add(2)
    cluster.push()
    await cluster.fetch_once(2, T)
    await trio.testing.wait_all_tasks_blocked()
    assert len(cluster.controller.calls) == 1      # a fenced broker is no candidate
    cluster.controller.fail_with = ErrorCode.INELIGIBLE_REPLICA
    cluster.fenced.discard(2)                      # unfenced: the same registration, new state
    cluster.push()
    await cluster.fetch_once(2, T)
    await trio.testing.wait_all_tasks_blocked()
    assert len(cluster.controller.calls) == 2      # asked again ...
    await cluster.fetch_once(2, T)
    await trio.testing.wait_all_tasks_blocked()
    assert len(cluster.controller.calls) == 2      # ... once
    # the refusal came while the leader's image still had node 2 unfenced; the image then
    # fences and unfences it under the same broker epoch: a state seen before, but a new one
    cluster.fenced.add(2)
    cluster.push()
    await cluster.fetch_once(2, T)
    await trio.testing.wait_all_tasks_blocked()
    assert len(cluster.controller.calls) == 2
    cluster.fenced.discard(2)
    cluster.push()
    await cluster.fetch_once(2, T)
    await trio.testing.wait_all_tasks_blocked()
    assert len(cluster.controller.calls) == 3      # asked again
    cluster.controller.fail_with = None
    cluster.broker_epochs[2] = 78                  # registered again
    cluster.push()
    await cluster.fetch_once(2, T)
    await trio.testing.wait_all_tasks_blocked()
    assert cluster.partition(T).isr == (1, 2)
    assert len(cluster.controller.calls) == 4


async def test_pending_expansion_already_counts_for_the_hw(cluster):
    # no run(): the AlterPartition stays pending
    cluster.create(T, leader=1, isr=(1,))
    produce(cluster.nodes[1], b"a")
    await cluster.fetch_once(2, T)
    await cluster.fetch_once(2, T)
    part = cluster.nodes[1].replica(T, 0)
    assert part.pending_isr == (1, 2) and part.isr == (1,)
    produce(cluster.nodes[1], b"b")
    assert hw(cluster, 1) == 1          # maximal ISR includes node 2


async def test_isr_shrinks_after_lag_and_hw_moves_on(running):
    cluster = running
    cluster.create(T, leader=1)
    produce(cluster.nodes[1], b"a")
    await cluster.catch_up(T)
    leader = cluster.nodes[1].replicas
    # idle but caught-up followers stay
    cluster.clock.now += 3 * LAG_MS
    leader.maybe_shrink_isr()
    await trio.testing.wait_all_tasks_blocked()
    assert cluster.partition(T).isr == (1, 2, 3)
    await cluster.catch_up(T)           # caught-up fetches at the current time
    # node 3 stops fetching while data arrives
    produce(cluster.nodes[1], b"b")
    await cluster.fetch_once(2, T)
    await cluster.fetch_once(2, T)
    assert hw(cluster, 1) == 1
    cluster.clock.now += LAG_MS // 2
    leader.maybe_shrink_isr()
    await trio.testing.wait_all_tasks_blocked()
    assert cluster.partition(T).isr == (1, 2, 3)        # not lagging long enough yet
    cluster.clock.now += LAG_MS
    await cluster.fetch_once(2, T)
    leader.maybe_shrink_isr()
    await trio.testing.wait_all_tasks_blocked()
    assert cluster.partition(T).isr == (1, 2)
    assert hw(cluster, 1) == 2                          # no longer waits for node 3
    # node 3 catches up and comes back
    await cluster.catch_up(T, followers=(3,))
    await trio.testing.wait_all_tasks_blocked()
    assert cluster.partition(T).isr == (1, 2, 3)


async def test_failed_alter_partition_drops_the_pending_change(running):
    cluster = running
    cluster.create(T, leader=1, isr=(1,))
    cluster.controller.fail_with = ErrorCode.INVALID_UPDATE_VERSION
    produce(cluster.nodes[1], b"a")
    await cluster.fetch_once(2, T)
    await cluster.fetch_once(2, T)
    await trio.testing.wait_all_tasks_blocked()
    part = cluster.nodes[1].replica(T, 0)
    assert part.pending_isr is None and part.isr == (1,)
    assert cluster.controller.calls
    cluster.controller.fail_with = None
    await cluster.fetch_once(2, T)                      # tried again on the next fetch
    await trio.testing.wait_all_tasks_blocked()
    assert part.isr == (1, 2)



async def test_a_parked_follower_fetch_counts_once_when_it_arrives(running, autojump_clock):
    """A follower fetch is recorded by the read made when it arrives, never by the re-reads
    of its wait (Kafka updates follower state only outside the purgatory): a follower the
    controller removed from the ISR while its caught-up fetch was parked -- its log dir went
    offline, its fetcher forgot the partition -- is not proposed back into the ISR when that
    stale fetch times out."""
    from kbroker.replica import FetchSpec
    cluster = running
    cluster.create(T, leader=1)
    produce(cluster.nodes[1], b"a")
    await cluster.catch_up(T)
    leader = cluster.nodes[1].replicas
    follower = cluster.nodes[1].replica(T, 0).replication.followers[2]
    parked_at = trio.current_time()

    async def parked_fetch():
        [r] = await leader.fetch([FetchSpec(T, 0, 1, 1 << 20, current_leader_epoch=0)],
                                 max_bytes=1 << 20, min_bytes=1, max_wait_ms=5_000,
                                 replica_id=2)
        assert r.error_code == ErrorCode.NONE and r.size == 0

    async with trio.open_nursery() as n:
        n.start_soon(parked_fetch)
        await trio.testing.wait_all_tasks_blocked()
        arrived_ms = follower.last_fetch_ms
        cluster.set_partition(T, isr=(1, 3))            # node 2 out, the fetch still parked
        cluster.clock.now += 1_000
    assert trio.current_time() - parked_at >= 5         # answered at its deadline
    await trio.testing.wait_all_tasks_blocked()
    assert cluster.controller.calls == []               # no expansion proposed
    assert cluster.partition(T).isr == (1, 3)
    assert cluster.nodes[1].replica(T, 0).isr == (1, 3)
    assert follower.last_fetch_ms == arrived_ms


# --------------------------------------------------------------------------- divergence

async def test_unreplicated_tail_is_truncated_after_leader_change(cluster):
    cluster.create(T, leader=1)
    produce(cluster.nodes[1], b"a", b"b")
    await cluster.catch_up(T)
    produce(cluster.nodes[1], b"lost-1")
    produce(cluster.nodes[1], b"lost-2")            # only on node 1
    assert leo(cluster, 1) == 4 and hw(cluster, 1) == 2
    # node 1 is fenced: node 2 leads epoch 1 with ISR (2, 3)
    cluster.set_partition(T, leader=2, isr=(2, 3))
    new_leader = cluster.nodes[2].replica(T, 0)
    assert new_leader.is_leader and new_leader.leader_epoch == 1
    produce(cluster.nodes[2], b"c", b"d", b"e")     # offsets 2..4 in epoch 1
    await cluster.catch_up(T, followers=(3,))
    # node 1 comes back as a follower: diverging epoch, truncation, then the new data
    old = cluster.nodes[1].replica(T, 0)
    assert not old.is_leader
    assert await cluster.fetch_once(1, T) == "truncated"
    assert old.log.log_end_offset == 2
    await cluster.catch_up(T)
    data = cluster.nodes[2].log_bytes(T)
    assert cluster.nodes[1].log_bytes(T) == data == cluster.nodes[3].log_bytes(T)
    values = [r.value for _, h in rec.iter_batches(data) for r in rec.decode_records(data, _, h)]
    assert values == [b"a", b"b", b"c", b"d", b"e"]
    assert old.log.end_offset_for_epoch(0) == (0, 2)
    assert old.log.latest_epoch == 1


async def test_follower_that_missed_an_epoch_truncates_in_rounds(cluster):
    cluster.create(T, leader=1)
    produce(cluster.nodes[1], b"a")
    await cluster.catch_up(T)
    produce(cluster.nodes[1], b"x1")                 # epoch 0, node 1 only
    cluster.set_partition(T, leader=2, isr=(2, 3))   # epoch 1
    produce(cluster.nodes[2], b"y1")                 # epoch 1, node 2 only
    cluster.set_partition(T, leader=3, isr=(3,))     # epoch 2: node 3 had only "a"
    produce(cluster.nodes[3], b"z1", b"z2")
    for _ in range(5):
        await cluster.fetch_once(1, T)
        await cluster.fetch_once(2, T)
    data = cluster.nodes[3].log_bytes(T)
    assert cluster.nodes[1].log_bytes(T) == data == cluster.nodes[2].log_bytes(T)
    values = [r.value for _, h in rec.iter_batches(data) for r in rec.decode_records(data, _, h)]
    assert values == [b"a", b"z1", b"z2"]


async def test_epoch_begun_without_data_is_dropped_from_a_follower(cluster):
    cluster.create(T, leader=1)
    produce(cluster.nodes[1], b"a")
    await cluster.catch_up(T)
    cluster.set_partition(T, leader=2)               # epoch 1 on node 2: nothing written
    assert cluster.nodes[2].replica(T, 0).log.latest_epoch == 1
    cluster.set_partition(T, leader=3)               # epoch 2 on node 3
    produce(cluster.nodes[3], b"b")
    assert await cluster.fetch_once(2, T) == "truncated"
    assert cluster.nodes[2].replica(T, 0).log.latest_epoch == 0
    await cluster.catch_up(T)
    data = cluster.nodes[3].log_bytes(T)
    assert cluster.nodes[1].log_bytes(T) == data == cluster.nodes[2].log_bytes(T)
    assert cluster.nodes[2].replica(T, 0).log.latest_epoch == 2


async def test_follower_behind_leader_log_start_restarts_there(cluster):
    cluster.create(T, leader=1, isr=(1, 2))
    produce(cluster.nodes[1], b"a")
    produce(cluster.nodes[1], b"b")
    produce(cluster.nodes[1], b"c")
    await cluster.catch_up(T, followers=(2,))
    cluster.nodes[1].replicas.delete_records(T, 0, 2)
    assert await cluster.fetch_once(3, T) == "out_of_range"
    part = cluster.nodes[3].replica(T, 0)
    assert part.log.log_start_offset == 2 and part.log.log_end_offset == 2
    await cluster.catch_up(T)
    assert cluster.nodes[3].log_bytes(T) == cluster.nodes[1].log_bytes(T)


async def test_fetch_from_a_non_replica_or_stale_epoch(cluster):
    from kbroker.replica import FetchSpec
    cluster.create(T, leader=1, replicas=(1, 2), isr=(1, 2))
    leader = cluster.nodes[1].replicas
    [r] = await leader.fetch([FetchSpec(T, 0, 0, 100, current_leader_epoch=0)], max_bytes=100,
                             min_bytes=0, max_wait_ms=0, replica_id=3)
    assert r.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    [r] = await leader.fetch([FetchSpec(T, 0, 0, 100)], max_bytes=100, min_bytes=0,
                             max_wait_ms=0, replica_id=3)
    assert r.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    cluster.set_partition(T, leader=2)
    cluster.set_partition(T, leader=1)                # epoch 2
    [r] = await cluster.nodes[1].replicas.fetch(
        [FetchSpec(T, 0, 0, 100, current_leader_epoch=1)], max_bytes=100, min_bytes=0,
        max_wait_ms=0, replica_id=2)
    assert r.error_code == ErrorCode.FENCED_LEADER_EPOCH


async def test_follower_fetch_long_polls_until_an_append(cluster, autojump_clock):
    from kbroker.replica import FetchSpec
    cluster.create(T, leader=1)
    got = []

    async def follower_fetch():
        [r] = await cluster.nodes[1].replicas.fetch(
            [FetchSpec(T, 0, 0, 1 << 20, current_leader_epoch=0)], max_bytes=1 << 20,
            min_bytes=1, max_wait_ms=10_000, replica_id=2)
        got.append((trio.current_time(), r.size))

    async with trio.open_nursery() as n:
        n.start_soon(follower_fetch)
        await trio.testing.wait_all_tasks_blocked()
        assert not got
        await trio.sleep(1)
        produce(cluster.nodes[1], b"x")
    (when, size), = got
    assert size > 0 and when < 10


# --------------------------------------------------------------------------- acks=all

async def test_acks_all_waits_for_the_isr(running, autojump_clock):
    cluster = running
    cluster.create(T, leader=1)
    res = produce(cluster.nodes[1], b"a", acks=-1)
    rm = cluster.nodes[1].replicas
    assert rm.check_replicated(T, 0, res.last_offset + 1) is None
    out = []

    async def waiter():
        out.append(await rm.wait_replicated(T, 0, res.last_offset + 1, 30_000))

    async with trio.open_nursery() as n:
        n.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        await cluster.fetch_once(2, T)
        await cluster.fetch_once(2, T)
        await cluster.fetch_once(3, T)
        await trio.testing.wait_all_tasks_blocked()
        assert not out
        await cluster.fetch_once(3, T)
    assert out == [ErrorCode.NONE]


async def test_acks_all_times_out(running, autojump_clock):
    cluster = running
    cluster.create(T, leader=1)
    res = produce(cluster.nodes[1], b"a", acks=-1)
    start = trio.current_time()
    code = await cluster.nodes[1].replicas.wait_replicated(T, 0, res.last_offset + 1, 1500)
    assert code == ErrorCode.REQUEST_TIMED_OUT
    assert trio.current_time() - start == pytest.approx(1.5)


async def test_acks_all_leadership_lost_while_waiting(running, autojump_clock):
    cluster = running
    cluster.create(T, leader=1)
    res = produce(cluster.nodes[1], b"a", acks=-1)
    out = []

    async def waiter():
        out.append(await cluster.nodes[1].replicas.wait_replicated(T, 0, res.last_offset + 1,
                                                                   30_000))

    async with trio.open_nursery() as n:
        n.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        cluster.set_partition(T, leader=2, isr=(2, 3))
        cluster.set_partition(T, leader=1, isr=(1, 2, 3))   # back, but a new leadership
    assert out == [ErrorCode.NOT_LEADER_OR_FOLLOWER]


async def test_min_insync_replicas(running, autojump_clock):
    cluster = running
    cluster.create(T, leader=1, isr=(1,), configs={"min.insync.replicas": "2"})
    with pytest.raises(Exception) as e:
        produce(cluster.nodes[1], b"a", acks=-1)
    assert e.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    produce(cluster.nodes[1], b"a", acks=1)             # acks=1 still works
    for _ in range(3):                  # one AlterPartition in flight at a time
        await cluster.catch_up(T, followers=(2, 3))
        await trio.testing.wait_all_tasks_blocked()
    assert len(cluster.partition(T).isr) == 3
    res = produce(cluster.nodes[1], b"b", acks=-1)
    out = []

    async def waiter():
        out.append(await cluster.nodes[1].replicas.wait_replicated(T, 0, res.last_offset + 1,
                                                                   30_000))

    async with trio.open_nursery() as n:
        n.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        # the controller drops both followers (fenced): ISR below min.insync while waiting
        cluster.set_partition(T, isr=(1,))
    assert out == [ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND]


async def test_produce_handler_acks_all_answers_after_replication(running, autojump_clock):
    from kbroker.wire import messages

    from .test_api_handlers import call
    cluster = running
    cluster.create(T, leader=1, partitions=2)
    P = messages.ProduceRequest
    req = P(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[P.TopicProduceData(
        name=T, partition_data=[P.PartitionProduceData(index=i, records=batch(b"v%d" % i))
                                for i in (0, 1)])])
    out = []

    async def producer():
        out.append(await call(cluster.nodes[1].broker, 0, 9, req))

    async with trio.open_nursery() as n:
        n.start_soon(producer)
        await trio.testing.wait_all_tasks_blocked()
        assert not out
        for _ in range(2):
            for nid in (2, 3):
                await cluster.fetch_once(nid, T, 0)
        await trio.testing.wait_all_tasks_blocked()
        assert not out                                   # partition 1 not replicated yet
        for _ in range(2):
            for nid in (2, 3):
                await cluster.fetch_once(nid, T, 1)
    [resp] = out
    codes = [(p.index, p.error_code, p.base_offset) for p in resp.responses[0].partition_responses]
    assert codes == [(0, 0, 0), (1, 0, 0)]
    # a second request nobody replicates times out
    out.clear()
    async with trio.open_nursery() as n:
        n.start_soon(producer)
    [resp] = out
    # Kafka's DelayedProduce only sets the error: the append's offsets stay in the answer
    assert [(p.error_code, p.base_offset, p.log_start_offset)
            for p in resp.responses[0].partition_responses] == \
        [(ErrorCode.REQUEST_TIMED_OUT, 1, 0)] * 2
