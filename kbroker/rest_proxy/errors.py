"""Errors of the REST gateway, in Confluent REST Proxy's shape: ``{"error_code": N,
"message": "..."}`` with an HTTP status, where ``N`` is the status times 100 plus a
sub-code (40401) or the bare status (v3, and the generic 400/404/405/406/415 answers).

The numbers are Confluent's (kafka-rest ``Errors`` and ``KafkaExceptionMapper``); the
Kafka error code of an in-process API answer is mapped to one of them by
:func:`from_kafka`, as that proxy maps its client's exceptions: authorization 403 40301,
unknown topic 404 40401, retriable errors 500 50003, the rest 500 50002.
"""
from __future__ import annotations

from kbroker.wire.error_codes import ErrorCode, is_retriable

BAD_REQUEST = 40002                 # Kafka rejected the request as invalid
UNAUTHENTICATED = 40101
UNAUTHORIZED = 40301
TOPIC_NOT_FOUND = 40401
PARTITION_NOT_FOUND = 40402
CONSUMER_INSTANCE_NOT_FOUND = 40403
LEADER_NOT_AVAILABLE = 40404
CONSUMER_FORMAT_MISMATCH = 40601
CONSUMER_ALREADY_SUBSCRIBED = 40901
CONSUMER_ALREADY_EXISTS = 40902
ILLEGAL_STATE = 40903
KEY_SCHEMA_MISSING = 42201
VALUE_SCHEMA_MISSING = 42202
JSON_CONVERSION = 42203
INVALID_CONSUMER_CONFIG = 42204
INVALID_SCHEMA = 42205
INVALID_PAYLOAD = 42206
SERIALIZATION = 42207
TOO_MANY_REQUESTS = 42901
KAFKA_ERROR = 50002
KAFKA_RETRIABLE_ERROR = 50003

_DENIED = frozenset({ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                     ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                     ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
# answers to a bad request (Kafka's InvalidRequest/InvalidTopic/InvalidConfig... family)
_INVALID = frozenset({ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.INVALID_PARTITIONS,
                      ErrorCode.INVALID_REPLICATION_FACTOR, ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                      ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_REQUEST,
                      ErrorCode.POLICY_VIOLATION, ErrorCode.TOPIC_ALREADY_EXISTS,
                      ErrorCode.INVALID_GROUP_ID, ErrorCode.INVALID_RECORD,
                      ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.MESSAGE_TOO_LARGE,
                      ErrorCode.NON_EMPTY_GROUP, ErrorCode.GROUP_ID_NOT_FOUND,
                      ErrorCode.UNSUPPORTED_VERSION})


class RestError(Exception):
    """An answer other than success: HTTP ``status``, Confluent's ``code``, a message."""

    def __init__(self, status: int, code: int, message: str, kafka_code: int = 0):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.kafka_code = kafka_code        # the Kafka error it stands for, when one

    def body(self) -> dict:
        return {"error_code": self.code, "message": self.message}


def error_name(code: int) -> str:
    try:
        return ErrorCode(int(code)).name
    except ValueError:
        return f"ERROR_{code}"


def from_kafka(code: int, message: str | None = None, *, v3: bool = False) -> RestError:
    """The gateway's answer to a Kafka error ``code`` from an API handler."""
    e = _from_kafka(code, message, v3)
    e.kafka_code = int(code)
    return e


def _from_kafka(code: int, message: str | None, v3: bool) -> RestError:
    text = message or error_name(code)
    if code in _DENIED:
        return RestError(403, 403 if v3 else UNAUTHORIZED, text)
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        return RestError(404, 404 if v3 else TOPIC_NOT_FOUND,
                         message or "This server does not host this topic-partition.")
    if code in (ErrorCode.SASL_AUTHENTICATION_FAILED,):
        return RestError(401, 401 if v3 else UNAUTHENTICATED, text)
    if code in _INVALID:
        return RestError(400, 400 if v3 else BAD_REQUEST, text)
    if is_retriable(code):
        return RestError(500, 500 if v3 else KAFKA_RETRIABLE_ERROR, text)
    return RestError(500, 500 if v3 else KAFKA_ERROR, text)


# the generic answers (Jersey's, as Confluent's proxy writes them)
def not_found() -> RestError:
    return RestError(404, 404, "HTTP 404 Not Found")


def method_not_allowed() -> RestError:
    return RestError(405, 405, "HTTP 405 Method Not Allowed")


def unsupported_media_type(what: str = "") -> RestError:
    return RestError(415, 415, "HTTP 415 Unsupported Media Type" + (f": {what}" if what else ""))


def not_acceptable(what: str = "") -> RestError:
    return RestError(406, 406, "HTTP 406 Not Acceptable" + (f": {what}" if what else ""))


def bad_json(detail: str) -> RestError:
    return RestError(400, 400, f"Unexpected character or malformed JSON: {detail}")


def unprocessable(message: str, code: int = 422) -> RestError:
    return RestError(422, code, message)
