"""Capture the differential corpus: real clients' request frames, recorded through a proxy in
front of a real Apache Kafka broker.

    .venv/bin/python -m compat_tests.differential.capture [--out DIR] [--only NAME,...]

1. Start a fresh Kafka (the compat suite's pinned jars) whose advertised listener is the
   recording proxy (proxy.py), so every connection of every client goes through it; the proxy
   cuts ApiVersions down to what kbroker advertises, so clients send what they would send to
   kbroker.
2. Warm up (not recorded): create the internal topics, as the replay does before replaying.
3. Run the scenarios — kafka-python, confluent-kafka (librdkafka), aiokafka, kafkajs, franz-go,
   Kafka's CLI tools (Java), then hand-built requests (kbroker's message classes) for any API
   kbroker advertises that no client sent.
4. Write one JSON-lines file per scenario to corpus/ (frames base64, without size prefix)
   plus MANIFEST.json (scenario → client, API key → versions seen).

Names (topics, groups, transactional ids) start with `dx-` and are unique per scenario, so the
replay runs the whole corpus, in order, against one fresh broker per target.
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from compat_tests.differential import common  # noqa: E402
from compat_tests.differential.proxy import Recorder, RecordingProxy  # noqa: E402

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
T0 = 1_700_000_000_000


# --- scenarios -------------------------------------------------------------------------------
# Each takes the proxy's bootstrap address; exceptions are reported and the capture goes on
# (an API a scenario failed to cover is then caught by the coverage check).

def kafka_python(bs: str) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions
    from kafka.structs import OffsetAndMetadata

    topic, other, group = "dx-kp-events", "dx-kp-doomed", "dx-kp-group"
    admin = KafkaAdminClient(bootstrap_servers=bs, client_id="dx-kafka-python", request_timeout_ms=20000)
    try:
        admin.create_topics({topic: {"num_partitions": 2, "replication_factor": 1,
                                     "topic_configs": {"retention.ms": "3600000"}},
                             other: {"num_partitions": 1, "replication_factor": 1}},
                            wait_for_metadata=True)
        producer = KafkaProducer(bootstrap_servers=bs, client_id="dx-kafka-python",
                                 compression_type="gzip", linger_ms=5)
        for i in range(6):
            producer.send(topic, key=b"k%d" % i, value=b"value-%d" % i, partition=i % 2,
                          headers=[("h", b"%d" % i)], timestamp_ms=T0 + i)
        producer.flush()
        producer.close()

        consumer = KafkaConsumer(topic, bootstrap_servers=bs, group_id=group,
                                 client_id="dx-kafka-python", auto_offset_reset="earliest",
                                 enable_auto_commit=False, fetch_max_wait_ms=200)
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 6 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=300).values():
                got.extend(batch)
        consumer.commit({TopicPartition(topic, 0): OffsetAndMetadata(3, "dx-meta", -1),
                         TopicPartition(topic, 1): OffsetAndMetadata(3, "", -1)})
        consumer.close()

        reader = KafkaConsumer(bootstrap_servers=bs, client_id="dx-kafka-python", group_id=None)
        tp0 = TopicPartition(topic, 0)
        reader.assign([tp0])
        reader.offsets_for_times({tp0: T0 + 2})
        reader.beginning_offsets([tp0])
        reader.end_offsets([tp0])
        reader.close()

        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        admin.describe_configs([resource], include_synonyms=True, config_filter="all")
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                            {"retention.ms": "7200000"})], incremental=False)
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic,
                                            {"segment.ms": "600000"})], incremental=True)
        admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")],
                               config_filter="all")
        admin.create_partitions({topic: NewPartitions(3)})
        admin.delete_records({TopicPartition(topic, 1): 1})
        admin.describe_log_dirs()
        admin.list_groups()
        admin.describe_groups([group])
        admin.list_group_offsets({group: None}) if hasattr(admin, "list_group_offsets") else None
        admin.delete_group_offsets(group, [TopicPartition(topic, 1)])
        admin.delete_groups([group])
        admin.describe_cluster()
        admin.describe_topics([topic])
        admin.describe_producers([TopicPartition(topic, 0)])
        admin.describe_metadata_quorum()
        admin.list_transactions()
        admin.delete_topics([other])
    finally:
        admin.close()


def confluent(bs: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import (AdminClient, ConfigResource, NewTopic, OffsetSpec,
                                       AlterConfigOpType, ConfigEntry, ResourceType)

    topic, group = "dx-cf-events", "dx-cf-group"
    admin = AdminClient({"bootstrap.servers": bs, "client.id": "dx-confluent"})
    admin.create_topics([NewTopic(topic, 2, 1)], operation_timeout=20)[topic].result(30)
    time.sleep(1)
    for codec in ("lz4", "zstd", "snappy"):
        producer = Producer({"bootstrap.servers": bs, "client.id": "dx-confluent",
                             "compression.type": codec, "linger.ms": 5})
        for i in range(3):
            producer.produce(topic, key=b"%s-%d" % (codec.encode(), i), value=b"v" * (10 + i),
                             partition=i % 2, timestamp=T0 + 100 + i)
        assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bs, "client.id": "dx-confluent", "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 200})
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + 30
    while got < 9 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    admin.list_offsets({TopicPartition(topic, 0): OffsetSpec.for_timestamp(T0 + 101),
                        TopicPartition(topic, 1): OffsetSpec.latest()}, request_timeout=20)[
        TopicPartition(topic, 0)].result(30)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    admin.describe_cluster(request_timeout=20).result(30)
    admin.list_consumer_group_offsets(
        [__import__("confluent_kafka").ConsumerGroupTopicPartitions(group)])[group].result(30)
    admin.describe_consumer_groups([group])[group].result(30)
    admin.delete_consumer_groups([group])[group].result(30)


def confluent_kip848(bs: str) -> None:
    """A ``group.protocol=consumer`` member (ConsumerGroupHeartbeat, OffsetCommit/Fetch v9
    with member epochs), ConsumerGroupDescribe while it runs and after it left."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group = "dx-kip848-events", "dx-kip848-group"
    admin = AdminClient({"bootstrap.servers": bs, "client.id": "dx-kip848"})
    admin.create_topics([NewTopic(topic, 2, 1)], operation_timeout=20)[topic].result(30)
    time.sleep(1)
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bs, "client.id": "dx-kip848"})
    for i in range(4):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2,
                         timestamp=T0 + 200 + i)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bs, "client.id": "dx-kip848", "group.id": group,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 200})
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + 30
    while got < 4 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got += 1
    consumer.commit(asynchronous=False)
    admin.describe_consumer_groups([group])[group].result(30)
    consumer.close()
    time.sleep(0.5)
    admin.describe_consumer_groups([group])[group].result(30)
    admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
    admin.delete_consumer_groups([group])[group].result(30)
    # later scenarios list all topics: leave none behind
    admin.delete_topics([topic], operation_timeout=20)[topic].result(30)
    time.sleep(1)


