"""``Broker``: the one object that ties a running node together.

It owns, and hands to API handlers through ``RequestContext.broker``:

- ``config``   — the ``BrokerConfig``;
- ``clock``    — injected time (``now_ms()`` wall, ``monotonic_ms()`` for intervals:
  ``kbroker/common/clock.py``; tests pass a fake);
- ``logs``     — the ``LogManager`` of ``log.dirs`` (the metadata log lives there too);
- ``quorum``   — the ``MetadataQuorum`` (Raft driver + metadata image); ``metadata`` is its
  current image;
- ``controller`` — the ``ControllerChannel``: admin writes go to the local active controller
  or are forwarded to the one leading the quorum;
- ``lifecycle`` — registration and heartbeats (``BrokerLifecycle``), ``controller_server`` —
  the CONTROLLER listener of a voter;
- ``producer_ids`` — producer ids for InitProducerId, in controller-reserved blocks;
- ``authorizer`` — the StandardAuthorizer (``kbroker.authz``) when ``authorizer.class.name``
  names it, else None (everything allowed, ACL APIs answer SECURITY_DISABLED);
- ``transactions`` — the transaction coordinator (``kbroker/txn/coordinator.py``), made at
  start only when this node leads a partition of ``__transaction_state``, else on first use
  (``kbroker/txn/service.py``);
- ``replicas`` — the ``ReplicaManager`` (``kbroker/replica/``), told about every new
  image via ``apply_image`` so partition logs follow the metadata;
- ``dir_assignments`` — the ``AssignmentsManager`` (``kbroker/metadata/assignments.py``):
  which log dir holds each replica, sent to the controller (AssignReplicasToDirs, KIP-858).

Lifecycle (inside one trio nursery, see ``kbroker.server``): ``await start(nursery)``
formats/reads ``meta.properties``, loads the logs (recovering after a crash), starts the
metadata quorum (and the controller listener of a voter), waits until the image has caught
up, registers this broker and waits until the controller unfences it, then starts the log
maintenance tasks and the group coordinator in ``nursery``; ``shutdown()`` flushes and closes every log and writes the
clean-shutdown marker, so the next start needs no recovery.
"""
from __future__ import annotations

import logging
import uuid

import trio

from kbroker.common.clock import SystemClock, monotonic_reader
from kbroker.config.broker import BrokerConfig, ConfigError, ensure_meta_properties
from kbroker.txn import service as txn_service

log = logging.getLogger("kbroker.broker")


