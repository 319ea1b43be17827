"""The trio driver of the Raft core: time, disk and network around ``RaftNode``.

One task (``run``) owns the node and loops: tick by the time that passed, process every
``Ready`` exactly in the core's order (``kbroker.raft.core`` docstring) — persist the quorum
state, the snapshot and the log (fsynced, ``RaftStorage``) *before* any message of that
``Ready`` leaves; then send; then hand committed entries to the state machine; then
``advance`` — and sleep until the next timer, an inbound message or a proposal.

Messages:

- inbound requests come from the controller listener's handlers (``handle_request``): the
  request is stepped into the core under a driver-chosen token (carried as the core's
  ``correlation_id``) and the handler waits for the core's response with that token, which
  the ``Ready`` processing routes back to it instead of the network;
- outbound requests become one task each that calls the peer over Kafka's wire
  (``RpcClient``; conversions in ``wire_map``) and steps the response into the core. A failed
  call is dropped: the core's own request timeout retries it.

Where requests go (KIP-853, as Kafka 4.3's ``KafkaRaftClient``): Vote, BeginQuorumEpoch and
EndQuorumEpoch go to the voter set's address of their destination (``controller.quorum.voters``,
or the latest ``VotersRecord``: ``rpc.endpoints``). Fetch and FetchSnapshot go to the leader
at the endpoint the leader *announced* -- BeginQuorumEpoch/EndQuorumEpoch v1
``LeaderEndpoints``, or the ``NodeEndpoints`` of a Vote, BeginQuorumEpoch, EndQuorumEpoch,
Fetch or FetchSnapshot answer naming it -- as Kafka's ``FollowerState`` holds it: the endpoint
known when the node starts following that leader in that epoch stays for the epoch (a later
announcement in the same epoch does not replace it), and without one (a v0 peer, a restart
into a known epoch) the voter set's address serves. Every announcement also goes to
``learn_endpoint``, which the metadata quorum sets. ``upgrade_kraft_version`` runs the core's
upgrade of a static quorum at this leader.

Pre-vote (KIP-996) is on between nodes: a prospective's ``VoteRequest`` goes out as Vote v2
with ``PreVote=true`` and changes nothing on the receiver, which refuses it while it still
fetches from a live leader (so a voter that was partitioned away and comes back no longer
forces a new epoch).

Operators' view: trouble with a peer is one WARNING line with the fix when it starts — the
peer cannot be reached, or it refuses with an error (top-level, or inside the partition as a
Vote refused with INCONSISTENT_VOTER_SET or INVALID_VOTER_KEY) — and one INFO line when it
ends; never a line per retry. The receiving side names the same misconfigurations in
``kbroker.controller_server._raft_rpc``.

The state machine (``kbroker.metadata.quorum``) is called synchronously on the trio
thread: ``apply_snapshot(snapshot)``, ``apply(entries)``, ``snapshot_bytes()`` and
``on_role_change(role_change)``.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import random

import trio

from kbroker.wire.error_codes import ErrorCode

from . import messages as m
from .core import NotLeader, RaftNode, Ready
from .state import RaftConfig, Role
from .storage import RaftStorage
from .transport import RpcClient
from . import wire_map
from .wire_map import (BEGIN_QUORUM_EPOCH, END_QUORUM_EPOCH, FETCH, FETCH_SNAPSHOT, OUTBOUND,
                       VERSIONS, VOTE, NotForRaft, is_response, source_of)

log = logging.getLogger("kbroker.raft")

_UNREACHABLE = -1                # the "error code" of a peer that does not answer
_API_NAMES = {VOTE: "Vote", BEGIN_QUORUM_EPOCH: "BeginQuorumEpoch", END_QUORUM_EPOCH: "EndQuorumEpoch",
              FETCH: "Fetch", FETCH_SNAPSHOT: "FetchSnapshot"}
# refusals that only a configuration change ends: named to the operator once, with the fix
_MISCONFIGURED = frozenset({ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.INCONSISTENT_VOTER_SET,
                            ErrorCode.INVALID_VOTER_KEY})


class _Slot:
    __slots__ = ("event", "value")

    def __init__(self):
        self.event = trio.Event()
        self.value = None


class RaftDriver:
    def __init__(self, node_id: int, voters, storage: RaftStorage, config: RaftConfig,
                 state_machine, *, rpc: RpcClient | None = None, cluster_id: str | None = None,
                 rng: random.Random | None = None, wall_clock=None, bootstrap_ids=(),
                 directory_id: str | None = None, endpoints=()):
        self.node_id = node_id
        self.voters = frozenset(voters)
        self.storage = storage
        self.config = config
        self.state_machine = state_machine
        self.rpc = rpc or RpcClient(client_id=f"kbroker-raft-{node_id}")
        self.cluster_id = cluster_id
        self._rng = rng or random.Random()
        self._wall = wall_clock
        view = storage.load()
        self.node = RaftNode(node_id, self.voters, view, config, self._rng, bootstrap_ids=bootstrap_ids,
                             directory_id=directory_id, endpoints=endpoints)
        self.discover = None            # async fn(node id): learn an endpoint (dynamic quorum)
        # fn(node id, (host, port)): a leader announced where it is (on this node's listener)
        self.learn_endpoint = None
        # the controller listener this node calls voters on (the first of
        # controller.listener.names): which of a leader's LeaderEndpoints applies here
        self.listener_name: str | None = None
        # announced leader endpoints by (epoch, leader id), and the one this node fetches from:
        # ((epoch, leader id), (host, port) or None for the voter set's address)
        self._announced: dict[tuple[int, int], tuple[str, int]] = {}
        self._fetch_from: tuple[tuple[int, int], tuple[str, int] | None] | None = None
        self._voter_infos = self.node.voter_infos
        self._wake = trio.Event()
        self._waiters: dict[tuple[int, int], _Slot] = {}
        self._token = 0
        self._nursery: trio.Nursery | None = None
        self._applied_event = trio.Event()
        self._role_event = trio.Event()
        self._started_at = self._last_tick = 0.0
        self.leader_hw_seen = -1        # HW of the last good Fetch answer (follower/observer)
        self.fetch_answers = 0          # good Fetch answers received (catch-up tracking)
        self.stats = {"readies": 0, "sent": 0, "send_failures": 0, "inbound": 0,
                      "inbound_timeouts": 0, "applied_entries": 0}
        # peer -> {error code logged, or (_UNREACHABLE, announced address or None): on API}
        self._problems: dict[int, dict[object, str]] = {}

    # ------------------------------------------------------------------ views
    @property
    def leader_id(self) -> int:
        n = self.node
        return n.leader_id if n.role in (Role.LEADER, Role.FOLLOWER) else -1

    @property
    def epoch(self) -> int:
        return self.node.epoch

    @property
    def is_leader(self) -> bool:
        return self.node.role is Role.LEADER

    @property
    def applied_offset(self) -> int:
        return self.node.applied_offset

    def wall_ms_of(self, logical_ms: int | None) -> int:
        """A core timestamp (ms since the driver started) as wall-clock ms, -1 if unknown."""
        if logical_ms is None or self._wall is None:
            return -1
        return self._wall() - (self.node.now - logical_ms)

    # ------------------------------------------------------------------ run
    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._started_at = self._last_tick = trio.current_time()
            self._process()
            task_status.started(self)
            try:
                while True:
                    self._sync_time()
                    self._process()
                    wait = self.node.time_until_next_timer()
                    timeout = math.inf if wait is None else max(wait, 1) / 1000
                    with trio.move_on_after(timeout):
                        await self._wake.wait()
                    self._wake = trio.Event()
            finally:
                self._nursery = None
                nursery.cancel_scope.cancel()

    def _sync_time(self) -> None:
        """Tick the core up to now. Done before every step/propose too: the core stamps
        deadlines with its own clock, which must not lag behind a long sleep."""
        now = trio.current_time()
        elapsed = int((now - self._last_tick) * 1000)
        if elapsed > 0:
            self.node.tick(elapsed)
            self._last_tick += elapsed / 1000

    def wake(self) -> None:
        self._wake.set()

    def _process(self) -> None:
        node = self.node
        while node.has_ready():
            rd = node.ready()
            self.stats["readies"] += 1
            try:
                self._persist(rd)
            except BaseException:
                log.critical("could not persist the metadata log; stopping", exc_info=True)
                raise
            for dest, msg in rd.messages:
                self._dispatch(dest, msg)
            if rd.apply_snapshot is not None:
                self.state_machine.apply_snapshot(rd.apply_snapshot)
            if rd.committed:
                self.stats["applied_entries"] += len(rd.committed)
                self.state_machine.apply(rd.committed)
            node.advance(rd)
            if node.voter_infos is not self._voter_infos:
                self._voter_infos = node.voter_infos
                log.info("raft: node %d: voters are now %s", self.node_id, sorted(node.voters))
                hook = getattr(self.state_machine, "on_voters", None)
                if hook is not None:
                    hook(node.voter_infos)
            if rd.committed or rd.apply_snapshot is not None:
                self._applied_event.set()
                self._applied_event = trio.Event()
            if rd.role_change is not None:
                log.info("raft: node %d is %s in epoch %d (leader %d)", self.node_id,
                         rd.role_change.role.value, rd.role_change.epoch, rd.role_change.leader_id)
                self.state_machine.on_role_change(rd.role_change)
                self._role_event.set()
                self._role_event = trio.Event()
            if rd.should_snapshot and node.applied_offset > node.log.start_offset:
                try:
                    node.create_snapshot(node.applied_offset, self.state_machine.snapshot_bytes())
                except ValueError:
                    log.debug("snapshot skipped", exc_info=True)
        # committed-but-not-yet-activated leaders become "ready" after an advance
        if node.leader_ready and not getattr(self, "_ready_reported", False):
            self._ready_reported = True
            self._role_event.set()
            self._role_event = trio.Event()
        elif not node.leader_ready:
            self._ready_reported = False

    def _persist(self, rd: Ready) -> None:
        st = self.storage
        if rd.persist_state is not None:
            st.persist_state(rd.persist_state)
        if rd.snapshot is not None:
            st.write_snapshot(rd.snapshot)
        if rd.reset_log_to is not None:
            st.reset_to(rd.reset_log_to)
        if rd.truncate_to is not None:
            st.truncate_to(rd.truncate_to, self.node.log)
        if rd.append_entries:
            st.append_entries(rd.append_entries)
        st.sync_directory()          # one fsync for the directory entries of the whole Ready
        if rd.log_start_offset is not None:
            st.delete_before(rd.log_start_offset)

    # ------------------------------------------------------------------ messages
    def _dispatch(self, dest: int, msg) -> None:
        if is_response(msg):
            slot = self._waiters.pop((dest, msg.correlation_id), None)
            if slot is not None:
                slot.value = msg
                slot.event.set()
            return
        if dest == self.node_id:
            return
        if self._nursery is None:
            return
        # decided now, in the state that made the request (the task starts later)
        addr = self._fetch_address(dest) if isinstance(msg, (m.FetchRequest, m.FetchSnapshotRequest)) else None
        self._nursery.start_soon(self._send_request, dest, msg, addr)

    def _fetch_address(self, dest: int) -> tuple[str, int] | None:
        """Where a Fetch/FetchSnapshot to ``dest`` goes: the endpoint its leader announced, fixed
        when this node started following it in this epoch (Kafka's ``FollowerState``), or None
        for the voter set's address (not following ``dest``, or nothing announced)."""
        node = self.node
        if node.role is not Role.FOLLOWER or dest != node.leader_id:
            return None
        key = (node.epoch, dest)
        known = dest in getattr(self.rpc, "endpoints", {})
        if self._fetch_from is None or self._fetch_from[0] != key or (
                self._fetch_from[1] is None and not known and key in self._announced):
            # a new leader or epoch; or (as Kafka's "more endpoints than known") a leader the
            # voter set has no address for, announced after this node began following it
            addr = self._announced.get(key)
            self._fetch_from = (key, addr)
            self._announced = {k: v for k, v in self._announced.items() if k[0] >= node.epoch}
            if addr is not None:
                log.info("raft: node %d fetches from leader %d at the endpoint it announced, %s:%d "
                         "(epoch %d)", self.node_id, dest, addr[0], addr[1], node.epoch)
        return self._fetch_from[1]

    def _announce(self, leader: int, epoch: int, addr: tuple[str, int]) -> None:
        """``leader`` is at ``addr`` in ``epoch``: the first word for that epoch is kept."""
        if leader < 0 or leader == self.node_id or epoch < self.node.epoch:
            return
        if (epoch, leader) not in self._announced:
            self._announced = {k: v for k, v in self._announced.items() if k[0] >= self.node.epoch}
            self._announced[(epoch, leader)] = addr
        if self.learn_endpoint is not None:
            self.learn_endpoint(leader, addr)

    async def _send_request(self, dest: int, msg, addr: tuple[str, int] | None = None) -> None:
        api_key, to_wire, from_wire = OUTBOUND[type(msg)]
        timeout = self.config.request_timeout_ms / 1000
        if isinstance(msg, m.FetchRequest):
            timeout += msg.max_wait_ms / 1000
        self.stats["sent"] += 1
        if addr is None and dest not in getattr(self.rpc, "endpoints", {}) and self.discover is not None:
            await self.discover(dest)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("raft: node %d -> %d%s: %s", self.node_id, dest,
                      f" at {addr[0]}:{addr[1]}" if addr else "", msg)
        body = to_wire(msg, self.cluster_id)
        if addr is not None:
            resp = await self.rpc.call_addr(addr, api_key, VERSIONS[api_key], body, timeout)
        else:
            resp = await self.rpc.call(dest, api_key, VERSIONS[api_key], body, timeout)
        api = _API_NAMES.get(api_key, str(api_key))
        if resp is None:
            self.stats["send_failures"] += 1
            self._peer_problem(dest, (_UNREACHABLE, addr), api, self._unreachable(dest, addr))
            return
        top = getattr(resp, "error_code", 0)
        if top and not getattr(resp, "topics", None):
            self.stats["send_failures"] += 1
            self._peer_answers(dest, api, top, addr)
            self._peer_problem(dest, top, api, self._refusal(dest, top, api))
            return
        try:
            core_resp = from_wire(resp, msg.correlation_id)
        except (NotForRaft, ValueError) as e:
            self.stats["send_failures"] += 1
            log.warning("raft: bad answer from node %d to %s: %s", dest, type(msg).__name__, e)
            return
        self._learn(core_resp, wire_map.learned_endpoints(resp))
        # A Vote is refused for the voter set or the voter key inside its partition (Kafka
        # 4 answers INVALID_VOTER_KEY there, kbroker's core INCONSISTENT_VOTER_SET): the
        # answer still goes to the core (it carries the leader), the operator gets one line.
        code = getattr(core_resp, "error_code", 0)
        code = code if code in _MISCONFIGURED else m.NONE
        self._peer_answers(dest, api, code, addr)
        if code:
            self._peer_problem(dest, code, api, self._refusal(dest, code, api))
        if isinstance(core_resp, m.FetchResponse) and core_resp.error_code == m.NONE:
            self.fetch_answers += 1
            self.leader_hw_seen = max(self.leader_hw_seen, core_resp.high_watermark)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("raft: node %d <- %d: %s", self.node_id, dest, core_resp)
        self._sync_time()
        self.node.step(dest, core_resp)
        self.wake()

    # ------------------------------------------------------------------ operators' view
    def _endpoint(self, dest: int) -> str:
        addr = getattr(self.rpc, "endpoints", {}).get(dest)
        return f"{addr[0]}:{addr[1]}" if addr else "an unknown address"

    def _unreachable(self, dest: int, announced: tuple[str, int] | None = None) -> str:
        addr = announced or getattr(self.rpc, "endpoints", {}).get(dest)
        why = getattr(self.rpc, "last_error", {}).get(addr, "no answer")
        if announced is not None:
            return (f"cannot reach leader {dest} at {announced[0]}:{announced[1]}, the endpoint it "
                    f"announced ({why}): check that node {dest} runs and that its advertised "
                    "controller listener is reachable from this node")
        return (f"cannot reach voter {dest} at {self._endpoint(dest)} ({why}): check that node "
                f"{dest} runs and that controller.quorum.voters names its controller listener")

    def _refusal(self, dest: int, code: int, api: str) -> str:
        name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
        fix = {
            "INCONSISTENT_CLUSTER_ID": f"it belongs to another cluster than this node's "
                                       f"{self.cluster_id}: format every node with the same id "
                                       "(`kbroker storage format -t <id> -c server.properties`)",
            "INCONSISTENT_VOTER_SET": f"node {dest}'s controller.quorum.voters does not list this "
                                      f"node {self.node_id} as a voter: give every node the same "
                                      "controller.quorum.voters",
            "INVALID_VOTER_KEY": f"the node at {self._endpoint(dest)} is not node {dest}: check its "
                                 f"node.id and this node's controller.quorum.voters entry for {dest}",
        }.get(name, "see that node's log")
        return f"voter {dest} at {self._endpoint(dest)} refused with {name} ({api}): {fix}"

    def _peer_problem(self, dest: int, code, api: str, problem: str) -> None:
        """One WARNING line when a trouble with a peer starts: it cannot be reached
        (``(_UNREACHABLE, address)``: at its voters entry, None, or at the endpoint it
        announced as leader, each on its own) or it refuses with error ``code`` — never a
        line per retry, nor when only the socket's reason or the refused API changes."""
        peer = self._problems.setdefault(dest, {})
        if code in peer:
            return
        peer[code] = api
        log.warning("raft: %s", problem)

    def _peer_answers(self, dest: int, api: str, code: int = m.NONE,
                      addr: tuple[str, int] | None = None) -> None:
        """``dest`` answered ``api`` (refusing with ``code``, or NONE) at ``addr`` (its
        announced endpoint, or None: its voters entry): it is reachable there -- an answer at
        one address says nothing of the other, so a leader whose voters entry answers while
        its announced endpoint does not is named once, not once per round -- and a refusal
        that came on ``api`` with another code is over (one INFO line each). An answer to
        another API ends no refusal: a voter that refuses our votes for its voter set may
        still serve our fetches."""
        peer = self._problems.get(dest)
        if not peer:
            return
        if peer.pop((_UNREACHABLE, addr), None) is not None:
            where = f"{addr[0]}:{addr[1]}" if addr else self._endpoint(dest)
            log.info("raft: voter %d at %s answers again", dest, where)
        for old, on in list(peer.items()):
            if on == api and old != code and not isinstance(old, tuple):   # refusals only
                del peer[old]
                log.info("raft: voter %d at %s accepts %s again", dest, self._endpoint(dest), api)

    def _learn(self, core_resp, endpoints: dict[int, tuple[str, int]]) -> None:
        """A response's NodeEndpoints (on the listener this node called: the controller's):
        the entry of the leader the response names, in the epoch it names (Kafka reads only
        that one)."""
        current = getattr(core_resp, "current_leader", None)
        leader, epoch = (current.leader_id, current.leader_epoch) if current is not None else \
            (getattr(core_resp, "leader_id", -1), getattr(core_resp, "leader_epoch", -1))
        if leader in endpoints:
            self._announce(leader, epoch, endpoints[leader])

    async def handle_request(self, msg, timeout: float | None = None):
        """Step an inbound request; the core's answer, or None if it gave none in time."""
        self.stats["inbound"] += 1
        self._token += 1
        msg = dataclasses.replace(msg, correlation_id=self._token)
        src = source_of(msg)
        # BeginQuorumEpoch/EndQuorumEpoch v1: the leader's endpoint on this node's listener,
        # noted before the core steps (the step may make this node its follower)
        for name, host, port in getattr(msg, "leader_endpoints", ()):
            if self.listener_name is None or name.upper() == self.listener_name.upper():
                self._announce(src, msg.leader_epoch, (host, port))
                break
        slot = _Slot()
        key = (src, self._token)
        self._waiters[key] = slot
        if timeout is None:
            timeout = self.config.request_timeout_ms / 1000
            if isinstance(msg, m.FetchRequest):
                timeout += msg.max_wait_ms / 1000
        try:
            self._sync_time()
            self.node.step(src, msg)
            self.wake()
            with trio.move_on_after(timeout):
                await slot.event.wait()
        finally:
            self._waiters.pop(key, None)
        if slot.value is None:
            self.stats["inbound_timeouts"] += 1
        return slot.value

    # ------------------------------------------------------------------ proposals
    def propose(self, payloads: list[bytes]) -> int | NotLeader:
        """Append records (leader only); returns the offset of the last one."""
        self._sync_time()
        result = self.node.propose(payloads)
        if not isinstance(result, NotLeader):
            self.wake()
        return result

    async def wait_applied(self, offset: int, epoch: int) -> bool:
        """Wait until the record at ``offset`` (proposed in ``epoch``) is committed and
        applied; False when this node stopped leading ``epoch`` first (it may never commit)."""
        while self.node.applied_offset <= offset:
            if self.node.epoch != epoch or self.node.role is not Role.LEADER:
                return False
            await self._applied_event.wait()
        if self.node.epoch == epoch and self.node.role is Role.LEADER:
            return True         # a leader never truncates its own log
        # Leadership moved while we waited (a role change does not wake this wait): the
        # offset may now hold another leader's record, ours having been truncated. Ours
        # committed only if the record there still carries our epoch.
        log_ = self.node.log
        if offset < log_.start_offset:
            return False        # in a snapshot now: unknown, say not committed (callers retry)
        return log_.entry(offset).epoch == epoch

    async def wait_applied_to(self, offset: int) -> None:
        while self.node.applied_offset < offset:
            await self._applied_event.wait()

    async def wait_role_change(self) -> None:
        await self._role_event.wait()

    async def wait_applied_change(self) -> None:
        await self._applied_event.wait()

    async def change_voters(self, op: str, *args, timeout: float = 30.0,
                            ack_when_committed: bool = True) -> int:
        """A KIP-853 voter change at this leader (``op``: ``add_voter``, ``remove_voter``,
        ``update_voter`` of the core): the error code to answer with. A new voter that is not
        caught up yet is waited for until ``timeout`` (then REQUEST_TIMED_OUT, as Kafka);
        otherwise the answer waits until the VotersRecord is committed."""
        from .core import CATCHING_UP
        deadline = trio.current_time() + max(0.1, timeout)
        while True:
            self._sync_time()
            err, offset = getattr(self.node, op)(*args)
            if err != CATCHING_UP:
                break
            if trio.current_time() >= deadline:
                return m.REQUEST_TIMED_OUT
            await trio.sleep(0.05)
        if err or offset < 0:
            return err
        epoch = self.node.epoch
        self.wake()
        if not ack_when_committed:
            return m.NONE
        while trio.current_time() < deadline:
            node = self.node
            if node.log.start_offset <= offset < node.log.end_offset and node.log.entry(offset).epoch != epoch:
                return m.NOT_LEADER_OR_FOLLOWER        # truncated by a new leader
            if node.high_watermark > offset:
                return m.NONE                          # committed (the leader may have resigned)
            if node.epoch != epoch and node.leader_id != self.node_id and offset >= node.log.end_offset:
                return m.NOT_LEADER_OR_FOLLOWER
            await trio.sleep(0.02)
        return m.REQUEST_TIMED_OUT

    def upgrade_kraft_version(self, epoch: int, version: int, validate_only: bool):
        """``RaftNode.upgrade_kraft_version`` at this leader (an ``UpgradeResult``)."""
        self._sync_time()
        result = self.node.upgrade_kraft_version(epoch, version, validate_only)
        if result.offset >= 0:
            log.info("raft: node %d: kraft.version %d written at offset %d (voters %s)", self.node_id,
                     version, result.offset, sorted(self.node.voters))
            self.wake()
        return result

    def resign(self) -> None:
        self._sync_time()
        self.node.resign()
        self.wake()

    def statistics(self) -> dict:
        out = dict(self.stats)
        out.update(self.node.statistics())
        out["storage"] = self.storage.statistics()
        return out
