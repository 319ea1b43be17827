"""The pure KRaft-style Raft core: ticks and messages in, a ``Ready`` out.

No I/O, no clock, no global randomness (the design's rule 1 and 8): logical time advances only
through ``tick(ms)``, randomness comes from the ``random.Random`` handed in, and everything the
outside world must do is returned in a ``Ready``. The protocol is Kafka's KRaft (KIP-595, with
KIP-630 snapshots and KIP-996 pre-vote), in the API style of etcd's ``RawNode``.

Driver contract (a trio driver, or the test simulator, does exactly this in a loop)::

    node = RaftNode(node_id, voters, storage_view, config, random.Random(seed))
    loop:
        node.tick(elapsed_ms)              # whenever time passed; time_until_next_timer() says when
        node.step(source_id, message)      # every message that arrived
        node.propose([payload, ...])       # application writes (leader only; NotLeader otherwise)
        if node.has_ready():
            rd = node.ready()
            1. persist rd.persist_state (the quorum-state file) durably
            2. persist rd.snapshot durably (if any)
            3. if rd.reset_log_to is not None: empty the log, next offset = rd.reset_log_to
            4. if rd.truncate_to is not None: drop records at offsets >= rd.truncate_to
            5. append rd.append_entries and flush
            6. optional: delete records below rd.log_start_offset (a snapshot now covers them)
            7. only now send rd.messages  [(destination_id, message)]  -- persist before send
            8. load rd.apply_snapshot into the state machine (if any), then apply rd.committed
            9. node.advance(rd)
        if the application wants (rd.should_snapshot hints it): node.create_snapshot(offset, data)

At most one ``Ready`` is outstanding: call ``advance`` before the next ``ready``; ``step``,
``tick`` and ``propose`` are allowed in between. A crash between ``ready`` and the end of step 5
loses that ``Ready`` entirely — that is fine, because nothing of it was sent. On restart the
driver builds a new ``RaftNode`` from what is on disk (``StorageView``).

Rules kept (checked by ``tests/raft/sim.py`` after every simulated event):
- the quorum state (epoch, voted id, leader id) is persisted before any vote is answered, so a
  vote is granted at most once per epoch even across crashes;
- followers replicate by fetching; the leader validates (fetch offset, last fetched epoch) and
  answers with a diverging epoch (follower truncates) or a snapshot id (follower fetches it);
- the leader writes a control record at the start of its epoch, and the high watermark
  advances only to offsets a majority of voters has durably fetched *and* past that record,
  i.e. over records of the leader's own epoch (Raft's figure-8 rule);
- the high watermark never decreases; truncation never goes below it;
- a leader that sees no fetch from a majority for 1.5 x fetch timeout resigns (check quorum);
- a follower that has not fetched successfully for ``fetch_timeout_ms`` starts an election
  (as a prospective asking pre-votes when ``pre_vote`` is on).

Dynamic quorum (KIP-853, ``kraft.version`` 1): when the snapshot or the log holds a
``VotersRecord`` (control type 6), the voter set is the one of the *latest* such record in
the log, committed or not (a truncation that drops it reverts to the one before), and the
static ``voters`` handed in are ignored. The leader changes it with ``add_voter``,
``remove_voter`` and ``update_voter``, one change at a time: only once it has committed a
record of its own epoch, only while no earlier change is uncommitted, and a new voter only
once it fetches as an observer and has caught up to the high watermark. A leader that
removed itself leads until that change commits, counting only the new set, then resigns.
A replica with no voter set yet (joining with ``controller.quorum.bootstrap.servers``)
fetches as an observer from ``bootstrap_ids`` (pseudo ids the driver maps to addresses).

Upgrading a static quorum (``kraft.version`` 0 → 1, KAFKA-16538, as Kafka 4.3's
``LeaderState``): a leader of a static quorum keeps, in memory only, the voter set it would
write — the static voters with unknown directory ids and ``kraft.version`` range 0-0, its own
entry (directory id, ``endpoints``, 0-1) filled in at once. Each voter sends UpdateRaftVoter
to every new leader (``update_voter``), which fills in its entry. ``upgrade_kraft_version``
then checks that the set has the same voter ids as the static one, that every voter supports
the new level and that every directory id is known, and appends one control batch: a
``KRaftVersionRecord`` (level 1) and the ``VotersRecord`` of that set. From that record on
the quorum is dynamic (same ids, so the same majorities); a truncation that drops it makes
it static again, and the next leader collects the voters anew.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import messages as m
from .control import (KRAFT_VERSION, VOTERS, ZERO_UUID, Voter, decode_voters, kraft_version_value,
                      leader_change_value, snapshot_prefix, snapshot_voters, voters_value)
from .log import FetchValidation, RaftLog, joined_to_next
from .messages import NO_LEADER, Entry, LeaderIdAndEpoch, OffsetAndEpoch
from .state import QuorumState, RaftConfig, Role, Snapshot, StorageView

if TYPE_CHECKING:  # randomness is always the injected instance, never the module
    from random import Random

RETRY_BACKOFF_BASE_MS = 50
CATCHING_UP = -1   # add_voter: the new voter does not fetch or lags; ask again later


@dataclass(frozen=True, slots=True)
class NotLeader:
    """``propose`` on a replica that is not the active leader; hints where the leader is."""

    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class RoleChange:
    """A change of this node's Raft role, reported by ``ready()``."""
    role: Role
    epoch: int
    leader_id: int


@dataclass(slots=True)
class Ready:
    """Everything the driver must do, in the order of the module docstring."""

    persist_state: QuorumState | None = None
    snapshot: Snapshot | None = None
    reset_log_to: int | None = None
    truncate_to: int | None = None
    append_entries: list[Entry] = field(default_factory=list)
    log_start_offset: int | None = None
    messages: list[tuple[int, object]] = field(default_factory=list)
    apply_snapshot: Snapshot | None = None
    committed: list[Entry] = field(default_factory=list)
    high_watermark: int = 0
    role_change: RoleChange | None = None
    should_snapshot: bool = False
    log_end_offset: int = 0  # the log's end once this Ready is persisted


@dataclass(frozen=True, slots=True)
class UpgradeResult:
    """``upgrade_kraft_version``'s answer: Kafka's error code and message, and the offset of
    the ``VotersRecord`` written (-1: nothing written — refused, validate-only or no change)."""

    error_code: int = m.NONE
    message: str | None = None
    offset: int = -1


def _kv(level: int) -> str:
    return f"KRAFT_VERSION_{level}"      # how Kafka's messages name a kraft.version level


@dataclass(slots=True)
class _ReplicaState:
    """Leader's view of one other replica."""

    end_offset: int = 0
    last_fetch_ms: int | None = None
    high_watermark_sent: int = -1
    directory_id: str | None = None   # as its last Fetch named it (KIP-853 ReplicaDirectoryId)


