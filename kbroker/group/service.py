"""``GroupCoordinator``: the trio driver of the pure :class:`~kbroker.group.manager.GroupManager`.

What it adds to the state machine:

- **Parked requests.** JoinGroup and SyncGroup often cannot be answered at once; the API
  handler passes a :class:`Slot` (the reply, and the task waiting for it) and awaits it.
- **Durability.** Records the manager emits are appended to ``__consumer_offsets`` through
  the broker's ReplicaManager (one batch per partition, acks=all) before the manager's
  continuations run; a failed append is handed back as its Kafka error code.
- **Load.** Every ``__consumer_offsets`` partition this node leads is replayed from its log
  (start-up, or when FindCoordinator first creates the topic); until then the manager
  answers ``COORDINATOR_LOAD_IN_PROGRESS`` for groups on it.
- **A manager made on first use.** The manager (and :mod:`kbroker.group.manager` with the
  classic group type, offsets, timers and settings it imports) is made by the first
  group or offset request, the first ``__consumer_offsets`` partition to load, or the first
  reader of :attr:`GroupCoordinator.manager` (statistics, metrics, the console, the
  transaction and share paths): a node with no group has nothing for it to do, and its
  start-up does not pay for the imports (issue 32). Until then nothing is loaded, parked
  or due -- the offsets expiry it would have run finds no offsets -- and a manager made
  later arms that expiry in the period it would have been in since :meth:`start`.
- **Timers.** One task sleeps until the manager's next deadline (trio's clock, so tests can
  use ``trio.testing.MockClock``) and fires what is due.
- **Two clocks.** Every call hands the manager the broker clock's wall-clock ``now_ms`` (what
  records carry; offsets retention) and its ``monotonic_ms`` (the timers' deadlines), as
  Kafka's coordinator reads ``time.milliseconds()`` for records and runs its timers on
  ``hiResClockMs``: a step of the node's wall clock neither expires sessions nor hurries or
  holds back rebalances.

One ``trio.Lock`` serialises every manager call together with the append of its records,
so the order of the log is the order of the manager's decisions (Kafka serialises per
partition in its coordinator runtime; one lock is enough for one node). The wait for the
ISR (acks=all) happens *outside* the lock: a slow follower delays only the requests whose
records wait for it, not every group of the node. The manager's continuations (which
answer the commit, the SyncGroup, ...) run under the lock again once the records are
replicated, and per ``__consumer_offsets`` partition in the order the records were
appended -- so a commit is answered only after replication and two commits of one
partition never apply out of order, as Kafka's old coordinator whose callbacks ran when
the DelayedProduce completed. ``now_ms`` and ``monotonic_ms`` default to the broker's clock
(:mod:`kbroker.common.clock`).
"""
from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, Callable

import trio

from kbroker.common.clock import monotonic_reader
from kbroker.wire import records as wire_records
from kbroker.wire.error_codes import ErrorCode as E

if TYPE_CHECKING:
    from .manager import GroupManager, Result

log = logging.getLogger("kbroker.group")

OFFSETS_TOPIC = "__consumer_offsets"


class Slot:
    """A parked request: completed once with the manager's reply.

    No ``trio.Event``: most replies come with the call itself (MEMBER_ID_REQUIRED, a
    follower's answer, an error), and then :meth:`wait` returns the reply without a
    scheduling point (``Event.wait`` on a set event yields a whole scheduler round, once
    per such JoinGroup); otherwise the request's task sleeps until :meth:`set` reschedules
    it (cancellation, e.g. a stopping connection, ends the wait as with an event)."""
    __slots__ = ("value", "done", "_task")

    def __init__(self) -> None:
        self.value: Any = None
        self.done = False
        self._task = None

    def set(self, value: Any) -> None:
        if not self.done:
            self.value = value
            self.done = True
            task = self._task
            if task is not None:
                self._task = None
                trio.lowlevel.reschedule(task)

    async def wait(self) -> Any:
        if not self.done:
            self._task = trio.lowlevel.current_task()

            def abort(_raise_cancel) -> trio.lowlevel.Abort:
                self._task = None
                return trio.lowlevel.Abort.SUCCEEDED
            await trio.lowlevel.wait_task_rescheduled(abort)
        return self.value


