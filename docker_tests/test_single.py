"""One kbroker container: clients on the host and on a user-defined network (two listeners),
the health check, the image's defaults, a mounted server.properties, stop/start keeping the
data (as an arbitrary uid), and wrong configurations ending with a message in `docker logs`."""
import os
import stat
import tempfile

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from .conftest import (create_topic, consume_all, free_port, logs, name, node_env,
                       produce, wait_healthy, wait_ready)

CLIENT_SCRIPT = """
import json, sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
bootstrap, topic, n = {bootstrap!r}, {topic!r}, {n}
p = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
for i in range(n):
    p.send(topic, ("net-%d" % i).encode()).get(timeout=30)
p.close()
c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
tp = TopicPartition(topic, 0)
c.assign([tp]); c.seek_to_beginning(tp)
end = c.end_offsets([tp])[tp]
seen = []
while c.position(tp) < end:
    for recs in c.poll(timeout_ms=1000).values():
        seen += [r.value.decode() for r in recs]
print(json.dumps({{"seen": seen}}))
"""


@pytest.fixture
def two_listeners(lab):
    net = lab.network()
    port = free_port()
    cname = name("kb")
    # as a compose file for Kafka's image would have it: its JVM settings (ignored here) and its
    # data volume's path
    env = node_env(cname, 1, f"1@{cname}:9093", port, KAFKA_HEAP_OPTS="-Xmx512M -Xms512M",
                   KAFKA_LOG_DIRS="/var/lib/kafka/data")
    c = lab.broker(cname, env, port, net)
    wait_ready(c)
    assert "data /var/lib/kafka/data" in logs(c)
    return c, cname, port, net


def test_host_and_network_clients_through_two_listeners(lab, two_listeners):
    c, cname, port, net = two_listeners
    bootstrap = f"127.0.0.1:{port}"
    create_topic(bootstrap, "both")
    host_values = [f"host-{i}".encode() for i in range(50)]
    assert produce(bootstrap, "both", host_values) == host_values
    # kafka-python in a second container: bootstraps and is redirected by name (PLAINTEXT)
    out = lab.client(CLIENT_SCRIPT.format(bootstrap=f"{cname}:19092", topic="both", n=20), net)
    net_values = [f"net-{i}" for i in range(20)]
    assert out["seen"] == [v.decode() for v in host_values] + net_values
    assert consume_all(bootstrap, "both") == host_values + [v.encode() for v in net_values]


def test_health_check_turns_healthy(two_listeners):
    c = two_listeners[0]
    wait_healthy(c)
    code, out = c.exec_run(["python", "-m", "kbroker.container.healthcheck"])
    # the image's brokers have the HTTP listener: the probe asks their /ready
    assert code == 0 and b"healthy: http://127.0.0.1:9404/ready: 200 ready" in out
    # the client-listener probe agrees
    code, out = c.exec_run(["python", "-m", "kbroker.container.healthcheck", "--bootstrap",
                            "127.0.0.1:19092"])
    assert code == 0 and b"healthy: node 1" in out


def test_defaults_are_one_combined_node_as_in_kafkas_image(lab):
    c = lab.run()
    wait_ready(c)
    assert "configuration from the image's defaults" in logs(c)
    # a client in the broker's network namespace reaches the advertised localhost:9092
    out = lab.client(CLIENT_SCRIPT.format(bootstrap="localhost:9092", topic="d", n=3),
                     network_mode=f"container:{c.id}")
    assert out["seen"] == ["net-0", "net-1", "net-2"]


def test_mounted_server_properties_and_environment(lab):
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        cname = name("kbf")
        env = node_env(cname, 1, f"1@{cname}:9093", port)
        os.chmod(d, 0o755)                               # readable by the container's uid
        with open(os.path.join(d, "server.properties"), "w") as f:
            f.write("num.partitions=3\nlog.retention.ms=1000\n")
        env["KAFKA_LOG_RETENTION_MS"] = "7200000"            # the environment wins
        c = lab.broker(cname, env, port, volumes={d: {"bind": "/mnt/shared/config", "mode": "ro"}})
        wait_ready(c)
    assert "/mnt/shared/config/server.properties and the environment" in logs(c)
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    res = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = admin.describe_configs([res])[res].result(timeout=30)
    assert configs["num.partitions"].value == "3"
    assert configs["log.retention.ms"].value == "7200000"