class RaftNode:
    """One replica of the metadata quorum (a voter, or an observer if not in ``voters``).

    Invariants: ``epoch`` never decreases; at most one vote per epoch (``voted_id``); a leader
    only in an epoch it won; ``high_watermark`` never decreases and never passes records the
    node does not hold in agreement with the leader.
    """

    def __init__(self, node_id: int, voters, storage: StorageView | None = None,
                 config: RaftConfig | None = None, rng: "Random | None" = None,
                 bootstrap_ids=(), directory_id: str | None = None, endpoints=()) -> None:
        if rng is None:
            raise ValueError("inject a random.Random instance (no global randomness)")
        storage = storage or StorageView()
        self.node_id = node_id
        self.directory_id = directory_id   # this replica's metadata log dir id (meta.properties)
        # its own controller listener(s) ((name, host, port), ...): announced as a leader
        # (BeginQuorumEpoch v1) and written for itself when a static quorum is upgraded
        self.endpoints = tuple(endpoints)
        self._static_voters = frozenset(voters)
        self._bootstrap_ids = tuple(bootstrap_ids)
        self.config = config or RaftConfig()
        self._rng = rng
        self.now = 0
        self.log = RaftLog(storage.snapshot, storage.entries)
        self._base_voters = snapshot_voters(storage.snapshot.data) if storage.snapshot else None
        self._voter_history: list[tuple[int, dict[int, Voter]]] = []
        for e in self.log.entries(self.log.start_offset, self.log.end_offset):
            self._note_voters_entry(e)
        self._refresh_voters()

        qs = storage.quorum_state
        self.epoch = qs.leader_epoch
        self.voted_id = qs.voted_id
        self.leader_id = qs.leader_id
        self._persisted = qs
        self.high_watermark = self.log.start_offset  # a snapshot only ever covers committed records
        self._applied = self.log.start_offset
        self._pending_apply_snapshot = storage.snapshot

        # bookkeeping that mirrors the in-memory log into Ready's
        self._written_end = self.log.end_offset
        self._pending_truncate: int | None = None
        self._pending_reset: int | None = self.log.start_offset if self.log.inconsistent_on_load else None
        self._pending_snapshot: Snapshot | None = None
        self._pending_log_start: int | None = None
        self._outbox: list[tuple[int, object]] = []
        self._ready_outstanding = False
        self._reported_role: RoleChange | None = None
        self._bytes_since_snapshot = 0

        # A restarted replica must not match a response meant for its previous life: start the
        # correlation ids at a random 48-bit base (a TCP driver gets this for free).
        self._next_correlation = rng.getrandbits(48)
        self.role = Role.UNATTACHED
        self.dynamic_changes = 0
        self._retries = 0          # failed elections in a row (exponential backoff)
        self._reset_role_fields()
        self.stats = {k: 0 for k in (
            "elections_started", "pre_vote_rounds", "times_leader", "votes_granted",
            "pre_votes_granted", "messages_in", "messages_out", "fetches_served", "truncations",
            "snapshots_created", "snapshots_installed", "resignations", "stale_responses",
            "conflicting_leader_claims", "proposals", "voter_changes")}

        if self.is_voter and self.voters == {self.node_id}:
            # The only voter: nobody else can win or refuse, so it elects itself at once (a
            # one-node quorum is the leader as soon as it starts, as Kafka's is).
            self._become_unattached(self.epoch)
            self._start_election()
        elif self.leader_id == self.node_id:
            # A leader that restarts lost its volatile leader state: it resigns (as Kafka does).
            self._become_resigned()
        elif self.leader_id != NO_LEADER:
            self._become_follower(self.epoch, self.leader_id)
        else:
            self._become_unattached(self.epoch)

    # =============================================================== public API

    def tick(self, ms: int) -> None:
        """Advance logical time by ``ms`` and fire whatever timers expired."""
        if ms < 0:
            raise ValueError("time does not go backwards")
        self.now += ms
        self._fire_timers()

    def step(self, source_id: int, message) -> None:
        """Handle one message from replica ``source_id``."""
        self.stats["messages_in"] += 1
        name = self._handlers.get(type(message))
        if name is None:
            raise TypeError(f"not a raft message: {type(message).__name__}")
        getattr(self, name)(source_id, message)
        self._fire_timers()

    def propose(self, records: list[bytes]) -> int | NotLeader:
        """Append ``records`` in the current epoch; returns the offset of the last one."""
        if self.role is not Role.LEADER:
            return NotLeader(self.leader_id, self.epoch)
        for payload in records:
            self.log.append(Entry(self.log.end_offset, self.epoch, bytes(payload)))
        self.stats["proposals"] += len(records)
        return self.log.end_offset - 1

    def create_snapshot(self, end_offset: int, data: bytes) -> Snapshot:
        """The application serialized its state after applying every record below
        ``end_offset`` (which must already be delivered as committed)."""
        if not (self.log.start_offset < end_offset <= self._applied):
            raise ValueError(f"snapshot end {end_offset} must be in ({self.log.start_offset}, {self._applied}]")
        at = self._voters_at(end_offset)
        if at is not None:   # a dynamic quorum's snapshot carries its voter set (KIP-853)
            data = snapshot_prefix(at.values()) + bytes(data)
        snap = Snapshot(OffsetAndEpoch(end_offset, self.log.epoch_before(end_offset)), bytes(data))
        self.log.compact(snap)
        self._pending_snapshot = snap
        self._pending_log_start = end_offset
        self._bytes_since_snapshot = 0
        self.stats["snapshots_created"] += 1
        return snap

    def resign(self) -> None:
        """Graceful shutdown of a leader: hand leadership over (EndQuorumEpoch)."""
        if self.role is Role.LEADER:
            self._become_resigned()

    # ------------------------------------------------------------ dynamic quorum (KIP-853)

    @property
    def dynamic(self) -> bool:
        """``kraft.version`` 1: the voter set lives in the log."""
        return self.voter_infos is not None

    @property
    def kraft_version(self) -> int:
        """The finalized ``kraft.version``: 1 once the log (or snapshot) holds a voter set."""
        return 1 if self.voter_infos is not None else 0

    def local_voter(self) -> Voter:
        """This replica as a voter entry (what UpdateRaftVoter says about it)."""
        return Voter(self.node_id, self.directory_id or ZERO_UUID, self.endpoints, 0, 1)

    @property
    def upgrade_voters(self) -> dict[int, Voter] | None:
        """Leader of a static quorum: the voter set an upgrade to ``kraft.version`` 1 would
        write, as far as UpdateRaftVoter filled it in (None elsewhere)."""
        return dict(self._upgrade_voters) if self._upgrade_voters is not None else None

    def upgrade_kraft_version(self, epoch: int, version: int, validate_only: bool = False) -> UpgradeResult:
        """UpdateFeatures ``kraft.version`` at the leader (Kafka's
        ``LeaderState.maybeAppendUpgradedKRaftVersion``): checks, then (unless
        ``validate_only``) one control batch ``KRaftVersionRecord`` + ``VotersRecord``."""
        if self.role is not Role.LEADER or epoch < self.epoch:
            return UpgradeResult(m.NOT_LEADER_OR_FOLLOWER, "Upgrade kraft version failed because the "
                                 "replica is not the current leader")
        if epoch > self.epoch:
            return UpgradeResult(m.INVALID_UPDATE_VERSION, f"Attempt to append from epoch {epoch} which is "
                                 f"larger than the current epoch of {self.epoch}")
        current = self.kraft_version
        if self._kraft_requested is not None:
            if self._kraft_requested == version:
                return UpgradeResult()
            return UpgradeResult(m.INVALID_UPDATE_VERSION, f"Invalid concurrent upgrade of kraft.version from "
                                 f"version Version[kraftVersion={_kv(self._kraft_requested)}] to {_kv(version)}")
        if version == current:
            return UpgradeResult()
        if version < current:
            return UpgradeResult(m.INVALID_UPDATE_VERSION, f"Invalid upgrade of kraft.version from version "
                                 f"{_kv(current)} to {_kv(version)} because the new version is a downgrade")
        infos = self._upgrade_voters
        if infos is None or version != 1:
            return UpgradeResult(m.INVALID_UPDATE_VERSION, f"Invalid upgrade of kraft.version from version "
                                 f"{_kv(current)} to {_kv(version)}")
        if set(infos) != set(self.voters):
            return UpgradeResult(m.UNKNOWN_SERVER_ERROR, f"Unable to update kraft.version to {_kv(version)} due "
                                 f"to missing voters {sorted(infos)} compared to {sorted(self.voters)}")
        if not all(v.kraft_min <= version <= v.kraft_max for v in infos.values()):
            return UpgradeResult(m.INVALID_UPDATE_VERSION, f"Invalid upgrade of kraft.version to {_kv(version)} "
                                 "because not all of the voters support it")
        if any(v.directory_id in (None, ZERO_UUID) for v in infos.values()):
            return UpgradeResult(m.UNKNOWN_SERVER_ERROR, "Directory id must be known for all of the voters")
        if validate_only:
            return UpgradeResult()
        self._kraft_requested = version
        self._upgrade_voters = None
        self._append(Entry(self.log.end_offset, self.epoch, kraft_version_value(version),
                           control=True, control_type=KRAFT_VERSION))
        offset = self._append_voters(infos)
        return UpgradeResult(offset=offset)

    @property
    def _can_campaign(self) -> bool:
        """In the latest voter set, or in the committed one or any later (uncommitted) one
        while a change that removes this node is not known to be committed: such a node may
        hold the only log that can win (its candidacy counts votes of its latest set, never
        its own, so this is about liveness only). Kafka lets only ``quorum.isVoter()``
        campaign; the wider rule here keeps a quorum live when the only longest log belongs to
        a leader that removed itself and crashed before the change committed (soak seed 2464)."""
        if self.is_voter:
            return True
        if self.voter_infos is None:
            return False
        committed = self._voters_at(self.high_watermark)
        if self._holds_seat(committed) if committed is not None else self.node_id in self._static_voters:
            return True         # (a static quorum's set until its upgrade commits)
        return any(self._holds_seat(infos) for off, infos in self._voter_history
                   if off >= self.high_watermark)

    def _holds_seat(self, infos: dict[int, Voter]) -> bool:
        """This replica is a voter of ``infos``: its id, and its directory id unless either
        side does not know one (Kafka's ReplicaKey: a re-formatted disk behind the same id is
        not the voter that was added, and must not vote or count as it)."""
        v = infos.get(self.node_id)
        return v is not None and self._same_directory(v, self.directory_id)

    @staticmethod
    def _same_directory(voter: Voter, directory_id: str | None) -> bool:
        return directory_id is None or voter.directory_id in (None, ZERO_UUID) or voter.directory_id == directory_id

    def _is_voter_key(self, replica_id: int, directory_id: str | None) -> bool:
        """A fetch from ``replica_id`` naming ``directory_id`` comes from a voter (leader side)."""
        if replica_id not in self._replicas:
            return False
        v = (self.voter_infos or {}).get(replica_id)
        return v is None or self._same_directory(v, directory_id)

    def _voter_change_error(self) -> int:
        # Kafka's order (AddVoterHandler, RemoveVoterHandler): leader, high watermark of this
        # epoch, kraft.version, no uncommitted change
        if self.role is not Role.LEADER:
            return m.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark <= self._epoch_start_offset:
            return m.REQUEST_TIMED_OUT       # nothing of this epoch committed yet
        if not self.dynamic:
            return m.UNSUPPORTED_VERSION     # kraft.version 0: the voters are static
        if self._voter_history and self._voter_history[-1][0] >= self.high_watermark:
            return m.REQUEST_TIMED_OUT       # the previous change is not committed yet
        return m.NONE

    def check_add_voter(self, voter_id: int) -> int:
        """AddRaftVoter's checks before the leader asks the new voter's ApiVersions."""
        err = self._voter_change_error()
        if err:
            return err
        return m.DUPLICATE_VOTER if voter_id in self.voters else m.NONE

    def _append_voters(self, infos: dict[int, Voter]) -> int:
        self._append(Entry(self.log.end_offset, self.epoch, voters_value(infos.values()),
                           control=True, control_type=VOTERS))
        self.stats["voter_changes"] += 1
        return self.log.end_offset - 1

    def add_voter(self, voter: Voter) -> tuple[int, int]:
        """AddRaftVoter at the leader: ``(error code, offset of the VotersRecord)``; the
        error is ``CATCHING_UP`` while the new voter is not a caught-up observer."""
        err = self.check_add_voter(voter.voter_id)
        if err:
            return err, -1
        state = self._observers.get(voter.voter_id)
        horizon = self.now - self.config.fetch_timeout_ms
        if (state is None or state.last_fetch_ms is None or state.last_fetch_ms < horizon
                or state.end_offset < self.high_watermark):
            return CATCHING_UP, -1
        infos = dict(self.voter_infos)
        infos[voter.voter_id] = voter
        return m.NONE, self._append_voters(infos)

    def remove_voter(self, voter_id: int, directory_id: str | None = None) -> tuple[int, int]:
        err = self._voter_change_error()
        if err:
            return err, -1
        v = self.voter_infos.get(voter_id)
        if v is None or (directory_id is not None and v.directory_id != directory_id):
            return m.VOTER_NOT_FOUND, -1
        if len(self.voters) == 1:
            return m.INVALID_REQUEST, -1
        infos = {k: x for k, x in self.voter_infos.items() if k != voter_id}
        return m.NONE, self._append_voters(infos)

    def update_voter(self, voter: Voter) -> tuple[int, int]:
        """UpdateRaftVoter: a voter's new endpoints / supported versions (same key). In a
        static quorum the leader only remembers it, for an upgrade (``upgrade_voters``)."""
        if self.role is Role.LEADER and not self.dynamic and self.high_watermark > self._epoch_start_offset:
            if self._upgrade_voters is None:
                return m.REQUEST_TIMED_OUT, -1     # an upgrade is being written
            if not voter.kraft_min <= 0 <= voter.kraft_max:
                return m.INVALID_REQUEST, -1       # must support the finalized level
            if voter.voter_id not in self._upgrade_voters:
                return m.VOTER_NOT_FOUND, -1
            self._upgrade_voters = {**self._upgrade_voters, voter.voter_id: voter}
            return m.NONE, -1
        err = self._voter_change_error()
        if err:
            return err, -1
        if not voter.kraft_min <= self.kraft_version <= voter.kraft_max:
            return m.INVALID_REQUEST, -1
        v = self.voter_infos.get(voter.voter_id)
        if v is None or v.directory_id != voter.directory_id:
            return m.VOTER_NOT_FOUND, -1
        if v == voter:
            return m.NONE, -1
        infos = dict(self.voter_infos)
        infos[voter.voter_id] = voter
        return m.NONE, self._append_voters(infos)

    def _note_voters_entry(self, e: Entry) -> bool:
        if not (e.control and e.control_type == VOTERS):
            return False
        try:
            self._voter_history.append((e.offset, decode_voters(e.payload)))
        except ValueError:
            return False
        return True

    def _voters_at(self, end_offset: int) -> dict[int, Voter] | None:
        """The voter set in force for records below ``end_offset``."""
        at = self._base_voters
        for off, infos in self._voter_history:
            if off < end_offset:
                at = infos
        return at

    def _refresh_voters(self) -> None:
        infos = self._voter_history[-1][1] if self._voter_history else self._base_voters
        self.voter_infos = infos
        self.voters = frozenset(infos) if infos is not None else self._static_voters
        self.is_voter = self._holds_seat(infos) if infos is not None else self.node_id in self.voters
        if getattr(self, "role", None) is Role.LEADER:
            for v in self.voters - {self.node_id}:
                if v not in self._replicas:
                    self._replicas[v] = self._observers.pop(v, None) or _ReplicaState()
                    self._unacked.add(v)
            for r in list(self._replicas):
                if r not in self.voters:
                    self._observers[r] = self._replicas.pop(r)
                    self._unacked.discard(r)

    def _append(self, entry: Entry) -> None:
        self.log.append(entry)
        if self._note_voters_entry(entry):
            self._refresh_voters()

    def has_ready(self) -> bool:
        if self._ready_outstanding:
            return False
        return bool(
            self._outbox or self._current_state() != self._persisted
            or self._pending_truncate is not None or self._pending_reset is not None
            or self._written_end != self.log.end_offset or self._pending_snapshot is not None
            or self._pending_log_start is not None or self._pending_apply_snapshot is not None
            or min(self.high_watermark, self.log.durable_end) > self._applied
            or self._role_change() is not None)

    def ready(self) -> Ready:
        if self._ready_outstanding:
            raise RuntimeError("advance() the previous Ready first")
        rd = Ready()
        state = self._current_state()
        if state != self._persisted:
            rd.persist_state = state
            self._persisted = state
        rd.snapshot, self._pending_snapshot = self._pending_snapshot, None
        rd.reset_log_to, self._pending_reset = self._pending_reset, None
        rd.truncate_to, self._pending_truncate = self._pending_truncate, None
        rd.append_entries = self.log.entries(self._written_end, self.log.end_offset)
        self._written_end = self.log.end_offset
        rd.log_start_offset, self._pending_log_start = self._pending_log_start, None
        rd.messages, self._outbox = self._outbox, []
        self.stats["messages_out"] += len(rd.messages)
        rd.apply_snapshot, self._pending_apply_snapshot = self._pending_apply_snapshot, None
        upto = min(self.high_watermark, self.log.durable_end)
        if upto > self._applied:
            rd.committed = self.log.entries(self._applied, upto)
            self._applied = upto
            self._bytes_since_snapshot += sum(e.size for e in rd.committed)
        rd.should_snapshot = self._bytes_since_snapshot >= self.config.max_record_bytes_between_snapshots
        rd.high_watermark = self.high_watermark
        rd.role_change = self._role_change()
        if rd.role_change is not None:
            self._reported_role = rd.role_change
        rd.log_end_offset = self.log.end_offset
        self._ready_outstanding = True
        return rd

    def advance(self, rd: Ready) -> None:
        """The driver finished ``rd`` (persisted, sent, applied)."""
        self._ready_outstanding = False
        before = self.log.durable_end
        self.log.durable_end = max(self.log.durable_end, min(rd.log_end_offset, self._written_end))
        if self.role is Role.LEADER and self.log.durable_end > before:
            self._maybe_advance_high_watermark()
            self._complete_parked_fetches()
        if self._parked_hw_resign:
            self._fire_timers()

    def time_until_next_timer(self) -> int | None:
        """Milliseconds until the earliest timer (``tick`` then), or None if none is set."""
        deadlines = [d for d in self._deadlines() if d is not None]
        return max(0, min(deadlines) - self.now) if deadlines else None

    def statistics(self) -> dict:
        out = {"node_id": self.node_id, "role": self.role.value, "epoch": self.epoch,
               "leader_id": self.leader_id, "voted_id": self.voted_id,
               "high_watermark": self.high_watermark, "applied_offset": self._applied}
        out.update(self.log.statistics())
        if self.role is Role.LEADER:
            out["follower_lag"] = {r: self.log.end_offset - s.end_offset for r, s in self._replicas.items()}
        out.update(self.stats)
        return out

    @property
    def applied_offset(self) -> int:
        return self._applied

    @property
    def leader_ready(self) -> bool:
        """Leader whose own LeaderChange record is committed and handed to the application:
        every record of earlier epochs has been applied, so it may serve writes (Kafka's
        controller activates at this point)."""
        return self.role is Role.LEADER and self._applied > self._epoch_start_offset

    @property
    def epoch_start_offset(self) -> int:
        return self._epoch_start_offset

    def replica_states(self) -> tuple[dict[int, tuple[int, int | None]], dict[int, tuple[int, int | None]]]:
        """Leader only (DescribeQuorum): ``({voter: (log end offset, last fetch ms)},
        {observer: (...)})``; times are this node's logical ms (``now``). Empty elsewhere."""
        if self.role is not Role.LEADER:
            return {}, {}
        voters = {self.node_id: (self.log.durable_end, self.now)}
        voters.update({r: (s.end_offset, s.last_fetch_ms) for r, s in self._replicas.items()})
        observers = {r: (s.end_offset, s.last_fetch_ms) for r, s in self._observers.items()}
        return voters, observers

    def replica_directory_ids(self) -> dict[int, str]:
        """Leader only: the directory id each other replica named in its last Fetch."""
        if self.role is not Role.LEADER:
            return {}
        both = list(self._replicas.items()) + list(self._observers.items())
        return {r: s.directory_id for r, s in both if s.directory_id is not None}

    def quorum_state(self) -> QuorumState:
        return self._current_state()

    # =============================================================== state transitions

    def _reset_role_fields(self) -> None:
        self._election_deadline: int | None = None
        self._backing_off = False
        self._fetch_deadline: int | None = None
        self._leader_resigned = False
        self._fetched_from_leader = False
        self._inflight: tuple[int, int, int] | None = None   # (correlation, dest, deadline)
        self._fetch_retry_at: int | None = None
        self._snapshot_fetch: tuple[OffsetAndEpoch, bytearray] | None = None
        self._round = -1
        self._granted: set[int] = set()
        self._rejected: set[int] = set()
        self._replicas: dict[int, _ReplicaState] = {}
        self._observers: dict[int, _ReplicaState] = {}
        self._parked: dict[int, tuple[m.FetchRequest, int]] = {}
        self._check_quorum_deadline: int | None = None
        self._fetched_since_check: set[int] = set()
        self._unacked: set[int] = set()
        self._resend_at: int | None = None
        self._epoch_start_offset = -1
        self._successors: tuple[int, ...] = ()
        self._parked_hw_resign = False
        # a static quorum's leader: the voter set of a kraft.version upgrade (in memory,
        # filled by UpdateRaftVoter), then the level requested (Kafka's KRaftVersionUpgrade)
        self._upgrade_voters: dict[int, Voter] | None = None
        self._kraft_requested: int | None = None

    def _set_epoch(self, epoch: int) -> None:
        if epoch < self.epoch:
            raise AssertionError(f"epoch would go back from {self.epoch} to {epoch}")
        if epoch > self.epoch:
            self.epoch = epoch
            self.voted_id = -1

    def _become_unattached(self, epoch: int) -> None:
        # Raft's rule: merely seeing a higher epoch does not restart our election timer (only
        # granting a vote or hearing from a leader does). Otherwise a candidate with a stale
        # log that keeps bumping the epoch would starve the voters that could win.
        running = [d for d in (self._election_deadline, self._fetch_deadline) if d is not None]
        self._set_epoch(epoch)
        self.role = Role.UNATTACHED
        self.leader_id = NO_LEADER
        self._reset_role_fields()
        if self._can_campaign:
            fresh = self.now + self._random_election_timeout()
            self._election_deadline = min(running + [fresh])
        else:
            self._fetch_retry_at = self.now  # observers look for the leader among the voters

    def _become_follower(self, epoch: int, leader_id: int) -> None:
        self._set_epoch(epoch)
        self.role = Role.FOLLOWER
        self.leader_id = leader_id
        self._reset_role_fields()
        self._retries = 0
        self._fetch_deadline = self.now + self.config.fetch_timeout_ms
        self._send_fetch()

    def _start_election(self) -> None:
        if not self._can_campaign:   # removed from the voter set (KIP-853): an observer now
            self._become_unattached(self.epoch)
            return
        # Pre-vote unless this node is the only voter (Kafka's isOnlyVoter). A node whose
        # latest set is one *other* voter (removed, high watermark still in the old set) asks
        # too: a direct candidacy there raised epochs with nobody able to win.
        if self.config.pre_vote and self.voters != {self.node_id}:
            self._become_prospective()
        else:
            self._become_candidate()

    def _become_prospective(self) -> None:
        """KIP-996: ask for pre-votes without bumping the epoch or persisting anything."""
        leader = self.leader_id if self.role in (Role.FOLLOWER, Role.PROSPECTIVE) else NO_LEADER
        self.role = Role.PROSPECTIVE
        self._reset_role_fields()
        self.leader_id = leader
        self.stats["pre_vote_rounds"] += 1
        self._open_round(pre_vote=True)

    def _become_candidate(self) -> None:
        self._set_epoch(self.epoch + 1)
        self.role = Role.CANDIDATE
        self.leader_id = NO_LEADER
        self.voted_id = self.node_id
        self._reset_role_fields()
        self.stats["elections_started"] += 1
        self._open_round(pre_vote=False)

    def _open_round(self, pre_vote: bool) -> None:
        self._round = self._correlation()
        self._granted = {self.node_id}
        self._rejected = set()
        self._election_deadline = self.now + self._random_election_timeout()
        if self._has_majority(self._granted):
            self._round_won()
            return
        last = self.log.last_offset_and_epoch()
        for voter in sorted(self.voters - {self.node_id}):
            self._send(voter, m.VoteRequest(
                candidate_epoch=self.epoch + 1 if pre_vote else self.epoch,
                candidate_id=self.node_id, last_offset_epoch=last.epoch, last_offset=last.end_offset,
                voter_id=voter, pre_vote=pre_vote, correlation_id=self._round,
                candidate_directory_id=self.directory_id, voter_directory_id=self._directory_of(voter)))

    def _round_won(self) -> None:
        if self.role is Role.PROSPECTIVE:
            self._become_candidate()
        else:
            self._become_leader()

    def _become_leader(self) -> None:
        granted = self._granted | {self.node_id}
        self.role = Role.LEADER
        self.leader_id = self.node_id
        self._reset_role_fields()
        self._retries = 0
        self.stats["times_leader"] += 1
        self._epoch_start_offset = self.log.end_offset
        self._append(Entry(self._epoch_start_offset, self.epoch,
                           leader_change_value(self.node_id, self.voters, granted), control=True))
        if self.dynamic and not self._voter_history and self.log.start_offset == 0:
            # Kafka's LeaderState: a voter set known only from the 0-0 checkpoint is written
            # into the log (this leader's entry as it is now), so replicas that start with an
            # empty log (observers, a re-formatted disk) learn the voters by fetching
            infos = dict(self.voter_infos)
            if self._holds_seat(infos):
                infos[self.node_id] = Voter(self.node_id, infos[self.node_id].directory_id,
                                            self.endpoints or infos[self.node_id].endpoints, 0, 1)
            self._append(Entry(self.log.end_offset, self.epoch, kraft_version_value(1),
                               control=True, control_type=KRAFT_VERSION))
            self._append_voters(infos)
        self._replicas = {v: _ReplicaState() for v in self.voters if v != self.node_id}
        if not self.dynamic:
            # Kafka's LeaderState: the static voters as a voter set, this leader's entry known
            self._upgrade_voters = {v: Voter(v, ZERO_UUID, (), 0, 0) for v in self.voters}
            self._upgrade_voters[self.node_id] = self.local_voter()
        if len(self.voters) > 1:
            self._check_quorum_deadline = self.now + self.config.check_quorum_timeout_ms
        self._unacked = set(self._replicas)
        self._send_begin_quorum_epoch()

    def _silent_voters(self) -> set[int]:
        """Voters that have not fetched within the fetch timeout: they may not know we lead
        (or may sit in a higher epoch after a failed election; their answer then tells us)."""
        horizon = self.now - self.config.fetch_timeout_ms
        return {v for v, s in self._replicas.items() if s.last_fetch_ms is None or s.last_fetch_ms < horizon}

    def _become_resigned(self) -> None:
        """Stop leading this epoch; tell the voters, best-caught-up first."""
        ends = {r: s.end_offset for r, s in self._replicas.items()}
        parked = list(self._parked.items())
        self.role = Role.RESIGNED
        self.leader_id = self.node_id
        self._reset_role_fields()
        self.stats["resignations"] += 1
        for replica, (req, _) in parked:
            self._send(replica, self._fetch_error(m.NOT_LEADER_OR_FOLLOWER, req.correlation_id))
        self._successors = tuple(sorted(self.voters - {self.node_id}, key=lambda v: (-ends.get(v, 0), v)))
        self._unacked = set(self._successors)
        self._election_deadline = self.now + self._random_election_timeout()
        self._send_end_quorum_epoch()

    def _current_state(self) -> QuorumState:
        return QuorumState(leader_id=self.leader_id if self.role is not Role.PROSPECTIVE else self._persisted_leader(),
                           leader_epoch=self.epoch, voted_id=self.voted_id)

    def _persisted_leader(self) -> int:
        # A prospective keeps the leader it knew in memory; on disk nothing changes.
        return self._persisted.leader_id if self._persisted.leader_epoch == self.epoch else NO_LEADER

    def _role_change(self) -> RoleChange | None:
        now = RoleChange(self.role, self.epoch, self.leader_id)
        return None if now == self._reported_role else now

    # =============================================================== timers

    def _deadlines(self):
        yield self._election_deadline
        yield self._fetch_deadline
        yield self._inflight[2] if self._inflight else None
        yield self._fetch_retry_at
        yield self._check_quorum_deadline
        yield self._resend_at
        for _, deadline in self._parked.values():
            yield deadline

    def _fire_timers(self) -> None:
        now = self.now
        role = self.role
        if role is Role.LEADER:
            if self._parked_hw_resign:
                self._complete_parked_fetches()   # the voters learn the commit first
                self._become_resigned()
                return
            if self._parked:
                for replica, (req, deadline) in list(self._parked.items()):
                    if deadline <= now:
                        del self._parked[replica]
                        self._send(replica, self._answer_fetch(req))
            if self._resend_at is not None and self._resend_at <= now:
                self._send_begin_quorum_epoch()
            if self._check_quorum_deadline is not None and self._check_quorum_deadline <= now:
                self._become_resigned()
            return
        if role is Role.RESIGNED:
            if self._election_deadline is not None and self._election_deadline <= now:
                self._start_election()
            elif self._resend_at is not None and self._resend_at <= now:
                self._send_end_quorum_epoch()
            return
        if role in (Role.CANDIDATE, Role.PROSPECTIVE):
            if self._election_deadline is not None and self._election_deadline <= now:
                if self._backing_off:
                    self._start_election()
                else:
                    self._start_backoff()
            return
        # follower / unattached
        if self._inflight is not None and self._inflight[2] <= now:
            self._inflight = None
            self._fetch_retry_at = now
        if role is Role.FOLLOWER and self._fetch_deadline is not None and self._fetch_deadline <= now:
            if self._can_campaign:
                self._start_election()
            else:
                self._become_unattached(self.epoch)
            return
        if role is Role.UNATTACHED and self._can_campaign:
            if self._election_deadline is not None and self._election_deadline <= now:
                self._start_election()
            return
        if self._fetch_retry_at is not None and self._fetch_retry_at <= now and self._inflight is None:
            self._send_fetch()

    def _start_backoff(self) -> None:
        self._retries += 1
        self._backing_off = True
        self._election_deadline = self.now + self._election_backoff_ms()

    def _random_election_timeout(self) -> int:
        t = self.config.election_timeout_ms
        return t + self._rng.randrange(max(1, t))

    def _election_backoff_ms(self) -> int:
        # Kafka's binary exponential backoff with jitter, capped at election.backoff.max.ms.
        span = 1 << min(self._retries, 10)
        return min(RETRY_BACKOFF_BASE_MS * self._rng.randrange(1, span + 1), self.config.election_backoff_max_ms)

    # =============================================================== sending helpers

    def _correlation(self) -> int:
        self._next_correlation += 1
        return self._next_correlation

    def _send(self, dest: int, message) -> None:
        self._outbox.append((dest, message))

    def _leader_info(self) -> LeaderIdAndEpoch:
        leader = self.leader_id if self.role in (Role.LEADER, Role.FOLLOWER) else NO_LEADER
        return LeaderIdAndEpoch(leader, self.epoch)

    def _has_majority(self, ids: set[int]) -> bool:
        return len(ids & self.voters) * 2 > len(self.voters)

    def _send_fetch(self) -> None:
        self._fetch_retry_at = None
        if self.role is Role.FOLLOWER:
            dest = self.leader_id
        elif not self.is_voter and (self.voters - {self.node_id} or self._bootstrap_ids):
            # observer bootstrapping: the voters it knows, else controller.quorum.bootstrap.servers
            pool = sorted(self.voters - {self.node_id}) or list(self._bootstrap_ids)
            dest = self._rng.choice(pool)
        else:
            return
        corr = self._correlation()
        if self._snapshot_fetch is not None:
            sid, buf = self._snapshot_fetch
            msg = m.FetchSnapshotRequest(replica_id=self.node_id, current_leader_epoch=self.epoch,
                                         snapshot_id=sid, position=len(buf),
                                         max_bytes=self.config.snapshot_chunk_bytes, correlation_id=corr,
                                         directory_id=self.directory_id)
        else:
            msg = m.FetchRequest(replica_id=self.node_id, current_leader_epoch=self.epoch,
                                 fetch_offset=self.log.end_offset, last_fetched_epoch=self.log.last_epoch,
                                 log_start_offset=self.log.start_offset,
                                 max_wait_ms=self.config.fetch_max_wait_ms if self.role is Role.FOLLOWER else 0,
                                 max_bytes=self.config.fetch_max_bytes, correlation_id=corr,
                                 directory_id=self.directory_id, high_watermark=self.high_watermark)
        self._inflight = (corr, dest, self.now + self.config.request_timeout_ms)
        self._send(dest, msg)

    def _retry_fetch_later(self) -> None:
        self._inflight = None
        self._fetch_retry_at = self.now + self.config.retry_backoff_ms

    def _directory_of(self, voter: int) -> str | None:
        """A voter's directory id as the voter set records it (None: static, or unknown)."""
        v = (self.voter_infos or {}).get(voter)
        return v.directory_id if v is not None and v.directory_id != ZERO_UUID else None

    def _send_begin_quorum_epoch(self) -> None:
        # Unacknowledged voters get it again after a request timeout; as in KIP-853 the leader
        # also keeps announcing itself to voters that stopped fetching.
        targets = self._unacked | (self._silent_voters() if self._resend_at is not None else set())
        for voter in sorted(targets):
            self._send(voter, m.BeginQuorumEpochRequest(leader_id=self.node_id, leader_epoch=self.epoch,
                                                        voter_id=voter, correlation_id=self._correlation(),
                                                        voter_directory_id=self._directory_of(voter),
                                                        leader_endpoints=self.endpoints))
        period = self.config.request_timeout_ms if self._unacked else self.config.fetch_timeout_ms // 2
        self._resend_at = self.now + period if self._replicas else None

    def _send_end_quorum_epoch(self) -> None:
        for voter in sorted(self._unacked):
            self._send(voter, m.EndQuorumEpochRequest(leader_id=self.node_id, leader_epoch=self.epoch,
                                                      preferred_successors=self._successors,
                                                      correlation_id=self._correlation(),
                                                      preferred_directory_ids=tuple(
                                                          self._directory_of(v) for v in self._successors),
                                                      leader_endpoints=self.endpoints))
        self._resend_at = self.now + self.config.request_timeout_ms if self._unacked else None

    # =============================================================== epoch observation

    def _observe_leader(self, leader_id: int, epoch: int) -> bool:
        """A peer told us (leader, epoch). Move forward if it is news; True if we moved."""
        if epoch > self.epoch:
            if leader_id not in (NO_LEADER, self.node_id):
                self._become_follower(epoch, leader_id)
            else:
                self._become_unattached(epoch)
            return True
        if epoch == self.epoch and leader_id not in (NO_LEADER, self.node_id):
            if self.role in (Role.UNATTACHED, Role.CANDIDATE) or (
                    self.role is Role.PROSPECTIVE and self.leader_id == NO_LEADER):
                self._become_follower(epoch, leader_id)
                return True
            if self.leader_id not in (NO_LEADER, leader_id):
                self.stats["conflicting_leader_claims"] += 1
        return False

    # =============================================================== Vote

    def _on_vote_request(self, src: int, req: m.VoteRequest) -> None:
        def reply(granted: bool, error: int = m.NONE) -> None:
            self._send(src, m.VoteResponse(error_code=error, leader_id=self._leader_info().leader_id,
                                           leader_epoch=self.epoch, vote_granted=granted,
                                           correlation_id=req.correlation_id))

        if not (self.dynamic or self._bootstrap_ids) and (not self.is_voter or req.candidate_id not in self.voters):
            return reply(False, m.INCONSISTENT_VOTER_SET)
        # A dynamic quorum's sets can differ for a while (a change not replicated yet): the
        # candidate counts votes of its own set, the log comparison keeps it safe (KIP-853).
        log_ok = (req.last_offset_epoch, req.last_offset) >= (self.log.last_epoch, self.log.end_offset)
        if req.pre_vote:
            # No state change for a pre-vote; refuse while we still hear from a live leader.
            if req.candidate_epoch <= self.epoch:
                return reply(False, m.FENCED_LEADER_EPOCH)
            if not self._addressed_to_me(req.voter_directory_id):
                return reply(False, m.INVALID_VOTER_KEY)
            # KIP-996: a follower that has fetched from its leader (in this follower state)
            # refuses; one that never got through, or was told the leader resigned, grants.
            leader_alive = self.role is Role.LEADER or (
                self.role is Role.FOLLOWER and self._fetched_from_leader and not self._leader_resigned)
            granted = log_ok and not leader_alive
            if granted:
                self.stats["pre_votes_granted"] += 1
            return reply(granted)
        if req.candidate_epoch < self.epoch:
            return reply(False, m.FENCED_LEADER_EPOCH)
        if req.candidate_epoch > self.epoch:
            self._become_unattached(req.candidate_epoch)
        if not self._addressed_to_me(req.voter_directory_id):
            return reply(False, m.INVALID_VOTER_KEY)
        granted = (log_ok and self.leader_id == NO_LEADER and self.voted_id in (-1, req.candidate_id)
                   and self.role in (Role.UNATTACHED, Role.PROSPECTIVE))
        if granted:
            if self.role is Role.PROSPECTIVE:
                self._become_unattached(self.epoch)
            self.voted_id = req.candidate_id  # persisted (Ready.persist_state) before the reply goes out
            self._election_deadline = self.now + self._random_election_timeout()
            self.stats["votes_granted"] += 1
        reply(granted)

    def _addressed_to_me(self, voter_directory_id: str | None) -> bool:
        """KIP-853's voter key check (Kafka's ``isValidVoterKey``): a request naming another
        directory id than this replica's was meant for the voter this disk replaced."""
        return voter_directory_id is None or self.directory_id is None or voter_directory_id == self.directory_id

    def _on_vote_response(self, src: int, resp: m.VoteResponse) -> None:
        if self._observe_leader(resp.leader_id, resp.leader_epoch):
            return
        if (self.role not in (Role.CANDIDATE, Role.PROSPECTIVE) or resp.correlation_id != self._round
                or (self.role is Role.CANDIDATE and resp.leader_epoch != self.epoch)):
            self.stats["stale_responses"] += 1
            return
        if resp.vote_granted:
            self._granted.add(src)
            if self._has_majority(self._granted):  # a late majority still wins this epoch
                self._round_won()
            return
        if (self.role is Role.PROSPECTIVE and resp.leader_epoch == self.epoch
                and resp.leader_id not in (NO_LEADER, self.node_id)):
            # KIP-996: a voter still follows a leader of our epoch; go back to it.
            self._become_follower(self.epoch, resp.leader_id)
            return
        self._rejected.add(src)
        if not self._backing_off and self._has_majority(self._rejected):
            self._start_backoff()

    # =============================================================== Begin/EndQuorumEpoch

    def _on_begin_quorum_epoch_request(self, src: int, req: m.BeginQuorumEpochRequest) -> None:
        error = m.NONE
        if req.leader_epoch < self.epoch:
            error = m.FENCED_LEADER_EPOCH
        elif req.leader_epoch > self.epoch:
            self._become_follower(req.leader_epoch, req.leader_id)
        elif self.role is Role.FOLLOWER and self.leader_id == req.leader_id:
            pass
        elif self.role in (Role.UNATTACHED, Role.CANDIDATE, Role.PROSPECTIVE) and \
                self.leader_id in (NO_LEADER, req.leader_id):
            self._become_follower(req.leader_epoch, req.leader_id)
        else:
            self.stats["conflicting_leader_claims"] += 1
        if error == m.NONE and not self._addressed_to_me(req.voter_directory_id):
            error = m.INVALID_VOTER_KEY      # followed anyway (Kafka), but not this leader's voter
        info = self._leader_info()
        self._send(src, m.BeginQuorumEpochResponse(error_code=error, leader_id=info.leader_id,
                                                   leader_epoch=self.epoch, correlation_id=req.correlation_id))

    def _on_begin_quorum_epoch_response(self, src: int, resp: m.BeginQuorumEpochResponse) -> None:
        if self._observe_leader(resp.leader_id, resp.leader_epoch):
            return
        if self.role is Role.LEADER and resp.leader_epoch == self.epoch and resp.error_code == m.NONE:
            self._unacked.discard(src)

    def _on_end_quorum_epoch_request(self, src: int, req: m.EndQuorumEpochRequest) -> None:
        error = m.NONE
        if req.leader_epoch < self.epoch:
            error = m.FENCED_LEADER_EPOCH
        else:
            if req.leader_epoch > self.epoch:
                self._become_unattached(req.leader_epoch)
            if self._can_campaign and self.leader_id in (req.leader_id, NO_LEADER) and self.role in (Role.FOLLOWER, Role.UNATTACHED):
                # Start the next election early, the preferred successors first (KIP-595).
                succ = req.preferred_successors
                pos = succ.index(self.node_id) if self.node_id in succ else len(succ)
                delay = 0 if pos == 0 else min(RETRY_BACKOFF_BASE_MS << min(pos - 1, 10),
                                               self.config.election_backoff_max_ms)
                self._leader_resigned = True
                if self.role is Role.FOLLOWER:
                    self._fetch_deadline = min(self._fetch_deadline, self.now + delay)
                else:
                    self._election_deadline = min(self._election_deadline or self.now + delay, self.now + delay)
        info = self._leader_info()
        self._send(src, m.EndQuorumEpochResponse(error_code=error, leader_id=info.leader_id,
                                                 leader_epoch=self.epoch, correlation_id=req.correlation_id))

    def _on_end_quorum_epoch_response(self, src: int, resp: m.EndQuorumEpochResponse) -> None:
        if self._observe_leader(resp.leader_id, resp.leader_epoch):
            return
        if self.role is Role.RESIGNED and resp.leader_epoch == self.epoch:
            self._unacked.discard(src)

    # =============================================================== Fetch (leader side)

    def _fetch_error(self, error: int, correlation_id: int) -> m.FetchResponse:
        return m.FetchResponse(error_code=error, high_watermark=-1, log_start_offset=self.log.start_offset,
                               current_leader=self._leader_info(), correlation_id=correlation_id)

    def _note_fetch(self, replica_id: int, directory_id: str | None = None) -> _ReplicaState:
        state = self._replicas.get(replica_id) if self._is_voter_key(replica_id, directory_id) else None
        if state is None:
            state = self._observers.get(replica_id)
            if state is None or (directory_id is not None and state.directory_id not in (None, directory_id)):
                # an observer is (id, directory id), as Kafka's ReplicaKey: another log dir
                # behind the same id (a re-formatted node) starts from nothing
                state = self._observers[replica_id] = _ReplicaState()
        else:
            self._fetched_since_check.add(replica_id)
            if self._has_majority(self._fetched_since_check | {self.node_id}):
                self._check_quorum_deadline = self.now + self.config.check_quorum_timeout_ms
                self._fetched_since_check = set()
        state.last_fetch_ms = self.now
        if directory_id is not None:
            state.directory_id = directory_id
        return state

    def _on_fetch_request(self, src: int, req: m.FetchRequest) -> None:
        if req.current_leader_epoch < self.epoch:
            return self._send(src, self._fetch_error(m.FENCED_LEADER_EPOCH, req.correlation_id))
        if req.current_leader_epoch > self.epoch:
            return self._send(src, self._fetch_error(m.UNKNOWN_LEADER_EPOCH, req.correlation_id))
        if self.role is not Role.LEADER:
            return self._send(src, self._fetch_error(m.NOT_LEADER_OR_FOLLOWER, req.correlation_id))
        self.stats["fetches_served"] += 1
        state = self._note_fetch(req.replica_id, req.directory_id)
        self._parked.pop(req.replica_id, None)
        kind, _ = self.log.validate_fetch(req.fetch_offset, req.last_fetched_epoch)
        if kind is FetchValidation.VALID:
            state.end_offset = req.fetch_offset
            if state is self._replicas.get(req.replica_id):
                self._unacked.discard(req.replica_id)
                if self._maybe_advance_high_watermark():
                    self._complete_parked_fetches()
            # what the fetcher knows of the high watermark: what it says (KIP-1166, Fetch
            # v18), else what this leader last sent it
            known = req.high_watermark if req.high_watermark is not None else state.high_watermark_sent
            if (req.fetch_offset >= self.log.durable_end and req.max_wait_ms > 0
                    and known >= self.high_watermark):
                # Long poll (Kafka's fetch purgatory): answer when data or the HW moves.
                self._parked[req.replica_id] = (req, self.now + req.max_wait_ms)
                return
        self._send(src, self._answer_fetch(req))

    def _answer_fetch(self, req: m.FetchRequest) -> m.FetchResponse:
        state = (self._replicas.get(req.replica_id) if self._is_voter_key(req.replica_id, req.directory_id)
                 else self._observers.get(req.replica_id))
        if state is not None:
            state.high_watermark_sent = self.high_watermark
        kind, where = self.log.validate_fetch(req.fetch_offset, req.last_fetched_epoch)
        common = dict(error_code=m.NONE, high_watermark=self.high_watermark,
                      log_start_offset=self.log.start_offset, current_leader=self._leader_info(),
                      correlation_id=req.correlation_id)
        if kind is FetchValidation.DIVERGING:
            return m.FetchResponse(diverging_epoch=where, **common)
        if kind is FetchValidation.SNAPSHOT:
            return m.FetchResponse(snapshot_id=where, **common)
        records = self.log.read(req.fetch_offset, self.log.durable_end, req.max_bytes)
        return m.FetchResponse(records=records, **common)

    def _complete_parked_fetches(self) -> None:
        parked, self._parked = self._parked, {}
        for replica, (req, _) in parked.items():
            self._send(replica, self._answer_fetch(req))

    def _maybe_advance_high_watermark(self) -> bool:
        own = [self.log.durable_end] if self.is_voter else []   # a leader removing itself
        ends = sorted(own + [s.end_offset for s in self._replicas.values()], reverse=True)
        if not ends:
            return False
        candidate = ends[len(ends) // 2]
        # Only offsets past our own LeaderChange record: never commit an older epoch's records
        # by counting replicas alone (Raft figure 8).
        if candidate > self._epoch_start_offset and candidate > self.high_watermark:
            self.high_watermark = candidate
            if not self.is_voter and self._voter_history and self._voter_history[-1][0] < candidate:
                # KIP-853: the change that removed this leader is committed; hand over.
                self._parked_hw_resign = True
            return True
        return False

    def _on_fetch_snapshot_request(self, src: int, req: m.FetchSnapshotRequest) -> None:
        def reply(error: int, **kw) -> None:
            self._send(src, m.FetchSnapshotResponse(error_code=error, current_leader=self._leader_info(),
                                                    correlation_id=req.correlation_id, **kw))
        if req.current_leader_epoch < self.epoch:
            return reply(m.FENCED_LEADER_EPOCH)
        if req.current_leader_epoch > self.epoch:
            return reply(m.UNKNOWN_LEADER_EPOCH)
        if self.role is not Role.LEADER:
            return reply(m.NOT_LEADER_OR_FOLLOWER)
        self._note_fetch(req.replica_id, req.directory_id)
        snap = self.log.snapshot
        if snap is None or snap.snapshot_id != req.snapshot_id:
            return reply(m.SNAPSHOT_NOT_FOUND)
        if req.position > len(snap.data):
            return reply(m.POSITION_OUT_OF_RANGE)
        chunk = snap.data[req.position:req.position + max(1, req.max_bytes)]
        reply(m.NONE, snapshot_id=snap.snapshot_id, size=len(snap.data), position=req.position,
              unaligned_records=chunk)

    # =============================================================== Fetch (follower side)

    def _accept_fetch_reply(self, src: int, correlation_id: int, leader: LeaderIdAndEpoch, error: int) -> bool:
        """Common checks for Fetch/FetchSnapshot responses; True if the body should be used."""
        if self._inflight is None or self._inflight[0] != correlation_id or self._inflight[1] != src:
            self.stats["stale_responses"] += 1
            return False
        self._inflight = None
        if self._observe_leader(leader.leader_id, leader.leader_epoch):
            return False
        if self.role is not Role.FOLLOWER or src != self.leader_id or error != m.NONE:
            self._retry_fetch_later()
            return False
        self._fetch_deadline = self.now + self.config.fetch_timeout_ms
        self._fetched_from_leader = True
        self._leader_resigned = False
        return True

    def _on_fetch_response(self, src: int, resp: m.FetchResponse) -> None:
        if not self._accept_fetch_reply(src, resp.correlation_id, resp.current_leader, resp.error_code):
            return
        if resp.diverging_epoch is not None:
            cut = self.log.truncation_point(resp.diverging_epoch)
            if cut < self.high_watermark:
                raise AssertionError(f"node {self.node_id}: truncation to {cut} below high watermark {self.high_watermark}")
            self._truncate(cut)
        elif resp.snapshot_id is not None:
            self._snapshot_fetch = (resp.snapshot_id, bytearray())
        else:
            records = list(resp.records)
            while records and joined_to_next(records[-1]):
                records.pop()    # half of one batch (a leader never sends it): wait for the whole
            for entry in records:
                if entry.offset != self.log.end_offset or entry.epoch > self.epoch:
                    break  # not a continuation of what we asked for: refetch
                self._append(entry)
            new_hw = min(resp.high_watermark, self.log.end_offset)
            if new_hw > self.high_watermark:
                self.high_watermark = new_hw
        self._send_fetch()

    def _truncate(self, offset: int) -> None:
        if offset >= self.log.end_offset:
            return
        self.stats["truncations"] += 1
        self.log.truncate_to(offset)
        if self._voter_history and self._voter_history[-1][0] >= offset:
            self._voter_history = [(o, v) for o, v in self._voter_history if o < offset]
            self._refresh_voters()
        if offset < self._written_end:
            self._pending_truncate = offset if self._pending_truncate is None else min(self._pending_truncate, offset)
            self._written_end = offset

    def _on_fetch_snapshot_response(self, src: int, resp: m.FetchSnapshotResponse) -> None:
        if resp.error_code in (m.SNAPSHOT_NOT_FOUND, m.POSITION_OUT_OF_RANGE) and self._inflight \
                and self._inflight[0] == resp.correlation_id:
            self._snapshot_fetch = None  # the leader moved on to a newer snapshot: ask again
        if not self._accept_fetch_reply(src, resp.correlation_id, resp.current_leader, resp.error_code):
            return
        if self._snapshot_fetch is None:
            return self._send_fetch()
        sid, buf = self._snapshot_fetch
        if resp.snapshot_id != sid or resp.position != len(buf):
            self._snapshot_fetch = None
            return self._send_fetch()
        buf += resp.unaligned_records
        if len(buf) >= resp.size:
            self._install_snapshot(Snapshot(sid, bytes(buf)))
        self._send_fetch()

    def _install_snapshot(self, snap: Snapshot) -> None:
        self._snapshot_fetch = None
        end = snap.snapshot_id.end_offset
        self.log.install(snap)
        self._base_voters = snapshot_voters(snap.data) or self._base_voters
        self._voter_history = []
        self._refresh_voters()
        self.stats["snapshots_installed"] += 1
        self._pending_snapshot = snap
        self._pending_reset = end
        self._pending_truncate = None
        self._pending_log_start = None
        self._written_end = end
        if end > self.high_watermark:
            self.high_watermark = end
        if end > self._applied:
            self._pending_apply_snapshot = snap
            self._applied = end
        self._bytes_since_snapshot = 0

    _handlers = {
        m.VoteRequest: "_on_vote_request",
        m.VoteResponse: "_on_vote_response",
        m.BeginQuorumEpochRequest: "_on_begin_quorum_epoch_request",
        m.BeginQuorumEpochResponse: "_on_begin_quorum_epoch_response",
        m.EndQuorumEpochRequest: "_on_end_quorum_epoch_request",
        m.EndQuorumEpochResponse: "_on_end_quorum_epoch_response",
        m.FetchRequest: "_on_fetch_request",
        m.FetchResponse: "_on_fetch_response",
        m.FetchSnapshotRequest: "_on_fetch_snapshot_request",
        m.FetchSnapshotResponse: "_on_fetch_snapshot_response",
    }
