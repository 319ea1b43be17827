"""The follower side of partition replication (Kafka's ReplicaFetcherManager,
AbstractFetcherThread and ReplicaFetcherThread), on trio.

One :class:`SourceFetcher` task per source broker (the leader of the partitions it fetches)
sends Fetch v12 requests in an incremental fetch session (KIP-227, as Kafka's followers: the
first fetch is full and opens a session, later ones name only the partitions whose fetch
position or epochs changed and forget the ones no longer fetched; the session rules are
:mod:`kbroker.replica.fetch_session_handler`) with ``replica_id`` = this node,
``max_wait_ms`` = ``replica.fetch.wait.max.ms``, ``min_bytes`` = ``replica.fetch.min.bytes``,
per-partition ``replica.fetch.max.bytes``, the image's ``current_leader_epoch``,
``last_fetched_epoch`` = the log's latest epoch and ``fetch_offset`` = the log end offset.
The leader long-polls the request, so a caught-up follower costs one parked request.

What a response does to a partition (:meth:`FollowerLog.process`):

- records: appended with ``append_as_follower`` (the leader's offsets and epochs kept), then
  HW = min(leader's HW, own LEO) and the log start offset follows the leader's;
- ``diverging_epoch``: truncate to the end of the largest common epoch (Kafka's
  ``truncateOnFetchResponse``; when the follower does not know the leader's epoch it truncates
  to its own end of the largest smaller epoch and asks again);
- OFFSET_OUT_OF_RANGE: ask the leader for its log end / start (ListOffsets with replica_id):
  a leader end below ours truncates to it, a leader start above ours restarts the log empty
  there (Kafka's ``fetchOffsetAndTruncate``);
- NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH, other errors and connection failures:
  the partition waits ``replica.fetch.backoff.ms`` or until the next image changes its leader
  or epoch — never a busy loop.

Every response is checked against the current assignment before it touches a log: a
partition whose leader, epoch or role changed while the request was in flight ignores it.
A partition no longer following this fetcher's leader (made leader, moved to another
leader, removed) leaves the fetcher at its next round, so its session forgets it, and a
fetcher left with no partition sends nothing: an incremental fetch naming nothing is
answered at once, as Kafka's leader does, and would loop.
The fetchers use their own ``RpcClient``, so a parked Fetch never holds up other node-to-node
calls. Images reach the fetchers only through :meth:`ReplicaFetcherManager.update`, called
synchronously by ``ReplicaManager.apply_image``. This module does not import the manager:
it is handed the manager (``replicas``) and uses ``get_replica``, ``node_id``, ``now_ms``,
``stats`` and the broker config through it.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import trio

from kbroker.log.errors import KafkaStorageError, LogClosed
from kbroker.replica.results import FetchResult
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

log = logging.getLogger("kbroker.replica_fetcher")

FETCH_VERSION = 12
LIST_OFFSETS_VERSION = 4
LATEST = -1
EARLIEST = -2
# top-level answers that only mean "the session is gone": fetch again at once, in full
_SESSION_ERRORS = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                   ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)


def _trim_to_whole_batches(data) -> bytes:
    """Drop a trailing partial batch (a leader may cut the last one at the size limit)."""
    mv = memoryview(data)
    pos, end = 0, len(mv)
    while end - pos >= 12:
        size = int.from_bytes(mv[pos + 8:pos + 12], "big", signed=True)
        if size < 0 or pos + 12 + size > end:
            break
        pos += 12 + size
    return bytes(mv[:pos])


def _region_bytes(records) -> bytes:
    if records is None:
        return b""
    read = getattr(records, "read_bytes", None)
    if read is not None:
        return read()
    return bytes(records)


class FollowerLog:
    """The rules a follower applies to one partition's fetch answer; no I/O of its own.

    Results of :meth:`process`: ``"ok"`` (appended, possibly nothing), ``"truncated"``
    (diverged: fetch again at once), ``"out_of_range"`` (ask the leader for its offsets),
    ``"error"`` (back off)."""

    def __init__(self, replicas):
        self.replicas = replicas

    def process(self, part, fetch_offset: int, result) -> str:
        """Apply one partition of a follower fetch answer. ``result`` has the fields of
        ``kbroker.replica.results.FetchResult`` (records as bytes, memoryview or FileRegion)."""
        code = result.error_code
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            return "out_of_range"
        if code:
            return "error"
        div = result.diverging_epoch
        if div is not None and (div[0] >= 0 or div[1] >= 0):
            before = (part.log.log_end_offset, part.log.latest_epoch)
            self.truncate_on_divergence(part, div[0], div[1])
            if (part.log.log_end_offset, part.log.latest_epoch) == before:
                # no progress possible from here: back off instead of asking again at once
                log.warning("%s-%d: leader reports divergence at epoch %d end %d that truncation "
                            "cannot resolve (log end %d)", part.topic, part.index, div[0], div[1],
                            before[0])
                return "error"
            return "truncated"
        log_ = part.log
        if log_.log_end_offset != fetch_offset:
            return "ok"      # the log moved since the request (truncation): fetch again
        data = _trim_to_whole_batches(_region_bytes(result.records))
        if data:
            try:
                self._append(part, data)
            except Exception as exc:  # noqa: BLE001 - corrupt data / unexpected offsets
                # (a storage error was reported by the log itself: kbroker.log.failure)
                log.warning("follower append to %s-%d at %d failed: %r", part.topic, part.index,
                            fetch_offset, exc)
                return "error"
        self.apply_leader_offsets(part, result.high_watermark, result.log_start_offset)
        return "ok"

    def _append(self, part, data: bytes) -> None:
        log_ = part.log
        try:
            log_.append_as_follower(data, now_ms=self.replicas.now_ms())
        except Exception as exc:
            first = getattr(exc, "first_offset", None)
            last = getattr(exc, "last_offset", None)
            leo = log_.log_end_offset
            # Kafka: the leader's log start fell inside the first batch we fetch into an
            # empty log — restart our log at that batch's base offset
            if (first is not None and last is not None and leo == log_.log_start_offset
                    and first < leo <= last):
                log_.truncate_fully_and_start_at(first, now_ms=self.replicas.now_ms())
                log_.append_as_follower(data, now_ms=self.replicas.now_ms())
            else:
                raise
        self.replicas.stats["follower_appends"] = self.replicas.stats.get("follower_appends", 0) + 1

    def apply_leader_offsets(self, part, leader_hw: int, leader_log_start: int) -> None:
        """HW = min(leader's HW, own LEO); the log start offset follows the leader's."""
        log_ = part.log
        if leader_hw >= 0:
            new_hw = min(leader_hw, log_.log_end_offset)
            if new_hw != log_.high_watermark:
                log_.high_watermark = new_hw
                part.wake()
        if leader_log_start > log_.log_start_offset and part.config.delete:
            target = min(leader_log_start, log_.high_watermark)
            if target > log_.log_start_offset:
                try:
                    log_.delete_records_before(target, now_ms=self.replicas.now_ms())
                except Exception as exc:  # noqa: BLE001 - retention will catch up
                    log.debug("log start of %s-%d not moved to %d: %r", part.topic, part.index,
                              target, exc)

    def truncate_on_divergence(self, part, epoch: int, end_offset: int) -> int:
        """Kafka's truncateOnFetchResponse / getOffsetTruncationState; returns the new LEO."""
        log_ = part.log
        leo = log_.log_end_offset
        if end_offset < 0:
            target = log_.high_watermark
        else:
            own_epoch, own_end = log_.end_offset_for_epoch(epoch) if epoch >= 0 else (-1, -1)
            if own_end < 0:
                target = min(end_offset, leo)
            elif own_epoch != epoch:
                # we do not know the leader's epoch: cut to the end of our largest smaller
                # one and ask again with that as the last fetched epoch
                target = min(own_end, leo)
            else:
                target = min(own_end, end_offset, leo)
        # also when no data goes: an epoch this node began as leader without writing
        # anything sits at the log end and must go (the log drops such cache entries)
        log_.truncate_to(target, now_ms=self.replicas.now_ms())
        if target < leo:
            log.info("%s-%d: truncated from %d to %d (leader diverged at epoch %d end %d)",
                     part.topic, part.index, leo, target, epoch, end_offset)
            self.replicas.stats["follower_truncations"] = \
                self.replicas.stats.get("follower_truncations", 0) + 1
            part.wake()
        return log_.log_end_offset

    def reset_out_of_range(self, part, leader_start: int, leader_end: int) -> None:
        """Kafka's fetchOffsetAndTruncate after OFFSET_OUT_OF_RANGE."""
        log_ = part.log
        leo = log_.log_end_offset
        now = self.replicas.now_ms()
        if 0 <= leader_end < leo:
            log.info("%s-%d: leader ends at %d below our %d: truncating", part.topic,
                     part.index, leader_end, leo)
            log_.truncate_to(leader_end, now_ms=now)
        elif leader_start > leo:
            log.info("%s-%d: leader starts at %d above our end %d: restarting the log there",
                     part.topic, part.index, leader_start, leo)
            log_.truncate_fully_and_start_at(leader_start, now_ms=now)
        part.wake()


@dataclass
class FetchState:
    """One followed partition of a SourceFetcher."""

    part: object
    leader_epoch: int
    delayed_until: float = 0.0    # trio time before which the partition is not fetched
    errors: int = 0


@dataclass
class _Sent:
    """A partition's fetch position as sent in the request in flight to its leader."""
    state: FetchState
    fetch_offset: int
    leader_epoch: int


def _new_session(leader_id: int):
    """A fetch session with ``leader_id`` (Kafka's ``FetchSessionHandler``). Imported here,
    not at import: a node that follows no leader (a single node) loads no fetch-session
    module before a consumer's first Fetch (~3 M instructions of every start)."""
    from kbroker.replica.fetch_session_handler import FetchSessionHandler
    return FetchSessionHandler(leader_id)


class SourceFetcher:
    """Fetches every partition led by one source broker, one request at a time."""

    def __init__(self, manager: "ReplicaFetcherManager", leader_id: int):
        self.manager = manager
        self.leader_id = leader_id
        self.addr: tuple[str, int] | None = None
        self.partitions: dict[tuple[str, int], FetchState] = {}
        self._wake = trio.Event()
        self.scope: trio.CancelScope | None = None
        self.stopped = False
        self.stats = {"requests": 0, "failures": 0, "bytes": 0}
        self.session = _new_session(leader_id)

    def set_partitions(self, parts, addr) -> None:
        new: dict[tuple[str, int], FetchState] = {}
        for p in parts:
            key = (p.topic, p.index)
            old = self.partitions.get(key)
            if old is not None and old.part is p and old.leader_epoch == p.leader_epoch:
                new[key] = old
                continue
            if old is None or old.part is not p:
                self._prepare(p)
            new[key] = FetchState(p, p.leader_epoch)
        self.partitions = new
        if addr != self.addr:
            for st in new.values():
                st.delayed_until = 0.0
            if self.addr is not None:
                self.session = _new_session(self.leader_id)   # another process: start over
        self.addr = addr
        self._wake.set()

    def _prepare(self, part) -> None:
        """A log without leader epochs starts fetching at its HW (Kafka's initial fetch
        offset for replicas that cannot use truncation on fetch)."""
        log_ = part.log
        try:
            if log_.latest_epoch < 0 and log_.high_watermark < log_.log_end_offset:
                log_.truncate_to(log_.high_watermark)
        except Exception:  # noqa: BLE001 - the fetch answer decides later
            log.exception("preparing %s-%d for fetching", part.topic, part.index)

    def stop(self) -> None:
        self.stopped = True
        self.partitions = {}
        if self.scope is not None:
            self.scope.cancel()
        self._wake.set()

    def _follows(self, key, st: FetchState) -> bool:
        """Whether the partition of ``st`` is still this node's replica following this
        fetcher's leader."""
        part = st.part
        return (self.manager.replicas.get_replica(*key) is part and not part.is_leader
                and part.leader == self.leader_id)

    def _current(self, key, sent: _Sent) -> bool:
        return (self.partitions.get(key) is sent.state and self._follows(key, sent.state)
                and sent.state.part.leader_epoch == sent.leader_epoch)

    def _drop_ended(self) -> None:
        """Remove the partitions whose follower role with this leader ended (the replica
        became leader, moved to another leader or was removed) before the manager's next
        update does: the session forgets them and they are never fetched again from here
        (Kafka removes them from the fetcher thread)."""
        ended = [key for key, st in self.partitions.items() if not self._follows(key, st)]
        if ended:
            log.debug("broker %d no longer leads %s for this node: not fetched from it",
                      self.leader_id, ended)
            self.partitions = {k: st for k, st in self.partitions.items() if k not in ended}

    def _build_request(self, ready: list[FetchState]):
        """The next Fetch: the ready partitions' positions (``sent``, every one of them, as
        the leader may answer any partition of the session) and the request, which names
        only what the session plan says (all of them when it is a full fetch)."""
        R = messages.FetchRequest
        cfg = self.manager.replicas._cfg
        sent: dict[tuple[str, int], _Sent] = {}
        wanted: dict[tuple[str, int], tuple] = {}
        fields: dict[tuple[str, int], object] = {}
        max_part = int(cfg("replica.fetch.max.bytes", 1_048_576))
        for st in ready:
            part = st.part
            log_ = part.log
            offset = log_.log_end_offset
            key = (part.topic, part.index)
            wanted[key] = (offset, part.leader_epoch, log_.latest_epoch, log_.log_start_offset, max_part)
            fields[key] = R.FetchPartition(
                partition=part.index, current_leader_epoch=part.leader_epoch,
                fetch_offset=offset, last_fetched_epoch=log_.latest_epoch,
                log_start_offset=log_.log_start_offset, partition_max_bytes=max_part)
            sent[key] = _Sent(st, offset, part.leader_epoch)
        plan = self.session.build(wanted)
        by_topic: dict[str, list] = {}
        for key in plan.send:
            by_topic.setdefault(key[0], []).append(fields[key])
        forgotten: dict[str, list[int]] = {}
        for topic, index in plan.forgotten:
            forgotten.setdefault(topic, []).append(index)
        req = R(replica_id=self.manager.replicas.node_id,
                max_wait_ms=int(cfg("replica.fetch.wait.max.ms", 500)),
                min_bytes=int(cfg("replica.fetch.min.bytes", 1)),
                max_bytes=int(cfg("replica.fetch.response.max.bytes", 10_485_760)),
                isolation_level=0, session_id=plan.session_id, session_epoch=plan.epoch,
                topics=[R.FetchTopic(topic=t, partitions=ps) for t, ps in by_topic.items()],
                forgotten_topics_data=[R.ForgottenTopic(topic=t, partitions=ps)
                                       for t, ps in forgotten.items()])
        return req, sent

    def _follower_quota(self):
        """The follower replication quota when some partition is throttled on this node."""
        quotas = getattr(self.manager.replicas.broker, "quotas", None)
        quota = getattr(quotas, "follower_replication", None)
        return quota if quota is not None and quota._throttled else None

    def _backoff(self, states, now: float) -> None:
        backoff = int(self.manager.replicas._cfg("replica.fetch.backoff.ms", 1000)) / 1000.0
        for st in states:
            st.delayed_until = now + backoff
            st.errors += 1

    async def run(self) -> None:
        with trio.CancelScope() as scope:
            self.scope = scope
            while not self.stopped:
                await self._run_once()

    async def _run_once(self) -> None:
        self._drop_ended()
        now = trio.current_time()
        # no partition, no request: an incremental fetch naming nothing with an empty session
        # is answered at once by the leader (as Kafka's), so it is never sent (Kafka's
        # buildFetch returns no request and the thread waits)
        ready = [st for st in self.partitions.values() if st.delayed_until <= now]
        if not ready or self.addr is None:
            self._wake = trio.Event()
            later = [st.delayed_until for st in self.partitions.values()]
            with trio.move_on_at(min(later) if later and self.addr is not None else trio.current_time() + 3600):
                await self._wake.wait()
            return
        quota = self._follower_quota()
        if quota is not None:
            # follower.replication.throttled.rate (KIP-73): throttled partitions of a replica
            # not in the ISR stay out of the request while the quota is exceeded (Kafka's
            # shouldFollowerThrottle); with nothing left, back off as an empty fetch does
            node = self.manager.replicas.node_id
            kept = [st for st in ready if not quota.should_throttle(
                st.part.topic, st.part.index, node in getattr(st.part, "isr", ()))]
            if not kept:
                backoff = int(self.manager.replicas._cfg("replica.fetch.backoff.ms", 1000)) / 1000.0
                self._wake = trio.Event()
                with trio.move_on_after(backoff):
                    await self._wake.wait()
                return
            ready = kept
        req, sent = self._build_request(ready)
        rpc = self.manager.rpc
        cfg = self.manager.replicas._cfg
        timeout = int(cfg("replica.fetch.wait.max.ms", 500)) / 1000.0 + \
            int(cfg("request.timeout.ms", 30_000)) / 1000.0
        self.stats["requests"] += 1
        resp = await rpc.call_addr(self.addr, 1, FETCH_VERSION, req, timeout)
        now = trio.current_time()
        if resp is None:
            self.session.handle_error()
        else:
            opened = self.session.stats["sessions_opened"]
            self.session.handle_response(resp.error_code, resp.session_id)
            if self.session.stats["sessions_opened"] > opened:
                log.info("fetch session %d opened with broker %d (%d partitions)",
                         resp.session_id, self.leader_id, len(sent))
        if resp is None or resp.error_code:
            self.stats["failures"] += 1
            if resp is not None and resp.error_code in _SESSION_ERRORS:
                log.info("fetch session with broker %d lost (error %d): fetching in full",
                         self.leader_id, resp.error_code)
                return
            self._backoff([s.state for s in sent.values()], now)
            if resp is None:
                log.debug("fetch from broker %d at %s failed", self.leader_id, self.addr)
            return
        follower = self.manager.follower_log
        out_of_range = []
        for topic in resp.responses:
            for pd in topic.partitions:
                key = (topic.topic, pd.partition_index)
                s = sent.pop(key, None)
                if s is None or not self._current(key, s):
                    continue
                div = pd.diverging_epoch
                result = FetchResult(
                    topic.topic, pd.partition_index, error_code=pd.error_code,
                    high_watermark=pd.high_watermark, last_stable_offset=pd.last_stable_offset,
                    log_start_offset=pd.log_start_offset, records=pd.records,
                    diverging_epoch=(div.epoch, div.end_offset) if div is not None else None)
                if pd.records is not None:
                    self.stats["bytes"] += len(pd.records)
                    if quota is not None and quota.is_throttled(*key):
                        quota.record(len(pd.records))
                try:
                    outcome = follower.process(s.state.part, s.fetch_offset, result)
                except (KafkaStorageError, LogClosed):
                    # its log dir failed (reported by the log, kbroker.log.failure): the
                    # partition left this fetcher already unless the broker halts
                    outcome = "error"
                if outcome == "error":
                    self._backoff([s.state], now)
                elif outcome == "out_of_range":
                    out_of_range.append((key, s))
                else:
                    s.state.errors = 0
        # partitions the answer left out are fetched again on the next round
        for key, s in out_of_range:
            await self._handle_out_of_range(key, s)

    async def _handle_out_of_range(self, key, s: _Sent) -> None:
        end = await self._leader_offset(key, s.leader_epoch, LATEST)
        start = await self._leader_offset(key, s.leader_epoch, EARLIEST)
        if end is None or start is None or not self._current(key, s):
            self._backoff([s.state], trio.current_time())
            return
        try:
            self.manager.follower_log.reset_out_of_range(s.state.part, start, end)
        except (KafkaStorageError, LogClosed):
            self._backoff([s.state], trio.current_time())      # a failed log dir, as above

    async def _leader_offset(self, key, leader_epoch: int, timestamp: int) -> int | None:
        R = messages.ListOffsetsRequest
        req = R(replica_id=self.manager.replicas.node_id, isolation_level=0, topics=[
            R.ListOffsetsTopic(name=key[0], partitions=[R.ListOffsetsPartition(
                partition_index=key[1], current_leader_epoch=leader_epoch, timestamp=timestamp)])])
        resp = await self.manager.rpc.call_addr(self.addr, 2, LIST_OFFSETS_VERSION, req, 10.0)
        if resp is None:
            return None
        for t in resp.topics:
            for p in t.partitions:
                if p.error_code:
                    return None
                return p.offset
        return None


class ReplicaFetcherManager:
    """Keeps one SourceFetcher per leader broker of the partitions this node follows."""

    def __init__(self, replicas):
        self.replicas = replicas
        self.follower_log = FollowerLog(replicas)
        self._fetchers: dict[int, SourceFetcher] = {}
        self._nursery = None
        self.rpc = None

    def _listener(self) -> str | None:
        cfg = self.replicas.broker.config
        name = self.replicas._cfg("inter.broker.listener.name", None)
        if name:
            return name.upper()
        pick = getattr(cfg, "inter_broker_listener", None)
        if pick is not None:
            chosen = pick()     # security.inter.broker.protocol, as the TLS/SASL settings
            if chosen is not None:
                return chosen.name
        for attr in ("advertised_listeners", "listeners"):
            ls = getattr(cfg, attr, None)
            if ls:
                return ls[0].name
        return None

    def _endpoint(self, image, broker_id: int):
        brokers = getattr(image, "brokers", None) or {}
        b = brokers.get(broker_id)
        if b is None or getattr(b, "fenced", False):
            return None
        name = self._listener()
        addr = b.endpoint(name) if name else None
        if addr is None and b.endpoints:
            addr = (b.endpoints[0][1], b.endpoints[0][2])
        return addr

    def update(self, image, followed) -> None:
        """Called with every image: the partitions to follow (their leader is another node)."""
        by_leader: dict[int, list] = {}
        for p in followed:
            by_leader.setdefault(p.leader, []).append(p)
        for lid in list(self._fetchers):
            if lid not in by_leader:
                self._fetchers.pop(lid).stop()
        for lid, parts in by_leader.items():
            f = self._fetchers.get(lid)
            if f is None:
                f = self._fetchers[lid] = SourceFetcher(self, lid)
                if self._nursery is not None:
                    self._nursery.start_soon(f.run)
            f.set_partitions(parts, self._endpoint(image, lid))

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        from kbroker.raft.transport import RpcClient
        self.rpc = RpcClient(client_id=f"kbroker-replica-fetcher-{self.replicas.node_id}",
                             security=getattr(self.replicas.broker.config, "inter_broker_security", None))
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                for f in self._fetchers.values():
                    nursery.start_soon(f.run)
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            with trio.CancelScope(shield=True):
                await self.rpc.aclose()

    def statistics(self) -> dict:
        return {lid: {"partitions": len(f.partitions), "address": f.addr, **f.stats,
                      "session": f.session.statistics()}
                for lid, f in self._fetchers.items()}
