"""``kbroker groups``: every group type — list, describe with lag, reset offsets, delete
(``kafka-consumer-groups``, ``kafka-share-groups``, ``kafka-streams-groups``, ``kafka-groups``).

    kbroker groups list [--type classic|consumer|share|streams ...]
    kbroker groups describe GROUP ... [--members | --topology]
            offsets: committed offset, log end offset, lag and the member owning each partition
            (a share group: its start offset and lag per partition, and its dead-letter
            topic, KIP-1191, in the header); --members: each member
            with its epoch, current assignment and (KIP-848) target assignment, or (streams)
            its active/standby/warm-up tasks; --topology: a streams group's subtopologies
    kbroker groups reset-offsets GROUP (--topic T[:P,P...] ... | --all-topics)
            (--to-earliest | --to-latest | --to-offset N | --to-datetime TIME | --shift-by N)
            [--execute]
    kbroker groups delete GROUP ...

Group metadata (type, state, epochs, members, assignments, topology, share start offsets) is
read at the group's coordinator over the project's codec (``kbroker.tools.group_reads``: what
confluent-kafka cannot describe); committed offsets, log end offsets, resets of committed
offsets and deletes are confluent-kafka's AdminClient (OffsetFetch, ListOffsets,
OffsetCommit, DeleteGroups).

``reset-offsets`` follows ``kafka-consumer-groups --reset-offsets`` (ConsumerGroupCommand's
``resetOffsets``; ``kafka-share-groups``/``kafka-streams-groups`` do the same for their types):
it prints the plan and changes nothing unless ``--execute``; it plans nothing unless the group
is inactive (state Empty or Dead: a member's next commit would overwrite the new offsets), also
for a dry run; ``--shift-by`` moves each partition's committed offset and refuses a partition
without one; every target is clamped to the partition's [log start, log end] at the time of
the plan. A share group's start offsets are moved with AlterShareGroupOffsets. ``--all-topics``
means the topics the group has offsets for.

A share group's records in flight are not shown here: no Kafka API answers them (Kafka has
them as the partition leader's ``SharePartitionMetrics`` only; ``kafka-share-groups`` shows
start offset and lag, as this command); kbroker's console and ``/metrics`` show them.
"""
from __future__ import annotations

from kbroker.tools.common import CommandError, UsageError, connect, emit, parse_time_ms

TYPES = ("classic", "consumer", "share", "streams")
DESCRIBE_COLUMNS = ["group", "topic", "partition", "current_offset", "log_end_offset", "lag",
                    "consumer_id", "host", "client_id"]
SHARE_COLUMNS = ["group", "topic", "partition", "start_offset", "lag"]


def add_parser(sub, parent) -> None:
    p = sub.add_parser("groups", help="groups of every type: list, describe (lag), reset-offsets, delete")
    gsub = p.add_subparsers(dest="action", required=True)

    s = gsub.add_parser("list", parents=[parent], help="group ids, types and states")
    s.add_argument("--type", action="append", choices=TYPES, type=str.lower, help="only these types")
    s.set_defaults(func=cmd_list)

    s = gsub.add_parser("describe", parents=[parent], help="offsets, lag, members, topology")
    s.add_argument("groups", nargs="+", metavar="GROUP")
    which = s.add_mutually_exclusive_group()
    which.add_argument("--members", action="store_true", help="the members and their assignments")
    which.add_argument("--topology", action="store_true", help="a streams group's subtopologies")
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

    s = gsub.add_parser("delete", parents=[parent], help="delete groups (they must be empty)")
    s.add_argument("groups", nargs="+", metavar="GROUP")
    s.set_defaults(func=cmd_delete)


def _session(conn):
    from kbroker.tools.wire_client import WireSession
    return WireSession(conn.bootstrap, conn.props, conn.timeout)


def cmd_list(args) -> int:
    from kbroker.tools import group_reads
    conn = connect(args)
    with _session(conn) as ws:
        rows = group_reads.list_groups(ws)
    if args.type:
        rows = [r for r in rows if r["type"] in args.type]
    emit(args, [{k: v for k, v in r.items() if k != "coordinator"} for r in rows], None,
         ["group", "type", "state", "protocol_type"])
    return 0


