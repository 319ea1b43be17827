"""Every Apache Kafka broker/controller config key: accepted, typed, validated, listed.

The key set comes from ``kbroker/config/kafka_keys.py`` (generated from Kafka's own ConfigDef by
``tools/gen_broker_configs.py``). Keys kbroker does not act on are accepted and logged once
at start-up; unknown keys stay a start-up error. A stock ``config/server.properties`` of the
Kafka 4.3.1 distribution starts ``kbroker serve``.
"""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kbroker.config.broker import DEFINITIONS, BrokerConfig, ConfigError
from kbroker.config.kafka_keys import BROKER_CONFIGS
from tests.support.broker_proc import REPO_ROOT, free_port, stock_properties


def test_every_kafka_key_is_defined_with_kafkas_update_mode():
    assert len(BROKER_CONFIGS) > 300
    for name, type_, _default, _imp, internal, mode, _validator, _syn in BROKER_CONFIGS:
        d = DEFINITIONS[name]
        assert d.mode == mode and d.read_only == (mode == "read-only") and d.internal == internal
        assert d.sensitive == (type_ == "password")


def test_every_kafka_key_accepts_its_kafka_default(tmp_path):
    """Each key set to Kafka's own default value loads (typed and validated)."""
    for name, _type, default, *_ in BROKER_CONFIGS:
        if default is None or name in ("listeners", "log.dir", "log.dirs", "broker.id"):
            continue
        cfg = BrokerConfig.from_dict({name: default, "log.dirs": str(tmp_path)})
        assert name in cfg.explicit


def test_keys_not_acted_on_are_typed_validated_and_reported(tmp_path):
    cfg = BrokerConfig.from_dict({"log.dirs": str(tmp_path), "replica.fetch.max.bytes": "2097152",
                                  "num.replica.alter.log.dirs.threads": "2",
                                  "ssl.keystore.password": "secret",
                                  "sasl.login.refresh.buffer.seconds": "30",
                                  "listener.name.controller.sasl.kerberos.service.name": "kafka"})
    assert cfg.get("replica.fetch.max.bytes") == 2097152
    assert cfg.get("sasl.login.refresh.buffer.seconds") == 30
    assert "num.replica.alter.log.dirs.threads" in cfg.unused_keys()
    assert "listener.name.controller.sasl.kerberos.service.name" in cfg.unused_keys()
    assert "num.partitions" not in cfg.unused_keys()
    for key, bad in [("replica.fetch.max.bytes", "-1"),            # Kafka: [0,...]
                     ("sasl.login.refresh.buffer.seconds", "70000"),  # a short
                     ("ssl.client.auth", "sometimes"),           # [required, requested, none]
                     ("remote.log.manager.task.retry.jitter", "x"),
                     ("queued.max.request.bytes", "1.5")]:
        with pytest.raises(ConfigError) as e:
            BrokerConfig.from_dict({"log.dirs": str(tmp_path), key: bad})
        assert e.value.key == key


def test_unknown_key_is_an_error_with_a_hint(tmp_path):
    with pytest.raises(ConfigError) as e:
        BrokerConfig.from_dict({"log.dirs": str(tmp_path), "num.partiton": "3"})
    assert e.value.key == "num.partiton"
    assert "unknown configuration key" in str(e.value) and "num.partitions" in str(e.value)


def _stock_copy(tmp_path, extra=""):
    port, cport = free_port(), free_port()
    text = stock_properties(tmp_path / "logs", port, cport)
    path = tmp_path / "server.properties"
    path.write_text(text + extra)
    return path, port


def test_the_stock_copy_keeps_a_client_port_that_contains_the_controller_port(tmp_path):
    # free ports 19093 and 19094 once gave "PLAINTEXT://:119094" (9093 replaced twice)
    text = stock_properties(tmp_path, 19093, 19094)
    assert "listeners=PLAINTEXT://:19093,CONTROLLER://:19094\n" in text
    assert "controller.quorum.bootstrap.servers=localhost:19094\n" in text


def test_stock_server_properties_starts_kbroker(tmp_path):
    path, port = _stock_copy(tmp_path)
    log = open(tmp_path / "kbroker.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "kbroker", "serve", "--config", str(path)],
                            cwd=REPO_ROOT, stderr=log, stdout=log)
    try:
        import time
        deadline = time.monotonic() + 30
        text = ""
        while "kbroker ready" not in text and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            text = Path(log.name).read_text()
        assert "kbroker ready" in text, text
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{port}")
        admin.create_topics([NewTopic("stock", 2, 1)])
        assert "stock" in admin.list_topics()
        admin.close()
        assert (tmp_path / "logs" / "meta.properties").exists()
        # logged once, as information: keys of the stock file kbroker accepts but does not use
        lines = [l for l in text.splitlines() if "accepted but not used" in l]
        assert len(lines) == 1 and "num.network.threads" in lines[0] and " INFO " in lines[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        log.close()


def test_stock_server_properties_with_a_typo_fails(tmp_path):
    path, _ = _stock_copy(tmp_path, "log.retention.hour=24\n")
    r = subprocess.run([sys.executable, "-m", "kbroker", "serve", "--config", str(path)],
                       cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "log.retention.hour: unknown configuration key" in r.stderr
    assert "did you mean log.retention.hours" in r.stderr
