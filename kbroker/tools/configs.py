"""``kbroker configs``: describe and alter configs of topics and brokers (``kafka-configs.sh``).

    kbroker configs describe (--topic T | --broker N) [--all]
    kbroker configs alter (--topic T | --broker N) [--set k=v ...] [--delete k ...]

``describe`` lists the keys not at their default (dynamic and static ones) and every key with
``--all``, with its value and source (DescribeConfigs' ``config_source``). ``alter`` uses
IncrementalAlterConfigs (KIP-339): ``--set`` is SET, ``--delete`` is DELETE (back to the
default). Not here yet: the cluster-wide broker default (``kafka-configs --entity-default``,
resource name ""), which kafka-python's admin client refuses to address.
"""
from __future__ import annotations

from kbroker.tools.common import CommandError, admin, emit, key_values


def _target(p) -> None:
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", metavar="NAME")
    which.add_argument("--broker", metavar="ID", type=int)


def add_parser(sub, parent) -> None:
    p = sub.add_parser("configs", help="describe and alter topic and broker configs")
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


def resource(args, configs=None):
    from kafka.admin import ConfigResource, ConfigResourceType
    if args.topic is not None:
        return ConfigResource(ConfigResourceType.TOPIC, args.topic, configs), f"topic {args.topic}"
    return ConfigResource(ConfigResourceType.BROKER, str(args.broker), configs), f"broker {args.broker}"


def cmd_describe(args) -> int:
    from kafka.errors import KafkaError
    res, what = resource(args)
    a = admin(args)
    try:
        if args.topic is not None:   # DescribeConfigs' per-resource error is not surfaced by the client
            from kafka.errors import for_code
            code = a.describe_topics([args.topic])[0]["error_code"]
            if code:
                raise CommandError(f"topic {args.topic}: {for_code(code).__name__}")
        result = a.describe_configs([res], config_filter="all")
    except KafkaError as e:
        raise CommandError(f"describe configs of {what}: {e}") from None
    finally:
        a.close()
    entries = next(iter(next(iter(result.values())).values()), {}) if result else {}
    rows = [{"name": k, "value": "<sensitive>" if v.get("is_sensitive") else v.get("value"),
             "source": v.get("config_source"), "read_only": v.get("read_only")}
            for k, v in sorted(entries.items())
            if args.all or v.get("config_source") not in ("DEFAULT_CONFIG", 5)]
    emit(args, rows, None, ["name", "value", "source"])
    return 0


def cmd_alter(args) -> int:
    from kafka.admin import AlterConfigOp
    from kbroker.tools.topics import alter
    changes = {k: (AlterConfigOp.SET, v) for k, v in key_values(args.set, "--set").items()}
    changes.update({k: (AlterConfigOp.DELETE, None) for k in args.delete})
    if not changes:
        raise CommandError("nothing to change: give --set KEY=VALUE or --delete KEY")
    res, what = resource(args, changes)
    alter(args, res, what)
    return 0
