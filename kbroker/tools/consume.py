"""``kbroker consume TOPIC``: print records, kcat-style.

    kbroker consume TOPIC [-g GROUP] [-p PARTITION ...] [-o beginning|end|stored|N|-N]
                          [-s TIMESTAMP] [-c COUNT] [-e] [--timeout SECONDS] [--topic-wait SECONDS]
                          [-f FORMAT | -K SEP | --json] [--isolation-level read_committed]

Without ``-g`` the partitions are assigned directly (all of them, or ``-p``) and nothing is
committed; ``-o`` picks the start: ``beginning``, ``end`` (the default, as kcat), ``N`` (an
absolute offset) or ``-N`` (N before the end). ``-s`` starts at the first record whose
timestamp is at or after TIMESTAMP (ms or ISO-8601, KIP-79 ListOffsets). With ``-g`` the
group subscribes, starts at its committed offsets (``-o beginning|end`` is then the
``auto.offset.reset``) and commits what it printed on exit.

``-e`` exits once every assigned partition is read up to the end it had when assigned;
``-c`` after COUNT records; ``--timeout`` after that many seconds without a record. A topic
missing from the metadata is waited for ``--topic-wait`` seconds (default 10: a topic just
created may reach the other brokers of a cluster a little later), then one error line.

Formats (kcat's ``-f`` tokens): ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%k`` key,
``%v`` value, ``%h`` headers (``k=v,k=v``), ``%T`` timestamp (ms), ``%K``/``%S`` key/value
length (-1 for null), ``%%``, and the escapes ``\\n``, ``\\t``, ``\\r``, ``\\\\``. The default is
``%v\\n``, or ``%k SEP %v\\n`` with ``-K SEP``. ``--json`` prints one JSON object per record.
"""
from __future__ import annotations

import json
import sys
import time

from kbroker.tools.common import CommandError, consumer, parse_time_ms

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "0": "\0"}


def add_parser(sub, parent) -> None:
    p = sub.add_parser("consume", parents=[parent], help="print records (kcat-like formats)")
    p.add_argument("topic")
    p.add_argument("--group", "-g", help="consume as this consumer group (commits on exit)")
    p.add_argument("--partition", "-p", type=int, action="append", help="only these partitions (repeatable)")
    p.add_argument("--offset", "-o", default=None,
                   help="beginning, end, stored, N or -N (default: end; stored with -g)")
    p.add_argument("--from-timestamp", "-s", metavar="TIME", help="ms since epoch or ISO-8601")
    p.add_argument("--max-messages", "-c", type=int, metavar="COUNT")
    p.add_argument("--exit", "-e", action="store_true", help="exit at the end of the partitions")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="exit after this long idle")
    p.add_argument("--topic-wait", type=float, default=10.0, metavar="SECONDS",
                   help="wait this long for a missing topic to appear (default 10)")
    p.add_argument("--format", "-f", metavar="FMT", help="kcat-like output format, e.g. '%%k:%%v\\n'")
    p.add_argument("--key-separator", "-K", metavar="SEP", help="print key SEP value")
    p.add_argument("--isolation-level", default="read_uncommitted",
                   choices=["read_uncommitted", "read_committed"])
    p.set_defaults(func=cmd_consume)


def compile_format(fmt: str):
    """A function record -> bytes for a kcat-like format string."""
    parts: list = []
    i = 0
    literal = []
    while i < len(fmt):
        c = fmt[i]
        if c == "\\" and i + 1 < len(fmt) and fmt[i + 1] in _ESCAPES:
            literal.append(_ESCAPES[fmt[i + 1]])
            i += 2
        elif c == "%" and i + 1 < len(fmt):
            token = fmt[i + 1]
            if token == "%":
                literal.append("%")
            elif token in "tpokvhTKS":
                if literal:
                    parts.append("".join(literal).encode())
                    literal = []
                parts.append(token)
            else:
                raise CommandError(f"unknown format token %{token} in {fmt!r}")
            i += 2
        else:
            literal.append(c)
            i += 1
    if literal:
        parts.append("".join(literal).encode())

    def render(r) -> bytes:
        out = []
        for part in parts:
            if isinstance(part, bytes):
                out.append(part)
            elif part == "t":
                out.append(r.topic.encode())
            elif part == "p":
                out.append(str(r.partition).encode())
            elif part == "o":
                out.append(str(r.offset).encode())
            elif part == "k":
                out.append(r.key or b"")
            elif part == "v":
                out.append(r.value or b"")
            elif part == "h":
                out.append(b",".join(k.encode() + b"=" + (v or b"") for k, v in r.headers or ()))
            elif part == "T":
                out.append(str(r.timestamp).encode())
            elif part == "K":
                out.append(str(-1 if r.key is None else len(r.key)).encode())
            elif part == "S":
                out.append(str(-1 if r.value is None else len(r.value)).encode())
        return b"".join(out)
    return render


