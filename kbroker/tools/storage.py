"""``kbroker storage``: Kafka's ``kafka-storage`` verbs for kbroker's data directories.

    kbroker storage random-uuid
    kbroker storage format -t CLUSTER_ID -c server.properties [--release-version V]
                           [--feature NAME=LEVEL ...] [--ignore-formatted]
                           [--standalone | --initial-controllers ID@HOST:PORT:DIRID,...
                            | --no-initial-controllers]
    kbroker storage info -c server.properties

The command line only: what the directories hold and how they are written is
``kbroker/metadata/storage_format.py``.
"""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # the CLI builds this parser for every command: keep its import cheap
    from kbroker.config.broker import BrokerConfig


def info(config: BrokerConfig, out=sys.stdout) -> int:
    from kbroker.config.broker import parse_properties
    from kbroker.metadata.storage_format import META_PROPERTIES, directories
    dirs, _ = directories(config)
    found, problems, metas = [], [], {}
    for d in dirs:
        p = d / META_PROPERTIES
        if not d.exists():
            problems.append(f"{d} does not exist")
        elif not p.exists():
            problems.append(f"{d} is not formatted.")
            found.append(d)
        else:
            found.append(d)
            try:
                metas[d] = parse_properties(p.read_text())
            except OSError as e:
                problems.append(f"{p}: {e.strerror}")
    print("Found log director" + ("y:" if len(found) == 1 else "ies:"), file=out)
    for d in found:
        print(f"  {d}", file=out)
    print("", file=out)
    distinct = {tuple(sorted((k, v) for k, v in m.items() if k != "directory.id")) for m in metas.values()}
    for d, m in list(metas.items())[:1]:
        print("Found metadata: {" + ", ".join(f"{k}={v}" for k, v in sorted(m.items())) + "}", file=out)
        print("", file=out)
    if len(distinct) > 1:
        problems.append("the log directories hold different cluster or node ids")
    if problems:
        print("Found problem" + ("s:" if len(problems) > 1 else ":"), file=out)
        for p in problems:
            print(f"  {p}", file=out)
        print("", file=out)
        return 1
    return 0


# ----------------------------------------------------------------------------- CLI

def add_parser(sub) -> None:
    s = sub.add_parser("storage", help="format or inspect data directories (Kafka's kafka-storage)")
    verbs = s.add_subparsers(dest="verb", required=True)
    verbs.add_parser("random-uuid", help="print a new cluster id")
    f = verbs.add_parser("format", help="write meta.properties and the bootstrap metadata")
    f.add_argument("--config", "-c", required=True, metavar="FILE")
    f.add_argument("--cluster-id", "-t", required=True)
    f.add_argument("--add-scram", "-S", action="append", default=[])
    f.add_argument("--ignore-formatted", "-g", action="store_true")
    f.add_argument("--release-version", "-r")
    f.add_argument("--feature", "-f", action="append", default=[])
    q = f.add_mutually_exclusive_group()
    q.add_argument("--standalone", "-s", action="store_true")
    q.add_argument("--no-initial-controllers", "-N", action="store_true")
    q.add_argument("--initial-controllers", "-I")
    i = verbs.add_parser("info", help="show what the data directories hold")
    i.add_argument("--config", "-c", required=True, metavar="FILE")


def main(args) -> int:
    from kbroker.config.broker import BrokerConfig, ConfigError
    from kbroker.metadata.storage_format import (StorageError, default_features, format_storage,
                                                 new_uuid, parse_initial_controllers)
    try:
        if args.verb == "random-uuid":
            print(new_uuid())
            return 0
        config = BrokerConfig.load(args.config)
        if args.verb == "info":
            return info(config)
        initial = parse_initial_controllers(args.initial_controllers) if args.initial_controllers else None
        from kbroker.security.bootstrap import ScramSpecError, parse_add_scram
        try:
            scram = [parse_add_scram(spec) for spec in args.add_scram]
        except (ScramSpecError, ValueError) as e:
            raise StorageError(f"--add-scram: {e}") from None
        features = default_features(args.release_version, args.feature)
        return format_storage(config, args.cluster_id, features,
                              ignore_formatted=args.ignore_formatted, scram=scram,
                              standalone=args.standalone, initial_controllers=initial,
                              no_initial_controllers=args.no_initial_controllers)
    except (StorageError, ConfigError) as e:
        print(str(e), file=sys.stderr)
        return 1
    except OSError as e:
        print(f"{getattr(e, 'filename', '') or ''}: {e.strerror or e}".lstrip(": "), file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    p = argparse.ArgumentParser(prog="kbroker")
    add_parser(p.add_subparsers(dest="command", required=True))
    sys.exit(main(p.parse_args()))
