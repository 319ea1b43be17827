"""Producer-id expiration for every partition log of a node (``producer.id.expiration.ms``).

Kafka schedules one ``PeriodicProducerExpirationCheck`` per log, every
``producer.id.expiration.check.interval.ms`` (10 min), each calling
``ProducerStateManager.removeExpiredProducers`` (KIP-854). kbroker runs one sweep per node
instead (:func:`kbroker.log.tasks.run_background`), and a sweep visits only the logs that
have producer state: a log joins :attr:`ProducerExpiry.logs` when its producer state gains
its first producer or verification guard (the ``on_producers`` hook of
:class:`~kbroker.log.producer_state.ProducerStateManager`) and leaves it when a sweep leaves
it with neither, or finds the log closed. A node of 100,000 partitions, few of them written
by producers, does no work for the others.

:class:`ProducerExpiry` is also Kafka's shared ``ProducerStateManagerConfig``: the one
``expiration_ms`` every log's producer state reads (its ``settings``), set from the broker's
configuration before each sweep, so a cluster-wide dynamic value reaches every log at once.
Logs opened at start-up use it to filter their snapshots, as Kafka's ``loadFromSnapshot``.

The sweep changes memory only: the next snapshot (segment roll, clean shutdown) leaves the
expired producers out, and loading a log filters both the snapshot and the batches replayed
after it by the same rule, so a restart does not bring an expired producer back.
Synchronous and bounded; time comes as an argument (the wall clock: it is compared with
batch timestamps).
"""
from __future__ import annotations

DEFAULT_EXPIRATION_MS = 86_400_000          # producer.id.expiration.ms, 1 day


class ProducerExpiry:
    """The node's producer-id expiration setting and the logs a sweep must visit."""

    def __init__(self, expiration_ms: int = DEFAULT_EXPIRATION_MS):
        self.expiration_ms = expiration_ms
        self.logs: set = set()      # PartitionLogs (not imported: partition.py imports this)
        self.stats = {"sweeps": 0, "producers_expired": 0, "logs_visited": 0}

    def watch(self, log) -> None:
        """``log``'s producer map is no longer empty (called by its producer state)."""
        self.logs.add(log)

    def sweep(self, now_ms: int) -> int:
        """Forget the producers idle for ``expiration_ms`` in every watched log; returns how
        many were forgotten."""
        gone = 0
        visiting = list(self.logs)
        for log in visiting:
            ps = log.producer_state
            if log.closed:
                self.logs.discard(log)
                continue
            gone += ps.remove_expired(now_ms)
            if not ps.producers and not ps.verifications:
                self.logs.discard(log)
        self.stats["sweeps"] += 1
        self.stats["logs_visited"] += len(visiting)
        self.stats["producers_expired"] += gone
        return gone

    def producer_count(self) -> int:
        """Producers known to the node's open logs (Kafka's ``ProducerIdCount`` gauge, KIP-847)."""
        return sum(len(log.producer_state.producers) for log in self.logs if not log.closed)

    def statistics(self) -> dict:
        return {"expiration_ms": self.expiration_ms, "logs_with_producers": len(self.logs),
                **self.stats}
