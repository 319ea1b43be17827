"""The history checker on hand-made histories: each anomaly class is found in a history made
to contain it, and a clean history reports none (so every check can fail)."""
from __future__ import annotations

import io

import pytest

from tests.support.history import model
from tests.support.history.checker import check


class H:
    """A tiny history builder: each call appends an invocation and its completion."""

    def __init__(self):
        self.ops: list[model.Op] = []
        self.t = 0

    def _op(self, process, type_, f, value, **extra):
        self.t += 10
        op = model.Op(len(self.ops), self.t, process, type_, f, value, extra)
        self.ops.append(op)
        return op.index

    def send(self, p, key, *vals_offsets, type_="ok"):
        """One send op of (value, offset) pairs to ``key``."""
        i = self._op(p, "invoke", "send", [["send", key, v] for v, _ in vals_offsets])
        self._op(p, type_, "send", [["send", key, [o, v]] for v, o in vals_offsets])
        return i

    def poll(self, p, reads, **extra):
        i = self._op(p, "invoke", "poll", [["poll"]])
        self._op(p, "ok", "poll", [["poll", {k: [list(r) for r in recs] for k, recs in reads.items()}]], **extra)
        return i

    def txn(self, p, mops, type_="ok", **extra):
        """``mops``: ("send", key, value, offset) and ("poll", {key: [(o, v)]})."""
        inv = [["send", m[1], m[2]] if m[0] == "send" else ["poll"] for m in mops]
        done = [["send", m[1], [m[3], m[2]]] if m[0] == "send"
                else ["poll", {k: [list(r) for r in rs] for k, rs in m[1].items()}] for m in mops]
        i = self._op(p, "invoke", "txn", inv)
        self._op(p, type_, "txn", done if type_ == "ok" else inv, **extra)
        return i

    def assign(self, p, keys):
        self._op(p, "invoke", "assign", keys)
        self._op(p, "ok", "assign", keys)

    def check(self):
        buf = io.StringIO()
        for op in self.ops:
            buf.write(__import__("json").dumps(op.to_json()) + "\n")
        return check(model.parse(buf.getvalue().splitlines()))


def clean() -> H:
    h = H()
    h.send(0, "k", (1, 0), (2, 1))
    h.send(0, "k", (3, 2))
    h.txn(1, [("send", "k", 4, 4), ("send", "j", 5, 0)])      # offset 3: its commit marker
    h.txn(1, [("send", "k", 6, 5)], type_="fail")             # aborted: offset 5 ...
    h.send(0, "k", (7, 7))                                     # ... and its marker at 6
    h.poll(2, {"k": [(0, 1), (1, 2)]})
    h.poll(2, {"k": [(2, 3), (4, 4), (7, 7)], "j": [(0, 5)]})
    h.txn(3, [("poll", {"k": [(0, 1), (1, 2), (2, 3), (4, 4)]}), ("send", "j", 8, 2)])
    h.poll(2, {"j": [(2, 8)]})
    return h


def test_a_clean_history_has_no_anomaly():
    assert clean().check() == {}


def test_the_format_round_trips(tmp_path):
    h = clean()
    model.dump(h.ops, tmp_path / "h.jsonl")
    assert [o.to_json() for o in model.load(tmp_path / "h.jsonl")] == [o.to_json() for o in h.ops]


def test_a_completion_without_invocation_is_refused():
    with pytest.raises(ValueError):
        model.pairs([model.Op(0, 0, 1, "ok", "poll", [])])


def types(found):
    return set(found)


def test_lost_write():
    h = H()
    h.send(0, "k", (1, 0))
    h.send(0, "k", (2, 1))
    h.send(0, "k", (3, 2))
    h.poll(1, {"k": [(0, 1)]})
    h.poll(1, {"k": [(2, 3)]})        # read past offset 1, never saw value 2
    found = h.check()
    assert [a["value"] for a in found["lost-write"]] == [2]
    assert "unseen" not in found


def test_lost_write_inside_one_poll():
    h = H()
    h.send(0, "k", (1, 0), (2, 1), (3, 2))
    h.poll(1, {"k": [(0, 1), (2, 3)]})
    assert [a["value"] for a in h.check()["lost-write"]] == [2]


def test_unseen():
    h = H()
    h.send(0, "k", (1, 0))
    h.send(0, "k", (2, 1))
    h.poll(1, {"k": [(0, 1)]})
    found = h.check()
    assert [a["value"] for a in found["unseen"]] == [2] and "lost-write" not in found


