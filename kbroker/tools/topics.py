"""``kbroker topics``: create, list, describe, alter-config, delete (as ``kafka-topics.sh``).

    kbroker topics list [--exclude-internal]
    kbroker topics create NAME [--partitions N] [--replication-factor N] [--config k=v ...]
                          [--if-not-exists]
    kbroker topics describe [NAME ...] [--exclude-internal]
    kbroker topics alter-config NAME [--set k=v ...] [--delete k ...]
    kbroker topics add-partitions NAME --partitions N     (N: the new total, as kafka-topics --alter)
    kbroker topics delete NAME ... [--if-exists]

As ``kafka-topics.sh``, listing and describing every topic includes the internal ones
(``__consumer_offsets``, ``__transaction_state``) unless ``--exclude-internal``. ``create`` waits until every partition has a leader, so a produce right after it never races
an auto-creation; ``add-partitions`` until the broker's metadata lists the new partitions with
leaders (Kafka's broker shows them once it has replayed the controller's records, a little after
CreatePartitions is answered). ``--partitions``/``--replication-factor`` default to the broker's
``num.partitions``/``default.replication.factor`` (-1 on the wire, KIP-464). ``describe``
prints each partition's leader, replicas, ISR, eligible leader replicas and last-known ELR
(KIP-966: DescribeTopicPartitions, as kafka-topics; ``N/A`` from a broker without it) and
offline replicas.
"""
from __future__ import annotations

import time

from kbroker.tools.common import CommandError, UsageError, connect, emit, key_values


def add_parser(sub, parent) -> None:
    p = sub.add_parser("topics", help="create, list, describe, alter and delete topics")
    tsub = p.add_subparsers(dest="action", required=True)

    s = tsub.add_parser("list", parents=[parent], help="topic names")
    s.add_argument("--exclude-internal", action="store_true", help="leave out internal topics")
    s.set_defaults(func=cmd_list)

    s = tsub.add_parser("create", parents=[parent], help="create a topic")
    s.add_argument("name")
    s.add_argument("--partitions", "-p", type=int, default=-1)
    s.add_argument("--replication-factor", "-r", type=int, default=-1)
    s.add_argument("--config", "-c", action="append", default=[], metavar="KEY=VALUE")
    s.add_argument("--if-not-exists", action="store_true")
    s.set_defaults(func=cmd_create)

    s = tsub.add_parser("describe", parents=[parent], help="partitions, leaders, replicas, ISR")
    s.add_argument("names", nargs="*", metavar="NAME", help="default: every topic")
    s.add_argument("--exclude-internal", action="store_true", help="leave out internal topics")
    s.set_defaults(func=cmd_describe)

    s = tsub.add_parser("alter-config", parents=[parent], help="set or delete topic configs")
    s.add_argument("name")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    s.add_argument("--delete", action="append", default=[], metavar="KEY")
    s.set_defaults(func=cmd_alter_config)

    s = tsub.add_parser("add-partitions", parents=[parent], help="raise a topic's partition count")
    s.add_argument("name")
    s.add_argument("--partitions", "-p", type=int, required=True, metavar="N", help="the new total")
    s.set_defaults(func=cmd_add_partitions)

    s = tsub.add_parser("delete", parents=[parent], help="delete topics")
    s.add_argument("names", nargs="+", metavar="NAME")
    s.add_argument("--if-exists", action="store_true")
    s.set_defaults(func=cmd_delete)


def cmd_list(args) -> int:
    conn = connect(args)
    a = conn.admin()
    md = conn.metadata(a)
    names = sorted(md.topics)
    if args.exclude_internal and names:
        internal = _internal(conn, a, names)
        names = [n for n in names if n not in internal]
    if args.json:
        emit(args, names)
    else:
        for n in names:
            print(n)
    return 0


def _internal(conn, a, names) -> set[str]:
    from confluent_kafka import TopicCollection
    described = conn.wait_all(a.describe_topics(TopicCollection(names)), lambda n: f"describe topic {n}", a)
    return {n for n, d in described.items() if getattr(d, "is_internal", False)}


