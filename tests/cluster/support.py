"""Helpers for multi-node tests: node processes of one cluster and raw admin calls."""
from __future__ import annotations

import socket
import threading
import struct
import time
from pathlib import Path

from kbroker.cluster import node_overrides, ports
from kbroker.config import new_cluster_id
from kbroker.wire import messages as w
from kbroker.wire.protocol import decode_response, encode_request
from tests.support.broker_proc import REPO_ROOT, BrokerProcess, free_port, free_ports  # noqa: F401

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
    """One node of a local cluster (``kbroker.cluster.node_overrides``): combined by
    default, or ``roles="controller"`` / ``roles="broker"``. ``port`` is the client
    listener of a node with the broker role and the CONTROLLER listener of a
    controller-only node (which has no client listener)."""

    def __init__(self, node_id: int, nodes: int, base_port: int, root, cluster_id: str, extra=None,
                 roles: str = "broker,controller", voters=None):
        client, controller = ports(node_id, base_port)
        self.node_id = node_id
        self.roles = roles
        self.controller_port = controller if "controller" in roles else None
        self.client_port = client if "broker" in roles else None
        super().__init__(root / f"node-{node_id}", port=client if "broker" in roles else controller,
                         overrides=node_overrides(node_id, nodes=nodes, base_port=base_port,
                                                  data_root=root, cluster_id=cluster_id,
                                                  extra=dict(FAST, **(extra or {})),
                                                  roles=roles, voters=voters),
                         start_timeout=60.0)

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "kbroker", "serve"]
        for k, v in self.overrides.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd


class Cluster:
    """Nodes 1..``nodes`` of one cluster. ``roles`` maps node ids to ``process.roles``
    (default: every node combined); the voters are the nodes with the controller role."""

    def __init__(self, root, nodes: int = 3, extra=None, roles: dict[int, str] | None = None):
        self.root = root
        self.base = free_base_port(2 * nodes)
        self.cluster_id = new_cluster_id()
        roles = {i: (roles or {}).get(i, "broker,controller") for i in range(1, nodes + 1)}
        voters = [i for i, r in roles.items() if "controller" in r]
        self.nodes = {i: NodeProcess(i, nodes, self.base, root, self.cluster_id, extra,
                                     roles=roles[i], voters=voters)
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


def call(port: int, api_key: int, version: int, body, timeout: float = 10.0):
    """One request/response on a fresh blocking socket."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
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


def metadata(port: int):
    return call(port, 3, 12, w.MetadataRequest(topics=None, allow_auto_topic_creation=False))


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1, what: str = "condition",
             errors: tuple[type[BaseException], ...] = (OSError, ConnectionError)):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except errors as e:  # retried until the deadline
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


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
            states.append(topic_state(n.port, topic))
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
