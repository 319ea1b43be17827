"""The checker: a history (``model``) in, anomalies out. Pure: no broker, clock or socket.

What it infers (Elle's approach for queues, as in Jepsen's Kafka workload):

- every write: the operation that sent a value, its outcome (an ``ok`` op's writes were
  acknowledged; a ``fail`` op -- an acknowledged abort -- wrote nothing visible; ``info``:
  unknown) and the offset its acknowledgement gave;
- every read: ``(offset, value)`` pairs of one key as a poll returned them;
- per key (partition) the total order of values from the offsets observed (acks and reads);
  its *visible* order leaves out the values of aborted transactions and never-written values
  (a read_committed consumer skips those legitimately).

Anomalies (each a dict with ``type``, the ``ops`` -- invocation indexes -- that show it, and
details):

- ``inconsistent-offsets``: two values at one offset of a key;
- ``duplicate``: one value at two offsets (acked at one and read at another counts);
- ``garbage-read``: a value read that nobody sent;
- ``aborted-read`` (G1a): a value of an aborted transaction read;
- ``dirty-read``: a read that completed before the writing transaction asked to commit;
- ``lost-write``: acknowledged, never read, though a consumer read past its offset;
- ``unseen``: acknowledged and never read at all by the end;
- ``int-nonmonotonic-poll`` / ``int-poll-skip``: within one poll of a key, offsets going
  back / skipping a visible value; ``nonmonotonic-poll`` / ``poll-skip``: the same between
  consecutive polls of one process (an ``assign``/``subscribe`` op, or a poll marked
  ``rebalanced``, or one that did not complete ``ok`` starts that process's positions afresh);
- ``int-nonmonotonic-send`` / ``nonmonotonic-send``: acknowledged offsets of one process's
  sends to a key going back, within one op / between its ops;
- cycles between transactions (``G0``, ``G1c``, ``G-single``, ``G2``): see ``graph``.

Kafka's transactions promise atomic visibility to read_committed consumers (all of a
transaction's records or none, never an aborted one), not serializability: two transactions'
records interleave freely across partitions and a poll inside a transaction is not isolated.
So the cycle classes are expected on Kafka itself (``CYCLES``); ``violations`` are the rest.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

from . import graph
from .model import Op, pairs


CYCLES = ("G0", "G1c", "G-single", "G2")


def violations(found: dict) -> dict:
    """The anomalies beyond what Kafka's transactions allow (see the module docstring)."""
    return {k: v for k, v in found.items() if k not in CYCLES}


@dataclass
class Write:
    key: str
    value: object
    op: int            # invocation index
    process: object
    status: str        # ok | fail | info
    f: str
    offset: int | None = None


@dataclass
class Read:
    op: int
    process: object
    key: str
    records: list      # [(offset, value)] in the order returned
    done: int          # completion time


class History:
    """What the checks share: writes by value, reads, the per-key orders."""

    def __init__(self, ops: list[Op]):
        self.pairs = pairs(ops)
        self.ops = {inv.index: (inv, comp) for inv, comp in self.pairs}
        self.writes: dict = {}
        self.reads: list[Read] = []
        for inv, comp in self.pairs:
            status = comp.type if comp is not None else "info"
            if inv.f in ("send", "txn"):
                for mop in inv.value or ():
                    if mop[0] == "send":
                        self.writes[_h(mop[2])] = Write(mop[1], mop[2], inv.index, inv.process, status, inv.f)
            if status != "ok" or inv.f not in ("send", "poll", "txn"):
                continue
            for mop in comp.value or ():
                if mop[0] == "send" and isinstance(mop[2], list):
                    offset, value = mop[2]
                    w = self.writes.get(_h(value))
                    if w is not None and offset is not None and offset >= 0:
                        w.offset = offset
                elif mop[0] == "poll" and len(mop) > 1:
                    for key, recs in mop[1].items():
                        self.reads.append(Read(inv.index, inv.process, key,
                                               [(o, v) for o, v in recs], comp.time))
        # offsets observed per key, and per value
        self.at: dict = defaultdict(lambda: defaultdict(set))     # key -> offset -> {value}
        self.where: dict = defaultdict(set)                       # value -> {(key, offset)}
        self.read_values: set = set()
        for w in self.writes.values():
            if w.status == "ok" and w.offset is not None:
                self.at[w.key][w.offset].add(_h(w.value))
                self.where[_h(w.value)].add((w.key, w.offset))
        for r in self.reads:
            for o, v in r.records:
                self.at[r.key][o].add(_h(v))
                self.where[_h(v)].add((r.key, o))
                self.read_values.add(_h(v))
        # visible order: offsets holding a value some non-aborted op sent
        self.visible: dict = {}
        for key, offsets in self.at.items():
            keep = sorted(o for o, vs in offsets.items()
                          if any(v in self.writes and self.writes[v].status != "fail" for v in vs))
            self.visible[key] = keep
        self.position = {k: {o: i for i, o in enumerate(v)} for k, v in self.visible.items()}

    def writer(self, value):
        return self.writes.get(_h(value))


