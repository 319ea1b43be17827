"""What testcontainers' Kafka modules set, read by the image's rules (kbroker.container.env) and
loaded by kbroker's own configuration: ZooKeeper settings become one combined KRaft node,
Confluent's REST proxy variables are not keys, Confluent's entry points write no cluster.id;
and kbroker.container.start_lines adds the start-up lines those modules wait for. No engine here:
docker_tests/test_testcontainers.py runs the modules themselves."""
import logging
import re

import pytest

from kbroker.config.broker import BrokerConfig, parse_properties
from kbroker.container import env as cenv
from kbroker.container import start_lines

# testcontainers-python 4.15's KafkaContainer in its default (ZooKeeper) mode, after its start
# script exported the advertised listeners
PYTHON_ZK = {
    "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
    "KAFKA_BROKER_ID": "1",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
    "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES": "10000000",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_ZOOKEEPER_CONNECT": "localhost:2181",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:32768,BROKER://172.17.0.2:9092",
}
# testcontainers-go 0.40's module (written for confluent-local)
GO = {
    "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
    "KAFKA_REST_BOOTSTRAP_SERVERS": "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092,CONTROLLER://0.0.0.0:9094",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
    "KAFKA_BROKER_ID": "1",
    "KAFKA_NODE_ID": "1",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094",
    "KAFKA_LOG_FLUSH_INTERVAL_MESSAGES": "9223372036854775807",
    "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:32769,BROKER://abc123:9092",
}


def load(tmp_path, text: str) -> BrokerConfig:
    path = tmp_path / "kafka.properties"
    path.write_text(text)
    return BrokerConfig.load(str(path))


def test_zookeeper_settings_become_one_combined_kraft_node(tmp_path):
    r = cenv.render(PYTHON_ZK, None, "", cluster_id=False, default_log_dirs="/var/lib/kafka/data")
    props = parse_properties(r.text)
    assert not any(k.startswith("zookeeper.") for k in props)
    assert "zookeeper.connect" not in r.from_env
    assert [n.split(" ")[0] for n in r.notes] == ["zookeeper.connect"]
    assert "KAFKA_ZOOKEEPER_CONNECT" in r.notes[0]
    # Confluent's entry points: no cluster.id in the file, the data in Confluent's data dir
    assert "cluster.id" not in props and props["log.dirs"] == "/var/lib/kafka/data"
    config = load(tmp_path, r.text)
    assert config.node_id == 1
    assert set(config.values["process.roles"]) == {"broker", "controller"}
    assert not config.values["controller.quorum.voters"]
    assert [str(l) for l in config.advertised_listeners] == [
        "PLAINTEXT://localhost:32768", "BROKER://172.17.0.2:9092"]


def test_the_apache_image_path_still_writes_the_cluster_id():
    r = cenv.render(PYTHON_ZK, None, "")
    assert parse_properties(r.text)["cluster.id"] == cenv.KAFKA_DEFAULT_CLUSTER_ID


def test_rest_proxy_variables_are_not_keys_and_the_go_module_settings_load(tmp_path):
    assert not cenv.is_key_variable("KAFKA_REST_BOOTSTRAP_SERVERS")
    r = cenv.render(GO, None, "", cluster_id=False, default_log_dirs="/var/lib/kafka/data")
    props = parse_properties(r.text)
    assert not any(k.startswith("rest.") for k in props) and r.notes == []
    config = load(tmp_path, r.text)
    assert config.values["log.flush.interval.messages"] == 2**63 - 1
    assert [l.name for l in config.controller_listeners] == ["CONTROLLER"]


def ready_record(msg: str) -> logging.LogRecord:
    return logging.LogRecord("kbroker.server", logging.INFO, __file__, 1, "%s", (msg,), None)


def test_kafkas_start_up_lines_follow_the_ready_line_once(caplog):
    handler = start_lines.KafkaStartLines()
    caplog.set_level(logging.INFO, logger="kbroker.container")
    handler.emit(ready_record("broker 3 started: {...}"))
    assert caplog.records == []
    ready = ("kbroker ready: listening on PLAINTEXT://0.0.0.0:9092 (node 3, cluster "
             "MkU3OEVBNTcwNTJENDM2Qk, data /var/lib/kbroker)")
    handler.emit(ready_record(ready))
    handler.emit(ready_record(ready))
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    text = "\n".join(lines)
    # the waits of testcontainers-python (both modes), -java and -go
    for wait in (r".*\[KafkaServer id=\d+\] started.*", r".*Kafka Server started.*",
                 r".*Transitioning from RECOVERY to RUNNING.*"):
        assert re.search(wait, text), wait
    assert "id=3]" in text and "kbroker ready:" not in text


def test_serve_installs_the_handler_only_when_asked():
    from kbroker.tools.cli import _parser
    assert _parser().parse_args(["serve", "--kafka-start-lines"]).kafka_start_lines
    assert not _parser().parse_args(["serve"]).kafka_start_lines