def confluent_share(bs: str) -> None:
    """A share group (KIP-932): one member frame by frame (ShareGroupHeartbeat, ShareFetch with
    piggy-backed accept/release/reject and a wrong session epoch, ShareAcknowledge),
    ``kafka-share-groups`` (ShareGroupDescribe, DescribeShareGroupOffsets,
    AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups), and the share coordinator
    APIs (83-87, inter-broker) built by hand for one share-partition of a made-up topic id."""
    import uuid

    from confluent_kafka import Producer
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, NewTopic)

    from kbroker.wire import messages

    from compat_tests.cli import run_tool

    topic, group = "dx-share-events", "dx-share-group"
    admin = AdminClient({"bootstrap.servers": bs, "client.id": "dx-share"})
    admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=20)[topic].result(30)
    time.sleep(1)
    entry = ConfigEntry("share.auto.offset.reset", "earliest",
                        incremental_operation=AlterConfigOpType.SET)
    for f in admin.incremental_alter_configs([ConfigResource("GROUP", group,
                                                             incremental_configs=[entry])]).values():
        f.result(30)
    producer = Producer({"bootstrap.servers": bs, "client.id": "dx-share"})
    for i in range(4):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, timestamp=T0 + 300 + i)
    assert producer.flush(30) == 0
    # one member, frame by frame (a share consumer's timing is not replayable: its heartbeats
    # and fetches race; compat_tests/test_share_groups.py runs real share consumers)
    md = admin.list_topics(topic, timeout=30)
    assert md.topics[topic].error is None
    conn = common.Connection(common._address(bs))
    H = messages.ShareGroupHeartbeatRequest
    member = "dx-share-member-0000000001"
    fc = messages.FindCoordinatorRequest
    conn.request(10, 4, fc(key_type=0, coordinator_keys=[group]), client_id="dx-share")
    hb = conn.request(76, 1, H(group_id=group, member_id=member, member_epoch=0, rack_id=None,
                               subscribed_topic_names=[topic]), client_id="dx-share")
    # Kafka 4.3 assigns in the background (group.share.assignment.interval.ms): the join
    # answers epoch 2 and an empty assignment; ShareFetch does not wait for the assignment.
    # Nothing here waits for it either, so the replay (which does not sleep) sees the same.
    meta = conn.request(3, 12, messages.MetadataRequest(topics=[
        messages.MetadataRequest.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=topic)],
        allow_auto_topic_creation=False, include_topic_authorized_operations=False),
        client_id="dx-share")
    tid = meta.topics[0].topic_id
    F = messages.ShareFetchRequest

    def share_fetch(epoch, acks=(), wait=5000):
        part = F.FetchPartition(partition_index=0, partition_max_bytes=0, acknowledgement_batches=[
            F.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=t)
            for a, b, t in acks])
        return conn.request(78, 1, F(group_id=group, member_id=member, share_session_epoch=epoch,
                                     max_wait_ms=wait, min_bytes=1, max_bytes=1 << 20,
                                     max_records=500, batch_size=500,
                                     topics=[F.FetchTopic(topic_id=tid, partitions=[part])],
                                     forgotten_topics_data=[]), client_id="dx-share")
    # long waits: Kafka initialises a share-partition in the background, the replay must
    # not outrun it
    share_fetch(0)                                              # acquires 0..3
    share_fetch(1, [(0, 3, [1, 1, 2, 3])])                      # accept 0-1, release 2 (back
    share_fetch(2, [(2, 2, [2])])                               # at once), reject 3; again
    share_fetch(7, wait=500)                                    # INVALID_SHARE_SESSION_EPOCH
    A = messages.ShareAcknowledgeRequest
    share_fetch(3, wait=500)                                    # nothing: 2 is still held
    conn.request(79, 1, A(group_id=group, member_id=member, share_session_epoch=4, topics=[
        A.AcknowledgeTopic(topic_id=tid, partitions=[A.AcknowledgePartition(
            partition_index=0, acknowledgement_batches=[A.AcknowledgementBatch(
                first_offset=2, last_offset=2, acknowledge_types=[1])])])]), client_id="dx-share")
    conn.request(79, 1, A(group_id=group, member_id=member, share_session_epoch=-1, topics=[]),
                 client_id="dx-share")
    conn.request(76, 1, H(group_id=group, member_id=member, member_epoch=-1, rack_id=None,
                          subscribed_topic_names=None), client_id="dx-share")
    conn.close()
    time.sleep(2)        # Kafka writes the share state in the background
    tool = ["--bootstrap-server", bs, "--group", group]
    run_tool("kafka-share-groups", tool + ["--describe"]).check()
    run_tool("kafka-share-groups", tool + ["--describe", "--members"]).check()
    run_tool("kafka-share-groups", tool + ["--reset-offsets", "--to-earliest", "--topic", topic,
                                           "--execute"]).check()
    run_tool("kafka-share-groups", tool + ["--delete-offsets", "--topic", topic]).check()
    run_tool("kafka-share-groups", tool + ["--delete"]).check()
    # the share coordinator's own APIs, as a share-partition leader calls them
    conn = common.Connection(common._address(bs))
    tid, sg = uuid.UUID("5a5a5a5a-0000-4000-8000-000000000001"), "dx-share-state"
    I = messages.InitializeShareGroupStateRequest
    conn.request(83, 0, I(group_id=sg, topics=[I.InitializeStateData(topic_id=tid, partitions=[
        I.PartitionData(partition=0, state_epoch=0, start_offset=5)])]))
    W = messages.WriteShareGroupStateRequest
    conn.request(85, 1, W(group_id=sg, topics=[W.WriteStateData(topic_id=tid, partitions=[
        W.PartitionData(partition=0, state_epoch=0, leader_epoch=0, start_offset=5,
                        delivery_complete_count=1, state_batches=[
                            W.StateBatch(first_offset=5, last_offset=5, delivery_state=2,
                                         delivery_count=1),
                            W.StateBatch(first_offset=6, last_offset=7, delivery_state=0,
                                         delivery_count=2)])])]))
    R = messages.ReadShareGroupStateRequest
    conn.request(84, 0, R(group_id=sg, topics=[R.ReadStateData(topic_id=tid, partitions=[
        R.PartitionData(partition=0, leader_epoch=0)])]))
    S = messages.ReadShareGroupStateSummaryRequest
    conn.request(87, 1, S(group_id=sg, topics=[S.ReadStateSummaryData(topic_id=tid, partitions=[
        S.PartitionData(partition=0, leader_epoch=0)])]))
    D = messages.DeleteShareGroupStateRequest
    conn.request(86, 0, D(group_id=sg, topics=[D.DeleteStateData(topic_id=tid, partitions=[
        D.PartitionData(partition=0)])]))
    conn.close()
    admin.delete_topics([topic], operation_timeout=20)[topic].result(30)
    time.sleep(1)


