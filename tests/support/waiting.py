"""The suites' wait on a condition (a test waits for what it needs, never for a while).

:func:`wait_for` asks ``predicate()`` every ``interval`` seconds until it returns something
true, which it returns; past ``timeout`` it fails with ``what`` and the last answer.
``errors`` are exceptions that mean "not yet" (a node still starting refuses connections);
``during`` runs between two asks (keep a load going, serve a client's poll)."""
from __future__ import annotations

import time


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
