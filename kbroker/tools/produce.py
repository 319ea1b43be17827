"""``kbroker produce TOPIC``: records from stdin lines (or ``--value`` arguments).

    kbroker produce TOPIC [-K SEP] [-p PARTITION] [-H key=value ...] [--acks all|1|0]
                          [--compression-type none|gzip|snappy|lz4|zstd] [--timestamp MS]
                          [--value TEXT ...]

One record per input line (the newline removed). With ``-K SEP`` (kcat's key delimiter) the
text before the first SEP is the key and the rest the value; a line without SEP is a value
with a null key. ``-H`` adds a header to every record. Each record is acknowledged before
the command exits; ``--json`` prints one line per record with its partition and offset.
"""
from __future__ import annotations

import json
import sys

from kbroker.tools.common import CommandError, key_values, producer


def add_parser(sub, parent) -> None:
    p = sub.add_parser("produce", parents=[parent], help="produce records from stdin lines")
    p.add_argument("topic")
    p.add_argument("--key-separator", "-K", metavar="SEP", help="split each line into key SEP value")
    p.add_argument("--partition", "-p", type=int, help="default: the producer's partitioner")
    p.add_argument("--header", "-H", action="append", default=[], metavar="KEY=VALUE",
                   help="header added to every record (repeatable)")
    p.add_argument("--acks", default="all", choices=["all", "-1", "1", "0"])
    p.add_argument("--compression-type", "-z", default=None,
                   choices=["none", "gzip", "snappy", "lz4", "zstd"])
    p.add_argument("--timestamp", type=int, metavar="MS", help="record timestamp (default: now)")
    p.add_argument("--value", action="append", metavar="TEXT",
                   help="produce these values instead of reading stdin (repeatable)")
    p.set_defaults(func=cmd_produce)


def _lines(args):
    if args.value is not None:
        for v in args.value:
            yield v.encode()
        return
    for raw in sys.stdin.buffer:
        yield raw[:-1] if raw.endswith(b"\n") else raw


def cmd_produce(args) -> int:
    from kafka.errors import KafkaError
    headers = [(k, v.encode()) for k, v in key_values(args.header, "--header").items()]
    acks = {"all": "all", "-1": "all", "1": 1, "0": 0}[args.acks]
    settings = {"acks": acks}
    if args.compression_type and args.compression_type != "none":
        settings["compression_type"] = args.compression_type
    sep = args.key_separator.encode() if args.key_separator else None
    p = producer(args, **settings)
    futures = []
    try:
        for line in _lines(args):
            key = None
            if sep is not None and sep in line:
                key, line = line.split(sep, 1)
            futures.append(p.send(args.topic, value=line, key=key, partition=args.partition,
                                  headers=headers or None, timestamp_ms=args.timestamp))
        p.flush()
        results = []
        for f in futures:
            try:
                md = f.get(timeout=30)
            except KafkaError as e:
                raise CommandError(f"produce to {args.topic}: {e}") from None
            results.append({"topic": md.topic, "partition": md.partition, "offset": md.offset})
    finally:
        p.close(timeout=5)
    if args.json:
        for r in results:
            sys.stdout.write(json.dumps(r) + "\n")
    else:
        print(f"Produced {len(results)} record(s) to {args.topic}.", file=sys.stderr)
    return 0
