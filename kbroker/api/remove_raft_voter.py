"""RemoveRaftVoter (key 81), v0, on client listeners (KIP-853): ``kafka-metadata-quorum
--bootstrap-server ... remove-controller``. Forwarded to the quorum leader (``_raft_voters``);
the rules are in ``kbroker.controller_server.raft_voters``."""
from __future__ import annotations

from kbroker.api import api
from kbroker.controller_server.raft_voters import remove_voter
from kbroker.wire import messages

from ._raft_voters import forward


@api(81, versions=(0, 0))
async def handle(ctx, request):
    return await forward(ctx, request, 81, remove_voter, messages.RemoveRaftVoterResponse)
