"""Which error code a fenced transactional producer gets, by API and version (KIP-588).

Hand-built requests (no client library picks the version here): a transactional id is
initialised twice, so epoch 0 belongs to a fenced ("zombie") instance, and that instance
then sends each transactional API at each version both brokers accept. KIP-588 introduced
PRODUCER_FENCED (90); versions from before it get INVALID_PRODUCER_EPOCH (47) instead,
which their clients know. TxnOffsetCommit never answered 90 in Kafka: a stale epoch there
is INVALID_PRODUCER_EPOCH at every version.
"""

from __future__ import annotations

import itertools
import time

import pytest

from compat_tests.differential.common import Connection, _until_ok
from compat_tests.helpers import create_topic
from kbroker.wire import messages as M

CLIENT = "hand-built"

INVALID_PRODUCER_EPOCH, PRODUCER_FENCED = 47, 90
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
RETRIABLE = {14, 15, 16}
_ids = itertools.count()

# (api key, version, expected code for the fenced instance)
CASES = (
    [(26, v, INVALID_PRODUCER_EPOCH if v < 2 else PRODUCER_FENCED) for v in range(0, 6)]    # EndTxn
    + [(24, v, INVALID_PRODUCER_EPOCH if v < 2 else PRODUCER_FENCED) for v in range(0, 4)]  # AddPartitionsToTxn
    + [(25, v, INVALID_PRODUCER_EPOCH if v < 2 else PRODUCER_FENCED) for v in range(0, 5)]  # AddOffsetsToTxn
    + [(22, v, INVALID_PRODUCER_EPOCH if v < 4 else PRODUCER_FENCED) for v in range(3, 6)]  # InitProducerId
    + [(28, v, INVALID_PRODUCER_EPOCH) for v in range(0, 6)]                                # TxnOffsetCommit
)
NAMES = {26: "EndTxn", 24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 22: "InitProducerId",
         28: "TxnOffsetCommit"}


_created: set[str] = set()


@pytest.fixture
def fencing_topic(bootstrap):
    """One topic per broker for all cases (created by the first case on that broker)."""
    name = "compat-fencing-codes"
    if bootstrap not in _created:
        create_topic(bootstrap, name)
        _created.add(bootstrap)
    return name


def _connect(bootstrap):
    host, port = bootstrap.rsplit(":", 1)
    return Connection((host, int(port)), timeout=30)


def _init(conn, tid):
    """InitProducerId (v1: the transactional basics) until the coordinator is ready."""
    _until_ok(lambda: conn.request(10, 4, M.FindCoordinatorRequest(
        key_type=1, coordinator_keys=[tid])).coordinators[0])
    r = _until_ok(lambda: conn.request(22, 1, M.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)))
    assert r.error_code == 0, r
    return r.producer_id, r.producer_epoch


def _fenced_answer(conn, api_key, version, tid, pid, stale, topic, group):
    if api_key == 26:
        return conn.request(26, version, M.EndTxnRequest(
            transactional_id=tid, producer_id=pid, producer_epoch=stale, committed=True)).error_code
    if api_key == 24:
        a = M.AddPartitionsToTxnRequest
        r = conn.request(24, version, a(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=stale,
            v3_and_below_topics=[a.AddPartitionsToTxnTopic(name=topic, partitions=[0])]))
        return r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
    if api_key == 25:
        return conn.request(25, version, M.AddOffsetsToTxnRequest(
            transactional_id=tid, producer_id=pid, producer_epoch=stale, group_id=group)).error_code
    if api_key == 22:
        # KIP-360: the zombie says which producer it was; an id the coordinator never gave
        # this transactional id fences it
        return conn.request(22, version, M.InitProducerIdRequest(
            transactional_id=tid, transaction_timeout_ms=60000, producer_id=pid + 77,
            producer_epoch=stale)).error_code
    if api_key == 28:
        t = M.TxnOffsetCommitRequest
        r = conn.request(28, version, t(
            transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=stale,
            generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=[t.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                t.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]))
        return r.topics[0].partitions[0].error_code
    raise AssertionError(api_key)


@pytest.mark.parametrize("api_key,version,expected", CASES,
                         ids=[f"{NAMES[k]}-v{v}" for k, v, _ in CASES])
def test_fenced_producer_error_code(bootstrap, fencing_topic, api_key, version, expected):
    tid = f"compat-fencing-{NAMES[api_key]}-v{version}-{next(_ids)}"
    group = tid + "-group"
    conn = _connect(bootstrap)
    try:
        pid, stale = _init(conn, tid)
        pid2, current = _init(conn, tid)            # a new instance fences epoch `stale`
        assert pid2 == pid and current > stale
        if api_key == 28:
            # the group's coordinator is up (the offsets topic exists), and the new
            # instance's transaction holds the group's offsets partition
            _until_ok(lambda: conn.request(10, 4, M.FindCoordinatorRequest(
                key_type=0, coordinator_keys=[group])).coordinators[0])
            r = _until_ok(lambda: conn.request(25, 3, M.AddOffsetsToTxnRequest(
                transactional_id=tid, producer_id=pid, producer_epoch=current, group_id=group)))
            assert r.error_code == 0, r
        for _ in range(60):  # a client retries while the coordinator is not ready (yet)
            got = _fenced_answer(conn, api_key, version, tid, pid, stale, fencing_topic, group)
            if got not in RETRIABLE:
                break
            time.sleep(0.25)
    finally:
        conn.close()
    assert got == expected, f"{NAMES[api_key]} v{version}: {got}, expected {expected}"