def _wait_leaders(conn, a, topic: str, count: int | None) -> None:
    """Until the metadata lists ``topic`` with ``count`` partitions (any, when None), each with
    a leader: a produce right after the command then never races the topic's creation."""
    end = conn.deadline()
    while True:
        md = conn.metadata(a, topic)
        t = md.topics.get(topic)
        if t is not None and not t.error and t.partitions and (count is None or len(t.partitions) >= count) \
                and all(p.leader >= 0 for p in t.partitions.values()):
            return
        if time.monotonic() >= end:
            raise CommandError(f"topic {topic}: partitions without a leader after {conn.timeout:g} s "
                               "(--timeout)")
        time.sleep(0.1)


def cmd_create(args) -> int:
    from confluent_kafka.admin import NewTopic
    configs = key_values(args.config, "--config")
    conn = connect(args)
    a = conn.admin()
    fut = a.create_topics([NewTopic(args.name, num_partitions=args.partitions,
                                    replication_factor=args.replication_factor, config=configs)],
                          request_timeout=conn.timeout)[args.name]
    created = True
    result = conn.wait_all({args.name: fut}, f"cannot create topic {args.name}", a)[args.name]
    if result is not None and hasattr(result, "code"):
        if result.code() == 36 and args.if_not_exists:   # TOPIC_ALREADY_EXISTS
            created = False
        else:
            raise conn.fail(result, f"cannot create topic {args.name}")
    if created:
        _wait_leaders(conn, a, args.name, None)
    if args.json:
        emit(args, {"name": args.name, "created": created})
    else:
        print(f"Created topic {args.name}." if created else f"Topic {args.name} already exists.")
    return 0


def describe_rows(md_topics, elrs: dict | None = None) -> list[dict]:
    """One row per partition; ``elrs`` (DescribeTopicPartitions, KIP-966): (topic,
    partition) -> (eligible leader replicas, last known ELR), or None when the broker does
    not serve that API (``elr``/``last_known_elr`` None then: kafka-topics prints N/A)."""
    rows = []
    for t in md_topics:
        for p in sorted(t.partitions, key=lambda p: p.partition_index):
            elr, lke = (None, None) if elrs is None else elrs.get((t.name, p.partition_index), ([], []))
            rows.append({"topic": t.name, "partition": p.partition_index,
                         "leader": p.leader_id, "leader_epoch": p.leader_epoch,
                         "replicas": list(p.replica_nodes or ()), "isr": list(p.isr_nodes or ()),
                         "offline": list(p.offline_replicas or ()),
                         "elr": elr, "last_known_elr": lke})
    return rows


def _topic_id(value) -> str | None:
    import uuid
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        from kbroker.raft.control import uuid_to_kafka
        return uuid_to_kafka(value)
    return str(value)


