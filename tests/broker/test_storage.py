"""``kbroker storage`` (Kafka's kafka-storage verbs), the start-up rules for formatted and
unformatted data directories, clear quorum errors and shutdown before ready — on real
processes and real files."""
from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compat_tests import cli_fork
from kbroker.metadata.storage_format import (BOOTSTRAP_FILE, METADATA_VERSIONS, StorageError, bootstrap_bytes,
                                             check_bootstrap, default_features, parse_release_version,
                                             read_bootstrap)
from tests.support.broker_proc import BrokerProcess, free_port

REPO = Path(__file__).resolve().parents[2]


def kbroker(*args):
    """``python -m kbroker storage ...``, forked from the test process's resident Python
    (compat_tests/cli_fork.py); a node's ``serve`` starts a fresh interpreter below."""
    return cli_fork.kbroker(*args, cwd=REPO)


def write_props(path: Path, **values) -> Path:
    path.write_text("".join(f"{k.replace('_', '.')}={v}\n" for k, v in values.items()))
    return path


def combined(tmp_path: Path, node_id: int = 1, voters: dict | None = None, port=None, cport=None,
             name="server.properties", **extra) -> Path:
    port = port or free_port()
    cport = cport or free_port()
    voters = voters or {node_id: cport}
    props = {"process.roles": "broker,controller", "node.id": node_id,
             "controller.quorum.voters": ",".join(f"{i}@127.0.0.1:{p}" for i, p in voters.items()),
             "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
             "controller.listener.names": "CONTROLLER",
             "log.dirs": str(tmp_path / f"logs-{node_id}"), **extra}
    path = tmp_path / name
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def test_random_uuid_is_a_kafka_cluster_id():
    out = kbroker("storage", "random-uuid")
    assert out.returncode == 0
    cid = out.stdout.strip()
    assert len(cid) == 22 and not cid.startswith("-")
    assert len(base64.urlsafe_b64decode(cid + "==")) == 16


def test_format_info_and_already_formatted(tmp_path):
    cfg = combined(tmp_path, **{"log.dirs": f"{tmp_path}/a,{tmp_path}/b"})
    cid = kbroker("storage", "random-uuid").stdout.strip()
    out = kbroker("storage", "format", "-t", cid, "-c", str(cfg))
    assert out.returncode == 0, out.stderr
    assert f"Formatting metadata directory {tmp_path}/a with metadata.version 4.4-IV2." in out.stdout
    assert f"Formatting data directory {tmp_path}/b" in out.stdout
    for d in ("a", "b"):
        meta = (tmp_path / d / "meta.properties").read_text()
        assert f"cluster.id={cid}" in meta and "node.id=1" in meta and "version=1" in meta
    assert (tmp_path / "a" / BOOTSTRAP_FILE).exists()
    assert not (tmp_path / "b" / BOOTSTRAP_FILE).exists()
    again = kbroker("storage", "format", "-t", cid, "-c", str(cfg))
    assert again.returncode == 1
    assert f"Log directory {tmp_path}/a is already formatted" in again.stderr
    assert kbroker("storage", "format", "-t", cid, "-c", str(cfg), "--ignore-formatted").returncode == 0
    info = kbroker("storage", "info", "-c", str(cfg))
    assert info.returncode == 0, info.stdout
    assert f"cluster.id={cid}" in info.stdout and "node.id=1" in info.stdout


def test_format_takes_a_cluster_id_that_starts_with_a_dash(tmp_path):
    """A base64url id may begin with ``-``; ``-t -x…`` must not be read as an unknown option."""
    cfg = combined(tmp_path)
    out = kbroker("storage", "format", "-t", "-q1Sh9_ISia_zwGINzRvyQ", "-c", str(cfg))
    assert out.returncode == 0, out.stderr
    assert "cluster.id=-q1Sh9_ISia_zwGINzRvyQ" in (tmp_path / "logs-1" / "meta.properties").read_text()


def test_info_reports_an_unformatted_directory(tmp_path):
    cfg = combined(tmp_path)
    (tmp_path / "logs-1").mkdir()
    info = kbroker("storage", "info", "-c", str(cfg))
    assert info.returncode == 1
    assert "is not formatted" in info.stdout