def aiokafka(bs: str) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.structs import OffsetAndMetadata

    topic, group, txn = "dx-aio-events", "dx-aio-group", "dx-aio-txn"

    async def go():
        admin = AIOKafkaAdminClient(bootstrap_servers=bs, client_id="dx-aiokafka")
        await admin.start()
        await admin.create_topics([NewTopic(topic, 1, 1)])
        await admin.close()
        await asyncio.sleep(1)
        producer = AIOKafkaProducer(bootstrap_servers=bs, client_id="dx-aiokafka",
                                    transactional_id=txn)
        await producer.start()
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed", partition=0, timestamp_ms=T0 + 200)
            await producer.send_offsets_to_transaction(
                {TopicPartition(topic, 0): OffsetAndMetadata(1, "")}, group)
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"aborted", partition=0, timestamp_ms=T0 + 201)
        await producer.abort_transaction()
        await producer.stop()
        await asyncio.sleep(0.5)
        consumer = AIOKafkaConsumer(bootstrap_servers=bs, client_id="dx-aiokafka",
                                    isolation_level="read_committed", fetch_max_wait_ms=200)
        await consumer.start()
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        await consumer.getmany(tp, timeout_ms=1000)
        await consumer.end_offsets([tp])
        await consumer.stop()

    asyncio.run(asyncio.wait_for(go(), 60))


