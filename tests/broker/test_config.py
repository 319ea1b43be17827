"""BrokerConfig: Kafka keys and types, defaults, listeners, log defaults, meta.properties."""
import pytest

from kbroker.config.broker import BrokerConfig, ConfigError, ensure_meta_properties, parse_properties


def test_defaults():
    c = BrokerConfig.from_dict({})
    assert c.node_id == 1 and c.get("num.partitions") == 1
    assert c.get("message.max.bytes") == 1048588 and c.get("socket.request.max.bytes") == 104857600
    assert c.get("offsets.topic.replication.factor") == 1 and c.get("offsets.topic.num.partitions") == 50
    assert c.get("group.initial.rebalance.delay.ms") == 3000
    assert [str(l) for l in c.listeners] == ["PLAINTEXT://127.0.0.1:9092"]
    assert c.log_dirs == ["/tmp/kbroker-logs"]   # kbroker's own, not Kafka's /tmp/kafka-logs


def test_stock_kafka_server_properties_is_accepted(tmp_path):
    text = """
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""
    p = tmp_path / "server.properties"
    p.write_text(text)
    c = BrokerConfig.load(p)
    assert [str(l) for l in c.listeners] == ["PLAINTEXT://:9092"]           # the client listeners
    assert [str(l) for l in c.controller_listeners] == ["CONTROLLER://:9093"]  # the controller plane
    assert [str(l) for l in c.advertised_listeners] == ["PLAINTEXT://localhost:9092"]
    assert c.log_dirs == ["/tmp/kraft-combined-logs"]


@pytest.mark.parametrize("raw, key", [
    ({"bogus.key": "1"}, "bogus.key"),
    ({"num.partitions": "x"}, "num.partitions"),
    ({"num.partitions": "2147483648"}, "num.partitions"),
    ({"log.retention.ms": "-5"}, "log.retention.ms"),
    ({"listeners": "PLAINTEXT://h:port"}, "listeners"),
    ({"listeners": "SASL_SSL://h:1"}, "ssl.keystore.location"),     # TLS needs a keystore
    ({"listeners": "SASL_PLAINTEXT://h:1"}, "sasl.enabled.mechanisms"),  # Kafka's default: GSSAPI
    ({"listeners": "FOO://h:1"}, "listener.security.protocol.map"),
    ({"authorizer.class.name": "com.example.Custom"}, "authorizer.class.name"),
    ({"principal.builder.class": "com.example.Builder"}, "principal.builder.class"),
    ({"listener.name.sasl_ssl.plain.sasl.server.callback.handler.class": "com.example.H"},
     "listener.name.sasl_ssl.plain.sasl.server.callback.handler.class"),
    ({"listeners": "PLAINTEXT://a:1,PLAINTEXT://b:2"}, "listeners"),
    ({"cluster.id": "not-a-uuid"}, "cluster.id"),
    ({"compression.type": "brotli"}, "compression.type"),
])
def test_errors_name_the_key(raw, key):
    with pytest.raises(ConfigError) as e:
        BrokerConfig.from_dict(raw)
    assert e.value.key == key and key in str(e.value)


@pytest.mark.parametrize("given, other", [("node.id", "broker.id"), ("broker.id", "node.id")])
def test_node_id_and_broker_id_are_synonyms(given, other):
    """One of the two set alone sets the other, which then counts as set statically (so
    DescribeConfigs reports both as STATIC_BROKER_CONFIG, as Kafka does)."""
    c = BrokerConfig.from_dict({given: "7"})
    assert c.node_id == 7 and c.get("broker.id") == 7
    assert {given, other} <= c.explicit
    assert BrokerConfig.from_dict({}).get("broker.id") == -1      # neither set: Kafka's default
    both = BrokerConfig.from_dict({"node.id": "3", "broker.id": "3"})
    assert both.node_id == 3 and both.get("broker.id") == 3


def test_several_listeners_and_wildcard():
    c = BrokerConfig.from_dict({"listeners": "PLAINTEXT://127.0.0.1:1,INTERNAL://0.0.0.0:2",
                                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"})
    assert [l.port for l in c.listeners] == [1, 2]
    assert c.advertised_listeners[1].host not in ("0.0.0.0", "")


def test_log_segment_bytes_below_one_mib_is_refused():
    # Kafka 4: log.segment.bytes is at least 1 MiB (KIP-1030)
    with pytest.raises(ConfigError, match="log.segment.bytes"):
        BrokerConfig.from_dict({"log.segment.bytes": "1048575"})
    assert BrokerConfig.from_dict({"log.segment.bytes": "1048576"}).log_config_defaults()["segment.bytes"] == "1048576"


def test_log_config_defaults_translate_broker_keys():
    c = BrokerConfig.from_dict({"log.retention.hours": "1", "log.segment.bytes": "2000000",
                                "log.cleanup.policy": "compact", "message.max.bytes": "5000"})
    d = c.log_config_defaults()
    assert d["retention.ms"] == "3600000" and d["segment.bytes"] == "2000000"
    assert d["cleanup.policy"] == "compact" and d["max.message.bytes"] == "5000"
    c = BrokerConfig.from_dict({"log.retention.hours": "1", "log.retention.minutes": "2"})
    assert c.log_config_defaults()["retention.ms"] == "120000"            # most specific wins
    from kbroker.log.config import LogConfig
    assert LogConfig.from_properties(d).retention_ms == 3_600_000


def test_properties_parser():
    assert parse_properties("a=1\n b : 2\n# c=3\n!d=4\ne 5\nf=x\\\n  y\ng=\n") == \
        {"a": "1", "b": "2", "e": "5", "f": "xy", "g": ""}


def test_meta_properties_persist_cluster_id(tmp_path):
    c = BrokerConfig.from_dict({"log.dirs": f"{tmp_path}/a,{tmp_path}/b"})
    cid = ensure_meta_properties(c)
    assert len(cid) == 22
    for d in "ab":
        assert f"cluster.id={cid}" in (tmp_path / d / "meta.properties").read_text()
    assert ensure_meta_properties(BrokerConfig.from_dict({"log.dirs": f"{tmp_path}/a"})) == cid
    with pytest.raises(ConfigError) as e:
        ensure_meta_properties(BrokerConfig.from_dict({"log.dirs": f"{tmp_path}/a", "node.id": "2"}))
    assert e.value.key == "node.id"


_SASL_CONTROLLER = {
    "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config":
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="ctl" '
        'password="ctl-secret" user_ctl="ctl-secret";',
}


@pytest.mark.parametrize("quorum", [
    {"controller.quorum.bootstrap.servers": "127.0.0.1:19093"},      # a dynamic quorum's node
    {"controller.quorum.voters": "1@127.0.0.1:9093"},                # one voter, brokers apart
])
def test_a_node_with_peers_gets_the_controller_listeners_client_side(quorum):
    """Node-to-node connections speak the controller listener's SASL even when no other
    static voter is listed: a node of a dynamic quorum, or the only voter that brokers of
    their own register with."""
    c = BrokerConfig.from_dict({**_SASL_CONTROLLER, **quorum})
    assert c.controller_security is not None
    assert (c.controller_security.mechanism, c.controller_security.username) == ("PLAIN", "ctl")


def test_a_lone_node_without_a_controller_listener_needs_no_client_side():
    c = BrokerConfig.from_dict({})
    assert c.controller_security is None and c.inter_broker_security is None


def _java_double_by_decimal(x: float) -> str:
    """``Double.toString``'s scientific form read through ``decimal`` (what ``java_double``
    did before it parsed ``repr`` itself), for the values outside Java's plain range."""
    from decimal import Decimal
    _sign, digits, exp = Decimal(repr(abs(x))).as_tuple()
    d = "".join(map(str, digits))
    stripped = d.rstrip("0") or "0"
    exp += len(d) - len(stripped)
    return f"{'-' if x < 0 else ''}{stripped[0]}.{stripped[1:] or '0'}E{exp + len(stripped) - 1}"


