"""Seeded faults against replication: no acknowledged record is lost, the logs converge.

Three combined nodes, a topic with replication factor 3 and min.insync.replicas=2 on a few
partitions. An idempotent confluent-kafka producer (acks=all) writes keyed records with
unique values from a thread and keeps every acknowledged ``value -> (partition, offset)``.
Meanwhile a schedule drawn from a seed applies faults one at a time (never more than one
node down, so the ISR of the others still meets min.insync.replicas -- except ``elr``, whose
point is to lose the last ISR member):

- ``kill``: SIGKILL a node, leave it down a while, start it again (log recovery, truncation
  to the leader's log through the leader epochs);
- ``term``: SIGTERM (controlled shutdown: the controller moves leadership first; exit code 0),
  down a while, start again;
- ``pause``: SIGSTOP a node for longer than ``replica.lag.time.max.ms`` — until the survivors
  report it out of an ISR — then SIGCONT: it fetches again and rejoins;
- ``partition``: cut a node off from the other two both ways (every connection between it
  and them: controller, replica fetches, transaction markers) until the others report it out
  of an ISR -- and, if it followed the metadata quorum's leader, until that leader's
  DescribeQuorum shows its log end offset stalled behind the ISR change; if it led the
  quorum, until the others elect another leader -- heal it later;
- ``one_way``: cut one direction only: the connections one node opens toward another go
  silent, the other's connections toward it still work (a probe from inside each host shows
  both before the fault goes on);
- ``flap``: cut and heal a node's connections to the others over and over for a few seconds;
- ``disk_full``: fill the small tmpfs that holds a node's log directory (the test mounts
  one per node; it runs as root) until a write fails with ENOSPC. The node must stop with
  its log-dir-failure line (kbroker/replica/log_dir_failure.py: like Kafka when its last
  log dir fails), its partitions move to the other replicas, and after the disk is freed
  it starts again and recovers. Without the right to mount, ``disk_full`` steps run as
  ``kill`` (the test says so);
- ``clock_jump``: step one node's wall clock (``CLOCK_REALTIME``) forward by minutes, hold
  it, then step it back to the real time (a backward step of the same size) -- as a
  misconfigured NTP server followed by a correction would. Every node runs under libfaketime
  (``tests/support/fake_clock.py``) with its offset in a control file the test rewrites;
  ``CLOCK_MONOTONIC`` stays real. Record timestamps may follow the wall clock (as Kafka's
  do); the invariants below must hold. ``make faketime`` installs libfaketime;
- ``slow_disk``: every write and fsync of one node's log directory waits tens to hundreds
  of milliseconds for a while. The log directory of a node the seed's schedule slows is a
  FUSE passthrough (``tests/support/slow_fs.py``, over that node's tmpfs) whose delay the
  test sets at run time: the most real slow device this machine allows (root and
  ``/dev/fuse``, but no device-mapper for ``dm-delay``, and cgroup-v1 blkio throttling
  does not see buffered writes, which the page cache writes back outside the writer's
  cgroup). ``disk_full`` on such a node fills the tmpfs beneath: ENOSPC comes through.
  Without the right to mount, ``slow_disk`` steps run as ``pause`` (the test says so);
- ``elr``: the scenario eligible leader replicas (KIP-966) were written for, with
  ``min.insync.replicas=2`` and unclean leader election off: one node stops (SIGTERM), then a
  second one (SIGTERM), which leaves every ISR at the third node alone -- the second node is
  the eligible leader replica (ELR) of every partition and acks=all producers are refused --
  then that last ISR member is SIGKILLed. The two stopped nodes start again (a metadata
  quorum again): the controller fences the dead one and elects the ELR member, the node that
  stopped second, for every partition, before the dead node is back; it then restarts
  uncleanly. This is the one step that takes two nodes (and the metadata quorum) down at once.
  Its draw is separate from the other kinds' (a seed's own stream adds it as a last step to
  about one schedule in three), so the other kinds' schedules of a seed stay as they were.

The network faults are real: every node runs in its own test host (``tests/support/netns.py``,
a network namespace with its own address, which it listens on, advertises, names in
``controller.quorum.voters`` and announces as Raft leader), and a cut is each host's packet
filter dropping what it sends toward the other host -- so it holds for every connection and
every address a node learnt, including the endpoint a leader announces (KIP-853). Each
network fault proves it met traffic: the filters' drop counters grow (and a ``partition``
also shows the ISR and the metadata quorum going on without the node). The test process and its clients reach every node directly.

After each fault the test waits for every ISR to be whole again before the next one. After
the schedule (producer stopped, all nodes up, full ISR) it checks:

- the producer reported no failed delivery and no fatal error;
- every acknowledged record is read back at exactly its acknowledged partition and offset
  with its key and value (no loss, no reordering);
- no value is stored twice (idempotence), and the logs hold nothing but acknowledged records;
- every replica's log is byte-identical on disk, its end is the leader's high watermark and
  DescribeLogDirs reports the same size on each node;
- every node's checkpointed high watermark of every partition is that same offset.

The schedule is a function of the seed alone (the interleaving with the producer is not).
``KBROKER_FAULT_SEED=<n>`` runs one seed; ``KBROKER_FAULT_RUNS=<n>`` runs n random seeds
(``make replication-soak``); ``KBROKER_FAULT_STEPS`` is the number of faults per seed.
Without them a few fixed seeds run. A failure names its seed.
"""
from __future__ import annotations

