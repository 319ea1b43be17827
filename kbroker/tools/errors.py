"""One sentence per failure: every error of a client command reaches the user as one line
``kbroker: <sentence>`` on stderr, never a Python exception name or a traceback.

``sentence(err, what, conn)`` turns a confluent-kafka ``KafkaError`` (librdkafka's local codes,
negative, or a broker's Kafka error code) into a sentence naming what was being done, the
address, principal or resource concerned, and Kafka's error name in parentheses (the word to
search for in Kafka's documentation). Exit codes (documented in ``kbroker.tools``): 1 for a
failed command, 2 for a usage error, 130 after Ctrl-C.
"""
from __future__ import annotations

from kbroker.tools.client_config import UsageError

EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

__all__ = ["CommandError", "UsageError", "sentence", "broker_error_sentence", "EXIT_FAILED",
           "EXIT_USAGE", "EXIT_INTERRUPTED"]


class CommandError(Exception):
    """A failure to report as one line on stderr with exit code 1."""


# librdkafka's local error codes the CLI meets (rdkafka.h, RD_KAFKA_RESP_ERR__*)
_TRANSPORT, _RESOLVE, _ALL_BROKERS_DOWN, _TIMED_OUT, _SSL, _AUTHENTICATION = -195, -193, -187, -185, -181, -169
_UNKNOWN_TOPIC, _UNKNOWN_PARTITION, _INVALID_ARG = -188, -190, -186

_AUTHZ = {29: "topic", 30: "group", 31: "cluster", 53: "transactional id", 86: "delegation token"}


def principal_of(props: dict) -> str:
    """Who the client authenticates as, from its settings (for messages)."""
    proto = (props.get("security.protocol") or "PLAINTEXT").upper()
    user = props.get("sasl.username")
    if user is None and props.get("sasl.jaas.config"):
        import re
        m = re.search(r'username\s*=\s*"([^"]*)"', props["sasl.jaas.config"])
        user = m.group(1) if m else None
    if proto.startswith("SASL") and user:
        return f"User:{user}"
    if proto == "SSL":
        return "the principal of this client's certificate"
    return "User:ANONYMOUS"


def _reason(text: str) -> str:
    """The useful part of a librdkafka connection message ('...: Connect to ipv4#127.0.0.1:1
    failed: Connection refused (after 0ms in state CONNECT)' -> 'connection refused')."""
    import re
    text = re.sub(r"\s*\(after \d+ms in state \w+(, \d+ identical error\(s\) suppressed)?\)", "", text)
    text = re.sub(r"\s*\(\d+ identical error\(s\) suppressed\)", "", text)
    m = re.search(r"failed: (.*)$", text)
    if m:
        text = m.group(1)
    else:
        text = text.rsplit("]: ", 1)[-1]
        parts = text.split(": ", 1)
        if len(parts) == 2 and "/" in parts[0]:
            text = parts[1]
    text = text.strip().rstrip(".")
    return text[:1].lower() + text[1:] if text[:2] != text[:2].upper() else text


def broker_error_sentence(code: int, what: str, detail: str | None = None,
                          props: dict | None = None) -> str:
    """A Kafka error code from a broker's answer, as a sentence about ``what``; a refusal by
    the authorizer names the principal when the client's settings ``props`` are given."""
    from kbroker.wire.error_codes import error_message, error_name
    name = error_name(code)
    if code in _AUTHZ and props is not None:
        return f"{what}: {principal_of(props)} is not authorized on this {_AUTHZ[code]} ({name})"
    text = (detail or "").strip() or (error_message(code) or "").rstrip(".")
    return f"{what}: {text.rstrip('.')} ({name})" if text else f"{what}: {name}"


def sentence(err, what: str, conn) -> str:
    """``err`` (a KafkaError, or a KafkaException around one) while doing ``what``, with the
    connection ``conn`` (its ``bootstrap``, ``props``, ``timeout``) for names."""
    if hasattr(err, "args") and err.args and hasattr(err.args[0], "code"):
        err = err.args[0]
    if not hasattr(err, "code"):
        return f"{what}: {err}"
    code, text = err.code(), err.str() or ""
    if code in (_AUTHENTICATION, 58):   # local auth failure or SASL_AUTHENTICATION_FAILED
        mech = conn.props.get("sasl.mechanism") or "SASL"
        return (f"{conn.bootstrap} refused the authentication of {principal_of(conn.props)} "
                f"({mech}): {_reason(text)}")
    if code == _SSL:
        return f"TLS with {conn.bootstrap} failed: {_reason(text)}"
    if code in (_TRANSPORT, _ALL_BROKERS_DOWN, _RESOLVE):
        return f"cannot connect to {conn.bootstrap}: {_reason(text)}"
    if code == _TIMED_OUT:
        return f"{what}: no answer from {conn.bootstrap} within {conn.timeout:g} s (--timeout)"
    if code in _AUTHZ:
        return (f"{what}: {principal_of(conn.props)} is not authorized on this {_AUTHZ[code]} "
                f"({err.name()})")
    if code >= 0:
        return broker_error_sentence(code, what, text if text and not text.startswith(("Broker:", "Err-")) else None)
    return f"{what}: {_reason(text) or err.name()} ({err.name().lstrip('_')})"
