"""Which fsyncs persisting a ``Ready`` makes (start-up waits, issue 32): the directory of
``__cluster_metadata-0`` is synced once per ``Ready`` -- after the new ``quorum-state``,
the new epoch's checkpoint and new segments are all in place, before the driver sends
anything -- and not by each file's own replacement. Counted on the real ``os.fsync`` (which
still runs) by the name of the file or directory synced, on a real metadata log."""
from __future__ import annotations

import pytest

from kbroker.log import LogConfig, LogManager
from kbroker.log.epoch_cache import read_epoch_file
from kbroker.metadata.store import MetadataLog
from kbroker.raft.control import leader_change_value
from kbroker.raft.messages import Entry
from kbroker.raft.state import QuorumState
from kbroker.raft.storage import QUORUM_STATE, RaftStorage
from tests.support.fsyncs import record_fsyncs

NOW = 5_000_000
DIR = "__cluster_metadata-0"
SEGMENT = "00000000000000000000.log"


@pytest.fixture
def synced(monkeypatch) -> list[str]:
    """Names (file or directory basename) of every fsync, in order; the fsync still runs."""
    return record_fsyncs(monkeypatch)


@pytest.fixture
def storage(tmp_path):
    logs = LogManager([tmp_path], LogConfig(), lambda: NOW)
    logs.load()
    st = RaftStorage(MetadataLog.open(logs, lambda: NOW).log, [1], lambda: NOW)
    yield st
    logs.shutdown()


def persist(st: RaftStorage, state: QuorumState | None, entries: list[Entry]) -> None:
    """What ``RaftDriver._persist`` does with a Ready holding ``state`` and ``entries``."""
    if state is not None:
        st.persist_state(state)
    if entries:
        st.append_entries(entries)
    st.sync_directory()


def test_a_fresh_leaders_first_ready_syncs_the_directory_once(storage, synced):
    """A one-node quorum's first Ready: its own election and the epoch's LeaderChange. The
    quorum state, the log, and the epoch checkpoint each get their fsync; the directory,
    where the first two were renamed into place and the segment was created, one."""
    synced.clear()
    lc = leader_change_value(1, [1], [1])
    persist(storage, QuorumState(leader_id=1, leader_epoch=1, voted_id=1), [Entry(0, 1, lc, control=True)])
    assert synced == [f"{QUORUM_STATE}.tmp", SEGMENT, "leader-epoch-checkpoint.tmp", DIR]
    assert storage.read_quorum_state() == QuorumState(leader_id=1, leader_epoch=1, voted_id=1)
    assert [tuple(e) for e in read_epoch_file(storage.dir / "leader-epoch-checkpoint")] == [(1, 0)]
    assert [e.offset for e in storage.read_entries()] == [0]

    # the next appends of the epoch: the log's fsync alone
    synced.clear()
    persist(storage, None, [Entry(1, 1, b"record")])
    persist(storage, None, [Entry(2, 1, b"record"), Entry(3, 1, b"record")])
    assert synced == [SEGMENT, SEGMENT]


def test_a_control_and_a_data_batch_of_one_epoch_are_one_append(storage, synced):
    """A fresh leader's first Ready with its bootstrap records: the LeaderChange batch and
    the data batch are written by one append, so one fsync of the log; batches of another
    epoch are an append of their own, each stamped with its epoch."""
    synced.clear()
    persist(storage, QuorumState(leader_id=1, leader_epoch=1, voted_id=1),
            [Entry(0, 1, leader_change_value(1, [1], [1]), control=True),
             Entry(1, 1, b"bootstrap"), Entry(2, 1, b"bootstrap")])
    assert synced == [f"{QUORUM_STATE}.tmp", SEGMENT, "leader-epoch-checkpoint.tmp", DIR]
    batches = list(storage.log.batches(0))
    assert [(h.base_offset, h.is_control) for h, _ in batches] == [(0, True), (1, False)]

    synced.clear()       # a follower's catch-up: epochs 1 and 2 in one Ready
    persist(storage, None, [Entry(3, 1, b"a"), Entry(4, 2, b"b"), Entry(5, 2, b"c")])
    assert synced == [SEGMENT, SEGMENT, "leader-epoch-checkpoint.tmp", DIR]
    assert [(h.base_offset, h.partition_leader_epoch) for h, _ in storage.log.batches(3)] == [(3, 1), (4, 2)]
    assert [tuple(e) for e in read_epoch_file(storage.dir / "leader-epoch-checkpoint")] == [(1, 0), (2, 4)]


def test_a_vote_alone_syncs_the_directory_before_its_ready_ends(storage, synced):
    """A Ready with a new quorum state and no entries (a vote granted, a new epoch seen):
    the rename is durable before the answer goes out; a Ready that changed nothing in the
    directory syncs nothing."""
    synced.clear()
    persist(storage, QuorumState(leader_id=-1, leader_epoch=3, voted_id=2), [])
    assert synced == [f"{QUORUM_STATE}.tmp", DIR]
    synced.clear()
    persist(storage, None, [])
    assert synced == []


def test_a_new_epoch_on_an_existing_segment_syncs_its_checkpoint_and_the_directory(storage, synced):
    persist(storage, QuorumState(leader_id=1, leader_epoch=1, voted_id=1),
            [Entry(0, 1, leader_change_value(1, [1], [1]), control=True)])
    synced.clear()
    persist(storage, QuorumState(leader_id=1, leader_epoch=2, voted_id=1),
            [Entry(1, 2, leader_change_value(1, [1], [1]), control=True)])
    assert synced == [f"{QUORUM_STATE}.tmp", SEGMENT, "leader-epoch-checkpoint.tmp", DIR]
    assert [tuple(e) for e in read_epoch_file(storage.dir / "leader-epoch-checkpoint")] == [(1, 0), (2, 1)]
