"""A log directory whose disk fails, whatever write meets it: the replica manager on a real
LogManager over two log dirs, the second a 1 MiB tmpfs (tests/support/tmpfs.py) that the
test fills, so the failing writes are real ``ENOSPC``\\s of real files.

The failures come from background work -- the offset checkpoints of the flush task, a
retention pass rolling a segment -- from applying a metadata image (``partition.metadata``
of a new replica) and from an append whose batch fits the segment's last page but whose
offset index entry needs a new one (the write the seeded fault test met first). Each time
the directory goes offline through the log dir failure channel (kbroker/log/failure.py,
kbroker/replica/log_dir_failure.py) with one ERROR line naming it, what was written and the
cause, the other directory keeps serving, and after the disk is freed every acknowledged
record is read back. The last online dir and the metadata log's dir halt instead (``halt``
is replaced to record the exit code)."""
from __future__ import annotations

import os

import pytest

from kbroker.log import checkpoint as ckpt
from kbroker.log.config import LogConfig
from kbroker.log.manager import LogManager
from kbroker.replica import FetchSpec, ReplicaError, log_dir_failure
from kbroker.wire.error_codes import ErrorCode
from tests.support.tmpfs import fill, tmpfs

from .conftest import Cluster, batch, decode_region, make_broker

ENOSPC_TEXT = "No space left on device"


@pytest.fixture
def halts(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(log_dir_failure, "halt", calls.append)
    return calls


def error_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]


def stored_values(log) -> list[bytes]:
    region = log.read(log.log_start_offset, 1 << 20)
    return [] if region is None else [r.value for r in decode_region(region)]


def produce(b, topic: str, partitions, n: int) -> dict[int, list[bytes]]:
    """``n`` acknowledged records (acks=1) on each partition: {partition: values}."""
    acked: dict[int, list[bytes]] = {}
    for p in partitions:
        for i in range(n):
            value = b"%s-%d-%d" % (topic.encode(), p, i)
            b.replicas.append(topic, p, batch(value), required_acks=1)
            acked.setdefault(p, []).append(value)
    return acked


def split(b, topic: str, partitions: int, bad) -> tuple[list[int], list[int]]:
    on_bad = [p for p in range(partitions) if b.logs.get(topic, p).dir.parent == bad]
    on_good = [p for p in range(partitions) if p not in on_bad]
    assert on_bad and on_good, "the partitions are spread over both log dirs"
    return on_bad, on_good


def assert_offline(b, topic: str, partitions, bad) -> None:
    """``bad`` is offline: its replicas answer KAFKA_STORAGE_ERROR to produce and fetch, and
    DescribeLogDirs lists it with that error."""
    for p in partitions:
        with pytest.raises(ReplicaError) as e:
            b.replicas.append(topic, p, batch(b"refused"), required_acks=1)
        assert e.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
        r = b.replicas.read_partition(FetchSpec(topic, p, 0, 1 << 20), 1 << 20,
                                      isolation_level=0, min_one=True)
        assert r.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert b.logs.offline_dirs == {bad}
    described = {d: err for d, err, *_ in b.replicas.describe_log_dirs(None)}
    assert described[str(bad)] == ErrorCode.KAFKA_STORAGE_ERROR


def assert_nothing_lost(good, bad, clock, topic: str, acked: dict[int, list[bytes]]) -> None:
    """The disk freed, a new LogManager recovers the failed dir (no clean-shutdown marker
    there) and every acknowledged record is in its partition, in order."""
    (bad / "filler").unlink()
    logs = LogManager([good, bad], LogConfig(), clock.now_ms)
    logs.load()
    try:
        assert logs.had_clean_shutdown == {good: True, bad: False}
        for p, values in acked.items():
            assert stored_values(logs.get(topic, p)) == values, f"{topic}-{p}"
    finally:
        logs.shutdown()


def test_failed_checkpoint_takes_the_dir_offline_and_the_other_dir_serves(tmp_path, clock, halts,
                                                                           caplog):
    good, bad = tmp_path / "good", tmp_path / "bad"
    with tmpfs(bad):
        b = make_broker([good, bad], clock)
        try:
            Cluster(b.replicas).create("t", 4)
            on_bad, on_good = split(b, "t", 4, bad)
            acked = produce(b, "t", range(4), 3)
            fill(bad / "filler")
            clock.now += 60_000        # log.flush.offset.checkpoint.interval.ms has passed
            b.logs.run_flush()         # the flush task's step: no append is involved
            [line] = error_lines(caplog)
            assert f"log dir {bad} failed (write the offset checkpoints: " in line
            assert ENOSPC_TEXT in line and "the directory is offline" in line
            assert halts == []
            assert_offline(b, "t", on_bad, bad)
            # the other dir was checkpointed in the same pass and takes writes
            hws = ckpt.read_checkpoint(good / ckpt.REPLICATION_OFFSET)
            assert {p: hws[("t", p)] for p in on_good} == {p: 3 for p in on_good}
            for p in on_good:
                b.replicas.append("t", p, batch(b"after"), required_acks=1)
                acked[p].append(b"after")
                assert stored_values(b.replicas.get_partition("t", p).log) == acked[p]
            assert len(error_lines(caplog)) == 1
        finally:
            b.logs.shutdown()
        assert_nothing_lost(good, bad, clock, "t", acked)