def _h(value):
    """Values as dict keys (JSON lists become tuples)."""
    return tuple(value) if isinstance(value, list) else value


def check(ops: list[Op]) -> dict[str, list[dict]]:
    """Every anomaly of the history, by type (an empty dict: none)."""
    h = History(ops)
    found: list[dict] = []
    found += _offsets(h)
    found += _reads(h)
    found += _polls(h)
    found += _sends(h)
    found += _lost(h)
    found += graph.cycles(h)
    out: dict[str, list[dict]] = defaultdict(list)
    for a in found:
        out[a["type"]].append(a)
    return dict(out)


def _witness(h: History, key, offset) -> list[int]:
    """Ops that observed ``offset`` of ``key`` (its acknowledging writer, a reader)."""
    ops = [w.op for w in h.writes.values() if w.key == key and w.offset == offset and w.status == "ok"]
    for r in h.reads:
        if r.key == key and any(o == offset for o, _ in r.records):
            ops.append(r.op)
            break
    return ops


def _offsets(h: History) -> list[dict]:
    out = []
    for key, offsets in h.at.items():
        for o, vs in sorted(offsets.items()):
            if len(vs) > 1:
                out.append({"type": "inconsistent-offsets", "key": key, "offset": o,
                            "values": sorted(vs, key=repr), "ops": _witness(h, key, o)})
    for v, places in h.where.items():
        if len(places) > 1:
            ops = [r.op for r in h.reads if any(_h(x) == v for _, x in r.records)]
            w = h.writes.get(v)
            out.append({"type": "duplicate", "value": v, "at": sorted(places),
                        "ops": sorted(set(ops + ([w.op] if w else [])))})
    return out


def _reads(h: History) -> list[dict]:
    out = []
    for r in h.reads:
        for o, v in r.records:
            w = h.writer(v)
            if w is None:
                out.append({"type": "garbage-read", "key": r.key, "offset": o, "value": v, "ops": [r.op]})
            elif w.status == "fail":
                out.append({"type": "aborted-read", "key": r.key, "offset": o, "value": v,
                            "ops": [w.op, r.op]})
            else:
                inv, comp = h.ops[w.op]
                commit = comp.extra.get("commit_time") if comp is not None else None
                if w.op != r.op and (r.done < inv.time or (commit is not None and r.done < commit)):
                    out.append({"type": "dirty-read", "key": r.key, "offset": o, "value": v,
                                "ops": [w.op, r.op], "read_done": r.done,
                                "writer_invoked": inv.time, "commit_asked": commit})
    return out


def _step(h: History, key, a: int, b: int, op_a: int, op_b: int, process, internal: bool):
    """The anomaly (or None) of reading offset ``b`` right after ``a`` on ``key``."""
    prefix = "int-" if internal else ""
    if b <= a:
        return {"type": f"{prefix}nonmonotonic-poll", "key": key, "process": process,
                "offsets": [a, b], "ops": sorted({op_a, op_b})}
    pos = h.position.get(key, {})
    if a in pos and b in pos and pos[b] > pos[a] + 1:
        skipped = h.visible[key][pos[a] + 1:pos[b]]
        wit = sorted({x for o in skipped[:3] for x in _witness(h, key, o)})
        return {"type": f"{prefix}poll-skip", "key": key, "process": process, "offsets": [a, b],
                "skipped": skipped, "ops": sorted({op_a, op_b, *wit})}
    return None


