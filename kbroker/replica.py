"""The data plane: partition replicas on this node, and the rules for writing, reading and
replicating them.

``ReplicaManager`` owns one :class:`Partition` per topic-partition the metadata image gives a
replica on this node (leader, follower, or leaderless). It is the single place that knows Kafka's produce and fetch rules
(``ReplicaManager``/``Partition``/``UnifiedLog.analyzeAndValidateRecords`` in Kafka); the API
modules (produce, fetch, list_offsets, offset_for_leader_epoch, delete_records,
describe_log_dirs) only translate between the wire and these methods.

Rules it keeps:

- Produce validates batch headers and CRC32C only (the log's append does the CRC, size and
  compacted-topic key checks once); single records are decoded only when a rule needs them
  (keys on compacted topics, naming the offending records of a rejected timestamp). Offsets and the partition leader epoch are patched into the header by the
  log; LogAppendTime topics get max timestamp + the timestamp-type bit (new CRC).
- Replication (Kafka's Partition/ReplicaManager): clients read and write only the leader
  (NOT_LEADER_OR_FOLLOWER elsewhere). Followers fetch from it (kbroker/replica_fetcher.py);
  the leader answers them up to its log end offset, records each follower's log end offset
  and ``lastCaughtUpTime``, and sets the high watermark to the smallest log end offset over
  the maximal ISR (committed ISR + a pending expansion), never backwards. Caught-up
  followers join the ISR and followers lagging more than ``replica.lag.time.max.ms`` leave
  it, through AlterPartition to the controller (one in flight per partition; an error drops
  the change and the next image decides). A follower's ``last_fetched_epoch`` that diverges
  from the leader's epoch cache is answered with ``diverging_epoch`` and no data.
- ``acks=-1`` checks ``min.insync.replicas`` against the committed ISR before appending and
  then waits until the high watermark passes the batch (:meth:`wait_replicated`, Kafka's
  DelayedProduce). With one replica the ISR is the leader alone, so the high watermark
  follows the log end offset after every append and nothing ever waits.
- Idempotence and transactions (KIP-98): a batch with a producer id is checked against the
  partition's producer state (``log.producer_state``, kbroker/txn/producer_state.py)
  before it is appended: a duplicate of one of the producer's last five batches is
  answered with its original offsets and not stored again; a sequence gap is
  ``OUT_OF_ORDER_SEQUENCE_NUMBER``, an old epoch ``INVALID_PRODUCER_EPOCH``. Clients may not
  write control batches. The first transactional batch of a producer on a partition is
  checked with the transaction coordinator (``txn_verifier``, KIP-890 part 1's
  verification, done in memory on one node): a partition not in the producer's ongoing
  transaction is ``INVALID_TXN_STATE``. Markers come from :meth:`write_txn_marker`.
- The last stable offset is the log's: the first offset of the oldest open transaction,
  capped at the high watermark (``lso_hook`` may lower it further). read_committed fetches
  stop there and carry the aborted transactions of the data they return (``.txnindex``).
- Long-poll fetches park on the partitions they read (:meth:`Partition.wake` sets every
  parked waiter); they never block other connections and wake as soon as data arrives, the
  partition changes (delete records, deletion, epoch change) or the deadline passes.
- One leader epoch per partition, taken from the image's ``PartitionImage.leader_epoch``: the
  same number goes to Metadata (core), into stored batches (here) and into
  OffsetForLeaderEpoch answers (here). A new leader (or epoch) records where its epoch
  starts in the log's persisted leader-epoch cache (``assign_epoch_start``), so older epochs
  answer with the offset where the next epoch began, across restarts and on every replica.

A topic ``compression.type`` other than ``producer`` makes produce rebuild the batch with that
codec (Kafka's rule; the one produce path that decodes records).

DeleteRecords moves the leader's log start offset and then waits until every live replica
has reported a log start offset at least as high (Kafka's DelayedDeleteRecords and low
watermark, :meth:`ReplicaManager.wait_low_watermark`).

Not implemented here: fetch sessions (session id 0: every response is a full one), fetching
from followers (KIP-392), unclean leader election.
"""
from __future__ import annotations

import base64
import itertools
import logging
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import trio

from kbroker.log.config import LogConfig
from kbroker.wire import records as rec
from kbroker.wire.error_codes import ErrorCode
from kbroker.wire.errors import CorruptRecord, InvalidRecord

log = logging.getLogger("kbroker.replica")

LONG_MAX = (1 << 63) - 1
# Kafka lets only the admin client id write these (Topic.isInternal).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

# ListOffsets special timestamps (Kafka's ListOffsetsRequest constants).
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5

READ_UNCOMMITTED = 0
READ_COMMITTED = 1

# Topic compression.type → batch codec; "producer" keeps what the producer sent.
_CODECS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

# Produce errors Kafka answers with log_start_offset -1 (appendToLocalLog's first catch, and
# the internal-topic check before it); every other append error carries the partition's.
_NO_LOG_START = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                           ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
                           ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR,
                           ErrorCode.INVALID_TOPIC_EXCEPTION})

# Timestamp window defaults (Kafka 4: before = unlimited, after = one hour, KIP-937/KIP-1030).
_TS_BEFORE_DEFAULT = LONG_MAX
_TS_AFTER_DEFAULT = 3_600_000


class ReplicaError(Exception):
    """A per-partition failure with the Kafka error code to answer with.

    ``record_errors`` lists ``(batch_index, message)`` for Produce v8+ (KIP-467); with
    record errors ``message`` is the answer's ``error_message`` (Kafka's
    RecordValidationException), otherwise it is for logs only. ``log_start_offset`` is what
    a Produce answer carries (None: not known yet, :meth:`ReplicaManager.append` fills it in
    as Kafka does)."""

    def __init__(self, error_code: int, message: str | None = None,
                 record_errors: Iterable[tuple[int, str | None]] = (),
                 log_start_offset: int | None = None):
        super().__init__(message or ErrorCode(error_code).name)
        self.error_code = int(error_code)
        self.message = message
        self.record_errors = list(record_errors)
        self.log_start_offset = log_start_offset


def _java_long(v: int) -> int:
    """``v`` as Java's 64-bit arithmetic leaves it (Kafka's messages print wrapped bounds)."""
    return (v + (1 << 63)) % (1 << 64) - (1 << 63)


