"""Scale rows: how a broker's cost grows with partitions, connections, group members, producers.

Each row runs on a fresh single node of the session's broker (sizes from `plan.Scale`), or,
in the quick plan (`Plan.shared_broker`), on the one node the session shares between its
start-up, load and scale rows (`run_all(session, shared)`; benchmarks/harness/run.py):

* **partitions**: N partitions as topics of 100 (CreateTopics of 1,000 partitions, one request
  at a time) until Metadata shows a leader for every one; then until the broker is quiet
  (both brokers finish creating the logs after they answer: Kafka in its metadata publisher
  thread, kbroker in a task of its replica manager; first until the data directory holds
  a directory per partition); the broker's RSS then; the latency
  of a full Metadata request (all topics, v12, median of 5 on one connection: send to last
  byte of the answer); a graceful stop (`brokers.timed_stop`: wall and CPU from SIGTERM to
  the exit) and the restart to the first acknowledged produce
  (`brokers.timed_start`: wall and CPU).
* **connections**: N client connections, each sending one ApiVersions request and keeping the
  connection open, at most 32 being set up at a time (Kafka's accept backlog is 50): accept
  rate = N / time until every one is answered; RSS growth / N, with every connection still open.
* **group**: for each size M (ascending, one node for all), M members of one classic consumer
  group (JoinGroup v5, SyncGroup v3, Heartbeat v3 every 500 ms, rejoin on
  REBALANCE_IN_PROGRESS). The members' connections are made first (32 being set up at a
  time, each answered an ApiVersions, as a client's coordinator connection exists before it
  joins); then all start at once: time from the first JoinGroup to every member
  having synced in one generation of M members (the group Stable), the generation reached and
  the broker CPU spent meanwhile (and the members' own, this process's); beside them in
  the raw results, load-independent counts (JoinGroup/SyncGroup/Heartbeat requests sent,
  error answers, members per generation), the
  times of the members' first JoinGroup answers and of each generation's answers, and the
  kernel's ListenOverflows while connecting and joining; then every member leaves (one
  LeaveGroup v3 naming them all) so that no expiring member of one size runs into the next
  size's join. With `--profile DIR`, py-spy records kbroker during each join.
* **producers**: P idempotent producers (InitProducerId v4, then one Produce v9 of one batch
  with sequence 0, acks=1), each on its own connection, over a 10-partition topic; the
  connections are closed, then the broker's RSS growth / P. RSS is a coarse measure of
  producer-state memory (a JVM's heap pages are touched by any allocation; Python's allocator
  keeps freed arenas), so the row is an upper bound for both.

A row that fails (a broker error, a timeout, a limit of the machine) is logged and recorded
in the raw results as failed, the session goes on. Kafka's partitions row is not started
when the open-file limit (RLIMIT_NOFILE) is below N + 1,000: Kafka keeps each segment's
file open (and maps its active indexes), so 100,000 partitions need a limit this machine
(20,000) does not have. kbroker opens segment files on use, at most a quarter of the limit
at a time (``kbroker.log.max.open.files``), so its row runs at any N.
"""
from __future__ import annotations

import os
import socket
import statistics
import struct
import time
from contextlib import contextmanager

from kbroker.wire import messages as w
from kbroker.wire.protocol import encode_request
from kbroker.wire.records import build_batch

from .admin import create_topics
from .brokers import cpu_seconds, rss_bytes, timed_start, timed_stop
from .rawclient import Loop

ERR_REBALANCE_IN_PROGRESS = 27
ERR_MEMBER_ID_REQUIRED = 79
ERR_UNKNOWN_MEMBER_ID = 25
ERR_ILLEGAL_GENERATION = 22
ERR_COORDINATOR_RETRY = (14, 15, 16)   # loading, not available, not coordinator: ask again


ROWS = ("partitions", "connections", "group", "producers")


