"""Differential mode: replay the captured corpus (corpus/, see capture.py) against a fresh broker
of each target and diff every response field by field (replay.py says what is rewritten and
what is ignored, and why).

One test per API (`replay[<Api>]`, and `replay[<Api>/hand-built]` for the requests built by
hand, mostly error cases): on Kafka, the live answers must equal the answers Kafka gave
at capture time (this keeps the corpus and the ignore list honest); on kbroker, they must equal
Kafka's live answers from the same session (or, when only kbroker runs, the recorded ones).
Every unexplained difference is a finding in FINDINGS.md.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from compat_tests.differential import common
from compat_tests.differential.replay import (Replayer, api_name, diff, load_corpus,
                                               misrouted_at_capture, timing_dependent)

CLIENT = "differential"

STEPS = load_corpus()
CORPUS_APIS = sorted({s.api_key for s in STEPS})
HAND_BUILT = "hand-built"


def row_of(step) -> str:
    """A matrix row per API for what clients sent, and one for the hand-built requests
    (mostly error cases), so a known difference in one does not hide the other."""
    return api_name(step.api_key) + ("/hand-built" if step.scenario == HAND_BUILT else "")


ROWS = sorted({row_of(s) for s in STEPS})
# Row → ledger entry for differences kbroker is known to have (the entry lists them).
KNOWN: dict[str, str] = {
    "DescribeShareGroupOffsets": "F-902",
}
# Rows where Kafka's own answers depend on background work it does at its own pace, so a
# replay against a fresh Kafka need not reproduce the capture: a new share-partition is
# initialised asynchronously (its first ShareFetch may answer nothing) and its state is
# persisted in the background (DescribeShareGroupOffsets lags); client quotas are answered once
# the controller committed the change but applied when the broker's metadata loader replays it,
# so a DescribeClientQuotas right after an AlterClientQuotas may still show the old quotas
# (seen once in a CI run: the deleted quota of java-cli#68 still listed). On the Kafka target
# these rows check that every request was answered; kbroker is still compared with Kafka field
# by field.
KAFKA_ASYNC = {"ShareFetch", "DescribeShareGroupOffsets", "DescribeClientQuotas"}
# Steps whose capture-time answer a replay need not reproduce, on Kafka or on kbroker: an
# artifact of the capture or a race inside Kafka (FINDINGS names each and why).
NOT_REPRODUCED = {
    ("confluent-share", 49): "F-963",     # ListOffsets earliest of the share topic: 0 then, 4 now
    # a ShareFetch whose piggy-backed acknowledgement releases the record it could fetch: Kafka
    # starts the acknowledgement and the fetch together (KafkaApis combines the two futures),
    # so whether the released record is in the same answer is a race inside Kafka (the capture
    # and some replays answer nothing, others the record with delivery count 3, as kbroker
    # does every time; tests/share/test_share_protocol.py checks kbroker's answer)
    ("confluent-share", 17): "F-962",
}
# Kafka's live answers of this session, by step position: what kbroker is compared with.
KAFKA_LIVE: dict[int, object] = {}


def _param(row: str):
    marks = [pytest.mark.known_difference(KNOWN[row])] if row in KNOWN else []
    return pytest.param(row, marks=marks)


def test_corpus_covers_every_advertised_api():
    """Every API kbroker advertises has at least one request in the corpus, and its highest
    advertised version is among them (re-run `make dx-capture`, or `python -m
    compat_tests.differential.capture --only hand-built`, after kbroker gains an API or a
    version)."""
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
    # the newest version of each API is replayed (a client or the hand-built scenario sends it)
    unsent = {api_name(k): hi for k, (lo, hi) in advertised.items() if hi not in versions[k]}
    assert not unsent, f"highest advertised versions no request in the corpus uses: {unsent}"


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


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_replay(target, replayed, row):
    problems = []
    for i, result in enumerate(replayed):
        step = result.step
        if row_of(step) != row:
            continue
        api_key = step.api_key
        if result.error:
            problems.append(f"{step.where()}: {result.error}")
            continue
        if step.recorded is None:
            continue  # acks=0 Produce: nothing to compare
        if target == "kafka" and row in KAFKA_ASYNC:
            continue  # answered (checked above); its content is Kafka's timing, see KAFKA_ASYNC
        if timing_dependent(result.recorded):
            continue  # the capture's client met a coordinator loading / a commit completing
        if misrouted_at_capture(step, result.recorded):
            continue  # the capture's proxy topology, not the broker's behaviour
        if (step.scenario, step.index) in NOT_REPRODUCED:
            continue
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
            if api_key == 0 and result.retries and ".log_append_time_ms" in line:
                # the replay resent this Produce after a transient error: partitions that
                # succeeded the first time are duplicates now, answered (by both brokers)
                # with the stored batch's timestamp
                continue
            problems.append(f"{step.where()} vs {against}: {line}")
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:40])
