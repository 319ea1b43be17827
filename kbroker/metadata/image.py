"""The metadata image: an immutable snapshot of the cluster's metadata, and ``replay``.

The image changes only by replaying Kafka's metadata records (``TopicRecord``,
``PartitionRecord``, ``PartitionChangeRecord``, ``ConfigRecord``, ``RemoveTopicRecord``,
``RegisterBrokerRecord``, ``BrokerRegistrationChangeRecord``, ``FenceBrokerRecord``,
``UnfenceBrokerRecord``, ``UnregisterBrokerRecord``, ``FeatureLevelRecord``,
``ProducerIdsRecord``, ``NoOpRecord``, ``AccessControlEntryRecord``,
``RemoveAccessControlEntryRecord``, ``DelegationTokenRecord``, ``RemoveDelegationTokenRecord``,
``UserScramCredentialRecord``, ``RemoveUserScramCredentialRecord``, ``ClearElrRecord``;
``RegisterControllerRecord``/``UnregisterControllerRecord`` are read and change nothing),
the way Kafka's ``MetadataDelta``/``MetadataImage`` pair works: ``ImageBuilder`` applies a
run of records copy-on-write and ``build()`` freezes the result. Readers (API handlers,
the replica manager) hold an image and never see it change under them.

Record semantics follow Kafka's ``TopicsDelta``/``ConfigurationsDelta``:
- ``PartitionChangeRecord`` fields at their "unchanged" sentinels (leader -2, null lists)
  leave the partition as it was; a leader change bumps the leader epoch; every change bumps
  the partition epoch (``apply_partition_change``). ``adding_replicas``/``removing_replicas``
  of an ongoing reassignment (KIP-455) are part of the partition's state.
- ``Directories`` (KIP-858, ``kbroker.metadata.directories``): one log directory id per
  replica; none (older records) or only MIGRATING is kept as ``()``. A broker's online log
  dirs come from ``RegisterBrokerRecord.LogDirs`` and are replaced by a non-empty
  ``BrokerRegistrationChangeRecord.LogDirs``.
- ELR (KIP-966): ``EligibleLeaderReplicas``/``LastKnownElr`` of partition records are kept
  per partition (``PartitionImage.elr``/``last_known_elr``); ``ClearElrRecord`` empties them
  for one topic or all. Cordoned log dirs (KIP-1066) are kept per broker like its log dirs; a
  null ``CordonedLogDirs`` in a change record leaves them as they are.
- ``ConfigRecord`` with a null value deletes the override; resource type 2 is a topic,
  4 a broker (empty name = cluster default).
- ``RemoveTopicRecord`` removes the topic and its config overrides.
- ACLs are kept by id (Kafka's ``AclControlManager``); removing an unknown id is an error.
  ``acl_index`` (``kbroker.authz.authorizer.AclIndex``) is rebuilt only when ACLs change.
- Delegation tokens are kept by token id (``kbroker.authz.tokens.TokenInfo``).
- ``UserScramCredentialRecord`` sets (creates or replaces) one user's credential for one
  SCRAM mechanism; ``RemoveUserScramCredentialRecord`` removes it (Kafka's ``ScramDelta``).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Iterable, Mapping

from kbroker.authz.acls import Acl
from kbroker.authz.authorizer import EMPTY_INDEX, AclIndex
from kbroker.authz.tokens import TokenInfo

from . import dir_ids as dirs

ZERO_UUID = uuid.UUID(int=0)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

TOPIC_RESOURCE = 2    # ConfigResource.Type.TOPIC
BROKER_RESOURCE = 4   # ConfigResource.Type.BROKER
GROUP_RESOURCE = 32   # ConfigResource.Type.GROUP (KIP-848 group configs)

_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class PartitionImage:
    """A partition's leader, replicas and ISR as the metadata log left them."""
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    partition_epoch: int = 0
    removing_replicas: tuple[int, ...] = ()      # KIP-455: replicas a reassignment removes
    adding_replicas: tuple[int, ...] = ()        # KIP-455: replicas a reassignment adds
    # KIP-858: the log directory id of each replica, in replica order; () = all MIGRATING
    directories: tuple[uuid.UUID, ...] = ()
    # KIP-966: replicas that may lead cleanly while the ISR is below min.insync.replicas
    # (eligible leader replicas), and the last known ones (neither in the ISR nor the ELR)
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        return bool(self.removing_replicas or self.adding_replicas)

    def directory(self, replica: int) -> uuid.UUID:
        """The directory of ``replica`` (Kafka's ``PartitionRegistration.directory``);
        UNASSIGNED for a broker that holds no replica of the partition."""
        if replica not in self.replicas:
            return dirs.UNASSIGNED
        if not self.directories:
            return dirs.MIGRATING
        return self.directories[self.replicas.index(replica)]

    def directory_list(self) -> list[uuid.UUID]:
        """``Directories`` as a record carries them (MIGRATING for each replica when unknown)."""
        return list(self.directories) if self.directories else [dirs.MIGRATING] * len(self.replicas)


