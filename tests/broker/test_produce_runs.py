"""Pipelined Produce requests for one partition appended as one run (issue 32, item 3:
kbroker/server/connection.py ``_handle_produces``, kbroker/api/produce.py ``handle_run``,
kbroker/replica/append.py ``append_run``).

Counted, not timed. A run's answers are those the same requests get one at a time (the
offsets, log start offset and append time of each, in order), the records land in the log
in order, and every meter counts each request as before; the run is one append
(``append_runs``). Anything a run cannot take as it is goes one by one, with the answer
Kafka gives it: a batch the log refuses, a timestamp outside the window, idempotent
batches (checked one after another against the producer state), acks=0 and acks=-1, and
every request while an authorizer or a quota is in force.
"""
from __future__ import annotations

import time

import pytest
import trio

from kbroker.authz.acls import DENY, LITERAL, TOPIC, WRITE, Acl
from kbroker.wire import messages
from kbroker.wire import records as rec
from kbroker.wire.error_codes import ErrorCode as E
from kbroker.wire.protocol import decode_response, encode_request, encode_response
from tests.authz.test_delegation_tokens import config as authz_config, start as authz_start

from .raw import RawClient
from .raw_socket import connect, encoded, frames, until
from .test_metadata_raw import create

P = messages.ProduceRequest


def batch(value: bytes, *, ts: int | None = None, **producer) -> bytes:
    return rec.build_batch([rec.SimpleRecord(None, value, (), ts or int(time.time() * 1000))],
                           **producer)


def produce(corr: int, topic: str, records: bytes, partition: int = 0, acks: int = 1,
            version: int = 9) -> bytes:
    body = P(acks=acks, timeout_ms=5000, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=partition, records=records)])])
    return encoded(encode_request(0, version, corr, "runs-test", body))


async def raw_answers(server, requests: list[bytes], answers: int | None = None) -> list[bytes]:
    """``requests`` written in one ``sendall``; their answer frames as they arrive."""
    sock = await connect(server)
    try:
        sock.sendall(b"".join(requests))
        return await frames(sock, len(requests) if answers is None else answers)
    finally:
        sock.close()


async def pipelined(server, requests: list[bytes], answers: int | None = None,
                    version: int = 9) -> list:
    """``requests`` written in one ``sendall``; their answers' partition results, in order
    of arrival, each with its correlation id."""
    got = await raw_answers(server, requests, answers)
    out = []
    for f in got:
        corr, r = decode_response(f, 0, version)
        out.append((corr, r.responses[0].partition_responses[0]))
    return out


def answer(p) -> tuple:
    return (p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset,
            [(e.batch_index, e.batch_index_error_message) for e in p.record_errors],
            p.error_message)


async def read_values(c, topic: str, partition: int = 0) -> list[tuple[int, bytes]]:
    F = messages.FetchRequest
    r = await c.request("Fetch", 12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                        isolation_level=0, session_id=0, session_epoch=-1, topics=[F.FetchTopic(
                            topic=topic, partitions=[F.FetchPartition(
                                partition=partition, fetch_offset=0, partition_max_bytes=1 << 20,
                                current_leader_epoch=-1, log_start_offset=-1)])])
    data = r.responses[0].partitions[0].records or b""
    return [(r.offset, r.value) for _, h in rec.iter_batches(data)
            for r in rec.decode_records(data, _, h)]


