"""kbroker's metrics: Kafka's important broker metrics read from the broker's own state.

``await render(server)`` returns the Prometheus text for ``/metrics``
(``kbroker/http/routes/metrics.py``). Names follow what Kafka's JMX MBeans become under the
Prometheus JMX exporter's usual rules (``kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,
topic=t`` → ``kafka_server_brokertopicmetrics_bytesin_total{topic="t"}``), so dashboards
and alerts written for Kafka find them; consumer lag uses kafka_exporter's names
(``kafka_consumergroup_lag``); the group coordinator's families (Kafka 4.4's
GroupCoordinatorMetrics) are in :mod:`kbroker.metrics.group_coordinator`. Meters are
monotonic counters (``_total``: Kafka's ``...PerSec`` meters without their moving averages
— use ``rate()``); request time is a histogram in seconds.

Rules: read-only (nothing here changes broker state); the hot paths only add integers
(``kbroker/node/stats.py``); gathering runs on the trio thread in slices, yielding to the
scheduler every ``YIELD_EVERY`` series so a broker with many partitions or groups never
stalls its clients for the length of a scrape; collections are copied before iteration.
What a node does not have (a broker-only node has no controller, a follower's groups live
elsewhere) is simply absent or zero, as in Kafka.
"""
from __future__ import annotations

import trio

from kbroker.node.stats import LATENCY_BUCKETS, TopicCounters

from . import group_coordinator
from .exposition import CONTENT_TYPE, Family

__all__ = ["render", "collect", "CONTENT_TYPE", "Family"]

YIELD_EVERY = 500

_TOPIC_METERS = [
    # (attribute, metric stem, help)
    ("bytes_in", "bytesin", "Record bytes appended by producers, per topic (BytesInPerSec)."),
    ("messages_in", "messagesin", "Records appended by producers, per topic (MessagesInPerSec)."),
    ("bytes_out", "bytesout", "Record bytes sent to consumers, per topic (BytesOutPerSec)."),
    ("bytes_rejected", "bytesrejected", "Record bytes of refused produce data, per topic."),
    ("produce_requests", "totalproducerequests", "Partition produce requests, per topic."),
    ("failed_produce_requests", "failedproducerequests", "Failed partition produce requests, per topic."),
    ("fetch_requests", "totalfetchrequests", "Partition fetch requests of consumers, per topic."),
    ("failed_fetch_requests", "failedfetchrequests", "Failed partition fetch requests, per topic."),
]


class _Slicer:
    """Counts series and yields to trio every ``YIELD_EVERY`` of them."""

    def __init__(self) -> None:
        self.n = 0

    async def tick(self, k: int = 1) -> None:
        self.n += k
        if self.n >= YIELD_EVERY:
            self.n = 0
            await trio.lowlevel.checkpoint()


async def collect(server) -> list[Family]:
    """Every family, gathered from ``server`` (``kbroker.server.Server``) and its broker."""
    out: list[Family] = []
    s = _Slicer()
    broker = server.broker
    out += _server_families(server)
    out += _request_families(server)
    if broker is None:
        return out
    image = _image(broker)
    out += await _topic_families(broker, image, s)
    out += await _replica_families(broker, s)
    out += _producer_families(broker)
    out += _controller_families(broker, image)
    out += await _group_families(broker, s)
    out += await _share_families(broker, s)
    out += _quota_families(broker)
    registry = getattr(server, "schema_registry", None)     # kbroker/schema_registry
    if registry is not None:
        out += registry.metric_families()
    gateway = getattr(getattr(server, "rest_proxy", None), "gateway", None)   # kbroker/rest_proxy
    if gateway is not None:
        out += gateway.metric_families()
    return out


async def render(server) -> str:
    families = await collect(server)
    parts = []
    for i, f in enumerate(families):
        parts.append(f.render())
        if i % 20 == 19:
            await trio.lowlevel.checkpoint()
    return "".join(parts)


