"""AddRaftVoter (key 80), v0–v1, on client listeners (KIP-853): ``kafka-metadata-quorum
--bootstrap-server ... add-controller``. Forwarded to the quorum leader (``_raft_voters``);
the rules are in ``kbroker.controller_server.raft_voters``."""
from __future__ import annotations

from kbroker.api import api
from kbroker.controller_server.raft_voters import add_voter
from kbroker.wire import messages

from ._raft_voters import forward


@api(80, versions=(0, 1))
async def handle(ctx, request):
    return await forward(ctx, request, 80, add_voter, messages.AddRaftVoterResponse)