def run_all(session, shared=None, rows: tuple[str, ...] = ROWS) -> None:
    """Run `rows` in order, each on a fresh node, or all on `shared` (a running broker of
    the session, left running). A row whose size is 0 is not run."""
    from .run import log
    fns = {"partitions": partitions, "connections": connections, "group": group,
           "producers": producers}
    sc = session.plan.scale
    sizes = {"partitions": sc.partitions, "connections": sc.connections,
             "group": sc.group_members, "producers": sc.producers}
    for name in rows:
        if not sizes[name]:
            continue
        t0 = time.monotonic()
        try:
            fns[name](session, shared)
        except Exception as exc:  # noqa: BLE001 - a failed row is a result too
            log(f"{session.name}: scale {name} FAILED after {time.monotonic() - t0:.0f} s: {exc!r}")
            session.results.meta.setdefault("failed", []).append(
                f"{session.name}: scale {name}: {str(exc)[:300]}")
        else:
            log(f"{session.name}: scale {name} row took {time.monotonic() - t0:.1f} s")


@contextmanager
def _node(session, tag: str, shared):
    """`shared` as it is, or a fresh started broker thrown away afterwards."""
    if shared is not None:
        yield shared
        return
    b = session._broker(tag)
    try:
        b.start()
        yield b
    finally:
        session._drop(b)


def _declare(session, sid, title, unit, better="lower", secondary_unit=None):
    session.results.scenario(sid, title=title, group="scale", unit=unit, better=better,
                             secondary_unit=secondary_unit)
    return sid


# ------------------------------------------------------------------------------ partitions

def _metadata_all_seconds(host: str, port: int, reps: int = 5) -> tuple[float, int]:
    body = w.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                             include_topic_authorized_operations=False)
    req = encode_request(3, 12, 7, "kbroker-bench-scale", body)
    times, size = [], 0
    with socket.create_connection((host, port), timeout=300) as s:
        for _ in range(reps):
            t0 = time.monotonic()
            s.sendall(req)
            head = _recv(s, 4)
            (size,) = struct.unpack(">i", head)
            _recv(s, size)
            times.append(time.monotonic() - t0)
    return statistics.median(times), size


