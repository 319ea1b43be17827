"""Durable share-partition state in ``__share_group_state`` (KIP-932's share coordinator).

Every change of a share-partition's delivery state is stored as a ShareSnapshot record
(Kafka's ``ShareSnapshotKey``/``ShareSnapshotValue``, key type 0, value version 0; the
record definitions are kafka-share-coordinator 4.3.1's, in ``schema.json`` next to this
file) whose key is
(group id, topic id, partition); the topic is compacted, so the latest snapshot of each
share-partition is its state. A share-partition created on a (new or restarted) leader
reads its latest snapshot: start offset, state epoch and the state batches (ACQUIRED is
never stored: a lock does not outlive its holder), so nothing acknowledged is delivered
again and nothing unacknowledged is lost.

Which ``__share_group_state`` partition holds a key: Kafka's share coordinator placement,
``abs(hashCode("group:topic id:partition")) % partitions`` with the topic id in Kafka's text
form (``ShareCoordinatorService.partitionFor``), so FindCoordinator key type 2 and a Kafka
broker agree with us. kbroker before this placement used a CRC32 of the same text; a key not
found in its partition is looked up in that older partition when this node leads it, and the
first write under the new placement tombstones the old copy.

Reading a partition replays ShareSnapshot records (the state) and ShareUpdate records (key
type 1: deltas on top of the last snapshot, as Kafka's share coordinator writes between
snapshots): an update moves the start offset (unless -1) and its state batches replace the
ranges they cover; batches below the start offset are dropped and neighbours with the same
state and delivery count merged (Kafka's ``PersisterStateBatchCombiner``). kbroker itself
writes only snapshots (a full snapshot per change; Kafka writes one every
``share.coordinator.snapshot.update.records.per.snapshot`` updates), so what it writes reads
back anywhere.

The partition leader of a share-partition writes where the state partition is led: locally
with acks=all, or WriteShareGroupState/ReadShareGroupState to that leader.
"""
from __future__ import annotations

import base64
import json
import logging
import struct
import uuid
import zlib
from dataclasses import dataclass

import trio

from functools import cache
from pathlib import Path

from kbroker.log.replay import data_records
from kbroker.replica import ReplicaError
from kbroker.wire.codegen import build_classes
from kbroker.wire.messages import KafkaMessage
from kbroker.wire.model import build_message
from kbroker.wire import messages as messages_api
from kbroker.wire import records as wire_records
from kbroker.wire.error_codes import ErrorCode as E

from .partition import SharePartition, StateBatch

log = logging.getLogger("kbroker.share.persister")

TOPIC = "__share_group_state"
SNAPSHOT_KEY_TYPE = 0
UPDATE_KEY_TYPE = 1
_H = struct.Struct(">h")
SCHEMA_FILE = Path(__file__).with_name("schema.json")


@cache
def message(name: str) -> type:
    """The compiled class of a share coordinator record (``schema.json``: the facts of
    kafka-share-coordinator 4.3.1's ShareSnapshot/ShareUpdate definitions)."""
    raw = {m["name"]: m for m in json.loads(SCHEMA_FILE.read_text())["messages"]}[name]
    raw = dict(raw, type="data")
    return build_classes(build_message(raw), KafkaMessage)


def encode_key(group_id: str, topic_id: uuid.UUID, partition: int) -> bytes:
    return _H.pack(SNAPSHOT_KEY_TYPE) + message("ShareSnapshotKey")(
        group_id=group_id, topic_id=topic_id, partition=partition).encode(0)


def encode_value(sp: SharePartition, *, leader_epoch: int, now_ms: int) -> bytes:
    """The ShareSnapshotValue of ``sp`` (tests; writes go through ``write_state``)."""
    return _H.pack(0) + message("ShareSnapshotValue")(
        snapshot_epoch=0, state_epoch=sp.state_epoch, leader_epoch=leader_epoch,
        start_offset=sp.start_offset, create_timestamp=now_ms, write_timestamp=now_ms,
        state_batches=[message("ShareSnapshotValue").StateBatch(
            first_offset=b.first_offset, last_offset=b.last_offset,
            delivery_state=b.delivery_state, delivery_count=b.delivery_count)
            for b in sp.state_batches()]).encode(0)


