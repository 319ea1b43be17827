"""A network partition on real processes (issue 19, faults beyond kill -9): three combined
nodes, each in its own test host (``tests/support/netns.py``: a network namespace with its
own address, which the node binds, advertises, names in ``controller.quorum.voters`` and
announces as leader). A follower is cut off from both other hosts for several election
timeouts, then healed.

The cut is proven, not assumed: while it holds, the leader's DescribeQuorum shows the
victim's log end offset standing still although the leader writes (``assert_fetches_stalled``),
and the host filter counts dropped packets; after the heal the victim catches up. With
pre-vote on the wire (KIP-996, Vote v2) the cut-off node only ever asks for pre-votes, which
change nothing: the majority keeps its leader and epoch and keeps serving metadata writes
throughout, and the returning node follows that leader again in the same epoch. (Without
pre-vote it would come back with a higher epoch and depose the leader.)
"""
from __future__ import annotations

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from tests.support.netns import TestNet

from .support import Cluster, assert_fetches_stalled, describe_quorum, wait_for


def test_a_partitioned_follower_returns_without_disrupting_the_leader(tmp_path):
    net = TestNet(3)
    cluster = Cluster(tmp_path, net=net)
    nodes = cluster.nodes
    try:
        cluster.start_all()            # a quorum needs them all

        def leader_and_epoch(asked=(1, 2, 3)):
            for i in asked:
                p, _ = describe_quorum(nodes[i].addr)
                if p is not None and p.error_code == 0 and p.leader_id > 0:
                    return p.leader_id, p.leader_epoch
            return None
        leader, epoch = wait_for(leader_and_epoch, what="a leader")
        majority = [leader] + [i for i in (1, 2, 3) if i != leader]
        victim = majority[1]
        dropped = sum(net.dropped(i) for i in net.hosts)
        net.isolate(victim)
        admin = KafkaAdminClient(bootstrap_servers=nodes[leader].bootstrap, request_timeout_ms=20000)
        try:
            # > 4 fetch timeouts: the victim keeps trying to get elected meanwhile; the
            # majority serves a metadata write, which the victim does not fetch
            assert_fetches_stalled(nodes[leader].addr, leader, victim, hold=4.0,
                                   write=lambda: admin.create_topics([NewTopic("during-partition", 1, 1)]))
            assert sum(net.dropped(i) for i in net.hosts) > dropped
            assert leader_and_epoch(majority[:1]) == (leader, epoch)
            net.heal()

            def victim_follows():
                p, _ = describe_quorum(nodes[leader].addr)
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
        cluster.shutdown()
        net.close()
