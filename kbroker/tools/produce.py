"""``kbroker produce TOPIC``: records from stdin lines (or ``--value`` arguments).

    kbroker produce TOPIC [-K SEP] [-p PARTITION] [-H key=value ...] [--acks all|1|0]
                          [--compression-type none|gzip|snappy|lz4|zstd] [--timestamp MS]
                          [--value TEXT ...]

One record per input line (the newline removed). With ``-K SEP`` (kcat's key delimiter) the
text before the first SEP is the key and the rest the value; a line without SEP is a value
with a null key. ``-H`` adds a header to every record. Each record is acknowledged before
the command exits; ``--json`` prints one line per record with its partition and offset.
A partition the topic does not have, or a topic that does not exist, is one sentence before
anything is sent (the metadata is read first).
"""
from __future__ import annotations

import json
import sys

from kbroker.tools.common import CommandError, connect, key_values


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


def check_partitions(conn, client, topic: str, partitions) -> list[int]:
    """The topic's partition ids; CommandError naming the topic or a missing partition."""
    md = conn.metadata(client, topic)
    t = md.topics.get(topic)
    if t is None or (t.error is not None and t.error.code() in (3, -188)) or not t.partitions:
        raise CommandError(f"topic {topic} does not exist")
    if t.error is not None and t.error.code() not in (0, 5):
        raise conn.fail(t.error, f"topic {topic}")
    have = sorted(t.partitions)
    for p in partitions or ():
        if p not in t.partitions:
            raise CommandError(f"topic {topic} has no partition {p} (it has {len(have)}: "
                               f"{have[0]}-{have[-1]})")
    return have


def cmd_produce(args) -> int:
    headers = [(k, v.encode()) for k, v in key_values(args.header, "--header").items()]
    # murmur2 places a keyed record where Kafka's Java producer (and its console producer) do
    settings = {"acks": {"all": "all", "-1": "all", "1": "1", "0": "0"}[args.acks],
                "partitioner": "murmur2_random",
                "message.timeout.ms": int(args.timeout * 1000)}
    if args.compression_type:
        settings["compression.type"] = args.compression_type
    sep = args.key_separator.encode() if args.key_separator else None
    conn = connect(args)
    p = conn.producer(**settings)
    check_partitions(conn, p, args.topic, [args.partition] if args.partition is not None else [])
    results: list = []
    failures: list = []

    def delivered(err, msg, index):
        if err is not None:
            failures.append(err)
        else:
            results.append((index, {"topic": msg.topic(), "partition": msg.partition(),
                                    "offset": msg.offset()}))

    for i, line in enumerate(_lines(args)):
        key = None
        if sep is not None and sep in line:
            key, line = line.split(sep, 1)
        kw = {"headers": headers} if headers else {}
        if args.partition is not None:
            kw["partition"] = args.partition
        if args.timestamp is not None:
            kw["timestamp"] = args.timestamp
        while True:
            try:
                p.produce(args.topic, value=line, key=key, on_delivery=lambda e, m, i=i: delivered(e, m, i), **kw)
                break
            except BufferError:   # the local queue is full: let deliveries drain it
                p.poll(0.1)
        p.poll(0)
        conn.check(f"produce to {args.topic}")
        if failures:
            break
    end = conn.deadline()
    import time
    while len(p) and not failures:
        p.flush(0.1)
        conn.check(f"produce to {args.topic}")
        if time.monotonic() >= end:
            raise CommandError(f"produce to {args.topic}: {len(p)} record(s) not acknowledged by "
                               f"{conn.bootstrap} within {conn.timeout:g} s (--timeout)")
    if failures:
        raise conn.fail(failures[0], f"produce to {args.topic}")
    results.sort(key=lambda r: r[0])
    if args.json:
        for _, r in results:
            sys.stdout.write(json.dumps(r) + "\n")
    else:
        print(f"Produced {len(results)} record(s) to {args.topic}.", file=sys.stderr)
    return 0
