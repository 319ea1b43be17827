"""Transaction version 2 (KIP-890 part 2) on Apache Kafka 4.3.1 and kbroker.

Both brokers finalize ``transaction.version`` = 2 on a new cluster (ApiVersions says so), so
Kafka 4 clients use the second-phase protocol:

- hand-built frames: a transactional Produce v12 opens the transaction without
  AddPartitionsToTxn (DescribeTransactions shows the partition), and every EndTxn v5 answers
  with the producer's next epoch -- one more per commit or abort, the same on both brokers,
  with Kafka's answers to retries (NONE and the current epoch), to the other result
  (INVALID_TXN_STATE), to an abort with no open transaction (a new epoch) and to a stale
  epoch (PRODUCER_FENCED);
- the Java producer and consumer of the pinned kafka-clients (Kafka's
  TransactionalMessageCopier: read_committed consumer, transactional producer,
  sendOffsetsToTransaction, commits and random aborts) copy every record exactly once, and
  the transactional id's producer epoch afterwards shows one bump per transaction (with
  transaction version 1 it would still be 0);
- with the feature downgraded to 0 (``kafka-features``) the Java client falls back to the
  first protocol and still copies exactly once;
- next to it, part 1's verification: a partition outside the transaction is
  TRANSACTION_ABORTABLE for a leader's verify_only question, and for a Produce v11 (v10:
  INVALID_TXN_STATE).
"""

from __future__ import annotations

import itertools
import re
import time

import pytest

from compat_tests.cli import run_tool
from compat_tests.differential.common import Connection, _until_ok
from compat_tests.helpers import create_topic, read_until
from kbroker.wire import messages as M
from kbroker.wire import records as wire_records

CLIENT = "hand-built"

NONE, INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS, PRODUCER_FENCED = 0, 48, 51, 90
TRANSACTION_ABORTABLE = 120
_ids = itertools.count()


def _connect(bootstrap):
    host, port = bootstrap.rsplit(":", 1)
    return Connection((host, int(port)), timeout=30)


def _retrying(send, retry=(CONCURRENT_TRANSACTIONS, 14, 15, 16), attempts=80):
    """As a client: retry while markers are still being written or the coordinator loads."""
    for _ in range(attempts):
        r = send()
        if r.error_code not in retry:
            return r
        time.sleep(0.1)
    return r


def _produce_v12(conn, tid, topic, pid, epoch, seq, value):
    batch = wire_records.build_batch([(None, value, (), int(time.time() * 1000))],
                                     producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                     is_transactional=True)
    P = M.ProduceRequest
    r = conn.request(0, 12, P(transactional_id=tid, acks=-1, timeout_ms=30000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[
            P.PartitionProduceData(index=0, records=batch)])]))
    return r.responses[0].partition_responses[0].error_code


def _end(conn, tid, pid, epoch, commit):
    return _retrying(lambda: conn.request(26, 5, M.EndTxnRequest(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)))


@pytest.fixture
def _dist(kafka_dist):
    """The Java tools need the Kafka jars on every target, kbroker included."""


def _api_versions(bootstrap, version):
    conn = _connect(bootstrap)
    try:
        return conn.request(18, version, M.ApiVersionsRequest(client_software_name="compat",
                                                              client_software_version="1"))
    finally:
        conn.close()


def test_finalized_transaction_version_is_2(bootstrap):
    r = _api_versions(bootstrap, 4)
    finalized = {f.name: f.max_version_level for f in r.finalized_features}
    supported = {f.name: (f.min_version, f.max_version) for f in r.supported_features}
    assert finalized.get("transaction.version") == 2, finalized
    assert supported.get("transaction.version") == (0, 2), supported
    # KIP-1022: below v4 a supported feature whose minimum is 0 is left out (older clients
    # refuse a range starting at 0); the finalized level is still there
    r = _api_versions(bootstrap, 3)
    assert "transaction.version" not in {f.name for f in r.supported_features}
    assert {f.name: f.max_version_level for f in r.finalized_features}.get("transaction.version") == 2


