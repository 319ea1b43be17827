"""A consume-transform-produce worker (run as a subprocess by test_exactly_once.py).

    python ctp_worker.py BOOTSTRAP IN_TOPIC OUT_TOPIC PARTITIONS GROUP TXN_ID

Reads IN_TOPIC (read_committed, positions from the group's committed offsets), writes
``out-<value>`` for every input record to OUT_TOPIC and commits the input offsets in the
same transaction (send_offsets_to_transaction), 40 records per transaction. Prints
``committed <n>`` after each commit and exits 0 once every input partition is consumed to
its end. The test SIGKILLs it at random moments and starts it again.
"""
import sys

from confluent_kafka import Consumer, Producer, TopicPartition


def main() -> int:
    bootstrap, in_topic, out_topic, partitions, group, txn_id = sys.argv[1:7]
    partitions = int(partitions)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": 10000, "linger.ms": 2})
    producer.init_transactions(30)          # fences and aborts the killed instance's txn
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    tps = [TopicPartition(in_topic, p) for p in range(partitions)]
    committed = consumer.committed(tps, timeout=30)
    start = [tp.offset if tp.offset >= 0 else 0 for tp in committed]
    consumer.assign([TopicPartition(in_topic, p, off) for p, off in enumerate(start)])
    ends = [consumer.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in tps]
    total = 0
    idle = 0
    while True:
        msgs = [m for m in consumer.consume(num_messages=40, timeout=0.5) if not m.error()]
        if not msgs:
            pos = [p.offset if p.offset >= 0 else s  # no record read yet: where we started
                   for p, s in zip(consumer.position(tps), start)]
            if all(p >= e for p, e in zip(pos, ends)):
                print("done", total, flush=True)
                return 0
            idle += 1
            if idle > 120:
                print("stuck", pos, ends, flush=True)
                return 3
            continue
        idle = 0
        producer.begin_transaction()
        for m in msgs:
            producer.produce(out_topic, b"out-" + m.value(), key=m.key())
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        total += len(msgs)
        print("committed", total, flush=True)


if __name__ == "__main__":
    sys.exit(main())