def test_java_double_reads_the_shortest_digits_without_decimal():
    """Kafka's (Java's) notation from ``repr``'s digits, the same as read through ``decimal``
    (which a start no longer imports for it)."""
    import random
    import struct

    from kbroker.config.broker import java_double
    assert [java_double(x) for x in (0.5, 10.0, 1e-5, 1.7976931348623157e308, -2.5e-7, 1e7,
                                     0.001, 0.0, float("nan"), float("-inf"),
                                     123456789012345680000.0)] == [
        "0.5", "10.0", "1.0E-5", "1.7976931348623157E308", "-2.5E-7", "1.0E7",
        "0.001", "0.0", "NaN", "-Infinity", "1.2345678901234568E20"]
    rng = random.Random(7)
    xs = [struct.unpack("<d", rng.randbytes(8))[0] for _ in range(20_000)]
    xs = [x for x in xs if x == x and abs(x) != float("inf") and not (1e-3 <= abs(x) < 1e7)]
    xs += [m * 10.0 ** k for k in range(-300, 300, 7) for m in (1.0, 1.5, 7.25)]
    xs = [x for x in xs if not (1e-3 <= abs(x) < 1e7)]
    assert len(xs) > 10_000
    assert [java_double(x) for x in xs] == [_java_double_by_decimal(x) for x in xs]
