"""``kbroker configs``: describe and alter configs of topics and brokers (``kafka-configs.sh``).

    kbroker configs describe (--topic T | --broker N) [--all]
    kbroker configs alter (--topic T | --broker N) [--set k=v ...] [--delete k ...]

``describe`` lists the keys not at their default (dynamic and static ones) and every key with
``--all``, with its value and source (DescribeConfigs' ``config_source``). ``alter`` uses
IncrementalAlterConfigs (KIP-339): ``--set`` is SET, ``--delete`` is DELETE (back to the
default). ``--broker-defaults`` addresses the cluster-wide broker default (``kafka-configs
--entity-default``, resource name ""); ``--group G`` a group's configs (KIP-848/KIP-932
group configs such as ``share.auto.offset.reset``).
"""
from __future__ import annotations

from kbroker.tools.common import UsageError, connect, emit, key_values

SOURCES = {0: "UNKNOWN_CONFIG", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
           3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
           6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}


def _target(p) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", metavar="NAME")
    which.add_argument("--broker", metavar="ID", type=int)
    which.add_argument("--broker-defaults", action="store_true",
                       help="the cluster-wide broker default (kafka-configs --entity-default)")
    which.add_argument("--group", metavar="GROUP")


def add_parser(sub, parent) -> None:
    p = sub.add_parser("configs", help="describe and alter topic, broker and group configs")
    csub = p.add_subparsers(dest="action", required=True)
    s = csub.add_parser("describe", parents=[parent], help="config values and their sources")
    _target(s)
    s.add_argument("--all", action="store_true", help="every key, defaults included")
    s.set_defaults(func=cmd_describe)
    s = csub.add_parser("alter", parents=[parent], help="set or delete config keys")
    _target(s)
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    s.add_argument("--delete", action="append", default=[], metavar="KEY")
    s.set_defaults(func=cmd_alter)


def _resource(args) -> tuple[str, str]:
    if args.topic is not None:
        return "topic", args.topic
    if args.group is not None:
        return "group", args.group
    if args.broker_defaults:
        return "broker", ""
    return "broker", str(args.broker)


def _source(entry) -> str:
    src = entry.source
    value = getattr(src, "value", src)
    return SOURCES.get(value, str(getattr(src, "name", src)))


def cmd_describe(args) -> int:
    from confluent_kafka.admin import ConfigResource, ResourceType
    kind, name = _resource(args)
    what = f"{kind} {name}" if name else "the broker default"
    conn = connect(args)
    a = conn.admin()
    rtype = {"topic": ResourceType.TOPIC, "broker": ResourceType.BROKER, "group": ResourceType.GROUP}[kind]
    futures = a.describe_configs([ConfigResource(rtype, name)], request_timeout=conn.timeout)
    [entries] = conn.wait_all(futures, f"cannot describe the configs of {what}", a).values()
    if hasattr(entries, "code"):
        raise conn.fail(entries, f"cannot describe the configs of {what}")
    rows = [{"name": k, "value": "<sensitive>" if e.is_sensitive else e.value,
             "source": _source(e), "read_only": e.is_read_only}
            for k, e in sorted(entries.items())
            if args.all or _source(e) != "DEFAULT_CONFIG"]
    emit(args, rows, None, ["name", "value", "source"])
    return 0


def cmd_alter(args) -> int:
    from kbroker.tools.topics import alter
    sets = key_values(args.set, "--set")
    if not sets and not args.delete:
        raise UsageError("nothing to change: give --set KEY=VALUE or --delete KEY")
    kind, name = _resource(args)
    alter(args, kind, name, sets, args.delete)
    return 0