def _committed(conn, a, group: str) -> dict[tuple[str, int], int | None]:
    from confluent_kafka import ConsumerGroupTopicPartitions
    fut = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                        request_timeout=conn.timeout)[group]
    result = conn.wait_all({group: fut}, f"read the committed offsets of group {group}", a)[group]
    if hasattr(result, "code"):
        if result.code() == 69:     # GROUP_ID_NOT_FOUND: no group, so no committed offsets
            return {}
        raise conn.fail(result, f"read the committed offsets of group {group}")
    out = {}
    for tp in result.topic_partitions or ():
        if tp.error is not None:
            raise conn.fail(tp.error, f"group {group} on {tp.topic}-{tp.partition}")
        out[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else None
    return out


def _log_offsets(conn, a, tps, spec) -> dict[tuple[str, int], int]:
    """ListOffsets for ``tps``: spec 'earliest', 'latest' or a timestamp (ms)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec
    if not tps:
        return {}
    s = (OffsetSpec.earliest() if spec == "earliest" else OffsetSpec.latest() if spec == "latest"
         else OffsetSpec.for_timestamp(int(spec)))
    futures = a.list_offsets({TopicPartition(t, p): s for t, p in tps}, request_timeout=conn.timeout)
    got = conn.wait_all(futures, lambda tp: f"read the offsets of {tp.topic}-{tp.partition}", a)
    out = {}
    for tp, r in got.items():
        if hasattr(r, "code"):
            raise conn.fail(r, f"read the offsets of {tp.topic}-{tp.partition}")
        out[(tp.topic, tp.partition)] = r.offset
    return out


def _dead_letter_topic(conn, a, group: str) -> str | None:
    """The share group's dead-letter topic (KIP-1191: GROUP config
    ``errors.deadletterqueue.topic.name``, DescribeConfigs), None when it names none or the
    broker has no such config (before Kafka 4.4)."""
    from confluent_kafka.admin import ConfigResource, ResourceType
    futures = a.describe_configs([ConfigResource(ResourceType.GROUP, group)], request_timeout=conn.timeout)
    got = conn.wait_all(futures, lambda r: f"describe the configs of group {group}", a)
    for _res, entries in got.items():
        if hasattr(entries, "code"):
            raise conn.fail(entries, f"describe the configs of group {group}")
        e = entries.get("errors.deadletterqueue.topic.name")
        return (e.value or None) if e is not None else None
    return None


def describe_group(conn, ws, a, group: str) -> dict:
    from kbroker.tools import group_reads
    d = group_reads.describe(ws, group)
    owners = {tp: m for m in d["member_list"] for tp in m.pop("_tps", [])}
    if d["type"] == "share":
        rows = [dict(r, group=group) for r in d.pop("share_offsets") or ()]
        if d["state"] == "Dead" and not rows:
            raise CommandError(f"group {group} does not exist")
        d.update(members=len(d["member_list"]), offsets=rows,
                 dead_letter_topic=_dead_letter_topic(conn, a, group))
        return d
    d.pop("share_offsets", None)
    committed = _committed(conn, a, group)
    if d["state"] == "Dead" and not committed and not d["member_list"]:
        raise CommandError(f"group {group} does not exist")
    tps = sorted(set(committed) | set(owners))
    ends = _log_offsets(conn, a, tps, "latest")
    rows = []
    for tp in tps:
        current, end = committed.get(tp), ends.get(tp)
        m = owners.get(tp, {})
        rows.append({"group": group, "topic": tp[0], "partition": tp[1], "current_offset": current,
                     "log_end_offset": end,
                     "lag": (end - current) if current is not None and end is not None else None,
                     "consumer_id": m.get("consumer_id"), "host": m.get("host"),
                     "client_id": m.get("client_id")})
    d.update(members=len(d["member_list"]), offsets=rows)
    return d


def cmd_describe(args) -> int:
    conn = connect(args)
    with _session(conn) as ws:
        a = conn.admin()
        described = [describe_group(conn, ws, a, g) for g in args.groups]
    if args.json:
        emit(args, described)
        return 0
    for i, d in enumerate(described):
        if i:
            print()
        note = "" if d["members"] else f" ({d['type']} group '{d['group']}' has no active members)"
        epochs = (f"  GroupEpoch: {d['group_epoch']}  AssignmentEpoch: {d['assignment_epoch']}"
                  if d.get("group_epoch") is not None else "")
        dlq = f"  DeadLetterTopic: {d['dead_letter_topic']}" if d.get("dead_letter_topic") else ""
        print(f"Group: {d['group']}  Type: {d['type']}  State: {d['state']}  "
              f"Members: {d['members']}{epochs}{dlq}{note}")
        if args.topology:
            if d["subtopologies"] is None:
                raise UsageError(f"--topology: group {d['group']} is a {d['type']} group, not a streams group")
            emit(args, None, d["subtopologies"], ["subtopology", "source_topics", "repartition_sink_topics",
                                                  "state_changelog_topics", "repartition_source_topics"])
        elif args.members:
            if d["type"] == "streams":
                cols = ["consumer_id", "host", "client_id", "member_epoch", "active_tasks",
                        "standby_tasks", "warmup_tasks"]
            elif d["type"] == "consumer":
                cols = ["consumer_id", "host", "client_id", "member_epoch", "assignment", "target_assignment"]
            elif d["type"] == "share":
                cols = ["consumer_id", "host", "client_id", "member_epoch", "assignment"]
            else:
                cols = ["consumer_id", "host", "client_id", "assignment"]
            emit(args, None, [dict(m, group=d["group"]) for m in d["member_list"]], ["group"] + cols)
        elif d["type"] == "share":
            emit(args, None, d["offsets"], SHARE_COLUMNS)
        else:
            emit(args, None, d["offsets"], DESCRIBE_COLUMNS)
    return 0


def _selected(conn, a, args, have) -> list[tuple[str, int]]:
    if args.all_topics:
        tps = sorted(have)
        if not tps:
            raise CommandError(f"group {args.group} has no committed offsets; name --topic")
        return tps
    out = []
    for spec in args.topic:
        topic, _, parts = spec.partition(":")
        if parts:
            try:
                out += [(topic, int(p)) for p in parts.split(",")]
            except ValueError:
                raise UsageError(f"--topic expects TOPIC or TOPIC:P,P..., got {spec!r}") from None
            continue
        md = conn.metadata(a, topic)
        t = md.topics.get(topic)
        if t is None or t.error is not None or not t.partitions:
            raise CommandError(f"topic {topic} does not exist")
        out += [(topic, p) for p in t.partitions]
    known: dict[str, set] = {}
    for topic, p in out:
        if topic not in known:
            t = conn.metadata(a, topic).topics.get(topic)
            known[topic] = set(t.partitions) if t is not None and t.error is None else set()
        if p not in known[topic]:
            raise CommandError(f"topic {topic} has no partition {p}")
    return sorted(set(out))


def plan_reset(conn, ws, a, args) -> tuple[list[dict], dict, str]:
    from kbroker.tools import group_reads
    kind, _ = group_reads.group_type(ws, args.group)
    if kind == "share":
        d = group_reads.describe(ws, args.group)
        have = {(r["topic"], r["partition"]): r["start_offset"] for r in d["share_offsets"] or ()}
        state = d["state"]
    else:
        have = _committed(conn, a, args.group)
        state = None
        if kind is not None:
            state = group_reads.describe(ws, args.group)["state"]
        kind = kind or "classic"    # offsets only, or nothing: what Kafka lists as classic
    if state not in (None, "Empty", "Dead"):
        raise CommandError(f"Assignments can only be reset if the group '{args.group}' is inactive, "
                           f"but the current state is {state}.")
    tps = _selected(conn, a, args, have)
    earliest = _log_offsets(conn, a, tps, "earliest")
    latest = _log_offsets(conn, a, tps, "latest")
    by_time = {}
    if args.to_datetime is not None:
        by_time = _log_offsets(conn, a, tps, parse_time_ms(args.to_datetime))
    targets, rows = {}, []
    for tp in tps:
        lo, hi = earliest[tp], latest[tp]
        current = have.get(tp)
        if args.to_earliest:
            target = lo
        elif args.to_latest:
            target = hi
        elif args.to_offset is not None:
            target = args.to_offset
        elif args.to_datetime is not None:
            found = by_time.get(tp)
            target = found if found is not None and found >= 0 else hi
        else:   # shift-by: from the committed offset, never from a guess
            if current is None:
                raise CommandError(f"cannot shift the offset of {tp[0]}-{tp[1]}: "
                                   f"group {args.group} has no committed offset there")
            target = current + args.shift_by
        target = min(max(target, lo), hi)
        targets[tp] = target
        rows.append({"group": args.group, "topic": tp[0], "partition": tp[1],
                     "current_offset": current, "new_offset": target})
    return rows, targets, kind


def cmd_reset(args) -> int:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from kbroker.tools import group_reads
    conn = connect(args)
    with _session(conn) as ws:
        a = conn.admin()
        rows, targets, kind = plan_reset(conn, ws, a, args)
        if args.execute and kind == "share":
            group_reads.alter_share_offsets(ws.coordinator(args.group), args.group, targets)
        elif args.execute:
            req = ConsumerGroupTopicPartitions(args.group, [TopicPartition(t, p, o) for (t, p), o in targets.items()])
            fut = a.alter_consumer_group_offsets([req], request_timeout=conn.timeout)[args.group]
            result = conn.wait(fut, f"reset the offsets of group {args.group}", a)
            for tp in result.topic_partitions or ():
                if tp.error is not None:
                    raise conn.fail(tp.error, f"reset group {args.group} on {tp.topic}-{tp.partition}")
    if args.json:
        emit(args, {"executed": bool(args.execute), "type": kind, "offsets": rows})
        return 0
    emit(args, None, rows, ["group", "topic", "partition", "current_offset", "new_offset"])
    if not args.execute:
        print("\nDry run: nothing changed; add --execute to apply.")
    return 0


def cmd_delete(args) -> int:
    """DeleteGroups, for every type (Kafka 4 deletes classic, consumer, share and streams
    groups with it; a group with members is refused: NON_EMPTY_GROUP)."""
    conn = connect(args)
    a = conn.admin()
    groups = list(dict.fromkeys(args.groups))
    got = conn.wait_all(a.delete_consumer_groups(groups, request_timeout=conn.timeout),
                        lambda g: f"cannot delete group {g}", a)
    for group in groups:
        err = got[group]
        if err is not None and hasattr(err, "code"):
            raise conn.fail(err, f"cannot delete group {group}")
    if args.json:
        emit(args, {"deleted": groups})
    else:
        for group in groups:
            print(f"Deleted group '{group}'.")
    return 0
