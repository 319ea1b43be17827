"""Helpers for multi-node tests: node processes of one cluster and raw admin calls."""
from __future__ import annotations

import contextlib
import os
import socket
import threading
import struct
import time
from pathlib import Path

from kbroker.testing.processes import _HTTP
from kbroker.tools.local_cluster import node_overrides, ports
from kbroker.config.broker import new_cluster_id
from kbroker.wire import messages as w
from kbroker.wire.protocol import decode_response, encode_request
from tests.support.broker_proc import REPO_ROOT, BrokerProcess, free_port, free_ports  # noqa: F401
from tests.support.prometheus_text import scrape, total
from tests.support.waiting import wait_for  # noqa: F401 - the cluster tests' wait

FAST = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "controller.quorum.election.timeout.ms": "500",
    "controller.quorum.fetch.timeout.ms": "1000",
    "controller.quorum.request.timeout.ms": "1000",
}


def free_base_port(count: int) -> int:
    """A base port with ``count`` consecutive free ports after it (best effort)."""
    return free_ports(count)


class NodeProcess(BrokerProcess):
    """One node of a local cluster (``kbroker.tools.local_cluster.node_overrides``): combined by
    default, or ``roles="controller"`` / ``roles="broker"``. ``port`` is the client
    listener of a node with the broker role and the CONTROLLER listener of a
    controller-only node (which has no client listener). With ``net`` (a
    ``tests.support.netns.TestNet``) node i runs inside host i and listens, advertises and
    names every voter at the hosts' addresses; else everything is on 127.0.0.1."""

    def __init__(self, node_id: int, nodes: int, base_port: int, root, cluster_id: str, extra=None,
                 roles: str = "broker,controller", voters=None, net=None):
        client, controller = ports(node_id, base_port)
        self.node_id = node_id
        self.roles = roles
        self.controller_port = controller if "controller" in roles else None
        self.client_port = client if "broker" in roles else None
        host = net.address(node_id) if net is not None else "127.0.0.1"
        extra = dict(FAST, **(extra or {}))
        if net is not None:
            extra.setdefault("controller.quorum.voters", ",".join(
                f"{j}@{net.address(j)}:{ports(j, base_port)[1]}"
                for j in (voters if voters is not None else range(1, nodes + 1))))
        super().__init__(root / f"node-{node_id}", port=client if "broker" in roles else controller,
                         overrides=node_overrides(node_id, nodes=nodes, base_port=base_port,
                                                  data_root=root, cluster_id=cluster_id, host=host,
                                                  extra=extra, roles=roles, voters=voters),
                         start_timeout=60.0)
        self.host = host
        self.prefix = net.enter(node_id) if net is not None else []

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def metrics_url(self) -> str:
        """The /metrics of this node's current run (started with ``kbroker.http.listen``)."""
        found = _HTTP.findall(self.log_text())
        assert found, f"node {self.node_id} has no http listener (kbroker.http.listen)"
        return f"http://{found[-1]}/metrics"

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "kbroker", "serve"]
        for k, v in self.overrides.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd + self.extra_args


class Cluster:
    """Nodes 1..``nodes`` of one cluster. ``roles`` maps node ids to ``process.roles``
    (default: every node combined); the voters are the nodes with the controller role."""

    def __init__(self, root, nodes: int = 3, extra=None, roles: dict[int, str] | None = None,
                 net=None):
        self.root = root
        self.base = free_base_port(2 * nodes)
        self.cluster_id = new_cluster_id()
        self.net = net           # the test hosts the nodes run in (tests/support/netns.py), or None
        roles = {i: (roles or {}).get(i, "broker,controller") for i in range(1, nodes + 1)}
        voters = [i for i, r in roles.items() if "controller" in r]
        self.nodes = {i: NodeProcess(i, nodes, self.base, root, self.cluster_id, extra,
                                     roles=roles[i], voters=voters, net=net)
                      for i in range(1, nodes + 1)}

    def start_all(self) -> None:
        from tests.support.parallel import in_threads
        in_threads(lambda n: n.start(), self.nodes.values())

    def stop_all(self) -> None:
        for n in self.nodes.values():
            if n.proc is not None and n.proc.poll() is None:
                n.proc.send_signal(15)
        for n in self.nodes.values():
            if n.proc is not None:
                n.stop()

    def alive(self):
        """Running nodes with the broker role (the ones clients talk to)."""
        return [n for n in self.nodes.values()
                if n.is_broker and n.proc is not None and n.proc.poll() is None]

    def alive_controllers(self):
        return [n for n in self.nodes.values()
                if n.controller_port and n.proc is not None and n.proc.poll() is None]

    def brokers(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.is_broker]

    def bootstrap(self, node_id: int | None = None) -> str:
        if node_id is not None:
            return self.nodes[node_id].bootstrap
        return ",".join(n.bootstrap for n in self.alive())

    def kill(self, node_id: int) -> None:
        """SIGKILL one node (a crash)."""
        self.nodes[node_id].kill()

    def start(self, node_id: int) -> None:
        self.nodes[node_id].start()

    def any_port(self, exclude=()) -> int:
        """The client port of some running broker not in ``exclude``."""
        for n in self.alive():
            if n.node_id not in exclude:
                return n.port
        raise AssertionError("no running broker")

    def shutdown(self) -> None:
        """SIGKILL whatever is still running (fixture teardown)."""
        for n in self.nodes.values():
            if n.proc is not None and n.proc.poll() is None:
                n.kill()


