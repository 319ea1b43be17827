"""SIGINT and SIGTERM of ``kbroker serve``: the first stops the node gracefully, the second
stops it at once.

Rules it keeps:

- The signals are taken by a thread of their own (``signal.sigtimedwait``), not by a handler
  on the trio thread. Python runs signal handlers on the main thread only, between
  bytecodes: a main thread stuck in a long synchronous call (an fsync on a slow or failing
  disk) would not even see a second signal. So ``block()`` runs before any other thread
  exists (threads inherit the mask), every thread keeps both signals blocked, and only
  ``SignalWatcher`` takes them: it looks at the pending set every ``_POLL`` seconds and takes
  a pending one with ``sigwait``, whose answer is the signal's number. Not
  ``sigtimedwait``: its ``siginfo`` is not always filled in -- under libfaketime (the
  clock-step tests preload it) a stop and continue (SIGSTOP/SIGCONT) makes it return an
  unfilled one, whose leftover number may read as SIGINT.
- First signal: ``Server.request_shutdown()`` on the trio thread — the controlled shutdown
  (bounded by ``broker.session.timeout.ms``), the drain of busy connections (bounded by
  ``--shutdown-timeout``), then every log is flushed and closed with the clean-shutdown
  marker.
- Second signal: ``request_shutdown(force=True)`` — nothing waits on the network any more
  (not the controlled-shutdown wait, not a busy connection, not an owed answer); every task
  is cancelled and the logs are closed (local files only), exit code 0. If the process is
  still there ``FORCED_EXIT_GRACE`` seconds later (the trio thread is stuck in a system
  call, or closing takes too long), this thread ends it with ``os._exit(128 + signal)``
  after one line on stderr.

Why a hard exit loses nothing acknowledged: partition logs are written with ``pwrite``
(kbroker/log/segment.py, no user-space buffer), so every batch is in the kernel before it
is acknowledged and outlives the process; the metadata log is fsynced before any message
that depends on it leaves (kbroker/raft/driver.py). What a hard exit skips — the
clean-shutdown marker, the last checkpoints — only makes the next start recover the logs,
as after ``kill -9``.
"""
from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable

log = logging.getLogger("kbroker.server")

SIGNALS = (signal.SIGINT, signal.SIGTERM)
FORCED_EXIT_GRACE = 3.0        # seconds the forced stop may take to close the local files
_POLL = 0.1                    # how often the watcher looks for a pending signal
_WATCHED = frozenset(SIGNALS)


def block() -> None:
    """Block SIGINT and SIGTERM in the calling thread and in every thread it starts later.
    Call it on the main thread before anything starts a thread."""
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


class SignalWatcher:
    """A daemon thread that takes the blocked signals and calls ``on_signal(signum, count)``
    for each (count 1: graceful, 2: forced; later ones are ignored), then guards the forced
    stop with the hard exit. ``done()`` says the process is ending in order."""

    def __init__(self, on_signal: Callable[[int, int], None], *, grace: float = FORCED_EXIT_GRACE):
        self._on_signal = on_signal
        self._grace = grace
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kbroker-signals", daemon=True)

    def start(self) -> "SignalWatcher":
        self._thread.start()
        return self

    def done(self) -> None:
        self._done.set()

    def _run(self) -> None:
        count = 0
        while not self._done.is_set():
            if not signal.sigpending() & _WATCHED:
                self._done.wait(_POLL)
                continue
            signo = signal.sigwait(SIGNALS)     # pending: returns at once
            count += 1
            name = signal.Signals(signo).name
            if count > 1:
                # armed first: the log line below may itself block (stderr on the slow disk)
                timer = threading.Timer(self._grace, _hard_exit, (name, self._grace, signo))
                timer.daemon = True
                timer.start()
            self._on_signal(signo, count)
            log.info("received %s%s", name, ", forcing shutdown" if count > 1 else "")
            if count > 1:
                self._done.wait()       # the process ends in order, or the timer ends it
                timer.cancel()
                return


def _hard_exit(name: str, grace: float, signum: int) -> None:
    line = (f"kbroker: still stopping {grace:g} s after the second {name}; exiting now (the "
            "logs are recovered at the next start, nothing acknowledged is lost)\n").encode()
    # the line is written by a thread of its own and waited for briefly: stderr may be a
    # file on the very disk that stalls
    writer = threading.Thread(target=os.write, args=(2, line), daemon=True)
    writer.start()
    writer.join(0.5)
    os._exit(128 + signum)
