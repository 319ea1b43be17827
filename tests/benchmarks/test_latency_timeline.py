"""benchmarks/latency_timeline.py: how slow records are grouped into clusters, how the canary's
slow windows are found, and which clusters a window explains. Hand-made timelines, no broker,
no time measured (the tool's client is `rdkafka_load latency`, which
tests/benchmarks/test_latency_rows.py runs against a real broker, with ``--timeline`` too)."""
from __future__ import annotations

import json
import uuid

from benchmarks.harness.run import rdkafka
from benchmarks.latency_timeline import Span, clusters, overlapping, report, slow_windows

MS = 1_000_000  # ns


def _steady(n: int, start_ms: int = 0, latency: float = 0.5) -> list[tuple[int, float]]:
    return [((start_ms + i) * MS, latency) for i in range(n)]


def test_slow_records_close_together_form_one_cluster():
    records = _steady(1000)
    # a stall: records sent at 300..339 ms all delivered at 380 ms
    records[300:340] = [(t, (380 * MS - t) / MS) for t, _ in records[300:340]]
    # a lone slow record far away
    records[800] = (800 * MS, 7.0)
    got = clusters(records, slow_ms=5, gap_ms=50)
    assert [(c.count, round(c.worst)) for c in got] == [(40, 80), (1, 7)]
    assert got[0].start == 300 * MS and got[0].end == 380 * MS
    # a gap longer than gap_ms splits a cluster
    assert len(clusters(records, slow_ms=5, gap_ms=0.5)) == 40 + 1


def test_canary_windows_need_a_run_of_slow_samples():
    samples = [(i * 2 * MS, 30.0) for i in range(500)]
    for i in range(100, 120):            # 40 ms at ten times the median
        samples[i] = (samples[i][0], 300.0)
    samples[400] = (samples[400][0], 500.0)      # one slow sample alone: no window
    windows, median = slow_windows(samples, factor=4, gap_ms=50)
    assert median == 30.0
    assert len(windows) == 1
    w = windows[0]
    assert w.count == 20 and w.worst == 10.0
    assert w.start < 200 * MS < 238 * MS == w.end


def test_a_cluster_is_matched_to_the_window_it_overlaps():
    window = Span(100 * MS, 160 * MS, 30, 12.0)
    assert overlapping(Span(150 * MS, 200 * MS, 10, 50.0), [window]) is window
    assert overlapping(Span(40 * MS, 99 * MS, 10, 50.0), [window]) is None
    assert overlapping(Span(40 * MS, 99 * MS, 10, 50.0), [window], margin_ms=2) is window


def test_report_counts_the_tail_inside_the_machine_windows():
    records = _steady(2000)
    records[1000:1060] = [(t, (1070 * MS - t) / MS) for t, _ in records[1000:1060]]
    samples = [(i * 2 * MS, 25.0) for i in range(1000)]
    for i in range(500, 530):
        samples[i] = (samples[i][0], 400.0)
    rep = report(records, samples, slow_ms=5, gap_ms=50, factor=4)
    assert rep["records"] == 2000 and rep["clusters"] == 1
    assert rep["clusters_in_machine_windows"] == 1
    assert rep["above_p99"] > 0 and rep["above_p99_in_machine_windows"] == rep["above_p99"]
    # the records sent from 999 ms on overlap the window (1000 - 0.4 .. 1058 ms), the last
    # slow ones and the steady ones after it do not
    assert rep["all_in_machine_windows"] == len([s for s, ms in records
                                                 if s + ms * MS >= 999.6 * MS and s <= 1058 * MS])
    assert rep["cluster_rows"][0]["machine_slow"]["slowdown"] == 16.0
    json.dumps(rep)


def test_the_client_writes_the_timeline(kbroker, tmp_path):
    topic = kbroker.create_topic(f"timeline-{uuid.uuid4().hex[:8]}", partitions=1)
    path = tmp_path / "timeline.json"
    out = rdkafka("latency", kbroker.bootstrap_servers, topic, "--rate", "200", "--seconds", "1",
                  "--size", "1024", "--timeline", str(path), timeout=120)
    rows = json.loads(path.read_text())
    assert len(rows) == out["records"] == 200
    assert len({sent for sent, _ in rows}) == 200
    assert max(ms for _, ms in rows) == out["max_ms"]
