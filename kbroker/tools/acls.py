"""``kbroker acls``: list, add and remove ACLs (``kafka-acls.sh``; DescribeAcls, CreateAcls,
DeleteAcls, KIP-140; prefixed patterns KIP-290).

    kbroker acls list   [--principal P ...] [RESOURCE ...] [--resource-pattern-type TYPE]
    kbroker acls add    (--allow-principal P | --deny-principal P) ... [--operation OP ...]
                        [--host H ...] RESOURCE ... [--resource-pattern-type literal|prefixed]
    kbroker acls remove [--allow-principal P | --deny-principal P ...] [--operation OP ...]
                        [--host H ...] RESOURCE ... [--resource-pattern-type TYPE]

RESOURCE is ``--topic NAME``, ``--group NAME``, ``--transactional-id NAME`` (each repeatable)
or ``--cluster``. Operations take Kafka's names in any case (``Read``, ``IdempotentWrite``,
``DESCRIBE_CONFIGS``). As kafka-acls: ``add`` makes every principal x operation x host x
resource combination, ``--operation`` defaults to All and ``--host`` to ``*``; the pattern type
defaults to LITERAL, and ``list`` without a resource lists every ACL. Unlike kafka-acls,
``remove`` without ``--operation`` removes every operation of the given principals (Kafka's
tool would remove only the ``All`` entries) and never prompts (no ``--force`` needed); without
principals it removes every ACL on the resources. The broker needs an authorizer
(``authorizer.class.name``); without one it answers SECURITY_DISABLED. The operations
CreateTokens and DescribeTokens are not offered: confluent-kafka's ACL types lack them.
"""
from __future__ import annotations

from kbroker.tools.common import CommandError, UsageError, connect, emit

COLUMNS = ["principal", "host", "operation", "permission", "resource_type", "name", "pattern"]
PATTERN_TYPES = ("literal", "prefixed", "match", "any")
CLUSTER_NAME = "kafka-cluster"


def _resources(p) -> None:
    p.add_argument("--topic", action="append", default=[], metavar="NAME")
    p.add_argument("--group", action="append", default=[], metavar="NAME")
    p.add_argument("--transactional-id", action="append", default=[], metavar="NAME")
    p.add_argument("--cluster", action="store_true", help="the cluster resource (kafka-cluster)")
    p.add_argument("--resource-pattern-type", choices=PATTERN_TYPES, default="literal",
                   type=str.lower, help="default literal")


def _entries(p, required: bool) -> None:
    p.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME",
                   help="e.g. User:alice, User:* (repeatable)")
    p.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
    p.add_argument("--operation", action="append", default=[], metavar="OP",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                        "DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, "
                        "DescribeTokens, All" + (" (default All)" if required else " (default any)"))
    p.add_argument("--host", action="append", default=[], metavar="HOST", help="default *")


def add_parser(sub, parent) -> None:
    p = sub.add_parser("acls", help="ACLs: list, add, remove (needs a broker with an authorizer)")
    asub = p.add_subparsers(dest="action", required=True)
    s = asub.add_parser("list", parents=[parent], help="ACLs matching the filter (all by default)")
    s.add_argument("--principal", action="append", default=[], metavar="TYPE:NAME")
    _resources(s)
    s.set_defaults(func=cmd_list)
    s = asub.add_parser("add", parents=[parent], help="create ACLs")
    _entries(s, True)
    _resources(s)
    s.set_defaults(func=cmd_add)
    s = asub.add_parser("remove", parents=[parent], help="delete the ACLs matching the filter")
    _entries(s, False)
    _resources(s)
    s.set_defaults(func=cmd_remove)


def _operation(name: str):
    from confluent_kafka.admin import AclOperation
    wanted = name.replace("_", "").replace("-", "").upper()
    for op in AclOperation:
        if op.name.replace("_", "") == wanted and op not in (AclOperation.UNKNOWN, AclOperation.ANY):
            return op
    raise UsageError(f"unknown operation {name!r}")


def _patterns(args, filtering: bool) -> list[tuple]:
    """(resource type, name, pattern type) triples; [] when no resource was given."""
    from confluent_kafka.admin import ResourcePatternType, ResourceType
    ptype = ResourcePatternType[args.resource_pattern_type.upper()]
    if not filtering and ptype not in (ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED):
        raise UsageError(f"ACLs are added with a literal or prefixed pattern, not {args.resource_pattern_type}")
    named = ([(ResourceType.TOPIC, n) for n in args.topic] + [(ResourceType.GROUP, n) for n in args.group]
             + [(ResourceType.TRANSACTIONAL_ID, n) for n in args.transactional_id]
             + ([(ResourceType.BROKER, CLUSTER_NAME)] if args.cluster else []))
    return [(rtype, name, ptype) for rtype, name in named]


def _principals(args) -> list[tuple[str, object]]:
    from confluent_kafka.admin import AclPermissionType
    out = [(p, AclPermissionType.ALLOW) for p in args.allow_principal]
    out += [(p, AclPermissionType.DENY) for p in args.deny_principal]
    for p, _ in out:
        if ":" not in p:
            raise UsageError(f"a principal is TYPE:NAME (e.g. User:alice), got {p!r}")
    return out