class _Locked:
    """``async with`` the coordinator's lock, taken as :meth:`GroupCoordinator._acquire`
    takes it."""
    __slots__ = ("gc",)

    def __init__(self, gc: "GroupCoordinator") -> None:
        self.gc = gc

    async def __aenter__(self) -> None:
        await self.gc._acquire()

    async def __aexit__(self, *exc) -> None:
        self.gc._lock.release()


class GroupCoordinator:
    """Owns the GroupManager of this node; the API modules call its ``async`` methods."""

    def __init__(self, broker, *, now_ms: Callable[[], int] | None = None,
                 monotonic_ms: Callable[[], int] | None = None,
                 member_id_factory: Callable[[str], str] | None = None) -> None:
        self.broker = broker
        self._member_id_factory = member_id_factory
        self._manager: GroupManager | None = None     # made on first use: see manager
        self._started_mono: int | None = None         # the monotonic reading at start()
        self.now_ms = now_ms or broker.clock.now_ms
        self.monotonic_ms = monotonic_ms or monotonic_reader(broker.clock)
        self._lock = trio.Lock()
        self._locked = _Locked(self)
        # per __consumer_offsets partition: set once the last appended records' continuations
        # ran (the next append's continuations wait for it: append order = apply order)
        self._applied: dict[int, trio.Event] = {}
        self._wake = trio.Event()
        self._sleeping_until = math.inf
        self._nursery: trio.Nursery | None = None
        self._closed = False
        self._image_seen = None
        self._loaded_epoch: dict[int, int] = {}      # leader epoch a partition was loaded in
        self.stats = {"appends": 0, "append_errors": 0, "records_appended": 0,
                      "records_replayed": 0, "replay_errors": 0, "calls_without_wait": 0,
                      "lock_waits": 0}

    @property
    def manager(self) -> GroupManager:
        """The coordinator shard, made on its first use (see the module's docstring)."""
        mgr = self._manager
        return mgr if mgr is not None else self._make_manager()

    def _make_manager(self) -> GroupManager:
        from .manager import GroupConfig, GroupManager   # on first use (start-up, issue 32)
        cfg = self.broker.config
        config = GroupConfig.from_config(lambda k, d: _cfg_get(cfg, k, d))
        factory = self._member_id_factory
        kw = {} if factory is None else {"member_id_factory": factory}
        mgr = self._manager = GroupManager(config, **kw)
        # the consumer, streams and share parts are made on first use; this configures each
        mgr.part_setup = self._setup_part
        if self._started_mono is not None:
            # made after start(): the offsets expiry keeps the period it would have had from
            # there (its rounds so far found no offsets), and the timer task learns of it
            mgr.schedule_offsets_expiry(self._expiry_period_start(config))
            self._maybe_wake_timer()
        return mgr

    def _expiry_period_start(self, config) -> int:
        """The monotonic reading the current offsets expiry period began at, counted in
        whole periods from :meth:`start`."""
        now = self.monotonic_ms()
        period = config.offsets_retention_check_interval_ms
        if period <= 0 or now <= self._started_mono:
            return max(now, self._started_mono)
        return now - (now - self._started_mono) % period

    def _setup_part(self, name: str, part) -> None:
        cfg = self.broker.config
        part.group_configs = self._group_configs
        if name == "streams":
            # streams groups (KIP-1071): group.streams.* keys, GROUP streams.* overrides
            from .streams.config import StreamsGroupConfig
            part.streams_config = StreamsGroupConfig.from_broker(lambda k, d: _cfg_get(cfg, k, d))
        elif name == "share":
            from .share.config import ShareGroupConfig
            part.base_config = ShareGroupConfig.from_broker(lambda k, d: _cfg_get(cfg, k, d))

    # ------------------------------------------------------------------ lifecycle
    async def start(self, nursery: trio.Nursery | None = None) -> None:
        """Load the partitions of ``__consumer_offsets`` that exist and start the timer
        task in ``nursery`` (without one, timers only fire when :meth:`fire_timers` is
        called — for tests that drive time themselves)."""
        self._nursery = nursery
        async with self._locked:
            self._started_mono = self.monotonic_ms()
            if self._manager is not None:
                self._manager.schedule_offsets_expiry(self._started_mono)
        if nursery is not None:
            nursery.start_soon(self._timer_loop)
        await self.maybe_load()

    async def fire_timers(self) -> None:
        async with self._locked:
            if self._manager is None:
                return                  # nothing made yet, nothing due
            self._refresh_inputs()
            await self._drive(self.manager.fire_due(self.now_ms(), self.monotonic_ms()))

    async def shutdown(self) -> None:
        self.close()

    def close(self) -> None:
        """Answer every parked request with NOT_COORDINATOR (the client looks for the
        coordinator again) and stop the timer task. Synchronous: Broker.shutdown is."""
        self._closed = True
        if self._manager is not None:
            for slot, reply in self._manager.abort_parked(E.NOT_COORDINATOR):
                slot.set(reply)
        self._wake.set()

    def statistics(self) -> dict:
        return {**self.manager.statistics(), **self.stats}

    # ------------------------------------------------------------------ topic and load
    def _offsets_partitions(self) -> list[int] | None:
        image = self.broker.metadata
        topic = image.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return None
        me = self.broker.node_id
        return sorted(p for p, pi in topic.partitions.items() if pi.leader == me)

    async def ensure_offsets_topic(self) -> int:
        """FindCoordinator: create ``__consumer_offsets`` the first time a coordinator is
        looked up (as Kafka does) and load it. Returns an error code (0 = ready)."""
        if self._offsets_partitions() is None:
            results = await self.broker.controller.maybe_create_topics([OFFSETS_TOPIC])
            for r in results:
                if r.error_code and r.error_code != E.TOPIC_ALREADY_EXISTS:
                    log.warning("cannot create %s: %s", OFFSETS_TOPIC, r.error_message)
                    return E.COORDINATOR_NOT_AVAILABLE
        await self.maybe_load()
        return E.NONE

    async def maybe_load(self) -> None:
        """Replay every led ``__consumer_offsets`` partition not yet loaded."""
        parts = self._offsets_partitions()
        if parts is None:
            return
        topic = self.broker.metadata.topics[OFFSETS_TOPIC]
        todo = [p for p in parts if not self._loaded_or_loading(p)]
        if not todo:
            return
        mgr = self.manager
        # a topic created with another partition count decides where groups live
        mgr.config.num_partitions = len(topic.partitions)
        for p in todo:
            mgr.begin_load(p)
        for p in todo:
            await self._load_partition(p)
            await trio.sleep(0)          # let other requests in between partitions
        st = mgr.statistics()
        log.info("loaded %d partition(s) of %s: %d records, %d groups, %d committed offsets",
                 len(todo), OFFSETS_TOPIC, self.stats["records_replayed"], st["groups"],
                 st["committed_offsets"])

    def on_image(self, image) -> None:
        """Every published image (synchronously, from the Broker): a ``__consumer_offsets``
        partition this node no longer leads -- or leads in a new leader epoch -- is unloaded
        (another coordinator owns its groups now, and a later return of the leadership must
        replay the log again, not trust a stale memory); one it now leads is loaded by a
        task, as Kafka's coordinator does on election."""
        topic = image.topics.get(OFFSETS_TOPIC)
        me = self.broker.node_id
        mgr = self._manager
        for p in sorted(mgr.loaded) if mgr is not None else ():
            pi = topic.partitions.get(p) if topic is not None else None
            epoch = getattr(pi, "leader_epoch", 0)
            if pi is None or pi.leader != me or epoch != self._loaded_epoch.get(p, epoch):
                self._loaded_epoch.pop(p, None)
                for slot, reply in mgr.unload(p).replies:
                    slot.set(reply)
                log.info("unloaded %s-%d: no longer its leader", OFFSETS_TOPIC, p)
        if topic is None or self._nursery is None or self._closed:
            return
        if any(pi.leader == me and not self._loaded_or_loading(i)
               for i, pi in topic.partitions.items()):
            self._nursery.start_soon(self.maybe_load)

    def _loaded_or_loading(self, p: int) -> bool:
        mgr = self._manager
        return mgr is not None and (p in mgr.loaded or p in mgr.loading)

    async def _load_partition(self, p: int) -> None:
        async with self._locked:
            try:
                pi = self.broker.metadata.topics[OFFSETS_TOPIC].partitions.get(p)
                if pi is not None:
                    self._loaded_epoch[p] = getattr(pi, "leader_epoch", 0)
                part = self.broker.replicas.get_partition(OFFSETS_TOPIC, p)
            except Exception as exc:  # noqa: BLE001 - not led after all: stay unloaded
                log.warning("cannot load %s-%d: %s", OFFSETS_TOPIC, p, exc)
                self.manager.loading.discard(p)
                return
            for header, data in part.log.batches():
                if header.is_transactional:
                    self._replay_transactional(p, header, data)
                    continue
                if header.is_control:
                    continue
                try:
                    for r in wire_records.decode_records(data, 0, header):
                        self.manager.replay(r.key, r.value)
                        self.stats["records_replayed"] += 1
                except Exception:  # noqa: BLE001 - one bad record must not stop the load
                    self.stats["replay_errors"] += 1
                    log.exception("skipping unreadable record batch in %s-%d at %d",
                                  OFFSETS_TOPIC, p, header.base_offset)
            await self._drive(self.manager.complete_load(p, self.now_ms(), self.monotonic_ms()))
        log.debug("loaded %s-%d", OFFSETS_TOPIC, p)

    def _replay_transactional(self, p: int, header, data) -> None:
        """Offsets a transaction wrote are staged; its marker commits or drops them."""
        try:
            recs = wire_records.decode_records(data, 0, header)
            if header.is_control:
                if recs:
                    commit, _ = wire_records.parse_control_record(recs[0])
                    self.manager.complete_txn_offsets(header.producer_id, p, commit)
                return
            self.manager.replay_txn_offset_records(header.producer_id,
                                                   [(r.key, r.value) for r in recs])
        except Exception:  # noqa: BLE001 - one bad batch must not stop the load
            self.stats["replay_errors"] += 1
            log.exception("skipping unreadable transactional batch in %s-%d at %d",
                          OFFSETS_TOPIC, p, header.base_offset)

    # ------------------------------------------------------------------ driving the manager
    def _refresh_inputs(self) -> None:
        """What the consumer protocol reads of the cluster: the topics of the current
        metadata image (and, through the image, the GROUP config resources)."""
        image = self.broker.metadata
        if image is not self._image_seen:
            from .consumer.topics import TopicsView
            self._image_seen = image
            self.manager.set_topics(TopicsView.of_image(image))

    async def _call(self, fn: Callable[[int, int], Result]) -> Any:
        """``fn(now_ms, mono_ms)`` under the lock, driven to its response.

        When no call holds the lock or waits for it, the lock is taken without a
        scheduling point, so a request is decided when its connection task reads it, in
        the order requests arrive, as Kafka's coordinator takes them from its queue.
        (``trio.Lock.acquire`` yields even when the lock is free: every other connection
        task of the same scheduling round then parks behind the holder, and a burst of N
        requests becomes a queue of N calls, one per round, ahead of any timer that falls
        due meanwhile -- at a 1,000-member join, the 0 ms initial rebalance delay then
        completed only after most members had rejoined, and the stragglers forced a whole
        extra generation.) A call that must wait for the lock still queues in order."""
        await self._acquire(count=True)
        try:
            self._refresh_inputs()
            return await self._drive(fn(self.now_ms(), self.monotonic_ms()))
        finally:
            self._lock.release()

    async def _acquire(self, count: bool = False) -> None:
        """Take the lock: at once, without a scheduling point, when no task holds it or
        waits for it; else queued in order behind them. Every holder takes it so -- the
        calls, the timer task, a call taking it back once its records are replicated:
        ``trio.Lock.acquire`` yields *holding* the lock, and every task of that
        scheduling round that wants the coordinator then queues behind the holder, one
        per round (the timer of a join phase's 1 ms ticks did that to a 1,000-member
        join's requests at each tick)."""
        try:
            self._lock.acquire_nowait()  # fails while held (a released lock passes to its waiter)
        except trio.WouldBlock:
            self.stats["lock_waits"] += 1
            await self._lock.acquire()
        else:
            if count:
                self.stats["calls_without_wait"] += 1

    async def _drive(self, res: Result) -> Any:
        """Deliver replies, append records, run continuations; return the response.
        Called with the lock held; releases it while the records wait for the ISR."""
        response = res.response
        while True:
            for slot, reply in res.replies:
                slot.set(reply)
            if not res.records:
                break
            turns: list[tuple[int, trio.Event]] = []
            try:
                error = await self._append(res, turns)
                res = self.manager.after_append(res, error, self.now_ms(), self.monotonic_ms())
            finally:
                for p, mine in turns:
                    mine.set()
                    if self._applied.get(p) is mine:
                        del self._applied[p]
            if res.response is not None:
                response = res.response
        self._maybe_wake_timer()
        return response

    async def _append(self, res: Result, turns: list) -> int:
        """Append ``res.records`` (one batch per partition, under the lock), then -- with the
        lock released -- wait until the ISR has them and until the records appended before
        them on the same partitions were applied; returns holding the lock again.
        ``turns`` receives this append's (partition, event) to set once applied."""
        by_partition: dict[int, list] = {}
        now = self.now_ms()
        for r in res.records:
            by_partition.setdefault(r.partition, []).append((r.key, r.value, (), now))
        error = E.NONE
        waits: list[tuple[int, int]] = []          # (partition, required offset)
        before: list[trio.Event] = []
        for p, recs in by_partition.items():
            prev = self._applied.get(p)
            if prev is not None:
                before.append(prev)
            mine = self._applied[p] = trio.Event()
            turns.append((p, mine))
            try:
                batch = wire_records.build_batch(recs)
                appended = self.broker.replicas.append(OFFSETS_TOPIC, p, batch, required_acks=-1,
                                                       now_ms=now, allow_internal=True)
                waits.append((p, appended.last_offset + 1))
                self.stats["records_appended"] += len(recs)
            except Exception as exc:  # noqa: BLE001 - becomes the Kafka error clients see
                error = self._failed(p, exc)
        timeout_ms = int(self.broker.config.get("offsets.commit.timeout.ms") or 5000)
        failed: list[tuple[int, Exception]] = []

        async def replicated(p: int, required: int) -> None:
            # acks=all, as Kafka's coordinator: applied once the ISR has the records
            try:
                code = await self.broker.replicas.wait_replicated(OFFSETS_TOPIC, p, required,
                                                                  timeout_ms)
                if code:
                    from kbroker.replica import ReplicaError
                    raise ReplicaError(code)
                self.stats["appends"] += 1
            except Exception as exc:  # noqa: BLE001
                failed.append((p, exc))

        self._lock.release()
        try:
            async with trio.open_nursery() as nursery:
                for p, required in waits:
                    nursery.start_soon(replicated, p, required)
            for ev in before:
                await ev.wait()
        finally:
            with trio.CancelScope(shield=True):
                await self._acquire()
        for p, exc in failed:
            error = self._failed(p, exc)
        return error

    def _failed(self, p: int, exc: Exception) -> int:
        code = getattr(exc, "error_code", None)
        self.stats["append_errors"] += 1
        log.warning("append to %s-%d failed: %r", OFFSETS_TOPIC, p, exc)
        return int(code) if code is not None else E.UNKNOWN_SERVER_ERROR

    # ------------------------------------------------------------------ timers
    def _maybe_wake_timer(self) -> None:
        d = self._manager.next_deadline()
        if d is not None and d < self._sleeping_until:
            self._wake.set()

    async def _timer_loop(self) -> None:
        while not self._closed:
            d = self._manager.next_deadline() if self._manager is not None else None
            self._sleeping_until = math.inf if d is None else d
            # deadlines are monotonic readings; trio's clock is monotonic too
            wait = math.inf if d is None else max(0, d - self.monotonic_ms()) / 1000
            with trio.move_on_after(wait):
                await self._wake.wait()
            self._wake = trio.Event()
            # the requests read in the round the timer woke in go first, as Kafka's
            # expired timer queues its event behind the requests already received
            await trio.lowlevel.checkpoint()
            if self._manager is None:
                continue                # woken by close(): nothing was made, nothing is due
            async with self._locked:
                self._sleeping_until = -math.inf        # no wakeups needed while firing
                self._refresh_inputs()
                await self._drive(self.manager.fire_due(self.now_ms(), self.monotonic_ms()))

    # ------------------------------------------------------------------ API entry points
    async def join_group(self, req) -> Any:
        slot = Slot()
        await self._call(lambda now, mono: self.manager.join_group(req, slot, now, mono))
        return await slot.wait()

    async def sync_group(self, group_id, member_id, generation_id, group_instance_id,
                         protocol_type, protocol_name, assignments) -> Any:
        slot = Slot()
        await self._call(lambda now, mono: self.manager.sync_group(
            group_id, member_id, generation_id, group_instance_id, protocol_type,
            protocol_name, assignments, slot, now, mono))
        return await slot.wait()

    async def heartbeat(self, group_id, member_id, generation_id, group_instance_id) -> int:
        return await self._call(lambda now, mono: self.manager.heartbeat(
            group_id, member_id, generation_id, group_instance_id, now, mono))

    async def leave_group(self, group_id, members):
        return await self._call(lambda now, mono: self.manager.leave_group(group_id, members, now, mono))

    async def commit_offsets(self, group_id, member_id, generation_id, group_instance_id,
                             topics, *, retention_ms=-1, api_version=9):
        return await self._call(lambda now, mono: self.manager.commit_offsets(
            group_id, member_id, generation_id, group_instance_id, topics, now,
            retention_ms=retention_ms, api_version=api_version, mono_ms=mono))

    async def fetch_offsets(self, group_id, topics, require_stable=False, member_id=None,
                            member_epoch=-1):
        async with self._locked:
            return self.manager.fetch_offsets(group_id, topics, require_stable, member_id,
                                              member_epoch)

    async def delete_offsets(self, group_id, topics):
        return await self._call(lambda now, mono: self.manager.delete_offsets(group_id, topics, now, mono))

    async def delete_groups(self, group_ids):
        return await self._call(lambda now, mono: self.manager.delete_groups(group_ids, now, mono))

    async def list_groups(self, states=None, types=None):
        """[ListedGroup] (group id, protocol type, state, group type)."""
        async with self._locked:
            return self.manager.list_groups_typed(states, types)

    async def consumer_group_heartbeat(self, req):
        return await self._call(lambda now, mono: self.manager.consumer_group_heartbeat(req, now, mono))

    async def share_group_heartbeat(self, req):
        return await self._call(lambda now, mono: self.manager.share_group_heartbeat(req, now, mono))

    async def consumer_group_describe(self, group_ids):
        async with self._locked:
            self._refresh_inputs()
            return self.manager.consumer_group_describe(group_ids)

    async def streams_group_heartbeat(self, req):
        return await self._call(lambda now, mono: self.manager.streams_group_heartbeat(req, now, mono))

    async def streams_group_describe(self, group_ids):
        async with self._locked:
            self._refresh_inputs()
            return self.manager.streams_group_describe(group_ids)

    def _group_configs(self, group_id: str) -> dict:
        """The GROUP config resource of ``group_id`` in the metadata image (KIP-848)."""
        configs = getattr(self.broker.metadata, "group_configs", None)
        return dict(configs.get(group_id, {})) if configs else {}

    async def describe_groups(self, group_ids):
        async with self._locked:
            return [self.manager.describe_group(g) for g in group_ids]


def _cfg_get(cfg, key, default):
    try:
        v = cfg.get(key)
    except Exception:  # noqa: BLE001 - unknown key in a minimal config
        return default
    return default if v is None else v


def coordinator_of(broker) -> GroupCoordinator:
    """The broker's GroupCoordinator (``broker.group_coordinator``)."""
    gc = getattr(broker, "group_coordinator", None)
    if gc is None:
        raise RuntimeError("the broker has no group coordinator (Broker.start must create it)")
    return gc