import collections
import errno
import os
import random
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from kbroker.wire import messages as w
from tests.support.fake_clock import FakeClock
from tests.support.netns import TestNet
from tests.support.parallel import in_threads
from tests.support.slow_fs import SlowDisk

from .fault_clients import (TXN_TOPIC, GroupCommitter, TxnWriter, committed_offsets,
                            read_committed)
from .replication_support import (checkpointed_high_watermarks, create_topic, make_producer,
                                  read_records, replicas_in_sync)
from .support import Cluster, call, describe_quorum, topic_state, wait_for, wait_for_isr

pytestmark = pytest.mark.slow

TOPIC = "faults"
PARTITIONS = 4
LAG_MS = 2000
# fixed seeds whose schedules (3 faults each) cover every fault kind (23's ends with ``elr``)
DEFAULT_SEEDS = (23, 71, 227)
KINDS = ("kill", "term", "pause", "partition", "one_way", "flap", "disk_full", "clock_jump",
         "slow_disk")
DISK_MB = 96


def _seeds() -> list[int]:
    if os.environ.get("KBROKER_FAULT_SEED"):
        return [int(os.environ["KBROKER_FAULT_SEED"])]
    if os.environ.get("KBROKER_FAULT_RUNS"):
        rng = random.SystemRandom()
        return [rng.randrange(1, 2**31) for _ in range(int(os.environ["KBROKER_FAULT_RUNS"]))]
    return list(DEFAULT_SEEDS)


def _steps() -> int:
    return int(os.environ.get("KBROKER_FAULT_STEPS", "3"))


def schedule(seed: int, steps: int) -> list[tuple[str, int, float, float, int]]:
    """``(kind, node, down_seconds, gap_seconds, peer)`` for each fault, from the seed alone;
    ``peer`` is the node a ``one_way`` cut keeps ``node`` from reaching (0 otherwise)."""
    rng = random.Random(seed)
    out = []
    for _ in range(steps):
        kind = rng.choice(KINDS)
        node = rng.randint(1, 3)
        if kind == "pause":
            down = rng.uniform(2.5, 5.0)
        elif kind in ("partition", "one_way", "flap", "disk_full", "clock_jump",
                      "slow_disk"):
            down = rng.uniform(1.0, 4.0)
        else:
            down = rng.uniform(0.2, 3.0)
        peer = rng.choice(_others(node)) if kind == "one_way" else 0
        out.append((kind, node, round(down, 2), round(rng.uniform(0.3, 2.0), 2), peer))
    elr = random.Random(f"{seed}/elr")
    if elr.random() < 1 / 3:
        out.append(("elr", elr.randint(1, 3), round(elr.uniform(0.5, 2.0), 2), 0.5, 0))
    return out


def _others(node: int) -> list[int]:
    return [n for n in (1, 2, 3) if n != node]


