"""The StandardAuthorizer's decision as a pure function over the image's ACLs.

``authorize(index, principal, host, operation, resource_type, name, super_users,
allow_if_no_acl)`` answers one action the way Kafka's ``StandardAuthorizerData`` does:

1. a principal listed in ``super.users`` may do anything;
2. the ACLs that apply to the resource are the LITERAL ones with its exact name, the
   LITERAL wildcard ``*`` ones and every PREFIXED one whose name starts the resource name;
3. of those, an ACL matches when its principal is the caller's or ``User:*``, its host is
   the caller's address, ``*`` or a CIDR block holding the address (``cidr.py``, Kafka 4.4),
   and its operation is the asked one or ``ALL`` — and, for
   ALLOW ACLs only, when it implies the asked one (READ/WRITE/DELETE/ALTER imply DESCRIBE,
   ALTER_CONFIGS implies DESCRIBE_CONFIGS);
4. any matching DENY wins; else any matching ALLOW allows; else, when no ACL at all applies
   to the resource (whoever it names), ``allow.everyone.if.no.acl.found`` decides; else deny.

``AclIndex`` holds the ACLs keyed for that lookup (literal by (type, name), prefixed by
type and prefix length) and is rebuilt by the image builder when ACLs change.
``authorize_by_resource_type`` is Kafka's ``Authorizer.authorizeByResourceType`` (used by
InitProducerId: "may this principal WRITE to some topic?"). ``authorized_operations``
computes the KIP-430 bitfields.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from .cidr import host_matches
from .acls import (ALL, ALLOW, ALTER, ALTER_CONFIGS, CLUSTER, CLUSTER_ACTION, CREATE, DELETE,
                   DENY, DESCRIBE, DESCRIBE_CONFIGS, GROUP, IDEMPOTENT_WRITE, LITERAL, PREFIXED,
                   READ, TOPIC, TRANSACTIONAL_ID, WILDCARD, WILDCARD_PRINCIPAL, WRITE,
                   DELEGATION_TOKEN, Acl)

IMPLIES_DESCRIBE = frozenset({DESCRIBE, READ, WRITE, DELETE, ALTER})
IMPLIES_DESCRIBE_CONFIGS = frozenset({DESCRIBE_CONFIGS, ALTER_CONFIGS})

# the operations each resource type supports (what authorized-operations bitfields range over)
SUPPORTED_OPERATIONS = {
    TOPIC: (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    GROUP: (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS),
    CLUSTER: (CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
              IDEMPOTENT_WRITE),
    TRANSACTIONAL_ID: (WRITE, DESCRIBE),
    DELEGATION_TOKEN: (DESCRIBE,),
}


@dataclass(frozen=True)
class AclIndex:
    """The ACLs indexed by resource type and name (literal and prefixed) for lookups."""
    literal: Mapping[tuple[int, str], tuple[Acl, ...]] = field(default_factory=dict)
    prefixed: Mapping[int, Mapping[str, tuple[Acl, ...]]] = field(default_factory=dict)
    prefix_lengths: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    by_type: Mapping[int, tuple[Acl, ...]] = field(default_factory=dict)

    @classmethod
    def build(cls, acls: Iterable[Acl]) -> "AclIndex":
        literal: dict = {}
        prefixed: dict = {}
        by_type: dict = {}
        for a in acls:
            by_type.setdefault(a.resource_type, []).append(a)
            if a.pattern_type == LITERAL:
                literal.setdefault((a.resource_type, a.resource_name), []).append(a)
            elif a.pattern_type == PREFIXED:
                prefixed.setdefault(a.resource_type, {}).setdefault(a.resource_name, []).append(a)
        return cls(
            {k: tuple(v) for k, v in literal.items()},
            {t: {p: tuple(v) for p, v in m.items()} for t, m in prefixed.items()},
            {t: tuple(sorted({len(p) for p in m})) for t, m in prefixed.items()},
            {t: tuple(v) for t, v in by_type.items()})

    def applicable(self, resource_type: int, name: str) -> list[Acl]:
        """Every ACL whose pattern covers the resource (step 2 above)."""
        out = list(self.literal.get((resource_type, name), ()))
        if name != WILDCARD:
            out.extend(self.literal.get((resource_type, WILDCARD), ()))
        by_prefix = self.prefixed.get(resource_type)
        if by_prefix:
            for n in self.prefix_lengths[resource_type]:
                if n > len(name):
                    break
                out.extend(by_prefix.get(name[:n], ()))
        return out

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_type.values())


EMPTY_INDEX = AclIndex()


def _match(acl: Acl, principal: str, host: str, operation: int) -> int | None:
    """ALLOW/DENY when ``acl`` applies to this caller and operation, else None."""
    if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
        return None
    if not host_matches(acl.host, host):
        return None
    if acl.operation != ALL and acl.operation != operation:
        if acl.permission != ALLOW:
            return None
        if operation == DESCRIBE:
            if acl.operation not in IMPLIES_DESCRIBE:
                return None
        elif operation == DESCRIBE_CONFIGS:
            if acl.operation not in IMPLIES_DESCRIBE_CONFIGS:
                return None
        else:
            return None
    return acl.permission


def authorize(index: AclIndex, principal: str, host: str, operation: int, resource_type: int,
              name: str, super_users: frozenset = frozenset(), allow_if_no_acl: bool = False) -> bool:
    if principal in super_users:
        return True
    acls = index.applicable(resource_type, name)
    if not acls:
        return allow_if_no_acl
    allowed = False
    for acl in acls:
        result = _match(acl, principal, host, operation)
        if result == DENY:
            return False
        if result == ALLOW:
            allowed = True
    return allowed


def authorize_by_resource_type(index: AclIndex, principal: str, host: str, operation: int,
                               resource_type: int, super_users: frozenset = frozenset(),
                               allow_if_no_acl: bool = False) -> bool:
    """May the caller do ``operation`` on at least one resource of the type? (Kafka's
    ``authorizeByResourceType``: a probe on an arbitrary name first — super users, wildcard
    ALLOWs, no ACLs — then ALLOW patterns not shadowed by a DENY of the same or a shorter
    prefix; a DENY on ``*`` denies all.)"""
    if authorize(index, principal, host, operation, resource_type, "hardcode", super_users,
                 allow_if_no_acl):
        return True
    deny_literal, deny_prefix, allow_literal, allow_prefix = set(), set(), set(), set()
    for acl in index.by_type.get(resource_type, ()):
        if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
            continue
        if not host_matches(acl.host, host):
            continue
        if acl.operation != ALL and acl.operation != operation:
            continue
        if acl.permission == DENY:
            (deny_literal if acl.pattern_type == LITERAL else deny_prefix).add(acl.resource_name)
        else:
            (allow_literal if acl.pattern_type == LITERAL else allow_prefix).add(acl.resource_name)
    if WILDCARD in deny_literal:
        return False

    def shadowed(name: str) -> bool:
        return any(name.startswith(p) for p in deny_prefix)
    for name in allow_prefix:
        if not shadowed(name):
            return True
    for name in allow_literal:
        if name == WILDCARD or (name not in deny_literal and not shadowed(name)):
            return True
    return False


def authorized_operations(index: AclIndex, principal: str, host: str, resource_type: int,
                          name: str, super_users: frozenset = frozenset(),
                          allow_if_no_acl: bool = False) -> int:
    """KIP-430: bit N set when operation N is allowed on the resource."""
    bits = 0
    for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
        if authorize(index, principal, host, op, resource_type, name, super_users, allow_if_no_acl):
            bits |= 1 << op
    return bits


def parse_super_users(value: str | None) -> frozenset:
    """``super.users``: principals separated by semicolons (``User:alice;User:bob``)."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())


