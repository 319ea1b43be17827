"""One benchmark session per broker: fresh data directories, the same loads, raw results.

Rows for each broker, in this order:

1. start-up on an empty data dir (`startup_reps` fresh dirs), idle RSS read `idle_settle_s`
   later, then a graceful stop and a timed restart on the now formatted dir (wall and CPU
   each);
2. one fresh broker for the loads: produce scenarios (peak RSS = VmHWM right after them),
   end-to-end latency (EndToEndLatency, then librdkafka at a fixed rate), pre-fill of the
   consume topic, ConsumerPerformance and librdkafka consume passes;
3. start-up with `startup_partitions` partitions on disk (created, broker stopped, then
   `reps` timed restarts);
4. metadata scale: time to create `metadata_partitions` partitions on a fresh broker;
5. TLS and SASL_SSL: librdkafka over three listeners of one fresh broker;
6. fixed-rate latency on three nodes, acks=all (latency.py);
7. scale rows: partitions, connections, group members, idempotent producers (scale.py).

The full plan runs the start-up rows (1), the loads (2) and the security rows (5) paired
(`run_paired_sessions`, paired.py), first: the start-ups' repetitions alternating between the
broker kinds (A B, B A, ...; only the broker measured running); then one broker of each kind
alive through each of the two load groups, every row's repetitions alternating between them
so that the two measurements of a repetition are seconds apart; the idle broker's CPU seconds
during each of the other's measurements are kept beside the row. Then each broker in turn
(kbroker first, one broker process at a time) runs the other rows, `Session.run(paired=True)`. With
`bench.py --sequential`, each broker runs all its rows in turn, the loads and security rows
included.

The quick plan (`Plan.shared_broker`) is always sequential: it keeps one broker per kind
running through the rows that allow it, so Kafka's JVM starts four times instead of eleven:
the last start-up broker (fresh start, idle RSS, timed restart) then gets
`startup_partitions` partitions (metadata create time and the scale partitions rows when
their sizes match), is restarted with them (timed: the start-up row and the scale restart
row are one measurement), and carries the loads and the connections, group and producers
rows; only the security rows (their own listeners) get a second broker. Its loads then run
beside a few hundred idle partitions, a difference the quick run accepts; the full plan
starts a fresh broker for every group of rows.

Every measurement is appended to a `Results` object as raw values; medians and ratios are
computed by report.py.
"""
from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from functools import partial
from pathlib import Path

from compat_tests.runner import die_with_parent

from . import kafka_tools
from . import latency as latency_rows
from . import scale as scale_rows
from .admin import admin, create_topics
from .brokers import cpu_seconds, make_broker, rss_bytes, timed_start
from .paired import Block, Stages, abba, run_paired, run_stages
from .plan import MIB, Plan, Produce

