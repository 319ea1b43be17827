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
(``authorizer.class.name``); without one it answers SECURITY_DISABLED.
"""
from __future__ import annotations

from kbroker.tools.common import CommandError, admin, emit

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
    from kafka.admin import ACLOperation
    wanted = name.replace("_", "").replace("-", "").upper()
    for op in ACLOperation:
        if op.name.replace("_", "") == wanted and op not in (ACLOperation.UNKNOWN, ACLOperation.ANY):
            return op
    raise CommandError(f"unknown operation {name!r}")


def _patterns(args, filtering: bool) -> list:
    """(resource type, name) pairs as ResourcePattern(Filter)s; [] when none was given."""
    from kafka.admin import ACLResourcePatternType, ResourcePattern, ResourcePatternFilter, ResourceType
    ptype = ACLResourcePatternType[args.resource_pattern_type.upper()]
    if not filtering and ptype not in (ACLResourcePatternType.LITERAL, ACLResourcePatternType.PREFIXED):
        raise CommandError(f"ACLs are added with a literal or prefixed pattern, not {args.resource_pattern_type}")
    named = ([(ResourceType.TOPIC, n) for n in args.topic] + [(ResourceType.GROUP, n) for n in args.group]
             + [(ResourceType.TRANSACTIONAL_ID, n) for n in args.transactional_id]
             + ([(ResourceType.CLUSTER, CLUSTER_NAME)] if args.cluster else []))
    cls = ResourcePatternFilter if filtering else ResourcePattern
    return [cls(rtype, name, ptype) for rtype, name in named]


def _principals(args) -> list[tuple[str, object]]:
    from kafka.admin import ACLPermissionType
    out = [(p, ACLPermissionType.ALLOW) for p in args.allow_principal]
    out += [(p, ACLPermissionType.DENY) for p in args.deny_principal]
    for p, _ in out:
        if ":" not in p:
            raise CommandError(f"a principal is TYPE:NAME (e.g. User:alice), got {p!r}")
    return out


def _row(acl) -> dict:
    p = acl.resource_pattern
    return {"principal": acl.principal, "host": acl.host, "operation": acl.operation.name,
            "permission": acl.permission_type.name, "resource_type": p.resource_type.name,
            "name": p.resource_name, "pattern": p.pattern_type.name}


def _sorted(rows) -> list[dict]:
    unique = {tuple(r[c] for c in COLUMNS): r for r in rows}
    return [unique[k] for k in sorted(unique)]


def cmd_list(args) -> int:
    from kafka.admin import (ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             ResourcePatternFilter, ResourceType)
    from kafka.errors import KafkaError
    patterns = _patterns(args, True) or [ResourcePatternFilter(
        ResourceType.ANY, None, ACLResourcePatternType[args.resource_pattern_type.upper()]
        if args.resource_pattern_type != "literal" else ACLResourcePatternType.ANY)]
    filters = [ACLFilter(principal, None, ACLOperation.ANY, ACLPermissionType.ANY, pattern)
               for pattern in patterns for principal in (args.principal or [None])]
    a = admin(args)
    rows = []
    try:
        for f in filters:
            acls, _ = a.describe_acls(f)
            rows += [_row(acl) for acl in acls]
    except KafkaError as e:
        raise CommandError(f"describe ACLs: {type(e).__name__}: {e}") from None
    finally:
        a.close()
    emit(args, _sorted(rows), None, COLUMNS)
    return 0


def cmd_add(args) -> int:
    from kafka.admin import ACL
    from kafka.errors import KafkaError
    principals = _principals(args)
    patterns = _patterns(args, False)
    if not principals:
        raise CommandError("add needs --allow-principal or --deny-principal")
    if not patterns:
        raise CommandError("add needs a resource: --topic, --group, --transactional-id or --cluster")
    ops = [_operation(o) for o in args.operation or ["All"]]
    acls = [ACL(principal, host, op, perm, pattern) for pattern in patterns
            for principal, perm in principals for op in ops for host in args.host or ["*"]]
    a = admin(args)
    try:
        result = a.create_acls(acls)
    except KafkaError as e:
        raise CommandError(f"create ACLs: {type(e).__name__}: {e}") from None
    finally:
        a.close()
    if result["failed"]:
        errors = sorted({getattr(e, "__name__", str(e)) for e in result["failed"]})
        raise CommandError(f"{len(result['failed'])} of {len(acls)} ACLs not created: {', '.join(errors)}")
    emit(args, _sorted(_row(acl) for acl in acls), None, COLUMNS)
    return 0


def cmd_remove(args) -> int:
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType
    from kafka.errors import KafkaError, NoError
    patterns = _patterns(args, True)
    if not patterns:
        raise CommandError("remove needs a resource: --topic, --group, --transactional-id or --cluster")
    principals = _principals(args)
    ops = [_operation(o) for o in args.operation] or [ACLOperation.ANY]
    if principals:
        filters = [ACLFilter(principal, host, op, perm, pattern) for pattern in patterns
                   for principal, perm in principals for op in ops for host in args.host or ["*"]]
    else:
        filters = [ACLFilter(None, host, op, ACLPermissionType.ANY, pattern) for pattern in patterns
                   for op in ops for host in args.host or [None]]
    a = admin(args)
    try:
        results = a.delete_acls(filters)
    except KafkaError as e:
        raise CommandError(f"delete ACLs: {type(e).__name__}: {e}") from None
    finally:
        a.close()
    rows = []
    for _, matched, error in results:
        if error is not NoError and not isinstance(error, NoError):
            raise CommandError(f"delete ACLs: {getattr(error, '__name__', error)}")
        rows += [_row(acl) for acl in matched]
    emit(args, _sorted(rows), None, COLUMNS)
    return 0