def test_stop_then_start_keeps_the_data_as_another_uid(lab):
    port = free_port()
    cname = name("kbs")
    c = lab.broker(cname, node_env(cname, 1, f"1@{cname}:9093", port), port, user="12345")
    wait_ready(c)
    bootstrap = f"127.0.0.1:{port}"
    create_topic(bootstrap, "kept", partitions=2)
    first = [f"a-{i}".encode() for i in range(200)]
    assert sorted(produce(bootstrap, "kept", first)) == sorted(first)
    c.stop(timeout=30)                                   # SIGTERM, then waits
    c.reload()
    assert c.attrs["State"]["ExitCode"] == 0, logs(c)[-2000:]
    assert "shut down cleanly" in logs(c)
    c.start()
    wait_ready(c, starts=2)
    assert "(clean shutdown before: True)" in logs(c).rsplit("kbroker-docker: configuration", 1)[1]
    second = [f"b-{i}".encode() for i in range(50)]
    assert sorted(produce(bootstrap, "kept", second)) == sorted(second)
    assert sorted(consume_all(bootstrap, "kept")) == sorted(first + second)


def test_sigkill_then_start_recovers_every_acknowledged_record(lab):
    port = free_port()
    cname = name("kbk")
    c = lab.broker(cname, node_env(cname, 1, f"1@{cname}:9093", port), port)
    wait_ready(c)
    bootstrap = f"127.0.0.1:{port}"
    values = [f"k-{i}".encode() for i in range(300)]
    acked = produce(bootstrap, "crash", values)
    assert sorted(acked) == sorted(values)
    c.kill()                                             # SIGKILL: no flush, no clean marker
    c.start()
    wait_ready(c, starts=2)
    assert "(clean shutdown before: False)" in logs(c).rsplit("kbroker-docker: configuration", 1)[1]
    assert sorted(consume_all(bootstrap, "crash")) == sorted(acked)


@pytest.mark.parametrize("env,code,words", [
    ({"KAFKA_NODE_ID": "one"}, 2, ["node.id", "KAFKA_NODE_ID"]),
    ({"KAFKA_NO_SUCH_SETTING": "1"}, 2, ["no.such.setting", "KAFKA_NO_SUCH_SETTING"]),
    ({"KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://h:9092", "KAFKA_LISTENERS": "PLAINTEXT://:9092",
      "KAFKA_PROCESS_ROLES": "broker"}, 2, ["controller.quorum.voters"]),
    ({"KAFKA_LOG4J_ROOT_LOGLEVEL": "LOUD"}, 2, ["KAFKA_LOG4J_ROOT_LOGLEVEL"]),
    ({"KAFKA_PROCESS_ROLES": "controller", "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://h:9092"},
     2, ["KAFKA_ADVERTISED_LISTENERS", "controller"]),
])
def test_wrong_configuration_exits_with_the_message_in_docker_logs(lab, env, code, words):
    c = lab.run(environment=env)
    assert c.wait(timeout=60)["StatusCode"] == code
    text = logs(c)
    assert "kbroker: configuration error:" in text, text
    for w in words:
        assert w in text, text


def test_unwritable_data_directory_is_named(lab):
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)                               # owned by root: not writable by uid 1000
        assert os.stat(d).st_uid != 1000
        c = lab.run(volumes={d: {"bind": "/var/lib/kbroker", "mode": "rw"}})
        assert c.wait(timeout=60)["StatusCode"] == 1
        text = logs(c)
        assert "data directory /var/lib/kbroker is not writable" in text, text
        assert "uid 1000" in text and f"mode {stat.S_IMODE(os.stat(d).st_mode):04o}" in text


def test_unreadable_mounted_config_is_named(lab):
    with tempfile.TemporaryDirectory() as d:                  # mode 0700, owned by root
        with open(os.path.join(d, "server.properties"), "w") as f:
            f.write("num.partitions=3\n")
        c = lab.run(volumes={d: {"bind": "/mnt/shared/config", "mode": "ro"}})
        assert c.wait(timeout=60)["StatusCode"] == 2
        text = logs(c)
        assert "cannot read /mnt/shared/config/server.properties" in text, text