class ConfiguredNode(BrokerProcess):
    """A node started from its own server.properties (``node-N.properties`` under ``root``),
    as an operator runs one: combined (both ports given), broker-only (``controller`` None)
    or controller-only (``client`` None: its CONTROLLER listener alone, which is then
    ``port``). ``quorum`` holds its quorum keys (``controller.quorum.voters`` or
    ``.bootstrap.servers``); the directory is formatted by the test
    (``kbroker_cli("storage", "format", ...)``)."""

    def __init__(self, root: Path, node_id: int, client: int | None, controller: int | None, quorum: dict):
        self.node_id = node_id
        self.controller_port = controller
        self.client_port = client
        self.config_path = Path(root) / f"node-{node_id}.properties"
        listeners = ([f"PLAINTEXT://127.0.0.1:{client}"] if client else []) \
            + ([f"CONTROLLER://127.0.0.1:{controller}"] if controller else [])
        props = {
            "node.id": node_id,
            "process.roles": ",".join(r for r, port in (("broker", client), ("controller", controller)) if port),
            "listeners": ",".join(listeners),
            **({"advertised.listeners": f"PLAINTEXT://127.0.0.1:{client}"} if client else {}),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            **quorum,
            "log.dirs": Path(root) / f"node-{node_id}" / "data",
            "offsets.topic.replication.factor": 1, "group.initial.rebalance.delay.ms": 0, **FAST}
        Path(root).mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        super().__init__(Path(root) / f"node-{node_id}" / "data", port=client or controller, start_timeout=60.0)

    def command(self) -> list[str]:
        return [self.python, "-m", "kbroker", "serve", "--config", str(self.config_path)]

    @property
    def directory_id(self) -> str:
        from kbroker.config.broker import parse_properties
        return parse_properties((self.data_dir / "meta.properties").read_text())["directory.id"]

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def kbroker_cli(*args: str):
    """``python -m kbroker ARGS`` (a CompletedProcess), forked from the test process's resident
    Python (compat_tests/cli_fork.py)."""
    from compat_tests import cli_fork
    return cli_fork.kbroker(*args, timeout=120)


def kafka_tool(tool: str, *args: str):
    """One of Kafka 4.3.1's command-line tools (``kafka-features``, ``kafka-metadata-quorum``…)."""
    from compat_tests.cli import run_tool
    return run_tool(tool, list(args), timeout=120)


def voters_of(port: int) -> dict[int, str]:
    """Voter id -> directory id as DescribeQuorum v2 on ``port`` reports them."""
    from kbroker.raft.control import uuid_to_kafka
    part, resp = describe_quorum(port, 2)
    assert part is not None and part.error_code == 0, resp
    return {v.replica_id: uuid_to_kafka(v.replica_directory_id) for v in part.current_voters}


def call(addr, api_key: int, version: int, body, timeout: float = 10.0):
    """One request/response on a fresh blocking socket to ``addr``: a port on 127.0.0.1 or
    a ``(host, port)`` pair (a node's ``addr``)."""
    host, port = addr if isinstance(addr, tuple) else ("127.0.0.1", addr)
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(encode_request(api_key, version, 7, "cluster-test", body))
        size = struct.unpack(">i", _recv(s, 4))[0]
        return decode_response(_recv(s, size), api_key, version)[1]