def _error_from(exc: Exception) -> ReplicaError:
    """Map a log/wire exception that carries ``error_code`` to a ReplicaError."""
    if isinstance(exc, ReplicaError):
        return exc
    code = getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR)
    return ReplicaError(code, str(exc) or None)


def _out_of_range(res: "FetchResult") -> "FetchResult":
    """Kafka answers a fetch outside [log start, log end] with OFFSET_OUT_OF_RANGE and
    unknown (-1) watermarks, as for every read error (``createLogReadResult``): clients ask
    ListOffsets where to go next."""
    res.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
    res.high_watermark = res.last_stable_offset = res.log_start_offset = -1
    return res


# --------------------------------------------------------------------------- partition.metadata

PARTITION_METADATA = "partition.metadata"


def _uuid_text(topic_id) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


def read_partition_metadata(directory) -> uuid.UUID | None:
    """The topic id recorded in a partition directory (Kafka's ``partition.metadata``)."""
    try:
        text = (Path(directory) / PARTITION_METADATA).read_text()
    except (FileNotFoundError, NotADirectoryError):
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            raw = value.strip()
            try:
                return uuid.UUID(bytes=base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
            except ValueError:
                return None
    return None


def write_partition_metadata(directory, topic_id) -> None:
    """Write the file atomically (temp file + rename) but without fsync: its content is
    derived from the metadata log, and a file lost or torn by a crash reads as "no topic id"
    and is written again when the log is next opened. An fsync per partition made creating
    10,000 partitions take minutes on a disk busy with write-back."""
    path = Path(directory) / PARTITION_METADATA
    tmp = path.with_name(PARTITION_METADATA + ".tmp")
    with open(tmp, "w") as f:
        f.write(f"version: 0\ntopic_id: {_uuid_text(topic_id)}\n")
    os.replace(tmp, path)


# --------------------------------------------------------------------------- results

@dataclass
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time_ms: int      # -1 for CreateTime topics
    log_start_offset: int


@dataclass
class FetchSpec:
    """One partition of a fetch request. ``last_fetched_epoch`` and ``log_start_offset``
    are only sent by followers (Fetch v12 / v5+)."""

    topic: str
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1


@dataclass
class FetchResult:
    topic: str
    partition: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: Any = None                         # FileRegion or None
    aborted_transactions: list | None = None    # [] under read_committed, else None
    leader_epoch: int = -1
    diverging_epoch: tuple[int, int] | None = None   # (epoch, end offset), follower fetches

    @property
    def size(self) -> int:
        return self.records.length if self.records is not None else 0


# --------------------------------------------------------------------------- partition

@dataclass
class FollowerState:
    """The leader's view of one other replica (Kafka's ``Replica``): its log end offset
    as of its last fetch (-1 = not fetched yet in this leadership) and the
    ``lastCaughtUpTime`` that decides ISR shrinking."""

    broker_id: int
    log_end_offset: int = -1
    log_start_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = 0


@dataclass
class Partition:
    """One partition this node holds a replica of: leader, follower, or leaderless.

    Invariants: ``high_watermark <= log_end_offset``; ``last_stable_offset <=
    high_watermark``; on the leader the high watermark never goes down and is at most the
    smallest log end offset over the maximal ISR (committed ISR + a pending expansion).
    ``leader_generation`` grows each time this node becomes leader, so a waiter can tell
    that leadership was lost in between even if it came back. Waiters are trio Events owned
    by parked fetches and produces; ``wake`` sets and forgets all of them (each re-registers
    if it keeps waiting).
    """

    topic: str
    index: int
    topic_id: Any
    log: Any                                   # kbroker.log PartitionLog
    leader_epoch: int
    config: LogConfig
    props: dict                                # effective topic-level properties (strings)
    isr: tuple = ()                            # committed ISR (image or AlterPartition answer)
    leader: int = -1                           # leader id from the image
    replicas: tuple = ()
    partition_epoch: int = 0
    is_leader: bool = False
    leader_generation: int = 0
    leader_epoch_start: int = -1               # LEO when this leader epoch began here
    followers: dict = field(default_factory=dict)      # broker id -> FollowerState
    pending_isr: tuple | None = None           # ISR proposed by the AlterPartition in flight
    # broker id -> its registration state when the controller last refused to add it
    # (INELIGIBLE_REPLICA): not asked again until the image shows that state change
    expand_refused: dict = field(default_factory=dict)
    waiters: set = field(default_factory=set)
    lso_hook: Callable | None = None

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        hw = self.log.last_stable_offset
        if self.lso_hook is not None:
            first_unstable = self.lso_hook(self)
            if first_unstable is not None:
                return min(hw, first_unstable)
        return hw

    @property
    def maximal_isr(self) -> tuple:
        """Kafka's maximal ISR: a pending expansion already counts for the high watermark
        (stricter); a pending shrink does not count until committed."""
        if self.pending_isr is None:
            return self.isr
        return tuple(self.isr) + tuple(r for r in self.pending_isr if r not in self.isr)

    def wake(self) -> None:
        waiters, self.waiters = self.waiters, set()
        for ev in waiters:
            ev.set()

    async def wait_for_change(self, deadline: float) -> None:
        """Park until the next :meth:`wake` (an append, a HW or leadership change...) or
        the trio-clock ``deadline``, whichever comes first."""
        event = trio.Event()
        self.waiters.add(event)
        try:
            with trio.move_on_at(deadline):
                await event.wait()
        finally:
            self.waiters.discard(event)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """Kafka's ``LeaderEpochFileCache.endOffsetFor`` over the log's epoch cache."""
        return self.log.end_offset_for_epoch(epoch)


# --------------------------------------------------------------------------- manager

class ReplicaManager:
    """Every local replica and the produce/fetch/offset/replication rules over them.

    Metadata images are applied in order and synchronously; only the creation of new logs
    beyond ``CREATE_CHUNK`` per image is left to a task of :meth:`run` (steps of at most
    ``CREATE_CHUNK`` logs and ``CREATE_BUDGET_S``), since each costs several file creations and fsyncs and 10,000 of them
    at once would hold the event loop (and Raft's heartbeats) for tens of seconds.

    Owned by the Broker (``broker.replicas``); core calls :meth:`apply_image` after every
    metadata change. All methods run on the trio thread; appends are synchronous (no
    checkpoint inside), so concurrent requests never interleave within one append.
    :meth:`run` (in the broker's nursery) drives the follower fetchers
    (``kbroker/replica_fetcher.py``), AlterPartition calls and the ISR-shrink timer.
    """

    CREATE_CHUNK = 32            # new logs per image / per step of the creating task
    CREATE_BUDGET_S = 0.05       # ... and at most this long per step

    def __init__(self, broker):
        self.broker = broker
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._topic_ids: dict[str, Any] = {}
        self._not_led: set[tuple[str, int]] = set()
        self._pending: set[tuple[str, int]] = set()   # replicas whose log is not created yet
        self._creating = False
        self._lso_hook: Callable | None = None
        self._image = None
        self._nursery = None
        self._cancel: trio.CancelScope | None = None
        self._alters: list = []                  # AlterPartition calls waiting for run()
        self._alters_wake: trio.Event | None = None
        # (producer_id, producer_epoch, topic, partition) -> error code; installed by the
        # transaction coordinator
        self.txn_verifier: Callable[[int, int, str, int], int] | None = None
        self.stats = {"appends": 0, "appended_bytes": 0, "fetches": 0, "long_polls": 0,
                      "fetch_wakeups": 0, "append_errors": 0, "duplicates": 0,
                      "markers": 0, "follower_fetches": 0, "isr_expands": 0,
                      "isr_shrinks": 0, "alter_partition_errors": 0,
                      "delayed_produces": 0, "delayed_produce_timeouts": 0,
                      "delayed_delete_records_timeouts": 0, "deferred_log_creations": 0}
        from kbroker.replica_fetcher import ReplicaFetcherManager
        self.fetchers = ReplicaFetcherManager(self)

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
        """Follower fetchers, AlterPartition calls and the ISR-shrink timer (every
        ``replica.lag.time.max.ms`` / 2), until :meth:`close` or cancellation."""
        with trio.CancelScope() as scope:
            self._cancel = scope
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(self.fetchers.run)
                nursery.start_soon(self._isr_shrink_loop)
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
        and hand the followed partitions to the fetchers."""
        me = self.node_id
        self._image = image
        now = self.now_ms()
        wanted: dict[tuple[str, int], tuple[Any, Any]] = {}
        not_led: set[tuple[str, int]] = set()
        for name, topic in image.topics.items():
            for idx, pimg in topic.partitions.items():
                replicas = tuple(getattr(pimg, "replicas", ()) or ())
                if pimg.leader == me or me in replicas:
                    wanted[(name, idx)] = (topic, pimg)
                if pimg.leader != me:
                    not_led.add((name, idx))
        # Replicas gone (topic deleted, re-created under a new id, or moved away).
        for key, part in list(self._partitions.items()):
            entry = wanted.get(key)
            if entry is not None and entry[0].topic_id == part.topic_id:
                continue
            del self._partitions[key]
            part.is_leader = False
            part.wake()
            self.broker.logs.delete_log(key[0], key[1])
        config_cache: dict[str, tuple[dict, LogConfig]] = {}
        # New logs beyond the first CREATE_CHUNK of this image are created by a task
        # (needs run()'s nursery), in chunks, so a large change does not hold the event loop
        deferring = self._nursery is not None
        pending: set[tuple[str, int]] = set()
        created = 0
        for key, (topic, pimg) in wanted.items():
            part = self._partitions.get(key)
            if part is None and deferring and key[0] not in INTERNAL_TOPICS and (
                    key in self._pending or (created >= self.CREATE_CHUNK
                                             and self.broker.logs.get(*key) is None)):
                pending.add(key)
                continue
            cached = config_cache.get(key[0])
            if cached is None:
                props = self.effective_properties(getattr(topic, "configs", None))
                cached = config_cache[key[0]] = (props, LogConfig.from_properties(props))
            props, config = cached
            if part is None:
                created += 1
                part = self._create_partition(key, topic, pimg, props, config)
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
        self._not_led = not_led
        self._topic_ids = {name: t.topic_id for name, t in image.topics.items()}
        self._pending = pending
        self._update_fetchers()
        if pending and not self._creating:
            self._creating = True
            self._nursery.start_soon(self._create_pending)

    def _update_fetchers(self) -> None:
        me = self.node_id
        self.fetchers.update(self._image, [p for p in self._partitions.values()
                                           if not p.is_leader and p.leader >= 0 and p.leader != me])

    def _create_partition(self, key, topic, pimg, props: dict, config: LogConfig) -> Partition:
        log = self._open_log(key[0], key[1], topic.topic_id, config)
        part = Partition(topic=key[0], index=key[1], topic_id=topic.topic_id, log=log,
                         leader_epoch=pimg.leader_epoch, config=config, props=props,
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
                image, me, now = self._image, self.node_id, self.now_ms()
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
                    self._apply_partition(part, pimg, me, now)
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
            part.followers = {}
            part.pending_isr = None
            part.leader_epoch = epoch
            part.isr = isr
            part.partition_epoch = pepoch
            if was_leader or epoch_changed:
                part.wake()
            return
        new_leader = not part.is_leader
        if new_leader or epoch_changed:
            part.leader_epoch = epoch
            leo = part.log.log_end_offset
            part.log.assign_epoch_start(epoch, leo)
            part.leader_epoch_start = leo
            part.pending_isr = None
            if new_leader:
                part.is_leader = True
                part.leader_generation += 1
                part.followers = {}
            part.isr = isr
            part.partition_epoch = pepoch
        elif pepoch >= part.partition_epoch:
            # same leader epoch: take the image's ISR unless an AlterPartition answer
            # already gave us a newer one
            part.isr = isr
            part.partition_epoch = pepoch
        for rid in replicas:
            if rid != me and rid not in part.followers:
                part.followers[rid] = FollowerState(
                    rid, last_caught_up_ms=now if rid in part.isr else 0)
        for rid in list(part.followers):
            if rid not in replicas:
                del part.followers[rid]
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
            write_partition_metadata(log.dir, topic_id)
        return log

    def get_partition(self, topic: str, index: int) -> Partition:
        """The led partition, or ReplicaError(UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER…)."""
        part = self._partitions.get((topic, index))
        if part is not None and part.is_leader:
            return part
        if part is not None or (topic, index) in self._not_led or (topic, index) in self._pending:
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

    def partitions(self) -> list[Partition]:
        """Partitions led here."""
        return [p for p in self._partitions.values() if p.is_leader]

    def all_replicas(self) -> list[Partition]:
        return list(self._partitions.values())

    # ---------------------------------------------------------------- leader: replication state

    def _maybe_advance_hw(self, part: Partition) -> bool:
        """Kafka's maybeIncrementLeaderHW: HW = min LEO over the leader and the maximal ISR;
        it only ever moves forward. Wakes parked fetches and produces when it moves."""
        if not part.is_leader:
            return False
        new_hw = part.log.log_end_offset
        me = self.node_id
        for rid in part.maximal_isr:
            if rid == me:
                continue
            f = part.followers.get(rid)
            leo = f.log_end_offset if f is not None else -1
            if leo < new_hw:
                new_hw = leo
        if new_hw > part.log.high_watermark:
            part.log.high_watermark = new_hw
            part.wake()
            return True
        return False

    def update_follower_fetch_state(self, part: Partition, follower: FollowerState,
                                    fetch_offset: int, follower_log_start: int,
                                    leader_leo: int, now: int) -> None:
        """Kafka's updateFollowerFetchState: record the follower's LEO (its fetch offset) and
        ``lastCaughtUpTime``, then maybe expand the ISR and advance the HW."""
        if fetch_offset >= leader_leo:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, now)
        elif fetch_offset >= follower.last_fetch_leader_leo:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.last_fetch_leader_leo = leader_leo
        follower.last_fetch_ms = now
        if follower.log_start_offset != follower_log_start:
            follower.log_start_offset = follower_log_start
            part.wake()         # a DeleteRecords waiting for the low watermark
        moved = follower.log_end_offset != fetch_offset
        follower.log_end_offset = fetch_offset
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
        """What the image says of a broker's registration: any change (a new broker epoch,
        fenced or unfenced, entering controlled shutdown) may change the controller's mind."""
        b = (getattr(self._image, "brokers", None) or {}).get(broker_id)
        if b is None:
            return None
        return (getattr(b, "broker_epoch", None), getattr(b, "fenced", False),
                getattr(b, "in_controlled_shutdown", False))

    def _maybe_expand_isr(self, part: Partition, follower: FollowerState) -> None:
        if part.pending_isr is not None or follower.broker_id in part.isr:
            return
        leo = follower.log_end_offset
        if leo < part.log.high_watermark or part.leader_epoch_start < 0 \
                or leo < part.leader_epoch_start:
            return
        if not self._broker_eligible(follower.broker_id):
            return
        refused = part.expand_refused.get(follower.broker_id)
        if refused is not None:
            if refused == self._registration(follower.broker_id):
                return      # refused for this registration already: wait for the image
            del part.expand_refused[follower.broker_id]
        self.stats["isr_expands"] += 1
        self._submit_alter(part, tuple(part.isr) + (follower.broker_id,))

    def maybe_shrink_isr(self, now: int | None = None) -> None:
        """Remove followers not caught up for ``replica.lag.time.max.ms`` from the ISR of
        every led partition (Kafka's maybeShrinkIsr; one AlterPartition in flight each)."""
        now = self.now_ms() if now is None else now
        lag = int(self._cfg("replica.lag.time.max.ms", 30_000))
        me = self.node_id
        for part in list(self._partitions.values()):
            if not part.is_leader or part.pending_isr is not None or len(part.isr) <= 1:
                continue
            leo = part.log.log_end_offset
            out = []
            for rid in part.isr:
                if rid == me:
                    continue
                f = part.followers.get(rid)
                if f is None or (f.log_end_offset != leo and now - f.last_caught_up_ms > lag):
                    out.append(rid)
            if out:
                self.stats["isr_shrinks"] += 1
                self._submit_alter(part, tuple(r for r in part.isr if r not in out))

    def _submit_alter(self, part: Partition, new_isr: tuple) -> None:
        part.pending_isr = tuple(new_isr)
        job = (part, part.pending_isr, part.leader_epoch, part.partition_epoch,
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
        part.pending_isr = None
        code = getattr(result, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR) if result is not None \
            else ErrorCode.REQUEST_TIMED_OUT
        if code:
            self.stats["alter_partition_errors"] += 1
            if code in (ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED):
                for rid in set(new_isr) - set(part.isr):
                    part.expand_refused[rid] = self._registration(rid)
            log.info("AlterPartition for %s-%d (isr %s) answered %s", part.topic, part.index,
                     new_isr, ErrorCode(code).name if code in ErrorCode._value2member_map_ else code)
            return
        if result.leader_epoch == part.leader_epoch and result.partition_epoch > part.partition_epoch:
            part.isr = tuple(result.isr)
            part.partition_epoch = result.partition_epoch
            now = self.now_ms()
            for rid in part.isr:
                f = part.followers.get(rid)
                if f is not None and f.last_caught_up_ms == 0:
                    f.last_caught_up_ms = now
        self._maybe_advance_hw(part)
        part.wake()

    async def wait_replicated(self, topic: str, index: int, required_offset: int,
                              timeout_ms: int) -> int:
        """Kafka's DelayedProduce for one partition: wait until the HW reaches
        ``required_offset`` (last offset + 1). Returns NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND
        (ISR below min.insync.replicas at completion), NOT_LEADER_OR_FOLLOWER (leadership lost
        meanwhile) or REQUEST_TIMED_OUT."""
        part = self._partitions.get((topic, index))
        if part is None or not part.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        done = self._replicated(part, required_offset)
        if done is not None:
            return done
        generation = part.leader_generation
        self.stats["delayed_produces"] += 1
        deadline = trio.current_time() + max(0, timeout_ms) / 1000.0
        while True:
            if self._partitions.get((topic, index)) is not part or not part.is_leader \
                    or part.leader_generation != generation:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            done = self._replicated(part, required_offset)
            if done is not None:
                return done
            if trio.current_time() >= deadline:
                self.stats["delayed_produce_timeouts"] += 1
                return ErrorCode.REQUEST_TIMED_OUT
            await part.wait_for_change(deadline)

    @staticmethod
    def _replicated(part: Partition, required_offset: int) -> int | None:
        if part.log.high_watermark >= required_offset:
            if len(part.isr) < part.config.min_insync_replicas:
                return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
            return ErrorCode.NONE
        return None

    def check_replicated(self, topic: str, index: int, required_offset: int) -> int | None:
        """The answer :meth:`wait_replicated` would give right now, or None to wait."""
        part = self._partitions.get((topic, index))
        if part is None or not part.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return self._replicated(part, required_offset)

    @staticmethod
    def _check_epoch(part: Partition, current_leader_epoch: int) -> None:
        """KIP-320: a client's view of the leader epoch must match ours (-1 = no check)."""
        if current_leader_epoch < 0 or current_leader_epoch == part.leader_epoch:
            return
        if current_leader_epoch < part.leader_epoch:
            raise ReplicaError(ErrorCode.FENCED_LEADER_EPOCH)
        raise ReplicaError(ErrorCode.UNKNOWN_LEADER_EPOCH)

    # ---------------------------------------------------------------- produce

    def append(self, topic: str, index: int, records, *, required_acks: int = -1,
               now_ms: int | None = None, allow_internal: bool = False,
               origin: str = "client") -> AppendResult:
        """Validate one partition's produce data and append it (Produce v3+ rules).

        ``origin`` is Kafka's AppendOrigin: ``"client"`` (Produce: full producer-state
        checks) or ``"coordinator"`` (group/transaction coordinators: producer epoch only).
        Raises ReplicaError with the Kafka error code for the partition."""
        try:
            return self._append(topic, index, records, required_acks, now_ms, allow_internal,
                                origin)
        except ReplicaError as exc:
            err = exc
        except (CorruptRecord, InvalidRecord, rec.RecordTooLarge) as exc:
            err = ReplicaError(exc.error_code, str(exc))
        except Exception as exc:
            if not hasattr(exc, "error_code"):
                raise
            err = _error_from(exc)
        self.stats["append_errors"] += 1
        if err.log_start_offset is None:
            # Kafka's appendToLocalLog: these answer without a log start offset; every other
            # failure carries the partition's (processFailedRecord)
            part = self._partitions.get((topic, index))
            err.log_start_offset = (-1 if err.error_code in _NO_LOG_START or part is None
                                    else part.log_start_offset)
        raise err

    def _append(self, topic, index, records, required_acks, now_ms, allow_internal,
                origin="client") -> AppendResult:
        if topic in INTERNAL_TOPICS and not allow_internal:
            raise ReplicaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                               f"cannot append to internal topic {topic}")
        part = self.get_partition(topic, index)
        config = part.config
        if records is None or len(records) == 0:
            raise ReplicaError(ErrorCode.INVALID_RECORD,
                               "produce requests must carry exactly one record batch per partition",
                               log_start_offset=-1)
        # Header walk only (no CRC): the log's append checks CRC32C, sizes and keys once.
        try:
            headers = [h for _, h in rec.iter_batches(records)]
        except CorruptRecord:
            headers = None  # let the log's full validation name the problem
        if headers is not None and len(headers) > 1:
            # Kafka checks this on the request (ProduceRequest.validateRecords): no log start
            raise ReplicaError(ErrorCode.INVALID_RECORD,
                               "produce requests must carry exactly one record batch per partition",
                               log_start_offset=-1)
        if required_acks == -1 and len(part.isr) < config.min_insync_replicas:
            raise ReplicaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                               f"ISR {len(part.isr)} < min.insync.replicas {config.min_insync_replicas}")
        if now_ms is None:
            now_ms = self.broker.clock.now_ms()
        log_append_time = config.log_append_time
        if headers and headers[0].has_producer_id:
            dup = self._check_producer_state(part, headers[0], origin)
            if dup is not None:
                self.stats["duplicates"] += 1
                # Kafka answers a duplicate with the batch's stored (max) timestamp as its
                # log append time, whatever the topic's timestamp type
                return AppendResult(
                    base_offset=dup.first_offset, last_offset=dup.last_offset,
                    log_append_time_ms=dup.timestamp,
                    log_start_offset=part.log.log_start_offset)
        elif headers and headers[0].is_control and origin == "client":
            raise ReplicaError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
        if headers and not log_append_time and headers[0].size <= config.max_message_bytes:
            self._check_timestamps(part, records, headers[0], now_ms)
        target = _CODECS.get(config.compression_type)
        sent = records
        if headers and target is not None and headers[0].compression != target:
            records = self._recompress(records, headers[0], target, config)
        try:
            info = part.log.append(records, leader_epoch=part.leader_epoch,
                                   log_append_time=now_ms if log_append_time else None,
                                   now_ms=now_ms)
        except InvalidRecord:
            if headers and config.compact:
                # the log refused a keyless record: name the records as Kafka does
                self._raise_record_errors(part, sent, headers[0], now_ms, check_timestamps=False)
            raise
        part.wake()                     # parked follower fetches read the new data
        self._maybe_advance_hw(part)
        self.stats["appends"] += 1
        self.stats["appended_bytes"] += len(records)
        return AppendResult(
            base_offset=info.base_offset, last_offset=info.last_offset,
            log_append_time_ms=info.log_append_time if log_append_time else -1,
            log_start_offset=part.log.log_start_offset)

    def _check_producer_state(self, part: Partition, header, origin: str):
        """Kafka's ``analyzeAndValidateProducerState`` for one batch: the duplicate's
        metadata, or None to append; raises ReplicaError."""
        from kbroker.txn.producer_state import ProducerStateError
        client = origin == "client"
        if client:
            if header.is_control:
                raise ReplicaError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
            if header.base_sequence < 0:
                raise ReplicaError(ErrorCode.INVALID_RECORD,
                                   f"batch of producer {header.producer_id} has no sequence number")
        ps = part.log.producer_state
        try:
            dup = ps.check_append(header, client=client)
        except ProducerStateError as exc:
            raise ReplicaError(exc.error_code, exc.message) from None
        if dup is not None:
            return dup
        if client and header.is_transactional and not ps.has_ongoing(header.producer_id):
            verifier = self.txn_verifier
            code = (ErrorCode.INVALID_TXN_STATE if verifier is None else
                    verifier(header.producer_id, header.producer_epoch, part.topic, part.index))
            if code:
                raise ReplicaError(code, f"producer {header.producer_id} has no ongoing "
                                         f"transaction with {part.topic}-{part.index}")
        return None

    def write_txn_marker(self, topic: str, index: int, *, producer_id: int, producer_epoch: int,
                         commit: bool, coordinator_epoch: int, now_ms: int | None = None) -> int:
        """Append a commit/abort marker (WriteTxnMarkers' per-partition work); returns its
        offset. Raises ReplicaError (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED,
        UNKNOWN_TOPIC_OR_PARTITION...)."""
        from kbroker.txn.producer_state import ProducerStateError
        part = self.get_partition(topic, index)
        try:
            part.log.producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
        except ProducerStateError as exc:
            raise ReplicaError(exc.error_code, exc.message) from None
        if now_ms is None:
            now_ms = self.broker.clock.now_ms()
        batch = rec.build_control_batch(commit=commit, producer_id=producer_id,
                                        producer_epoch=producer_epoch, timestamp=now_ms,
                                        coordinator_epoch=coordinator_epoch)
        try:
            info = part.log.append(batch, leader_epoch=part.leader_epoch, now_ms=now_ms)
        except Exception as exc:
            if not hasattr(exc, "error_code"):
                raise
            raise _error_from(exc) from None
        part.wake()
        self._maybe_advance_hw(part)
        self.stats["markers"] += 1
        return info.base_offset

    def describe_producers(self, topic: str, index: int) -> list:
        """DescribeProducers: the producer state entries of a led partition."""
        part = self.get_partition(topic, index)
        return list(part.log.producer_state.active_producers())

    @staticmethod
    def _recompress(records, header, codec: int, config: LogConfig) -> bytes:
        """Topic ``compression.type`` other than ``producer``: rebuild the batch with the
        topic's codec, keeping offsets deltas, timestamps, headers and producer state
        (Kafka's LogValidator does the same; the only produce path that decodes records)."""
        if header.size > config.max_message_bytes:
            raise ReplicaError(ErrorCode.MESSAGE_TOO_LARGE,
                               f"batch of {header.size} bytes exceeds max.message.bytes "
                               f"{config.max_message_bytes}")
        try:
            rec.verify_crc(records, 0, header)
            decoded = rec.decode_records(records, 0, header)
        except CorruptRecord as exc:
            raise ReplicaError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
        return rec.build_batch(
            decoded, compression=codec, timestamp_type=header.timestamp_type,
            producer_id=header.producer_id, producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence, is_transactional=header.is_transactional,
            offset_deltas=[r.offset_delta for r in decoded],
            last_offset_delta=header.last_offset_delta)

    @staticmethod
    def _timestamp_window(props: dict) -> tuple[int, int]:
        """(before, after) in ms: KIP-937's before/after settings, or the older
        ``message.timestamp.difference.max.ms`` when it is set."""
        diff = props.get("message.timestamp.difference.max.ms")
        if diff is not None and int(diff) < LONG_MAX:
            return int(diff), int(diff)
        return (int(props.get("message.timestamp.before.max.ms", _TS_BEFORE_DEFAULT)),
                int(props.get("message.timestamp.after.max.ms", _TS_AFTER_DEFAULT)))

    @classmethod
    def _timestamp_bounds(cls, props: dict, now_ms: int) -> tuple[int, int]:
        """(lowest, highest) acceptable CreateTime timestamp."""
        before, after = cls._timestamp_window(props)
        lo = now_ms - before if before < LONG_MAX else -LONG_MAX
        hi = now_ms + after if after < LONG_MAX else LONG_MAX
        return lo, hi

    def _check_timestamps(self, part: Partition, records, header, now_ms: int) -> None:
        """Batch-level check (base and max timestamp); on failure the records are named
        (:meth:`_raise_record_errors`)."""
        lo, hi = self._timestamp_bounds(part.props, now_ms)
        if lo <= -LONG_MAX and hi >= LONG_MAX:
            return
        first, last = header.base_timestamp, header.max_timestamp
        if header.has_delete_horizon:
            first = last
        if lo <= first <= hi and lo <= last <= hi:
            return
        self._raise_record_errors(part, records, header, now_ms, check_timestamps=True)

    def _raise_record_errors(self, part: Partition, records, header, now_ms: int, *,
                             check_timestamps: bool) -> None:
        """Kafka's LogValidator record checks, run only once a batch-level check failed:
        decode the batch and raise INVALID_TIMESTAMP (any timestamp error) or INVALID_RECORD
        with every offending record in ``record_errors`` (a keyless record on a compacted
        topic first, else a timestamp out of the window) and Kafka's messages. Returns when
        no record is at fault."""
        tp = f"{part.topic}-{part.index}"
        before, after = self._timestamp_window(part.props)
        lo, hi = self._timestamp_bounds(part.props, now_ms)
        errors: list[tuple[int, str]] = []
        bad_timestamp = False
        try:
            rec.verify_crc(records, 0, header)  # a corrupt batch is CORRUPT_MESSAGE first
            decoded = rec.decode_records(records, 0, header)
        except CorruptRecord as exc:
            raise ReplicaError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
        for i, r in enumerate(decoded):
            if part.config.compact and r.key is None and not header.is_control:
                errors.append((i, "Compacted topic cannot accept message without key in "
                                  f"topic partition {tp}"))
            elif check_timestamps and r.timestamp != -1 and not lo <= r.timestamp <= hi:
                bad_timestamp = True
                errors.append((i, f"Timestamp {r.timestamp} of message with offset "
                                  f"{header.base_offset + r.offset_delta} is out of range. The "
                                  f"timestamp should be within [{_java_long(now_ms - before)}, "
                                  f"{_java_long(now_ms + after)}]"))
        first = header.max_timestamp if header.has_delete_horizon else header.base_timestamp
        if not errors and check_timestamps and first >= 0 and header.max_timestamp >= 0 \
                and not (lo <= first <= hi and lo <= header.max_timestamp <= hi):
            # every record is in the window but the header's timestamps are not: refuse
            # rather than store a max timestamp no record has
            bad_timestamp = True
            errors.append((0, f"Batch timestamps [{header.base_timestamp}, "
                              f"{header.max_timestamp}] do not match its records"))
        if not errors:
            return
        if bad_timestamp:
            raise ReplicaError(ErrorCode.INVALID_TIMESTAMP,
                               "One or more records have been rejected due to invalid timestamp",
                               errors)
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        raise ReplicaError(ErrorCode.INVALID_RECORD,
                           f"One or more records have been rejected due to {len(errors)} record "
                           f"errors in total, and only showing the first three errors at most: "
                           f"[{shown}]", errors)

    # ---------------------------------------------------------------- fetch

    def read_partition(self, spec: FetchSpec, max_bytes: int, *, isolation_level: int,
                       min_one: bool) -> FetchResult:
        """Read one partition without waiting; errors are returned, not raised."""
        res = FetchResult(spec.topic, spec.partition)
        try:
            part = self.get_partition(spec.topic, spec.partition)
            self._check_epoch(part, spec.current_leader_epoch)
        except ReplicaError as exc:
            res.error_code = exc.error_code
            return res
        hw = part.high_watermark
        lso = part.last_stable_offset
        res.high_watermark = hw
        res.last_stable_offset = lso
        res.log_start_offset = part.log_start_offset
        res.leader_epoch = part.leader_epoch
        res.aborted_transactions = [] if isolation_level == READ_COMMITTED else None
        offset = spec.fetch_offset
        if offset < part.log_start_offset or offset > part.log_end_offset:
            return _out_of_range(res)
        max_offset = lso if isolation_level == READ_COMMITTED else hw
        if offset >= max_offset:
            return res
        limit = max(0, min(spec.partition_max_bytes, max_bytes))
        if limit == 0 and not min_one:
            return res
        try:
            region = part.log.read(offset, limit, max_offset=max_offset)
        except Exception as exc:  # noqa: BLE001 - typed log errors carry their code
            if not hasattr(exc, "error_code"):
                raise
            res.error_code = _error_from(exc).error_code
            return res
        if region is not None and region.length > 0:
            if region.length > limit and not min_one:
                return res  # Kafka: only the first partition with data may exceed the limit
            res.records = region
            if isolation_level == READ_COMMITTED:
                # reads stay within one segment: its end bounds the data returned
                upper = min(max_offset, part.log.segment_end_offset(offset))
                res.aborted_transactions = [
                    (a.producer_id, a.first_offset)
                    for a in part.log.collect_aborted_transactions(offset, upper)]
        return res

    def read_follower_partition(self, spec: FetchSpec, replica_id: int, max_bytes: int, *,
                                min_one: bool, now: int | None = None) -> FetchResult:
        """The leader's side of a follower fetch (Kafka's Partition.fetchRecords for a
        follower): KIP-320 epoch check, the replica must be assigned, divergence check with
        ``last_fetched_epoch``, read up to the log end offset with no isolation, then record
        the follower's fetch state (LEO, lastCaughtUpTime), maybe expand the ISR and advance
        the HW. Errors are returned, not raised."""
        res = FetchResult(spec.topic, spec.partition)
        try:
            part = self.get_partition(spec.topic, spec.partition)
            self._check_epoch(part, spec.current_leader_epoch)
        except ReplicaError as exc:
            res.error_code = exc.error_code
            return res
        follower = part.followers.get(replica_id)
        if follower is None:
            # KRaft: a replica not (yet) in the assignment retries on UNKNOWN_LEADER_EPOCH
            res.error_code = (ErrorCode.UNKNOWN_LEADER_EPOCH if spec.current_leader_epoch >= 0
                              else ErrorCode.NOT_LEADER_OR_FOLLOWER)
            return res
        now = self.now_ms() if now is None else now
        log_ = part.log
        # the LEO before the read: appends during the fetch must not keep a follower out of sync
        leo = log_.log_end_offset
        res.high_watermark = log_.high_watermark
        res.last_stable_offset = part.last_stable_offset
        res.log_start_offset = log_.log_start_offset
        res.leader_epoch = part.leader_epoch
        offset = spec.fetch_offset
        if spec.last_fetched_epoch >= 0:
            epoch, end = log_.end_offset_for_epoch(spec.last_fetched_epoch)
            if epoch < 0 or end < 0 or offset < log_.log_start_offset:
                return _out_of_range(res)
            if epoch < spec.last_fetched_epoch or end < offset:
                res.diverging_epoch = (epoch, end)
                return res
        if offset < log_.log_start_offset or offset > leo:
            return _out_of_range(res)
        limit = max(0, min(spec.partition_max_bytes, max_bytes))
        if offset < leo and (limit > 0 or min_one):
            try:
                region = log_.read(offset, limit)
            except Exception as exc:  # noqa: BLE001 - typed log errors carry their code
                if not hasattr(exc, "error_code"):
                    raise
                res.error_code = _error_from(exc).error_code
                return res
            if region is not None and region.length > 0 and (region.length <= limit or min_one):
                res.records = region
        self.stats["follower_fetches"] += 1
        self.update_follower_fetch_state(part, follower, offset, spec.log_start_offset, leo, now)
        res.high_watermark = log_.high_watermark
        return res

    def read_all(self, specs: list[FetchSpec], max_bytes: int, *,
                 isolation_level: int, replica_id: int = -1) -> list[FetchResult]:
        """Kafka's ``readFromLog``: partitions in request order share ``max_bytes``; the first
        partition that has data returns at least one whole batch. ``replica_id`` >= 0 is a
        follower's fetch."""
        results = []
        remaining = max(0, max_bytes)
        min_one = True
        now = self.now_ms() if replica_id >= 0 else None
        for spec in specs:
            if replica_id >= 0:
                r = self.read_follower_partition(spec, replica_id, remaining, min_one=min_one,
                                                 now=now)
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
        one of the partitions or ``max_wait_ms`` passes (Kafka's DelayedFetch). Followers
        (``replica_id`` >= 0) long-poll the same way and are woken by appends."""
        self.stats["fetches"] += 1
        deadline = trio.current_time() + max(0, max_wait_ms) / 1000.0
        while True:
            results = self.read_all(specs, max_bytes, isolation_level=isolation_level,
                                    replica_id=replica_id)
            if (max_wait_ms <= 0 or not specs or sum(r.size for r in results) >= min_bytes
                    or any(r.error_code or r.diverging_epoch is not None for r in results)):
                return results
            if trio.current_time() >= deadline:
                return results
            self.stats["long_polls"] += 1
            event = trio.Event()
            parked = []
            for spec in specs:
                part = self._partitions.get((spec.topic, spec.partition))
                if part is not None:
                    part.waiters.add(event)
                    parked.append(part)
            try:
                with trio.move_on_at(deadline):
                    await event.wait()
                    self.stats["fetch_wakeups"] += 1
            finally:
                for part in parked:
                    part.waiters.discard(event)

    # ---------------------------------------------------------------- offsets

    def list_offset(self, topic: str, index: int, timestamp: int, *,
                    isolation_level: int = READ_UNCOMMITTED,
                    current_leader_epoch: int = -1,
                    replica_id: int = -1) -> tuple[int, int, int]:
        """(timestamp, offset, leader_epoch) for ListOffsets; (-1, -1, -1) when no record
        qualifies. A follower (``replica_id`` >= 0) reads with no isolation: latest is the
        log end offset. Raises ReplicaError."""
        part = self.get_partition(topic, index)
        self._check_epoch(part, current_leader_epoch)
        client = replica_id < 0
        if not client:
            fetchable = part.log_end_offset
        elif isolation_level == READ_COMMITTED:
            fetchable = part.last_stable_offset
        else:
            fetchable = part.high_watermark
        # Kafka: a new leader whose HW still lags the start of its epoch cannot answer
        # "latest" (or a timestamp past what is fetchable) for clients yet
        lagging = client and part.leader_epoch_start > part.high_watermark
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            off = part.log_start_offset
            return -1, off, self._epoch_for_offset(part, off)
        if timestamp == LATEST_TIMESTAMP:
            if lagging:
                raise ReplicaError(ErrorCode.OFFSET_NOT_AVAILABLE)
            return -1, fetchable, part.leader_epoch
        if timestamp == MAX_TIMESTAMP:
            found = part.log.max_timestamp_offset()
            if found is None:
                return -1, -1, -1
            off, ts = self._as_offset_ts(found)
            if off < 0 or off >= fetchable:
                return -1, -1, -1
            return ts, off, self._epoch_for_offset(part, off)
        if timestamp < 0:
            raise ReplicaError(ErrorCode.INVALID_REQUEST, f"unknown special timestamp {timestamp}")
        found = part.log.offset_for_timestamp(timestamp)
        if found is None:
            return -1, -1, -1
        off, ts = self._as_offset_ts(found)
        if off >= fetchable:
            if lagging:
                raise ReplicaError(ErrorCode.OFFSET_NOT_AVAILABLE)
            return -1, -1, -1
        return ts, off, self._epoch_for_offset(part, off)

    @staticmethod
    def _as_offset_ts(found) -> tuple[int, int]:
        if hasattr(found, "offset"):
            return found.offset, found.timestamp
        return found[0], found[1]

    @staticmethod
    def _epoch_for_offset(part: Partition, offset: int) -> int:
        epoch = part.log.epoch_for_offset(offset)
        return -1 if epoch is None else epoch

    def end_offset_for_epoch(self, topic: str, index: int, leader_epoch: int,
                             current_leader_epoch: int = -1) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset), (-1, -1) for an unknown epoch."""
        part = self.get_partition(topic, index)
        self._check_epoch(part, current_leader_epoch)
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
                raise _error_from(exc) from None
            part.wake()
        return offset, self._low_watermark(part)

    def _low_watermark(self, part: Partition) -> int:
        """Kafka's lowWatermarkIfLeader: the smallest log start offset over the leader and
        every other replica on a live broker, as each follower last reported it in a fetch
        (-1 until it has fetched in this leadership)."""
        low = part.log_start_offset
        for rid, f in part.followers.items():
            if f.log_start_offset < low and self._broker_eligible(rid):
                low = f.log_start_offset
        return low

    async def wait_low_watermark(self, topic: str, index: int, required_offset: int,
                                 timeout_ms: int) -> tuple[int, int | None]:
        """Kafka's DelayedDeleteRecords for one partition: wait until the low watermark
        reaches ``required_offset`` (every live replica has deleted up to it; followers
        learn the leader's log start offset from fetch responses and report theirs in the
        next fetch). Returns (NONE, low watermark), (NOT_LEADER_OR_FOLLOWER, -1) when this
        node no longer leads, or (REQUEST_TIMED_OUT, None) after ``timeout_ms``."""
        deadline = trio.current_time() + max(0, timeout_ms) / 1000.0
        while True:
            part = self._partitions.get((topic, index))
            if part is None or not part.is_leader:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
            low = self._low_watermark(part)
            if low >= required_offset:
                return ErrorCode.NONE, low
            if trio.current_time() >= deadline:
                self.stats["delayed_delete_records_timeouts"] += 1
                return ErrorCode.REQUEST_TIMED_OUT, None
            await part.wait_for_change(deadline)

    # ---------------------------------------------------------------- log dirs

    def describe_log_dirs(self, wanted: dict[str, set[int] | None] | None):
        """[(log_dir, error_code, [(topic, [(partition, size, offset_lag)])], total, usable)]
        for every local replica, leader or follower. ``offset_lag`` is Kafka's
        ``getLogEndOffsetLag`` for a replica that is not a future one: max(high watermark −
        log end offset, 0) of the local log (so 0 unless the log end is behind its own high
        watermark; -1 would mean no local log).

        ``wanted`` maps topic → partitions (None → all of the topic); None → everything."""
        by_dir: dict[str, dict[str, list]] = {}
        for d in self.log_dirs():
            by_dir.setdefault(d, {})
        for part in sorted(self._partitions.values(), key=lambda p: (p.topic, p.index)):  # all replicas
            if wanted is not None:
                if part.topic not in wanted:
                    continue
                sel = wanted[part.topic]
                if sel is not None and part.index not in sel:
                    continue
            d = self._log_dir_of(part)
            size = self._size_of(part)
            lag = max(part.log.high_watermark - part.log.log_end_offset, 0)
            by_dir.setdefault(d, {}).setdefault(part.topic, []).append((part.index, size, lag))
        out = []
        for d, topics in by_dir.items():
            try:
                usage = shutil.disk_usage(d)
                total, usable = usage.total, usage.free
            except OSError:
                out.append((d, ErrorCode.KAFKA_STORAGE_ERROR, [], -1, -1))
                continue
            out.append((d, 0, sorted(topics.items()), total, usable))
        return out

    def log_dirs(self) -> list[str]:
        logs = self.broker.logs
        dirs = getattr(logs, "log_dirs", None)
        if dirs:
            return [os.path.abspath(str(d)) for d in dirs]
        return []

    def _log_dir_of(self, part: Partition) -> str:
        for attr in ("log_dir", "parent_dir"):
            d = getattr(part.log, attr, None)
            if d is not None:
                return os.path.abspath(str(d))
        path = getattr(part.log, "dir", None) or getattr(part.log, "path", None)
        if path is not None:
            return os.path.abspath(os.path.dirname(str(path)))
        dirs = self.log_dirs()
        return dirs[0] if dirs else ""

    @staticmethod
    def _size_of(part: Partition) -> int:
        size = getattr(part.log, "size_in_bytes", None)
        if size is not None:
            return size() if callable(size) else int(size)
        stats = part.log.statistics()
        for key in ("size_bytes", "size", "bytes"):
            if key in stats:
                return int(stats[key])
        return 0

    # ---------------------------------------------------------------- statistics

    def statistics(self) -> dict:
        parked = sum(len(p.waiters) for p in self._partitions.values())
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
