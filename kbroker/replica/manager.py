"""The replica manager: every partition replica on this node, wired to the logs, the
metadata images, the controller and the follower fetchers. It is the one entry point of the
replica layer; the API modules (produce, fetch, list_offsets, offset_for_leader_epoch,
delete_records, describe_log_dirs, describe_producers, write_txn_markers) and the
coordinators call only its methods.

What lives where (all under ``kbroker/replica/``):

- ``state.py`` — the pure replication rules (high watermark, ISR expand/shrink, low
  watermark, acks=all completion), with no I/O and the time passed in;
- ``append.py`` — produce validation and the append on the leader; transaction markers;
- ``read.py`` — consumer and follower reads, ListOffsets;
- ``delayed.py`` — parked fetches, acks=all produces and DeleteRecords;
- ``fetcher.py`` — the follower side: fetching from the leader and applying its answers;
- ``partition.py`` — the per-partition object the others work on;
- ``results.py`` — request/answer shapes and ``ReplicaError``;
- ``log_dirs.py``, ``partition_metadata.py`` — DescribeLogDirs and the topic-id file;
- ``log_dir_failure.py`` — the listener of the log layer's failure channel: a log dir whose
  write failed goes offline (:meth:`ReplicaManager.take_log_dir_offline`) or the broker
  halts. Callers here only make sure a ``KafkaStorageError`` (already reported) never ends a
  background task or an image's application.

This module keeps what needs the broker: applying metadata images (becoming leader or
follower, opening and deleting logs, config changes; telling the controller which log dir
holds a replica when the image names another, KIP-858, through the broker's
``dir_assignments``), the AlterPartition round trips that
commit ISR changes (one in flight per partition; an error drops the change and the next image
decides), the ISR-shrink timer, and the counters of :meth:`ReplicaManager.statistics`.

Rules kept across the package (Kafka's ReplicaManager/Partition):

- Clients read and write only the leader (NOT_LEADER_OR_FOLLOWER elsewhere); followers
  fetch from it. One leader epoch per partition, taken from the image's
  ``PartitionImage.leader_epoch``: the same number goes to Metadata, into stored batches and
  into OffsetForLeaderEpoch answers. A new leader (or epoch) records where its epoch starts in
  the log's persisted leader-epoch cache (``assign_epoch_start``), so older epochs answer with
  the offset where the next epoch began, across restarts and on every replica.
- The last stable offset is the log's (first offset of the oldest open transaction, capped
  at the high watermark); the transaction code's ``lso_hook`` may lower it further.
- With one replica the ISR is the leader alone, so the high watermark follows the log end
  offset after every append and acks=all never waits.

Not implemented: fetch sessions (session id 0: every response is a full one), fetching from
followers (KIP-392), unclean leader election.
"""
from __future__ import annotations

import functools
import itertools
import logging
import os
from pathlib import Path
from typing import Any, Callable

import trio

from kbroker.common.clock import monotonic_reader
from kbroker.log.config import LogConfig
from kbroker.log.errors import KafkaStorageError
from kbroker.metadata import elr
from kbroker.replica import append as append_path
from kbroker.replica import delayed
from kbroker.replica import log_dir_failure
from kbroker.replica import read as read_path
from kbroker.replica.fetcher import ReplicaFetcherManager
from kbroker.replica.log_dirs import configured_log_dirs, describe_log_dirs, size_of
from kbroker.replica.partition import Partition, check_leader_epoch
from kbroker.replica.partition_metadata import read_partition_metadata, write_partition_metadata
from kbroker.replica.results import (INTERNAL_TOPICS, READ_UNCOMMITTED, AppendResult,
                                     FetchResult, FetchSpec, ReplicaError, RunResult, error_from)
from kbroker.replica.state import FollowerState, ReplicationState
from kbroker.wire.error_codes import ErrorCode

log = logging.getLogger("kbroker.replica")


