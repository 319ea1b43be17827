"""Dead-letter queues of share groups (KIP-1191; Kafka 4.4 serves them from ``share.version`` 2).

A record a share group gives up on — ARCHIVED because its delivery count reached
``share.delivery.count.limit`` (released or its lock expired once too often), or rejected by
a consumer (acknowledge type REJECT) — is written to the group's dead-letter topic, when the
group names one (GROUP config ``errors.deadletterqueue.topic.name``). Gaps (type GAP) and
records skipped as control or aborted records are not dead letters.

Rules kept (Kafka 4.4's ``ShareGroupDLQStateManager``):

- one DLQ record per dead offset, timestamped now, its headers (values UTF-8 text):
  ``__dlq.errors.topic``, ``__dlq.errors.partition``, ``__dlq.errors.offset``,
  ``__dlq.errors.group``, ``__dlq.errors.delivery.count`` and ``__dlq.errors.message``
  ("Offset delivery count exceeded the threshold." / "Offset rejected by client.");
- key and value are the original record's only with ``errors.deadletterqueue.copy.record.enable``
  (GROUP config, default false); the original headers are not copied;
- the DLQ partition is the source partition modulo the DLQ topic's partition count;
- the topic must exist (or be created when the broker's
  ``errors.deadletterqueue.auto.create.topics.enable`` is true, default false), must have the
  topic config ``errors.deadletterqueue.group.enable=true``, must not start with ``__`` and
  must start with the broker's ``errors.deadletterqueue.topic.name.prefix`` (default ``dlq.``;
  empty: any name). A write that breaks a rule is dropped with a log line, as Kafka's DLQ
  manager does; the share-partition's state is not held back by it.

The write goes to the DLQ partition's leader: appended here (acks=all) when this node leads
it, else a Produce request to the leader. Below ``share.version`` 2 nothing is written (Kafka
runs its no-op DLQ manager then).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from .partition import DELIVERY_LIMIT, REJECTED

log = logging.getLogger("kbroker.share")

SHARE_VERSION = "share.version"
DLQ_SHARE_VERSION = 2

TOPIC_NAME = "errors.deadletterqueue.topic.name"                 # GROUP config
COPY_RECORD = "errors.deadletterqueue.copy.record.enable"        # GROUP config
GROUP_ENABLE = "errors.deadletterqueue.group.enable"             # topic config
AUTO_CREATE = "errors.deadletterqueue.auto.create.topics.enable"  # broker config
NAME_PREFIX = "errors.deadletterqueue.topic.name.prefix"          # broker config
DEFAULT_PREFIX = "dlq."



@dataclass(frozen=True)
class DeadLetter:
    """An offset a share-partition archived for good, why, and its delivery count then."""
    offset: int
    delivery_count: int
    cause: str


def dlq_enabled(image) -> bool:
    features = getattr(image, "features", None) or {}
    return int(features.get(SHARE_VERSION, 0)) >= DLQ_SHARE_VERSION


def headers(group_id: str, topic: str, partition: int, letter: DeadLetter) -> list[tuple[str, bytes]]:
    return [("__dlq.errors.topic", topic.encode()),
            ("__dlq.errors.partition", str(partition).encode()),
            ("__dlq.errors.offset", str(letter.offset).encode()),
            ("__dlq.errors.group", group_id.encode()),
            ("__dlq.errors.delivery.count", str(letter.delivery_count).encode()),
            ("__dlq.errors.message", letter.cause.encode())]


def name_problem(group_id: str, name: str, prefix: str) -> str | None:
    """Kafka's refusals of a configured DLQ topic name (its wording)."""
    if not name:
        return f"Configured DLQ topic name in share group: {group_id} is empty."
    if name.startswith("__"):
        return f"Configured DLQ topic name in share group: {group_id} cannot start with __, topic: {name}."
    if prefix and not name.startswith(prefix):
        return (f"Configured DLQ topic name does not comply with the DLQ topic prefix in share group: "
                f"{group_id}, topic: {name}, prefix: {prefix}.")
    return None


def destination_partition(partition: int, partitions: int) -> int:
    return partition % partitions