async def test_a_run_is_one_append_answered_as_one_request_at_a_time(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "runs", 2)).error_code == 0
    stats = broker_server.broker.replicas.stats
    meters = broker_server.request_stats
    runs, appends, size = stats["append_runs"], stats["appends"], stats["appended_bytes"]
    before = meters.by_key[0].by_version.get(9, 0) if 0 in meters.by_key else 0
    count = meters.by_key[0].count if 0 in meters.by_key else 0
    request_bytes = meters.by_key[0].request_bytes if 0 in meters.by_key else 0
    n = 10
    batches = [batch(b"r%d" % i) for i in range(n)]
    requests = [produce(100 + i, "runs", b) for i, b in enumerate(batches)]
    run = await pipelined(broker_server, requests)
    assert stats["append_runs"] - runs == 1
    assert stats["appends"] - appends == n
    assert stats["appended_bytes"] - size == sum(map(len, batches))
    assert meters.by_key[0].by_version[9] - before == n
    assert meters.by_key[0].count - count == n
    assert meters.by_key[0].request_bytes - request_bytes == sum(len(r) - 4 for r in requests)
    counters = broker_server.broker.topic_stats.known("runs")
    assert (counters.produce_requests, counters.bytes_in, counters.messages_in) == \
        (n, sum(map(len, batches)), n)
    # the same requests one at a time, on the other partition: the same answers
    single = []
    for i, b in enumerate(batches):
        single += await pipelined(broker_server, [produce(100 + i, "runs", b, partition=1)])
    assert stats["append_runs"] - runs == 1
    assert [corr for corr, _ in run] == [corr for corr, _ in single] == list(range(100, 100 + n))
    assert [answer(p)[1:] for _, p in run] == [answer(p)[1:] for _, p in single]
    assert [p.base_offset for _, p in run] == list(range(n))
    assert await read_values(c, "runs", 0) == await read_values(c, "runs", 1) == \
        [(i, b"r%d" % i) for i in range(n)]


async def test_runs_end_where_the_partition_changes(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "split", 2)).error_code == 0
    stats = broker_server.broker.replicas.stats
    runs = stats["append_runs"]
    order = [0, 0, 1, 1, 1, 0]
    got = await pipelined(broker_server, [produce(i, "split", batch(b"%d" % i), partition=p)
                                          for i, p in enumerate(order)])
    assert [(corr, p.index, p.error_code, p.base_offset) for corr, p in got] == \
        [(0, 0, 0, 0), (1, 0, 0, 1), (2, 1, 0, 0), (3, 1, 0, 1), (4, 1, 0, 2), (5, 0, 0, 2)]
    assert stats["append_runs"] - runs == 2           # the last request came alone
    assert await read_values(c, "split", 0) == [(0, b"0"), (1, b"1"), (2, b"5")]
    assert await read_values(c, "split", 1) == [(0, b"2"), (1, b"3"), (2, b"4")]


async def test_a_batch_the_log_refuses_sends_the_run_one_by_one(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "refused", 1)).error_code == 0
    stats = broker_server.broker.replicas.stats
    runs, appends = stats["append_runs"], stats["appends"]
    bad = bytearray(batch(b"bad"))
    bad[-1] ^= 0xFF                                   # a record byte: the CRC no longer holds
    got = await pipelined(broker_server, [produce(1, "refused", batch(b"a")),
                                          produce(2, "refused", batch(b"b")),
                                          produce(3, "refused", bytes(bad)),
                                          produce(4, "refused", batch(b"c"))])
    assert [(corr, p.error_code, p.base_offset) for corr, p in got] == \
        [(1, 0, 0), (2, 0, 1), (3, E.CORRUPT_MESSAGE, -1), (4, 0, 2)]
    assert stats["append_runs"] == runs and stats["appends"] - appends == 3
    assert await read_values(c, "refused") == [(0, b"a"), (1, b"b"), (2, b"c")]


async def test_a_timestamp_outside_the_window_is_named_as_one_by_one(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "late", 1)).error_code == 0
    runs = broker_server.broker.replicas.stats["append_runs"]
    future = int(time.time() * 1000) + 2 * 3_600_000  # past message.timestamp.after.max.ms
    got = await pipelined(broker_server, [produce(1, "late", batch(b"a")),
                                          produce(2, "late", batch(b"x", ts=future)),
                                          produce(3, "late", batch(b"b"))])
    assert [(corr, p.error_code, p.base_offset) for corr, p in got] == \
        [(1, 0, 0), (2, E.INVALID_TIMESTAMP, -1), (3, 0, 1)]
    assert [e.batch_index for e in got[1][1].record_errors] == [0]
    assert broker_server.broker.replicas.stats["append_runs"] == runs


