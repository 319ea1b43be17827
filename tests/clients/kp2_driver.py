"""kafka-python 2.x driver for tests/clients/test_kafka_python2.py.

Run with ``.venv-kp2/bin/python`` (``make kp2``), never with the main venv: it imports only the
standard library and kafka-python 2.x (plus its optional codec packages), nothing from kbroker.

Input: a JSON scenario as argv[1] or on stdin::

    {"bootstrap": "127.0.0.1:9092", "steps": [{"op": "create_topic", "topic": "t", ...}, ...]}

Output (stdout): ``{"kafka_python": "<version>", "results": [<one object per step>]}``. A step that
raises yields ``{"op": ..., "error": "<repr>"}`` and the next step still runs, so the test can name
the failing scenario. Bytes (keys, values, header values) are returned as latin-1 strings.

Ops: create_topic, produce_consume (keys, headers, a codec, assign + seek_to_beginning),
group_resume (commit part way, a second group member resumes from the commit),
offsets_for_times, old_handshake (kafka-python 2.0.x's pipelined ApiVersions v0 + Metadata v0 on
one raw socket), metadata_pinned (a client pinned to an old api_version lists topics), autodetect
(api_version detection), describe_topics (KafkaAdminClient.describe_topics).
"""
from __future__ import annotations

import json
import socket
import struct
import sys
import time
import traceback

import kafka
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import codec as kcodec
from kafka.admin import NewTopic

CODEC_AVAILABLE = {
    "none": lambda: True,
    "gzip": kcodec.has_gzip,
    "snappy": kcodec.has_snappy,
    "lz4": kcodec.has_lz4,
    "zstd": kcodec.has_zstd,
}


def s(b):
    return None if b is None else b.decode("latin-1")


def pin(step):
    v = step.get("api_version")
    return tuple(v) if v else None


def common(step, bootstrap):
    kw = {"bootstrap_servers": bootstrap, "request_timeout_ms": 30_000}
    if pin(step):
        kw["api_version"] = pin(step)
    return kw


def rec_json(r):
    return {"partition": r.partition, "offset": r.offset, "timestamp": r.timestamp,
            "key": s(r.key), "value": s(r.value),
            "headers": [[k, s(v)] for k, v in (r.headers or [])]}


def consumer(step, bootstrap, **kw):
    kw.setdefault("fetch_max_wait_ms", 200)
    kw.setdefault("enable_auto_commit", False)
    return KafkaConsumer(**common(step, bootstrap), **kw)


def poll_until(c, n, timeout):
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        for recs in c.poll(timeout_ms=300, max_records=n - len(out)).values():
            out.extend(recs)
    return sorted(out, key=lambda r: (r.partition, r.offset))


def produce(step, bootstrap, topic, n, *, codec=None, timestamps=None):
    p = KafkaProducer(**common(step, bootstrap), acks="all", linger_ms=20, max_block_ms=20_000,
                      compression_type=None if codec in (None, "none") else codec)
    try:
        futs = []
        for i in range(n):
            headers = [("h", b"%d" % i), ("empty", b"")] if i % 2 else []
            futs.append(p.send(topic, key=b"k%d" % i, value=b"value-%d-" % i + b"x" * 100,
                               headers=headers, partition=0,
                               timestamp_ms=timestamps[i] if timestamps else None))
        p.flush(timeout=20)
        return [f.get(timeout=10).offset for f in futs]
    finally:
        p.close(timeout=5)


def op_create_topic(step, bootstrap):
    """Create with KafkaAdminClient; wait for it through a consumer's metadata (describe_topics
    is its own op: see op_describe_topics)."""
    admin = KafkaAdminClient(**common(step, bootstrap), client_id="kp2-driver")
    try:
        admin.create_topics([NewTopic(step["topic"], step.get("partitions", 1), 1)])
        api_version = list(admin.config["api_version"])
    finally:
        admin.close()
    c = consumer(step, bootstrap)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            parts = c.partitions_for_topic(step["topic"])
            if parts and len(parts) == step.get("partitions", 1):
                return {"partitions": len(parts), "api_version": api_version}
            time.sleep(0.05)
            c.topics()   # refresh
        raise AssertionError("topic did not appear")
    finally:
        c.close()


def op_describe_topics(step, bootstrap):
    admin = KafkaAdminClient(**common(step, bootstrap), client_id="kp2-driver")
    try:
        meta = admin.describe_topics([step["topic"]])
        return {"topics": [{"topic": t["topic"], "error_code": t["error_code"],
                            "partitions": len(t["partitions"]),
                            "authorized_operations": t.get("authorized_operations")}
                           for t in meta]}
    finally:
        admin.close()


def op_produce_consume(step, bootstrap):
    codec = step.get("codec", "none")
    if not CODEC_AVAILABLE[codec]():
        return {"skipped": f"codec {codec} unavailable in this kafka-python install"}
    topic, n = step["topic"], step.get("n", 50)
    offsets = produce(step, bootstrap, topic, n, codec=codec)
    c = consumer(step, bootstrap)
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek_to_beginning(tp)
        recs = poll_until(c, n, step.get("timeout", 20))
        return {"produced_offsets": offsets, "records": [rec_json(r) for r in recs],
                "api_version": list(c.config["api_version"])}
    finally:
        c.close()


