"""Several ReplicaManagers (one per node, each on its own data dir with a real LogManager)
driven by hand-built metadata images. Follower fetches are carried by hand: the leader's
follower-fetch path (``ReplicaManager.fetch(..., replica_id=...)``) is called directly and its
answer handed to the follower's response handling (``FollowerLog.process``), exactly what the
fetcher task does with the same objects after a network round trip.

The controller is a small stand-in that keeps Kafka's AlterPartition rules the tests rely on
(leader epoch and partition epoch must match; the new ISR is committed with partition epoch + 1
and published to every node as a new image)."""
from __future__ import annotations

import uuid
from dataclasses import replace
from types import SimpleNamespace

from kbroker.config.broker import BrokerConfig
from kbroker.log.config import LogConfig
from kbroker.log.manager import LogManager
from kbroker.metadata.image import BrokerImage, MetadataImage, PartitionImage, TopicImage
from kbroker.metadata.quorum_controller import AlterPartitionResult
from kbroker.quota.managers import QuotaManagers
from kbroker.replica import FetchSpec, ReplicaManager
from kbroker.node.stats import BrokerTopicStats
from kbroker.wire.error_codes import ErrorCode

T0 = 1_700_000_000_000
LAG_MS = 10_000


class Clock:
    def __init__(self, now: int = T0):
        self.now = now

    def now_ms(self) -> int:
        return self.now


class Controller:
    """Stand-in for the active controller: the image and AlterPartition."""

    def __init__(self, cluster: "Cluster"):
        self.cluster = cluster
        self.calls: list = []
        self.fail_with: int | None = None

    async def alter_partition(self, broker_epoch, topic_id, partition, leader_epoch,
                              partition_epoch, new_isr, **_):
        self.calls.append((topic_id, partition, leader_epoch, partition_epoch, tuple(new_isr)))
        if self.fail_with is not None:
            return AlterPartitionResult(self.fail_with)
        name = next(n for n, t in self.cluster.topics.items() if t.topic_id == topic_id)
        p = self.cluster.topics[name].partitions[partition]
        if leader_epoch != p.leader_epoch:
            return AlterPartitionResult(ErrorCode.FENCED_LEADER_EPOCH)
        if partition_epoch != p.partition_epoch:
            return AlterPartitionResult(ErrorCode.INVALID_UPDATE_VERSION)
        p = self.cluster.set_partition(name, partition, isr=tuple(new_isr))
        return AlterPartitionResult(0, p.leader, p.leader_epoch, p.isr, p.partition_epoch)


class Node:
    def __init__(self, node_id: int, root, clock: Clock, controller: Controller, configs=None):
        self.id = node_id
        props = {"log.dirs": str(root / f"node{node_id}"), "node.id": node_id,
                 "replica.lag.time.max.ms": LAG_MS}
        props.update(configs or {})
        config = BrokerConfig.from_dict(props)
        self.logs = LogManager([root / f"node{node_id}"],
                               LogConfig.from_properties(config.log_config_defaults()), clock.now_ms)
        self.logs.load()
        self.broker = SimpleNamespace(config=config, clock=clock, logs=self.logs, transactions=None,
                                      controller=controller, lifecycle=None,
                                      topic_stats=BrokerTopicStats(),
                                      quotas=QuotaManagers(config, clock.now_ms))
        self.replicas = ReplicaManager(self.broker)
        self.broker.replicas = self.replicas

    def replica(self, topic: str, index: int = 0):
        return self.replicas.get_replica(topic, index)

    def log_bytes(self, topic: str, index: int = 0) -> bytes:
        log = self.replica(topic, index).log
        region = log.read(log.log_start_offset, 1 << 30)
        return b"" if region is None else region.read_bytes()


