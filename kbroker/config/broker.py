"""Broker configuration: Kafka's ``server.properties`` keys, types and defaults.

``BrokerConfig.load(path, overrides)`` reads a Java-properties file (or nothing) plus
``key=value`` overrides, checks every key against the definitions below and converts the
values to their types. An unknown key or a bad value raises ``ConfigError`` naming the
key; the CLI turns that into exit code 2. Keys Kafka knows but kbroker does not act on
(thread pools, cleaner buffers, quorum settings of a single-node setup...) are accepted
and ignored, so a stock ``config/server.properties`` from a Kafka distribution works.

Choices that differ from nothing in Kafka but are worth stating:

- ``group.initial.rebalance.delay.ms`` keeps Kafka's 3000 ms default, so behaviour matches a
  stock broker (the compatibility suite compares the two); set it to 0 for snappier local runs.
- ``offsets.topic.replication.factor``, ``transaction.state.log.replication.factor`` and
  ``transaction.state.log.min.isr`` default to 1 (Kafka: 3, 3, 2) because kbroker is a single
  node; a stock file that sets them to 1 (as Kafka's sample does) behaves the same.
- ``cluster.id``: when not configured it is generated once and persisted in
  ``meta.properties`` in every log dir, as ``kafka-storage format`` does.
- ``listeners`` may name several PLAINTEXT listeners; listeners named in
  ``controller.listener.names`` are the controller plane (``controller_listeners``), bound
  by ``kbroker.controller_server`` when this node is a voter (also the only one).

``log_config_defaults()`` returns the broker-level ``log.*`` settings translated to
topic-level keys (``log.retention.hours`` → ``retention.ms``...), for
``LogConfig.from_properties``.
"""
from __future__ import annotations

import base64
import functools
import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from kbroker.common.fileio import write_atomically
from kbroker.config import streams_assignors as _streams_assignors

LONG_MAX = (1 << 63) - 1
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
INT_MAX = (1 << 31) - 1


class ConfigError(Exception):
    """A setting is unknown or has an invalid value. ``key`` names it."""

    def __init__(self, key: str | None, message: str):
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key


# --------------------------------------------------------------------------- definitions

@dataclass(frozen=True)
class ConfigDef:
    """The definition of one configuration key: type, default, check and flags."""
    name: str
    type: str                     # boolean, int, long, double, string, list, password
    default: Any                  # typed default, or None (Kafka's null)
    check: Callable[[Any], str | None] | None = None   # returns an error message or None
    read_only: bool = True        # not dynamically updatable (Kafka's update mode "read-only")
    sensitive: bool = False
    used: bool = True             # kbroker acts on it (else: accepted, typed, validated, shown)
    mode: str = "read-only"       # Kafka's dynamic update mode: read-only, per-broker, cluster-wide
    kafka_type: str | None = None  # Kafka's ConfigDef type (DescribeConfigs), when it differs
    internal: bool = False        # Kafka's internal keys: accepted, not listed by DescribeConfigs


def _at_least(n):
    return lambda v: None if v is None or v >= n else f"must be at least {n}"


def _one_of(*allowed):
    return lambda v: None if v in allowed else f"must be one of {', '.join(allowed)}"


def _policies(v):
    parts = v if isinstance(v, list) else [p.strip() for p in str(v).split(",")]
    if not parts or any(p not in ("delete", "compact") for p in parts):
        return "must be a list of delete, compact"
    return None


def _rebalance_protocols(v):
    """Kafka 4.4: values among its four protocols, and ``classic`` cannot be left out."""
    items = [str(p).strip() for p in (v if isinstance(v, list) else str(v).split(","))]
    allowed = ("consumer", "classic", "share", "streams")
    if any(p not in allowed for p in items):
        return f"must be a list of {', '.join(allowed)}"
    if "classic" not in items:
        return "the classic protocol cannot be disabled (Kafka refuses it too)"
    return None


def _d(name, type_, default, check=None):
    """One of kbroker's own keys, as ``(name, type, default, check)``: its ``ConfigDef`` is made
    once, with Kafka's metadata for the key, by :func:`_merge_kafka_definitions`."""
    return name, type_, default, check