def _polls(h: History) -> list[dict]:
    out = []
    last: dict = {}          # (process, key) -> (offset, op)
    reads_by_op = defaultdict(list)
    for r in h.reads:
        reads_by_op[r.op].append(r)
    for inv, comp in h.pairs:
        if _resets(inv, comp):
            for pk in [pk for pk in last if pk[0] == inv.process]:
                del last[pk]
        if comp is None or comp.type != "ok":
            continue
        for r in reads_by_op.get(inv.index, ()):
            offs = [o for o, _ in r.records]
            for a, b in zip(offs, offs[1:]):
                a_ = _step(h, r.key, a, b, r.op, r.op, r.process, internal=True)
                if a_:
                    out.append(a_)
            if not offs:
                continue
            prev = last.get((r.process, r.key))
            if prev is not None:
                a_ = _step(h, r.key, prev[0], offs[0], prev[1], r.op, r.process, internal=False)
                if a_:
                    out.append(a_)
            last[(r.process, r.key)] = (offs[-1], r.op)
    return out


def _resets(inv: Op, comp: Op | None) -> bool:
    """Does this op leave its process's consumer positions unknown or new? A new assignment
    or subscription, a rebalance during a poll, and an op that did not complete ``ok`` (what
    it read is not in the history, yet its consumer moved on)."""
    return (inv.f in ("assign", "subscribe") or comp is None or comp.type != "ok"
            or bool(comp.extra.get("rebalanced")))


def _sends(h: History) -> list[dict]:
    out = []
    last: dict = {}          # (process, key) -> (offset, op)
    for inv, comp in h.pairs:
        if comp is None or comp.type != "ok" or inv.f not in ("send", "txn"):
            continue
        first: dict = {}     # key -> the op's first acknowledged offset
        latest: dict = {}    # key -> its last one so far
        for mop in comp.value or ():
            if mop[0] != "send" or not isinstance(mop[2], list) or mop[2][0] is None or mop[2][0] < 0:
                continue
            key, o = mop[1], mop[2][0]
            if key in latest and o <= latest[key]:
                out.append({"type": "int-nonmonotonic-send", "key": key, "process": inv.process,
                            "offsets": [latest[key], o], "ops": [inv.index]})
            latest[key] = o
            first.setdefault(key, o)
        for key, o in first.items():
            prev = last.get((inv.process, key))
            if prev is not None and o <= prev[0]:
                out.append({"type": "nonmonotonic-send", "key": key, "process": inv.process,
                            "offsets": [prev[0], o], "ops": [prev[1], inv.index]})
            last[(inv.process, key)] = (latest[key], inv.index)
    return out


def _lost(h: History) -> list[dict]:
    """Acknowledged writes never read: ``lost-write`` if a process read past them (two
    consecutive reads of its, in one poll or across polls, around the offset), else ``unseen``."""
    unread: dict = defaultdict(list)        # key -> sorted [(offset, value, op)]
    unseen = []
    for v, w in h.writes.items():
        if w.status != "ok" or v in h.read_values:
            continue
        if w.offset is None:
            unseen.append(w)
        else:
            unread[w.key].append((w.offset, v, w.op))
    for k in unread:
        unread[k].sort(key=lambda t: t[0])
    lost: dict = {}
    last: dict = {}
    reads_by_op = defaultdict(list)
    for r in h.reads:
        reads_by_op[r.op].append(r)
    for inv, comp in h.pairs:
        if _resets(inv, comp):
            for pk in [pk for pk in last if pk[0] == inv.process]:
                del last[pk]
        if comp is None or comp.type != "ok":
            continue
        for r in reads_by_op.get(inv.index, ()):
            cand = unread.get(r.key)
            prev = last.get((r.process, r.key))
            for o, _ in r.records:
                if cand and prev is not None and o > prev[0]:
                    offs = [c[0] for c in cand]
                    for c in cand[bisect.bisect_right(offs, prev[0]):bisect.bisect_left(offs, o)]:
                        lost.setdefault(c[1], {"type": "lost-write", "key": r.key, "offset": c[0],
                                               "value": c[1], "ops": sorted({c[2], prev[1], r.op})})
                prev = (o, r.op)
            if prev is not None:
                last[(r.process, r.key)] = prev
    out = list(lost.values())
    for k, cs in unread.items():
        for o, v, op in cs:
            if v not in lost:
                out.append({"type": "unseen", "key": k, "offset": o, "value": v, "ops": [op]})
    for w in unseen:
        out.append({"type": "unseen", "key": w.key, "offset": None, "value": w.value, "ops": [w.op]})
    return out
