"""The ``_schemas`` topic as the registry's store: create it, replay it, append to it.

The trio side of the registry's state (``state.py`` is the pure part). Rules:

- **One partition, compacted**, created on the first write (so a cluster has its brokers
  registered by then), with the replication factor of
  ``kbroker.schema.registry.topic.replication.factor`` capped at the registered brokers, as
  Confluent's ``kafkastore.topic.replication.factor`` (default 3) is capped at the live
  brokers. Created through the controller channel, like the coordinators' internal topics.
- **Reads** replay what the log holds below the high watermark: the local replica's log when
  this node has one (leader or follower, read in process as ``kbroker/log/replay.py``
  does), otherwise Fetch requests to the partition leader over the node-to-node RPC client
  (``kbroker/raft/transport.py``, the client the replica fetchers and the transaction
  markers use). Every node can therefore serve reads.
- **Writes** are ordered through the log: a node's writes go one at a time (a lock), the
  record is appended with acks=all (in process on the leader, a Produce to the leader from
  any other node), and the writer then replays up to its own offset and learns from the
  state whether its record took effect. A record that lost a race against another node's
  (same version or id, ``state.py``) is refused by every node alike, so two nodes never
  hand out the same id; the writer recomputes and tries again.
"""
from __future__ import annotations

import logging

import trio

from kbroker.wire import records as wire_records
from kbroker.wire.error_codes import ErrorCode as E

from . import errors
from .state import RegistryState

log = logging.getLogger("kbroker.schema_registry")

TOPIC = "_schemas"
PARTITION = 0
FETCH_VERSION = 12
PRODUCE_VERSION = 9
FETCH_MAX_BYTES = 4 * 1024 * 1024
APPLY_POLL_S = 0.02
RETRY_S = 0.1
VERDICTS_KEPT = 4096
# Produce refusals that mean the records were not appended: safe to send again
RETRIABLE = frozenset({E.NOT_LEADER_OR_FOLLOWER, E.UNKNOWN_TOPIC_OR_PARTITION,
                       E.LEADER_NOT_AVAILABLE, E.NOT_ENOUGH_REPLICAS})


class _NotAppended(Exception):
    """Nothing was appended (no leader, not the leader yet or any more): try again."""


