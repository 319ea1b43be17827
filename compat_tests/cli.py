"""Run Apache Kafka's command-line tools from the pinned jars, against any broker under test.

`run_tool("kafka-topics", ["--bootstrap-server", bs, "--list"])` is what
`bin/kafka-topics.sh --bootstrap-server bs --list` does in a Kafka distribution: the same main
class on the same class path, with a quiet log4j2 config (warnings on stderr only) and a
timeout after which the whole process group is killed. The tools run one after another in one
resident JVM per test process (compat_tests/tool_jvm.py; KBROKER_TOOL_JVM=0 gives each run a
fresh JVM, as some tools always get).
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass

from compat_tests import tool_jvm
from compat_tests.kafka_runner import (FAST_START_JVM, TOOLS_LOG4J, class_archive, class_sharing,
                                       java, java_command, kafka_libs, kafka_version,
                                       publish_class_archive)
from compat_tests.runner import die_with_parent

# Script name in a Kafka distribution's bin/ → main class in the pinned (4.x) release.
TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-cluster": "org.apache.kafka.tools.ClusterTool",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
}

# Main classes that moved (4.4 moved ConfigCommand to the tools module): the class of an older
# release the suite may run against (--kafka-version), with the first release of the new name.
MOVED = {"org.apache.kafka.tools.ConfigCommand": ("kafka.admin.ConfigCommand", (4, 4))}


def main_class(tool: str) -> str:
    """The main class of a script name (or a main class) in the release the suite runs."""
    main = TOOLS.get(tool, tool)
    if main in MOVED:
        old, since = MOVED[main]
        if tuple(int(x) for x in kafka_version().split(".")[:2]) < since:
            return old
    return main


@dataclass
class ToolResult:
    tool: str
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> "ToolResult":
        """Raise (with both streams) unless the tool exited 0."""
        if self.returncode != 0:
            raise AssertionError(f"{self.tool} {' '.join(self.args)} exited {self.returncode}\n"
                                 f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}")
        return self

    @property
    def lines(self) -> list[str]:
        return [line for line in self.stdout.splitlines() if line.strip()]


def run_tool(tool: str, args: list[str], *, input: str | None = None,
             timeout: float = 60.0) -> ToolResult:
    """Run one Kafka CLI tool (a name from TOOLS or a main class) and capture its output.

    On timeout the tool's process group is killed and AssertionError is raised with what it
    printed so far.
    """
    main = main_class(tool)
    try:
        resident = tool_jvm.try_run(main, list(args), input=input, timeout=timeout,
                                    key=(java(), str(kafka_libs()), str(TOOLS_LOG4J)),
                                    jvm_command=_resident_command)
    except tool_jvm.ToolTimeout as t:
        raise AssertionError(f"{tool} {' '.join(args)} timed out after {timeout}s\n"
                             f"--- stdout ---\n{t.stdout}\n--- stderr ---\n{t.stderr}") from None
    if resident is not None:
        return ToolResult(tool, list(args), *resident)
    cds, private = class_sharing("tool")
    cmd = java_command(main, list(args), heap="512m", log4j=TOOLS_LOG4J, extra_jvm=FAST_START_JVM + cds)
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, preexec_fn=die_with_parent)
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            raise AssertionError(f"{tool} {' '.join(args)} timed out after {timeout}s\n"
                                 f"--- stdout ---\n{out}\n--- stderr ---\n{err}") from None
    finally:
        publish_class_archive("tool", private)
    return ToolResult(tool, list(args), proc.returncode, out, err)


def _resident_command(classpath_tail: str) -> list[str]:
    """The resident tool JVM: a fresh tool's flags, the tools' class archive when there is one
    (the server's folder goes last on the class path, so the archive still matches)."""
    archive = class_archive("tool")
    cds = [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off"] if archive.exists() else []
    return [java(), "-Xmx512m", "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={TOOLS_LOG4J}",
            *FAST_START_JVM, *cds, "-cp", f"{kafka_libs()}/*:{classpath_tail}"]