def cmd_describe(args) -> int:
    """Metadata over the project's codec (librdkafka does not expose offline replicas), then
    the topics' configs with DescribeConfigs (confluent-kafka)."""
    from kbroker.tools.errors import broker_error_sentence
    from kbroker.tools.wire_client import WireSession
    conn = connect(args)
    with WireSession(conn.bootstrap, conn.props, conn.timeout) as ws:
        md = ws.metadata(list(dict.fromkeys(args.names)) if args.names else None)
        topics = [t for t in md.topics if not (args.exclude_internal and t.is_internal)]
        for t in topics:
            if t.error_code:
                raise CommandError(broker_error_sentence(t.error_code, f"topic {t.name}", props=conn.props))
        # ELR and last-known ELR (KIP-966) are DescribeTopicPartitions' only
        elrs = ws.partition_elrs(sorted(t.name for t in topics))
    topics.sort(key=lambda t: t.name)
    configs = {}
    if topics:
        from confluent_kafka.admin import ConfigResource, ResourceType
        a = conn.admin()
        futures = a.describe_configs([ConfigResource(ResourceType.TOPIC, t.name) for t in topics],
                                     request_timeout=conn.timeout)
        got = conn.wait_all(futures, lambda r: f"describe the configs of topic {r.name}", a)
        for res, entries in got.items():
            if hasattr(entries, "code"):
                raise conn.fail(entries, f"describe the configs of topic {res.name}")
            configs[res.name] = {k: e.value for k, e in entries.items()
                                 if not e.is_default}
    if args.json:
        emit(args, [{"name": t.name, "topic_id": _topic_id(t.topic_id), "internal": bool(t.is_internal),
                     "partitions": [{k: v for k, v in r.items() if k != "topic"}
                                    for r in describe_rows([t], elrs)],
                     "configs": configs.get(t.name, {})} for t in topics])
        return 0
    for t in topics:
        cfg = ",".join(f"{k}={v}" for k, v in sorted(configs.get(t.name, {}).items()))
        rf = len(t.partitions[0].replica_nodes) if t.partitions else 0
        print(f"Topic: {t.name}  TopicId: {_topic_id(t.topic_id)}  PartitionCount: {len(t.partitions)}  "
              f"ReplicationFactor: {rf}  Configs: {cfg}")
    print()
    # offline replicas as the broker answers them (its broker fenced, gone or without this
    # listener, or its log dir offline); an empty list is "-", so that no cell is blank
    # ELR columns as kafka-topics prints them: the lists, or N/A without DescribeTopicPartitions
    rows = [dict(r, elr="N/A" if r["elr"] is None else r["elr"],
                 last_known_elr="N/A" if r["last_known_elr"] is None else r["last_known_elr"])
            for r in describe_rows(topics, elrs)]
    emit(args, None, rows, ["topic", "partition", "leader", "replicas", "isr", "elr",
                            "last_known_elr", "offline"])
    return 0


def cmd_alter_config(args) -> int:
    changes = key_values(args.set, "--set")
    if not changes and not args.delete:
        raise UsageError("nothing to change: give --set KEY=VALUE or --delete KEY")
    alter(args, "topic", args.name, changes, args.delete)
    return 0


def alter(args, kind: str, name: str, sets: dict, deletes: list) -> None:
    """IncrementalAlterConfigs (KIP-339) of one resource; prints what changed."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    rtype = {"topic": ResourceType.TOPIC, "broker": ResourceType.BROKER, "group": ResourceType.GROUP}[kind]
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in sets.items()]
    entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in deletes]
    what = f"{kind} {name}" if name else "the broker default"
    conn = connect(args)
    a = conn.admin()
    res = ConfigResource(rtype, name, incremental_configs=entries)
    futures = a.incremental_alter_configs([res], request_timeout=conn.timeout)
    [got] = conn.wait_all(futures, f"cannot alter the configs of {what}", a).values()
    if hasattr(got, "code"):
        raise conn.fail(got, f"cannot alter the configs of {what}")
    if args.json:
        emit(args, {"resource": what, "set": sets, "deleted": list(deletes)})
    else:
        print(f"Completed updating config for {what}.")


def cmd_add_partitions(args) -> int:
    from confluent_kafka.admin import NewPartitions
    conn = connect(args)
    a = conn.admin()
    futures = a.create_partitions([NewPartitions(args.name, args.partitions)], request_timeout=conn.timeout)
    [got] = conn.wait_all(futures, f"cannot add partitions to {args.name}", a).values()
    if got is not None and hasattr(got, "code"):
        raise conn.fail(got, f"cannot add partitions to {args.name}")
    _wait_leaders(conn, a, args.name, args.partitions)
    if args.json:
        emit(args, {"name": args.name, "partitions": args.partitions})
    else:
        print(f"Topic {args.name} has {args.partitions} partitions.")
    return 0


def cmd_delete(args) -> int:
    conn = connect(args)
    a = conn.admin()
    names = list(dict.fromkeys(args.names))
    got = conn.wait_all(a.delete_topics(names, request_timeout=conn.timeout),
                        lambda n: f"cannot delete topic {n}", a)
    deleted = []
    for name in names:
        err = got[name]
        if err is not None and hasattr(err, "code"):
            if err.code() == 3 and args.if_exists:   # UNKNOWN_TOPIC_OR_PARTITION
                continue
            raise conn.fail(err, f"cannot delete topic {name}")
        deleted.append(name)
    if args.json:
        emit(args, {"deleted": deleted})
    else:
        for name in deleted:
            print(f"Deleted topic {name}.")
    return 0
