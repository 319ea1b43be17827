"""Replay the differential corpus against a broker and diff responses field by field.

`load_corpus()` reads corpus/*.jsonl in capture order. `Replayer(bootstrap).run(steps)` sends
every request, in the order the capture saw the responses complete, on one connection per
recorded connection, and returns one `Result` per step. `diff(api_key, version, a, b)` compares
two decoded response bodies after `normalise()`; it returns the differing paths.

What the replay rewrites in a request before sending it (and why):
* values the broker generates — member ids, producer ids and epochs, generation ids, topic ids —
  are mapped from what the corpus' recorded response said to what this broker answered,
  learned by walking both responses side by side; producer ids inside Produce record batches
  are patched too (with a fresh CRC32C);
* Fetch requests are made sessionless (session 0, epoch -1, nothing forgotten) and wait at
  most 200 ms: fetch sessions are an optimisation either broker may decline, and the replay
  is serial;
* nothing else: topic, group and transactional ids are replayed as recorded (every replay runs
  against a fresh broker).

Convergence: a transient error the recorded response did not have (unknown topic, leader not
available, coordinator loading...) is retried, as clients do; a read-only request whose answer
differs from the recorded one is retried for a short while too (Kafka propagates metadata
asynchronously; the capture's client had waited for it). Both are bounded per step and per
replay, so a broker that never converges costs seconds, not minutes.

Fetch requests that were incremental at capture time (session epoch > 0) are compared only
between the two live brokers: the replay sends them as full fetches.

What `normalise()` ignores (the legitimate differences; anything else is a finding):
IGNORED_FIELDS below (generated ids, cluster id, ports and paths, throttle times, wall-clock
timestamps, error message wording), ApiVersions' capability lists (kbroker advertises a subset
on purpose — ApiVersions has its own tests), DescribeQuorum's metadata-log offsets (each
controller writes its own records), disk sizes in DescribeLogDirs, the broker configs the
harness sets to hold a replay's conditions steady (common.HARNESS_CONFIGS). Record batches are compared
decoded (every header field but the producer id and CRC, every record), and lists of structs are
compared as sets keyed by their identifying fields (names, partitions, ...).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c

from compat_tests.differential.common import HARNESS_CONFIGS, Connection, order_key_of
from compat_tests.differential.proxy import is_internal
from kbroker.wire import messages, protocol, records
from kbroker.wire.codegen import Message
from kbroker.wire.errors import WireError

CORPUS = Path(__file__).resolve().parent / "corpus"

IGNORED_FIELDS = {
    "throttle_time_ms",                      # quotas: kbroker never throttles
    "cluster_id",                            # random per cluster
    "member_id", "leader", "producer_id", "topic_id", "session_id",   # generated ids
    "host", "port",                          # where each broker listens
    "error_message", "batch_index_error_message",  # free text; codes are compared
    "log_dir", "total_bytes", "usable_bytes",  # file system paths and disk sizes
    "transaction_start_time_ms",             # wall clock
    "last_fetch_timestamp", "last_caught_up_timestamp",  # wall clock (DescribeQuorum)
}
IGNORED_BY_API = {
    18: {"api_keys", "supported_features", "finalized_features", "finalized_features_epoch",
         "zk_migration_ready"},
    55: {"high_watermark", "log_end_offset", "leader_epoch"},
    61: {"last_timestamp"},   # a producer whose last batch is a marker: the broker's clock
}
# Errors a broker gives while it converges (Kafka applies metadata asynchronously: a topic just
# created is briefly unknown): retried while the recorded answer did not have them.
TRANSIENT_ERRORS = {3, 5, 6, 14, 15, 16, 51, 74, 75}
# Timing-only answers: a capture whose client got one of these (and retried) is not compared
# step by step — the replay, serial and unhurried, rarely meets the same moment.
TIMING_ERRORS = {14, 15, 16, 51}
# Requests that change nothing: retried (within a budget) until they match the recorded answer,
# for the same reason (a new partition count, a deleted topic, a group's state).
READ_ONLY = {1, 2, 3, 9, 10, 15, 16, 23, 32, 35, 55, 60, 61, 65, 66}
# Differences that can be a broker still converging (worth waiting for); others (a value that
# simply differs) are answered at once. A config's value and source: Kafka answers an
# AlterConfigs once the controller committed it, its brokers apply it when their metadata
# loader replays it, so a DescribeConfigs right after may still show the default (a CI run:
# kafka-python#41 answered retention.ms 604800000 from the default, the capture 7200000).
CONVERGING = re.compile(r"error_code|entries|high_watermark|last_stable_offset|log_start_offset"
                        r"|\.configs\[[^]]*\]\.(value|config_source)")
STEP_PATIENCE = 5.0      # seconds one step may wait for a transient error to pass
# DescribeTransactions states of a transaction whose markers are still being written.
PREPARING = {"PrepareCommit", "PrepareAbort"}
DIFF_PATIENCE = 1.5      # seconds a read-only step may wait to match the recorded answer
TOTAL_PATIENCE = 45.0    # seconds a whole replay may spend waiting on differences
# Broker configs whose values name this machine's ports and paths.
ENVIRONMENT_CONFIGS = {"listeners", "advertised.listeners", "controller.quorum.voters",
                       "controller.quorum.bootstrap.servers", "log.dirs", "log.dir",
                       "metadata.log.dir"}
INTERNAL_TOPICS = {"__consumer_offsets", "__transaction_state", "__cluster_metadata"}
IDENTITY_FIELDS = ("name", "topic", "topic_name", "resource_type", "resource_name",
                   "partition_index", "partition", "index", "group_id", "transactional_id",
                   "config_name", "key", "api_key", "node_id", "broker_id", "replica_id")


@dataclass
class Step:
    scenario: str
    index: int
    conn: int
    client_id: str | None
    api_key: int
    api_version: int
    request: bytes
    recorded: bytes | None

    @property
    def name(self) -> str:
        return api_name(self.api_key)

    @property
    def incremental_fetch(self) -> bool:
        if self.api_key != 1:
            return False
        _, body = protocol.decode_request(self.request)
        return getattr(body, "session_epoch", -1) > 0

    def where(self) -> str:
        return f"{self.scenario}#{self.index} {self.name} v{self.api_version} ({self.client_id})"


@dataclass
class Result:
    step: Step
    response: object | None = None       # decoded live response body
    recorded: object | None = None       # decoded recorded (capture-time Kafka) response body
    error: str | None = None              # transport or codec problem
    retries: int = 0


def api_name(api_key: int) -> str:
    return messages.request_class(api_key)._message.name.removesuffix("Request")


def load_corpus(path: Path = CORPUS) -> list[Step]:
    manifest = json.loads((path / "MANIFEST.json").read_text())
    steps = []
    for scenario in manifest["scenarios"]:
        lines = [json.loads(line) for line in (path / f"{scenario}.jsonl").read_text().splitlines()]
        lines = [d for d in lines if not is_internal(d["client_id"])]
        for i, d in enumerate(sorted(lines, key=order_key_of)):
            steps.append(Step(scenario, i, d["conn"], d["client_id"], d["api_key"],
                              d["api_version"], base64.b64decode(d["request"]),
                              None if d["response"] is None else base64.b64decode(d["response"])))
    return steps


# --- request rewriting -----------------------------------------------------------------------

def canonical(name: str) -> str | None:
    """The mapped kind of a field (`v3_and_below_producer_id` is a producer id too)."""
    if name in ("leader", "member_id") or name.endswith("member_id") and "instance" not in name:
        return "member_id"
    for kind in ("producer_id", "producer_epoch", "topic_id", "generation_id"):
        if name == kind or name.endswith("_" + kind):
            return kind
    return None


class Mapper:
    """recorded value → live value, per kind of generated value, learned from response pairs."""

    def __init__(self):
        self.maps: dict[str, dict] = {"member_id": {}, "producer_id": {}, "producer_epoch": {},
                                      "topic_id": {}, "generation_id": {}}

    def learn(self, recorded, live) -> None:
        if isinstance(recorded, Message) and type(recorded) is type(live):
            for name in recorded._fields:
                a, b = getattr(recorded, name), getattr(live, name)
                kind = canonical(name)
                if kind and not isinstance(a, (list, Message)):
                    if a != b and a not in (None, "", -1):
                        self.maps[kind][a] = b
                    continue
                self.learn(a, b)
        elif isinstance(recorded, list) and isinstance(live, list) and len(recorded) == len(live):
            for a, b in zip(recorded, live):
                self.learn(a, b)

    def rewrite(self, obj, version: int | None = None) -> None:
        """Map the generated values of ``obj``, a request decoded at ``version``: fields
        that version does not carry keep their defaults (AddPartitionsToTxn v4+ has no
        ``v3_and_below_producer_id``; its default must not be taken for a producer id)."""
        if isinstance(obj, Message):
            spec = getattr(type(obj), "_spec", None)
            carried = None if version is None or spec is None else {
                f.attr for f in spec.fields if f.versions.low <= version <= f.versions.high}
            for name in obj._fields:
                value = getattr(obj, name)
                kind = canonical(name)
                if carried is not None and name not in carried:
                    continue
                if kind and not isinstance(value, (list, Message)):
                    mapped = self.maps[kind].get(value, value)
                    if mapped != value:
                        setattr(obj, name, mapped)
                elif name == "records" and value is not None:
                    setattr(obj, name, self.patch_batches(bytes(value)))
                else:
                    self.rewrite(value, version)
        elif isinstance(obj, list):
            for item in obj:
                self.rewrite(item, version)

    def patch_batches(self, buf: bytes) -> bytes:
        """Producer id/epoch in every batch header (outside nothing: inside the CRC)."""
        ids, epochs = self.maps["producer_id"], self.maps["producer_epoch"]
        if not ids and not epochs:
            return buf
        out = bytearray(buf)
        for pos, header in records.iter_batches(out, allow_truncated_tail=True):
            pid = ids.get(header.producer_id, header.producer_id)
            epoch = epochs.get(header.producer_epoch, header.producer_epoch) \
                if header.producer_id in ids else header.producer_epoch
            if (pid, epoch) != (header.producer_id, header.producer_epoch):
                struct.pack_into(">qh", out, pos + 43, pid, epoch)
                struct.pack_into(">I", out, pos + 17, crc32c(bytes(out[pos + 21:pos + 12 + header.batch_length])))
        return bytes(out)


def prepare(step: Step, mapper: Mapper):
    """The request body to send for `step` (decoded, rewritten)."""
    header, body = protocol.decode_request(step.request)
    mapper.rewrite(body, step.api_version)
    if step.api_key == 18 and getattr(body, "cluster_id", None) is not None:
        # ApiVersions v5+ (KIP-1242): the capture's client named the cluster and node of the
        # capture run; a replay runs against another cluster, so it names none
        body.cluster_id, body.node_id = None, -1
    if step.api_key == 1:  # Fetch: sessionless, short waits
        if hasattr(body, "session_id"):
            body.session_id, body.session_epoch = 0, -1
            body.forgotten_topics_data = []
        body.max_wait_ms = min(body.max_wait_ms, 200)
    return header, body


# --- replay ----------------------------------------------------------------------------------

class Replayer:
    def __init__(self, bootstrap: str):
        host, port = bootstrap.rsplit(":", 1)
        self.address = (host, int(port))
        self.mapper = Mapper()
        self.conns: dict[tuple[str, int], Connection] = {}
        self.patience = TOTAL_PATIENCE
        self.ready: set[tuple[str, int]] = set()  # partitions known to have a leader

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()

    def connection(self, step: Step) -> Connection:
        key = (step.scenario, step.conn)
        if key not in self.conns:
            self.conns[key] = Connection(self.address, timeout=30)
        return self.conns[key]

    def run(self, steps: list[Step]) -> list[Result]:
        try:
            return [self.run_one(step) for step in steps]
        finally:
            self.close()

    def run_one(self, step: Step) -> Result:
        result = Result(step)
        if step.api_key == 18 and step.api_version not in messages.request_class(18)._message.valid:
            return self.run_unknown_api_versions(step, result)
        try:
            if step.recorded is not None:
                result.recorded = protocol.decode_response(step.recorded, step.api_key,
                                                           step.api_version)[1]
            header, body = prepare(step, self.mapper)
        except WireError as exc:
            result.error = f"corpus entry does not decode: {exc}"
            return result
        if step.api_key == 0:
            self.wait_for_leaders(body)
        started = time.monotonic()
        while True:
            try:
                response = self.exchange(step, header.client_id, body)
            except (OSError, ConnectionError, WireError, AssertionError) as exc:
                self.conns.pop((step.scenario, step.conn), None)
                result.error = f"{type(exc).__name__}: {exc}"
                return result
            if not self.should_retry(step, result.recorded, response, started):
                break
            result.retries += 1
            time.sleep(0.1)
        result.response = response
        if response is not None and result.recorded is not None:
            self.mapper.learn(result.recorded, response)
        if step.api_key == 26 and response is not None:
            result.error = self.wait_for_markers(body.transactional_id) or result.error
        return result

    def wait_for_markers(self, transactional_id: str) -> str | None:
        """After an EndTxn, which both brokers answer before the markers are written: wait
        (≤ 10 s) until the coordinator says they are (the transaction left PrepareCommit /
        PrepareAbort), so the steps after it read what a client reading after the
        transaction's end reads. (WriteTxnMarkers is answered once its markers are
        written.) Returns why it gave up, or None."""
        request = messages.DescribeTransactionsRequest(transactional_ids=[transactional_id])
        conn = Connection(self.address, timeout=10)
        try:
            deadline = time.monotonic() + 10
            while True:
                state = conn.request(65, 0, request, client_id="dx-replay").transaction_states[0]
                if state.error_code != 0 or state.transaction_state not in PREPARING:
                    return None
                if time.monotonic() > deadline:
                    return f"the markers of {transactional_id!r} not written in 10 s ({state.transaction_state})"
                time.sleep(0.05)
        finally:
            conn.close()

    def wait_for_leaders(self, produce) -> None:
        """Before the first Produce to a partition: wait (≤ 5 s) until the broker knows its
        leader. Resending a multi-partition Produce after a partial failure would turn the
        partitions that succeeded into duplicates, which Kafka answers differently."""
        wanted = {(t.name, p.index) for t in produce.topic_data for p in t.partition_data}
        wanted -= self.ready
        if not wanted:
            return
        m = messages.MetadataRequest
        request = m(topics=[m.MetadataRequestTopic(name=n) for n in sorted({t for t, _ in wanted})],
                    allow_auto_topic_creation=False)
        conn = Connection(self.address, timeout=10)
        try:
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                response = conn.request(3, 12, request, client_id="dx-replay")
                settled = set()
                for t in response.topics:
                    if t.error_code != 0:
                        continue
                    led = {p.partition_index for p in t.partitions
                           if p.error_code == 0 and p.leader_id >= 0}
                    # a partition the topic does not have is an error case, not a wait
                    settled |= {(n, i) for n, i in wanted
                                if n == t.name and (i in led or i >= len(t.partitions))}
                if wanted <= settled:
                    break
                time.sleep(0.1)
        finally:
            conn.close()
        self.ready |= wanted

    def should_retry(self, step: Step, recorded, response, started: float) -> bool:
        if response is None or recorded is None:
            return False
        waited = time.monotonic() - started
        if (_errors(response) - _errors(recorded)) & TRANSIENT_ERRORS:
            return waited < STEP_PATIENCE
        if step.api_key in READ_ONLY and not step.incremental_fetch \
                and waited < DIFF_PATIENCE and self.patience > 0 \
                and any(CONVERGING.search(line) for line in diff(step.api_key, recorded, response)):
            self.patience -= 0.1
            return True
        return False

    def run_unknown_api_versions(self, step: Step, result: Result) -> Result:
        """An ApiVersions version newer than the schema: both brokers answer in v0 format with
        UNSUPPORTED_VERSION; compare that error code."""
        conn = self.connection(step)
        conn.send(step.request)
        frame = conn.receive()
        result.response = messages.ApiVersionsResponse.decode(frame, 0, 4)
        result.recorded = messages.ApiVersionsResponse.decode(step.recorded, 0, 4)
        return result

    def exchange(self, step: Step, client_id: str | None, body):
        conn = self.connection(step)
        correlation_id = next(conn.correlation)
        frame = protocol.encode_request(step.api_key, step.api_version, correlation_id,
                                        client_id, body)
        conn.sock.sendall(frame)
        if step.api_key == 0 and body.acks == 0:
            return None
        got, response = protocol.decode_response(conn.receive(), step.api_key, step.api_version)
        if got != correlation_id:
            raise AssertionError(f"correlation id {got}, expected {correlation_id}")
        return response


def misrouted_at_capture(step: Step, recorded) -> bool:
    """An ApiVersions v5+ answered REBOOTSTRAP_REQUIRED at capture time: the client's
    expectation met the recording proxy's topology, which no replay reproduces (the replay
    names no cluster or node, see ``prepare``)."""
    return step.api_key == 18 and getattr(recorded, "error_code", 0) == 129


def timing_dependent(response) -> bool:
    return bool(errors_in(response) & TIMING_ERRORS)


def errors_in(obj) -> set[int]:
    return _errors(obj)


def _errors(obj) -> set[int]:
    found = set()
    if isinstance(obj, Message):
        for name in obj._fields:
            value = getattr(obj, name)
            if name.endswith("error_code") and isinstance(value, int):
                found.add(value)
            else:
                found |= _errors(value)
    elif isinstance(obj, list):
        for item in obj:
            found |= _errors(item)
    return found


# --- normalise and diff ----------------------------------------------------------------------

def decode_batches(data: bytes) -> list[dict]:
    out = []
    for pos, h in records.iter_batches(data, allow_truncated_tail=True):
        # control batches (transaction markers) carry the broker's wall clock
        skip = {"producer_id", "crc"} | ({"base_timestamp", "max_timestamp"} if h.is_control else set())
        batch = {f: getattr(h, f) for f in h._fields if f not in skip}
        batch["records"] = [
            {"offset": r.offset, "timestamp": None if h.is_control else r.timestamp,
             "key": r.key, "value": r.value, "headers": [list(x) for x in r.headers]}
            for r in records.decode_records(data, pos, h)]
        out.append(batch)
    return out


def normalise(api_key: int, body) -> object:
    ignored = IGNORED_FIELDS | IGNORED_BY_API.get(api_key, set())

    def conv(value, name=None):
        if isinstance(value, Message):
            out = {f: conv(getattr(value, f), f) for f in value._fields if f not in ignored}
            if api_key == 32 and out.get("name") in ENVIRONMENT_CONFIGS:
                out["value"] = "<environment>"
                out.pop("synonyms", None)
            if api_key == 35 and out.get("name") in INTERNAL_TOPICS:
                # how big the coordinators' own records are is theirs to choose
                for p in out.get("partitions") or []:
                    p.pop("partition_size", None)
            return out
        if isinstance(value, list):
            items = [conv(v) for v in value]
            if api_key == 32:   # the harness's own broker settings (common.HARNESS_CONFIGS)
                items = [i for i in items
                         if not (isinstance(i, dict) and i.get("name") in HARNESS_CONFIGS)]
            if items and all(isinstance(i, dict) for i in items):
                keys = [k for k in IDENTITY_FIELDS if all(k in i for i in items)]
                if keys:
                    items.sort(key=lambda i: json.dumps([i[k] for k in keys], default=str))
            return items
        if name == "records" and value is not None:
            try:
                return decode_batches(bytes(value))
            except WireError as exc:
                return f"<undecodable records: {exc}>"
        if isinstance(value, memoryview):
            return bytes(value)
        return value

    return conv(body)


def diff(api_key: int, a, b, limit: int = 20) -> list[str]:
    """Paths where the normalised responses differ, as 'path: a != b' lines."""
    out: list[str] = []

    def walk(x, y, path):
        if len(out) >= limit:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for k in list(x) + [k for k in y if k not in x]:
                walk(x.get(k, "<absent>"), y.get(k, "<absent>"), f"{path}.{k}")
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                out.append(f"{path}: {len(x)} entries != {len(y)} entries "
                           f"({_short(x)} != {_short(y)})")
                return
            for i, (p, q) in enumerate(zip(x, y)):
                walk(p, q, f"{path}[{_label(p, i)}]")
        elif x != y:
            out.append(f"{path}: {_short(x)} != {_short(y)}")

    walk(normalise(api_key, a), normalise(api_key, b), "")
    return out


def _label(item, index: int) -> str:
    if isinstance(item, dict):
        keys = [f"{item[k]}" for k in IDENTITY_FIELDS if k in item and not isinstance(item[k], (list, dict))]
        if keys:
            return "/".join(keys[:2])
    return str(index)


def _short(value, n: int = 160) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n] + "…"
