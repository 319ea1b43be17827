"""The broker side of KIP-858's directory assignment (Kafka's ``AssignmentsManager`` and
``ReplicaManager.maybeUpdateTopicAssignment``).

The metadata image names a log directory for each replica (``PartitionImage.directory``,
``kbroker.metadata.directories``). When this broker holds a replica's log in another
directory than the image says — a new replica the controller left ``UNASSIGNED`` because
the broker has several log dirs, a replica moved by AlterReplicaLogDirs, a log found in
another directory after a restart, a partition from before ``metadata.version`` 3.7-IV2
(``MIGRATING``) — the replica manager calls :meth:`AssignmentsManager.maybe_report`, and
the placement goes to the active controller as AssignReplicasToDirs, which records it in
the partition's ``Directories``. From then on the controller knows from the log which
replicas a failed directory held; the heartbeats only name the directory.

Sending, as Kafka's manager does: assignments wait about 100 ms so several go in one
request (at once when more than one request's worth, 2250, are waiting); one request is in
flight at a time; before sending, an assignment is dropped when its topic or partition is
gone or this broker no longer holds a replica of it (and here also when the image already
names that directory: nothing left to tell). A request that fails as a whole (no
controller, a stale broker epoch) is sent again after an exponential backoff (100 ms
doubling up to 10 s); a partition answered with an error is queued again. A newer
assignment of the same partition replaces a waiting one.

Below ``metadata.version`` 3.7-IV2 nothing is reported (Kafka's brokers send nothing there).
"""
from __future__ import annotations

import logging
from typing import Callable

import trio

from kbroker.wire.error_codes import ErrorCode as E

from . import directories

log = logging.getLogger("kbroker.assignments")

MAX_ASSIGNMENTS_PER_REQUEST = 2250     # Kafka's AssignReplicasToDirsRequest limit
BATCH_DELAY_S = 0.1                    # Kafka's initial backoff, also the batching delay
MAX_BACKOFF_S = 10.0


class AssignmentsManager:
    """Queues this broker's replica placements and sends them to the active controller.

    ``channel`` is the ``ControllerChannel`` (set once it exists; reports queue before),
    ``image`` returns the current metadata image, ``dir_id_of`` maps a log directory path
    to its ``directory.id`` (None if unknown). :meth:`run` runs in the broker's nursery."""

    def __init__(self, node_id: int, image: Callable[[], object],
                 dir_id_of: Callable[[object], object], channel=None):
        self.node_id = node_id
        self.channel = channel
        self._image = image
        self._dir_id_of = dir_id_of
        # (topic id, partition) -> (directory id, reason); insertion order = age
        self._ready: dict[tuple, tuple] = {}
        self._inflight: dict[tuple, tuple] = {}
        self._wake = trio.Event()
        self._failures = 0
        self.stats = {"requests": 0, "sent": 0, "accepted": 0, "invalidated": 0,
                      "partition_errors": 0, "request_errors": 0}

    # ------------------------------------------------------------------ reporting
    def maybe_report(self, topic_id, partition: int, log_dir, pimg, reason: str) -> bool:
        """A local replica's log lives in ``log_dir``: queue an assignment if the image's
        ``pimg`` names another directory for this broker. Returns whether one was queued."""
        image = self._image()
        if image is None or not directories.supported(image.features.get("metadata.version")):
            return False
        dir_id = self._dir_id_of(log_dir)
        if dir_id is None or pimg.directory(self.node_id) == dir_id:
            return False
        key = (topic_id, partition)
        for queue in (self._inflight, self._ready):
            if queue.get(key, (None,))[0] == dir_id:
                return False           # on its way already
        self._ready.pop(key, None)     # a newer placement replaces a waiting one
        self._ready[key] = (dir_id, reason)
        self._wake.set()
        return True

    def pending(self) -> int:
        return len(self._ready) + len(self._inflight)

    # ------------------------------------------------------------------ sending
    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            if not self._ready:
                await self._wake.wait()
            self._wake = trio.Event()
            if self._failures:
                await trio.sleep(min(BATCH_DELAY_S * (2 ** (self._failures - 1)), MAX_BACKOFF_S))
            elif len(self._ready) <= MAX_ASSIGNMENTS_PER_REQUEST:
                await trio.sleep(BATCH_DELAY_S)
            await self._send_some()

    def _valid(self, image, key, dir_id) -> bool:
        t = image.topics_by_id.get(key[0])
        p = t.partitions.get(key[1]) if t is not None else None
        return p is not None and self.node_id in p.replicas and p.directory(self.node_id) != dir_id

    async def _send_some(self) -> None:
        image = self._image()
        me = image.brokers.get(self.node_id) if image is not None else None
        if me is None or self.channel is None:
            self._failures += 1         # not registered yet: try again later
            return
        batch: dict[tuple, tuple] = {}
        invalid = 0
        for key in list(self._ready):
            if len(batch) >= MAX_ASSIGNMENTS_PER_REQUEST:
                break
            entry = self._ready.pop(key)
            if self._valid(image, key, entry[0]):
                batch[key] = entry
            else:
                invalid += 1
        self.stats["invalidated"] += invalid
        if not batch:
            return
        by_dir: dict = {}
        for (tid, part), (dir_id, _) in batch.items():
            by_dir.setdefault(dir_id, []).append((tid, part))
        log.info("sending %d directory assignment(s) to the controller (%d dropped as no longer "
                 "needed)", len(batch), invalid)
        self._inflight = batch
        self.stats["requests"] += 1
        self.stats["sent"] += len(batch)
        try:
            code, errors = await self.channel.assign_replicas_to_dirs(me.broker_epoch, by_dir)
        finally:
            self._inflight = {}
        if code:
            self._failures += 1
            self.stats["request_errors"] += 1
            log.warning("AssignReplicasToDirs failed (%s): %d assignment(s) will be sent again",
                        E(code).name, len(batch))
            for key, entry in batch.items():
                self._ready.setdefault(key, entry)
            return
        self._failures = 0
        for (tid, part), (dir_id, reason) in batch.items():
            err = errors.get((dir_id, tid, part), E.UNKNOWN_SERVER_ERROR)
            if err == E.NONE:
                self.stats["accepted"] += 1
                log.debug("replica %s-%d assigned to directory %s (%s)", tid, part, dir_id, reason)
            else:
                self.stats["partition_errors"] += 1
                log.warning("assigning replica %s-%d to directory %s failed: %s", tid, part, dir_id,
                            E(err).name)
                self._ready.setdefault((tid, part), (dir_id, reason))
        if self._ready:
            self._wake.set()

    def statistics(self) -> dict:
        return {**self.stats, "ready": len(self._ready), "inflight": len(self._inflight)}
