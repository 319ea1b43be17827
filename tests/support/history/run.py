"""Record histories under seeded faults on kbroker and on Apache Kafka, check them, report.

    python -m tests.support.history.run --targets kbroker,kafka --seeds 1,2 [--steps 3]
        [--kinds kill,term,pause,partition] [--out history-runs]

For every target and seed: three combined nodes, each in its own test host
(``tests/support/netns.py``) -- kbroker nodes as the seeded fault test starts them
(``tests/cluster/support.Cluster``), Kafka nodes as the quorum-formation scenario starts them
(``compat_tests/test_quorum_formation.QuorumNode``, formatted by Kafka's storage tool) -- with
the same settings where both have them (replication factor 3, min.insync.replicas 2,
``replica.lag.time.max.ms`` 2 s, internal topics replicated three ways). The workload
(``workload``) runs through a schedule drawn from the seed alone; each fault is applied by the
seeded fault test's own ``apply_fault`` (tests/cluster/test_replication_faults.py) the same
way on both targets, and the next one starts once every ISR is whole again. ``equip`` gives
the nodes what the schedule's faults need before they start, as the fault test's fixture
does (a steppable wall clock, a tmpfs log directory, a slowed FUSE one); Kafka's halt on a
full disk is checked by its own line (``assert_halted_on_full_disk``, which apply_fault uses
when a node has it). Then the clients stop, one reader reads everything, and the checker
runs.

Output under ``<out>/<target>-seed<N>/``: ``history.jsonl``, ``result.json`` (schedule,
anomalies) and, for every anomaly type found, ``minimal-<type>.jsonl`` -- the minimized
history; a run is replayed with the same ``--targets``/``--seeds``/``--steps``/``--kinds``
(the schedule is the seed's; the interleaving with the clients is not). The last lines
printed are one summary per target: ``kbroker: N ops, anomalies: none`` or the list (the
cycles Kafka's transactions allow in parentheses); the exit code is 1 if a target showed
anything else. A run with such an anomaly, or whose faults or clients failed, is appended to
``<out>/found.txt`` with the arguments that replay it.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import shutil
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from pathlib import Path

from . import model
from .checker import check, violations
from .minimize import minimize, summary
from .workload import (AssignConsumer, GroupConsumer, Producers, Recorder, Transactions,
                       final_read)

TOPIC = "faults"            # the name apply_fault's ISR probes look at
PARTITIONS = 4
KINDS = ("kill", "term", "pause", "partition", "one_way", "flap", "disk_full", "clock_jump",
         "slow_disk")
LAG_MS = 2000
SHARED = {"offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3",
          "transaction.state.log.replication.factor": "3", "transaction.state.log.min.isr": "2",
          "transaction.state.log.num.partitions": "3", "replica.lag.time.max.ms": str(LAG_MS),
          "group.initial.rebalance.delay.ms": "0"}


def schedule(seed: int, steps: int, kinds=KINDS) -> list[tuple]:
    """``(kind, node, down_seconds, gap_seconds, peer)`` per fault, from the seed alone (the
    fault test's ranges)."""
    rng = random.Random(seed)
    out: list = []
    for _ in range(steps):
        kind = rng.choice(list(kinds))
        node = rng.randint(1, 3)
        down = rng.uniform(2.5, 5.0) if kind == "pause" else rng.uniform(0.2, 3.0) \
            if kind in ("kill", "term") else rng.uniform(1.0, 4.0)
        peer = rng.choice([n for n in (1, 2, 3) if n != node]) if kind == "one_way" else 0
        out.append((kind, node, round(down, 2), round(rng.uniform(0.3, 2.0), 2), peer))
    return out


# ------------------------------------------------------------------ the two targets

def kbroker_cluster(root: Path, net):
    from tests.cluster.support import Cluster
    c = Cluster(root, net=net, extra=dict(SHARED, **{"log.flush.offset.checkpoint.interval.ms": "500"}))
    c.tmpfs, c.slow, c.clocks = {}, {}, {}
    return c


class KafkaCluster:
    """Three Kafka 4.x combined nodes in the test hosts, shaped like ``tests.cluster.support
    .Cluster`` for ``apply_fault`` (``nodes``, ``net``, ``alive()``, ``bootstrap()``)."""

    def __init__(self, root: Path, net):
        from compat_tests.runner import free_port
        from compat_tests.kafka_runner import random_cluster_id
        from compat_tests.test_quorum_formation import QuorumNode, storage_format

        class Node(QuorumNode):
            extra_env: dict = {}

            @property
            def running(self):
                return self.is_running()

            def env(self):
                return {**super().env(), **self.extra_env}

            @property
            def log_path(self):
                return self.logs_dir / "server.log"

            def log_text(self, start: int = 0) -> str:
                with open(self.log_path, "rb") as f:
                    f.seek(start)
                    return f.read().decode(errors="replace")

            def assert_halted_on_full_disk(self, text: str) -> None:
                # Kafka halts when its only log dir (which holds the metadata log) fails
                assert "No space left on device" in text and re.search(
                    r"Shutdown broker because (all log dirs in|the metadata log dir)", text), text[-3000:]

            def stop(self, timeout=None):
                rc = super().stop(timeout)
                # the JVM ends with 128+SIGTERM after its shutdown hook (Kafka's controlled
                # shutdown) has run: that is Kafka's clean exit on SIGTERM
                return 0 if rc in (143, -15) else rc

        self.net, self.root = net, root
        ports = {i: free_port() for i in (1, 2, 3)}
        voters = ",".join(f"{j}@{net.address(j)}:{ports[j]}" for j in ports)
        self.nodes = {i: Node("kafka", root, i, {"controller_port": ports[i],
                                                 "controller.quorum.voters": voters,
                                                 "default.replication.factor": "3", **SHARED}, net)
                      for i in (1, 2, 3)}
        self._format = lambda n, cid=random_cluster_id(): storage_format("kafka", n, cid)
        self.tmpfs, self.slow, self.clocks = {}, {}, {}

    def start_all(self):
        from tests.support.parallel import in_threads
        for n in self.nodes.values():
            if not (n.data_dir / "meta.properties").exists():
                self._format(n)
        for n in self.nodes.values():
            n.launch()
        in_threads(lambda n: n.await_serving(), list(self.nodes.values()))

    def alive(self):
        return [n for n in self.nodes.values() if n.is_running()]

    def bootstrap(self) -> str:
        return ",".join(f"{n.host}:{n.port}" for n in self.alive())

    def shutdown(self):
        for n in self.nodes.values():
            n.kill()


def equip(cluster, root: Path, sched) -> None:
    """What the schedule's faults need, before the nodes start, as the fault test's fixture
    does it: a wall clock per node it can step (clock_jump: libfaketime), a tmpfs log
    directory per node (disk_full), a FUSE log directory with a settable delay over that
    tmpfs for the nodes it slows (slow_disk). Without them apply_fault runs disk_full as kill
    and slow_disk as pause (and says so)."""
    from tests.cluster.test_replication_faults import _mount_tmpfs
    from tests.support.fake_clock import FakeClock
    from tests.support.slow_fs import SlowDisk

    kinds = {k for k, *_ in sched}
    if "clock_jump" in kinds and FakeClock.available():
        cluster.clocks = {i: FakeClock(root / f"clock-{i}") for i in cluster.nodes}
        for i, n in cluster.nodes.items():
            if isinstance(n.env, dict):
                n.env.update(cluster.clocks[i].env())
            else:
                # Kafka's JVM hangs within seconds under libfaketime's fix of monotonic
                # condition waits (FAKETIME_FORCE_MONOTONIC_FIX, on by default in 0.9.10), and
                # reads the wall clock too often to re-read the control file each time: the
                # offset is read once a second instead, enough for a step held for seconds
                n.extra_env = {**cluster.clocks[i].env(), "FAKETIME_NO_CACHE": "0",
                               "FAKETIME_CACHE_DURATION": "1", "FAKETIME_FORCE_MONOTONIC_FIX": "0"}
    if kinds & {"disk_full", "slow_disk"}:
        slowed = {node for k, node, *_ in sched if k == "slow_disk"}
        for i, n in cluster.nodes.items():
            backing = root / f"disk-{i}" if i in slowed else n.data_dir
            if not _mount_tmpfs(backing):
                break
            cluster.tmpfs[i] = backing
        for i in sorted(slowed & set(cluster.tmpfs)):
            try:
                cluster.slow[i] = SlowDisk(cluster.tmpfs[i], cluster.nodes[i].data_dir,
                                           root / f"slow-{i}").start()
            except RuntimeError as e:
                print(e)


def unequip(cluster) -> None:
    import subprocess
    for disk in cluster.slow.values():
        disk.stop()
    for d in cluster.tmpfs.values():
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


# ------------------------------------------------------------------ one run

def run_one(target: str, seed: int, steps: int, kinds, out: Path, lead: float = 8.0) -> dict:
    from tests.cluster.replication_support import create_topic
    from tests.cluster.support import wait_for, wait_for_isr
    from tests.cluster.test_replication_faults import apply_fault
    from tests.support.netns import TestNet

    sched = schedule(seed, steps, kinds)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "history.jsonl"
    result = {"target": target, "seed": seed, "steps": steps, "kinds": list(kinds),
              "schedule": sched, "fault_errors": [], "client_errors": []}
    print(f"{target} seed {seed}: schedule {sched}", flush=True)
    root = Path(tempfile.mkdtemp(prefix=f"history-{target}-{seed}-"))
    net = TestNet(3)
    cluster = None
    clients = []
    try:
        cluster = kbroker_cluster(root, net) if target == "kbroker" else KafkaCluster(root, net)
        equip(cluster, root, sched)
        cluster.start_all()
        create_topic(cluster, TOPIC, PARTITIONS, rf=3, configs={"min.insync.replicas": "2"})
        wait_for_isr(cluster, TOPIC, timeout=120)
        rec = Recorder(path)
        boot = cluster.bootstrap()
        args = (rec, boot, TOPIC, PARTITIONS)
        clients = [Producers(*args, seed=f"{seed}/p1"), Producers(*args, seed=f"{seed}/p2"),
                   Transactions(*args, seed=f"{seed}/t1", txn_id=f"history-{seed}-t1"),
                   Transactions(*args, seed=f"{seed}/t2", txn_id=f"history-{seed}-t2"),
                   GroupConsumer(*args, seed=f"{seed}/g1", group="history-classic"),
                   GroupConsumer(*args, seed=f"{seed}/g2", group="history-classic"),
                   GroupConsumer(*args, seed=f"{seed}/g3", group="history-kip848", protocol="consumer"),
                   AssignConsumer(*args, seed=f"{seed}/a1")]
        for c in clients:
            c.start()
        wait_for(lambda: rec.completed >= 100, timeout=120, what="the workload under way")
        time.sleep(lead)
        for i, (kind, node, down, gap, peer) in enumerate(sched):
            t = time.monotonic()
            try:
                apply_fault(cluster, kind, node, down, peer, random.Random(f"{seed}/{i}"))
                wait_for_isr(cluster, TOPIC, timeout=120, what=f"every ISR whole after {kind} of node {node}")
            except Exception as e:  # noqa: BLE001 - kept in the result; the history is still checked
                result["fault_errors"].append(f"{i} {kind} node {node}: {e}")
                for n in cluster.nodes.values():
                    if not n.running:
                        try:
                            n.start()
                        except Exception as e2:  # noqa: BLE001
                            result["fault_errors"].append(f"restart of node {n}: {e2}")
                net.heal()
            print(f"  fault {i}: {kind} node {node} ({time.monotonic() - t:.1f} s), "
                  f"{rec.completed} ops done", flush=True)
            time.sleep(gap)
        time.sleep(lead)
        for c in clients:
            c.stop.set()
        for c in clients:
            c.join(120)
        result["client_errors"] = [f"{type(c).__name__} {c.process}: {c.exc!r}" for c in clients
                                   if c.exc is not None or c.is_alive()]
        result["final_read_complete"] = final_read(rec, cluster.bootstrap(), TOPIC, PARTITIONS)
        rec.close()
    finally:
        for c in clients:
            c.stop.set()
        if cluster is not None:
            for n in cluster.nodes.values():
                if n.proc is not None and n.proc.poll() is None:
                    os.kill(n.proc.pid, signal.SIGCONT)
            cluster.shutdown()
            unequip(cluster)
        net.close()
        shutil.rmtree(root, ignore_errors=True)
    ops = model.load(path)
    found = check(ops)
    result["ops"] = sum(1 for o in ops if o.type == "invoke")
    result["anomalies"] = {k: len(v) for k, v in found.items()}
    result["examples"] = {k: v[:3] for k, v in found.items()}
    for kind in found:
        model.dump(minimize(ops, kind), out / f"minimal-{kind}.jsonl")
    (out / "result.json").write_text(json.dumps(result, indent=1, default=repr))
    print("  " + summary(target, ops, found), flush=True)
    if violations(found) or result["fault_errors"] or result["client_errors"]:
        # the ledger of seeds to replay (and of runs whose faults or clients went wrong)
        with open(out.parent / "found.txt", "a") as f:
            f.write(f"--targets {target} --seeds {seed} --steps {steps} --kinds {','.join(kinds)}: "
                    f"{sorted(violations(found))} {result['fault_errors'] + result['client_errors']} "
                    f"-> {out}\n")
    return result


def table(folder: Path) -> str:
    """A markdown table of the runs under ``folder`` (their result.json): one row per fault
    kind (runs whose schedule has one kind), one column per target."""
    from .checker import CYCLES
    cells: dict = defaultdict(lambda: defaultdict(lambda: [0, 0, defaultdict(int), []]))
    for f in sorted(folder.glob("*/result.json")):
        r = json.loads(f.read_text())
        kinds = sorted({s[0] for s in r["schedule"]})
        cell = cells["+".join(kinds)][r["target"]]
        cell[0] += 1
        cell[1] += r["ops"]
        for k, v in r["anomalies"].items():
            cell[2][k] += v
        cell[3] += r["fault_errors"] + r["client_errors"]
    targets = sorted({t for row in cells.values() for t in row})
    lines = ["| fault | " + " | ".join(targets) + " |", "|---" * (len(targets) + 1) + "|"]
    for kind in sorted(cells):
        row = []
        for t in targets:
            runs, ops, found, errors = cells[kind].get(t, [0, 0, {}, []])
            bad = ", ".join(f"{k} x{v}" for k, v in sorted(found.items()) if k not in CYCLES) or "none"
            cyc = ", ".join(f"{k} {v}" for k, v in sorted(found.items()) if k in CYCLES)
            row.append(f"{bad} ({runs} run{'s' * (runs != 1)}, {ops} ops; cycles: {cyc or '-'})"
                       + (f"; {len(errors)} fault/client errors" if errors else "") if runs else "-")
        lines.append(f"| {kind} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="kbroker,kafka")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--out", default="history-runs")
    ap.add_argument("--table", metavar="DIR", help="print the markdown table of the runs under DIR")
    a = ap.parse_args(argv)
    if a.table:
        print(table(Path(a.table)))
        return 0
    seeds = [int(s) for s in a.seeds.replace(" ", ",").split(",") if s]
    kinds = [k for k in a.kinds.split(",") if k]
    totals: dict = {}
    for target in a.targets.split(","):
        ops, anomalies = 0, defaultdict(int)
        for seed in seeds:
            tag = f"{target}-seed{seed}" + ("" if set(kinds) == set(KINDS) else "-" + "+".join(kinds))
            try:
                r = run_one(target, seed, a.steps, kinds, Path(a.out) / tag)
            except Exception:  # noqa: BLE001 - one broken run does not hide the others
                traceback.print_exc()
                anomalies["run-failed"] += 1
                continue
            ops += r["ops"]
            for k, v in r["anomalies"].items():
                anomalies[k] += v
            if r["fault_errors"] or r["client_errors"]:
                print(f"  errors: {r['fault_errors'] + r['client_errors']}", flush=True)
        totals[target] = (ops, anomalies)
    for target, (ops, anomalies) in totals.items():
        print(summary(target, ops, anomalies))
    return 1 if any(violations(a) for _, a in totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
