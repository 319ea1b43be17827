"""A network partition on real processes (issue 19, faults beyond kill -9): three combined
nodes whose controller traffic runs through links the test controls
(``tests/support/links.py``: node i reaches node j's CONTROLLER listener through its own
link i→j). A follower is cut off from both others for several election timeouts, then
healed. With pre-vote on the wire (KIP-996, Vote v2) the cut-off node only ever asks for
pre-votes, which change nothing: the majority keeps its leader and epoch and keeps serving
metadata writes throughout, and the returning node follows that leader again in the same
epoch. (Without pre-vote it would come back with a higher epoch and depose the leader.)
"""
from __future__ import annotations

import threading
import time

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from kbroker.cluster import ports
from kbroker.config import new_cluster_id
from tests.support.links import Link

from .support import NodeProcess, describe_quorum, free_base_port, wait_for


def test_a_partitioned_follower_returns_without_disrupting_the_leader(tmp_path):
    base = free_base_port(6)
    cid = new_cluster_id()
    links = {(i, j): Link(ports(j, base)[1]) for i in (1, 2, 3) for j in (1, 2, 3) if i != j}
    nodes = {}
    for i in (1, 2, 3):
        voters = ",".join(f"{j}@127.0.0.1:{ports(j, base)[1] if j == i else links[(i, j)].port}"
                          for j in (1, 2, 3))
        nodes[i] = NodeProcess(i, 3, base, tmp_path, cid, extra={"controller.quorum.voters": voters})
    try:
        starters = [threading.Thread(target=n.start) for n in nodes.values()]   # a quorum needs them all
        for t in starters:
            t.start()
        for t in starters:
            t.join()
        assert all(n.proc is not None and n.proc.poll() is None for n in nodes.values())

        def leader_and_epoch():
            for n in nodes.values():
                p, _ = describe_quorum(n.port)
                if p is not None and p.error_code == 0 and p.leader_id > 0:
                    return p.leader_id, p.leader_epoch
            return None
        wait_for(leader_and_epoch, what="a leader")
        leader, epoch = leader_and_epoch()
        victim = next(i for i in (1, 2, 3) if i != leader)
        for (i, j), link in links.items():
            if victim in (i, j):
                link.cut()
        admin = KafkaAdminClient(bootstrap_servers=nodes[leader].bootstrap, request_timeout_ms=20000)
        try:
            admin.create_topics([NewTopic("during-partition", 1, 1)])     # the majority serves
            time.sleep(4.0)       # > 4 fetch timeouts: the victim keeps trying to get elected
            assert leader_and_epoch() == (leader, epoch)
            for link in links.values():
                link.heal()

            def victim_follows():
                p, _ = describe_quorum(nodes[leader].port)
                if p is None or p.error_code:
                    return False
                ends = {v.replica_id: v.log_end_offset for v in p.current_voters}
                return ends.get(victim, -1) >= p.high_watermark
            wait_for(victim_follows, timeout=30, what="the victim back as a follower")
            assert leader_and_epoch() == (leader, epoch), "the returning node forced an election"
            admin.create_topics([NewTopic("after-partition", 1, 1)])
        finally:
            admin.close()
        log = nodes[victim].log_text()
        assert "prospective" in log, "the victim never asked for pre-votes"
    finally:
        for n in nodes.values():
            if n.proc is not None and n.proc.poll() is None:
                n.kill()
        for link in links.values():
            link.close()