class Broker:
    def __init__(self, config: BrokerConfig, clock=None):
        self.config = config
        self.clock = clock or SystemClock()
        self.node_id = config.node_id
        self.cluster_id: str | None = None
        self.logs = None
        self.replicas = None
        self.controller = None       # ControllerChannel: to the active controller
        self.quorum = None           # MetadataQuorum: Raft driver + image state machine
        self.lifecycle = None        # BrokerLifecycle: registration and heartbeats
        self.controller_server = None
        self.dir_assignments = None  # AssignmentsManager: replica placements to the controller
        self.metadata_log = None
        self.producer_ids = None     # ProducerIdManager (InitProducerId)
        self.transactions = None     # transaction coordinator, once made (kbroker.txn.service)
        self.group_coordinator = None  # kbroker.group.service.GroupCoordinator
        from kbroker.quota.managers import QuotaManagers
        self.quotas = QuotaManagers(config, self.clock.now_ms)   # client quotas (Produce/Fetch)
        from kbroker.authz.authorizer import Authorizer
        self.authorizer = Authorizer.from_config(config)
        log.info("%s", self.authorizer.describe() if self.authorizer else
                 "no authorizer (authorizer.class.name is not set): ACLs are not enforced")
        self.share_groups = None       # kbroker.group.share.coordinator.ShareGroupCoordinator
        self.share_partitions = None   # kbroker.share.manager.SharePartitionManager
        # both made with the share groups' first use (kbroker.share.service)
        self._nursery = None
        self.incarnation_id = uuid.uuid4()
        self.started = False
        self.had_clean_shutdown = True
        self.dir_locks = None        # kbroker.log.dirs.LogDirLocks, held until shutdown()
        from kbroker.node.stats import BrokerTopicStats
        self.topic_stats = BrokerTopicStats()   # bytes/messages in and out per topic

    # ------------------------------------------------------------------ views
    @property
    def metadata(self):
        """The current (immutable) metadata image."""
        return self.quorum.image

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def base_log_config(self):
        from kbroker.log.config import LogConfig
        return LogConfig.from_properties(self.config.log_config_defaults())

    def log_config_for(self, topic) -> "object":
        """The ``LogConfig`` of a topic image: its overrides over the broker defaults."""
        from kbroker.log.config import LogConfig
        return LogConfig.from_properties(dict(topic.configs), base=self.base_log_config())

    # ------------------------------------------------------------------ failed log dirs
    def log_dir_offline(self, log_dir) -> None:
        """The replica manager took ``log_dir`` offline (kbroker/replica/log_dir_failure.py):
        heartbeat now, so the controller moves its replicas' leaderships."""
        if self.lifecycle is not None:
            self.lifecycle.wake()

    def _offline_log_dirs(self) -> tuple:
        """The directory ids of the offline log dirs, for every heartbeat (KIP-858); the
        controller knows from the partition records which replicas they held."""
        from kbroker.replica.log_dir_failure import directory_id
        ids = (directory_id(d) for d in getattr(self.logs, "offline_dirs", ()) or ())
        return tuple(i for i in ids if i is not None)

    def _cordoned_paths(self) -> set:
        """``cordoned.log.dirs`` (KIP-1066) as paths of ``log.dirs`` (``*``: all of them),
        read at each call, so a dynamic per-broker value takes effect. An entry that is not in
        ``log.dirs`` is a ConfigError (Kafka refuses it too)."""
        from pathlib import Path
        value = self.config.effective_values().get("cordoned.log.dirs")   # a dynamic value wins
        entries = [e.strip() for e in value or () if e.strip()]
        dirs = [Path(d) for d in self.config.log_dirs]
        if "*" in entries:
            return set(dirs)
        known = {str(d.expanduser().resolve()): d for d in dirs}
        out = set()
        for e in entries:
            d = known.get(str(Path(e).expanduser().resolve()))
            if d is None:
                raise ConfigError("cordoned.log.dirs", f"{e} is not one of log.dirs ({', '.join(map(str, dirs))})")
            out.add(d)
        return out

    def _cordoned_log_dirs(self) -> list:
        """The directory ids of the cordoned log dirs, for the heartbeats (BrokerHeartbeat v2);
        the log manager places no new log there."""
        from kbroker.metadata.directories import sorted_dirs
        from kbroker.replica.log_dir_failure import directory_id
        try:
            self.logs.cordoned = self._cordoned_paths()
        except ConfigError as e:         # a dynamic value that names no log dir: kept as it was
            if getattr(self, "_cordoned_warned", None) != str(e):      # once per value
                self._cordoned_warned = str(e)
                log.warning("%s; the cordoned log dirs stay as they were", e)
        ids = (directory_id(d) for d in self.logs.cordoned if d in self.logs.online_dirs)
        return list(sorted_dirs(i for i in ids if i is not None))

    def _online_log_dirs(self) -> list:
        """The directory ids of the online log dirs, in Kafka's order, for the registration."""
        from kbroker.metadata.directories import sorted_dirs
        from kbroker.replica.log_dir_failure import directory_id
        ids = (directory_id(d) for d in self.logs.online_dirs)
        return list(sorted_dirs(i for i in ids if i is not None))

    # ------------------------------------------------------------------ lifecycle
    def lock_log_dirs(self) -> None:
        """Create, validate and lock every log directory (and ``metadata.log.dir``) before
        anything is written there, as Kafka's LogManager; raises ``LogDirError`` naming the
        directory (another broker holds it, permission denied, not a directory...).
        ``Server.run`` calls it before binding; ``start`` calls it when nobody did."""
        if self.dir_locks is not None:
            return
        from kbroker.log.dirs import LogDirLocks
        cfg = self.config
        dirs = list(cfg.log_dirs)
        mdir = cfg.get("metadata.log.dir")
        if mdir:
            dirs.append(str(mdir))
        locks = LogDirLocks()
        locks.acquire(dirs)
        self.dir_locks = locks

    async def start(self, nursery=None) -> None:
        from kbroker.log.manager import LogManager
        from kbroker.metadata.channel import ControllerChannel
        from kbroker.metadata.quorum import MetadataQuorum
        from kbroker.metadata.quorum_controller import QuorumController

        if nursery is None:
            raise ValueError("Broker.start needs a nursery (the metadata quorum runs in it)")
        from kbroker.log.dirs import naming_path
        self._nursery = nursery
        cfg = self.config
        self.lock_log_dirs()
        formatted = (cfg.data_dir / "meta.properties").exists()
        self.stage = "reading the data directory"
        with naming_path(f"cannot write meta.properties in log directory {cfg.data_dir}", cfg.data_dir):
            self.cluster_id = ensure_meta_properties(cfg)
        from kbroker.metadata.storage_format import StorageError, check_bootstrap
        try:
            # the feature levels `storage format` chose, committed by the first controller
            self.bootstrap_records = check_bootstrap(cfg.data_dir)
        except StorageError as e:
            raise ConfigError(None, str(e)) from None
        clock = self.clock.now_ms
        self.logs = LogManager(cfg.log_dirs, self.base_log_config(), clock,
                               checkpoint_interval_ms=cfg.get("log.flush.offset.checkpoint.interval.ms"),
                               start_offset_checkpoint_interval_ms=cfg.get(
                                   "log.flush.start.offset.checkpoint.interval.ms"),
                               high_watermark_checkpoint_interval_ms=cfg.get(
                                   "replica.high.watermark.checkpoint.interval.ms"),
                               cleaner_enabled=cfg.get("log.cleaner.enable"),
                               ticker=monotonic_reader(self.clock),
                               max_open_files=cfg.get("kbroker.log.max.open.files") or None,
                               producer_expiration_ms=cfg.get("producer.id.expiration.ms"))
        self.logs.cordoned = self._cordoned_paths()     # KIP-1066, checked before anything loads
        if not cfg.get("log.cleaner.enable"):
            log.warning("log.cleaner.enable=false: no log is compacted, and compacted topics "
                        "(__consumer_offsets too) get no retention either: they keep growing "
                        "(Kafka 4 deprecates this setting; from Kafka 5 the cleaner always runs)")
        self.stage = "loading the logs"
        with naming_path(f"cannot load the logs in {', '.join(cfg.log_dirs)}", cfg.data_dir):
            self.logs.load()
        from kbroker.replica.log_dir_failure import directory_id
        for d in self.logs.log_dirs:
            directory_id(d)      # remembered now: a failed disk may not answer later
        # a data dir used for the first time has nothing to recover
        self.had_clean_shutdown = not formatted or all(self.logs.had_clean_shutdown.values())
        if "broker" in cfg.get("process.roles"):
            from kbroker.metadata.assignments import AssignmentsManager
            # reports queue from the first image on; sending starts once registered
            self.dir_assignments = AssignmentsManager(self.node_id, lambda: self.quorum.image
                                                      if self.quorum is not None else None, directory_id)
        self.replicas = _make_replica_manager(self)
        if hasattr(self.replicas, "run"):
            # follower fetchers, AlterPartition calls, ISR-shrink timer
            await nursery.start(self.replicas.run)
        # The metadata quorum (one node alone, or the voters of controller.quorum.voters)
        # replays the metadata log into the image and publishes it to the replica manager.
        with naming_path(f"cannot open the metadata log in {cfg.data_dir}", cfg.data_dir):
            self.quorum = MetadataQuorum(cfg, self.logs, self.cluster_id, clock,
                                         on_image=self._apply_image)
        self.metadata_log = self.quorum.store
        cfg.dynamic_source = lambda: self.quorum.image.broker_configs   # KIP-226 dynamic configs
        roles = cfg.get("process.roles")
        local = None
        if "controller" in roles and (self.node_id in self.quorum.voters or self.quorum.dynamic):
            local = QuorumController(cfg, self.quorum, clock, bootstrap=self.bootstrap_records)
        self.controller = ControllerChannel(cfg, self.quorum, local)
        from kbroker.metadata.producer_ids import ProducerIdManager
        self.producer_ids = ProducerIdManager(self.controller)
        await nursery.start(self._run_cluster_plane, local)
        self.stage = "waiting for the metadata quorum"
        await self.quorum.wait_caught_up()
        if "broker" in roles:
            from kbroker.metadata.lifecycle import BrokerLifecycle
            self.lifecycle = BrokerLifecycle(cfg, self.controller, self.quorum, self.incarnation_id,
                                             [(l.name, l.host, l.port) for l in cfg.advertised_listeners],
                                             cfg.get("broker.rack"))
            self.lifecycle.offline_log_dirs = self._offline_log_dirs
            # the epoch the last clean shutdown left in the markers (KIP-966), read at load
            self.lifecycle.previous_broker_epoch = self.logs.previous_broker_epoch()
            self.lifecycle.online_log_dirs = self._online_log_dirs
            self.lifecycle.cordoned_log_dirs = self._cordoned_log_dirs
            await nursery.start(self.lifecycle.run)
            self.dir_assignments.channel = self.controller
            await nursery.start(self.dir_assignments.run)
            self.stage = "registering with the active controller"
            await self.lifecycle.wait_unfenced()
            self.stage = "starting the coordinators"
        from kbroker.log.tasks import flush_check_interval_s, run_background
        await nursery.start(lambda task_status: run_background(
            self.logs,
            flush_interval_s=flush_check_interval_s(cfg.get("log.flush.scheduler.interval.ms"),
                                                    cfg.get("replica.high.watermark.checkpoint.interval.ms")),
            retention_interval_s=cfg.get("log.retention.check.interval.ms") / 1000,
            cleaner_interval_s=cfg.get("log.cleaner.backoff.ms") / 1000,
            initial_delay_s=cfg.get("log.initial.task.delay.ms") / 1000,
            producer_expiry_interval_s=cfg.get("producer.id.expiration.check.interval.ms") / 1000,
            # cluster-wide dynamic in Kafka: read before each sweep
            producer_expiration_ms=lambda: cfg.effective_values()["producer.id.expiration.ms"],
            task_status=task_status))
        from kbroker.group.service import GroupCoordinator
        self.group_coordinator = GroupCoordinator(self)
        await self.group_coordinator.start(nursery)
        # the transaction coordinator: now if this node has partitions of it to load, else
        # with its first use
        await txn_service.start_transactions(self, nursery)
        self.started = True
        log.info("broker %d started: %s (clean shutdown before: %s)", self.node_id,
                 self.metadata.statistics(), self.had_clean_shutdown)

    async def _run_cluster_plane(self, local, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The metadata quorum, the controller listener and the active controller's session
        checks. Every voter with a listener named in ``controller.listener.names`` binds it, as
        Kafka's ControllerServer does: also the only voter of a one-controller cluster (its
        brokers register there) and a single combined node (``kafka-metadata-quorum
        --bootstrap-controller``). A node without one (``make run``, ``--dev``) binds nothing
        more: its quorum needs no network, and DescribeQuorum/DescribeCluster are served on
        its client listener."""
        async with trio.open_nursery() as n:
            if local is not None and self.config.controller_listeners:
                from kbroker.controller_server import ControllerPlane
                from kbroker.server.controller_listener import ControllerServer
                self.controller_server = ControllerServer(ControllerPlane(self, self.quorum, local),
                                                          self.config.controller_listeners)
                await n.start(self.controller_server.run)
            if local is not None:
                # a one-node quorum's first start: its bootstrap records go to disk with the
                # epoch's LeaderChange, in the driver's first Ready
                local.propose_bootstrap_with_epoch_start()
            await n.start(self.quorum.run)
            if local is not None:
                def on_role(_change, local=local, n=n):
                    n.start_soon(local.maybe_activate)
                self.quorum.role_listeners.append(on_role)
                n.start_soon(local.maybe_activate)
                n.start_soon(local.run_session_checks)
                n.start_soon(local.run_noop_writer)       # KIP-835: metadata.max.idle.interval.ms
                n.start_soon(local.run_token_expiry)      # delegation tokens past their expiry
            task_status.started()

    def _apply_image(self, image) -> None:
        """Called synchronously for every published image, in publication order. (It must
        not be a coroutine: tasks started per image run in no guaranteed order under trio,
        and an older image applied after a newer one would delete live partitions' logs.)"""
        self.quotas.update(image)
        if self.replicas is None:
            return
        self.replicas.apply_image(image)
        self._maybe_load_groups(image)
        txn_service.on_image(self, image)     # load/unload __transaction_state partitions

    def _maybe_load_groups(self, image) -> None:
        """A ``__consumer_offsets`` partition this node now leads (new topic, leadership
        moved here, a cluster node back) is loaded by the group coordinator, as Kafka's
        coordinator loads on election; FindCoordinator may name this node from any other."""
        gc = self.group_coordinator
        if gc is None or self._nursery is None:
            return
        gc.on_image(image)          # unloads partitions led elsewhere now, loads new ones

    def startup_stage(self) -> str:
        """What start-up was doing (for the log line of a stop before ready)."""
        return getattr(self, "stage", "starting")

    def shutdown(self) -> None:
        """Flush and close every log; writes the clean-shutdown marker. Idempotent."""
        if not self.started and self.logs is None:
            self._release_dirs()
            return
        if self.group_coordinator is not None:
            self.group_coordinator.close()
        if self.transactions is not None:
            self.transactions.close()
        close = getattr(self.replicas, "shutdown", None) or getattr(self.replicas, "close", None)
        if close is not None:
            try:
                close()
            except Exception:   # noqa: BLE001 - shutting down anyway; logs still get closed
                log.exception("replica manager shutdown failed")
        if self.logs is not None and self.logs.loaded:
            # the marker remembers the broker epoch: the next registration proves it clean
            epoch = self.lifecycle.broker_epoch if self.lifecycle is not None else -1
            self.logs.shutdown(broker_epoch=epoch)
        self.logs = None
        self.started = False
        self._release_dirs()
        log.info("broker %d shut down cleanly", self.node_id)

    def _release_dirs(self) -> None:
        if self.dir_locks is not None:
            self.dir_locks.release()
            self.dir_locks = None

    def statistics(self) -> dict:
        out = {"node_id": self.node_id, "cluster_id": self.cluster_id}
        if self.controller is not None:
            out["metadata"] = self.controller.statistics()
        if self.logs is not None:
            out["logs"] = self.logs.statistics()
        return out


class _NoReplicaManager:
    """Used only while ``kbroker/replica/`` does not exist yet: keeps no partitions."""

    def __init__(self, broker):
        self.broker = broker

    def apply_image(self, image) -> None:
        pass


def _make_replica_manager(broker: Broker):
    try:
        from kbroker.replica import ReplicaManager
    except ModuleNotFoundError as e:
        if e.name != "kbroker.replica":
            raise
        log.warning("kbroker.replica is missing: partitions have no logs")
        return _NoReplicaManager(broker)
    return ReplicaManager(broker)
