"""The metadata quorum of one node: the Raft driver plus the image as its state machine.

Every node runs one (``Broker.start``): a voter of ``controller.quorum.voters`` (or the only
voter of a one-node quorum when the setting is empty — ``make run``), or an observer that
only fetches (a broker-only node). Committed entries of ``__cluster_metadata-0`` are
decoded (``store.decode_record``; control records skipped) and replayed into the immutable
``MetadataImage`` (``image.replay_all``), which is then published to the broker
(``on_image``, called synchronously so the replica manager follows before anyone waits on
the commit returns). Snapshots are ``snapshot.dump`` of the image; an installed snapshot
replaces the image.

``controller_id`` of the published image is the Raft leader when it is a registered broker
(a combined node), else this node: Metadata answers name a broker that accepts (and
forwards) admin requests, as Kafka's KRaft brokers do.
"""
from __future__ import annotations

import inspect
import logging
import random
from dataclasses import replace

import trio

from kbroker.raft import RaftConfig
from kbroker.raft.driver import RaftDriver
from kbroker.raft.storage import RaftStorage
from kbroker.raft.transport import RpcClient

from . import snapshot as snap
from .image import MetadataImage, empty_image, replay_all
from .store import MetadataLog, decode_record

log = logging.getLogger("kbroker.quorum")


def raft_config_of(config) -> RaftConfig:
    g = config.get
    return RaftConfig(
        election_timeout_ms=g("controller.quorum.election.timeout.ms"),
        fetch_timeout_ms=g("controller.quorum.fetch.timeout.ms"),
        election_backoff_max_ms=g("controller.quorum.election.backoff.max.ms"),
        request_timeout_ms=g("controller.quorum.request.timeout.ms"),
        retry_backoff_ms=g("controller.quorum.retry.backoff.ms"),
        max_record_bytes_between_snapshots=g("metadata.log.max.record.bytes.between.snapshots"),
        pre_vote=True)   # KIP-996 on the wire (Vote v2)


class MetadataQuorum:
    def __init__(self, config, logs, cluster_id: str, wall_clock, on_image=None,
                 rng: random.Random | None = None):
        self.config = config
        self.node_id = config.node_id
        self.cluster_id = cluster_id
        self.voter_endpoints: dict[int, tuple[str, int]] = config.quorum_voters
        self.voters = frozenset(self.voter_endpoints) or frozenset({self.node_id})
        self.multi_node = bool(self.voter_endpoints) and self.voters != {self.node_id}
        self._wall = wall_clock
        self.on_image = on_image
        self.store = MetadataLog.open(logs, wall_clock)
        self.rpc = RpcClient(self.voter_endpoints, client_id=f"kbroker-{self.node_id}",
                             security=getattr(config, "controller_security", None))
        self.image: MetadataImage = empty_image(cluster_id, self.node_id)
        self.role_listeners: list = []
        self._nursery: trio.Nursery | None = None
        self.driver = RaftDriver(self.node_id, self.voters, RaftStorage(self.store.log, self.voters, wall_clock),
                                 raft_config_of(config), self, rpc=self.rpc, cluster_id=cluster_id,
                                 rng=rng or random.Random(), wall_clock=wall_clock)

    # ------------------------------------------------------------------ lifecycle
    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.driver.run)
            task_status.started(self)

    async def wait_caught_up(self) -> None:
        """Until this node has applied what the quorum had committed when it (re)joined:
        the leader once its epoch's LeaderChange record is applied; a follower or observer
        once it has applied up to a high watermark a leader answered it with."""
        d = self.driver
        while True:
            node = d.node
            if node.leader_ready:
                return
            if d.fetch_answers > 0 and d.leader_id >= 0 and node.applied_offset >= d.leader_hw_seen:
                return
            with trio.move_on_after(0.05):
                await d.wait_applied_change()

    async def wait_caught_up_after_now(self, timeout: float = 2.0) -> None:
        """Best effort, for writes forwarded to another controller: wait for two more Fetch
        answers (the second was asked after now, so it carries a high watermark covering
        what the controller committed before now) and apply up to it."""
        d = self.driver
        if d.node.leader_ready:
            return
        with trio.move_on_after(timeout):
            start = d.fetch_answers
            while d.fetch_answers < start + 2:
                await trio.sleep(0.005)
            target = d.leader_hw_seen
            while d.node.applied_offset < target:
                with trio.move_on_after(0.05):
                    await d.wait_applied_change()

    # ------------------------------------------------------------------ views
    @property
    def leader_id(self) -> int:
        return self.driver.leader_id

    @property
    def is_active(self) -> bool:
        """Leader with everything before its epoch applied: may act as the controller."""
        return self.driver.node.leader_ready

    def controller_endpoint(self, node_id: int) -> tuple[str, int] | None:
        return self.voter_endpoints.get(node_id)

    # ------------------------------------------------------------------ state machine
    def apply(self, entries) -> None:
        records = []
        for e in entries:
            if e.control:
                continue
            try:
                records.append((e.offset, decode_record(e.payload)))
            except ValueError:
                log.error("skipping undecodable metadata record at offset %d", e.offset)
        if records:
            try:
                image = replay_all(self.image, records)
            except ValueError:
                # a record that does not apply (e.g. for a topic already gone) must not stop
                # the node: replay one by one, skipping the bad ones, as Kafka logs and skips
                image = self.image
                for off, rec in records:
                    try:
                        image = replay_all(image, [(off, rec)])
                    except ValueError as e:
                        log.error("metadata record at offset %d does not apply: %s", off, e)
            self._publish(image)

    def apply_snapshot(self, snapshot) -> None:
        image = snap.load(snapshot.data, self.cluster_id, self.node_id, snapshot.snapshot_id.end_offset)
        log.info("loaded metadata snapshot ending at offset %d", snapshot.snapshot_id.end_offset)
        self._publish(image)

    def snapshot_bytes(self) -> bytes:
        return snap.dump(self.image, self._wall())

    def on_role_change(self, change) -> None:
        self._publish(self.image)
        for fn in list(self.role_listeners):
            fn(change)

    def _publish(self, image: MetadataImage) -> None:
        image = self._with_controller(image)
        self.image = image
        if self.on_image is not None:
            # Synchronous on purpose: images must reach the replica manager in order (a
            # task per image would run in no guaranteed order and could apply an older
            # image after a newer one, deleting live partitions).
            result = self.on_image(image)
            if inspect.isawaitable(result):
                result.close()
                raise TypeError("on_image must be a plain function, not a coroutine")

    def _with_controller(self, image: MetadataImage) -> MetadataImage:
        leader = self.driver.leader_id
        b = image.brokers.get(leader)
        cid = leader if b is not None and not b.fenced else self.node_id
        return image if image.controller_id == cid else replace(image, controller_id=cid)

    def statistics(self) -> dict:
        return {"image": self.image.statistics(), "raft": self.driver.statistics()}
