"""The paired order of the load rows (benchmarks/harness/paired.py), without brokers.

The stages here stand for two brokers' load groups: each "broker" is a real idle process (a
`sleep`, whose CPU the paired order reads while the other is measured) and each step records
its name in a shared log instead of running a load. The tests check the order the steps
ran in (each row's repetitions alternating A B, B A, ..., the unmeasured work of a stage
broker after broker before its rows), that every measurement got the idle neighbour's
CPU seconds, and that stages which do not match are refused. No time is asserted.
"""
from __future__ import annotations

import subprocess

import pytest

from benchmarks.harness.paired import Block, abba, run_paired, run_stages, wait_quiet
from benchmarks.harness.run import Results


def test_abba_alternates_which_broker_goes_first():
    assert abba(["kbroker", "kafka"], 4) == [("kbroker", "kafka"), ("kafka", "kbroker"),
                                             ("kbroker", "kafka"), ("kafka", "kbroker")]
    assert abba(["kbroker", "kafka"], 1) == [("kbroker", "kafka")]
    assert abba(["kbroker"], 3) == [("kbroker",)] * 3
    # every pair of repetitions puts each broker first once
    order = abba(["a", "b"], 6)
    assert sum(o[0] == "a" for o in order) == sum(o[0] == "b" for o in order) == 3
    # a row that follows one of three repetitions goes on with the sequence
    assert abba(["a", "b"], 3, start=3) == [("b", "a"), ("a", "b"), ("b", "a")]


@pytest.fixture
def idle_pids():
    procs = [subprocess.Popen(["sleep", "600"]) for _ in range(2)]
    yield [p.pid for p in procs]
    for p in procs:
        p.kill()
        p.wait()


def _results(sids):
    r = Results({})
    for sid in sids:
        r.scenario(sid, title=sid, group="produce", unit="MB/s", better="higher")
    return r


def _stages(name, pid, log, results, reps=2, closed=None):
    """Two stages: a setup, then one block of two rows sharing their repetitions; a second
    setup, then one row of its own."""
    def step(sid):
        def run():
            log.append((sid, name))
            results.add(sid, name, 1.0)
        return run
    try:
        log.append(("setup-1", name))
        yield [Block(pid, reps, [("row-a", step("row-a")), ("row-b", step("row-b"))])]
        log.append(("setup-2", name))
        yield [Block(pid, reps, [("row-c", step("row-c"))])]
    finally:
        if closed is not None:
            closed.append(name)


def test_paired_rows_alternate_and_record_the_idle_neighbour(idle_pids):
    log: list = []
    closed: list = []
    r = _results(["row-a", "row-b", "row-c"])
    run_paired(r, {"kbroker": _stages("kbroker", idle_pids[0], log, r, reps=3, closed=closed),
                   "kafka": _stages("kafka", idle_pids[1], log, r, reps=3, closed=closed)})
    K, J = "kbroker", "kafka"
    assert log == [
        ("setup-1", K), ("setup-1", J),
        ("row-a", K), ("row-a", J), ("row-a", J), ("row-a", K), ("row-a", K), ("row-a", J),
        ("row-b", J), ("row-b", K), ("row-b", K), ("row-b", J), ("row-b", J), ("row-b", K),
        ("setup-2", K), ("setup-2", J),
        ("row-c", K), ("row-c", J), ("row-c", J), ("row-c", K), ("row-c", K), ("row-c", J)]
    assert sorted(closed) == [J, K]
    for sid in ("row-a", "row-b", "row-c"):
        s = r.scenarios[sid]
        assert s["values"] == {K: [1.0] * 3, J: [1.0] * 3}
        # one entry per measurement, naming the other broker as the idle one
        assert [e["idle"] for e in s["idle_neighbour"][K]] == [J] * 3
        assert [e["idle"] for e in s["idle_neighbour"][J]] == [K] * 3
        for entries in s["idle_neighbour"].values():
            assert all(e["cpu_s"] >= 0 and e["wall_s"] >= 0 for e in entries)
            # the sleeping "brokers" are quiet: one window of waiting, never the timeout
            assert all(0 < e["settle_s"] < 10 for e in entries)
    summary = r.idle_summary()
    assert set(summary) == {K, J}
    assert summary[K]["measurements"] == summary[J]["measurements"] == 9


def test_wait_quiet_returns_once_idle_processes_used_no_cpu(idle_pids):
    # a sleeping process uses no CPU: the first window is quiet, far before the timeout
    assert wait_quiet(idle_pids, window=0.05, timeout=60) < 60


def test_in_turn_each_block_keeps_its_repetitions_together(idle_pids):
    log: list = []
    r = _results(["row-a", "row-b", "row-c"])
    run_stages(_stages("kbroker", idle_pids[0], log, r, reps=2))
    assert [sid for sid, _ in log] == ["setup-1", "row-a", "row-b", "row-a", "row-b",
                                       "setup-2", "row-c", "row-c"]
    assert "idle_neighbour" not in r.scenarios["row-a"]


def test_stages_out_of_step_are_refused_and_closed(idle_pids):
    log: list = []
    closed: list = []
    r = _results(["row-a", "row-b", "row-c"])

    def short():
        try:
            log.append(("setup-1", "kafka"))
            yield [Block(idle_pids[1], 2, [("row-a", lambda: None), ("row-b", lambda: None)])]
        finally:
            closed.append("kafka")

    with pytest.raises(RuntimeError, match="out of step"):
        run_paired(r, {"kbroker": _stages("kbroker", idle_pids[0], log, r, closed=closed),
                       "kafka": short()})
    assert sorted(closed) == ["kafka", "kbroker"]

    mismatched = {"kbroker": _stages("kbroker", idle_pids[0], [], r),
                  "kafka": _stages("kafka", idle_pids[1], [], r, reps=3)}
    with pytest.raises(RuntimeError, match="rows differ"):
        run_paired(r, mismatched)
