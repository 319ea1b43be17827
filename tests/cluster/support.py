"""Helpers for multi-node tests: node processes of one cluster and raw admin calls."""
from __future__ import annotations

import socket
import struct
import time

from kbroker.cluster import node_overrides, ports
from kbroker.config import new_cluster_id
from kbroker.wire import messages as w
from kbroker.wire.protocol import decode_response, encode_request
from tests.support.broker_proc import BrokerProcess, free_port

FAST = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "controller.quorum.election.timeout.ms": "500",
    "controller.quorum.fetch.timeout.ms": "1000",
    "controller.quorum.request.timeout.ms": "1000",
}


def free_base_port(count: int) -> int:
    """A base port with ``count`` consecutive free ports after it (best effort)."""
    for _ in range(50):
        base = free_port()
        ok = True
        for p in range(base, base + count):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free port range")


class NodeProcess(BrokerProcess):
    """One combined node of a local cluster (``kbroker.cluster.node_overrides``)."""

    def __init__(self, node_id: int, nodes: int, base_port: int, root, cluster_id: str, extra=None):
        client, controller = ports(node_id, base_port)
        self.node_id = node_id
        self.controller_port = controller
        super().__init__(root / f"node-{node_id}", port=client,
                         overrides=node_overrides(node_id, nodes=nodes, base_port=base_port,
                                                  data_root=root, cluster_id=cluster_id,
                                                  extra=dict(FAST, **(extra or {}))),
                         start_timeout=60.0)

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "kbroker", "serve"]
        for k, v in self.overrides.items():
            cmd += ["--override", f"{k}={v}"]
        return cmd


class Cluster:
    def __init__(self, root, nodes: int = 3, extra=None):
        self.root = root
        self.base = free_base_port(2 * nodes)
        self.cluster_id = new_cluster_id()
        self.nodes = {i: NodeProcess(i, nodes, self.base, root, self.cluster_id, extra)
                      for i in range(1, nodes + 1)}

    def start_all(self) -> None:
        import threading
        errors = []

        def start(n):
            try:
                n.start()
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        threads = [threading.Thread(target=start, args=(n,)) for n in self.nodes.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def stop_all(self) -> None:
        for n in self.nodes.values():
            if n.proc is not None and n.proc.poll() is None:
                n.proc.send_signal(15)
        for n in self.nodes.values():
            if n.proc is not None:
                n.stop()

    def alive(self):
        return [n for n in self.nodes.values() if n.proc is not None and n.proc.poll() is None]

    def bootstrap(self, node_id: int | None = None) -> str:
        if node_id is not None:
            return self.nodes[node_id].bootstrap
        return ",".join(n.bootstrap for n in self.alive())


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


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except (OSError, ConnectionError) as e:
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
