"""`kafka-cluster.sh unregister` (UnregisterBroker, 64) from the 4.3.1 jars, alike on kbroker and
Apache Kafka: an id that is not registered fails with Kafka's exception and message (issue 18).
The success path (a registration removed, the running broker registering again) is
tests/broker/test_unregister_broker.py."""
from __future__ import annotations

from compat_tests.cli import run_tool

CLIENT = "kafka-cluster"


def test_unregister_unknown_broker(bootstrap):
    r = run_tool("kafka-cluster", ["unregister", "--bootstrap-server", bootstrap, "--id", "99"], timeout=90)
    assert r.returncode == 1
    assert ("org.apache.kafka.common.errors.BrokerIdNotRegisteredException: "
            "Broker ID 99 is not currently registered") in r.stderr, r.stderr
