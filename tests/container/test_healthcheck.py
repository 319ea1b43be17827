"""kbroker.container.healthcheck: which listener it probes, and that a closed port is
unhealthy (the healthy path runs against real containers in docker_tests/)."""
import socket

from kbroker.container import healthcheck as hc


def test_probes_the_first_client_listener_on_loopback_for_a_wildcard():
    props = {"listeners": "CONTROLLER://:9093,PLAINTEXT://:19092,PLAINTEXT_HOST://0.0.0.0:9092",
             "controller.listener.names": "CONTROLLER", "node.id": "3"}
    assert hc.target_of(props) == ("127.0.0.1", 19092, 3)
    assert hc.target_of({"listeners": "PLAINTEXT://localhost:29092"}) == ("localhost", 29092, 1)


def test_a_closed_port_is_unhealthy():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ok, msg = hc.probe("127.0.0.1", port, 1, timeout=2)
    assert not ok and f"127.0.0.1:{port}" in msg


def test_ready_endpoint_of_a_real_broker(tmp_path):
    """A node with the HTTP listener is asked GET /ready: healthy once it serves, not after."""
    from tests.support.broker_proc import BrokerProcess, free_port
    listen = f"127.0.0.1:{free_port()}"
    proc = BrokerProcess(tmp_path / "data", overrides={"kbroker.http.listen": listen})
    proc.start()
    try:
        ok, msg = hc.probe_ready(listen.replace("127.0.0.1", "0.0.0.0"), timeout=5)
        assert ok, msg
    finally:
        proc.stop()
    ok, msg = hc.probe_ready(listen, timeout=2)
    assert not ok and "/ready" in msg