async def test_idempotent_batches_are_checked_one_after_another(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "idem", 1)).error_code == 0
    r = await c.request("InitProducerId", 4, transactional_id=None, transaction_timeout_ms=60000,
                        producer_id=-1, producer_epoch=-1)
    pid = r.producer_id
    runs = broker_server.broker.replicas.stats["append_runs"]
    seqs = [0, 1, 1, 2]                               # the third repeats the second
    got = await pipelined(broker_server, [
        produce(i, "idem", batch(b"%d" % s, producer_id=pid, producer_epoch=r.producer_epoch,
                                 base_sequence=s))
        for i, s in enumerate(seqs)])
    # the duplicate is answered with the offset its first copy got, and not stored again
    assert [(p.error_code, p.base_offset) for _, p in got] == [(0, 0), (0, 1), (0, 1), (0, 2)]
    assert broker_server.broker.replicas.stats["append_runs"] == runs
    assert [v for _, v in await read_values(c, "idem")] == [b"0", b"1", b"2"]


async def test_acks_0_and_acks_all_go_one_by_one(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "acks", 1)).error_code == 0
    stats = broker_server.broker.replicas.stats
    runs = stats["append_runs"]
    got = await pipelined(broker_server, [produce(i, "acks", batch(b"all%d" % i), acks=-1)
                                          for i in range(3)])
    assert [(p.error_code, p.base_offset) for _, p in got] == [(0, 0), (0, 1), (0, 2)]
    # acks=0: no answers; the records are in the log all the same
    sock = await connect(broker_server)
    sock.sendall(b"".join(produce(10 + i, "acks", batch(b"none%d" % i), acks=0) for i in range(3)))
    await until(lambda: broker_server.broker.replicas.get_partition("acks", 0).log.log_end_offset == 6)
    sock.close()
    assert stats["append_runs"] == runs
    assert [v for _, v in await read_values(c, "acks")] == \
        [b"all0", b"all1", b"all2", b"none0", b"none1", b"none2"]


async def test_an_authorizer_sees_every_request_of_a_pipeline(tmp_path, nursery):
    server = await authz_start(nursery, authz_config(tmp_path, **{"allow.everyone.if.no.acl.found": "true"}))
    c = await RawClient.connect(server)
    assert (await create(c, "open", 1)).error_code == 0
    assert (await create(c, "denied", 1)).error_code == 0
    results = await server.broker.controller.create_acls(
        [Acl(TOPIC, "denied", LITERAL, "User:ANONYMOUS", "*", WRITE, DENY)])
    assert all(code == 0 for code, _ in results)
    with trio.fail_after(10):
        while True:
            got = await pipelined(server, [produce(1, "denied", batch(b"probe"))])
            if got[0][1].error_code == E.TOPIC_AUTHORIZATION_FAILED:
                break
            await trio.sleep(0.02)
    got = await pipelined(server, [produce(i, "denied", batch(b"d")) for i in range(4)])
    assert [p.error_code for _, p in got] == [E.TOPIC_AUTHORIZATION_FAILED] * 4
    log_end = server.broker.replicas.get_partition("denied", 0).log.log_end_offset
    got = await pipelined(server, [produce(i, "open", batch(b"o")) for i in range(4)])
    assert [(p.error_code, p.base_offset) for _, p in got] == [(0, i) for i in range(4)]
    assert server.broker.replicas.get_partition("denied", 0).log.log_end_offset == log_end
    assert server.broker.replicas.stats["append_runs"] == 0


