"""Differential mode: replay the captured corpus (corpus/, see capture.py) against a fresh broker
of each target and diff every response field by field (replay.py says what is rewritten and
what is ignored, and why).

One test per API (`replay[<Api>]`): on Kafka, the live answers must equal the answers Kafka gave
at capture time (this keeps the corpus and the ignore list honest); on kbroker, they must equal
Kafka's live answers from the same session (or, when only kbroker runs, the recorded ones).
Every unexplained difference is a finding in FINDINGS.md.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from compat_tests.differential import common
from compat_tests.differential.replay import (Replayer, api_name, diff, load_corpus,
                                               timing_dependent)

CLIENT = "differential"

STEPS = load_corpus()
CORPUS_APIS = sorted({s.api_key for s in STEPS})
# API key → ledger entry for differences kbroker is known to have (one entry per API; the
# entry lists every difference the replay shows for that API).
KNOWN: dict[int, str] = {
    3: "F-001",    # Metadata: topic authorized operations
    15: "F-001",   # DescribeGroups: authorized operations
    60: "F-001",   # DescribeCluster: cluster authorized operations
    19: "F-002",   # CreateTopics: min.insync.replicas config source
    32: "F-003",   # DescribeConfigs: synonyms, broker configs, min.insync.replicas source
    55: "F-004",   # DescribeQuorum: nodes
    1: "F-005",    # Fetch: watermarks with OFFSET_OUT_OF_RANGE
    24: "F-006",   # AddPartitionsToTxn v<2: PRODUCER_FENCED not mapped
    26: "F-006",   # EndTxn v<2: PRODUCER_FENCED not mapped
}
# Kafka's live answers of this session, by step position: what kbroker is compared with.
KAFKA_LIVE: dict[int, object] = {}


BY_NAME = {api_name(k): k for k in CORPUS_APIS}


def _param(api_key: int):
    marks = [pytest.mark.known_difference(KNOWN[api_key])] if api_key in KNOWN else []
    return pytest.param(api_name(api_key), marks=marks)  # the name: a readable matrix row


def test_corpus_covers_every_advertised_api():
    """Every API kbroker advertises has at least one request in the corpus (re-run
    `python -m compat_tests.differential.capture` after kbroker gains an API)."""
    advertised = common.kbroker_ranges()
    missing = sorted(api_name(k) for k in set(advertised) - set(CORPUS_APIS))
    assert not missing, f"no request in the corpus for {missing}"
    versions = defaultdict(set)
    for step in STEPS:
        versions[step.api_key].add(step.api_version)
    # clients probe ApiVersions above the range (and get UNSUPPORTED_VERSION): not counted
    outside = {api_name(k): sorted(v) for k, v in versions.items()
               if k in advertised and k != 18
               and not all(advertised[k][0] <= x <= advertised[k][1] for x in v)}
    assert not outside, f"corpus versions kbroker does not advertise (any more): {outside}"


@pytest.fixture(scope="module")
def replayed(target, broker_pool):
    """The whole corpus replayed, in order, against a fresh broker of `target`."""
    broker = broker_pool.new(target, common.BROKER_CONFIGS)
    broker.start()
    try:
        common.warm_up(broker.bootstrap_servers)
        results = Replayer(broker.bootstrap_servers).run(STEPS)
    finally:
        broker.stop(timeout=20)
    if target == "kafka":
        KAFKA_LIVE.clear()
        KAFKA_LIVE.update({i: r.response for i, r in enumerate(results)})
    return results


@pytest.mark.parametrize("api", [_param(k) for k in CORPUS_APIS])
def test_replay(target, replayed, api):
    api_key = BY_NAME[api]
    problems = []
    for i, result in enumerate(replayed):
        step = result.step
        if step.api_key != api_key:
            continue
        if result.error:
            problems.append(f"{step.where()}: {result.error}")
            continue
        if step.recorded is None:
            continue  # acks=0 Produce: nothing to compare
        if timing_dependent(result.recorded):
            continue  # the capture's client met a coordinator loading / a commit completing
        # Kafka is compared with itself at capture time; kbroker with Kafka live in this
        # session where that replay reproduced the capture (else with the capture).
        reference, against = result.recorded, "Kafka at capture time"
        live = KAFKA_LIVE.get(i)
        if target == "kbroker" and live is not None and (
                step.incremental_fetch or not diff(api_key, result.recorded, live, limit=1)):
            reference, against = live, "Kafka (live)"
        elif step.incremental_fetch:
            continue  # replayed as a full fetch: only comparable with a live replay
        for line in diff(api_key, reference, result.response):
            problems.append(f"{step.where()} vs {against}: {line}")
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:40])
