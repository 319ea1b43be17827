"""Client quota configuration as KRaft keeps it: ``ClientQuotaRecord``s in the metadata log.

Pure (no I/O): the rules of Kafka's ``ClientQuotaControlManager`` (AlterClientQuotas) and
``ClientQuotasImage.describe`` (DescribeClientQuotas), over the image's quota map.

An entity is a set of (entity type, name) pairs; a ``None`` name is the type's default
(``<default>`` in Kafka's tools). Allowed: ``user``, ``client-id``, both together, or
``ip`` alone. Keys: ``producer_byte_rate``, ``consumer_byte_rate`` (whole numbers),
``request_percentage``, ``controller_mutation_rate`` for user/client-id entities,
``connection_creation_rate`` (a whole number) for ip entities; every value must be above 0.
Entity key in the image: the sorted tuple of its pairs.
"""
from __future__ import annotations

import ipaddress
import socket
from typing import Iterable, Mapping

from kbroker.wire import messages

USER, CLIENT_ID, IP = "user", "client-id", "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)
INVALID_REQUEST = 42
UNSUPPORTED_VERSION = 35
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

# key -> largest value for integral keys (None: any positive double)
USER_CLIENT_KEYS = {"producer_byte_rate": 2 ** 63 - 1, "consumer_byte_rate": 2 ** 63 - 1,
                    "request_percentage": None, "controller_mutation_rate": None}
IP_KEYS = {"connection_creation_rate": 2 ** 31 - 1}

EntityKey = tuple  # tuple[tuple[str, str | None], ...]


class QuotaError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def entity_key(pairs: Iterable[tuple[str, str | None]]) -> EntityKey:
    return tuple(sorted(pairs, key=lambda p: p[0]))


def _valid_ip(name: str | None) -> bool:
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(name, None)
        return True
    except (OSError, UnicodeError):
        return False


def validate_entity(pairs: list[tuple[str, str | None]]) -> tuple[EntityKey, dict]:
    """The entity's key and its allowed quota keys; ``QuotaError`` as Kafka words it."""
    if not pairs:
        raise QuotaError(INVALID_REQUEST, "Invalid empty client quota entity")
    seen: dict[str, str | None] = {}
    for etype, name in pairs:
        if etype in seen:
            raise QuotaError(INVALID_REQUEST, f"Invalid client quota entity, duplicate entity entry {etype}")
        if etype not in ENTITY_TYPES:
            raise QuotaError(INVALID_REQUEST, f"Unhandled client quota entity type: {etype}")
        if name is not None and name == "":
            raise QuotaError(INVALID_REQUEST, f"Empty {etype} not supported")
        seen[etype] = name
    if IP in seen:
        if USER in seen or CLIENT_ID in seen:
            raise QuotaError(INVALID_REQUEST, "Invalid quota entity combination, IP entity should"
                             "not be combined with User or ClientId")
        if not _valid_ip(seen[IP]):
            raise QuotaError(INVALID_REQUEST, f"{seen[IP]} is not a valid IP or resolvable host.")
        return entity_key(seen.items()), IP_KEYS
    return entity_key(seen.items()), USER_CLIENT_KEYS


def validate_value(keys: Mapping[str, int | None], key: str, value: float) -> None:
    if key not in keys:
        raise QuotaError(INVALID_REQUEST, f"Invalid configuration key {key}")
    if value <= 0.0:
        raise QuotaError(INVALID_REQUEST, f"Quota {key} must be greater than 0")
    largest = keys[key]
    if largest is not None:
        if value > largest:
            kind = "an INT" if largest < 2 ** 32 else "a LONG"
            raise QuotaError(INVALID_REQUEST, f"Proposed value for {key} is too large for {kind}.")
        if abs(value % 1.0) > 1e-6:
            raise QuotaError(INVALID_REQUEST, f"{key} cannot be a fractional value.")