class Authorizer:
    """The configured StandardAuthorizer: ``super.users`` and
    ``allow.everyone.if.no.acl.found`` bound to the pure functions above. The ACLs come from
    the metadata image at each call (``image.acl_index``)."""

    CLASS_NAME = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

    def __init__(self, super_users: frozenset, allow_if_no_acl: bool):
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl

    @classmethod
    def from_config(cls, config) -> "Authorizer | None":
        name = (config.get("authorizer.class.name") or "").strip()
        if not name:
            return None
        return cls(parse_super_users(config.get("super.users")),
                   bool(config.get("allow.everyone.if.no.acl.found")))

    def describe(self) -> str:
        """The start-up line naming what decides access."""
        return (f"authorizer {self.CLASS_NAME}: super.users={';'.join(sorted(self.super_users)) or '(none)'}, "
                f"allow.everyone.if.no.acl.found={str(self.allow_if_no_acl).lower()}")

    def authorize(self, index: AclIndex, principal: str, host: str, operation: int,
                  resource_type: int, name: str) -> bool:
        return authorize(index, principal, host, operation, resource_type, name,
                         self.super_users, self.allow_if_no_acl)

    def authorize_by_resource_type(self, index, principal, host, operation, resource_type) -> bool:
        return authorize_by_resource_type(index, principal, host, operation, resource_type,
                                          self.super_users, self.allow_if_no_acl)

    def authorized_operations(self, index, principal, host, resource_type, name) -> int:
        return authorized_operations(index, principal, host, resource_type, name,
                                     self.super_users, self.allow_if_no_acl)
