"""The benchmark's scale rows (benchmarks/harness/scale.py) run end to end against kbroker.

A guard against the harness rotting, not a benchmark: the rows run at tiny sizes on real
kbroker processes (the bench's own `Session`, which starts `kbroker serve`), and the test
checks that every row recorded a value and none failed — the group row reaching Stable with
every member in one generation, every idempotent producer acknowledged, every connection
answered. No time is asserted.
"""
from __future__ import annotations

import math

from benchmarks.harness import plan as plans
from benchmarks.harness import scale
from benchmarks.harness.run import Results, Session


def test_scale_rows_record_a_value_each(tmp_path):
    plan = plans.quick()
    plan.scale = plans.Scale(partitions=200, connections=40, group_members=6, producers=8)
    results = Results({})
    session = Session("kbroker", plan, results, tmp_path)
    session.workroot.mkdir(parents=True)
    scale.run_all(session)
    assert results.meta.get("failed") is None
    expected = {"scale-part-create", "scale-part-rss", "scale-part-metadata", "scale-part-restart",
                "scale-part-restart-cpu", "scale-conn-rate", "scale-conn-rss", "scale-group-join",
                "scale-producers-rss"}
    assert set(results.scenarios) == expected
    for sid in expected:
        (value,) = results.scenarios[sid]["values"]["kbroker"]
        assert not math.isnan(value), sid
    # the group row ends in one generation that every member synced (and the leader saw all 6)
    (raw,) = results.scenarios["scale-group-join"]["raw"]["kbroker"]
    assert raw["generation"] >= 1
    (raw,) = results.scenarios["scale-producers-rss"]["raw"]["kbroker"]
    assert raw["rss_after"] > 0
