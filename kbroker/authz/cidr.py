"""CIDR host patterns in ACLs (Kafka 4.4, from ``metadata.version`` 4.4-IV1).

An ACL's host is ``*`` (every host), one address compared as a string, or -- new in Kafka
4.4 -- a CIDR block such as ``10.0.0.0/8`` or ``2001:db8::/32`` (any host pattern holding a
``/``). A client matches a block when its address lies in it (Kafka's ``CidrUtils.isInRange``:
the network and broadcast addresses count; host bits set in the pattern are ignored, as
commons-net's ``SubnetUtils`` ignores them). An IPv4 client never matches an IPv6 block, nor
the reverse. Pure: no I/O, parsed blocks cached.

``CIDR_METADATA_VERSION`` is the level that accepts them (Kafka's ``isCidrAclSupported``):
below it CreateAcls answers a ``/`` host UNSUPPORTED_VERSION, at it a malformed block is
INVALID_REQUEST (``host_error``).
"""
from __future__ import annotations

import ipaddress
from functools import lru_cache

CIDR_METADATA_VERSION = 32            # 4.4-IV1
CIDR_METADATA_VERSION_NAME = "4.4-IV1"


def is_cidr(host: str | None) -> bool:
    return host is not None and "/" in host


@lru_cache(maxsize=1024)
def _network(pattern: str):
    return ipaddress.ip_network(pattern, strict=False)


def cidr_error(pattern: str) -> str | None:
    """Why ``pattern`` is no CIDR block, or None."""
    prefix = pattern.partition("/")[2]
    if not prefix.isdigit():
        return f"Could not parse [{pattern}]"
    try:
        _network(pattern)
    except ValueError as e:
        return str(e)
    return None


def host_error(host: str | None, metadata_version: int | None) -> tuple[str, str] | None:
    """Kafka's ``validateHostPattern``: ``("INVALID_REQUEST" | "UNSUPPORTED_VERSION", message)``
    for a host a new ACL may not have, or None."""
    if not host:
        return "INVALID_REQUEST", "Host pattern cannot be null or empty"
    if host == "*" or "/" not in host:
        return None
    if metadata_version is None or metadata_version < CIDR_METADATA_VERSION:
        return ("UNSUPPORTED_VERSION", "CIDR-based ACL host patterns require metadata version "
                f"{CIDR_METADATA_VERSION_NAME} or higher.")
    problem = cidr_error(host)
    if problem:
        return "INVALID_REQUEST", f"Invalid CIDR notation '{host}': {problem}"
    return None


def in_range(pattern: str, host: str) -> bool:
    """Whether the client address ``host`` lies in the CIDR block ``pattern``."""
    if "/" not in pattern:
        return False
    try:
        net = _network(pattern)
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.version == net.version and address in net


def host_matches(acl_host: str, host: str) -> bool:
    """An ACL's host against the client's address: ``*``, the same string, or a block holding it."""
    return acl_host == "*" or acl_host == host or in_range(acl_host, host)
