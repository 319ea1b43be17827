"""Consumer instances of API v2: each one a member of its consumer group in this broker's
own group coordinator, and its positions kept here.

A Confluent proxy runs a Java ``KafkaConsumer`` per instance; kbroker needs no client: an
instance that subscribes becomes a KIP-848 member through the ConsumerGroupHeartbeat
handler called in process (v1, a client-chosen member id), heartbeating from a task of the
gateway's nursery at the interval the coordinator asks for, so the coordinator's own
assignors, epochs and fencing decide its partitions and other members (Java, librdkafka,
other instances) share the group with it. An assigned partition is owned at once (the
instance keeps nothing that must be revoked first: positions are its only state and a
revoked partition's position is dropped). Manual assignment (``/assignments``) joins no
group, as the Java consumer's ``assign``.

Positions start at the group's committed offset (OffsetFetch), else ``auto.offset.reset``
(ListOffsets earliest/latest; ``none`` is an error); a poll reads with the Fetch handler
(sessionless full fetch, read_uncommitted, long-polling up to the request's timeout),
skips control batches and records before the position, and advances the position past
what it answers. With ``auto.commit.enable`` a poll that answered records commits them
(OffsetCommit with the member's epoch). An instance unused for
``kbroker.rest.proxy.consumer.instance.timeout.ms`` is deleted (it leaves its group) and
later calls answer 404 40403, as Confluent's ``consumer.instance.timeout.ms``.

The coordinator of a group is one node: an instance works on the node that coordinates its
group (FindCoordinator tells; elsewhere the calls answer 50003 naming that node).
"""
from __future__ import annotations

import base64
import logging
import re
import uuid
from dataclasses import dataclass, field

import trio

from kbroker.console import auth
from kbroker.replica import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from kbroker.wire import messages
from kbroker.wire import records as rec
from kbroker.wire.error_codes import ErrorCode

from . import errors
from .errors import RestError, error_name, from_kafka
from .inproc import call_api

log = logging.getLogger("kbroker.rest_proxy")

MAX_INSTANCES = 1000
MAX_INSTANCES_PER_PRINCIPAL = 100
DEFAULT_TIMEOUT_MS = 300_000
REBALANCE_TIMEOUT_MS = 60_000
RETRY_S = 0.5
EXPIRY_CHECK_S = 0.25
MAX_POLL_BYTES = 16 * 1024 * 1024
DEFAULT_POLL_BYTES = 1024 * 1024 * 4
NAME = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
FETCH_VERSION = 12
LEAVE_EPOCH = -1
_REFETCH = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH}
_LOADING = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE}


@dataclass(eq=False)
class Instance:
    """One REST consumer instance: its settings, subscription, positions and group membership."""
    group: str
    name: str
    fmt: str
    subject: auth.Subject
    auto_offset_reset: str = "latest"
    auto_commit: bool = True
    request_timeout_ms: int = 1000
    last_used_ms: int = 0
    topics: list[str] | None = None
    pattern: str | None = None
    manual: list[tuple[str, int]] | None = None
    assigned: list[tuple[str, int]] = field(default_factory=list)
    positions: dict[tuple[str, int], int] = field(default_factory=dict)
    member_id: str = ""
    member_epoch: int = 0
    error: str | None = None
    scope: trio.CancelScope | None = None
    wake: trio.Event = field(default_factory=trio.Event)
    changed: trio.Event = field(default_factory=trio.Event)
    lock: trio.Lock = field(default_factory=trio.Lock)

    @property
    def subscribed(self) -> bool:
        return self.topics is not None or self.pattern is not None

    def assignment(self) -> list[tuple[str, int]]:
        return list(self.manual) if self.manual is not None else list(self.assigned)


def _b64_uuid() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")


def _records_bytes(records) -> bytes:
    if records is None:
        return b""
    if isinstance(records, (bytes, bytearray, memoryview)):
        return bytes(records)
    if hasattr(records, "read_bytes"):
        return records.read_bytes()
    if isinstance(records, (list, tuple)):
        return b"".join(_records_bytes(r) for r in records)
    raise TypeError(f"unexpected records of type {type(records).__name__}")