def apply_partition_change(old: PartitionImage, r) -> PartitionImage:
    """The partition after one ``PartitionChangeRecord`` (Kafka's ``PartitionRegistration.merge``).

    Built with one constructor call: a replay of 100,000 change records (a single node's
    controlled shutdown and restart write one per partition, as Kafka's controller does)
    spent a quarter of a restart in ``dataclasses.replace``, called two to four times each."""
    if r.leader != -2:
        leader, leader_epoch = r.leader, old.leader_epoch + 1
    else:
        leader, leader_epoch = old.leader, old.leader_epoch
    replicas = tuple(r.replicas) if r.replicas is not None else old.replicas
    directories = getattr(r, "directories", None)
    if directories is not None:
        directories = dirs.normalized(directories, len(replicas))
    else:
        directories = old.directories
        if directories and len(directories) != len(replicas):
            raise ValueError(f"{len(directories)} directories for replicas {list(replicas)}")
    elr = getattr(r, "eligible_leader_replicas", None)
    last_known_elr = getattr(r, "last_known_elr", None)
    return PartitionImage(
        old.partition, leader, leader_epoch, replicas,
        tuple(r.isr) if r.isr is not None else old.isr,
        old.partition_epoch + 1,
        tuple(r.removing_replicas) if r.removing_replicas is not None else old.removing_replicas,
        tuple(r.adding_replicas) if r.adding_replicas is not None else old.adding_replicas,
        directories,
        tuple(elr) if elr is not None else old.elr,
        tuple(last_known_elr) if last_known_elr is not None else old.last_known_elr)


@dataclass(frozen=True)
class TopicImage:
    """A topic's id, partitions and configuration overrides."""
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionImage]
    configs: Mapping[str, str] = field(default_factory=lambda: _EMPTY)   # topic-level overrides only

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    @property
    def replication_factor(self) -> int:
        p = self.partitions.get(0)
        return len(p.replicas) if p else 0


@dataclass(frozen=True)
class BrokerImage:
    """A registered broker: endpoints, rack, fencing and epoch."""
    node_id: int
    endpoints: tuple[tuple[str, str, int], ...]   # (listener name, host, port)
    rack: str | None = None
    fenced: bool = False
    broker_epoch: int = -1
    incarnation_id: uuid.UUID = ZERO_UUID
    in_controlled_shutdown: bool = False          # KIP-841: leaving; not a leader/ISR candidate
    features: tuple[tuple[str, int, int], ...] = ()  # (name, min, max) the broker registered with
    log_dirs: tuple[uuid.UUID, ...] = ()          # KIP-858: ids of its online log dirs, Kafka's order
    cordoned_log_dirs: tuple[uuid.UUID, ...] = () # KIP-1066: dirs that take no new replicas

    def endpoint(self, listener: str) -> tuple[str, int] | None:
        for name, host, port in self.endpoints:
            if name == listener:
                return host, port
        return None

    @property
    def host(self) -> str:
        return self.endpoints[0][1] if self.endpoints else ""

    @property
    def port(self) -> int:
        return self.endpoints[0][2] if self.endpoints else -1


