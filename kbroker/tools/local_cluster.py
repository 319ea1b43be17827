"""``kbroker cluster``: a local multi-node cluster of combined nodes on loopback ports.

    kbroker cluster [--nodes 3] [--controllers 0] [--base-port 19092]
                    [--data-dir ./data-cluster] [--override key=value ...]

Node ``i`` (1-based) serves clients on ``base + 2(i-1)`` and its CONTROLLER listener on
``base + 2(i-1) + 1``; every node is a voter (``process.roles=broker,controller``) of
``controller.quorum.voters``, keeps its data in ``<data dir>/node-<i>`` and shares one
``cluster.id`` (generated once, kept in ``<data dir>/cluster.id``). Each node is a
``python -m kbroker serve`` child process with its log in ``<data dir>/node-<i>.log``;
SIGINT/SIGTERM stops them all gracefully. With ``--controllers K`` the first ``K`` nodes
are dedicated controllers (``process.roles=controller``: the voters, with only a
CONTROLLER listener) and the ``--nodes`` after them dedicated brokers
(``process.roles=broker``), the layout production KRaft clusters use; ``--controllers 1``
is the one-controller layout of Kafka's documentation. ``node_overrides`` is what tests and
benchmarks use to start the same nodes themselves.

Operating a running cluster (from another terminal, same ``--data-dir``)::

    kbroker cluster restart N [--kill] [--data-dir ./data-cluster]

asks the running ``kbroker cluster`` to stop node N (SIGTERM: a controlled shutdown; SIGKILL
with ``--kill``, a crash) and start it again with the same settings, and waits until it is
ready. It also brings back a node that died on its own. The request is a file
``<data dir>/node-<N>.restart`` that the runner (its pid in ``<data dir>/cluster.pid``) picks up;
each node's pid is in ``<data dir>/node-<N>.pid``.

The runner reports each node death once (``node N exited with RC``), not on every poll. The
nodes run in their own process group, so a Ctrl-C in the terminal reaches only the runner,
which then sends every node one SIGTERM (a graceful stop: controlled shutdown, drain) — the
nodes with the broker role first and the controller-only ones once those have stopped, so
the controllers are still there to grant the brokers' controlled shutdown — and exits 0 once
they have stopped (``make cluster`` ends without an error). A second Ctrl-C
sends each node its second SIGTERM, which stops a node at once (``kbroker.server.signals``);
a node still running ``FORCE_WAIT`` seconds later, or past its graceful bound
(``broker.session.timeout.ms`` plus the shutdown timeout, plus a margin), is killed. A
closed terminal (SIGHUP) stops them the same way, and a node whose runner died gets SIGTERM
from the kernel (``PR_SET_PDEATHSIG``).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def ports(node_id: int, base_port: int) -> tuple[int, int]:
    client = base_port + 2 * (node_id - 1)
    return client, client + 1


def voters_string(nodes: int, base_port: int, host: str = "127.0.0.1", voters=None) -> str:
    ids = range(1, nodes + 1) if voters is None else voters
    return ",".join(f"{i}@{host}:{ports(i, base_port)[1]}" for i in ids)


def node_overrides(node_id: int, *, nodes: int, base_port: int, data_root, cluster_id: str,
                   host: str = "127.0.0.1", extra: dict | None = None,
                   roles: str = "broker,controller", voters=None) -> dict[str, str]:
    """The configuration of node ``node_id``. ``roles`` is its ``process.roles``; ``voters``
    (default: every node 1..nodes) are the node ids of ``controller.quorum.voters``. As in
    Kafka, a controller-only node has only its CONTROLLER listener (no client listener) and
    a broker-only node only its PLAINTEXT one."""
    client, controller = ports(node_id, base_port)
    role_set = {r.strip() for r in roles.split(",")}
    listeners = []
    if "broker" in role_set:
        listeners.append(f"PLAINTEXT://{host}:{client}")
    if "controller" in role_set:
        listeners.append(f"CONTROLLER://{host}:{controller}")
    out = {
        "node.id": str(node_id),
        "process.roles": roles,
        "listeners": ",".join(listeners),
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": voters_string(nodes, base_port, host, voters),
        "log.dirs": str(Path(data_root) / f"node-{node_id}"),
        "cluster.id": cluster_id,
        "offsets.topic.replication.factor": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    if "broker" in role_set:
        out["advertised.listeners"] = f"PLAINTEXT://{host}:{client}"
    out.update(extra or {})
    return out


def serve_command(overrides: dict[str, str], python: str = sys.executable) -> list[str]:
    cmd = [python, "-m", "kbroker", "serve"]
    for k, v in overrides.items():
        cmd += ["--override", f"{k}={v}"]
    return cmd


def cluster_id_for(data_root) -> str:
    root = Path(data_root)
    root.mkdir(parents=True, exist_ok=True)
    p = root / "cluster.id"
    if p.exists():
        return p.read_text().strip()
    from kbroker.config.broker import new_cluster_id
    cid = new_cluster_id()
    p.write_text(cid + "\n")
    return cid


def cluster_layout(nodes: int, controllers: int = 0) -> dict[int, str]:
    """``{node id: process.roles}``: ``nodes`` combined nodes, or ``controllers`` dedicated
    controllers followed by ``nodes`` dedicated brokers."""
    if controllers <= 0:
        return {i: "broker,controller" for i in range(1, nodes + 1)}
    out = {i: "controller" for i in range(1, controllers + 1)}
    out.update({i: "broker" for i in range(controllers + 1, controllers + nodes + 1)})
    return out


RESTART_SUFFIX = ".restart"
FORCE_WAIT = 10.0        # s a node may take after its second SIGTERM before it is killed


def graceful_stop_timeout(extra: dict[str, str] | None) -> float:
    """How long a node may take to stop after one SIGTERM: its controlled-shutdown wait
    (``broker.session.timeout.ms``), the drain (``kbroker serve``'s default shutdown
    timeout, 5 s) and a margin for closing the logs."""
    try:
        session_ms = int((extra or {}).get("broker.session.timeout.ms", 9000))
    except ValueError:
        session_ms = 9000
    return session_ms / 1000 + 5.0 + 10.0


def add_control_subcommands(csub) -> None:
    """``kbroker cluster restart``: registered by ``kbroker.tools.cli`` beside describe/quorum."""
    s = csub.add_parser("restart", help="restart one node of a running `kbroker cluster`")
    s.add_argument("node", type=int, help="node id (1-based)")
    s.add_argument("--data-dir", default="./data-cluster", metavar="DIR",
                   help="the running cluster's --data-dir (default ./data-cluster)")
    s.add_argument("--kill", action="store_true", help="SIGKILL the node (a crash) instead of SIGTERM")
    s.add_argument("--timeout", type=float, default=90.0, metavar="SECONDS",
                   help="how long to wait for the node to be ready again")
    s.set_defaults(func=cmd_restart)


def _runner_alive(root: Path) -> bool:
    try:
        pid = int((root / "cluster.pid").read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def cmd_restart(args) -> int:
    from kbroker.tools.common import CommandError
    root = Path(args.data_dir).resolve()
    if not _runner_alive(root):
        raise CommandError(f"no running `kbroker cluster` with data dir {root} "
                           f"(no live pid in {root / 'cluster.pid'})")
    if not (root / f"node-{args.node}").is_dir():
        raise CommandError(f"node {args.node} is not part of the cluster in {root}")
    request = root / f"node-{args.node}{RESTART_SUFFIX}"
    request.write_text("kill\n" if args.kill else "term\n")
    deadline = time.monotonic() + args.timeout
    while request.exists():
        if time.monotonic() > deadline or not _runner_alive(root):
            request.unlink(missing_ok=True)
            raise CommandError(f"node {args.node} was not ready again within {args.timeout:g} s; "
                               f"see {root / f'node-{args.node}.log'}")
        time.sleep(0.1)
    print(f"node {args.node} restarted and ready")
    return 0


def _stop_with_runner() -> None:
    """preexec_fn: Linux sends the node SIGTERM (a graceful stop) if the runner dies, since a
    node in its own process group no longer gets the terminal's signals."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _Node:
    """One child ``kbroker serve`` of the runner: its command, process and log."""

    def __init__(self, node_id: int, command: list[str], log_path: Path, env: dict,
                 stop_timeout: float = 30.0, roles: str = "broker,controller"):
        self.id, self.command, self.log_path, self.env = node_id, command, log_path, env
        self.is_broker = "broker" in roles
        self.stop_timeout = stop_timeout
        self.proc: subprocess.Popen | None = None
        self.terms = 0               # SIGTERMs sent to the running process (the 2nd forces)
        self.log_mark = 0            # log size at the last start: readiness is looked for after it
        self.reported_exit = False   # its death has been reported (once)

    def start(self) -> None:
        self.log_mark = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as logf:
            # own process group: a terminal Ctrl-C reaches the runner only, which stops the
            # nodes once and in order (a node signalled twice stops at once, uncleanly)
            self.proc = subprocess.Popen(self.command, stdout=logf, stderr=subprocess.STDOUT,
                                         env=self.env, process_group=0, preexec_fn=_stop_with_runner)
        self.reported_exit = False
        self.terms = 0
        self.log_path.with_suffix(".pid").write_text(f"{self.proc.pid}\n")

    def is_ready(self) -> bool:
        with open(self.log_path, "rb") as f:
            f.seek(self.log_mark)
            return b"kbroker ready:" in f.read()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def terminate(self, *, force: bool = False) -> None:
        """One SIGTERM (a graceful stop), or with ``force`` the node's second one (it stops
        at once). Never a second one by accident: a node that gets two stops uncleanly."""
        if self.running() and self.terms < (2 if force else 1):
            self.proc.send_signal(signal.SIGTERM)
            self.terms += 1

    def stop(self, sig=signal.SIGTERM) -> None:
        """Stop the node (SIGTERM: gracefully, within its stop timeout; else killed)."""
        if not self.running():
            return
        if sig == signal.SIGTERM:
            self.terminate()
        else:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _clean_exit(rc: int | None) -> bool:
    return rc in (0, -signal.SIGTERM, -signal.SIGINT, 130)


