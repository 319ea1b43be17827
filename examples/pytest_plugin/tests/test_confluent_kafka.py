"""confluent-kafka users: the broker's address is ``kbroker.bootstrap_servers``, each test
gets its own topic from ``kafka_topic``."""
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

import orders


def consume(bootstrap, topic, count, group):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    out = []
    try:
        while len(out) < count:
            msg = c.poll(10)
            assert msg is not None, f"only {len(out)} of {count} records arrived"
            assert msg.error() is None, msg.error()
            out.append(msg)
    finally:
        c.close()
    return out


@pytest.mark.kafka_topic(partitions=3)
def test_orders_of_one_customer_stay_in_order(kbroker, kafka_topic):
    p = Producer({"bootstrap.servers": kbroker.bootstrap_servers})
    for i in range(30):
        key, value = orders.encode({"customer": f"c{i % 3}", "amount": i, "seq": i})
        p.produce(kafka_topic, key=key, value=value)
    assert p.flush(30) == 0
    records = consume(kbroker.bootstrap_servers, kafka_topic, 30, "totals")
    assert len({m.partition() for m in records}) > 1          # the topic has 3 partitions
    per_customer = {}
    for m in records:
        per_customer.setdefault(m.key(), []).append(orders.decode(m.value())["seq"])
    assert all(seqs == sorted(seqs) for seqs in per_customer.values())
    assert orders.total_by_customer(orders.decode(m.value()) for m in records) == \
        {"c0": 135, "c1": 145, "c2": 155}


def test_every_test_gets_a_fresh_topic(kbroker, kafka_topic):
    md = AdminClient({"bootstrap.servers": kbroker.bootstrap_servers}).list_topics(timeout=10)
    topic = md.topics[kafka_topic]
    assert len(topic.partitions) == 1
    c = Consumer({"bootstrap.servers": kbroker.bootstrap_servers, "group.id": "fresh",
                  "auto.offset.reset": "earliest"})
    low, high = c.get_watermark_offsets(TopicPartition(kafka_topic, 0), timeout=10)
    c.close()
    assert (low, high) == (0, 0)
