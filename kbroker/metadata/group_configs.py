"""GROUP config resources (``ConfigResource.Type.GROUP`` = 32, KIP-848/KIP-932/KIP-1071):
per-group overrides of the group coordinator's settings, stored in the metadata log as
``ConfigRecord``s with resource type 32 and read by the coordinator from the image.

The keys, types, lower bounds and broker synonyms are Kafka 4.3's ``GroupConfig``; a change
is validated on the *resulting* set of a group's values layered over the broker's
(``GroupConfig.validate``): every key known, every value of its type and ≥ its lower bound,
session timeouts and heartbeat intervals within the broker's ``group.<type>.min/max.*``
bounds and each session timeout greater than its heartbeat interval; share-group lock
duration, delivery count limit and record locks within their broker bounds;
``share.auto.offset.reset`` ``latest`` / ``earliest`` / ``by_duration:<ISO-8601>``;
``share.isolation.level`` ``read_committed`` / ``read_uncommitted``; a dead-letter topic
(``errors.deadletterqueue.topic.name``, Kafka 4.4) not starting with ``__``; a streams
group's task assignor (``streams.assignor.name``, KIP-1357) one the broker's
``group.streams.assignors`` registers. A violation is
``INVALID_CONFIG`` with Kafka's message; an empty group name is ``INVALID_REQUEST``.

DescribeConfigs lists every key: an override with source GROUP_CONFIG (8), otherwise the
broker's value of the synonym (DEFAULT_CONFIG, 5) — as Kafka's ``ConfigHelper`` does; the
keys Kafka defines as internal (the streams warm-up settings) only when the group sets them,
and ``streams.assignor.name`` with the first of the broker's assignors.
Pure functions; ``get(key)`` reads a broker setting.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping

from .configs import DEFAULT_CONFIG, ConfigEntry

GROUP_RESOURCE = 32
GROUP_CONFIG_SOURCE = 8          # DescribeConfigsResponse ConfigSource.GROUP_CONFIG


@dataclass(frozen=True)
class GroupConfigDef:
    """The definition of one group configuration key."""
    name: str
    type: str                     # "int" | "string" | "boolean"
    default: str
    at_least: int | None = None
    synonym: str | None = None    # the broker setting that provides the default
    internal: bool = False        # Kafka's defineInternal: described only when set


_D = GroupConfigDef
DEFINITIONS: dict[str, GroupConfigDef] = {d.name: d for d in (
    _D("consumer.session.timeout.ms", "int", "45000", 1, "group.consumer.session.timeout.ms"),
    _D("consumer.heartbeat.interval.ms", "int", "5000", 1, "group.consumer.heartbeat.interval.ms"),
    _D("consumer.assignment.interval.ms", "int", "1000", 0, "group.consumer.assignment.interval.ms"),
    _D("share.session.timeout.ms", "int", "45000", 1, "group.share.session.timeout.ms"),
    _D("share.heartbeat.interval.ms", "int", "5000", 1, "group.share.heartbeat.interval.ms"),
    _D("share.record.lock.duration.ms", "int", "30000", 1000, "group.share.record.lock.duration.ms"),
    _D("share.delivery.count.limit", "int", "5", 2, "group.share.delivery.count.limit"),
    _D("share.partition.max.record.locks", "int", "2000", 100, "group.share.partition.max.record.locks"),
    _D("share.auto.offset.reset", "string", "latest"),
    _D("share.isolation.level", "string", "read_uncommitted"),
    _D("share.renew.acknowledge.enable", "boolean", "true"),
    _D("share.assignment.interval.ms", "int", "1000", 0, "group.share.assignment.interval.ms"),
    # KIP-1191 share-group dead-letter queues (Kafka 4.4, kbroker/share/dlq.py)
    _D("errors.deadletterqueue.topic.name", "string", ""),
    _D("errors.deadletterqueue.copy.record.enable", "boolean", "false"),
    _D("streams.session.timeout.ms", "int", "45000", 1, "group.streams.session.timeout.ms"),
    _D("streams.heartbeat.interval.ms", "int", "5000", 1, "group.streams.heartbeat.interval.ms"),
    _D("streams.num.standby.replicas", "int", "0", 0, "group.streams.num.standby.replicas"),
    _D("streams.initial.rebalance.delay.ms", "int", "3000", 0, "group.streams.initial.rebalance.delay.ms"),
    _D("streams.assignment.interval.ms", "int", "1000", 0, "group.streams.assignment.interval.ms"),
    # Kafka 4.4: KIP-1357's assignor choice; the client tags a rack-aware assignor spreads
    # standby tasks over; KIP-1071's warm-up settings (internal keys)
    _D("streams.assignor.name", "string", "sticky", None, "group.streams.assignors"),
    _D("streams.rack.aware.assignment.tags", "list", "", None,
       "group.streams.rack.aware.assignment.tags"),
    _D("streams.task.offset.interval.ms", "int", "60000", 1,
       "group.streams.task.offset.interval.ms", internal=True),
    _D("streams.num.warmup.replicas", "int", "2", 0, "group.streams.num.warmup.replicas",
       internal=True),
    _D("streams.acceptable.recovery.lag", "long", "10000", 0,
       "group.streams.acceptable.recovery.lag", internal=True),
)}

# (group key, broker key of the bound, "min"/"max", broker default of the bound)
_BOUNDS = (
    ("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "min", 5000),
    ("consumer.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", "max", 15000),
    ("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "min", 45000),
    ("consumer.session.timeout.ms", "group.consumer.max.session.timeout.ms", "max", 60000),
    ("consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms", "min?", 0),
    ("consumer.assignment.interval.ms", "group.consumer.max.assignment.interval.ms", "max?", 15000),
    ("share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "min", 5000),
    ("share.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", "max", 15000),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", "min", 45000),
    ("share.session.timeout.ms", "group.share.max.session.timeout.ms", "max", 60000),
    ("share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "min", 15000),
    ("share.record.lock.duration.ms", "group.share.max.record.lock.duration.ms", "max", 60000),
    ("share.delivery.count.limit", "group.share.min.delivery.count.limit", "min", 2),
    ("share.delivery.count.limit", "group.share.max.delivery.count.limit", "max", 10),
    ("share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "min", 100),
    ("share.partition.max.record.locks", "group.share.max.partition.max.record.locks", "max", 4000),
    ("share.assignment.interval.ms", "group.share.min.assignment.interval.ms", "min?", 0),
    ("share.assignment.interval.ms", "group.share.max.assignment.interval.ms", "max?", 15000),
    ("streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "min", 5000),
    ("streams.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms", "max", 15000),
    ("streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "min", 45000),
    ("streams.session.timeout.ms", "group.streams.max.session.timeout.ms", "max", 60000),
    ("streams.num.standby.replicas", "group.streams.max.standby.replicas", "max", 2),
    ("streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms", "min?", 0),
    ("streams.assignment.interval.ms", "group.streams.max.assignment.interval.ms", "max?", 15000),
    ("streams.task.offset.interval.ms", "group.streams.min.task.offset.interval.ms", "min", 15000),
    ("streams.num.warmup.replicas", "group.streams.max.warmup.replicas", "max", 20),
)
_SESSION_VS_HEARTBEAT = ("consumer", "share", "streams")
# compiled on its first use by re.match (re keeps it): a start validates no share group's
# offset reset
_ISO_DURATION = r"^-?P(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?$"


def _broker(get: Callable[[str], object], key: str, default):
    try:
        v = get(key)
    except Exception:  # noqa: BLE001 - a minimal config without the key
        v = None
    return default if v is None else v


def _streams_assignors(get: Callable[[str], object]) -> list[str]:
    from kbroker.config.streams_assignors import assignor_names
    try:
        return list(assignor_names(_broker(get, "group.streams.assignors", ["sticky"])))
    except ValueError:
        return ["sticky"]


def defaults(get: Callable[[str], object]) -> dict[str, str]:
    """Every group config's value when the group has no override (the broker's)."""
    out = {}
    for d in DEFINITIONS.values():
        v = _broker(get, d.synonym, d.default) if d.synonym else d.default
        if d.name == "streams.assignor.name":         # the broker's default assignor
            v = _streams_assignors(get)[0]
        elif isinstance(v, (list, tuple)):
            v = ",".join(str(x) for x in v)
        out[d.name] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def _parse(d: GroupConfigDef, value: str | None) -> str | None:
    """An error message for a value that is not of the key's type or below its bound."""
    if value is None:
        return f"Invalid value null for configuration {d.name}"
    if d.type in ("int", "long"):
        kind, bits = ("INT", 31) if d.type == "int" else ("LONG", 63)
        try:
            n = int(str(value).strip())
        except ValueError:
            return f"Invalid value {value} for configuration {d.name}: Not a number of type {kind}"
        if not -(1 << bits) <= n < (1 << bits):
            return f"Invalid value {value} for configuration {d.name}: Not a number of type {kind}"
        if d.at_least is not None and n < d.at_least:
            return f"Invalid value {n} for configuration {d.name}: Value must be at least {d.at_least}"
    elif d.type == "boolean":
        if str(value).strip().lower() not in ("true", "false"):
            return f"Invalid value {value} for configuration {d.name}: Expected value to be either true or false"
    elif d.name == "share.auto.offset.reset":
        v = str(value).strip().lower()
        if v not in ("latest", "earliest") and not (
                v.startswith("by_duration:") and re.match(_ISO_DURATION, value.strip()[12:], re.I)
                and not value.strip()[12:].startswith("-")):
            return (f"Invalid value {value} for configuration {d.name}: Invalid value `{value}` "
                    "for configuration share.auto.offset.reset. The value must be either "
                    "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.")
    elif d.name == "errors.deadletterqueue.topic.name":
        if str(value).strip().startswith("__"):
            return "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"
    elif d.name == "share.isolation.level":
        if str(value) not in ("read_committed", "read_uncommitted"):
            return (f"Invalid value {value} for configuration {d.name}: String must be one of: "
                    "read_committed, read_uncommitted")
    return None


