"""A streams group's topology (KIP-1071) and what it becomes against the cluster's topics.

The client sends its topology (subtopologies with their source topics, repartition topics and
state changelog topics) with a *topology epoch*; the coordinator keeps the latest one of the
group (``StreamsGroupTopology`` record). A **configured topology** is that topology resolved
against the metadata image (Kafka's ``InternalTopicManager.configureTopics``):

- every source topic must exist, else the group reports ``MISSING_SOURCE_TOPICS`` and no task
  is assigned;
- a repartition source topic without an explicit partition count gets the largest partition
  count of the subtopologies that write into it (their repartition sink topics), resolved to a
  fixed point; a state changelog topic gets the number of tasks of its subtopology;
- copartitioned topics (``CopartitionGroups``) must have equal counts; an unset repartition
  topic of such a group takes the group's count, a mismatch of existing topics is
  ``INCORRECTLY_PARTITIONED_TOPICS``;
- internal topics that do not exist yet are listed for creation (the broker creates them, as
  Kafka's ``KafkaApis`` does with the heartbeat's ``MISSING_INTERNAL_TOPICS`` answer);
- the number of tasks of a subtopology is the largest partition count of its source and
  repartition source topics; task ``(subtopology id, partition)``.

Pure data and functions: the topics come in as a ``TopicsView``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..consumer.topics import TopicsView

# Kafka's StreamsGroupHeartbeatResponse.Status codes
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4
ASSIGNMENT_DELAYED = 5
MISSING_CLIENT_TAGS = 6                     # Kafka 4.4 (v1)


@dataclass(frozen=True)
class TopicInfo:
    """An internal topic a subtopology needs (changelog or repartition topic)."""
    name: str
    partitions: int = 0                     # 0: derived
    replication_factor: int = 0             # 0: the broker's default
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Subtopology:
    """One subtopology of a Kafka Streams topology: the topics it reads and writes."""
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class Topology:
    """A streams group's topology, as its members sent it, with its epoch."""
    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()

    def topic_names(self) -> set[str]:
        """Every topic the topology reads or writes (for the metadata hash)."""
        out: set[str] = set()
        for s in self.subtopologies:
            out.update(s.source_topics)
            out.update(s.repartition_sink_topics)
            out.update(t.name for t in s.repartition_source_topics)
            out.update(t.name for t in s.state_changelog_topics)
        return out

    def subtopology(self, sid: str) -> Subtopology | None:
        for s in self.subtopologies:
            if s.subtopology_id == sid:
                return s
        return None


def _info(t) -> TopicInfo:
    return TopicInfo(t.name, t.partitions, t.replication_factor,
                     tuple((c.key, c.value) for c in (t.topic_configs or ())))


def topology_of(msg) -> Topology:
    """From a heartbeat's ``Topology`` or a ``StreamsGroupTopologyValue`` (same fields)."""
    subs = []
    for s in msg.subtopologies or ():
        subs.append(Subtopology(
            s.subtopology_id, tuple(s.source_topics or ()), tuple(s.source_topic_regex or ()),
            tuple(_info(t) for t in s.state_changelog_topics or ()),
            tuple(s.repartition_sink_topics or ()),
            tuple(_info(t) for t in s.repartition_source_topics or ()),
            tuple((tuple(c.source_topics or ()), tuple(c.source_topic_regex or ()),
                   tuple(c.repartition_source_topics or ()))
                  for c in s.copartition_groups or ())))
    return Topology(msg.epoch, tuple(subs))


def validate(topology: Topology) -> str | None:
    """Why the topology is invalid (``STREAMS_INVALID_TOPOLOGY``), or None."""
    seen: set[str] = set()
    for s in topology.subtopologies:
        if not s.subtopology_id:
            return "Subtopology IDs must not be empty."
        if s.subtopology_id in seen:
            return f"Subtopology ID {s.subtopology_id} appears more than once."
        seen.add(s.subtopology_id)
        if s.source_topic_regex:
            return "Source topic regular expressions are not supported."
        if not s.source_topics and not s.repartition_source_topics:
            return f"Subtopology {s.subtopology_id} has no source topics."
        n_src, n_rep = len(s.source_topics), len(s.repartition_source_topics)
        for src, _rx, rep in s.copartition_groups:
            if any(i < 0 or i >= n_src for i in src) or any(i < 0 or i >= n_rep for i in rep):
                return f"Copartition group of subtopology {s.subtopology_id} refers to an unknown topic."
        for t in s.state_changelog_topics + s.repartition_source_topics:
            if t.partitions < 0:
                return f"Internal topic {t.name} has a negative partition count."
    return None


