"""``kbroker groups``: list, describe with lag, reset offsets, delete (``kafka-consumer-groups.sh``).

    kbroker groups list
    kbroker groups describe GROUP ... [--members]   committed offset, log end offset, lag, member
                                                (--members: each member and its partitions)
    kbroker groups reset-offsets GROUP (--topic T[:P,P...] ... | --all-topics)
            (--to-earliest | --to-latest | --to-offset N | --to-datetime TIME | --shift-by N)
            [--execute]
    kbroker groups delete GROUP ...

``reset-offsets`` follows ``kafka-consumer-groups --reset-offsets`` (ConsumerGroupCommand's
``resetOffsets``): it prints the plan and changes nothing unless ``--execute``; it plans nothing
unless the group is inactive (state Empty or Dead: a member's next commit would overwrite the
new offsets), also for a dry run; ``--shift-by`` moves each partition's committed offset and
refuses a partition without one; every target is clamped to the partition's [log start, log
end] at the time of the plan (records deleted by retention move the log start). A member that
joins between the plan and ``--execute`` makes the broker refuse the commit (UNKNOWN_MEMBER_ID).
``--all-topics`` means the topics the group has committed offsets for.
"""
from __future__ import annotations

from kbroker.tools.common import CommandError, admin, check_error, emit, parse_time_ms

DESCRIBE_COLUMNS = ["group", "topic", "partition", "current_offset", "log_end_offset", "lag",
                    "consumer_id", "host", "client_id"]


def add_parser(sub, parent) -> None:
    p = sub.add_parser("groups", help="consumer groups: list, describe (lag), reset-offsets, delete")
    gsub = p.add_subparsers(dest="action", required=True)

    s = gsub.add_parser("list", parents=[parent], help="group ids, states and types")
    s.set_defaults(func=cmd_list)

    s = gsub.add_parser("describe", parents=[parent], help="offsets, lag and members")
    s.add_argument("groups", nargs="+", metavar="GROUP")
    s.add_argument("--members", action="store_true", help="list the members and their partitions")
    s.set_defaults(func=cmd_describe)

    s = gsub.add_parser("reset-offsets", parents=[parent], help="move committed offsets (dry run by default)")
    s.add_argument("group")
    which = s.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", "-t", action="append", metavar="TOPIC[:P,P...]")
    which.add_argument("--all-topics", action="store_true")
    to = s.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N")
    to.add_argument("--to-datetime", metavar="TIME", help="ISO-8601 (UTC unless a zone is given) or ms")
    to.add_argument("--shift-by", type=int, metavar="N")
    s.add_argument("--execute", action="store_true", help="apply the plan (default: dry run)")
    s.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    s.set_defaults(func=cmd_reset)

    s = gsub.add_parser("delete", parents=[parent], help="delete groups (must be empty)")
    s.add_argument("groups", nargs="+", metavar="GROUP")
    s.set_defaults(func=cmd_delete)


def cmd_list(args) -> int:
    a = admin(args)
    try:
        groups = a.list_groups()
    finally:
        a.close()
    rows = sorted(({"group": g["group_id"], "state": g.get("group_state"), "type": g.get("group_type"),
                    "protocol_type": g.get("protocol_type")} for g in groups), key=lambda r: r["group"])
    emit(args, rows, None, ["group", "state", "type", "protocol_type"])
    return 0


def _member_partitions(member) -> list[tuple[str, int]]:
    assignment = member.get("member_assignment")
    if not assignment:
        return []
    if hasattr(assignment, "assigned_partitions"):
        assignment = assignment.assigned_partitions
    elif isinstance(assignment, dict):
        assignment = assignment.get("assigned_partitions", [])
    out = []
    for tp in assignment or ():
        topic = getattr(tp, "topic", None) or (tp.get("topic") if isinstance(tp, dict) else None)
        parts = getattr(tp, "partitions", None)
        if parts is None and isinstance(tp, dict):
            parts = tp.get("partitions", [])
        for p in parts or ():
            out.append((topic, p))
    return out


def describe_group(a, group: str) -> dict:
    from kafka.admin import OffsetSpec
    desc = a.describe_groups([group])[group]
    if desc.get("error"):
        raise CommandError(f"group {group}: {desc['error']}")
    committed = a.list_group_offsets({group: None}).get(group, {})
    owners = {}
    for m in desc.get("members", []):
        for tp in _member_partitions(m):
            owners[tp] = m
    tps = set(committed) | {_tp(t, p) for t, p in owners}
    ends = a.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps}) if tps else {}
    rows = []
    for tp in sorted(tps, key=lambda tp: (tp.topic, tp.partition)):
        c = committed.get(tp)
        current = c.offset if c is not None and c.offset >= 0 else None
        end = ends[tp].offset if tp in ends else None
        m = owners.get((tp.topic, tp.partition), {})
        rows.append({"group": group, "topic": tp.topic, "partition": tp.partition,
                     "current_offset": current, "log_end_offset": end,
                     "lag": (end - current) if current is not None and end is not None else None,
                     "consumer_id": m.get("member_id"), "host": m.get("client_host"),
                     "client_id": m.get("client_id")})
    members = [{"group": group, "consumer_id": m.get("member_id"), "host": m.get("client_host"),
                "client_id": m.get("client_id"),
                "assignment": [f"{t}-{p}" for t, p in sorted(_member_partitions(m))]}
               for m in desc.get("members", [])]
    return {"group": group, "state": desc.get("group_state"), "protocol_type": desc.get("protocol_type"),
            "protocol": desc.get("protocol_data"), "members": len(members), "member_list": members,
            "offsets": rows}


