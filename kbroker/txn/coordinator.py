"""``TransactionCoordinator``: transactional ids, their producer ids/epochs and transactions.

Kafka's ``TransactionCoordinator`` + ``TransactionStateManager``, for both transaction
protocols: TV1 (the client adds partitions with AddPartitionsToTxn, EndTxn ≤ v4) and TV2
(KIP-890 part 2, below). State lives in the compacted topic ``__transaction_state``
(:mod:`kbroker.txn.records`); every transition is appended there first and applied to the
in-memory map only once the append succeeded. A transactional id is coordinated by the
leader of its ``__transaction_state`` partition; other brokers answer NOT_COORDINATOR.
Start-up, the first use after FindCoordinator created the topic and every image that makes
this node the leader of a partition replay it (:meth:`on_image`); a partition whose
leadership moves away (or whose leader epoch changes) is unloaded.
Exclusion is per transactional id, as Kafka's (``TransactionMetadata.inLock`` and its
``pendingState``): a request makes its checks under the coordinator's lock -- held only
for those checks, never across a write, and by a partition's load (Kafka's ``stateLock``)
-- and, when it is to write, claims the id (:class:`_Claim`: the id's metadata is marked
``pending``) before it releases the lock. The ``__transaction_state`` append and its wait
for replication (acks=all) run without the lock, so requests for other ids go on
meanwhile; a request for the claimed id answers CONCURRENT_TRANSACTIONS (Kafka's answer to
a pending transition) until the claim ends. A written state is applied only if the id's
state is still the claimed one: an unload (leadership moved, or a new leader epoch) forgets
the partition's ids, so a write that was replicating across it answers NOT_COORDINATOR
and the next coordinator replays its record (Kafka's check of the coordinator epoch in the
append callback). A request that waited for the lock while the partition was unloaded
checks again that the partition is loaded, as Kafka looks the id up when it handles the
request, and answers NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while this node reloads
it), never from the state it forgot (INVALID_PRODUCER_ID_MAPPING, or a new producer id for
a known id).

- **InitProducerId** (transactional): a new id gets a producer id from the controller's
  blocks and epoch 0; a known id gets its epoch bumped (a new producer id when the epoch
  is exhausted). An ongoing transaction of the old instance is aborted first with a
  fenced (bumped) epoch, so the zombie's later requests fail. KIP-360: a retry that names
  the epoch before a bump gets the bumped epoch again instead of a second bump.
- **AddPartitionsToTxn / AddOffsetsToTxn** move the id to Ongoing with the partitions.
- **EndTxn** writes PrepareCommit/PrepareAbort, then a commit/abort marker to every
  partition of the transaction, then CompleteCommit/CompleteAbort. When this node leads
  every partition the markers are appended synchronously, so the client's answer comes
  after the transaction is complete; otherwise a task delivers them to the leaders
  (WriteTxnMarkers, :mod:`kbroker.txn.markers`) and writes Complete* once all are written,
  and EndTxn answers once Prepare* is stored, as Kafka does. Markers that fail (e.g. a full
  disk) leave the id in Prepare*; the timer task retries them, as does a (re)load.
- **Timeouts**: every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` the
  timer aborts Ongoing transactions older than their timeout, with a bumped epoch
  (the producer is fenced, as in Kafka), each id's abort on its own (one waiting for its
  replication delays no other). "Older" compares wall-clock times, as Kafka's
  ``TransactionStateManager.timedOutTransactions`` (``txnStartTimestamp + txnTimeoutMs <
  time.milliseconds()``, the start written in ``__transaction_state``): a forward step of
  the coordinator's wall clock longer than a transaction's timeout aborts it, in Kafka too.
- **Verification** (KIP-890 part 1, ``transaction.partition.verification.enable``): before
  the first transactional batch of a producer on a partition, the partition's leader asks
  the producer's coordinator -- this one in memory, another with AddPartitionsToTxn v4
  ``verify_only`` -- whether the partition is in the ongoing transaction
  (:mod:`kbroker.txn.verification`; the coordinator side is :meth:`verify_partitions`).

- **Transaction version 2** (KIP-890 part 2; the cluster finalizes ``transaction.version``
  2 and the client speaks EndTxn v5, Produce v12+, TxnOffsetCommit v5): partition leaders
  add a producer's partitions for it (AddPartitionsToTxn v5 with ``verify_only`` false, or
  in memory; :meth:`add_partitions` with ``client_tv=2``); every EndTxn bumps the epoch
  (Prepare* holds the bumped epoch, which the markers carry, and the answer names it); an
  epoch that reaches ``Short.MAX_VALUE`` moves the id to a new producer id at Complete*; a
  retried EndTxn is recognised by the epoch before the bump (or ``Short.MAX_VALUE - 1``
  of the previous producer id). Kafka's table for the completed states (PF =
  PRODUCER_FENCED, ITS = INVALID_TXN_STATE, EB = a new epoch-bumping abort)::

                      abort: retry / current      commit: retry / current
      Empty                  PF    / EB                  PF    / ITS
      CompleteAbort          NONE  / EB                  ITS   / ITS
      CompleteCommit         ITS   / EB                  NONE  / ITS

  ``__transaction_state`` values are written as version 1 (the tagged next/previous
  producer ids and the client's transaction version) once ``transaction.version`` ≥ 1 is
  finalized.

- **Transactional-id expiration** (:mod:`kbroker.txn.expiry`): every
  ``transaction.remove.expired.transaction.cleanup.interval.ms`` a second timer tombstones,
  in ``__transaction_state``, the ids in Empty/CompleteCommit/CompleteAbort not updated for
  ``transactional.id.expiration.ms`` and forgets them once the tombstones are stored
  (:meth:`remove_expired_transactional_ids`: the ids marked as being removed, the lock not
  held while the tombstones replicate); a reload replays the tombstones.

Error codes follow Kafka's handlers (``INVALID_PRODUCER_ID_MAPPING``, ``PRODUCER_FENCED``,
``CONCURRENT_TRANSACTIONS``, ``INVALID_TXN_STATE``, ``NOT_COORDINATOR``...). The clock is
the broker's wall clock (``now_ms``); the timers' periods sleep on trio's (monotonic) clock.
Not implemented: 2PC (KIP-939, InitProducerId v6, unstable in Kafka 4.3.1 and not
advertised there).
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable

import trio

from kbroker.log.replay import data_records
from kbroker.wire import records as wire_records
from kbroker.wire.error_codes import ErrorCode as E

from . import records as trec
from .expiry import expired_by_partition, tombstone_batches
from .markers import MarkerChannel, write_as_leader, write_local
from .metadata import MAX_EPOCH, TransactionMetadata, TxnState
from .verification import TxnVerifier

log = logging.getLogger("kbroker.txn")

OFFSETS_TOPIC = "__consumer_offsets"
TOPIC = trec.TRANSACTION_STATE_TOPIC


def _append_error(code: int) -> int:
    """Kafka's mapping of a failed ``__transaction_state`` append to the client's error."""
    if code in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS,
                E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE
    if code in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    return E.UNKNOWN_SERVER_ERROR


class _Claim:
    """One request's hold on a transactional id (Kafka's ``pendingState``). Taken under the
    coordinator's lock once the request's checks passed, it marks the id's metadata
    ``pending`` -- another request for the id answers CONCURRENT_TRANSACTIONS, the timer and
    the expiry pass leave it alone -- and follows each state the request writes
    (:meth:`TransactionCoordinator._write`); released at the end of ``with claim:``."""
    __slots__ = ("meta", "_held")

    def __init__(self, meta: TransactionMetadata):
        meta.pending = True
        self.meta = meta
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self.meta.pending = False

    def __enter__(self) -> "_Claim":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class TransactionCoordinator:
    """Owned by the Broker (``broker.transactions``); API modules call its methods."""

    def __init__(self, broker, *, now_ms: Callable[[], int] | None = None):
        self.broker = broker
        cfg = broker.config
        self.num_partitions = int(cfg.get("transaction.state.log.num.partitions"))
        self.max_timeout_ms = int(cfg.get("transaction.max.timeout.ms"))
        self.abort_interval_ms = int(cfg.get("transaction.abort.timed.out.transaction.cleanup.interval.ms"))
        self.id_expiration_ms = int(cfg.get("transactional.id.expiration.ms"))
        self.expiry_interval_ms = int(cfg.get("transaction.remove.expired.transaction.cleanup.interval.ms"))
        self.now_ms = now_ms or broker.clock.now_ms
        self.txns: dict[str, TransactionMetadata] = {}
        self._by_pid: dict[int, str] = {}
        self.loaded: set[int] = set()
        self._loaded_epoch: dict[int, int] = {}   # partition -> its leader epoch when loaded
        self._lock = trio.Lock()
        self._closed = False
        self._nursery: trio.Nursery | None = None
        self._delivering: set[str] = set()         # ids whose markers a task is delivering
        self.markers: MarkerChannel | None = None
        self.verifier = TxnVerifier(broker, self)
        self.verification_enabled = bool(cfg.get("transaction.partition.verification.enable"))
        self.stats = {"appends": 0, "append_errors": 0, "markers": 0, "marker_errors": 0,
                      "commits": 0, "aborts": 0, "timeouts": 0, "fenced": 0,
                      "records_replayed": 0, "unloads": 0, "expired_ids": 0}

    # ------------------------------------------------------------------ lifecycle
    async def start(self, nursery: trio.Nursery | None = None) -> None:
        """:meth:`begin`, then load the ``__transaction_state`` partitions this node leads."""
        self.begin(nursery)
        await self.maybe_load()

    def begin(self, nursery: trio.Nursery | None = None) -> None:
        """Serve from now on: the append's verification hook, the marker channel and the
        timers (in ``nursery``). Partitions this node leads are loaded by :meth:`start`, by
        the first request for one of their ids, or by a task an image starts."""
        self.broker.replicas.txn_verifier = self.verifier.check
        self.markers = MarkerChannel(self.broker, self.stats)
        self._nursery = nursery
        if nursery is not None:
            nursery.start_soon(self._every, lambda: self.abort_interval_ms,
                               self.abort_timed_out, "transaction timeout pass")
            nursery.start_soon(self._every, lambda: self.expiry_interval_ms,
                               self.remove_expired_transactional_ids,
                               "transactional id expiration pass")

    def close(self) -> None:
        self._closed = True

    async def _every(self, interval_ms, work, what: str) -> None:
        """``await work()`` every ``interval_ms()`` milliseconds until closed (the abort
        timer, the expiration pass); one failed round is logged and the next one runs."""
        while not self._closed:
            await trio.sleep(interval_ms() / 1000)
            if self._closed:
                return
            try:
                await work()
            except Exception:  # noqa: BLE001 - the timer must survive one bad round
                log.exception("%s failed", what)

    def statistics(self) -> dict:
        states: dict[str, int] = {}
        for m in self.txns.values():
            states[m.state.display_name] = states.get(m.state.display_name, 0) + 1
        return {"transactional_ids": len(self.txns), "states": states,
                "loaded_partitions": len(self.loaded), **self.stats}

    # ------------------------------------------------------------------ topic and load
    def partition_for(self, transactional_id: str) -> int:
        return trec.partition_for(transactional_id, self.num_partitions)

    def _led_partitions(self) -> list[int] | None:
        topic = self.broker.metadata.topics.get(TOPIC)
        if topic is None:
            return None
        me = self.broker.node_id
        return sorted(p for p, pi in topic.partitions.items() if pi.leader == me)

    async def ensure_topic(self) -> int:
        """Create ``__transaction_state`` if needed (FindCoordinator does it too) and load it."""
        if self._led_partitions() is None:
            results = await self.broker.controller.maybe_create_topics([TOPIC])
            for r in results:
                if r.error_code and r.error_code != E.TOPIC_ALREADY_EXISTS:
                    return E.COORDINATOR_NOT_AVAILABLE
        await self.maybe_load()
        return E.NONE

    async def maybe_load(self) -> None:
        parts = self._led_partitions()
        if parts is None:
            return
        topic = self.broker.metadata.topics[TOPIC]
        self.num_partitions = len(topic.partitions)
        todo = [p for p in parts if p not in self.loaded]
        if not todo:
            return
        async with self._lock:      # no request checks an id while its partition loads
            parts = self._led_partitions() or []
            todo = [p for p in parts if p not in self.loaded]
            for p in list(todo):
                try:
                    self._load_partition(p)
                except Exception as exc:  # noqa: BLE001 - not led after all: stay unloaded
                    log.warning("cannot load %s-%d: %r", TOPIC, p, exc)
                    todo.remove(p)
            prepared = [m for m in self.txns.values() if m.partition in todo and m.state.is_prepare]
        # finish what a crash (or the previous coordinator) left between Prepare* and
        # Complete*
        for meta in prepared:
            await self._finish_prepared(meta)

    def on_image(self, image) -> None:
        """Every published image (synchronously, from the Broker): a ``__transaction_state``
        partition this node no longer leads -- or leads in a new leader epoch -- is unloaded
        (its transactional ids are another coordinator's now); one it now leads is loaded by
        a task, as Kafka's coordinator does on election."""
        topic = image.topics.get(TOPIC)
        me = self.broker.node_id
        for p in sorted(self.loaded):
            pi = topic.partitions.get(p) if topic is not None else None
            if pi is None or pi.leader != me or pi.leader_epoch != self._loaded_epoch.get(p, pi.leader_epoch):
                self._unload(p)
        if topic is None or self._nursery is None or self._closed:
            return
        if any(pi.leader == me and i not in self.loaded for i, pi in topic.partitions.items()):
            self._nursery.start_soon(self.maybe_load)

    def _unload(self, p: int) -> None:
        """Forget the transactional ids of ``__transaction_state-p`` (leadership moved);
        marker deliveries for them stop at their next round."""
        self.loaded.discard(p)
        self._loaded_epoch.pop(p, None)
        for tid in [t for t, m in self.txns.items() if m.partition == p]:
            self._forget(tid)
        self.stats["unloads"] += 1
        log.info("unloaded %s-%d: no longer its leader", TOPIC, p)

    def _load_partition(self, p: int) -> None:
        part = self.broker.replicas.get_partition(TOPIC, p)
        self._loaded_epoch[p] = self._image_leader_epoch(p)
        for r in data_records(part.log, f"{TOPIC}-{p}"):
            try:
                tid = trec.decode_key(r.key)
                if tid is None:
                    continue
                value = trec.decode_value(r.value)
            except Exception:  # noqa: BLE001
                log.exception("unreadable record in %s-%d at %d", TOPIC, p, r.offset)
                continue
            self.stats["records_replayed"] += 1
            if value is None:
                self._forget(tid)
            else:
                self._apply(TransactionMetadata.from_value(tid, value, p))
        self.loaded.add(p)

    def _apply(self, meta: TransactionMetadata) -> None:
        old = self.txns.get(meta.transactional_id)
        if old is not None and old.producer_id != meta.producer_id:
            if self._by_pid.get(old.producer_id) == meta.transactional_id:
                del self._by_pid[old.producer_id]
        self.txns[meta.transactional_id] = meta
        self._by_pid[meta.producer_id] = meta.transactional_id

    def _forget(self, tid: str) -> None:
        old = self.txns.pop(tid, None)
        if old is not None and self._by_pid.get(old.producer_id) == tid:
            del self._by_pid[old.producer_id]

    def coordinator_error(self, transactional_id: str) -> int:
        p = self.partition_for(transactional_id)
        if p in self.loaded:
            return E.NONE
        parts = self._led_partitions()
        if parts is None or p not in parts:
            return E.NOT_COORDINATOR
        return E.COORDINATOR_LOAD_IN_PROGRESS

    async def _ready(self, transactional_id: str) -> int:
        if not transactional_id:
            return E.INVALID_REQUEST
        if self._led_partitions() is None:
            err = await self.ensure_topic()
            if err:
                return err
        await self.maybe_load()
        return self.coordinator_error(transactional_id)

    def _image_leader_epoch(self, p: int) -> int:
        topic = self.broker.metadata.topics.get(TOPIC)
        pi = topic.partitions.get(p) if topic is not None else None
        return pi.leader_epoch if pi is not None else -1

    @property
    def transaction_version(self) -> int:
        """The cluster's finalized ``transaction.version`` (0 when not finalized)."""
        return int(self.broker.metadata.features.get("transaction.version", 0))

    def coordinator_epoch(self, partition: int) -> int:
        try:
            return max(0, self.broker.replicas.get_partition(TOPIC, partition).leader_epoch)
        except Exception:  # noqa: BLE001
            return 0

    # ------------------------------------------------------------------ log writes
    async def _append(self, partition: int, batch: bytes, now: int) -> int:
        """Append ``batch`` to ``__transaction_state-partition``, acks=all as Kafka's
        coordinator (done once the ISR has it); returns the client's error code."""
        try:
            res = self.broker.replicas.append(TOPIC, partition, batch, required_acks=-1,
                                              now_ms=now, allow_internal=True, origin="coordinator")
            code = await self.broker.replicas.wait_replicated(
                TOPIC, partition, res.last_offset + 1,
                int(self.broker.config.get("request.timeout.ms") or 30_000))
        except Exception as exc:  # noqa: BLE001 - becomes the client's error code
            self.stats["append_errors"] += 1
            code = getattr(exc, "error_code", None)
            log.warning("append to %s-%d failed: %r", TOPIC, partition, exc)
            return _append_error(int(code)) if code is not None else E.UNKNOWN_SERVER_ERROR
        if code:
            self.stats["append_errors"] += 1
            log.warning("append to %s-%d not replicated: %s", TOPIC, partition,
                        E(code).name if code in E._value2member_map_ else code)
            return _append_error(int(code))
        self.stats["appends"] += 1
        return E.NONE

    async def _write(self, meta: TransactionMetadata, claim: _Claim | None = None) -> int:
        """Append ``meta`` as the claimed id's new state (without the lock) and apply it once
        stored -- only if the id's state is still the claimed one, as Kafka's append callback
        checks the coordinator epoch and the pending transition: an unload meanwhile (and a
        reload) forgot or replaced it, so NOT_COORDINATOR, the next coordinator replays the
        record. The claim follows the new state. Without a claim (tests setting a state) it
        is applied if the partition is loaded. Returns an error code."""
        now = self.now_ms()
        version = 1 if self.transaction_version >= 1 else 0
        batch = wire_records.build_batch([(trec.encode_key(meta.transactional_id),
                                           trec.encode_value(meta.to_value(), version), (), now)])
        err = await self._append(meta.partition, batch, now)
        if err:
            return err
        if meta.partition not in self.loaded:
            return E.NOT_COORDINATOR
        if claim is not None:
            if self.txns.get(meta.transactional_id) is not claim.meta:
                return E.NOT_COORDINATOR
            meta.pending = True
            claim.meta = meta
        self._apply(meta)
        return E.NONE

    # ------------------------------------------------------------------ InitProducerId
    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected_pid: int = -1, expected_epoch: int = -1) -> tuple[int, int, int]:
        """(error, producer id, epoch) for a transactional InitProducerId (v3+: with the
        producer's current id/epoch, KIP-360)."""
        err = await self._ready(transactional_id)
        if err:
            return err, -1, -1
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            return E.INVALID_TRANSACTION_TIMEOUT, -1, -1
        new_pid = -1
        if transactional_id not in self.txns:
            # a new id's producer id, asked for before the lock as Kafka does
            new_pid = await self.broker.producer_ids.generate()
        async with self._lock:
            err = self.coordinator_error(transactional_id)
            if err:
                return err, -1, -1
            meta = self.txns.get(transactional_id)
            fresh = meta is None
            if fresh:
                if new_pid < 0:
                    return E.CONCURRENT_TRANSACTIONS, -1, -1   # forgotten meanwhile: retry
                # in the map at once (Kafka's putTransactionStateIfNotExists), claimed
                meta = TransactionMetadata(transactional_id, new_pid, -1, timeout_ms,
                                           partition=self.partition_for(transactional_id),
                                           last_update_ms=self.now_ms())
                self._apply(meta)
            else:
                if meta.pending or meta.state.is_prepare:
                    return E.CONCURRENT_TRANSACTIONS, -1, -1
                if expected_pid >= 0 and not meta.matches_producer(expected_pid, expected_epoch):
                    return E.PRODUCER_FENCED, -1, -1
                if (expected_pid == meta.producer_id and expected_epoch >= 0
                        and expected_epoch == meta.last_producer_epoch
                        and expected_epoch != meta.producer_epoch and meta.state.is_complete):
                    return E.NONE, meta.producer_id, meta.producer_epoch   # a retried bump
            claim = _Claim(meta)
        with claim:
            err = E.UNKNOWN_SERVER_ERROR
            try:
                err, pid, epoch = await self._init_claimed(claim, timeout_ms)
                return err, pid, epoch
            finally:
                if err and fresh and self.txns.get(transactional_id) is claim.meta:
                    self._forget(transactional_id)      # never stored: as if never asked

    async def _init_claimed(self, claim: _Claim, timeout_ms: int) -> tuple[int, int, int]:
        """InitProducerId's writes for a claimed id: the previous instance's transaction
        fenced and aborted, then the epoch bumped (or a new producer id)."""
        meta = claim.meta
        if meta.state == TxnState.ONGOING:
            # the previous instance's transaction: fence it and abort (Kafka then
            # answers CONCURRENT_TRANSACTIONS; the abort is already done here)
            err = await self._fence_and_abort(claim)
            if err:
                return err, -1, -1
            meta = claim.meta
            if meta.state != TxnState.COMPLETE_ABORT:
                return E.CONCURRENT_TRANSACTIONS, -1, -1
        now = self.now_ms()
        if meta.epoch_exhausted:
            pid = await self.broker.producer_ids.generate()
            new = meta.copy(producer_id=pid, producer_epoch=0, last_producer_epoch=-1,
                            previous_producer_id=meta.producer_id)
        else:
            new = meta.copy(producer_epoch=meta.producer_epoch + 1,
                            last_producer_epoch=meta.producer_epoch)
        new = new.copy(timeout_ms=timeout_ms, state=TxnState.EMPTY, partitions=frozenset(),
                       start_ms=-1, last_update_ms=now)
        err = await self._write(new, claim)
        if err:
            return err, -1, -1
        return E.NONE, new.producer_id, new.producer_epoch

    # ------------------------------------------------------------------ checks
    def _check_producer(self, transactional_id: str, producer_id: int, producer_epoch: int,
                        pending_ok: bool = False) -> tuple[int, TransactionMetadata | None]:
        """Kafka's order: the producer id, the epoch, then (unless ``pending_ok``: a check
        that writes nothing) a pending transition."""
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return E.INVALID_PRODUCER_ID_MAPPING, None
        if producer_epoch != meta.producer_epoch:
            return E.PRODUCER_FENCED, None
        if meta.pending and not pending_ok:
            return E.CONCURRENT_TRANSACTIONS, None
        return E.NONE, meta

    # ------------------------------------------------------------------ AddPartitions / AddOffsets
    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: Iterable[tuple[str, int]], client_tv: int | None = None) -> int:
        """AddPartitionsToTxn's work: from a TV1 client, or (``client_tv=2``) from a partition
        leader or group coordinator adding a TV2 producer's partition for it."""
        err = await self._ready(transactional_id)
        if err:
            return err
        wanted = frozenset(partitions)
        async with self._lock:
            err = self.coordinator_error(transactional_id)
            if err:
                return err
            meta = self.txns.get(transactional_id)
            if meta is not None and meta.state.is_prepare and producer_id == meta.next_producer_id >= 0:
                # the producer already uses the id its epoch overflowed to; Complete* is pending
                return E.CONCURRENT_TRANSACTIONS
            err, meta = self._check_producer(transactional_id, producer_id, producer_epoch)
            if err:
                return err
            if meta.state.is_prepare:
                return E.CONCURRENT_TRANSACTIONS
            if meta.state not in (TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                  TxnState.COMPLETE_ABORT):
                return E.INVALID_TXN_STATE
            if meta.state == TxnState.ONGOING and wanted <= meta.partitions:
                return E.NONE
            now = self.now_ms()
            new = meta.copy(state=TxnState.ONGOING, partitions=meta.partitions | wanted,
                            start_ms=meta.start_ms if meta.state == TxnState.ONGOING else now,
                            last_update_ms=now)
            if client_tv is not None:
                new = new.copy(client_transaction_version=client_tv)
            claim = _Claim(meta)
        with claim:
            return await self._write(new, claim)

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """AddPartitionsToTxn v4+ ``verify_only`` (Kafka's handleVerifyPartitionsInTransaction):
        is each partition in the ongoing transaction? Nothing is written. A pending
        transition is not checked (the append checks the epoch again); Prepare* is
        CONCURRENT_TRANSACTIONS; a partition not in the transaction TRANSACTION_ABORTABLE
        (Kafka 4.3.1, at v4 and v5; the leader turns it into INVALID_TXN_STATE for producers
        that do not know the code)."""
        parts = list(partitions)
        err = self.coordinator_error(transactional_id) if transactional_id else E.INVALID_REQUEST
        meta = None
        if not err:
            meta = self.txns.get(transactional_id)
            if meta is None or meta.producer_id != producer_id:
                err = E.INVALID_PRODUCER_ID_MAPPING
            elif meta.producer_epoch != producer_epoch:
                err = E.PRODUCER_FENCED
            elif meta.state.is_prepare:
                err = E.CONCURRENT_TRANSACTIONS
        if err:
            return {tp: err for tp in parts}
        return {tp: (E.NONE if tp in meta.partitions else E.TRANSACTION_ABORTABLE) for tp in parts}

    def verify_local(self, producer_id: int, producer_epoch: int, topic: str,
                     partition: int) -> int | None:
        """In-memory check of a transactional batch that was not verified before its
        append (its Produce named no transactional id): the error code when this node
        coordinates the producer, None when it does not know it (the caller refuses)."""
        tid = self._by_pid.get(producer_id)
        meta = self.txns.get(tid) if tid is not None else None
        if meta is None or meta.partition not in self.loaded:
            return None
        if producer_epoch < meta.producer_epoch:
            return E.INVALID_PRODUCER_EPOCH
        if meta.state != TxnState.ONGOING or (topic, partition) not in meta.partitions \
                or producer_epoch != meta.producer_epoch:
            return E.INVALID_TXN_STATE
        return E.NONE

    def _coordinated_elsewhere(self, transactional_id: str) -> bool:
        """The id's ``__transaction_state`` partition exists and another broker leads it."""
        topic = self.broker.metadata.topics.get(TOPIC)
        if topic is None or not topic.partitions:
            return False
        pi = topic.partitions.get(trec.partition_for(transactional_id, len(topic.partitions)))
        return pi is not None and pi.leader != self.broker.node_id

    def offsets_partition(self, group_id: str) -> int:
        from kbroker.group.records import partition_for
        topic = self.broker.metadata.topics.get(OFFSETS_TOPIC)
        if topic is not None and topic.partitions:
            return partition_for(group_id, len(topic.partitions))
        gc = getattr(self.broker, "group_coordinator", None)
        n = gc.manager.config.num_partitions if gc is not None else \
            int(self.broker.config.get("offsets.topic.num.partitions"))
        return partition_for(group_id, n)

    async def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          group_id: str) -> int:
        if not group_id:
            return E.INVALID_GROUP_ID
        gc = getattr(self.broker, "group_coordinator", None)
        if gc is not None:
            err = await gc.ensure_offsets_topic()
            if err:
                return err
        return await self.add_partitions(transactional_id, producer_id, producer_epoch,
                                         [(OFFSETS_TOPIC, self.offsets_partition(group_id))])

    def check_txn_offset_commit(self, transactional_id: str, producer_id: int,
                                producer_epoch: int, group_id: str) -> int:
        """TxnOffsetCommit: the producer is current and added the group's offsets partition.

        TxnOffsetCommit goes to the group's coordinator, which need not coordinate the
        transaction: then (and with ``transaction.partition.verification.enable=false``) it
        is not checked here, as :meth:`verify`; the append still checks the producer epoch."""
        if not transactional_id:
            return E.INVALID_REQUEST
        if not self.verification_enabled or self._coordinated_elsewhere(transactional_id):
            return E.NONE
        err = self.coordinator_error(transactional_id)
        if err:
            return err
        # as Kafka's verification (verify_only), which does not look at a pending transition
        err, meta = self._check_producer(transactional_id, producer_id, producer_epoch,
                                         pending_ok=True)
        if err:
            return err
        if meta.state != TxnState.ONGOING or \
                (OFFSETS_TOPIC, self.offsets_partition(group_id)) not in meta.partitions:
            return E.INVALID_TXN_STATE
        return E.NONE

    # ------------------------------------------------------------------ EndTxn and markers
    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      commit: bool, tv2: bool = False) -> tuple[int, int, int]:
        """(error, producer id, producer epoch): EndTxn. The id/epoch are the producer's
        after a TV2 EndTxn (bumped, or a new id at an exhausted epoch; the current ones for
        a recognised retry) and -1/-1 otherwise, as Kafka answers them."""
        err = await self._ready(transactional_id)
        if err:
            return err, -1, -1
        if tv2:
            return await self._end_txn_v2(transactional_id, producer_id, producer_epoch, commit)
        return await self._end_txn_v1(transactional_id, producer_id, producer_epoch, commit), -1, -1

    async def _end_txn_v1(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          commit: bool) -> int:
        async with self._lock:
            err = self.coordinator_error(transactional_id)
            if err:
                return err
            err, meta = self._check_producer(transactional_id, producer_id, producer_epoch)
            if err:
                return err
            s = meta.state
            if s == TxnState.COMPLETE_COMMIT:
                return E.NONE if commit else E.INVALID_TXN_STATE
            if s == TxnState.COMPLETE_ABORT:
                return E.NONE if not commit else E.INVALID_TXN_STATE
            if s == TxnState.PREPARE_COMMIT:
                return E.CONCURRENT_TRANSACTIONS if commit else E.INVALID_TXN_STATE
            if s == TxnState.PREPARE_ABORT:
                return E.CONCURRENT_TRANSACTIONS if not commit else E.INVALID_TXN_STATE
            if s != TxnState.ONGOING:
                return E.INVALID_TXN_STATE
            claim = _Claim(meta)
        with claim:
            return await self._end(claim, meta, commit)

    async def _end_txn_v2(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          commit: bool) -> tuple[int, int, int]:
        """Kafka's TV2 ``endTransaction`` (see the module doc's table)."""
        async with self._lock:
            err = self.coordinator_error(transactional_id)
            if err:
                return err, -1, -1
            meta = self.txns.get(transactional_id)
            if meta is None:
                return E.INVALID_PRODUCER_ID_MAPPING, -1, -1
            retry_on_overflow = (meta.previous_producer_id == producer_id >= 0
                                 and producer_epoch == MAX_EPOCH - 1 and meta.producer_epoch == 0)
            retry_on_bump = meta.producer_epoch == producer_epoch + 1
            if meta.producer_id != producer_id and not retry_on_overflow:
                return E.INVALID_PRODUCER_ID_MAPPING, -1, -1
            s = meta.state
            if s.is_prepare:
                valid = retry_on_bump
            elif s in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
                valid = retry_on_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
            else:
                valid = producer_epoch == meta.producer_epoch
            if not valid:
                return E.PRODUCER_FENCED, -1, -1
            if meta.pending:      # Kafka checks the pending transition after the epoch
                return E.CONCURRENT_TRANSACTIONS, -1, -1
            retry = retry_on_bump or retry_on_overflow
            same = (E.NONE, meta.producer_id, meta.producer_epoch)
            if s == TxnState.ONGOING:
                pass                                        # ends the transaction
            elif s == TxnState.COMPLETE_COMMIT:
                if commit:
                    return same if retry else (E.INVALID_TXN_STATE, -1, -1)
                if retry:
                    return E.INVALID_TXN_STATE, -1, -1
            elif s == TxnState.COMPLETE_ABORT:
                if commit:
                    return E.INVALID_TXN_STATE, -1, -1
                if retry:
                    return same
            elif s == TxnState.PREPARE_COMMIT:
                return (E.CONCURRENT_TRANSACTIONS if commit else E.INVALID_TXN_STATE), -1, -1
            elif s == TxnState.PREPARE_ABORT:
                return (E.INVALID_TXN_STATE if commit else E.CONCURRENT_TRANSACTIONS), -1, -1
            elif s != TxnState.EMPTY or commit:
                return E.INVALID_TXN_STATE, -1, -1
            # Ongoing ends; an abort from Empty/Complete* is a new, epoch-bumping abort
            claim = _Claim(meta)
        with claim:
            return await self._end_v2(claim, commit, no_partitions=s != TxnState.ONGOING)

    async def _end_v2(self, claim: _Claim, commit: bool,
                      no_partitions: bool) -> tuple[int, int, int]:
        """Prepare* with the epoch bumped (a new producer id reserved when the bump
        reaches the last epoch), markers, Complete*; the producer's new id and epoch."""
        meta = claim.meta
        next_pid = -1
        if meta.epoch_exhausted:
            next_pid = await self.broker.producer_ids.generate()
        now = self.now_ms()
        bumped = meta.copy(producer_epoch=meta.producer_epoch + 1,
                           last_producer_epoch=meta.producer_epoch, next_producer_id=next_pid,
                           client_transaction_version=2,
                           start_ms=now if no_partitions else meta.start_ms)
        err = await self._end(claim, bumped, commit)
        if err:
            return err, -1, -1
        if next_pid >= 0:
            return E.NONE, next_pid, 0
        return E.NONE, bumped.producer_id, bumped.producer_epoch

    async def _end(self, claim: _Claim, meta: TransactionMetadata, commit: bool) -> int:
        """Prepare* of ``meta`` (the claimed id's state, or its bumped copy), then markers
        and Complete* (:meth:`_complete_prepared`)."""
        prepare = meta.copy(state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
                            last_update_ms=self.now_ms())
        err = await self._write(prepare, claim)
        if err:
            return err
        self.stats["commits" if commit else "aborts"] += 1
        await self._complete_prepared(claim)
        return E.NONE      # the decision is durable; markers are retried if they failed

    async def _fence_and_abort(self, claim: _Claim) -> int:
        """Abort the claimed id's transaction with a bumped epoch (Kafka's PrepareEpochFence)."""
        meta = claim.meta
        self.stats["fenced"] += 1
        epoch = meta.producer_epoch if meta.epoch_exhausted else meta.producer_epoch + 1
        return await self._end(claim, meta.copy(producer_epoch=epoch, last_producer_epoch=-1),
                               commit=False)

    def _leader_of(self, tp: tuple[str, int]) -> int | None:
        """The partition's leader in the image; None when the image has no such partition."""
        t = self.broker.metadata.topics.get(tp[0])
        pi = t.partitions.get(tp[1]) if t is not None else None
        return None if pi is None else pi.leader

    async def _complete_prepared(self, claim: _Claim) -> bool:
        """Markers for the claimed id's Prepare* transaction, then Complete*.

        When this node leads every partition the markers are appended here and now, and the
        transaction is complete when this returns (so on one node EndTxn answers after
        CompleteCommit). Otherwise a task delivers them (:class:`MarkerChannel`) and writes
        Complete* once every partition has its marker -- as Kafka, EndTxn answers once the
        decision (Prepare*) is stored. True when the transaction is complete."""
        prepare = claim.meta
        commit = prepare.state == TxnState.PREPARE_COMMIT
        me = self.broker.node_id
        parts = sorted(prepare.partitions)
        if self._nursery is not None and any(self._leader_of(tp) not in (me, None) for tp in parts):
            if prepare.transactional_id not in self._delivering:
                self._delivering.add(prepare.transactional_id)
                self._nursery.start_soon(self._deliver, prepare)
            return False
        # as the WriteTxnMarkers handler: a marker counts once the partition's ISR has it
        written = await write_as_leader(self.broker, prepare.producer_id, prepare.producer_epoch,
                                        commit, parts, self.coordinator_epoch(prepare.partition),
                                        self.stats)
        if not all(code in (E.NONE, E.UNKNOWN_TOPIC_OR_PARTITION) for code in written.values()):
            return False      # stay in Prepare*: the timer retries
        return await self._write_complete(claim)

    async def _write_complete(self, claim: _Claim) -> bool:
        prepare = claim.meta
        commit = prepare.state == TxnState.PREPARE_COMMIT
        done = prepare.copy(state=TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT,
                            partitions=frozenset(), last_update_ms=self.now_ms())
        if prepare.next_producer_id >= 0:
            # TV2 epoch overflow: the transaction ended at the last epoch; the id moves on
            done = done.copy(producer_id=prepare.next_producer_id, producer_epoch=0,
                             previous_producer_id=prepare.producer_id, next_producer_id=-1)
        return await self._write(done, claim) == E.NONE

    def _is_current(self, prepare: TransactionMetadata) -> bool:
        """This node still coordinates ``prepare``'s id and it is still in that Prepare*."""
        if self._closed or prepare.partition not in self.loaded:
            return False
        m = self.txns.get(prepare.transactional_id)
        return (m is not None and m.state == prepare.state and m.producer_id == prepare.producer_id
                and m.producer_epoch == prepare.producer_epoch)

    async def _deliver(self, prepare: TransactionMetadata) -> None:
        """The marker task of one transaction: deliver, then write Complete*."""
        tid = prepare.transactional_id
        try:
            ok = await self.markers.deliver(
                prepare.producer_id, prepare.producer_epoch,
                prepare.state == TxnState.PREPARE_COMMIT, sorted(prepare.partitions),
                self.coordinator_epoch(prepare.partition), lambda: self._is_current(prepare),
                transaction_version=prepare.client_transaction_version)
            claim = None
            if ok:
                async with self._lock:
                    meta = self.txns.get(tid)
                    if self._is_current(prepare) and not meta.pending:
                        claim = _Claim(meta)
            if claim is not None:
                with claim:
                    await self._write_complete(claim)
        except Exception:  # noqa: BLE001 - the timer retries a transaction left in Prepare*
            log.exception("marker delivery for %s failed", tid)
        finally:
            self._delivering.discard(tid)

    def write_markers(self, producer_id: int, producer_epoch: int, commit: bool,
                      partitions: Iterable[tuple[str, int]], coordinator_epoch: int) -> dict:
        """Append a marker to each led partition (WriteTxnMarkers' work); ``{tp: error}``
        (:func:`kbroker.txn.markers.write_local`)."""
        written = write_local(self.broker, producer_id, producer_epoch, commit, partitions,
                              coordinator_epoch, self.stats)
        return {tp: code for tp, (code, _) in written.items()}

    # ------------------------------------------------------------------ timeouts
    async def abort_timed_out(self) -> int:
        """Abort Ongoing transactions past their timeout (fencing the producer) and retry
        markers of transactions left in Prepare*. Returns how many were aborted."""
        claims: list[_Claim] = []
        prepared: list[TransactionMetadata] = []
        async with self._lock:
            now = self.now_ms()
            for meta in self.txns.values():
                if meta.pending:
                    continue
                if meta.state == TxnState.ONGOING and meta.start_ms + meta.timeout_ms < now:
                    claims.append(_Claim(meta))
                elif meta.state.is_prepare:
                    prepared.append(meta)
        aborted: list[str] = []

        async def abort(claim: _Claim) -> None:
            with claim:
                meta = claim.meta
                log.info("aborting transaction %s (producer %d epoch %d): timed out",
                         meta.transactional_id, meta.producer_id, meta.producer_epoch)
                try:
                    err = await self._fence_and_abort(claim)
                except Exception:  # noqa: BLE001 - one id's failure leaves it Ongoing for the next round
                    log.exception("aborting timed-out transaction %s failed", meta.transactional_id)
                    return
                if err == E.NONE:
                    aborted.append(meta.transactional_id)
                    self.stats["timeouts"] += 1

        try:
            # each id's abort writes and replicates on its own (Kafka's timer hands every
            # timed-out id to its end-transaction path at once): one slow write delays no other
            async with trio.open_nursery() as nursery:
                for claim in claims:
                    nursery.start_soon(abort, claim)
        finally:
            for claim in claims:
                claim.release()
        n = len(aborted)
        for meta in prepared:
            await self._finish_prepared(meta)
        return n

    async def _finish_prepared(self, meta: TransactionMetadata) -> None:
        """Markers and Complete* for ``meta``, found in Prepare* (after a load, by the
        timer), unless it changed since or a request or a marker task is at it."""
        tid = meta.transactional_id
        if meta.pending or tid in self._delivering or self.txns.get(tid) is not meta \
                or not meta.state.is_prepare:
            return
        with _Claim(meta) as claim:
            await self._complete_prepared(claim)

    # ------------------------------------------------------------------ expiration
    async def remove_expired_transactional_ids(self) -> int:
        """Tombstone and forget the ids past ``transactional.id.expiration.ms``
        (:mod:`kbroker.txn.expiry`); returns how many were forgotten.

        As Kafka's ``TransactionStateManager``: under the lock each chosen id is marked as
        being removed (``pending``, Kafka's ``prepareDead``: a request for it answers
        CONCURRENT_TRANSACTIONS meanwhile), the tombstones are written and replicated
        without the lock -- requests for every other id go on -- and an id is forgotten only
        if its tombstone was stored and it is still the state that was marked (no reload
        replaced it); the others are unmarked and stay."""
        gone = 0
        async with self._lock:
            now = self.now_ms()
            todo = expired_by_partition(self.txns.values(), self.loaded, now, self.id_expiration_ms)
            for metas in todo.values():
                for meta in metas:
                    meta.pending = True
        try:
            for p, metas in sorted(todo.items()):
                for batch, group in tombstone_batches(metas, now, self._max_batch_bytes(p)):
                    err = await self._append(p, batch, now)
                    if err:
                        log.warning("expiring %d transactional ids of %s-%d failed: %s", len(group),
                                    TOPIC, p, E(err).name if err in E._value2member_map_ else err)
                        break
                    if p not in self.loaded:
                        break       # the new coordinator replays the tombstones
                    for meta in group:
                        if self.txns.get(meta.transactional_id) is meta:
                            self._forget(meta.transactional_id)
                            gone += 1
        finally:
            for metas in todo.values():
                for meta in metas:
                    meta.pending = False    # the ids still here are ordinary again
        if gone > len(self.txns):
            # dicts keep their largest table: copy them so the memory goes with the ids
            self.txns, self._by_pid = dict(self.txns), dict(self._by_pid)
        if gone:
            self.stats["expired_ids"] += gone
            log.info("expired %d transactional ids (transactional.id.expiration.ms=%d)",
                     gone, self.id_expiration_ms)
        return gone

    def _max_batch_bytes(self, partition: int) -> int:
        try:
            return int(self.broker.replicas.get_partition(TOPIC, partition).log.config.max_message_bytes)
        except Exception:  # noqa: BLE001 - not local any more: the append will say so
            return 1_000_000

    # ------------------------------------------------------------------ admin
    def list_transactions(self, states: set[str] | None, producer_ids: set[int] | None,
                          min_duration_ms: int = -1) -> list[TransactionMetadata]:
        now = self.now_ms()
        out = []
        for meta in self.txns.values():
            if meta.partition not in self.loaded:
                continue
            if states and meta.state.display_name not in states:
                continue
            if producer_ids and meta.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and (meta.state != TxnState.ONGOING
                                         or now - meta.start_ms < min_duration_ms):
                continue
            out.append(meta)
        return sorted(out, key=lambda m: m.transactional_id)

    def describe(self, transactional_id: str) -> tuple[int, TransactionMetadata | None]:
        err = self.coordinator_error(transactional_id) if transactional_id else E.NOT_COORDINATOR
        if err:
            return err, None
        meta = self.txns.get(transactional_id)
        if meta is None:
            return E.TRANSACTIONAL_ID_NOT_FOUND, None
        return E.NONE, meta