@pytest.mark.parametrize("args, message", [
    (["--standalone"], "static quorum of controller.quorum.voters"),
    (["--initial-controllers", "1@127.0.0.1:9093:AAAAAAAAAAAAAAAAAAAAAA"], "static quorum"),
    (["--release-version", "4.5"], "Unknown metadata.version '4.5'"),
    (["--feature", "metadata.version=34"], "metadata.version 34 (34) is not served"),
    (["--release-version", "2.8"], "Unknown metadata.version '2.8'"),
    (["--feature", "transaction.version=3"], "transaction.version=3 is not served"),
    (["--add-scram", "SCRAM-SHA-1=[name=a,password=b]"], "unknown SCRAM mechanism"),   # served: tests/security
    (["--add-scram", "SCRAM-SHA-256=[name=a,iterations=10,password=b]"], "iterations"),
])
def test_format_refuses_what_kbroker_does_not_serve(tmp_path, args, message):
    cfg = combined(tmp_path)
    out = kbroker("storage", "format", "-t", "q1Sh-9_ISia_zwGINzRvyQ", "-c", str(cfg), *args)
    assert out.returncode == 1
    assert message in out.stderr
    assert not (tmp_path / "logs-1" / "meta.properties").exists()


def dynamic_controller(tmp_path: Path, node_id: int = 1, cport: int = 19093) -> Path:
    return write_props(tmp_path / f"c{node_id}.properties", process_roles="controller", node_id=node_id,
                       listeners=f"CONTROLLER://127.0.0.1:{cport}", controller_listener_names="CONTROLLER",
                       controller_quorum_bootstrap_servers=f"127.0.0.1:{cport}",
                       log_dirs=tmp_path / f"dyn-{node_id}")


def test_format_standalone_writes_the_voters_checkpoint_as_kafka(tmp_path):
    """KIP-853: the 0-0 checkpoint holds kraft.version 1 and this controller as the only
    voter, with the directory id of its meta.properties (Kafka's layout; compat_tests check
    that each broker starts on the other's directory)."""
    from kbroker.config.broker import parse_properties
    from kbroker.metadata.storage_format import VOTERS_CHECKPOINT, read_voters_checkpoint
    cfg = dynamic_controller(tmp_path)
    assert kbroker("storage", "format", "-t", "q1Sh-9_ISia_zwGINzRvyQ", "-c", str(cfg)).returncode == 1
    out = kbroker("storage", "format", "-t", "q1Sh-9_ISia_zwGINzRvyQ", "-c", str(cfg), "--standalone")
    assert out.returncode == 0, out.stderr
    assert "Formatting dynamic metadata voter directory" in out.stdout
    d = tmp_path / "dyn-1"
    assert (d / "__cluster_metadata-0" / VOTERS_CHECKPOINT).exists()
    dir_id = parse_properties((d / "meta.properties").read_text())["directory.id"]
    [(vid, voter)] = read_voters_checkpoint(d).items()
    assert (vid, voter.directory_id, voter.endpoints) == (1, dir_id, (("CONTROLLER", "127.0.0.1", 19093),))


def test_format_initial_controllers_and_no_initial_controllers(tmp_path):
    from kbroker.config.broker import parse_properties
    from kbroker.metadata.storage_format import read_voters_checkpoint
    ids = {i: kbroker("storage", "random-uuid").stdout.strip() for i in (1, 2, 3)}
    spec = ",".join(f"{i}@127.0.0.1:{19092 + i}:{ids[i]}" for i in (1, 2, 3))
    cfg = dynamic_controller(tmp_path, 2, 19094)
    out = kbroker("storage", "format", "-t", "q1Sh-9_ISia_zwGINzRvyQ", "-c", str(cfg),
                  "--initial-controllers", spec)
    assert out.returncode == 0, out.stderr
    d = tmp_path / "dyn-2"
    assert parse_properties((d / "meta.properties").read_text())["directory.id"] == ids[2]
    voters = read_voters_checkpoint(d)
    assert {v: (x.directory_id, x.endpoints[0]) for v, x in voters.items()} == {
        i: (ids[i], ("CONTROLLER", "127.0.0.1", 19092 + i)) for i in (1, 2, 3)}
    bad = kbroker("storage", "format", "-t", "q1Sh-9_ISia_zwGINzRvyQ", "-c",
                  str(dynamic_controller(tmp_path, 4)), "--initial-controllers", "4@127.0.0.1:1")
    assert bad.returncode == 1 and "id@host:port:directoryId" in bad.stderr
    joiner = dynamic_controller(tmp_path, 5)
    out = kbroker("storage", "format", "-t", "q1Sh-9_ISia_zwGINzRvyQ", "-c", str(joiner),
                  "--no-initial-controllers")
    assert out.returncode == 0, out.stderr
    assert read_voters_checkpoint(tmp_path / "dyn-5") is None


