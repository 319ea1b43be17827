"""A log directory that fails goes offline, as Kafka's JBOD handling (KIP-858): its
partitions answer KAFKA_STORAGE_ERROR, DescribeLogDirs lists it with that error, the broker
keeps serving the partitions of its other directories, and with a replication factor of 3 the
controller moves leadership off the failed replicas while an acks=all producer loses nothing
(kbroker/log/failure.py, kbroker/replica/log_dir_failure.py); and since the controller writes
which replicas sat in the failed directory into the metadata log, a new active controller
after a failover keeps them out of leadership too. The failing directory is a small tmpfs the
test fills (tests/support/tmpfs.py). Whatever write meets the full disk -- a produce, or a
background write such as the offset checkpoints -- takes the same path; when the failed dir
is the broker's only one it halts with the same line."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from kbroker.wire import messages as w
from kbroker.wire import records as rb
from kbroker.wire.error_codes import ErrorCode as E

from .replication_support import produce, read_topic, records
from .support import Cluster, agreed_state, call, describe_quorum, wait_for, wait_for_isr
from tests.support.broker_proc import BrokerProcess
from tests.support.tmpfs import fill, umount
from tests.support.tmpfs import mount as mount_tmpfs

TMPFS_MB = 32
CHECKPOINT_MS = "500"        # log.flush.offset.checkpoint.interval.ms: a background write soon


def create_topic(port: int, name: str, partitions: int, rf: int) -> None:
    C = w.CreateTopicsRequest
    r = call(port, 19, 7, C(topics=[C.CreatableTopic(name=name, num_partitions=partitions,
                                                     replication_factor=rf, assignments=[],
                                                     configs=[])],
                            timeout_ms=30000, validate_only=False))
    assert r.topics[0].error_code == E.NONE, r.topics[0]


def log_dirs(port: int) -> dict[str, tuple[int, dict[tuple[str, int], int]]]:
    """DescribeLogDirs v4: {dir: (error, {(topic, partition): size})}."""
    resp = call(port, 35, 4, w.DescribeLogDirsRequest(topics=None))
    return {d.log_dir: (d.error_code, {(t.name, p.partition_index): p.partition_size
                                       for t in d.topics for p in t.partitions})
            for d in resp.results}


def produce_raw(port: int, topic: str, partition: int, value: bytes, acks: int = 1) -> int:
    P = w.ProduceRequest
    data = rb.build_batch([(None, value, (), int(time.time() * 1000))])
    r = call(port, 0, 9, P(transactional_id=None, acks=acks, timeout_ms=10000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[
            P.PartitionProduceData(index=partition, records=data)])]), timeout=20)
    return r.responses[0].partition_responses[0].error_code


def partitions_in(port: int, d: Path, topic: str) -> list[int]:
    return sorted(p for (t, p) in log_dirs(port)[str(d)][1] if t == topic)


def placed(port: int, good: Path, bad: Path, topic: str, count: int) -> tuple[list[int], list[int]]:
    """Wait until each of the topic's ``count`` partitions has its log in one of the two dirs,
    some in each (a broker creates the logs after CreateTopics answers); return the
    partitions of ``bad`` and of ``good``."""
    def split():
        dirs = log_dirs(port)
        on = [sorted(p for (t, p) in dirs[str(d)][1] if t == topic) for d in (bad, good)]
        return on if sorted(on[0] + on[1]) == list(range(count)) and all(on) else None
    on_bad, on_good = wait_for(split, timeout=30, what=f"the {count} partitions of {topic} "
                               "placed, some in each log dir")
    return on_bad, on_good


def log_dir_lines(text: str) -> list[str]:
    """The log-dir failure lines of a node's log (kbroker/replica/log_dir_failure.py)."""
    return re.findall(r"^.*log dir \S+ failed \(.*$", text, re.M)


class TwoDirBroker(BrokerProcess):
    """One combined node whose ``log.dirs`` is ``good,bad`` (``--data-dir`` would set one)."""

    def __init__(self, good: Path, bad: Path, **overrides):
        super().__init__(good, overrides={"log.dirs": f"{good},{bad}", **overrides})

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "kbroker", "serve", "--listen", f"127.0.0.1:{self.port}"]
        for k, v in self.overrides.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd


def active_controller(port: int, exclude=(-1,)) -> int:
    """The quorum's leader as the node on ``port`` sees it, once it is none of ``exclude``."""
    return wait_for(lambda: (lambda p: p.leader_id + 1 if p and p.leader_id not in exclude
                             else None)(describe_quorum(port)[0]),
                    timeout=30, what=f"an active controller other than {exclude}") - 1