def test_duplicate():
    h = H()
    h.send(0, "k", (1, 0))
    h.poll(1, {"k": [(0, 1), (1, 1)]})
    assert [a["value"] for a in h.check()["duplicate"]] == [1]


def test_acknowledged_at_one_offset_read_at_another_is_a_duplicate():
    h = H()
    h.send(0, "k", (1, 0), (2, 1))
    h.poll(1, {"k": [(0, 2)]})
    found = h.check()
    assert {a["value"] for a in found["duplicate"]} == {2}
    assert found["inconsistent-offsets"][0]["offset"] == 0


def test_internal_nonmonotonic_poll_and_skip():
    h = H()
    h.send(0, "k", (1, 0), (2, 1), (3, 2))
    h.poll(1, {"k": [(1, 2), (0, 1)]})
    h.poll(2, {"k": [(0, 1), (2, 3)]})
    h.poll(3, {"k": [(1, 2)]})         # someone saw value 2: 2 is a skip, not a loss
    found = h.check()
    assert [a["offsets"] for a in found["int-nonmonotonic-poll"]] == [[1, 0]]
    assert [a["skipped"] for a in found["int-poll-skip"]] == [[1]]
    assert "lost-write" not in found


def test_external_nonmonotonic_poll_and_skip():
    h = H()
    h.send(0, "k", (1, 0), (2, 1), (3, 2), (4, 3))
    h.poll(1, {"k": [(0, 1), (1, 2)]})
    h.poll(1, {"k": [(0, 1)]})          # went back
    h.poll(2, {"k": [(0, 1)]})
    h.poll(2, {"k": [(2, 3), (3, 4)]})  # skipped offset 1
    found = h.check()
    assert [(a["process"], a["offsets"]) for a in found["nonmonotonic-poll"]] == [(1, [1, 0])]
    assert [(a["process"], a["skipped"]) for a in found["poll-skip"]] == [(2, [1])]


def test_a_new_assignment_or_a_rebalance_resets_positions():
    h = H()
    h.send(0, "k", (1, 0), (2, 1))
    h.poll(1, {"k": [(0, 1), (1, 2)]})
    h.assign(1, ["k"])
    h.poll(1, {"k": [(0, 1), (1, 2)]})
    h.poll(1, {"k": [(0, 1)]}, rebalanced=True)
    assert h.check() == {}


def test_skip_ignores_aborted_values():
    h = H()
    h.send(0, "k", (1, 0))
    h.txn(2, [("send", "k", 2, 1)], type_="fail")
    h.send(0, "k", (3, 3))
    h.poll(1, {"k": [(0, 1), (3, 3)]})
    assert h.check() == {}


def test_nonmonotonic_sends():
    h = H()
    h.send(0, "k", (1, 5), (2, 4))
    h.send(0, "k", (3, 3))
    h.poll(1, {"k": [(3, 3), (4, 2), (5, 1)]})
    found = h.check()
    assert [a["offsets"] for a in found["int-nonmonotonic-send"]] == [[5, 4]]
    assert [a["offsets"] for a in found["nonmonotonic-send"]] == [[4, 3]]


def test_aborted_read():
    h = H()
    h.txn(0, [("send", "k", 1, 0)], type_="fail")
    h.poll(1, {"k": [(0, 1)]})
    assert [a["value"] for a in h.check()["aborted-read"]] == [1]


def test_garbage_read():
    h = H()
    h.poll(1, {"k": [(0, 99)]})
    assert [a["value"] for a in h.check()["garbage-read"]] == [99]


def test_dirty_read_before_the_commit_was_asked():
    h = H()
    h.txn(0, [("send", "k", 1, 0)], commit_time=10_000)
    h.poll(1, {"k": [(0, 1)]})           # completes at t=40, long before the commit
    found = h.check()
    assert [a["value"] for a in found["dirty-read"]] == [1]
    h2 = H()
    h2.txn(0, [("send", "k", 1, 0)], commit_time=15)
    h2.poll(1, {"k": [(0, 1)]})
    assert h2.check() == {}


def test_g0_write_cycle():
    h = H()
    # T1 before T2 on x, T2 before T1 on y
    t1 = h.txn(1, [("send", "x", 1, 0), ("send", "y", 2, 1)])
    t2 = h.txn(2, [("send", "x", 3, 1), ("send", "y", 4, 0)])
    h.poll(9, {"x": [(0, 1), (1, 3)], "y": [(0, 4), (1, 2)]})
    found = h.check()
    assert set(found) == {"G0"}
    assert found["G0"][0]["ops"] == sorted([t1, t2])
    assert all(step[1] == ["ww"] for step in found["G0"][0]["cycle"])