def test_format_refuses_a_bad_cluster_id(tmp_path):
    out = kbroker("storage", "format", "-t", "not-a-uuid", "-c", str(combined(tmp_path)))
    assert out.returncode == 1 and "cluster.id" in out.stderr


def test_release_versions():
    assert parse_release_version("4.0") == 25
    assert parse_release_version("4.0-IV1") == 23
    assert parse_release_version("3.3") == 7
    assert METADATA_VERSIONS["4.3-IV0"] == 30
    with pytest.raises(StorageError):
        parse_release_version("3.2")


def test_new_clusters_are_formatted_with_transaction_version_2():
    # as Kafka 4: KIP-890's second phase from metadata.version 4.0-IV2; a 3.9 cluster keeps TV1
    assert default_features(None, [])["transaction.version"] == 2
    assert default_features("3.9", []).get("transaction.version", 0) == 0
    assert default_features(None, ["transaction.version=0"])["transaction.version"] == 0


def test_bootstrap_file_round_trip_and_clamping(tmp_path):
    (tmp_path / BOOTSTRAP_FILE).write_bytes(bootstrap_bytes(
        {"metadata.version": 34, "group.version": 1, "kraft.version": 0}, 0))
    raw = {r.name: r.feature_level for r in read_bootstrap(tmp_path / BOOTSTRAP_FILE)}
    assert raw == {"metadata.version": 34, "group.version": 1}
    # levels above what kbroker serves are finalized at kbroker's (features it lacks: dropped)
    checked = {r.name: r.feature_level for r in check_bootstrap(tmp_path)}
    assert checked == {"metadata.version": 33, "group.version": 1}
    (tmp_path / BOOTSTRAP_FILE).write_bytes(bootstrap_bytes({"metadata.version": 5}, 0))
    with pytest.raises(StorageError, match="below what kbroker serves"):
        check_bootstrap(tmp_path)
    assert check_bootstrap(tmp_path / "nowhere") is None


def _finalized_features(port: int) -> tuple[dict[str, int], int]:
    """(finalized feature levels, the error of a ConsumerGroupHeartbeat join)."""
    import trio

    from tests.broker.raw import RawClient

    async def ask():
        client = await RawClient.connect(port)
        try:
            resp = await client.request("ApiVersions", 3, client_software_name="t",
                                        client_software_version="1")
            hb = await client.request("ConsumerGroupHeartbeat", 0, group_id="g", member_id="",
                                      member_epoch=0, rebalance_timeout_ms=30000,
                                      subscribed_topic_names=["t"], topic_partitions=[])
        finally:
            await client.aclose()
        return {f.name: f.max_version_level for f in resp.finalized_features}, hb.error_code

    return trio.run(ask)


def _finalized_metadata_version(port: int) -> int:
    return _finalized_features(port)[0]["metadata.version"]


def test_default_features_finalize_group_version_from_4_0():
    def written(features):                      # level 0 is not written to the bootstrap
        return {k: v for k, v in features.items() if v}
    assert written(default_features(None, [])) == {"metadata.version": 33, "group.version": 1,
                                                   "transaction.version": 2,
                                                   "share.version": 2, "streams.version": 1,
                                                   "eligible.leader.replicas.version": 1}
    assert written(default_features("3.9", [])) == {"metadata.version": 21}
    assert default_features(None, ["group.version=0"])["group.version"] == 0


