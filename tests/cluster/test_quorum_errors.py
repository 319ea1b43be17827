"""Clear quorum errors and a shutdown that always ends (issue 19, items 2 and 5), on real
node processes.

Misconfigurations, each named once per peer on both sides with the fix, never once per
retry (the retries are counted in the candidate's DEBUG log, so "once" is not vacuous):

- voter lists that differ: node 3 believes the voters are 1,2,3 while 1 and 2 have 1,2 —
  its votes are refused with INCONSISTENT_VOTER_SET (inside the Vote partition);
- swapped ids: the process with ``node.id=1`` answers at the address the voters give
  node 2 and the other way round — INVALID_VOTER_KEY;
- a wrong ``node.id`` for the roles: a controller outside ``controller.quorum.voters``, or a
  broker-only node inside it, refuses to start (exit 2), as Kafka's KafkaConfig does.

Shutdown with no controller (kbroker/server, kbroker/server/signals.py): one SIGTERM ends a
registered broker and a combined node whose peers are gone within the controlled-shutdown
wait (``broker.session.timeout.ms``) plus the drain; a second signal ends the wait at once,
and also a drain held by a busy connection. The waits are long (120 s) where only the
second signal may explain the exit; the tests assert exit codes and log lines, never times.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from kbroker.config.broker import new_cluster_id
from kbroker.wire import messages as w
from tests.support.parallel import in_threads

from .support import REPO_ROOT, Cluster, NodeProcess, call, describe_quorum, free_base_port, wait_for

DEBUG = ["--log-level", "DEBUG"]


def count(node, text: str) -> int:
    return sum(text in line for line in node.log_text().splitlines())


def wait_logged(node, text: str, times: int = 1, timeout: float = 60.0) -> None:
    wait_for(lambda: count(node, text) >= times, timeout, what=f"{text!r} x{times} in node "
             f"{node.node_id}'s log")


def ignore_errors(fn, *args):
    try:
        fn(*args)
    except OSError:
        pass        # a forced stop closes the connection unanswered


def stop_all(nodes) -> None:
    for n in nodes:
        if n.running:
            n.kill()


# ------------------------------------------------------------------ misconfigured quorums

def test_a_candidate_outside_the_voters_is_named_once_on_both_sides(tmp_path):
    base, cid = free_base_port(6), new_cluster_id()
    nodes = {i: NodeProcess(i, 3, base, tmp_path, cid, voters=[1, 2] if i < 3 else [1, 2, 3])
             for i in (1, 2, 3)}
    nodes[3].extra_args = DEBUG
    try:
        in_threads(lambda n: n.start(), [nodes[1], nodes[2]])
        nodes[3].start()        # it learns the leader from the refusals and follows it
        for voter in (1, 2):
            wait_logged(nodes[3], f"voter {voter} at 127.0.0.1:{nodes[voter].controller_port} "
                                  "refused with INCONSISTENT_VOTER_SET (Vote)")
            wait_logged(nodes[voter], "node 3 (127.0.0.1) asked for a vote but is not in this "
                                      "node's controller.quorum.voters 1,2")
        leader = describe_quorum(nodes[1].port)[0].leader_id
        survivor = nodes[3 - leader]
        nodes[leader].kill()
        # node 3 now campaigns again and again; the survivor refuses every round
        asked = count(nodes[3], f"raft: node 3 -> {survivor.node_id}: VoteRequest")
        wait_logged(nodes[3], f"raft: node 3 -> {survivor.node_id}: VoteRequest", asked + 3)
        refusals = [ln for ln in nodes[3].log_text().splitlines()
                    if f"voter {survivor.node_id} at" in ln and "INCONSISTENT_VOTER_SET" in ln]
        assert len(refusals) == 1, refusals
        assert "give every node the same controller.quorum.voters" in refusals[0]
        assert count(survivor, "asked for a vote but is not in") == 1
        assert "give every node the same controller.quorum.voters" in survivor.log_text()
        # and it was never elected
        assert count(nodes[3], "node 3 is leader") == 0
    finally:
        stop_all(nodes.values())


def test_swapped_node_ids_are_named_once_on_both_sides(tmp_path):
    """Processes 1 and 2 have each other's ids: the one at node 1's address says it is node 2.
    Node 3 (right) is refused by both; each refuser names the id it was addressed as. The
    swapped pair does not campaign here (a long election timeout): if one of them did, node 3
    could vote it in and then follow it at the endpoint it announces (KIP-853, as Kafka's
    voters do), a quorum that works around the swap -- not what this test looks at."""
    base, cid = free_base_port(6), new_cluster_id()
    nodes = {i: NodeProcess(i, 3, base, tmp_path, cid) for i in (1, 2, 3)}
    nodes[1].overrides["node.id"], nodes[2].overrides["node.id"] = "2", "1"
    for i in (1, 2):
        nodes[i].overrides["controller.quorum.election.timeout.ms"] = "120000"
    nodes[3].extra_args = DEBUG
    try:
        for n in nodes.values():
            n.launch()          # the swapped pair may never become ready
        for addressed, at in ((1, nodes[1]), (2, nodes[2])):
            wait_logged(nodes[3], f"voter {addressed} at 127.0.0.1:{at.controller_port} refused "
                                  "with INVALID_VOTER_KEY")
            wait_logged(at, f"addressed this node as voter {addressed} but its node.id is "
                            f"{3 - addressed}")
        asked = count(nodes[3], "raft: node 3 -> 1: VoteRequest")
        wait_logged(nodes[3], "raft: node 3 -> 1: VoteRequest", asked + 3)
        for addressed, at in ((1, nodes[1]), (2, nodes[2])):
            refusals = [ln for ln in nodes[3].log_text().splitlines()
                        if f"voter {addressed} at" in ln and "INVALID_VOTER_KEY" in ln]
            assert len(refusals) == 1, refusals
            assert f"is not node {addressed}: check its node.id" in refusals[0]
            assert count(at, f"addressed this node as voter {addressed}") == 1
            assert "check node.id here" in at.log_text()
    finally:
        stop_all(nodes.values())


@pytest.mark.parametrize("roles, node_id, words", [
    ("broker,controller", 4, "has the controller role but is not one of the voters"),
    ("controller", 4, "has the controller role but is not one of the voters"),
    ("broker", 1, "is a voter of controller.quorum.voters (1,2) but process.roles is just broker"),
])
def test_a_node_id_that_does_not_fit_the_voters_refuses_to_start(tmp_path, roles, node_id, words):
    """Kafka's KafkaConfig rules: a controller's id must be in a static voters list, a
    broker-only node's must not. Refused before anything is written, in one line."""
    base = free_base_port(8)
    node = NodeProcess(node_id, 2, base, tmp_path, new_cluster_id(), roles=roles, voters=[1, 2])
    r = subprocess.run(node.command(), capture_output=True, text=True, timeout=60, cwd=REPO_ROOT)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbroker: configuration error: node.id: "), lines
    assert words in lines[0]
    assert "on every node" in lines[0] or "add controller to process.roles" in lines[0]
    assert not node.data_dir.exists()


