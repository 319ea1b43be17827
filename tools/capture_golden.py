#!/usr/bin/env python3
"""Capture real clients' request frames as golden files for the codec tests.

    .venv/bin/python tools/capture_golden.py [--out tests/wire/golden] [--clients kafka-python,aiokafka,confluent]

Starts a tiny capturing server on 127.0.0.1 (a thread per connection, no broker logic),
then runs short scripted sessions of kafka-python, aiokafka and confluent-kafka
(librdkafka) against it: admin create-topics, an idempotent producer sending a few
batches (plain and compressed), and a group consumer that joins, fetches, and commits.

Every request frame is saved byte for byte (4-byte size prefix included) as
``<api>_request_v<N>_<NNN>.bin`` — ``api`` is the snake-case message name without
``Request`` (``metadata_request_v12_000.bin``), ``NNN`` counts frames of that API and
version across all clients. ``MANIFEST.json`` records which client sent each file. At most
``--per-version`` frames are kept per (client, API, version).

The server answers with kbroker-encoded responses just good enough for the clients to go
on: ApiVersions lists kbroker's ranges (capped like a Kafka 4 broker without topic IDs),
Metadata names one broker — this server — leading partition 0 of every topic asked
about, FindCoordinator points back here, JoinGroup makes the caller the leader, SyncGroup
assigns it partition 0, Produce/Fetch/ListOffsets/OffsetFetch echo the partitions asked
about with offset 0, and everything else gets the response class's defaults (error 0).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import socket
import socketserver
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kbroker.wire import messages, protocol  # noqa: E402
from kbroker.wire.errors import WireError  # noqa: E402
from kbroker.wire.model import snake_case  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOPIC = "golden-topic"
GROUP = "golden-group"
# Ranges advertised: kbroker's, capped where a broker without topic IDs must stop
# (see PITFALLS.md: Fetch/Produce ≤ 12, OffsetCommit/OffsetFetch ≤ 9), and leaving out
# APIs whose presence changes client behaviour (KIP-848 groups, telemetry, share groups).
CAPS = {0: 11, 1: 12, 8: 9, 9: 9, 3: 12}
LEAVE_OUT = {68, 69, 71, 72, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84}


def api_name(api_key: int) -> str:
    return snake_case(messages.request_class(api_key)._message.name[:-len("Request")])


class Capture:
    """Where frames go: a counter per (api, version) for file names, a cap per client."""

    def __init__(self, out: Path, per_version: int):
        self.out = out
        self.per_version = per_version
        self.client = "?"
        self.seq: Counter = Counter()
        self.kept: Counter = Counter()
        self.manifest: dict[str, dict] = {}
        self.lock = threading.Lock()

    def save(self, frame: bytes, api_key: int, version: int, client_id: str | None) -> None:
        with self.lock:
            key = (self.client, api_key, version)
            if self.kept[key] >= self.per_version:
                return
            self.kept[key] += 1
            name = api_name(api_key)
            n = self.seq[(name, version)]
            self.seq[(name, version)] += 1
            fname = f"{name}_request_v{version}_{n:03d}.bin"
            (self.out / fname).write_bytes(frame)
            self.manifest[fname] = {"client": self.client, "client_id": client_id,
                                    "api_key": api_key, "api_version": version}


class Responder:
    """Builds the minimal valid answer to each request, with kbroker's classes."""

    def __init__(self, port: int):
        self.port = port

    def respond(self, api_key: int, version: int, req):
        cls = messages.response_class(api_key)
        build = getattr(self, f"r_{api_key}", None)
        return build(cls, version, req) if build else cls()

    # ApiVersions
    def r_18(self, cls, version, req):
        keys = []
        for k in messages.api_keys():
            if k in LEAVE_OUT:
                continue
            valid = messages.request_class(k)._message.valid
            keys.append(cls.ApiVersion(api_key=k, min_version=valid.low,
                                       max_version=min(valid.high, CAPS.get(k, valid.high))))
        return cls(error_code=0, api_keys=keys, throttle_time_ms=0)

    # Metadata
    def r_3(self, cls, version, req):
        names = [t.name for t in req.topics] if req.topics else [TOPIC]
        topics = [cls.MetadataResponseTopic(
            error_code=0, name=n, is_internal=False, topic_authorized_operations=-2147483648,
            partitions=[cls.MetadataResponsePartition(
                error_code=0, partition_index=0, leader_id=0, leader_epoch=0,
                replica_nodes=[0], isr_nodes=[0], offline_replicas=[])]) for n in names if n]
        return cls(brokers=[cls.MetadataResponseBroker(node_id=0, host="127.0.0.1", port=self.port)],
                   cluster_id="golden-capture", controller_id=0, topics=topics)

    # FindCoordinator
    def r_10(self, cls, version, req):
        if version >= 4:
            return cls(coordinators=[cls.Coordinator(key=k, node_id=0, host="127.0.0.1", port=self.port)
                                     for k in req.coordinator_keys])
        return cls(node_id=0, host="127.0.0.1", port=self.port)

    # InitProducerId
    def r_22(self, cls, version, req):
        return cls(producer_id=1000, producer_epoch=0)

    # Produce (acks=0 gets no answer)
    def r_0(self, cls, version, req):
        if req.acks == 0:
            return None
        return cls(responses=[cls.TopicProduceResponse(name=t.name, partition_responses=[
            cls.PartitionProduceResponse(index=p.index, base_offset=0, log_append_time_ms=-1)
            for p in t.partition_data]) for t in req.topic_data])

    # Fetch
    def r_1(self, cls, version, req):
        time.sleep(0.05)  # stand in for max_wait_ms so consumers do not spin
        return cls(responses=[cls.FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=[
            cls.PartitionData(partition_index=p.partition, high_watermark=0, last_stable_offset=0,
                              log_start_offset=0, records=b"")
            for p in t.partitions]) for t in req.topics])

    # ListOffsets
    def r_2(self, cls, version, req):
        return cls(topics=[cls.ListOffsetsTopicResponse(name=t.name, partitions=[
            cls.ListOffsetsPartitionResponse(partition_index=p.partition_index, offset=0, timestamp=-1,
                                             old_style_offsets=[0] if version == 0 else [])
            for p in t.partitions]) for t in req.topics])

    # OffsetFetch
    def r_9(self, cls, version, req):
        if version >= 8:
            return cls(groups=[cls.OffsetFetchResponseGroup(group_id=g.group_id, topics=[
                cls.OffsetFetchResponseTopics(name=t.name, partitions=[
                    cls.OffsetFetchResponsePartitions(partition_index=i, committed_offset=-1, metadata="")
                    for i in t.partition_indexes]) for t in (g.topics or [])]) for g in req.groups])
        return cls(topics=[cls.OffsetFetchResponseTopic(name=t.name, partitions=[
            cls.OffsetFetchResponsePartition(partition_index=i, committed_offset=-1, metadata="")
            for i in t.partition_indexes]) for t in (req.topics or [])])

    # OffsetCommit
    def r_8(self, cls, version, req):
        return cls(topics=[cls.OffsetCommitResponseTopic(name=t.name, partitions=[
            cls.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=0)
            for p in t.partitions]) for t in req.topics])

    # JoinGroup: the caller leads a group of one
    def r_11(self, cls, version, req):
        member = req.member_id or "golden-member-1"
        proto = req.protocols[0].name if req.protocols else "range"
        meta = req.protocols[0].metadata if req.protocols else b""
        return cls(generation_id=1, protocol_type="consumer", protocol_name=proto, leader=member,
                   member_id=member, members=[cls.JoinGroupResponseMember(member_id=member, metadata=meta)])

    # SyncGroup: partition 0 of the topic, in the consumer protocol's v0 format
    def r_14(self, cls, version, req):
        asg = messages.ConsumerProtocolAssignment
        body = asg(assigned_partitions=[asg.TopicPartition(topic=TOPIC, partitions=[0])], user_data=None)
        return cls(protocol_type="consumer", protocol_name=req.protocol_name,
                   assignment=b"\0\0" + body.encode(0))

    # CreateTopics
    def r_19(self, cls, version, req):
        return cls(topics=[cls.CreatableTopicResult(name=t.name, num_partitions=max(t.num_partitions, 1),
                                                    replication_factor=max(t.replication_factor, 1))
                           for t in req.topics])

    # LeaveGroup
    def r_13(self, cls, version, req):
        members = req.members if version >= 3 else []
        return cls(members=[cls.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id)
                            for m in members])


