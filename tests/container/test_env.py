"""kbroker.container.env: Kafka's image rules for KAFKA_* variables, CLUSTER_ID, a mounted
server.properties and the image's defaults — pure functions, checked without an engine."""
from pathlib import Path

import pytest

from kbroker.config.broker import BrokerConfig, parse_properties
from kbroker.container import env as cenv

DEFAULT = (Path(__file__).resolve().parents[2] / "docker" / "server.properties").read_text()


@pytest.mark.parametrize("var,key", [
    ("KAFKA_NODE_ID", "node.id"),
    ("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map"),
    ("KAFKA_CONTROLLER_QUORUM_VOTERS", "controller.quorum.voters"),
    ("KAFKA_ABC__DEF", "abc_def"),
    ("KAFKA_ABC___DEF", "abc-def"),
    ("KAFKA_LISTENER_NAME_INTERNAL_SSL__X", "listener.name.internal.ssl_x"),
    ("KAFKA_KAFKA_METRICS_REPORTERS", "kafka.metrics.reporters"),
])
def test_property_names_follow_kafkas_image(var, key):
    assert cenv.property_name(var) == key
    assert cenv.property_name(cenv.env_name(key)) == key


def test_launch_script_variables_are_not_keys():
    env = {"KAFKA_HEAP_OPTS": "-Xmx1G", "KAFKA_OPTS": "-Dx=y", "KAFKA_JMX_PORT": "9999",
           "KAFKA_LOG4J_ROOT_LOGLEVEL": "WARN", "KAFKA_NUM_PARTITIONS": "3", "PATH": "/bin",
           "KAFKA_": "x"}
    assert cenv.server_properties_from_env(env) == {"num.partitions": "3"}


def test_no_configuration_gives_the_single_node_defaults():
    r = cenv.render({}, None, DEFAULT)
    assert r.source == "default"
    cfg = BrokerConfig.from_dict(parse_properties(r.text))
    assert cfg.values["process.roles"] == ["broker", "controller"]
    assert [str(l) for l in cfg.advertised_listeners] == [
        "PLAINTEXT://localhost:29092", "PLAINTEXT_HOST://localhost:9092"]
    assert cfg.values["cluster.id"] == cenv.KAFKA_DEFAULT_CLUSTER_ID
    assert cfg.log_dirs == [cenv.DEFAULT_LOG_DIRS]
    assert cfg.values["kbroker.http.listen"] == cenv.DEFAULT_HTTP_LISTEN


def test_the_http_listener_is_on_for_brokers_unless_set():
    env = {"KAFKA_PROCESS_ROLES": "controller", "KAFKA_LISTENERS": "CONTROLLER://:9093"}
    assert "kbroker.http.listen" not in parse_properties(cenv.render(env, None, DEFAULT).text)
    env = {"KAFKA_PROCESS_ROLES": "broker", "KAFKA_KBROKER_HTTP_LISTEN": "0.0.0.0:8080"}
    assert parse_properties(cenv.render(env, None, DEFAULT).text)["kbroker.http.listen"] == "0.0.0.0:8080"


def test_environment_replaces_the_defaults_and_derives_listeners():
    env = {"KAFKA_NODE_ID": "2", "KAFKA_PROCESS_ROLES": "broker,controller",
           "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://kb:19092,CONTROLLER://kb:9093",
           "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
           "KAFKA_CONTROLLER_QUORUM_VOTERS": "2@kb:9093", "CLUSTER_ID": "4L6g3nShT-eMCtK--X86sw"}
    r = cenv.render(env, None, DEFAULT)
    props = parse_properties(r.text)
    assert r.source == "environment"
    assert "advertised.listeners" in props and "PLAINTEXT_HOST" not in r.text
    assert props["listeners"] == "PLAINTEXT://0.0.0.0:19092,CONTROLLER://0.0.0.0:9093"
    assert props["cluster.id"] == "4L6g3nShT-eMCtK--X86sw"
    assert props["log.dirs"] == cenv.DEFAULT_LOG_DIRS
    assert r.from_env["listeners"] == "KAFKA_ADVERTISED_LISTENERS"
    assert r.from_env["node.id"] == "KAFKA_NODE_ID"
    BrokerConfig.from_dict(props)


def test_a_controller_only_node_refuses_advertised_listeners():
    env = {"KAFKA_PROCESS_ROLES": "controller", "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://a:1"}
    with pytest.raises(ValueError, match="KAFKA_ADVERTISED_LISTENERS"):
        cenv.render(env, None, DEFAULT)
    env = {"KAFKA_PROCESS_ROLES": "controller", "KAFKA_LISTENERS": "CONTROLLER://:9093"}
    assert parse_properties(cenv.render(env, None, DEFAULT).text)["listeners"] == "CONTROLLER://:9093"


def test_mounted_file_is_the_base_and_the_environment_wins():
    mounted = "num.partitions=5\nlog.dirs=/data/x\ndefault.replication.factor=1\n"
    r = cenv.render({"KAFKA_NUM_PARTITIONS": "7", "KAFKA_LOG_RETENTION_MS": "1000"}, mounted, DEFAULT)
    props = parse_properties(r.text)
    assert r.source == "mounted+environment"
    assert props["num.partitions"] == "7" and props["log.retention.ms"] == "1000"
    assert props["log.dirs"] == "/data/x" and props["default.replication.factor"] == "1"
    assert "listeners" not in props          # nothing from the image's defaults
    assert cenv.render({}, mounted, DEFAULT).source == "mounted"


def test_values_survive_the_properties_round_trip():
    value = r'org.x required username="a" password="b\c";'
    r = cenv.render({"KAFKA_SASL_JAAS_CONFIG": value}, None, DEFAULT)
    assert parse_properties(r.text)["sasl.jaas.config"] == value


def test_kbroker_extras():
    env = {"KBROKER_ADVERTISED_LISTENERS": "PLAINTEXT://h:9092",
           "KBROKER_OPTS": "--override num.partitions=3 --shutdown-timeout 2"}
    r = cenv.render(env, None, DEFAULT)
    props = parse_properties(r.text)
    assert props["advertised.listeners"] == "PLAINTEXT://h:9092"
    assert props["listeners"] == "PLAINTEXT://0.0.0.0:9092"
    assert r.serve_args == ["--override", "num.partitions=3", "--shutdown-timeout", "2"]


@pytest.mark.parametrize("env,level", [
    ({}, None), ({"KAFKA_LOG4J_ROOT_LOGLEVEL": "WARN"}, "WARNING"),
    ({"KAFKA_LOG4J_ROOT_LOGLEVEL": "TRACE, stdout"}, "DEBUG"),
    ({"KBROKER_LOG_LEVEL": "error", "KAFKA_LOG4J_ROOT_LOGLEVEL": "INFO"}, "ERROR"),
])
def test_log_level(env, level):
    assert cenv.log_level(env) == level


def test_a_bad_log_level_is_named():
    with pytest.raises(ValueError, match="KAFKA_LOG4J_ROOT_LOGLEVEL"):
        cenv.log_level({"KAFKA_LOG4J_ROOT_LOGLEVEL": "LOUD"})