def test_failed_retention_roll_takes_the_dir_offline(tmp_path, clock, halts, caplog):
    """Retention of an expired active segment rolls it first; on the full dir the roll's
    first write (the time index entry or the producer snapshot) fails. The pass goes on
    with the other dir's logs, whose expired data is deleted."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    with tmpfs(bad):
        b = make_broker([good, bad], clock)
        try:
            Cluster(b.replicas).create("r", 3, configs={"retention.ms": "1000"})
            on_bad, on_good = split(b, "r", 3, bad)
            acked = produce(b, "r", range(3), 3)
            fill(bad / "filler")
            clock.now += 10_000        # every record is past retention.ms
            b.logs.run_retention()     # the retention task's step
            [line] = error_lines(caplog)
            # (the innermost operation names itself: retention's roll of the active segment)
            assert f"log dir {bad} failed (roll a segment of r-{on_bad[0]}: " in line
            assert ENOSPC_TEXT in line and "the directory is offline" in line
            assert halts == []
            assert_offline(b, "r", on_bad, bad)
            for p in on_good:
                log = b.replicas.get_partition("r", p).log
                assert log.log_start_offset == log.log_end_offset == 3
        finally:
            b.logs.shutdown()
        # the failed pass deleted nothing there
        assert_nothing_lost(good, bad, clock, "r", {p: acked[p] for p in on_bad})


def test_failed_index_write_is_undone_and_takes_the_dir_offline(tmp_path, clock, halts, caplog):
    """The seeded fault test's case: on a full disk the batch still fits the segment's last
    page, its offset index entry needs a new page. The produce answers KAFKA_STORAGE_ERROR,
    the batch already written is cut off again, and the dir goes offline."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    with tmpfs(bad):
        b = make_broker([good, bad], clock)
        try:
            Cluster(b.replicas).create("i", 2, configs={"index.interval.bytes": "0"})
            [p], _ = split(b, "i", 2, bad)
            acked = produce(b, "i", [p], 1)
            seg = b.logs.get("i", p).segments[-1]
            size = os.path.getsize(seg.log_path)
            fill(bad / "filler")
            with pytest.raises(ReplicaError) as e:
                b.replicas.append("i", p, batch(b"unacknowledged"), required_acks=1)
            assert e.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            [line] = error_lines(caplog)
            assert (f"log dir {bad} failed (append to i-{p}: [Errno 28] {ENOSPC_TEXT}: "
                    f"'{seg.offset_index.path}')") in line
            assert os.path.getsize(seg.log_path) == size
            assert halts == []
            assert_offline(b, "i", [p], bad)
        finally:
            b.logs.shutdown()
        assert_nothing_lost(good, bad, clock, "i", acked)


def test_replica_created_on_a_full_dir_is_offline(tmp_path, clock, halts, caplog):
    """Applying an image that creates a replica: its log's ``partition.metadata`` cannot be
    written, so the replica and its dir are offline while the other dir's replica serves."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    with tmpfs(bad):
        b = make_broker([good, bad], clock)
        fill(bad / "filler")
        try:
            topic = Cluster(b.replicas).create("n", 2)
            [line] = error_lines(caplog)
            assert f"log dir {bad} failed (write partition.metadata of n-1: " in line
            assert ENOSPC_TEXT in line
            assert halts == []
            assert_offline(b, "n", [1], bad)
            assert b.replicas.offline_replicas() == {("n", 1): (bad, topic.topic_id)}
            b.replicas.append("n", 0, batch(b"served"), required_acks=1)
            assert stored_values(b.replicas.get_partition("n", 0).log) == [b"served"]
        finally:
            b.logs.shutdown()


@pytest.mark.parametrize("second", [False, True], ids=["only-dir", "metadata-dir"])
def test_last_or_metadata_dir_failing_in_the_background_halts(tmp_path, clock, halts, caplog,
                                                              second):
    """The full dir is the only one, or the first of ``log.dirs`` (the metadata log's): the
    checkpoint failing there halts the broker with the log-dir line."""
    bad, good = tmp_path / "bad", tmp_path / "good"
    with tmpfs(bad):
        b = make_broker([bad, good] if second else [bad], clock)
        try:
            Cluster(b.replicas).create("h", 2)
            produce(b, "h", range(2), 2)
            fill(bad / "filler")
            clock.now += 60_000
            b.logs.run_flush()
            assert halts == [log_dir_failure.EXIT_CODE]
            [line] = error_lines(caplog)
            why = "it holds the metadata log" if second else "no other log dir is online"
            assert f"log dir {bad} failed (write the offset checkpoints: " in line
            assert ENOSPC_TEXT in line
            assert f"kbroker cannot take one log dir offline when {why}, so the broker halts" in line
        finally:
            b.logs.shutdown()
