"""README.md's "Schema registry" section runs as written: its Avro producer/consumer
block, with the broker and registry addresses of this test's ``kbroker serve``."""
from __future__ import annotations

import re
import subprocess
import sys

from tests.broker.test_readme import README, blocks


def section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_readme_avro_producer_and_consumer_run_as_written(registry):
    text = section(README.read_text(), "Schema registry")
    python = [code for _, code, _ in blocks(text) if code.startswith("from confluent_kafka")]
    assert len(python) == 1
    code = (python[0].replace("127.0.0.1:9092", registry.broker.bootstrap_servers)
            .replace("http://127.0.0.1:8081", registry.url))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "{'text': 'hello', 'n': 1}" in r.stdout
    # the schema it registered is served under the topic's value subject
    status, latest = registry.call("GET", "/subjects/greetings-value/versions/latest")
    assert status == 200 and re.search(r'"name":"Greeting"', latest["schema"])


def test_readme_curl_line_registers(registry):
    text = section(README.read_text(), "Schema registry")
    [sh] = [code for _, code, _ in blocks(text) if "curl" in code]
    curl = " ".join(line.rstrip("\\").strip() for line in sh.splitlines()
                    if not line.startswith("python")).replace("localhost:8081", registry.url)
    r = subprocess.run(["bash", "-c", curl], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and '"id"' in r.stdout, (r.stdout, r.stderr)
