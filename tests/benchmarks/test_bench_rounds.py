"""The full plan's rounds (benchmarks/bench.py `rounds`): every repetition of a row is one
round, both brokers run in every round, their order flips, and the rows that repeat on their
own run once."""
from __future__ import annotations

from benchmarks import bench
from benchmarks.harness import plan as plans


def test_the_full_plan_runs_one_repetition_per_round_with_the_order_flipped():
    full = plans.full()
    got = bench.rounds(full, None, ["kbroker", "kafka"])
    assert len(got) == full.reps == 3
    assert [order for _, _, order in got] == [["kbroker", "kafka"], ["kafka", "kbroker"],
                                               ["kbroker", "kafka"]]
    for plan, _, _ in got:
        assert (plan.reps, plan.consume_reps) == (1, 1)
        assert plan.produce == full.produce and plan.scale == full.scale
    assert got[0][1] == set(bench.GROUPS)
    assert all(g[1] == set(bench.GROUPS) - {"metadata", "scale"} for g in got[1:])


def test_only_the_rows_asked_for_run_and_a_once_only_group_is_not_repeated():
    got = bench.rounds(plans.full(), {"scale"}, ["kbroker", "kafka"])
    assert [(only, order) for _, only, order in got] == [({"scale"}, ["kbroker", "kafka"])]
    got = bench.rounds(plans.full(), {"produce", "metadata"}, ["kbroker", "kafka"])
    assert [only for _, only, _ in got] == [{"produce", "metadata"}, {"produce"}, {"produce"}]


def test_the_quick_plan_and_a_single_repetition_run_once_per_broker():
    quick = plans.quick()
    assert bench.rounds(quick, None, ["kbroker", "kafka"]) == [(quick, None, ["kbroker", "kafka"])]
    one = plans.full()
    one.reps = 1
    assert bench.rounds(one, {"produce"}, ["kafka"]) == [(one, {"produce"}, ["kafka"])]