def _quota_families(broker) -> list[Family]:
    """Quota meters (``kbroker.quota``): the replication throttles as Kafka's
    LeaderReplication/FollowerReplication byte-rate, plus kbroker's counters of throttled
    bytes and held-back partitions; client quota throttles; connection limits."""
    quotas = getattr(broker, "quotas", None)
    if quotas is None:
        return []
    rate = Family("kafka_server_replication_byte_rate", "gauge",
                  "Throttled replication bytes per second over the quota windows, per side "
                  "(Kafka's LeaderReplication / FollowerReplication byte-rate).")
    peak = Family("kbroker_replication_throttle_peak_byte_rate", "gauge",
                  "Highest measured throttled replication rate, per side.")
    limit = Family("kbroker_replication_throttle_limit_bytes", "gauge",
                   "The replication throttle rate in force, per side (0: none).")
    nbytes = Family("kbroker_replication_throttled_bytes_total", "counter",
                    "Bytes of throttled partitions replicated, per side.")
    held = Family("kbroker_replication_throttle_held_back_total", "counter",
                  "Times a throttled partition was held back because its quota was exceeded.")
    for side, q in (("leader", quotas.leader_replication), ("follower", quotas.follower_replication)):
        st = q.statistics()
        rate.add(st["rate"], side=side)
        peak.add(st["peak_rate"], side=side)
        limit.add(st["limit"], side=side)
        nbytes.add(st["bytes"], side=side)
        held.add(st["held_back"], side=side)
    throttled = Family("kbroker_quota_throttled_total", "counter",
                       "Answers throttled by a client quota, per quota type.")
    for name, m in (("produce", quotas.produce), ("fetch", quotas.fetch),
                    ("request", quotas.request), ("controller_mutation", quotas.mutation)):
        throttled.add(m.stats.get("throttled", 0), quota=name)
    conns = Family("kbroker_connection_quota_total", "counter",
                   "New connections by what the connection limits did (accepted, throttled "
                   "by connection_creation_rate, rejected by max.connections.per.ip, waited "
                   "for max.connections).")
    cst = quotas.connections.stats
    for outcome in ("accepted", "throttled", "rejected", "waited"):
        conns.add(cst[outcome], outcome=outcome)
    return [rate, peak, limit, nbytes, held, throttled, conns]


def _image(broker):
    quorum = getattr(broker, "quorum", None)
    return getattr(quorum, "image", None)


# ---------------------------------------------------------------------------- server

def _server_families(server) -> list[Family]:
    up = Family("kbroker_ready", "gauge",
                "1 while the broker serves clients (listeners bound, registered and unfenced).")
    up.add(1 if server.ready else 0)
    state = Family("kafka_server_kafkaserver_brokerstate", "gauge",
                   "Broker state as Kafka numbers it: 1 STARTING, 3 RUNNING, "
                   "6 PENDING_CONTROLLED_SHUTDOWN, 7 SHUTTING_DOWN.")
    if server.ready:
        state.add(3)
    elif server.draining:
        state.add(7)
    elif server.stopping:
        state.add(6)
    else:
        state.add(1)
    conns = Family("kafka_server_socket_server_metrics_connection_count", "gauge",
                   "Open client connections, per listener.")
    for listener, n in sorted(server.connection_counts().items()):
        conns.add(n, listener=listener)
    created = Family("kafka_server_socket_server_metrics_connection_creation_total", "counter",
                     "Client connections accepted, per listener.")
    for listener, n in sorted(dict(server.connections_created).items()):
        created.add(n, listener=listener)
    dormant = Family("kbroker_connections_dormant", "gauge",
                     "Open client connections idle without a task of their own "
                     "(kbroker.connections.dormant.after.ms).")
    dormancy = getattr(server, "dormancy", None)
    dormant.add(len(dormancy) if dormancy is not None else 0)
    writer = getattr(server, "writer", None)
    writing = Family("kbroker_answer_writer_active", "gauge",
                     "1 while plaintext answers are written by the thread beside the event loop "
                     "(kbroker.network.answer.writer).")
    writing.add(1 if writer is not None and writer.active else 0)
    written = Family("kbroker_answer_writer_answers_total", "counter",
                     "Plaintext answers written by the thread beside the event loop.")
    written.add(writer.written if writer is not None else 0)
    return [up, state, conns, created, dormant, writing, written]