def move_controller_off(c: Cluster, node_id: int) -> int:
    """Restart ``node_id`` until another node is the active controller, so that it reports to
    the controller over the wire (AssignReplicasToDirs, BrokerHeartbeat v1) and is not
    stopped with it. Returns the active controller."""
    port = c.any_port(exclude=(node_id,))
    for _ in range(3):
        leader = active_controller(port)
        if leader != node_id:
            return leader
        c.nodes[node_id].stop()
        active_controller(port, exclude=(-1, node_id))
        c.nodes[node_id].start()
    raise AssertionError(f"node {node_id} stays the active controller")


def test_failed_dir_goes_offline_and_the_broker_serves_the_other(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    mount_tmpfs(bad, TMPFS_MB)
    broker = TwoDirBroker(good, bad)
    try:
        broker.start()
        create_topic(broker.port, "jbod", 4, 1)
        on_bad, on_good = placed(broker.port, good, bad, "jbod", 4)
        for p in range(4):
            assert produce_raw(broker.port, "jbod", p, b"before") == E.NONE
        mark = broker.log_path.stat().st_size
        fill(bad / "filler")
        assert produce_raw(broker.port, "jbod", on_bad[0], b"x" * 8192) == E.KAFKA_STORAGE_ERROR
        # the directory is offline: its partitions answer the storage error from now on
        for p in on_bad:
            assert produce_raw(broker.port, "jbod", p, b"later") == E.KAFKA_STORAGE_ERROR
        for p in on_good:
            assert produce_raw(broker.port, "jbod", p, b"after") == E.NONE
        dirs = log_dirs(broker.port)
        assert dirs[str(bad)] == (E.KAFKA_STORAGE_ERROR, {})
        assert dirs[str(good)][0] == E.NONE
        assert {p for (_, p) in dirs[str(good)][1]} >= set(on_good)
        assert broker.running
        text = broker.log_text(mark)
        assert f"log dir {bad} failed" in text and "offline" in text, text[-2000:]
        assert "No space left on device" in text
    finally:
        broker.kill()
        umount(bad)


def test_a_background_write_fails_the_dir_and_nothing_acknowledged_is_lost(tmp_path):
    """No produce meets the full disk here: the broker's own offset checkpoint (every 500 ms)
    is the first write into it. The dir goes offline with one line naming it and the write,
    the broker serves its other dir and shuts down cleanly, and after a restart with the disk
    freed every acknowledged record is at the partition and offset it was acknowledged at."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    mount_tmpfs(bad, TMPFS_MB)
    broker = TwoDirBroker(good, bad, **{"log.flush.offset.checkpoint.interval.ms": CHECKPOINT_MS})
    try:
        broker.start()
        create_topic(broker.port, "bg", 4, 1)
        on_bad, on_good = placed(broker.port, good, bad, "bg", 4)
        acks = produce(broker.bootstrap, "bg", records("a", 200))
        assert not acks.failed and len(acks.acked) == 200
        assert {p for p, _ in acks.acked.values()} == set(range(4))
        mark = broker.log_path.stat().st_size
        fill(bad / "filler")
        line = wait_for(lambda: next(iter(log_dir_lines(broker.log_text(mark))), None),
                        timeout=30, what="the offset checkpoint failing on the full dir")
        assert f"log dir {bad} failed (write the offset checkpoints: " in line, line
        assert "No space left on device" in line and "the directory is offline" in line
        for p in on_bad:
            assert produce_raw(broker.port, "bg", p, b"refused") == E.KAFKA_STORAGE_ERROR
        after = {(None, b"after-%d" % p) for p in on_good}
        for p in on_good:
            assert produce_raw(broker.port, "bg", p, b"after-%d" % p) == E.NONE
        dirs = log_dirs(broker.port)
        assert dirs[str(bad)] == (E.KAFKA_STORAGE_ERROR, {})
        assert dirs[str(good)][0] == E.NONE
        assert broker.running
        assert log_dir_lines(broker.log_text(mark)) == [line]
        assert broker.stop() == 0
        (bad / "filler").unlink()
        broker.start()
        got = read_topic(broker.bootstrap, "bg", 4, set(acks.acked) | after)
        moved = {kv: (at, got.get(kv)) for kv, at in acks.acked.items() if got.get(kv) != at}
        assert not moved, f"{len(moved)} acknowledged records lost or moved, e.g. {list(moved.items())[:3]}"
        assert after <= got.keys()
    finally:
        broker.kill()
        umount(bad)


def test_the_last_dir_failing_halts_with_the_log_dir_line(tmp_path):
    """A broker whose only log dir (the metadata log's too) is the tmpfs: whichever write
    meets the full disk first, the broker halts (exit code 1) with one log-dir line and no
    other storage-error line, and a restart with the disk freed serves every acknowledged
    record."""
    disk = tmp_path / "disk"
    mount_tmpfs(disk, TMPFS_MB)
    broker = BrokerProcess(disk, overrides={"log.flush.offset.checkpoint.interval.ms": CHECKPOINT_MS})
    try:
        broker.start()
        create_topic(broker.port, "last", 2, 1)
        acks = produce(broker.bootstrap, "last", records("a", 100))
        assert not acks.failed and len(acks.acked) == 100
        mark = broker.log_path.stat().st_size
        fill(disk / "filler")
        wait_for(lambda: not broker.running, timeout=30, what="the broker halting on its full disk")
        assert broker.stop() == 1
        text = broker.log_text(mark)
        [line] = log_dir_lines(text)
        assert f"log dir {disk} failed (" in line and "No space left on device" in line
        assert ("kbroker cannot take one log dir offline when no other log dir is online, so the "
                "broker halts") in line
        assert "log write failed" not in text and "Traceback" not in text, text[-3000:]
        (disk / "filler").unlink()
        broker.start()
        got = read_topic(broker.bootstrap, "last", 2, set(acks.acked))
        moved = {kv: (at, got.get(kv)) for kv, at in acks.acked.items() if got.get(kv) != at}
        assert not moved, f"{len(moved)} acknowledged records lost or moved"
    finally:
        broker.kill()
        umount(disk)


def cluster_with_a_tmpfs_dir_on_node_2(tmp_path: Path) -> tuple[Cluster, Path]:
    """Three nodes (not started); node 2's ``log.dirs`` adds a small tmpfs the test fills."""
    root = tmp_path / "cluster"
    c = Cluster(root, extra={"replica.lag.time.max.ms": "3000"})
    bad = root / "node-2-bad"
    mount_tmpfs(bad, TMPFS_MB)
    node2 = c.nodes[2]
    node2.overrides["log.dirs"] = f"{node2.data_dir},{bad}"
    return c, bad


def test_three_nodes_move_leadership_off_a_failed_dir(tmp_path):
    """RF=3 on three nodes; node 2 has a second log dir on a tmpfs that fills up. The replicas
    there leave their ISRs, leadership moves off node 2 for them, an acks=all producer keeps
    going and every acknowledged record is read back; node 2 keeps running, and after a restart
    with the disk fixed its replicas rejoin the ISRs."""
    c, bad = cluster_with_a_tmpfs_dir_on_node_2(tmp_path)
    node2 = c.nodes[2]
    try:
        c.start_all()
        port = c.nodes[1].port
        move_controller_off(c, 2)
        C = w.CreateTopicsRequest
        r = call(port, 19, 7, C(topics=[C.CreatableTopic(
            name="jbod3", num_partitions=4, replication_factor=3, assignments=[],
            configs=[C.CreatableTopicConfig(name="min.insync.replicas", value="2")])],
            timeout_ms=30000, validate_only=False))
        assert r.topics[0].error_code == E.NONE, r.topics[0]
        wait_for_isr(c, "jbod3")
        wait_for(lambda: partitions_in(node2.port, bad, "jbod3"), timeout=30,
                 what="a replica of node 2 placed in its tmpfs log dir")
        on_bad = partitions_in(node2.port, bad, "jbod3")
        acks = produce(c.bootstrap(), "jbod3", records("a", 200))
        fill(bad / "filler")
        mark = node2.log_path.stat().st_size
        # values big enough to need new pages on the full tmpfs
        acks = produce(c.bootstrap(), "jbod3", [(k, v + b"." * 4000) for k, v in records("b", 400)],
                       into=acks)
        wait_for(lambda: f"log dir {bad} failed" in node2.log_text(mark), timeout=60,
                 what="node 2 taking its tmpfs log dir offline")
        state = wait_for(lambda: (lambda st: st if st and all(
            st[p].leader not in (-1, 2) and 2 not in st[p].isr for p in on_bad) else None)(
            agreed_state(c, "jbod3")), timeout=60,
            what="the failed dir's partitions led elsewhere, node 2 out of their ISRs")
        acks = produce(c.bootstrap(), "jbod3", records("c", 200), into=acks)
        assert not acks.failed, acks.failed[:5]
        assert len(acks.acked) == 800
        got = read_topic(c.bootstrap(), "jbod3", 4, set(acks.acked))
        missing = set(acks.acked) - set(got)
        assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:3]}"
        assert node2.running, "node 2 stopped although its other log dir is fine"
        assert log_dirs(node2.port)[str(bad)][0] == E.KAFKA_STORAGE_ERROR
        assert all(state[p].leader != 2 for p in on_bad)
        # the disk fixed, node 2 restarts: the dir's logs are recovered and catch up
        (bad / "filler").unlink()
        node2.stop()
        node2.start()
        wait_for_isr(c, "jbod3", what="node 2's replicas back in every ISR after the restart")
        assert log_dirs(node2.port)[str(bad)][0] == E.NONE
    finally:
        c.shutdown()
        umount(bad)


