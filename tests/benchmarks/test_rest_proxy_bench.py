"""benchmarks/rest_proxy_bench.py at tiny sizes: a guard against the benchmark rotting, not a
benchmark. Each case (gateway off, on and idle, on and busy) runs on a real ``kbroker serve``;
the test checks that every record was acknowledged and read back (produce_fetch raises
otherwise) and that the busy case's REST client had its batches acknowledged meanwhile. No
time is asserted."""
from __future__ import annotations

import argparse

from benchmarks import rest_proxy_bench


def test_every_case_produces_fetches_and_the_busy_gateway_answers(tmp_path):
    args = argparse.Namespace(records=300, size=64, reps=1, rest_batch=20)
    got = {case: rest_proxy_bench.one_case(case, tmp_path, 0, args)
           for case in rest_proxy_bench.CASES}
    for case, result in got.items():
        assert result["produce_rate"] > 0 and result["fetch_rate"] > 0, (case, result)
    assert got["busy"]["rest_records_per_s"] > 0