_DEFS: list[tuple] = [
    # identity and roles
    _d("node.id", "int", 1, _at_least(0)),
    _d("broker.id", "int", -1),
    _d("process.roles", "list", ["broker", "controller"],
       lambda v: None if v and set(v) <= {"broker", "controller"} else "must be broker and/or controller"),
    _d("cluster.id", "string", None),
    # listeners
    _d("listeners", "list", ["PLAINTEXT://127.0.0.1:9092"]),
    _d("advertised.listeners", "list", None),
    _d("listener.security.protocol.map", "list",
       ["PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT", "SASL_SSL:SASL_SSL",
        "CONTROLLER:PLAINTEXT"]),
    _d("inter.broker.listener.name", "string", None),
    _d("controller.listener.names", "list", ["CONTROLLER"]),
    _d("security.inter.broker.protocol", "string", "PLAINTEXT"),
    _d("controller.quorum.voters", "list", []),
    _d("controller.quorum.bootstrap.servers", "list", []),
    _d("controller.quorum.election.timeout.ms", "int", 1000, _at_least(1)),
    _d("controller.quorum.fetch.timeout.ms", "int", 2000, _at_least(1)),
    _d("controller.quorum.election.backoff.max.ms", "int", 1000, _at_least(1)),
    _d("controller.quorum.request.timeout.ms", "int", 2000, _at_least(1)),
    _d("controller.quorum.retry.backoff.ms", "int", 20, _at_least(0)),
    _d("controller.quorum.append.linger.ms", "int", 25, _at_least(0)),
    _d("broker.session.timeout.ms", "int", 9000, _at_least(1)),
    _d("broker.heartbeat.interval.ms", "int", 2000, _at_least(1)),
    _d("broker.rack", "string", None),
    # storage
    _d("log.dirs", "list", None),
    # not Kafka's /tmp/kafka-logs: a kbroker started without a data dir must not share a real
    # Kafka's data on the same machine (README "Local development")
    _d("log.dir", "string", "/tmp/kbroker-logs"),
    _d("metadata.log.dir", "string", None),
    _d("num.partitions", "int", 1, _at_least(1)),
    _d("default.replication.factor", "int", 1, _at_least(1)),
    _d("auto.create.topics.enable", "boolean", True),
    _d("delete.topic.enable", "boolean", True),
    _d("log.segment.bytes", "int", 1 << 30, _at_least(1 << 20)),   # Kafka 4: at least 1 MiB
    _d("log.roll.ms", "long", None),
    _d("log.roll.hours", "int", 168, _at_least(1)),
    _d("log.roll.jitter.ms", "long", None),
    _d("log.roll.jitter.hours", "int", 0, _at_least(0)),
    _d("log.retention.ms", "long", None),
    _d("log.retention.minutes", "int", None),
    _d("log.retention.hours", "int", 168),
    _d("log.retention.bytes", "long", -1),
    _d("log.retention.check.interval.ms", "long", 300_000, _at_least(1)),
    _d("log.cleanup.policy", "list", ["delete"], _policies),
    _d("log.cleaner.enable", "boolean", True),
    _d("log.cleaner.threads", "int", 1),
    _d("log.cleaner.backoff.ms", "long", 15_000),
    _d("log.cleaner.delete.retention.ms", "long", 86_400_000, _at_least(0)),
    _d("log.cleaner.min.cleanable.ratio", "double", 0.5,
       lambda v: None if 0 <= v <= 1 else "must be between 0 and 1"),
    _d("log.cleaner.min.compaction.lag.ms", "long", 0, _at_least(0)),
    _d("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, _at_least(1)),
    _d("log.cleaner.dedupe.buffer.size", "long", 134_217_728),
    _d("log.cleaner.io.buffer.size", "int", 524_288),
    _d("log.index.size.max.bytes", "int", 10 * 1024 * 1024, _at_least(4)),
    _d("log.index.interval.bytes", "int", 4096, _at_least(0)),
    _d("log.flush.interval.messages", "long", LONG_MAX, _at_least(1)),
    _d("log.flush.interval.ms", "long", None),
    _d("log.flush.scheduler.interval.ms", "long", LONG_MAX),
    _d("log.flush.offset.checkpoint.interval.ms", "int", 60_000),
    # client quotas (kbroker.quota): the sample windows of the quota rates
    _d("quota.window.num", "int", 11, _at_least(1)),
    _d("quota.window.size.seconds", "int", 1, _at_least(1)),
    _d("controller.quota.window.num", "int", 11, _at_least(1)),
    _d("replication.quota.window.num", "int", 11, _at_least(1)),
    _d("replication.quota.window.size.seconds", "int", 1, _at_least(1)),
    _d("controller.quota.window.size.seconds", "int", 1, _at_least(1)),
    _d("log.flush.start.offset.checkpoint.interval.ms", "int", 60_000),
    _d("log.message.timestamp.type", "string", "CreateTime", _one_of("CreateTime", "LogAppendTime")),
    _d("log.message.timestamp.before.max.ms", "long", LONG_MAX),
    _d("log.message.timestamp.after.max.ms", "long", 3_600_000),
    _d("log.segment.delete.delay.ms", "long", 60_000, _at_least(0)),
    _d("log.preallocate", "boolean", False),
    _d("num.recovery.threads.per.data.dir", "int", 2),
    _d("message.max.bytes", "int", 1_048_588, _at_least(0)),
    _d("compression.type", "string", "producer",
       _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _d("min.insync.replicas", "int", 1, _at_least(1)),
    _d("unclean.leader.election.enable", "boolean", False),
    # network
    _d("socket.request.max.bytes", "int", 104_857_600, _at_least(1)),
    _d("socket.send.buffer.bytes", "int", 102_400),
    _d("socket.receive.buffer.bytes", "int", 102_400),
    _d("socket.listen.backlog.size", "int", 50, _at_least(1)),
    _d("num.network.threads", "int", 3),
    _d("num.io.threads", "int", 8),
    _d("queued.max.requests", "int", 500),
    _d("connections.max.idle.ms", "long", 600_000),
    _d("max.connections", "int", INT_MAX, _at_least(0)),
    # connection limits on accept (kbroker.quota.connections, Kafka's ConnectionQuotas)
    _d("max.connections.per.ip", "int", INT_MAX, _at_least(0)),
    _d("max.connections.per.ip.overrides", "string", ""),
    _d("request.timeout.ms", "int", 30_000),
    # incremental fetch sessions (KIP-227, kbroker/replica/fetch_session.py)
    _d("max.incremental.fetch.session.cache.slots", "int", 1000, _at_least(0)),
    # group coordinator
    _d("offsets.topic.replication.factor", "int", 1, _at_least(1)),
    _d("offsets.topic.num.partitions", "int", 50, _at_least(1)),
    _d("offsets.topic.segment.bytes", "int", 104_857_600, _at_least(1)),
    _d("offsets.retention.minutes", "int", 10_080, _at_least(1)),
    _d("offsets.retention.check.interval.ms", "long", 600_000),
    _d("offsets.commit.timeout.ms", "int", 5000),
    _d("offset.metadata.max.bytes", "int", 4096),
    _d("group.initial.rebalance.delay.ms", "int", 3000, _at_least(0)),
    _d("group.min.session.timeout.ms", "int", 6000),
    _d("group.max.session.timeout.ms", "int", 1_800_000),
    _d("group.max.size", "int", INT_MAX, _at_least(1)),
    _d("group.coordinator.rebalance.protocols", "list", ["classic", "consumer", "streams"],
       lambda v: _rebalance_protocols(v)),
    # the consumer group protocol (KIP-848), read by kbroker.group.config
    _d("group.consumer.session.timeout.ms", "int", 45_000, _at_least(1)),
    _d("group.consumer.min.session.timeout.ms", "int", 45_000, _at_least(1)),
    _d("group.consumer.max.session.timeout.ms", "int", 60_000, _at_least(1)),
    _d("group.consumer.heartbeat.interval.ms", "int", 5000, _at_least(1)),
    _d("group.consumer.min.heartbeat.interval.ms", "int", 5000, _at_least(1)),
    _d("group.consumer.max.heartbeat.interval.ms", "int", 15_000, _at_least(1)),
    _d("group.consumer.max.size", "int", INT_MAX, _at_least(1)),
    _d("group.consumer.assignors", "list", ["uniform", "range"]),
    _d("group.consumer.assignment.interval.ms", "int", 1000, _at_least(0)),
    # transactions
    _d("transaction.state.log.replication.factor", "int", 1, _at_least(1)),
    _d("transaction.state.log.num.partitions", "int", 50, _at_least(1)),
    _d("transaction.state.log.min.isr", "int", 1, _at_least(1)),
    _d("transaction.state.log.segment.bytes", "int", 104_857_600, _at_least(1)),
    _d("transaction.max.timeout.ms", "int", 900_000, _at_least(1)),
    _d("transactional.id.expiration.ms", "int", 604_800_000, _at_least(1)),
    _d("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10_000, _at_least(1)),
    _d("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3_600_000, _at_least(1)),
    _d("transaction.partition.verification.enable", "boolean", True),
    _d("producer.id.expiration.ms", "int", 86_400_000, _at_least(1)),
    _d("producer.id.expiration.check.interval.ms", "int", 600_000, _at_least(1)),
    _d("share.coordinator.state.topic.replication.factor", "int", 3),
    _d("share.coordinator.state.topic.min.isr", "int", 2),
    _d("share.coordinator.state.topic.num.partitions", "int", 50, _at_least(1)),
    _d("share.coordinator.state.topic.segment.bytes", "int", 104_857_600, _at_least(1)),
    # misc accepted for compatibility
    _d("metadata.max.idle.interval.ms", "int", 500),
    _d("log.initial.task.delay.ms", "long", 30_000, _at_least(0)),
    _d("metadata.log.max.record.bytes.between.snapshots", "long", 20_971_520),
    _d("auto.leader.rebalance.enable", "boolean", True),
    _d("replica.lag.time.max.ms", "long", 30_000),
    # the high watermark checkpoint's period (kbroker.log.manager, Kafka's replica manager's)
    _d("replica.high.watermark.checkpoint.interval.ms", "long", 5_000),
    _d("replica.fetch.max.bytes", "int", 1_048_576, _at_least(0)),
    _d("replica.fetch.response.max.bytes", "int", 10_485_760, _at_least(0)),
    _d("replica.fetch.wait.max.ms", "int", 500, _at_least(0)),
    _d("replica.fetch.min.bytes", "int", 1, _at_least(1)),
    _d("replica.fetch.backoff.ms", "int", 1000, _at_least(0)),
    _d("num.replica.fetchers", "int", 1),
    _d("background.threads", "int", 10),
    _d("authorizer.class.name", "string", ""),
    # StandardAuthorizer's own keys (not in Kafka's broker ConfigDef: the authorizer reads them)
    _d("super.users", "string", ""),
    _d("allow.everyone.if.no.acl.found", "boolean", False),
    _d("delegation.token.secret.key", "string", None),
    _d("delegation.token.max.lifetime.ms", "long", 604_800_000, _at_least(1)),
    _d("delegation.token.expiry.time.ms", "long", 86_400_000, _at_least(1)),
    _d("delegation.token.expiry.check.interval.ms", "long", 3_600_000, _at_least(1)),
    _d("sasl.enabled.mechanisms", "list", ["GSSAPI"]),
    # KIP-1357 (Kafka 4.4): the streams task assignors, the first the default
    _d("group.streams.assignors", "list", ["sticky"], _streams_assignors.check),
    # kbroker: hand out KIP-1071 warm-up tasks (Kafka 4.4.0 has the hooks, gives none)
    _d("kbroker.streams.warmup.tasks.enable", "boolean", False),
    _d("group.streams.rack.aware.assignment.tags", "list", [],
       lambda v: f"Configuration 'group.streams.rack.aware.assignment.tags' values must not be "
                 "duplicated." if len(set(v)) != len(v) else None),
    _d("group.share.enable", "boolean", False),
    # kbroker's own (not Kafka's): the HTTP listener of /metrics, /health and /ready
    _d("kbroker.http.listen", "string", None, lambda v: _http_listen(v)),
    # the web console on that listener (kbroker/console): always on loopback, elsewhere opt-in
    _d("kbroker.console.enable", "boolean", False),
    # with an authorizer the console asks for a login; a session ends after this idle time
    _d("kbroker.console.session.timeout.ms", "long", 3_600_000, _at_least(1000)),
    # the REST gateway (kbroker/rest_proxy, Confluent REST Proxy API v2/v3): its own listener,
    # off unless set; an idle consumer instance is dropped after the timeout
    _d("kbroker.rest.proxy.listen", "string", None, lambda v: _http_listen(v)),
    _d("kbroker.rest.proxy.consumer.instance.timeout.ms", "long", 300_000, _at_least(100)),
    _d("kbroker.rest.proxy.max.request.bytes", "int", 10_485_760, _at_least(1024)),
    # HTTPS on that listener with the broker's ssl.* keys (keystore, client auth, protocols)
    _d("kbroker.rest.proxy.ssl.enabled", "boolean", False),
    # the schema registry (kbroker/schema_registry): its listener, off by default, and the
    # replication factor of _schemas (capped at the registered brokers, as Confluent's
    # kafkastore.topic.replication.factor)
    _d("kbroker.schema.registry.listen", "string", None, lambda v: _http_listen(v)),
    _d("kbroker.schema.registry.topic.replication.factor", "int", 3, _at_least(1)),
    # HTTPS on the registry's listener, with the broker's ssl.* keys (overridable as
    # listener.name.schema_registry.ssl.*)
    _d("kbroker.schema.registry.ssl.enabled", "boolean", False),
    # segment and index files open at once (kbroker/log/open_files.py); 0: a quarter of
    # the process's open-file limit
    _d("kbroker.log.max.open.files", "int", 0, _at_least(0)),
    # a plaintext client connection silent this long gives its task up until its next
    # request (kbroker/server/dormant.py); 0: never
    _d("kbroker.connections.dormant.after.ms", "long", 250, _at_least(0)),
    # who writes plaintext answers: a thread beside the loop while the loop waits for a CPU
    # (kbroker/server/writer.py)
    _d("kbroker.network.answer.writer", "string", "auto", _one_of("auto", "always", "never")),
    _d("group.share.session.timeout.ms", "int", 45_000, _at_least(1)),
    _d("group.share.heartbeat.interval.ms", "int", 5_000, _at_least(1)),
    _d("group.share.max.size", "int", 200, _at_least(1)),
    _d("group.share.record.lock.duration.ms", "int", 30_000, _at_least(1000)),
    _d("group.share.delivery.count.limit", "int", 5, _at_least(2)),
    _d("group.share.partition.max.record.locks", "int", 2_000, _at_least(100)),
    _d("group.share.assignment.interval.ms", "int", 1_000, _at_least(0)),
    _d("group.share.max.share.sessions", "int", 2_000, _at_least(1)),
]


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; an empty host means every interface)."""
    host, colon, port = value.strip().rpartition(":")
    if not colon or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def _http_listen(value) -> str | None:
    if value is None or not str(value).strip():
        return None
    try:
        parse_listen(str(value))
    except ValueError as e:
        return str(e)
    return None

# Keys defined above that kbroker accepts but does not act on (thread pools, cleaner
# buffers, the controller's append linger...; README "Configuration" says why each is not
# needed): start-up logs them once as "accepted but not used".
_NOT_ACTED_ON = {
    "controller.quorum.append.linger.ms",
    "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.size",
    "num.recovery.threads.per.data.dir",
    "num.network.threads",
    "num.io.threads", "queued.max.requests",
    "background.threads", "group.share.enable",
}

# authorizer.class.name: the one authorizer kbroker implements (anything else refuses to
# start: an operator who asked for ACLs must never get an allow-all broker)
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_TYPES = {"short": "int", "class": "string", "password": "string"}


@functools.cache
def _kafka_check(validator: str, type_: str):
    """A check from the text of a Kafka validator (``[1,...]``, ``[0,...,1]``, ``[a, b]``,
    ``non-empty string``...); None for validators kbroker does not model. The checks are
    pure functions of the text and type, so keys sharing a validator share the check (a
    few dozen distinct texts for ~400 keys, parsed at every start's import)."""
    import re
    text = validator.strip()
    if not text:
        return None
    if text == "non-empty string":
        return lambda v: None if v is None or str(v).strip() else f"must be a {text}"
    if text in ("non-empty list", "non-null string"):
        return None    # Kafka's own defaults are empty lists: it rejects empty elements only
    m = re.fullmatch(r"\[(-?[0-9.]+),\.\.\.(?:,(-?[0-9.]+))?\]( or (-?[0-9]+))?", text)
    if m:
        num = float if type_ == "double" else int
        lo, hi = num(m.group(1)), m.group(2) and num(m.group(2))
        extra = m.group(4) and int(m.group(4))

        def in_range(v):
            if v is None or v == extra or (v >= lo and (hi is None or v <= hi)):
                return None
            return f"must be at least {lo}" if hi is None else f"must be between {lo} and {hi}"
        return in_range
    m = re.fullmatch(r"(\(case insensitive\) )?\[(.*)\]", text)
    if m and "..." not in text:
        fold = bool(m.group(1))
        allowed = [a.strip() for a in m.group(2).split(",")]
        norm = {a.upper() if fold else a for a in allowed}

        def one_of(v):
            items = v if isinstance(v, list) else [v]
            bad = [i for i in items if i is not None and (i.upper() if fold else i) not in norm]
            return f"must be one of {', '.join(allowed)}" if bad else None
        return one_of
    return None


def _merge_kafka_definitions(defs: list[tuple]) -> dict[str, ConfigDef]:
    """kbroker's definitions above, then every other key of Kafka's broker/controller
    ConfigDef (``kbroker/config/kafka_keys.py``, generated from Kafka's jars): accepted, typed,
    validated, listed by DescribeConfigs, not acted on. Kafka's dynamic update mode and
    sensitivity apply to both."""
    from kbroker.config.kafka_keys import BROKER_CONFIGS
    own = {d[0]: d for d in defs}
    out: dict = dict.fromkeys(own)          # kbroker's keys first, in their order
    # each key's ConfigDef made once, its arguments by position: this runs for ~400 keys at
    # import, each start imports it, and a frozen dataclass's __init__ is ~13,000
    # instructions (issue 32, start-up: making ~730 of them was ~12 M)
    for name, type_, default, _imp, internal, mode, validator, _syn in BROKER_CONFIGS:
        read_only, sensitive = mode == "read-only", type_ == "password"
        mine = own.get(name)
        if mine is not None:
            _, own_type, own_default, own_check = mine
            out[name] = ConfigDef(name, own_type, own_default,
                                  own_check or _kafka_check(validator, type_), read_only,
                                  sensitive, name not in _NOT_ACTED_ON, mode, type_, internal)
            continue
        check = _kafka_check(validator, type_)
        typ = _TYPES.get(type_, type_)
        if default is not None:
            try:
                default = _typed(name, typ, type_, check, default)
            except ConfigError:
                pass                        # kept as Kafka's text
        out[name] = ConfigDef(name, typ, default, check, read_only, sensitive,
                              name in _SECURITY_USED, mode, type_, internal)
    for name, (_, own_type, own_default, own_check) in own.items():   # kbroker-only keys
        if out[name] is None:
            out[name] = ConfigDef(name, own_type, own_default, own_check,
                                  used=name not in _NOT_ACTED_ON)
    return out


def _security_used() -> frozenset:
    from kbroker.security.listeners import USED_KEYS
    return USED_KEYS


_SECURITY_USED = _security_used()


def is_listener_prefixed(key: str) -> bool:
    """``listener.name.<listener>.<config>``: Kafka's per-listener overrides (the security
    keys are read by ``kbroker.security.listeners``)."""
    parts = key.split(".")
    return len(parts) >= 4 and parts[0] == "listener" and parts[1] == "name"

# broker key -> topic key (Kafka's topic config synonyms). Order within one topic key is
# Kafka's synonym order: most specific first.
TOPIC_SYNONYMS: dict[str, list[str]] = {
    "segment.bytes": ["log.segment.bytes"],
    "segment.ms": ["log.roll.ms", "log.roll.hours"],
    "segment.jitter.ms": ["log.roll.jitter.ms", "log.roll.jitter.hours"],
    "segment.index.bytes": ["log.index.size.max.bytes"],
    "index.interval.bytes": ["log.index.interval.bytes"],
    "retention.ms": ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
    "retention.bytes": ["log.retention.bytes"],
    "cleanup.policy": ["log.cleanup.policy"],
    "delete.retention.ms": ["log.cleaner.delete.retention.ms"],
    "min.cleanable.dirty.ratio": ["log.cleaner.min.cleanable.ratio"],
    "min.compaction.lag.ms": ["log.cleaner.min.compaction.lag.ms"],
    "max.compaction.lag.ms": ["log.cleaner.max.compaction.lag.ms"],
    "flush.messages": ["log.flush.interval.messages"],
    "flush.ms": ["log.flush.interval.ms"],
    "message.timestamp.type": ["log.message.timestamp.type"],
    "message.timestamp.before.max.ms": ["log.message.timestamp.before.max.ms"],
    "message.timestamp.after.max.ms": ["log.message.timestamp.after.max.ms"],
    "max.message.bytes": ["message.max.bytes"],
    "file.delete.delay.ms": ["log.segment.delete.delay.ms"],
    "compression.type": ["compression.type"],
    "min.insync.replicas": ["min.insync.replicas"],
    "preallocate": ["log.preallocate"],
    "unclean.leader.election.enable": ["unclean.leader.election.enable"],
}
_UNIT_MS = {"log.roll.hours": 3_600_000, "log.roll.jitter.hours": 3_600_000,
            "log.retention.hours": 3_600_000, "log.retention.minutes": 60_000}


# --------------------------------------------------------------------------- parsing

def parse_properties(text: str) -> dict[str, str]:
    """Java-properties subset: ``#``/``!`` comments, ``key=value`` or ``key: value`` or
    ``key value``, backslash line continuations, ``\\`` escapes."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while line.endswith("\\") and not line.endswith("\\\\") and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        key_end = len(line)
        for j, ch in enumerate(line):
            if ch in "=: \t" and (j == 0 or line[j - 1] != "\\"):
                key_end = j
                break
        key = line[:key_end].replace("\\", "").strip()
        rest = line[key_end:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:]
        out[key] = rest.strip().replace("\\\\", "\0").replace("\\", "").replace("\0", "\\")
    return out


def convert(d: ConfigDef, raw: Any) -> Any:
    """Typed value of ``raw`` (a string or already-typed value); ConfigError if invalid."""
    return _typed(d.name, d.type, d.kafka_type, d.check, raw)


def _typed(name: str, type_: str, kafka_type: str | None, check, raw: Any) -> Any:
    """:func:`convert` by the definition's parts (the import types Kafka's defaults before
    their definition exists)."""
    if raw is None:
        return None
    text = raw.strip() if isinstance(raw, str) else raw
    try:
        if type_ == "boolean":
            if isinstance(text, bool):
                value = text
            elif str(text).lower() in ("true", "false"):
                value = str(text).lower() == "true"
            else:
                raise ValueError("expected true or false")
        elif type_ in ("int", "long"):
            value = int(text)
            lo, hi = (-(1 << 31), INT_MAX) if type_ == "int" else (-(1 << 63), LONG_MAX)
            if kafka_type == "short":
                lo, hi = -(1 << 15), (1 << 15) - 1
            if not lo <= value <= hi:
                raise ValueError(f"out of range for {type_}")
        elif type_ == "double":
            value = float(text)
        elif type_ == "list":
            value = text if isinstance(text, list) else [p.strip() for p in str(text).split(",") if p.strip()]
        else:
            value = str(text)
    except ValueError as e:
        raise ConfigError(name, f"invalid value {raw!r} ({e})") from None
    if check is not None:
        msg = check(value)
        if msg:
            raise ConfigError(name, f"invalid value {raw!r}: {msg}")
    return value


def format_value(d: ConfigDef, value: Any) -> str | None:
    """Kafka's string form of a typed value (DescribeConfigs)."""
    if value is None:
        return None
    if d.type == "boolean":
        return "true" if value else "false"
    if d.type == "list":
        return ",".join(value)
    if d.type == "double":
        return java_double(float(value))
    return str(value)


def java_double(x: float) -> str:
    """Java's ``Double.toString`` (what Kafka shows): ``0.5``, ``10.0``, ``1.0E-5``,
    ``1.7976931348623157E308``."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(x)                     # plain notation in this range, as Java
    # the shortest digits that round-trip (``repr``) as digits × 10**exp, read from the text
    # (``decimal`` would do the same and cost a start ~2.5 M instructions to import: a node
    # formats the default of ``log.cleaner.io.max.bytes.per.second``, 1.7976931348623157E308)
    mantissa, _, power = repr(abs(x)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    d = (whole + fraction).lstrip("0")
    exp = int(power or 0) - len(fraction)
    stripped = d.rstrip("0") or "0"
    exp += len(d) - len(stripped)
    e = exp + len(stripped) - 1
    return f"{'-' if x < 0 else ''}{stripped[0]}.{stripped[1:] or '0'}E{e}"


DEFINITIONS: dict[str, ConfigDef] = _merge_kafka_definitions(_DEFS)


def unknown_key_message(key: str) -> str:
    import difflib
    from kbroker.config.kafka_keys import KAFKA_VERSION
    close = difflib.get_close_matches(key, list(DEFINITIONS), n=1, cutoff=0.8)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (f"unknown configuration key: not a broker or controller config of "
            f"Apache Kafka {KAFKA_VERSION}{hint}")


@dataclass(frozen=True)
class Listener:
    """One listener address from ``listeners``: name, host, port and protocol."""
    name: str           # e.g. PLAINTEXT
    host: str           # "" means all interfaces
    port: int
    security_protocol: str = "PLAINTEXT"

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse_listeners(key: str, entries: Iterable[str]) -> list[Listener]:
    out = []
    for entry in entries:
        name, sep, rest = entry.partition("://")
        if not sep or not name:
            raise ConfigError(key, f"{entry!r} is not NAME://host:port")
        host, colon, port = rest.rpartition(":")
        if not colon:
            raise ConfigError(key, f"{entry!r} has no port")
        host = host.strip("[]")
        try:
            port_n = int(port)
        except ValueError:
            raise ConfigError(key, f"{entry!r}: bad port {port!r}") from None
        if not 0 <= port_n <= 65535:
            raise ConfigError(key, f"{entry!r}: port out of range")
        out.append(Listener(name.upper(), host, port_n))
    names = [l.name for l in out]
    if len(set(names)) != len(names):
        raise ConfigError(key, "each listener needs a distinct name")
    return out


# --------------------------------------------------------------------------- BrokerConfig

@dataclass
class BrokerConfig:
    """Typed broker settings. ``values`` maps every defined key to its typed value;
    ``explicit`` is the set of keys given in the file or as overrides (their
    DescribeConfigs source is STATIC_BROKER_CONFIG). Attribute access by the Kafka name
    with underscores works too: ``config.num_partitions``."""

    values: dict[str, Any]
    explicit: set[str] = field(default_factory=set)
    listeners: list[Listener] = field(default_factory=list)            # bound
    controller_listeners: list[Listener] = field(default_factory=list)  # controller.listener.names
    advertised_listeners: list[Listener] = field(default_factory=list)  # in Metadata
    source_file: str | None = None
    # Dynamic broker configs (KIP-226) as the metadata image holds them: broker id ("" for
    # the cluster default) -> {key: value}. Set by the broker to read its current image.
    dynamic_source: Callable[[], Mapping[str, Mapping[str, str]]] | None = None

    # -- construction
    @classmethod
    def load(cls, path: str | os.PathLike | None = None,
             overrides: Mapping[str, Any] | None = None) -> "BrokerConfig":
        raw: dict[str, Any] = {}
        if path is not None:
            try:
                raw.update(parse_properties(Path(path).read_text()))
            except OSError as e:
                raise ConfigError(None, f"cannot read config file {path}: {e.strerror}") from None
        raw.update(overrides or {})
        return cls.from_dict(raw, source_file=str(path) if path else None)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], source_file: str | None = None) -> "BrokerConfig":
        values = {name: d.default for name, d in DEFINITIONS.items()}
        explicit = set()
        for key, value in raw.items():
            d = DEFINITIONS.get(key)
            if d is None and is_listener_prefixed(key):
                d = ConfigDef(key, "string", None, used=key.rsplit(".", 3)[-1] in ("config",)
                              or any(key.endswith("." + k) for k in _SECURITY_USED))
            if d is None:
                raise ConfigError(key, unknown_key_message(key))
            values[key] = convert(d, value)
            explicit.add(key)
        cfg = cls(values, explicit, source_file=source_file)
        cfg._validate()
        return cfg

    def _validate(self) -> None:
        v = self.values
        # node.id and broker.id are synonyms: one given alone sets the other, which then
        # counts as set in the file too (Kafka's KafkaConfig.populateSynonyms)
        if "broker.id" in self.explicit and "node.id" not in self.explicit:
            v["node.id"] = v["broker.id"]
            self.explicit.add("node.id")
        elif "node.id" in self.explicit and "broker.id" not in self.explicit:
            v["broker.id"] = v["node.id"]
            self.explicit.add("broker.id")
        if v["node.id"] < 0:
            raise ConfigError("node.id", "must be at least 0")
        protocol_map: dict[str, str] = {}
        for entry in v["listener.security.protocol.map"]:
            name, sep, proto = entry.partition(":")
            if not sep:
                raise ConfigError("listener.security.protocol.map", f"{entry!r} is not NAME:PROTOCOL")
            protocol_map[name.strip().upper()] = proto.strip().upper()
        self.protocol_map = protocol_map
        controller_names = {n.upper() for n in v["controller.listener.names"]}
        bound = []
        all_listeners = []
        for l in parse_listeners("listeners", v["listeners"]):
            proto = protocol_map.get(l.name, l.name)
            if proto not in SECURITY_PROTOCOLS:
                raise ConfigError("listener.security.protocol.map",
                                  f"No security protocol defined for listener {l.name}")
            l = Listener(l.name, l.host, l.port, proto)
            all_listeners.append(l)
            if l.name in controller_names:
                continue   # the controller plane: served by kbroker.controller_server
            bound.append(l)
        if not bound and "broker" in v["process.roles"]:
            raise ConfigError("listeners", "no listener to serve clients on")
        self.controller_listeners = [l for l in all_listeners if l.name in controller_names]
        if v["controller.quorum.voters"]:
            self._check_node_id_among_voters()
        if "controller" in v["process.roles"] and v["controller.quorum.voters"]:
            voters = self.quorum_voters
            if v["node.id"] in voters and not self.controller_listeners:
                raise ConfigError("listeners", "a voter of controller.quorum.voters needs a "
                                  "listener named in controller.listener.names")
        elif "controller" not in v["process.roles"] and not (
                v["controller.quorum.voters"] or v["controller.quorum.bootstrap.servers"]):
            raise ConfigError("controller.quorum.voters", "a broker-only node needs the voters "
                              "(or controller.quorum.bootstrap.servers)")
        self.quorum_bootstrap_servers   # validated here: host:port,...
        self.listeners = bound
        self._validate_security()
        if v["advertised.listeners"]:
            adv = [l for l in parse_listeners("advertised.listeners", v["advertised.listeners"])
                   if l.name not in controller_names]
            by_name = {l.name for l in bound}
            for l in adv:
                if l.name not in by_name:
                    raise ConfigError("advertised.listeners", f"{l.name} is not in listeners")
                if l.host in ("0.0.0.0", "::"):
                    raise ConfigError("advertised.listeners",
                                      f"{l}: cannot advertise the non-routable address {l.host}")
            names = {l.name for l in adv}
            adv += [self._default_advertised(l) for l in bound if l.name not in names]
        else:
            adv = [self._default_advertised(l) for l in bound]
        self.advertised_listeners = adv
        if not self.log_dirs:
            raise ConfigError("log.dirs", "no log directory configured")
        mdir = v["metadata.log.dir"]
        if mdir and str(Path(mdir).expanduser()) != self.log_dirs[0]:
            raise ConfigError("metadata.log.dir", "must be unset or the first of log.dirs "
                              "(the metadata log lives with the partition logs)")
        if v["log.retention.ms"] is not None and v["log.retention.ms"] < -1:
            raise ConfigError("log.retention.ms", "must be -1 or at least 0")
        if v["cluster.id"] is not None:
            check_cluster_id(v["cluster.id"])
        authorizer = (v["authorizer.class.name"] or "").strip()
        if authorizer and authorizer != STANDARD_AUTHORIZER:
            raise ConfigError("authorizer.class.name", f"{authorizer} is not supported "
                              f"(kbroker implements {STANDARD_AUTHORIZER} only)")

    def _check_node_id_among_voters(self) -> None:
        """A static quorum's voters decide which roles a node id may have, as Kafka's
        KafkaConfig checks: a node with the controller role must be one of
        ``controller.quorum.voters`` (else it would run a controller nobody votes for), and a
        broker-only node must not be (its id would be counted as a voter that never answers).
        Both are usually a wrong ``node.id``; the message says which list to compare."""
        node_id, roles = self.values["node.id"], set(self.values["process.roles"])
        ids = sorted(self.quorum_voters)
        listed = ",".join(str(i) for i in ids)
        if "controller" in roles and node_id not in ids:
            raise ConfigError("node.id", f"{node_id} has the controller role but is not one of "
                              f"the voters of controller.quorum.voters ({listed}): set node.id to "
                              "this node's entry there, or add the node to controller.quorum.voters "
                              "on every node")
        if roles == {"broker"} and node_id in ids:
            raise ConfigError("node.id", f"{node_id} is a voter of controller.quorum.voters "
                              f"({listed}) but process.roles is just broker: give this broker an "
                              "id no voter has, or add controller to process.roles")

    def _validate_security(self) -> None:
        """TLS and SASL settings of every listener (``kbroker.security.listeners``): built
        once here so a bad keystore or JAAS text stops the start naming its key, and a
        security setting kbroker does not implement is never silently ignored."""
        from kbroker.security import listeners as sec
        try:
            sec.check_supported(self.values, self.explicit)
            self.listener_security = {l.name: sec.build(self.values, l.name, l.security_protocol)
                                      for l in self.listeners}
        except sec.SecurityConfigError as e:
            raise ConfigError(e.key, str(e).split(": ", 1)[1]) from None
        # Node-to-node connections (replica fetchers, the quorum and controller channel)
        # speak the protocol of the listener they call, with its keys (Kafka's
        # inter.broker.listener.name / controller.listener.names).
        self.inter_broker_security = self.controller_security = None
        try:
            self.controller_listener_security = {
                l.name: sec.build(self.values, l.name, l.security_protocol)
                for l in self.controller_listeners}
            if not self._may_have_peers():
                return
            from kbroker.security.client import client_security   # a node with peers only
            cname = (self.values["controller.listener.names"] or ["CONTROLLER"])[0].upper()
            self.controller_security = client_security(
                self.values, cname, self.protocol_map.get(cname, "PLAINTEXT"),
                "sasl.mechanism.controller.protocol")
            ib = self.inter_broker_listener()
            if ib is not None:
                self.inter_broker_security = client_security(
                    self.values, ib.name, ib.security_protocol, "sasl.mechanism.inter.broker.protocol")
        except sec.SecurityConfigError as e:
            raise ConfigError(e.key, str(e).split(": ", 1)[1]) from None

    def _may_have_peers(self) -> bool:
        """Whether this node can talk to other nodes (so it needs the client side of the
        controller and inter-broker listeners): other static voters, bootstrap servers that
        are not just itself (a dynamic quorum), a node with one role only, or a voter with a
        controller listener (brokers of their own may register with it). A lone combined node
        without a controller listener (``make run``) has none."""
        v = self.values
        if set(self.quorum_voters) - {self.node_id}:
            return True
        if v["controller.quorum.bootstrap.servers"] and not self.bootstrap_is_self():
            return True
        return set(v["process.roles"]) != {"broker", "controller"} or bool(self.controller_listeners)

    def inter_broker_listener(self) -> "Listener | None":
        """The listener replica fetchers connect to: ``inter.broker.listener.name``, else
        the one named by ``security.inter.broker.protocol`` if there is one, else the
        first client listener (kbroker's default of old)."""
        name = self.values["inter.broker.listener.name"]
        by_name = {l.name: l for l in self.listeners}
        if name:
            if name.upper() not in by_name:
                raise ConfigError("inter.broker.listener.name", f"{name} is not a listener")
            return by_name[name.upper()]
        proto = self.values["security.inter.broker.protocol"]
        if "security.inter.broker.protocol" in self.explicit:
            match = [l for l in self.listeners if l.security_protocol == proto]
            if not match:
                raise ConfigError("security.inter.broker.protocol", f"no {proto} listener")
            return match[0]
        return self.listeners[0] if self.listeners else None

    @staticmethod
    def _default_advertised(l: Listener) -> Listener:
        if l.host in ("", "0.0.0.0", "::"):
            # Kafka uses the canonical host name for an empty host; a wildcard bind is
            # advertised the same way rather than as the non-routable wildcard.
            return Listener(l.name, socket.gethostname(), l.port)
        return l

    def dynamic_layers(self) -> tuple[Mapping[str, str], Mapping[str, str]]:
        """(this broker's dynamic configs, the cluster-default dynamic configs)."""
        src = self.dynamic_source() if self.dynamic_source is not None else None
        if not src:
            return {}, {}
        return src.get(str(self.node_id), {}), src.get("", {})

    def effective_values(self) -> dict[str, Any]:
        """``values`` with the dynamic configs applied, Kafka's precedence: this broker's
        dynamic value, then the cluster default, then the static file, then the default.
        A stored value that no longer converts is ignored (logged by nobody: it was
        validated when it was written)."""
        per_broker, cluster = self.dynamic_layers()
        if not per_broker and not cluster:
            return self.values
        key = (id(per_broker), id(cluster))
        cached = self.__dict__.get("_effective_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        out = dict(self.values)
        for layer in (cluster, per_broker):
            for k, raw in layer.items():
                d = DEFINITIONS.get(k)
                if d is None or raw is None:
                    continue
                try:
                    out[k] = convert(d, raw)
                except ConfigError:
                    pass
        self.__dict__["_effective_cache"] = (key, out, per_broker, cluster)
        return out

    def is_set(self, key: str) -> bool:
        """Set statically or dynamically (not just a built-in default)."""
        per_broker, cluster = self.dynamic_layers()
        return key in self.explicit or key in per_broker or key in cluster

    def unused_keys(self) -> list[str]:
        """Keys set in the file or overrides that kbroker accepts but does not act on.

        A per-listener key ``listener.name.<l>.<key>`` and a per-mechanism one
        ``listener.name.<l>.<mech>.<key>`` (Kafka's ``ListenerName.configPrefix`` and
        ``saslMechanismPrefix``) are used when ``<key>`` is, ``<l>`` is a listener of
        ``listener.security.protocol.map`` (or ``listeners``) and ``<mech>`` a mechanism
        kbroker serves (``kbroker.security.listeners.MECHANISMS``)."""
        return sorted(k for k in self.explicit if not self._key_used(k))

    # the SASL mechanisms kbroker serves, as Kafka spells them in a per-mechanism key prefix
    _SASL_PREFIXES = ("plain.", "scram-sha-256.", "scram-sha-512.", "oauthbearer.")

    def _key_used(self, key: str) -> bool:
        if key in DEFINITIONS:
            return DEFINITIONS[key].used
        if not key.startswith("listener.name."):
            return False
        rest = key[len("listener.name."):]
        listener, dot, base = rest.partition(".")
        if not dot or listener.lower() not in self._listener_names():
            return False
        for prefix in self._SASL_PREFIXES:
            if base.lower().startswith(prefix):
                base = base[len(prefix):]
                break
        return base in DEFINITIONS and DEFINITIONS[base].used

    def _listener_names(self) -> set[str]:
        names = set()
        for key in ("listener.security.protocol.map", "listeners", "advertised.listeners"):
            raw = self.values.get(key) or ()
            for entry in (raw.split(",") if isinstance(raw, str) else raw):
                name = str(entry).split(":", 1)[0].strip().lower()
                if name:
                    names.add(name)
        for key in ("controller.listener.names", "inter.broker.listener.name"):
            raw = self.values.get(key) or ()
            for entry in (raw.split(",") if isinstance(raw, str) else raw):
                if str(entry).strip():
                    names.add(str(entry).strip().lower())
        return names

    def log_unused(self, logger=None) -> None:
        """Log once (at start-up) the keys that were accepted but are not used."""
        import logging
        keys = self.unused_keys()
        if keys:
            (logger or logging.getLogger("kbroker.config")).info(
                "configuration keys accepted but not used by kbroker: %s", ", ".join(keys))

    # -- accessors
    def __getattr__(self, name: str):
        values = self.__dict__.get("values")
        if values is not None:
            key = name.replace("_", ".")
            if key in values:
                return values[key]
        raise AttributeError(name)

    def get(self, key: str) -> Any:
        return self.values[key]

    @property
    def node_id(self) -> int:
        return self.values["node.id"]

    @property
    def quorum_bootstrap_servers(self) -> list[tuple[str, int]]:
        """``controller.quorum.bootstrap.servers`` (``host:port,...``, KIP-853) as pairs."""
        out = []
        for entry in self.values["controller.quorum.bootstrap.servers"]:
            host, _, port = entry.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ConfigError("controller.quorum.bootstrap.servers", f"{entry!r} is not host:port")
            out.append((host.strip("[]"), int(port)))
        return out

    def bootstrap_is_self(self) -> bool:
        """``controller.quorum.bootstrap.servers`` names only this node's own controller
        listener (Kafka's stock single-node server.properties): an unformatted node of that
        kind stays kbroker's one-node quorum."""
        own = {l.port for l in self.controller_listeners}
        servers = self.quorum_bootstrap_servers
        return bool(servers) and all(port in own for _, port in servers)

    @property
    def quorum_voters(self) -> dict[int, tuple[str, int]]:
        """``controller.quorum.voters`` (``id@host:port,...``) as ``{id: (host, port)}``;
        empty means a one-node quorum of this node alone."""
        out: dict[int, tuple[str, int]] = {}
        for entry in self.values["controller.quorum.voters"]:
            ident, at, addr = entry.strip().partition("@")
            host, colon, port = addr.rpartition(":")
            if not at or not colon or not ident.strip().isdigit() or not port.isdigit():
                raise ConfigError("controller.quorum.voters", f"{entry!r} is not id@host:port")
            out[int(ident)] = (host.strip("[]"), int(port))
        return out

    @property
    def log_dirs(self) -> list[str]:
        dirs = self.values["log.dirs"] or [self.values["log.dir"]]
        return [str(Path(d).expanduser()) for d in dirs]

    @property
    def data_dir(self) -> Path:
        """The first log dir: home of the metadata log and meta.properties."""
        return Path(self.log_dirs[0])

    def string_values(self) -> dict[str, str | None]:
        """Every key with Kafka's string form of its value (DescribeConfigs on a broker)."""
        return {k: format_value(DEFINITIONS[k], v) for k, v in self.values.items()}

    def log_config_defaults(self) -> dict[str, str]:
        """Broker-level log settings as topic-level keys (``retention.ms``...): the defaults
        every topic inherits unless it overrides them."""
        out: dict[str, str] = {}
        values = self.effective_values()
        for topic_key, synonyms in TOPIC_SYNONYMS.items():
            for bkey in synonyms:
                value = values.get(bkey)
                if value is None:
                    continue
                if bkey in _UNIT_MS:
                    value = value * _UNIT_MS[bkey]
                out[topic_key] = format_value(DEFINITIONS[bkey], value)
                break
        return out

    def synonym_source(self, topic_key: str) -> tuple[str, str] | None:
        """(broker key, value as topic value) of the broker setting a topic key inherits,
        if it was set explicitly; None when the topic default comes from the built-in
        defaults."""
        values = self.effective_values()
        for bkey in TOPIC_SYNONYMS.get(topic_key, ()):
            if self.is_set(bkey) and values.get(bkey) is not None:
                return bkey, format_value(DEFINITIONS[bkey], values[bkey])
        return None


def log_config_defaults(config: BrokerConfig) -> dict[str, str]:
    return config.log_config_defaults()


# --------------------------------------------------------------------------- meta.properties

def new_cluster_id() -> str:
    """Kafka's form: a random UUID, URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def check_cluster_id(cid: str) -> None:
    try:
        raw = base64.urlsafe_b64decode(cid + "=" * (-len(cid) % 4))
    except (ValueError, TypeError):
        raw = b""
    if len(raw) != 16:
        raise ConfigError("cluster.id", f"{cid!r} is not a base64-encoded UUID")


def ensure_meta_properties(config: BrokerConfig) -> str:
    """Read (or write, first time) ``meta.properties`` in every log dir; returns the
    cluster id. A log dir formatted for another cluster or node is a startup error."""
    cluster_id = config.values["cluster.id"]
    found: dict[str, dict[str, str]] = {}
    dirs = list(dict.fromkeys([*config.log_dirs, str(config.data_dir)]))
    for d in dirs:
        p = Path(d) / "meta.properties"
        if p.exists():
            found[d] = parse_properties(p.read_text())
    for d, props in found.items():
        cid = props.get("cluster.id")
        if cid and cluster_id and cid != cluster_id:
            raise ConfigError("cluster.id", f"log dir {d} belongs to cluster {cid}, not {cluster_id}")
        cluster_id = cluster_id or cid
        nid = props.get("node.id")
        if nid is not None and int(nid) != config.node_id:
            raise ConfigError("node.id", f"log dir {d} was formatted for node {nid}, not {config.node_id}")
    if cluster_id is None:
        roles = set(config.values["process.roles"])
        voters = set(config.quorum_voters) if config.values["controller.quorum.voters"] else set()
        if (roles != {"broker", "controller"} or not voters <= {config.node_id}
                or (config.values["controller.quorum.bootstrap.servers"] and not config.bootstrap_is_self())):
            # a node of a multi-node quorum must share its cluster id with the others: a
            # generated one would make every node a cluster of its own (Kafka refuses too)
            raise ConfigError(None, f"log directory {config.data_dir} is not formatted: run "
                              "`kbroker storage random-uuid` once, then `kbroker storage format "
                              "-t <that id> -c <this server.properties>` on every node (or set "
                              "cluster.id); only a single combined node formats itself")
    cluster_id = cluster_id or new_cluster_id()
    for d in dirs:
        if d in found:
            continue
        Path(d).mkdir(parents=True, exist_ok=True)
        dir_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        text = ("#\n#Written by kbroker\n"
                f"cluster.id={cluster_id}\ndirectory.id={dir_id}\nnode.id={config.node_id}\nversion=1\n")
        # the file and its rename both durable (its directory fsynced), as Kafka's
        # PropertiesUtils: a crash never leaves a node that served without its identity
        write_atomically(Path(d) / "meta.properties", text.encode())
    config.values["cluster.id"] = cluster_id
    return cluster_id
