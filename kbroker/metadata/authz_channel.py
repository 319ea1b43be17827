"""``ControllerChannel``'s ACL and delegation-token calls (mixed into it).

Routed like the other admin writes: to the local active controller, or forwarded to the
quorum leader's controller listener — ACLs as CreateAcls v3 / DeleteAcls v3 inside an
Envelope carrying the client's principal (``ControllerChannel._call``: the controller
authorizes the client again), delegation tokens inside an Envelope (key 58, as Kafka
forwards them) carrying the caller's principal and address, since a token's owner and
requester are the caller. A failed attempt is retried until
``request.timeout.ms``, then answered NOT_CONTROLLER; after a forwarded write the call
waits (bounded) until this node's metadata shows it.
"""
from __future__ import annotations

from typing import Sequence

from kbroker.authz.acls import Acl, Filter
from kbroker.wire import messages as w
from kbroker.wire.errors import WireError
from kbroker.wire.protocol import decode_response
from kbroker.wire.error_codes import ErrorCode as E

from .authz_control import AclDeleteResult, TokenResult


class AuthzChannel:
    async def create_acls(self, acls: Sequence[Acl]) -> list[tuple[int, str | None]]:
        R = w.CreateAclsRequest

        async def remote(addr):
            req = R(creations=[R.AclCreation(
                resource_type=a.resource_type, resource_name=a.resource_name,
                resource_pattern_type=a.pattern_type, principal=a.principal, host=a.host,
                operation=a.operation, permission_type=a.permission) for a in acls])
            resp = await self._call(addr, 30, 3, req)
            if resp is None or len(resp.results) != len(acls) or \
                    any(r.error_code == E.NOT_CONTROLLER for r in resp.results):
                return None
            if any(not r.error_code for r in resp.results):
                await self.quorum.wait_caught_up_after_now()
            return [(r.error_code, r.error_message) for r in resp.results]

        return await self._route(lambda c: c.create_acls(acls), remote,
                                 lambda: [(E.NOT_CONTROLLER, "No active controller.") for _ in acls])

    async def delete_acls(self, filters: Sequence[Filter]) -> list[AclDeleteResult]:
        R = w.DeleteAclsRequest

        async def remote(addr):
            req = R(filters=[R.DeleteAclsFilter(
                resource_type_filter=f.resource_type, resource_name_filter=f.resource_name,
                pattern_type_filter=f.pattern_type, principal_filter=f.principal,
                host_filter=f.host, operation=f.operation, permission_type=f.permission)
                for f in filters])
            resp = await self._call(addr, 31, 3, req)
            if resp is None or len(resp.filter_results) != len(filters) or \
                    any(r.error_code == E.NOT_CONTROLLER for r in resp.filter_results):
                return None
            out = [AclDeleteResult(r.error_code, r.error_message, [
                Acl(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host,
                    m.operation, m.permission_type) for m in r.matching_acls])
                for r in resp.filter_results]
            if any(r.deleted for r in out):
                await self.quorum.wait_caught_up_after_now()
            return out

        return await self._route(lambda c: c.delete_acls(filters), remote,
                                 lambda: [AclDeleteResult(E.NOT_CONTROLLER, "No active controller.")
                                          for _ in filters])

    # ------------------------------------------------------------------ delegation tokens
    async def _token_call(self, local_call, api_key: int, version: int, body, principal: str,
                          client_host: str, parse) -> TokenResult:
        from kbroker.common.request_scope import CURRENT_REQUEST
        ctx = CURRENT_REQUEST.get()
        if ctx is not None:
            client_host = client_host or ctx.client_host

        async def remote(addr):
            from kbroker.wire.envelope import wrap
            resp = await self._call(addr, 58, 0, wrap(
                api_key, version, body, principal, client_host, self.node_id,
                bool(ctx is not None and ctx.extra.get("token_authenticated"))))
            if resp is None or resp.error_code == E.NOT_CONTROLLER:
                return None
            inner = parse(resp)
            if inner is None or inner.error_code == E.NOT_CONTROLLER:
                return None
            if not inner.error_code:
                await self.quorum.wait_caught_up_after_now()
            return inner

        return await self._route(local_call, remote, lambda: TokenResult(E.NOT_CONTROLLER))

    async def create_delegation_token(self, owner: str, requester: str, renewers: Sequence[str],
                                      max_lifetime_ms: int, client_host: str = "") -> TokenResult:
        kind, _, name = owner.partition(":")
        R = w.CreateDelegationTokenRequest
        body = R(owner_principal_type=kind, owner_principal_name=name,
                 renewers=[R.CreatableRenewers(principal_type=r.partition(":")[0],
                                               principal_name=r.partition(":")[2]) for r in renewers],
                 max_lifetime_ms=max_lifetime_ms)
        return await self._token_call(
            lambda c: c.create_delegation_token(owner, requester, renewers, max_lifetime_ms),
            38, 3, body, requester, client_host, lambda r: parse_token_response(38, 3, r))

    async def renew_delegation_token(self, mac: bytes, principal: str, period_ms: int,
                                     client_host: str = "") -> TokenResult:
        body = w.RenewDelegationTokenRequest(hmac=bytes(mac), renew_period_ms=period_ms)
        return await self._token_call(
            lambda c: c.renew_delegation_token(mac, principal, period_ms),
            39, 2, body, principal, client_host, lambda r: parse_token_response(39, 2, r))

    async def expire_delegation_token(self, mac: bytes, principal: str, period_ms: int,
                                      client_host: str = "") -> TokenResult:
        body = w.ExpireDelegationTokenRequest(hmac=bytes(mac), expiry_time_period_ms=period_ms)
        return await self._token_call(
            lambda c: c.expire_delegation_token(mac, principal, period_ms),
            40, 2, body, principal, client_host, lambda r: parse_token_response(40, 2, r))


def parse_token_response(api_key: int, version: int, resp) -> TokenResult | None:
    """The TokenResult inside an EnvelopeResponse (None when it cannot be read)."""
    if resp.error_code or not resp.response_data:
        return TokenResult(resp.error_code or E.UNKNOWN_SERVER_ERROR)
    try:
        _, r = decode_response(bytes(resp.response_data), api_key, version)
    except WireError:
        return None
    if api_key == 38:
        from kbroker.authz.tokens import TokenInfo
        if r.error_code:
            return TokenResult(r.error_code)
        owner = f"{r.principal_type}:{r.principal_name}"
        requester = f"{r.token_requester_principal_type}:{r.token_requester_principal_name}"
        token = TokenInfo(r.token_id, owner, requester, (), r.issue_timestamp_ms,
                          r.max_timestamp_ms, r.expiry_timestamp_ms)
        return TokenResult(E.NONE, token, r.expiry_timestamp_ms)
    return TokenResult(r.error_code, None, r.expiry_timestamp_ms)
