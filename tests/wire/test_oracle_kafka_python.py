"""An independent oracle: kafka-python 3.x's own schema-driven codec.

kafka-python 3.0.12 declares each API as one ``ApiMessage`` subclass loaded from its own
copy of Kafka's JSON definitions (``kafka/protocol/schemas/resources``) and compiles its
own per-version encoders and decoders. For every API and version both sides know, for
requests and responses alike:

- kafka-python decodes what kbroker encodes, and every field matches;
- kafka-python re-encodes that object to exactly kbroker's bytes;
- kbroker decodes the bytes kafka-python encodes back to the original object.

kafka-python's representation differs in a few documented ways, mapped here: the zero
UUID is ``None``; ``authorized_operations`` fields are patched to sets of bit numbers
(``None`` for Kafka's "not requested" value, bit 31 alone).
"""
from __future__ import annotations

import uuid
import warnings

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kbroker.wire import messages, protocol
from kbroker.wire.codegen import Message

from .test_codec_roundtrip import message_strategy

with warnings.catch_warnings():  # kafka-python loads its schemas with a deprecated importlib API
    warnings.simplefilter("ignore", DeprecationWarning)
    kp_message = pytest.importorskip("kafka.protocol.api_message")
    import kafka.protocol.admin  # noqa: F401  (importing registers the classes)
    import kafka.protocol.consumer  # noqa: F401
    import kafka.protocol.metadata  # noqa: F401
    import kafka.protocol.producer  # noqa: F401
    import kafka.protocol.sasl  # noqa: F401

ZERO = uuid.UUID(int=0)


def kafka_python_classes() -> dict[str, type]:
    found: dict[str, type] = {}

    def walk(c):
        for sub in c.__subclasses__():
            if getattr(sub, "_class_version", None) is None and getattr(sub, "_json", None):
                found.setdefault(sub.name, sub)
            walk(sub)
    walk(kp_message.ApiMessage)
    return found


KP = kafka_python_classes()
# Newer than the pinned definitions: API 74 is ListClientMetricsResources there; Kafka 4.1
# renamed and widened it (KIP-1142), and kafka-python follows the newer name and fields.
NEWER_THAN_REFERENCE = {"ListConfigResourcesRequest", "ListConfigResourcesResponse"}
# Older than the pinned definitions: Kafka 4.4 renamed these fields (same wire type and
# versions); kafka-python still uses the earlier names.
OLDER_NAMES = {"generation_id_or_member_epoch": "generation_id"}


def common_versions(name: str) -> list[int]:
    kp = KP[name]
    lo, hi = kp._valid_versions
    ours = messages.specs()[name].valid
    return [v for v in range(max(lo, ours.low), min(hi, ours.high) + 1)]


CASES = sorted((name, v) for name in KP if name in messages.specs() for v in common_versions(name))


def test_oracle_covers_every_api_kafka_python_knows():
    assert len(KP) >= 100
    missing = sorted(n for n in KP if n not in messages.specs() and n not in NEWER_THAN_REFERENCE)
    assert not missing, f"kafka-python knows messages kbroker does not: {missing}"
    for name in KP:
        if name not in NEWER_THAN_REFERENCE:
            assert common_versions(name), name


def bits(value: int):
    """kafka-python's view of an int32 authorized-operations bit field."""
    value &= 0xFFFFFFFF
    s = {i for i in range(32) if value >> i & 1}
    return None if s == {31} else s