class ProducerThread(threading.Thread):
    """Keeps producing keyed records with unique values until ``stop``; ``acked[value] =
    (partition, offset, key)`` from the delivery reports."""

    def __init__(self, bootstrap: str, seed: int):
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.seed = seed
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acked: dict[bytes, tuple[int, int | None, bytes]] = {}
        self.failed: list = []
        self.errors: list = []
        self.sent = 0
        self.left: int | None = None
        self.exc: BaseException | None = None

    def on_delivery(self, err, msg):
        with self.lock:
            if err is None:
                self.acked[msg.value()] = (msg.partition(), msg.offset(), msg.key())
            else:
                self.failed.append((msg.value(), err))

    def run(self):
        try:
            p = make_producer(self.bootstrap, error_cb=self.errors.append,
                              **{"message.timeout.ms": 180_000, "linger.ms": 10})
            i = 0
            while not self.stop.is_set():
                k = f"k{i % 37}".encode()
                v = f"s{self.seed}-v{i}".encode()
                try:
                    p.produce(TOPIC, key=k, value=v, on_delivery=self.on_delivery)
                except BufferError:
                    p.poll(0.05)
                    continue
                i += 1
                self.sent = i
                # a few hundred records a second: enough to keep batches in flight through
                # every fault without starving the brokers of the two shared cores
                p.poll(0.02 if i % 8 == 0 else 0)
            self.left = p.flush(240)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.exc = e

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acked)


def _out_of_some_isr(cluster, node: int):
    """True once a running node other than ``node`` reports ``node`` out of an ISR."""
    for other in _others(node):
        n = cluster.nodes[other]
        if not n.running:
            continue
        st = topic_state(n.addr, TOPIC)
        if st and any(node not in s.isr for s in st.values()):
            return True
    return False


