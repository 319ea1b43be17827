"""``Broker``: the one object that ties a running node together.

It owns, and hands to API handlers through ``RequestContext.broker``:

- ``config``   — the ``BrokerConfig``;
- ``clock``    — injected time (``now_ms()``; tests pass a fake);
- ``logs``     — the ``LogManager`` of ``log.dirs`` (the metadata log lives there too);
- ``controller`` — the single-node controller; ``metadata`` is its current image;
- ``producer_ids`` — producer ids for InitProducerId, in controller-reserved blocks;
- ``transactions`` — the transaction coordinator (``kbroker/txn/coordinator.py``);
- ``replicas`` — the ``ReplicaManager`` (``kbroker/replica.py``), told about every new
  image via ``apply_image`` so partition logs follow the metadata.

Lifecycle (inside one trio nursery, see ``kbroker.server``): ``await start(nursery)``
formats/reads ``meta.properties``, loads the logs (recovering after a crash), replays the
metadata log, registers this broker, applies the image and starts the log maintenance
tasks in ``nursery``; ``shutdown()`` flushes and closes every log and writes the
clean-shutdown marker, so the next start needs no recovery.
"""
from __future__ import annotations

import inspect
import logging
import time
import uuid

from kbroker.config import BrokerConfig, ensure_meta_properties

log = logging.getLogger("kbroker.broker")


class SystemClock:
    """Wall-clock milliseconds (record timestamps, retention)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def __call__(self) -> int:
        return self.now_ms()


class Broker:
    def __init__(self, config: BrokerConfig, clock=None):
        self.config = config
        self.clock = clock or SystemClock()
        self.node_id = config.node_id
        self.cluster_id: str | None = None
        self.logs = None
        self.replicas = None
        self.controller = None
        self.metadata_log = None
        self.producer_ids = None     # ProducerIdManager (InitProducerId)
        self.transactions = None     # transaction coordinator, when there is one
        self.group_coordinator = None  # kbroker.group.service.GroupCoordinator
        self.incarnation_id = uuid.uuid4()
        self.started = False
        self.had_clean_shutdown = True

    # ------------------------------------------------------------------ views
    @property
    def metadata(self):
        """The current (immutable) metadata image."""
        return self.controller.image

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def base_log_config(self):
        from kbroker.log.config import LogConfig
        return LogConfig.from_properties(self.config.log_config_defaults())

    def log_config_for(self, topic) -> "object":
        """The ``LogConfig`` of a topic image: its overrides over the broker defaults."""
        from kbroker.log.config import LogConfig
        return LogConfig.from_properties(dict(topic.configs), base=self.base_log_config())

    # ------------------------------------------------------------------ lifecycle
    async def start(self, nursery=None) -> None:
        from kbroker.log.manager import LogManager
        from kbroker.metadata.controller import Controller
        from kbroker.metadata.image import empty_image
        from kbroker.metadata.store import MetadataLog

        cfg = self.config
        formatted = (cfg.data_dir / "meta.properties").exists()
        self.cluster_id = ensure_meta_properties(cfg)
        clock = self.clock.now_ms
        self.logs = LogManager(cfg.log_dirs, self.base_log_config(), clock,
                               checkpoint_interval_ms=cfg.get("log.flush.offset.checkpoint.interval.ms"))
        self.logs.load()
        # a data dir used for the first time has nothing to recover
        self.had_clean_shutdown = not formatted or all(self.logs.had_clean_shutdown.values())
        self.metadata_log = MetadataLog.open(self.logs, clock)
        self.controller = Controller(cfg, self.metadata_log,
                                     empty_image(self.cluster_id, cfg.node_id),
                                     on_change=self._apply_image)
        self.controller.load()
        from kbroker.metadata.producer_ids import ProducerIdManager
        self.producer_ids = ProducerIdManager(self.controller)
        self.replicas = _make_replica_manager(self)
        await self._apply_image(self.controller.image)
        await self.controller.bootstrap(
            [(l.name, l.host, l.port) for l in cfg.advertised_listeners],
            cfg.get("broker.rack"), self.incarnation_id)
        if nursery is not None:
            from kbroker.log.tasks import run_background
            await nursery.start(lambda task_status: run_background(
                self.logs,
                flush_interval_s=1.0,
                retention_interval_s=cfg.get("log.retention.check.interval.ms") / 1000,
                cleaner_interval_s=cfg.get("log.cleaner.backoff.ms") / 1000,
                task_status=task_status))
        from kbroker.group.service import GroupCoordinator
        self.group_coordinator = GroupCoordinator(self)
        await self.group_coordinator.start(nursery)
        from kbroker.txn.coordinator import TransactionCoordinator
        self.transactions = TransactionCoordinator(self)
        await self.transactions.start(nursery)
        self.started = True
        log.info("broker %d started: %s (clean shutdown before: %s)", self.node_id,
                 self.metadata.statistics(), self.had_clean_shutdown)

    async def _apply_image(self, image) -> None:
        if self.replicas is None:
            return
        result = self.replicas.apply_image(image)
        if inspect.isawaitable(result):
            await result

    def shutdown(self) -> None:
        """Flush and close every log; writes the clean-shutdown marker. Idempotent."""
        if not self.started and self.logs is None:
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
            self.logs.shutdown()
        self.logs = None
        self.started = False
        log.info("broker %d shut down cleanly", self.node_id)

    def statistics(self) -> dict:
        out = {"node_id": self.node_id, "cluster_id": self.cluster_id}
        if self.controller is not None:
            out["metadata"] = self.controller.statistics()
        if self.logs is not None:
            out["logs"] = self.logs.statistics()
        return out


class _NoReplicaManager:
    """Used only while ``kbroker/replica.py`` does not exist yet: keeps no partitions."""

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