def run_cluster(nodes: int, base_port: int, data_root, extra: dict[str, str],
                start_timeout: float = 60.0, controllers: int = 0) -> int:
    root = Path(data_root).resolve()
    cid = cluster_id_for(root)
    layout = cluster_layout(nodes, controllers)
    voters = [i for i, r in layout.items() if "controller" in r]
    total = len(layout)
    # partition data is replicated: the internal topics get Kafka's replication (3, min ISR 2)
    # as far as the brokers allow, so group offsets and transactions survive a node's loss
    brokers = sum(1 for r in layout.values() if "broker" in r)
    extra = {"offsets.topic.replication.factor": str(min(3, brokers)),
             "transaction.state.log.replication.factor": str(min(3, brokers)),
             "transaction.state.log.min.isr": str(min(2, brokers)),
             **(extra or {})}
    env = dict(os.environ)
    repo = Path(__file__).resolve().parents[2]
    # no empty entry: it would put each node's working directory on its sys.path
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(repo), env.get("PYTHONPATH")) if p)
    members: list[_Node] = []
    for i in range(1, total + 1):
        cmd = serve_command(node_overrides(i, nodes=total, base_port=base_port, data_root=root,
                                           cluster_id=cid, extra=extra, roles=layout[i], voters=voters))
        members.append(_Node(i, cmd, root / f"node-{i}.log", env, graceful_stop_timeout(extra), layout[i]))
    for stale in root.glob(f"node-*{RESTART_SUFFIX}"):
        stale.unlink()
    (root / "cluster.pid").write_text(f"{os.getpid()}\n")
    signals = 0

    def on_signal(signum, frame):
        nonlocal signals
        signals += 1      # _supervise and _stop_all look at it (a second one: no more grace)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    rc = 1
    try:
        for n in members:
            n.start()
        rc = _supervise(members, root, cid, layout, voters, total, base_port, start_timeout,
                        lambda: signals > 0)
    finally:
        rc = _stop_all(members, lambda: signals > 1) or rc
        (root / "cluster.pid").unlink(missing_ok=True)
        for s, h in old.items():
            signal.signal(s, h)
    return rc


