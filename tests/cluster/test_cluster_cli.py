"""``kbroker cluster --controllers 3 --nodes 2``: three dedicated controllers and two
dedicated brokers as one command; its ready line names the brokers' bootstrap (only
them), clients see both brokers, SIGTERM stops every node cleanly."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from kbroker.cluster import ports

from .support import REPO_ROOT, describe_quorum, free_base_port, metadata, wait_for


def test_cluster_command_with_dedicated_controllers(tmp_path):
    base = free_base_port(10)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = open(tmp_path / "out.txt", "wb")
    p = subprocess.Popen([sys.executable, "-m", "kbroker", "cluster", "--controllers", "3", "--nodes", "2",
                          "--base-port", str(base), "--data-dir", str(tmp_path / "data"),
                          "--override", "broker.heartbeat.interval.ms=300",
                          "--override", "controller.quorum.election.timeout.ms=500"],
                         stdout=out, stderr=subprocess.STDOUT, cwd=REPO_ROOT, env=env)
    try:
        text = lambda: (tmp_path / "out.txt").read_text(errors="replace")   # noqa: E731
        line = wait_for(lambda: re.search(r"kbroker cluster ready: .*", text()), timeout=90,
                        what="the cluster's ready line").group(0)
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
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise
        out.close()
    assert rc == 0, (tmp_path / "out.txt").read_text(errors="replace")[-3000:]
    for i in range(1, 6):
        assert "shut down cleanly" in (tmp_path / "data" / f"node-{i}.log").read_text(errors="replace")
