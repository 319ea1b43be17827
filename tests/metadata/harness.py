"""An in-process metadata quorum of one voter (node 1) on real files, for controller tests.

Other brokers (2, 3, ...) are "virtual": they register and heartbeat by calling the
controller directly, as the BrokerRegistration/BrokerHeartbeat handlers would.
"""
from __future__ import annotations

import uuid

import trio

from kbroker.config.broker import BrokerConfig
from kbroker.log.config import LogConfig
from kbroker.log.manager import LogManager
from kbroker.metadata import snapshot
from kbroker.metadata.image import empty_image, replay_all
from kbroker.metadata.quorum import MetadataQuorum
from kbroker.metadata.quorum_controller import QuorumController
from kbroker.metadata.store import decode_record

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
WALL = 1_700_000_000_000


class Harness:
    def __init__(self, tmp_path, **overrides):
        cfg = {"log.dirs": str(tmp_path), "broker.session.timeout.ms": "3000",
               "broker.heartbeat.interval.ms": "500"}
        cfg.update({k.replace("_", "."): str(v) for k, v in overrides.items()})
        self.config = BrokerConfig.from_dict(cfg)
        self.tmp_path = tmp_path
        self.images = []
        self.incarnations = {}

    async def start(self, nursery, *, activate: bool = True, with_epoch_start: bool = False) -> "Harness":
        """``activate=False``: the quorum is ready but the controller has not run its
        activation yet (no bootstrap records), as a registration can find it.
        ``with_epoch_start``: the controller proposes the bootstrap records before the quorum
        runs, as a node does (``proposed_with_epoch_start`` says whether it did)."""
        clock = lambda: WALL  # noqa: E731
        self.logs = LogManager([self.tmp_path], LogConfig(), clock)
        self.logs.load()
        self.quorum = MetadataQuorum(self.config, self.logs, CLUSTER_ID, clock, on_image=self.images.append)
        if with_epoch_start:
            self.controller = QuorumController(self.config, self.quorum, clock)
            self.proposed_with_epoch_start = self.controller.propose_bootstrap_with_epoch_start()
        await nursery.start(self.quorum.run)
        if not with_epoch_start:
            self.controller = QuorumController(self.config, self.quorum, clock)
        await self.quorum.wait_caught_up()
        if activate:
            await self.controller.maybe_activate()
        return self

    def close(self) -> None:
        self.logs.shutdown()

    @property
    def image(self):
        return self.quorum.image

    @property
    def end(self) -> int:
        return self.quorum.driver.node.log.end_offset

    def records(self, start: int = 0, end: int | None = None) -> list:
        """The metadata records committed in [start, end) (control records left out)."""
        node = self.quorum.driver.node
        return [decode_record(e.payload) for e in node.log.entries(start, node.log.end_offset if end is None else end)
                if not e.control]

    def replayed(self):
        """The image rebuilt from nothing by replaying every committed record."""
        return replay_all(empty_image(CLUSTER_ID, 1), self.records())

    async def register(self, broker_id: int, *, unfence: bool = True, log_dirs=None) -> int:
        """Register ``broker_id`` with ``log_dirs`` (default: one, :func:`dir_id`)."""
        inc = self.incarnations.setdefault(broker_id, uuid.uuid4())
        code, epoch = await self.controller.register_broker(
            broker_id, CLUSTER_ID, inc, [("PLAINTEXT", "127.0.0.1", 9000 + broker_id)], None,
            log_dirs=[dir_id(broker_id)] if log_dirs is None else log_dirs)
        assert code == 0
        if unfence:
            await self.heartbeat(broker_id)
        return epoch

    async def heartbeat(self, broker_id: int, **kw):
        epoch = self.image.brokers[broker_id].broker_epoch
        return await self.controller.heartbeat(broker_id, epoch, self.quorum.driver.applied_offset - 1,
                                               kw.get("want_fence", False), kw.get("want_shut_down", False),
                                               offline_dirs=kw.get("offline_dirs", ()),
                                               cordoned_dirs=kw.get("cordoned_dirs"))


def dir_id(broker_id: int, n: int = 0) -> uuid.UUID:
    """A fixed directory id for log dir ``n`` of ``broker_id`` (never a reserved one)."""
    return uuid.UUID(int=(broker_id << 96) | (n << 64) | 0xD1D1)


def comparable(image):
    """An image as plain data (controller id and last offset aside), for equality checks."""
    return [r.to_dict() for r in snapshot.image_records(image)]


async def sleep_ms(ms: int) -> None:
    await trio.sleep(ms / 1000)
