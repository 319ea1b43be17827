"""Reaching a partition's leader on another node of the cluster, for the gateway of a node
that does not lead it: the same Produce, Fetch or ListOffsets request, sent over the
node-to-node RPC client (``kbroker/raft/transport.py``, the client the replica fetchers,
the transaction markers and the schema registry's store use) to the leader's inter-broker
listener.

Rule kept: a request is forwarded only for partitions the local handler answered
NOT_LEADER_OR_FOLLOWER, which it does after its ACL check (WRITE for Produce, READ for
Fetch, DESCRIBE for ListOffsets) with the cluster's one ACL image — so the principal of the
HTTP request was already authorized; the leader sees the inter-broker principal, as for
the registry's writes. Nothing is forwarded twice: the leader's answer, errors included, is
the answer.
"""
from __future__ import annotations

import logging

from kbroker.wire.error_codes import ErrorCode

log = logging.getLogger("kbroker.rest_proxy")

TIMEOUT_S = 35.0
NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER


class Forwarder:
    """One node's RPC client for the gateway (opened on first use, closed with the listener)."""

    def __init__(self, server):
        self.server = server
        self._rpc = None
        self.forwarded = 0

    def _client(self):
        if self._rpc is None:
            from kbroker.raft.transport import RpcClient
            broker = self.server.broker
            self._rpc = RpcClient(client_id=f"kbroker-rest-proxy-{broker.node_id}",
                                  security=getattr(broker.config, "inter_broker_security", None))
        return self._rpc

    def leader(self, topic: str, partition: int) -> int:
        t = self.server.broker.metadata.topics.get(topic)
        p = t.partitions.get(partition) if t is not None else None
        return -1 if p is None else p.leader

    def endpoint(self, node_id: int):
        broker = self.server.broker
        b = broker.metadata.brokers.get(node_id)
        if b is None or node_id == broker.node_id:
            return None
        inter = broker.config.inter_broker_listener()
        ep = b.endpoint(inter.name) if inter is not None else None
        if ep is None and b.endpoints:
            ep = b.endpoints[0][1:]
        return ep

    async def call(self, node_id: int, api_key: int, version: int, request):
        """The leader's answer, or None when it cannot be reached."""
        addr = self.endpoint(node_id)
        if addr is None:
            return None
        self.forwarded += 1
        try:
            return await self._client().call_addr(addr, api_key, version, request, TIMEOUT_S)
        except Exception as e:  # noqa: BLE001 - an unreachable leader keeps the local answer
            log.info("rest proxy: forwarding to node %d failed: %r", node_id, e)
            return None

    async def aclose(self) -> None:
        if self._rpc is not None:
            await self._rpc.aclose()
            self._rpc = None