def _driver(command: list[str], bs: str, ops: list[dict]) -> None:
    result = subprocess.run(command, input=json.dumps({"brokers": bs, "ops": ops}),
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(result.stderr[-2000:])
    failed = [r for r in json.loads(result.stdout.strip().splitlines()[-1]) if "error" in r]
    if failed:
        print(f"    (some ops failed: {failed})", file=sys.stderr)


def kafkajs(bs: str) -> None:
    from compat_tests.extclient import KAFKAJS_DIR, KAFKAJS_STAMP
    if not KAFKAJS_STAMP.exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=KAFKAJS_DIR, check=True)
        KAFKAJS_STAMP.touch()
    topic = "dx-js-events"
    _driver(["node", str(KAFKAJS_DIR / "driver.js")], bs, [
        {"op": "createTopics", "topics": [{"topic": topic, "numPartitions": 1}]},
        {"op": "produce", "topic": topic, "compression": "gzip",
         "messages": [{"key": "k", "value": "v", "headers": [["a", "b"]], "timestamp": T0 + 300}]},
        {"op": "produce", "topic": topic, "idempotent": True,
         "messages": [{"value": "idem", "timestamp": T0 + 301}]},
        {"op": "consume", "topic": topic, "groupId": "dx-js-group", "count": 2, "timeoutMs": 15000},
        {"op": "fetchTopicOffsetsByTimestamp", "topic": topic, "timestamp": T0 + 301},
        {"op": "describeGroups", "groupIds": ["dx-js-group"]},
        {"op": "fetchOffsets", "groupId": "dx-js-group", "topics": [topic]},
    ])