def _recv(s, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def describe_quorum(port: int, version: int = 2):
    R = w.DescribeQuorumRequest
    resp = call(port, 55, version, R(topics=[R.TopicData(topic_name="__cluster_metadata",
                                                         partitions=[R.PartitionData(partition_index=0)])]))
    return resp.topics[0].partitions[0] if resp.topics else None, resp


def quorum_ends(addr) -> dict[int, int]:
    """``{voter id: log end offset}`` as the quorum leader reports them (DescribeQuorum at
    ``addr``: the leader's controller listener, or a broker that forwards to it)."""
    p, resp = describe_quorum(addr)
    assert p is not None and p.error_code == 0, resp
    return {v.replica_id: v.log_end_offset for v in p.current_voters}


def assert_fetches_stalled(addr, leader: int, victim: int, hold: float, write=None) -> int:
    """Proof that a cut between ``victim`` and the quorum leader ``leader`` took effect: the
    victim's log end offset as the leader sees it (the position of its last Fetch that got
    through) stays put for ``hold`` seconds while the leader's own log grows (``write()``
    appends metadata records; Kafka's leader also writes a NoOpRecord when idle). A cut that
    misses the victim's fetches fails here. Returns the stalled offset."""
    time.sleep(0.5)          # let a Fetch sent just before the cut land first
    start = quorum_ends(addr)
    if write is not None:
        write()
    time.sleep(hold)
    end = quorum_ends(addr)
    assert end[leader] > start[victim], f"nothing was written during the cut: {start} -> {end}"
    assert end[victim] == start[victim], \
        f"node {victim} kept fetching from the leader through the cut: {start} -> {end}"
    return start[victim]


def requests_received(cluster, api: str, nodes) -> dict[int, float]:
    """How many ``api`` requests (its name: "Fetch") each of ``nodes`` has answered so far,
    from the broker's own request counters on /metrics."""
    return {i: total(scrape(cluster.nodes[i].metrics_url),
                     "kafka_network_requestmetrics_requests_total", request=api) for i in nodes}


def metadata(port: int):
    return call(port, 3, 12, w.MetadataRequest(topics=None, allow_auto_topic_creation=False))


# ---------------------------------------------------------------------- partition state

class PartitionState(tuple):
    """``(leader, leader_epoch, replicas, isr)`` of one partition as Metadata reports it."""
    __slots__ = ()

    def __new__(cls, leader, leader_epoch, replicas, isr, error_code=0):
        return super().__new__(cls, (leader, leader_epoch, tuple(replicas), tuple(sorted(isr)), error_code))

    leader = property(lambda self: self[0])
    leader_epoch = property(lambda self: self[1])
    replicas = property(lambda self: self[2])
    isr = property(lambda self: self[3])
    error_code = property(lambda self: self[4])


def topic_state(port: int, topic: str) -> dict[int, PartitionState]:
    """Every partition of ``topic`` as the node on ``port`` reports it (empty if unknown)."""
    md = call(port, 3, 12, w.MetadataRequest(topics=[w.MetadataRequest.MetadataRequestTopic(name=topic)],
                                              allow_auto_topic_creation=False))
    for t in md.topics:
        if t.name == topic and t.error_code == 0:
            return {p.partition_index: PartitionState(p.leader_id, p.leader_epoch, p.replica_nodes,
                                                       p.isr_nodes, p.error_code)
                    for p in t.partitions}
    return {}


def agreed_state(cluster, topic: str) -> dict[int, PartitionState] | None:
    """The topic's partitions if every running broker reports the same, else None."""
    states = []
    for n in cluster.alive():
        try:
            states.append(topic_state(n.addr, topic))
        except (OSError, ConnectionError):
            return None
    if not states or not states[0] or any(s != states[0] for s in states):
        return None
    return states[0]


def wait_for_isr(cluster, topic: str, isr=None, partitions=None, timeout: float = 60.0,
                 what: str | None = None) -> dict[int, PartitionState]:
    """Wait until every running broker agrees that every partition (or ``partitions``) has a
    leader and the ISR ``isr`` (default: all of its replicas)."""
    seen = []

    def ok():
        st = agreed_state(cluster, topic)
        seen[:] = [st]
        if not st:
            return None
        for i, p in st.items():
            if partitions is not None and i not in partitions:
                continue
            want = tuple(sorted(isr if isr is not None else p.replicas))
            if p.leader < 0 or p.isr != want:
                return None
        return st
    try:
        return wait_for(ok, timeout=timeout, what=what or f"ISR {isr or 'of all replicas'} on {topic}")
    except AssertionError as e:
        raise AssertionError(f"{e}; last agreed state: {seen[0] if seen else None}") from None


def leader_of(cluster, topic: str, partition: int) -> int:
    """The leader of a partition once all running brokers agree on one."""
    st = wait_for(lambda: (lambda s: s if s and s.get(partition) and s[partition].leader >= 0 else None)(
        agreed_state(cluster, topic)), what=f"a leader of {topic}-{partition}")
    return st[partition].leader


# ---------------------------------------------------------------------- replica logs on disk

def log_batches(partition_dir) -> list[tuple[int, int, bytes]]:
    """``(base_offset, last_offset, batch bytes)`` of every complete record batch in a
    partition directory's segments, in offset order. Reads the files the way a tool like
    kafka-dump-log does: the v2 batch header only (base offset, length, last offset delta)."""
    out = []
    for seg in sorted(Path(partition_dir).glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos + 61 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            end = pos + 12 + length
            if length <= 0 or end > len(data):
                break                      # a batch still being written, or preallocated space
            last_delta = struct.unpack_from(">i", data, pos + 23)[0]
            out.append((base, base + last_delta, data[pos:end]))
            pos = end
    return out


def replica_dir(cluster, node_id: int, topic: str, partition: int) -> Path:
    return Path(cluster.nodes[node_id].data_dir) / f"{topic}-{partition}"


def replica_log_end(cluster, node_id: int, topic: str, partition: int) -> int:
    """Log end offset of a replica as its files say (0 for no batches)."""
    batches = log_batches(replica_dir(cluster, node_id, topic, partition))
    return batches[-1][1] + 1 if batches else 0


def describe_log_dirs(port: int, topic: str) -> dict[int, int]:
    """Partition sizes of ``topic`` on the node on ``port`` (DescribeLogDirs v4)."""
    R = w.DescribeLogDirsRequest
    resp = call(port, 35, 4, R(topics=None))
    out = {}
    for d in resp.results:
        for t in d.topics:
            if t.name == topic:
                for p in t.partitions:
                    out[p.partition_index] = p.partition_size
    return out


def list_offsets(port: int, topic: str, partition: int, timestamp: int = -1) -> tuple[int, int]:
    """``(error_code, offset)`` of ListOffsets v7 (latest by default: the high watermark)."""
    R = w.ListOffsetsRequest
    resp = call(port, 2, 7, R(replica_id=-1, isolation_level=0, topics=[R.ListOffsetsTopic(
        name=topic, partitions=[R.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1,
                                                       timestamp=timestamp)])]))
    p = resp.topics[0].partitions[0]
    return p.error_code, p.offset


class AckedProducer(threading.Thread):
    """kafka-python; writes numbered records (acks=all) until stopped; remembers what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str):
        super().__init__(daemon=True)
        from kafka import KafkaProducer
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=20,
                                      request_timeout_ms=20000, max_in_flight_requests_per_connection=1)
        self.topic = topic
        self.acked: list[int] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stopped.is_set():
            try:
                self.producer.send(self.topic, str(i).encode()).get(timeout=30)
                self.acked.append(i)
            except Exception:  # noqa: BLE001 - unacknowledged: not counted, tried with the next
                pass
            i += 1
            time.sleep(0.01)
        self.producer.close()


@contextlib.contextmanager
def cluster_command(args: list[str], out_path: Path, ready_timeout: float = 90.0):
    """``kbroker cluster ARGS`` as a child process: yields its ready line once printed; on
    leaving, one SIGTERM (the runner's graceful stop of every node), which must end it with
    exit code 0 within a minute."""
    import re
    import signal
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(out_path, "wb") as out:
        p = subprocess.Popen([sys.executable, "-m", "kbroker", "cluster", *args],
                             stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env)
    try:
        yield wait_for(lambda: re.search(r"kbroker cluster ready: .*", out_path.read_text(errors="replace")),
                       timeout=ready_timeout, what="the cluster's ready line").group(0)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise
    assert rc == 0, out_path.read_text(errors="replace")[-3000:]