def test_kafka_features_describes_transaction_version_2(_dist, bootstrap):
    out = run_tool("kafka-features", ["--bootstrap-server", bootstrap, "describe"]).check()
    [line] = [ln for ln in out.lines if "Feature: transaction.version" in ln]
    fields = dict(re.findall(r"(\w+):\s*(\S+)", line))
    assert (fields["SupportedMinVersion"], fields["SupportedMaxVersion"],
            fields["FinalizedVersionLevel"]) == ("0", "2", "2"), line


def test_end_txn_v5_bumps_the_epoch_per_transaction(bootstrap, topic_name):
    create_topic(bootstrap, topic_name)
    tid = f"{topic_name}-tv2-{next(_ids)}"
    conn = _connect(bootstrap)
    try:
        _until_ok(lambda: conn.request(10, 4, M.FindCoordinatorRequest(
            key_type=1, coordinator_keys=[tid])).coordinators[0])
        r = _until_ok(lambda: conn.request(22, 5, M.InitProducerIdRequest(
            transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)))
        assert r.error_code == NONE, r
        pid, e = r.producer_id, r.producer_epoch

        # Produce v12 adds the partition: no AddPartitionsToTxn
        code = None
        for _ in range(60):
            code = _produce_v12(conn, tid, topic_name, pid, e, 0, b"committed")
            if code not in (6, 19, CONCURRENT_TRANSACTIONS):   # retriable while loading
                break
            time.sleep(0.25)
        assert code == NONE
        d = conn.request(65, 0, M.DescribeTransactionsRequest(transactional_ids=[tid]))
        state = d.transaction_states[0]
        assert (state.transaction_state, [(t.topic, list(t.partitions)) for t in state.topics]) \
            == ("Ongoing", [(topic_name, [0])])

        answers = []
        r = _end(conn, tid, pid, e, True)                  # commit: epoch e -> e+1
        answers.append(("commit", r.error_code, r.producer_id - pid, r.producer_epoch - e))
        r = _end(conn, tid, pid, e, True)                  # its retry: NONE, the same epoch
        answers.append(("commit retry", r.error_code, r.producer_id - pid, r.producer_epoch - e))
        r = _end(conn, tid, pid, e, False)                 # a retry with the other result
        answers.append(("abort as retry", r.error_code, r.producer_id, r.producer_epoch))
        r = _end(conn, tid, pid, e + 1, True)              # commit with nothing open
        answers.append(("commit, nothing open", r.error_code, r.producer_id, r.producer_epoch))
        r = _end(conn, tid, pid, e + 1, False)             # abort with nothing open: e+2
        answers.append(("abort, nothing open", r.error_code, r.producer_id - pid,
                        r.producer_epoch - e))
        r = _end(conn, tid, pid, e + 5, False)             # an epoch the coordinator never gave
        answers.append(("stale epoch", r.error_code, r.producer_id, r.producer_epoch))
        code = _produce_v12(conn, tid, topic_name, pid, e + 2, 0, b"aborted")
        answers.append(("produce at the new epoch", code))
        r = _end(conn, tid, pid, e + 2, False)             # abort: e+3
        answers.append(("abort", r.error_code, r.producer_id - pid, r.producer_epoch - e))
        r = _end(conn, tid, pid, e + 2, True)              # a commit at the aborted epoch
        answers.append(("commit after abort", r.error_code, r.producer_id, r.producer_epoch))
    finally:
        conn.close()
    assert answers == [
        ("commit", NONE, 0, 1),
        ("commit retry", NONE, 0, 1),
        ("abort as retry", INVALID_TXN_STATE, -1, -1),
        ("commit, nothing open", INVALID_TXN_STATE, -1, -1),
        ("abort, nothing open", NONE, 0, 2),
        ("stale epoch", PRODUCER_FENCED, -1, -1),
        ("produce at the new epoch", NONE),
        ("abort", NONE, 0, 3),
        ("commit after abort", INVALID_TXN_STATE, -1, -1),
    ]


