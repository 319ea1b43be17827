"""``BrokerConfig.unused_keys()`` and Kafka's per-listener and per-mechanism keys: the keys
that configure a listener (``listener.name.<l>.<key>``) or one SASL mechanism on it
(``listener.name.<l>.<mech>.sasl.jaas.config``) are used when kbroker reads the base key, the
listener exists and kbroker serves the mechanism; the rest is still reported."""
from __future__ import annotations

from kbroker.config.broker import BrokerConfig

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret";')


def test_per_listener_and_per_mechanism_keys_are_not_reported_unused(tmp_path):
    cfg = BrokerConfig.from_dict({
        "log.dirs": str(tmp_path),
        "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://127.0.0.1:9093",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                          "CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.SASL_PLAINTEXT.connections.max.reauth.ms": "60000",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        # not acted on: a mechanism kbroker lacks, a listener that does not exist, a base key
        # kbroker does not read
        "listener.name.sasl_plaintext.gssapi.sasl.jaas.config": "x",
        "listener.name.nosuch.connections.max.reauth.ms": "5",
        "listener.name.controller.sasl.kerberos.service.name": "kafka",
    })
    unused = cfg.unused_keys()
    assert unused == ["listener.name.controller.sasl.kerberos.service.name",
                      "listener.name.nosuch.connections.max.reauth.ms",
                      "listener.name.sasl_plaintext.gssapi.sasl.jaas.config"]
