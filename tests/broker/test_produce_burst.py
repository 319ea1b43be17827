"""Pipelined Produce requests handled as a bounded burst (issue 32, item 3; the socket loop of
kbroker/server/connection.py).

Counted, not timed: a consumer's Fetch parked at the log end is answered once for a burst of
pipelined one-record Produce requests already received, with every record of the burst, and
its answer is written before the burst's answers (readers first, at the burst's end); a
burst is bounded (``_MAX_BURST``): with three bursts' worth of requests in one write the
parked Fetch is answered before the last of them is handled; and a second connection is
served while another client pipelines Produce requests without end (a real broker process,
so that a connection which never yields fails the test by a socket timeout, not a hang).
"""
from __future__ import annotations

import socket
import threading

from kbroker.server import connection
from kbroker.wire import messages
from kbroker.wire import records as rec
from kbroker.wire.protocol import decode_response, encode_request
from tests.support.broker_proc import BrokerProcess

from .raw import RawClient
from .raw_socket import (encoded as _bytes, fetch_frame, frames as _frames, produce_frame,
                         read_frame, until as _until)
from .test_metadata_raw import create

async def _parked_fetch(server, topic: str) -> socket.socket:
    """A consumer connection whose Fetch at offset 0 is parked on ``topic``-0."""
    part = server.broker.replicas.get_partition(topic, 0)
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.setblocking(False)
    sock.sendall(fetch_frame(1, topic, 0, "burst-test"))
    await _until(lambda: len(part.waiters) == 1)
    return sock


def _records_fetched(frame: bytes) -> int:
    corr, resp = decode_response(frame, 1, 12)
    part = resp.responses[0].partitions[0]
    assert (corr, part.error_code) == (1, 0)
    return sum(h.last_offset_delta + 1 for _, h in rec.iter_batches(part.records or b""))


def _readable(sock: socket.socket) -> bool:
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False


async def _pipeline(server, topic: str, n: int) -> tuple[list, socket.socket]:
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.setblocking(False)
    sock.sendall(b"".join(produce_frame(100 + i, topic, b"v" * 100, "burst-test") for i in range(n)))
    answers = [decode_response(f, 0, 9) for f in await _frames(sock, n)]
    assert [corr for corr, _ in answers] == list(range(100, 100 + n))
    assert [r.responses[0].partition_responses[0].base_offset for _, r in answers] == list(range(n))
    return answers, sock


async def test_a_parked_fetch_is_answered_once_for_a_burst_of_pipelined_produces(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "burst", 1)).error_code == 0
    stats = broker_server.broker.replicas.stats
    consumer = await _parked_fetch(broker_server, "burst")
    wakeups = stats["fetch_wakeups"]
    n = 20
    assert n < connection._MAX_BURST
    _, producer = await _pipeline(broker_server, "burst", n)
    try:
        # readers first, at the burst's end: the fetch's answer was written before the
        # produces' answers, so it is there once they are
        assert _readable(consumer)
        (frame,) = await _frames(consumer, 1)
        # one wake-up, one answer with all twenty records (one per request before: the
        # connection gave the scheduler a turn after every append)
        assert _records_fetched(frame) == n
        assert stats["fetch_wakeups"] - wakeups == 1
    finally:
        consumer.close()
        producer.close()


async def test_a_burst_is_bounded_so_the_parked_fetch_is_answered_before_the_rest(broker_server):
    c = await RawClient.connect(broker_server)
    assert (await create(c, "bounded", 1)).error_code == 0
    consumer = await _parked_fetch(broker_server, "bounded")
    n = 3 * connection._MAX_BURST
    _, producer = await _pipeline(broker_server, "bounded", n)
    try:
        (frame,) = await _frames(consumer, 1)
        got = _records_fetched(frame)
        # after the first burst the producer's connection yields; the woken fetch runs in
        # the scheduler's next batch, before or after the producer's second burst
        assert got in (connection._MAX_BURST, 2 * connection._MAX_BURST), got
    finally:
        consumer.close()
        producer.close()


def test_a_second_connection_is_served_while_one_client_pipelines_without_end(tmp_path):
    broker = BrokerProcess(tmp_path / "data")
    broker.start()
    flood = stop = None
    threads: list[threading.Thread] = []
    try:
        admin = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
        C = messages.CreateTopicsRequest
        admin.sendall(_bytes(encode_request(19, 7, 1, "burst-test", C(timeout_ms=30_000, topics=[
            C.CreatableTopic(name="flood", num_partitions=1, replication_factor=1)]))))
        assert decode_response(read_frame(admin), 19, 7)[1].topics[0].error_code == 0
        flood = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
        blob = b"".join(produce_frame(i, "flood", b"f" * 200, "burst-test") for i in range(500))
        stop = threading.Event()
        sent = [0]
        received = [0]
        answered = threading.Event()

        def write() -> None:
            # the broker's socket is never empty: each write blocks until it took the last
            try:
                while not stop.is_set():
                    flood.sendall(blob)
                    sent[0] += 1
            except OSError:
                pass

        def read() -> None:
            try:
                while not stop.is_set():
                    chunk = flood.recv(1 << 20)
                    if not chunk:
                        return
                    received[0] += len(chunk)
                    answered.set()
            except OSError:
                pass

        threads = [threading.Thread(target=write, daemon=True),
                   threading.Thread(target=read, daemon=True)]
        for t in threads:
            t.start()
        assert answered.wait(30), "the flooding client got no answer"
        other = socket.create_connection(("127.0.0.1", broker.port), timeout=30)
        before = received[0]
        for i in range(20):
            other.sendall(_bytes(encode_request(3, 12, 1000 + i, "burst-test",
                                                messages.MetadataRequest(topics=None))))
            corr, resp = decode_response(read_frame(other), 3, 12)
            assert corr == 1000 + i and resp.brokers
        # the flood went on being answered meanwhile, and was still pipelining
        assert received[0] > before
        assert stop is not None and not stop.is_set() and threads[0].is_alive()
        other.close()
    finally:
        if stop is not None:
            stop.set()
        if flood is not None:
            try:
                flood.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            flood.close()
        for t in threads:
            t.join(10)
        broker.stop()
