"""The data plane: partitions this node leads, and the rules for writing and reading them.

``ReplicaManager`` owns one :class:`Partition` per topic-partition the metadata image says
this node leads. It is the single place that knows Kafka's produce and fetch rules
(``ReplicaManager``/``Partition``/``UnifiedLog.analyzeAndValidateRecords`` in Kafka); the API
modules (produce, fetch, list_offsets, offset_for_leader_epoch, delete_records,
describe_log_dirs) only translate between the wire and these methods.

Rules it keeps:

- Produce validates batch headers and CRC32C only (the log's append does the CRC, size and
  compacted-topic key checks once); single records are decoded only when a rule needs them
  (keys on compacted topics, naming the offending records of a rejected timestamp). Offsets and the partition leader epoch are patched into the header by the
  log; LogAppendTime topics get max timestamp + the timestamp-type bit (new CRC).
- One node: the high watermark follows the log end offset after every local append, so
  ``acks=1`` and ``acks=-1`` mean the same (``acks=-1`` still checks
  ``min.insync.replicas`` against the ISR of the image, as Kafka does).
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
  OffsetForLeaderEpoch answers (here). Epoch changes seen while running are remembered so
  older epochs answer with the offset where the next epoch began.

A topic ``compression.type`` other than ``producer`` makes produce rebuild the batch with that
codec (Kafka's rule; the one produce path that decodes records).

Not implemented here: follower fetching and fetch sessions (session id 0: every response is a full one).
"""
from __future__ import annotations

import base64
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

# Timestamp window defaults (Kafka 4: before = unlimited, after = one hour, KIP-937/KIP-1030).
_TS_BEFORE_DEFAULT = LONG_MAX
_TS_AFTER_DEFAULT = 3_600_000


class ReplicaError(Exception):
    """A per-partition failure with the Kafka error code to answer with.

    ``record_errors`` lists ``(batch_index, message)`` for Produce v8+ (KIP-467)."""

    def __init__(self, error_code: int, message: str | None = None,
                 record_errors: Iterable[tuple[int, str | None]] = ()):
        super().__init__(message or ErrorCode(error_code).name)
        self.error_code = int(error_code)
        self.message = message
        self.record_errors = list(record_errors)


def _error_from(exc: Exception) -> ReplicaError:
    """Map a log/wire exception that carries ``error_code`` to a ReplicaError."""
    if isinstance(exc, ReplicaError):
        return exc
    code = getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR)
    return ReplicaError(code, str(exc) or None)


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
    """One partition of a fetch request."""

    topic: str
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1


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

    @property
    def size(self) -> int:
        return self.records.length if self.records is not None else 0


# --------------------------------------------------------------------------- partition

@dataclass
class Partition:
    """State of one partition this node leads.

    Invariants: ``high_watermark <= log_end_offset``; ``last_stable_offset <=
    high_watermark``; ``epoch_starts`` is sorted by epoch and its last entry is
    ``leader_epoch``. Waiters are trio Events owned by parked fetches; ``wake`` sets and
    forgets all of them (each fetch re-registers if it keeps waiting).
    """

    topic: str
    index: int
    topic_id: Any
    log: Any                                   # kbroker.log PartitionLog
    leader_epoch: int
    config: LogConfig
    props: dict                                # effective topic-level properties (strings)
    isr: tuple = ()
    epoch_starts: list = field(default_factory=list)   # [(epoch, start offset)]
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

    def advance_high_watermark(self) -> None:
        """One node: everything appended locally is replicated (to itself)."""
        leo = self.log.log_end_offset
        if self.log.high_watermark != leo:
            self.log.high_watermark = leo

    def wake(self) -> None:
        waiters, self.waiters = self.waiters, set()
        for ev in waiters:
            ev.set()

    def set_leader_epoch(self, epoch: int) -> None:
        if epoch == self.leader_epoch:
            return
        if epoch > self.leader_epoch:
            self.epoch_starts.append((epoch, self.log.log_end_offset))
        self.leader_epoch = epoch
        self.wake()

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """Kafka's ``LeaderEpochFileCache.endOffsetFor``: (largest epoch <= ``epoch``, the
        offset where the next epoch began), or the log end for the current epoch."""
        if epoch < 0 or epoch > self.leader_epoch:
            return -1, -1
        if epoch == self.leader_epoch:
            return epoch, self.log.log_end_offset
        floor = None
        higher_start = None
        for e, start in self.epoch_starts:
            if e <= epoch:
                floor = e
            elif higher_start is None:
                higher_start = start
        if higher_start is None:  # cannot happen: the current epoch is in the list
            return epoch, self.log.log_end_offset
        return (epoch if floor is None else floor), higher_start


