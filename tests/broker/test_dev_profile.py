"""The local-development profile (``kbroker serve --dev``, ``make run``) and kbroker's own
default data directory (never Kafka's ``/tmp/kafka-logs``)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from kbroker.tools.cli import _parser, build_config
from tests.support.broker_proc import REPO_ROOT, free_port


def config(*argv):
    return build_config(_parser().parse_args(["serve", *argv]))


def test_dev_sets_rebalance_delay_0_and_data_in_project_folder():
    c = config("--dev")
    assert c.get("group.initial.rebalance.delay.ms") == 0
    assert c.log_dirs == ["data"]    # ./data, relative to the working directory


def test_dev_gives_way_to_explicit_settings(tmp_path):
    c = config("--dev", "--data-dir", str(tmp_path / "d"), "--override", "group.initial.rebalance.delay.ms=250")
    assert c.log_dirs == [str(tmp_path / "d")] and c.get("group.initial.rebalance.delay.ms") == 250
    props = tmp_path / "server.properties"
    props.write_text(f"log.dir={tmp_path / 'from-file'}\ngroup.initial.rebalance.delay.ms=100\n")
    c = config("--dev", "--config", str(props))
    assert c.log_dirs == [str(tmp_path / "from-file")] and c.get("group.initial.rebalance.delay.ms") == 100


def test_without_dev_kafka_defaults_and_not_kafkas_data_dir():
    c = config()
    assert c.get("group.initial.rebalance.delay.ms") == 3000     # Kafka's default
    assert c.log_dirs == ["/tmp/kbroker-logs"] and c.log_dirs != ["/tmp/kafka-logs"]


def test_dev_broker_process_keeps_data_in_cwd_and_reports_the_delay(tmp_path):
    """A real `kbroker serve --dev` (what `make run` starts), in a scratch project folder."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    log = open(tmp_path / "out.txt", "wb")
    p = subprocess.Popen([sys.executable, "-m", "kbroker", "serve", "--dev", "--port", str(port),
                          "--rest-proxy", "127.0.0.1:0"],   # not 8082: tests run side by side
                         cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        from tests.cluster.support import wait_for
        wait_for(lambda: "kbroker ready:" in (tmp_path / "out.txt").read_text(errors="replace"),
                 timeout=60, what="the ready line")
        assert (tmp_path / "data" / "meta.properties").exists()
        r = subprocess.run([sys.executable, "-m", "kbroker", "configs", "describe", "--broker", "1",
                            "-b", f"127.0.0.1:{port}", "--json"], capture_output=True, text=True,
                           env=env, timeout=60)
        rows = {row["name"]: row for row in json.loads(r.stdout)}
        assert rows["group.initial.rebalance.delay.ms"]["value"] == "0"
        assert rows["log.dirs"]["value"] in ("./data", "data")
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)
        log.close()


def test_dev_with_a_missing_config_file_is_a_configuration_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "kbroker", "serve", "--dev", "--config",
                        str(tmp_path / "missing.properties"), "--port", "0"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert r.returncode == 2 and "missing.properties" in r.stderr and "Traceback" not in r.stderr
