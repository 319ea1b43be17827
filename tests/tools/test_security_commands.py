"""``kbroker acls`` against a kbroker without an authorizer: one line, exit 1.

The ``acls`` and ``users`` scenarios (``compat_tests/kbroker_cli.py``: a broker with Kafka's
StandardAuthorizer and ``super.users=User:ANONYMOUS``) run in
``compat_tests/test_kbroker_cli.py::test_acls_and_users`` against kbroker and Apache Kafka alike;
they ran here too, against kbroker alone, with the same assertions."""
from __future__ import annotations

from compat_tests import kbroker_cli as s
from tests.support.broker_proc import BrokerProcess


def test_acls_without_an_authorizer_is_one_line(tmp_path):
    proc = BrokerProcess(tmp_path / "data").start()
    try:
        assert "SECURITY_DISABLED" in s.failed("acls", "list", "-b", proc.bootstrap).stderr
    finally:
        proc.stop()
