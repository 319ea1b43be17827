"""The two brokers under benchmark, built on the compatibility suite's process runners.

`compat_tests.runner.KBrokerProcess` and `compat_tests.kafka_runner.KafkaBrokerProcess` already
know how to prepare a data directory, start a broker in its own process group, wait until it
serves and stop it without leaving orphans. The benchmark only changes two things:

* Kafka runs with the JVM flags its own ``kafka-server-start.sh`` uses (``-Xmx1G -Xms1G``, G1,
  C2), not the suite's fast-start flags: the benchmark measures Kafka as shipped.
* `timed_start()` measures *process start → first produce acknowledged*: the clock starts just
  before ``Popen`` (after ``prepare()``, i.e. after Kafka's ``kafka-storage format``, which
  kbroker does not need — a choice in Kafka's favour) and stops when a librdkafka producer
  started at the same moment gets its delivery report. The broker's CPU time (user + system,
  all threads, from /proc) is read at that moment too (`broker.start_cpu_s`).
* kbroker is started as ``kbroker serve`` (the venv's console script), as a user runs it.

Both brokers get the same behaviour-relevant configs (`COMMON_CONFIG`), by Kafka name.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from compat_tests.kafka_runner import BROKER_LOG4J, KafkaBrokerProcess, java
from compat_tests.kafka_runner import kafka_libs
from compat_tests.runner import BrokerStartError, KBrokerProcess, die_with_parent
from compat_tests.probe import ProbeError, wait_until_serving

ROOT = Path(__file__).resolve().parents[2]

# What kafka-server-start.sh / kafka-run-class.sh pass (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS).
KAFKA_SHIPPED_JVM = ["-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                     "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                     "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]

# Same on both: consumer groups start at once (the Kafka test default), nothing else changed.
COMMON_CONFIG = {"group.initial.rebalance.delay.ms": "0"}


class KafkaBench(KafkaBrokerProcess):
    """Apache Kafka, one KRaft combined node, with its shipped JVM settings."""

    def command(self) -> list[str]:
        return [java(), *KAFKA_SHIPPED_JVM, f"-Dlog4j2.configurationFile={BROKER_LOG4J}",
                f"-Dkafka.logs.dir={self.logs_dir}", "-cp", f"{kafka_libs()}/*",
                "kafka.Kafka", str(self.config_path)]


class KBrokerBench(KBrokerProcess):
    """kbroker from this checkout, run by the venv's interpreter at INFO logging."""

    start_timeout = 120.0  # a 10,000-partition data dir takes a while to open

    def command(self) -> list[str]:
        script = Path(sys.executable).with_name("kbroker")
        cmd = [str(script)] if script.exists() else [sys.executable, "-m", "kbroker"]
        cmd += ["serve", "--data-dir", str(self.data_dir)]
        if "listeners" not in self.overrides:      # the security group sets its own listeners
            cmd += ["--listen", self.bootstrap_servers]
        for key, value in self.overrides.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def env(self) -> dict[str, str]:
        return kbroker_env(super().env())


def kbroker_env(env: dict[str, str]) -> dict[str, str]:
    env = dict(env)
    # no empty entry: it would put the broker's working directory on its sys.path
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def timed_stop(broker, timeout: float = 1800.0) -> tuple[float, float]:
    """Stop `broker` gracefully (SIGTERM to its process group); return (wall seconds from
    the signal to the process's exit, its CPU seconds in that time). The CPU comes from the
    exit's resource usage (``wait4``: all threads, the whole life) minus /proc's reading
    just before the signal, since /proc is gone once the process is reaped. SIGKILL after
    `timeout` (the figures then are those of the kill)."""
    proc = broker.proc
    pid = proc.pid
    c0, t0 = cpu_seconds(pid), time.monotonic()
    broker._signal(signal.SIGTERM)
    killed = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if not killed and time.monotonic() - t0 > timeout:
            broker._signal(signal.SIGKILL)
            killed = True
        time.sleep(0.02)
    secs = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    broker._reap_group()
    return secs, usage.ru_utime + usage.ru_stime - c0


def compile_kbroker() -> None:
    """Byte-compile the checkout before any timed start, so kbroker starts from byte-code
    as an installed package (or Kafka from its jars) does — also where the caller's
    environment sets PYTHONDONTWRITEBYTECODE. The __pycache__ folders are ignored by git."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "kbroker")],
                   check=True, stdout=subprocess.DEVNULL)


def make_broker(name: str, workdir: Path) -> "KafkaBench | KBrokerBench":
    cls = {"kafka": KafkaBench, "kbroker": KBrokerBench}[name]
    return cls(workdir, overrides=dict(COMMON_CONFIG))


def timed_start(broker, first_produce_topic: str, timeout: float = 180.0) -> float:
    """Start `broker`; return seconds from process start to the first acknowledged produce.

    A librdkafka producer process (`rdkafka_load firstack`) is started and warmed up first
    (interpreter and library loaded), the machine's dirty pages are written out (`sync`:
    earlier rows' data), then the probe is told to go at the moment the broker process is
    spawned; it retries connections and metadata every millisecond and prints the CLOCK_MONOTONIC
    time of its delivery report. Afterwards the broker is running and serving, as after
    `start()`.
    """
    if broker.is_running():
        raise RuntimeError(f"{broker} is already running")
    broker.prepare()
    cmd = broker.command()
    probe = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.harness.rdkafka_load", "firstack",
         "--bootstrap", broker.bootstrap_servers, "--topic", first_produce_topic,
         "--timeout", str(timeout)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=ROOT, preexec_fn=die_with_parent)
    try:
        if probe.stdout.readline().strip() != "ready":
            raise BrokerStartError(f"first-produce probe failed: {probe.communicate()}")
        # what earlier rows wrote is on disk before the clock starts: a start's few fsyncs
        # otherwise queue behind the kernel's writeback of gigabytes that are not the
        # broker's (+25 ms to kbroker's 0.17 s start measured with 1 GB left dirty)
        os.sync()
        with open(broker.output_path, "ab") as out:
            out.write(f"\n=== timed start #{broker.starts + 1}: {' '.join(cmd)}\n".encode())
            out.flush()
            t0 = time.monotonic()
            broker.proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=broker.workdir, env=broker.env(), start_new_session=True,
                preexec_fn=die_with_parent)
        probe.stdin.write("go\n")
        probe.stdin.flush()
        broker.starts += 1
        out_text, err_text = probe.communicate(timeout=timeout + 30)
    except BaseException:
        probe.kill()
        probe.wait()
        broker.kill()
        raise
    if probe.returncode != 0:
        broker.kill()
        raise BrokerStartError(f"{broker.target}: no produce acknowledged after start:\n"
                               f"{out_text}\n{err_text}")
    seconds = float(out_text.strip().splitlines()[-1]) - t0
    broker.start_cpu_s = cpu_seconds(broker.proc.pid)
    try:
        wait_until_serving(broker.host, broker.port, need_metadata=broker.need_metadata,
                           deadline=time.monotonic() + 60, alive=broker.is_running)
    except (ProbeError, TimeoutError) as exc:
        broker.kill()
        raise BrokerStartError(f"{broker.target} stopped serving after start: {exc}") from None
    return seconds


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (all its threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_bytes(pid: int) -> tuple[int, int]:
    """(current RSS, peak RSS) of a process, from /proc (VmRSS, VmHWM)."""
    cur = peak = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                cur = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) * 1024
    return cur, peak
