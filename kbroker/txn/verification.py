"""Transaction verification on partition leaders (KIP-890 part 1).

Kafka's ``AddPartitionsToTxnManager`` and ``VerificationGuard`` for kbroker: before a
producer's first transactional batch on a partition is appended, the leader asks the
producer's transaction coordinator whether the partition is in the ongoing transaction,
so a late or stray write (a batch the producer sent before an abort, a client that never
called AddPartitionsToTxn) cannot open a transaction the coordinator will never end --
a "hanging transaction" that would hold the last stable offset back forever.

- **When**: Produce calls :meth:`TxnVerifier.wait_verified` before appending. A partition
  is verified when its batch is transactional, the request names a ``transactional_id``,
  ``transaction.partition.verification.enable`` is true and the producer has no open
  transaction on the partition yet (afterwards the open transaction itself is the proof,
  until its marker).
- **Guard**: each partition's producer state hands out a guard object before the question
  is sent (:meth:`ProducerStateManager.start_verification`); any transactional batch or
  marker of the producer stored meanwhile spends it. A positive answer admits the batch
  only while its guard is still the partition's -- an abort marker that overtook the
  answer makes the append fail with INVALID_TXN_STATE, as in Kafka.
- **Where**: the coordinator is the leader of the id's ``__transaction_state`` partition in
  the current image. When that is this node the coordinator is asked in memory; otherwise
  one AddPartitionsToTxn v4 (``verify_only``, batched form: the version range Kafka's
  brokers send starts there and v5 only adds TV2 error codes) goes to it over the
  inter-broker listener (:class:`kbroker.raft.transport.RpcClient`). No topic, no leader or
  no endpoint is COORDINATOR_NOT_AVAILABLE; a lost connection NETWORK_EXCEPTION.
- **Errors** reach the producer as Kafka's ``ReplicaManager`` maps them: PRODUCER_FENCED ->
  INVALID_PRODUCER_EPOCH (the manager's translation); CONCURRENT_TRANSACTIONS,
  NETWORK_EXCEPTION, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and
  NOT_COORDINATOR -> NOT_ENOUGH_REPLICAS (retriable, no metadata refresh); a top-level
  CLUSTER_AUTHORIZATION_FAILED -> INVALID_TXN_STATE; TRANSACTION_ABORTABLE (a partition
  not in the transaction) stays for Produce v11+ and is INVALID_TXN_STATE below (Kafka's
  ``genericErrorSupported`` / ``defaultError`` operations); the rest as they are.
- **Transaction version 2** (KIP-890 part 2): a Produce v12+ (and a TxnOffsetCommit v5,
  for its ``__consumer_offsets`` partition) asks the coordinator to *add* the partitions
  instead (``add=True``: AddPartitionsToTxn v5 with ``verify_only`` false, or the local
  coordinator's :meth:`add_partitions` with client transaction version 2) -- the client no
  longer sends AddPartitionsToTxn itself. This happens whether or not
  ``transaction.partition.verification.enable`` is set (the add is part of the protocol);
  the same guard protects the append, and the coordinator's errors reach the producer
  with the same translations. An add answered CONCURRENT_TRANSACTIONS (another request's
  transition of the id is being written) is asked again every
  ``add.partitions.to.txn.retry.backoff.ms`` for up to
  ``add.partitions.to.txn.retry.backoff.max.ms`` (at most ``request.timeout.ms``) before
  the producer gets it, as Kafka's ``ReplicaManager`` does for a TV2 producer.
- **The append** (synchronous, in :mod:`kbroker.replica`) consults :meth:`check` through
  the replica manager's ``txn_verifier`` hook: the verdict computed for this (producer,
  epoch, partition), else -- a transactional batch that was not verified (no
  ``transactional_id`` in the request) -- the coordinator's in-memory check when it
  coordinates the producer here and INVALID_TXN_STATE otherwise (Kafka's sentinel guard
  never verifies).

Not implemented: the lowest-sequence bookkeeping of Kafka's verification entry (a retried
lower sequence after a retriable verification error), authorization, coalescing the
verifications of several produce requests into one AddPartitionsToTxn per node (each
request sends its own, batched over its partitions).
"""
from __future__ import annotations

import logging

import trio

from kbroker.wire import messages, records as wire_records
from kbroker.wire.error_codes import ErrorCode as E

from . import records as trec

log = logging.getLogger("kbroker.txn.verification")

ADD_PARTITIONS_TO_TXN = 24
VERIFY_VERSION = 4          # the first broker-to-broker (batched, verify_only) version
ADD_VERSION = 5             # a TV2 add on a producer's behalf (Kafka's brokers send v5)

# Kafka's ReplicaManager: coordinator trouble becomes a retriable produce error
_RETRIABLE = frozenset({E.CONCURRENT_TRANSACTIONS, E.NETWORK_EXCEPTION,
                        E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE,
                        E.NOT_COORDINATOR})

