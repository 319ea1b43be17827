"""kafka-python 2.x (pinned in requirements-kp2.txt, its own venv .venv-kp2 from `make kp2`)
against a real kbroker process, through tests/clients/kp2_driver.py run as a subprocess.

Covers: KafkaAdminClient create topic; produce with keys, headers and every codec; consume
from earliest with assign; a consumer group committing part way and a second member resuming
from the commit; offsets_for_times; the pipelined ApiVersions v0 + Metadata v0 that
kafka-python 2.0.x sends on a fresh socket; api_version auto-detection; clients pinned to old
api_versions ((0, 10, 0) metadata only — kbroker serves Produce from v3 and Fetch from v4 —
and (0, 11) / (1, 0) for data and groups).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.broker_proc import REPO_ROOT

from .conftest import PAYLOAD_CODECS

KP2_PYTHON = REPO_ROOT / ".venv-kp2" / "bin" / "python"
DRIVER = Path(__file__).with_name("kp2_driver.py")
AUTO = None                     # api_version auto-detection
DATA_PINS = [AUTO, (0, 11), (1, 0)]


def run(bootstrap: str, steps: list[dict], timeout: float = 90) -> list[dict]:
    """Run the driver's steps; every step must succeed (no ``error``); the results."""
    assert KP2_PYTHON.exists(), f"{KP2_PYTHON} is missing: run make kp2"
    proc = subprocess.run([str(KP2_PYTHON), str(DRIVER), "-"], cwd=REPO_ROOT,
                          input=json.dumps({"bootstrap": bootstrap, "steps": steps}),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"driver exited {proc.returncode}\n{proc.stderr[-4000:]}"
    out = json.loads(proc.stdout)
    assert out["kafka_python"].startswith("2."), out["kafka_python"]
    return out["results"]


def ok(results: list[dict]) -> list[dict]:
    for r in results:
        assert "error" not in r, f"step {r['op']} failed: {r['error']}\n{r.get('traceback', '')}"
    return results


def pin(api_version) -> dict:
    return {"api_version": list(api_version)} if api_version else {}


def pin_id(api_version) -> str:
    return "auto" if api_version is None else "v" + ".".join(map(str, api_version))


def expected_records(n: int) -> list[tuple]:
    return [(i, f"k{i}", f"value-{i}-" + "x" * 100,
             [["h", str(i)], ["empty", ""]] if i % 2 else []) for i in range(n)]


def as_tuples(records: list[dict]) -> list[tuple]:
    return [(r["offset"], r["key"], r["value"], r["headers"]) for r in records]


def test_driver_runs_kafka_python_2():
    assert KP2_PYTHON.exists(), f"{KP2_PYTHON} is missing: run make kp2"
    proc = subprocess.run([str(KP2_PYTHON), "-c",
                           "import kafka, sys; from kafka import codec; "
                           "print(kafka.__version__, codec.has_snappy(), codec.has_lz4(), codec.has_zstd())"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    version, *codecs = proc.stdout.split()
    assert version.startswith("2."), version
    assert codecs == ["True", "True", "True"], "codec packages missing from .venv-kp2: run make kp2"


def test_old_handshake_apiversions_v0_then_metadata_v0(bootstrap):
    """kafka-python 2.0.x's check_version: ApiVersions v0 and Metadata v0 pipelined on one
    socket, answered in order, and the socket still works after."""
    [r] = ok(run(bootstrap, [{"op": "old_handshake"}]))
    av, md = r["api_versions"], r["metadata"]
    assert av["correlation_id"] == 1 and av["error_code"] == 0
    assert av["apis"]["18"][0] == 0 and av["apis"]["3"][0] == 0      # v0 of both still served
    assert md["correlation_id"] == 2
    host, port = bootstrap.rsplit(":", 1)
    assert [b[1:] for b in md["brokers"]] == [[host, int(port)]]
    assert r["third_correlation_id"] == 3


def test_api_version_autodetection(bootstrap):
    [r] = ok(run(bootstrap, [{"op": "autodetect"}]))
    assert tuple(r["api_version"]) >= (2, 1)          # Produce v7 / Fetch v10: zstd allowed
    assert r["check_version"] == r["api_version"]


@pytest.mark.parametrize("codec", PAYLOAD_CODECS)
def test_produce_consume_codecs_keys_headers(bootstrap, topic_name, codec):
    n = 60
    create, pc = ok(run(bootstrap, [
        {"op": "create_topic", "topic": topic_name},
        {"op": "produce_consume", "topic": topic_name, "codec": codec, "n": n}]))
    assert create["partitions"] == 1
    assert "skipped" not in pc, pc["skipped"]
    assert pc["produced_offsets"] == list(range(n))
    assert as_tuples(pc["records"]) == expected_records(n)


@pytest.mark.parametrize("api_version", [(0, 11), (1, 0), (2, 0)], ids=pin_id)
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_produce_consume_pinned_old_api_version(bootstrap, topic_name, api_version, codec):
    """Clients pinned to old brokers' request versions: Produce v3+, Fetch v5+, ListOffsets
    v2+, Metadata v4+ (kafka-python's tables for those versions)."""
    n = 20
    _, pc = ok(run(bootstrap, [
        {"op": "create_topic", "topic": topic_name, **pin(api_version)},
        {"op": "produce_consume", "topic": topic_name, "codec": codec, "n": n, **pin(api_version)}]))
    assert pc["api_version"] == list(api_version)
    assert pc["produced_offsets"] == list(range(n))
    assert as_tuples(pc["records"]) == expected_records(n)


def test_metadata_only_pinned_0_10(bootstrap, topic_name):
    """(0, 10, 0) means Metadata v1 (Produce v2 / Fetch v2 are below what kbroker serves, so
    only metadata is checked at that pin)."""
    _, md = ok(run(bootstrap, [
        {"op": "create_topic", "topic": topic_name, "partitions": 3},
        {"op": "metadata_pinned", "topic": topic_name, "api_version": [0, 10, 0]}]))
    assert md["api_version"] == [0, 10, 0]
    assert md["partitions"] == [0, 1, 2] and md["topic_listed"]


@pytest.mark.parametrize("api_version", DATA_PINS, ids=pin_id)
def test_group_commit_then_second_consumer_resumes(bootstrap, topic_name, api_version):
    n, k = 20, 7
    _, g = ok(run(bootstrap, [
        {"op": "create_topic", "topic": topic_name, **pin(api_version)},
        {"op": "group_resume", "topic": topic_name, "group": f"g-{topic_name}", "n": n,
         "commit_at": k, **pin(api_version)}]))
    assert g["first_assignment"] == [[topic_name, 0]]
    assert g["first_offsets"] == list(range(n))
    assert g["committed_by_first"] == k
    assert g["committed_seen_by_second"] == k
    assert g["second_offsets"] == list(range(k, n))
    first = g["second_first_record"]
    assert (first["key"], first["headers"]) == (f"k{k}", [["h", str(k)], ["empty", ""]])
    assert g["committed_after_second"] == n


@pytest.mark.parametrize("api_version", [AUTO, (0, 11)], ids=pin_id)
def test_offsets_for_times(bootstrap, topic_name, api_version):
    _, r = ok(run(bootstrap, [
        {"op": "create_topic", "topic": topic_name},
        {"op": "offsets_for_times", "topic": topic_name, "n": 10, **pin(api_version)}]))
    ts = r["timestamps"]
    assert r["before_all"] == {"offset": 0, "timestamp": ts[0]}
    assert r["exact_3"] == {"offset": 3, "timestamp": ts[3]}
    assert r["between_4_5"] == {"offset": 5, "timestamp": ts[5]}
    assert r["after_all"] is None
    assert (r["beginning"], r["end"]) == (0, 10)


def test_admin_describe_topics(bootstrap, topic_name):
    create, d = run(bootstrap, [
        {"op": "create_topic", "topic": topic_name, "partitions": 2},
        {"op": "describe_topics", "topic": topic_name}])
    ok([create])
    [t] = ok([d])[0]["topics"]
    assert (t["topic"], t["error_code"], t["partitions"]) == (topic_name, 0, 2)