# --------------------------------------------------------------------------- manager

class ReplicaManager:
    """Partitions led by this node and the produce/fetch/offset rules over them.

    Owned by the Broker (``broker.replicas``); core calls :meth:`apply_image` after every
    metadata change. All methods run on the trio thread; appends are synchronous (no
    checkpoint inside), so concurrent requests never interleave within one append.
    """

    def __init__(self, broker):
        self.broker = broker
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._topic_ids: dict[str, Any] = {}
        self._not_led: set[tuple[str, int]] = set()
        self._lso_hook: Callable | None = None
        # (producer_id, producer_epoch, topic, partition) -> error code; installed by the
        # transaction coordinator
        self.txn_verifier: Callable[[int, int, str, int], int] | None = None
        self.stats = {"appends": 0, "appended_bytes": 0, "fetches": 0, "long_polls": 0,
                      "fetch_wakeups": 0, "append_errors": 0, "duplicates": 0,
                      "markers": 0}

    # ---------------------------------------------------------------- configuration

    @property
    def node_id(self) -> int:
        cfg = self.broker.config
        try:
            return int(cfg.node_id)
        except AttributeError:
            return int(cfg.values["node.id"])

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

    # ---------------------------------------------------------------- metadata

    def apply_image(self, image) -> None:
        """Bring local partitions in line with the metadata image: create logs for new
        partitions led here, drop deleted topics' logs, follow config and epoch changes."""
        me = self.node_id
        wanted: dict[tuple[str, int], tuple[Any, Any]] = {}
        not_led: set[tuple[str, int]] = set()
        for name, topic in image.topics.items():
            for idx, pimg in topic.partitions.items():
                if pimg.leader == me:
                    wanted[(name, idx)] = (topic, pimg)
                else:
                    not_led.add((name, idx))
        # Partitions gone (topic deleted, re-created under a new id, or leadership moved).
        for key, part in list(self._partitions.items()):
            entry = wanted.get(key)
            if entry is not None and entry[0].topic_id == part.topic_id:
                continue
            del self._partitions[key]
            part.wake()
            topic_gone = key[0] not in image.topics or image.topics[key[0]].topic_id != part.topic_id
            if topic_gone:
                self.broker.logs.delete_log(key[0], key[1])
        config_cache: dict[str, tuple[dict, LogConfig]] = {}
        for key, (topic, pimg) in wanted.items():
            cached = config_cache.get(key[0])
            if cached is None:
                props = self.effective_properties(getattr(topic, "configs", None))
                cached = config_cache[key[0]] = (props, LogConfig.from_properties(props))
            props, config = cached
            part = self._partitions.get(key)
            if part is None:
                log = self._open_log(key[0], key[1], topic.topic_id, config)
                epoch = pimg.leader_epoch
                part = Partition(topic=key[0], index=key[1], topic_id=topic.topic_id, log=log,
                                 leader_epoch=epoch, config=config, props=props,
                                 isr=tuple(pimg.isr or ()),
                                 epoch_starts=[(epoch, log.log_end_offset)],
                                 lso_hook=self._lso_hook)
                part.advance_high_watermark()
                self._partitions[key] = part
                continue
            part.isr = tuple(pimg.isr or ())
            if config != part.config:
                part.config, part.props = config, props
                update = getattr(part.log, "update_config", None)
                if update is not None:
                    update(config)
                else:
                    part.log.config = config
            elif props != part.props:
                part.props = props
            part.set_leader_epoch(pimg.leader_epoch)
        self._not_led = not_led
        self._topic_ids = {name: t.topic_id for name, t in image.topics.items()}

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
        if part is not None:
            return part
        if (topic, index) in self._not_led:
            raise ReplicaError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        raise ReplicaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    def partitions(self) -> list[Partition]:
        return list(self._partitions.values())

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
        except ReplicaError:
            self.stats["append_errors"] += 1
            raise
        except (CorruptRecord, InvalidRecord, rec.RecordTooLarge) as exc:
            self.stats["append_errors"] += 1
            raise ReplicaError(exc.error_code, str(exc)) from None
        except Exception as exc:
            if not hasattr(exc, "error_code"):
                raise
            self.stats["append_errors"] += 1
            raise _error_from(exc) from None

    def _append(self, topic, index, records, required_acks, now_ms, allow_internal,
                origin="client") -> AppendResult:
        if topic in INTERNAL_TOPICS and not allow_internal:
            raise ReplicaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                               f"cannot append to internal topic {topic}")
        part = self.get_partition(topic, index)
        config = part.config
        if records is None or len(records) == 0:
            raise ReplicaError(ErrorCode.INVALID_RECORD,
                               "produce requests must carry exactly one record batch per partition")
        # Header walk only (no CRC): the log's append checks CRC32C, sizes and keys once.
        try:
            headers = [h for _, h in rec.iter_batches(records)]
        except CorruptRecord:
            headers = None  # let the log's full validation name the problem
        if headers is not None and len(headers) > 1:
            raise ReplicaError(ErrorCode.INVALID_RECORD,
                               "produce requests must carry exactly one record batch per partition")
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
                return AppendResult(
                    base_offset=dup.first_offset, last_offset=dup.last_offset,
                    log_append_time_ms=dup.timestamp if log_append_time else -1,
                    log_start_offset=part.log.log_start_offset)
        elif headers and headers[0].is_control and origin == "client":
            raise ReplicaError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
        if headers and not log_append_time and headers[0].size <= config.max_message_bytes:
            self._check_timestamps(part, records, headers[0], now_ms)
        target = _CODECS.get(config.compression_type)
        if headers and target is not None and headers[0].compression != target:
            records = self._recompress(records, headers[0], target, config)
        info = part.log.append(records, leader_epoch=part.leader_epoch,
                               log_append_time=now_ms if log_append_time else None,
                               now_ms=now_ms)
        part.advance_high_watermark()
        part.wake()
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
        part.advance_high_watermark()
        part.wake()
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
    def _timestamp_bounds(props: dict, now_ms: int) -> tuple[int, int]:
        """(lowest, highest) acceptable CreateTime timestamp, from KIP-937's before/after
        settings, or the older ``message.timestamp.difference.max.ms`` when it is set."""
        diff = props.get("message.timestamp.difference.max.ms")
        if diff is not None and int(diff) < LONG_MAX:
            before = after = int(diff)
        else:
            before = int(props.get("message.timestamp.before.max.ms", _TS_BEFORE_DEFAULT))
            after = int(props.get("message.timestamp.after.max.ms", _TS_AFTER_DEFAULT))
        lo = now_ms - before if before < LONG_MAX else -LONG_MAX
        hi = now_ms + after if after < LONG_MAX else LONG_MAX
        return lo, hi

    def _check_timestamps(self, part: Partition, records, header, now_ms: int) -> None:
        """Batch-level check (base and max timestamp); on failure decode the batch once to
        name the offending records, as Kafka's record_errors do."""
        lo, hi = self._timestamp_bounds(part.props, now_ms)
        if lo <= -LONG_MAX and hi >= LONG_MAX:
            return
        first, last = header.base_timestamp, header.max_timestamp
        if header.has_delete_horizon:
            first = last
        if lo <= first <= hi and lo <= last <= hi:
            return
        bad: list[tuple[int, str | None]] = []
        try:
            rec.verify_crc(records, 0, header)  # a corrupt batch is CORRUPT_MESSAGE first
            for i, r in enumerate(rec.decode_records(records, 0, header)):
                if not lo <= r.timestamp <= hi:
                    bad.append((i, None))
        except CorruptRecord as exc:
            raise ReplicaError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
        if not bad and (first < 0 or last < 0):
            return  # NO_TIMESTAMP in the header with valid records: accept as Kafka does
        if not bad:
            bad = [(0, None)]
        raise ReplicaError(
            ErrorCode.INVALID_TIMESTAMP,
            f"timestamp out of range [{lo}, {hi}] (broker time {now_ms})", bad)

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
            res.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
            return res
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

    def read_all(self, specs: list[FetchSpec], max_bytes: int, *,
                 isolation_level: int) -> list[FetchResult]:
        """Kafka's ``readFromLog``: partitions in request order share ``max_bytes``; the first
        partition that has data returns at least one whole batch."""
        results = []
        remaining = max(0, max_bytes)
        min_one = True
        for spec in specs:
            r = self.read_partition(spec, remaining, isolation_level=isolation_level,
                                    min_one=min_one)
            if r.size:
                min_one = False
                remaining = max(0, remaining - r.size)
            results.append(r)
        return results

    async def fetch(self, specs: list[FetchSpec], *, max_bytes: int, min_bytes: int,
                    max_wait_ms: int, isolation_level: int = READ_UNCOMMITTED) -> list[FetchResult]:
        """Read, and when fewer than ``min_bytes`` are available park until data arrives on
        one of the partitions or ``max_wait_ms`` passes (Kafka's DelayedFetch)."""
        self.stats["fetches"] += 1
        deadline = trio.current_time() + max(0, max_wait_ms) / 1000.0
        while True:
            results = self.read_all(specs, max_bytes, isolation_level=isolation_level)
            if (max_wait_ms <= 0 or not specs or sum(r.size for r in results) >= min_bytes
                    or any(r.error_code for r in results)):
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
                    current_leader_epoch: int = -1) -> tuple[int, int, int]:
        """(timestamp, offset, leader_epoch) for ListOffsets; (-1, -1, -1) when no record
        qualifies. Raises ReplicaError."""
        part = self.get_partition(topic, index)
        self._check_epoch(part, current_leader_epoch)
        fetchable = part.last_stable_offset if isolation_level == READ_COMMITTED else part.high_watermark
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            off = part.log_start_offset
            return -1, off, self._epoch_for_offset(part, off)
        if timestamp == LATEST_TIMESTAMP:
            return -1, fetchable, self._epoch_for_offset(part, fetchable)
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
            return -1, -1, -1
        return ts, off, self._epoch_for_offset(part, off)

    @staticmethod
    def _as_offset_ts(found) -> tuple[int, int]:
        if hasattr(found, "offset"):
            return found.offset, found.timestamp
        return found[0], found[1]

    @staticmethod
    def _epoch_for_offset(part: Partition, offset: int) -> int:
        epoch = -1
        for e, start in part.epoch_starts:
            if start <= offset:
                epoch = e
        return epoch if epoch >= 0 else part.epoch_starts[0][0] if part.epoch_starts else -1

    def end_offset_for_epoch(self, topic: str, index: int, leader_epoch: int,
                             current_leader_epoch: int = -1) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset), (-1, -1) for an unknown epoch."""
        part = self.get_partition(topic, index)
        self._check_epoch(part, current_leader_epoch)
        return part.end_offset_for_epoch(leader_epoch)

    # ---------------------------------------------------------------- delete records

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        """Move the log start offset up to ``offset`` (-1: the high watermark); returns the
        new low watermark (log start offset)."""
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
        return part.log_start_offset

    # ---------------------------------------------------------------- log dirs

    def describe_log_dirs(self, wanted: dict[str, set[int] | None] | None):
        """[(log_dir, error_code, [(topic, [(partition, size)])], total, usable)].

        ``wanted`` maps topic → partitions (None → all of the topic); None → everything."""
        by_dir: dict[str, dict[str, list]] = {}
        for d in self.log_dirs():
            by_dir.setdefault(d, {})
        for part in sorted(self._partitions.values(), key=lambda p: (p.topic, p.index)):
            if wanted is not None:
                if part.topic not in wanted:
                    continue
                sel = wanted[part.topic]
                if sel is not None and part.index not in sel:
                    continue
            d = self._log_dir_of(part)
            size = self._size_of(part)
            by_dir.setdefault(d, {}).setdefault(part.topic, []).append((part.index, size))
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
            "parked_fetch_waiters": parked,
            "log_end_offsets": {f"{p.topic}-{p.index}": p.log_end_offset
                                for p in self._partitions.values()},
        }