def _recv(s, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def _wait_quiet(pid: int, timeout: float = 300.0) -> float:
    """Wait until the broker uses under a quarter of a core over one second (it has
    finished the work a request started in the background; kbroker's once-a-second flush
    check of every log keeps it above a few percent at 100,000 partitions); returns the
    seconds waited."""
    t0 = time.monotonic()
    last = cpu_seconds(pid)
    while time.monotonic() - t0 < timeout:
        time.sleep(1.0)
        now = cpu_seconds(pid)
        if now - last < 0.25:
            break
        last = now
    return time.monotonic() - t0


def wait_logs(data_dir, n: int, timeout: float = 1800.0, prefix: str = "sc-") -> float:
    """Wait until the data directory holds a directory for each of the ``n`` partitions of
    the topics named ``prefix``... (both brokers create the logs after answering
    CreateTopics, and their creation is bound by the disk's syncs, so a broker can look
    quiet to ``_wait_quiet`` with most logs still to come; a graceful stop measured then
    closes fewer logs, and a restart measured after it makes the rest); returns the seconds."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        with os.scandir(data_dir) as it:
            if sum(1 for e in it if e.name.startswith(prefix) and e.is_dir()) >= n:
                break
        time.sleep(0.5)
    return time.monotonic() - t0


def _established(port: int) -> int:
    """TCP connections on this machine whose local port is `port` (the broker's side of its
    client connections) that the broker has not closed: ESTABLISHED or CLOSE_WAIT (the
    client has closed, the broker not yet), from /proc/net/tcp and tcp6."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] in ("01", "08") and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        n += 1
        except OSError:
            pass
    return n


def _wait_established(port: int, at_most: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while _established(port) > at_most:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the broker still holds {_established(port)} connections "
                               f"(at most {at_most} expected) after {timeout:.0f} s")
        time.sleep(0.05)


def partitions(session, shared=None, *, n: int | None = None) -> dict:
    """The partitions rows; returns the create and restart figures (run.py records the
    start-up and metadata rows from them when the quick plan shares the node). `shared` is
    stopped and restarted (timed) and is left running."""
    from .run import log
    n = n or session.plan.scale.partitions
    r = session.results
    label = f"{n:,} partitions on one node"
    create = _declare(session, "scale-part-create", f"{label}: create (100 per topic, 1,000 per request)", "s",
                      secondary_unit="broker cpu-s")
    rss = _declare(session, "scale-part-rss", f"{label}: RSS after creating them", "MiB")
    meta = _declare(session, "scale-part-metadata", f"{label}: full Metadata request, send → answer", "ms",
                    secondary_unit="broker cpu-ms")
    stop = _declare(session, "scale-part-stop", f"{label}: graceful stop (SIGTERM to exit)", "s",
                    secondary_unit="broker cpu-s")
    restart = _declare(session, "scale-part-restart", f"{label}: restart to first produce ack, wall", "s")
    restart_cpu = _declare(session, "scale-part-restart-cpu", f"{label}: restart to first produce ack, CPU",
                           "cpu-s")
    import resource
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if session.name == "kafka" and n + 1000 > limit:
        # Kafka keeps a file open per segment: past the limit it fails, after a long time
        raise RuntimeError(f"{n:,} partitions need more open files than the limit here "
                           f"({limit:,}, RLIMIT_NOFILE); run with a smaller --scale-sizes")
    with _node(session, "scale-partitions", shared) as b:
        topics = [(f"sc-{t}", 100) for t in range(max(1, n // 100))]
        t0, c0 = time.monotonic(), cpu_seconds(b.pid)
        create_topics(b.bootstrap_servers, topics, per_request=1000, timeout=1800)
        secs, cpu = time.monotonic() - t0, cpu_seconds(b.pid) - c0
        logs = wait_logs(b.data_dir, n)
        quiet = _wait_quiet(b.pid)
        r.add(create, session.name, secs, cpu,
              raw={"logs_after_s": round(logs, 1), "quiet_after_s": round(quiet, 1)})
        cur, _ = rss_bytes(b.pid)
        r.add(rss, session.name, cur / 2**20)
        c0 = cpu_seconds(b.pid)
        md, size = _metadata_all_seconds(b.host, b.port)
        md_cpu = (cpu_seconds(b.pid) - c0) / 5
        r.add(meta, session.name, md * 1000, md_cpu * 1000, raw={"answer_bytes": size})
        log(f"{session.name}: {n} partitions created in {secs:.1f} s ({cpu:.1f} cpu-s), RSS "
            f"{cur / 2**20:.0f} MiB, full Metadata {md * 1000:.0f} ms ({md_cpu * 1000:.0f} cpu-ms, "
            f"{size / 1024:.0f} KiB)")
        # a clean stop of N partitions takes a while (both brokers)
        stop_secs, stop_cpu = timed_stop(b, timeout=1800)
        r.add(stop, session.name, stop_secs, stop_cpu)
        log(f"{session.name}: graceful stop with {n} partitions {stop_secs:.1f} s, {stop_cpu:.1f} cpu-s")
        created = secs
        secs = timed_start(b, "sc-0", timeout=1800)
        r.add(restart, session.name, secs)
        r.add(restart_cpu, session.name, b.start_cpu_s)
        log(f"{session.name}: restart with {n} partitions {secs:.1f} s, {b.start_cpu_s:.1f} cpu-s")
        return {"create_s": created, "restart_s": secs, "restart_cpu_s": b.start_cpu_s}


# ------------------------------------------------------------------------------ connections

def connections(session, shared=None) -> None:
    from .run import log
    n = session.plan.scale.connections
    rate = _declare(session, "scale-conn-rate", f"{n:,} client connections: accept rate "
                    "(connect + ApiVersions, 32 at a time)", "conn/s", better="higher")
    per = _declare(session, "scale-conn-rss", f"{n:,} client connections: RSS per open connection", "KiB")
    with _node(session, "scale-connections", shared) as b:
        _connections(session, b, n, rate, per)


def _connections(session, b, n: int, rate: str, per: str) -> None:
    from .run import log
    loop = Loop()
    try:
        _wait_quiet(b.pid)
        before, _ = rss_bytes(b.pid)
        answered = [0]
        started = [0]

        def one():
            started[0] += 1
            c = loop.connect(b.host, b.port)
            c.request(18, 0, w.ApiVersionsRequest(), lambda resp: done())

        def done():
            answered[0] += 1
            if started[0] < n:
                one()

        t0, c0 = time.monotonic(), cpu_seconds(b.pid)
        for _ in range(min(32, n)):
            one()
        loop.run_until(lambda: answered[0] >= n, timeout=900)
        secs, cpu = time.monotonic() - t0, cpu_seconds(b.pid) - c0
        _wait_quiet(b.pid)
        after, _ = rss_bytes(b.pid)
        session.results.add(rate, session.name, n / secs, raw={"broker_cpu_s": cpu})
        session.results.add(per, session.name, (after - before) / n / 1024,
                            raw={"rss_before": before, "rss_after": after, "seconds": secs})
        log(f"{session.name}: {n} connections in {secs:.1f} s ({n / secs:.0f}/s, broker {cpu:.2f} cpu-s), "
            f"RSS {before / 2**20:.0f} → {after / 2**20:.0f} MiB")
    finally:
        loop.close()


# ------------------------------------------------------------------------------ group

def _subscription(topic: str) -> bytes:
    name = topic.encode()
    # ConsumerProtocolSubscription v0: version, topics [string], user_data (null)
    return struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", -1)


EMPTY_ASSIGNMENT = struct.pack(">hii", 0, 0, -1)   # ConsumerProtocolAssignment v0, no partitions


class _Member:
    def __init__(self, g: "_Group", idx: int):
        self.g = g
        self.conn = None          # connected by _Group.connect_all, before the clock starts
        self.member_id = ""
        self.generation = -1
        self.synced = -1      # generation of the last successful SyncGroup
        self.hb_pending = False

    def _connect(self):
        self.conn = self.g.loop.connect(self.g.host, self.g.port)
        self.conn.on_error = self.reconnect

    def reconnect(self, exc: Exception):
        """As a client library does when its coordinator connection breaks (seen for both
        brokers at 1,000 members on a loaded machine, a reset after one to three minutes;
        probably a connection whose handshake's last ACK a full accept queue dropped): a
        new connection and JoinGroup again with the member id it has."""
        self.g.resets += 1
        self.hb_pending = False
        self._connect()
        if self.g.stable_at is None:        # measured and leaving: nothing to rejoin
            self.join()

    def join(self):
        self.synced = -1
        self.g.requests["join"] += 1
        J = w.JoinGroupRequest
        body = J(group_id=self.g.group, session_timeout_ms=45000, rebalance_timeout_ms=120000,
                 member_id=self.member_id, group_instance_id=None, protocol_type="consumer",
                 protocols=[J.JoinGroupRequestProtocol(name="range", metadata=self.g.metadata)])
        self.conn.request(11, 5, body, self.on_join)

    def on_join(self, resp):
        self.g.note("join", resp.error_code, resp.generation_id)
        if resp.error_code == ERR_MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            return self.join()
        if resp.error_code in (ERR_REBALANCE_IN_PROGRESS,):
            return self.join()
        if resp.error_code in ERR_COORDINATOR_RETRY:
            return self.g.loop.later(0.05, self.join)
        if resp.error_code == ERR_UNKNOWN_MEMBER_ID:
            self.member_id = ""
            return self.join()
        if resp.error_code:
            raise RuntimeError(f"JoinGroup error {resp.error_code}")
        self.generation = resp.generation_id
        self.member_id = resp.member_id
        S = w.SyncGroupRequest
        assignments = []
        if resp.leader == resp.member_id:
            self.g.leader_members[resp.generation_id] = len(resp.members)
            assignments = [S.SyncGroupRequestAssignment(member_id=m.member_id, assignment=EMPTY_ASSIGNMENT)
                           for m in resp.members]
        self.g.requests["sync"] += 1
        self.conn.request(14, 3, S(group_id=self.g.group, generation_id=self.generation,
                                   member_id=self.member_id, group_instance_id=None,
                                   assignments=assignments), self.on_sync)

    def on_sync(self, resp):
        self.g.note("sync", resp.error_code, self.generation)
        if resp.error_code in (ERR_REBALANCE_IN_PROGRESS, ERR_ILLEGAL_GENERATION):
            return self.join()
        if resp.error_code in ERR_COORDINATOR_RETRY or resp.error_code == ERR_UNKNOWN_MEMBER_ID:
            if resp.error_code == ERR_UNKNOWN_MEMBER_ID:
                self.member_id = ""
            return self.g.loop.later(0.05, self.join)
        if resp.error_code:
            raise RuntimeError(f"SyncGroup error {resp.error_code}")
        self.synced = self.generation
        self.g.check()

    def heartbeat(self):
        if self.synced >= 0 and not self.hb_pending:
            self.hb_pending = True
            self.g.requests["heartbeat"] += 1
            self.conn.request(12, 3, w.HeartbeatRequest(group_id=self.g.group, generation_id=self.synced,
                                                        member_id=self.member_id, group_instance_id=None),
                              self.on_heartbeat)

    def on_heartbeat(self, resp):
        self.hb_pending = False
        self.g.note("heartbeat", resp.error_code, self.synced)
        if resp.error_code in (ERR_REBALANCE_IN_PROGRESS, ERR_ILLEGAL_GENERATION) and self.synced >= 0:
            self.join()
        elif resp.error_code == ERR_UNKNOWN_MEMBER_ID and self.synced >= 0:
            self.member_id = ""
            self.join()


class _Group:
    def __init__(self, loop: Loop, host: str, port: int, group: str, topic: str, members: int):
        self.loop, self.host, self.port, self.group = loop, host, port, group
        self.metadata = _subscription(topic)
        self.leader_members: dict[int, int] = {}
        self.stable_at: float | None = None
        self.resets = 0                      # member connections broken and made again
        self.t0 = time.monotonic()
        self.requests = {"join": 0, "sync": 0, "heartbeat": 0}
        self.answers: list[tuple[float, str, int, int]] = []   # (t - t0, api, error, generation)
        self.members = [_Member(self, i) for i in range(members)]

    def connect_all(self, at_once: int = 32, timeout: float = 900) -> float:
        """Connect every member (at most `at_once` being set up at a time, each answered
        one ApiVersions, as a client does first) before the JoinGroups start; returns the
        seconds it took. A member's coordinator connection exists before it joins; 1,000
        SYNs sent within milliseconds would instead overflow the broker's listen backlog
        (50 on both brokers), and the kernel's SYN retransmissions (1, 3, 7, 15, 31 s ...)
        would spread the joins over a minute: the accept path, which the connections
        row measures, not the group protocol."""
        t0 = time.monotonic()
        answered, started = [0], [0]
        n = len(self.members)

        def one():
            m = self.members[started[0]]
            started[0] += 1
            m._connect()
            m.conn.request(18, 0, w.ApiVersionsRequest(), lambda resp: done())

        def done():
            answered[0] += 1
            if started[0] < n:
                one()
        for _ in range(min(at_once, n)):
            one()
        self.loop.run_until(lambda: answered[0] >= n, timeout=timeout)
        return time.monotonic() - t0

    def note(self, api: str, error: int, generation: int) -> None:
        self.answers.append((time.monotonic() - self.t0, api, error, generation))

    def timeline(self) -> dict:
        """What the answers say about where the time went (load-independent counts beside
        a few times): when the members' first JoinGroup answers came (the joins' arrival),
        and for each generation when its first and last JoinGroup answers and its last
        SyncGroup answer came and how many members it had."""
        first = sorted(t for t, api, err, _ in self.answers
                       if api == "join" and err == ERR_MEMBER_ID_REQUIRED)
        gens: dict[int, dict] = {}
        for t, api, err, gen in self.answers:
            if err or gen < 0:
                continue
            e = gens.setdefault(gen, {"joined": 0})
            if api == "join":
                e["joined"] += 1
                e.setdefault("first_join_s", round(t, 3))
                e["last_join_s"] = round(t, 3)
            elif api == "sync":
                e["last_sync_s"] = round(t, 3)
        errors: dict[str, int] = {}
        for _, api, err, _ in self.answers:
            if err:
                errors[f"{api}:{err}"] = errors.get(f"{api}:{err}", 0) + 1

        def pct(q):
            return round(first[min(len(first) - 1, int(q * len(first)))], 3) if first else None
        return {"requests": dict(self.requests), "errors": errors,
                "first_join_answer_s": {"p0": pct(0), "p50": pct(0.5), "p90": pct(0.9),
                                        "p100": pct(1.0), "n": len(first)},
                "generations": {str(k): v for k, v in sorted(gens.items())}}

    def check(self):
        gens = {m.synced for m in self.members}
        if len(gens) == 1:
            (g,) = gens
            if g >= 0 and self.leader_members.get(g) == len(self.members) and self.stable_at is None:
                self.stable_at = time.monotonic()

    def heartbeats(self):
        if self.stable_at is None:
            for m in self.members:
                m.heartbeat()
            self.loop.later(0.5, self.heartbeats)


def _listen_overflows() -> int:
    """The kernel's count of connections refused by a full listen backlog (TcpExt
    ListenOverflows; the network namespace's, so other processes' too), -1 if unreadable."""
    try:
        with open("/proc/net/netstat") as f:
            lines = f.read().splitlines()
    except OSError:
        return -1
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            row = dict(zip(names.split()[1:], values.split()[1:]))
            return int(row.get("ListenOverflows", -1))
    return -1


def _find_coordinator(loop: Loop, host: str, port: int, groups: list[str], timeout: float = 300) -> None:
    """FindCoordinator until the broker names one for every group (Kafka creates
    __consumer_offsets on this request; JoinGroup alone gets NOT_COORDINATOR until then)."""
    ok = [False]
    conn = loop.connect(host, port)

    def ask():
        conn.request(10, 4, w.FindCoordinatorRequest(key_type=0, coordinator_keys=groups), answer)

    def answer(resp):
        if all(c.error_code == 0 for c in resp.coordinators):
            ok[0] = True
        else:
            loop.later(0.1, ask)
    ask()
    loop.run_until(lambda: ok[0], timeout=timeout)
    conn.close()


def group(session, shared=None) -> None:
    sizes = session.plan.scale.group_members
    with _node(session, "scale-group", shared) as b:
        loop = Loop()
        try:
            create_topics(b.bootstrap_servers, [("scale-group-topic", 10)])
            names = [f"scale-group-{m}" for m in sizes]
            _find_coordinator(loop, b.host, b.port, ["scale-warm", *names])
            # the group coordinator's partition (__consumer_offsets) is created on first use;
            # one member alone first, so that creation is not in the timed joins
            warm = _Group(loop, b.host, b.port, "scale-warm", "scale-group-topic", 1)
            warm.connect_all()
            for mem in warm.members:
                mem.join()
            loop.run_until(lambda: warm.stable_at is not None, timeout=300)
            _leave(loop, warm)
            for m, name in zip(sizes, names):
                _one_group(session, loop, b, m, name)
        finally:
            loop.close()


def _one_group(session, loop: Loop, b, m: int, name: str) -> None:
    from .run import log
    label = f"consumer group of {m:,} members joining at once (classic protocol)"
    sid = _declare(session, f"scale-group-join-{m}", f"{label}: time to Stable", "s",
                   secondary_unit="broker cpu-s")
    gen = _declare(session, f"scale-group-gen-{m}", f"{label}: generations until Stable",
                   "generations")
    g = _Group(loop, b.host, b.port, name, "scale-group-topic", m)
    overflows0 = _listen_overflows()
    connect_s = g.connect_all()
    connect_overflows = _listen_overflows() - overflows0
    overflows0 = _listen_overflows()
    profiling = getattr(session, "profile", None) is not None and session.name == "kbroker"
    if profiling:                 # --profile: py-spy over the join alone
        session._start_profiler(b)
    t0, c0, client0 = time.monotonic(), cpu_seconds(b.pid), time.process_time()
    g.t0 = t0
    for mem in g.members:
        mem.join()
    loop.later(0.5, g.heartbeats)
    try:
        loop.run_until(lambda: g.stable_at is not None, timeout=900)
    finally:
        if profiling:
            session._stop_profiler()
    secs, cpu = g.stable_at - t0, cpu_seconds(b.pid) - c0
    client_cpu = time.process_time() - client0     # the members' side (this process)
    generation = max(x.synced for x in g.members)
    session.results.add(sid, session.name, secs, cpu,
                        raw={"generation": generation, "broker_cpu_s": cpu,
                             "connection_resets": g.resets, "connect_s": round(connect_s, 3),
                             "client_cpu_s": round(client_cpu, 3),
                             "listen_overflows_connecting": connect_overflows,
                             "listen_overflows": _listen_overflows() - overflows0,
                             "timeline": g.timeline()})
    session.results.add(gen, session.name, generation)
    log(f"{session.name}: {m} members Stable after {secs:.2f} s (generation {generation}, "
        f"broker {cpu:.2f} cpu-s, {g.resets} member connection(s) reset and made again)")
    log(f"{session.name}: {m} members timeline {g.timeline()}")
    _leave(loop, g)


def _leave(loop: Loop, g: "_Group", timeout: float = 300) -> None:
    """Every member of `g` leaves at once (LeaveGroup v3, one request naming them all from the
    first member's connection); then the members' connections are closed."""
    L = w.LeaveGroupRequest
    done = [False]

    def answered(resp):
        if resp.error_code:
            raise RuntimeError(f"LeaveGroup error {resp.error_code}")
        done[0] = True
    g.members[0].conn.request(13, 3, L(group_id=g.group, members=[
        L.MemberIdentity(member_id=m.member_id, group_instance_id=None) for m in g.members]),
        answered)
    loop.run_until(lambda: done[0], timeout=timeout)
    for m in g.members:
        m.conn.close()


# ------------------------------------------------------------------------------ producers

def producers(session, shared=None) -> None:
    from .run import log
    n = session.plan.scale.producers
    sid = _declare(session, "scale-producers-rss", f"{n:,} idempotent producers: RSS per producer "
                   "(connections closed)", "KiB")
    with _node(session, "scale-producers", shared) as b:
        _producers(session, b, n, sid)


def _producers(session, b, n: int, sid: str) -> None:
    from .run import log
    loop = Loop()
    topic, parts = "scale-idempotent", 10
    try:
        create_topics(b.bootstrap_servers, [(topic, parts)])
        # one produce before the baseline: the partitions' logs are opened and written once
        warm = loop.connect(b.host, b.port)
        acked = [0]
        P = w.ProduceRequest

        def produce(conn, partition, pid, epoch):
            def retry(resp):      # a leader not known yet right after creation: ask again
                err = resp.responses[0].partition_responses[0].error_code
                if err in (3, 6):
                    return loop.later(0.1, lambda: produce(conn, partition, pid, epoch))
                on_produce(resp)
            batch = build_batch([(None, b"x" * 100, (), int(time.time() * 1000))], producer_id=pid, producer_epoch=epoch,
                                base_sequence=0 if pid >= 0 else -1)
            body = P(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[P.TopicProduceData(
                name=topic, partition_data=[P.PartitionProduceData(index=partition, records=batch)])])
            conn.request(0, 9, body, retry)

        def on_produce(resp):
            err = resp.responses[0].partition_responses[0].error_code
            if err:
                raise RuntimeError(f"Produce error {err}")
            acked[0] += 1
            if next_producer is not None and next_producer[0] < n:
                next_producer[0] += 1
                start(next_producer[0] - 1)

        next_producer = None

        for p in range(parts):
            produce(warm, p, -1, -1)
        loop.run_until(lambda: acked[0] >= parts, timeout=300)
        _wait_quiet(b.pid)
        before, _ = rss_bytes(b.pid)
        open_before = _established(b.port)
        acked[0] = 0
        conns = []
        next_producer = [min(32, n)]

        def start(i):
            c = loop.connect(b.host, b.port)
            conns.append(c)
            init(c, i)

        def init(c, i):
            c.request(22, 4, w.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1,
                                                     producer_id=-1, producer_epoch=-1),
                      lambda resp: on_init(c, i, resp))

        def on_init(c, i, resp):
            if resp.error_code in ERR_COORDINATOR_RETRY:   # Kafka loading its producer ids
                return loop.later(0.1, lambda: init(c, i))
            if resp.error_code:
                raise RuntimeError(f"InitProducerId error {resp.error_code}")
            produce(c, i % parts, resp.producer_id, resp.producer_epoch)

        t0, c0 = time.monotonic(), cpu_seconds(b.pid)
        for i in range(min(32, n)):     # 32 being set up at a time, as the connections row
            start(i)
        loop.run_until(lambda: acked[0] >= n, timeout=900)
        secs, cpu = time.monotonic() - t0, cpu_seconds(b.pid) - c0
        for c in conns:
            c.close()
        _wait_established(b.port, at_most=open_before)   # the broker has closed them too
        _wait_quiet(b.pid)
        after, _ = rss_bytes(b.pid)
        session.results.add(sid, session.name, (after - before) / n / 1024,
                            raw={"rss_before": before, "rss_after": after, "seconds": secs, "cpu_s": cpu})
        log(f"{session.name}: {n} idempotent producers in {secs:.1f} s, RSS {before / 2**20:.1f} → "
            f"{after / 2**20:.1f} MiB")
    finally:
        loop.close()
