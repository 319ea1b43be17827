"""Leader elections on request (ElectLeaders, KIP-460) and the automatic preferred-leader
rebalance, as Kafka's KRaft controller does them (``ReplicationControlManager.electLeader``
and ``maybeBalancePartitionLeaders``).

Rules:

- PREFERRED (type 0): a partition already led by its first replica answers
  ``ELECTION_NOT_NEEDED``; otherwise ``build_change`` with the preferred election makes the
  first replica leader if it is in the ISR and live (leader epoch + 1); when it is not, the
  current leader stays and nothing is written: ``PREFERRED_LEADER_NOT_AVAILABLE``.
- UNCLEAN (type 1): a partition with a leader answers ``ELECTION_NOT_NEEDED``; a leaderless
  one gets a live ISR member if there is one, else (ELR on and the ISR empty, KIP-966) a live
  eligible leader replica -- a clean election, as Kafka tries it before an unclean one.
  kbroker does not elect outside the ISR and ELR (no leader recovery), so when only an
  out-of-sync replica could lead the answer is ``ELIGIBLE_LEADERS_NOT_AVAILABLE`` — what
  Kafka answers when no replica can lead.
- Unknown topic or partition: ``UNKNOWN_TOPIC_OR_PARTITION``. Another election type:
  ``INVALID_REQUEST`` for the whole request.
- A null topic list means every partition; then partitions answering
  ``ELECTION_NOT_NEEDED`` are left out of the answer (each topic still has its entry).
- Auto rebalance (``auto.leader.rebalance.enable``, every
  ``leader.imbalance.check.interval.seconds``): KRaft ignores
  ``leader.imbalance.per.broker.percentage`` and tries a preferred election on every
  partition whose leader is not its first replica, at most ``MAX_ELECTIONS_PER_IMBALANCE``
  records per round.
- A replica whose log directory is offline is never elected (KIP-858,
  ``reassign.build_change`` with the image's ``directories.rules``).
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

from . import directories, elr
from .image import MetadataImage
from .reassign import ONLINE, PREFERRED, build_change

ELECTION_PREFERRED = 0
ELECTION_UNCLEAN = 1
MAX_ELECTIONS_PER_IMBALANCE = 1000

PartitionResult = tuple[int, int, "str | None"]            # (partition, error code, message)


def elect_leader(image: MetadataImage, topic: str, partition: int, election_type: int,
                 acceptable: Callable[[int], bool]
                 ) -> tuple[int, str | None, messages.PartitionChangeRecord | None]:
    """One partition's election: ``(error code, message, record or None)``."""
    t = image.topics.get(topic)
    if t is None:
        return E.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {topic} does not exist.", None
    p = t.partitions.get(partition)
    if p is None:
        return E.UNKNOWN_TOPIC_OR_PARTITION, f"Partition {topic}-{partition} does not exist.", None
    if election_type == ELECTION_PREFERRED:
        if p.replicas and p.leader == p.replicas[0]:
            return E.ELECTION_NOT_NEEDED, "The preferred replica leads the partition already.", None
        rec = build_change(p, t.topic_id, acceptable, election=PREFERRED, dirs=directories.rules(image),
                           min_isr=elr.topic_min_isr(image, t))
        if rec is None:
            return (E.PREFERRED_LEADER_NOT_AVAILABLE,
                    "The preferred replica is not live or not in the ISR.", None)
        return E.NONE, None, rec
    if p.leader >= 0:
        return E.ELECTION_NOT_NEEDED, "The partition has a leader.", None
    rec = build_change(p, t.topic_id, acceptable, election=ONLINE, dirs=directories.rules(image),
                       min_isr=elr.topic_min_isr(image, t))
    if rec is None or rec.leader < 0:
        return (E.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                "No live in-sync replica can lead (kbroker does not elect out of the ISR).", None)
    return E.NONE, None, rec


def elect_leaders(image: MetadataImage, election_type: int,
                  topics: Iterable[tuple[str, Sequence[int]]] | None,
                  acceptable: Callable[[int], bool]
                  ) -> tuple[int, list[tuple[str, list[PartitionResult]]], list]:
    """ElectLeaders: ``(top-level error, [(topic, [(partition, code, message)])], records)``."""
    if election_type not in (ELECTION_PREFERRED, ELECTION_UNCLEAN):
        msg = f"Election type {election_type} is not known."
        results = [(name, [(i, E.INVALID_REQUEST, msg) for i in parts]) for name, parts in topics or ()]
        return E.INVALID_REQUEST, results, []
    everything = topics is None
    if everything:
        topics = [(name, sorted(t.partitions)) for name, t in sorted(image.topics.items())]
    results, records = [], []
    elected: dict[tuple[str, int], tuple[int, str | None]] = {}
    for name, parts in topics:
        answers: list[PartitionResult] = []
        results.append((name, answers))
        for i in parts:
            key = (name, i)
            if key not in elected:
                code, msg, rec = elect_leader(image, name, i, election_type, acceptable)
                elected[key] = (code, msg)
                if rec is not None:
                    records.append(rec)
            code, msg = elected[key]
            if everything and code == E.ELECTION_NOT_NEEDED:
                continue
            answers.append((i, code, msg))
    return E.NONE, results, records


def imbalanced_partitions(image: MetadataImage) -> list[tuple[str, int]]:
    """Partitions whose leader is not their first replica (Kafka's ``imbalancedPartitions``)."""
    return [(name, p.partition) for name, t in sorted(image.topics.items())
            for p in sorted(t.partitions.values(), key=lambda p: p.partition)
            if p.replicas and p.leader != p.replicas[0]]


def balance_records(image: MetadataImage, acceptable: Callable[[int], bool],
                    limit: int = MAX_ELECTIONS_PER_IMBALANCE) -> list:
    """One auto-rebalance round: a preferred election on every imbalanced partition."""
    records = []
    dirs = directories.rules(image)
    for name, i in imbalanced_partitions(image):
        if len(records) >= limit:
            break
        t = image.topics[name]
        rec = build_change(t.partitions[i], t.topic_id, acceptable, election=PREFERRED, dirs=dirs,
                           min_isr=elr.topic_min_isr(image, t))
        if rec is not None:
            records.append(rec)
    return records