def _text(b):
    return None if b is None else b.decode("utf-8", errors="replace")


def as_json(r) -> bytes:
    return (json.dumps({"topic": r.topic, "partition": r.partition, "offset": r.offset,
                        "timestamp": r.timestamp, "key": _text(r.key), "value": _text(r.value),
                        "headers": {k: _text(v) for k, v in r.headers or ()}}) + "\n").encode()


def _start_positions(c, args, tps):
    """Seek assigned partitions as -o/-s say (direct assignment only)."""
    if args.from_timestamp is not None:
        ts = parse_time_ms(args.from_timestamp)
        found = c.offsets_for_times({tp: ts for tp in tps})
        ends = c.end_offsets(tps)
        for tp in tps:
            c.seek(tp, found[tp].offset if found.get(tp) else ends[tp])
        return
    where = args.offset or "end"
    if where == "beginning":
        c.seek_to_beginning(*tps)
    elif where in ("end", "stored"):
        c.seek_to_end(*tps)
    else:
        try:
            n = int(where)
        except ValueError:
            raise CommandError(f"--offset: beginning, end, stored, N or -N, got {where!r}") from None
        if n >= 0:
            for tp in tps:
                c.seek(tp, n)
        else:
            begins, ends = c.beginning_offsets(tps), c.end_offsets(tps)
            for tp in tps:
                c.seek(tp, max(begins[tp], ends[tp] + n))


def cmd_consume(args) -> int:
    from kafka import TopicPartition
    if args.format and args.key_separator:
        raise CommandError("give either --format or --key-separator")
    if args.json:
        render = as_json
    else:
        fmt = args.format or (f"%k{args.key_separator}%v\\n" if args.key_separator else "%v\\n")
        render = compile_format(fmt)
    settings = {"enable_auto_commit": False, "isolation_level": args.isolation_level,
                "consumer_timeout_ms": 200}
    if args.group:
        settings["group_id"] = args.group
        settings["auto_offset_reset"] = "earliest" if args.offset == "beginning" else "latest"
    c = consumer(args, **settings)
    out = sys.stdout.buffer
    count = 0
    ends: dict = {}
    try:
        deadline = time.monotonic() + args.topic_wait
        known = c.partitions_for_topic(args.topic)
        while not known and time.monotonic() < deadline:
            time.sleep(0.1)
            known = c.partitions_for_topic(args.topic)
        if not known:
            raise CommandError(f"topic {args.topic} not found")
        if args.group and not args.partition:
            if args.offset not in (None, "beginning", "end", "stored") or args.from_timestamp:
                raise CommandError("with --group, --offset is beginning, end or stored "
                                   "(use `kbroker groups reset-offsets` to move a group)")
            c.subscribe([args.topic])
        else:
            partitions = args.partition if args.partition is not None else sorted(known)
            tps = [TopicPartition(args.topic, p) for p in partitions]
            c.assign(tps)
            if args.group and args.offset in (None, "stored"):
                committed = {tp: c.committed(tp) for tp in tps}
                rest = [tp for tp, o in committed.items() if o is None]
                for tp, o in committed.items():
                    if o is not None:
                        c.seek(tp, o)
                if rest:
                    c.seek_to_end(*rest)
            else:
                _start_positions(c, args, tps)
            if args.exit:
                ends = c.end_offsets(tps)
        idle_since = time.monotonic()
        while True:
            batch = c.poll(timeout_ms=200)
            if batch:
                idle_since = time.monotonic()
            for tp in sorted(batch, key=lambda tp: tp.partition):
                for r in batch[tp]:
                    out.write(render(r))
                    count += 1
                    if args.max_messages is not None and count >= args.max_messages:
                        # position just past the last printed record, so a commit covers it
                        c.seek(tp, r.offset + 1)
                        out.flush()
                        return _finish(c, args)
            out.flush()
            if args.max_messages is not None and count >= args.max_messages:
                break
            if args.exit:
                assigned = c.assignment()
                if assigned and not ends:
                    ends = c.end_offsets(list(assigned))
                if assigned and all(c.position(tp) >= ends.get(tp, 0) for tp in assigned):
                    break
            if args.timeout is not None and time.monotonic() - idle_since >= args.timeout:
                break
    except KeyboardInterrupt:
        pass
    return _finish(c, args)


def _finish(c, args) -> int:
    try:
        if args.group and c.assignment():
            c.commit()
    finally:
        c.close(autocommit=False)
    return 0