async def test_a_produce_quota_charges_every_request_of_a_pipeline(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "quota", 1)).error_code == 0
    results = await broker_server.broker.controller.alter_client_quotas(
        [([("client-id", "runs-test")], [("producer_byte_rate", 1e6, False)])])
    assert results == [(0, None)]
    await until(lambda: broker_server.broker.quotas.produce.enabled)
    recorded = broker_server.broker.quotas.produce.stats["recorded"]
    got = await pipelined(broker_server, [produce(i, "quota", batch(b"q%d" % i)) for i in range(4)])
    assert [(p.error_code, p.base_offset) for _, p in got] == [(0, i) for i in range(4)]
    assert broker_server.broker.quotas.produce.stats["recorded"] - recorded == 4
    assert broker_server.broker.replicas.stats["append_runs"] == 0


@pytest.mark.parametrize("version", [3, 4, 5, 8, 9, 12])
async def test_a_runs_answers_are_the_bytes_of_the_answers_one_at_a_time(broker_server, version):
    """A run's answers are stamped from one encoded answer (kbroker/api/produce.py
    ``run_answers``): the same bytes as each request answered alone, in every layout (v3–v4
    without a log start offset, v5–v8 classic, v9+ flexible), with a log start offset moved
    by a deletion."""
    c = await RawClient.connect(broker_server)
    topic = f"stamped-{version}"
    assert (await create(c, topic, 2)).error_code == 0
    D = messages.DeleteRecordsRequest
    for partition in (0, 1):
        await pipelined(broker_server, [produce(i, topic, batch(b"-"), partition=partition,
                                                version=version) for i in range(3)],
                        version=version)
        r = await c.request("DeleteRecords", 2, timeout_ms=5000, topics=[D.DeleteRecordsTopic(
            name=topic, partitions=[D.DeleteRecordsPartition(partition_index=partition,
                                                              offset=2)])])
        assert r.topics[0].partitions[0].error_code == 0
    runs = broker_server.broker.replicas.stats["append_runs"]
    values = [b"a", b"bb" * 50, b"c", b"d" * 999]
    run = await raw_answers(broker_server, [produce(7 + i, topic, batch(v), version=version)
                                            for i, v in enumerate(values)])
    assert broker_server.broker.replicas.stats["append_runs"] - runs == 1
    single = []
    for i, v in enumerate(values):
        single += await raw_answers(broker_server, [produce(7 + i, topic, batch(v), partition=1,
                                                            version=version)])
    assert broker_server.broker.replicas.stats["append_runs"] - runs == 1
    expected = []
    for f in single:            # partition 1's answers, as partition 0's
        corr, body = decode_response(f, 0, version)
        body.responses[0].partition_responses[0].index = 0
        expected.append(encoded(encode_response(0, version, corr, body))[4:])
    assert run == expected
    got = [decode_response(f, 0, version)[1].responses[0].partition_responses[0] for f in run]
    assert [p.base_offset for p in got] == [3, 4, 5, 6]
    if version >= 5:
        assert {p.log_start_offset for p in got} == {2}


@pytest.mark.parametrize("version", [3, 8, 9, 12])
async def test_repeated_requests_are_read_as_their_own_bytes_say(broker_server, version):
    """Requests repeating the one before but for the correlation id and records are not
    decoded again (kbroker/server/connection.py ``_SameRequest``): records of other sizes
    (their lengths one, two and three bytes long in v9+), another client id, acks=-1 in
    between (the same partition, another run), trailing bytes after a request, each read as
    its own bytes say, in every layout (v3–v8 without tagged fields, v9+ with)."""
    c = await RawClient.connect(broker_server)
    topic = f"same-{version}"
    assert (await create(c, topic, 1)).error_code == 0
    stats = broker_server.broker.replicas.stats
    runs = stats["append_runs"]
    values = [b"x", b"yy" * 100, b"z" * 3000, b"w", b"v" * 20000, b"u", b"t" * 70, b"s"]
    frames_ = [produce(i, topic, batch(v), version=version) for i, v in enumerate(values)]
    body = P(acks=1, timeout_ms=5000, topic_data=[P.TopicProduceData(
        name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch(values[3]))])])
    frames_[3] = encoded(encode_request(0, version, 3, "another-client", body))
    frames_[5] = produce(5, topic, batch(values[5]), acks=-1, version=version)
    tail = frames_[6][4:] + b"\0\0\0"               # bytes after the request: not read
    frames_[6] = len(tail).to_bytes(4, "big") + tail
    got = await pipelined(broker_server, frames_, version=version)
    assert [(corr, p.error_code, p.base_offset) for corr, p in got] == \
        [(i, 0, i) for i in range(len(values))]
    # [0..4] one run; 5 (acks=-1) alone; [6, 7] a run again
    assert stats["append_runs"] - runs == 2
    assert await read_values(c, topic) == list(enumerate(values))


