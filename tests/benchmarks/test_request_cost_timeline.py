"""benchmarks/request_cost_bench.py's timeline: a real broker run under the marking wrapper,
switched on and off per phase by signals; each round of a Produce that wakes a parked Fetch
is marked along its path, and each step's median is printed. A map of the round: what is
checked is that every step is marked in every round and the steps' causal order, never a
time."""
from __future__ import annotations

import re

from benchmarks.request_cost_bench import TIMELINE_STEPS, main


def test_a_woken_round_is_marked_step_by_step(capsys):
    assert main(["-n", "20", "--counter", "timeline", "--phases", "produce-serial,fetch-woken"]) == 0
    out = capsys.readouterr().out
    # only the woken phase has rounds: a serial Produce wakes no fetch
    assert "\nproduce-serial: " not in out
    timeline = out.split("\nfetch-woken: 20 rounds\n", 1)[1]
    at = {m[1]: float(m[2].replace(",", "")) for m in
          re.finditer(r"^\| ([A-Za-z ]+) \| ([\d.,]+) \|$", timeline, re.M)}
    assert list(at) == list(TIMELINE_STEPS)
    assert at["Produce handler entered"] == 0
    # each round's marks follow its path, so do their medians: the append before the woken
    # fetch's read, the read before the answer's encoding, the write last
    path = ["Produce handler entered", "append begins", "append returns", "Fetch read begins",
            "Fetch read returns", "Fetch answer encoded", "sendmsg begins", "sendmsg returns"]
    assert [at[s] for s in path] == sorted(at[s] for s in path), at
    assert at["append returns"] <= at["Produce answer encoded"] <= at["sendmsg returns"]
    # the main table's figure for the phase is the round's median, to the answer's write
    row = re.search(r"^\| fetch-woken \| 20 \| ([\d,]+) \|", out, re.M)
    assert row and abs(int(row[1].replace(",", "")) / 1000 - at["sendmsg returns"]) <= 0.05