@dataclass(frozen=True)
class MetadataImage:
    """The cluster's state replayed from the metadata log."""
    cluster_id: str
    controller_id: int
    brokers: Mapping[int, BrokerImage] = field(default_factory=lambda: _EMPTY)
    topics: Mapping[str, TopicImage] = field(default_factory=lambda: _EMPTY)
    topics_by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=lambda: _EMPTY)
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: _EMPTY)   # broker name ("" = default) -> overrides
    features: Mapping[str, int] = field(default_factory=lambda: _EMPTY)                       # finalized feature levels
    group_configs: Mapping[str, Mapping[str, str]] = field(default_factory=lambda: _EMPTY)    # group id -> overrides
    next_producer_id: int = 0                                  # first id not yet allocated
    # client quotas (ClientQuotaRecord): entity key -> {quota key: value}, see client_quotas
    client_quotas: Mapping[tuple, Mapping[str, float]] = field(default_factory=lambda: _EMPTY)
    offset: int = -1                                           # last replayed metadata offset
    acls: Mapping[uuid.UUID, Acl] = field(default_factory=lambda: _EMPTY)                     # ACL id -> ACL
    acl_index: AclIndex = EMPTY_INDEX                          # the ACLs keyed for authorization
    delegation_tokens: Mapping[str, TokenInfo] = field(default_factory=lambda: _EMPTY)        # token id -> token

    def delegation_token(self, token_id: str) -> TokenInfo | None:
        """The live token ``token_id`` (owner, expiry...; the HMAC is
        ``kbroker.authz.tokens.compute_hmac(delegation.token.secret.key, token_id)``)."""
        return self.delegation_tokens.get(token_id)
    # SCRAM credentials: user -> mechanism id (1 SHA-256, 2 SHA-512) -> ScramCredential
    scram_credentials: Mapping[str, Mapping[int, object]] = field(default_factory=lambda: _EMPTY)

    def topic(self, name: str) -> TopicImage | None:
        return self.topics.get(name)

    def live_brokers(self) -> list[BrokerImage]:
        return [b for b in self.brokers.values() if not b.fenced]

    def statistics(self) -> dict:
        return {"topics": len(self.topics),
                "partitions": sum(len(t.partitions) for t in self.topics.values()),
                "brokers": len(self.brokers), "offset": self.offset}


