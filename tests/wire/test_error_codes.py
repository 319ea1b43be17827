"""The error-code table: well-known codes, internal consistency, and agreement with
kafka-python 3.0.12's ``kafka.errors`` on every code both know."""

from __future__ import annotations

import kafka.errors as kerrors
import pytest

from kbroker.wire import errors as wire_errors
from kbroker.wire.error_codes import ERRORS, ErrorCode, ErrorInfo, error_message, error_name, is_retriable
from kbroker.wire.records import RecordTooLarge


@pytest.mark.parametrize(
    "code, name, retriable",
    [
        (-1, "UNKNOWN_SERVER_ERROR", False),
        (0, "NONE", False),
        (1, "OFFSET_OUT_OF_RANGE", False),
        (2, "CORRUPT_MESSAGE", True),
        (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
        (5, "LEADER_NOT_AVAILABLE", True),
        (6, "NOT_LEADER_OR_FOLLOWER", True),
        (7, "REQUEST_TIMED_OUT", True),
        (10, "MESSAGE_TOO_LARGE", False),
        (14, "COORDINATOR_LOAD_IN_PROGRESS", True),
        (15, "COORDINATOR_NOT_AVAILABLE", True),
        (16, "NOT_COORDINATOR", True),
        (22, "ILLEGAL_GENERATION", False),
        (25, "UNKNOWN_MEMBER_ID", False),
        (27, "REBALANCE_IN_PROGRESS", False),
        (35, "UNSUPPORTED_VERSION", False),
        (36, "TOPIC_ALREADY_EXISTS", False),
        (42, "INVALID_REQUEST", False),
        (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False),
        (47, "INVALID_PRODUCER_EPOCH", False),
        (51, "CONCURRENT_TRANSACTIONS", True),
        (59, "UNKNOWN_PRODUCER_ID", False),
        (74, "FENCED_LEADER_EPOCH", True),
        (79, "MEMBER_ID_REQUIRED", False),
        (87, "INVALID_RECORD", False),
        (89, "THROTTLING_QUOTA_EXCEEDED", True),
        (90, "PRODUCER_FENCED", False),
        (100, "UNKNOWN_TOPIC_ID", True),
        (119, "INVALID_REGISTRATION", False),
        (129, "REBOOTSTRAP_REQUIRED", False),
        (133, "SHARE_SESSION_LIMIT_REACHED", True),
    ],
)
def test_well_known_codes(code, name, retriable):
    assert ErrorCode[name] == code
    assert ERRORS[code] == ErrorInfo(code, name, retriable, ERRORS[code].message)
    assert is_retriable(code) is retriable
    assert error_name(code) == name


def test_table_is_complete_and_consistent():
    assert sorted(ERRORS) == list(range(-1, 137))
    assert [e.value for e in ErrorCode] == list(range(-1, 137))
    for code, info in ERRORS.items():
        assert info.code == code and ErrorCode(code).name == info.name
        assert isinstance(info.retriable, bool)
        assert info.message is None if code == 0 else info.message and info.message.endswith(".")
    assert len({info.name for info in ERRORS.values()}) == len(ERRORS)


def test_error_code_is_the_intenum_its_class_body_would_make():
    """``ErrorCode`` is made by ``enum._simple_enum`` (a start's cost): the same enum, member
    for member and attribute for attribute, as subclassing ``IntEnum`` with that body."""
    import ast
    import enum
    import inspect

    from kbroker.wire import error_codes
    body = next(n for n in ast.parse(inspect.getsource(error_codes)).body
                if isinstance(n, ast.ClassDef) and n.name == "ErrorCode").body
    members = [(a.targets[0].id, ast.literal_eval(a.value)) for a in body if isinstance(a, ast.Assign)]
    assert len(members) == len(ErrorCode) == 138
    checked = enum.IntEnum("ErrorCode", members, module=error_codes.__name__, qualname="ErrorCode")
    checked.__doc__ = ErrorCode.__doc__
    enum._test_simple_enum(checked, ErrorCode)          # raises TypeError naming differences
    assert repr(ErrorCode.NONE) == "<ErrorCode.NONE: 0>" and str(ErrorCode.NONE) == "0"
    assert ErrorCode(3) is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and isinstance(ErrorCode.NONE, int)
    # a member is read from the class's dictionary, as from the ordinary enum's (no descriptor)
    assert all(vars(checked)[name] is checked[name] for name, _ in members)
    assert all(vars(ErrorCode)[name] is ErrorCode[name] for name, _ in members)


def test_unknown_codes():
    assert is_retriable(9999) is False
    assert error_name(9999) == "UNKNOWN_ERROR_CODE_9999"
    assert "9999" in error_message(9999)
    assert error_message(ErrorCode.NONE) is None


def test_wire_exceptions_carry_matching_codes():
    assert wire_errors.CorruptRecord.error_code == ErrorCode.CORRUPT_MESSAGE
    assert wire_errors.InvalidRecord.error_code == ErrorCode.INVALID_RECORD
    assert RecordTooLarge.error_code == ErrorCode.MESSAGE_TOO_LARGE


# kafka-python spells a few names its own way (older Kafka names or its own choice).
KAFKA_PYTHON_NAMES = {
    -1: "UNKNOWN",
    0: "NO_ERROR",
    6: "NOT_LEADER_FOR_PARTITION",  # Kafka's name before KIP-392 renamed it
    10: "MESSAGE_SIZE_TOO_LARGE",
    17: "INVALID_TOPIC",
    39: "INVALID_REPLICATION_ASSIGNMENT",
}
# CorruptRecordException extends RetriableException in Kafka's Java client; kafka-python
# marks it non-retriable.
KAFKA_PYTHON_RETRIABLE = {2: False}


def test_agrees_with_kafka_python():
    # kafka.errors.kafka_errors is the errno -> class map behind kafka.errors.for_code
    theirs = kerrors.kafka_errors
    common = set(theirs) & set(ERRORS)
    assert len(common) >= 129  # kafka-python 3.0.12 knows -1..127
    for code in sorted(common):
        cls = kerrors.for_code(code)
        assert cls is theirs[code] and cls.errno == code
        assert cls.message == KAFKA_PYTHON_NAMES.get(code, ERRORS[code].name), code
        assert cls.retriable == KAFKA_PYTHON_RETRIABLE.get(code, ERRORS[code].retriable), code
