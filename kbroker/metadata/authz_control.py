"""The controller's ACL and delegation-token operations (Kafka's ``AclControlManager`` and
``DelegationTokenControlManager``): validate against the image → records → commit.

Mixed into ``Controller`` (which provides ``image``, ``_lock``, ``_commit`` and, on the
quorum controller, ``_clock_ms``).

- ``create_acls``: one result per creation, in order; an invalid binding gets
  INVALID_REQUEST with Kafka's message; a binding equal to an existing ACL (or to an
  earlier one in the same request) succeeds without a record; each new ACL gets a random
  id not in use. One commit for the whole request.
- ``delete_acls``: one result per filter: the ACLs it matched (each removed once, even if
  several filters match it), or INVALID_REQUEST for a filter with UNKNOWN fields. Atomic.
- tokens: see ``kbroker.authz.tokens``; ``expire_tokens`` is the periodic sweep.
"""
from __future__ import annotations

import logging
import os
import uuid
from dataclasses import dataclass, field, replace
from typing import Sequence

from kbroker.authz import tokens as tk
from kbroker.authz.acls import Acl, Filter, validate_new
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

log = logging.getLogger("kbroker.controller")

MAX_RECORDS_PER_USER_OP = 10_000


@dataclass
class AclDeleteResult:
    """The result of one DeleteAcls filter."""
    error_code: int = E.NONE
    error_message: str | None = None
    deleted: list = field(default_factory=list)       # Acl objects


@dataclass
class TokenResult:
    """The result of a delegation-token change."""
    error_code: int = E.NONE
    token: tk.TokenInfo | None = None
    expiry_timestamp: int = -1


class AuthzControl:
    # ------------------------------------------------------------------ ACLs
    async def create_acls(self, acls: Sequence[Acl]) -> list[tuple[int, str | None]]:
        async with self._lock:
            results, records = [], []
            existing = set(self.image.acls.values())
            used = set(self.image.acls)
            for acl in acls:
                err = validate_new(acl, self.image.features.get("metadata.version"))
                if err:
                    results.append((E[err[0]], err[1]))
                    continue
                if acl not in existing:
                    existing.add(acl)
                    acl_id = uuid.uuid4()
                    while acl_id in used:
                        acl_id = uuid.uuid4()
                    used.add(acl_id)
                    records.append(acl.to_record(acl_id))
                results.append((E.NONE, None))
            if len(records) > MAX_RECORDS_PER_USER_OP:
                return [(E.INVALID_REQUEST,
                         f"Cannot create more than {MAX_RECORDS_PER_USER_OP} acls in a single operation.")
                        for _ in acls]
            await self._commit(records)
            if records:
                log.info("created %d ACL(s)", len(records))
            return results

    async def delete_acls(self, filters: Sequence[Filter]) -> list[AclDeleteResult]:
        async with self._lock:
            results, removed = [], {}
            for f in filters:
                err = f.error()
                if err:
                    results.append(AclDeleteResult(E.INVALID_REQUEST, err))
                    continue
                res = AclDeleteResult()
                for acl_id, acl in self.image.acls.items():
                    if f.matches(acl):
                        res.deleted.append(acl)
                        removed[acl_id] = messages.RemoveAccessControlEntryRecord(id=acl_id)
                results.append(res)
            if len(removed) > MAX_RECORDS_PER_USER_OP:
                msg = f"Cannot remove more than {MAX_RECORDS_PER_USER_OP} acls in a single delete operation."
                return [AclDeleteResult(E.INVALID_REQUEST, msg) for _ in filters]
            await self._commit(list(removed.values()))
            if removed:
                log.info("deleted %d ACL(s)", len(removed))
            return results

    # ------------------------------------------------------------------ delegation tokens
    def _token_settings(self):
        c = self.config
        return (c.get("delegation.token.secret.key"), c.get("delegation.token.max.lifetime.ms"),
                c.get("delegation.token.expiry.time.ms"))

    async def create_delegation_token(self, owner: str, requester: str, renewers: Sequence[str],
                                      max_lifetime_ms: int) -> TokenResult:
        secret, max_life, expiry_time = self._token_settings()
        if not secret:
            return TokenResult(E.DELEGATION_TOKEN_AUTH_DISABLED)
        async with self._lock:
            now = self._clock_ms()
            max_ts = now + (min(max_lifetime_ms, max_life) if max_lifetime_ms > 0 else max_life)
            token_id = tk.new_token_id(os.urandom(16))
            while token_id in self.image.delegation_tokens:
                token_id = tk.new_token_id(os.urandom(16))
            token = tk.TokenInfo(token_id, owner, requester, tuple(renewers), now, max_ts,
                                 min(now + expiry_time, max_ts))
            await self._commit([token.to_record()])
            return TokenResult(E.NONE, token, token.expiry_timestamp)

    def _token_for(self, mac: bytes, principal: str):
        secret = self.config.get("delegation.token.secret.key")
        if not secret:
            return None, E.DELEGATION_TOKEN_AUTH_DISABLED
        token = tk.find_by_hmac(self.image, secret, mac)
        if token is None:
            return None, E.DELEGATION_TOKEN_NOT_FOUND
        if not token.owner_or_renewer(principal):
            return None, E.DELEGATION_TOKEN_OWNER_MISMATCH
        return token, E.NONE

    async def renew_delegation_token(self, mac: bytes, principal: str, renew_period_ms: int) -> TokenResult:
        async with self._lock:
            token, err = self._token_for(mac, principal)
            if err:
                return TokenResult(err)
            now = self._clock_ms()
            if token.expiry_timestamp < now or token.max_timestamp < now:
                return TokenResult(E.DELEGATION_TOKEN_EXPIRED)
            _, _, expiry_time = self._token_settings()
            period = renew_period_ms if renew_period_ms >= 0 else expiry_time
            expiry = min(now + period, token.max_timestamp)
            await self._commit([replace(token, expiry_timestamp=expiry).to_record()])
            return TokenResult(E.NONE, token, expiry)

    async def expire_delegation_token(self, mac: bytes, principal: str, expiry_period_ms: int) -> TokenResult:
        async with self._lock:
            token, err = self._token_for(mac, principal)
            if err:
                return TokenResult(err)
            now = self._clock_ms()
            if token.expiry_timestamp < now or token.max_timestamp < now:
                return TokenResult(E.DELEGATION_TOKEN_EXPIRED)
            if expiry_period_ms < 0:
                await self._commit([messages.RemoveDelegationTokenRecord(token_id=token.token_id)])
                return TokenResult(E.NONE, token, now)
            expiry = min(now + expiry_period_ms, token.max_timestamp)
            await self._commit([replace(token, expiry_timestamp=expiry).to_record()])
            return TokenResult(E.NONE, token, expiry)

    async def run_token_expiry(self) -> None:
        """The active controller's sweep, every ``delegation.token.expiry.check.interval.ms``."""
        import trio
        from .errors import NotController
        interval = self.config.get("delegation.token.expiry.check.interval.ms") / 1000
        while True:
            await trio.sleep(interval)
            if getattr(self, "active", True) and self.image.delegation_tokens:
                try:
                    await self.expire_tokens()
                except NotController:
                    pass

    async def expire_tokens(self) -> int:
        """Remove every token past its expiry (the periodic sweep); how many."""
        async with self._lock:
            now = self._clock_ms()
            gone = [messages.RemoveDelegationTokenRecord(token_id=t.token_id)
                    for t in self.image.delegation_tokens.values() if t.expiry_timestamp < now]
            await self._commit(gone)
            return len(gone)