def apply_fault(cluster, kind: str, node_id: int, down: float, peer: int = 0, rng=None) -> None:
    node = cluster.nodes[node_id]
    net: TestNet = cluster.net
    dropped = _dropped(net)
    if kind == "kill":
        node.kill()
        time.sleep(down)
        node.start()
    elif kind == "term":
        rc = node.stop(timeout=90)
        assert rc == 0, f"SIGTERM of node {node_id}: exit code {rc}"
        time.sleep(down)
        node.start()
    elif kind == "pause":
        pid = node.proc.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(down)
            # longer than replica.lag.time.max.ms: it must leave an ISR before it is woken
            wait_for(lambda: _out_of_some_isr(cluster, node_id), timeout=60,
                     what=f"paused node {node_id} out of an ISR")
        finally:
            os.kill(pid, signal.SIGCONT)
    elif kind == "partition":
        leader = wait_for(lambda: _quorum_leader(cluster, node_id), what="the metadata quorum's leader")
        net.isolate(node_id)
        try:
            time.sleep(0.5)             # a Fetch sent just before the cut lands first
            before = _quorum_view(cluster, leader) if leader != node_id else None
            ends = None if before is None else before[2]
            time.sleep(down)
            # the others stop hearing from it: it leaves an ISR (fenced by the controller
            # if it led one) -- proof that the cut really separated it
            wait_for(lambda: _out_of_some_isr(cluster, node_id), timeout=60,
                     what=f"partitioned node {node_id} out of an ISR")
            # ... and the metadata quorum: the leader wrote that ISR change, which the
            # partitioned follower never fetched; a partitioned leader is replaced
            if ends is not None:
                now_leader, epoch, after = _quorum_view(cluster, leader)
                if (now_leader, epoch) == before[:2]:
                    assert after[node_id] == ends[node_id] < after[leader], \
                        f"node {node_id} kept fetching metadata through the partition: {ends} -> {after}"
                else:
                    # the other two held an election meanwhile (a slow machine can stall one
                    # past the fetch timeout): the new epoch's leader has had no Fetch from
                    # the cut node
                    assert after[node_id] <= 0 and now_leader != node_id, \
                        f"node {node_id} fetched from new leader {now_leader} through the " \
                        f"partition: {ends} -> {after}"
            else:
                wait_for(lambda: _quorum_leader(cluster, node_id) not in (None, node_id), timeout=60,
                         what=f"a quorum leader other than partitioned node {node_id}")
            assert _dropped(net) > dropped, f"the partition of node {node_id} dropped nothing"
        finally:
            net.heal()
    elif kind == "one_way":
        net.block(node_id, peer)
        try:
            # from inside the hosts: node_id's connections toward peer go nowhere, peer's
            # toward node_id are answered (the probe shares each node's network)
            assert not net.can_connect(node_id, cluster.nodes[peer].addr), \
                f"host {node_id} still reaches node {peer} through the one-way cut"
            assert net.can_connect(peer, node.addr), \
                f"the one-way cut {node_id}->{peer} also cut {peer}->{node_id}"
            time.sleep(down)
        finally:
            net.heal()
    elif kind == "flap":
        rng = rng or random.Random(0)
        end = time.monotonic() + down
        try:
            while time.monotonic() < end:
                net.isolate(node_id)
                time.sleep(rng.uniform(0.05, 0.8))
                net.heal()
                time.sleep(rng.uniform(0.05, 0.8))
        finally:
            net.heal()
        assert _dropped(net) > dropped, f"flapping node {node_id}'s connections dropped nothing"
    elif kind == "disk_full":
        if not cluster.tmpfs:
            print(f"disk_full of node {node_id} runs as kill: no tmpfs could be mounted")
            return apply_fault(cluster, "kill", node_id, down)
        filler = Path(cluster.tmpfs[node_id]) / "filler"
        mark = node.log_path.stat().st_size
        try:
            _fill(filler)
            wait_for(lambda: node.proc.poll() is not None, timeout=60,
                     what=f"node {node_id} stopping on its full disk")
            # whichever write meets ENOSPC first (an append, an index entry, a checkpoint,
            # the metadata log...), the failure channel reports it and the broker halts with
            # one line naming its only log dir (kbroker/log/failure.py,
            # kbroker/replica/log_dir_failure.py)
            text = node.log_text(mark)
            if hasattr(node, "assert_halted_on_full_disk"):   # another broker's own halt line
                node.assert_halted_on_full_disk(text)        # (Kafka: tests/support/history/run.py)
            else:
                lines = re.findall(r"^.*log dir \S+ failed \(.*$", text, re.M)
                assert len(lines) == 1 and "kbroker cannot take one log dir offline" in lines[0] \
                    and "No space left on device" in lines[0], \
                    f"node {node_id} stopped without exactly one log dir failure line: {lines}"
                assert "log write failed" not in text and "Traceback" not in text, text[-3000:]
            time.sleep(down)
        finally:
            filler.unlink(missing_ok=True)
        node.start()
    elif kind == "clock_jump":
        clock = cluster.clocks[node_id]
        rng = rng or random.Random(0)
        step = rng.choice((1, -1)) * rng.uniform(60, 900)
        maps = Path(f"/proc/{node.proc.pid}/maps").read_text()
        assert "libfaketime" in maps, f"node {node_id} does not run under libfaketime"
        print(f"clock_jump: node {node_id} wall clock {step:+.0f} s for {down} s, then back")
        try:
            clock.jump(step)          # forward (or back) by minutes ...
            time.sleep(down)
        finally:
            clock.reset()             # ... and the opposite step back to the real time
    elif kind == "elr":
        _eligible_leader_fault(cluster, node_id, down)
    elif kind == "slow_disk":
        disk = cluster.slow.get(node_id)
        if disk is None:
            print(f"slow_disk of node {node_id} runs as pause: no FUSE file system could be mounted")
            return apply_fault(cluster, "pause", node_id, max(down, 2.5))
        rng = rng or random.Random(0)
        ms = round(rng.uniform(20, 250))
        print(f"slow_disk: node {node_id} writes and fsyncs wait {ms} ms for {down} s")
        disk.set_delay(ms)
        try:
            time.sleep(down)
        finally:
            disk.set_delay(0)
    else:
        raise ValueError(kind)


def _partitions_view(port: int, topic: str) -> dict[int, tuple]:
    """``{partition: (leader, ISR, ELR)}`` as DescribeTopicPartitions answers on ``port``."""
    R = w.DescribeTopicPartitionsRequest
    try:
        resp = call(port, 75, 0, R(topics=[R.TopicRequest(name=topic)], response_partition_limit=100))
    except OSError:
        return {}
    if not resp.topics or resp.topics[0].error_code:
        return {}
    return {p.partition_index: (p.leader_id, tuple(sorted(p.isr_nodes)), tuple(sorted(p.eligible_leader_replicas)))
            for p in resp.topics[0].partitions}


