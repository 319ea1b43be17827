"""A small ring buffer of the broker's key metrics, sampled every few seconds, for the
console's charts (cluster page) and message rates (topics page).

Samples are the broker's own counters (``broker.topic_stats``, ``server.request_stats``,
the open connections, under-replicated partitions of the image): cumulative values, so a
rate is the difference of two samples over their time. ``SAMPLES`` × ``INTERVAL_S`` is the
window (10 minutes). Time is injected (``now`` in seconds, trio's clock by default).
"""
from __future__ import annotations

from collections import deque

import trio

INTERVAL_S = 5.0
SAMPLES = 120


def under_replicated(image, node_id: int | None = None) -> list[dict]:
    """Partitions whose ISR is smaller than their replica set (all, or led by ``node_id``)."""
    out = []
    for t in image.topics.values():
        for i, p in t.partitions.items():
            if len(p.isr) < len(p.replicas) and (node_id is None or p.leader == node_id):
                out.append({"topic": t.name, "partition": i, "leader": p.leader,
                            "replicas": list(p.replicas), "isr": list(p.isr)})
    return out


class History:
    def __init__(self, now=None):
        self.now = now or trio.current_time
        self.samples: deque[dict] = deque(maxlen=SAMPLES)
        self.topics: deque[tuple[float, dict[str, int]]] = deque(maxlen=3)

    def sample(self, server) -> None:
        broker = getattr(server, "broker", None)
        if broker is None or not getattr(broker, "started", False):
            return
        stats = broker.topic_stats
        totals = stats.totals()
        requests = sum(s.count for s in list(server.request_stats.by_key.values()))
        t = self.now()
        self.samples.append({
            "t": t, "bytes_in": totals.bytes_in, "bytes_out": totals.bytes_out,
            "messages_in": totals.messages_in, "requests": requests,
            "connections": sum(server.connection_counts().values()),
            "under_replicated": len(under_replicated(broker.metadata, broker.node_id)),
        })
        self.topics.append((t, {n: c.messages_in for n, c in list(stats.topics.items())}))

    def rates(self) -> list[dict]:
        """Per-second rates between consecutive samples (the charts' points), plus gauges."""
        s = list(self.samples)
        out = []
        for a, b in zip(s, s[1:]):
            dt = max(b["t"] - a["t"], 1e-6)
            out.append({"t": b["t"],
                        "bytes_in": (b["bytes_in"] - a["bytes_in"]) / dt,
                        "bytes_out": (b["bytes_out"] - a["bytes_out"]) / dt,
                        "messages_in": (b["messages_in"] - a["messages_in"]) / dt,
                        "requests": (b["requests"] - a["requests"]) / dt,
                        "connections": b["connections"],
                        "under_replicated": b["under_replicated"]})
        return out

    def topic_rate(self, name: str) -> float | None:
        """Messages per second into ``name`` over the last sample interval."""
        if len(self.topics) < 2:
            return None
        (ta, a), (tb, b) = self.topics[-2], self.topics[-1]
        return max(0.0, (b.get(name, 0) - a.get(name, 0)) / max(tb - ta, 1e-6))

    async def run(self, server, interval: float = INTERVAL_S) -> None:
        while True:
            try:
                self.sample(server)
            except Exception:  # noqa: BLE001 - a failed sample must not stop the sampler
                pass
            await trio.sleep(interval)
