"""Behavioural compat tests with Apache Kafka's own command-line tools (Java kafka-clients and
Admin client of the pinned release), run from the cached jars by cli.run_tool."""

from __future__ import annotations

import re

import pytest

from compat_tests.cli import run_tool
from compat_tests.helpers import wait_until

CLIENT = "kafka-cli"


@pytest.fixture(autouse=True)
def _dist(kafka_dist):
    """The CLI needs the Kafka jars on every target, kbroker included."""


def topics(bootstrap, *args):
    return run_tool("kafka-topics", ["--bootstrap-server", bootstrap, *args])


def test_topics_create_describe_list(bootstrap, topic_name):
    created = topics(bootstrap, "--create", "--topic", topic_name,
                     "--partitions", "3", "--replication-factor", "1").check()
    assert f"Created topic {topic_name}." in created.stdout

    # the broker's metadata (Kafka's too) may have the new topic a moment after CreateTopics
    # answered
    wait_until(lambda: topic_name in topics(bootstrap, "--list").check().lines, timeout=30,
               interval=0.2, what=f"{topic_name} listed")

    described = topics(bootstrap, "--describe", "--topic", topic_name).check()
    summary, *partitions = described.lines
    assert re.search(rf"Topic: {re.escape(topic_name)}\s.*PartitionCount: 3\s+ReplicationFactor: 1",
                     summary), summary
    assert len(partitions) == 3
    for index, line in enumerate(partitions):
        fields = dict(re.findall(r"(\w+): ?(\S*)", line))
        assert fields["Partition"] == str(index), line
        assert fields["Leader"] not in ("", "none", "-1"), line
        assert fields["Replicas"] == fields["Leader"] and fields["Isr"] == fields["Leader"], line

    again = topics(bootstrap, "--create", "--topic", topic_name, "--partitions", "1",
                   "--replication-factor", "1")
    assert again.returncode != 0
    assert "already exists" in again.stdout + again.stderr


def test_describe_unknown_topic(bootstrap, topic_name):
    result = topics(bootstrap, "--describe", "--topic", topic_name)
    assert result.returncode != 0
    assert f"Topic '{topic_name}' does not exist" in result.stdout + result.stderr


def test_console_producer_consumer_round_trip(bootstrap, topic_name):
    topics(bootstrap, "--create", "--topic", topic_name, "--partitions", "1",
           "--replication-factor", "1").check()
    lines = ["k1:first value", "k2:second", "k3:third: with separator"]
    run_tool("kafka-console-producer",
             ["--bootstrap-server", bootstrap, "--topic", topic_name,
              "--reader-property", "parse.key=true", "--reader-property", "key.separator=:"],
             input="\n".join(lines) + "\n").check()

    consumed = run_tool("kafka-console-consumer",
                        ["--bootstrap-server", bootstrap, "--topic", topic_name,
                         "--partition", "0", "--offset", "earliest",  # assign mode: no group
                         "--max-messages", str(len(lines)), "--timeout-ms", "30000",
                         "--formatter-property", "print.key=true",
                         "--formatter-property", "key.separator=:",
                         "--formatter-property", "print.offset=true"]).check()
    # DefaultMessageFormatter: "Offset:<n>" + key.separator + key + key.separator + value.
    assert consumed.lines == [f"Offset:{i}:{line}" for i, line in enumerate(lines)]
    assert f"Processed a total of {len(lines)} messages" in consumed.stderr

    offsets = run_tool("kafka-get-offsets", ["--bootstrap-server", bootstrap,
                                             "--topic", topic_name, "--time", "latest"]).check()
    assert offsets.lines == [f"{topic_name}:0:{len(lines)}"]
