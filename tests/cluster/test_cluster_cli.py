"""``kbroker cluster --controllers 3 --nodes 2``: three dedicated controllers and two
dedicated brokers as one command; its ready line names the brokers' bootstrap (only
them), clients see both brokers, SIGTERM stops every node cleanly."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from kbroker.tools.local_cluster import ports

from .support import REPO_ROOT, cluster_command, describe_quorum, free_base_port, metadata, wait_for


def test_cluster_command_with_dedicated_controllers(tmp_path):
    base = free_base_port(10)
    args = ["--controllers", "3", "--nodes", "2", "--base-port", str(base), "--data-dir", str(tmp_path / "data"),
            "--override", "broker.heartbeat.interval.ms=300",
            "--override", "controller.quorum.election.timeout.ms=500"]
    with cluster_command(args, tmp_path / "out.txt") as line:
        boot = re.search(r"bootstrap (\S+)", line).group(1).split(",")
        assert boot == [f"127.0.0.1:{ports(i, base)[0]}" for i in (4, 5)]
        assert "5 nodes" in line
        for b in boot:
            port = int(b.rsplit(":", 1)[1])
            wait_for(lambda: sorted(x.node_id for x in metadata(port).brokers) == [4, 5],
                     what="both brokers registered")
            q, _ = describe_quorum(port)
            assert sorted(v.replica_id for v in q.current_voters) == [1, 2, 3]
        for i in (1, 2, 3):   # controllers: their CONTROLLER listener only
            q, _ = describe_quorum(ports(i, base)[1])
            assert q.error_code == 0 and q.leader_id in (1, 2, 3)
            with pytest.raises(OSError):
                metadata(ports(i, base)[0])
    for i in range(1, 6):
        assert "shut down cleanly" in (tmp_path / "data" / f"node-{i}.log").read_text(errors="replace")


def test_make_cluster_restart_one_node_report_death_once_and_ctrl_c(tmp_path):
    """`make cluster` as a user runs it: `kbroker cluster restart N` (graceful, and of a node
    that died) brings a node back; a node's death is reported once; a Ctrl-C to the terminal's
    process group stops every node cleanly and make reports no error."""
    base = free_base_port(6)
    data = tmp_path / "data"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = (f"--nodes 3 --base-port {base} --data-dir {data} "
            "--override broker.heartbeat.interval.ms=300 --override controller.quorum.election.timeout.ms=500")
    out = open(tmp_path / "out.txt", "wb")
    # its own session: the process group a terminal's Ctrl-C is sent to
    make = subprocess.Popen(["make", "--no-print-directory", "-o", ".venv/.installed", "cluster",
                             f"CLUSTER_ARGS={args}"], stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
                            env=env, start_new_session=True)
    text = lambda: (tmp_path / "out.txt").read_text(errors="replace")   # noqa: E731

    def kb(*a):
        return subprocess.run([sys.executable, "-m", "kbroker", *a], capture_output=True, text=True,
                              cwd=REPO_ROOT, env=env, timeout=120)

    try:
        wait_for(lambda: "kbroker cluster ready:" in text(), timeout=90, what="the cluster's ready line")
        # a graceful restart of node 2
        r = kb("cluster", "restart", "2", "--data-dir", str(data))
        assert r.returncode == 0 and "node 2 restarted and ready" in r.stdout, r.stdout + r.stderr
        assert (data / "node-2.log").read_text(errors="replace").count("kbroker ready:") == 2
        assert "shut down cleanly" in (data / "node-2.log").read_text(errors="replace")
        # node 3 dies on its own: one line, however long the runner watches
        pid3 = int((data / "node-3.pid").read_text())
        os.kill(pid3, signal.SIGKILL)
        wait_for(lambda: "node 3 exited with -9" in text(), what="the death report")
        wait_for(lambda: metadata(ports(1, base)[0]) is not None, what="node 1 answers")
        time.sleep(2)   # ~20 polls of the runner
        assert text().count("node 3 exited") == 1, text()
        r = kb("cluster", "restart", "3", "--data-dir", str(data))
        assert r.returncode == 0, r.stdout + r.stderr
        wait_for(lambda: sorted(x.node_id for x in metadata(ports(1, base)[0]).brokers) == [1, 2, 3],
                 what="node 3 registered again")
        # an unknown node, and no runner: one line, exit 1
        r = kb("cluster", "restart", "7", "--data-dir", str(data))
        assert r.returncode == 1 and r.stderr.startswith("kbroker: "), r.stderr
        r = kb("cluster", "restart", "1", "--data-dir", str(tmp_path / "elsewhere"))
        assert r.returncode == 1 and "no running" in r.stderr, r.stderr
    finally:
        os.killpg(make.pid, signal.SIGINT)   # the terminal's Ctrl-C
        try:
            make.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
            raise
        out.close()
    assert "***" not in text() and "Error" not in text(), text()
    for i in (1, 2, 3):
        log = (data / f"node-{i}.log").read_text(errors="replace")
        assert "shut down cleanly" in log.rsplit("kbroker ready:", 1)[1], log[-2000:]
    assert not (data / "cluster.pid").exists()


def test_nodes_stop_when_the_runner_is_killed(tmp_path):
    """Nodes run in their own process group (so Ctrl-C reaches only the runner); if the runner
    itself is SIGKILLed they are not left behind: each gets SIGTERM and stops cleanly."""
    base = free_base_port(4)
    data = tmp_path / "data"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = open(tmp_path / "out.txt", "wb")
    p = subprocess.Popen([sys.executable, "-m", "kbroker", "cluster", "--nodes", "2", "--base-port", str(base),
                          "--data-dir", str(data), "--override", "controller.quorum.election.timeout.ms=500"],
                         stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env)
    try:
        wait_for(lambda: "kbroker cluster ready:" in (tmp_path / "out.txt").read_text(errors="replace"),
                 timeout=90, what="the cluster's ready line")
        pids = [int((data / f"node-{i}.pid").read_text()) for i in (1, 2)]
    finally:
        p.kill()
        p.wait()
        out.close()

    def gone(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie (already exited, parent gone until init reaps it) counts as gone
        try:
            return open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] == "Z"
        except OSError:
            return True

    wait_for(lambda: all(gone(pid) for pid in pids), timeout=60, what="the nodes to stop")
    for i in (1, 2):
        assert "shut down cleanly" in (data / f"node-{i}.log").read_text(errors="replace")
