"""The resident JVM that runs Kafka's command-line tools for the suites (compat_tests/tool_jvm.py):
tools run one after another in one JVM give what a fresh JVM gives (exit codes, stdout,
stderr, stdin), a run past its timeout kills that JVM and the next run gets a new one, and the
tools that cannot share a JVM get their own. One kbroker for the module."""
from __future__ import annotations

import re

import pytest

from compat_tests import tool_jvm
from compat_tests.cli import run_tool
from compat_tests.kafka_runner import kafka_libs
from tests.support.broker_proc import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    kafka_libs()
    proc = BrokerProcess(tmp_path_factory.mktemp("tool-jvm") / "data").start()
    try:
        yield proc
    finally:
        proc.stop()


def untimed(text: str) -> list[str]:
    """Log lines without their timestamps, and without stack frames (below a tool's main, the
    resident JVM's differ: the main is called by reflection)."""
    return [re.sub(r"^\[[^]]*\] ", "", line) for line in text.splitlines()
            if not line.startswith("\tat ")]


def resident_pids() -> set[int]:
    return {jvm.proc.pid for jvm in tool_jvm._JVMS.values() if jvm.alive()}


def test_tools_share_one_jvm_and_keep_stdin_stdout_and_exit_codes(broker, monkeypatch):
    monkeypatch.delenv(tool_jvm.ENV_SWITCH, raising=False)
    bs = ["--bootstrap-server", broker.bootstrap]
    run_tool("kafka-topics", [*bs, "--create", "--topic", "jvm-a", "--partitions", "2"]).check()
    pids = resident_pids()
    assert len(pids) == 1
    run_tool("kafka-console-producer", [*bs, "--topic", "jvm-a", "--property", "parse.key=true"],
             input="k1\tone\nk2\ttwo\nk1\tthree\n").check()
    out = run_tool("kafka-console-consumer", [*bs, "--topic", "jvm-a", "--from-beginning",
                                              "--max-messages", "3", "--timeout-ms", "60000"]).check()
    assert sorted(out.lines) == ["one", "three", "two"]
    described = run_tool("kafka-topics", [*bs, "--describe", "--topic", "jvm-a"]).check()
    assert "PartitionCount: 2" in described.stdout
    missing = run_tool("kafka-topics", [*bs, "--describe", "--topic", "jvm-missing"])
    assert resident_pids() == pids, "every run above was served by the same JVM"

    # the same runs in fresh JVMs give the same exit codes and output
    monkeypatch.setenv(tool_jvm.ENV_SWITCH, "0")
    fresh_missing = run_tool("kafka-topics", [*bs, "--describe", "--topic", "jvm-missing"])
    fresh_described = run_tool("kafka-topics", [*bs, "--describe", "--topic", "jvm-a"]).check()
    assert missing.returncode == fresh_missing.returncode == 1
    assert missing.stdout == fresh_missing.stdout
    assert untimed(missing.stderr) == untimed(fresh_missing.stderr)
    assert "jvm-missing" in missing.stderr
    assert described.stdout == fresh_described.stdout
    bad_resident = fresh_bad = None
    for switch in ("1", "0"):
        monkeypatch.setenv(tool_jvm.ENV_SWITCH, switch)
        result = run_tool("kafka-topics", [*bs, "--no-such-option"])
        if switch == "1":
            bad_resident = result
        else:
            fresh_bad = result
    assert bad_resident.returncode == fresh_bad.returncode != 0
    assert untimed(bad_resident.stderr) == untimed(fresh_bad.stderr) and "no-such-option" in bad_resident.stderr
    assert resident_pids() == pids


def test_a_run_past_its_timeout_kills_the_jvm_and_the_next_run_gets_a_new_one(broker, monkeypatch):
    monkeypatch.delenv(tool_jvm.ENV_SWITCH, raising=False)
    bs = ["--bootstrap-server", broker.bootstrap]
    run_tool("kafka-topics", [*bs, "--create", "--topic", "jvm-idle", "--partitions", "1"]).check()
    before = resident_pids()
    with pytest.raises(AssertionError, match="timed out after 5"):
        # no --timeout-ms, no --max-messages: it waits for records forever
        run_tool("kafka-console-consumer", [*bs, "--topic", "jvm-idle"], timeout=5)
    assert not (before & resident_pids())
    listed = run_tool("kafka-topics", [*bs, "--list"]).check()
    assert "jvm-idle" in listed.lines
    assert resident_pids() and not (before & resident_pids())


def test_tools_that_exit_the_jvm_themselves_get_a_fresh_one(broker, monkeypatch):
    monkeypatch.delenv(tool_jvm.ENV_SWITCH, raising=False)
    bs = ["--bootstrap-server", broker.bootstrap]
    run_tool("kafka-topics", [*bs, "--list"]).check()
    before = resident_pids()
    assert "org.apache.kafka.tools.VerifiableProducer" in tool_jvm.FRESH_ONLY
    out = run_tool("kafka-verifiable-producer", [*bs, "--topic", "jvm-verifiable",
                                                 "--max-messages", "3"], timeout=120).check()
    assert sum('"name":"producer_send_success"' in line for line in out.lines) == 3
    assert resident_pids() == before, "the resident JVM neither ran it nor was ended by it"
