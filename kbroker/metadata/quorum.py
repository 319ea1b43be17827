"""The metadata quorum of one node: the Raft driver plus the image as its state machine.

Every node runs one (``Broker.start``): a voter of ``controller.quorum.voters`` (or the only
voter of a one-node quorum when the setting is empty — ``make run``), or an observer that
only fetches (a broker-only node). Committed entries of ``__cluster_metadata-0`` are
decoded (``store.decode_record``; control records skipped) and replayed into the immutable
``MetadataImage`` (``image.replay_all``), which is then published to the broker
(``on_image``, called synchronously so the replica manager follows before anyone waits on
the commit returns). Snapshots are ``snapshot.dump`` of the image; an installed snapshot
replaces the image.

A dynamic quorum (KIP-853: formatted with ``--standalone``/``--initial-controllers``/
``--no-initial-controllers``, ``controller.quorum.bootstrap.servers`` instead of
``controller.quorum.voters``): the Raft core takes its voters from the log, and the
controller endpoints follow every ``VotersRecord`` (the first of
``controller.listener.names``); ``controller.quorum.bootstrap.servers`` get the pseudo ids
-2, -3, … for a joining node's first fetches, and a leader whose endpoint is not known yet is
looked up with DescribeQuorum on a bootstrap server. A static quorum whose log holds an
upgrade to ``kraft.version`` 1 (KAFKA-16538) is dynamic from then on (``dynamic``), whatever
``controller.quorum.voters`` says. Followers fetch from the endpoint their leader announces
(BeginQuorumEpoch v1 and the answers' NodeEndpoints; the driver keeps it per epoch as Kafka's
``FollowerState`` does), static or dynamic; the voter set's addresses stay what they are
(``learn_leader_endpoint`` only fills in a node the voter set has no address for yet).

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


def _metadata_directory_id(config) -> str | None:
    """``directory.id`` of the metadata log dir's ``meta.properties`` (KIP-853: the replica
    names it in its Fetch requests), or None when the directory has none."""
    from kbroker.metadata.storage_format import read_directory_id
    return read_directory_id(config.data_dir)


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
        static = config.quorum_voters
        self.voter_endpoints: dict[int, tuple[str, int]] = dict(static)   # shared with the RpcClient
        self._static_voters = frozenset(static) or frozenset({self.node_id})
        self.bootstrap_servers = config.quorum_bootstrap_servers
        from kbroker.metadata.storage_format import read_voters_checkpoint
        # an unformatted node whose bootstrap servers are only itself (Kafka's stock
        # single-node server.properties) stays the one-node quorum of old
        # formatted (or configured) as a dynamic quorum; a static one becomes dynamic when its
        # log holds an upgrade to kraft.version 1 (``dynamic``)
        self.formatted_dynamic = not static and (
            read_voters_checkpoint(config.data_dir) is not None
            or (bool(self.bootstrap_servers) and not config.bootstrap_is_self()))
        bootstrap_ids = [-2 - i for i in range(len(self.bootstrap_servers))] if self.formatted_dynamic else []
        for pid, addr in zip(bootstrap_ids, self.bootstrap_servers):
            self.voter_endpoints[pid] = addr
        # Other voters may exist (a dynamic quorum, or controller.quorum.voters naming another
        # node): this voter then tells new leaders about itself (``run``), and the controller
        # never places partitions on itself for want of brokers (``QuorumController._live_ids``).
        # It does not decide the controller listener: every controller with one configured
        # binds it, also the only voter of a one-controller cluster (``Broker._run_cluster_plane``).
        self.multi_node = self.formatted_dynamic or (bool(static) and self._static_voters != {self.node_id})
        names = config.get("controller.listener.names") or ["CONTROLLER"]
        self.controller_listener_name = names[0].upper()
        self._wall = wall_clock
        self.on_image = on_image
        self.store = MetadataLog.open(logs, wall_clock)
        self.rpc = RpcClient(self.voter_endpoints, client_id=f"kbroker-{self.node_id}",
                             security=getattr(config, "controller_security", None))
        self.rpc.endpoints = self.voter_endpoints    # one dict: voter changes reach the client
        self.image: MetadataImage = empty_image(cluster_id, self.node_id)
        self.role_listeners: list = []
        self._nursery: trio.Nursery | None = None
        voters = () if self.formatted_dynamic else self._static_voters
        from kbroker.metadata.storage_format import controller_listener
        own = controller_listener(config) if "controller" in (config.values.get("process.roles") or ()) else None
        self.driver = RaftDriver(self.node_id, voters, RaftStorage(self.store.log, self._static_voters, wall_clock),
                                 raft_config_of(config), self, rpc=self.rpc, cluster_id=cluster_id,
                                 rng=rng or random.Random(), wall_clock=wall_clock,
                                 bootstrap_ids=bootstrap_ids, directory_id=_metadata_directory_id(config),
                                 endpoints=(own,) if own else ())
        if self.formatted_dynamic:
            self.driver.discover = self.discover
        self.driver.learn_endpoint = self.learn_leader_endpoint
        self.driver.listener_name = self.controller_listener_name
        if self.dynamic:
            self.on_voters(self.driver.node.voter_infos)

    # ------------------------------------------------------------------ lifecycle
    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.driver.run)
            if self.multi_node and "controller" in (self.config.values.get("process.roles") or ()):
                # KIP-853: a voter tells the leader about itself (every new leader of a static
                # quorum, for an upgrade; a stale VotersRecord entry), an observer may join
                from kbroker.metadata import self_update
                nursery.start_soon(self_update.run, self, self.driver.config.fetch_timeout_ms / 1000)
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
    def dynamic(self) -> bool:
        """``kraft.version`` 1: formatted so, or a static quorum whose upgrade is in the log."""
        return self.formatted_dynamic or self.driver.node.dynamic

    @property
    def voters(self) -> frozenset:
        return self.driver.node.voters if self.dynamic else self._static_voters

    @property
    def voter_infos(self) -> dict:
        """voter id -> ``kbroker.raft.control.Voter`` (a dynamic quorum; empty otherwise)."""
        return self.driver.node.voter_infos or {}

    def on_voters(self, infos) -> None:
        """A new voter set (KIP-853): where to reach each voter's controller listener."""
        for vid, v in (infos or {}).items():
            eps = [e for e in v.endpoints if e[0].upper() == self.controller_listener_name] or list(v.endpoints)
            if eps:
                self.voter_endpoints[vid] = (eps[0][1], eps[0][2])

    async def discover(self, node_id: int) -> None:
        """The endpoint of a node (a leader a bootstrap server named) from DescribeQuorum v2
        on the bootstrap servers."""
        from kbroker.wire import messages as w
        R = w.DescribeQuorumRequest
        req = R(topics=[R.TopicData(topic_name="__cluster_metadata",
                                    partitions=[R.PartitionData(partition_index=0)])])
        for addr in self.bootstrap_servers:
            resp = await self.rpc.call_addr(addr, 55, 2, req, 5.0)
            for n in (resp.nodes if resp is not None else None) or ():
                lst = [l for l in n.listeners or () if l.name.upper() == self.controller_listener_name] \
                    or list(n.listeners or ())
                if lst and n.node_id != self.node_id:
                    self.voter_endpoints.setdefault(n.node_id, (lst[0].host, lst[0].port))
            if node_id in self.voter_endpoints:
                return

    @property
    def leader_id(self) -> int:
        return self.driver.leader_id

    @property
    def is_active(self) -> bool:
        """Leader with everything before its epoch applied: may act as the controller."""
        return self.driver.node.leader_ready

    def controller_endpoint(self, node_id: int) -> tuple[str, int] | None:
        return self.voter_endpoints.get(node_id)

    def endpoint_of(self, node_id: int) -> tuple[str, int] | None:
        """Where ``node_id``'s controller listener is, as this node would announce it (its own
        advertised controller listener for itself)."""
        if node_id == self.node_id:
            own = [e for e in self.driver.node.endpoints if e[0].upper() == self.controller_listener_name]
            if own:
                return own[0][1], own[0][2]
        return self.voter_endpoints.get(node_id) if node_id >= 0 else None

    def node_endpoints(self, api_key: int, version: int, response_cls, leader_id: int) -> list | None:
        """A Raft response's ``NodeEndpoints`` (KIP-853) at ``version``: the leader's endpoint."""
        from kbroker.raft.wire_map import NODE_ENDPOINTS_SINCE, node_endpoints
        if version < NODE_ENDPOINTS_SINCE[api_key]:
            return None
        return node_endpoints(response_cls, leader_id, self.endpoint_of(leader_id))

    def learn_leader_endpoint(self, node_id: int, addr: tuple[str, int]) -> None:
        """A leader announced where it is (BeginQuorumEpoch/EndQuorumEpoch v1, or a response's
        NodeEndpoints, on this node's controller listener). The driver fetches from it; here
        it only fills in a leader the voter set has no address for yet (a node joining a
        dynamic quorum before it replays the VotersRecord), so that the controller channel
        reaches it. Known addresses -- controller.quorum.voters, VotersRecord entries -- stay:
        Kafka's Vote, BeginQuorumEpoch and controller channel use the voter set too."""
        if node_id < 0 or node_id == self.node_id or node_id in self.voter_endpoints:
            return
        log.info("raft: leader %d announced its controller endpoint %s:%d", node_id, addr[0], addr[1])
        self.voter_endpoints[node_id] = addr

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
