"""``connections.max.idle.ms``: one sweep per server instead of a deadline per connection.

A connection waiting for its next request on the socket fast path notes since when
(``Connection.waiting_since``, trio's clock) and parks in a bare ``wait_readable``, without
a cancel scope: a scope with its deadline costs every idle connection ~0.8 KiB (the scope,
its cancel status with two sets, an entry in trio's deadline heap) and every request the
time to make and drop them. This sweep, one task per server, wakes every tenth of the
idle time (at most every 10 s, at least every 10 ms) and ends the waits older than the idle
time (``Connection.expire``: ``trio.lowlevel.notify_closing`` on the socket, whose waiter
then closes the connection with one debug line). So an idle connection is closed after
between 1 and 1.1 times ``connections.max.idle.ms`` of silence; Kafka's ``Selector`` checks
its least recently used channel on each poll, to the same effect.

Rules kept: only a connection parked in that wait is touched (its socket is open then; a
closed one's descriptor number may already belong to someone else), and the sweep does
not yield while it walks the connections, so none starts or stops waiting under it.
"""
from __future__ import annotations

import trio


def sweep_interval(idle_s: float) -> float:
    return min(max(idle_s / 10, 0.01), 10.0)


async def expire_idle(connections, idle_s: float) -> None:
    """Forever: close the connections of ``connections`` (a live collection) that have
    waited for a request for ``idle_s`` seconds or more."""
    interval = sweep_interval(idle_s)
    while True:
        await trio.sleep(interval)
        oldest = trio.current_time() - idle_s
        for conn in connections:
            since = conn.waiting_since
            if since is not None and since <= oldest:
                conn.expire()
