"""Fixtures of the schema registry tests: a real ``kbroker serve`` with the registry on a
free port (``registry``: one per module), and ``call`` — one HTTP request with
``http.client`` answering ``(status, decoded JSON or text)``."""
from __future__ import annotations

import http.client
import json
import uuid

import pytest

from kbroker.testing.processes import KbrokerProcess, free_port

CT = "application/vnd.schemaregistry.v1+json"


class Registry:
    def __init__(self, broker: KbrokerProcess, port: int):
        self.broker = broker
        self.port = port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def call(self, method: str, path: str, body=None, *, content_type: str | None = CT,
             raw: bytes | None = None, headers: dict | None = None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            h = dict(headers or {})
            if content_type and data is not None:
                h["Content-Type"] = content_type
            conn.request(method, path, body=data, headers=h)
            resp = conn.getresponse()
            text = resp.read().decode()
            try:
                value = json.loads(text)
            except ValueError:
                value = text
            return resp.status, value
        finally:
            conn.close()


def start_registry(data_dir, overrides: dict | None = None) -> Registry:
    port = free_port()
    broker = KbrokerProcess(data_dir, {"kbroker.schema.registry.listen": f"127.0.0.1:{port}",
                                       **(overrides or {})})
    broker.start()
    return Registry(broker, port)


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    reg = start_registry(tmp_path_factory.mktemp("sr") / "data")
    try:
        yield reg
    finally:
        reg.broker.stop()


@pytest.fixture
def subject():
    return f"s-{uuid.uuid4().hex[:10]}"


def avro_record(name: str, *fields: tuple[str, str], **defaults) -> str:
    """An Avro record schema's text: fields (name, type), optional defaults by field name."""
    fs = []
    for n, t in fields:
        f = {"name": n, "type": t}
        if n in defaults:
            f["default"] = defaults[n]
        fs.append(f)
    return json.dumps({"type": "record", "name": name, "fields": fs})
