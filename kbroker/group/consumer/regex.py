"""Regular-expression subscriptions of the consumer protocol (KIP-848
``SubscribedTopicRegex``): validation and resolution against the topic names.

Kafka compiles the expressions with RE2/J and matches whole topic names
(``matcher(name).matches()``, i.e. anchored at both ends), over every topic of the metadata
image (internal ones included). Here Python's ``re`` with ``fullmatch`` does the matching;
the RE2 differences that matter are enforced at validation: constructs RE2 refuses —
backreferences (``\\1``, ``(?P=name)``), lookahead/lookbehind (``(?=``, ``(?!``, ``(?<=``,
``(?<!``), conditionals (``(?(``) and possessive/atomic groups — are answered
``INVALID_REGULAR_EXPRESSION`` as Kafka would. Remaining differences (not checked): RE2's
``\\C``, ``\\pN`` one-letter classes and Java-only flags; Python's ``re`` accepts a few
escapes (``\\Z``) RE2 spells differently. Pure functions.
"""
from __future__ import annotations

import re
from functools import lru_cache

from kbroker.wire.error_codes import ErrorCode as E

from .state import GroupError

_RE2_REFUSED = re.compile(r"\\[1-9]|\(\?P=|\(\?<?[=!]|\(\?\(|\(\?>|[*+?}]\+")
MAX_REGEX_LENGTH = 4096


@lru_cache(maxsize=256)
def compile_regex(regex: str) -> re.Pattern:
    """The compiled expression, or GroupError(INVALID_REGULAR_EXPRESSION)."""
    if len(regex) > MAX_REGEX_LENGTH:
        raise GroupError(E.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex is longer than {MAX_REGEX_LENGTH} characters.")
    bad = _RE2_REFUSED.search(regex)
    if bad is not None:
        raise GroupError(E.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
                         f"unsupported construct {bad.group(0)!r}.")
    try:
        return re.compile(regex)
    except (re.error, RecursionError, OverflowError) as exc:
        raise GroupError(E.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{regex}` is not a valid regular expression: "
                         f"{exc}.") from None


def resolve(regex: str, topic_names) -> frozenset[str]:
    """Every topic whose whole name matches ``regex`` (an invalid one matches nothing)."""
    try:
        pattern = compile_regex(regex)
    except GroupError:
        return frozenset()
    return frozenset(t for t in topic_names if pattern.fullmatch(t))