# ------------------------------------------------------------------ shutdown without controllers

def test_sigterm_ends_a_broker_and_a_combined_node_whose_controllers_are_gone(tmp_path):
    """Node 3 (combined) and node 4 (broker) registered and served; voters 1 and 2 die. One
    SIGTERM each: the controlled shutdown is not granted (no quorum), its wait ends after
    broker.session.timeout.ms (3 s here), and both stop cleanly (Kafka's broker waits five
    minutes there: compat_tests/FINDINGS.md F-930)."""
    c = Cluster(tmp_path, nodes=4, roles={1: "controller", 2: "controller",
                                          3: "broker,controller", 4: "broker"})
    try:
        c.start_all()
        c.kill(1)
        c.kill(2)
        stopping = [c.nodes[3], c.nodes[4]]
        for n in stopping:
            n.proc.send_signal(signal.SIGTERM)
        for n in stopping:
            assert n.proc.wait(timeout=60) == 0, n.log_text()[-3000:]
            text = n.log_text()
            assert f"broker {n.node_id}: no controlled shutdown granted within 3.0 s" in text
            assert f"broker {n.node_id} shut down cleanly" in text
            assert "forcing shutdown" not in text
    finally:
        c.shutdown()


def test_a_second_signal_ends_the_controlled_shutdown_wait_and_a_busy_drain(tmp_path):
    """Voter 1 dies, so nobody leads the quorum {1, 2}. Node 3 (broker) would wait 120 s for
    its controlled shutdown: a SIGINT after the SIGTERM ends it at once. Node 2 (combined)
    waits 3 s for that, then drains a connection whose CreateTopics waits up to 120 s for a
    controller, with --shutdown-timeout 120: a second SIGTERM during the drain ends it at
    once. Both still close their logs (exit 0, clean shutdown)."""
    c = Cluster(tmp_path, nodes=3, roles={1: "controller", 2: "broker,controller", 3: "broker"})
    c.nodes[3].overrides["broker.session.timeout.ms"] = "120000"
    c.nodes[2].overrides["request.timeout.ms"] = "120000"
    c.nodes[2].extra_args = ["--shutdown-timeout", "120"]
    busy, drainer = c.nodes[3], c.nodes[2]
    try:
        c.start_all()
        c.kill(1)
        wait_for(lambda: describe_quorum(drainer.port)[0].leader_id == -1, what="no leader")
        # a request that waits for a controller that never comes
        R = w.CreateTopicsRequest
        create = R(timeout_ms=120000, validate_only=False, topics=[R.CreatableTopic(
            name="never", num_partitions=1, replication_factor=1, assignments=[], configs=[])])
        threading.Thread(target=lambda: ignore_errors(call, drainer.port, 19, 4, create, 200),
                         daemon=True).start()

        busy.proc.send_signal(signal.SIGTERM)
        drainer.proc.send_signal(signal.SIGTERM)
        wait_logged(busy, "broker 3: beginning controlled shutdown")
        busy.proc.send_signal(signal.SIGINT)
        wait_logged(drainer, "shutting down: no new connections; 1 open")
        drainer.proc.send_signal(signal.SIGTERM)
        for n in (busy, drainer):
            assert n.proc.wait(timeout=20) == 0, n.log_text()[-3000:]
            assert f"broker {n.node_id} shut down cleanly" in n.log_text()
        assert "received SIGINT, forcing shutdown" in busy.log_text()
        assert "no controlled shutdown granted" not in busy.log_text()
        assert "forced stop: cancelling 1 busy connection(s)" in drainer.log_text()
    finally:
        c.shutdown()


