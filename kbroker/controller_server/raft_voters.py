"""AddRaftVoter (key 80, v0–v1), RemoveRaftVoter (81, v0) and UpdateRaftVoter (82, v0):
KIP-853 voter changes of a dynamic metadata quorum, on the controller listener.

Only the Raft leader changes the voter set (``RaftDriver.change_voters`` → the pure core's
``add_voter``/``remove_voter``/``update_voter``), with Kafka 4.3's rules and errors:
NOT_LEADER_OR_FOLLOWER elsewhere, UNSUPPORTED_VERSION for a static quorum (``kraft.version``
0), REQUEST_TIMED_OUT while the leader has not committed its epoch's first record or an
earlier change is uncommitted (or the new voter does not catch up within ``TimeoutMs``),
DUPLICATE_VOTER / VOTER_NOT_FOUND for the voter key, INVALID_REQUEST when the new voter's
listeners lack the quorum's controller listener. AddRaftVoter answers once the
``VotersRecord`` is committed (v1 ``AckWhenCommitted=false``: once it is written). Used by
``kafka-metadata-quorum add-controller``/``remove-controller`` and ``kbroker cluster quorum``.
ACLs as Kafka's ControllerApis: ALTER on the cluster for Add/Remove, CLUSTER_ACTION for Update.

Before adding a voter the leader asks its ApiVersions on the controller listener the request
names (Kafka's AddVoterHandler): no answer or an error answer is REQUEST_TIMED_OUT, a
``kraft.version`` range without the finalized level is INVALID_REQUEST; the range goes into
the ``VotersRecord``. In a static quorum (``kraft.version`` 0) UpdateRaftVoter is accepted
and only remembered by the leader, for ``kafka-features upgrade --feature kraft.version=1``.
"""
from __future__ import annotations

import logging

from kbroker.authz.acls import ALTER, CLUSTER_ACTION
from kbroker.raft.control import Voter, uuid_to_kafka
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from .registry import controller_api

log = logging.getLogger("kbroker.raft")

_MESSAGES = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: "This node is not the leader of the metadata quorum.",
    ErrorCode.UNSUPPORTED_VERSION: "The cluster does not support changing voters: kraft.version is 0 "
                                   "(a static quorum of controller.quorum.voters).",
    ErrorCode.REQUEST_TIMED_OUT: "The leader has not committed its epoch yet, another voter change is "
                                 "pending, or the new voter has not caught up.",
    ErrorCode.DUPLICATE_VOTER: "The voter is already in the voter set.",
    ErrorCode.VOTER_NOT_FOUND: "The voter is not in the voter set.",
    ErrorCode.INVALID_REQUEST: "The request is not valid for this voter set.",
}


def _answer(cls, code: int, **extra):
    return cls(throttle_time_ms=0, error_code=code,
               error_message=_MESSAGES.get(code) if code else None, **extra)


def _cluster_mismatch(quorum, request) -> bool:
    cid = getattr(request, "cluster_id", None)
    return cid is not None and cid != quorum.cluster_id


def _voter(request, with_kraft: bool = False) -> Voter:
    eps = tuple((l.name, l.host, l.port) for l in request.listeners or ())
    lo, hi = 0, 1
    if with_kraft and request.k_raft_version_feature is not None:
        lo = request.k_raft_version_feature.min_supported_version
        hi = request.k_raft_version_feature.max_supported_version
    return Voter(request.voter_id, uuid_to_kafka(request.voter_directory_id), eps, lo, hi)


def kraft_range(api_versions) -> tuple[int, int] | None:
    """The ``kraft.version`` range an ApiVersions answer lists (None: not listed)."""
    for f in getattr(api_versions, "supported_features", None) or ():
        if f.name == "kraft.version":
            return f.min_version, f.max_version
    return None


async def ask_api_versions(quorum, voter: Voter):
    """ApiVersions (v4, as Kafka's AddVoterHandler: below v4 a feature whose minimum level is
    0, such as kraft.version, is not listed, KIP-1022) on the new voter's controller listener;
    None when it does not answer in a request timeout."""
    addr = next(((h, p) for n, h, p in voter.endpoints if n.upper() == quorum.controller_listener_name), None)
    if addr is None:
        return None
    req = messages.ApiVersionsRequest(client_software_name="kbroker", client_software_version="1")
    return await quorum.rpc.call_addr(addr, 18, 4, req, quorum.driver.config.request_timeout_ms / 1000)


