"""The quorum-backed controller: Kafka's ``QuorumController`` on top of the Raft driver.

The admin operations are the single-node ``Controller``'s (validate → records → commit →
replay); only ``_commit`` differs: the records are proposed to the Raft leader as one run
(one batch on disk, so a follower never sees half an operation in one fetch) and the call
returns once they are committed by a majority and replayed into the image — or raises
``NotController`` when this node is not (or stops being) the active controller, which the
broker side (``channel.ControllerChannel``) answers by finding the new one.

Besides, like Kafka's ``ClusterControlManager``/``BrokerHeartbeatManager``/
``ReplicationControlManager``:

- ``register_broker``: a ``RegisterBrokerRecord`` (fenced) whose broker epoch is its own
  offset in the metadata log; re-registering with the same incarnation id returns the same
  epoch;
- ``heartbeat``: session bookkeeping (in memory, on the active controller only); a fenced
  broker that asks to be unfenced and whose metadata offset has reached its registration is
  unfenced (``BrokerRegistrationChangeRecord`` fenced=-1) and partitions left without a
  leader that it can lead get it back; ``want_shut_down`` fences it and moves its
  leaderships (controlled shutdown);
- the session check (``run_session_checks``): a broker with no heartbeat for
  ``broker.session.timeout.ms`` is fenced and the leadership of its partitions moves to
  another live replica in the ISR; a partition with no such replica gets leader -1 (its
  ISR keeps the last member, as Kafka does without unclean election) until the broker comes
  back. A controller that was stalled does not count its own stall against brokers;
- on activation: ``FeatureLevelRecord(metadata.version)`` when the log has none (Kafka's
  bootstrap records), and every registered broker gets a fresh session.

Placement: new partitions go round-robin over the live (unfenced) brokers from a rotating
start, so topics spread over the cluster.
"""
from __future__ import annotations

import logging
from typing import Sequence

import trio

from kbroker.raft import NotLeader
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

from .controller import METADATA_VERSION, Controller
from .store import encode_record

log = logging.getLogger("kbroker.controller")


class NotController(Exception):
    """This node is not the active controller (anymore)."""


