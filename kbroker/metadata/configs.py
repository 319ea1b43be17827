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

from kbroker import config as bc

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


_T = TopicConfigDef
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {d.name: d for d in [
    _T("cleanup.policy", "list", "delete", _policy),
    _T("compression.gzip.level", "int", "-1", _between(-1, 9)),
    _T("compression.lz4.level", "int", "9", _between(1, 17)),
    _T("compression.type", "string", "producer",
       _in("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _T("compression.zstd.level", "int", "3", _between(-131072, 22)),
    _T("delete.retention.ms", "long", "86400000", _ge(0)),
    _T("file.delete.delay.ms", "long", "60000", _ge(0)),
    _T("flush.messages", "long", LONG_MAX, _ge(1)),
    _T("flush.ms", "long", LONG_MAX, _ge(0)),
    _T("follower.replication.throttled.replicas", "list", ""),
    _T("index.interval.bytes", "int", "4096", _ge(0)),
    _T("leader.replication.throttled.replicas", "list", ""),
    _T("local.retention.bytes", "long", "-2", _ge(-2)),
    _T("local.retention.ms", "long", "-2", _ge(-2)),
    _T("max.compaction.lag.ms", "long", LONG_MAX, _ge(1)),
    _T("max.message.bytes", "int", "1048588", _ge(0)),
    _T("message.timestamp.after.max.ms", "long", "3600000", _ge(0)),
    _T("message.timestamp.before.max.ms", "long", LONG_MAX, _ge(0)),
    _T("message.timestamp.type", "string", "CreateTime", _in("CreateTime", "LogAppendTime")),
    _T("min.cleanable.dirty.ratio", "double", "0.5", _between(0, 1)),
    _T("min.compaction.lag.ms", "long", "0", _ge(0)),
    _T("min.insync.replicas", "int", "1", _ge(1)),
    _T("preallocate", "boolean", "false"),
    _T("remote.log.copy.disable", "boolean", "false"),
    _T("remote.log.delete.on.disable", "boolean", "false"),
    _T("remote.storage.enable", "boolean", "false"),
    _T("retention.bytes", "long", "-1"),
    _T("retention.ms", "long", "604800000", _ge(-1)),
    _T("segment.bytes", "int", "1073741824", _ge(14)),
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


def broker_default(broker: "bc.BrokerConfig", name: str) -> tuple[str | None, int, str | None]:
    """(value, source, broker key) a topic without an override gets for ``name``."""
    found = broker.synonym_source(name)
    if found is not None:
        bkey, _ = found
        return broker.log_config_defaults().get(name), STATIC_BROKER_CONFIG, bkey
    return TOPIC_CONFIGS[name].default, DEFAULT_CONFIG, None


def effective_topic_configs(broker: "bc.BrokerConfig", overrides: Mapping[str, str]) -> dict[str, str]:
    """Every topic config's effective value (overrides over broker settings over defaults)."""
    inherited = broker.log_config_defaults()
    out = {}
    for name, d in TOPIC_CONFIGS.items():
        if name in overrides:
            out[name] = overrides[name]
        elif name in inherited and broker.synonym_source(name) is not None:
            out[name] = inherited[name]
        else:
            out[name] = d.default
    return out


@dataclass
class ConfigEntry:
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


def describe_topic(broker: "bc.BrokerConfig", overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """DescribeConfigs entries of a topic, with synonyms (the topic override first, then
    the broker keys in Kafka's order, then the default)."""
    out = []
    for name, d in TOPIC_CONFIGS.items():
        synonyms: list[tuple[str, str | None, int]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        for bkey in bc.TOPIC_SYNONYMS.get(name, ()):
            if bkey in broker.explicit and broker.values.get(bkey) is not None:
                synonyms.append((bkey, bc.format_value(bc.DEFINITIONS[bkey], broker.values[bkey]),
                                 STATIC_BROKER_CONFIG))
        for bkey in bc.TOPIC_SYNONYMS.get(name, ()):
            bdef = bc.DEFINITIONS.get(bkey)
            if bdef is not None and bdef.default is not None and bkey not in broker.explicit:
                synonyms.append((bkey, bc.format_value(bdef, bdef.default), DEFAULT_CONFIG))
                break
        if name in overrides:
            value, source = overrides[name], DYNAMIC_TOPIC_CONFIG
        else:
            value, source, _ = broker_default(broker, name)
        out.append(ConfigEntry(name, value, source, False, False, d.type, synonyms))
    return out


def describe_broker(broker: "bc.BrokerConfig", dynamic: Mapping[str, Mapping[str, str]],
                    node_id: int) -> list[ConfigEntry]:
    """DescribeConfigs entries of a broker: every defined key, static or default."""
    out = []
    per_broker = dynamic.get(str(node_id), {})
    cluster_default = dynamic.get("", {})
    for name, d in sorted(bc.DEFINITIONS.items()):
        synonyms = []
        if name in per_broker:
            synonyms.append((name, per_broker[name], DYNAMIC_BROKER_CONFIG))
        if name in cluster_default:
            synonyms.append((name, cluster_default[name], DYNAMIC_DEFAULT_BROKER_CONFIG))
        static = bc.format_value(d, broker.values.get(name))
        if name in broker.explicit:
            synonyms.append((name, static, STATIC_BROKER_CONFIG))
        elif d.default is not None:
            synonyms.append((name, bc.format_value(d, d.default), DEFAULT_CONFIG))
        value, source = (synonyms[0][1], synonyms[0][2]) if synonyms else (None, DEFAULT_CONFIG)
        out.append(ConfigEntry(name, None if d.sensitive else value, source, d.read_only,
                               d.sensitive, d.type, synonyms))
    return out
