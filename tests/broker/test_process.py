"""The real ``python -m kbroker serve``: startup errors, restart and crash persistence."""
import subprocess
import sys

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from tests.support.broker_proc import REPO_ROOT, BrokerProcess


def run_cli(*args, timeout=30):
    return subprocess.run([sys.executable, "-m", "kbroker", *args], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args, key", [
    (["--override", "no.such.key=1"], "no.such.key"),
    (["--override", "num.partitions=zero"], "num.partitions"),
    (["--override", "num.partitions=0"], "num.partitions"),
    (["--override", "auto.create.topics.enable=maybe"], "auto.create.topics.enable"),
    (["--override", "listeners=SSL://127.0.0.1:9093"], "ssl.keystore.location"),  # TLS without a keystore
    (["--override", "listeners=nonsense"], "listeners"),
    (["--override", "log.cleanup.policy=sometimes"], "log.cleanup.policy"),
    (["--override", "advertised.listeners=PLAINTEXT://0.0.0.0:9092"], "advertised.listeners"),
])
def test_config_errors_exit_2_naming_the_key(tmp_path, args, key):
    port = [] if "listeners" in key or "ssl" in key else ["--port", "0"]   # --port would replace listeners
    r = run_cli("serve", "--data-dir", str(tmp_path / "d"), *port, *args)
    assert r.returncode == 2, r.stderr
    assert key in r.stderr


def test_config_file_error(tmp_path):
    cfg = tmp_path / "server.properties"
    cfg.write_text("# comment\nnum.partitions=3\nlog.segment.bytes=big\n")
    r = run_cli("serve", "--config", str(cfg), "--data-dir", str(tmp_path / "d"), "--port", "0")
    assert r.returncode == 2 and "log.segment.bytes" in r.stderr
    r = run_cli("serve", "--config", str(tmp_path / "missing.properties"), "--port", "0")
    assert r.returncode == 2 and "missing.properties" in r.stderr


def test_cluster_id_mismatch(tmp_path):
    proc = BrokerProcess(tmp_path / "data")
    proc.start()
    proc.stop()
    r = run_cli("serve", "--data-dir", str(tmp_path / "data"), "--port", "0",
                "--override", "cluster.id=MkU3OEVBNTcwNTJENDM2Qk")
    assert r.returncode == 2 and "cluster.id" in r.stderr


def test_ready_line_and_graceful_stop(kbroker_proc):
    text = kbroker_proc.log_text()
    assert f"kbroker ready: listening on PLAINTEXT://127.0.0.1:{kbroker_proc.port} (node 1, cluster " in text
    assert kbroker_proc.stop() == 0
    assert (kbroker_proc.data_dir / ".kafka_cleanshutdown").exists()


@pytest.mark.parametrize("crash", [False, True], ids=["graceful", "sigkill"])
def test_metadata_survives_restart(kbroker_proc, crash):
    admin = KafkaAdminClient(bootstrap_servers=kbroker_proc.bootstrap)
    admin.create_topics([NewTopic("keep", 3, 1, topic_configs={"retention.ms": "12345"}),
                         NewTopic("gone", 1, 1)])
    admin.delete_topics(["gone"])
    before = admin.describe_topics(["keep"])[0]
    admin.close()
    cluster_id = (kbroker_proc.data_dir / "meta.properties").read_text()
    kbroker_proc.restart(crash=crash)
    if not crash:
        assert "clean shutdown before: True" in kbroker_proc.log_text()
    admin = KafkaAdminClient(bootstrap_servers=kbroker_proc.bootstrap)
    assert set(admin.list_topics()) == {"keep"}
    after = admin.describe_topics(["keep"])[0]
    assert after["topic_id"] == before["topic_id"]
    assert len(after["partitions"]) == 3
    admin.close()
    assert (kbroker_proc.data_dir / "meta.properties").read_text() == cluster_id
    # producer ids never repeat across restarts
    from kafka import KafkaProducer
    p = KafkaProducer(bootstrap_servers=kbroker_proc.bootstrap, enable_idempotence=True)
    p.send("keep", b"v").get(timeout=20)
    p.close()


def test_producer_ids_unique_across_restarts(tmp_path):
    import trio
    from kbroker.wire import messages
    from tests.broker.raw import RawClient

    proc = BrokerProcess(tmp_path / "data")

    async def ids(n):
        c = await RawClient.connect(proc.port)
        out = []
        for _ in range(n):
            r = await c.request("InitProducerId", 4, transactional_id=None, transaction_timeout_ms=60000)
            assert r.error_code == 0 and r.producer_epoch == 0
            out.append(r.producer_id)
        await c.aclose()
        return out

    proc.start()
    first = trio.run(ids, 5)
    proc.restart(crash=True)
    second = trio.run(ids, 5)
    proc.stop()
    assert len(set(first + second)) == 10
    assert min(second) > max(first)