def _all_partitions(port: int, check) -> dict | None:
    """The view of every partition of ``TOPIC`` if ``check`` holds for each, else None."""
    view = _partitions_view(port, TOPIC)
    return view if len(view) == PARTITIONS and all(check(v) for v in view.values()) else None


def _eligible_leader_fault(cluster, first: int, down: float) -> None:
    """The ``elr`` step: ``first`` and then ``second`` stop cleanly, the last ISR member
    ``last`` is killed, and ``second`` -- every partition's ELR -- is elected once the two
    stopped nodes are back, before ``last`` returns."""
    second, last = [n for n in (first % 3 + 1, (first + 1) % 3 + 1)]
    nodes = cluster.nodes
    assert nodes[first].stop(timeout=90) == 0, f"SIGTERM of node {first}"
    wait_for(lambda: _all_partitions(nodes[last].addr, lambda v: v[1] == tuple(sorted((second, last)))),
             timeout=60, what=f"node {first} out of every ISR")
    assert nodes[second].stop(timeout=90) == 0, f"SIGTERM of node {second}"
    wait_for(lambda: _all_partitions(nodes[last].addr, lambda v: v == (last, (last,), (second,))),
             timeout=30, what=f"the ISR down to node {last}, node {second} the ELR")
    nodes[last].kill()                      # the last ISR member is lost
    time.sleep(down)
    in_threads(lambda n: n.start(), [nodes[first], nodes[second]])   # a quorum again
    elected = wait_for(lambda: _all_partitions(nodes[second].addr, lambda v: v[0] == second),
                       timeout=120, what=f"node {second} (the ELR) elected while node {last} is down")
    print(f"elr: node {second} elected from the ELR: {elected}")
    nodes[last].start()                     # an unclean restart: it is no eligible leader


def _quorum_view(cluster, node: int) -> tuple[int, int, dict[int, int]]:
    """(leader id, leader epoch, {voter id: log end offset}) of the metadata quorum, as
    DescribeQuorum at ``node`` answers (forwarded to the current leader)."""
    p, resp = describe_quorum(cluster.nodes[node].addr)
    assert p is not None and p.error_code == 0, resp
    return p.leader_id, p.leader_epoch, {v.replica_id: v.log_end_offset for v in p.current_voters}


def _quorum_leader(cluster, node: int) -> int | None:
    """The metadata quorum's leader as a running node other than ``node`` reports it."""
    for other in _others(node):
        n = cluster.nodes[other]
        if n.running:
            p, _ = describe_quorum(n.addr)
            if p is not None and p.error_code == 0 and p.leader_id > 0:
                return p.leader_id
    return None


def _dropped(net: TestNet) -> int:
    """Packets the hosts' filters have dropped so far (all hosts)."""
    return sum(net.dropped(i) for i in net.hosts)


def _fill(path: Path) -> None:
    """Write ``path`` until the file system is full (ENOSPC)."""
    chunk = b"\0" * (1 << 20)
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
        try:                     # the last partial page too
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass


def _mount_tmpfs(path: Path) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(path)],
                       capture_output=True)
    return r.returncode == 0


