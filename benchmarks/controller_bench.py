"""Controller benchmark (not a test): failover time and the time to create 10,000 partitions,
on a three-node cluster of combined nodes on loopback — kbroker beside Apache Kafka.

    python -m benchmarks.controller_bench [--targets kbroker,kafka] [--partitions 10000]
                                          [--failovers 3]

For each target a fresh cluster of three broker+controller nodes is started (kbroker:
``kbroker.tools.local_cluster.node_overrides``; Kafka: the compatibility harness's pinned jars,
``compat_tests.kafka_runner``, three JVMs formatted with one cluster id), both with their
default quorum timeouts (election 1 s, fetch 2 s). Then:

- create: ``--partitions`` partitions as topics of 1,000 partitions (replication factor 1),
  five topics per CreateTopics request sent to node 1 (Kafka refuses more than 10,000 records
  in one controller operation); time until all are answered, and until every node's
  Metadata lists every partition with a leader;
- failover (``--failovers`` times): SIGKILL the node leading the metadata quorum
  (DescribeQuorum), then time until a survivor names a new leader, and until an admin write
  (CreateTopics of a one-partition topic, sent to a survivor and retried) succeeds — "kill to
  new leader serving"; the killed node is restarted before the next round.

Numbers are wall-clock seconds on this machine; Kafka runs with the harness's JVM flags.
The Kafka side is skipped (with the reason) when its jars or Java are not available.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbroker.tools.local_cluster import node_overrides, serve_command  # noqa: E402
from kbroker.config.broker import new_cluster_id  # noqa: E402
from kbroker.wire import messages as w  # noqa: E402
from kbroker.wire.protocol import decode_response, encode_request  # noqa: E402

HOST = "127.0.0.1"


# ----------------------------------------------------------------------------- wire helpers

def call(port: int, api_key: int, version: int, body, timeout: float = 30.0):
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(encode_request(api_key, version, 1, "controller-bench", body))
        size = struct.unpack(">i", _recv(s, 4))[0]
        return decode_response(_recv(s, size), api_key, version)[1]


def _recv(s, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


def quorum_leader(port: int) -> int:
    R = w.DescribeQuorumRequest
    try:
        resp = call(port, 55, 1, R(topics=[R.TopicData(topic_name="__cluster_metadata",
                                                       partitions=[R.PartitionData(partition_index=0)])]), 5)
    except (OSError, ConnectionError):
        return -1
    if resp.error_code or not resp.topics:
        return -1
    p = resp.topics[0].partitions[0]
    return p.leader_id if p.error_code == 0 else -1


def create_topics(port: int, names: list[str], partitions: int, timeout_ms: int = 120_000) -> list[int]:
    R = w.CreateTopicsRequest
    resp = call(port, 19, 5, R(timeout_ms=timeout_ms, validate_only=False, topics=[R.CreatableTopic(
        name=n, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]) for n in names]),
        timeout=timeout_ms / 1000 + 10)
    return [t.error_code for t in resp.topics]


def create_topic(port: int, name: str, partitions: int, timeout_ms: int = 120_000) -> int:
    return create_topics(port, [name], partitions, timeout_ms)[0]


def partitions_with_leader(port: int, topics: list[str]) -> int:
    R = w.MetadataRequest
    resp = call(port, 3, 9, R(topics=[R.MetadataRequestTopic(name=t) for t in topics],
                              allow_auto_topic_creation=False), 30)
    wanted = set(topics)
    return sum(1 for t in resp.topics if t.name in wanted for p in t.partitions if p.leader_id >= 0)


# ----------------------------------------------------------------------------- clusters

class KBrokerNode:
    def __init__(self, node_id: int, base_port: int, root: Path, cluster_id: str):
        self.node_id = node_id
        self.overrides = node_overrides(node_id, nodes=3, base_port=base_port, data_root=root,
                                        cluster_id=cluster_id)
        self.port = base_port + 2 * (node_id - 1)
        self.log = root / f"node-{node_id}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        with open(self.log, "ab") as f:
            self.proc = subprocess.Popen(serve_command(self.overrides), stdout=f, stderr=subprocess.STDOUT,
                                         env=env, cwd=ROOT)
        deadline = time.monotonic() + 60
        while "kbroker ready:" not in self.log.read_text(errors="replace").split("=== start")[-1]:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"kbroker node {self.node_id} did not start; see {self.log}")
            time.sleep(0.05)

    def mark(self) -> None:
        with open(self.log, "ab") as f:
            f.write(b"\n=== start\n")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def kbroker_cluster(root: Path) -> dict:
    base = _free_base(6)
    cid = new_cluster_id()
    return {i: KBrokerNode(i, base, root, cid) for i in (1, 2, 3)}


def kafka_cluster(root: Path, base=None) -> dict:
    """Three Kafka nodes; ``base`` is the node's process class (default: the compat harness's
    ``KafkaBrokerProcess``, fast-start JVM flags; the replication benchmark passes
    ``benchmarks.harness.brokers.KafkaBench`` for the shipped ones)."""
    from compat_tests import runner
    from compat_tests.kafka_runner import KafkaBrokerProcess, random_cluster_id
    base = base or KafkaBrokerProcess
    # The harness ties each JVM to the thread that started it (PR_SET_PDEATHSIG); the three
    # nodes start from threads here (they wait for each other), so that tie must go. They
    # are stopped in main()'s finally instead.
    runner.die_with_parent = lambda: None
    cid = random_cluster_id()
    ports = {i: (_free_port(), _free_port()) for i in (1, 2, 3)}
    voters = ",".join(f"{i}@{HOST}:{c}" for i, (_, c) in ports.items())

    class Node(base):
        def __init__(self, node_id):
            super().__init__(root / f"kafka-{node_id}", {})
            self.node_id = node_id
            self.port, self.controller_port = ports[node_id]

        def config(self):
            cfg = super().config()
            cfg.update({"node.id": str(self.node_id), "controller.quorum.voters": voters,
                        "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
                        "advertised.listeners": f"PLAINTEXT://{HOST}:{self.port}"})
            cfg.pop("broker.session.timeout.ms", None)
            cfg.pop("broker.heartbeat.interval.ms", None)
            return cfg

        def prepare(self):
            from compat_tests import kafka_runner as kr
            self.logs_dir.mkdir(parents=True, exist_ok=True)
            self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.config().items()))
            if (self.data_dir / "meta.properties").exists():
                return
            cmd = kr.java_command(kr.STORAGE_TOOL_MAIN, ["format", "-t", cid, "-c", str(self.config_path)],
                                  heap="256m", log4j=kr.TOOLS_LOG4J, extra_jvm=kr.FAST_START_JVM)
            subprocess.run(cmd, check=True, capture_output=True, timeout=120, cwd=self.workdir)

        def mark(self):
            pass

    nodes = {i: Node(i) for i in (1, 2, 3)}
    for n in nodes.values():
        n.workdir.mkdir(parents=True, exist_ok=True)
    return nodes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _free_base(count: int) -> int:
    for _ in range(100):
        base = _free_port()
        try:
            socks = []
            for p in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind((HOST, p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range")


def start_all(nodes: dict) -> None:
    errors = []

    def run(n):
        try:
            n.start()
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=run, args=(n,)) for n in nodes.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def wait_for(fn, timeout: float, interval: float = 0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            v = fn()
            if v:
                return v
        except (OSError, ConnectionError):
            pass
        time.sleep(interval)
    return None


# ----------------------------------------------------------------------------- measurements

def measure(target: str, nodes: dict, partitions: int, failovers: int) -> dict:
    out: dict = {}
    start_all(nodes)
    leader = wait_for(lambda: (lambda l: l if l > 0 else None)(quorum_leader(nodes[1].port)), 60)
    if leader is None:
        raise RuntimeError(f"{target}: no quorum leader")
    # create N partitions: topics of 1,000 partitions, five topics per CreateTopics request
    # (Kafka refuses more than 10,000 records in one controller operation)
    per_topic = min(1000, partitions)
    names = [f"bench-{i}" for i in range((partitions + per_topic - 1) // per_topic)]
    t0 = time.monotonic()
    errors = []
    for i in range(0, len(names), 5):
        errors += [e for e in create_topics(nodes[1].port, names[i:i + 5], per_topic) if e]
    out["create_answered_s"] = time.monotonic() - t0
    out["create_error"] = errors[0] if errors else 0
    ok = not errors and wait_for(lambda: all(partitions_with_leader(n.port, names) == per_topic * len(names)
                                             for n in nodes.values()), 600, 0.2)
    out["create_visible_s"] = time.monotonic() - t0 if ok else None
    # failovers
    new_leader_s, serving_s = [], []
    for round_ in range(failovers):
        leader = wait_for(lambda: next((l for n in nodes.values() if n.proc_alive()
                                        for l in [quorum_leader(n.port)] if l > 0), None), 60)
        victim = nodes[leader]
        survivors = [n for i, n in nodes.items() if i != leader]
        t0 = time.monotonic()
        victim.kill()
        new = wait_for(lambda: (lambda l: l if l not in (-1, leader) else None)(quorum_leader(survivors[0].port)),
                       60, 0.01)
        new_leader_s.append(time.monotonic() - t0 if new else None)
        attempt = [0]

        def admin_ok():
            attempt[0] += 1
            try:
                return create_topic(survivors[attempt[0] % 2].port, f"failover-{round_}-{attempt[0]}", 1,
                                    timeout_ms=2000) == 0
            except (OSError, ConnectionError):
                return False
        ok = wait_for(admin_ok, 120, 0.01)
        serving_s.append(time.monotonic() - t0 if ok else None)
        victim.mark()
        victim.start()
    out["failover_new_leader_s"] = new_leader_s
    out["failover_serving_s"] = serving_s
    return out


def _alive(self) -> bool:
    return self.proc is not None and self.proc.poll() is None


def fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, list):
        vals = [x for x in v if x is not None]
        if not vals:
            return "—"
        return f"{sorted(vals)[len(vals) // 2]:.2f} (min {min(vals):.2f}, max {max(vals):.2f}, n={len(vals)})"
    return f"{v:.2f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="kbroker,kafka")
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--failovers", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the data directories")
    args = ap.parse_args(argv)
    results = {}
    for target in [t.strip() for t in args.targets.split(",") if t.strip()]:
        root = Path(tempfile.mkdtemp(prefix=f"controller-bench-{target}-"))
        try:
            nodes = kbroker_cluster(root) if target == "kbroker" else kafka_cluster(root)
        except Exception as e:  # noqa: BLE001 - e.g. no Kafka jars or Java: report and go on
            results[target] = {"skipped": f"{type(e).__name__}: {e}"}
            continue
        for n in nodes.values():
            n.proc_alive = _alive.__get__(n)
        print(f"[{target}] running in {root} ...", flush=True)
        try:
            results[target] = measure(target, nodes, args.partitions, args.failovers)
        except Exception as e:  # noqa: BLE001
            results[target] = {"skipped": f"{type(e).__name__}: {e}"}
        finally:
            for n in nodes.values():
                try:
                    n.stop()
                except Exception:  # noqa: BLE001
                    pass
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
    print()
    print("Three combined nodes on loopback; seconds (median, min, max over failovers)")
    print(f"{'target':<9} {'create ' + str(args.partitions) + ' partitions: answered':>38} {'visible on all nodes':>22} "
          f"{'failover: new leader':>40} {'failover: admin write served':>40}")
    for target, r in results.items():
        if "skipped" in r:
            print(f"{target:<9} skipped: {r['skipped']}")
            continue
        print(f"{target:<9} {fmt(r['create_answered_s']):>38} {fmt(r['create_visible_s']):>22} "
              f"{fmt(r['failover_new_leader_s']):>40} {fmt(r['failover_serving_s']):>40}"
              + (f"   (create error {r['create_error']})" if r["create_error"] else ""))
    if "kbroker" in results and "kafka" in results and "skipped" not in results["kbroker"] \
            and "skipped" not in results["kafka"]:
        k, a = results["kbroker"], results["kafka"]
        if k["create_visible_s"] and a["create_visible_s"]:
            print(f"ratio kbroker/kafka, create visible: {k['create_visible_s'] / a['create_visible_s']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
