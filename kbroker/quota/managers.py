"""``QuotaManagers``: every quota manager of one broker, built from its config and fed from
every metadata image (the one object the node, the connections and the handlers hold)."""
from __future__ import annotations

from typing import Callable

from .connections import ConnectionQuotas
from .manager import ClientQuotaManager, RequestQuotaManager
from .mutation import ControllerMutationQuotaManager
from .replication import ReplicationQuota


class QuotaManagers:
    """The broker's client quota managers, fed from every metadata image."""

    def __init__(self, config, clock_ms: Callable[[], int]):
        samples = config.get("quota.window.num")
        window_ms = config.get("quota.window.size.seconds") * 1000
        self.produce = ClientQuotaManager("producer_byte_rate", samples, window_ms, clock_ms)
        self.fetch = ClientQuotaManager("consumer_byte_rate", samples, window_ms, clock_ms)
        self.request = RequestQuotaManager(samples, window_ms, clock_ms)
        self.mutation = ControllerMutationQuotaManager(
            config.get("controller.quota.window.num"),
            config.get("controller.quota.window.size.seconds") * 1000, clock_ms)
        self.connections = ConnectionQuotas(config, clock_ms)
        self.leader_replication = ReplicationQuota("leader", config, clock_ms)
        self.follower_replication = ReplicationQuota("follower", config, clock_ms)
        self._node_id = config.node_id

    def update(self, image) -> None:
        topics = getattr(image, "topics", None)
        if topics is not None:
            self.leader_replication.update(topics, self._node_id)
            self.follower_replication.update(topics, self._node_id)
        quotas = getattr(image, "client_quotas", None)
        if quotas is not None:
            self.produce.update(quotas)
            self.fetch.update(quotas)
            self.request.update(quotas)
            self.mutation.update(quotas)
            self.connections.update(quotas)

    def statistics(self) -> dict:
        return {"produce": self.produce.statistics(), "fetch": self.fetch.statistics(),
                "request": self.request.statistics(), "mutation": self.mutation.statistics(),
                "connections": self.connections.statistics(),
                "leader_replication": self.leader_replication.statistics(),
                "follower_replication": self.follower_replication.statistics()}