@pytest.fixture
def cluster(tmp_path, request):
    # the nodes this seed's schedule slows get a FUSE log directory (over their tmpfs)
    seed = request.node.callspec.params["seed"]
    slowed = {node for kind, node, *_ in schedule(seed, _steps()) if kind == "slow_disk"}
    net = TestNet(3)
    c = Cluster(tmp_path / "cluster", net=net,
                extra={"replica.lag.time.max.ms": str(LAG_MS),
                       "log.flush.offset.checkpoint.interval.ms": "500",
                       "offsets.topic.replication.factor": "3",
                       "offsets.topic.num.partitions": "3",
                       "transaction.state.log.replication.factor": "3",
                       "transaction.state.log.min.isr": "2",
                       "transaction.state.log.num.partitions": "3"})
    c.tmpfs = {}
    # every node's wall clock can be stepped (clock_jump); offset 0 until a step
    assert FakeClock.available(), "libfaketime is missing: `make faketime` installs it"
    c.clocks = {i: FakeClock(tmp_path / f"clock-{i}") for i in c.nodes}
    for i, n in c.nodes.items():
        n.env.update(c.clocks[i].env())
    c.slow = {}
    try:
        for i, n in c.nodes.items():
            backing = tmp_path / f"disk-{i}" if i in slowed else n.data_dir
            if _mount_tmpfs(backing):
                c.tmpfs[i] = backing
            else:
                break
        for i in sorted(slowed):
            if i not in c.tmpfs:
                break
            try:
                c.slow[i] = SlowDisk(c.tmpfs[i], c.nodes[i].data_dir, tmp_path / f"slow-{i}").start()
            except RuntimeError as e:
                print(e)         # its steps run as pause; disk_full fills nothing it writes
                subprocess.run(["umount", "-l", str(c.tmpfs.pop(i))], capture_output=True)
        c.start_all()
        yield c
    finally:
        for n in c.nodes.values():
            if n.proc is not None and n.proc.poll() is None:
                try:
                    os.kill(n.proc.pid, signal.SIGCONT)
                except OSError:
                    pass
        c.shutdown()
        net.close()
        for disk in c.slow.values():
            disk.stop()
        for d in c.tmpfs.values():
            subprocess.run(["umount", "-l", str(d)], capture_output=True)


@pytest.mark.parametrize("seed", _seeds())
def test_faults_lose_no_acknowledged_record(cluster, seed):
    steps = schedule(seed, _steps())
    print(f"KBROKER_FAULT_SEED={seed} schedule={steps} logs={cluster.root}")
    try:
        _run(cluster, seed, steps)
    except AssertionError as e:
        _print_log_tails(cluster.root)
        raise AssertionError(f"[KBROKER_FAULT_SEED={seed} schedule={steps} logs={cluster.root}] {e}") from e


# The lines of a node's log that tell why a replica did not come back (a CI run keeps no files).
_TELLING = ("AlterPartition", "WARNING", "ERROR", "fenced", "leader", "ISR", "isr")


def _print_log_tails(root, lines: int = 40) -> None:
    for path in sorted(Path(root).glob("*.log")):
        telling = [ln for ln in path.read_text(errors="replace").splitlines()
                   if any(t in ln for t in _TELLING)]
        print(f"--- {path.name}: the last {lines} of {len(telling)} telling lines")
        print("\n".join(telling[-lines:]))