def _tp(topic, partition):
    from kafka import TopicPartition
    return TopicPartition(topic, partition)


def cmd_describe(args) -> int:
    a = admin(args)
    try:
        described = [describe_group(a, g) for g in args.groups]
    finally:
        a.close()
    if args.json:
        emit(args, described)
        return 0
    for i, d in enumerate(described):
        if i:
            print()
        note = "" if d["members"] else f" (consumer group '{d['group']}' has no active members)"
        print(f"Group: {d['group']}  State: {d['state']}  Members: {d['members']}{note}")
        if args.members:
            emit(args, None, d["member_list"], ["group", "consumer_id", "host", "client_id", "assignment"])
        else:
            emit(args, None, d["offsets"], DESCRIBE_COLUMNS)
    return 0


def _selected_partitions(a, args, committed) -> list:
    from kafka import TopicPartition
    if args.all_topics:
        tps = sorted(committed, key=lambda tp: (tp.topic, tp.partition))
        if not tps:
            raise CommandError(f"group {args.group} has no committed offsets; name --topic")
        return tps
    out = []
    for spec in args.topic:
        topic, _, parts = spec.partition(":")
        if parts:
            try:
                out += [TopicPartition(topic, int(p)) for p in parts.split(",")]
            except ValueError:
                raise CommandError(f"--topic expects TOPIC or TOPIC:P,P..., got {spec!r}") from None
            continue
        described = a.describe_topics([topic])[0]
        if described["error_code"]:
            raise CommandError(f"topic {topic}: not found")
        out += [TopicPartition(topic, p["partition_index"]) for p in described["partitions"]]
    return sorted(set(out), key=lambda tp: (tp.topic, tp.partition))


def check_inactive(a, group: str) -> None:
    """CommandError unless ``group`` is Empty or Dead (or unknown), as Kafka's tool requires."""
    desc = a.describe_groups([group])[group]
    if desc.get("error"):
        # not a classic group (or none): as Kafka's tool, go on; a coordinator refuses an
        # admin commit to a group that has members, whatever its protocol
        if "GroupIdNotFound" in desc["error"]:
            return
        raise CommandError(f"group {group}: {desc['error']}")
    state = desc.get("group_state")
    if state not in ("Empty", "Dead"):
        raise CommandError(f"Assignments can only be reset if the group '{group}' is inactive, "
                           f"but the current state is {state}.")


def plan_reset(a, args) -> tuple[list[dict], dict]:
    from kafka.admin import OffsetSpec, OffsetTimestamp
    check_inactive(a, args.group)
    committed = a.list_group_offsets({args.group: None}).get(args.group, {})
    tps = _selected_partitions(a, args, committed)
    earliest = a.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in tps})
    latest = a.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps})
    by_time = {}
    if args.to_datetime is not None:
        ts = parse_time_ms(args.to_datetime)
        by_time = a.list_partition_offsets({tp: OffsetTimestamp(ts) for tp in tps})
    targets, rows = {}, []
    for tp in tps:
        lo, hi = earliest[tp].offset, latest[tp].offset
        current = committed[tp].offset if tp in committed and committed[tp].offset >= 0 else None
        if args.to_earliest:
            target = lo
        elif args.to_latest:
            target = hi
        elif args.to_offset is not None:
            target = args.to_offset
        elif args.to_datetime is not None:
            found = by_time.get(tp)
            target = found.offset if found is not None and found.offset >= 0 else hi
        else:   # shift-by: from the committed offset, never from a guess
            if current is None:
                raise CommandError(f"cannot shift the offset of {tp.topic}-{tp.partition}: "
                                   f"group {args.group} has no committed offset there")
            target = current + args.shift_by
        target = min(max(target, lo), hi)
        targets[tp] = target
        rows.append({"group": args.group, "topic": tp.topic, "partition": tp.partition,
                     "current_offset": current, "new_offset": target})
    return rows, targets


def cmd_reset(args) -> int:
    from kafka.structs import OffsetAndMetadata
    a = admin(args)
    try:
        rows, targets = plan_reset(a, args)
        if args.execute:
            result = a.alter_group_offsets(args.group, {tp: OffsetAndMetadata(o, "", -1)
                                                        for tp, o in targets.items()})
            for tp, err in result.items():
                check_error(err, f"reset {args.group} {tp.topic}-{tp.partition}")
    finally:
        a.close()
    if args.json:
        emit(args, {"executed": bool(args.execute), "offsets": rows})
        return 0
    emit(args, None, rows, ["group", "topic", "partition", "current_offset", "new_offset"])
    if not args.execute:
        print("\nDry run: nothing changed; add --execute to apply.")
    return 0


def cmd_delete(args) -> int:
    a = admin(args)
    try:
        result = a.delete_groups(args.groups)
    finally:
        a.close()
    for group, err in result.items():
        check_error(err, f"delete group {group}")
    if args.json:
        emit(args, {"deleted": sorted(result)})
    else:
        for group in sorted(result):
            print(f"Deleted consumer group '{group}'.")
    return 0