def validate(group: str, overrides: Mapping[str, str | None], get: Callable[[str], object],
             changed: Mapping[str, str | None] | None = None) -> tuple[int, str | None]:
    """(error code, message) for a group's resulting ``overrides``; (0, None) if valid.
    ``changed`` are the keys the request set (their names are checked first)."""
    if not group:
        return 42, "Group name can't be empty."              # INVALID_REQUEST
    for name in (changed or overrides):
        if name not in DEFINITIONS:
            return 40, f"Unknown group config name: {name}"    # INVALID_CONFIG
    tags = (changed or overrides).get("streams.rack.aware.assignment.tags")
    if tags is not None and tags.strip():
        keys = re.split(r"\s*,\s*", tags.strip())
        if len(set(keys)) != len(keys):
            return 40, "streams.rack.aware.assignment.tags must not contain duplicate tag keys."
    values = defaults(get)
    values.update({k: v for k, v in overrides.items() if v is not None})
    for name, v in values.items():
        msg = _parse(DEFINITIONS[name], v)
        if msg:
            return 40, msg
    ints = {k: int(v) for k, v in values.items() if DEFINITIONS[k].type == "int"}
    # Kafka 4.4's GroupConfig: each key the group sets is checked against the broker's bounds
    # of it, in this order, both bounds in one message where it has both
    bounds: dict[str, dict[str, int]] = {}
    for key, bound_key, kind, bound_default in _BOUNDS:
        bounds.setdefault(key, {})[kind.rstrip("?")] = int(_broker(get, bound_key, bound_default))
    for key, b in bounds.items():
        if overrides.get(key) is None:
            continue
        lo, hi, v = b.get("min"), b.get("max"), ints[key]
        if lo is not None and hi is not None:
            if not lo <= v <= hi:
                return 40, f"{key} must be in the range {lo} to {hi} inclusive."
        elif hi is not None and v > hi:
            return 40, f"{key} must be less than or equal to {hi}"
        elif lo is not None and v < lo:
            return 40, f"{key} must be greater than or equal to {lo}"
    name = overrides.get("streams.assignor.name")
    if name is not None and name not in _streams_assignors(get):
        return 40, (f"streams.assignor.name '{name}' is not a registered task assignor. "
                    f"Registered assignors are: [{', '.join(_streams_assignors(get))}].")
    for kind in _SESSION_VS_HEARTBEAT:
        if ints[f"{kind}.session.timeout.ms"] <= ints[f"{kind}.heartbeat.interval.ms"]:
            return 40, f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms"
    return 0, None


def describe(overrides: Mapping[str, str], get: Callable[[str], object]) -> list[ConfigEntry]:
    """Every group config with its value and source (DescribeConfigs)."""
    base = defaults(get)
    out = []
    for name in sorted(DEFINITIONS):
        d = DEFINITIONS[name]
        if d.internal and name not in overrides:
            continue
        synonyms = []
        if name in overrides:
            value, source = overrides[name], GROUP_CONFIG_SOURCE
            synonyms.append((name, value, GROUP_CONFIG_SOURCE))
        else:
            value, source = base[name], DEFAULT_CONFIG
        if d.synonym:
            synonyms.append((d.synonym, base[name], DEFAULT_CONFIG))
        out.append(ConfigEntry(name, value, source, read_only=False, sensitive=False,
                               type=d.type, synonyms=synonyms))
    return out