@dataclass(frozen=True)
class ShareUpdate:
    """A decoded ShareUpdate value: a delta on top of the last snapshot."""
    start_offset: int                    # -1: unchanged
    batches: list


def decode(key: bytes, value: bytes | None):
    """((group, topic id, partition), state) with state (start offset, state epoch,
    [StateBatch]) for a snapshot, a :class:`ShareUpdate` for an update, or None for a
    tombstone; None for a record of another type."""
    if key is None or len(key) < 2:
        return None
    (kind,) = _H.unpack_from(key)
    if kind not in (SNAPSHOT_KEY_TYPE, UPDATE_KEY_TYPE):
        return None
    k = _decode(message("ShareSnapshotKey"), key[2:])      # both keys have this layout
    ident = (k.group_id, k.topic_id, k.partition)
    if value is None:
        return ident, None
    cls = message("ShareSnapshotValue" if kind == SNAPSHOT_KEY_TYPE else "ShareUpdateValue")
    v = _decode(cls, value[2:])
    batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
               for b in v.state_batches]
    if kind == UPDATE_KEY_TYPE:
        return ident, ShareUpdate(v.start_offset, batches)
    return ident, (v.start_offset, v.state_epoch, batches)


def replay_record(table: dict, key: bytes, value: bytes | None) -> bool:
    """Apply one ``__share_group_state`` record to ``table`` (share-partition key → state);
    False for a record of another type."""
    found = decode(key, value)
    if found is None:
        return False
    ident, state = found
    if state is None:
        table.pop(ident, None)
    elif isinstance(state, ShareUpdate):
        table[ident] = apply_update(table.get(ident), state)
    else:
        table[ident] = state
    return True


def apply_update(state, update: ShareUpdate):
    """The state after a ShareUpdate delta (``state`` None: the update alone, epoch 0)."""
    if state is None:
        start, epoch, old = update.start_offset, 0, []
    else:
        start, epoch, old = state
    if update.start_offset != -1:
        start = update.start_offset
    return start, epoch, combine_batches(old, update.batches, start)


