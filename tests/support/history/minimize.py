"""Shrink a history to a few operations that still show one anomaly type (pure).

First the operations the anomaly names (with every ``assign``/``subscribe`` of their
processes, which positions depend on); if that no longer shows it, delta debugging over the
whole history (drop chunks of invocation/completion pairs while the type is still found,
halving the chunk size), within a budget of checker runs.
"""
from __future__ import annotations

from .checker import CYCLES, check
from .model import Op, pairs


def _flatten(kept: list[tuple]) -> list[Op]:
    ops = [op for pair in kept for op in pair if op is not None]
    return sorted(ops, key=lambda o: o.index)


def _shows(kept, kind) -> bool:
    return kind in check(_flatten(kept))


def minimize(ops: list[Op], kind: str, budget: int = 300) -> list[Op]:
    """A sub-history (original indexes kept) in which ``check`` still finds ``kind``."""
    found = check(ops).get(kind)
    if not found:
        raise ValueError(f"the history shows no {kind}")
    all_pairs = pairs(ops)
    named = set(found[0]["ops"])
    procs = {inv.process for inv, _ in all_pairs if inv.index in named}
    first = [p for p in all_pairs if p[0].index in named
             or (p[0].process in procs and p[0].f in ("assign", "subscribe"))]
    kept = first if _shows(first, kind) else list(all_pairs)
    n = 2
    runs = 0
    while len(kept) > 1 and runs < budget:
        size = max(1, len(kept) // n)
        dropped_any = False
        for start in range(0, len(kept), size):
            trial = kept[:start] + kept[start + size:]
            runs += 1
            if trial and _shows(trial, kind):
                kept = trial
                n = max(n - 1, 2)
                dropped_any = True
                break
            if runs >= budget:
                break
        if not dropped_any:
            if size == 1:
                break
            n = min(n * 2, len(kept))
    return _flatten(kept)


def summary(target: str, ops: int | list[Op], counts: dict) -> str:
    """``kbroker: N ops, anomalies: none`` or the anomaly types with their counts; the cycles
    Kafka's transactions allow (``checker.CYCLES``) follow in parentheses. ``counts`` maps a
    type to a count or to the list of its anomalies."""
    n = ops if isinstance(ops, int) else sum(1 for op in ops if op.type == "invoke")
    counts = {k: v if isinstance(v, int) else len(v) for k, v in counts.items()}

    def listed(kinds):
        return ", ".join(f"{k} x{counts[k]}" for k in sorted(kinds))
    bad = [k for k in counts if k not in CYCLES]
    cyc = [k for k in counts if k in CYCLES]
    out = f"{target}: {n} ops, anomalies: {listed(bad) if bad else 'none'}"
    return out + (f" (cycles Kafka's transactions allow: {listed(cyc)})" if cyc else "")