Key = tuple[int, int, str, int]      # (producer id, producer epoch, topic, partition)


def produce_error(code: int) -> int:
    """A verification's error as the producer sees it."""
    if code == E.PRODUCER_FENCED:
        return E.INVALID_PRODUCER_EPOCH
    if code in _RETRIABLE:
        return E.NOT_ENOUGH_REPLICAS
    return code


class TxnVerifier:
    """Owned by the TransactionCoordinator (``coordinator.verifier``); installed as the
    replica manager's ``txn_verifier``. Holds the verdicts between the asynchronous
    verification and the synchronous append (keyed by producer, epoch and partition)."""

    def __init__(self, broker, coordinator, *, rpc=None, timeout_s: float | None = None):
        self.broker = broker
        self.coordinator = coordinator
        self._rpc = rpc
        if timeout_s is None:
            timeout_s = int(broker.config.get("request.timeout.ms") or 30_000) / 1000
        self.timeout_s = timeout_s
        cfg = broker.config
        self.add_retry_ms = int(cfg.get("add.partitions.to.txn.retry.backoff.ms"))
        self.add_retry_max_ms = min(int(cfg.get("add.partitions.to.txn.retry.backoff.max.ms")),
                                    int(timeout_s * 1000))
        # verdicts waiting for their append: key -> (guard, error code)
        self._verdicts: dict[Key, tuple[object, int]] = {}
        self.stats = {"verifications": 0, "remote_requests": 0, "remote_failures": 0,
                      "verified": 0, "refused": 0, "unverified_refused": 0}

    @property
    def enabled(self) -> bool:
        return self.coordinator.verification_enabled

    def statistics(self) -> dict:
        return {"pending_verdicts": len(self._verdicts), **self.stats}

    # ------------------------------------------------------------------ before the append
    async def wait_verified(self, transactional_id: str | None, topic_data, *,
                            add: bool = False, abortable_ok: bool = True) -> None:
        """Produce's pre-check: verify (``add``: add, TV2) every partition of the request
        whose batch needs it (see the module doc); the verdicts wait for :meth:`check`.
        ``abortable_ok``: the producer knows TRANSACTION_ABORTABLE (Produce v11+)."""
        if not transactional_id or not (self.enabled or add):
            return
        todo: dict[tuple[str, int], object] = {}
        pid = epoch = now_ms = None
        for td in topic_data:
            for pd in td.partition_data:
                header = _first_header(pd.records)
                if header is None or not header.is_transactional or header.is_control \
                        or not header.has_producer_id:
                    continue
                try:
                    part = self.broker.replicas.get_partition(td.name, pd.index)
                except Exception:  # noqa: BLE001 - the append answers for this partition
                    continue
                ps = part.log.producer_state
                if ps.has_ongoing(header.producer_id, header.producer_epoch):
                    continue
                if pid is None:
                    pid, epoch = header.producer_id, header.producer_epoch
                elif (header.producer_id, header.producer_epoch) != (pid, epoch):
                    continue      # one producer per request; the append judges the others
                if now_ms is None:      # an unused guard expires with the producers
                    now_ms = self.broker.clock.now_ms()
                todo[(td.name, pd.index)] = ps.start_verification(pid, epoch, now_ms)
        if not todo:
            return
        self.stats["verifications"] += 1
        if add:
            errors = await self.add(transactional_id, pid, epoch, sorted(todo))
        else:
            errors = await self.verify(transactional_id, pid, epoch, sorted(todo))
        for tp, guard in todo.items():
            code = produce_error(errors.get(tp, E.NONE))
            if code == E.TRANSACTION_ABORTABLE and not abortable_ok:
                code = E.INVALID_TXN_STATE
            self.stats["refused" if code else "verified"] += 1
            self._verdicts[(pid, epoch, tp[0], tp[1])] = (guard, code)

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The coordinator's answer per partition (0 = in the ongoing transaction), with
        Kafka's AddPartitionsToTxnManager translations; not yet the produce mapping."""
        node, err = self.coordinator_node(transactional_id)
        if err:
            return {tp: err for tp in partitions}
        if node == self.broker.node_id:
            return self.coordinator.verify_partitions(transactional_id, producer_id,
                                                      producer_epoch, partitions)
        return await self._ask(node, transactional_id, producer_id, producer_epoch, partitions)

    async def add(self, transactional_id: str, producer_id: int, producer_epoch: int,
                  partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """TV2: add the partitions to the producer's transaction at its coordinator (a
        completed transaction becomes a new ongoing one); the answer per partition."""
        self.stats.setdefault("adds", 0)
        self.stats["adds"] += 1
        give_up = trio.current_time() + self.add_retry_max_ms / 1000
        while True:
            errors = await self._add(transactional_id, producer_id, producer_epoch, partitions)
            if E.CONCURRENT_TRANSACTIONS not in errors.values() or trio.current_time() >= give_up:
                return errors
            self.stats["add_retries"] = self.stats.get("add_retries", 0) + 1
            await trio.sleep(self.add_retry_ms / 1000)

    async def _add(self, transactional_id: str, producer_id: int, producer_epoch: int,
                   partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        node, err = self.coordinator_node(transactional_id)
        if err:
            return {tp: err for tp in partitions}
        if node == self.broker.node_id:
            code = await self.coordinator.add_partitions(transactional_id, producer_id,
                                                         producer_epoch, partitions, client_tv=2)
            return {tp: code for tp in partitions}
        return await self._ask(node, transactional_id, producer_id, producer_epoch, partitions,
                               verify_only=False)

    def coordinator_node(self, transactional_id: str) -> tuple[int, int]:
        """(node id, 0) of the id's coordinator in the image, or (-1, error)."""
        topic = self.broker.metadata.topics.get(trec.TRANSACTION_STATE_TOPIC)
        if topic is None or not topic.partitions:
            return -1, E.COORDINATOR_NOT_AVAILABLE
        pi = topic.partitions.get(trec.partition_for(transactional_id, len(topic.partitions)))
        if pi is None or pi.leader is None or pi.leader < 0:
            return -1, E.COORDINATOR_NOT_AVAILABLE
        return pi.leader, E.NONE

    async def _ask(self, node: int, tid: str, pid: int, epoch: int,
                   partitions: list[tuple[str, int]], *,
                   verify_only: bool = True) -> dict[tuple[str, int], int]:
        markers = self.coordinator.markers
        addr = markers.endpoint(node) if markers is not None else None
        b = self.broker.metadata.brokers.get(node)
        if addr is None or b is None or getattr(b, "fenced", False):
            return {tp: E.COORDINATOR_NOT_AVAILABLE for tp in partitions}
        R = messages.AddPartitionsToTxnRequest
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        body = R(transactions=[R.AddPartitionsToTxnTransaction(
            transactional_id=tid, producer_id=pid, producer_epoch=epoch, verify_only=verify_only,
            topics=[R.AddPartitionsToTxnTopic(name=t, partitions=sorted(ps))
                    for t, ps in sorted(by_topic.items())])])
        self.stats["remote_requests"] += 1
        resp = await self.rpc.call_addr(addr, ADD_PARTITIONS_TO_TXN,
                                        VERIFY_VERSION if verify_only else ADD_VERSION, body,
                                        timeout=self.timeout_s)
        if resp is None:
            self.stats["remote_failures"] += 1
            return {tp: E.NETWORK_EXCEPTION for tp in partitions}
        if resp.error_code:
            top = (E.INVALID_TXN_STATE if resp.error_code == E.CLUSTER_AUTHORIZATION_FAILED
                   else resp.error_code)
            return {tp: top for tp in partitions}
        out = {tp: E.NONE for tp in partitions}
        for txn in resp.results_by_transaction:
            if txn.transactional_id != tid:
                continue
            for t in txn.topic_results:
                for pr in t.results_by_partition:
                    tp = (t.name, pr.partition_index)
                    if tp in out and pr.partition_error_code:
                        code = pr.partition_error_code
                        out[tp] = E.INVALID_PRODUCER_EPOCH if code == E.PRODUCER_FENCED else code
        return out

    @property
    def rpc(self):
        if self._rpc is None:
            from kbroker.raft.transport import RpcClient
            self._rpc = RpcClient(client_id=f"kbroker-txn-verify-{self.broker.node_id}")
        return self._rpc

    async def aclose(self) -> None:
        if self._rpc is not None:
            await self._rpc.aclose()

    # ------------------------------------------------------------------ the append's hook
    def check(self, producer_id: int, producer_epoch: int, topic: str, partition: int) -> int:
        """The replica manager's synchronous check of a producer's first transactional
        batch on a led partition (``txn_verifier``); 0 admits it."""
        verdict = self._verdicts.pop((producer_id, producer_epoch, topic, partition), None)
        if verdict is None and not self.enabled:
            return E.NONE
        if verdict is not None:
            guard, code = verdict
            if code:
                return code
            try:
                ps = self.broker.replicas.get_partition(topic, partition).log.producer_state
            except Exception:  # noqa: BLE001
                return E.INVALID_TXN_STATE
            # an abort marker (or another transaction's batch) since the question spent it
            return E.NONE if ps.verification_guard(producer_id) is guard else E.INVALID_TXN_STATE
        # not verified before the append (no transactional id in the request): only a
        # transaction coordinated here can be checked; anything else is refused
        code = self.coordinator.verify_local(producer_id, producer_epoch, topic, partition)
        if code is None:
            self.stats["unverified_refused"] += 1
            return E.INVALID_TXN_STATE
        return code


def _first_header(records):
    if records is None or len(records) < wire_records.BATCH_HEADER_SIZE:
        return None
    try:
        return wire_records.parse_header(records, 0)
    except Exception:  # noqa: BLE001 - the append names the problem
        return None
