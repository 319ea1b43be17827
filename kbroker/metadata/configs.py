"""Topic-level configuration definitions and the DescribeConfigs view of configs.

``TOPIC_CONFIGS`` lists every topic config a Kafka 4 broker knows: name, type, Kafka's
default (as a string) and the broker keys it inherits from (``config.TOPIC_SYNONYMS``).
A topic's effective value is its override (a ``ConfigRecord``), else the broker's
setting of a synonym, else the default — Kafka's layering. ``describe_topic`` and
``describe_broker`` produce DescribeConfigs entries with Kafka's sources
(``DYNAMIC_TOPIC_CONFIG`` 1, ``DYNAMIC_BROKER_CONFIG`` 2, ``DYNAMIC_DEFAULT_BROKER_CONFIG`` 3,
``STATIC_BROKER_CONFIG`` 4, ``DEFAULT_CONFIG`` 5) and synonym chains.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from kbroker.config import broker as bc
from kbroker.config import kafka_keys as kc

LONG_MAX = str((1 << 63) - 1)

# DescribeConfigs config sources
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

# DescribeConfigs (v3+) config types
TYPE_IDS = {"boolean": 1, "string": 2, "int": 3, "short": 4, "long": 5, "double": 6,
            "list": 7, "class": 8, "password": 9}


@dataclass(frozen=True)
class TopicConfigDef:
    """The definition of one topic configuration key."""
    name: str
    type: str
    default: str | None
    check: Callable[[object], str | None] | None = None


def _in(*allowed):
    return lambda v: None if v in allowed else "must be one of " + ", ".join(allowed)


def _ge(n):
    return lambda v: None if v >= n else f"must be at least {n}"


def _between(lo, hi):
    return lambda v: None if lo <= v <= hi else f"must be between {lo} and {hi}"


def _policy(v):
    parts = [p.strip() for p in v.split(",") if p.strip()] if isinstance(v, str) else v
    return None if parts and all(p in ("delete", "compact") for p in parts) else \
        "must be a list of delete, compact"


def _throttled_replicas(name):
    """Kafka's ThrottledReplicaListValidator: ``*`` alone, or ``partition:broker`` pairs
    (empty entries only at the end)."""
    def check(v):
        items = [p.strip() for p in v.split(",")] if v.strip() else []
        if items == ["*"]:
            return None
        seen_empty = False
        for item in items:
            if not item:
                seen_empty = True
            elif seen_empty or not _is_replica(item):
                return (f"{name} must be the literal '*' or a list of replicas in the following "
                        "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
        return None
    return check


def _is_replica(item: str) -> bool:
    part, sep, broker = item.partition(":")
    return bool(sep) and all(x.isascii() and x.isdigit() and int(x) < 1 << 31 for x in (part, broker))


_T = TopicConfigDef
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in [
    _T("cleanup.policy", "list", "delete", _policy),
    _T("compression.gzip.level", "int", "-1", _between(-1, 9)),
    _T("compression.lz4.level", "int", "9", _between(1, 17)),
    _T("compression.type", "string", "producer",
       _in("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _T("compression.zstd.level", "int", "3", _between(-131072, 22)),
    _T("delete.retention.ms", "long", "86400000", _ge(0)),
    # Kafka 4.4 (share groups' dead-letter queue, KIP-1191): accepted and described, not acted on
    _T("errors.deadletterqueue.group.enable", "boolean", "false"),
    _T("file.delete.delay.ms", "long", "60000", _ge(0)),
    _T("flush.messages", "long", LONG_MAX, _ge(1)),
    _T("flush.ms", "long", LONG_MAX, _ge(0)),
    _T("follower.replication.throttled.replicas", "list", "",
       _throttled_replicas("follower.replication.throttled.replicas")),
    _T("index.interval.bytes", "int", "4096", _ge(0)),
    _T("leader.replication.throttled.replicas", "list", "",
       _throttled_replicas("leader.replication.throttled.replicas")),
    _T("local.retention.bytes", "long", "-2", _ge(-2)),
    _T("local.retention.ms", "long", "-2", _ge(-2)),
    _T("max.compaction.lag.ms", "long", LONG_MAX, _ge(1)),
    _T("max.decompressed.message.bytes", "int", "2147483639"),     # Kafka 4.4
    _T("max.message.bytes", "int", "1048588", _ge(0)),
    _T("message.timestamp.after.max.ms", "long", "3600000", _ge(0)),
    _T("message.timestamp.before.max.ms", "long", LONG_MAX, _ge(0)),
    _T("message.timestamp.type", "string", "CreateTime", _in("CreateTime", "LogAppendTime")),
    _T("min.cleanable.dirty.ratio", "double", "0.5", _between(0, 1)),
    _T("min.compaction.lag.ms", "long", "0", _ge(0)),
    _T("min.insync.replicas", "int", "1", _ge(1)),
    _T("preallocate", "boolean", "false"),
    _T("remote.copy.lag.bytes", "long", "-1"),                     # Kafka 4.4 (tiered storage)
    _T("remote.copy.lag.ms", "long", "0"),                         # Kafka 4.4 (tiered storage)
    _T("remote.log.copy.disable", "boolean", "false"),
    _T("remote.log.delete.on.disable", "boolean", "false"),
    _T("remote.storage.enable", "boolean", "false"),
    _T("retention.bytes", "long", "-1"),
    _T("retention.ms", "long", "604800000", _ge(-1)),
    _T("segment.bytes", "int", "1073741824", _ge(1048576)),     # Kafka 4 (KIP-1030): 1 MiB
    _T("segment.index.bytes", "int", "10485760", _ge(4)),
    _T("segment.jitter.ms", "long", "0", _ge(0)),
    _T("segment.ms", "long", "604800000", _ge(1)),
    _T("unclean.leader.election.enable", "boolean", "false"),
]}


def validate_topic_config(name: str, value: str | None) -> str | None:
    """An error message if ``name=value`` is not a valid topic config, else None."""
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        return f"Unknown topic config name: {name}"
    if value is None:
        return f"Null value not supported for topic configs: {name}"
    text = value.strip()
    try:
        if d.type == "boolean":
            if text.lower() not in ("true", "false"):
                raise ValueError("expected true or false")
            typed: object = text.lower() == "true"
        elif d.type in ("int", "long"):
            typed = int(text)
            limit = 1 << (31 if d.type == "int" else 63)
            if not -limit <= typed < limit:
                raise ValueError(f"out of range for {d.type}")
        elif d.type == "double":
            typed = float(text)
        else:
            typed = text
    except ValueError as e:
        return f"Invalid value {value} for configuration {name}: {e}"
    if d.check is not None:
        msg = d.check(typed)
        if msg:
            return f"Invalid value {value} for configuration {name}: {msg}"
    return None


def _dynamic(broker, dynamic):
    if dynamic is not None:
        return dynamic
    src = getattr(broker, "dynamic_source", None)
    return (src() if src is not None else None) or {}


def broker_default(broker: "bc.BrokerConfig", name: str) -> tuple[str | None, int, str | None]:
    """(value, source, broker key) a topic without an override gets for ``name``."""
    found = broker.synonym_source(name)
    if found is not None:
        bkey, _ = found
        return broker.log_config_defaults().get(name), STATIC_BROKER_CONFIG, bkey
    return TOPIC_CONFIGS[name].default, DEFAULT_CONFIG, None


def effective_topic_configs(broker: "bc.BrokerConfig", overrides: Mapping[str, str]) -> dict[str, str]:
    """Every topic config's effective value: the override, else what the broker's
    (static or dynamic) settings give it, else Kafka's topic default."""
    inherited = broker.log_config_defaults()
    out = {}
    for name, d in TOPIC_CONFIGS.items():
        if name in overrides:
            out[name] = overrides[name]
        elif name in inherited:
            out[name] = inherited[name]
        else:
            out[name] = d.default
    return out


