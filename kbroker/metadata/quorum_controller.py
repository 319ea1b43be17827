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
  offset in the metadata log, with the ids of the broker's online log dirs (``LogDirs``,
  checked as Kafka does); re-registering with the same incarnation id returns the same
  epoch. A new incarnation first leaves every ISR, and with ELR on (KIP-966) one that cannot
  prove a clean shutdown -- its ``PreviousBrokerEpoch`` is not the epoch registered for it,
  or it spoke BrokerRegistration below v3 -- also leaves every ELR (kept as last known ELR):
  its log may have lost an unflushed tail (Kafka's ``handleBrokerShutdown``);
- ``unregister_broker`` (UnregisterBroker, ``kafka-cluster.sh unregister``): the broker
  leaves every ISR and its leaderships move, then its registration is removed;
- ``heartbeat``: session bookkeeping (in memory, on the active controller only) and
  Kafka's broker states (``BrokerHeartbeatManager.calculateNextBrokerState``): a fenced
  broker that asks to be unfenced and whose metadata offset has reached its registration is
  unfenced (``BrokerRegistrationChangeRecord`` fenced=-1) and partitions left without a
  leader that it can lead get it back. ``want_shut_down`` (KIP-631 controlled shutdown): a
  broker that leads nothing is fenced at once and told ``should_shut_down``; one that leads
  partitions enters the controlled-shutdown state (``in_controlled_shutdown``, KIP-841): it
  leaves every ISR and its leaderships move, and it is told to shut down (and fenced) once
  it leads nothing and every active broker has reported a metadata offset at or past that
  change, so nobody still routes to it;
- log directories (KIP-858, ``directories.py``): every partition record names each
  replica's directory; ``assign_replicas_to_dirs`` (AssignReplicasToDirs) writes where a
  broker placed a replica, and the ``OfflineLogDirs`` of a heartbeat take that broker's
  replicas in those directories out of their ISRs and record its remaining online dirs —
  all in the log, so a new active controller knows what the previous one learnt;
- ``alter_partition`` (AlterPartition, KIP-497/KIP-903): a partition leader changes its
  ISR; Kafka's ``ReplicationControlManager.alterPartition`` checks, one
  ``PartitionChangeRecord`` per changed partition;
- the session check (``run_session_checks``): a broker with no heartbeat for
  ``broker.session.timeout.ms`` is fenced;
- elections (fencing, controlled shutdown, unfencing) follow Kafka's
  ``PartitionChangeBuilder`` without unclean election: the current leader stays if it is
  still acceptable, else the first replica (in assignment order) that is in the target ISR
  and active (unfenced, not shutting down); none gives leader -1, and an ISR that would
  become empty keeps its last member, until that broker comes back. A controller that was
  stalled does not count its own stall against brokers;
- on activation: when the log has no ``metadata.version``, the bootstrap records — those of
  ``bootstrap.checkpoint`` written by ``kbroker storage format`` (or Kafka's tool), else
  ``FeatureLevelRecord(metadata.version)`` at kbroker's level and the default levels of the
  other features kbroker serves (``feature_control.default_levels``), written before any
  registration is checked against them (``_maybe_bootstrap``); and every registered broker
  gets a fresh session. A leader of an empty log that has not persisted its epoch start yet
  (a one-node quorum's first start) proposes them at once
  (``propose_bootstrap_with_epoch_start``): written and committed with the LeaderChange;
- every partition change is built by ``reassign.build_change`` (Kafka's
  ``PartitionChangeBuilder``), so an ISR change that holds all the target replicas of an
  ongoing reassignment completes it (an AlterPartition whose completion moves the
  leadership away from the requester answers ``NEW_LEADER_ELECTED``, v0–v1
  ``FENCED_LEADER_EPOCH``);
- ``elect_leaders`` (ElectLeaders, ``elect.py``), ``alter_partition_reassignments`` and
  ``list_partition_reassignments`` (KIP-455, ``reassign.py``), and the automatic
  preferred-leader rebalance (``maybe_balance_leaders``, run by the session-check loop every
  ``leader.imbalance.check.interval.seconds`` when ``auto.leader.rebalance.enable``);
- the idle-interval writer (``run_noop_writer``, KIP-835): the active controller commits a
  ``NoOpRecord`` every ``metadata.max.idle.interval.ms`` (500 ms; 0 turns it off), as
  Kafka's periodic ``writeNoOpRecord`` task, busy or not, so the metadata log's high
  watermark keeps moving and a broker that stops seeing it move knows its metadata is stale.

Placement: new partitions go round-robin over the live (unfenced) brokers from a rotating
start, so topics spread over the cluster; a broker whose log dirs are all cordoned (KIP-1066,
``cordoned.py``, from the heartbeats' ``CordonedLogDirs``) gets none.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import trio

from kbroker.raft import NotLeader
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

from . import configs as tc
from . import cordoned, directories, elr, feature_control, reassign
from .controller import METADATA_VERSION, Controller, default_feature_records
from .errors import NotController
from .image import apply_partition_change
from .store import encode_record

log = logging.getLogger("kbroker.controller")


@dataclass(frozen=True)
class AlterPartitionResult:
    """One partition's answer to AlterPartition: an error, or the partition's state after it."""
    error_code: int
    leader_id: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


class _RaftKRaftVersion:
    """``kraft.version`` as the Raft leader holds it (Kafka's ``RaftClientKRaftVersionAccessor``):
    the upgrade is checked and written by ``RaftNode.upgrade_kraft_version`` in the epoch this
    controller was activated in."""

    def __init__(self, driver, epoch: int):
        self.driver = driver
        self.epoch = epoch

    def current(self) -> int:
        return self.driver.node.kraft_version

    def upgrade(self, level: int, validate_only: bool) -> tuple[int, str | None]:
        result = self.driver.upgrade_kraft_version(self.epoch, level, validate_only)
        return result.error_code, result.message


class QuorumController(Controller):
    def __init__(self, config, quorum, clock_ms, bootstrap=None):
        self.quorum = quorum
        # records of `storage format`'s bootstrap.checkpoint (None: the built-in defaults)
        self._bootstrap = list(bootstrap) if bootstrap else None
        self._clock_ms = clock_ms
        super().__init__(config, quorum.store, quorum.image, on_change=None)
        self._sessions: dict[int, float] = {}        # broker id -> last heartbeat (trio time)
        self._offsets: dict[int, int] = {}           # broker id -> metadata offset it last reported
        self._shutdown_offsets: dict[int, int] = {}  # broker id -> offset of its controlled-shutdown change
        self._activated_epoch = -1
        # (offset of the last record, epoch) of bootstrap records proposed with the epoch start
        self._early_bootstrap: tuple[int, int] | None = None
        self._placement = 0
        self.stats = {"commits": 0, "records": 0, "fenced": 0, "unfenced": 0, "registrations": 0,
                      "leader_moves": 0, "not_controller": 0, "isr_changes": 0,
                      "controlled_shutdowns": 0, "elections": 0, "rebalance_elections": 0,
                      "reassignments": 0, "unclean_registrations": 0, "noop_records": 0}
        self._next_balance = None                    # trio time of the next auto rebalance

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
        mv = self.image.features.get("metadata.version")
        result = driver.propose([encode_record(r, mv) for r in records])
        if isinstance(result, NotLeader):
            raise NotController()
        if not await driver.wait_applied(result, epoch):
            self.stats["not_controller"] += 1
            raise NotController()
        self.stats["commits"] += 1
        self.stats["records"] += len(records)
        return self.image

    # ------------------------------------------------------------------ kraft.version
    def _kraft_version_access(self):
        return _RaftKRaftVersion(self.quorum.driver, self._activated_epoch)

    def _features_error(self, code: int, message: str | None) -> tuple[int, str | None]:
        if code == E.NOT_LEADER_OR_FOLLOWER:
            raise NotController()     # Kafka: NotLeaderException → NOT_CONTROLLER, ask the new one
        return super()._features_error(code, message)

    def _next_offset(self) -> int:
        return self.quorum.driver.node.log.end_offset

    def _live_ids(self) -> list[int]:
        # a broker shutting down gets no new partitions, nor one whose log dirs are all
        # cordoned (KIP-1066)
        active = self._active_ids()
        ids = sorted(b for b in active if cordoned.takes_new_replicas(self.image.brokers[b]))
        if not ids and active:
            return []                             # every active broker is cordoned
        if not ids:
            # a single combined node places on itself; a controller-only node never does
            # (nothing is placed until a broker registers, as in Kafka), nor a multi-node quorum
            alone = not self.quorum.multi_node and "broker" in (self.config.get("process.roles") or ())
            return [self.config.node_id] if alone else []
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
                    await self._maybe_bootstrap()
            except NotController:
                pass

    async def _maybe_bootstrap(self) -> None:
        """With ``_lock`` held: commit the bootstrap records if the log has none yet. Kafka's
        active controller appends them as the first records of its epoch, before any other
        write, so no write is ever checked against an image without ``metadata.version``."""
        if "metadata.version" in self.image.features:
            return
        driver = self.quorum.driver
        if self._early_bootstrap is not None and self._early_bootstrap[1] == driver.epoch:
            # proposed with the epoch's LeaderChange (``propose_bootstrap_with_epoch_start``)
            if not await driver.wait_applied(*self._early_bootstrap):
                raise NotController()
            return
        await self._commit(self._bootstrap_records())

    def _bootstrap_records(self) -> list:
        # Kafka's format step: metadata.version plus the cluster-level
        # min.insync.replicas default (KIP-966; compat ledger F-002)
        first = self._bootstrap or default_feature_records(METADATA_VERSION)
        return [*first, *self.bootstrap_config_records()]

    def propose_bootstrap_with_epoch_start(self) -> bool:
        """A quorum whose leader leads from an empty log (a one-node quorum's first start,
        before its driver persists anything): the bootstrap records are proposed now, so the
        driver writes them in the same append (and fsync) as the epoch's LeaderChange and
        commits both at once -- one wait of the start fewer. Kafka's controller writes them
        as its first records once the LeaderChange is committed and read back; with nothing
        before the epoch there is nothing that wait could bring in, and the log is the same:
        the LeaderChange batch, then the bootstrap batch. Whether it proposed."""
        driver = self.quorum.driver
        node = driver.node
        if (not driver.is_leader or node.epoch_start_offset != 0
                or self._activated_epoch == driver.epoch or self._early_bootstrap is not None
                or "metadata.version" in self.image.features):
            return False
        mv = self.image.features.get("metadata.version")
        # to the core itself: the driver's clock (and so its ticks) starts with its run
        result = node.propose([encode_record(r, mv) for r in self._bootstrap_records()])
        if isinstance(result, NotLeader):
            return False
        self._early_bootstrap = (result, driver.epoch)
        return True

    async def bootstrap(self, endpoints, rack, incarnation_id) -> None:  # pragma: no cover - not used
        raise NotImplementedError("brokers register through BrokerRegistration")

    # ------------------------------------------------------------------ registration
    async def register_broker(self, broker_id: int, cluster_id: str, incarnation_id, listeners,
                              rack: str | None, features=None, log_dirs=(),
                              previous_broker_epoch: int | None = -1) -> tuple[int, int]:
        """``(error_code, broker_epoch)``. ``features``: the ``(name, min, max)`` levels the
        broker serves (None: this node's own table); a broker that cannot serve a finalized
        level is refused with UNSUPPORTED_VERSION, one that does not list ``metadata.version``
        with INVALID_REGISTRATION, as by Kafka's ``ClusterControlManager``. ``log_dirs``: the
        directory ids of its online log dirs (BrokerRegistration v2+), recorded from
        ``metadata.version`` 3.7-IV2 on, where none, a reserved id, a duplicate or another
        broker's directory is INVALID_REGISTRATION. ``previous_broker_epoch``: the epoch the
        broker's clean-shutdown markers named (BrokerRegistration v3+, -1 unknown), None when
        the request could not carry it (below v3): a new incarnation whose previous epoch is
        not the registered one is an unclean restart (``_shutdown_records``)."""
        from kbroker.config.features import SUPPORTED_FEATURES
        if features is None:
            features = [(n, lo, hi) for n, (lo, hi) in sorted(SUPPORTED_FEATURES.items())]
        # The quorum can be ready (its epoch's LeaderChange applied, so brokers are answered)
        # before this controller has activated: the bootstrap levels come first, as Kafka's
        # controller writes them before it handles any registration (without them every
        # broker would be refused for "finalized version 0 of metadata.version").
        await self.maybe_activate()
        async with self._lock:
            await self._maybe_bootstrap()
            if cluster_id != self.image.cluster_id:
                return E.INCONSISTENT_CLUSTER_ID, -1
            with_dirs = directories.supported(self.image.features.get("metadata.version"))
            problem = self._log_dirs_error(broker_id, list(log_dirs or ())) if with_dirs else None
            if problem:
                log.warning("broker %d refused: %s", broker_id, problem)
                return E.INVALID_REGISTRATION, -1
            problem = feature_control.registration_error(dict(self.image.features), features)
            if problem:
                log.warning("broker %d refused: %s", broker_id, problem[1])
                return problem[0], -1
            old = self.image.brokers.get(broker_id)
            if old is not None and old.incarnation_id == incarnation_id:
                self._sessions[broker_id] = trio.current_time()
                return E.NONE, old.broker_epoch
            # Kafka's registerBroker: a new incarnation first cleans up after the previous one
            stored = old.broker_epoch if old is not None else -2
            clean = previous_broker_epoch is not None and stored == previous_broker_epoch
            cleanup = self._shutdown_records(broker_id, clean)
            epoch = self._next_offset()       # the first record's offset, as Kafka's nextWriteOffset
            EP = messages.RegisterBrokerRecord.BrokerEndpoint
            rec = messages.RegisterBrokerRecord(
                broker_id=broker_id, is_migrating_zk_broker=False, incarnation_id=incarnation_id,
                broker_epoch=epoch, rack=rack, fenced=True, in_controlled_shutdown=False,
                end_points=[EP(name=n, host=h, port=p, security_protocol=0) for n, h, p in listeners],
                features=[messages.RegisterBrokerRecord.BrokerFeature(
                    name=n, min_supported_version=lo, max_supported_version=hi) for n, lo, hi in features],
                log_dirs=list(log_dirs) if with_dirs else [])
            await self._commit([*cleanup, rec])
            self._sessions[broker_id] = trio.current_time()
            self.stats["registrations"] += 1
            if old is None:
                log.info("broker %d registered with epoch %d (its first registration)",
                         broker_id, epoch)
            else:
                if not clean:
                    self.stats["unclean_registrations"] += 1
                log.info("broker %d registered with epoch %d (%s restart, %d partition change(s) "
                         "for its previous incarnation)", broker_id, epoch,
                         "clean" if clean else "unclean", len(cleanup))
            return E.NONE, epoch

    def _log_dirs_error(self, broker_id: int, log_dirs: list) -> str | None:
        """Kafka's checks of a registration's ``LogDirs``."""
        if not log_dirs:
            return "No directories specified in request"
        if any(directories.reserved(d) for d in log_dirs):
            return "Reserved directory ID in request"
        if len(set(log_dirs)) != len(log_dirs):
            return "Duplicate directory ID in request"
        for b in self.image.brokers.values():
            if b.node_id != broker_id:
                taken = set(b.log_dirs).intersection(log_dirs)
                if taken:
                    return f"Broker {b.node_id} is already registered with directory {sorted(taken)[0]}"
        return None

    async def assign_replicas_to_dirs(self, broker_id: int, broker_epoch: int,
                                      assignments: dict) -> tuple[int, dict]:
        """AssignReplicasToDirs (KIP-858, Kafka's ``handleAssignReplicasToDirs``):
        ``assignments`` maps a directory id to the ``(topic id, partition)`` replicas the
        broker placed in it. Each becomes a ``PartitionChangeRecord`` naming that directory
        for the broker's replica; a replica placed in a directory the broker no longer reports
        online also leaves its ISR (its leadership moves). Returns ``(error code, {(directory
        id, topic id, partition): error code})``: STALE_BROKER_EPOCH for a registration that
        is not the broker's current one, UNSUPPORTED_VERSION below metadata.version 3.7-IV2.
        Raises ``NotController``."""
        async with self._lock:
            if not directories.supported(self.image.features.get("metadata.version")):
                return E.UNSUPPORTED_VERSION, {}
            b = self.image.brokers.get(broker_id)
            if b is None or b.broker_epoch != broker_epoch:
                return E.STALE_BROKER_EPOCH, {}
            dirs = directories.rules(self.image)

            def change(p, topic_id, broker, directory):
                return reassign.build_change(p, topic_id, self._active_ids().__contains__,
                                             dirs=dirs, set_dirs={broker: directory},
                                             min_isr=self._min_isr(topic_id))

            records, errors = directories.assign_records(self.image, broker_id, assignments, change,
                                                         self._leave_isr_change)
            await self._commit(records)
            if records:
                log.info("broker %d assigned %d replica(s) to log dirs (%d partition change(s))",
                         broker_id, sum(1 for c in errors.values() if c == E.NONE), len(records))
            return E.NONE, errors

    def _leave_isr_change(self, p, topic_id, broker_id: int):
        """One partition without ``broker_id`` in its ISR or as its leader (Kafka's
        ``generateLeaderAndIsrUpdates`` with that broker to remove)."""
        return self._partition_change(topic_id, p, remove=broker_id,
                                      active=self._active_ids() - {broker_id})

    async def _handle_offline_dirs(self, broker_id: int, broker_epoch: int, offline) -> None:
        """Kafka's ``handleDirectoriesOffline`` (``directories.offline_dir_records``): the
        replicas of the broker assigned to directories it newly reports offline leave their
        ISRs, leaderships move, and the broker's remaining online dirs are recorded."""
        if not offline:
            return
        b = self.image.brokers.get(broker_id)
        if b is None or not set(offline) & set(b.log_dirs):
            return                      # nothing new: the log has it already
        async with self._lock:
            b = self.image.brokers.get(broker_id)
            if b is None or b.broker_epoch != broker_epoch:
                return
            recs, newly = directories.offline_dir_records(self.image, broker_id, broker_epoch, offline,
                                                          self._leave_isr_change)
            if recs:
                await self._commit(recs)
                log.warning("broker %d: log dirs %s offline; %d partition(s) changed (it left their "
                            "ISRs)", broker_id, sorted(str(d) for d in newly), len(recs) - 1)

    async def heartbeat(self, broker_id: int, broker_epoch: int, metadata_offset: int,
                        want_fence: bool, want_shut_down: bool,
                        offline_dirs=(), cordoned_dirs=None) -> tuple[int, bool, bool, bool]:
        """``(error_code, is_caught_up, is_fenced, should_shut_down)``; the state changes of
        Kafka's ``calculateNextBrokerState`` (FENCED, UNFENCED, CONTROLLED_SHUTDOWN,
        SHUTDOWN_NOW). ``offline_dirs``: the directory ids the broker reports offline
        (BrokerHeartbeat v1, KIP-858), handled from metadata.version 3.7-IV2 on;
        ``cordoned_dirs``: those it reports cordoned (v2, KIP-1066; None: not said), recorded
        from 4.3-IV0 on when they differ from the registered ones (``cordoned.py``)."""
        b = self.image.brokers.get(broker_id)
        if b is None or b.broker_epoch != broker_epoch:
            return E.STALE_BROKER_EPOCH, False, True, False
        self._sessions[broker_id] = trio.current_time()
        self._offsets[broker_id] = metadata_offset
        await self._handle_offline_dirs(broker_id, broker_epoch, offline_dirs)
        if cordoned.change_record(self.image, broker_id, broker_epoch, cordoned_dirs) is not None:
            async with self._lock:
                cur = self.image.brokers.get(broker_id)
                rec = cordoned.change_record(self.image, broker_id, broker_epoch, cordoned_dirs)
                if rec is not None and cur is not None and cur.broker_epoch == broker_epoch:
                    await self._commit([rec])
                    log.info("broker %d: cordoned log dirs %s", broker_id,
                             sorted(str(d) for d in rec.cordoned_log_dirs))
        caught_up = metadata_offset >= broker_epoch
        if b.in_controlled_shutdown or (want_shut_down and not b.fenced):
            return await self._controlled_shutdown(broker_id, broker_epoch, caught_up, want_fence)
        if want_shut_down:
            # fenced already: leaves at once (Kafka's FENCED -> SHUTDOWN_NOW)
            return E.NONE, caught_up, True, True
        if b.fenced and not want_fence and caught_up:
            async with self._lock:
                b = self.image.brokers.get(broker_id)
                if b is not None and b.fenced and b.broker_epoch == broker_epoch:
                    await self._commit(self._unfence_records(broker_id, broker_epoch))
                    self.stats["unfenced"] += 1
                    log.info("broker %d unfenced", broker_id)
        elif not b.fenced and want_fence:
            async with self._lock:
                b = self.image.brokers.get(broker_id)
                if b is not None and not b.fenced and b.broker_epoch == broker_epoch:
                    await self._commit(self._fence_records(broker_id, broker_epoch))
                    self.stats["fenced"] += 1
        b = self.image.brokers.get(broker_id)
        return E.NONE, caught_up, bool(b is None or b.fenced), False

    async def _controlled_shutdown(self, broker_id: int, broker_epoch: int, caught_up: bool,
                                   want_fence: bool) -> tuple[int, bool, bool, bool]:
        async with self._lock:
            b = self.image.brokers.get(broker_id)
            if b is None or b.broker_epoch != broker_epoch:
                return E.STALE_BROKER_EPOCH, False, True, False
            if b.fenced:
                return E.NONE, caught_up, True, True
            if not b.in_controlled_shutdown:
                if want_fence or not self._leads_any(broker_id):
                    await self._shut_down_now(broker_id, broker_epoch)
                    return E.NONE, caught_up, True, True
                recs = [messages.BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker_epoch,
                                                                in_controlled_shutdown=1)]
                recs += self._leave_isr_records(broker_id)
                await self._commit(recs)
                self._shutdown_offsets[broker_id] = self._next_offset() - 1
                self.stats["controlled_shutdowns"] += 1
                log.info("broker %d is in controlled shutdown: its leaderships moved", broker_id)
                # as Kafka: this heartbeat only enters the state; a later one may be granted
                return E.NONE, caught_up, False, False
            if self._leads_any(broker_id):
                # a partition created or elected since: move it too, answer on a later heartbeat
                recs = self._leave_isr_records(broker_id)
                if recs:
                    await self._commit(recs)
                    self._shutdown_offsets[broker_id] = self._next_offset() - 1
                return E.NONE, caught_up, False, False
            target = self._shutdown_offsets.setdefault(broker_id, self._next_offset() - 1)
            if target <= self._lowest_active_offset():
                await self._shut_down_now(broker_id, broker_epoch)
                return E.NONE, caught_up, True, True
            return E.NONE, caught_up, False, False

    async def _shut_down_now(self, broker_id: int, broker_epoch: int) -> None:
        await self._commit(self._fence_records(broker_id, broker_epoch))
        self._shutdown_offsets.pop(broker_id, None)
        log.info("broker %d may shut down now (fenced)", broker_id)

    def _leads_any(self, broker_id: int) -> bool:
        return any(p.leader == broker_id for t in self.image.topics.values() for p in t.partitions.values())

    def _active_ids(self) -> set[int]:
        """Brokers that may lead and join ISRs: registered, unfenced, not shutting down."""
        return {b.node_id for b in self.image.brokers.values() if not b.fenced and not b.in_controlled_shutdown}

    def _lowest_active_offset(self) -> int:
        """The lowest metadata offset reported by an active broker (Kafka's
        ``lowestActiveOffset``); no active broker: nobody to wait for."""
        offsets = [self._offsets.get(b, -1) for b in self._active_ids()]
        return min(offsets) if offsets else 1 << 62

    # ------------------------------------------------------------------ elections
    def _partition_change(self, topic_id, p, *, remove: int = -1, add: int = -1,
                          active: set[int]) -> messages.PartitionChangeRecord | None:
        """Kafka's ``PartitionChangeBuilder`` (``reassign.build_change``) for an ISR without
        ``remove`` (no unclean election): keep the leader if it stays acceptable, else the
        first replica in the target ISR that is acceptable (``add`` counts as active: it is
        being unfenced), else, with ELR on and the ISR empty, the first acceptable ELR member,
        else (ISR and ELR empty) the last known leader if acceptable, else -1. With ELR on (KIP-966) an ISR below the minimum keeps the members it loses as
        eligible leaders and may become empty; without, an ISR that would become empty is
        left as it is. An ongoing reassignment the new ISR satisfies completes."""
        rec = reassign.build_change(
            p, topic_id, lambda r: r != remove and (r == add or r in active),
            isr=[r for r in p.isr if r != remove], dirs=directories.rules(self.image),
            min_isr=self._min_isr(topic_id))
        if rec is not None and rec.leader not in (-2, p.leader):
            self.stats["leader_moves"] += 1
        return rec

    def _min_isr(self, topic_id) -> int | None:
        """The topic's effective minimum ISR when ELR is on (KIP-966), else None."""
        t = self.image.topics_by_id.get(topic_id)
        if t is None:
            return None
        return elr.topic_min_isr(self.image, t, self.config.get("min.insync.replicas"))

    def _leave_isr_records(self, broker_id: int) -> list:
        """Remove the broker from every ISR and move its leaderships."""
        active = self._active_ids() - {broker_id}
        recs = []
        for t in self.image.topics.values():
            for p in t.partitions.values():
                if broker_id in p.isr or p.leader == broker_id:
                    rec = self._partition_change(t.topic_id, p, remove=broker_id, active=active)
                    if rec is not None:
                        recs.append(rec)
        return recs

    def _shutdown_records(self, broker_id: int, clean: bool) -> list:
        """Kafka's ``ReplicationControlManager.handleBrokerShutdown`` for a new incarnation:
        the broker leaves every ISR (no leadership stays with it); with ELR on and an unclean
        restart it is no eligible leader either: it leaves the ISRs without becoming ELR, and
        leaves every ELR."""
        if clean or not elr.enabled(self.image.features):
            return self._leave_isr_records(broker_id)
        active = self._active_ids() - {broker_id}
        recs = []
        for t in self.image.topics.values():
            for p in t.partitions.values():
                if broker_id in p.isr:
                    rec = reassign.build_change(
                        p, t.topic_id, active.__contains__, isr=[r for r in p.isr if r != broker_id],
                        dirs=directories.rules(self.image), min_isr=self._min_isr(t.topic_id),
                        unclean_shutdown=[broker_id])
                    if rec is not None:
                        recs.append(rec)
        return recs + self._elr_records(broker_id, unclean=True)

    def _elr_records(self, broker_id: int, *, unclean: bool) -> list:
        """The partitions whose ELR holds the broker, changed without it as a possible
        leader; ``unclean`` (a restart that proved no clean shutdown, KIP-966): it also
        leaves their ELR. Kafka's ``generateLeaderAndIsrUpdates`` over ``partitionsWithBrokerInElr``."""
        active = self._active_ids() - {broker_id}
        recs = []
        for t in self.image.topics.values():
            for p in t.partitions.values():
                if broker_id in p.elr:
                    rec = reassign.build_change(p, t.topic_id, active.__contains__,
                                                dirs=directories.rules(self.image),
                                                min_isr=self._min_isr(t.topic_id),
                                                unclean_shutdown=[broker_id] if unclean else ())
                    if rec is not None:
                        recs.append(rec)
        return recs

    def _fence_records(self, broker_id: int, broker_epoch: int) -> list:
        return [messages.BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker_epoch,
                                                        fenced=1)] + self._leave_isr_records(broker_id)

    def _unfence_records(self, broker_id: int, broker_epoch: int) -> list:
        recs: list = [messages.BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker_epoch,
                                                              fenced=-1)]
        active = self._active_ids()
        for t in self.image.topics.values():
            for p in t.partitions.values():
                if p.leader == -1:
                    rec = self._partition_change(t.topic_id, p, add=broker_id, active=active)
                    if rec is not None:
                        recs.append(rec)
        return recs

    async def unregister_broker(self, broker_id: int) -> tuple[int, str | None]:
        """UnregisterBroker (Kafka 4.4's ``ReplicationControlManager.handleBrokerUnregistered``):
        the broker leaves every ISR, its leaderships move, the partitions whose ELR names it
        are changed without it as a possible leader (it stays in their ELR, as in Kafka), then
        an ``UnregisterBrokerRecord`` removes its registration. ``BROKER_ID_NOT_REGISTERED``
        for an unknown id. Raises ``NotController``."""
        async with self._lock:
            b = self.image.brokers.get(broker_id)
            if b is None:
                return E.BROKER_ID_NOT_REGISTERED, f"Broker ID {broker_id} is not currently registered"
            records = self._leave_isr_records(broker_id) + self._elr_records(broker_id, unclean=False)
            records.append(messages.UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=b.broker_epoch))
            await self._commit(records)
            self._sessions.pop(broker_id, None)
            self._offsets.pop(broker_id, None)
            self._shutdown_offsets.pop(broker_id, None)
            log.info("broker %d unregistered", broker_id)
            return E.NONE, None

    # ------------------------------------------------------------------ AlterPartition
    async def alter_partition(self, broker_id: int, broker_epoch: int, topics, *, version: int = 3):
        """AlterPartition from a partition leader (``topics``: the request's ``TopicData``
        list, names up to v1, ids from v2, ``new_isr_with_epochs`` from v3). Returns
        ``(error_code, [(topic data, [(partition index, AlterPartitionResult)])])``; a
        stale or unknown requester epoch fails the whole request. Raises ``NotController``."""
        async with self._lock:
            b = self.image.brokers.get(broker_id)
            if b is None or b.broker_epoch != broker_epoch:
                return E.STALE_BROKER_EPOCH, []
            out, records = [], []
            for td in topics:
                t = self.image.topics_by_id.get(td.topic_id)   # v2+ only (Kafka 4)
                answers = []
                out.append((td, answers))
                if t is None:
                    code = E.UNKNOWN_TOPIC_ID if version > 1 else E.UNKNOWN_TOPIC_OR_PARTITION
                    answers += [(pd.partition_index, AlterPartitionResult(code)) for pd in td.partitions]
                    continue
                for pd in td.partitions:
                    new_isr = ([(s.broker_id, s.broker_epoch) for s in pd.new_isr_with_epochs] if version >= 3
                               else [(r, -1) for r in pd.new_isr])
                    p = t.partitions.get(pd.partition_index)
                    code = self._check_alter_partition(broker_id, p, pd, new_isr, version)
                    if code:
                        answers.append((pd.partition_index, AlterPartitionResult(code)))
                        continue
                    isr = [r for r, _ in new_isr]
                    active = self._active_ids()
                    rec = reassign.build_change(p, t.topic_id, active.__contains__, isr=isr,
                                                dirs=directories.rules(self.image),
                                                min_isr=self._min_isr(t.topic_id))
                    if rec is not None:
                        records.append(rec)
                        log.info("broker %d changed the ISR of %s-%d from %s to %s", broker_id, t.name,
                                 p.partition, list(p.isr), isr)
                        if p.reassigning and (rec.removing_replicas == [] or rec.adding_replicas == []):
                            self.stats["reassignments"] += 1
                            log.info("%s-%d: reassignment completed, replicas %s", t.name, p.partition,
                                     rec.replicas if rec.replicas is not None else list(p.replicas))
                        p = apply_partition_change(p, rec)
                        if rec.leader not in (-2, broker_id):
                            # completing a reassignment moved the leadership (Kafka's answer)
                            answers.append((pd.partition_index, AlterPartitionResult(
                                E.NEW_LEADER_ELECTED if version > 1 else E.FENCED_LEADER_EPOCH)))
                            continue
                    answers.append((pd.partition_index, AlterPartitionResult(
                        E.NONE, p.leader, p.leader_epoch, tuple(p.isr), p.partition_epoch)))
            await self._commit(records)
            self.stats["isr_changes"] += len(records)
            return E.NONE, out

    def _check_alter_partition(self, broker_id: int, p, pd, new_isr, version: int) -> int:
        """Kafka's ``validateAlterPartitionData``, in its order."""
        if p is None:
            return E.UNKNOWN_TOPIC_OR_PARTITION
        if pd.leader_epoch > p.leader_epoch or pd.partition_epoch > p.partition_epoch:
            # the leader knows a newer state than ours: we are likely not the controller anymore
            return E.NOT_CONTROLLER
        if pd.leader_epoch < p.leader_epoch:
            return E.FENCED_LEADER_EPOCH
        if broker_id != p.leader:
            return E.INVALID_REQUEST
        if pd.partition_epoch < p.partition_epoch:
            return E.INVALID_UPDATE_VERSION
        ids = [r for r, _ in new_isr]
        if len(set(ids)) != len(ids) or any(r not in p.replicas for r in ids) or p.leader not in ids:
            return E.INVALID_REQUEST
        if version >= 1 and pd.leader_recovery_state == 1:
            # kbroker never elects uncleanly: a partition is always RECOVERED, and cannot go back
            return E.INVALID_REQUEST
        for r, epoch in new_isr:
            b = self.image.brokers.get(r)
            if b is None or b.in_controlled_shutdown or b.fenced or (epoch != -1 and epoch != b.broker_epoch):
                return E.INELIGIBLE_REPLICA if version > 1 else E.OPERATION_NOT_ATTEMPTED
        return E.NONE

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
                self._next_balance = None
                continue
            await self.maybe_activate()
            for b in list(self.image.live_brokers()):
                seen = self._sessions.setdefault(b.node_id, now)
                if now - seen > timeout:
                    try:
                        await self.fence_broker(b.node_id)
                    except NotController:
                        break
            try:
                await self.maybe_balance_leaders(now)
            except NotController:
                pass

    async def run_noop_writer(self) -> None:
        """Forever: on the active controller, a ``NoOpRecord`` every
        ``metadata.max.idle.interval.ms`` (KIP-835; 0 or less: never, as Kafka). Once the
        log has its ``metadata.version`` (the bootstrap comes first on activation). No
        controller lock: the record has nothing to validate, and an operation in flight
        is never held behind it."""
        interval_ms = self.config.get("metadata.max.idle.interval.ms") or 0
        if interval_ms <= 0:
            return
        while True:
            await trio.sleep(interval_ms / 1000)
            if not self.active or "metadata.version" not in self.image.features:
                continue
            try:
                await self._commit([messages.NoOpRecord()])
            except NotController:
                continue
            self.stats["noop_records"] += 1

    # ------------------------------------------------------------------ elections, reassignment
    async def elect_leaders(self, election_type: int, topics):
        """ElectLeaders (``elect.elect_leaders``): ``topics`` is ``[(name, [partition])]`` or
        None for every partition. Returns ``(error code, [(topic, [(partition, code,
        message)])])`` once the elections are committed. Raises ``NotController``."""
        from . import elect     # here: an ElectLeaders request or a due rebalance, not a start
        async with self._lock:
            code, results, records = elect.elect_leaders(self.image, election_type, topics,
                                                         self._active_ids().__contains__)
            await self._commit(records)
            self.stats["elections"] += len(records)
            if records:
                log.info("elected %d leader(s) on request", len(records))
            return code, results

    async def maybe_balance_leaders(self, now: float) -> int:
        """The automatic preferred-leader rebalance: when due (every
        ``leader.imbalance.check.interval.seconds`` after activation, at once again when a
        round hit the per-round limit), a preferred election on every imbalanced partition.
        Returns the number of elections written."""
        if not self.config.get("auto.leader.rebalance.enable"):
            return 0
        interval = float(self.config.get("leader.imbalance.check.interval.seconds"))
        if self._next_balance is None:
            self._next_balance = now + interval
        if now < self._next_balance:
            return 0
        from . import elect
        async with self._lock:
            records = elect.balance_records(self.image, self._active_ids().__contains__)
            await self._commit(records)
        full = len(records) >= elect.MAX_ELECTIONS_PER_IMBALANCE
        self._next_balance = now + (0.0 if full else interval)
        self.stats["rebalance_elections"] += len(records)
        if records:
            log.info("leader rebalance: %d preferred leader election(s)", len(records))
        return len(records)

    async def alter_partition_reassignments(self, topics, allow_replication_factor_change: bool = True):
        """AlterPartitionReassignments (``reassign.alter_reassignment``): ``topics`` is
        ``[(name, [(partition, target replicas or None)])]``; returns ``[(name,
        [(partition, code, message)])]`` once the records are committed (one batch)."""
        async with self._lock:
            active = self._active_ids().__contains__
            out, records, seen = [], [], set()
            for name, parts in topics:
                answers = []
                out.append((name, answers))
                for index, target in parts:
                    if (name, index) in seen:
                        answers.append((index, E.INVALID_REQUEST, "The partition is named twice."))
                        continue
                    seen.add((name, index))
                    code, msg, rec = reassign.alter_reassignment(self.image, name, index, target, active,
                                                                 self._unclean_allowed,
                                                                 allow_replication_factor_change)
                    answers.append((index, code, msg))
                    if rec is not None:
                        records.append(rec)
            await self._commit(records)
            if records:
                log.info("partition reassignment: %d change(s)", len(records))
            return out

    async def list_partition_reassignments(self, topics):
        """ListPartitionReassignments: ``[(name, [(partition, replicas, adding, removing)])]``
        of the ongoing ones. Raises ``NotController``."""
        if not self.active:
            raise NotController()
        return [(n, [(p.partition, list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
                     for p in parts]) for n, parts in reassign.ongoing_reassignments(self.image, topics)]

    def _unclean_allowed(self, topic: str) -> bool:
        t = self.image.topics.get(topic)
        value = tc.effective_topic_configs(self.config, dict(t.configs) if t else {}).get(
            "unclean.leader.election.enable", "false")
        return str(value).lower() == "true"

    def statistics(self) -> dict:
        return {"image": self.image.statistics(), "controller": dict(self.stats),
                "active": self.active, "sessions": len(self._sessions)}
