"""The benchmark's scale rows (benchmarks/harness/scale.py) run end to end against kbroker.

A guard against the harness rotting, not a benchmark: the rows run at tiny sizes on real
kbroker processes (the bench's own `Session`, which starts `kbroker serve`), and the tests
check that every row recorded a value and none failed — each group size reaching Stable with
every member in one generation, every idempotent producer acknowledged, every connection
answered — once with a fresh broker per row (the full plan's way) and once as the quick plan
runs them, on one broker shared with the start-up rows (`Plan.shared_broker`). No time is
asserted.
"""
from __future__ import annotations

import math

import pytest

from benchmarks.harness import plan as plans
from benchmarks.harness import scale
from benchmarks.harness.run import Results, Session

SCALE_ROWS = {"scale-part-create", "scale-part-rss", "scale-part-metadata", "scale-part-stop", "scale-part-restart",
              "scale-part-restart-cpu", "scale-conn-rate", "scale-conn-rss",
              "scale-group-join-3", "scale-group-gen-3", "scale-group-join-6",
              "scale-group-gen-6", "scale-producers-rss"}


def _one_value_each(results: Results, sids: set[str]) -> None:
    assert results.meta.get("failed") is None
    assert set(results.scenarios) == sids
    for sid in sids:
        (value,) = results.scenarios[sid]["values"]["kbroker"]
        assert not math.isnan(value), sid


def _check_group_rows(results: Results) -> None:
    # each size ends in one generation that every member synced (and the leader saw all);
    # the broker CPU of the join is the row's secondary value
    for m in (3, 6):
        (raw,) = results.scenarios[f"scale-group-join-{m}"]["raw"]["kbroker"]
        assert raw["generation"] >= 1
        assert results.scenarios[f"scale-group-gen-{m}"]["values"]["kbroker"] == [raw["generation"]]
        assert results.scenarios[f"scale-group-join-{m}"]["secondary"]["kbroker"] == [raw["broker_cpu_s"]]
        # the counts beside the time: every member asked twice (KIP-394's MEMBER_ID_REQUIRED
        # first) and synced at least once; the last generation had every member
        t = raw["timeline"]
        assert t["requests"]["join"] >= 2 * m and t["requests"]["sync"] >= m
        assert t["errors"]["join:79"] == m == t["first_join_answer_s"]["n"]
        assert t["generations"][str(raw["generation"])]["joined"] == m


def test_scale_rows_record_a_value_each(tmp_path):
    plan = plans.full()
    plan.reps = 1
    plan.scale = plans.Scale(partitions=200, connections=40, group_members=(6, 3), producers=8)
    assert plan.scale.group_members == (3, 6)      # run in ascending order
    results = Results({})
    session = Session("kbroker", plan, results, tmp_path)
    session.workroot.mkdir(parents=True)
    scale.run_all(session)
    _one_value_each(results, SCALE_ROWS)
    _check_group_rows(results)
    (raw,) = results.scenarios["scale-producers-rss"]["raw"]["kbroker"]
    assert raw["rss_after"] > 0


def test_quick_plan_shares_one_broker(tmp_path):
    """The quick plan's start-up, metadata and scale rows on one kbroker: the 200-partition
    creation and timed restart fill the start-up, metadata and scale partitions rows at once,
    and the same process then serves the connections, group and producers rows."""
    plan = plans.quick()
    assert plan.shared_broker and not plans.full().shared_broker
    plan.startup_partitions = plan.metadata_partitions = 200
    plan.scale = plans.Scale(partitions=200, connections=40, group_members=(3, 6), producers=8)
    results = Results({})
    session = Session("kbroker", plan, results, tmp_path,
                      only={"startup", "metadata", "scale"})
    started = []
    real_broker = session._broker
    session._broker = lambda tag: started.append(tag) or real_broker(tag)
    session.run()
    # the unmeasured warm-up start (Session.warm_start), then one broker for every row
    assert started == ["startup-warm", "startup-empty-0"]
    startup = {"startup-empty", "startup-empty-cpu", "startup-restart", "startup-restart-cpu",
               "rss-idle", "startup-many", "startup-many-cpu", "metadata-create"}
    _one_value_each(results, SCALE_ROWS | startup)
    _check_group_rows(results)
    # the start-up row with many partitions and the scale restart row are one measurement
    assert results.scenarios["startup-many"]["values"] == results.scenarios["scale-part-restart"]["values"]


def test_a_size_of_zero_leaves_its_row_out(tmp_path):
    """`--scale-sizes 0,0,100/250,0` runs the group rows alone: no broker is started for
    a row of size 0, and group sizes are kept in ascending order without the zeros."""
    sizes = plans.Scale(partitions=0, connections=0, group_members=(250, 0, 100), producers=0)
    assert sizes.group_members == (100, 250)
    plan = plans.full()
    plan.scale = plans.Scale(partitions=0, connections=0, group_members=(0,), producers=0)
    results = Results({})
    session = Session("kbroker", plan, results, tmp_path)
    session._broker = lambda tag: pytest.fail(f"a broker was started for {tag}")
    scale.run_all(session)
    assert results.scenarios == {} and results.meta.get("failed") is None


def test_a_reset_connection_goes_to_its_error_callback(tmp_path):
    """rawclient: a connection reset by the other side (a listener that accepts and closes
    with SO_LINGER 0, which sends RST) is closed and its error handed to `on_error` instead
    of being raised out of the loop."""
    import socket as socket_mod
    import struct

    from benchmarks.harness.rawclient import Loop
    from kbroker.wire import messages as w

    server = socket_mod.create_server(("127.0.0.1", 0))
    loop = Loop()
    try:
        conn = loop.connect("127.0.0.1", server.getsockname()[1])
        errors = []
        conn.on_error = errors.append
        conn.request(18, 0, w.ApiVersionsRequest(), lambda resp: None)
        peer, _ = server.accept()
        peer.setsockopt(socket_mod.SOL_SOCKET, socket_mod.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()
        loop.run_until(lambda: bool(errors), timeout=30)
        assert isinstance(errors[0], ConnectionError) and conn.closed
    finally:
        loop.close()
        server.close()


def test_a_member_whose_connection_breaks_reconnects_and_rejoins(tmp_path):
    """The group row's members reconnect as a client library does: when a member's
    connection breaks (the error is handed to its callback by the test, as the loop does on
    a reset, above), it connects again and joins again; the group still reaches Stable with
    every member, and the row counts the reset."""
    from benchmarks.harness.brokers import make_broker
    from benchmarks.harness.rawclient import Loop

    b = make_broker("kbroker", tmp_path / "b")
    b.start()
    loop = Loop()
    try:
        scale.create_topics(b.bootstrap_servers, [("t", 1)])
        scale._find_coordinator(loop, b.host, b.port, ["g"])
        g = scale._Group(loop, b.host, b.port, "g", "t", 3)
        g.connect_all()
        first = g.members[0]
        broken = first.conn
        for m in g.members:
            m.join()
        broken.close()
        broken.on_error(ConnectionResetError(104, "reset"))
        assert first.conn is not broken and g.resets == 1
        loop.later(0.5, g.heartbeats)
        loop.run_until(lambda: g.stable_at is not None, timeout=120)
        generation = max(m.synced for m in g.members)
        assert {m.synced for m in g.members} == {generation}
        assert g.leader_members[generation] == 3
    finally:
        loop.close()
        b.kill()