class SchemaStore:
    """The registry's view of ``_schemas-0`` on one node. ``state`` is replayed here only."""

    def __init__(self, broker, state: RegistryState, *, replication_factor: int = 3,
                 timeout_s: float = 30.0):
        self.broker = broker
        self.state = state
        self.replication_factor = replication_factor
        self.timeout_s = timeout_s
        self.write_lock = trio.Lock()
        self._read_lock = trio.Lock()
        self._rpc = None
        # offset -> did the replay take the record: the latest VERDICTS_KEPT of them (a
        # reader task may replay a writer's records before the writer's append returns)
        self._verdicts: dict[int, bool] = {}
        self.stats = {"appends": 0, "append_errors": 0, "remote_fetches": 0, "remote_produces": 0}

    # ------------------------------------------------------------------ topology
    def _topic(self):
        return self.broker.metadata.topics.get(TOPIC)

    def leader(self) -> int:
        t = self._topic()
        p = t.partitions.get(PARTITION) if t is not None else None
        return -1 if p is None else p.leader

    def _rpc_client(self):
        if self._rpc is None:
            from kbroker.raft.transport import RpcClient
            self._rpc = RpcClient(client_id=f"kbroker-schema-registry-{self.broker.node_id}",
                                  security=getattr(self.broker.config, "inter_broker_security", None))
        return self._rpc

    def _endpoint(self, node_id: int):
        b = self.broker.metadata.brokers.get(node_id)
        if b is None:
            return None
        inter = self.broker.config.inter_broker_listener()
        ep = b.endpoint(inter.name) if inter is not None else None
        if ep is None and b.endpoints:
            ep = b.endpoints[0][1:]
        return ep

    async def aclose(self) -> None:
        if self._rpc is not None:
            await self._rpc.aclose()

    async def ensure_topic(self) -> None:
        if self._topic() is not None:
            return
        brokers = [b for b in self.broker.metadata.brokers.values() if not getattr(b, "fenced", False)]
        rf = max(1, min(self.replication_factor, len(brokers) or 1))
        results = await self.broker.controller.maybe_create_topics(
            [TOPIC], num_partitions=1, replication_factor=rf,
            configs={"cleanup.policy": "compact"})
        for r in results:
            if r.error_code and r.error_code != E.TOPIC_ALREADY_EXISTS:
                raise errors.store_error(f"cannot create {TOPIC}: {r.error_message or r.error_code}")
        with trio.move_on_after(self.timeout_s):
            while self.leader() < 0:
                await trio.sleep(APPLY_POLL_S)
        if self.leader() < 0:
            raise errors.timeout(f"{TOPIC} has no leader")
        log.info("created %s (1 partition, replication factor %d)", TOPIC, rf)

    # ------------------------------------------------------------------ reads
    async def catch_up(self, *, from_leader: bool = False) -> None:
        """Apply every record below the high watermark that the state has not seen: the
        local replica's (a follower's high watermark may trail the leader's by a fetch), or
        with ``from_leader`` — or without a local replica — the leader's."""
        async with self._read_lock:
            if self._topic() is None:
                return
            part = self.broker.replicas.get_replica(TOPIC, PARTITION)
            if part is not None and part.log is not None:
                self._catch_up_local(part)
                if not from_leader or part.is_leader:
                    return
            await self._catch_up_remote()

    def is_leader(self) -> bool:
        return self.leader() == self.broker.node_id

    def _apply(self, offset: int, key, value) -> None:
        ok = self.state.apply(offset, None if key is None else bytes(key),
                              None if value is None else bytes(value))
        self._verdicts[offset] = ok
        if len(self._verdicts) > VERDICTS_KEPT:
            del self._verdicts[next(iter(self._verdicts))]

    def _catch_up_local(self, part) -> None:
        hw = part.high_watermark
        start = self.state.next_offset
        if start >= hw:
            return
        for header, data in part.log.batches(start):
            if header.base_offset >= hw:
                break
            if header.is_control:
                self.state.next_offset = max(self.state.next_offset, header.base_offset + header.last_offset_delta + 1)
                continue
            for r in wire_records.decode_records(data, 0, header):
                if r.offset >= hw:
                    return
                if r.offset >= self.state.next_offset:
                    self._apply(r.offset, r.key, r.value)
            self.state.next_offset = max(self.state.next_offset,
                                         min(hw, header.base_offset + header.last_offset_delta + 1))

    async def _catch_up_remote(self) -> None:
        from kbroker.wire import messages
        R = messages.FetchRequest
        while True:
            leader = self.leader()
            addr = self._endpoint(leader) if leader >= 0 else None
            if addr is None:
                raise errors.store_error(f"{TOPIC} has no reachable leader")
            start = self.state.next_offset
            req = R(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=FETCH_MAX_BYTES,
                    isolation_level=0, session_id=0, session_epoch=-1,
                    topics=[R.FetchTopic(topic=TOPIC, partitions=[R.FetchPartition(
                        partition=PARTITION, current_leader_epoch=-1, fetch_offset=start,
                        last_fetched_epoch=-1, log_start_offset=-1,
                        partition_max_bytes=FETCH_MAX_BYTES)])],
                    forgotten_topics_data=[], rack_id="")
            self.stats["remote_fetches"] += 1
            resp = await self._rpc_client().call_addr(addr, 1, FETCH_VERSION, req, self.timeout_s)
            if resp is None:
                raise errors.store_error(f"no answer from the leader of {TOPIC}")
            pd = next((p for t in resp.responses for p in t.partitions
                       if t.topic == TOPIC and p.partition_index == PARTITION), None)
            if pd is None or pd.error_code == E.OFFSET_OUT_OF_RANGE:
                if pd is not None and pd.log_start_offset > start:
                    self.state.next_offset = pd.log_start_offset
                    continue
                raise errors.store_error(f"cannot read {TOPIC}")
            if pd.error_code:
                raise errors.store_error(f"cannot read {TOPIC}: {E(pd.error_code).name}")
            hw = pd.high_watermark
            data = bytes(pd.records or b"")
            progressed = False
            for pos, header in wire_records.iter_batches(data, allow_truncated_tail=True):
                for r in wire_records.decode_records(data, pos, header) if not header.is_control else ():
                    if r.offset >= hw:
                        break
                    if r.offset >= self.state.next_offset:
                        self._apply(r.offset, r.key, r.value)
                end = min(hw, header.base_offset + header.last_offset_delta + 1)
                if end > self.state.next_offset:
                    self.state.next_offset = end
                    progressed = True
            if not progressed or self.state.next_offset >= hw:
                return

    # ------------------------------------------------------------------ writes
    async def write(self, records: list[tuple[bytes, bytes | None]]) -> list[bool]:
        """Append ``records`` (key, value) as one batch, acks=all; then replay up to them
        and return, per record, whether it took effect. Call with ``write_lock`` held."""
        await self.ensure_topic()
        now = self.broker.clock.now_ms()
        batch = wire_records.build_batch([(k, v, (), now) for k, v in records])
        base = await self._append(batch)
        offsets = list(range(base, base + len(records)))
        with trio.move_on_after(self.timeout_s):
            while self.state.next_offset <= offsets[-1]:
                await self.catch_up(from_leader=True)
                if self.state.next_offset <= offsets[-1]:
                    await trio.sleep(APPLY_POLL_S)
        if self.state.next_offset <= offsets[-1]:
            raise errors.timeout("Register operation timed out")
        return [self._verdicts.get(o, False) for o in offsets]

    async def _append(self, batch: bytes) -> int:
        """Append ``batch`` acks=all; returns its base offset. A refusal that means nothing
        was appended (no leader yet, a leader that has not opened its replica, a leadership
        just moved) is retried until ``timeout_s``; anything else is the client's 50001."""
        deadline = trio.current_time() + self.timeout_s
        while True:
            try:
                return await self._append_once(batch)
            except _NotAppended as e:
                if trio.current_time() >= deadline:
                    raise errors.store_error(str(e)) from None
                await trio.sleep(RETRY_S)

    async def _append_once(self, batch: bytes) -> int:
        leader = self.leader()
        if leader < 0:
            raise _NotAppended(f"{TOPIC} has no leader")
        timeout_ms = int(self.timeout_s * 1000)
        if leader == self.broker.node_id:
            try:
                res = self.broker.replicas.append(TOPIC, PARTITION, batch, required_acks=-1,
                                                  now_ms=self.broker.clock.now_ms())
            except Exception as exc:  # noqa: BLE001 - retried or the client's 50001
                if getattr(exc, "error_code", None) in RETRIABLE:
                    raise _NotAppended(f"append to {TOPIC}: {E(exc.error_code).name}") from None
                self.stats["append_errors"] += 1
                log.warning("append to %s failed: %r", TOPIC, exc)
                raise errors.store_error(str(exc) or type(exc).__name__) from None
            try:
                code = await self.broker.replicas.wait_replicated(
                    TOPIC, PARTITION, res.last_offset + 1, timeout_ms)
            except Exception as exc:  # noqa: BLE001 - becomes the client's 50001
                self.stats["append_errors"] += 1
                log.warning("append to %s failed: %r", TOPIC, exc)
                raise errors.store_error(str(exc) or type(exc).__name__) from None
            if code:
                self.stats["append_errors"] += 1
                raise errors.store_error(f"not replicated: {E(code).name}")
            self.stats["appends"] += 1
            return res.base_offset
        from kbroker.wire import messages
        R = messages.ProduceRequest
        addr = self._endpoint(leader)
        if addr is None:
            raise errors.store_error(f"no address for broker {leader}, the leader of {TOPIC}")
        req = R(transactional_id=None, acks=-1, timeout_ms=timeout_ms, topic_data=[
            R.TopicProduceData(name=TOPIC, partition_data=[
                R.PartitionProduceData(index=PARTITION, records=batch)])])
        self.stats["remote_produces"] += 1
        resp = await self._rpc_client().call_addr(addr, 0, PRODUCE_VERSION, req, self.timeout_s + 5)
        if resp is None:
            self.stats["append_errors"] += 1
            raise errors.store_error(f"no answer from broker {leader}, the leader of {TOPIC}")
        pr = next(p for t in resp.responses for p in t.partition_responses)
        if pr.error_code in RETRIABLE:
            raise _NotAppended(f"append to {TOPIC} on broker {leader}: {E(pr.error_code).name}")
        if pr.error_code:
            self.stats["append_errors"] += 1
            raise errors.store_error(f"append to {TOPIC} on broker {leader}: "
                                     f"{E(pr.error_code).name}")
        self.stats["appends"] += 1
        return pr.base_offset

    def statistics(self) -> dict:
        return {"leader": self.leader(), **self.stats}


__all__ = ["SchemaStore", "TOPIC"]
