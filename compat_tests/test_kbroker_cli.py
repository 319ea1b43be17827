"""kbroker's own client commands (``kbroker topics|produce|consume|groups|configs|cluster|acls|users``)
against both targets: they are clients of the wire protocol, so they must work on Apache
Kafka exactly as on kbroker. The scenarios live in compat_tests/kbroker_cli.py (also run by
tests/tools against kbroker alone)."""
from __future__ import annotations

from compat_tests import kbroker_cli as s

CLIENT = "kbroker-cli"


def test_version(target):
    s.scenario_version()


def test_topics(bootstrap, topic_name):
    s.scenario_topics(bootstrap, topic_name)


def test_produce_consume(bootstrap, topic_name):
    s.scenario_produce_consume(bootstrap, topic_name)


def test_groups(bootstrap, topic_name):
    s.scenario_groups(bootstrap, topic_name)


def test_configs(bootstrap):
    s.scenario_configs(bootstrap)


def test_cluster(bootstrap):
    s.scenario_cluster(bootstrap)


def test_acls_and_users(broker_factory, topic_name):
    """One broker with Kafka's StandardAuthorizer and ``super.users=User:ANONYMOUS`` for both."""
    b = broker_factory(**s.AUTHZ_OVERRIDES)
    s.scenario_acls(b.bootstrap_servers, topic_name)
    s.scenario_users(b.bootstrap_servers)
