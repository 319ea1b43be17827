"""The ``sasl.jaas.config`` syntax (Kafka's ``JaasConfig``): login modules and options.

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

One or more entries ``<class> <flag> [name=value ...];`` where the flag is ``required``,
``requisite``, ``sufficient`` or ``optional`` and values are bare words or double-quoted
strings (backslash escapes). Kafka's broker takes exactly one login module per
mechanism's config; a syntax error raises ``JaasError`` (a ``ConfigError`` naming the key
is made of it by the caller).
"""
from __future__ import annotations

from dataclasses import dataclass, field

FLAGS = ("required", "requisite", "sufficient", "optional")

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


class JaasError(ValueError):
    pass


@dataclass(frozen=True)
class LoginModule:
    """One login module of a JAAS text: its class name, flag and options."""
    name: str
    flag: str
    options: dict = field(default_factory=dict, repr=False)   # holds passwords


def _tokens(text: str):
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "=;":
            yield c, c
            i += 1
        elif c == '"':
            j, out = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    j += 1
                out.append(text[j])
                j += 1
            if j >= n:
                raise JaasError("unterminated quoted string in JAAS config")
            yield "str", "".join(out)
            i = j + 1
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise JaasError("unterminated comment in JAAS config")
            i = j + 2
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '=;"':
                j += 1
            yield "word", text[i:j]
            i = j


def parse_jaas(text: str) -> list[LoginModule]:
    toks = list(_tokens(text or ""))
    out, i = [], 0
    while i < len(toks):
        kind, name = toks[i]
        if kind != "word":
            raise JaasError(f"expected a login module class name, found {name!r}")
        if i + 1 >= len(toks) or toks[i + 1][0] != "word" or toks[i + 1][1].lower() not in FLAGS:
            raise JaasError(f"login module {name}: expected a control flag ({', '.join(FLAGS)})")
        flag = toks[i + 1][1].lower()
        i += 2
        options: dict[str, str] = {}
        while True:
            if i >= len(toks):
                raise JaasError(f"login module {name}: missing ';' at the end")
            kind, value = toks[i]
            if kind == ";":
                i += 1
                break
            if kind != "word" or i + 2 >= len(toks) or toks[i + 1][0] != "=" \
                    or toks[i + 2][0] not in ("word", "str"):
                raise JaasError(f"login module {name}: expected name=value, found {value!r}")
            options[value] = toks[i + 2][1]
            i += 3
        out.append(LoginModule(name, flag, options))
    if not out:
        raise JaasError("no login module in JAAS config")
    return out