def _request_families(server) -> list[Family]:
    reqs = Family("kafka_network_requestmetrics_requests_total", "counter",
                  "Requests handled, per API and version (RequestsPerSec).")
    time = Family("kafka_network_requestmetrics_totaltime_seconds", "histogram",
                  "Time from a request's arrival to its response, per API (TotalTimeMs).")
    size = Family("kafka_network_requestmetrics_requestbytes_total", "counter",
                  "Request bytes received, per API.")
    closed = Family("kbroker_request_closed_connections_total", "counter",
                    "Requests after which the connection was closed (handler failure, acks=0 error).")
    for _key, st in sorted(list(server.request_stats.by_key.items())):
        for version, n in sorted(list(st.by_version.items())):
            reqs.add(n, request=st.name, version=str(version))
        time.add_histogram(LATENCY_BUCKETS, list(st.buckets), st.seconds_sum, request=st.name)
        size.add(st.request_bytes, request=st.name)
        closed.add(st.errors, request=st.name)
    return [reqs, time, size, closed]


# ---------------------------------------------------------------------------- topics

async def _topic_families(broker, image, s: _Slicer) -> list[Family]:
    stats = broker.topic_stats
    if image is not None:
        stats.retain(image.topics)
    fams = [Family(f"kafka_server_brokertopicmetrics_{stem}_total", "counter", help_)
            for _attr, stem, help_ in _TOPIC_METERS]
    for name, counters in sorted(list(stats.topics.items())):
        for fam, (attr, _stem, _help) in zip(fams, _TOPIC_METERS):
            fam.add(getattr(counters, attr), topic=name)
        await s.tick(len(fams))
    repl = Family("kafka_server_brokertopicmetrics_replicationbytesout_total", "counter",
                  "Record bytes sent to follower replicas (ReplicationBytesOutPerSec).")
    repl.add(stats.replication_bytes_out)
    failed = Family("kbroker_failed_produce_requests_total", "counter",
                    "Failed partition produce requests, all topics (also unknown ones).")
    failed.add(stats.failed_produce_requests)
    failed_fetch = Family("kbroker_failed_fetch_requests_total", "counter",
                          "Failed partition fetch requests, all topics (also unknown ones).")
    failed_fetch.add(stats.failed_fetch_requests)
    return fams + [repl, failed, failed_fetch]


# ---------------------------------------------------------------------------- replicas, logs