def make_server(capture: Capture):
    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            responder = Responder(self.server.server_address[1])
            dec = protocol.FrameDecoder()
            sock = self.request
            sock.settimeout(30)
            while True:
                try:
                    data = sock.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                for frame in dec.feed(data):
                    try:
                        if not self.answer(frame, responder, sock):
                            return
                    except OSError:  # the client hung up mid-answer
                        return

        def answer(self, frame, responder, sock) -> bool:
            try:
                header, _ = protocol.decode_request_header(frame)
            except WireError as e:
                logging.warning("bad header: %s", e)
                return False
            key, version, corr = header.api_key, header.api_version, header.correlation_id
            try:
                _, req = protocol.decode_request(frame)
            except WireError as e:
                if key == 18:  # answer ApiVersions at v0 with UNSUPPORTED_VERSION
                    resp = messages.ApiVersionsResponse(error_code=35, api_keys=[
                        messages.ApiVersionsResponse.ApiVersion(api_key=18, min_version=0, max_version=4)])
                    sock.sendall(b"".join(protocol.encode_response(18, 0, corr, resp)))
                    return True
                logging.warning("cannot decode api %s v%s: %s", key, version, e)
                return False
            capture.save(len(frame).to_bytes(4, "big") + bytes(frame), key, version, header.client_id)
            resp = responder.respond(key, version, req)
            if resp is not None:
                sock.sendall(b"".join(protocol.encode_response(key, version, corr, resp)))
            return True

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    return Server(("127.0.0.1", 0), Handler)


