"""SCRAM credentials given at format time, as Kafka's ``kafka-storage format --add-scram``.

    kbroker storage format -t ID -c server.properties --add-scram 'SCRAM-SHA-512=[name=alice,password=alice-secret]'

Spec syntax (Kafka's ``ScramParser``): ``<mechanism>=[name=<user>,password=<pw>]`` with
optional ``iterations=<n>`` (default 4096) and ``salt="<base64>"``; or ``saltedpassword=
"<base64>"`` with ``salt`` instead of a password. ``kbroker.tools.storage`` writes the derived
``UserScramCredentialRecord`` (never the password) into ``bootstrap.checkpoint``, as Kafka's
tool does; the first active controller commits it with the first ``metadata.version``, so
node-to-node SCRAM works from the first start — every controller must be formatted with the
same credentials, as in Kafka.
"""
from __future__ import annotations

import base64
import os
import re

from .scram import (MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, credential_from_salted,
                    make_credential)

_SPEC = re.compile(r"\s*(?P<mech>[A-Z0-9-]+)=\[(?P<body>.*)\]\s*", re.S)


class ScramSpecError(ValueError):
    pass


def _pairs(body: str) -> dict[str, str]:
    out, i = {}, 0
    while i < len(body):
        m = re.match(r'\s*([a-zA-Z]+)=("(?:[^"\\]|\\.)*"|[^,]*)\s*(,|$)', body[i:])
        if not m:
            raise ScramSpecError(f"cannot parse {body[i:]!r}")
        value = m.group(2)
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"')
        out[m.group(1).lower()] = value
        i += m.end()
        if m.group(3) == "":
            break
    return out


def parse_add_scram(spec: str, random_bytes=os.urandom):
    """One ``--add-scram`` argument as its ``UserScramCredentialRecord``."""
    from kbroker.wire import messages
    m = _SPEC.fullmatch(spec)
    if not m:
        raise ScramSpecError(f"expected MECHANISM=[name=...,password=...], got {spec!r}")
    mech = m.group("mech")
    if mech not in MECHANISMS:
        raise ScramSpecError(f"unknown SCRAM mechanism {mech}")
    kv = _pairs(m.group("body"))
    name = kv.get("name")
    if not name:
        raise ScramSpecError("you must supply 'name' to add-scram")
    iterations = int(kv.get("iterations", MIN_ITERATIONS))
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ScramSpecError(f"iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}")
    salt = base64.b64decode(kv["salt"]) if "salt" in kv else random_bytes(32)
    if "password" in kv and "saltedpassword" in kv:
        raise ScramSpecError("give either password or saltedpassword")
    if "password" in kv:
        cred = make_credential(mech, kv["password"], salt, iterations)
    elif "saltedpassword" in kv and "salt" in kv:
        cred = credential_from_salted(mech, base64.b64decode(kv["saltedpassword"]), salt, iterations)
    else:
        raise ScramSpecError("you must supply 'password', or 'saltedpassword' with 'salt'")
    return messages.UserScramCredentialRecord(
        name=name, mechanism=MECHANISMS[mech][0], salt=cred.salt, stored_key=cred.stored_key,
        server_key=cred.server_key, iterations=iterations)