def test_g1c_write_read_cycle():
    h = H()
    # T1 writes x then T2 writes x after it (ww T1->T2); T1 read T2's write on y (wr T2->T1)
    h.send(0, "y", (5, 0))
    t2 = h.txn(2, [("send", "x", 3, 1), ("send", "y", 4, 1)])
    t1 = h.txn(1, [("send", "x", 1, 0), ("poll", {"y": [(1, 4)]})])
    h.poll(9, {"x": [(0, 1), (1, 3)], "y": [(0, 5), (1, 4)]})
    found = h.check()
    assert set(found) == {"G1c"}, found
    assert found["G1c"][0]["ops"] == sorted([t1, t2])


def test_g_single_anti_dependency_cycle():
    h = H()
    # T1 read x up to offset 0 and missed T2's write at offset 1 (rw T1->T2); T1 read T2's y (wr T2->T1)
    h.send(0, "x", (5, 0))
    t2 = h.txn(2, [("send", "x", 3, 1), ("send", "y", 4, 0)])
    t1 = h.txn(1, [("poll", {"x": [(0, 5)], "y": [(0, 4)]})])
    h.poll(9, {"x": [(0, 5), (1, 3)]})
    found = h.check()
    assert set(found) == {"G-single"}, found
    assert found["G-single"][0]["ops"] == sorted([t1, t2])


def test_g2_two_anti_dependencies():
    h = H()
    # write skew: T1 reads x (misses T2's write), T2 reads y (misses T1's write)
    h.send(0, "x", (5, 0))
    h.send(0, "y", (6, 0))
    t1 = h.txn(1, [("poll", {"x": [(0, 5)]}), ("send", "y", 1, 1)])
    t2 = h.txn(2, [("poll", {"y": [(0, 6)]}), ("send", "x", 2, 1)])
    h.poll(9, {"x": [(0, 5), (1, 2)], "y": [(0, 6), (1, 1)]})
    found = h.check()
    assert set(found) == {"G2"}, found
    assert found["G2"][0]["ops"] == sorted([t1, t2])


def test_minimize_keeps_a_small_history_that_still_shows_the_anomaly():
    from tests.support.history.minimize import minimize, summary
    h = clean()
    t1 = h.txn(7, [("send", "x", 101, 0), ("send", "y", 102, 1)])
    t2 = h.txn(8, [("send", "x", 103, 1), ("send", "y", 104, 0)])
    h.poll(9, {"x": [(0, 101), (1, 103)], "y": [(0, 104), (1, 102)]})
    small = minimize(h.ops, "G0")
    assert "G0" in check(small)
    assert {o.index for o in small if o.type == "invoke"} <= {t1, t2, h.ops[-2].index}
    assert summary("kbroker", h.ops, check(h.ops)) == \
        "kbroker: 12 ops, anomalies: none (cycles Kafka's transactions allow: G0 x1)"
    assert summary("kbroker", 5, {"lost-write": 2, "G2": [{}]}) == \
        "kbroker: 5 ops, anomalies: lost-write x2 (cycles Kafka's transactions allow: G2 x1)"
    assert summary("kafka", clean().ops, {}) == "kafka: 9 ops, anomalies: none"


def test_an_op_that_did_not_complete_ok_resets_its_process_positions():
    h = H()
    h.send(0, "k", (1, 0), (2, 1), (3, 2))
    h.poll(1, {"k": [(0, 1)]})
    h.txn(1, [("poll", {"k": [(1, 2)]})], type_="info")     # what it read is not recorded
    h.poll(1, {"k": [(2, 3)]})
    h.poll(2, {"k": [(0, 1), (1, 2), (2, 3)]})
    assert h.check() == {}


def test_the_checker_is_pure():
    """model, checker, graph and minimize import only each other and a few standard modules:
    no broker, no client, no clock, no socket."""
    import ast
    from pathlib import Path
    allowed = {"__future__", "json", "dataclasses", "typing", "collections", "bisect"}
    here = Path(__file__).resolve().parents[1] / "support" / "history"
    for name in ("model", "checker", "graph", "minimize"):
        tree = ast.parse((here / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [] if node.level else [node.module.split(".")[0]]
            else:
                continue
            assert set(names) <= allowed, f"{name}.py imports {names}"