def _row(acl) -> dict:
    rtype = acl.restype.name
    return {"principal": acl.principal, "host": acl.host, "operation": acl.operation.name,
            "permission": acl.permission_type.name,
            "resource_type": "CLUSTER" if rtype == "BROKER" else rtype,
            "name": acl.name, "pattern": acl.resource_pattern_type.name}


def _sorted(rows) -> list[dict]:
    unique = {tuple(r[c] for c in COLUMNS): r for r in rows}
    return [unique[k] for k in sorted(unique)]


def _what(f) -> str:
    kind = "cluster" if f.restype.name == "BROKER" else f.restype.name.lower().replace("_", " ")
    return f"{kind} {f.name}" if f.name and kind != "cluster" else ("the cluster" if kind == "cluster" else "any resource")


def cmd_list(args) -> int:
    from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType,
                                       ResourcePatternType, ResourceType)
    patterns = _patterns(args, True) or [(ResourceType.ANY, None,
                                          ResourcePatternType[args.resource_pattern_type.upper()]
                                          if args.resource_pattern_type != "literal" else ResourcePatternType.ANY)]
    filters = [AclBindingFilter(rtype, name, ptype, principal, None, AclOperation.ANY, AclPermissionType.ANY)
               for rtype, name, ptype in patterns for principal in (args.principal or [None])]
    conn = connect(args)
    a = conn.admin()
    rows = []
    for f in filters:
        acls = conn.wait(a.describe_acls(f, request_timeout=conn.timeout), f"list the ACLs of {_what(f)}", a)
        if not acls:
            _confirm_empty(conn, f)
        rows += [_row(acl) for acl in acls]
    emit(args, _sorted(rows), None, COLUMNS)
    return 0


def _confirm_empty(conn, f) -> None:
    """librdkafka 2.16 answers an empty list when DescribeAcls fails as a whole (e.g.
    SECURITY_DISABLED: no authorizer): ask once more over the project's codec to see the
    error. The enums' numbers are Kafka's on both sides."""
    from kbroker.tools.errors import broker_error_sentence
    from kbroker.tools.wire_client import WireSession
    from kbroker.wire import messages
    with WireSession(conn.bootstrap, conn.props, conn.timeout) as ws:
        r = ws.any().call(29, "DescribeAcls", messages.DescribeAclsRequest(
            resource_type_filter=int(f.restype.value), resource_name_filter=f.name,
            pattern_type_filter=int(f.resource_pattern_type.value), principal_filter=f.principal,
            host_filter=f.host, operation=int(f.operation.value), permission_type=int(f.permission_type.value)))
    if r.error_code:
        raise CommandError(broker_error_sentence(r.error_code, f"list the ACLs of {_what(f)}", r.error_message))


def cmd_add(args) -> int:
    from confluent_kafka.admin import AclBinding
    principals = _principals(args)
    patterns = _patterns(args, False)
    if not principals:
        raise UsageError("add needs --allow-principal or --deny-principal")
    if not patterns:
        raise UsageError("add needs a resource: --topic, --group, --transactional-id or --cluster")
    ops = [_operation(o) for o in args.operation or ["All"]]
    acls = [AclBinding(rtype, name, ptype, principal, host, op, perm) for rtype, name, ptype in patterns
            for principal, perm in principals for op in ops for host in args.host or ["*"]]
    conn = connect(args)
    a = conn.admin()
    got = conn.wait_all(a.create_acls(acls, request_timeout=conn.timeout),
                        lambda b: f"cannot add the ACL of {b.principal} on {_what(b)}", a)
    for binding, err in got.items():
        if err is not None and hasattr(err, "code"):
            raise conn.fail(err, f"cannot add the ACL of {binding.principal} on {_what(binding)}")
    emit(args, _sorted(_row(acl) for acl in acls), None, COLUMNS)
    return 0


def cmd_remove(args) -> int:
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType
    patterns = _patterns(args, True)
    if not patterns:
        raise UsageError("remove needs a resource: --topic, --group, --transactional-id or --cluster")
    principals = _principals(args)
    ops = [_operation(o) for o in args.operation] or [AclOperation.ANY]
    if principals:
        filters = [AclBindingFilter(rtype, name, ptype, principal, host, op, perm)
                   for rtype, name, ptype in patterns for principal, perm in principals
                   for op in ops for host in args.host or ["*"]]
    else:
        filters = [AclBindingFilter(rtype, name, ptype, None, host, op, AclPermissionType.ANY)
                   for rtype, name, ptype in patterns for op in ops for host in args.host or [None]]
    conn = connect(args)
    a = conn.admin()
    got = conn.wait_all(a.delete_acls(filters, request_timeout=conn.timeout),
                        lambda f: f"cannot remove the ACLs of {_what(f)}", a)
    rows = []
    for f, matched in got.items():
        if hasattr(matched, "code"):
            raise conn.fail(matched, f"cannot remove the ACLs of {_what(f)}")
        rows += [_row(acl) for acl in matched]
    emit(args, _sorted(rows), None, COLUMNS)
    return 0