def franz_go(bs: str) -> None:
    from compat_tests.extclient import FRANZGO_BIN, FRANZGO_DIR, go_env
    if not FRANZGO_BIN.exists():
        FRANZGO_BIN.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["go", "build", "-o", str(FRANZGO_BIN), "."], cwd=FRANZGO_DIR,
                       env=go_env(), check=True)
    topic = "dx-fg-events"
    _driver([str(FRANZGO_BIN)], bs, [
        {"op": "createTopics", "topics": [{"topic": topic, "numPartitions": 2}]},
        {"op": "produce", "topic": topic, "compression": "zstd",
         "messages": [{"key": "k%d" % i, "value": "v%d" % i, "partition": i % 2,
                       "timestamp": T0 + 400 + i} for i in range(4)]},
        {"op": "consume", "topic": topic, "assign": [{"partition": 0, "offset": 0}], "count": 2,
         "timeoutMs": 5000},
        {"op": "consume", "topic": topic, "groupId": "dx-fg-group", "count": 4, "commit": True,
         "timeoutMs": 15000},
        {"op": "listOffsetsAfterMilli", "topic": topic, "timestamp": T0 + 401},
        {"op": "deleteRecords", "topic": topic, "partitions": [{"partition": 0, "offset": 1}]},
        {"op": "describeGroups", "groupIds": ["dx-fg-group"]},
        {"op": "deleteGroups", "groupIds": ["dx-fg-group"]},
    ])


def java_cli(bs: str) -> None:
    from compat_tests.cli import run_tool
    topic = "dx-java-events"
    run_tool("kafka-topics", ["--bootstrap-server", bs, "--create", "--topic", topic,
                              "--partitions", "1", "--replication-factor", "1"]).check()
    run_tool("kafka-console-producer", ["--bootstrap-server", bs, "--topic", topic,
                                        "--producer-property", "linger.ms=0"],
             input="a\nb\n").check()
    run_tool("kafka-console-consumer", ["--bootstrap-server", bs, "--topic", topic,
                                        "--group", "dx-java-group", "--from-beginning",
                                        "--max-messages", "2", "--timeout-ms", "20000"]).check()
    run_tool("kafka-consumer-groups", ["--bootstrap-server", bs, "--describe", "--group",
                                       "dx-java-group"]).check()
    run_tool("kafka-transactions", ["--bootstrap-server", bs, "describe-producers", "--topic",
                                    topic, "--partition", "0"]).check()
    run_tool("kafka-transactions", ["--bootstrap-server", bs, "describe",
                                    "--transactional-id", "dx-aio-txn"]).check()
    run_tool("kafka-metadata-quorum", ["--bootstrap-server", bs, "describe", "--status"]).check()
    run_tool("kafka-configs", ["--bootstrap-server", bs, "--entity-type", "topics",
                               "--entity-name", topic, "--alter", "--add-config",
                               "retention.ms=100000"]).check()
    run_tool("kafka-topics", ["--bootstrap-server", bs, "--delete", "--topic", topic]).check()
    # client quotas (AlterClientQuotas / DescribeClientQuotas)
    run_tool("kafka-configs", ["--bootstrap-server", bs, "--entity-type", "clients",
                               "--entity-name", "dx-quota-client", "--alter", "--add-config",
                               "producer_byte_rate=1048576,consumer_byte_rate=2097152"]).check()
    run_tool("kafka-configs", ["--bootstrap-server", bs, "--entity-type", "clients",
                               "--entity-name", "dx-quota-client", "--describe"]).check()
    run_tool("kafka-configs", ["--bootstrap-server", bs, "--entity-type", "ips",
                               "--entity-default", "--alter", "--add-config",
                               "connection_creation_rate=1000"]).check()


def hand_built(bs: str) -> None:
    """Requests no client above sent, for APIs kbroker advertises (see common.HAND_BUILT)."""
    common.send_hand_built(bs)


SCENARIOS = {
    "kafka-python": kafka_python,
    "confluent": confluent,
    "aiokafka": aiokafka,
    "kafkajs": kafkajs,
    "franz-go": franz_go,
    "java-cli": java_cli,
    "confluent-kip848": confluent_kip848,
    "confluent-share": confluent_share,
    "hand-built": hand_built,
}


# --- driver ----------------------------------------------------------------------------------

