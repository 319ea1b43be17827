"""Spark's Kafka sink and source over SASL_SSL with SCRAM-SHA-512, on Kafka and kbroker
configured identically (``compat_tests/security_broker.py``): the ``kafka.``-prefixed client
options users copy from their Kafka set-ups (security.protocol, sasl.mechanism,
sasl.jaas.config, a PKCS12 truststore) work unchanged; a wrong password fails the query."""
from __future__ import annotations

import pytest

from compat_tests.security_broker import start_secured
from tests.security.certs import PASSWORD

CLIENT = "spark"


@pytest.fixture(scope="module")
def secured(target, broker_pool, tmp_path_factory):
    b = start_secured(target, broker_pool, tmp_path_factory.mktemp(f"spark-pki-{target}"))
    try:
        yield b
    finally:
        b.stop(timeout=30)


def _options(b, password="alice-secret") -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": b.sasl_ssl,
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": ("org.apache.kafka.common.security.scram.ScramLoginModule required "
                                   f'username="alice" password="{password}";'),
        "kafka.ssl.truststore.type": "PKCS12",
        "kafka.ssl.truststore.location": str(b.pki.truststore_p12),
        "kafka.ssl.truststore.password": PASSWORD,
    }


def test_sink_and_source_over_sasl_ssl(spark, secured, topic_name):
    opts = _options(secured)
    df = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(20)], "key string, value string")
    df.write.format("kafka").options(**opts).option("topic", topic_name).save()
    back = (spark.read.format("kafka").options(**opts).option("subscribe", topic_name).load()
            .selectExpr("CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v").collect())
    assert sorted((r.k, r.v) for r in back) == sorted((f"k{i}", f"v{i}") for i in range(20))


def test_wrong_password_fails_the_query(spark, secured, topic_name):
    opts = {**_options(secured, password="wrong"), "kafka.max.block.ms": "8000",
            "kafka.request.timeout.ms": "8000"}
    df = spark.createDataFrame([("k", "v")], "key string, value string")
    with pytest.raises(Exception) as e:
        df.write.format("kafka").options(**opts).option("topic", topic_name).save()
    assert "SaslAuthenticationException" in str(e.value) or "Authentication failed" in str(e.value)