def _stop_all(members: list[_Node], forced) -> int:
    """One SIGTERM to every running node with the broker role at once, then, once they have
    stopped, to the controller-only nodes (Kafka's documented order: a broker's controlled
    shutdown is granted by the active controller, which must still be there); once
    ``forced()`` (a second Ctrl-C) every node still running gets its second SIGTERM. A node
    still running past its graceful bound, or ``FORCE_WAIT`` after the force, is killed. 1
    if one stopped uncleanly."""
    running = [n for n in members if n.running()]
    brokers = [n for n in running if n.is_broker]
    forcing = False
    for group in (brokers, [n for n in running if not n.is_broker]):
        forcing = _stop_group(group, forced, forcing)
    rc = 0
    for n in running:
        n.proc.wait()
        if not _clean_exit(n.proc.returncode):
            print(f"kbroker cluster: node {n.id} stopped with {n.proc.returncode}; see {n.log_path}",
                  file=sys.stderr, flush=True)
            rc = 1
    return rc


def _stop_group(group: list[_Node], forced, forcing: bool) -> bool:
    """One SIGTERM to each node of ``group``, then wait until they have stopped; each gets
    its second one once ``forced()``, and a group stopped after the force (``forcing``) is
    only given ``FORCE_WAIT``. Returns whether the stop is being forced."""
    for n in group:
        n.terminate(force=forcing)
    deadline = time.monotonic() + max((n.stop_timeout for n in group), default=0)
    if forcing:
        deadline = min(deadline, time.monotonic() + FORCE_WAIT)
    while any(n.running() for n in group):
        if forced() and not forcing:
            forcing = True
            for n in group:
                n.terminate(force=True)
            deadline = min(deadline, time.monotonic() + FORCE_WAIT)
        if time.monotonic() > deadline:
            for n in group:
                if n.running():
                    n.proc.kill()
            break
        time.sleep(0.05)
    return forcing


