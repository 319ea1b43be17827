"""The suites' wait on a condition (a test waits for what it needs, never for a while).

:func:`wait_for` asks ``predicate()`` every ``interval`` seconds until it returns something
true, which it returns; past ``timeout`` it fails with ``what`` and the last answer.
``errors`` are exceptions that mean "not yet" (a node still starting refuses connections);
``during`` runs between two asks (keep a load going, serve a client's poll).

:func:`until` is the same wait inside a trio test: ``predicate()`` may be a plain or an
async function; between two asks the test's other tasks run (``trio.sleep``), and past
``timeout`` it fails with ``what`` instead of hanging."""
from __future__ import annotations

import inspect
import time

import trio


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1, what: str = "condition",
             errors: tuple[type[BaseException], ...] = (OSError, ConnectionError), during=None):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except errors as e:  # retried until the deadline
            last = e
        if during is not None:
            during()
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


async def until(predicate, what: str = "condition", timeout: float = 30.0, interval: float = 0.02):
    last = None
    try:
        with trio.fail_after(timeout):
            while True:
                last = predicate()
                if inspect.isawaitable(last):
                    last = await last
                if last:
                    return last
                await trio.sleep(interval)
    except trio.TooSlowError:
        raise AssertionError(f"timed out waiting for {what} (last: {last!r})") from None
