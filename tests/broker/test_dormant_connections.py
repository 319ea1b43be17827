"""Idle connections without a task of their own (issue 32, item 4; kbroker/server/dormant.py).

Counted, not timed: connections parked for ``kbroker.connections.dormant.after.ms`` give their task up (no
connection task is left in the server's nursery, the Python memory traced per such
connection stays under a bound the task alone exceeded); a request on a dormant
connection — whole, or split around the wake-up — is answered by a new task, in order; a
client closing a dormant connection is noticed; ``connections.max.idle.ms`` and shutdown
close dormant connections through the usual path (the connection count, quotas).
"""
from __future__ import annotations

import socket

import trio

from kbroker.server import _CONNECTION_TASK

from .raw_socket import (answered as _answered, api_versions_frame as _api_versions, frames,
                         traced_per, until)


def _connection_tasks() -> int:
    """Connection tasks alive in this trio run."""
    seen, todo = 0, [trio.lowlevel.current_root_task()]
    while todo:
        task = todo.pop()
        seen += task.name == _CONNECTION_TASK
        for nursery in task.child_nurseries:
            todo.extend(nursery.child_tasks)
    return seen


async def _all_dormant(server, n: int) -> None:
    await until(lambda: len(server._conns) == n and len(server.dormancy) == n, timeout=30)


async def test_parked_connections_give_up_their_tasks_and_wake_on_a_request(broker_server):
    socks = await _answered(broker_server, 20)
    try:
        await _all_dormant(broker_server, 20)
        assert _connection_tasks() == 0
        assert all(c.waiting_since is not None for c in broker_server._conns)
        from kbroker.metrics import render
        assert "kbroker_connections_dormant 20" in (await render(broker_server)).splitlines()
        # every one answers its next request (a new task each), then sleeps again
        for i, s in enumerate(socks):
            s.sendall(_api_versions(100 + i))
        for i, s in enumerate(socks):
            (frame,) = await frames(s, 1)
            assert int.from_bytes(frame[:4], "big") == 100 + i
        stats = broker_server.dormancy.statistics()
        assert stats["woken"] >= 20
        await _all_dormant(broker_server, 20)
        assert broker_server.dormancy.statistics()["moved"] >= 40
        assert _connection_tasks() == 0
    finally:
        for s in socks:
            s.close()


async def test_a_frame_split_around_the_wake_up_and_pipelined_requests(broker_server):
    """A dormant connection woken by the first bytes of a frame keeps them through the
    sweeps that follow (it holds part of a frame: it keeps its task), and the rest of the
    frame and two pipelined requests after it are answered in order."""
    dormancy = broker_server.dormancy
    (sock,) = await _answered(broker_server, 1)
    try:
        await _all_dormant(broker_server, 1)
        first = _api_versions(7)
        sock.sendall(first[:5])
        await until(lambda: len(dormancy) == 0)
        noticed = dormancy.noticed
        await until(lambda: dormancy.noticed >= noticed + 2)   # two sweeps ended its wait
        assert len(dormancy) == 0 and broker_server.receive_buffers.lent == 1
        sock.sendall(first[5:] + _api_versions(8) + _api_versions(9))
        answers = await frames(sock, 3)
        assert [int.from_bytes(f[:4], "big") for f in answers] == [7, 8, 9]
        await _all_dormant(broker_server, 1)
        assert broker_server.receive_buffers.lent == 0
    finally:
        sock.close()


async def test_memory_traced_per_dormant_connection_is_bounded(broker_server):
    """tracemalloc over 150 connections gone dormant: under 1.5 KiB each (about 0.8 with
    this process's client sockets; a parked connection with its task took about 4.5)."""
    warm = await _answered(broker_server, 5)
    await _all_dormant(broker_server, 5)
    n = 150

    async def gone_dormant():
        socks = await _answered(broker_server, n, first=10)
        await _all_dormant(broker_server, n + 5)
        return socks
    socks, per_connection = await traced_per(n, gone_dormant)
    try:
        # (the client sockets of this process are in the figure too: ~0.2 KiB each)
        assert per_connection < 1.5 * 1024, f"{per_connection:.0f} bytes per dormant connection"
    finally:
        for s in warm + socks:
            s.close()


async def test_a_client_closing_a_dormant_connection_is_noticed(broker_server):
    socks = await _answered(broker_server, 3)
    await _all_dormant(broker_server, 3)
    socks[0].close()
    await until(lambda: len(broker_server._conns) == 2 and len(broker_server.dormancy) == 2)
    for s in socks[1:]:
        s.close()
    await until(lambda: not broker_server._conns)
    assert len(broker_server.dormancy) == 0


async def _closed_by_server(sock: socket.socket) -> bool:
    async def eof():
        while True:
            try:
                data = sock.recv(1)
            except BlockingIOError:
                await trio.sleep(0.01)
                continue
            except ConnectionResetError:
                return True
            return data == b""
    with trio.move_on_after(30):
        return await eof()
    return False


async def test_connections_max_idle_ms_and_shutdown_close_dormant_connections(make_config, nursery):
    from kbroker.server import serve
    server = await nursery.start(serve, make_config(connections_max_idle_ms=4000))
    stopped = False
    try:
        idle = await _answered(server, 2)
        await _all_dormant(server, 2)
        assert all([await _closed_by_server(s) for s in idle])     # connections.max.idle.ms
        await until(lambda: not server._conns and len(server.dormancy) == 0)
        assert server.broker.quotas.connections.total == 0          # released
        late = await _answered(server, 3, first=10)
        await _all_dormant(server, 3)
        server.request_shutdown()                                   # shutdown
        with trio.fail_after(10):
            await server.wait_stopped()
        stopped = True
        assert all([await _closed_by_server(s) for s in late])
        for s in idle + late:
            s.close()
    finally:
        if not stopped:
            server.request_shutdown()
            with trio.fail_after(10):
                await server.wait_stopped()


async def test_dormancy_can_be_turned_off(make_config, nursery):
    """``kbroker.connections.dormant.after.ms=0``: every connection keeps its task."""
    from kbroker.server import serve
    server = await nursery.start(serve, make_config(kbroker_connections_dormant_after_ms=0))
    try:
        assert server.dormancy is None
        socks = await _answered(server, 3)
        await until(lambda: len(server._conns) == 3
                    and all(c.waiting_since is not None for c in server._conns))
        assert _connection_tasks() == 3
        for s in socks:
            s.close()
        await until(lambda: not server._conns)
    finally:
        server.request_shutdown()
        with trio.fail_after(10):
            await server.wait_stopped()
