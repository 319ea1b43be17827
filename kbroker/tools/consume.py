"""``kbroker consume TOPIC``: print records, kcat-style.

    kbroker consume TOPIC [-g GROUP] [-p PARTITION ...] [-o beginning|end|stored|N|-N]
                          [-s TIMESTAMP] [-c COUNT] [-e] [--idle-timeout SECONDS]
                          [--topic-wait SECONDS]
                          [-f FORMAT | -K SEP | --json] [--isolation-level read_committed]
    kbroker consume TOPIC --share-group GROUP [-c COUNT] [--idle-timeout SECONDS] [-f ...]

Without ``-g`` the partitions are assigned directly (all of them, or ``-p``) and nothing is
committed; ``-o`` picks the start: ``beginning``, ``end`` (the default, as kcat), ``N`` (an
absolute offset) or ``-N`` (N before the end). ``-s`` starts at the first record whose
timestamp is at or after TIMESTAMP (ms or ISO-8601, KIP-79 ListOffsets). With ``-g`` the
group subscribes, starts at its committed offsets (``-o beginning|end`` is then the
``auto.offset.reset``) and commits what it printed on exit.

``--share-group`` consumes as a member of a share group (KIP-932, confluent-kafka's
ShareConsumer, as ``kafka-console-share-consumer``): the records the group's share-partitions
hand this member, each acknowledged (accepted) once printed; where a new group starts is the
group config ``share.auto.offset.reset`` (``kbroker configs alter --group G``), so ``-o``,
``-s``, ``-p`` and ``-e`` do not apply (a share group has no end to reach): stop with ``-c``,
``--idle-timeout`` or Ctrl-C.

``-e`` exits once every assigned partition is read up to the end it had when assigned;
``-c`` after COUNT records; ``--idle-timeout`` after that many seconds without a record
(``--timeout``, as on every command, bounds each wait on the cluster: metadata, offsets). A
topic missing from the metadata is waited for ``--topic-wait`` seconds (default 10: a topic
just created may reach the other brokers of a cluster a little later), then one error line;
a partition the topic does not have is one error line at once.

Formats (kcat's ``-f`` tokens): ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%k`` key,
``%v`` value, ``%h`` headers (``k=v,k=v``), ``%T`` timestamp (ms), ``%K``/``%S`` key/value
length (-1 for null), ``%%``, and the escapes ``\\n``, ``\\t``, ``\\r``, ``\\\\``. The default is
``%v\\n``, or ``%k SEP %v\\n`` with ``-K SEP``. ``--json`` prints one JSON object per record.
"""
from __future__ import annotations

import json
import sys
import time

from kbroker.tools.common import CommandError, UsageError, connect, parse_time_ms

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "0": "\0"}


def add_parser(sub, parent) -> None:
    p = sub.add_parser("consume", parents=[parent], help="print records (kcat-like formats)")
    p.add_argument("topic")
    p.add_argument("--group", "-g", help="consume as this consumer group (commits on exit)")
    p.add_argument("--share-group", metavar="GROUP",
                   help="consume as a member of this share group (acknowledges what it prints)")
    p.add_argument("--partition", "-p", type=int, action="append", help="only these partitions (repeatable)")
    p.add_argument("--offset", "-o", default=None,
                   help="beginning, end, stored, N or -N (default: end; stored with -g)")
    p.add_argument("--from-timestamp", "-s", metavar="TIME", help="ms since epoch or ISO-8601")
    p.add_argument("--max-messages", "-c", type=int, metavar="COUNT")
    p.add_argument("--exit", "-e", action="store_true", help="exit at the end of the partitions")
    p.add_argument("--idle-timeout", type=float, metavar="SECONDS", help="exit after this long idle")
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
                raise UsageError(f"unknown format token %{token} in {fmt!r}")
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


class Record:
    """One consumed record with the attributes the formats read."""
    __slots__ = ("topic", "partition", "offset", "key", "value", "headers", "timestamp")

    def __init__(self, msg):
        self.topic, self.partition, self.offset = msg.topic(), msg.partition(), msg.offset()
        self.key, self.value = msg.key(), msg.value()
        self.headers = msg.headers() or ()
        self.timestamp = msg.timestamp()[1]


