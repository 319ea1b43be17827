"""``kbroker storage format --add-scram`` (Kafka's ``kafka-storage format --add-scram``): the
credentials exist from the first start, before any admin call; a bad spec names the flag."""
from __future__ import annotations

import uuid

from confluent_kafka import Producer

from compat_tests import cli_fork
from tests.security.conftest import ListenersProcess, security_overrides
from tests.security.certs import make_pki
from tests.support.broker_proc import REPO_ROOT, free_port


def _format(config, *args):
    from kbroker.config.broker import new_cluster_id
    # "--cluster-id=" form: a random id may start with "-", which argparse takes for an option
    return cli_fork.kbroker("storage", "format", f"--cluster-id={new_cluster_id()}", "-c", str(config), *args,
                            cwd=REPO_ROOT)


def test_format_add_scram_then_authenticate(tmp_path):
    pki = make_pki(tmp_path)
    ports = {"SASL_SSL": free_port(), "SASL_PLAINTEXT": free_port(), "SSL": free_port()}
    port = free_port()
    overrides = security_overrides(pki, ports, port)
    data = tmp_path / "data"
    cfg = tmp_path / "server.properties"
    cfg.write_text("".join(f"{k}={v}\n" for k, v in overrides.items()) + f"log.dirs={data}\n")
    r = _format(cfg, "--add-scram", "SCRAM-SHA-512=[name=boot,password=boot-pw]",
                "--add-scram", "SCRAM-SHA-256=[name=boot2,iterations=8192,password=\"p,w\"]")
    assert r.returncode == 0, r.stderr
    assert b"boot-pw" not in (data / "bootstrap.checkpoint").read_bytes()
    assert _format(cfg).returncode == 1            # already formatted, as kafka-storage says
    proc = ListenersProcess(data, port=port, overrides=overrides)
    proc.start()
    try:
        for mech, user, pw in (("SCRAM-SHA-512", "boot", "boot-pw"), ("SCRAM-SHA-256", "boot2", "p,w")):
            p = Producer({"bootstrap.servers": f"127.0.0.1:{ports['SASL_SSL']}",
                          "security.protocol": "SASL_SSL", "sasl.mechanism": mech,
                          "sasl.username": user, "sasl.password": pw, "ssl.ca.location": str(pki.ca)})
            p.produce(f"fmt-{uuid.uuid4().hex[:6]}", b"x")
            assert p.flush(30) == 0
    finally:
        proc.stop()


def test_bad_add_scram_spec(tmp_path):
    cfg = tmp_path / "server.properties"
    cfg.write_text(f"log.dirs={tmp_path / 'd'}\n")
    for spec in ("SCRAM-SHA-1=[name=a,password=b]", "SCRAM-SHA-256=[password=b]",
                 "SCRAM-SHA-256=[name=a,iterations=10,password=b]", "nonsense"):
        r = _format(cfg, "--add-scram", spec)
        assert r.returncode == 1 and "--add-scram" in r.stderr, (spec, r.stderr)