class ReplicaManager:
    """Every local replica, wired to the logs, the metadata images, the controller and the
    follower fetchers; the rules themselves are in the sibling modules (see above).

    Metadata images are applied in order and synchronously; only the creation of new logs
    beyond ``CREATE_CHUNK`` per image is left to a task of :meth:`run` (steps of at most
    ``CREATE_CHUNK`` logs and ``CREATE_BUDGET_S``), since each costs several file creations and fsyncs and 10,000 of them
    at once would hold the event loop (and Raft's heartbeats) for tens of seconds.

    Owned by the Broker (``broker.replicas``); core calls :meth:`apply_image` after every
    metadata change. All methods run on the trio thread; appends are synchronous (no
    checkpoint inside), so concurrent requests never interleave within one append.
    :meth:`run` (in the broker's nursery) drives the follower fetchers
    (``kbroker/replica/fetcher.py``), AlterPartition calls, the ISR-shrink timer and the
    parked fetches' timer.
    """

    CREATE_CHUNK = 32            # new logs per image / per step of the creating task
    CREATE_BUDGET_S = 0.05       # ... and at most this long per step

    def __init__(self, broker):
        self.broker = broker
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._pending: set[tuple[str, int]] = set()   # replicas whose log is not created yet
        # replicas whose log dir went offline (log_dir_failure): key -> (dir, topic id)
        self._offline: dict[tuple[str, int], tuple[Path, Any]] = {}
        self._creating = False
        self._lso_hook: Callable | None = None
        self._image = None
        self._elr_image = self._elr_on = None     # _maybe_advance_hw: ELR on for this image
        self._nursery = None
        self._cancel: trio.CancelScope | None = None
        # parked fetches' deadlines, one timer for all (its task runs in run())
        self.purgatory = delayed.FetchPurgatory()
        self._alters: list = []                  # AlterPartition calls waiting for run()
        self._alters_wake: trio.Event | None = None
        # (producer_id, producer_epoch, topic, partition) -> error code; installed by the
        # transaction coordinator
        self.txn_verifier: Callable[[int, int, str, int], int] | None = None
        self.stats = {"appends": 0, "appended_bytes": 0, "append_runs": 0, "fetches": 0,
                      "long_polls": 0,
                      "fetch_wakeups": 0, "append_errors": 0, "duplicates": 0,
                      "markers": 0, "follower_fetches": 0, "isr_expands": 0,
                      "isr_shrinks": 0, "alter_partition_errors": 0,
                      "delayed_produces": 0, "delayed_produce_timeouts": 0,
                      "delayed_delete_records_timeouts": 0, "deferred_log_creations": 0,
                      "image_partitions_visited": 0}
        self.fetchers = ReplicaFetcherManager(self)
        # every storage error under a log dir, from any caller, ends up here once per dir
        broker.logs.failures.listen(functools.partial(log_dir_failure.log_dir_failed, self))
        # bound once: the replication state asks these on every follower fetch
        self._eligible = self._broker_eligible
        self._registration_of = self._registration

    # ---------------------------------------------------------------- configuration

    @property
    def node_id(self) -> int:
        cfg = self.broker.config
        try:
            return int(cfg.node_id)
        except AttributeError:
            return int(cfg.values["node.id"])

    def _cfg(self, key: str, default):
        try:
            v = self.broker.config.get(key)
        except (AttributeError, KeyError):
            return default
        return default if v is None else v

    def now_ms(self) -> int:
        return self.broker.clock.now_ms()

    def lag_clock_ms(self) -> int:
        """The clock of the ISR's catch-up times (``replica.lag.time.max.ms``): monotonic when
        the broker's clock has one, so a step of the wall clock neither drops every follower
        from the ISR (forward) nor keeps a lagging one in it (back)."""
        return monotonic_reader(self.broker.clock)()

    def _broker_topic_defaults(self) -> dict:
        cfg = self.broker.config
        fn = getattr(cfg, "log_config_defaults", None)
        return dict(fn()) if fn is not None else {}

    def effective_properties(self, topic_configs: dict | None) -> dict:
        """Topic-level properties: broker defaults (Kafka's synonyms) + topic overrides."""
        props = self._broker_topic_defaults()
        for k, v in (topic_configs or {}).items():
            if v is not None:
                props[k] = v
        return props

    @property
    def lso_hook(self) -> Callable | None:
        return self._lso_hook

    @lso_hook.setter
    def lso_hook(self, hook: Callable | None) -> None:
        """Installed by the transaction code: ``hook(partition) -> first unstable offset``."""
        self._lso_hook = hook
        for p in self._partitions.values():
            p.lso_hook = hook

    # ---------------------------------------------------------------- background work

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Follower fetchers, AlterPartition calls, the ISR-shrink timer (every
        ``replica.lag.time.max.ms`` / 2) and the parked fetches' timer
        (:class:`delayed.FetchPurgatory`), until :meth:`close` or cancellation."""
        with trio.CancelScope() as scope:
            self._cancel = scope
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self.fetchers.run)
                nursery.start_soon(self._isr_shrink_loop)
                nursery.start_soon(self.purgatory.run)
                for job in self._alters:
                    nursery.start_soon(self._alter_partition, *job)
                self._alters = []
                task_status.started()
        self._nursery = None

    def close(self) -> None:
        """Stop fetchers and timers (the broker closes the logs afterwards)."""
        if self._cancel is not None:
            self._cancel.cancel()
        self._nursery = None

    shutdown = close

    async def _isr_shrink_loop(self) -> None:
        lag = int(self._cfg("replica.lag.time.max.ms", 30_000))
        while True:
            await trio.sleep(max(lag, 2) / 2000.0)
            self.maybe_shrink_isr()

    # ---------------------------------------------------------------- metadata

    def apply_image(self, image) -> None:
        """Bring local replicas in line with the metadata image: open logs for every
        partition with a replica here, become leader or follower as the image says, drop
        logs of deleted topics and of replicas moved away, follow config and epoch changes,
        and hand the followed partitions to the fetchers.

        Only what changed since the last image is applied (Kafka's ``TopicsDelta``
        ``localChanges``): the image builder shares every untouched ``TopicImage`` and
        ``PartitionImage`` object with the image before (``kbroker/metadata/image.py``), so
        a topic whose object is the same is skipped, and within a changed topic only the
        partitions whose image object changed are visited -- all of them when the topic's
        configs or id changed. Creating n partitions in k requests thus costs O(n) partition
        visits, not O(n·k). The first image, and one that changes broker-level configs
        (the log defaults) or the finalized features (ELR's minimum ISR), are applied to every
        partition. ``stats["image_partitions_visited"]`` counts the visits."""
        me = self.node_id
        prev, self._image = self._image, image
        now = self.lag_clock_ms()
        full = prev is None or self._changes_everything(prev, image)
        config_cache: dict[str, tuple[dict, LogConfig]] = {}
        # New logs beyond the first CREATE_CHUNK of this image are created by a task
        # (needs run()'s nursery), in chunks, so a large change does not hold the event loop
        deferring = self._nursery is not None
        created = 0
        followers = full
        for key, topic, pimg in self._changed(prev, image, full):
            self.stats["image_partitions_visited"] += 1
            replicas = tuple(getattr(pimg, "replicas", ()) or ()) if pimg is not None else ()
            wanted = pimg is not None and (pimg.leader == me or me in replicas)
            part = self._partitions.get(key)
            if part is not None and (not wanted or topic.topic_id != part.topic_id):
                # gone: topic deleted, re-created under a new id, or the replica moved away
                del self._partitions[key]
                followers = followers or not part.is_leader
                part.is_leader = False
                part.wake()
                try:
                    self.broker.logs.delete_log(key[0], key[1])
                except KafkaStorageError:
                    pass        # its dir failed (reported): the next start deletes it
                part = None
            off = self._offline.get(key)
            if off is not None and (not wanted or off[1] != topic.topic_id):
                del self._offline[key]      # deleted or moved away: no longer ours to report
                off = None
            if not wanted:
                self._pending.discard(key)
                continue
            if off is not None:
                continue                    # its log dir is offline until the broker restarts
            if part is None and deferring and key[0] not in INTERNAL_TOPICS and (
                    key in self._pending or (created >= self.CREATE_CHUNK
                                             and self.broker.logs.get(*key) is None)):
                self._pending.add(key)
                continue
            self._pending.discard(key)
            cached = config_cache.get(key[0])
            if cached is None:
                props = self.effective_properties(getattr(topic, "configs", None))
                cached = config_cache[key[0]] = (props, LogConfig.from_properties(props))
            props, config = cached
            # a follower that becomes leader leaves its fetcher (Kafka's makeLeaders removes
            # the partition from the replica fetcher manager)
            was_follower = part is not None and not part.is_leader
            if part is None:
                created += 1
                part = self._create_partition(key, topic, pimg, props, config)
                if part is None:
                    continue
            elif config != part.config:
                part.config, part.props = config, props
                update = getattr(part.log, "update_config", None)
                if update is not None:
                    update(config)
                else:
                    part.log.config = config
            elif props != part.props:
                part.props = props
            self._apply_partition(part, pimg, me, now)
            self._report_dir(part, pimg, "applying metadata")
            followers = followers or was_follower or pimg.leader != me
        if followers or self._brokers_changed(prev, image):
            self._update_fetchers()
        if self._pending and not self._creating and self._nursery is not None:
            self._creating = True
            self._nursery.start_soon(self._create_pending)

    @staticmethod
    def _changes_everything(prev, image) -> bool:
        """Whether ``image`` changes what every partition depends on: the broker-level
        configs (dynamic log defaults) or the finalized features (ELR)."""
        return (getattr(prev, "broker_configs", None) != getattr(image, "broker_configs", None)
                or getattr(prev, "features", None) != getattr(image, "features", None))

    @staticmethod
    def _brokers_changed(prev, image) -> bool:
        """Whether the registered brokers changed (the fetchers' leader endpoints)."""
        return prev is None or getattr(prev, "brokers", None) != getattr(image, "brokers", None)

    def _changed(self, prev, image, full: bool):
        """``(key, topic image, partition image)`` of every partition to apply: all of them
        when ``full``, else those whose image changed since ``prev``; a partition gone from
        the image (its topic deleted or re-created with fewer partitions) comes with the
        topic image of its name now (or None) and ``None``."""
        old_topics = getattr(prev, "topics", None) or {}
        for name, topic in image.topics.items():
            before = old_topics.get(name)
            if not full and before is topic:
                continue
            whole = (full or before is None or before.topic_id != topic.topic_id
                     or before.configs != topic.configs)
            old_parts = before.partitions if before is not None and not full else {}
            for idx, pimg in topic.partitions.items():
                if whole or old_parts.get(idx) is not pimg:
                    yield (name, idx), topic, pimg
            for idx in old_parts:
                if idx not in topic.partitions:
                    yield (name, idx), topic, None
        if full:
            # local replicas (open, pending or offline) of partitions no longer in the image
            topics = image.topics
            for key in [k for k in itertools.chain(self._partitions, self._pending, self._offline)
                        if k[0] not in topics or k[1] not in topics[k[0]].partitions]:
                yield key, topics.get(key[0]), None
            return
        for name, before in old_topics.items():
            if name not in image.topics:
                for idx in before.partitions:
                    yield (name, idx), None, None

    def _update_fetchers(self) -> None:
        me = self.node_id
        self.fetchers.update(self._image, [p for p in self._partitions.values()
                                           if not p.is_leader and p.leader >= 0 and p.leader != me])

    def _create_partition(self, key, topic, pimg, props: dict,
                          config: LogConfig) -> Partition | None:
        """The new replica; None when creating its log failed its log dir (reported to the
        failure channel): the replica is offline with the dir, as Kafka's makeLeader or
        makeFollower marks a partition whose log cannot be created."""
        try:
            log = self._open_log(key[0], key[1], topic.topic_id, config)
        except KafkaStorageError as exc:
            if exc.log_dir is None:
                raise
            self._offline[key] = (exc.log_dir, topic.topic_id)
            return None
        part = Partition(topic=key[0], index=key[1], topic_id=topic.topic_id, log=log,
                         leader_epoch=pimg.leader_epoch, config=config, props=props,
                         replication=ReplicationState(local_id=self.node_id),
                         lso_hook=self._lso_hook)
        self._partitions[key] = part
        return part

    async def _create_pending(self) -> None:
        """Create the replicas :meth:`apply_image` left pending, CREATE_CHUNK logs at a time
        with a checkpoint between chunks, each from the latest image (an image that deleted
        or moved a pending replica has already dropped it from the pending set). Until its
        log exists a partition answers NOT_LEADER_OR_FOLLOWER, as Kafka does between its
        metadata cache and its replica manager taking a new image."""
        try:
            while self._pending:
                image, me, now = self._image, self.node_id, self.lag_clock_ms()
                chunk = list(itertools.islice(self._pending, self.CREATE_CHUNK))
                configs: dict[str, tuple[dict, LogConfig]] = {}
                followers = False
                started = trio.current_time()
                for key in chunk:
                    if trio.current_time() - started > self.CREATE_BUDGET_S:
                        break           # a slow disk: yield before the chunk is done
                    self._pending.discard(key)
                    topic = image.topics.get(key[0])
                    pimg = topic.partitions.get(key[1]) if topic is not None else None
                    if pimg is None or key in self._partitions or not (
                            pimg.leader == me or me in tuple(getattr(pimg, "replicas", ()) or ())):
                        continue
                    cached = configs.get(key[0])
                    if cached is None:
                        props = self.effective_properties(getattr(topic, "configs", None))
                        cached = configs[key[0]] = (props, LogConfig.from_properties(props))
                    part = self._create_partition(key, topic, pimg, *cached)
                    if part is None:
                        continue
                    self._apply_partition(part, pimg, me, now)
                    self._report_dir(part, pimg, "new replica")
                    followers = followers or not part.is_leader
                    self.stats["deferred_log_creations"] += 1
                if followers:
                    self._update_fetchers()
                await trio.sleep(0)
        finally:
            self._creating = False

    def _apply_partition(self, part: Partition, pimg, me: int, now: int) -> None:
        """Kafka's makeLeader / makeFollower for one partition of a new image."""
        epoch = pimg.leader_epoch
        replicas = tuple(getattr(pimg, "replicas", ()) or ())
        isr = tuple(pimg.isr or ())
        pepoch = getattr(pimg, "partition_epoch", 0)
        epoch_changed = epoch != part.leader_epoch
        part.replicas = replicas
        part.leader = pimg.leader
        if pimg.leader != me:
            was_leader = part.is_leader
            part.is_leader = False
            part.leader_epoch = epoch
            part.replication.become_follower(isr, pepoch)
            if was_leader or epoch_changed:
                part.wake()
            return
        new_leader = not part.is_leader
        epoch_start = None
        if new_leader or epoch_changed:
            part.leader_epoch = epoch
            epoch_start = part.log.log_end_offset
            part.log.assign_epoch_start(epoch, epoch_start)
            if new_leader:
                part.is_leader = True
                part.leader_generation += 1
        part.replication.apply_leader_image(replicas, isr, pepoch, now, new_leader=new_leader,
                                            epoch_start=epoch_start)
        self._maybe_advance_hw(part)
        if new_leader or epoch_changed:
            part.wake()

    def _open_log(self, topic: str, index: int, topic_id, config: LogConfig):
        """The partition's log, making sure it belongs to this incarnation of the topic:
        a log left by a deleted topic of the same name (e.g. deleted while the broker was
        down) is removed, as Kafka does with its ``partition.metadata`` file."""
        logs = self.broker.logs
        log = logs.get_or_create(topic, index, config)
        found = read_partition_metadata(log.dir)
        if found is not None and found != topic_id:
            logs.delete_log(topic, index)
            log = logs.get_or_create(topic, index, config)
            found = None
        if found is None:
            with logs.failures.guard(log.log_dir, f"write partition.metadata of {topic}-{index}"):
                write_partition_metadata(log.dir, topic_id)
        return log

    def get_partition(self, topic: str, index: int) -> Partition:
        """The led partition, or ReplicaError(UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER…)."""
        part = self._partitions.get((topic, index))
        if part is not None and part.is_leader:
            return part
        if (topic, index) in self._offline:
            raise ReplicaError(ErrorCode.KAFKA_STORAGE_ERROR)
        if part is not None or (topic, index) in self._pending:
            raise ReplicaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        t = self._image.topics.get(topic) if self._image is not None else None
        pimg = t.partitions.get(index) if t is not None else None
        if pimg is not None and pimg.leader != self.node_id:
            raise ReplicaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        raise ReplicaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    @property
    def image(self):
        """The metadata image last applied (None before the first)."""
        return self._image

    def current_leader(self, topic: str, index: int) -> tuple[int, int]:
        """(leader id, leader epoch) as Kafka's getCurrentLeader answers KIP-951's
        ``current_leader``: the local replica's view, else the image's, else (-1, -1)."""
        part = self._partitions.get((topic, index))
        if part is not None:
            return part.leader, part.leader_epoch
        t = self._image.topics.get(topic) if self._image is not None else None
        pimg = t.partitions.get(index) if t is not None else None
        if pimg is None:
            return -1, -1
        return pimg.leader, pimg.leader_epoch

    def get_replica(self, topic: str, index: int) -> Partition | None:
        """The local replica (leader or not), or None."""
        return self._partitions.get((topic, index))

    def move_replica_dir(self, topic: str, index: int, dest) -> None:
        """AlterReplicaLogDirs: move the local replica's log to the log directory ``dest``
        (``LogManager.move_log``), let the replica use the moved log from now on, and tell
        the controller its new directory (Kafka assigns it before promoting its future
        replica; kbroker's copy is done before the request is answered, so it reports after)."""
        part = self._partitions.get((topic, index))
        try:
            moved = self.broker.logs.move_log(topic, index, dest)
        except KafkaStorageError as exc:
            if exc.log_dir is not None and part is not None \
                    and self.broker.logs.get(topic, index) is None:
                # the only copy is in the failed destination now (LogManager.move_log)
                self._partitions.pop((topic, index), None)
                self._offline[(topic, index)] = (exc.log_dir, part.topic_id)
                part.is_leader = False
                part.wake()
                self._update_fetchers()
            raise
        if part is not None:
            part.log = moved
            t = self._image.topics.get(topic) if self._image is not None else None
            pimg = t.partitions.get(index) if t is not None else None
            if pimg is not None:
                part.dir_checked = None
                self._report_dir(part, pimg, "AlterReplicaLogDirs")

    def _report_dir(self, part: Partition, pimg, reason: str) -> None:
        """Kafka's ``maybeUpdateTopicAssignment``: when the image names another log dir than
        the one holding this replica, the broker's assignments manager tells the controller
        (``kbroker/metadata/assignments.py``; it ignores what it has queued already). As
        Kafka compares only partitions a metadata delta changed, a replica is compared again
        only when its partition image changed or its log moved."""
        if part.dir_checked is pimg:
            return
        part.dir_checked = pimg
        reporter = getattr(self.broker, "dir_assignments", None)
        if reporter is not None:
            reporter.maybe_report(part.topic_id, part.index, part.log.log_dir, pimg, reason)

    def partitions(self) -> list[Partition]:
        """Partitions led here."""
        return [p for p in self._partitions.values() if p.is_leader]

    def all_replicas(self) -> list[Partition]:
        return list(self._partitions.values())

    # ---------------------------------------------------------------- leader: replication state

    def _maybe_advance_hw(self, part: Partition) -> bool:
        """Kafka's maybeIncrementLeaderHW (:meth:`ReplicationState.high_watermark_after`):
        write the new high watermark to the log and wake parked fetches and produces."""
        if not part.is_leader:
            return False
        log_ = part.log
        min_isr = None
        image = self._image
        if image is not self._elr_image:
            # once per image, not per append: is ELR on (its finalized feature level)
            self._elr_image = image
            self._elr_on = elr.enabled(getattr(image, "features", None) or {})
        repl = part.replication
        if self._elr_on:
            isr_size = len(repl.isr)
            # an ISR of min.insync.replicas members is never below the effective minimum
            # (which the replication factor only lowers): no call on every append
            if isr_size == 0 or isr_size < part.config.min_insync_replicas:
                min_isr = elr.effective_min_isr(part.config.min_insync_replicas,
                                                len(repl.followers) + 1)
        new_hw = repl.high_watermark_after(log_.log_end_offset, log_.high_watermark, min_isr)
        if new_hw is None:
            return False
        log_.high_watermark = new_hw
        if part.waiters:
            part.wake_high_watermark()
        return True

    def update_follower_fetch_state(self, part: Partition, follower: FollowerState,
                                    fetch_offset: int, follower_log_start: int,
                                    leader_leo: int, now: int) -> None:
        """Kafka's updateFollowerFetchState: record the follower's LEO (its fetch offset) and
        ``lastCaughtUpTime``, then maybe expand the ISR and advance the HW."""
        start_changed, moved = part.replication.record_fetch(
            follower, fetch_offset, follower_log_start, leader_leo, now)
        if start_changed:
            part.wake()         # a DeleteRecords waiting for the low watermark
        self._maybe_expand_isr(part, follower)
        if moved:
            self._maybe_advance_hw(part)

    def _broker_eligible(self, broker_id: int) -> bool:
        """Kafka's isReplicaIsrEligible: a registered broker that is neither fenced nor in
        controlled shutdown."""
        brokers = getattr(self._image, "brokers", None)
        if not brokers:
            return True
        b = brokers.get(broker_id)
        return (b is not None and not getattr(b, "fenced", False)
                and not getattr(b, "in_controlled_shutdown", False))

    def _registration(self, broker_id: int):
        """What the image says of a broker's registration, and the image's offset: any change
        (a new broker epoch, fenced or unfenced, entering controlled shutdown) may change the
        controller's mind. The offset makes a state that comes back (fenced, then unfenced
        again under the same broker epoch) a new one: without it a refusal seen while the
        leader's image still had the broker unfenced held through its real unfencing."""
        b = (getattr(self._image, "brokers", None) or {}).get(broker_id)
        if b is None:
            return None
        return (getattr(self._image, "offset", -1), getattr(b, "broker_epoch", None),
                getattr(b, "fenced", False), getattr(b, "in_controlled_shutdown", False))

    def _maybe_expand_isr(self, part: Partition, follower: FollowerState) -> None:
        new_isr = part.replication.isr_expansion(follower, part.log.high_watermark,
                                                 self._eligible, self._registration_of)
        if new_isr is not None:
            self.stats["isr_expands"] += 1
            self._submit_alter(part, new_isr)

    def maybe_shrink_isr(self, now: int | None = None) -> None:
        """Remove followers not caught up for ``replica.lag.time.max.ms`` from the ISR of
        every led partition (Kafka's maybeShrinkIsr; one AlterPartition in flight each)."""
        now = self.lag_clock_ms() if now is None else now
        lag = int(self._cfg("replica.lag.time.max.ms", 30_000))
        for part in list(self._partitions.values()):
            if not part.is_leader:
                continue
            new_isr = part.replication.isr_shrink(part.log.log_end_offset, now, lag)
            if new_isr is not None:
                self.stats["isr_shrinks"] += 1
                self._submit_alter(part, new_isr)

    def _submit_alter(self, part: Partition, new_isr: tuple) -> None:
        pending = part.replication.begin_alter(new_isr, self._registration)
        job = (part, pending, part.leader_epoch, part.partition_epoch,
               part.leader_generation)
        if self._nursery is not None:
            self._nursery.start_soon(self._alter_partition, *job)
        else:
            self._alters.append(job)

    async def _alter_partition(self, part: Partition, new_isr: tuple, leader_epoch: int,
                               partition_epoch: int, generation: int) -> None:
        """One AlterPartition round trip; the answer (or the next image) settles the ISR."""
        controller = getattr(self.broker, "controller", None)
        lifecycle = getattr(self.broker, "lifecycle", None)
        broker_epoch = getattr(lifecycle, "broker_epoch", -1) if lifecycle is not None else -1
        result = None
        try:
            if controller is not None:
                result = await controller.alter_partition(
                    broker_epoch, part.topic_id, part.index, leader_epoch, partition_epoch,
                    list(new_isr))
        except Exception as exc:  # noqa: BLE001 - an unreachable controller: wait for the image
            log.warning("AlterPartition for %s-%d failed: %r", part.topic, part.index, exc)
        current = self._partitions.get((part.topic, part.index))
        if current is not part or not part.is_leader or part.leader_generation != generation \
                or part.leader_epoch != leader_epoch or part.pending_isr != tuple(new_isr):
            return      # superseded by an image
        code = getattr(result, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR) if result is not None \
            else ErrorCode.REQUEST_TIMED_OUT
        if code:
            self.stats["alter_partition_errors"] += 1
            part.replication.alter_refused(new_isr, code)
            log.info("AlterPartition for %s-%d (isr %s) answered %s", part.topic, part.index,
                     new_isr, ErrorCode(code).name if code in ErrorCode._value2member_map_ else code)
            return
        part.replication.alter_committed(part.leader_epoch, result.leader_epoch, result.isr,
                                         result.partition_epoch, self.lag_clock_ms())
        self._maybe_advance_hw(part)
        part.wake()

    async def wait_replicated(self, topic: str, index: int, required_offset: int,
                              timeout_ms: int) -> int:
        """Kafka's DelayedProduce for one partition (:func:`delayed.wait_replicated`)."""
        return await delayed.wait_replicated(self.get_replica, topic, index,
                                             required_offset, timeout_ms, self.stats)

    def check_replicated(self, topic: str, index: int, required_offset: int) -> int | None:
        """The answer :meth:`wait_replicated` would give right now, or None to wait."""
        part = self._partitions.get((topic, index))
        if part is None or not part.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return delayed.replicated(part, required_offset)

    # ---------------------------------------------------------------- produce

    def append(self, topic: str, index: int, records, *, required_acks: int = -1,
               now_ms: int | None = None, allow_internal: bool = False,
               origin: str = "client") -> AppendResult:
        """Validate one partition's produce data and append it (Produce v3+ rules,
        :mod:`kbroker.replica.append`).

        ``origin`` is Kafka's AppendOrigin: ``"client"`` (Produce: full producer-state
        checks) or ``"coordinator"`` (group/transaction coordinators: producer epoch only).
        Raises ReplicaError with the Kafka error code for the partition."""
        try:
            if topic in INTERNAL_TOPICS and not allow_internal:
                raise ReplicaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                   f"cannot append to internal topic {topic}")
            part = self._partitions.get((topic, index))
            if part is None or not part.is_leader:
                part = self.get_partition(topic, index)     # raises the answer's error
            if now_ms is None:
                now_ms = self.broker.clock.now_ms()
            result, appended = append_path.append_records(
                part, records, required_acks=required_acks, now_ms=now_ms, origin=origin,
                txn_verifier=self.txn_verifier)
        except Exception as exc:
            # a storage error was reported by the log (kbroker.log.failure): it answers 56
            err = append_path.as_replica_error(exc)
            if err is None:
                raise
        else:
            if appended is None:
                self.stats["duplicates"] += 1
                return result
            if self._appended(part, 1, appended):
                result.woke_readers = True
            if required_acks == -1:
                # what check_replicated answers now (a single replica: replicated at once)
                result.replicated = delayed.replicated(part, result.last_offset + 1)
            return result
        self.stats["append_errors"] += 1
        if err.log_start_offset is None:
            # Kafka's appendToLocalLog: these answer without a log start offset; every other
            # failure carries the partition's (processFailedRecord)
            part = self._partitions.get((topic, index))
            err.log_start_offset = (-1 if err.error_code in append_path.NO_LOG_START
                                    or part is None else part.log_start_offset)
        raise err

    def append_run(self, topic: str, index: int, batches: list, *,
                   now_ms: int) -> RunResult | None:
        """One acks=1 append of several Produce requests' batches for a partition led here
        (:func:`append_path.append_run`): one write, one high watermark step, one wake-up of
        the partition's parked fetches. ``None``: not such a run (an internal topic, a
        partition not led here, a batch the one-by-one path must see); nothing was appended
        and the caller appends them one by one."""
        if topic in INTERNAL_TOPICS:
            return None
        part = self._partitions.get((topic, index))
        if part is None or not part.is_leader:
            return None
        result = append_path.append_run(part, batches, now_ms=now_ms)
        if result is None:
            return None
        if self._appended(part, len(batches), sum(map(len, batches))):
            result.woke_readers = True
        self.stats["append_runs"] += 1
        return result

    def _appended(self, part: Partition, appends: int, size: int) -> bool:
        """After a leader's append: wake what waits for the new data and count it; True
        when the high watermark moved and parked readers were waiting for it."""
        if part.log_end_waiters:
            part.wake_log_end()         # parked follower fetches read the new data
        # ... and the rest wait for the high watermark
        readers = bool(part.waiters)
        woke = self._maybe_advance_hw(part) and readers
        self.stats["appends"] += appends
        self.stats["appended_bytes"] += size
        return woke

    def write_txn_marker(self, topic: str, index: int, *, producer_id: int, producer_epoch: int,
                         commit: bool, coordinator_epoch: int, now_ms: int | None = None) -> int:
        """Append a commit/abort marker (WriteTxnMarkers' per-partition work); returns its
        offset. Raises ReplicaError (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED,
        UNKNOWN_TOPIC_OR_PARTITION...)."""
        part = self.get_partition(topic, index)
        if now_ms is None:
            now_ms = self.broker.clock.now_ms()
        offset = append_path.append_marker(
            part, producer_id=producer_id, producer_epoch=producer_epoch, commit=commit,
            coordinator_epoch=coordinator_epoch, now_ms=now_ms)
        part.wake()
        self._maybe_advance_hw(part)
        self.stats["markers"] += 1
        return offset

    def describe_producers(self, topic: str, index: int) -> list:
        """DescribeProducers: the producer state entries of a led partition."""
        part = self.get_partition(topic, index)
        return list(part.log.producer_state.active_producers())

    # ---------------------------------------------------------------- fetch

    def read_partition(self, spec: FetchSpec, max_bytes: int, *, isolation_level: int,
                       min_one: bool) -> FetchResult:
        """Read one partition for a consumer without waiting; errors are returned, not
        raised."""
        try:
            part = self.get_partition(spec.topic, spec.partition)
            check_leader_epoch(part, spec.current_leader_epoch)
        except ReplicaError as exc:
            return FetchResult(spec.topic, spec.partition, error_code=exc.error_code)
        return read_path.read_for_consumer(part, spec, max_bytes,
                                           isolation_level=isolation_level, min_one=min_one)

    def read_follower_partition(self, spec: FetchSpec, replica_id: int, max_bytes: int, *,
                                min_one: bool, now: int | None = None,
                                update_fetch_state: bool = True) -> FetchResult:
        """The leader's side of a follower fetch (Kafka's Partition.fetchRecords for a
        follower): KIP-320 epoch check, the replica must be assigned, divergence check with
        ``last_fetched_epoch``, read up to the log end offset with no isolation, then record
        the follower's fetch state (LEO, lastCaughtUpTime), maybe expand the ISR and advance
        the HW. The state is recorded only with ``update_fetch_state``: the read made when
        the request arrives, not the re-reads of a parked fetch (:meth:`fetch`). Errors are
        returned, not raised."""
        try:
            part = self.get_partition(spec.topic, spec.partition)
            check_leader_epoch(part, spec.current_leader_epoch)
        except ReplicaError as exc:
            return FetchResult(spec.topic, spec.partition, error_code=exc.error_code)
        follower = part.replication.followers.get(replica_id)
        if follower is None:
            # KRaft: a replica not (yet) in the assignment retries on UNKNOWN_LEADER_EPOCH
            code = (ErrorCode.UNKNOWN_LEADER_EPOCH if spec.current_leader_epoch >= 0
                    else ErrorCode.NOT_LEADER_OR_FOLLOWER)
            return FetchResult(spec.topic, spec.partition, error_code=code)
        res, leo = read_path.read_for_follower(part, spec, max_bytes, min_one=min_one)
        if leo is None:
            return res
        if update_fetch_state:
            self.stats["follower_fetches"] += 1
            now = self.lag_clock_ms() if now is None else now
            self.update_follower_fetch_state(part, follower, spec.fetch_offset,
                                             spec.log_start_offset, leo, now)
        res.high_watermark = part.log.high_watermark
        return res

    def read_all(self, specs: list[FetchSpec], max_bytes: int, *,
                 isolation_level: int, replica_id: int = -1,
                 update_fetch_state: bool = True) -> list[FetchResult]:
        """Kafka's ``readFromLog``: partitions in request order share ``max_bytes``; the first
        partition that has data returns at least one whole batch. ``replica_id`` >= 0 is a
        follower's fetch, whose state is recorded only with ``update_fetch_state``."""
        results = []
        remaining = max(0, max_bytes)
        min_one = True
        now = self.lag_clock_ms() if replica_id >= 0 and update_fetch_state else None
        for spec in specs:
            if replica_id >= 0:
                r = self.read_follower_partition(spec, replica_id, remaining, min_one=min_one,
                                                 now=now, update_fetch_state=update_fetch_state)
            else:
                r = self.read_partition(spec, remaining, isolation_level=isolation_level,
                                        min_one=min_one)
            if r.size:
                min_one = False
                remaining = max(0, remaining - r.size)
            results.append(r)
        return results

    async def fetch(self, specs: list[FetchSpec], *, max_bytes: int, min_bytes: int,
                    max_wait_ms: int, isolation_level: int = READ_UNCOMMITTED,
                    replica_id: int = -1) -> list[FetchResult]:
        """Read, and when fewer than ``min_bytes`` are available park until data arrives on
        one of the partitions or ``max_wait_ms`` passes (Kafka's DelayedFetch,
        :func:`delayed.fetch`). Followers (``replica_id`` >= 0) long-poll the same way and
        are woken by appends; their fetch counts (position, lastCaughtUpTime, ISR expansion)
        as of its arrival only: the re-reads while it waits and at its deadline record
        nothing, as Kafka's reads from the purgatory, so a fetch parked before the follower
        left the ISR cannot bring it back after it stopped fetching the partition."""
        self.stats["fetches"] += 1
        return await delayed.fetch(
            lambda first: self.read_all(specs, max_bytes, isolation_level=isolation_level,
                                        replica_id=replica_id, update_fetch_state=first),
            self.get_replica, specs, min_bytes=min_bytes, max_wait_ms=max_wait_ms,
            stats=self.stats, follower=replica_id >= 0, purgatory=self.purgatory)

    # ---------------------------------------------------------------- offsets

    def list_offset(self, topic: str, index: int, timestamp: int, *,
                    isolation_level: int = READ_UNCOMMITTED,
                    current_leader_epoch: int = -1,
                    replica_id: int = -1) -> tuple[int, int, int]:
        """(timestamp, offset, leader_epoch) for ListOffsets (:func:`read.list_offset`);
        (-1, -1, -1) when no record qualifies. Raises ReplicaError."""
        part = self.get_partition(topic, index)
        check_leader_epoch(part, current_leader_epoch)
        return read_path.list_offset(part, timestamp, isolation_level=isolation_level,
                                     replica_id=replica_id)

    def end_offset_for_epoch(self, topic: str, index: int, leader_epoch: int,
                             current_leader_epoch: int = -1) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset), (-1, -1) for an unknown epoch."""
        part = self.get_partition(topic, index)
        check_leader_epoch(part, current_leader_epoch)
        return part.end_offset_for_epoch(leader_epoch)

    # ---------------------------------------------------------------- delete records

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        """Move the log start offset up to ``offset`` (-1: the high watermark); returns the
        low watermark (:meth:`low_watermark`: the log start offset with one replica)."""
        return self.delete_records_on_leader(topic, index, offset)[1]

    def delete_records_on_leader(self, topic: str, index: int, offset: int) -> tuple[int, int]:
        """Kafka's Partition.deleteRecordsOnLeader: (requested offset, low watermark); the
        requested offset is what :meth:`wait_low_watermark` waits for. Raises ReplicaError."""
        part = self.get_partition(topic, index)
        if not part.config.delete:
            raise ReplicaError(ErrorCode.POLICY_VIOLATION,
                               f"records of compacted topic {topic} cannot be deleted")
        hw = part.high_watermark
        if offset == -1:
            offset = hw
        if offset < 0 or offset > hw:
            raise ReplicaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                               f"offset {offset} is outside [0, {hw}]")
        if offset > part.log_start_offset:
            try:
                part.log.delete_records_before(offset)
            except Exception as exc:
                if not hasattr(exc, "error_code"):
                    raise
                raise error_from(exc) from None
            part.wake()
        return offset, self._low_watermark(part)

    def _low_watermark(self, part: Partition) -> int:
        """Kafka's lowWatermarkIfLeader (:meth:`ReplicationState.low_watermark`): followers
        on live brokers count, as each last reported its log start offset (-1 until it has
        fetched in this leadership)."""
        return part.replication.low_watermark(part.log_start_offset, self._broker_eligible)

    async def wait_low_watermark(self, topic: str, index: int, required_offset: int,
                                 timeout_ms: int) -> tuple[int, int | None]:
        """Kafka's DelayedDeleteRecords for one partition (:func:`delayed.wait_low_watermark`)."""
        return await delayed.wait_low_watermark(self.get_replica, topic, index,
                                                required_offset, timeout_ms,
                                                self._low_watermark, self.stats)

    # ---------------------------------------------------------------- log dirs

    def describe_log_dirs(self, wanted: dict[str, set[int] | None] | None):
        """DescribeLogDirs over every local replica (:func:`log_dirs.describe_log_dirs`)."""
        return describe_log_dirs(self._partitions.values(), self.log_dirs(), wanted,
                                 offline=self.offline_log_dirs())

    def offline_log_dirs(self) -> list[str]:
        """The log directories taken offline since start, absolute."""
        return sorted(os.path.abspath(str(d))
                      for d in getattr(self.broker.logs, "offline_dirs", ()) or ())

    def offline_replicas(self) -> dict[tuple[str, int], tuple[Path, Any]]:
        """(topic, partition) -> (log dir, topic id) of the replicas lost with their dir."""
        return dict(self._offline)

    def take_log_dir_offline(self, log_dir) -> list[tuple[str, int]]:
        """Kafka's handleLogDirFailure: the logs of ``log_dir`` are closed and dropped, their
        replicas stop (no fetcher, no leadership here) and answer KAFKA_STORAGE_ERROR until the
        broker restarts; the broker's heartbeats report the directory (log_dir_failure)."""
        log_dir = Path(log_dir)
        dropped = self.broker.logs.mark_offline(log_dir)
        for key in dropped:
            part = self._partitions.pop(key, None)
            t = self._image.topics.get(key[0]) if self._image is not None else None
            tid = part.topic_id if part is not None else getattr(t, "topic_id", None)
            self._offline[key] = (log_dir, tid)
            if part is not None:
                part.is_leader = False
                part.wake()
        self._update_fetchers()
        notify = getattr(self.broker, "log_dir_offline", None)
        if notify is not None:
            notify(log_dir)
        return dropped

    def log_dirs(self) -> list[str]:
        return configured_log_dirs(self.broker.logs)

    _size_of = staticmethod(size_of)

    # ---------------------------------------------------------------- statistics

    def statistics(self) -> dict:
        parked = sum(len(p.waiters) + len(p.log_end_waiters) for p in self._partitions.values())
        return {
            **self.stats,
            "partitions": len(self._partitions),
            "pending_partitions": len(self._pending),
            "led_partitions": sum(1 for p in self._partitions.values() if p.is_leader),
            "fetchers": self.fetchers.statistics(),
            "parked_fetch_waiters": parked,
            "log_end_offsets": {f"{p.topic}-{p.index}": p.log_end_offset
                                for p in self._partitions.values()},
        }