class Cluster:
    def __init__(self, root, n: int = 3, configs=None):
        self.clock = Clock()
        self.controller = Controller(self)
        self.nodes = {i: Node(i, root, self.clock, self.controller, configs) for i in range(1, n + 1)}
        self.topics: dict[str, TopicImage] = {}
        self.broker_epochs: dict[int, int] = {}     # registrations (default -1)
        self.fenced: set[int] = set()
        self.offset = 0                             # the metadata offset of the last image
        self.features: dict[str, int] = {}          # finalized feature levels of the images

    def image(self) -> MetadataImage:
        brokers = {i: BrokerImage(i, (("PLAINTEXT", "127.0.0.1", 9090 + i),), rack=f"r{i}",
                                  broker_epoch=self.broker_epochs.get(i, -1),
                                  fenced=i in self.fenced)
                   for i in self.nodes}
        self.offset += 1
        return MetadataImage(cluster_id="test", controller_id=1, brokers=brokers,
                             offset=self.offset, topics=dict(self.topics),
                             features=dict(self.features),
                             topics_by_id={t.topic_id: t for t in self.topics.values()})

    def push(self) -> None:
        img = self.image()
        for node in self.nodes.values():
            node.replicas.apply_image(img)

    def create(self, name: str, *, leader: int = 1, replicas=(1, 2, 3), isr=None,
               configs=None, partitions: int = 1) -> None:
        parts = {i: PartitionImage(i, leader, 0, tuple(replicas),
                                   tuple(replicas if isr is None else isr), 0)
                 for i in range(partitions)}
        self.topics[name] = TopicImage(name, uuid.uuid4(), parts, dict(configs or {}))
        self.push()

    def set_partition(self, name: str, index: int = 0, *, leader: int | None = None,
                      isr=None, replicas=None) -> PartitionImage:
        """A PartitionChangeRecord: a new leader bumps the leader epoch; always bumps the
        partition epoch."""
        t = self.topics[name]
        p = t.partitions[index]
        changes = {"partition_epoch": p.partition_epoch + 1}
        if leader is not None and leader != p.leader:
            changes.update(leader=leader, leader_epoch=p.leader_epoch + 1)
        if isr is not None:
            changes["isr"] = tuple(isr)
        if replicas is not None:
            changes["replicas"] = tuple(replicas)
        new = replace(p, **changes)
        parts = dict(t.partitions)
        parts[index] = new
        self.topics[name] = replace(t, partitions=parts)
        self.push()
        return new

    def partition(self, name: str, index: int = 0) -> PartitionImage:
        return self.topics[name].partitions[index]

    async def fetch_once(self, follower_id: int, name: str, index: int = 0,
                         max_bytes: int = 1 << 20) -> str:
        """One follower fetch round trip, by hand: what SourceFetcher does over the wire."""
        follower = self.nodes[follower_id]
        part = follower.replica(name, index)
        leader = self.nodes[part.leader]
        log = part.log
        spec = FetchSpec(name, index, log.log_end_offset, max_bytes,
                         current_leader_epoch=part.leader_epoch,
                         last_fetched_epoch=log.latest_epoch,
                         log_start_offset=log.log_start_offset)
        [res] = await leader.replicas.fetch([spec], max_bytes=max_bytes, min_bytes=0,
                                            max_wait_ms=0, replica_id=follower_id)
        outcome = follower.replicas.fetchers.follower_log.process(part, spec.fetch_offset, res)
        if outcome == "out_of_range":
            lp = leader.replicas.get_partition(name, index)
            follower.replicas.fetchers.follower_log.reset_out_of_range(
                part, lp.log_start_offset, lp.log_end_offset)
        return outcome

    async def catch_up(self, name: str, index: int = 0, followers=None, rounds: int = 20) -> None:
        """Fetch rounds until a round changes nothing and every fetching follower has the
        leader's log end offset (bounded rounds)."""
        def snapshot():
            return [(n.replica(name, index).log.log_end_offset,
                     n.replica(name, index).log.high_watermark)
                    for n in self.nodes.values() if n.replica(name, index) is not None]
        for _ in range(rounds):
            before = snapshot()
            done = True
            for nid, node in self.nodes.items():
                part = node.replica(name, index)
                if part is None or part.is_leader or (followers and nid not in followers):
                    continue
                await self.fetch_once(nid, name, index)
                leader = self.nodes[part.leader].replica(name, index)
                if part.log.log_end_offset != leader.log.log_end_offset:
                    done = False
            if done and snapshot() == before:
                return
        raise AssertionError("followers did not catch up")

    def close(self) -> None:
        for node in self.nodes.values():
            node.replicas.close()
            node.logs.shutdown()
