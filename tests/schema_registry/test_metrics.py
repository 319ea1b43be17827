"""The registry's counters on the broker's ``/metrics`` (the HTTP listener the test
broker always has): requests by method and status, latency, subjects and schemas."""
from __future__ import annotations

import re
import urllib.request

from .conftest import avro_record


def scrape(registry) -> str:
    with urllib.request.urlopen(registry.broker.metrics_url, timeout=30) as r:
        return r.read().decode()


def sample(text: str, name: str, **labels) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = rf"^{re.escape(name)}{re.escape('{' + want + '}') if want else ''} (\S+)$"
    m = re.search(pattern, text, re.M)
    assert m, f"{name} {labels} not in /metrics"
    return float(m.group(1))


def test_requests_and_state_are_counted(registry, subject):
    before = scrape(registry)
    base_404 = (sample(before, "kbroker_schema_registry_requests_total", method="GET", status="404")
                if 'method="GET",status="404"' in before else 0)
    registry.call("POST", f"/subjects/{subject}/versions", {"schema": avro_record("M", ("m", "int"))})
    registry.call("GET", f"/subjects/{subject}-missing/versions")
    text = scrape(registry)
    assert sample(text, "kbroker_schema_registry_requests_total", method="POST", status="200") >= 1
    assert sample(text, "kbroker_schema_registry_requests_total", method="GET", status="404") == base_404 + 1
    assert sample(text, "kbroker_schema_registry_subjects") >= 1
    assert sample(text, "kbroker_schema_registry_max_id") >= 1
    assert sample(text, "kbroker_schema_registry_registered_total") >= 1
    assert sample(text, "kbroker_schema_registry_request_seconds_count") >= 2
