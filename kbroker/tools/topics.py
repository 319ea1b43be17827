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
``num.partitions``/``default.replication.factor`` (-1 on the wire, KIP-464).
"""
from __future__ import annotations

import time

from kbroker.tools.common import CommandError, admin, check_error, emit, key_values


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
    a = admin(args)
    try:
        names = sorted(t["name"] for t in a.describe_topics()
                       if not (args.exclude_internal and t.get("is_internal")))
    finally:
        a.close()
    if args.json:
        emit(args, names)
    else:
        for n in names:
            print(n)
    return 0


def cmd_create(args) -> int:
    from kafka.errors import TopicAlreadyExistsError
    configs = key_values(args.config, "--config")
    a = admin(args)
    try:
        spec = {args.name: {"num_partitions": args.partitions,
                            "replication_factor": args.replication_factor, "configs": configs}}
        result = a.create_topics(spec, raise_errors=False)
        topic = result["topics"][0]
        if topic["error_code"] == TopicAlreadyExistsError.errno and args.if_not_exists:
            created = False
        else:
            check_error(topic["error_code"], f"create topic {args.name}"
                        + (f" ({topic['error_message']})" if topic.get("error_message") else ""))
            created = True
            a.wait_for_topics([args.name], timeout_ms=30000)
    finally:
        a.close()
    out = {"name": args.name, "created": created,
           "partitions": topic.get("num_partitions"), "replication_factor": topic.get("replication_factor")}
    if args.json:
        emit(args, out)
    else:
        print(f"Created topic {args.name}." if created else f"Topic {args.name} already exists.")
    return 0


def describe_rows(topics) -> list[dict]:
    rows = []
    for t in topics:
        for p in sorted(t["partitions"], key=lambda p: p["partition_index"]):
            rows.append({"topic": t["name"], "partition": p["partition_index"],
                         "leader": p["leader_id"], "leader_epoch": p["leader_epoch"],
                         "replicas": p["replica_nodes"], "isr": p["isr_nodes"],
                         "offline": p.get("offline_replicas") or []})
    return rows


def cmd_describe(args) -> int:
    from kafka.admin import ConfigResource, ConfigResourceType
    from kafka.errors import for_code
    a = admin(args)
    try:
        topics = a.describe_topics(args.names or None)
        if args.exclude_internal:
            topics = [t for t in topics if not t.get("is_internal")]
        for t in topics:
            if t["error_code"]:
                raise CommandError(f"topic {t['name']}: {for_code(t['error_code']).__name__}")
        names = sorted(t["name"] for t in topics)
        configs = {}
        if names:
            described = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
            for name, entries in described.get("topic", {}).items():
                configs[name] = {k: v["value"] for k, v in entries.items()}
    finally:
        a.close()
    topics.sort(key=lambda t: t["name"])
    if args.json:
        emit(args, [{"name": t["name"], "topic_id": str(t.get("topic_id")), "internal": t.get("is_internal", False),
                     "partitions": [{k: v for k, v in r.items() if k != "topic"}
                                    for r in describe_rows([t])],
                     "configs": configs.get(t["name"], {})} for t in topics])
        return 0
    for t in topics:
        cfg = ",".join(f"{k}={v}" for k, v in sorted(configs.get(t["name"], {}).items()))
        print(f"Topic: {t['name']}  TopicId: {t.get('topic_id')}  PartitionCount: {len(t['partitions'])}  "
              f"ReplicationFactor: {len(t['partitions'][0]['replica_nodes']) if t['partitions'] else 0}  "
              f"Configs: {cfg}")
    print()
    # offline replicas as the broker answers them (its broker fenced, gone or without this
    # listener, or its log dir offline); an empty list is "-", so that no cell is blank
    rows = [dict(r, replicas=r["replicas"] or None, isr=r["isr"] or None,
                 offline=r["offline"] or None) for r in describe_rows(topics)]
    emit(args, None, rows, ["topic", "partition", "leader", "replicas", "isr", "offline"])
    return 0


def cmd_alter_config(args) -> int:
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType
    changes = {k: (AlterConfigOp.SET, v) for k, v in key_values(args.set, "--set").items()}
    changes.update({k: (AlterConfigOp.DELETE, None) for k in args.delete})
    if not changes:
        raise CommandError("nothing to change: give --set KEY=VALUE or --delete KEY")
    alter(args, ConfigResource(ConfigResourceType.TOPIC, args.name, changes), f"topic {args.name}")
    return 0


def alter(args, resource, what: str) -> None:
    """IncrementalAlterConfigs of one resource; prints what changed."""
    a = admin(args)
    try:
        result = a.alter_configs([resource], raise_on_unknown=False, incremental=True)
    finally:
        a.close()
    for per_name in result.values():
        for err in per_name.values():
            check_error(err, f"alter configs of {what}")
    summary = {k: (None if op_value[1] is None else op_value[1]) for k, op_value in resource.configs.items()}
    if args.json:
        emit(args, {"resource": what, "set": {k: v for k, v in summary.items() if v is not None},
                    "deleted": [k for k, v in summary.items() if v is None]})
    else:
        print(f"Completed updating config for {what}.")


def wait_for_partitions(a, topic: str, count: int, timeout_s: float = 30.0) -> None:
    """Until the metadata lists ``count`` partitions of ``topic``, each with a leader
    (kafka-python's ``wait_for_topics`` is satisfied by the partitions the topic already had)."""
    deadline = time.monotonic() + timeout_s
    while True:
        [t] = a.describe_topics([topic])
        if not t["error_code"] and len(t["partitions"]) >= count and all(
                p["leader_id"] >= 0 for p in t["partitions"]):
            return
        if time.monotonic() >= deadline:
            raise CommandError(f"topic {topic}: {count} partitions not in the metadata after {timeout_s:g} s")
        time.sleep(0.1)


def cmd_add_partitions(args) -> int:
    a = admin(args)
    try:
        result = a.create_partitions({args.name: args.partitions}, raise_errors=False)
        for r in result.results:
            check_error(r.error_code, f"add partitions to {args.name}"
                        + (f" ({r.error_message})" if r.error_message else ""))
        wait_for_partitions(a, args.name, args.partitions)
    finally:
        a.close()
    if args.json:
        emit(args, {"name": args.name, "partitions": args.partitions})
    else:
        print(f"Topic {args.name} has {args.partitions} partitions.")
    return 0


def cmd_delete(args) -> int:
    from kafka.errors import UnknownTopicOrPartitionError
    a = admin(args)
    try:
        result = a.delete_topics(args.names, raise_errors=False)
    finally:
        a.close()
    deleted = []
    for t in result.get("responses", result.get("topics", [])):
        name = t["name"]
        if t["error_code"] == UnknownTopicOrPartitionError.errno and args.if_exists:
            continue
        check_error(t["error_code"], f"delete topic {name}")
        deleted.append(name)
    if args.json:
        emit(args, {"deleted": deleted})
    else:
        for name in deleted:
            print(f"Deleted topic {name}.")
    return 0
