"""Behavioural compat tests with kcat (librdkafka through a command-line tool, as Debian ships
it: an older librdkafka than confluent-kafka's, so a different set of negotiated versions)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from compat_tests.helpers import create_topic

CLIENT = "kcat"


@pytest.fixture(scope="module")
def kcat():
    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        pytest.fail("kcat is not installed: run `make kcat` (Debian package kcat)", pytrace=False)
    return path


def run(kcat, *args, input=None, timeout=30):
    result = subprocess.run([kcat, *args], input=input, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"kcat {' '.join(args)} exited {result.returncode}\n" \
                                   f"{result.stdout}\n{result.stderr}"
    return result


def test_metadata_and_round_trip(kcat, bootstrap, topic_name):
    create_topic(bootstrap, topic_name, partitions=2)

    listing = json.loads(run(kcat, "-b", bootstrap, "-L", "-J", "-t", topic_name).stdout)
    assert [b["name"] for b in listing["brokers"]] == [bootstrap]  # the advertised listener
    (topic,) = listing["topics"]
    assert topic["topic"] == topic_name
    assert sorted(p["partition"] for p in topic["partitions"]) == [0, 1]

    lines = ["k1:v1", "k2:value two", "k3:"]
    run(kcat, "-b", bootstrap, "-P", "-t", topic_name, "-p", "1", "-K:",
        "-H", "trace=abc", "-H", "empty=", input="\n".join(lines) + "\n")

    consumed = run(kcat, "-b", bootstrap, "-C", "-t", topic_name, "-p", "1", "-o", "beginning",
                   "-e", "-q", "-f", "%o|%k|%s|%h\n")
    got = [line.split("|") for line in consumed.stdout.splitlines()]
    assert got == [[str(i), *line.split(":", 1), "trace=abc,empty="]
                   for i, line in enumerate(lines)]

    offsets = run(kcat, "-b", bootstrap, "-Q", "-t", f"{topic_name}:1:-1").stdout
    assert f"{topic_name} [1] offset 3" in offsets