def _describe_epoch(bootstrap, tid) -> int:
    out = run_tool("kafka-transactions", ["--bootstrap-server", bootstrap, "describe",
                                          "--transactional-id", tid]).check()
    header, row = [re.split(r"\s{2,}|\t", line.strip()) for line in out.lines[:2]]
    return int(dict(zip(header, row))["ProducerEpoch"])


def test_java_consume_transform_produce_uses_tv2(_dist, bootstrap, topic_name):
    src, dst = topic_name + "-in", topic_name + "-out"
    create_topic(bootstrap, src)
    create_topic(bootstrap, dst)
    n, size = 200, 20
    run_tool("kafka-verifiable-producer", ["--bootstrap-server", bootstrap, "--topic", src,
                                           "--max-messages", str(n), "--acks", "-1"],
             timeout=120).check()
    tid = topic_name + "-copier"
    run_tool("org.apache.kafka.tools.TransactionalMessageCopier", [
        "--broker-list", bootstrap, "--input-topic", src, "--input-partition", "0",
        "--output-topic", dst, "--transactional-id", tid, "--consumer-group", tid + "-group",
        "--max-messages", str(n), "--transaction-size", str(size), "--enable-random-aborts",
        "--use-group-metadata"], timeout=180).check()
    out = run_tool("kafka-console-consumer", [
        "--bootstrap-server", bootstrap, "--topic", dst, "--from-beginning",
        "--isolation-level", "read_committed", "--max-messages", str(n),
        "--timeout-ms", "20000"], timeout=120).check()
    values = [line for line in out.lines if line.strip()]
    assert sorted(values, key=int) == [str(i) for i in range(n)]
    # the group's committed offset went with the last transaction
    groups = run_tool("kafka-consumer-groups", ["--bootstrap-server", bootstrap, "--describe",
                                                "--group", tid + "-group"]).check()
    assert re.search(rf"{re.escape(src)}\s+0\s+{n}\s+{n}\s+0", groups.stdout), groups.stdout
    # TV2: every EndTxn bumped the epoch (at least one commit per `size` records)
    assert _describe_epoch(bootstrap, tid) >= n // size


def test_verify_only_and_produce_answers_for_a_partition_not_in_the_transaction(bootstrap, topic_name):
    """KIP-890 part 1 next to part 2: a leader's verify_only question (AddPartitionsToTxn v4
    and v5) is TRANSACTION_ABORTABLE for a partition outside the transaction; a Produce v11
    carries that code to the producer, v10 turns it into INVALID_TXN_STATE."""
    create_topic(bootstrap, topic_name, 2)
    tid = f"{topic_name}-verify-{next(_ids)}"
    conn = _connect(bootstrap)
    A = M.AddPartitionsToTxnRequest
    try:
        _until_ok(lambda: conn.request(10, 4, M.FindCoordinatorRequest(
            key_type=1, coordinator_keys=[tid])).coordinators[0])
        r = _until_ok(lambda: conn.request(22, 5, M.InitProducerIdRequest(
            transactional_id=tid, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)))
        pid, e = r.producer_id, r.producer_epoch
        for _ in range(60):
            code = _produce_v12(conn, tid, topic_name, pid, e, 0, b"in")
            if code not in (6, 19, CONCURRENT_TRANSACTIONS):
                break
            time.sleep(0.25)
        assert code == NONE

        def verify(version):
            r = conn.request(24, version, A(transactions=[A.AddPartitionsToTxnTransaction(
                transactional_id=tid, producer_id=pid, producer_epoch=e, verify_only=True,
                topics=[A.AddPartitionsToTxnTopic(name=topic_name, partitions=[0, 1])])]))
            return r.error_code, sorted((p.partition_index, p.partition_error_code)
                                        for t in r.results_by_transaction[0].topic_results
                                        for p in t.results_by_partition)

        answers = {v: verify(v) for v in (4, 5)}
        produced = {}
        for version in (11, 10):
            batch = wire_records.build_batch([(None, b"stray", (), int(time.time() * 1000))],
                                             producer_id=pid, producer_epoch=e, base_sequence=0,
                                             is_transactional=True)
            P = M.ProduceRequest
            for _ in range(60):     # a loaded Kafka may not lead partition 1 yet (6)
                r = conn.request(0, version, P(transactional_id=tid, acks=-1, timeout_ms=30000, topic_data=[
                    P.TopicProduceData(name=topic_name, partition_data=[
                        P.PartitionProduceData(index=1, records=batch)])]))
                produced[version] = r.responses[0].partition_responses[0].error_code
                if produced[version] != 6:
                    break
                time.sleep(0.25)
    finally:
        conn.close()
    assert answers == {4: (NONE, [(0, NONE), (1, TRANSACTION_ABORTABLE)]),
                       5: (NONE, [(0, NONE), (1, TRANSACTION_ABORTABLE)])}
    assert produced == {11: TRANSACTION_ABORTABLE, 10: INVALID_TXN_STATE}


