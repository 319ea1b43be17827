"""Writing records for the gateway: one Produce request (acks=all) through the Produce
handler, one batch per partition, and one answer per record.

Partitions follow the Java producer's rules: a record's own ``partition``; else a keyed
record goes to ``murmur2(key) % partitions`` (the console's ``murmur2``, Kafka's
``Utils.murmur2``) so it lands where a Java or librdkafka producer would put it; unkeyed
records of one request stick to one partition, the next request moves on (KIP-480's
sticky idea without its batching timer), choosing among the partitions this node leads when
it leads any — so unkeyed records sent to any node of a cluster are written by that node.
Batches for partitions another node leads go to that leader (``forward.py``). A partition the request names but the topic has
not is refused before anything is written (404 40402). Everything else — ACLs, record
size (``max.message.bytes``), compacted topics' keys, the leader being here — is the
Produce handler's rule, and its error comes back per record.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from kbroker.console.views import murmur2
from kbroker.wire import messages
from kbroker.wire import records as rec
from kbroker.wire.error_codes import ErrorCode, is_retriable

from .errors import error_name
from .inproc import call_api

PRODUCE_VERSION = 9
PRODUCE_TIMEOUT_MS = 30_000
_sticky = itertools.count()


@dataclass
class Out:
    """One record to write (``partition`` None: the partitioner's choice)."""
    key: bytes | None
    value: bytes | None
    partition: int | None = None
    headers: tuple = ()
    timestamp: int | None = None


@dataclass
class Result:
    """The outcome of one produced record: partition and offset, or Kafka's error code."""
    partition: int
    offset: int = -1
    error_code: int = 0                 # Kafka's code
    message: str | None = None
    timestamp: int = -1

    @property
    def retriable(self) -> bool:
        return is_retriable(self.error_code)


def choose_partitions(outs: list[Out], partitions: int, local: list[int] | None = None) -> list[int]:
    turn = next(_sticky)
    sticky = sorted(local)[turn % len(local)] if local else (turn % partitions if partitions else 0)
    chosen = []
    for o in outs:
        if o.partition is not None:
            chosen.append(o.partition)
        elif o.key is not None:
            chosen.append((murmur2(o.key) & 0x7FFFFFFF) % partitions)
        else:
            chosen.append(sticky)
    return chosen


async def write(broker, topic: str, outs: list[Out], partitions: int,
                local: list[int] | None = None, forward=None) -> list[Result]:
    """Append ``outs`` to ``topic`` (``partitions`` partitions, ``local`` those led by this
    node); one Result per record, in order. With ``forward`` (a ``forward.Forwarder``) the
    batches of partitions another node leads go to that leader."""
    chosen = choose_partitions(outs, partitions, local)
    now = broker.now_ms()
    by_partition: dict[int, list[int]] = {}
    for i, p in enumerate(chosen):
        by_partition.setdefault(p, []).append(i)
    R = messages.ProduceRequest
    data = []
    batches = {}
    for p, idx in by_partition.items():
        batch = bytes(rec.build_batch([(outs[i].key, outs[i].value, list(outs[i].headers),
                                        outs[i].timestamp if outs[i].timestamp is not None else now)
                                       for i in idx]))
        batches[p] = batch
        data.append(R.PartitionProduceData(index=p, records=bytearray(batch)))
    req = R(transactional_id=None, acks=-1, timeout_ms=PRODUCE_TIMEOUT_MS,
            topic_data=[R.TopicProduceData(name=topic, partition_data=data)])
    resp = await call_api(broker, 0, PRODUCE_VERSION, req)
    answers = {pr.index: pr for tr in resp.responses for pr in tr.partition_responses}
    if forward is not None:
        await _forward(forward, topic, batches, answers)
    results: list[Result | None] = [None] * len(outs)
    for pr in answers.values():
        idx = by_partition.get(pr.index, [])
        for n, i in enumerate(idx):
            if pr.error_code:
                results[i] = Result(pr.index, -1, pr.error_code,
                                    pr.error_message or error_name(pr.error_code))
            else:
                ts = pr.log_append_time_ms if pr.log_append_time_ms >= 0 else (
                    outs[i].timestamp if outs[i].timestamp is not None else now)
                results[i] = Result(pr.index, pr.base_offset + n, 0, None, ts)
    return [r if r is not None else Result(chosen[i], -1, ErrorCode.UNKNOWN_SERVER_ERROR,
                                           "no answer for the partition")
            for i, r in enumerate(results)]


async def _forward(forward, topic: str, batches: dict[int, bytes], answers: dict) -> None:
    """Send the batches the local handler answered NOT_LEADER_OR_FOLLOWER to their leaders
    (``forward.py``: the local answer already passed the WRITE check) and take their answers."""
    from .forward import NOT_LEADER
    R = messages.ProduceRequest
    by_leader: dict[int, list[int]] = {}
    for p, pr in answers.items():
        if pr.error_code == NOT_LEADER:
            by_leader.setdefault(forward.leader(topic, p), []).append(p)
    for leader, parts in by_leader.items():
        if leader < 0:
            continue
        resp = await forward.call(leader, 0, PRODUCE_VERSION, R(
            transactional_id=None, acks=-1, timeout_ms=PRODUCE_TIMEOUT_MS,
            topic_data=[R.TopicProduceData(name=topic, partition_data=[
                R.PartitionProduceData(index=p, records=bytearray(batches[p])) for p in parts])]))
        if resp is None:
            continue
        for tr in resp.responses:
            for pr in tr.partition_responses:
                if pr.index in answers:
                    answers[pr.index] = pr


def led_here(broker, t) -> list[int]:
    """The partitions of a Metadata topic answer this node leads."""
    return [p.partition_index for p in t.partitions if p.leader_id == broker.node_id]