class ImageBuilder:
    """Applies records to a copy of an image; ``build()`` returns the new frozen image."""

    def __init__(self, image: MetadataImage):
        self.base = image
        self.topics = dict(image.topics)
        self.brokers = dict(image.brokers)
        self.broker_configs = {k: dict(v) for k, v in image.broker_configs.items()}
        self.group_configs = {k: dict(v) for k, v in image.group_configs.items()}
        self.features = dict(image.features)
        self.next_producer_id = image.next_producer_id
        self.client_quotas = image.client_quotas    # copied on the first quota record
        self.offset = image.offset
        self.acls: dict | None = None               # copied on the first ACL change
        self.tokens: dict | None = None             # copied on the first token change
        self.scram = image.scram_credentials
        self._scram_touched = False
        # topics being changed: name -> (topic_id, partitions dict, configs dict)
        self._touched: dict[str, tuple[uuid.UUID, dict, dict]] = {}
        self._touched_ids: dict[uuid.UUID, str] = {}    # topic id -> name, of _touched
        self._ids = dict(image.topics_by_id)

    def _topic(self, name: str):
        t = self._touched.get(name)
        if t is None:
            img = self.topics[name]
            t = self._touched[name] = (img.topic_id, dict(img.partitions), dict(img.configs))
            self._touched_ids[img.topic_id] = name
        return t

    def _name_of(self, topic_id: uuid.UUID) -> str | None:
        name = self._touched_ids.get(topic_id)     # a dict, not a scan: a replay of the
        if name is not None:                        # whole log touches every topic
            return name
        t = self._ids.get(topic_id)
        return t.name if t is not None else None

    def apply(self, record, offset: int | None = None) -> "ImageBuilder":
        kind = type(record).__name__
        handler = getattr(self, "_on_" + kind, None)
        if handler is None:
            raise ValueError(f"cannot replay metadata record {kind}")
        handler(record)
        if offset is not None:
            self.offset = offset
        return self

    # --- record handlers
    def _on_TopicRecord(self, r) -> None:
        if r.name in self.topics or r.name in self._touched:
            raise ValueError(f"TopicRecord for existing topic {r.name}")
        self._touched[r.name] = (r.topic_id, {}, {})
        self._touched_ids[r.topic_id] = r.name
        self.topics[r.name] = TopicImage(r.name, r.topic_id, _EMPTY)   # placeholder until build

    def _on_PartitionRecord(self, r) -> None:
        name = self._name_of(r.topic_id)
        if name is None:
            raise ValueError(f"PartitionRecord for unknown topic id {r.topic_id}")
        parts = self._topic(name)[1]
        replicas = tuple(r.replicas or ())
        parts[r.partition_id] = PartitionImage(r.partition_id, r.leader, r.leader_epoch,
                                               replicas, tuple(r.isr or ()),
                                               r.partition_epoch, tuple(r.removing_replicas or ()),
                                               tuple(r.adding_replicas or ()),
                                               dirs.normalized(r.directories, len(replicas)),
                                               tuple(r.eligible_leader_replicas or ()),
                                               tuple(r.last_known_elr or ()))

    def _on_PartitionChangeRecord(self, r) -> None:
        name = self._name_of(r.topic_id)
        if name is None:
            raise ValueError(f"PartitionChangeRecord for unknown topic id {r.topic_id}")
        parts = self._topic(name)[1]
        parts[r.partition_id] = apply_partition_change(parts[r.partition_id], r)

    def _on_ConfigRecord(self, r) -> None:
        if r.resource_type == TOPIC_RESOURCE:
            if r.resource_name not in self.topics:
                return   # Kafka ignores configs of topics it does not know
            configs = self._topic(r.resource_name)[2]
        elif r.resource_type == BROKER_RESOURCE:
            configs = self.broker_configs.setdefault(r.resource_name, {})
        elif r.resource_type == GROUP_RESOURCE:
            configs = self.group_configs.setdefault(r.resource_name, {})
        else:
            return
        if r.value is None:
            configs.pop(r.name, None)
            if not configs and r.resource_type == GROUP_RESOURCE:
                del self.group_configs[r.resource_name]
        else:
            configs[r.name] = r.value

    def _on_RemoveTopicRecord(self, r) -> None:
        name = self._name_of(r.topic_id)
        if name is None:
            raise ValueError(f"RemoveTopicRecord for unknown topic id {r.topic_id}")
        self._touched.pop(name, None)
        self._touched_ids.pop(r.topic_id, None)
        self.topics.pop(name, None)
        self._ids.pop(r.topic_id, None)

    def _on_RegisterBrokerRecord(self, r) -> None:
        eps = tuple((e.name, e.host, e.port) for e in r.end_points or ())
        self.brokers[r.broker_id] = BrokerImage(r.broker_id, eps, r.rack, bool(r.fenced),
                                                r.broker_epoch, r.incarnation_id,
                                                bool(r.in_controlled_shutdown),
                                                tuple((f.name, f.min_supported_version, f.max_supported_version)
                                                      for f in r.features or ()),
                                                dirs.sorted_dirs(r.log_dirs or ()),
                                                dirs.sorted_dirs(r.cordoned_log_dirs or ()))

    def _set_fenced(self, broker_id: int, epoch: int, fenced: bool) -> None:
        b = self.brokers.get(broker_id)
        if b is None or (epoch >= 0 and b.broker_epoch != epoch):
            return   # Kafka ignores changes for a registration that is gone
        self.brokers[broker_id] = replace(b, fenced=fenced)

    def _on_BrokerRegistrationChangeRecord(self, r) -> None:
        if r.fenced == 1:
            self._set_fenced(r.broker_id, r.broker_epoch, True)
        elif r.fenced == -1:
            self._set_fenced(r.broker_id, r.broker_epoch, False)
        if r.in_controlled_shutdown == 1:
            b = self.brokers.get(r.broker_id)
            if b is not None and (r.broker_epoch < 0 or b.broker_epoch == r.broker_epoch):
                self.brokers[r.broker_id] = replace(b, in_controlled_shutdown=True)
        if r.log_dirs:       # an empty list changes nothing (Kafka's replay)
            b = self.brokers.get(r.broker_id)
            if b is not None and b.broker_epoch == r.broker_epoch:
                self.brokers[r.broker_id] = replace(b, log_dirs=dirs.sorted_dirs(r.log_dirs))
        if getattr(r, "cordoned_log_dirs", None) is not None:     # KIP-1066: null = unchanged
            b = self.brokers.get(r.broker_id)
            if b is not None and b.broker_epoch == r.broker_epoch:
                self.brokers[r.broker_id] = replace(b, cordoned_log_dirs=dirs.sorted_dirs(r.cordoned_log_dirs))

    def _on_FenceBrokerRecord(self, r) -> None:
        self._set_fenced(r.id, r.epoch, True)

    def _on_UnfenceBrokerRecord(self, r) -> None:
        self._set_fenced(r.id, r.epoch, False)

    def _on_UnregisterBrokerRecord(self, r) -> None:
        b = self.brokers.get(r.broker_id)
        if b is not None and b.broker_epoch == r.broker_epoch:
            del self.brokers[r.broker_id]

    def _on_FeatureLevelRecord(self, r) -> None:
        if r.feature_level == 0:
            self.features.pop(r.name, None)
        else:
            self.features[r.name] = r.feature_level

    def _on_ProducerIdsRecord(self, r) -> None:
        self.next_producer_id = max(self.next_producer_id, r.next_producer_id)

    def _on_NoOpRecord(self, r) -> None:
        pass

    def _on_RegisterControllerRecord(self, r) -> None:
        pass        # kbroker's voters come from the Raft layer; a registration changes nothing

    def _on_UnregisterControllerRecord(self, r) -> None:
        pass

    def _on_ClearElrRecord(self, r) -> None:
        """KIP-966: empty the ELR and last-known ELR of one topic's partitions (every topic
        for an empty name), each such partition's epoch bumped (Kafka's ``TopicsDelta``)."""
        if r.topic_name:
            if r.topic_name not in self.topics:
                raise ValueError(f"ClearElrRecord for unknown topic {r.topic_name}")
            names = [r.topic_name]
        else:
            names = list(self.topics)
        for name in names:
            parts = self._topic(name)[1]
            for i, p in list(parts.items()):
                if p.elr or p.last_known_elr:
                    parts[i] = replace(p, elr=(), last_known_elr=(), partition_epoch=p.partition_epoch + 1)

    def _on_ClientQuotaRecord(self, r) -> None:
        from .client_quotas import replay as replay_quota
        if isinstance(self.client_quotas, MappingProxyType) or self.client_quotas is _EMPTY:
            self.client_quotas = dict(self.client_quotas)
        replay_quota(self.client_quotas, r)

    def _on_AccessControlEntryRecord(self, r) -> None:
        if self.acls is None:
            self.acls = dict(self.base.acls)
        self.acls[r.id] = Acl.from_record(r)

    def _on_RemoveAccessControlEntryRecord(self, r) -> None:
        if self.acls is None:
            self.acls = dict(self.base.acls)
        if self.acls.pop(r.id, None) is None:
            raise ValueError(f"RemoveAccessControlEntryRecord for unknown ACL id {r.id}")

    def _on_DelegationTokenRecord(self, r) -> None:
        if self.tokens is None:
            self.tokens = dict(self.base.delegation_tokens)
        self.tokens[r.token_id] = TokenInfo.from_record(r)

    def _on_RemoveDelegationTokenRecord(self, r) -> None:
        if self.tokens is None:
            self.tokens = dict(self.base.delegation_tokens)
        self.tokens.pop(r.token_id, None)
    def _scram_copy(self) -> dict:
        if not self._scram_touched:
            self.scram = {u: dict(m) for u, m in self.scram.items()}
            self._scram_touched = True
        return self.scram

    def _on_UserScramCredentialRecord(self, r) -> None:
        from kbroker.security.scram import ScramCredential
        self._scram_copy().setdefault(r.name, {})[r.mechanism] = ScramCredential(
            bytes(r.salt), bytes(r.stored_key), bytes(r.server_key), r.iterations)

    def _on_RemoveUserScramCredentialRecord(self, r) -> None:
        users = self._scram_copy()
        mechs = users.get(r.name)
        if mechs is not None:
            mechs.pop(r.mechanism, None)
            if not mechs:
                del users[r.name]

    def build(self) -> MetadataImage:
        topics = dict(self.topics)
        for name, (tid, parts, configs) in self._touched.items():
            topics[name] = TopicImage(name, tid, MappingProxyType(parts), MappingProxyType(configs))
        by_id = {t.topic_id: t for t in topics.values()}
        return MetadataImage(
            cluster_id=self.base.cluster_id, controller_id=self.base.controller_id,
            brokers=MappingProxyType(self.brokers), topics=MappingProxyType(topics),
            topics_by_id=MappingProxyType(by_id),
            broker_configs=MappingProxyType({k: MappingProxyType(v) for k, v in self.broker_configs.items()}),
            group_configs=MappingProxyType({k: MappingProxyType(v) for k, v in self.group_configs.items()}),
            features=MappingProxyType(self.features), next_producer_id=self.next_producer_id,
            client_quotas=(self.client_quotas if isinstance(self.client_quotas, MappingProxyType)
                           else MappingProxyType(self.client_quotas)),
            offset=self.offset,
            acls=self.base.acls if self.acls is None else MappingProxyType(self.acls),
            acl_index=self.base.acl_index if self.acls is None else AclIndex.build(self.acls.values()),
            delegation_tokens=self.base.delegation_tokens if self.tokens is None
            else MappingProxyType(self.tokens),
            scram_credentials=(MappingProxyType({u: MappingProxyType(m) for u, m in self.scram.items()})
                               if self._scram_touched else self.scram))


def replay(image: MetadataImage, record, offset: int | None = None) -> MetadataImage:
    """The image after one record."""
    return ImageBuilder(image).apply(record, offset).build()


def replay_all(image: MetadataImage, records: Iterable) -> MetadataImage:
    """The image after a run of records: ``(offset, record)`` pairs or bare records."""
    b = ImageBuilder(image)
    for item in records:
        if isinstance(item, tuple):
            b.apply(item[1], item[0])
        else:
            b.apply(item)
    return b.build()


def empty_image(cluster_id: str, controller_id: int) -> MetadataImage:
    return MetadataImage(cluster_id=cluster_id, controller_id=controller_id)