@dataclass
class ConfigEntry:
    """One configuration value as DescribeConfigs reports it."""
    name: str
    value: str | None
    source: int
    read_only: bool = False
    sensitive: bool = False
    type: str = "string"
    synonyms: list[tuple[str, str | None, int]] = None   # (name, value, source)

    @property
    def is_default(self) -> bool:
        return self.source == DEFAULT_CONFIG


BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {c[0]: c[7] for c in kc.BROKER_CONFIGS}


def _layers(broker: "bc.BrokerConfig", dynamic: Mapping[str, Mapping[str, str]], node_id: int):
    """Kafka's four places a broker config can come from, most specific first."""
    static = {k: bc.format_value(bc.DEFINITIONS[k], broker.values.get(k)) if k in bc.DEFINITIONS
              else broker.values.get(k) for k in broker.explicit}
    defaults = {k: bc.format_value(d, d.default) for k, d in bc.DEFINITIONS.items()
                if d.default is not None}
    return [(dynamic.get(str(node_id), {}), DYNAMIC_BROKER_CONFIG),
            (dynamic.get("", {}), DYNAMIC_DEFAULT_BROKER_CONFIG),
            ({k: v for k, v in static.items() if v is not None}, STATIC_BROKER_CONFIG),
            (defaults, DEFAULT_CONFIG)]


