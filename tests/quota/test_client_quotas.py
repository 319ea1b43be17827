"""Quota configuration rules (Kafka's ClientQuotaControlManager and ClientQuotasImage): what
AlterClientQuotas accepts and records, what DescribeClientQuotas filters match, replay and
snapshot records."""
from __future__ import annotations

import pytest

from kbroker.metadata import client_quotas as cq
from kbroker.metadata.image import empty_image, replay_all
from kbroker.metadata.snapshot import image_records

U, C, IP = "user", "client-id", "ip"


def image_with(entries):
    records, results = cq.alter({}, entries)
    assert all(code == 0 for code, _ in results), results
    return replay_all(empty_image("c", 1), records)


@pytest.mark.parametrize("entity, ops, message", [
    ([], [("producer_byte_rate", 1.0, False)], "Invalid empty client quota entity"),
    ([(U, "a"), (U, "b")], [], "duplicate entity entry user"),
    ([("group", "g")], [], "Unhandled client quota entity type: group"),
    ([(U, "")], [], "Empty user not supported"),
    ([(IP, "1.2.3.4"), (U, "a")], [], "IP entity shouldnot be combined"),
    ([(IP, "no such host.invalid")], [], "is not a valid IP or resolvable host"),
    ([(U, "a")], [("connection_creation_rate", 5.0, False)], "Invalid configuration key connection_creation_rate"),
    ([(IP, "1.2.3.4")], [("producer_byte_rate", 5.0, False)], "Invalid configuration key producer_byte_rate"),
    ([(U, "a")], [("producer_byte_rate", 0.0, False)], "Quota producer_byte_rate must be greater than 0"),
    ([(U, "a")], [("consumer_byte_rate", 10.5, False)], "consumer_byte_rate cannot be a fractional value."),
    ([(IP, None)], [("connection_creation_rate", 2.0 ** 40, False)], "too large for an INT"),
])
def test_alter_refusals(entity, ops, message):
    records, results = cq.alter({}, [(entity, ops)])
    assert records == []
    assert results[0][0] == cq.INVALID_REQUEST
    assert message in results[0][1]


def test_alter_sets_changes_and_removes_only_what_differs():
    img = image_with([([(U, "a"), (C, None)], [("producer_byte_rate", 100.0, False),
                                              ("request_percentage", 12.5, False)])])
    key = cq.entity_key([(U, "a"), (C, None)])
    assert img.client_quotas == {key: {"producer_byte_rate": 100.0, "request_percentage": 12.5}}
    records, results = cq.alter(img.client_quotas, [
        ([(C, None), (U, "a")], [("producer_byte_rate", 100.0, False),     # unchanged: no record
                                 ("request_percentage", 0.0, True),        # removed
                                 ("consumer_byte_rate", 0.0, True)])])     # absent: no record
    assert results == [(0, None)]
    assert [(r.key, r.remove) for r in records] == [("request_percentage", True)]
    img2 = replay_all(img, records)
    assert img2.client_quotas == {key: {"producer_byte_rate": 100.0}}
    # removing the last key removes the entity
    records, _ = cq.alter(img2.client_quotas, [([(U, "a"), (C, None)], [("producer_byte_rate", 0, True)])])
    assert replay_all(img2, records).client_quotas == {}


def test_one_bad_entry_does_not_stop_the_others():
    records, results = cq.alter({}, [([(U, "a")], [("producer_byte_rate", 1.5, False)]),
                                     ([(U, "b")], [("producer_byte_rate", 10.0, False)])])
    assert results[0][0] == cq.INVALID_REQUEST and results[1] == (0, None)
    assert len(records) == 1


QUOTAS = {
    cq.entity_key([(U, "a")]): {"producer_byte_rate": 1.0},
    cq.entity_key([(U, None)]): {"producer_byte_rate": 2.0},
    cq.entity_key([(U, "a"), (C, "x")]): {"producer_byte_rate": 3.0},
    cq.entity_key([(C, "x")]): {"producer_byte_rate": 4.0},
    cq.entity_key([(IP, "1.2.3.4")]): {"connection_creation_rate": 5.0},
}


@pytest.mark.parametrize("components, strict, expected", [
    ([(U, cq.MATCH_EXACT, "a")], False, [1.0, 3.0]),
    ([(U, cq.MATCH_EXACT, "a")], True, [1.0]),
    ([(U, cq.MATCH_DEFAULT, None)], False, [2.0]),
    ([(U, cq.MATCH_SPECIFIED, None)], True, [1.0, 2.0]),
    ([(U, cq.MATCH_SPECIFIED, None), (C, cq.MATCH_EXACT, "x")], False, [3.0]),
    ([(C, cq.MATCH_SPECIFIED, None)], False, [3.0, 4.0]),
    ([(IP, cq.MATCH_SPECIFIED, None)], False, [5.0]),
    ([], False, [1.0, 2.0, 3.0, 4.0, 5.0]),
    ([], True, []),
])
def test_describe_filters(components, strict, expected):
    found = cq.describe(QUOTAS, components, strict)
    assert sorted(v for _, values in found for v in values.values()) == expected


@pytest.mark.parametrize("components, code, message", [
    ([("", cq.MATCH_EXACT, "a")], cq.INVALID_REQUEST, "Invalid empty entity type."),
    ([(U, cq.MATCH_EXACT, "a"), (U, cq.MATCH_DEFAULT, None)], cq.INVALID_REQUEST, "more than once"),
    ([("group", cq.MATCH_EXACT, "a")], cq.UNSUPPORTED_VERSION, "Unsupported entity type group"),
    ([(U, cq.MATCH_EXACT, None)], cq.INVALID_REQUEST, "MATCH_TYPE_EXACT, but set match string to null"),
    ([(U, cq.MATCH_DEFAULT, "a")], cq.INVALID_REQUEST, "MATCH_TYPE_DEFAULT, but also"),
    ([(U, cq.MATCH_SPECIFIED, "a")], cq.INVALID_REQUEST, "MATCH_TYPE_SPECIFIED, but also"),
    ([(U, 7, None)], cq.INVALID_REQUEST, "Unknown match type 7"),
    ([(IP, cq.MATCH_SPECIFIED, None), (U, cq.MATCH_SPECIFIED, None)], cq.INVALID_REQUEST,
     "IP filter component should not be used"),
])
def test_describe_refusals(components, code, message):
    with pytest.raises(cq.QuotaError) as e:
        cq.describe(QUOTAS, components, False)
    assert e.value.code == code and message in str(e.value)


def test_snapshot_records_rebuild_the_quotas():
    img = image_with([([(U, "a")], [("producer_byte_rate", 10.0, False)]),
                      ([(IP, None)], [("connection_creation_rate", 3.0, False)])])
    again = replay_all(empty_image("c", 1), list(image_records(img)))
    assert again.client_quotas == img.client_quotas
