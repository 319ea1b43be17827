"""Followers fetch from the endpoint their leader announces (KIP-853, as Kafka 4.3's
``FollowerState``), so what a controller announces must be an address the others reach.

Three combined nodes, each in its own test host (``tests/support/netns.py``), bind their
CONTROLLER listener to the wildcard (``CONTROLLER://:port``, as a container does) and name
each other by host address in ``controller.quorum.voters``. By Kafka's rule
(``effectiveAdvertisedControllerListeners``) such a node announces its own voters entry: the
followers fetch the leader's records there and say so in their log. (Announcing
``localhost``, as kbroker once did, would send each follower to its own host.)
"""
from __future__ import annotations

from kbroker.cluster import ports
from tests.support.netns import TestNet

from .support import Cluster, describe_quorum, wait_for


def test_a_wildcard_controller_listener_is_followed_at_its_voters_entry(tmp_path):
    net = TestNet(3)
    cluster = Cluster(tmp_path, net=net)
    for i, n in cluster.nodes.items():
        client, controller = ports(i, cluster.base)
        n.overrides["listeners"] = f"PLAINTEXT://{net.address(i)}:{client},CONTROLLER://:{controller}"
    try:
        cluster.start_all()

        def followed():
            for n in cluster.nodes.values():
                p, _ = describe_quorum(n.addr)
                if p is not None and p.error_code == 0 and p.leader_id > 0:
                    ends = [v.log_end_offset for v in p.current_voters]
                    return p.high_watermark > 0 and all(e >= p.high_watermark for e in ends) and p.leader_id
            return None
        leader = wait_for(followed, timeout=60, what="both followers caught up with the leader")
        _, controller = ports(leader, cluster.base)
        announced = f"fetches from leader {leader} at the endpoint it announced, {net.address(leader)}:{controller}"
        for i, n in cluster.nodes.items():
            if i != leader:
                wait_for(lambda: announced in n.log_text(), timeout=30,
                         what=f"node {i} following the announced {net.address(leader)}:{controller}")
    finally:
        cluster.shutdown()
        net.close()