def capture(out: Path, only: list[str] | None = None) -> dict:
    from compat_tests.kafka_runner import KafkaBrokerProcess
    from compat_tests.runner import free_port

    proxy_port = free_port()
    work = Path(tempfile.mkdtemp(prefix="dx-capture-"))
    broker = KafkaBrokerProcess(work / "kafka", {
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}", **common.BROKER_CONFIGS})
    recorder = Recorder()
    proxy = RecordingProxy(proxy_port, ("127.0.0.1", broker.port), common.kbroker_ranges(), recorder)
    bs = f"127.0.0.1:{proxy.port}"
    summary = {}
    try:
        broker.start()
        common.warm_up(bs)
        names = only or list(SCENARIOS)
        if "hand-built" in names:  # last: it fills the gaps the others leave
            names = [n for n in names if n != "hand-built"] + ["hand-built"]
        for name in names:
            print(f"scenario {name} ...", flush=True)
            recorder.scenario = name
            started = time.monotonic()
            try:
                if name == "hand-built":
                    # API versions covered by this capture or by the scenarios kept from an
                    # earlier one (``--only``) need no hand-built request
                    common.HAND_BUILT_SKIP.update(_covered(recorder) | _kept_apis(out, names))
                SCENARIOS[name](bs)
            except Exception:  # report and go on: coverage is checked at the end
                traceback.print_exc()
            time.sleep(0.5)  # late responses (commits on close) still belong to it
            recorder.scenario = None
            count = sum(1 for e in recorder.exchanges if e.scenario == name)
            print(f"  {count} requests in {time.monotonic() - started:.1f}s", flush=True)
        time.sleep(0.5)
    finally:
        proxy.close()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    by_scenario: dict[str, list] = {}
    for e in recorder.exchanges:
        by_scenario.setdefault(e.scenario, []).append(e)
    for name, exchanges in by_scenario.items():
        path = out / f"{name}.jsonl"
        with path.open("w") as f:
            for e in sorted(exchanges, key=common.order_key_of):
                f.write(json.dumps({
                    "conn": e.conn, "client_id": e.client_id, "api_key": e.api_key,
                    "api_version": e.api_version, "request_event": e.request_event,
                    "response_event": e.response_event,
                    "request": base64.b64encode(e.request).decode(),
                    "response": None if e.response is None else base64.b64encode(e.response).decode(),
                }) + "\n")
        summary[name] = sorted({f"{e.api_key}v{e.api_version}" for e in exchanges})
    # the manifest describes every scenario file in ``out`` (a partial capture keeps the rest)
    apis: dict[int, set] = {}
    counts: dict[str, int] = {}
    for path in sorted(out.glob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        counts[path.stem] = len(lines)
        for rec in lines:
            apis.setdefault(rec["api_key"], set()).add(rec["api_version"])
    manifest = {"kafka_version": _kafka_version(), "captured": time.strftime("%Y-%m-%d"),
                "scenarios": {k: counts[k] for k in SCENARIOS if k in counts},
                "apis": {f"{k} {_api_name(k)}": " ".join(f"v{x}" for x in sorted(v))
                         for k, v in sorted(apis.items())}}
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
    missing = sorted(set(common.kbroker_ranges()) - set(apis))
    print(f"captured {len(recorder.exchanges)} requests; APIs kbroker advertises with no request in the corpus: "
          f"{missing or 'none'}")
    return manifest


def _api_name(api_key: int) -> str:
    from kbroker.wire import messages
    return messages.request_class(api_key)._message.name.removesuffix("Request")


def _covered(recorder: Recorder) -> set[tuple[int, int]]:
    return {(e.api_key, e.api_version) for e in recorder.exchanges}


def _kept_apis(out: Path, recaptured: list[str]) -> set[tuple[int, int]]:
    """(API key, version) pairs in the corpus files of scenarios this capture does not redo."""
    keys: set[tuple[int, int]] = set()
    for path in out.glob("*.jsonl"):
        if path.stem in recaptured:
            continue
        for line in path.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                keys.add((rec["api_key"], rec["api_version"]))
    return keys


def _kafka_version() -> str:
    from compat_tests.kafka_runner import kafka_version
    return kafka_version()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=CORPUS)
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    args = parser.parse_args(argv)
    only = [s for s in args.only.split(",") if s] or None
    if args.out.exists() and not only:
        for old in args.out.glob("*.jsonl"):
            old.unlink()
    capture(args.out, only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
