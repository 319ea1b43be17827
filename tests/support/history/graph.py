"""Dependency cycles between transactions (Elle's approach, for queues).

Nodes: ``txn`` operations that committed (``ok``) or whose outcome is unknown (``info``) but
some of whose writes were read. Edges, from the per-key visible order of ``checker.History``:

- ``ww``: T1's value comes right before T2's in a key's order (among transactional values);
- ``wr``: T2 read a value T1 wrote;
- ``rw`` (anti-dependency): T1 read a key up to offset o and T2 wrote the next transactional
  value after o there -- T1 did not see T2's write.

Strongly connected components (Tarjan, iterative) hold the cycles. Each component is
classified by the weakest cycle it contains (Adya's phenomena): ``G0`` a cycle of ``ww``
edges only; ``G1c`` one of ``ww``/``wr`` edges with at least one ``wr``; ``G-single`` a cycle
with exactly one ``rw`` edge; ``G2`` the rest. One cycle per component is reported, as the
list of its steps ``[from op, edge types, to op]``.
"""
from __future__ import annotations

from collections import defaultdict, deque


def build(h) -> dict:
    """``{a: {b: {edge types}}}`` over the transactional operations of history ``h``."""
    nodes = set()
    for inv, comp in h.pairs:
        if inv.f != "txn":
            continue
        status = comp.type if comp is not None else "info"
        if status == "ok":
            nodes.add(inv.index)
        elif status == "info" and any(w.op == inv.index and v in h.read_values
                                      for v, w in h.writes.items()):
            nodes.add(inv.index)
    edges: dict = defaultdict(lambda: defaultdict(set))

    def add(a, b, kind):
        if a != b and a in nodes and b in nodes:
            edges[a][b].add(kind)

    # per key: the visible offsets holding a transactional value, with their writers
    order: dict = {}
    for key, offs in h.visible.items():
        seq = []
        for o in offs:
            for v in h.at[key][o]:
                w = h.writes.get(v)
                if w is not None and w.op in nodes:
                    seq.append((o, w.op))
                    break
        order[key] = seq
        for (_, a), (_, b) in zip(seq, seq[1:]):
            add(a, b, "ww")
    top: dict = {}           # (reader op, key) -> highest offset read
    for r in h.reads:
        for o, v in r.records:
            w = h.writer(v)
            if w is not None:
                add(w.op, r.op, "wr")
        if r.records and r.op in nodes:
            k = (r.op, r.key)
            top[k] = max(top.get(k, -1), max(o for o, _ in r.records))
    for (reader, key), o in top.items():
        nxt = next(((off, op) for off, op in order.get(key, ()) if off > o), None)
        if nxt is not None:
            add(reader, nxt[1], "rw")
    return edges


def sccs(edges: dict) -> list[list]:
    """Tarjan's strongly connected components with more than one node (iterative)."""
    index: dict = {}
    low: dict = {}
    on: set = set()
    stack: list = []
    out = []
    counter = 0
    for root in list(edges):
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(edges.get(w, ()))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def _path(edges, allowed, start, goal, members):
    """Shortest path start -> goal inside ``members`` over edges with a type in ``allowed``,
    as ``[(a, types, b)]``; None if there is none."""
    prev = {start: None}
    q = deque([start])
    while q:
        a = q.popleft()
        for b, kinds in edges.get(a, {}).items():
            use = kinds & allowed
            if b not in members or not use or b in prev and b != goal:
                continue
            if b == goal:
                steps = [(a, sorted(use), b)]
                while prev[a] is not None:
                    p, k = prev[a]
                    steps.append((p, k, a))
                    a = p
                return steps[::-1]
            prev[b] = (a, sorted(use))
            q.append(b)
    return None


def _cycle(edges, allowed, members):
    for a in sorted(members):
        p = _path(edges, allowed, a, a, members)
        if p:
            return p
    return None


def classify(edges: dict, members: list):
    """``(type, cycle)`` of the weakest cycle in one component."""
    m = set(members)
    c = _cycle(edges, {"ww"}, m)
    if c:
        return "G0", c
    c = _cycle(edges, {"ww", "wr"}, m)
    if c:
        return "G1c", c
    for a in sorted(m):
        for b, kinds in edges.get(a, {}).items():
            if b in m and "rw" in kinds:
                back = _path(edges, {"ww", "wr"}, b, a, m)
                if back:
                    return "G-single", [(a, ["rw"], b)] + back
    return "G2", _cycle(edges, {"ww", "wr", "rw"}, m)


def cycles(h) -> list[dict]:
    edges = build(h)
    out = []
    for comp in sccs(edges):
        kind, cyc = classify(edges, comp)
        out.append({"type": kind, "ops": comp, "cycle": [[a, k, b] for a, k, b in cyc]})
    return out
