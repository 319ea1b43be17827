"""Three kbroker containers configured only with Kafka's image variables (each a broker and
a controller voter) on a user-defined network: a replicated topic loses no acknowledged record
when one container is killed (SIGKILL) while producers run, and the node rejoins when started."""
import threading
import time

from confluent_kafka import Producer

from .conftest import consume_all, create_topic, free_port, logs, name, node_env, wait_healthy, wait_ready


def test_killing_one_container_loses_nothing_acknowledged(lab):
    net = lab.network()
    names = [name(f"n{i}") for i in (1, 2, 3)]
    ports = [free_port() for _ in names]
    voters = ",".join(f"{i}@{n}:9093" for i, n in enumerate(names, 1))
    nodes = [lab.broker(n, node_env(n, i, voters, p, KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=3,
                                    KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=3,
                                    KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=2,
                                    KAFKA_MIN_INSYNC_REPLICAS=2),
                        p, net)
             for i, (n, p) in enumerate(zip(names, ports), 1)]
    for c in nodes:
        wait_ready(c, timeout=90)
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
    create_topic(bootstrap, "replicated", partitions=3, rf=3)

    acked: list[bytes] = []
    failed: list[str] = []
    stop = threading.Event()

    def on_delivery(err, msg):
        (failed.append(str(err)) if err else acked.append(msg.value()))

    def run_producer():
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                      "message.timeout.ms": 60000, "linger.ms": 5})
        i = 0
        while not stop.is_set():
            p.produce("replicated", f"v-{i}".encode(), on_delivery=on_delivery)
            i += 1
            p.poll(0.002)
        p.flush(90)

    t = threading.Thread(target=run_producer)
    t.start()
    try:
        deadline = time.monotonic() + 60
        while len(acked) < 500 and time.monotonic() < deadline:
            time.sleep(0.05)
        victim = nodes[0]
        victim.kill()                                     # SIGKILL: no shutdown at all
        before_kill = len(acked)
        deadline = time.monotonic() + 90
        while len(acked) < before_kill + 500 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        t.join(120)
    # its flush is over: ``acked`` takes no more delivery reports while it is compared below
    assert not t.is_alive(), "the producer did not finish flushing"
    assert len(acked) >= before_kill + 500, (len(acked), before_kill, failed[:5])
    survivors = ",".join(f"127.0.0.1:{p}" for p in ports[1:])
    seen = set(consume_all(survivors, "replicated", timeout=90))
    lost = [v for v in acked if v not in seen]
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:5]}"

    victim.start()                                        # recovers after the crash and rejoins
    wait_ready(victim, timeout=90, starts=2)
    wait_healthy(victim)
    assert "kbroker ready:" in logs(victim)
    assert set(consume_all(bootstrap, "replicated", timeout=90)) >= set(acked)