def assert_same(ours: Message, theirs, version: int, flexible: bool, path: str):
    spec = type(ours)._spec
    for f in spec.fields:
        if version not in f.versions:
            continue
        where = f"{path}.{f.attr}"
        mine = getattr(ours, f.attr)
        kp_field = theirs._struct.fields.get(f.attr)
        if kp_field is None and f.attr.endswith("authorized_operations"):
            kp_field = theirs._struct.fields.get("authorized_operations")
            other = getattr(theirs, "authorized_operations")
            assert other == bits(mine), where
            continue
        kp_attr = f.attr
        if kp_field is None and f.attr in OLDER_NAMES:
            kp_attr = OLDER_NAMES[f.attr]
            kp_field = theirs._struct.fields.get(kp_attr)
        assert kp_field is not None, f"{where}: kafka-python has no such field"
        other = getattr(theirs, kp_attr)
        if getattr(kp_field, "_type_str", None) == "bitfield":
            assert other == bits(mine), where
        elif f.is_struct and f.is_array:
            assert (mine is None) == (other is None), where
            if mine is not None:
                assert len(mine) == len(other), where
                for i, (a, b) in enumerate(zip(mine, other)):
                    assert_same(a, b, version, flexible, f"{where}[{i}]")
        elif f.is_struct:
            assert (mine is None) == (other is None), where
            if mine is not None:
                assert_same(mine, other, version, flexible, where)
        elif f.element == "uuid":
            conv = (lambda u: None if u == ZERO else u)
            if f.is_array:
                assert [conv(u) for u in mine] == [conv(u) for u in other], where
            else:
                assert conv(mine) == conv(other), where
        elif f.element in ("bytes", "records"):
            assert (None if mine is None else bytes(mine)) == (None if other is None else bytes(other)), where
        else:
            assert mine == other, (where, mine, other)


@pytest.mark.parametrize("name,version", CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_kafka_python_agrees(name, version, data):
    cls = messages.get(name)
    kp = KP[name]
    flexible = version in cls._message.flexible
    obj = data.draw(message_strategy(name, version, 2, False))
    if name == "ApiVersionsResponse":
        # kafka-python reads any ApiVersions answer carrying an error as v0 (the broker's
        # fallback format); that path is checked in test_api_versions_error_fallback.
        obj.error_code = 0
    ours = obj.encode(version)
    theirs = kp.decode(ours, version=version)
    assert_same(obj, theirs, version, flexible, name)
    theirs._header = None  # kafka-python's fast decoder leaves the slot unset; encode() reads it
    again = theirs.encode(version=version)
    assert again == ours, f"{name} v{version}: kafka-python re-encodes differently"
    assert cls.decode(again, version) == obj


@pytest.mark.parametrize("name,version", [c for c in CASES if c[0].endswith("Request")],
                         ids=[f"{n}-v{v}" for n, v in CASES if n.endswith("Request")])
def test_request_frames_with_headers(name, version):
    """Whole frames: kafka-python's request header + body decoded by kbroker's protocol layer,
    and kbroker's response frame decoded by kafka-python with its header."""
    kp = KP[name]
    req = kp[version]()
    req.with_header(correlation_id=1234, client_id="oracle-client")
    frame = req.encode(header=True, framed=True)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    header, body = protocol.decode_request(frame[4:])
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == \
        (kp.API_KEY, version, 1234, "oracle-client")
    assert isinstance(body, messages.get(name))

    resp_name = name[:-len("Request")] + "Response"
    resp = messages.get(resp_name)()
    raw = b"".join(protocol.encode_response(kp.API_KEY, version, 1234, resp))
    kp_resp = KP[resp_name].decode(raw, version=version, header=True, framed=True)
    assert kp_resp.header.correlation_id == 1234


def test_api_versions_error_fallback():
    """An unknown ApiVersions version is answered in v0 format with UNSUPPORTED_VERSION;
    kafka-python, asking at v4, reads it."""
    cls = messages.ApiVersionsResponse
    resp = cls(error_code=35, api_keys=[cls.ApiVersion(api_key=18, min_version=0, max_version=4)])
    raw = b"".join(protocol.encode_response(18, 0, 5, resp))
    kp_resp = KP["ApiVersionsResponse"].decode(raw, version=4, header=True, framed=True)
    assert kp_resp.error_code == 35 and kp_resp.header.correlation_id == 5
    assert [(a.api_key, a.min_version, a.max_version) for a in kp_resp.api_keys] == [(18, 0, 4)]