# --------------------------------------------------------------------------- client sessions

def run_kafka_python(bootstrap: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="golden-kafka-python-admin",
                             request_timeout_ms=5000)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    admin.close()
    for compression in (None, "gzip"):
        producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="golden-kafka-python",
                                 compression_type=compression, acks="all", linger_ms=5)
        for i in range(3):
            producer.send(TOPIC, key=b"k%d" % i, value=b"value-%d" % i)
        producer.flush(10)
        producer.close(5)
    consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP,
                             client_id="golden-kafka-python-consumer", auto_offset_reset="earliest",
                             enable_auto_commit=False, request_timeout_ms=5000,
                             session_timeout_ms=6000, heartbeat_interval_ms=1000)
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline and not consumer.assignment():
        consumer.poll(timeout_ms=300)
    consumer.poll(timeout_ms=500)
    consumer.commit()
    consumer.close()


def run_aiokafka(bootstrap: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def session():
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="golden-aiokafka-admin")
        await admin.start()
        try:
            await admin.create_topics([NewTopic(TOPIC, 1, 1)])
        finally:
            await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id="golden-aiokafka",
                                    enable_idempotence=True, compression_type="gzip")
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait(TOPIC, value=b"value-%d" % i, key=b"k%d" % i)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP,
                                    client_id="golden-aiokafka-consumer", auto_offset_reset="earliest",
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            deadline = time.monotonic() + 6
            while time.monotonic() < deadline and not consumer.assignment():
                await consumer.getmany(timeout_ms=300)
            await consumer.getmany(timeout_ms=500)
            if consumer.assignment():
                await consumer.commit()
        finally:
            await consumer.stop()

    asyncio.run(asyncio.wait_for(session(), 40))


def run_confluent(bootstrap: str) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "golden-confluent-admin"})
    for fut in admin.create_topics([NewTopic(TOPIC, 1, 1)], operation_timeout=5).values():
        try:
            fut.result(10)
        except Exception as e:  # noqa: BLE001 - the capture matters, not the answer
            logging.info("create_topics: %s", e)
    for compression in ("none", "lz4"):
        producer = Producer({"bootstrap.servers": bootstrap, "client.id": "golden-confluent",
                             "enable.idempotence": True, "compression.type": compression,
                             "linger.ms": 5})
        for i in range(3):
            producer.produce(TOPIC, key=b"k%d" % i, value=b"value-%d" % i)
        producer.flush(10)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "client.id": "golden-confluent-consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 6000})
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline and not consumer.assignment():
        consumer.poll(0.3)
    for _ in range(3):
        consumer.poll(0.3)
    try:
        if consumer.assignment():
            consumer.commit(offsets=None, asynchronous=False)
    except Exception as e:  # noqa: BLE001
        logging.info("commit: %s", e)
    consumer.close()


CLIENTS = {"kafka-python": run_kafka_python, "aiokafka": run_aiokafka, "confluent": run_confluent}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "tests" / "wire" / "golden")
    ap.add_argument("--clients", default=",".join(CLIENTS))
    ap.add_argument("--per-version", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*_request_v*_*.bin"):
        old.unlink()
    capture = Capture(args.out, args.per_version)
    server = make_server(capture)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bootstrap = "127.0.0.1:%d" % server.server_address[1]
    for name in args.clients.split(","):
        capture.client = name
        print(f"-- {name}", flush=True)
        try:
            CLIENTS[name](bootstrap)
        except Exception as e:  # noqa: BLE001 - keep what was captured, report the rest
            print(f"   {name} session ended early: {type(e).__name__}: {e}")
    server.shutdown()
    (args.out / "MANIFEST.json").write_text(json.dumps(dict(sorted(capture.manifest.items())), indent=1) + "\n")
    print(f"saved {len(capture.manifest)} frames to {args.out}")
    for fname in sorted(capture.manifest):
        print("  ", fname, capture.manifest[fname]["client"])
    return 0


if __name__ == "__main__":
    socket.setdefaulttimeout(30)
    sys.exit(main())
