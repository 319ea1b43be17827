"""Answers written by a thread beside the event loop while the loop's thread is crowded
(issue 32: the latency rows with a CPU-bound process competing for the cores).

A plaintext answer is normally written by the connection's task with ``sendmsg`` on the
loop's thread (kbroker/server/send.py). That system call also wakes the client's threads
that wait for the answer, and the kernel tends to place a woken thread on the waker's CPU:
with a busy process beside the broker, the loop's thread is then preempted by the very
clients it just answered, and spends as long in the run queue as running
(benchmarks/README.md, the sections on the rows with a process competing). When one
other thread does the writing, those wake-ups start from that thread's CPU instead, and
the loop goes on with other connections while the bytes are copied into the kernel.

:class:`AnswerWriter` is that thread and when to use it (``kbroker.network.answer.writer``):
- ``never``: every answer on the loop's thread (as before this module).
- ``always``: every plaintext answer that is only bytes (after send.py's inlining of small
  file regions) goes through the thread; a larger region is still sent with ``sendfile``
  by the task.
- ``auto`` (the default): ``always`` while the loop's thread waits in the CPU run queue
  for more than ``ON_WAIT`` of the wall clock (the thread's ``/proc/.../schedstat``, sampled
  every ``PERIOD`` seconds), back to ``never`` after ``OFF_PERIODS`` samples in a row under
  ``OFF_WAIT``. On a quiet machine the hand-off would only add the thread's wake-up to each
  answer (a 1,000 records/s row's p50 went from 0.39 to 0.54 ms when every answer took it),
  so it is used only while it has something to win. Without schedstat (not Linux): never.

The task that hands an answer over waits for the thread's result, so a connection's
answers stay in order, nothing is shared between the task and the thread while it writes,
and the socket cannot be closed under the thread (only the connection's own task closes
it). The thread never blocks on a socket: what a full socket did not take comes back to
the task, which waits for writability on the loop as before. TLS answers stay on the loop
(an ``ssl`` object is not to be used from two threads).
"""
from __future__ import annotations

import logging
import queue
import threading

import outcome
import trio

from .send import inlined, send_now, send_parts_raw

log = logging.getLogger(__name__)

MODES = ("auto", "always", "never")
PERIOD = 0.1        # seconds between two samples of the loop's run-queue wait
ON_WAIT = 0.2       # fraction of a period in the run queue that turns the thread on
OFF_WAIT = 0.1      # ... and under which, OFF_PERIODS samples in a row, turns it off
OFF_PERIODS = 20


def _abort_refused(_raise_cancel):
    # the thread owns the socket's send side until it reports: the task waits for it
    return trio.lowlevel.Abort.FAILED


class RunQueueWait:
    """The calling thread's time spent waiting in the CPU run queue, in seconds since it
    started (the second field of its ``/proc/self/task/TID/schedstat``); None where not
    available."""

    def __init__(self):
        self._path = f"/proc/self/task/{threading.get_native_id()}/schedstat"

    def __call__(self) -> float | None:
        try:
            with open(self._path, "rb") as f:
                return int(f.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return None


class AnswerWriter:
    """The writing thread of one server and the switch that sends answers to it."""

    def __init__(self, mode: str = "auto"):
        if mode not in MODES:
            raise ValueError(f"answer writer mode {mode!r} is not one of {', '.join(MODES)}")
        self.mode = mode
        self.active = False         # answers are handed to the thread
        self.written = 0            # answers the thread wrote (in whole or in part)
        self.switched_on = 0        # times auto mode turned the thread on
        self._quiet = 0             # samples in a row under OFF_WAIT while on
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._token = None
        self.thread: threading.Thread | None = None

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Until cancelled: the thread runs, and in auto mode this task switches it
        (started: the thread is up, and in ``always`` mode on)."""
        if self.mode == "never":
            task_status.started()
            return
        self._token = trio.lowlevel.current_trio_token()
        self.thread = threading.Thread(target=self._work, name="kbroker-answer-writer", daemon=True)
        self.thread.start()
        try:
            self.active = self.mode == "always"
            task_status.started()
            if self.active:
                await trio.sleep_forever()
            else:
                await self._watch(RunQueueWait())
        finally:
            # no checkpoint between these two lines and none between a task's look at
            # ``active`` and its hand-off: no job can be queued after the stop
            self.active = False
            self._jobs.put(None)
            if self.written:
                log.info("answer writer (%s): %d answers written by the thread, turned on %d times",
                         self.mode, self.written, self.switched_on)

    async def _watch(self, waited) -> None:
        last = waited()
        if last is None:
            log.info("answer writer: no run-queue statistics here; answers stay on the loop")
            await trio.sleep_forever()
        while True:
            await trio.sleep(PERIOD)
            now = waited()
            if now is None:
                self.active = False
                await trio.sleep_forever()
            self.observe((now - last) / PERIOD)
            last = now

    def observe(self, share: float) -> None:
        """One sample in auto mode: the share of the last period the loop's thread spent
        waiting for a CPU."""
        if not self.active:
            if share > ON_WAIT:
                self.active = True
                self.switched_on += 1
                self._quiet = 0
                log.debug("answer writer on: the loop waited for a CPU %.0f%% of %.1f s", 100 * share, PERIOD)
        elif share < OFF_WAIT:
            self._quiet += 1
            if self._quiet >= OFF_PERIODS:
                self.active = False
                log.debug("answer writer off: %d quiet samples", self._quiet)
        else:
            self._quiet = 0

    async def send(self, sock, parts: list) -> list:
        """Write ``parts`` through the thread when they are all bytes (small regions
        inlined first): what is left for the caller to write (the whole list when a large
        file region is among them, a remainder when the socket filled up, else empty)."""
        parts, only_bytes = inlined(parts)
        if not only_bytes:
            return parts
        self._jobs.put((sock, parts, trio.lowlevel.current_task()))
        return await trio.lowlevel.wait_task_rescheduled(_abort_refused)

    def _work(self) -> None:
        reschedule = trio.lowlevel.reschedule
        get = self._jobs.get
        while (job := get()) is not None:
            sock, parts, task = job
            result = outcome.capture(send_now, sock, parts)
            self.written += 1
            self._token.run_sync_soon(reschedule, task, result)


class PlainSender:
    """How a plaintext connection on the socket fast path writes an answer (a list of
    parts): through the server's writer thread while it is on, else with
    ``send_parts_raw`` on the loop. One small object per connection, like the bound method
    it replaces, and no reference back to the connection."""

    __slots__ = ("sock", "writer")

    def __init__(self, sock, writer: AnswerWriter | None):
        self.sock = sock
        self.writer = writer

    async def __call__(self, parts) -> None:
        writer = self.writer
        if writer is not None and writer.active:
            parts = await writer.send(self.sock, parts)
            if not parts:
                return
        await send_parts_raw(self.sock, parts)
