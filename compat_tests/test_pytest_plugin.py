"""The pytest plugin against both targets: the example project's suite
(``examples/pytest_plugin``) run with ``--kbroker-bootstrap`` on a fresh broker of each
target — the plugin's admin requests (create/delete/list topics, list/delete groups) and
the fixtures work on Apache Kafka as on kbroker, so a project can check its suite on both."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "pytest_plugin"


def test_example_suite_on_a_running_broker(broker_factory):
    # a broker of its own: the suite's kbroker_reset deletes every topic of the broker
    broker = broker_factory()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "kbroker.testing.pytest_plugin",
                        "-W", "ignore::DeprecationWarning",
                        "--kbroker-bootstrap", broker.bootstrap_servers],
                       cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "5 passed" in r.stdout, r.stdout[-2000:]
