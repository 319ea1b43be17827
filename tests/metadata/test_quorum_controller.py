"""The quorum-backed controller: every metadata operation emits the expected records, and
replaying the committed records (or a snapshot of the image) rebuilds the same image;
broker registration, heartbeats, fencing and leader movement on missed heartbeats.

Runs a real one-voter quorum (Raft driver, fsynced metadata log) in-process; sessions and
timeouts run on trio's MockClock."""
from __future__ import annotations

import trio

from kbroker.metadata import snapshot
from kbroker.metadata.controller import NewTopic, OP_SET
from kbroker.metadata.image import TOPIC_RESOURCE
from kbroker.metadata.quorum_controller import NotController
from kbroker.wire.error_codes import ErrorCode as E

from .harness import CLUSTER_ID, Harness, comparable


def kinds(records) -> list[str]:
    return [type(r).__name__ for r in records]


async def test_every_operation_emits_its_records_and_replay_rebuilds_the_image(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    assert h.image.features["metadata.version"] > 0            # bootstrap record on activation
    for b in (1, 2, 3):
        start = h.end
        epoch = await h.register(b)
        recs = h.records(start)
        assert kinds(recs) == ["RegisterBrokerRecord", "BrokerRegistrationChangeRecord"]
        assert recs[0].broker_epoch == epoch == start and recs[0].fenced
        assert recs[1].fenced == -1 and not h.image.brokers[b].fenced

    start = h.end
    [res] = await h.controller.create_topics([NewTopic("a", 6, 1, configs={"cleanup.policy": "compact"})])
    assert res.error_code == 0
    recs = h.records(start)
    assert kinds(recs) == ["TopicRecord", "ConfigRecord"] + ["PartitionRecord"] * 6
    assert recs[0].name == "a" and recs[0].topic_id == res.topic_id
    assert {p.leader for p in recs[2:]} == {1, 2, 3}, "partitions are spread over the live brokers"
    assert all(p.isr == p.replicas == [p.leader] for p in recs[2:])

    start = h.end
    [res2] = await h.controller.create_topics([NewTopic("b", 3, 2)])
    assert res2.error_code == 0
    assert all(len(set(p.replicas)) == 2 for p in h.records(start)[1:])

    start = h.end
    assert (await h.controller.create_topics([NewTopic("v", 1)], validate_only=True))[0].error_code == 0
    assert (await h.controller.create_topics([NewTopic("a", 1)]))[0].error_code == E.TOPIC_ALREADY_EXISTS
    assert h.end == start, "validate_only and refused requests write nothing"

    assert await h.controller.create_partitions([("a", 8, None)]) == [("a", 0, None)]
    recs = h.records(start)
    assert kinds(recs) == ["PartitionRecord", "PartitionRecord"] and [p.partition_id for p in recs] == [6, 7]

    start = h.end
    [r] = await h.controller.incremental_alter_configs([(TOPIC_RESOURCE, "a", [("retention.ms", OP_SET, "1000")])])
    assert r.error_code == 0
    [rec] = h.records(start)
    assert (type(rec).__name__, rec.name, rec.value) == ("ConfigRecord", "retention.ms", "1000")

    start = h.end
    [r] = await h.controller.alter_configs([(TOPIC_RESOURCE, "a", {"segment.ms": "5000"})])
    assert r.error_code == 0
    recs = h.records(start)                          # legacy AlterConfigs replaces all overrides
    assert sorted((x.name, x.value) for x in recs) == [("cleanup.policy", None), ("retention.ms", None),
                                                        ("segment.ms", "5000")]

    start = h.end
    first, count = await h.controller.allocate_producer_ids(1000)
    [rec] = h.records(start)
    assert type(rec).__name__ == "ProducerIdsRecord" and rec.next_producer_id == first + count

    start = h.end
    tid = h.image.topics["b"].topic_id
    [(name, topic_id, code, _)] = await h.controller.delete_topics(["b"])
    assert (name, topic_id, code) == ("b", tid, 0)
    [rec] = h.records(start)
    assert type(rec).__name__ == "RemoveTopicRecord" and rec.topic_id == tid

    # the image is exactly what replaying the log gives, and what its snapshot holds
    assert comparable(h.replayed()) == comparable(h.image)
    data = snapshot.dump(h.image)
    assert comparable(snapshot.load(data, CLUSTER_ID, 1, h.end)) == comparable(h.image)
    h.close()


async def test_restart_replays_the_log(tmp_path):
    async with trio.open_nursery() as n:
        h = await Harness(tmp_path).start(n)
        await h.register(1)
        await h.controller.create_topics([NewTopic("keep", 3, 1)])
        before = comparable(h.image)
        n.cancel_scope.cancel()
    h.close()
    async with trio.open_nursery() as n:
        h2 = await Harness(tmp_path).start(n)
        assert comparable(h2.image) == before
        assert h2.quorum.driver.epoch == 2, "a restarted one-node quorum elects itself in a new epoch"
        assert (await h2.controller.create_topics([NewTopic("more", 1)]))[0].error_code == 0
        n.cancel_scope.cancel()
    h2.close()


async def test_snapshot_then_restart(tmp_path):
    async with trio.open_nursery() as n:
        h = await Harness(tmp_path, metadata_log_max_record_bytes_between_snapshots=2000).start(n)
        await h.register(1)
        for i in range(20):
            await h.controller.create_topics([NewTopic(f"t{i}", 2, 1)])
        node = h.quorum.driver.node
        assert node.log.snapshot is not None, "enough bytes were written for a snapshot"
        assert list(tmp_path.glob("__cluster_metadata-0/*.checkpoint"))
        before = comparable(h.image)
        n.cancel_scope.cancel()
    h.close()
    async with trio.open_nursery() as n:
        h2 = await Harness(tmp_path).start(n)
        assert comparable(h2.image) == before
        n.cancel_scope.cancel()
    h2.close()


async def test_missed_heartbeats_fence_and_move_leadership(tmp_path, nursery, autojump_clock):
    h = await Harness(tmp_path).start(nursery)
    nursery.start_soon(h.controller.run_session_checks)
    for b in (1, 2, 3):
        await h.register(b)
    await h.controller.create_topics([NewTopic("one", 6, 1), NewTopic("two", 6, 2)])
    one, two = h.image.topics["one"], h.image.topics["two"]
    led_by_3 = {p.partition for p in one.partitions.values() if p.leader == 3}
    two_led_by_3 = {p.partition for p in two.partitions.values() if p.leader == 3}
    assert led_by_3 and two_led_by_3
    start = h.end

    # 1 and 2 keep heartbeating, 3 goes silent past broker.session.timeout.ms (3 s)
    for _ in range(10):
        await trio.sleep(0.5)
        await h.heartbeat(1)
        await h.heartbeat(2)
    assert h.image.brokers[3].fenced and not h.image.brokers[1].fenced
    recs = h.records(start)
    assert kinds(recs)[0] == "BrokerRegistrationChangeRecord" and recs[0].fenced == 1
    one, two = h.image.topics["one"], h.image.topics["two"]
    for p in one.partitions.values():
        # replication factor 1: nowhere to move; leader -1, the last member in the ELR
        assert (p.leader, p.isr, p.elr) == ((-1, (), (3,)) if p.partition in led_by_3
                                            else (p.leader, p.isr, p.elr))
    for p in two.partitions.values():
        assert p.leader in (1, 2) and 3 not in p.isr, "leadership moved to the live replica"
    assert all(two.partitions[i].leader_epoch == 1 for i in two_led_by_3), "a leader change bumps the epoch"

    # new partitions only go to live brokers
    await h.controller.create_topics([NewTopic("three", 4, 1)])
    assert {p.leader for p in h.image.topics["three"].partitions.values()} == {1, 2}

    # 3 comes back: unfenced once caught up, and takes its leaderless partitions back
    code, caught_up, fenced, _ = await h.heartbeat(3)
    assert (code, caught_up, fenced) == (0, True, False)
    for p in h.image.topics["one"].partitions.values():
        assert p.leader != -1
    assert comparable(h.replayed()) == comparable(h.image)
    h.close()


async def test_controlled_shutdown_and_stale_epochs(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    for b in (1, 2):
        await h.register(b)
    await h.controller.create_topics([NewTopic("x", 2, 2)])
    code, _, fenced, shut = await h.heartbeat(2, want_shut_down=True)
    assert (code, fenced, shut) == (0, False, False), "controlled shutdown: leaders move first"
    assert all(p.leader == 1 and p.isr == (1,) for p in h.image.topics["x"].partitions.values())
    await h.heartbeat(1)
    code, _, fenced, shut = await h.heartbeat(2, want_shut_down=True)
    assert (code, fenced, shut) == (0, True, True)
    assert (await h.controller.heartbeat(1, 12345, 0, False, False))[0] == E.STALE_BROKER_EPOCH
    # the same incarnation registering again keeps its epoch; a new one gets a new epoch
    old = h.image.brokers[1].broker_epoch
    assert await h.register(1, unfence=False) == old
    h.incarnations.pop(1)
    assert await h.register(1) > old
    code, _ = await h.controller.register_broker(7, "another-cluster", h.incarnations[2], [], None)
    assert code == E.INCONSISTENT_CLUSTER_ID
    h.close()


async def test_a_first_registration_is_no_unclean_restart(tmp_path, nursery, caplog):
    caplog.set_level("INFO", logger="kbroker.controller")
    h = await Harness(tmp_path).start(nursery)
    await h.register(1)
    h.incarnations.pop(1)              # a new incarnation that names no previous epoch
    await h.register(1)
    lines = [r.getMessage() for r in caplog.records if "broker 1 registered" in r.getMessage()]
    assert len(lines) == 2 and lines[0].endswith("(its first registration)"), lines
    assert "(unclean restart," in lines[1], lines
    assert h.controller.stats["unclean_registrations"] == 1
    h.close()


async def test_a_non_leader_is_not_the_controller(tmp_path, nursery):
    h = await Harness(tmp_path).start(nursery)
    node = h.quorum.driver.node
    node._become_resigned()           # as after EndQuorumEpoch: no longer leading
    assert not h.controller.active
    try:
        await h.controller.create_topics([NewTopic("nope", 1)])
    except NotController:
        pass
    else:
        raise AssertionError("a resigned leader must refuse writes")
    h.close()


async def test_a_registration_before_activation_gets_the_bootstrap_levels_first(tmp_path, nursery):
    """The quorum is ready (brokers may register) before the controller's activation task has
    run: the registration writes the bootstrap feature levels first, as Kafka's controller
    writes them before any other record of its epoch, and is accepted (it used to be
    refused: "does not support finalized version 0 of metadata.version")."""
    h = await Harness(tmp_path).start(nursery, activate=False)
    assert "metadata.version" not in h.image.features
    start = h.end
    await h.register(2)
    written = kinds(h.records(start))
    assert written.index("FeatureLevelRecord") < written.index("RegisterBrokerRecord")
    assert h.records(start)[0].name == "metadata.version"
    assert h.image.brokers[2].fenced is False
    # activation afterwards finds the levels there and writes them no second time
    end = h.end
    await h.controller.maybe_activate()
    assert "FeatureLevelRecord" not in kinds(h.records(end))
    h.close()


async def test_a_fresh_quorum_writes_its_bootstrap_records_with_the_epoch_start(tmp_path, nursery):
    """A one-voter quorum leads from an empty log before its driver runs: the bootstrap
    records proposed then are written by the driver's first Ready with the LeaderChange (its
    own batch, one append) and committed with it, so the quorum is ready with
    ``metadata.version`` already in the image; the activation writes them no second time.
    A restart (the log not empty) proposes nothing early."""
    h = await Harness(tmp_path).start(nursery, activate=False, with_epoch_start=True)
    assert h.proposed_with_epoch_start
    assert h.image.features["metadata.version"] > 0       # committed with the LeaderChange
    batches = list(h.quorum.store.log.batches(0))
    assert [hd.is_control for hd, _ in batches] == [True, False]
    assert kinds(h.records()) == kinds(h.controller._bootstrap_records())
    assert h.quorum.driver.statistics()["storage"]["appends"] == 1
    end = h.end
    await h.controller.maybe_activate()
    await h.register(2)
    assert kinds(h.records(end)) == ["RegisterBrokerRecord", "BrokerRegistrationChangeRecord"]
    h.close()


async def test_a_restarted_quorum_proposes_no_bootstrap_with_its_epoch_start(tmp_path):
    async with trio.open_nursery() as nursery:
        first = await Harness(tmp_path).start(nursery)
        end = first.end
        first.close()
        nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        again = await Harness(tmp_path).start(nursery, activate=False, with_epoch_start=True)
        assert not again.proposed_with_epoch_start
        assert "FeatureLevelRecord" not in kinds(again.records(end))
        again.close()
        nursery.cancel_scope.cancel()


async def test_a_controller_only_node_places_no_partition_on_itself(tmp_path, nursery):
    """The only voter of a cluster with separate brokers is no broker: with no broker
    registered a topic is refused as by Kafka, and once one is, partitions go to it."""
    h = await Harness(tmp_path, process_roles="controller").start(nursery)
    [res] = await h.controller.create_topics([NewTopic("early", 1)])
    assert (res.error_code, res.error_message) == (
        E.INVALID_REPLICATION_FACTOR, "Unable to replicate the partition 1 time(s): The target "
        "replication factor of 1 cannot be reached because only 0 broker(s) are registered.")
    await h.register(2)
    [res] = await h.controller.create_topics([NewTopic("later", 2)])
    assert res.error_code == 0
    assert {tuple(p.replicas) for p in h.image.topics["later"].partitions.values()} == {(2,)}
    h.close()


async def test_the_active_controller_writes_a_noop_record_every_idle_interval(tmp_path, nursery, autojump_clock):
    """KIP-835: Kafka's active controller commits a NoOpRecord every
    metadata.max.idle.interval.ms, whether or not anything else happens."""
    h = await Harness(tmp_path, metadata_max_idle_interval_ms=200).start(nursery)
    start = h.end
    nursery.start_soon(h.controller.run_noop_writer)
    await trio.sleep(1.05)
    noops = [r for r in h.records(start) if type(r).__name__ == "NoOpRecord"]
    assert len(noops) == 5 == h.controller.stats["noop_records"]
    assert h.image.offset >= start + 4      # each one moves the image on


async def test_a_zero_idle_interval_writes_no_noop_records(tmp_path, nursery, autojump_clock):
    h = await Harness(tmp_path, metadata_max_idle_interval_ms=0).start(nursery)
    start = h.end
    with trio.move_on_after(5):
        await h.controller.run_noop_writer()        # returns at once: nothing to do
    assert trio.current_time() < 5
    assert not [r for r in h.records(start) if type(r).__name__ == "NoOpRecord"]