def combine_batches(old: list, new: list, start_offset: int) -> list:
    """``new`` batches replace the offsets they cover in ``old``; offsets below
    ``start_offset`` are dropped; adjacent batches with the same state and count merge."""
    pieces: list[StateBatch] = []
    for b in old:
        segs = [(b.first_offset, b.last_offset)]
        for n in new:
            nxt = []
            for first, last in segs:
                if n.last_offset < first or n.first_offset > last:
                    nxt.append((first, last))
                    continue
                if first < n.first_offset:
                    nxt.append((first, n.first_offset - 1))
                if last > n.last_offset:
                    nxt.append((n.last_offset + 1, last))
            segs = nxt
        pieces += [StateBatch(f, l, b.delivery_state, b.delivery_count) for f, l in segs]
    pieces += list(new)
    out: list[StateBatch] = []
    for b in sorted(pieces, key=lambda b: b.first_offset):
        if start_offset >= 0:
            if b.last_offset < start_offset:
                continue
            if b.first_offset < start_offset:
                b = StateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        prev = out[-1] if out else None
        if prev is not None and prev.last_offset + 1 == b.first_offset and \
                (prev.delivery_state, prev.delivery_count) == (b.delivery_state, b.delivery_count):
            out[-1] = StateBatch(prev.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        else:
            out.append(b)
    return out


def _decode(cls, buf: bytes):
    r = cls.decode(buf, 0, 0)
    return r[0] if isinstance(r, tuple) else r


# errors that mean "the state partition's leader is not ready or moved": asked again after
# these pauses (seconds), for at most _RETRY_BUDGET_S; the last answer is final
_RETRIABLE = frozenset({E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR,
                        E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_LEADER_OR_FOLLOWER,
                        E.LEADER_NOT_AVAILABLE, E.REQUEST_TIMED_OUT})
_RETRY_DELAYS = (0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, None)
_RETRY_BUDGET_S = 10.0


def kafka_uuid_text(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def coordinator_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey`` (FindCoordinator key type 2)."""
    return f"{group_id}:{kafka_uuid_text(topic_id)}:{partition}"


def partition_for_key(key: str, n: int) -> int:
    from kbroker.group.records import partition_for as java_hash_partition
    return java_hash_partition(key, max(1, n))


def partition_for(group_id: str, topic_id: uuid.UUID, partition: int, n: int) -> int:
    """The ``__share_group_state`` partition of a share-partition (Kafka's placement)."""
    return partition_for_key(coordinator_key(group_id, topic_id, partition), n)


def legacy_partition_for(group_id: str, topic_id: uuid.UUID, partition: int, n: int) -> int:
    """Where kbroker wrote a share-partition's state before it used Kafka's placement."""
    return zlib.crc32(f"{group_id}:{topic_id}:{partition}".encode()) % max(1, n)


class StateTopicPersister:
    """Reads and writes share-partition snapshots in ``__share_group_state``."""

    def __init__(self, broker) -> None:
        self.broker = broker
        self.loaded: dict[int, dict] = {}       # state partition -> key -> state
        self._loaded_epoch: dict[int, int | None] = {}   # leader epoch each table was read in
        self._rpc_client = None
        self.stats = {"writes": 0, "write_errors": 0, "records_replayed": 0}

    def _num_partitions(self) -> int | None:
        t = self.broker.metadata.topics.get(TOPIC)
        return None if t is None else len(t.partitions)

    async def ensure_topic(self) -> None:
        if self._num_partitions() is None:
            await self.broker.controller.maybe_create_topics([TOPIC])

    def _load(self, p: int) -> dict:
        """The table of state partition ``p``, replayed from its log the first time in each
        leadership: a partition led again after another leader wrote to it must not be
        answered from what this node remembered (raises ReplicaError when not the leader)."""
        part = self.broker.replicas.get_partition(TOPIC, p)
        epoch = getattr(part, "leader_epoch", None)
        if p in self.loaded and self._loaded_epoch.get(p) == epoch:
            return self.loaded[p]
        self._loaded_epoch[p] = epoch
        table: dict = {}
        for r in data_records(part.log, f"{TOPIC}-{p}"):
            try:
                if replay_record(table, r.key, r.value):
                    self.stats["records_replayed"] += 1
            except Exception:            # noqa: BLE001
                log.exception("unreadable record in %s-%d at %d", TOPIC, p, r.offset)
        self.loaded[p] = table
        return table

    def read(self, group_id: str, topic_id: uuid.UUID, partition: int):
        n = self._num_partitions()
        if n is None:
            return None
        p = partition_for(group_id, topic_id, partition, n)
        try:
            found = self._load(p).get((group_id, topic_id, partition))
        except ReplicaError:
            return None
        return found if found is not None else self._legacy(group_id, topic_id, partition, n)

    def _legacy(self, group_id, topic_id, partition, n):
        """The state under kbroker's older placement, when this node leads that partition."""
        old = legacy_partition_for(group_id, topic_id, partition, n)
        if old == partition_for(group_id, topic_id, partition, n):
            return None
        try:
            return self._load(old).get((group_id, topic_id, partition))
        except ReplicaError:
            return None

    def write(self, group_id: str, topic_id: uuid.UUID, partition: int, sp: SharePartition,
              *, initialize: bool = False) -> None:
        self.write_state(group_id, topic_id, partition, sp.start_offset, sp.state_epoch,
                         sp.state_batches())

    def write_state(self, group_id: str, topic_id: uuid.UUID, partition: int,
                    start_offset: int, state_epoch: int, batches: list[StateBatch],
                    leader_epoch: int = 0) -> tuple[int, int]:
        """Append the share-partition's snapshot (``batches`` None = a tombstone: the state
        is deleted); returns (state partition, offset after the record). Raises ReplicaError
        (not led here, topic missing)."""
        n = self._num_partitions()
        if n is None:
            raise ReplicaError(E.COORDINATOR_NOT_AVAILABLE)
        p = partition_for(group_id, topic_id, partition, n)
        now = self.broker.now_ms()
        value = None if batches is None else _H.pack(0) + message("ShareSnapshotValue")(
            snapshot_epoch=0, state_epoch=state_epoch, leader_epoch=leader_epoch,
            start_offset=start_offset, create_timestamp=now, write_timestamp=now,
            state_batches=[message("ShareSnapshotValue").StateBatch(
                first_offset=b.first_offset, last_offset=b.last_offset,
                delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                for b in batches]).encode(0)
        batch = wire_records.build_batch([(encode_key(group_id, topic_id, partition), value, (), now)])
        self._load(p)                     # the table must hold every earlier write first
        try:
            res = self.broker.replicas.append(TOPIC, p, batch, required_acks=-1, now_ms=now,
                                              allow_internal=True, origin="coordinator")
        except Exception:
            self.stats["write_errors"] += 1
            raise
        self.stats["writes"] += 1
        table = self.loaded[p]
        key = (group_id, topic_id, partition)
        if batches is None:
            table.pop(key, None)
        else:
            table[key] = (start_offset, state_epoch, list(batches))
        self._drop_legacy(key, n, now)
        return p, res.last_offset + 1

    def _drop_legacy(self, key, n: int, now: int) -> None:
        """Tombstone a copy under the older placement (it must not come back on a read)."""
        if self._legacy(*key, n) is None:
            return
        old = legacy_partition_for(*key, n)
        batch = wire_records.build_batch([(encode_key(*key), None, (), now)])
        try:
            self.broker.replicas.append(TOPIC, old, batch, required_acks=-1, now_ms=now,
                                        allow_internal=True, origin="coordinator")
            self.loaded[old].pop(key, None)
        except Exception:                      # noqa: BLE001 - retried on the next write
            log.warning("could not drop the old copy of %s in %s-%d", key, TOPIC, old)

    async def write_replicated(self, group_id, topic_id, partition, start_offset, state_epoch,
                               batches, leader_epoch: int = 0) -> int:
        """Write here (this node leads the state partition) and wait until the ISR has it,
        as Kafka's share coordinator appends with acks=all. An error code."""
        try:
            p, end = self.write_state(group_id, topic_id, partition, start_offset, state_epoch,
                                      batches, leader_epoch=leader_epoch)
            timeout = int(self.broker.config.values.get("request.timeout.ms") or 30_000)
            return await self.broker.replicas.wait_replicated(TOPIC, p, end, timeout)
        except ReplicaError as e:
            return e.error_code
        except Exception:                        # noqa: BLE001
            log.exception("writing share state failed")
            return E.UNKNOWN_SERVER_ERROR

    # ------------------------------------------------------------------ local or remote
    def _state_leader(self, group_id, topic_id, partition) -> tuple[int | None, int]:
        """(leader node of the key's state partition, that partition)."""
        t = self.broker.metadata.topics.get(TOPIC)
        if t is None:
            return None, -1
        p = partition_for(group_id, topic_id, partition, len(t.partitions))
        info = t.partitions.get(p)
        leader = getattr(info, "leader", None)
        return (leader if leader is not None and leader >= 0 else None), p

    def _rpc(self):
        if self._rpc_client is None:
            from kbroker.raft.transport import RpcClient
            self._rpc_client = RpcClient(client_id=f"kbroker-share-{self.broker.node_id}")
        return self._rpc_client

    def _endpoint(self, node_id: int):
        from kbroker.txn.markers import inter_broker_listener
        b = self.broker.metadata.brokers.get(node_id)
        if b is None:
            return None
        listener = inter_broker_listener(self.broker.config)
        ep = b.endpoint(listener) if listener else None
        if ep is None and b.endpoints:
            ep = b.endpoints[0][1:]
        return ep

    async def read_async(self, group_id, topic_id, partition):
        """The state (start offset, state epoch, batches) or None, read where the state
        partition is led: here, or with ReadShareGroupState on its leader. A state partition
        without a ready leader (just created, moving after a failure) is asked again with
        backoff, as Kafka's persister does, before its error is raised."""
        give_up = trio.current_time() + _RETRY_BUDGET_S
        for delay in _RETRY_DELAYS:
            try:
                return await self._read_once(group_id, topic_id, partition)
            except ReplicaError as e:
                if e.error_code not in _RETRIABLE or delay is None \
                        or trio.current_time() + delay > give_up:
                    raise
            await trio.sleep(delay)

    async def _read_once(self, group_id, topic_id, partition):
        leader, _ = self._state_leader(group_id, topic_id, partition)
        if leader is None:
            await self.ensure_topic()
            leader, _ = self._state_leader(group_id, topic_id, partition)
        if leader is None:
            raise ReplicaError(E.COORDINATOR_NOT_AVAILABLE)
        if leader == self.broker.node_id:
            n = self._num_partitions()
            p = partition_for(group_id, topic_id, partition, n)
            try:
                found = self._load(p).get((group_id, topic_id, partition))
            except ReplicaError as e:     # named leader here, not yet leading: ask again
                raise ReplicaError(E.NOT_COORDINATOR) from e
            return found if found is not None else self._legacy(group_id, topic_id, partition, n)
        addr = self._endpoint(leader)
        R = messages_api.ReadShareGroupStateRequest
        body = R(group_id=group_id, topics=[R.ReadStateData(
            topic_id=topic_id, partitions=[R.PartitionData(partition=partition, leader_epoch=0)])])
        resp = await self._rpc().call_addr(addr, 84, 0, body, timeout=10) if addr else None
        if resp is None:
            raise ReplicaError(E.COORDINATOR_NOT_AVAILABLE)
        pr = resp.results[0].partitions[0]
        if pr.error_code:
            raise ReplicaError(pr.error_code)
        if pr.start_offset < 0:
            return None
        return (pr.start_offset, pr.state_epoch,
                [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                 for b in pr.state_batches])

    async def write_async(self, group_id, topic_id, partition, start_offset, state_epoch,
                          batches) -> int:
        """Write the state where the state partition is led; an error code (0 = stored).
        Retried with backoff while the state partition has no ready leader."""
        give_up = trio.current_time() + _RETRY_BUDGET_S
        for delay in _RETRY_DELAYS:
            code = await self._write_once(group_id, topic_id, partition, start_offset,
                                          state_epoch, batches)
            if code not in _RETRIABLE or delay is None or trio.current_time() + delay > give_up:
                return code
            await trio.sleep(delay)
        return E.COORDINATOR_NOT_AVAILABLE       # not reached: the last delay is None

    async def _write_once(self, group_id, topic_id, partition, start_offset, state_epoch,
                          batches) -> int:
        leader, _ = self._state_leader(group_id, topic_id, partition)
        if leader is None:
            await self.ensure_topic()
            leader, _ = self._state_leader(group_id, topic_id, partition)
        if leader is None:
            return E.COORDINATOR_NOT_AVAILABLE
        if leader == self.broker.node_id:
            return await self.write_replicated(group_id, topic_id, partition, start_offset,
                                               state_epoch, batches)
        addr = self._endpoint(leader)
        W = messages_api.WriteShareGroupStateRequest
        body = W(group_id=group_id, topics=[W.WriteStateData(topic_id=topic_id, partitions=[
            W.PartitionData(partition=partition, state_epoch=state_epoch, leader_epoch=0,
                            start_offset=start_offset, delivery_complete_count=-1,
                            state_batches=[W.StateBatch(
                                first_offset=b.first_offset, last_offset=b.last_offset,
                                delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                                for b in batches])])])
        resp = await self._rpc().call_addr(addr, 85, 1, body, timeout=10) if addr else None
        if resp is None:
            return E.COORDINATOR_NOT_AVAILABLE
        return resp.results[0].partitions[0].error_code

    def keys_of(self, group_id: str) -> list[tuple[uuid.UUID, int]]:
        """(topic id, partition) of every share-partition of ``group_id`` with a state on
        the ``__share_group_state`` partitions this node leads."""
        n = self._num_partitions()
        out = []
        for p in range(n or 0):
            try:
                table = self._load(p)
            except ReplicaError:
                continue
            out.extend((tid, part) for (g, tid, part) in table if g == group_id)
        return sorted(set(out), key=lambda k: (str(k[0]), k[1]))

    def delete(self, group_id: str, topic_id: uuid.UUID, partition: int) -> None:
        self.write_state(group_id, topic_id, partition, -1, 0, None)


def make_persister(broker):
    return StateTopicPersister(broker)