def op_group_resume(step, bootstrap):
    topic, group, n, k = step["topic"], step["group"], step.get("n", 20), step.get("commit_at", 7)
    produce(step, bootstrap, topic, n)
    tp = TopicPartition(topic, 0)
    first = consumer(step, bootstrap, group_id=group, auto_offset_reset="earliest",
                     session_timeout_ms=10_000, heartbeat_interval_ms=1_000)
    try:
        first.subscribe([topic])
        recs1 = poll_until(first, n, step.get("timeout", 30))
        assignment1 = sorted([t.topic, t.partition] for t in first.assignment())
        from kafka.structs import OffsetAndMetadata
        try:
            first.commit({tp: OffsetAndMetadata(k, "", -1)})
        except TypeError:   # OffsetAndMetadata(offset, metadata) in older 2.x
            first.commit({tp: OffsetAndMetadata(k, "")})
        committed1 = first.committed(tp)
    finally:
        first.close()
    second = consumer(step, bootstrap, group_id=group, auto_offset_reset="earliest",
                      session_timeout_ms=10_000, heartbeat_interval_ms=1_000)
    try:
        second.subscribe([topic])
        recs2 = poll_until(second, n - k, step.get("timeout", 30))
        committed_before = second.committed(tp)
        second.commit()   # commits the consumed position
        committed_after = second.committed(tp)
    finally:
        second.close()
    return {"first_offsets": [r.offset for r in recs1], "first_assignment": assignment1,
            "committed_by_first": committed1, "second_offsets": [r.offset for r in recs2],
            "second_first_record": rec_json(recs2[0]) if recs2 else None,
            "committed_seen_by_second": committed_before, "committed_after_second": committed_after}


def op_offsets_for_times(step, bootstrap):
    topic, n = step["topic"], step.get("n", 10)
    base = int(time.time() * 1000) - 60_000
    ts = [base + 1000 * i for i in range(n)]
    produce(step, bootstrap, topic, n, timestamps=ts)
    c = consumer(step, bootstrap)
    tp = TopicPartition(topic, 0)
    try:
        queries = {"before_all": base - 5000, "exact_3": ts[3], "between_4_5": ts[4] + 500,
                   "after_all": ts[-1] + 5000}
        out = {}
        for name, t in queries.items():
            r = c.offsets_for_times({tp: t})[tp]
            out[name] = None if r is None else {"offset": r.offset, "timestamp": r.timestamp}
        out["timestamps"] = ts
        out["beginning"] = c.beginning_offsets([tp])[tp]
        out["end"] = c.end_offsets([tp])[tp]
        return out
    finally:
        c.close()


def _frame(api_key, api_version, corr, client_id, body):
    cid = client_id.encode()
    payload = struct.pack(">hhih", api_key, api_version, corr, len(cid)) + cid + body
    return struct.pack(">i", len(payload)) + payload


def _read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def op_old_handshake(step, bootstrap):
    """kafka-python 2.0.x's ``check_version``: ApiVersions v0 and, right behind it on the same
    socket without waiting, Metadata v0 (all topics); then both responses, in order."""
    from kafka.protocol.api_versions import ApiVersionsResponse_v0
    from kafka.protocol.metadata import MetadataResponse_v0
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        meta_body = struct.pack(">i", 0)   # Metadata v0: topics = [] (all topics)
        sock.sendall(_frame(18, 0, 1, "kafka-python-2.0.2", b"")
                     + _frame(3, 0, 2, "kafka-python-2.0.2", meta_body))
        out = {}
        for want, cls in ((1, ApiVersionsResponse_v0), (2, MetadataResponse_v0)):
            size, = struct.unpack(">i", _read_exact(sock, 4))
            data = _read_exact(sock, size)
            corr, = struct.unpack(">i", data[:4])
            resp = cls.decode(data[4:])
            if want == 1:
                out["api_versions"] = {"correlation_id": corr, "error_code": resp.error_code,
                                       "apis": {str(k): [lo, hi] for k, lo, hi in resp.api_versions}}
            else:
                out["metadata"] = {"correlation_id": corr,
                                   "brokers": [[b[0], b[1], b[2]] for b in resp.brokers],
                                   "topics": {t[1]: {"error_code": t[0], "partitions": len(t[2])}
                                              for t in resp.topics}}
        # the socket stays usable afterwards: one more ApiVersions v0
        sock.sendall(_frame(18, 0, 3, "kafka-python-2.0.2", b""))
        size, = struct.unpack(">i", _read_exact(sock, 4))
        data = _read_exact(sock, size)
        out["third_correlation_id"] = struct.unpack(">i", data[:4])[0]
        return out


def op_metadata_pinned(step, bootstrap):
    c = consumer(step, bootstrap)
    try:
        deadline = time.monotonic() + 10
        parts = None
        while time.monotonic() < deadline:
            parts = c.partitions_for_topic(step["topic"])
            if parts:
                break
            time.sleep(0.1)
        return {"api_version": list(c.config["api_version"]),
                "partitions": sorted(parts or []), "topic_listed": step["topic"] in c.topics()}
    finally:
        c.close()


def op_autodetect(step, bootstrap):
    from kafka.client_async import KafkaClient
    client = KafkaClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        detected = client.config["api_version"]
        return {"api_version": list(detected), "check_version": list(client.check_version())}
    finally:
        client.close()


OPS = {name[3:]: fn for name, fn in globals().items() if name.startswith("op_")}


def main():
    raw = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "-" else sys.stdin.read()
    scenario = json.loads(raw)
    results = []
    for step in scenario["steps"]:
        t0 = time.monotonic()
        try:
            res = OPS[step["op"]](step, scenario["bootstrap"])
        except Exception as e:   # report, keep going: the test names the failing step
            res = {"error": repr(e), "traceback": traceback.format_exc()}
        res["op"] = step["op"]
        res["seconds"] = round(time.monotonic() - t0, 3)
        results.append(res)
    json.dump({"kafka_python": kafka.__version__, "results": results}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