def _share_heartbeat_error(port: int) -> int:
    import trio

    from tests.broker.raw import RawClient

    async def ask():
        client = await RawClient.connect(port)
        try:
            resp = await client.request("ShareGroupHeartbeat", 1, group_id="g", member_id="m",
                                        member_epoch=0, rack_id=None,
                                        subscribed_topic_names=["t"])
        finally:
            await client.aclose()
        return resp.error_code

    return trio.run(ask)


def _unregister_controller(port: int, controller_id: int) -> tuple[int, str | None]:
    import trio

    from tests.broker.raw import RawClient

    async def ask():
        client = await RawClient.connect(port)
        try:
            resp = await client.request("UnregisterController", 0, controller_id=controller_id)
        finally:
            await client.aclose()
        return resp.error_code, resp.error_message

    return trio.run(ask)


def test_default_features_finalize_share_version_as_kafka_4_4():
    from kbroker.metadata.storage_format import default_features
    assert default_features(None, [])["share.version"] == 2           # Kafka 4.4's SV_2 (KIP-1191)
    assert default_features(None, ["share.version=1"])["share.version"] == 1
    assert default_features("3.9", [])["share.version"] == 0
    assert default_features("3.9", ["share.version=1"])["share.version"] == 1
    # streams.version 1 (KIP-1071) is Kafka 4.3's latest production level too
    assert default_features(None, [])["streams.version"] == 1
    assert default_features("3.9", [])["streams.version"] == 0


def test_a_formatted_directory_starts_with_its_cluster_id_and_features(tmp_path):
    port = free_port()
    cfg = combined(tmp_path, port=port)
    cid = kbroker("storage", "random-uuid").stdout.strip()
    assert kbroker("storage", "format", "-t", cid, "-c", str(cfg),
                   "--release-version", "3.9").returncode == 0
    proc = BrokerProcess(tmp_path / "logs-1", port=port, config_file=cfg)
    proc.command = lambda: [sys.executable, "-m", "kbroker", "serve", "--config", str(cfg)]
    proc.start()
    try:
        assert f"cluster {cid}" in proc.log_text()
        features, hb_error = _finalized_features(port)
        assert features == {"metadata.version": 21}        # 3.9-IV0: no group.version
        assert hb_error == 35                              # UNSUPPORTED_VERSION, as Kafka
        # Kafka 4.3 formats 3.9 without share.version: share groups are refused
        assert _share_heartbeat_error(port) == 35          # UNSUPPORTED_VERSION
        # controllers are unregistered from 4.4-IV2 only (F-964): below, Kafka 4.4 refuses
        assert _unregister_controller(port, 2) == (
            35, "The current MetadataVersion is too old to support controller unregistration.")
        # ... after refusing the active controller itself, whatever the level
        assert _unregister_controller(port, 1)[0] == 42    # INVALID_REQUEST
    finally:
        proc.stop()


def test_an_unformatted_node_of_a_quorum_refuses_to_start(tmp_path):
    cfg = combined(tmp_path, voters={1: free_port(), 2: free_port()})
    out = subprocess.run([sys.executable, "-m", "kbroker", "serve", "--config", str(cfg)], capture_output=True,
                         text=True, timeout=60, cwd=REPO)
    assert out.returncode == 2
    assert "is not formatted" in out.stderr and "kbroker storage format" in out.stderr
    assert not (tmp_path / "logs-1" / "meta.properties").exists()


def test_a_single_combined_node_still_formats_itself(tmp_path):
    port = free_port()
    cfg = combined(tmp_path, port=port)
    proc = BrokerProcess(tmp_path / "logs-1", port=port, config_file=cfg)
    proc.command = lambda: [sys.executable, "-m", "kbroker", "serve", "--config", str(cfg)]
    proc.start()
    proc.stop()
    assert "cluster.id=" in (tmp_path / "logs-1" / "meta.properties").read_text()


def _start(cmd, log_path):
    with open(log_path, "wb") as out:
        return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                                start_new_session=True)