def test_java_client_falls_back_to_tv1_when_the_feature_is_downgraded(_dist, bootstrap, topic_name, target):
    """``kafka-features downgrade --feature transaction.version=0``: new Java producers use
    the first protocol (AddPartitionsToTxn, no epoch bump per transaction) and still copy
    every record exactly once; upgraded again afterwards."""
    src, dst = topic_name + "-in", topic_name + "-out"
    create_topic(bootstrap, src)
    create_topic(bootstrap, dst)
    n, size = 60, 20
    run_tool("kafka-verifiable-producer", ["--bootstrap-server", bootstrap, "--topic", src,
                                           "--max-messages", str(n), "--acks", "-1"],
             timeout=120).check()
    run_tool("kafka-features", ["--bootstrap-server", bootstrap, "downgrade", "--feature",
                                "transaction.version=0"]).check()
    try:
        # the broker applies the change when its metadata log catches up, after the controller
        # answered (on Kafka): a producer started before then would still see level 2
        assert _finalized_tv_until(bootstrap, 0, target == "kbroker") == 0
        tid = topic_name + "-copier"
        run_tool("org.apache.kafka.tools.TransactionalMessageCopier", [
            "--broker-list", bootstrap, "--input-topic", src, "--input-partition", "0",
            "--output-topic", dst, "--transactional-id", tid, "--consumer-group", tid + "-group",
            "--max-messages", str(n), "--transaction-size", str(size),
            "--use-group-metadata"], timeout=180).check()
        assert _describe_epoch(bootstrap, tid) == 0        # TV1: InitProducerId's epoch only
    finally:
        run_tool("kafka-features", ["--bootstrap-server", bootstrap, "upgrade", "--feature",
                                    "transaction.version=2"]).check()
    out = run_tool("kafka-console-consumer", [
        "--bootstrap-server", bootstrap, "--topic", dst, "--from-beginning",
        "--isolation-level", "read_committed", "--max-messages", str(n),
        "--timeout-ms", "20000"], timeout=120).check()
    assert sorted((v for v in out.lines if v.strip()), key=int) == [str(i) for i in range(n)]
    assert _finalized_tv_until(bootstrap, 2, target == "kbroker") == 2


def _finalized_tv_until(bootstrap, level: int, at_once: bool) -> int:
    """The finalized transaction.version in the broker's ApiVersions (0 when not finalized),
    read again until it is ``level`` (bounded; the last answer either way; with ``at_once``,
    kbroker's, the first)."""
    def finalized():
        return {f.name: f.max_version_level
                for f in _api_versions(bootstrap, 4).finalized_features}.get("transaction.version", 0)
    return read_until(finalized, lambda got: got == level, interval=0.2, at_once=at_once)