async def add_voter(quorum, request, version: int):
    """Kafka's AddVoterHandler: the leader's checks, then ApiVersions of the new voter (its
    ``kraft.version`` range must hold the finalized level; the range is what the
    ``VotersRecord`` stores), then the caught-up wait and the change."""
    R = messages.AddRaftVoterResponse
    if _cluster_mismatch(quorum, request):
        return _answer(R, ErrorCode.INCONSISTENT_CLUSTER_ID)
    driver = quorum.driver
    if not driver.is_leader:
        return _answer(R, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    voter = _voter(request)
    if request.voter_directory_id is None or not request.voter_directory_id.int:
        return R(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                 error_message="Add voter request didn't include a valid voter")
    if not _has_controller_listener(quorum, voter):
        return R(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                 error_message=f"Add voter request didn't include the endpoint for the default "
                               f"listener {quorum.controller_listener_name}")
    code = driver.node.check_add_voter(voter.voter_id)
    if code:
        return _answer(R, code)
    answer = await ask_api_versions(quorum, voter)
    if answer is None or answer.error_code:
        why = "no answer" if answer is None else _code_name(answer.error_code)
        log.info("add voter %d: ApiVersions of %s: %s", voter.voter_id, voter.endpoints, why)
        return R(throttle_time_ms=0, error_code=ErrorCode.REQUEST_TIMED_OUT,
                 error_message=f"Aborted add voter operation for since API_VERSIONS returned an error {why}")
    finalized = driver.node.kraft_version
    rng = kraft_range(answer)
    if rng is None or not rng[0] <= finalized <= rng[1]:
        shown = f"(min: {rng[0]}, max: {rng[1]})" if rng else "(min: 0, max: 0)"
        log.info("add voter %d refused: its kraft.version range %s lacks %d", voter.voter_id, shown, finalized)
        return R(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                 error_message=f"Aborted add voter operation for voter {voter.voter_id} since the "
                               f"kraft.version range {shown} doesn't support the finalized version {finalized}")
    voter = Voter(voter.voter_id, voter.directory_id, voter.endpoints, rng[0], rng[1])
    ack = getattr(request, "ack_when_committed", True) if version >= 1 else True
    code = await driver.change_voters("add_voter", voter, timeout=max(request.timeout_ms, 0) / 1000,
                                      ack_when_committed=ack)
    return _answer(R, code)


async def remove_voter(quorum, request, version: int):
    R = messages.RemoveRaftVoterResponse
    if _cluster_mismatch(quorum, request):
        return _answer(R, ErrorCode.INCONSISTENT_CLUSTER_ID)
    if not quorum.driver.is_leader:
        return _answer(R, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    code = await quorum.driver.change_voters("remove_voter", request.voter_id,
                                             uuid_to_kafka(request.voter_directory_id),
                                             timeout=quorum.driver.config.request_timeout_ms / 1000 * 5)
    return _answer(R, code)


async def update_voter(quorum, request, version: int):
    """Kafka's order: cluster id, epoch, leader, voter key, endpoints, version range; then the
    core (a static quorum's leader only remembers the voter, for an upgrade)."""
    R = messages.UpdateRaftVoterResponse
    node = quorum.driver.node
    leader = R.CurrentLeader(leader_id=quorum.leader_id, leader_epoch=node.epoch, host="", port=-1)
    addr = quorum.controller_endpoint(quorum.leader_id) if quorum.leader_id >= 0 else None
    if addr is not None:
        leader.host, leader.port = addr

    def answer(code):
        return R(throttle_time_ms=0, error_code=code, current_leader=leader)
    if _cluster_mismatch(quorum, request):
        return answer(ErrorCode.INCONSISTENT_CLUSTER_ID)
    if request.current_leader_epoch != node.epoch:
        return answer(ErrorCode.FENCED_LEADER_EPOCH if request.current_leader_epoch < node.epoch
                      else ErrorCode.UNKNOWN_LEADER_EPOCH)
    if not quorum.driver.is_leader:
        return answer(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    voter = _voter(request, with_kraft=True)
    if request.voter_directory_id is None or not request.voter_directory_id.int \
            or not _has_controller_listener(quorum, voter):
        return answer(ErrorCode.INVALID_REQUEST)
    if voter.kraft_min < 0 or voter.kraft_max < 0 or voter.kraft_max < voter.kraft_min:
        return answer(ErrorCode.INVALID_REQUEST)
    code = await quorum.driver.change_voters("update_voter", voter,
                                             timeout=quorum.driver.config.request_timeout_ms / 1000 * 5)
    return answer(code)


def _has_controller_listener(quorum, voter: Voter) -> bool:
    return any(n.upper() == quorum.controller_listener_name for n, _, _ in voter.endpoints)


@controller_api(80, versions=(0, 1), cluster_operation=ALTER)
async def handle_add(ctx, request):
    return await add_voter(ctx.broker.quorum, request, ctx.version)


@controller_api(81, versions=(0, 0), cluster_operation=ALTER)
async def handle_remove(ctx, request):
    return await remove_voter(ctx.broker.quorum, request, ctx.version)


@controller_api(82, versions=(0, 0), cluster_operation=CLUSTER_ACTION)
async def handle_update(ctx, request):
    return await update_voter(ctx.broker.quorum, request, ctx.version)


def _code_name(code: int) -> str:
    return ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
