"""A 3-node cluster whose every connection is SASL_SSL: clients, replica fetchers
(inter-broker listener) and the metadata quorum / controller channel (CONTROLLER
listener). Kafka's keys only: ``listener.security.protocol.map`` gives both listeners
SASL_SSL, one PKCS12 keystore and truststore serve all of them. Replica fetchers
authenticate with SCRAM-SHA-512 (``sasl.mechanism.inter.broker.protocol``; the credential is
given at format time, ``kbroker storage format --add-scram``, as Kafka's ``kafka-storage format``),
the quorum and controller channel with PLAIN (``sasl.mechanism.controller.protocol``); the
JAAS ``username``/``password`` options are the nodes' own credentials. The cluster elects,
replicates (RF 3, acks=all) and survives the SIGKILL of the partition leader with nothing
acknowledged lost."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.security.certs import PASSWORD, make_pki

from .support import Cluster, kbroker_cli

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="node" '
        'password="node-secret" user_node="node-secret" user_app="app-secret";')
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="node" '
              'password="node-scram-secret";')


def _format(node) -> None:
    cfg = node.data_dir.parent / f"node-{node.node_id}.properties"
    cfg.write_text("".join(f"{k}={v}\n" for k, v in node.overrides.items()))
    r = kbroker_cli("storage", "format", "-t", node.overrides["cluster.id"], "-c", str(cfg), "--add-scram",
                    "SCRAM-SHA-512=[name=node,password=node-scram-secret]")
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def secure_cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("sasl-ssl-cluster")
    pki = make_pki(root)
    extra = {
        "listener.security.protocol.map": "PLAINTEXT:SASL_SSL,CONTROLLER:SASL_SSL",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.controller.plain.sasl.jaas.config": JAAS,
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki.server_p12),
        "ssl.keystore.password": PASSWORD, "ssl.key.password": PASSWORD,
        "ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(pki.truststore_p12),
        "ssl.truststore.password": PASSWORD,
        "offsets.topic.replication.factor": "3", "min.insync.replicas": "2",
    }
    c = Cluster(root, extra=extra)
    for node in c.nodes.values():
        _format(node)
    c.start_all()
    c.pki = pki
    try:
        yield c
    finally:
        c.shutdown()


def _conf(c, **kw) -> dict:
    return {"bootstrap.servers": c.bootstrap(), "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN", "sasl.username": "app", "sasl.password": "app-secret",
            "ssl.ca.location": str(c.pki.ca), **kw}


def _leader(admin, topic: str) -> int | None:
    md = admin.list_topics(topic, timeout=10).topics.get(topic)
    if md is None or md.error is not None or 0 not in md.partitions:
        return None
    p = md.partitions[0]
    return p.leader if p.leader >= 0 and len(p.isrs) == 3 else None


def test_sasl_ssl_cluster_survives_leader_loss(secure_cluster):
    c = secure_cluster
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(_conf(c))
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(timeout=60)
    deadline = time.monotonic() + 60
    leader = None
    while leader is None and time.monotonic() < deadline:
        leader = _leader(admin, topic)        # every replica in sync: fetchers authenticated
        time.sleep(0.2)
    assert leader is not None, "replicas never joined the ISR over SASL_SSL"
    acked: list[bytes] = []

    def produce(n0: int, n: int) -> None:
        p = Producer(_conf(c, acks="all", **{"enable.idempotence": True, "message.timeout.ms": 60000}))
        for i in range(n0, n0 + n):
            p.produce(topic, f"v{i}".encode(),
                      on_delivery=lambda err, m: err is None and acked.append(m.value()))
        assert p.flush(90) == 0

    produce(0, 200)
    c.kill(leader)
    produce(200, 200)
    assert len(acked) == 400
    cons = Consumer(_conf(c, **{"group.id": f"g-{topic}", "enable.auto.commit": False}))
    cons.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 60
    while len(seen) < 400 and time.monotonic() < deadline:
        m = cons.poll(1.0)
        if m is not None and not m.error():
            seen.add(m.value())
    cons.close()
    assert set(acked) <= seen
