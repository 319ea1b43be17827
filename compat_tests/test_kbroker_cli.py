"""kbroker's own client commands (``kbroker topics|produce|consume|groups|configs|cluster|acls|users``)
against both targets: they are clients of the wire protocol, so they must work on Apache
Kafka exactly as on kbroker. The scenarios live in compat_tests/kbroker_cli.py and run only here
(tests/tools keeps what only kbroker shows).

They run on a broker of their own that checks retention every half second
(``RETENTION_CHECK_OVERRIDES``; shown to delete an expired record before the first test), so a
scenario whose old-timestamped records retention could delete fails at once instead of when a
shared broker's 5-minute check happens to fall between two of its steps."""
from __future__ import annotations

import uuid

import pytest

from compat_tests import kbroker_cli as s

CLIENT = "kbroker-cli"


@pytest.fixture(scope="module")
def bs(target, broker_pool):
    broker = broker_pool.start_new(target, s.RETENTION_CHECK_OVERRIDES)
    try:
        s.wait_retention_runs(broker.bootstrap_servers, f"expired-{uuid.uuid4().hex[:8]}")
        yield broker.bootstrap_servers
    finally:
        broker.stop(timeout=20)


def test_version(target):
    s.scenario_version()


def test_topics(bs, topic_name):
    s.scenario_topics(bs, topic_name)


def test_topics_describe_elr_as_kafka_topics(bs, topic_name):
    """The ELR and last-known-ELR columns (DescribeTopicPartitions, KIP-966) as kafka-topics
    prints them for the same partitions (a healthy single node: both empty)."""
    from compat_tests.kafka_runner import kafka_libs
    kafka_libs()
    assert s.topics_elr_as_kafka_topics(bs, topic_name) == [("0", "", ""), ("1", "", "")]


def test_produce_consume(bs, topic_name):
    s.scenario_produce_consume(bs, topic_name)


def test_groups(bs, topic_name):
    s.scenario_groups(bs, topic_name)


def test_configs(bs):
    s.scenario_configs(bs)


def test_cluster(bs):
    s.scenario_cluster(bs)


def test_acls_and_users(broker_factory, topic_name):
    """One broker with Kafka's StandardAuthorizer and ``super.users=User:ANONYMOUS`` for both."""
    b = broker_factory(**s.AUTHZ_OVERRIDES)
    s.scenario_acls(b.bootstrap_servers, topic_name)
    s.scenario_users(b.bootstrap_servers)


def test_group_types(bs, topic_name):
    """A KIP-848 group and a share group, described by kbroker and by Kafka's own tools."""
    from compat_tests.kafka_runner import kafka_libs
    kafka_libs()
    s.scenario_group_types(bs, topic_name)


@pytest.mark.slow
def test_streams_group_described_as_kafka_streams_groups_does(bs, tmp_path):
    """A Kafka Streams app (group.protocol=streams) on the target: ``kbroker groups describe``
    of its group against Kafka's ``kafka-streams-groups --describe`` (state, epochs, members,
    tasks, offsets and lag), then deleted once empty. Two JVMs besides the target: slow."""
    from compat_tests.kafka_runner import kafka_libs
    from tests.support.kafka_streams_app import build_classpath
    kafka_libs()
    s.scenario_streams_group(bs, build_classpath(tmp_path / "classes"), tmp_path)


def test_consume_as_a_share_group(bs, topic_name):
    s.scenario_share_consume(bs, topic_name)


# After the same acknowledgements, both brokers answer as Kafka 4.4 (FINDINGS F-970, closed):
# the share-partition's state is written with the start offset it had before the acknowledged
# records (SharePartition's rollbackOrProcessStateUpdates, then
# maybeUpdateCachedStateAndOffsets), and the next write carries the moved one.
KAFKA_SHARE_START_OFFSETS = [(0, 0), (5, 0)]


def test_share_start_offset_after_acknowledgements(bs, topic_name):
    from compat_tests.kafka_runner import kafka_libs
    kafka_libs()
    assert s.share_start_offsets_after_acknowledgements(bs, topic_name) == KAFKA_SHARE_START_OFFSETS


def test_share_group_epochs_after_consume_exits(bs, topic_name):
    """Two ``kbroker consume --share-group`` runs that exit: the Empty group's epochs as
    ``kafka-share-groups --describe --state --verbose`` prints them on the same broker, and
    Kafka 4.4's numbers on both (a new group: 2, assigned 3, left 4; used again: 5 assigned at
    once, left 6; kbroker was at 8 and 7 before)."""
    from compat_tests.kafka_runner import kafka_libs
    kafka_libs()
    assert s.share_epochs_after_consume(bs, topic_name) == {
        "state": "Empty", "members": 0, "group_epoch": 6, "assignment_epoch": 6}