def elect(port: int, election_type: int, topic: str, partitions) -> dict[int, int]:
    """ElectLeaders v2: {partition: error code}."""
    R = w.ElectLeadersRequest
    r = call(port, 43, 2, R(election_type=election_type, timeout_ms=30000, topic_partitions=[
        R.TopicPartitions(topic=topic, partitions=list(partitions))]))
    assert r.error_code == E.NONE, r
    return {p.partition_id: p.error_code for t in r.replica_election_results for p in t.partition_result}


def test_a_new_active_controller_keeps_the_failed_dirs_replicas_out(tmp_path):
    """KIP-858 across a controller failover: node 2's second log dir (a tmpfs) fills up and
    goes offline; the controller writes which replicas sat there into the metadata log. Then
    the active controller is killed. The new one, knowing only the log, keeps node 2's
    replicas of that dir out of leadership: its leaderless single-replica partitions stay
    leaderless (no election may pick them, their leader epochs do not move, although node 2
    keeps heartbeating and stays their eligible leader replica, KIP-966), and its other replicas lead nothing
    and stay out of their ISRs (node 2 no longer fetches them, so no leader may take it back)
    while the crashed controller's leaderships move and it comes back."""
    c, bad = cluster_with_a_tmpfs_dir_on_node_2(tmp_path)
    node2 = c.nodes[2]
    try:
        c.start_all()
        controller = move_controller_off(c, 2)
        port = c.any_port(exclude=(2, controller))
        create_topic(port, "rf3", 4, 3)
        C = w.CreateTopicsRequest
        r = call(port, 19, 7, C(topics=[C.CreatableTopic(
            name="solo", num_partitions=-1, replication_factor=-1,
            assignments=[C.CreatableReplicaAssignment(partition_index=i, broker_ids=[2]) for i in range(4)],
            configs=[])], timeout_ms=30000, validate_only=False))
        assert r.topics[0].error_code == E.NONE, r.topics[0]
        wait_for_isr(c, "rf3")
        wait_for(lambda: partitions_in(node2.port, bad, "solo") and partitions_in(node2.port, bad, "rf3"),
                 timeout=30, what="replicas of both topics in node 2's tmpfs log dir")
        solo_bad, rf3_bad = partitions_in(node2.port, bad, "solo"), partitions_in(node2.port, bad, "rf3")
        solo_good = sorted(set(range(4)) - set(solo_bad))

        fill(bad / "filler")
        assert produce_raw(node2.port, "solo", solo_bad[0], b"x" * 8192) == E.KAFKA_STORAGE_ERROR
        state = wait_for(lambda: (lambda solo, rf3: (solo, rf3) if solo and rf3 and all(
            solo[p].leader == -1 for p in solo_bad) and all(
            rf3[p].leader not in (-1, 2) and 2 not in rf3[p].isr for p in rf3_bad) else None)(
            agreed_state(c, "solo"), agreed_state(c, "rf3")),
            timeout=60, what="the failed dir's replicas out of leadership and ISRs")
        solo_before = state[0]
        assert all(solo_before[p].leader == 2 for p in solo_good), "node 2's other dir still leads"

        # the active controller crashes; another voter takes over from the log
        c.kill(controller)
        port = c.any_port(exclude=(controller,))
        new = active_controller(port, exclude=(-1, controller))
        assert new != controller
        # elections asked of the new controller must not pick node 2's replicas in the dir
        assert elect(port, 1, "solo", solo_bad) == {p: E.ELIGIBLE_LEADERS_NOT_AVAILABLE for p in solo_bad}
        assert elect(port, 0, "solo", solo_bad) == {p: E.PREFERRED_LEADER_NOT_AVAILABLE for p in solo_bad}
        # the crashed node comes back; the cluster settles on the same answer
        c.start(controller)
        wait_for_isr(c, "rf3", partitions=set(range(4)) - set(rf3_bad),
                     what="the partitions of node 2's good dir with full ISRs again")
        solo, rf3 = wait_for(lambda: (lambda a, b: (a, b) if a and b else None)(
            agreed_state(c, "solo"), agreed_state(c, "rf3")), what="every node agreeing")
        for p in solo_bad:
            assert (solo[p].leader, solo[p].leader_epoch) == (-1, solo_before[p].leader_epoch), solo[p]
        for p in rf3_bad:
            assert rf3[p].leader not in (-1, 2), rf3[p]
            assert 2 not in rf3[p].isr, rf3[p]
        assert all(solo[p].leader == 2 for p in solo_good)
        assert node2.running, "node 2 stopped although its other log dir is fine"
    finally:
        c.shutdown()
        umount(bad)
