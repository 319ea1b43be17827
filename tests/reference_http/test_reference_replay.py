"""Replays the reference's recorded HTTP transcripts against kbroker, field by field (#28, #35).

The other side is a file: ``compat_tests/reference_http/recorded/<transcript>.json``, the
answers of Karapace (its registry and REST proxy beside Apache Kafka 4.4) recorded by
``tools/record_reference_http.py``. One kbroker serves both the registry and the gateway for
the whole module; the first test to need it replays both transcripts in order (registry,
then gateway), so the answers do not depend on the order tests run in.

Each step is one test: every field that differs after ``compare.py``'s normalisations must be
listed, with both values, in ``known_differences.json``; every listed difference must still
happen (one that went away leaves the list); every listed difference names its entry in
``compat_tests/FINDINGS.md``.
"""
from __future__ import annotations

import json
import pytest

from compat_tests.ledger import read_ledger
from compat_tests.reference_http import replay, transcripts
from kbroker.testing.processes import KbrokerProcess, free_port

NAMES = ["registry", "rest"]
RECORDED = {name: replay.load(name) for name in NAMES}
KNOWN = replay.known_differences()


@pytest.fixture(scope="module")
def kbroker_http(tmp_path_factory):
    registry_port, rest_port = free_port(), free_port()
    broker = KbrokerProcess(tmp_path_factory.mktemp("refhttp") / "data", {
        "kbroker.schema.registry.listen": f"127.0.0.1:{registry_port}",
        "kbroker.rest.proxy.listen": f"127.0.0.1:{rest_port}",
        "group.initial.rebalance.delay.ms": "0",
    }).start()
    try:
        yield broker, {"registry": f"http://127.0.0.1:{registry_port}",
                       "rest": f"http://127.0.0.1:{rest_port}"}
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def replayed(kbroker_http):
    broker, urls = kbroker_http
    return {name: replay.replay(RECORDED[name], urls, broker.bootstrap_servers) for name in NAMES}


def _cases():
    for name in NAMES:
        for step in RECORDED[name]["steps"]:
            yield pytest.param(name, step["name"], id=f"{name}/{step['name']}")


@pytest.mark.parametrize("transcript,step", list(_cases()))
def test_step_matches_reference(replayed, transcript, step):
    result = replayed[transcript][step]
    left = replay.unexplained(transcript, step, result["diffs"], KNOWN)
    assert not left, (
        f"{transcript}/{step}: differences from the reference not in known_differences.json:\n"
        + "\n".join(f"  {f}: reference={json.dumps(a)} kbroker={json.dumps(b)}" for f, a, b in left))


@pytest.mark.parametrize("transcript", NAMES)
def test_known_differences_still_happen(replayed, transcript):
    gone = replay.stale(transcript, replayed[transcript], KNOWN)
    assert not gone, "known differences that no longer happen (remove them): " + json.dumps(gone)


def test_every_known_difference_has_an_open_finding():
    ledger = read_ledger()
    for entry in KNOWN:
        assert entry["transcript"] in NAMES and entry.get("why"), entry
        found = ledger.get(entry["finding"])
        assert found is not None, f"{entry['finding']} is not in compat_tests/FINDINGS.md"
        assert found.status.startswith("open"), f"{entry['finding']} is {found.status}"


def test_recordings_are_the_current_transcripts():
    """A recording made from an older script would replay requests nobody reviews: the
    recorded requests must be exactly what transcripts.py says today."""
    keys = ("name", "method", "path", "json", "raw", "content_type", "accept", "service")
    for name in NAMES:
        want = [{k: s[k] for k in keys if k in s} for s in transcripts.TRANSCRIPTS[name]["steps"]()]
        got = [{k: s[k] for k in keys if k in s} for s in RECORDED[name]["steps"]]
        assert got == want, f"recorded/{name}.json is out of date: re-record it"
        assert RECORDED[name]["reference"]["implementation"] == "Karapace"


def test_transcripts_cover_every_endpoint_family():
    paths = {name: {s["path"].split("?")[0] for s in RECORDED[name]["steps"]} for name in NAMES}
    registry = " ".join(paths["registry"])
    for family in ("/subjects/ref-avro/versions/latest", "/schemas/ids/", "/schemas/types",
                   "/config/", "/mode/", "/compatibility/subjects/", "/referencedby"):
        assert family in registry, family
    types = {(s.get("json") or {}).get("schemaType", "AVRO") for s in RECORDED["registry"]["steps"]
             if s["method"] == "POST" and s["path"].startswith("/subjects/")}
    assert {"AVRO", "JSON", "PROTOBUF"} <= types
    rest = " ".join(paths["rest"])
    for family in ("/brokers", "/topics/ref-gw-bin/partitions/0", "/consumers/", "/records",
                   "/positions/beginning", "/offsets", "/assignments", "/subscription"):
        assert family in rest, family
    formats = {s.get("content_type") for s in RECORDED["rest"]["steps"] if s["method"] == "POST"}
    assert {transcripts.BINARY, transcripts.JSONF, transcripts.AVROF, transcripts.JSONSCHEMAF,
            transcripts.PROTOF} <= formats