ROOT = Path(__file__).resolve().parents[2]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Results:
    """Raw measurements: scenario id → description + {broker: [values]}."""

    def __init__(self, meta: dict):
        self.meta = meta
        self.scenarios: dict[str, dict] = {}

    def scenario(self, sid: str, *, title: str, group: str, unit: str, better: str,
                 secondary_unit: str | None = None, target: float | None = None) -> dict:
        s = self.scenarios.get(sid)
        if s is None:
            s = self.scenarios[sid] = {"id": sid, "title": title, "group": group, "unit": unit,
                                       "better": better, "secondary_unit": secondary_unit,
                                       "target": target, "values": {}, "secondary": {},
                                       "raw": {}}
        return s

    def add(self, sid: str, broker: str, value: float, secondary: float | None = None,
            raw: dict | None = None) -> None:
        s = self.scenarios[sid]
        s["values"].setdefault(broker, []).append(value)
        if secondary is not None:
            s["secondary"].setdefault(broker, []).append(secondary)
        if raw is not None:
            s["raw"].setdefault(broker, []).append(raw)

    def add_idle(self, sid: str, measured: str, wall_s: float, idle_cpu_s: dict[str, float],
                 settle_s: float = 0.0) -> None:
        """The paired order's diagnostic: the CPU seconds each idle broker spent during one
        measurement of `measured` (wall_s long) in row `sid`, after settle_s of waiting for
        the brokers to be quiet (benchmarks/harness/paired.py)."""
        rows = self.scenarios[sid].setdefault("idle_neighbour", {}).setdefault(measured, [])
        for idle, cpu in idle_cpu_s.items():
            rows.append({"idle": idle, "cpu_s": round(cpu, 3), "wall_s": round(wall_s, 3),
                         "settle_s": round(settle_s, 2)})

    def idle_summary(self) -> dict[str, dict]:
        """Per idle broker: its CPU seconds over all the other's measurements, their wall
        seconds, the share of one core (cpu / wall) overall and in the worst measurement, and
        the seconds spent waiting for quiet before those measurements."""
        out: dict[str, dict] = {}
        for s in self.scenarios.values():
            for entries in s.get("idle_neighbour", {}).values():
                for e in entries:
                    o = out.setdefault(e["idle"], {"cpu_s": 0.0, "wall_s": 0.0, "measurements": 0,
                                                   "max_share": 0.0, "max_share_row": None,
                                                   "settle_s": 0.0})
                    o["cpu_s"] += e["cpu_s"]
                    o["wall_s"] += e["wall_s"]
                    o["settle_s"] += e.get("settle_s", 0.0)
                    o["measurements"] += 1
                    share = e["cpu_s"] / e["wall_s"] if e["wall_s"] > 0 else 0.0
                    if share > o["max_share"]:
                        o["max_share"], o["max_share_row"] = share, s["id"]
        for o in out.values():
            o["share"] = o["cpu_s"] / o["wall_s"] if o["wall_s"] > 0 else 0.0
            for k in ("cpu_s", "wall_s", "share", "max_share", "settle_s"):
                o[k] = round(o[k], 4)
        return out

    def to_json(self) -> dict:
        return {"meta": self.meta, "scenarios": list(self.scenarios.values())}

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n")


