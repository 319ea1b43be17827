"""Background maintenance of a :class:`~kbroker.log.manager.LogManager` under trio.

``run_background`` runs four loops in one nursery -- flush (``flush.ms`` and the
offset checkpoints, looked at every ``flush_check_interval_s``), retention (Kafka's
``log.retention.check.interval.ms``, 5 min, the first pass ``log.initial.task.delay.ms``,
30 s, after the start, as Kafka's log manager schedules it), the cleaner
(``log.cleaner.backoff.ms``, 15 s, repeating at once while passes find work; not run at all
with ``log.cleaner.enable=false``) and producer-id expiration
(``producer.id.expiration.check.interval.ms``, 10 min; ``producer_expiration_ms``, when
given, is read before each sweep, so a dynamic ``producer.id.expiration.ms`` applies at the
next one).  Each step is a synchronous, bounded manager call made from the trio thread, so
it never races appends or fetches; the offset checkpoints it builds are written and fsynced
from a worker thread (:func:`write_checkpoints`).  A step whose write fails on a full or
failing disk reports that log dir to the failure channel (:mod:`kbroker.log.failure`: the
dir goes offline, or the broker halts) and carries on with the other dirs, so no loop ends
on it.  Start it with ``nursery.start(run_background, manager)``; cancelling the nursery
stops it between steps.
"""
from __future__ import annotations

from typing import Callable

import trio

from .errors import KafkaStorageError
from .manager import CheckpointWrite, LogManager


def flush_check_interval_s(*intervals_ms: int | None) -> float:
    """How often the flush loop looks for logs past ``flush.ms`` and for checkpoints due:
    the shortest of ``intervals_ms`` (Kafka's ``log.flush.scheduler.interval.ms``, and
    ``replica.high.watermark.checkpoint.interval.ms``) when shorter than a second, else every
    second. (Kafka's default scheduler interval, Long.MAX_VALUE, runs its flusher once and
    never again, which leaves a topic's ``flush.ms`` without effect; kbroker keeps honouring
    ``flush.ms`` instead.)"""
    given = [ms for ms in intervals_ms if ms and ms > 0]
    return min(1.0, min(given) / 1000) if given else 1.0


async def write_checkpoints(manager: LogManager, writes: list[CheckpointWrite]) -> None:
    """Write checkpoint files built on the trio thread from a worker thread, one after the
    other: at 100,000 partitions each file is a megabyte written and fsynced twice, which
    the event loop no longer waits for (Kafka writes them from its scheduler's threads).
    A failed write is reported for its directory (:mod:`kbroker.log.failure`) and the
    others go on. Cancelled, it waits for the write under way (no thread outlives it)."""
    for job in writes:
        try:
            with manager.failures.guard(job.log_dir, job.what):
                await trio.to_thread.run_sync(manager.write_checkpoint_file, job)
        except KafkaStorageError:
            continue


async def run_background(manager: LogManager, *, flush_interval_s: float = 1.0,
                         retention_interval_s: float = 300.0,
                         cleaner_interval_s: float = 15.0,
                         initial_delay_s: float | None = None,
                         producer_expiry_interval_s: float = 600.0,
                         producer_expiration_ms: Callable[[], int] | None = None,
                         task_status=trio.TASK_STATUS_IGNORED) -> None:
    async def flush_loop():
        while True:
            await trio.sleep(flush_interval_s)
            writes: list[CheckpointWrite] = []
            manager.run_flush(deferred=writes)
            await write_checkpoints(manager, writes)

    async def retention_loop():
        # None: the first pass one interval after the start (callers without Kafka's delay)
        await trio.sleep(retention_interval_s if initial_delay_s is None else initial_delay_s)
        while True:
            manager.run_retention()
            await trio.sleep(retention_interval_s)

    async def cleaner_loop():
        while True:
            if manager.run_cleaner() is None:
                await trio.sleep(cleaner_interval_s)
            else:
                await trio.sleep(0)  # let requests in between passes

    async def producer_expiry_loop():
        while True:
            await trio.sleep(producer_expiry_interval_s)
            if producer_expiration_ms is not None:
                manager.producer_expiry.expiration_ms = producer_expiration_ms()
            manager.run_producer_expiry()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(flush_loop)
        nursery.start_soon(retention_loop)
        if manager.cleaner_enabled:          # log.cleaner.enable=false: no cleaner at all
            nursery.start_soon(cleaner_loop)
        nursery.start_soon(producer_expiry_loop)
        task_status.started()
