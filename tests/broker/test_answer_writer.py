"""The thread that writes plaintext answers beside the event loop (kbroker/server/writer.py,
``kbroker.network.answer.writer``; issue 32's competing latency rows).

Counted, not timed: answers written by the thread arrive whole and in order (pipelined
Produce answers, small fetch answers inlined from the log, a large one that stays with
``sendfile`` on the loop); a socket that fills up gives the rest back to the task, which
writes it when the peer reads; auto mode turns the thread on after one crowded sample and
off only after a run of quiet ones; ``never`` starts no thread; the metrics show it.
"""
from __future__ import annotations

import socket

import pytest
import trio

from kbroker.config.broker import BrokerConfig, ConfigError
from kbroker.metrics import render
from kbroker.server import serve
from kbroker.server.send import send_now
from kbroker.server.writer import OFF_PERIODS, OFF_WAIT, ON_WAIT, PERIOD, AnswerWriter, PlainSender

from .raw import RawClient
from .raw_socket import until
from .test_metadata_raw import create
from .test_produce_runs import batch, pipelined, produce, read_values

THREAD = "kbroker-answer-writer"


async def _started(nursery, make_config, mode: str):
    return await nursery.start(serve, make_config(kbroker_network_answer_writer=mode))


async def _stop(server) -> None:
    server.request_shutdown()
    with trio.fail_after(10):
        await server.wait_stopped()


async def test_answers_through_the_thread_arrive_whole_and_in_order(make_config, nursery):
    server = await _started(nursery, make_config, "always")
    try:
        assert server.writer.active and server.writer.thread.is_alive()
        assert server.writer.thread.name == THREAD
        c = await RawClient.connect(server)
        assert (await create(c, "through", 1)).error_code == 0
        before = server.writer.written
        n = 40
        got = await pipelined(server, [produce(500 + i, "through", batch(b"v%d" % i)) for i in range(n)])
        assert [(corr, p.error_code, p.base_offset) for corr, p in got] == \
            [(500 + i, 0, i) for i in range(n)]
        # a fetch answer of the log's small batches (inlined from the file, then through
        # the thread), and one of more than the inlining limit (sendfile, on the loop)
        assert await read_values(c, "through") == [(i, b"v%d" % i) for i in range(n)]
        big = bytes(range(256)) * 160
        assert (await pipelined(server, [produce(900, "through", batch(big))]))[0][1].error_code == 0
        values = await read_values(c, "through")
        assert values[-1] == (n, big) and len(values) == n + 1
        assert server.writer.written > before
    finally:
        await _stop(server)
    # the thread ends once it takes the stop from its queue
    await until(lambda: not server.writer.thread.is_alive())


async def test_never_starts_no_thread_and_answers_on_the_loop(make_config, nursery):
    server = await _started(nursery, make_config, "never")
    try:
        c = await RawClient.connect(server)
        assert (await create(c, "loop", 1)).error_code == 0
        got = await pipelined(server, [produce(i, "loop", batch(b"x")) for i in range(5)])
        assert [p.base_offset for _, p in got] == list(range(5))
        assert not server.writer.active and server.writer.written == 0
        assert server.writer.thread is None
    finally:
        await _stop(server)


async def test_the_metrics_show_the_thread(make_config, nursery):
    server = await _started(nursery, make_config, "always")
    try:
        c = await RawClient.connect(server)
        assert (await create(c, "shown", 1)).error_code == 0
        await pipelined(server, [produce(1, "shown", batch(b"x"))])
        lines = (await render(server)).splitlines()
        assert "kbroker_answer_writer_active 1" in lines
        written = [l for l in lines if l.startswith("kbroker_answer_writer_answers_total ")]
        assert written and int(float(written[0].split()[1])) >= 1
    finally:
        await _stop(server)


def _pair():
    a, b = socket.socketpair()
    a.setblocking(False)
    return a, b


def test_a_full_socket_leaves_the_rest_to_the_caller():
    sender, receiver = _pair()
    try:
        payload = [bytes([i]) * (256 * 1024) for i in range(8)]    # more than the pair holds
        left = send_now(sender, payload)
        assert left, "the socket took 2 MiB unread"
        rest = b"".join(bytes(v) for v in left)
        taken = sum(map(len, payload)) - len(rest)
        assert taken > 0 and b"".join(payload).endswith(rest)
    finally:
        sender.close()
        receiver.close()


async def test_what_the_thread_could_not_write_goes_when_the_peer_reads():
    writer = AnswerWriter("always")
    sender, receiver = _pair()
    payload = [bytes([i]) * (256 * 1024) for i in range(8)]
    total = sum(map(len, payload))

    def receive() -> bytes:
        got = bytearray()
        while len(got) < total:
            chunk = receiver.recv(1 << 20)
            assert chunk
            got += chunk
        return bytes(got)

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.run)
            assert writer.active
            send = PlainSender(sender, writer)
            nursery.start_soon(send, payload)
            got = await trio.to_thread.run_sync(receive)
            nursery.cancel_scope.cancel()
        assert got == b"".join(payload)
        assert writer.written == 1
    finally:
        sender.close()
        receiver.close()


def test_auto_turns_on_at_once_and_off_after_a_run_of_quiet_samples():
    w = AnswerWriter("auto")
    w.observe(ON_WAIT / 2)
    assert not w.active
    w.observe(ON_WAIT + 0.05)
    assert w.active and w.switched_on == 1
    # between the two thresholds: stays on, and a quiet run must start again
    for _ in range(OFF_PERIODS - 1):
        w.observe(OFF_WAIT / 2)
    w.observe((OFF_WAIT + ON_WAIT) / 2)
    for _ in range(OFF_PERIODS - 1):
        w.observe(OFF_WAIT / 2)
    assert w.active
    w.observe(OFF_WAIT / 2)
    assert not w.active
    w.observe(ON_WAIT + 0.05)
    assert w.active and w.switched_on == 2


async def test_auto_samples_the_loops_run_queue_wait_every_period(autojump_clock):
    """The watch turns the run-queue seconds it reads into a share of each period; where
    the statistics vanish, answers go back to the loop."""
    w = AnswerWriter("auto")
    # cumulative seconds in the run queue, as schedstat counts them, one reading per period
    readings = iter([10.0, 10.0 + PERIOD * ON_WAIT / 2, 10.0 + PERIOD * (ON_WAIT / 2 + ON_WAIT + 0.1)])

    def waited():
        return next(readings, None)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(w._watch, waited)
        await trio.sleep(PERIOD * 1.5)
        assert not w.active             # a share of ON_WAIT / 2
        await trio.sleep(PERIOD)
        assert w.active and w.switched_on == 1
        await trio.sleep(PERIOD)
        assert not w.active             # no more readings
        nursery.cancel_scope.cancel()


def test_the_mode_is_checked(tmp_path):
    with pytest.raises(ConfigError, match="kbroker.network.answer.writer"):
        BrokerConfig.from_dict({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(tmp_path),
                                "kbroker.network.answer.writer": "sometimes"})
    with pytest.raises(ValueError):
        AnswerWriter("sometimes")
