"""The time a request really spent being handled, for ``request_percentage`` (KIP-124).

Kafka charges a client the time its request occupied a request handler thread
(``requestThreadTimeNanos``), not the time it waited in a purgatory (a long-polling fetch, an
``acks=all`` produce waiting for the ISR). kbroker handles a connection's requests in that
connection's trio task, so the equivalent is the sum of that task's *steps* while it handles
the request: a trio instrument adds up ``before_task_step`` → ``after_task_step`` for the
tasks that asked to be timed, and nothing while they wait.

The instrument is installed only while some ``request_percentage`` quota exists (no cost on
the hot path otherwise). Time is a measurement here (``perf_counter_ns``), like the request
meters; the quota arithmetic itself takes the injected clock.
"""
from __future__ import annotations

from time import perf_counter_ns

import trio


class TaskTimer(trio.abc.Instrument):
    """Per-task step time, for the tasks registered with ``start``."""

    def __init__(self):
        self._spent: dict = {}          # task -> nanoseconds stepped since start
        self._since: dict = {}          # task -> perf_counter_ns at the current step's start

    def start(self, task) -> None:
        self._spent[task] = 0
        self._since[task] = perf_counter_ns()       # we are inside the task's step now

    def stop(self, task) -> int:
        """Nanoseconds the task has run since ``start`` (including the current step)."""
        spent = self._spent.pop(task, 0)
        since = self._since.pop(task, None)
        if since is not None:
            spent += perf_counter_ns() - since
        return spent

    def before_task_step(self, task) -> None:
        if task in self._spent:
            self._since[task] = perf_counter_ns()

    def after_task_step(self, task) -> None:
        since = self._since.pop(task, None)
        if since is not None and task in self._spent:
            self._spent[task] += perf_counter_ns() - since


class RequestTimer:
    """Installs the ``TaskTimer`` in the running trio loop on demand (once per run)."""

    def __init__(self):
        self._timer: TaskTimer | None = None
        self._token = None

    def start(self) -> object:
        token = trio.lowlevel.current_root_task()
        if self._timer is None or self._token is not token:
            self._timer = TaskTimer()
            self._token = token
            trio.lowlevel.add_instrument(self._timer)
        task = trio.lowlevel.current_task()
        self._timer.start(task)
        return task

    def stop(self, task) -> int:
        return self._timer.stop(task) if self._timer is not None else 0
