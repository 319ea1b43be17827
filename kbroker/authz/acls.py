"""Kafka's ACL vocabulary: resource/pattern/operation/permission codes, one stored ACL
(``Acl``, Kafka's ``StandardAcl``), binding filters and the controller-side validation.

Codes are Kafka's (``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``). Rules kept, as Kafka's ``AclControlManager`` and
``ResourcePatternFilter``/``AccessControlEntryFilter`` keep them:

- a new ACL has a concrete resource type (not ANY/UNKNOWN), a LITERAL or PREFIXED pattern,
  a concrete operation and permission, a non-empty resource name, a principal of the
  form ``Type:name`` and a non-empty host: ``*``, an address or, from ``metadata.version``
  4.4-IV1, a CIDR block (``validate_new``, ``cidr.py``). CLUSTER resources are named
  ``kafka-cluster``.
- a filter with an UNKNOWN field is rejected (``filter_error``); ``ANY`` matches every
  value, a null name/principal/host matches every value; the MATCH pattern type matches
  the LITERAL ACL of that name, the wildcard ``*`` LITERAL ACL and every PREFIXED ACL the
  name starts with (``Filter.matches``).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from .cidr import host_error

# ResourceType
R_UNKNOWN, R_ANY, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = range(8)
# PatternType
P_UNKNOWN, P_ANY, MATCH, LITERAL, PREFIXED = range(5)
# AclOperation
(O_UNKNOWN, O_ANY, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION,
 DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS,
 TWO_PHASE_COMMIT) = range(16)
# AclPermissionType
PERM_UNKNOWN, PERM_ANY, DENY, ALLOW = range(4)

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"

RESOURCE_NAMES = {R_UNKNOWN: "UNKNOWN", R_ANY: "ANY", TOPIC: "TOPIC", GROUP: "GROUP",
                  CLUSTER: "CLUSTER", TRANSACTIONAL_ID: "TRANSACTIONAL_ID",
                  DELEGATION_TOKEN: "DELEGATION_TOKEN", USER: "USER"}
PATTERN_NAMES = {P_UNKNOWN: "UNKNOWN", P_ANY: "ANY", MATCH: "MATCH", LITERAL: "LITERAL",
                 PREFIXED: "PREFIXED"}
OPERATION_NAMES = {O_UNKNOWN: "UNKNOWN", O_ANY: "ANY", ALL: "ALL", READ: "READ", WRITE: "WRITE",
                   CREATE: "CREATE", DELETE: "DELETE", ALTER: "ALTER", DESCRIBE: "DESCRIBE",
                   CLUSTER_ACTION: "CLUSTER_ACTION", DESCRIBE_CONFIGS: "DESCRIBE_CONFIGS",
                   ALTER_CONFIGS: "ALTER_CONFIGS", IDEMPOTENT_WRITE: "IDEMPOTENT_WRITE",
                   CREATE_TOKENS: "CREATE_TOKENS", DESCRIBE_TOKENS: "DESCRIBE_TOKENS",
                   TWO_PHASE_COMMIT: "TWO_PHASE_COMMIT"}
PERMISSION_NAMES = {PERM_UNKNOWN: "UNKNOWN", PERM_ANY: "ANY", DENY: "DENY", ALLOW: "ALLOW"}


@dataclass(frozen=True, slots=True)
class Acl:
    """One ACL binding as stored (Kafka's ``StandardAcl``); equal bindings are one ACL."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    @classmethod
    def from_record(cls, r) -> "Acl":
        return cls(r.resource_type, r.resource_name, r.pattern_type, r.principal, r.host,
                   r.operation, r.permission_type)

    def to_record(self, acl_id: uuid.UUID):
        from kbroker.wire import messages
        return messages.AccessControlEntryRecord(
            id=acl_id, resource_type=self.resource_type, resource_name=self.resource_name,
            pattern_type=self.pattern_type, principal=self.principal, host=self.host,
            operation=self.operation, permission_type=self.permission)

    def __str__(self) -> str:
        return (f"(pattern=ResourcePattern(resourceType={RESOURCE_NAMES.get(self.resource_type)}, "
                f"name={self.resource_name}, patternType={PATTERN_NAMES.get(self.pattern_type)}), "
                f"entry=(principal={self.principal}, host={self.host}, "
                f"operation={OPERATION_NAMES.get(self.operation)}, "
                f"permissionType={PERMISSION_NAMES.get(self.permission)}))")


def validate_new(acl: Acl, metadata_version: int | None = None) -> tuple[str, str] | None:
    """Why an ACL cannot be created: ``(error name, message)`` -- INVALID_REQUEST, or
    UNSUPPORTED_VERSION for a CIDR host below ``metadata.version`` 4.4-IV1 (``cidr.py``) -- or None."""
    problem = _validate_fields(acl)
    if problem:
        return "INVALID_REQUEST", problem
    return host_error(acl.host, metadata_version)


def _validate_fields(acl: Acl) -> str | None:
    if acl.resource_type not in RESOURCE_NAMES or acl.resource_type in (R_UNKNOWN, R_ANY):
        return f"Invalid resourceType {RESOURCE_NAMES.get(acl.resource_type, acl.resource_type)}"
    if acl.pattern_type not in (LITERAL, PREFIXED):
        return f"Invalid patternType {PATTERN_NAMES.get(acl.pattern_type, acl.pattern_type)}"
    if acl.operation not in OPERATION_NAMES or acl.operation in (O_UNKNOWN, O_ANY):
        return f"Invalid operation {OPERATION_NAMES.get(acl.operation, acl.operation)}"
    if acl.permission not in (ALLOW, DENY):
        return f"Invalid permissionType {PERMISSION_NAMES.get(acl.permission, acl.permission)}"
    if not acl.resource_name:
        return "Resource name should not be empty"
    if acl.resource_type == CLUSTER and acl.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if acl.principal is None or ":" not in acl.principal:
        return (f"Could not parse principal from `{acl.principal}` (no colon is present "
                "separating the principal type from the principal name)")
    return None


@dataclass(frozen=True, slots=True)
class Filter:
    """An ``AclBindingFilter``: what DescribeAcls and DeleteAcls select."""

    resource_type: int = R_ANY
    resource_name: str | None = None
    pattern_type: int = P_ANY
    principal: str | None = None
    host: str | None = None
    operation: int = O_ANY
    permission: int = PERM_ANY

    def error(self) -> str | None:
        """Kafka rejects filters with an UNKNOWN (or out-of-range) field."""
        if self.resource_type not in RESOURCE_NAMES or self.resource_type == R_UNKNOWN \
                or self.pattern_type not in PATTERN_NAMES or self.pattern_type == P_UNKNOWN:
            return "Unknown patternFilter."
        if self.operation not in OPERATION_NAMES or self.operation == O_UNKNOWN \
                or self.permission not in PERMISSION_NAMES or self.permission == PERM_UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches(self, acl: Acl) -> bool:
        if self.resource_type != R_ANY and self.resource_type != acl.resource_type:
            return False
        if self.pattern_type not in (P_ANY, MATCH) and self.pattern_type != acl.pattern_type:
            return False
        if self.resource_name is not None:
            if self.pattern_type in (P_ANY, acl.pattern_type):
                if self.resource_name != acl.resource_name:
                    return False
            elif acl.pattern_type == LITERAL:      # MATCH against a literal ACL
                if acl.resource_name not in (self.resource_name, WILDCARD):
                    return False
            elif acl.pattern_type == PREFIXED:     # MATCH against a prefixed ACL
                if not self.resource_name.startswith(acl.resource_name):
                    return False
            else:
                return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != O_ANY and self.operation != acl.operation:
            return False
        if self.permission != PERM_ANY and self.permission != acl.permission:
            return False
        return True