@dataclass
class ConfiguredTopology:
    """``tasks``: subtopology id → number of tasks (empty unless ``ready``). ``status``:
    [(code, detail)]. ``to_create``: internal topics missing, with their partition count.
    ``partitions``: the partition count each internal topic should have (when derivable)."""
    tasks: dict[str, int] = field(default_factory=dict)
    partitions: dict[str, int] = field(default_factory=dict)
    status: list[tuple[int, str]] = field(default_factory=list)
    to_create: list[TopicInfo] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.status


def configure(topology: Topology, topics: TopicsView) -> ConfiguredTopology:
    """Resolve ``topology`` against ``topics`` (see the module docstring)."""
    out = ConfiguredTopology()

    def count(name: str) -> int:
        tid = topics.id_of(name)
        return -1 if tid is None else topics.num_partitions(tid)

    missing = sorted({t for s in topology.subtopologies for t in s.source_topics if count(t) < 0})
    if missing:
        out.status.append((MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing)} are missing."))
        return out

    # repartition topics: explicit, existing, or from the subtopologies writing into them
    repart: dict[str, int] = {}
    for s in topology.subtopologies:
        for t in s.repartition_source_topics:
            if t.partitions > 0:
                repart[t.name] = t.partitions
    changed = True
    while changed:
        changed = False
        for s in topology.subtopologies:
            srcs = [count(t) for t in s.source_topics] + [
                repart.get(t.name, 0) for t in s.repartition_source_topics]
            n = max(srcs, default=0)
            if n <= 0:
                continue
            for sink in s.repartition_sink_topics:
                if repart.get(sink, 0) < n and not any(
                        t.name == sink and t.partitions > 0
                        for x in topology.subtopologies for t in x.repartition_source_topics):
                    repart[sink] = n
                    changed = True
    # copartition groups: unset repartition topics take the group's count
    incorrect: list[str] = []
    for s in topology.subtopologies:
        for src, _rx, rep in s.copartition_groups:
            names = [s.source_topics[i] for i in src]
            counts = {count(n) for n in names}
            reps = [s.repartition_source_topics[i].name for i in rep]
            if len(counts) > 1:
                incorrect.append(f"Following topics do not have the same number of partitions: "
                                 f"[{', '.join(sorted(names))}]")
                continue
            want = next(iter(counts)) if counts else max((repart.get(r, 0) for r in reps), default=0)
            for r in reps:
                if want > 0 and repart.get(r, 0) != want:
                    repart[r] = want
    for s in topology.subtopologies:
        for t in s.repartition_source_topics:
            if repart.get(t.name, 0) <= 0:
                out.status.append((MISSING_SOURCE_TOPICS,
                                   f"Partition count of repartition topic {t.name} cannot be derived."))
                return out
    # tasks and changelogs; internal topics missing or wrongly partitioned
    for s in topology.subtopologies:
        n = max([count(t) for t in s.source_topics]
                + [repart[t.name] for t in s.repartition_source_topics], default=0)
        out.tasks[s.subtopology_id] = n
        wanted = [(t, repart[t.name]) for t in s.repartition_source_topics] + [
            (t, t.partitions if t.partitions > 0 else n) for t in s.state_changelog_topics]
        for t, parts in wanted:
            out.partitions[t.name] = parts
            have = count(t.name)
            if have < 0:
                if all(x.name != t.name for x in out.to_create):
                    out.to_create.append(TopicInfo(t.name, parts, t.replication_factor, t.configs))
            elif have != parts:
                incorrect.append(f"Internal topic {t.name} has {have} partitions, "
                                 f"but {parts} are required.")
    if out.to_create:
        out.status.append((MISSING_INTERNAL_TOPICS, "Internal topics are missing: "
                           + ", ".join(sorted(t.name for t in out.to_create))))
    if incorrect:
        out.status.append((INCORRECTLY_PARTITIONED_TOPICS, "; ".join(incorrect)))
    if out.status:
        out.tasks = {}
    return out


def with_partitions(topology: Topology, partitions: dict[str, int]) -> Topology:
    """``topology`` with the derived partition counts of its internal topics filled in (what
    StreamsGroupDescribe shows, as Kafka describes its configured topology)."""
    def fill(infos):
        return tuple(replace(t, partitions=partitions.get(t.name, t.partitions)) for t in infos)
    return replace(topology, subtopologies=tuple(
        replace(s, state_changelog_topics=fill(s.state_changelog_topics),
                repartition_source_topics=fill(s.repartition_source_topics))
        for s in topology.subtopologies))


def task_topics(topology: Topology, sid: str) -> list[str]:
    """The input topics of a subtopology's tasks (partition p of each is task p's input):
    what interactive queries map keys with (``PartitionsByUserEndpoint``)."""
    s = topology.subtopology(sid)
    if s is None:
        return []
    return sorted(set(s.source_topics) | {t.name for t in s.repartition_source_topics})