def _report_deaths(members: list[_Node]) -> bool:
    """Print one line per node that exited since the last call; True if any did."""
    died = False
    for n in members:
        if n.proc is not None and n.proc.poll() is not None and not n.reported_exit:
            n.reported_exit = True
            died = True
            print(f"kbroker cluster: node {n.id} exited with {n.proc.returncode}; see {n.log_path} "
                  f"(`kbroker cluster restart {n.id}` starts it again)", file=sys.stderr, flush=True)
    return died


def _supervise(members, root, cid, layout, voters, total, base_port, start_timeout, stopping) -> int:
    deadline = time.monotonic() + start_timeout
    ready: set[int] = set()
    while not stopping() and len(ready) < total and time.monotonic() < deadline:
        for n in members:
            if n.id not in ready and n.is_ready():
                ready.add(n.id)
        if _report_deaths(members):
            return 1
        time.sleep(0.05)
    if stopping():
        return 0
    if len(ready) < total:
        print("kbroker cluster: nodes did not become ready in time", file=sys.stderr)
        return 1
    boot = ",".join(f"127.0.0.1:{ports(i, base_port)[0]}" for i, r in layout.items() if "broker" in r)
    print(f"kbroker cluster ready: {total} nodes, cluster {cid}, bootstrap {boot} "
          f"(controllers {voters_string(total, base_port, voters=voters)}); logs in {root}", flush=True)
    by_id = {n.id: n for n in members}
    while not stopping():
        time.sleep(0.1)
        _report_deaths(members)
        for request in root.glob(f"node-*{RESTART_SUFFIX}"):
            try:
                node_id = int(request.name[len("node-"):-len(RESTART_SUFFIX)])
                how = request.read_text().strip()
            except (ValueError, OSError):
                continue
            n = by_id.get(node_id)
            if n is None:
                request.unlink(missing_ok=True)
                continue
            _restart(n, how, stopping)
            request.unlink(missing_ok=True)
    return 0


def _restart(n: _Node, how: str, stopping) -> None:
    print(f"kbroker cluster: restarting node {n.id} ({'SIGKILL' if how == 'kill' else 'SIGTERM'})",
          file=sys.stderr, flush=True)
    n.stop(signal.SIGKILL if how == "kill" else signal.SIGTERM)
    n.start()
    deadline = time.monotonic() + 90
    while not stopping() and time.monotonic() < deadline and n.proc.poll() is None and not n.is_ready():
        time.sleep(0.05)
    if n.is_ready():
        print(f"kbroker cluster: node {n.id} ready again", file=sys.stderr, flush=True)