def _text(b):
    return None if b is None else b.decode("utf-8", errors="replace")


def as_json(r) -> bytes:
    return (json.dumps({"topic": r.topic, "partition": r.partition, "offset": r.offset,
                        "timestamp": r.timestamp, "key": _text(r.key), "value": _text(r.value),
                        "headers": {k: _text(v) for k, v in r.headers or ()}}) + "\n").encode()


def _watermarks(conn, c, topic: str, p: int) -> tuple[int, int]:
    from confluent_kafka import KafkaException, TopicPartition
    try:
        return c.get_watermark_offsets(TopicPartition(topic, p), timeout=conn.timeout)
    except KafkaException as e:
        raise conn.fail(e, f"read the offsets of {topic}-{p}") from None


def _start_offsets(conn, c, args, parts: list[int]) -> dict[int, int]:
    """Where each assigned partition starts, as -o/-s say (direct assignment)."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition
    if args.from_timestamp is not None:
        ts = parse_time_ms(args.from_timestamp)
        try:
            found = c.offsets_for_times([TopicPartition(args.topic, p, ts) for p in parts],
                                        timeout=conn.timeout)
        except KafkaException as e:
            raise conn.fail(e, f"look up offsets by time in {args.topic}") from None
        return {tp.partition: tp.offset if tp.offset >= 0 else OFFSET_END for tp in found}
    where = args.offset or "end"
    if where == "beginning":
        return {p: OFFSET_BEGINNING for p in parts}
    if where in ("end", "stored"):
        return {p: OFFSET_END for p in parts}
    try:
        n = int(where)
    except ValueError:
        raise UsageError(f"--offset: beginning, end, stored, N or -N, got {where!r}") from None
    if n >= 0:
        return {p: n for p in parts}
    out = {}
    for p in parts:
        lo, hi = _watermarks(conn, c, args.topic, p)
        out[p] = max(lo, hi + n)
    return out


def _known_partitions(conn, c, args) -> list[int]:
    import time
    from kbroker.tools.produce import check_partitions
    end = time.monotonic() + args.topic_wait
    while True:
        try:
            return check_partitions(conn, c, args.topic, args.partition)
        except CommandError as e:
            if "does not exist" not in str(e) or time.monotonic() >= end:
                raise
        time.sleep(0.1)


def cmd_consume(args) -> int:
    from confluent_kafka import OFFSET_STORED, TopicPartition
    if args.format and args.key_separator:
        raise UsageError("give either --format or --key-separator")
    if args.json:
        render = as_json
    else:
        fmt = args.format or (f"%k{args.key_separator}%v\\n" if args.key_separator else "%v\\n")
        render = compile_format(fmt)
    if args.share_group:
        return _consume_share(args, render)
    if args.group and not args.partition and (
            args.offset not in (None, "beginning", "end", "stored") or args.from_timestamp):
        raise UsageError("with --group, --offset is beginning, end or stored "
                         "(use `kbroker groups reset-offsets` to move a group)")
    settings = {"enable.auto.commit": False, "isolation.level": args.isolation_level,
                "enable.partition.eof": True, "group.id": args.group or "kbroker-cli-unused",
                "auto.offset.reset": "earliest" if args.offset == "beginning" else "latest"}
    conn = connect(args)
    c = conn.consumer(**settings)
    out = sys.stdout.buffer
    count = 0
    positions: dict[int, int] = {}
    try:
        known = _known_partitions(conn, c, args)
        parts = args.partition if args.partition is not None else known
        if args.group and not args.partition:
            c.subscribe([args.topic])
            pending_eof = None          # the group decides the partitions
        else:
            if args.group and args.offset in (None, "stored"):
                starts = {p: OFFSET_STORED for p in parts}
            else:
                starts = _start_offsets(conn, c, args, parts)
            c.assign([TopicPartition(args.topic, p, o) for p, o in starts.items()])
            pending_eof = set(parts)
        idle_since = time.monotonic()
        while True:
            msg = c.poll(0.2)
            conn.check(f"consume {args.topic}")
            if msg is None:
                if args.idle_timeout is not None and time.monotonic() - idle_since >= args.idle_timeout:
                    break
                continue
            err = msg.error()
            if err is not None:
                if err.code() == -191:      # _PARTITION_EOF: at the end of one partition
                    if msg.offset() >= 0 and msg.partition() not in positions:
                        positions[msg.partition()] = msg.offset()     # its end: nothing to read
                    if pending_eof is None:
                        pending_eof = {tp.partition for tp in c.assignment()}
                    pending_eof.discard(msg.partition())
                    if args.exit and not pending_eof:
                        break
                    continue
                raise conn.fail(err, f"consume {args.topic}-{msg.partition()}")
            idle_since = time.monotonic()
            out.write(render(Record(msg)))
            positions[msg.partition()] = msg.offset() + 1
            count += 1
            if args.max_messages is not None and count >= args.max_messages:
                break
        out.flush()
    except KeyboardInterrupt:
        pass
    finally:
        try:
            if args.group:
                # as Kafka's consumers commit: the position of every assigned partition, also
                # of one that had nothing to read (its end), not only of those printed from
                try:
                    at = {tp.partition: tp.offset for tp in c.position(c.assignment()) if tp.offset >= 0}
                except Exception:  # noqa: BLE001 - no assignment any more: what was printed
                    at = {}
                at.update(positions)
                if at:
                    c.commit(offsets=[TopicPartition(args.topic, p, o) for p, o in sorted(at.items())],
                             asynchronous=False)
        except Exception as e:  # noqa: BLE001 - reported as one sentence
            raise conn.fail(e, f"commit the offsets of group {args.group}") from None
        finally:
            c.close()
    return 0


def _consume_share(args, render) -> int:
    """``--share-group``: poll the share consumer, print each record, acknowledge it."""
    given = [flag for flag, on in (("--group", args.group), ("--partition", args.partition),
                                   ("--offset", args.offset), ("--from-timestamp", args.from_timestamp),
                                   ("--exit", args.exit)) if on]
    if given:
        raise UsageError(f"--share-group does not take {', '.join(given)} (the share group decides "
                         "what it delivers; stop with --max-messages or --idle-timeout)")
    from confluent_kafka import KafkaException, ShareConsumer
    conn = connect(args)
    what = f"consume {args.topic} as share group {args.share_group}"
    c = conn._make(ShareConsumer, conn.config(**{"group.id": args.share_group,
                                                 "share.acknowledgement.mode": "explicit"}))
    out = sys.stdout.buffer
    count = 0
    try:
        c.subscribe([args.topic])
        idle_since = time.monotonic()
        failing_since = None
        while args.max_messages is None or count < args.max_messages:
            try:
                got = c.poll(0.2) or []
                failing_since = None
            except KafkaException as e:
                # librdkafka raises a ShareFetch error from poll; a retriable one (no share
                # coordinator yet, a leader moving) is waited out for --timeout
                err = e.args[0] if e.args else e
                now = time.monotonic()
                failing_since = failing_since or now
                if not getattr(err, "retriable", lambda: False)() or now - failing_since >= conn.timeout:
                    raise conn.fail(err, what) from None
                continue
            conn.check(what)
            if not got:
                if args.idle_timeout is not None and time.monotonic() - idle_since >= args.idle_timeout:
                    break
                continue
            idle_since = time.monotonic()
            for msg in got:
                if msg.error() is not None:
                    raise conn.fail(msg.error(), what)
                # past COUNT: not printed, and released with the consumer's close for redelivery
                if args.max_messages is not None and count >= args.max_messages:
                    c.acknowledge(msg, _release())
                    continue
                out.write(render(Record(msg)))
                c.acknowledge(msg)
                count += 1
            out.flush()
            c.commit_sync()
    except KeyboardInterrupt:
        pass
    finally:
        out.flush()
        c.close()
    return 0


def _release():
    from confluent_kafka import AcknowledgeType
    return AcknowledgeType.RELEASE