def alter(current: Mapping[EntityKey, Mapping[str, float]], entries) -> tuple[list, list]:
    """``entries``: (entity pairs, [(key, value, remove)]) per entry. Returns (records to
    commit, [(error code, message or None)] per entry) — an entry fails whole or applies whole."""
    records, results = [], []
    for pairs, ops in entries:
        try:
            key, allowed = validate_entity(list(pairs))
            have = current.get(key, {})
            out = []
            wanted: dict[str, float | None] = {}
            for k, value, remove in ops:
                if k in wanted:
                    raise QuotaError(INVALID_REQUEST, f"Duplicate quota key {k} not updating quota "
                                     "for entity")
                wanted[k] = None if remove else value
            for k, value in wanted.items():
                ent = [messages.ClientQuotaRecord.EntityData(entity_type=t, entity_name=n) for t, n in key]
                if value is None:
                    if k in have:
                        out.append(messages.ClientQuotaRecord(entity=ent, key=k, value=0.0, remove=True))
                    continue
                validate_value(allowed, k, value)
                if have.get(k) != value:
                    out.append(messages.ClientQuotaRecord(entity=ent, key=k, value=value, remove=False))
        except QuotaError as e:
            results.append((e.code, str(e)))
            continue
        records += out
        results.append((0, None))
    return records, results


def describe(quotas: Mapping[EntityKey, Mapping[str, float]], components, strict: bool) -> list:
    """The matching (entity key, values) pairs; ``QuotaError`` for a bad filter."""
    exact: dict[str, str | None] = {}
    typed: set[str] = set()
    for etype, match_type, match in components:
        if not etype:
            raise QuotaError(INVALID_REQUEST, "Invalid empty entity type.")
        if etype in exact or etype in typed:
            raise QuotaError(INVALID_REQUEST, f"Entity type {etype} cannot appear more than once "
                             "in the filter.")
        if etype not in ENTITY_TYPES:
            raise QuotaError(UNSUPPORTED_VERSION, f"Unsupported entity type {etype}")
        if match_type == MATCH_EXACT:
            if match is None:
                raise QuotaError(INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match "
                                 "string to null.")
            exact[etype] = match
        elif match_type == MATCH_DEFAULT:
            if match is not None:
                raise QuotaError(INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also "
                                 "specified a match string.")
            exact[etype] = None
        elif match_type == MATCH_SPECIFIED:
            if match is not None:
                raise QuotaError(INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, but also "
                                 "specified a match string.")
            typed.add(etype)
        else:
            raise QuotaError(INVALID_REQUEST, f"Unknown match type {match_type}")
    if (IP in exact or IP in typed) and (exact.keys() | typed) - {IP}:
        raise QuotaError(INVALID_REQUEST, "Invalid entity filter component combination. IP filter "
                         "component should not be used with user or clientId filter component.")
    out = []
    for key, values in quotas.items():
        entity = dict(key)
        if strict and len(entity) != len(exact) + len(typed):
            continue
        if any(t not in entity or entity[t] != n for t, n in exact.items()):
            continue
        if any(t not in entity for t in typed):
            continue
        out.append((key, values))
    return out


def replay(quotas: dict, record) -> None:
    """Apply one ``ClientQuotaRecord`` to a mutable {entity key: {key: value}} map."""
    key = entity_key((e.entity_type, e.entity_name) for e in record.entity or ())
    values = dict(quotas.get(key, {}))
    if record.remove:
        values.pop(record.key, None)
    else:
        values[record.key] = record.value
    if values:
        quotas[key] = values
    else:
        quotas.pop(key, None)


def records_of(quotas: Mapping[EntityKey, Mapping[str, float]]):
    """The records that rebuild ``quotas`` (snapshots)."""
    for key, values in sorted(quotas.items(), key=lambda kv: repr(kv[0])):
        for k, v in sorted(values.items()):
            yield messages.ClientQuotaRecord(
                entity=[messages.ClientQuotaRecord.EntityData(entity_type=t, entity_name=n) for t, n in key],
                key=k, value=v, remove=False)
