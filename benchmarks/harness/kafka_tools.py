"""Kafka's own load tools from the pinned jars, run as their bin/ scripts run them.

``kafka-producer-perf-test.sh``, ``kafka-consumer-perf-test.sh`` and ``kafka-e2e-latency.sh``
all run ``kafka-run-class.sh`` with ``-Xmx512M`` and Kafka's default JVM performance options;
so does this module. Each function runs one tool to completion and parses its final report.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess

from compat_tests.kafka_runner import TOOLS_LOG4J, java, kafka_libs
from compat_tests.runner import die_with_parent

TOOL_JVM = ["-Xmx512M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true"]

PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance"
E2E_LATENCY = "org.apache.kafka.tools.EndToEndLatency"


class ToolError(RuntimeError):
    pass


def run(main: str, args: list[str], timeout: float) -> str:
    cmd = [java(), *TOOL_JVM, f"-Dlog4j2.configurationFile={TOOLS_LOG4J}",
           "-cp", f"{kafka_libs()}/*", main, *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=die_with_parent)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise ToolError(f"{main} timed out after {timeout}s\n{out[-2000:]}\n{err[-2000:]}") from None
    if proc.returncode != 0:
        raise ToolError(f"{main} exited {proc.returncode}\n{out[-2000:]}\n{err[-2000:]}")
    return out


_PRODUCER_FINAL = re.compile(
    r"(\d+) (?:steady state )?records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


def producer_perf(bootstrap: str, topic: str, *, num_records: int, record_size: int,
                  acks: str, compression: str, warmup_fraction: float = 0.2,
                  timeout: float = 600) -> dict:
    """One ProducerPerformance run at full speed. The first `warmup_fraction` of the records
    warm both JVMs up and are left out: the steady-state summary (printed last) is returned."""
    props = [f"acks={acks}", f"compression.type={compression}"]
    warmup = ["--warmup-records", str(int(num_records * warmup_fraction))] if warmup_fraction else []
    out = run(PRODUCER_PERF, ["--bootstrap-server", bootstrap, "--topic", topic,
                              "--num-records", str(num_records), "--record-size", str(record_size),
                              "--throughput", "-1", *warmup, "--command-property", *props],
              timeout)
    matches = _PRODUCER_FINAL.findall(out)
    if not matches:
        raise ToolError(f"no final report in ProducerPerformance output:\n{out[-2000:]}")
    n, rps, mbps, avg, mx, p50, p95, p99, p999 = matches[-1]
    return {"records": int(n), "records_per_s": float(rps), "mb_per_s": float(mbps),
            "avg_latency_ms": float(avg), "p99_latency_ms": float(p99)}


def consumer_perf(bootstrap: str, topic: str, *, num_records: int, group: str,
                  timeout: float = 600) -> dict:
    out = run(CONSUMER_PERF, ["--bootstrap-server", bootstrap, "--topic", topic,
                              "--num-records", str(num_records), "--group", group,
                              "--timeout", "30000"], timeout)
    lines = [l for l in out.splitlines() if l.strip()]
    header = next((i for i, l in enumerate(lines) if l.startswith("start.time")), None)
    if header is None or header + 1 >= len(lines):
        raise ToolError(f"no report in ConsumerPerformance output:\n{out[-2000:]}")
    names = [n.strip() for n in lines[header].split(",")]
    values = [v.strip() for v in lines[header + 1].split(",")]
    row = dict(zip(names, values))
    return {"mb": float(row["data.consumed.in.MB"]), "mb_per_s": float(row["MB.sec"]),
            "records": int(row["data.consumed.in.nMsg"]),
            "rebalance_ms": float(row["rebalance.time.ms"]),
            "fetch_mb_per_s": float(row["fetch.MB.sec"]),
            "fetch_records_per_s": float(row["fetch.nMsg.sec"])}


_E2E_PCT = re.compile(r"Percentiles: 50th = ([\d.]+), 99th = ([\d.]+), 99.9th = ([\d.]+)")
_E2E_AVG = re.compile(r"Avg latency: ([\d.]+) ms")


def end_to_end_latency(bootstrap: str, topic: str, *, num_records: int, acks: str,
                       record_size: int, timeout: float = 600) -> dict:
    out = run(E2E_LATENCY, [bootstrap, topic, str(num_records), acks, str(record_size)], timeout)
    pct = _E2E_PCT.search(out)
    avg = _E2E_AVG.search(out)
    if not pct:
        raise ToolError(f"no percentiles in EndToEndLatency output:\n{out[-2000:]}")
    return {"p50_ms": float(pct.group(1)), "p99_ms": float(pct.group(2)),
            "p999_ms": float(pct.group(3)), "avg_ms": float(avg.group(1)) if avg else None}
