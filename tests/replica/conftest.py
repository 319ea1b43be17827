"""Fixtures for ReplicaManager tests: a real LogManager on tmp_path, a settable clock and
small metadata images. The broker object is a plain holder of the pieces ReplicaManager
reads (config, clock, logs) — the manager and the logs under it are the real ones."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from kbroker.config.broker import BrokerConfig
from kbroker.log.config import LogConfig
from kbroker.log.manager import LogManager
from kbroker.quota.managers import QuotaManagers
from kbroker.replica import ReplicaManager
from kbroker.node.stats import BrokerTopicStats
from kbroker.wire import records as rec

NODE = 1
T0 = 1_700_000_000_000


class Clock:
    def __init__(self, now: int = T0):
        self.now = now

    def now_ms(self) -> int:
        return self.now


# Duck-typed stand-ins with the fields of kbroker.metadata.image's classes.
@dataclass(frozen=True)
class PartitionImage:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple = (NODE,)
    isr: tuple = (NODE,)


@dataclass(frozen=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict
    configs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Image:
    topics: dict


class Cluster:
    """Keeps a mutable description of topics and pushes images to the ReplicaManager."""

    def __init__(self, replicas: ReplicaManager):
        self.replicas = replicas
        self.topics: dict[str, TopicImage] = {}

    def create(self, name: str, partitions: int = 1, configs: dict | None = None, *,
               epoch: int = 0, leader: int = NODE) -> TopicImage:
        t = TopicImage(name, uuid.uuid4(),
                       {i: PartitionImage(i, leader, epoch) for i in range(partitions)},
                       dict(configs or {}))
        self.topics[name] = t
        self.push()
        return t

    def set_configs(self, name: str, configs: dict) -> None:
        t = self.topics[name]
        self.topics[name] = TopicImage(t.name, t.topic_id, t.partitions, dict(configs))
        self.push()

    def bump_epoch(self, name: str) -> None:
        t = self.topics[name]
        parts = {i: PartitionImage(i, p.leader, p.leader_epoch + 1) for i, p in t.partitions.items()}
        self.topics[name] = TopicImage(t.name, t.topic_id, parts, t.configs)
        self.push()

    def delete(self, name: str) -> None:
        del self.topics[name]
        self.push()

    def push(self) -> None:
        self.replicas.apply_image(Image(dict(self.topics)))


@pytest.fixture
def clock():
    return Clock()


def make_broker(log_dirs, clock) -> SimpleNamespace:
    """The holder of a ReplicaManager on a loaded LogManager over ``log_dirs``."""
    config = BrokerConfig.from_dict({"log.dirs": ",".join(str(d) for d in log_dirs)})
    logs = LogManager(log_dirs, LogConfig.from_properties(config.log_config_defaults()),
                      clock.now_ms)
    logs.load()
    b = SimpleNamespace(config=config, clock=clock, logs=logs, transactions=None,
                        topic_stats=BrokerTopicStats(), quotas=QuotaManagers(config, clock.now_ms))
    b.replicas = ReplicaManager(b)
    return b


@pytest.fixture
def broker(tmp_path, clock):
    b = make_broker([tmp_path / "data"], clock)
    yield b
    b.logs.shutdown()


@pytest.fixture
def replicas(broker):
    return broker.replicas


@pytest.fixture
def cluster(replicas):
    return Cluster(replicas)


def batch(*values, keys=None, timestamps=None, compression=0, ts=T0, **kw) -> bytes:
    """A client-style batch (base offset 0, no epoch) of ``values``."""
    keys = keys or [None] * len(values)
    tss = timestamps or [ts] * len(values)
    return rec.build_batch([rec.SimpleRecord(k, v, (), t) for k, v, t in zip(keys, values, tss)],
                           compression=compression, **kw)


def decode_region(region) -> list:
    data = region.read_bytes()
    out = []
    for pos, h in rec.iter_batches(data):
        out.extend(rec.decode_records(data, pos, h))
    return out
