"""The console's one error type: a Kafka error code answered to one of its calls, with the
HTTP status it becomes (403 for the authorization failures, else 400 unless said)."""
from __future__ import annotations

from kbroker.wire.error_codes import ErrorCode


class ApiFailure(Exception):
    """A Kafka error answered to the console's request: ``code`` and a readable message."""

    def __init__(self, code: int, message: str | None = None, status: int = 400):
        self.code = int(code)
        self.name = error_name(code)
        super().__init__(message or self.name)
        self.status = 403 if self.code in _DENIED else status


# TOPIC_, GROUP_, CLUSTER_, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, DELEGATION_TOKEN_AUTHORIZATION_FAILED
_DENIED = frozenset({29, 30, 31, 53, 65})


def error_name(code: int) -> str:
    try:
        return ErrorCode(int(code)).name
    except ValueError:
        return f"ERROR_{code}"