class QuorumController(Controller):
    def __init__(self, config, quorum, clock_ms):
        self.quorum = quorum
        self._clock_ms = clock_ms
        super().__init__(config, quorum.store, quorum.image, on_change=None)
        self._sessions: dict[int, float] = {}        # broker id -> last heartbeat (trio time)
        self._activated_epoch = -1
        self._placement = 0
        self.stats = {"commits": 0, "records": 0, "fenced": 0, "unfenced": 0, "registrations": 0,
                      "leader_moves": 0, "not_controller": 0}

    # the quorum's state machine owns the image; Controller.__init__'s assignment is ignored
    @property
    def image(self):
        return self.quorum.image

    @image.setter
    def image(self, value) -> None:
        pass

    def load(self):
        return self.image

    @property
    def active(self) -> bool:
        return self.quorum.is_active

    # ------------------------------------------------------------------ commit
    async def _commit(self, records: Sequence):
        if not records:
            return self.image
        driver = self.quorum.driver
        if not self.quorum.is_active:
            self.stats["not_controller"] += 1
            raise NotController()
        epoch = driver.epoch
        result = driver.propose([encode_record(r) for r in records])
        if isinstance(result, NotLeader):
            raise NotController()
        if not await driver.wait_applied(result, epoch):
            self.stats["not_controller"] += 1
            raise NotController()
        self.stats["commits"] += 1
        self.stats["records"] += len(records)
        return self.image

    def _next_offset(self) -> int:
        return self.quorum.driver.node.log.end_offset

    def _live_ids(self) -> list[int]:
        ids = sorted(b.node_id for b in self.image.live_brokers())
        if not ids:
            return [self.config.node_id] if not self.quorum.multi_node else []
        # rotate the start so consecutive topics do not all begin on the same broker
        k = self._placement % len(ids)
        self._placement += 1
        return ids[k:] + ids[:k]

    # ------------------------------------------------------------------ activation
    async def maybe_activate(self) -> None:
        """Called on role changes: bootstrap records and fresh sessions for a new leader."""
        if not self.active or self._activated_epoch == self.quorum.driver.epoch:
            return
        self._activated_epoch = self.quorum.driver.epoch
        now = trio.current_time()
        self._sessions = {b: now for b in self.image.brokers}
        log.info("node %d is the active controller (epoch %d)", self.config.node_id, self._activated_epoch)
        if "metadata.version" not in self.image.features:
            try:
                async with self._lock:
                    await self._commit([messages.FeatureLevelRecord(name="metadata.version",
                                                                    feature_level=METADATA_VERSION)])
            except NotController:
                pass

    async def bootstrap(self, endpoints, rack, incarnation_id) -> None:  # pragma: no cover - not used
        raise NotImplementedError("brokers register through BrokerRegistration")

    # ------------------------------------------------------------------ registration
    async def register_broker(self, broker_id: int, cluster_id: str, incarnation_id, listeners,
                              rack: str | None) -> tuple[int, int]:
        """``(error_code, broker_epoch)``."""
        async with self._lock:
            if cluster_id != self.image.cluster_id:
                return E.INCONSISTENT_CLUSTER_ID, -1
            old = self.image.brokers.get(broker_id)
            if old is not None and old.incarnation_id == incarnation_id:
                self._sessions[broker_id] = trio.current_time()
                return E.NONE, old.broker_epoch
            epoch = self._next_offset()
            EP = messages.RegisterBrokerRecord.BrokerEndpoint
            rec = messages.RegisterBrokerRecord(
                broker_id=broker_id, is_migrating_zk_broker=False, incarnation_id=incarnation_id,
                broker_epoch=epoch, rack=rack, fenced=True, in_controlled_shutdown=False,
                end_points=[EP(name=n, host=h, port=p, security_protocol=0) for n, h, p in listeners])
            await self._commit([rec])
            self._sessions[broker_id] = trio.current_time()
            self.stats["registrations"] += 1
            log.info("broker %d registered with epoch %d", broker_id, epoch)
            return E.NONE, epoch

    async def heartbeat(self, broker_id: int, broker_epoch: int, metadata_offset: int,
                        want_fence: bool, want_shut_down: bool) -> tuple[int, bool, bool, bool]:
        """``(error_code, is_caught_up, is_fenced, should_shut_down)``."""
        b = self.image.brokers.get(broker_id)
        if b is None or b.broker_epoch != broker_epoch:
            return E.STALE_BROKER_EPOCH, False, True, False
        self._sessions[broker_id] = trio.current_time()
        caught_up = metadata_offset >= broker_epoch
        if want_shut_down:
            async with self._lock:
                b = self.image.brokers.get(broker_id)
                if b is not None and not b.fenced:
                    await self._commit(self._fence_records(broker_id, b.broker_epoch))
            return E.NONE, caught_up, True, True
        if b.fenced and not want_fence and caught_up:
            async with self._lock:
                b = self.image.brokers.get(broker_id)
                if b is not None and b.fenced and b.broker_epoch == broker_epoch:
                    await self._commit(self._unfence_records(broker_id, broker_epoch))
                    self.stats["unfenced"] += 1
                    log.info("broker %d unfenced", broker_id)
        b = self.image.brokers.get(broker_id)
        return E.NONE, caught_up, bool(b is None or b.fenced), False

    # ------------------------------------------------------------------ fencing
    def _fence_records(self, broker_id: int, broker_epoch: int) -> list:
        recs: list = [messages.BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker_epoch,
                                                              fenced=1)]
        live = {b.node_id for b in self.image.live_brokers()} - {broker_id}
        for t in self.image.topics.values():
            for p in t.partitions.values():
                if broker_id not in p.replicas:
                    continue
                if p.leader == broker_id:
                    others = [r for r in p.isr if r != broker_id and r in live]
                    new_isr = [r for r in p.isr if r != broker_id] or [broker_id]
                    new_leader = others[0] if others else -1
                    recs.append(messages.PartitionChangeRecord(
                        partition_id=p.partition, topic_id=t.topic_id, leader=new_leader,
                        isr=new_isr if list(new_isr) != list(p.isr) else None))
                    self.stats["leader_moves"] += 1
                elif broker_id in p.isr and len(p.isr) > 1:
                    recs.append(messages.PartitionChangeRecord(
                        partition_id=p.partition, topic_id=t.topic_id,
                        isr=[r for r in p.isr if r != broker_id]))
        return recs

    def _unfence_records(self, broker_id: int, broker_epoch: int) -> list:
        recs: list = [messages.BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker_epoch,
                                                              fenced=-1)]
        for t in self.image.topics.values():
            for p in t.partitions.values():
                if p.leader == -1 and broker_id in p.isr:
                    recs.append(messages.PartitionChangeRecord(
                        partition_id=p.partition, topic_id=t.topic_id, leader=broker_id))
        return recs

    async def fence_broker(self, broker_id: int) -> bool:
        async with self._lock:
            b = self.image.brokers.get(broker_id)
            if b is None or b.fenced:
                return False
            await self._commit(self._fence_records(broker_id, b.broker_epoch))
            self.stats["fenced"] += 1
            log.warning("broker %d fenced: no heartbeat for %d ms", broker_id,
                        self.config.get("broker.session.timeout.ms"))
            return True

    async def run_session_checks(self) -> None:
        """Forever: on the active controller, fence brokers whose session expired."""
        timeout = self.config.get("broker.session.timeout.ms") / 1000
        period = min(1.0, timeout / 4)
        last = trio.current_time()
        while True:
            await trio.sleep(period)
            now = trio.current_time()
            stall = now - last - period
            last = now
            if stall > period:
                # we were not running (GC, a long operation): nobody could reach us either
                for b in self._sessions:
                    self._sessions[b] += stall
            if not self.active:
                continue
            await self.maybe_activate()
            for b in list(self.image.live_brokers()):
                seen = self._sessions.setdefault(b.node_id, now)
                if now - seen > timeout:
                    try:
                        await self.fence_broker(b.node_id)
                    except NotController:
                        break

    def statistics(self) -> dict:
        return {"image": self.image.statistics(), "controller": dict(self.stats),
                "active": self.active, "sessions": len(self._sessions)}
