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
(``process.roles=broker``), the layout production KRaft clusters use. ``node_overrides`` is what tests and benchmarks
use to start the same nodes themselves.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kbroker.config import new_cluster_id


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
    procs: list[tuple[int, subprocess.Popen, Path]] = []
    env = dict(os.environ)
    repo = Path(__file__).resolve().parents[1]
    env["PYTHONPATH"] = str(repo) + os.pathsep + env.get("PYTHONPATH", "")
    for i in range(1, total + 1):
        log_path = root / f"node-{i}.log"
        with open(log_path, "ab") as logf:
            p = subprocess.Popen(serve_command(node_overrides(i, nodes=total, base_port=base_port,
                                                              data_root=root, cluster_id=cid, extra=extra,
                                                              roles=layout[i], voters=voters)),
                                 stdout=logf, stderr=subprocess.STDOUT, env=env)
        procs.append((i, p, log_path))
    stop = False

    def on_signal(signum, frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    deadline = time.monotonic() + start_timeout
    ready: set[int] = set()
    while not stop and len(ready) < total and time.monotonic() < deadline:
        for i, p, log_path in procs:
            if i not in ready and "kbroker ready:" in log_path.read_text(errors="replace"):
                ready.add(i)
            if p.poll() is not None:
                print(f"kbroker cluster: node {i} exited with {p.returncode}; see {log_path}", file=sys.stderr)
                stop = True
        time.sleep(0.05)
    if len(ready) == total:
        boot = ",".join(f"127.0.0.1:{ports(i, base_port)[0]}" for i, r in layout.items() if "broker" in r)
        print(f"kbroker cluster ready: {total} nodes, cluster {cid}, bootstrap {boot} "
              f"(controllers {voters_string(total, base_port, voters=voters)}); logs in {root}", flush=True)
    elif not stop:
        print("kbroker cluster: nodes did not become ready in time", file=sys.stderr)
        stop = True
    while not stop:
        time.sleep(0.2)
        for i, p, log_path in procs:
            if p.poll() is not None:
                print(f"kbroker cluster: node {i} exited with {p.returncode}", file=sys.stderr)
    for _, p, _ in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    rc = 0
    for i, p, _ in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        rc = rc or (p.returncode if p.returncode not in (0, -signal.SIGTERM) else 0)
    return rc
