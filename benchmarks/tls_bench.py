#!/usr/bin/env python3
"""Produce over PLAINTEXT and SSL, broker CPU per byte: `python -m benchmarks.tls_bench [SRC ...]`.

    .venv/bin/python -m benchmarks.tls_bench --reps 3 [--mib 128] [--kafka] [--profile DIR] [SRC ...]

One broker per source (each SRC a folder holding a `kbroker/` package, e.g. an exported
older commit: `git archive <rev> kbroker | tar -x -C /tmp/old`; default this checkout) and,
with `--kafka`, one Apache Kafka broker (shipped JVM flags), each with a PLAINTEXT and an
SSL listener (the certificates of `tests/security/certs.py`). Every repetition runs the
same librdkafka produce load (`benchmarks/harness/rdkafka_load.py`: 1 KiB records, 8
partitions, acks=1) against every broker in turn, PLAINTEXT then SSL, so load from other
work on the shared machine falls on each alike.

Reported per broker and protocol (medians): MB/s, and the broker process's CPU seconds
(user + system from /proc/PID/stat) per GiB produced — the figure to compare on a busy
machine, since throughput there mostly measures how much CPU the other jobs left over.
`--profile DIR` records a py-spy profile (raw collapsed stacks) of each kbroker during its
SSL loads, summarised by `benchmarks/profile_summary.py`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness.admin import create_topics  # noqa: E402
from benchmarks.harness.brokers import COMMON_CONFIG, KafkaBench  # noqa: E402
from benchmarks.harness.run import rdkafka  # noqa: E402
from benchmarks.startup_bench import KBrokerFrom  # noqa: E402
from compat_tests.runner import free_port  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def tls_overrides(b, pki, ssl_port: int) -> dict[str, str]:
    from tests.security.certs import PASSWORD
    listeners = [f"PLAINTEXT://{b.host}:{b.port}", f"SSL://{b.host}:{ssl_port}"]
    controller = [f"CONTROLLER://{b.host}:{b.controller_port}"] if hasattr(b, "controller_port") else []
    return {"listeners": ",".join(listeners + controller),
            "advertised.listeners": ",".join(listeners),
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL",
            "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki.server_p12),
            "ssl.keystore.password": PASSWORD, "ssl.key.password": PASSWORD}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="*", type=Path, help="folders holding a kbroker package")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--mib", type=int, default=128, help="MiB produced per run")
    ap.add_argument("--kafka", action="store_true", help="also run Apache Kafka in the rotation")
    ap.add_argument("--profile", type=Path, help="py-spy profiles of kbroker's SSL loads into DIR")
    a = ap.parse_args(argv)
    from tests.security.certs import make_pki
    sources = [p.resolve() for p in (a.src or [ROOT])]
    for src in sources:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "kbroker")],
                       check=True, stdout=subprocess.DEVNULL)
    work = Path(tempfile.mkdtemp(prefix="kbroker-tls-bench-"))
    brokers = []
    try:
        pki = make_pki(work / "pki")
        for n, src in enumerate(sources):
            b = KBrokerFrom(work / f"kbroker-{n}", src)
            brokers.append((f"kbroker {src}", b))
        if a.kafka:
            brokers.append(("kafka", KafkaBench(work / "kafka", overrides=dict(COMMON_CONFIG))))
        ports = {}
        for name, b in brokers:
            ports[name] = free_port()
            b.overrides.update(tls_overrides(b, pki, ports[name]))
            b.start()
        results: dict[tuple[str, str], list[tuple[float, float]]] = {}
        conf_tls = ["--conf", "security.protocol=SSL", "--conf", f"ssl.ca.location={pki.ca}"]
        num = a.mib * 1024
        for rep in range(a.reps):
            for name, b in brokers:
                for proto in ("PLAINTEXT", "SSL"):
                    topic = f"tls-{proto.lower()}-{uuid.uuid4().hex[:8]}"
                    create_topics(b.bootstrap_servers, [(topic, 8)])
                    bootstrap = b.bootstrap_servers if proto == "PLAINTEXT" else f"{b.host}:{ports[name]}"
                    spy = None
                    if a.profile is not None and proto == "SSL" and name != "kafka":
                        a.profile.mkdir(parents=True, exist_ok=True)
                        out = a.profile / f"tls-produce-{sources.index(Path(name.split(' ', 1)[1]))}-{rep}.txt"
                        spy = subprocess.Popen(
                            [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(b.pid),
                             "--format", "raw", "--rate", "200", "--nonblocking", "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                        time.sleep(0.5)
                    cpu0 = cpu_seconds(b.pid)
                    out = rdkafka("produce", bootstrap, topic, "--num", str(num), "--size", "1024",
                                  "--acks", "1", *(conf_tls if proto == "SSL" else []))
                    cpu = cpu_seconds(b.pid) - cpu0
                    if spy is not None:
                        spy.send_signal(2)
                        spy.wait(30)
                    gib = out["records"] * 1024 / 2**30
                    results.setdefault((name, proto), []).append((out["mb_per_s"], cpu / gib))
                    print(f"[rep {rep}] {name} {proto}: {out['mb_per_s']:.1f} MB/s, "
                          f"{cpu / gib:.2f} cpu-s/GiB (load {os.getloadavg()[0]:.1f})",
                          file=sys.stderr, flush=True)
        print(f"\n| broker | protocol | MB/s (median) | broker cpu-s/GiB (median) | runs |")
        print("|---|---|---:|---:|---|")
        for (name, proto), vals in results.items():
            mbs = statistics.median(v[0] for v in vals)
            cpu = statistics.median(v[1] for v in vals)
            runs = ", ".join(f"{v[0]:.0f}/{v[1]:.1f}" for v in vals)
            print(f"| {name} | {proto} | {mbs:.1f} | {cpu:.2f} | {runs} |")
    finally:
        for _, b in brokers:
            b.kill()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
