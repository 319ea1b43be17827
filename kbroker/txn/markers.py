"""Commit/abort markers: written where a partition is led, sent there when it is not.

Kafka's ``TransactionMarkerChannelManager`` (coordinator side) and the leader side of
WriteTxnMarkers (key 27; KIP-98). The coordinator sends v2, whose markers carry the
transaction's client ``transaction_version`` (KIP-890 part 2: 2 for a TV2 transaction,
whose marker epoch is the bumped one), as Kafka 4's coordinator does.

- :func:`write_local` appends a marker to each partition this node leads. A marker
  on ``__consumer_offsets`` also makes the transaction's staged offsets visible in the
  group coordinator (or drops them). A partition the image knows but this node does not
  lead answers NOT_LEADER_OR_FOLLOWER, one the image does not know
  UNKNOWN_TOPIC_OR_PARTITION (Kafka's ``getPartitionOrError``).
- :func:`write_as_leader` is the WriteTxnMarkers handler's work and the coordinator's
  shortcut for the partitions it leads itself: :func:`write_local`, then, as Kafka appends
  markers with ``acks=-1``, a wait until each marker is replicated when the replica manager
  can wait (``wait_replicated``), so Complete* is never written for a marker a failover could
  still lose.
- :class:`MarkerChannel` delivers one transaction's markers across the cluster: it groups
  the partitions by their leader in the current metadata image, writes its own directly and
  sends one WriteTxnMarkers per other leader (``RpcClient``: pooled trio connections, on the
  inter-broker listener's endpoint), and retries what did not succeed -- a lost connection,
  NOT_LEADER_OR_FOLLOWER, an unknown leader -- against the leader of the next image, with a
  capped backoff, until every partition has its marker. A partition deleted from the image
  needs no marker. INVALID_PRODUCER_EPOCH and TRANSACTION_COORDINATOR_FENCED mean a newer
  producer epoch or coordinator owns the partition: the delivery stops without completing
  (as Kafka's completion handler "stops sending").
The caller decides when the delivery is obsolete (``still_valid``: this node still
coordinates the transaction, which is still in the same Prepare* state).
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable

import trio

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

log = logging.getLogger("kbroker.txn.markers")

OFFSETS_TOPIC = "__consumer_offsets"
WRITE_TXN_MARKERS = 27
WRITE_TXN_MARKERS_VERSION = 2
# the delivery gives up on these: a newer producer epoch / coordinator owns the partition
FENCED = frozenset({E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED})

TP = tuple[str, int]


def _not_hosted_error(broker, topic: str, p: int) -> int:
    t = broker.metadata.topics.get(topic)
    if t is not None and p in t.partitions:
        return E.NOT_LEADER_OR_FOLLOWER
    return E.UNKNOWN_TOPIC_OR_PARTITION


def write_local(broker, producer_id: int, producer_epoch: int, commit: bool,
                partitions: Iterable[TP], coordinator_epoch: int,
                stats: dict | None = None) -> dict[TP, tuple[int, int]]:
    """Append a marker to each led partition: ``{tp: (error, marker offset or -1)}``."""
    replicas = broker.replicas
    out: dict[TP, tuple[int, int]] = {}
    for topic, p in partitions:
        try:
            offset = replicas.write_txn_marker(topic, p, producer_id=producer_id,
                                               producer_epoch=producer_epoch, commit=commit,
                                               coordinator_epoch=coordinator_epoch)
        except Exception as exc:  # noqa: BLE001 - the replica layer's errors carry a code
            if not hasattr(exc, "error_code"):
                raise
            code = exc.error_code
            if code == E.UNKNOWN_TOPIC_OR_PARTITION:
                code = _not_hosted_error(broker, topic, p)
            out[(topic, p)] = (code, -1)
            if stats is not None and code not in (E.UNKNOWN_TOPIC_OR_PARTITION,
                                                  E.NOT_LEADER_OR_FOLLOWER):
                stats["marker_errors"] = stats.get("marker_errors", 0) + 1
                log.warning("marker for producer %d on %s-%d failed: %s", producer_id,
                            topic, p, exc)
            continue
        if stats is not None:
            stats["markers"] = stats.get("markers", 0) + 1
        out[(topic, p)] = (E.NONE, offset)
        if topic == OFFSETS_TOPIC:
            gc = getattr(broker, "group_coordinator", None)
            if gc is not None:
                gc.manager.complete_txn_offsets(producer_id, p, commit)
    return out


async def write_as_leader(broker, producer_id: int, producer_epoch: int, commit: bool,
                          partitions: Iterable[TP], coordinator_epoch: int,
                          stats: dict | None = None, timeout_ms: int = 10_000) -> dict[TP, int]:
    """WriteTxnMarkers on the leader: write, then wait for replication where possible."""
    written = write_local(broker, producer_id, producer_epoch, commit, partitions,
                          coordinator_epoch, stats)
    out = {tp: code for tp, (code, _) in written.items()}
    wait = getattr(broker.replicas, "wait_replicated", None)
    if wait is None:
        return out
    for tp, (code, offset) in written.items():
        if code == E.NONE and offset >= 0:
            out[tp] = int(await wait(tp[0], tp[1], offset + 1, timeout_ms))
    return out


def inter_broker_listener(config) -> str | None:
    """``inter.broker.listener.name``, else the first advertised listener's name."""
    try:
        name = config.get("inter.broker.listener.name")
    except KeyError:
        name = None
    if name:
        return name
    listeners = getattr(config, "advertised_listeners", None) or getattr(config, "listeners", None)
    return listeners[0].name if listeners else None


