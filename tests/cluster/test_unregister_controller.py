"""UnregisterController (key 94, Kafka 4.4) on the CONTROLLER listener of a three-voter
cluster, as Kafka's ControllerApis serves it (``kbroker/controller_server/unregister_controller.py``):
listed in the controller listener's ApiVersions, answered NOT_CONTROLLER off the active
controller, and on the active one: itself refused (INVALID_REQUEST), an unknown id
CONTROLLER_ID_NOT_REGISTERED, another voter accepted."""
from __future__ import annotations

import pytest

from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode as E

from .support import Cluster, call, wait_for

pytestmark = pytest.mark.slow
U = messages.UnregisterControllerRequest


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(tmp_path_factory.mktemp("unregister-controller"))
    c.start_all()
    try:
        yield c
    finally:
        c.shutdown()


def unregister(port: int, controller_id: int):
    r = call(port, 94, 0, U(controller_id=controller_id))
    return r.error_code, r.error_message


def test_unregister_controller_on_the_controller_listener(cluster):
    ports = {i: n.controller_port for i, n in cluster.nodes.items()}
    for port in ports.values():
        av = call(port, 18, 3, messages.ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        assert [(k.min_version, k.max_version) for k in av.api_keys if k.api_key == 94] == [(0, 0)]

    def active():
        answers = {i: unregister(p, 99) for i, p in ports.items()}
        leaders = [i for i, a in answers.items() if a[0] != E.NOT_CONTROLLER]
        return answers if len(leaders) == 1 else None
    answers = wait_for(active, timeout=60, what="one active controller")
    (leader,) = [i for i, a in answers.items() if a[0] != E.NOT_CONTROLLER]
    assert answers[leader] == (E.CONTROLLER_ID_NOT_REGISTERED, "Controller ID 99 is not currently registered.")
    assert all(a == (E.NOT_CONTROLLER, None) for i, a in answers.items() if i != leader)

    assert unregister(ports[leader], leader) == (
        E.INVALID_REQUEST, "Controller cannot unregister itself while it is active.")
    other = next(i for i in ports if i != leader)
    assert unregister(ports[leader], other) == (E.NONE, None)
    # the quorum goes on serving: the same leader still answers
    assert unregister(ports[leader], 99)[0] == E.CONTROLLER_ID_NOT_REGISTERED