def rdkafka(mode: str, bootstrap: str, topic: str, *args: str, timeout: float = 900) -> dict:
    cmd = [sys.executable, "-m", "benchmarks.harness.rdkafka_load", mode,
           "--bootstrap", bootstrap, "--topic", topic, *args]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                         preexec_fn=die_with_parent)
    if res.returncode != 0:
        raise RuntimeError(f"rdkafka {mode} failed ({res.returncode}):\n{res.stdout}\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


_PKIS: dict[Path, object] = {}


def _pki(root: Path):
    """One set of certificates per run, shared by both brokers' security rows (openssl and
    keytool take seconds on a busy machine)."""
    if root not in _PKIS or not root.exists():
        from tests.security.certs import make_pki
        _PKIS[root] = make_pki(root)
    return _PKIS[root]


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Session:
    """All scenarios of one plan against one broker kind."""

    def __init__(self, name: str, plan: Plan, results: Results, workroot: Path,
                 only: set[str] | None = None, profile: Path | None = None):
        self.name = name
        self.plan = plan
        self.results = results
        self.workroot = workroot / name
        self.only = only
        self.profile = profile

    def wants(self, group: str) -> bool:
        return self.only is None or group in self.only

    def _broker(self, tag: str):
        workdir = self.workroot / tag
        if workdir.exists():
            shutil.rmtree(workdir)
        return make_broker(self.name, workdir)

    def _drop(self, broker) -> None:
        # the data is thrown away: no need for a (slow, for Kafka) controlled shutdown
        broker.kill()
        shutil.rmtree(broker.workdir, ignore_errors=True)

    def wants_loads(self) -> bool:
        return any(self.wants(g) for g in ("produce", "latency", "consume", "memory"))

    def run(self, paired: bool = False) -> None:
        """Every row of the plan on this broker kind; with `paired`, all but the start-up
        (with the idle RSS), load and security rows, which `run_paired_sessions` measured
        beside the other broker's."""
        if self.plan.shared_broker:
            self.run_shared()
            return
        if (self.wants("startup") or self.wants("memory")) and not paired:
            self.startup_empty()
        if self.wants_loads() and not paired:
            self.loads()
        if self.wants("startup"):
            self.startup_many()
        if self.wants("metadata"):
            self.metadata_scale()
        if self.wants("security") and not paired:
            self.security()
        if self.wants("latency") and self.plan.latency_cluster:
            latency_rows.three_nodes(self)
        if self.wants("scale") and self.plan.scale is not None:
            scale_rows.run_all(self)
        shutil.rmtree(self.workroot, ignore_errors=True)

    def run_shared(self) -> None:
        """The quick plan's order: one broker for all rows but security (module docstring)."""
        scale = self.plan.scale if self.wants("scale") else None
        b = None
        try:
            if self.wants("startup") or self.wants("memory"):
                b = self.startup_empty(keep=True)
            if b is None:
                b = self._broker("shared")
                b.start()
            self.partitions_shared(b, scale)
            if self.wants_loads():
                self.loads(b)
            if scale is not None:
                scale_rows.run_all(self, b, rows=("connections", "group", "producers"))
        finally:
            if b is not None:
                self._drop(b)
        if self.wants("security"):
            self.security()
        if self.wants("latency") and self.plan.latency_cluster:
            latency_rows.three_nodes(self)
        shutil.rmtree(self.workroot, ignore_errors=True)

    def partitions_shared(self, b, scale) -> None:
        """Many partitions on the shared broker `b`: one creation and one timed restart for
        the start-up, metadata and scale partitions rows when their sizes match; otherwise
        the start-up/metadata rows here and the scale row on a fresh broker of its own."""
        n = self.plan.startup_partitions
        rows = self.wants("startup") or self.wants("metadata")
        if scale is not None and not scale.partitions:
            scale = None                     # the partitions row left out (size 0)
        if scale is not None and (scale.partitions == n or not rows):
            t0 = time.monotonic()
            try:
                got = scale_rows.partitions(self, b, n=scale.partitions)
            except Exception as exc:  # noqa: BLE001 - a failed row is a result too, as in run_all
                log(f"{self.name}: scale partitions FAILED: {exc!r}")
                self.results.meta.setdefault("failed", []).append(
                    f"{self.name}: scale partitions: {str(exc)[:300]}")
                if not b.is_running():
                    b.start()
                return
            log(f"{self.name}: scale partitions row took {time.monotonic() - t0:.1f} s"
                + (" (also the start-up and metadata rows)" if rows else ""))
            if self.wants("metadata"):
                if self.plan.metadata_partitions == n:
                    self._record_metadata(got["create_s"])
                else:
                    self.metadata_scale()
            if self.wants("startup"):
                sid = self._declare_startup_many()
                self.results.add(sid, self.name, got["restart_s"])
                self.results.add(sid + "-cpu", self.name, got["restart_cpu_s"])
                for _ in range(self.plan.reps - 1):
                    b.stop()
                    secs = timed_start(b, "sc-0")
                    log(f"{self.name}: start-up ({n} partitions) {secs:.3f} s, "
                        f"{b.start_cpu_s:.2f} cpu-s")
                    self.results.add(sid, self.name, secs)
                    self.results.add(sid + "-cpu", self.name, b.start_cpu_s)
            return
        if self.wants("startup"):
            self.startup_many(shared=b)
        if self.wants("metadata"):
            self.metadata_scale()
        if scale is not None:
            scale_rows.run_all(self, None, rows=("partitions",))

    # ------------------------------------------------------------------ start-up, idle RSS
    def startup_empty(self, keep: bool = False):
        """Fresh data dir: spawn → first acknowledged produce (wall and CPU); idle RSS; then
        the same broker stopped gracefully and restarted on its now formatted data dir.
        With `keep`, the last repetition's broker is left running and returned."""
        self.declare_startup()
        self.warm_start()
        for i in range(self.plan.startups):
            b = self.startup_rep(i, keep=keep and i == self.plan.startups - 1)
            if b is not None:
                return b
        return None

    def declare_startup(self) -> None:
        r = self.results
        r.scenario("startup-empty", title="start-up to first produce ack, fresh data dir: wall",
                   group="startup", unit="s", better="lower", target=0.05)
        r.scenario("startup-empty-cpu", title="start-up to first produce ack, fresh data dir: "
                   "broker CPU", group="startup", unit="cpu-s", better="lower")
        r.scenario("startup-restart", title="restart on a formatted data dir to first produce ack: wall",
                   group="startup", unit="s", better="lower", target=0.05)
        r.scenario("startup-restart-cpu", title="restart on a formatted data dir to first produce "
                   "ack: broker CPU", group="startup", unit="cpu-s", better="lower")
        r.scenario("rss-idle", title="RSS idle (after start-up)", group="memory", unit="MiB",
                   better="lower", target=0.2)

    def startup_rep(self, i: int, keep: bool = False):
        """One repetition of `startup_empty`: a fresh start, the idle RSS, a restart; the
        broker dropped, or with `keep` left running and returned."""
        r = self.results
        b = self._broker(f"startup-empty-{i}")
        try:
            secs = timed_start(b, "first")
            log(f"{self.name}: start-up (fresh) {secs:.3f} s, {b.start_cpu_s:.2f} cpu-s")
            r.add("startup-empty", self.name, secs)
            r.add("startup-empty-cpu", self.name, b.start_cpu_s)
            time.sleep(self.plan.idle_settle_s)
            rss, _ = rss_bytes(b.pid)
            r.add("rss-idle", self.name, rss / 2**20)
            log(f"{self.name}: idle RSS {rss / 2**20:.1f} MiB")
            b.stop()
            secs = timed_start(b, "first")
            log(f"{self.name}: restart (formatted) {secs:.3f} s, {b.start_cpu_s:.2f} cpu-s")
            r.add("startup-restart", self.name, secs)
            r.add("startup-restart-cpu", self.name, b.start_cpu_s)
        except BaseException:
            self._drop(b)
            raise
        if keep:
            return b
        self._drop(b)
        return None

    def warm_start(self) -> None:
        """One start to a first produce and a clean stop, not measured, before the timed
        ones (as hyperfine's warm-up run). On this machine, file pages untouched for a minute
        are paged out (DAMON), so the first start after the load rows would read its
        interpreter or JVM and its code from disk (kbroker 0.24 against 0.16 s warm, Kafka
        2.78 against 2.45 s, after dropping the page cache); and a start finds what an earlier
        one left for the next (kbroker's module image and code cache, as Python's ``.pyc``)."""
        b = self._broker("startup-warm")
        try:
            timed_start(b, "first")
            log(f"{self.name}: warm-up start {b.start_cpu_s:.2f} cpu-s (not measured)")
            b.stop()
        finally:
            self._drop(b)

    def _declare_startup_many(self) -> str:
        n = self.plan.startup_partitions
        sid = "startup-many"
        self.results.scenario(sid, title=f"restart to first produce ack, {n:,} partitions on disk: wall",
                              group="startup", unit="s", better="lower", target=0.1)
        self.results.scenario(sid + "-cpu", title=f"restart to first produce ack, {n:,} partitions "
                              "on disk: broker CPU", group="startup", unit="cpu-s", better="lower")
        return sid

    def startup_many(self, shared=None) -> None:
        """`startup_partitions` partitions created, the broker stopped, `reps` timed restarts;
        on a fresh broker, or on `shared` (left running afterwards)."""
        n = self.plan.startup_partitions
        sid = self._declare_startup_many()
        b = shared or self._broker("startup-many")
        try:
            if shared is None:
                b.start()
            topics = [(f"many-{t}", 100) for t in range(max(1, n // 100))]
            t0 = time.monotonic()
            create_topics(b.bootstrap_servers, topics, per_request=1000, timeout=600)
            if self.wants("metadata") and self.plan.metadata_partitions == n:
                # the quick plan measures metadata scale on this broker (one start fewer)
                self._record_metadata(time.monotonic() - t0)
            # the logs are made after CreateTopics is answered: stopped before they all
            # exist, the timed restart would make the rest (not "n partitions on disk")
            scale_rows.wait_logs(b.data_dir, len(topics) * 100, timeout=600, prefix="many-")
            b.stop()
            for i in range(self.plan.reps):
                secs = timed_start(b, "many-0")
                log(f"{self.name}: start-up ({n} partitions) {secs:.3f} s, {b.start_cpu_s:.2f} cpu-s")
                self.results.add(sid, self.name, secs)
                self.results.add(sid + "-cpu", self.name, b.start_cpu_s)
                if shared is None or i < self.plan.reps - 1:
                    b.stop()
        finally:
            if shared is None:
                self._drop(b)

    def _record_metadata(self, secs: float) -> None:
        n = self.plan.metadata_partitions
        self.results.scenario("metadata-create",
                              title=f"create {n:,} partitions (100 per topic, 1,000 per request)",
                              group="metadata", unit="s", better="lower")
        log(f"{self.name}: created {n} partitions in {secs:.2f} s")
        self.results.add("metadata-create", self.name, secs)

    def metadata_scale(self) -> None:
        n = self.plan.metadata_partitions
        if self.wants("startup") and self.plan.startup_partitions == n:
            return  # measured by startup_many
        for i in range(self.plan.metadata_reps):
            b = self._broker(f"metadata-{i}")
            try:
                b.start()
                topics = [(f"md-{t}", 100) for t in range(max(1, n // 100))]
                t0 = time.monotonic()
                create_topics(b.bootstrap_servers, topics, per_request=1000, timeout=600)
                self._record_metadata(time.monotonic() - t0)
            finally:
                self._drop(b)

    # ------------------------------------------------------------------ loads on one broker
    def loads(self, shared=None) -> None:
        run_stages(self.load_stages(shared))

    def load_stages(self, shared=None) -> Stages:
        """The produce, latency and consume rows on one broker (fresh, or `shared`), as
        stages (benchmarks/harness/paired.py): the warm-up, the peak RSS and the consume
        pre-fill run here, each group's rows are yielded to be measured."""
        b = shared or self._broker("loads")
        if shared is None:
            b.start()
        try:
            if self.profile is not None and self.name == "kbroker":
                self._start_profiler(b)
            if self.wants("produce") or self.wants("memory"):
                self.warm_up(b)
                yield [self.produce_block(b, spec) for spec in self.plan.produce]
                _, peak = rss_bytes(b.pid)
                self.results.scenario("rss-peak-produce", title="peak RSS under the produce load",
                                      group="memory", unit="MiB", better="lower")
                self.results.add("rss-peak-produce", self.name, peak / 2**20)
                log(f"{self.name}: peak RSS after produce {peak / 2**20:.1f} MiB")
            if self.wants("latency"):
                yield [self.latency_block(b), *latency_rows.single_node_blocks(self, b)]
            if self.wants("consume"):
                yield [self.consume_block(b)]
        finally:
            self._stop_profiler()
            if shared is None:
                self._drop(b)

    # ------------------------------------------------------------------ TLS and SASL_SSL
    def security(self) -> None:
        run_stages(self.security_stages())

    def security_stages(self) -> Stages:
        """librdkafka produce (1 KiB, 8p, acks=1) and consume (1 KiB, 1p) over PLAINTEXT,
        SSL and SASL_SSL (SCRAM-SHA-512) listeners of one broker: the cost of encryption and
        authentication beside Kafka's, same client, same certificates (openssl at run time).
        One stage: the broker started with its three listeners and the SCRAM user made,
        then the six rows."""
        from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

        from compat_tests.runner import free_port
        from tests.security.certs import PASSWORD
        pki = _pki(self.workroot.parent / "pki")
        b = self._broker("security")
        ssl_port, sasl_port = free_port(), free_port()
        listeners = [f"PLAINTEXT://{b.host}:{b.port}", f"SSL://{b.host}:{ssl_port}",
                     f"SASL_SSL://{b.host}:{sasl_port}"]
        b.overrides.update({
            "listeners": ",".join(listeners + ([f"CONTROLLER://{b.host}:{b.controller_port}"]
                                               if hasattr(b, "controller_port") else [])),
            "advertised.listeners": ",".join(listeners),
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL",
            "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki.server_p12),
            "ssl.keystore.password": PASSWORD, "ssl.key.password": PASSWORD,
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        })
        b.start()
        if self.profile is not None and self.name == "kbroker":
            self._start_profiler(b)
        try:
            client = admin(b.bootstrap_servers)      # kept alive until the futures resolve
            futs = client.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "bench", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"bench-secret")])
            for f in futs.values():
                f.result(timeout=30)
            time.sleep(1)
            tls = ["--conf", f"ssl.ca.location={pki.ca}"]
            kinds = [("plaintext", "PLAINTEXT", b.bootstrap_servers, []),
                     ("tls", "SSL", f"{b.host}:{ssl_port}", ["--conf", "security.protocol=SSL", *tls]),
                     ("sasl-ssl", "SASL_SSL SCRAM-SHA-512", f"{b.host}:{sasl_port}",
                      ["--conf", "security.protocol=SASL_SSL", "--conf", "sasl.mechanism=SCRAM-SHA-512",
                       "--conf", "sasl.username=bench", "--conf", "sasl.password=bench-secret", *tls])]
            self.warm_up(b, *kinds[1][2:])     # over SSL: a fresh JVM before the first row
            label = f"{self.plan.security_consume_bytes // MIB} MiB"
            r = self.results
            steps = []
            for kind, title, bootstrap, conf in kinds:
                r.scenario(f"sec-produce-{kind}", title=f"produce 1 KiB, 8p, acks=1, {title} (librdkafka)",
                           group="security", unit="MB/s", better="higher", secondary_unit="records/s")
                r.scenario(f"sec-consume-{kind}", title=f"consume {label}, 1 KiB, 1p, {title} (librdkafka)",
                           group="security", unit="MB/s", better="higher", secondary_unit="records/s")
                steps += [(f"sec-produce-{kind}", partial(self._security_produce, b, kind, bootstrap, conf)),
                          (f"sec-consume-{kind}", partial(self._security_consume, b, kind, bootstrap, conf))]
            yield [Block(b.pid, self.plan.reps, steps)]
        finally:
            self._stop_profiler()
            self._drop(b)

    def _security_produce(self, b, kind: str, bootstrap: str, conf: list[str]) -> None:
        size = self.plan.security_bytes
        topic = _unique(f"sec-p-{kind}")
        create_topics(b.bootstrap_servers, [(topic, 8)])
        out = rdkafka("produce", bootstrap, topic, "--num", str(size // 1024), "--size", "1024",
                      "--acks", "1", *conf)
        log(f"{self.name}: security produce {kind}: {out['mb_per_s']:.1f} MB/s")
        self.results.add(f"sec-produce-{kind}", self.name, out["mb_per_s"], out["records_per_s"], out)

    def _security_consume(self, b, kind: str, bootstrap: str, conf: list[str]) -> None:
        size = self.plan.security_consume_bytes
        topic = _unique(f"sec-c-{kind}")
        create_topics(b.bootstrap_servers, [(topic, 1)])
        rdkafka("produce", b.bootstrap_servers, topic, "--num", str(size // 1024), "--size", "1024")
        out = rdkafka("consume", bootstrap, topic, "--bytes", str(size), *conf)
        log(f"{self.name}: security consume {kind}: {out['mb_per_s']:.1f} MB/s")
        self.results.add(f"sec-consume-{kind}", self.name, out["mb_per_s"], out["records_per_s"], out)

    def warm_up(self, b, bootstrap: str | None = None, conf: tuple[str, ...] = ()) -> None:
        """Not measured: a first produce load, so Kafka's JIT compilers have seen the produce
        path before the first measured run (kbroker has nothing to warm up); the security
        rows send it over their SSL listener (`bootstrap`, `conf`), so the TLS engine's
        code is compiled too."""
        topic = _unique("warmup")
        create_topics(b.bootstrap_servers, [(topic, 8)])
        size = self.plan.warmup_bytes
        out = rdkafka("produce", bootstrap or b.bootstrap_servers, topic, "--num", str(size // 1024),
                      "--size", "1024", *conf)
        log(f"{self.name}: warm-up {size >> 20} MiB at {out['mb_per_s']:.1f} MB/s (not measured)")

    def produce_block(self, b, spec: Produce) -> Block:
        self.results.scenario(spec.id, title=spec.title, group="produce", unit="MB/s",
                              better="higher", secondary_unit="records/s",
                              target=1.0 if spec.record_size == 1024 else None)
        return Block(b.pid, self.plan.reps, [(spec.id, partial(self._produce, b, spec))])

    def _produce(self, b, spec: Produce) -> None:
        topic = _unique(spec.id)
        create_topics(b.bootstrap_servers, [(topic, spec.partitions)])
        cpu0 = cpu_seconds(b.proc.pid)    # the broker's CPU in the run, all its threads
        if spec.client == "java":
            out = kafka_tools.producer_perf(b.bootstrap_servers, topic,
                                            num_records=spec.records,
                                            record_size=spec.record_size, acks=spec.acks,
                                            compression=spec.compression)
        else:
            out = rdkafka("produce", b.bootstrap_servers, topic, "--num", str(spec.records),
                          "--size", str(spec.record_size), "--acks", spec.acks,
                          "--compression", spec.compression, "--stats")
        out["broker_cpu_s"] = cpu_seconds(b.proc.pid) - cpu0
        log(f"{self.name}: {spec.id}: {out['mb_per_s']:.1f} MB/s, "
            f"{out['records_per_s']:.0f} records/s, broker {out['broker_cpu_s']:.2f} cpu-s")
        self.results.add(spec.id, self.name, out["mb_per_s"], out["records_per_s"], out)

    def latency_block(self, b) -> Block:
        """EndToEndLatency and the librdkafka fixed-rate row, sharing their repetitions."""
        plan = self.plan
        for sid, title in (("e2e-java", f"end-to-end latency, EndToEndLatency, 1 KiB, acks=1, "
                                        f"{plan.e2e_records:,} round trips"),
                           ("e2e-rdkafka", f"end-to-end latency, librdkafka, 1 KiB, acks=1, "
                                           f"{plan.latency_rate}/s fixed rate")):
            self.results.scenario(sid, title=title, group="latency", unit="ms p99",
                                  better="lower", secondary_unit="ms p50", target=1.0)
        return Block(b.pid, plan.reps, [("e2e-java", partial(self._e2e_java, b)),
                                        ("e2e-rdkafka", partial(self._e2e_rdkafka, b))])

    def _e2e_java(self, b) -> None:
        topic = _unique("e2e")
        create_topics(b.bootstrap_servers, [(topic, 1)])
        out = kafka_tools.end_to_end_latency(b.bootstrap_servers, topic,
                                             num_records=self.plan.e2e_records, acks="1",
                                             record_size=1024)
        log(f"{self.name}: EndToEndLatency p50 {out['p50_ms']:.2f} p99 {out['p99_ms']:.2f} "
            f"p99.9 {out['p999_ms']:.2f} ms")
        self.results.add("e2e-java", self.name, out["p99_ms"], out["p50_ms"], out)

    def _e2e_rdkafka(self, b) -> None:
        plan = self.plan
        topic = _unique("lat")
        create_topics(b.bootstrap_servers, [(topic, 1)])
        out = rdkafka("latency", b.bootstrap_servers, topic, "--rate", str(plan.latency_rate),
                      "--seconds", str(plan.latency_seconds), "--size", "1024")
        log(f"{self.name}: librdkafka latency p50 {out['p50_ms']:.2f} p99 {out['p99_ms']:.2f} "
            f"p99.9 {out['p999_ms']:.2f} ms ({out['records']}/{out['expected']})")
        self.results.add("e2e-rdkafka", self.name, out["p99_ms"], out["p50_ms"], out)

    def consume_block(self, b) -> Block:
        """The consume topic pre-filled (here, unmeasured), then ConsumerPerformance and a
        librdkafka consumer reading it, sharing their repetitions."""
        r = self.results
        size = self.plan.consume_bytes
        label = f"{size / 2**30:g} GiB" if size >= 2**30 else f"{size // 2**20} MiB"
        topic = _unique("consume")
        create_topics(b.bootstrap_servers, [(topic, 1)])
        t0 = time.monotonic()
        out = rdkafka("produce", b.bootstrap_servers, topic, "--num", str(size // 1024),
                      "--size", "1024", timeout=1800)
        log(f"{self.name}: pre-filled {label} in {time.monotonic() - t0:.1f} s "
            f"({out['mb_per_s']:.1f} MB/s, librdkafka)")
        r.scenario("consume-java", title=f"consume {label} from the start, 1 KiB, 1p "
                                         f"(ConsumerPerformance)",
                   group="consume", unit="MB/s", better="higher", secondary_unit="records/s",
                   target=1.0)
        r.scenario("consume-rdkafka", title=f"consume {label} from the start, 1 KiB, 1p "
                                            f"(librdkafka)",
                   group="consume", unit="MB/s", better="higher", secondary_unit="records/s")
        return Block(b.pid, self.plan.consume_reps,
                     [("consume-java", partial(self._consume_java, b, topic)),
                      ("consume-rdkafka", partial(self._consume_rdkafka, b, topic))])

    def _consume_java(self, b, topic: str) -> None:
        records = self.plan.consume_bytes // 1024
        out = kafka_tools.consumer_perf(b.bootstrap_servers, topic, num_records=records,
                                        group=_unique("perf"), timeout=1200)
        if out["records"] < records:
            raise RuntimeError(f"ConsumerPerformance read {out['records']} of {records}")
        log(f"{self.name}: ConsumerPerformance {out['fetch_mb_per_s']:.1f} MB/s "
            f"(with group join {out['mb_per_s']:.1f})")
        self.results.add("consume-java", self.name, out["fetch_mb_per_s"],
                         out["fetch_records_per_s"], out)

    def _consume_rdkafka(self, b, topic: str) -> None:
        size = self.plan.consume_bytes
        cpu0 = cpu_seconds(b.proc.pid)
        out = rdkafka("consume", b.bootstrap_servers, topic, "--bytes", str(size), "--stats")
        out["broker_cpu_s"] = cpu_seconds(b.proc.pid) - cpu0
        if out["bytes"] < size:
            raise RuntimeError(f"librdkafka consume read {out['bytes']} of {size} bytes")
        log(f"{self.name}: librdkafka consume {out['mb_per_s']:.1f} MB/s, broker "
            f"{out['broker_cpu_s']:.2f} cpu-s, {out['fetch_idle_s']:.1f} s without a Fetch "
            f"request")
        self.results.add("consume-rdkafka", self.name, out["mb_per_s"], out["records_per_s"], out)

    # ------------------------------------------------------------------ profiling (kbroker)
    _profiler = None

    def _start_profiler(self, b) -> None:
        pyspy = Path(sys.executable).with_name("py-spy")
        out = self.profile / f"kbroker-{self.plan.name}-{time.strftime('%H%M%S')}.txt"
        self.profile.mkdir(parents=True, exist_ok=True)
        self._profiler = subprocess.Popen(
            [str(pyspy), "record", "--pid", str(b.pid), "--format", "raw", "--rate", "200",
             "--output", str(out), "--nonblocking"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
        log(f"profiling kbroker (pid {b.pid}) into {out}")

    def _stop_profiler(self) -> None:
        if self._profiler is not None:
            import signal
            self._profiler.send_signal(signal.SIGINT)
            try:
                self._profiler.wait(30)
            except subprocess.TimeoutExpired:
                self._profiler.kill()
            self._profiler = None


def run_paired_sessions(sessions: list[Session]) -> None:
    """The start-up, the loads and the security rows of every session's broker kind, paired:
    one broker of each kind alive through each load group, the repetitions of every row
    alternating between them (benchmarks/harness/paired.py). Their other rows are left to
    `Session.run(paired=True)`."""
    first = sessions[0]
    if first.wants("startup") or first.wants("memory"):
        paired_startups(sessions)
    if first.wants_loads():
        run_paired(first.results, {s.name: s.load_stages() for s in sessions})
    if first.wants("security"):
        run_paired(first.results, {s.name: s.security_stages() for s in sessions})


def paired_startups(sessions: list[Session]) -> None:
    """The start-up rows (`Session.startup_empty`) of every broker kind, their repetitions
    alternating in the `abba` order, first in the run. Measured one kind after the other,
    kbroker's starts and Kafka's were minutes apart, and this machine's speed moves within
    minutes (a kbroker start's CPU 0.10-0.16 cpu-s for the same work in one run): a ratio of
    two medians taken in different spells. Paired, the two starts of a repetition are
    seconds apart, with no broker running but the one measured."""
    for s in sessions:
        s.declare_startup()
        s.warm_start()
    for i, order in enumerate(abba([s.name for s in sessions], sessions[0].plan.startups)):
        for name in order:
            next(s for s in sessions if s.name == name).startup_rep(i)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")