class MarkerChannel:
    """Delivers transactions' markers to partition leaders; owned by the coordinator."""

    def __init__(self, broker, stats: dict, *, rpc=None, request_timeout_s: float = 15.0,
                 min_backoff_s: float = 0.05, max_backoff_s: float = 1.0):
        from kbroker.raft.transport import RpcClient
        self.broker = broker
        self.stats = stats
        self.rpc = rpc or RpcClient(client_id=f"kbroker-txn-{broker.node_id}")
        self.listener = inter_broker_listener(broker.config)
        self.request_timeout_s = request_timeout_s
        self.min_backoff_s = min_backoff_s
        self.max_backoff_s = max_backoff_s

    # ------------------------------------------------------------------ one request
    def endpoint(self, node_id: int) -> tuple[str, int] | None:
        b = self.broker.metadata.brokers.get(node_id)
        if b is None:
            return None
        ep = b.endpoint(self.listener) if self.listener else None
        if ep is None and b.endpoints:
            ep = b.endpoints[0][1:]
        return ep

    async def send(self, node_id: int, producer_id: int, producer_epoch: int, commit: bool,
                   partitions: list[TP], coordinator_epoch: int,
                   transaction_version: int = 0) -> dict[TP, int]:
        """One WriteTxnMarkers to ``node_id``; a failed call answers every partition with
        NOT_LEADER_OR_FOLLOWER (retried after the next image)."""
        failed = {tp: E.NOT_LEADER_OR_FOLLOWER for tp in partitions}
        addr = self.endpoint(node_id)
        if addr is None:
            return failed
        R = messages.WriteTxnMarkersRequest
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        body = R(markers=[R.WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            topics=[R.WritableTxnMarkerTopic(name=t, partition_indexes=sorted(ps))
                    for t, ps in sorted(by_topic.items())],
            coordinator_epoch=coordinator_epoch, transaction_version=transaction_version)])
        self.stats["marker_requests"] = self.stats.get("marker_requests", 0) + 1
        resp = await self.rpc.call_addr(addr, WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, body,
                                        timeout=self.request_timeout_s)
        if resp is None:
            self.stats["marker_request_failures"] = self.stats.get("marker_request_failures", 0) + 1
            return failed
        out = dict(failed)
        for m in resp.markers:
            if m.producer_id != producer_id:
                continue
            for t in m.topics:
                for pr in t.partitions:
                    if (t.name, pr.partition_index) in out:
                        out[(t.name, pr.partition_index)] = pr.error_code
        return out

    # ------------------------------------------------------------------ a whole transaction
    async def deliver(self, producer_id: int, producer_epoch: int, commit: bool,
                      partitions: Iterable[TP], coordinator_epoch: int,
                      still_valid: Callable[[], bool] = lambda: True,
                      transaction_version: int = 0) -> bool:
        """Write a marker to every partition (local ones directly); True once all have one,
        False if the delivery was abandoned (fenced, or ``still_valid()`` turned false)."""
        remaining = set(partitions)
        backoff = self.min_backoff_s
        me = self.broker.node_id
        rounds = 0
        while remaining:
            if not still_valid():
                return False
            rounds += 1
            topics = self.broker.metadata.topics
            by_leader: dict[int, list[TP]] = {}
            for tp in sorted(remaining):
                t = topics.get(tp[0])
                pi = t.partitions.get(tp[1]) if t is not None else None
                if pi is None:
                    remaining.discard(tp)          # deleted: nothing to mark
                    continue
                by_leader.setdefault(pi.leader, []).append(tp)
            results: dict[TP, int] = {}

            async def to(leader: int, tps: list[TP]) -> None:
                if leader == me:
                    results.update(await write_as_leader(self.broker, producer_id, producer_epoch,
                                                         commit, tps, coordinator_epoch, self.stats))
                elif leader >= 0:
                    results.update(await self.send(leader, producer_id, producer_epoch, commit,
                                                   tps, coordinator_epoch, transaction_version))

            async with trio.open_nursery() as n:
                for leader, tps in by_leader.items():
                    n.start_soon(to, leader, tps)
            for tp, code in results.items():
                if code == E.NONE:
                    remaining.discard(tp)
                elif code in FENCED:
                    log.warning("markers of producer %d epoch %d stopped: %s-%d answered %s",
                                producer_id, producer_epoch, tp[0], tp[1], E(code).name)
                    return False
                elif code == E.UNKNOWN_TOPIC_OR_PARTITION and tp[0] not in self.broker.metadata.topics:
                    remaining.discard(tp)
            if not remaining:
                break
            if rounds == 20:
                log.warning("markers of producer %d still missing on %s", producer_id,
                            sorted(remaining))
            self.stats["marker_retries"] = self.stats.get("marker_retries", 0) + 1
            await trio.sleep(backoff)
            backoff = min(self.max_backoff_s, backoff * 2)
        return True

    async def aclose(self) -> None:
        await self.rpc.aclose()
