"""A real consumer of 1,000 partitions uses incremental fetch sessions (KIP-227) against kbroker.

The broker advertises a recording proxy (compat_tests/differential/proxy.py) as its listener,
so every request of the consumer passes through it; the test decodes each Fetch request and
counts the partitions it names. Without sessions every poll names all 1,000 partitions; with
them only the first (full) fetch does and the incremental ones name what changed.
"""
from __future__ import annotations

import time

import pytest

from compat_tests.differential.proxy import Recorder, RecordingProxy
from kbroker.wire import protocol
from tests.support.broker_proc import BrokerProcess, free_port

from .conftest import create_topic

PARTITIONS = 1000
FETCH = 1


def fetch_requests(recorder: Recorder):
    out = []
    with recorder.lock:
        exchanges = [e for e in recorder.exchanges if e.api_key == FETCH]
    for e in exchanges:
        _, req = protocol.decode_request(e.request)
        named = sum(len(t.partitions) for t in req.topics)
        answer = None
        if e.response is not None:
            _, answer = protocol.decode_response(e.response, FETCH, e.api_version)
        out.append((e.api_version, req.session_id, req.session_epoch, named, answer))
    return out


@pytest.mark.slow
def test_consumer_of_1000_partitions_sends_incremental_fetches(tmp_path):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    proxy_port = free_port()
    broker = BrokerProcess(tmp_path / "data", overrides={
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}"})
    broker.start()
    recorder = Recorder()
    proxy = RecordingProxy(proxy_port, ("127.0.0.1", broker.port),
                           {k: (0, 0x7FFF) for k in range(200)}, recorder)
    bootstrap = f"127.0.0.1:{proxy.port}"
    consumer = producer = None
    try:
        create_topic(bootstrap, "many", PARTITIONS)
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
        for p in (0, 499, 999):
            producer.send("many", value=b"v%d" % p, partition=p).get(timeout=30)
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                 auto_offset_reset="earliest", fetch_max_wait_ms=50)
        consumer.assign([TopicPartition("many", p) for p in range(PARTITIONS)])
        recorder.scenario = "sessions"
        got, deadline = [], time.monotonic() + 60
        while len(got) < 3 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                got += [r.value for r in records]
        assert sorted(got) == [b"v0", b"v499", b"v999"]
        # polls with nothing new until the consumer has sent a dozen more fetches
        seen = len(fetch_requests(recorder))
        deadline = time.monotonic() + 60
        while len(fetch_requests(recorder)) < seen + 12 and time.monotonic() < deadline:
            consumer.poll(timeout_ms=100)
        producer.send("many", value=b"late", partition=7).get(timeout=30)
        late, deadline = [], time.monotonic() + 30
        while not late and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                late += [r.value for r in records]
        assert late == [b"late"]
    finally:
        for c in (consumer, producer):
            if c is not None:
                c.close()
        proxy.close()
        broker.stop(timeout=120)   # closing 1,000 logs takes a while

    fetches = fetch_requests(recorder)
    full = [f for f in fetches if f[2] in (0, -1)]
    incremental = [f for f in fetches if f[2] > 0]
    assert fetches and all(v >= 7 for v, *_ in fetches)
    shape = [(f[1], f[2], f[3]) for f in fetches]
    # one full fetch opens the session (with the partitions whose position the consumer
    # knows by then; the others join incrementally) ...
    assert len(full) == 1 and full[0][2] == 0, shape
    assert full[0][4].error_code == 0 and full[0][4].session_id != 0
    # ... then every fetch is incremental, in that session
    session = full[0][4].session_id
    assert len(incremental) >= 12, shape
    assert all(f[1] == session for f in incremental), shape
    answered = [f for f in incremental if f[4] is not None]   # the last may be cut by close()
    assert len(answered) >= len(incremental) - 1
    assert [(f[4].error_code, f[4].session_id) for f in answered] == [(0, session)] * len(answered)
    epochs = [f[2] for f in incremental]
    assert epochs == list(range(1, len(epochs) + 1))
    # every partition was named once or a few times in all, not on every poll
    assert full[0][3] + sum(f[3] for f in incremental) < 2 * PARTITIONS, shape
    # in the steady state a fetch names only the partitions that moved, and its answer holds
    # only the partitions that changed (partitions still becoming ready after the creation of
    # 1,000 of them may add a few rounds): most incremental requests and answers are small
    sizes = [(f[3], sum(len(t.partitions) for t in f[4].responses)) for f in answered]
    assert sum(1 for named, _ in sizes if named <= 10) >= len(sizes) // 2, sizes
    assert sum(1 for _, got in sizes if got <= 10) >= len(sizes) // 2, sizes
    assert all(named < PARTITIONS // 2 for named, _ in sizes), sizes
