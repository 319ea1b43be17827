"""The history format: JSON lines, one operation per line, Jepsen's Kafka workload shape.

Each line is ``{"index", "time", "process", "type", "f", "value"}``:

- ``type``: ``invoke`` then one completion of the same process: ``ok``, ``fail`` (it
  definitely did not happen: an acknowledged abort) or ``info`` (unknown outcome);
- ``f``: ``send`` / ``poll`` / ``txn`` (a list of micro-ops), ``commit`` (``{key: offset}``),
  ``assign`` / ``subscribe`` (a list of keys: a consumer's positions start afresh);
- micro-ops: ``["send", key, value]`` when invoked, ``["send", key, [offset, value]]`` when
  acknowledged (offset ``null`` if the client did not learn it); ``["poll"]`` when invoked,
  ``["poll", {key: [[offset, value], ...]}]`` when done;
- an ``ok`` txn may carry ``commit_time``: when its commit was asked (for dirty reads).

A key names one partition (``topic/partition``); values are unique per history. A process runs
one operation at a time. This module only parses and pairs; it keeps no I/O beyond reading
and writing the lines it is handed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable


@dataclass
class Op:
    index: int
    time: int
    process: Any
    type: str
    f: str
    value: Any = None
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"index": self.index, "time": self.time, "process": self.process,
                "type": self.type, "f": self.f, "value": self.value, **self.extra}


def parse(lines: Iterable[str]) -> list[Op]:
    ops = []
    for n, line in enumerate(lines):
        line = line.strip()
        if not line:
            continue
        d = json.loads(line)
        base = {k: d.pop(k) for k in ("index", "time", "process", "type", "f")}
        ops.append(Op(**base, value=d.pop("value", None), extra=d))
    return ops


def load(path) -> list[Op]:
    with open(path) as f:
        return parse(f)


def dump(ops: Iterable[Op], path) -> None:
    with open(path, "w") as f:
        for op in ops:
            f.write(json.dumps(op.to_json()) + "\n")


def pairs(ops: list[Op]) -> list[tuple[Op, Op | None]]:
    """``(invoke, completion)`` for every invocation, in invocation order; a completion-less
    invocation (the history ended) gets ``None``."""
    open_: dict = {}
    out: list[list] = []
    for op in ops:
        if op.type == "invoke":
            if op.process in open_:
                raise ValueError(f"process {op.process} invoked {op.index} while {open_[op.process][0].index} is open")
            pair = [op, None]
            open_[op.process] = pair
            out.append(pair)
        else:
            pair = open_.pop(op.process, None)
            if pair is None:
                raise ValueError(f"completion {op.index} of process {op.process} without invocation")
            if pair[0].f != op.f:
                raise ValueError(f"completion {op.index} is {op.f}, its invocation {pair[0].f}")
            pair[1] = op
    return [tuple(p) for p in out]