def _bool(value, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise errors.unprocessable(f"Invalid consumer configuration: {what} must be true or false",
                               errors.INVALID_CONSUMER_CONFIG)


class ConsumerInstances:
    """The consumer instances of one node's gateway (``(group, name) -> Instance``)."""

    def __init__(self, server):
        self.server = server
        self.instances: dict[tuple[str, str], Instance] = {}
        self._nursery: trio.Nursery | None = None
        self.forward = None          # forward.Forwarder: partitions led by other nodes

    # ---------------------------------------------------------------- lifecycle
    def _now(self) -> int:
        return self.server.broker.clock.monotonic_ms()

    def timeout_ms(self) -> int:
        try:
            return int(self.server.config.get("kbroker.rest.proxy.consumer.instance.timeout.ms"))
        except (KeyError, TypeError, ValueError):
            return DEFAULT_TIMEOUT_MS

    async def run(self, context) -> None:
        """The gateway's task: hosts the members' heartbeat tasks and expires idle instances."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            while True:
                await trio.sleep(EXPIRY_CHECK_S)
                broker = self.server.broker
                if broker is None or not broker.started:
                    continue
                now, limit = self._now(), self.timeout_ms()
                for inst in [i for i in self.instances.values() if now - i.last_used_ms > limit]:
                    log.info("rest proxy: consumer instance %s of group %s expired after %d ms "
                             "unused", inst.name, inst.group, limit)
                    await self.remove(inst)

    def create(self, group: str, body: dict) -> Instance:
        name = body.get("name")
        if name is None or name == "":
            name = "rest-consumer-" + uuid.uuid4().hex[:12]
        if not isinstance(name, str) or not NAME.match(name):
            raise errors.unprocessable("Invalid consumer configuration: name must be 1-255 of "
                                       "[A-Za-z0-9._-]", errors.INVALID_CONSUMER_CONFIG)
        fmt = str(body.get("format", "binary")).lower()
        from .media import FORMATS
        if fmt not in FORMATS:
            raise errors.unprocessable(f"Invalid consumer configuration: unknown format {fmt!r}",
                                       errors.INVALID_CONSUMER_CONFIG)
        reset = str(body.get("auto.offset.reset", "latest")).lower()
        if reset not in ("earliest", "latest", "none"):
            raise errors.unprocessable("Invalid consumer configuration: auto.offset.reset must be "
                                       "earliest, latest or none", errors.INVALID_CONSUMER_CONFIG)
        auto_commit = _bool(body.get("auto.commit.enable", True), "auto.commit.enable")
        timeout = body.get("consumer.request.timeout.ms", 1000)
        try:
            timeout = int(timeout)
            if timeout < 0:
                raise ValueError
        except (TypeError, ValueError):
            raise errors.unprocessable("Invalid consumer configuration: consumer.request.timeout.ms "
                                       "must be a number of milliseconds",
                                       errors.INVALID_CONSUMER_CONFIG) from None
        if (group, name) in self.instances:
            raise RestError(409, errors.CONSUMER_ALREADY_EXISTS,
                            "Consumer with specified consumer ID already exists in the specified "
                            "consumer group.")
        subject = auth.current.get()
        if len(self.instances) >= MAX_INSTANCES or sum(
                1 for i in self.instances.values()
                if i.subject.principal == subject.principal) >= MAX_INSTANCES_PER_PRINCIPAL:
            raise RestError(429, errors.TOO_MANY_REQUESTS,
                            "too many consumer instances: delete some first")
        inst = Instance(group, name, fmt, subject, reset, auto_commit, timeout,
                        last_used_ms=self._now())
        self.instances[(group, name)] = inst
        return inst

    def get(self, group: str, name: str) -> Instance:
        inst = self.instances.get((group, name))
        if inst is None:
            raise RestError(404, errors.CONSUMER_INSTANCE_NOT_FOUND, "Consumer instance not found.")
        inst.last_used_ms = self._now()
        return inst

    async def remove(self, inst: Instance) -> None:
        if self.instances.get((inst.group, inst.name)) is inst:
            del self.instances[(inst.group, inst.name)]
        await self._leave(inst)

    # ---------------------------------------------------------------- membership
    async def coordinated_here(self, group: str) -> None:
        """FindCoordinator, as a client asks first (it creates ``__consumer_offsets``)."""
        broker = self.server.broker
        resp = await call_api(broker, 10, 4, messages.FindCoordinatorRequest(
            key="", key_type=0, coordinator_keys=[group]))
        c = resp.coordinators[0]
        if c.error_code:
            raise from_kafka(c.error_code, c.error_message or
                             f"no coordinator for group {group!r}: {error_name(c.error_code)}")
        if c.node_id != broker.node_id:
            raise RestError(500, errors.KAFKA_RETRIABLE_ERROR,
                            f"group {group!r} is coordinated by node {c.node_id} "
                            f"({c.host}:{c.port}): use the REST proxy of that node")

    async def subscribe(self, inst: Instance, topics: list[str] | None, pattern: str | None) -> None:
        if inst.manual is not None:
            raise RestError(409, errors.ILLEGAL_STATE, "Illegal state: Subscription to topics, "
                            "partitions and pattern are mutually exclusive")
        if self._nursery is None:
            raise RestError(503, errors.KAFKA_RETRIABLE_ERROR, "the gateway is still starting")
        await self.coordinated_here(inst.group)
        await self._stop_member(inst)
        inst.topics, inst.pattern = topics, pattern
        inst.assigned, inst.positions, inst.error = [], {}, None
        inst.member_id, inst.member_epoch = _b64_uuid(), 0
        inst.changed = trio.Event()
        inst.scope = trio.CancelScope()
        self._nursery.start_soon(self._member, inst, inst.scope)

    async def unsubscribe(self, inst: Instance) -> None:
        await self._leave(inst)
        inst.topics = inst.pattern = None
        inst.assigned, inst.positions = [], {}

    def assign(self, inst: Instance, parts: list[tuple[str, int]]) -> None:
        if inst.subscribed:
            raise RestError(409, errors.ILLEGAL_STATE, "Illegal state: Subscription to topics, "
                            "partitions and pattern are mutually exclusive")
        inst.manual = list(dict.fromkeys(parts))
        inst.positions = {tp: o for tp, o in inst.positions.items() if tp in inst.manual}

    async def _stop_member(self, inst: Instance) -> None:
        if inst.scope is not None:
            inst.scope.cancel()
            inst.scope = None

    async def _leave(self, inst: Instance) -> None:
        was_member = inst.scope is not None
        await self._stop_member(inst)
        if not was_member or not inst.member_id:
            return
        R = messages.ConsumerGroupHeartbeatRequest
        reset = auth.current.set(inst.subject)
        try:
            with trio.move_on_after(5):
                await call_api(self.server.broker, 68, 1, R(
                    group_id=inst.group, member_id=inst.member_id, member_epoch=LEAVE_EPOCH))
        except Exception:  # noqa: BLE001 - leaving is best effort: the session times out anyway
            log.exception("rest proxy: consumer %s could not leave group %s", inst.name, inst.group)
        finally:
            auth.current.reset(reset)

    async def _member(self, inst: Instance, scope: trio.CancelScope) -> None:
        with scope:
            auth.current.set(inst.subject)
            broker = self.server.broker
            R = messages.ConsumerGroupHeartbeatRequest
            while True:
                names = {t.topic_id: n for n, t in broker.metadata.topics.items()}
                ids = {n: t.topic_id for n, t in broker.metadata.topics.items()}
                owned: dict = {}
                for t, p in inst.assigned:
                    if t in ids:
                        owned.setdefault(ids[t], []).append(p)
                req = R(group_id=inst.group, member_id=inst.member_id, member_epoch=inst.member_epoch,
                        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                        subscribed_topic_names=inst.topics if inst.topics is not None else None,
                        subscribed_topic_regex=inst.pattern,
                        topic_partitions=[R.TopicPartitions(topic_id=i, partitions=sorted(ps))
                                          for i, ps in owned.items()])
                try:
                    resp = await call_api(broker, 68, 1, req)
                except Exception as e:  # noqa: BLE001 - keep trying, as a client would
                    log.exception("rest proxy: heartbeat of %s/%s failed", inst.group, inst.name)
                    inst.error = f"{type(e).__name__}: {e}"
                    await trio.sleep(RETRY_S)
                    continue
                if resp.error_code:
                    inst.error = resp.error_message or error_name(resp.error_code)
                    if resp.error_code in _REFETCH:
                        inst.member_epoch = 0          # rejoin with the same member id
                        inst.assigned = []
                        continue
                    await trio.sleep(RETRY_S)
                    continue
                inst.error = None
                inst.member_epoch = resp.member_epoch
                if resp.assignment is not None:
                    now = sorted((names[tp.topic_id], p) for tp in resp.assignment.topic_partitions
                                 if tp.topic_id in names for p in tp.partitions)
                    inst.positions = {tp: o for tp, o in inst.positions.items() if tp in now}
                    inst.assigned = now
                    inst.changed.set()
                    inst.changed = trio.Event()
                interval = max(resp.heartbeat_interval_ms, 100) / 1000
                with trio.move_on_after(interval):
                    await inst.wake.wait()
                inst.wake = trio.Event()

    async def wait_assignment(self, inst: Instance, timeout_s: float) -> None:
        """Until a subscribed instance has partitions (or the timeout)."""
        with trio.move_on_after(timeout_s):
            while inst.subscribed and not inst.assigned:
                inst.wake.set()
                await inst.changed.wait()

    # ---------------------------------------------------------------- offsets
    async def committed(self, inst: Instance, parts: list[tuple[str, int]]) -> dict:
        """OffsetFetch through its handler: (topic, partition) -> (offset, metadata)."""
        if not parts:
            return {}
        await self.coordinated_here(inst.group)
        R = messages.OffsetFetchRequest
        by_topic: dict[str, list[int]] = {}
        for t, p in parts:
            by_topic.setdefault(t, []).append(p)
        resp = await call_api(self.server.broker, 9, 8, R(groups=[R.OffsetFetchRequestGroup(
            group_id=inst.group, topics=[R.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
                                         for t, ps in by_topic.items()])], require_stable=True))
        g = resp.groups[0]
        if g.error_code:
            raise from_kafka(g.error_code)
        out = {}
        for t in g.topics:
            for p in t.partitions:
                if p.error_code:
                    raise from_kafka(p.error_code)
                out[(t.name, p.partition_index)] = (p.committed_offset, p.metadata or "")
        return out

    async def commit(self, inst: Instance, offsets: dict[tuple[str, int], int]) -> None:
        if not offsets:
            return
        await self.coordinated_here(inst.group)
        R = messages.OffsetCommitRequest
        by_topic: dict[str, list] = {}
        for (t, p), o in offsets.items():
            by_topic.setdefault(t, []).append(R.OffsetCommitRequestPartition(
                partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                committed_metadata=""))
        member = inst.subscribed and inst.member_epoch > 0
        resp = await call_api(self.server.broker, 8, 9, R(
            group_id=inst.group, generation_id_or_member_epoch=inst.member_epoch if member else -1,
            member_id=inst.member_id if member else "", group_instance_id=None,
            retention_time_ms=-1, topics=[R.OffsetCommitRequestTopic(name=t, partitions=ps)
                                          for t, ps in by_topic.items()]))
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    raise from_kafka(p.error_code, f"commit of {t.name}-{p.partition_index}: "
                                                   f"{error_name(p.error_code)}")

    async def _reset(self, inst: Instance, parts: list[tuple[str, int]], where: int | None = None,
                     *, skip_unavailable: bool = False):
        """Positions from ListOffsets. ``skip_unavailable``: a partition answering a
        retriable error (led by another node, leader moving) keeps no position and is left
        out of this poll, instead of failing it."""
        from .v2_topics import list_offsets
        where = where if where is not None else (
            EARLIEST_TIMESTAMP if inst.auto_offset_reset == "earliest" else LATEST_TIMESTAMP)
        by_topic: dict[str, list[int]] = {}
        for t, p in parts:
            by_topic.setdefault(t, []).append(p)
        for t, ps in by_topic.items():
            for p in ps:
                try:
                    got = await list_offsets(self.server.broker, t, [p], where, forward=self.forward)
                except RestError as e:
                    if skip_unavailable and e.code == errors.KAFKA_RETRIABLE_ERROR:
                        continue
                    raise
                inst.positions[(t, p)] = got[p]

    async def ensure_positions(self, inst: Instance, parts: list[tuple[str, int]]) -> None:
        missing = [tp for tp in parts if tp not in inst.positions]
        if not missing:
            return
        committed = await self.committed(inst, missing)
        reset = []
        for tp in missing:
            o = committed.get(tp, (-1, ""))[0]
            if o is not None and o >= 0:
                inst.positions[tp] = o
            else:
                reset.append(tp)
        if reset:
            if inst.auto_offset_reset == "none":
                raise RestError(500, errors.KAFKA_ERROR, "Kafka error: Undefined offset with no "
                                f"reset policy for partitions: {reset}")
            await self._reset(inst, reset, skip_unavailable=True)

    async def seek(self, inst: Instance, parts: list[tuple[str, int]], where: int | None,
                   offsets: dict | None = None) -> None:
        owned = set(inst.assignment())
        for tp in parts:
            if tp not in owned:
                raise RestError(409, errors.ILLEGAL_STATE,
                                f"Illegal state: No current assignment for partition {tp[0]}-{tp[1]}")
        if offsets is not None:
            inst.positions.update(offsets)
        else:
            await self._reset(inst, parts, where)

    # ---------------------------------------------------------------- records
    async def _forward_fetch(self, req, resp) -> list[tuple[str, object]]:
        """(topic, partition answer) of a Fetch, the partitions another node leads asked
        of that leader (``forward.py``: the local answer already passed the READ check)."""
        from .forward import NOT_LEADER
        answered = [(tr.topic, pd) for tr in resp.responses for pd in tr.partitions]
        if self.forward is None:
            return answered
        asked = {(t.topic, p.partition): p for t in req.topics for p in t.partitions}
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for topic, pd in answered:
            if pd.error_code == NOT_LEADER:
                by_leader.setdefault(self.forward.leader(topic, pd.partition_index), []).append(
                    (topic, pd.partition_index))
        if not by_leader:
            return answered
        F = messages.FetchRequest
        remote: dict[tuple[str, int], object] = {}
        for leader, tps in by_leader.items():
            if leader < 0:
                continue
            topics: dict[str, list] = {}
            for t, p in tps:
                topics.setdefault(t, []).append(asked[(t, p)])
            got = await self.forward.call(leader, 1, FETCH_VERSION, F(
                replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=req.max_bytes,
                isolation_level=req.isolation_level, session_id=0, session_epoch=-1,
                topics=[F.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
                forgotten_topics_data=[], rack_id=""))
            if got is None or got.error_code:
                continue
            for tr in got.responses:
                for pd in tr.partitions:
                    remote[(tr.topic, pd.partition_index)] = pd
        return [(t, remote.get((t, pd.partition_index), pd)) for t, pd in answered]

    async def poll(self, inst: Instance, timeout_ms: int, max_bytes: int, render) -> list:
        """Records after the positions, each ``render(topic, partition, offset, key, value,
        headers)``; positions move (and auto-commit happens) only when every record could
        be rendered, so a record the format cannot show is not skipped silently."""
        async with inst.lock:
            if inst.subscribed and not inst.assigned:
                await self.wait_assignment(inst, timeout_ms / 1000)
            parts = inst.assignment()
            if not parts:
                return []
            try:
                await self.ensure_positions(inst, parts)
            except RestError as e:
                if e.kafka_code not in _LOADING:
                    raise
                return []       # the group's coordinator is loading: the next poll asks again
            parts = [tp for tp in parts if tp in inst.positions]
            if not parts:
                return []
            F = messages.FetchRequest
            by_topic: dict[str, list[int]] = {}
            for t, p in parts:
                by_topic.setdefault(t, []).append(p)
            req = F(replica_id=-1, max_wait_ms=timeout_ms, min_bytes=1, max_bytes=max_bytes,
                    isolation_level=0, session_id=0, session_epoch=-1,
                    topics=[F.FetchTopic(topic=t, partitions=[F.FetchPartition(
                        partition=p, current_leader_epoch=-1, fetch_offset=inst.positions[(t, p)],
                        last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=max_bytes)
                        for p in ps]) for t, ps in by_topic.items()],
                    forgotten_topics_data=[], rack_id="")
            resp = await call_api(self.server.broker, 1, FETCH_VERSION, req)
            if resp.error_code:
                raise from_kafka(resp.error_code)
            answered = await self._forward_fetch(req, resp)
            out: list = []
            budget = max_bytes
            moved: dict[tuple[str, int], int] = {}
            for topic, pd in answered:
                tp = (topic, pd.partition_index)
                if tp not in inst.positions:
                    continue          # revoked while the fetch waited
                if pd.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    if inst.auto_offset_reset == "none":
                        raise RestError(500, errors.KAFKA_ERROR, "Kafka error: offset out of "
                                        f"range for {tp[0]}-{tp[1]} with no reset policy")
                    await self._reset(inst, [tp], skip_unavailable=True)   # as the Java consumer
                    continue
                if pd.error_code:
                    if pd.error_code in (ErrorCode.TOPIC_AUTHORIZATION_FAILED,):
                        raise from_kafka(pd.error_code, f"Not authorized to access topics: [{topic}]")
                    continue          # retriable (leadership moving): the next poll retries
                data = _records_bytes(pd.records)
                pos = inst.positions[tp]
                full = True
                for bpos, header in rec.iter_batches(data, allow_truncated_tail=True):
                    if header.next_offset <= pos:
                        continue
                    if not header.is_control:
                        for r in rec.decode_records(data, bpos, header):
                            if r.offset < pos:
                                continue
                            size = len(r.key or b"") + len(r.value or b"")
                            if out and size > budget:
                                full = False
                                break
                            budget -= size
                            out.append(await render(topic, pd.partition_index, r.offset, r.key,
                                              r.value, [(h.key, h.value) for h in r.headers]))
                            pos = r.offset + 1
                    if not full:
                        break
                    pos = max(pos, header.next_offset)
                if pos != inst.positions[tp]:
                    moved[tp] = pos
            inst.positions.update(moved)
            if inst.auto_commit and moved:
                await self.commit(inst, moved)
            return out
