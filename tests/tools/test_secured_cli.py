"""The client commands against a secured kbroker, configured as Kafka's tools are: a Kafka
client properties file (``--command-config``) or a named profile (``--profile``), over
SASL_SSL (PLAIN, a PKCS12 truststore made by keytool) and SASL_PLAINTEXT (SCRAM-SHA-256),
with Kafka's StandardAuthorizer (``super.users=User:admin``).

Each failure path ends in one sentence that names what failed, well within a bound set here
(generous: the machine is shared; the exact times go to the benchmarks): a refused password
names the principal and mechanism, a missing ACL the principal and the resource, an
unreachable bootstrap the address, a partition the topic lacks the partition."""
from __future__ import annotations

import time
import uuid

import pytest

from compat_tests import kbroker_cli as s
from tests.security.certs import PASSWORD, make_pki
from tests.security.conftest import ListenersProcess, security_overrides
from tests.support.broker_proc import free_port

BOUND = 10.0     # seconds: "about a second" on an idle machine, generous on a loaded one


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    base = tmp_path_factory.mktemp("cli-secured")
    pki = make_pki(base)
    ports = {"SASL_SSL": free_port(), "SASL_PLAINTEXT": free_port(), "SSL": free_port()}
    port = free_port()
    overrides = security_overrides(pki, ports, port)
    overrides.update({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                      "super.users": "User:admin;User:ANONYMOUS"})
    proc = ListenersProcess(base / "data", port=port, overrides=overrides)
    proc.start()
    try:
        yield {"plaintext": proc.bootstrap, "sasl_ssl": f"127.0.0.1:{ports['SASL_SSL']}",
               "sasl_plaintext": f"127.0.0.1:{ports['SASL_PLAINTEXT']}", "pki": pki, "dir": base}
    finally:
        proc.stop()


def _props(path, mechanism, user, password, *, tls_pki=None) -> str:
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    lines = [f"security.protocol={'SASL_SSL' if tls_pki else 'SASL_PLAINTEXT'}",
             f"sasl.mechanism={mechanism}",
             f'sasl.jaas.config={module} required username="{user}" password="{password}";']
    if tls_pki is not None:
        lines += ["ssl.truststore.type=PKCS12", f"ssl.truststore.location={tls_pki.truststore_p12}",
                  f"ssl.truststore.password={PASSWORD}"]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _timed_failure(*args):
    started = time.monotonic()
    r = s.failed(*args, timeout=60)
    elapsed = time.monotonic() - started
    assert elapsed < BOUND, f"took {elapsed:.1f} s: {r.stderr}"
    return r.stderr.strip()


def test_command_config_file_over_sasl_ssl(secured, tmp_path):
    """A Kafka properties file (PLAIN over TLS, PKCS12 truststore) drives every kind of call:
    confluent-kafka's admin, producer and consumer, and the project's own codec (groups)."""
    admin = _props(tmp_path / "admin.properties", "PLAIN", "admin", "admin-secret", tls_pki=secured["pki"])
    b = ("--bootstrap-server", secured["sasl_ssl"], "--command-config", admin)
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    s.ok("topics", "create", topic, "--partitions", "2", *b)
    s.ok("produce", topic, "-p", "0", *b, input="one\ntwo\n")
    assert s.ok("consume", topic, "-g", f"g-{topic}", "-o", "beginning", "-e", *b).stdout.split() == ["one", "two"]
    listed = {g["group"]: g for g in s.js("groups", "list", *b)}
    assert listed[f"g-{topic}"]["type"] == "classic"
    [d] = s.js("groups", "describe", f"g-{topic}", *b)
    # as Kafka's consumers: every assigned partition's position is committed, also an empty one's
    assert [(r["partition"], r["current_offset"], r["lag"]) for r in d["offsets"]] == [(0, 2, 0), (1, 0, 0)]
    [described] = s.js("topics", "describe", topic, *b)          # Metadata over the codec, TLS + SASL
    assert [p["partition"] for p in described["partitions"]] == [0, 1]
    assert s.js("cluster", "quorum", *b)["leader_id"] >= 0


def test_scram_user_through_a_profile(secured, tmp_path, monkeypatch):
    """``--profile`` reads the profiles file: the bootstrap address and Kafka keys; a SCRAM
    user made with ``users set-password`` logs in with it (librdkafka and the codec's SCRAM)."""
    user = f"carol{uuid.uuid4().hex[:6]}"
    s.ok("users", "set-password", user, "--password", "carol-pw", "--mechanism", "SCRAM-SHA-256",
         "-b", secured["plaintext"])
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(f'''[profiles.carol]
bootstrap-servers = "{secured['sasl_plaintext']}"
[profiles.carol.properties]
"security.protocol" = "SASL_PLAINTEXT"
"sasl.mechanism" = "SCRAM-SHA-256"
"sasl.jaas.config" = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="carol-pw";'
''')
    monkeypatch.setenv("KBROKER_PROFILES", str(profiles))
    topic = f"prof-{uuid.uuid4().hex[:8]}"
    s.ok("acls", "add", "--allow-principal", f"User:{user}", "--operation", "All", "--topic", topic,
         "--group", "*", "-b", secured["plaintext"])

    def allowed():
        return s.kb("topics", "create", topic, "--if-not-exists", "--profile", "carol").returncode
    s.eventually_equal(allowed, 0)
    s.ok("produce", topic, "--value", "hello", "--profile", "carol")
    assert s.ok("consume", topic, "-o", "beginning", "-e", "--profile", "carol").stdout.split() == ["hello"]
    assert isinstance(s.js("groups", "list", "--profile", "carol"), list)    # the codec's SCRAM
    # explicit flags win over the profile: an unknown profile name is a usage error
    assert "profile 'nope'" in s.usage_error("topics", "list", "--profile", "nope").stderr


def test_a_refused_password_names_the_principal_and_ends_fast(secured, tmp_path):
    bad = _props(tmp_path / "bad.properties", "PLAIN", "alice", "wrong", tls_pki=secured["pki"])
    for cmd in (("topics", "list"), ("groups", "list")):
        msg = _timed_failure(*cmd, "-b", secured["sasl_ssl"], "--command-config", bad)
        assert msg.startswith(f"kbroker: {secured['sasl_ssl']} refused the authentication of User:alice (PLAIN)"), msg


def test_a_missing_acl_names_the_principal_and_the_resource(secured, tmp_path):
    alice = _props(tmp_path / "alice.properties", "PLAIN", "alice", "alice-secret")
    topic = f"denied-{uuid.uuid4().hex[:8]}"
    msg = _timed_failure("topics", "create", topic, "-b", secured["sasl_plaintext"], "--command-config", alice)
    assert msg.startswith(f"kbroker: cannot create topic {topic}: User:alice is not authorized"), msg
    s.ok("topics", "create", topic, "-b", secured["plaintext"])
    msg = _timed_failure("configs", "describe", "--topic", topic, "-b", secured["sasl_plaintext"],
                         "--command-config", alice)
    assert f"topic {topic}: User:alice is not authorized" in msg, msg
    msg = _timed_failure("topics", "describe", topic, "-b", secured["sasl_plaintext"], "--command-config", alice)
    assert msg == f"kbroker: topic {topic}: User:alice is not authorized on this topic (TOPIC_AUTHORIZATION_FAILED)", msg


def test_an_unreadable_command_config_is_a_usage_error(tmp_path):
    r = s.usage_error("topics", "list", "--command-config", str(tmp_path / "missing.properties"))
    assert "cannot read --command-config" in r.stderr and "missing.properties" in r.stderr