class DeadLetterWriter:
    """Writes a share-partition's dead letters to its group's DLQ topic (see the module)."""

    def __init__(self, broker, rpc=None) -> None:
        self.broker = broker
        self._rpc = rpc                         # () -> RpcClient, for a DLQ partition led elsewhere
        self.stats = {"dead_letters": 0, "dead_letters_dropped": 0}
        self.by_group: dict[str, dict[str, int]] = {}     # the same counts per share group

    def _broker_setting(self, key: str, default: str) -> str:
        values = getattr(self.broker.config, "values", None) or {}
        v = values.get(key)
        return default if v is None else str(v)

    def target(self, group_id: str) -> tuple[str, bool] | None:
        """(DLQ topic, copy the records) of a group, or None: no DLQ (or share.version < 2)."""
        image = self.broker.metadata
        if not dlq_enabled(image):
            return None
        g = (getattr(image, "group_configs", None) or {}).get(group_id) or {}
        name = str(g.get(TOPIC_NAME, "") or "").strip()
        if not name:
            return None
        return name, str(g.get(COPY_RECORD, "false")).lower() == "true"

    async def write(self, group_id: str, topic: str, partition: int, letters: list[DeadLetter],
                    *, now_ms: int) -> int:
        """Write ``letters`` (of ``topic``-``partition``) to the group's DLQ; how many were
        written (0: no DLQ, or a rule dropped them with a log line)."""
        target = self.target(group_id)
        if target is None or not letters:
            return 0
        name, copy = target
        problem = name_problem(group_id, name, self._broker_setting(NAME_PREFIX, DEFAULT_PREFIX))
        t = self.broker.metadata.topics.get(name)
        if problem is None and t is None:
            if self._broker_setting(AUTO_CREATE, "false").lower() == "true":
                await self.broker.controller.maybe_create_topics([name])
                t = self.broker.metadata.topics.get(name)
            if t is None:
                problem = (f"DLQ topic does not exist and auto create is disabled on cluster for share "
                           f"group: {group_id}, topic: {name}.")
        if problem is None and str((t.configs or {}).get(GROUP_ENABLE, "false")).lower() != "true":
            problem = f"DLQ is not enabled on configured DLQ topic for share group: {group_id}, topic: {name}."
        if problem is not None:
            self._count(group_id, "dead_letters_dropped", len(letters))
            log.warning("%s %d dead letters of %s-%d dropped", problem, len(letters), topic, partition)
            return 0
        originals = self._originals(topic, partition, letters) if copy else {}
        from kbroker.wire import records as wire_records
        batch = wire_records.build_batch([
            (*originals.get(d.offset, (None, None)), headers(group_id, topic, partition, d), now_ms)
            for d in letters])
        dest = destination_partition(partition, len(t.partitions))
        code = await self._append(name, dest, batch, now_ms)
        if code:
            self._count(group_id, "dead_letters_dropped", len(letters))
            log.warning("writing %d dead letters of %s-%d to %s-%d failed: error %d",
                        len(letters), topic, partition, name, dest, code)
            return 0
        self._count(group_id, "dead_letters", len(letters))
        return len(letters)

    def _originals(self, topic: str, partition: int, letters: list[DeadLetter]) -> dict:
        """offset -> (key, value) of the dead records still in the log."""
        from kbroker.replica import READ_UNCOMMITTED, FetchSpec
        from kbroker.wire import records as wire_records
        want = {d.offset for d in letters}
        out: dict = {}
        offset, last = min(want), max(want)
        while offset <= last:
            res = self.broker.replicas.read_all([FetchSpec(topic, partition, offset, 1 << 20)], 1 << 20,
                                                isolation_level=READ_UNCOMMITTED)[0]
            if res.error_code or res.records is None or res.size == 0:
                break
            data = res.records.read_bytes() if hasattr(res.records, "read_bytes") else bytes(res.records)
            moved = offset
            for _, r in wire_records.iter_all_records(data):
                if r.offset in want:
                    out[r.offset] = (r.key, r.value)
                moved = max(moved, r.offset + 1)
            if moved == offset:
                break
            offset = moved
        return out

    async def _append(self, name: str, partition: int, batch: bytes, now_ms: int) -> int:
        from kbroker.replica import ReplicaError
        info = self.broker.metadata.topics[name].partitions.get(partition)
        leader = getattr(info, "leader", None)
        if leader == self.broker.node_id:
            try:
                res = self.broker.replicas.append(name, partition, batch, required_acks=-1, now_ms=now_ms)
                timeout = int(self.broker.config.values.get("request.timeout.ms") or 30_000)
                return await self.broker.replicas.wait_replicated(name, partition, res.last_offset + 1, timeout)
            except ReplicaError as e:
                return e.error_code
        return await self._produce_remote(leader, name, partition, batch)

    async def _produce_remote(self, leader, name: str, partition: int, batch: bytes) -> int:
        from kbroker.txn.markers import inter_broker_listener
        from kbroker.wire import messages
        from kbroker.wire.error_codes import ErrorCode as E
        b = self.broker.metadata.brokers.get(leader) if leader is not None else None
        if b is None or self._rpc is None:
            return E.LEADER_NOT_AVAILABLE
        listener = inter_broker_listener(self.broker.config)
        ep = b.endpoint(listener) if listener else None
        if ep is None and b.endpoints:
            ep = b.endpoints[0][1:]
        P = messages.ProduceRequest
        req = P(transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=[P.TopicProduceData(
            name=name, partition_data=[P.PartitionProduceData(index=partition, records=batch)])])
        resp = await self._rpc().call_addr(tuple(ep), 0, 9, req, timeout=35)
        if resp is None:
            return E.REQUEST_TIMED_OUT
        return resp.responses[0].partition_responses[0].error_code

    def _count(self, group_id: str, key: str, n: int) -> None:
        self.stats[key] += n
        g = self.by_group.setdefault(group_id, {"dead_letters": 0, "dead_letters_dropped": 0})
        g[key] += n

    def group_statistics(self, group_id: str) -> dict:
        """Dead letters of one group written and dropped by this node."""
        return dict(self.by_group.get(group_id) or {"dead_letters": 0, "dead_letters_dropped": 0})

    def statistics(self) -> dict:
        return dict(self.stats)
