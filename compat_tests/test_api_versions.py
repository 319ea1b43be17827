"""ApiVersions on a plain (PLAINTEXT, client) listener: kbroker against Apache Kafka 4.4.0.

``KAFKA`` is what Kafka 4.4.0, the pinned release, advertises there (one combined KRaft node,
no authorizer, no telemetry receiver); ``KAFKA_4_3`` what 4.3.1 did (``--kafka-version=4.3.1``
runs the Kafka target on it). On the Kafka target the test checks that the table of its
release is true, so it cannot drift. kbroker is always compared with the pinned release's. On kbroker every key and version range must be
Kafka's, except the keys in ``KNOWN_GAPS``, which record exactly what kbroker advertises
today (None: not at all) and who owes the rest. The list can only shrink: a gap that closes
(kbroker now advertises Kafka's range) fails the test until its line is removed, and a gap
that changes without closing must be edited consciously. kbroker must advertise nothing
Kafka does not (``EXTRAS`` is empty on purpose). Ledger: FINDINGS.md F-185.
"""
from __future__ import annotations

import socket

from compat_tests.kafka_runner import kafka_version
from compat_tests.probe import api_versions

CLIENT = "hand-built"

KAFKA_4_3 = {
    0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6),
    11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1),
    18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5),
    25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3),
    32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 38: (1, 3),
    39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 1),
    46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
    57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
    69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
    80: (0, 1), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1),
    88: (0, 0), 89: (0, 0), 90: (0, 1), 91: (0, 0), 92: (0, 0),
}
# 4.4.0: ApiVersions v5 (KIP-1242), DeleteGroups v3, TxnOffsetCommit v6 (KIP-1319), streams
# groups v1, StreamsGroupTopologyDescriptionUpdate (93) and UnregisterController (94)
KAFKA = {**KAFKA_4_3, 18: (0, 5), 28: (0, 6), 42: (0, 3), 88: (0, 1), 89: (0, 1), 93: (0, 0),
         94: (0, 0)}
TABLES = {"4.3.1": KAFKA_4_3, "4.4.0": KAFKA}

# key: (what kbroker advertises today, who owes Kafka's range)
KNOWN_GAPS = {
}
EXTRAS: dict[int, str] = {}


def _advertised(bootstrap) -> dict[int, tuple[int, int]]:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        return api_versions(s)


def test_api_versions_match_kafka(bootstrap, target):
    got = _advertised(bootstrap)
    if target == "kafka":
        assert got == TABLES[kafka_version()], f"the reference table no longer matches Kafka {kafka_version()}"
        return
    closed = [k for k, (ours, _) in KNOWN_GAPS.items() if got.get(k) == KAFKA[k]]
    assert not closed, f"gaps closed, remove them from KNOWN_GAPS: {closed}"
    moved = {k: (got.get(k), ours) for k, (ours, _) in KNOWN_GAPS.items() if got.get(k) != ours}
    assert not moved, f"known gaps changed without closing (now, recorded): {moved}"
    differs = {k: (got.get(k), v) for k, v in KAFKA.items() if k not in KNOWN_GAPS and got.get(k) != v}
    assert not differs, f"kbroker differs from Kafka 4.4.0 (kbroker, Kafka): {differs}"
    extras = {k: v for k, v in got.items() if k not in KAFKA and k not in EXTRAS}
    assert not extras, f"kbroker advertises what Kafka does not: {extras}"
