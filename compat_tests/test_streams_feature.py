"""The ``streams.version`` feature gates streams groups (KIP-1071) on both targets: Kafka 4.4's
``KafkaApis.isStreamsGroupProtocolEnabled`` also asks for ``streams.version`` >= 1. A new
cluster finalizes 1; after ``kafka-features downgrade --feature streams.version=0``
StreamsGroupHeartbeat answers UNSUPPORTED_VERSION and StreamsGroupDescribe the same for every
group, while ApiVersions still lists both APIs with their ranges; an upgrade back to 1 serves
them again."""
from __future__ import annotations

from compat_tests.cli import run_tool
from compat_tests.helpers import read_until
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E
from tests.support.kafka_streams_app import raw

from .test_streams_heartbeat import find_coordinator, hb, join, topology

CLIENT = "kafka-features, raw frames"
HEARTBEAT, DESCRIBE = 88, 89


def _features(bs: str, *args: str) -> tuple[int, list[str]]:
    r = run_tool("kafka-features", ["--bootstrap-server", bs, *args], timeout=90)
    return r.returncode, [line for line in (r.stdout + r.stderr).splitlines()
                          if line.strip() and "flag is deprecated" not in line]


def _api_versions(bs: str):
    r = raw(bs, 18, 3, messages.ApiVersionsRequest(client_software_name="compat",
                                                   client_software_version="1"))
    assert r.error_code == 0
    finalized = {f.name: f.max_version_level for f in r.finalized_features}
    ranges = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys
              if k.api_key in (HEARTBEAT, DESCRIBE)}
    return finalized.get("streams.version", 0), ranges


def _describe_codes(bs: str, group: str) -> dict[str, int]:
    """{group id: error code} (Kafka answers the groups in the order of their coordinator
    partitions, kbroker in the request's)."""
    r = raw(bs, DESCRIBE, 0, messages.StreamsGroupDescribeRequest(
        group_ids=[group, "no-such-group"], include_authorized_operations=False))
    return {g.group_id: g.error_code for g in r.groups}


def _join(bs: str, group: str, member: str, source: str):
    """A join, again while the coordinator is still loading or moving (Kafka's first answers
    after FindCoordinator); the last answer."""
    loading = (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR)
    return read_until(lambda: join(bs, group, member, topology(source, group)),
                      lambda r: r.error_code not in loading, interval=0.2)


def test_streams_version_zero_turns_streams_groups_away(broker_factory, target, topic_name):
    broker = broker_factory()
    bs, group = broker.bootstrap_servers, f"{topic_name}-app"
    level, ranges = _api_versions(bs)
    assert level == 1
    assert set(ranges) == {HEARTBEAT, DESCRIBE}
    find_coordinator(bs, group)
    r = _join(bs, group, "m1", topic_name)
    assert (r.error_code, r.member_id, r.member_epoch) == (0, "m1", 1)
    assert _describe_codes(bs, group) == {group: 0, "no-such-group": E.GROUP_ID_NOT_FOUND}

    assert _features(bs, "downgrade", "--feature", "streams.version=0") == \
        (0, ["streams.version was downgraded to 0."])
    level, after = read_until(lambda: _api_versions(bs), lambda v: v[0] == 0,
                              at_once=target == "kbroker")
    assert level == 0
    assert after == ranges          # still advertised, with the same versions
    r = join(bs, group, "m2", topology(topic_name, group))
    assert (r.error_code, r.member_id, r.member_epoch) == (E.UNSUPPORTED_VERSION, "", 0)
    assert hb(bs, group, "m1", 1).error_code == E.UNSUPPORTED_VERSION
    assert _describe_codes(bs, group) == {group: E.UNSUPPORTED_VERSION,
                                          "no-such-group": E.UNSUPPORTED_VERSION}

    assert _features(bs, "upgrade", "--feature", "streams.version=1") == \
        (0, ["streams.version was upgraded to 1."])
    level, _ = read_until(lambda: _api_versions(bs), lambda v: v[0] == 1,
                          at_once=target == "kbroker")
    assert level == 1
    # served again; the group is still there (the gate refused requests, it deleted nothing)
    r = _join(bs, group, "m3", topic_name)
    assert (r.error_code, r.member_id) == (0, "m3")
    assert _describe_codes(bs, group) == {group: 0, "no-such-group": E.GROUP_ID_NOT_FOUND}