async def _replica_families(broker, s: _Slicer) -> list[Family]:
    replicas = broker.replicas
    if replicas is None or not hasattr(replicas, "all_replicas"):
        return []
    parts = replicas.all_replicas()
    count = Family("kafka_server_replicamanager_partitioncount", "gauge",
                   "Partitions this broker holds a replica of.")
    leaders = Family("kafka_server_replicamanager_leadercount", "gauge",
                     "Partitions this broker leads.")
    urp = Family("kafka_server_replicamanager_underreplicatedpartitions", "gauge",
                 "Partitions led here whose ISR is smaller than their replica set.")
    under_min = Family("kafka_server_replicamanager_underminisrpartitioncount", "gauge",
                       "Partitions led here whose ISR is below min.insync.replicas.")
    at_min = Family("kafka_server_replicamanager_atminisrpartitioncount", "gauge",
                    "Partitions led here whose ISR is exactly min.insync.replicas (AtMinIsrPartitionCount).")
    shrinks = Family("kafka_server_replicamanager_isrshrinks_total", "counter",
                     "ISR shrinks asked by this broker as leader (IsrShrinksPerSec).")
    expands = Family("kafka_server_replicamanager_isrexpands_total", "counter",
                     "ISR expansions asked by this broker as leader (IsrExpandsPerSec).")
    size = Family("kafka_log_log_size", "gauge", "Bytes of a partition's log on disk (Log Size).")
    leo = Family("kafka_log_log_logendoffset", "gauge", "A partition's log end offset.")
    lso = Family("kafka_log_log_logstartoffset", "gauge", "A partition's log start offset.")
    segs = Family("kafka_log_log_numlogsegments", "gauge", "Segments of a partition's log.")
    parked = Family("kbroker_partition_parked_requests", "gauge",
                    "Requests parked on a partition until its log or high watermark moves "
                    "(long-poll fetches, acks=all produces, DeleteRecords: Kafka's purgatories); "
                    "partitions with none are left out.")
    led = under = below_min = at_min_n = 0
    for p in parts:
        waiting = len(p.waiters) + len(p.log_end_waiters)
        if waiting:
            parked.add(waiting, topic=p.topic, partition=str(p.index))
        if p.is_leader:
            led += 1
            if len(p.isr) < len(p.replicas):
                under += 1
            if len(p.isr) < p.config.min_insync_replicas:
                below_min += 1
            elif len(p.isr) == p.config.min_insync_replicas:
                at_min_n += 1
        log_ = p.log
        if log_ is None:
            continue
        labels = {"topic": p.topic, "partition": str(p.index)}
        size.add(log_.size, **labels)
        leo.add(log_.log_end_offset, **labels)
        lso.add(log_.log_start_offset, **labels)
        segs.add(len(log_.segments), **labels)
        await s.tick(4)
    count.add(len(parts))
    leaders.add(led)
    urp.add(under)
    under_min.add(below_min)
    at_min.add(at_min_n)
    shrinks.add(replicas.stats.get("isr_shrinks", 0))
    expands.add(replicas.stats.get("isr_expands", 0))
    return [count, leaders, urp, under_min, at_min, shrinks, expands, size, leo, lso, segs,
            parked]


# ---------------------------------------------------------------------------- producer ids

def _producer_families(broker) -> list[Family]:
    """KIP-847's ProducerIdCount: producer ids in the producer state of this node's logs
    (what ``producer.id.expiration.ms`` bounds; kbroker.log.producer_expiry counts them
    over the logs that have any)."""
    logs = getattr(broker, "logs", None)
    expiry = getattr(logs, "producer_expiry", None)
    if expiry is None:
        return []
    count = Family("kafka_server_replicamanager_produceridcount", "gauge",
                   "Producer ids in the producer state of this broker's partitions (ProducerIdCount).")
    count.add(expiry.producer_count())
    return [count]


# ---------------------------------------------------------------------------- controller

def _controller_families(broker, image) -> list[Family]:
    quorum = broker.quorum
    active = 0
    if quorum is not None and "controller" in broker.config.get("process.roles"):
        try:
            active = 1 if quorum.is_active else 0
        except AttributeError:
            active = 0
    acc = Family("kafka_controller_kafkacontroller_activecontrollercount", "gauge",
                 "1 on the node that is the active controller, else 0.")
    acc.add(active)
    out = [acc]
    if image is None:
        return out
    offline = Family("kafka_controller_kafkacontroller_offlinepartitionscount", "gauge",
                     "Partitions without a live leader (reported by the active controller).")
    topics = Family("kafka_controller_kafkacontroller_globaltopiccount", "gauge",
                    "Topics in the cluster (reported by the active controller).")
    partitions = Family("kafka_controller_kafkacontroller_globalpartitioncount", "gauge",
                        "Partitions in the cluster (reported by the active controller).")
    fenced = Family("kafka_controller_kafkacontroller_fencedbrokercount", "gauge",
                    "Registered brokers that are fenced (reported by the active controller).")
    live = Family("kafka_controller_kafkacontroller_activebrokercount", "gauge",
                  "Registered brokers that are not fenced (reported by the active controller).")
    if active:
        brokers = dict(image.brokers)
        n_off = n_parts = 0
        for t in list(image.topics.values()):
            for p in t.partitions.values():
                n_parts += 1
                b = brokers.get(p.leader)
                if p.leader < 0 or b is None or b.fenced:
                    n_off += 1
        offline.add(n_off)
        topics.add(len(image.topics))
        partitions.add(n_parts)
        fenced.add(sum(1 for b in brokers.values() if b.fenced))
        live.add(sum(1 for b in brokers.values() if not b.fenced))
    else:
        for f in (offline, topics, partitions, fenced, live):
            f.add(0)
    leader = Family("kafka_server_raftmetrics_current_leader", "gauge",
                    "Node id of the metadata quorum's leader (-1 when unknown).")
    try:
        leader.add(quorum.leader_id if quorum is not None else -1)
    except AttributeError:
        leader.add(-1)
    return out + [offline, topics, partitions, fenced, live, leader]