def test_kbroker_cluster_ctrl_c_stops_gracefully_and_a_second_one_at_once(tmp_path):
    """The `kbroker cluster` runner: node 2 dies, so node 1 has no quorum and its controlled
    shutdown would wait 120 s. A first Ctrl-C sends node 1 one SIGTERM (a graceful stop, not
    two that would force it); a second Ctrl-C sends it its second, and everything ends at
    once, node 1's logs closed cleanly."""
    base = free_base_port(4)
    data = tmp_path / "data"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out_path = tmp_path / "out.txt"
    with open(out_path, "wb") as out:
        runner = subprocess.Popen(
            [sys.executable, "-m", "kbroker", "cluster", "--nodes", "2", "--base-port", str(base),
             "--data-dir", str(data), "--override", "controller.quorum.election.timeout.ms=500",
             "--override", "broker.heartbeat.interval.ms=300",
             "--override", "broker.session.timeout.ms=120000"],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env, start_new_session=True)
    node1 = data / "node-1.log"
    try:
        wait_for(lambda: "kbroker cluster ready:" in out_path.read_text(errors="replace"),
                 timeout=90, what="the cluster's ready line")
        os.kill(int((data / "node-2.pid").read_text()), signal.SIGKILL)
        wait_for(lambda: "node 2 exited with -9" in out_path.read_text(errors="replace"),
                 what="the death report")
        runner.send_signal(signal.SIGINT)
        wait_for(lambda: "broker 1: beginning controlled shutdown" in node1.read_text(errors="replace"),
                 what="node 1's controlled shutdown")
        assert "forcing shutdown" not in node1.read_text(errors="replace")
        runner.send_signal(signal.SIGINT)
        assert runner.wait(timeout=30) == 0, out_path.read_text(errors="replace")[-3000:]
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
    text = node1.read_text(errors="replace")
    assert text.count("received SIGTERM") == 2 and "received SIGTERM, forcing shutdown" in text
    assert "broker 1 shut down cleanly" in text
