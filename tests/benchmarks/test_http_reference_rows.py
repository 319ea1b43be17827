"""The benchmark's optional http rows (benchmarks/harness/http_reference.py), kbroker's side.

A guard against the harness rotting, not a benchmark: the rows' kbroker side runs at tiny
sizes on a real ``kbroker serve`` with its registry and gateway, and the test checks that each
row recorded a rate and latencies (every registration, lookup, produce and poll answered as
the row expects; the rows assert their statuses). Karapace's side needs a Karapace install
and runs only from ``bench.py --karapace-venv``. No time is asserted.
"""
from __future__ import annotations

from benchmarks.harness import http_reference


def test_kbroker_side_records_every_row(tmp_path):
    sizes = http_reference.Sizes(schemas=12, lookups=20, rest_records=300, per_request=50, reps=1)
    got = http_reference._kbroker_side(tmp_path, sizes, lambda msg: None)
    assert set(got) == set(http_reference.ROWS)
    for key, (rate, p50, p99) in got.items():
        assert rate > 0 and 0 < p50 <= p99, (key, rate, p50, p99)
