"""Followers fetch from the endpoint their leader announces (KIP-853, as Kafka 4.3's
``FollowerState``), so what a controller announces must be an address the others reach.

Three combined nodes, each in its own test host (``tests/support/netns.py``), bind their
CONTROLLER listener to the wildcard (``CONTROLLER://:port``, as a container does) and name
each other by host address in ``controller.quorum.voters``. By Kafka's rule
(``effectiveAdvertisedControllerListeners``) such a node announces its own voters entry: the
followers fetch the leader's records there and say so in their log. (Announcing
``localhost``, as kbroker once did, would send each follower to its own host.)

A leader that announces an endpoint nobody reaches is named once by each follower, with the
address and the fix (the operators' view of ``kbroker/raft/driver.py``).
"""
from __future__ import annotations

from kbroker.tools.local_cluster import ports
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


def left_leader_1(text: str, i: int) -> bool:
    """Node ``i``'s log shows a Raft state after its first 'follower in epoch 1 (leader 1)'."""
    following = f"node {i} is follower in epoch 1 (leader 1)"
    at = text.find(following)
    return at >= 0 and f"raft: node {i} is " in text[at + len(following):]


def test_an_unreachable_announced_endpoint_is_named_once(tmp_path):
    """Node 1 advertises a controller endpoint no host has, and is the one to campaign (the
    others wait two minutes before they would): its followers cannot fetch from what it
    announces and say so once each -- naming the announced address and the fix -- not once
    per retry, while they still reach it at its voters entry (its BeginQuorumEpoch got through,
    so they know it leads)."""
    net = TestNet(3)
    cluster = Cluster(tmp_path, net=net)
    _, controller = ports(1, cluster.base)
    nowhere = f"{net.subnet}.99:{controller}"
    n1 = cluster.nodes[1]
    n1.overrides["advertised.listeners"] += f",CONTROLLER://{nowhere}"
    for i in (2, 3):
        cluster.nodes[i].overrides["controller.quorum.election.timeout.ms"] = "120000"
    line = f"cannot reach leader 1 at {nowhere}, the endpoint it announced"
    try:
        for n in cluster.nodes.values():
            n.launch()           # the quorum may never serve: not awaited
        for i in (2, 3):
            n = cluster.nodes[i]
            wait_for(lambda: line in n.log_text(), timeout=60, what=f"node {i} naming {nowhere}")
            # a fetch timeout later (it retried meanwhile, and node 1's voters entry answered
            # in between) still one line: the node gave up on leader 1 (prospective) or another
            # node did first and won a new epoch -- whichever it was, it left epoch 1's follower
            wait_for(lambda: left_leader_1(n.log_text(), i), timeout=60,
                     what=f"node {i} no longer following leader 1")
            lines = [ln for ln in n.log_text().splitlines() if line in ln]
            assert len(lines) == 1, lines
            assert "advertised controller listener is reachable" in lines[0]
    finally:
        cluster.shutdown()
        net.close()