async def test_a_repeated_request_of_a_refused_run_is_decoded_for_its_answer(broker_server):
    """A refused run's repeated requests (read without decoding) go one by one with their
    own records: the answers are those of the requests one at a time."""
    c = await RawClient.connect(broker_server)
    assert (await create(c, "repeat-refused", 1)).error_code == 0
    bad = bytearray(batch(b"b"))
    bad[-1] ^= 0xFF
    got = await pipelined(broker_server, [produce(1, "repeat-refused", batch(b"a")),
                                          produce(2, "repeat-refused", bytes(bad)),
                                          produce(3, "repeat-refused", batch(b"c"))])
    assert [(corr, p.error_code, p.base_offset) for corr, p in got] == \
        [(1, 0, 0), (2, E.CORRUPT_MESSAGE, -1), (3, 0, 1)]
    assert await read_values(c, "repeat-refused") == [(0, b"a"), (1, b"c")]


async def test_a_repeat_cut_short_inside_its_records_length_closes_the_connection(broker_server):
    """A frame with a run's repeated bytes whose records length runs past its end is
    decoded (not read as a repeat): it is malformed, the connection closes after the answer
    to the request before it, and the broker serves the next connection."""
    c = await RawClient.connect(broker_server)
    assert (await create(c, "cut", 1)).error_code == 0
    good = produce(1, "cut", batch(b"a"))
    at = len(good) - len(batch(b"a")) - 3 - 1         # the records length's one byte
    body = good[4:at] + b"\xff\xff"                    # a varint that never ends
    bad = len(body).to_bytes(4, "big") + body
    sock = await connect(broker_server)
    try:
        sock.sendall(good + bad)
        (frame,) = await frames(sock, 1)
        assert decode_response(frame, 0, 9)[1].responses[0].partition_responses[0].error_code == 0
        with trio.fail_after(10):
            while True:
                await trio.lowlevel.wait_readable(sock)
                if not sock.recv(1 << 16):
                    break                              # closed by the broker
    finally:
        sock.close()
    got = await pipelined(broker_server, [produce(2, "cut", batch(b"b"))])
    assert [(p.error_code, p.base_offset) for _, p in got] == [(0, 1)]


async def test_a_run_of_requests_in_two_versions_is_metered_per_version(broker_server):
    """A run may hold requests of several versions (run_key does not name it): each is
    answered in its own version and counted under it."""
    c = await RawClient.connect(broker_server)
    assert (await create(c, "versions", 1)).error_code == 0
    meters = broker_server.request_stats
    before = dict(meters.by_key[0].by_version) if 0 in meters.by_key else {}
    runs = broker_server.broker.replicas.stats["append_runs"]
    versions = [8, 9, 9, 8, 12]
    got = await raw_answers(broker_server, [produce(i, "versions", batch(b"%d" % i), version=v)
                                            for i, v in enumerate(versions)])
    assert broker_server.broker.replicas.stats["append_runs"] - runs == 1
    answers = [decode_response(f, 0, v) for f, v in zip(got, versions)]
    assert [(corr, r.responses[0].partition_responses[0].base_offset) for corr, r in answers] == \
        [(i, i) for i in range(5)]
    after = meters.by_key[0].by_version
    assert {v: after[v] - before.get(v, 0) for v in (8, 9, 12)} == {8: 2, 9: 2, 12: 1}