def _wait_for(path: Path, text: str, timeout: float = 30.0, count: int = 1) -> bool:
    """Whether ``text`` shows ``count`` times in the file within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.read_text(errors="replace").count(text) >= count:
            return True
        time.sleep(0.1)
    return False


def test_sigterm_stops_a_broker_that_never_reached_its_controllers(tmp_path):
    cfg = write_props(tmp_path / "broker.properties", **{
        "process_roles": "broker", "node_id": 3,
        "controller_quorum_voters": f"1@127.0.0.1:{free_port()},2@127.0.0.1:{free_port()}",
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}", "log_dirs": tmp_path / "logs",
        "cluster_id": "q1Sh-9_ISia_zwGINzRvyQ"})
    log_path = tmp_path / "broker.log"
    proc = _start([sys.executable, "-m", "kbroker", "serve", "--config", str(cfg)], log_path)
    try:
        # the unreachable voter is named once, with what to check
        assert _wait_for(log_path, "cannot reach voter"), log_path.read_text()
        assert "controller.quorum.voters" in log_path.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = log_path.read_text()
    assert "stopping before the broker was ready (waiting for the metadata quorum)" in text
    assert text.count("cannot reach voter") <= 2          # once per voter, not once per retry


def test_nodes_of_different_clusters_say_so_once(tmp_path):
    ports = {1: free_port(), 2: free_port()}
    logs = []
    procs = []
    try:
        for node, cid in ((1, "q1Sh-9_ISia_zwGINzRvyQ"), (2, "WCoy5lgRRHuQMfre-BXDYQ")):
            cfg = combined(tmp_path, node_id=node, voters=ports, cport=ports[node],
                           name=f"node{node}.properties", **{"cluster.id": cid})
            logs.append(tmp_path / f"node{node}.log")
            # DEBUG: node 1's log shows each Vote it sends, so the test can count rounds
            procs.append(_start([sys.executable, "-m", "kbroker", "serve", "--config", str(cfg),
                                 "--log-level", "DEBUG" if node == 1 else "INFO"], logs[-1]))
        assert _wait_for(logs[0], "refused with INCONSISTENT_CLUSTER_ID"), logs[0].read_text()
        assert "format every node with the same id" in logs[0].read_text()
        # the receiving side names the foreign cluster too
        assert _wait_for(logs[1], "called this node of cluster WCoy5lgRRHuQMfre-BXDYQ")
        # two more election rounds after the refusal: still one line each
        sent = logs[0].read_text().count("raft: node 1 -> 2: VoteRequest")
        assert _wait_for(logs[0], "raft: node 1 -> 2: VoteRequest", count=sent + 2), \
            logs[0].read_text()
        assert logs[0].read_text().count("refused with INCONSISTENT_CLUSTER_ID") == 1
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            assert p.wait(timeout=30) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)


@pytest.mark.parametrize("listeners, advertised, want", [
    ("PLAINTEXT://:19092,CONTROLLER://:9093", None, ("CONTROLLER", "kb2", 9093)),
    ("PLAINTEXT://:19092,CONTROLLER://0.0.0.0:9093", None, ("CONTROLLER", "kb2", 9093)),
    ("PLAINTEXT://:19092,CONTROLLER://10.0.0.2:9094", None, ("CONTROLLER", "10.0.0.2", 9094)),
    ("PLAINTEXT://:19092,CONTROLLER://:9093", "PLAINTEXT://kb2:19092,CONTROLLER://adv:9999",
     ("CONTROLLER", "adv", 9999)),
])
def test_the_controller_endpoint_a_node_announces(listeners, advertised, want):
    """What a leader announces (KIP-853) and followers fetch from, by Kafka's rule
    (effectiveAdvertisedControllerListeners): the advertised entry, else the bound listener,
    whose wildcard host gives way to the node's own controller.quorum.voters entry (a
    container's ``CONTROLLER://:9093`` must not announce an address only it can reach)."""
    from kbroker.config.broker import BrokerConfig
    from kbroker.metadata.storage_format import controller_listener
    props = {"node.id": "2", "process.roles": "broker,controller", "listeners": listeners,
             "controller.listener.names": "CONTROLLER",
             "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
             "controller.quorum.voters": "1@kb1:9093,2@kb2:9093"}
    if advertised:
        props["advertised.listeners"] = advertised
    assert controller_listener(BrokerConfig.from_dict(props)) == want