def _synonyms(name: str, layers, sensitive: bool) -> list[tuple[str, str | None, int]]:
    """Kafka's synonym list of broker config ``name``: every layer (most specific first),
    within a layer the synonyms in Kafka's order (``log.retention.ms``, ``.minutes``,
    ``.hours``), then everything before the first entry of ``name`` itself dropped."""
    names = BROKER_SYNONYMS.get(name, (name,))
    out = [(n, None if sensitive else layer[n], src) for layer, src in layers for n in names
           if n in layer]
    while out and out[0][0] != name:
        out.pop(0)
    return out


def describe_topic(broker: "bc.BrokerConfig", overrides: Mapping[str, str],
                   dynamic: Mapping[str, Mapping[str, str]] | None = None) -> list[ConfigEntry]:
    """DescribeConfigs entries of a topic as Kafka lists them: the value is the override,
    else what the broker settings give, else the default; the synonyms are the topic
    override, then the synonyms of the one broker config Kafka names for the topic config
    (``TOPIC_CONFIG_SYNONYMS``); the source is the first synonym's."""
    layers = _layers(broker, _dynamic(broker, dynamic), broker.node_id)
    effective = effective_topic_configs(broker, overrides)
    out = []
    for name, d in TOPIC_CONFIGS.items():
        bkey = kc.TOPIC_CONFIG_SYNONYMS.get(name)
        synonyms = _synonyms(bkey, layers, False) if bkey else []
        if name in overrides:
            synonyms.insert(0, (name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        out.append(ConfigEntry(name, effective[name], source, False, False, d.type, synonyms))
    return out


def describe_broker(broker: "bc.BrokerConfig", dynamic: Mapping[str, Mapping[str, str]],
                    node_id: int, resource_name: str | None = None) -> list[ConfigEntry]:
    """DescribeConfigs entries of a broker as Kafka lists them. For this broker's id: every
    non-internal Kafka broker config plus any key set in the file or dynamically; for ""
    (the cluster default): only the cluster-default dynamic configs, without per-broker
    synonyms. Read-only unless Kafka can update the key dynamically; password values (and
    keys of unknown type) are sensitive: null."""
    if resource_name is None:
        resource_name = str(node_id)
    per_broker_level = resource_name != ""
    layers = _layers(broker, dynamic, node_id)
    if per_broker_level:
        names = {k for k, d in bc.DEFINITIONS.items() if not d.internal and k in kc_names}
        names |= {k for k in broker.explicit if broker.values.get(k) is not None}
        names |= set(dynamic.get(str(node_id), {})) | set(dynamic.get("", {}))
    else:
        names = set(dynamic.get("", {}))
        layers = [l for l in layers if l[1] != DYNAMIC_BROKER_CONFIG]
    out = []
    for name in sorted(names):
        d = bc.DEFINITIONS.get(name)
        if d is None and name in DYNAMIC_ONLY_BROKER_CONFIGS:
            synonyms = _synonyms(name, layers, False)
            out.append(ConfigEntry(name, synonyms[0][1] if synonyms else None,
                                   synonyms[0][2] if synonyms else DEFAULT_CONFIG, False, False,
                                   DYNAMIC_ONLY_BROKER_CONFIGS[name], synonyms))
            continue
        sensitive = d is None or d.sensitive
        synonyms = _synonyms(name, layers, sensitive)
        source = synonyms[0][2] if synonyms else DEFAULT_CONFIG
        own = [v for n, v, src in synonyms if n == name]
        if sensitive:
            value = None
        elif d is not None and source in (STATIC_BROKER_CONFIG, DEFAULT_CONFIG) or not own:
            value = bc.format_value(d, broker.values.get(name)) if d is not None else None
        else:
            value = own[0]
            try:
                value = bc.format_value(d, bc.convert(d, value)) if d is not None else value
            except bc.ConfigError:
                pass
        type_ = (d.kafka_type or d.type) if d is not None else "unknown"
        out.append(ConfigEntry(name, value, source, d.read_only if d is not None else True,
                               sensitive, type_, synonyms))
    return out


kc_names = frozenset(c[0] for c in kc.BROKER_CONFIGS)

# Keys Kafka defines only for dynamic broker configs (its DynamicConfig.Broker, not KafkaConfig):
# the replication throttles kafka-reassign-partitions sets and clears. Kafka types them (LONG),
# so DescribeConfigs shows their values instead of treating them as sensitive unknown keys.
DYNAMIC_ONLY_BROKER_CONFIGS = {
    "leader.replication.throttled.rate": "long",
    "follower.replication.throttled.rate": "long",
    "replica.alter.log.dirs.io.max.bytes.per.second": "long",
}


# --------------------------------------------------------------------------- dynamic broker configs

def broker_alter_error(configs: Mapping[str, str | None], per_broker: bool) -> str | None:
    """Kafka's checks of dynamic broker config updates (``DynamicBrokerConfig.validate``):
    keys that cannot be updated dynamically, security keys without a listener prefix,
    values of the wrong type, per-broker keys at the cluster-default level. The message
    when one fails (Kafka answers INVALID_REQUEST), else None. Keys Kafka does not define
    are accepted and stored, as Kafka does (custom configs for plugins)."""
    def names(pred):
        return "Set(" + ", ".join(sorted(k for k in configs if pred(k))) + ")"
    ro = [k for k in configs if k in bc.DEFINITIONS and bc.DEFINITIONS[k].read_only
          and k in kc_names]
    if ro:
        return f"Cannot update these configs dynamically: {names(lambda k: k in ro)}"
    sec = [k for k in configs if k in kc.LISTENER_ONLY_DYNAMIC]
    if sec:
        return ("These security configs can be dynamically updated only per-listener using "
                f"the listener prefix: {names(lambda k: k in sec)}")
    for k, v in configs.items():
        d = bc.DEFINITIONS.get(k)
        if d is None or v is None:
            continue
        try:
            bc.convert(d, v)
        except bc.ConfigError as e:
            return f"Invalid value {v} for configuration {k}: {str(e).split(': ', 1)[-1]}"
    if not per_broker:
        pb = [k for k in configs if k in bc.DEFINITIONS and bc.DEFINITIONS[k].mode == "per-broker"]
        if pb:
            return ("Cannot update these configs at default cluster level, broker id must be "
                    f"specified: {names(lambda k: k in pb)}")
    return None


def broker_config_type(name: str) -> str | None:
    d = bc.DEFINITIONS.get(name)
    return DYNAMIC_ONLY_BROKER_CONFIGS.get(name) if d is None else (d.kafka_type or d.type)
