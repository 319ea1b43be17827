"""benchmarks/latency_ab.py: two source trees' brokers, alternating on the latency rows'
client. What is checked is the alternation and the counting of the pairs, never a time."""
from __future__ import annotations

import re

from benchmarks.harness.brokers import ROOT
from benchmarks.latency_ab import main, summary


def _r(p50: float, p99: float) -> dict:
    return {"p50_ms": p50, "p99_ms": p99}


def test_the_summary_counts_each_round_for_the_tree_with_the_lower_p50():
    results = {("this", 500): [_r(0.40, 1.0), _r(0.50, 2.0), _r(0.30, 3.0)],
               ("other", 500): [_r(0.45, 1.5), _r(0.45, 1.0), _r(0.35, 0.5)]}
    lines = summary(results, ["this", "other"], [500])
    assert lines[2] == "| 500 | this | 0.400 | 2.000 | 2 of 3 |"
    assert lines[3] == "| 500 | other | 0.450 | 1.000 | 1 of 3 |"


def test_both_trees_run_each_rate_in_turn(capsys):
    # this checkout against itself: one round, one short row per broker
    assert main([str(ROOT), "--rates", "200", "--rounds", "1", "--seconds", "1",
                 "--warm-up", "0"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^round 1 (this|other)\s+200/s p50 [\d.]+ p99 [\d.]+ ms \((\d+)/(\d+)\)$",
                      out, re.M)
    assert [name for name, _, _ in rows] == ["this", "other"]
    assert all(got == expected == "200" for _, got, expected in rows), rows
    assert re.search(r"^\| 200 \| this \| [\d.]+ \| [\d.]+ \| [01] of 1 \|$", out, re.M)
    assert re.search(r"^\| 200 \| other \| [\d.]+ \| [\d.]+ \| [01] of 1 \|$", out, re.M)


def test_split_rows_print_the_latency_on_both_sides_of_the_append(capsys):
    # LogAppendTime topics: each record's append time splits its latency in two parts
    assert main([str(ROOT), "--rates", "200", "--rounds", "1", "--seconds", "1",
                 "--warm-up", "0", "--split"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^round 1 (this|other)\s+200/s p50 ([\d.]+) p99 [\d.]+ ms \(200/200\)"
                      r" \| to append p50 (-?[\d.]+) p99 -?[\d.]+, after p50 (-?[\d.]+) p99 -?[\d.]+$",
                      out, re.M)
    assert [r[0] for r in rows] == ["this", "other"], out
    for _, total, before, after in rows:
        # the append time is whole milliseconds: each part within a millisecond of the range
        assert -1.0 <= float(before) <= float(total) + 1.0
        assert -1.0 <= float(after) <= float(total) + 1.0