def _run(cluster, seed, steps):
    create_topic(cluster, TOPIC, PARTITIONS, rf=3, configs={"min.insync.replicas": "2"})
    wait_for_isr(cluster, TOPIC)
    create_topic(cluster, TXN_TOPIC, 2, rf=3, configs={"min.insync.replicas": "2"})
    producer = ProducerThread(cluster.bootstrap(), seed)
    producer.start()
    group = GroupCommitter(cluster.bootstrap(), TOPIC)
    txns = TxnWriter(cluster.bootstrap(), seed)
    group.start()
    txns.start()
    try:
        wait_for(lambda: producer.acked_count() >= 200 or producer.exc, timeout=60,
                 what="the producer under way")
        for i, (kind, node, down, gap, peer) in enumerate(steps):
            before = producer.acked_count()
            apply_fault(cluster, kind, node, down, peer, random.Random(f"{seed}/{i}"))
            wait_for_isr(cluster, TOPIC, timeout=120,
                         what=f"every ISR whole after fault {i} ({kind} node {node})")
            # the producer got through the fault before the next one
            wait_for(lambda: producer.acked_count() >= before + 50 or producer.exc, timeout=120,
                     what=f"acknowledgements after fault {i} ({kind} node {node})")
            time.sleep(gap)
    finally:
        for t in (producer, group, txns):
            t.stop.set()
        for t in (producer, group, txns):
            t.join(300)
    for t in (group, txns):
        assert t.exc is None, f"{type(t).__name__}: {t.exc!r}"
        assert not t.is_alive(), f"{type(t).__name__} did not finish"
    assert producer.exc is None, f"producer thread: {producer.exc!r}"
    assert not producer.is_alive(), "producer did not finish flushing"
    assert producer.left == 0, f"{producer.left} records without a delivery report"
    assert not producer.failed, f"{len(producer.failed)} records not delivered: {producer.failed[:3]}"
    fatal = [e for e in producer.errors if e.fatal()]
    assert not fatal, fatal
    assert len(producer.acked) == producer.sent

    wait_for_isr(cluster, TOPIC, timeout=120, what="every ISR whole at the end")
    ends = wait_for(lambda: replicas_in_sync(cluster, TOPIC, range(PARTITIONS)), timeout=60,
                    what="byte-identical replica logs ending at the high watermark")

    # every node's high watermark (as it checkpoints it) is the leader's
    hws: dict = {}

    def hw_agrees():
        hws.update({n: checkpointed_high_watermarks(cluster, n, TOPIC) for n in (1, 2, 3)})
        return all(hws[n] == ends for n in (1, 2, 3))
    try:
        wait_for(hw_agrees, timeout=30, what="checkpointed high watermarks")
    except AssertionError:
        raise AssertionError(f"high watermarks {hws} differ from the log ends {ends}") from None

    got = read_records(cluster.bootstrap(), TOPIC, ends)
    counts = collections.Counter(v for _, _, _, v in got)
    dups = {v: c for v, c in counts.items() if c > 1}
    if dups:
        where = {v: [(p, off) for p, off, _, w in got if w == v] for v in sorted(dups)[:5]}
        acked = {v: producer.acked.get(v) for v in where}
        raise AssertionError(f"{len(dups)} values stored more than once: stored at {where}, "
                             f"acknowledged at {acked}; the producer's errors: "
                             f"{[str(e) for e in producer.errors][-10:]}")
    at = {v: (p, off, k) for p, off, k, v in got}
    missing = [v for v in producer.acked if v not in at]
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:3]}"
    for v, (p, off, k) in producer.acked.items():
        # librdkafka reports some deliveries without an offset (a retried batch answered as a
        # duplicate by a later leader): then the partition and key must still agree
        want = (p, off if off is not None and off >= 0 else at[v][1], k)
        assert at[v] == want, f"{v!r} acknowledged at {p}/{off}, read at {at[v][:2]}"
    unacked = set(counts) - set(producer.acked)
    assert not unacked, f"{len(unacked)} records stored but never acknowledged, e.g. {sorted(unacked)[:3]}"
    assert sum(ends.values()) == len(got) == len(producer.acked)
    _check_group_and_transactions(cluster, group, txns)


def _check_group_and_transactions(cluster, group: GroupCommitter, txns: TxnWriter) -> None:
    """Committed offsets never behind what was acknowledged; committed transactions wholly
    visible to read_committed, aborted ones never."""
    assert group.commits > 0 and group.acked, "the group committed nothing"
    got = committed_offsets(cluster.bootstrap(), TOPIC, range(PARTITIONS))
    behind = {p: (got.get(p), o) for p, o in group.acked.items() if got.get(p, -1) < o}
    assert not behind, f"committed offsets went back (fetched, acknowledged): {behind}"

    print(f"group: {group.commits} commits {group.acked}; transactions: "
          f"{len(txns.committed) // 5} committed, {len(txns.aborted) // 5} aborted")
    assert not txns.unknown, f"{len(txns.unknown)} transactional records of unknown fate"
    assert txns.committed and txns.aborted, "no committed or no aborted transaction"
    seen: list = []

    def all_visible():
        seen[:] = read_committed(cluster.bootstrap(), TXN_TOPIC, [0, 1])
        return set(txns.committed) <= set(seen)
    try:
        wait_for(all_visible, timeout=90, what="committed transactions visible")
    except AssertionError:
        lost = set(txns.committed) - set(seen)
        raise AssertionError(f"{len(lost)} committed transactional records not visible to "
                             f"read_committed, e.g. {sorted(lost)[:3]}") from None
    leaked = set(seen) & set(txns.aborted)
    assert not leaked, f"{len(leaked)} aborted records visible to read_committed, e.g. {sorted(leaked)[:3]}"
    assert len(seen) == len(set(seen)) == len(txns.committed), \
        f"read_committed holds {len(seen)} records, {len(set(seen))} distinct, {len(txns.committed)} committed"