# ---------------------------------------------------------------------------- groups

async def _group_families(broker, s: _Slicer) -> list[Family]:
    gc = getattr(broker, "group_coordinator", None)
    manager = getattr(gc, "manager", None)
    if manager is None:
        return []
    by_state = Family("kafka_coordinator_group_groupmetadatamanager_numgroupsbystate", "gauge",
                      "Groups of every type this broker coordinates, per state (kbroker's; "
                      "Kafka's per-type families are in kbroker.metrics.group_coordinator).")
    members = Family("kafka_consumergroup_members", "gauge", "Members of a group.")
    current = Family("kafka_consumergroup_current_offset", "gauge",
                     "A group's committed offset, per partition.")
    lag = Family("kafka_consumergroup_lag", "gauge",
                 "High watermark minus the group's committed offset, per partition "
                 "(partitions with a replica on the coordinator).")
    lag_sum = Family("kafka_consumergroup_lag_sum", "gauge", "A group's lag over its partitions.")
    all_groups = list(manager.groups.items())
    states: dict[str, int] = {}
    for gid, g in all_groups:
        state = group_coordinator.group_state(g)
        states[state] = states.get(state, 0) + 1
        members.add(len(g.members), consumergroup=gid)
    for state, n in sorted(states.items()):
        by_state.add(n, state=state)
    replicas = broker.replicas
    get = getattr(replicas, "get_replica", None)
    for gid, offsets in sorted(list(manager.offsets.items())):
        total = 0
        for (topic, partition), om in sorted(list(offsets.items())):
            labels = {"consumergroup": gid, "topic": topic, "partition": str(partition)}
            current.add(om.offset, **labels)
            part = get(topic, partition) if get is not None else None
            if part is not None and part.log is not None:
                behind = max(0, part.high_watermark - om.offset)
                total += behind
                lag.add(behind, **labels)
            await s.tick(2)
        lag_sum.add(total, consumergroup=gid)
    coordinator = await group_coordinator.families(manager, s)
    return coordinator + [by_state, members, current, lag, lag_sum]


async def _share_families(broker, s: _Slicer) -> list[Family]:
    """Share-partitions led here (Kafka's ``kafka.server:type=SharePartitionMetrics``,
    KIP-1103): records in flight per group and partition, and the group's dead letters
    (KIP-1191) this node wrote or dropped."""
    mgr = getattr(broker, "share_partitions", None)
    if mgr is None:
        return []
    in_flight = Family("kafka_server_sharepartitionmetrics_inflightmessagecount", "gauge",
                       "Records in flight in a share-partition led here (InFlightMessageCount).")
    written = Family("kbroker_share_dead_letters_total", "counter",
                     "Records of a share group written to its dead-letter topic by this node.")
    dropped = Family("kbroker_share_dead_letters_dropped_total", "counter",
                     "Dead letters of a share group this node could not write (no such topic, "
                     "DLQ not enabled on it, a failed write).")
    for (group, tid, p), sp in sorted(list(mgr.partitions.items()), key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2])):
        name = mgr._topic_name(tid)
        if name is None:
            continue
        in_flight.add(len(sp.in_flight), group=group, topic=name, partition=str(p))
        await s.tick()
    for group, counts in sorted(mgr.dlq.by_group.items()):
        written.add(counts["dead_letters"], group=group)
        dropped.add(counts["dead_letters_dropped"], group=group)
    return [in_flight, written, dropped]


def totals(server) -> TopicCounters:
    """All-topics meters (tests, the console)."""
    return server.broker.topic_stats.totals()
