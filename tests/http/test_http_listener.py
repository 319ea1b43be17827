"""The HTTP listener (``kbroker.http``) of an in-process broker, over real sockets: routes,
HTTP/1.1 keep-alive, bounded and bad input, routes added by other modules."""
from __future__ import annotations

import contextlib

import pytest
import trio

from kbroker.config.broker import BrokerConfig, ConfigError
from kbroker.http import Response, Router
from kbroker.metrics.exposition import Family
from kbroker.server import serve


async def exchange(port: int, raw: bytes) -> bytes:
    """Send ``raw`` and read until the server closes the connection."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(raw)
        out = bytearray()
        with trio.fail_after(15):
            while True:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    return bytes(out)
                out += chunk


def get(path: str, method: str = "GET", extra: str = "") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\n{extra}Connection: close\r\n\r\n".encode()


@pytest.fixture
async def http_broker(tmp_path, nursery):
    config = BrokerConfig.from_dict({"listeners": "PLAINTEXT://127.0.0.1:0",
                                     "log.dirs": str(tmp_path / "data"),
                                     "kbroker.http.listen": "127.0.0.1:0"})
    server = await nursery.start(serve, config)
    yield server
    server.request_shutdown()
    with trio.fail_after(15):
        await server.wait_stopped()


async def test_health_ready_metrics_and_errors(http_broker):
    port = http_broker.http.port
    r = await exchange(port, get("/health"))
    assert r.startswith(b"HTTP/1.1 200 OK\r\n") and r.endswith(b"\r\n\r\nok\n")
    r = await exchange(port, get("/ready"))
    assert r.startswith(b"HTTP/1.1 200 ") and r.endswith(b"ready\n")
    r = await exchange(port, get("/metrics"))
    assert r.startswith(b"HTTP/1.1 200 ")
    assert b"content-type: text/plain; version=0.0.4" in r
    assert b"\nkbroker_ready 1\n" in r
    assert b"# TYPE kafka_server_replicamanager_underreplicatedpartitions gauge\n" in r
    r = await exchange(port, get("/nowhere"))
    assert r.startswith(b"HTTP/1.1 404 ")
    r = await exchange(port, get("/health", "DELETE"))
    assert r.startswith(b"HTTP/1.1 405 ") and b"allow: GET, HEAD" in r
    r = await exchange(port, get("/health", "HEAD"))
    assert r.startswith(b"HTTP/1.1 200 ") and b"content-length: 3" in r and r.endswith(b"\r\n\r\n")


async def test_keep_alive_answers_pipelined_requests_in_order(http_broker):
    raw = (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
           b"GET /ready HTTP/1.1\r\nHost: x\r\n\r\n"
           b"GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    r = await exchange(http_broker.http.port, raw)
    assert r.count(b"HTTP/1.1 ") == 3
    first, second, third = r.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"200") and first.endswith(b"ok\n")
    assert second.startswith(b"200") and second.endswith(b"ready\n")
    assert third.startswith(b"404")


async def test_bad_and_oversized_requests_are_refused_and_the_listener_keeps_serving(http_broker):
    port = http_broker.http.port
    r = await exchange(port, b"GARBAGE\r\n\r\n")
    assert r.startswith(b"HTTP/1.1 400 ")
    # a head that does not end within MAX_HEAD bytes
    r = await exchange(port, b"GET /" + b"a" * 20_000)
    assert r.startswith(b"HTTP/1.1 431 ")
    r = await exchange(port, get("/health", "POST", "Content-Length: 2000000\r\n"))
    assert r.startswith(b"HTTP/1.1 413 ")
    # a client that connects and closes without a word
    s = await trio.open_tcp_stream("127.0.0.1", port)
    await s.aclose()
    r = await exchange(port, get("/health"))
    assert r.startswith(b"HTTP/1.1 200 ")


async def test_a_refused_request_is_answered_with_a_clean_close_while_the_client_still_sends(http_broker):
    """The listener refuses a head over MAX_HEAD (431) before the client has sent all of it.
    It half-closes and discards what still comes until the client closes (a lingering close):
    the client reads the answer and an end of stream. Closing with unread input would make
    the kernel answer the rest with a reset, which the client sees as "connection reset by
    peer" (and which can drop the answer itself if it comes before the client read it)."""
    # more than the listener reads at once: it answers with the rest still unread
    r = await exchange(http_broker.http.port, b"GET /" + b"a" * 400_000)
    assert r.startswith(b"HTTP/1.1 431 ")


async def test_other_modules_add_routes_to_the_running_listener(http_broker):
    seen = []

    async def echo(request):
        seen.append((request.method, request.path, request.query, request.body))
        if request.server is not http_broker:
            return Response(500)
        return Response.json({"body": request.body.decode(), "q": request.query.get("a")})

    async def failing(request):
        raise RuntimeError("boom")

    http_broker.http.router.add("POST", "/console/api/echo", echo)
    http_broker.http.router.add("GET", "/console/", failing, prefix=True)
    port = http_broker.http.port
    raw = (b"POST /console/api/echo?a=1&a=2 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
           b"Connection: close\r\n\r\nhello")
    r = await exchange(port, raw)
    assert r.startswith(b"HTTP/1.1 200 ") and b'"body": "hello"' in r and b'"q": [' in r
    assert seen[-1] == ("POST", "/console/api/echo", {"a": ["1", "2"]}, b"hello")
    r = await exchange(port, get("/console/index.html"))
    assert r.startswith(b"HTTP/1.1 500 ")
    r = await exchange(port, get("/health"))
    assert r.startswith(b"HTTP/1.1 200 ")


def test_router_resolution():
    router = Router()

    async def a(_):
        return Response()

    router.add("GET", "/x", a)
    router.add("GET", "/static/", a, prefix=True)
    router.add("GET", "/static/deep/", a, prefix=True)
    assert router.resolve("GET", "/x")[1] == 200
    assert router.resolve("HEAD", "/x")[1] == 200
    assert router.resolve("PUT", "/x")[1:] == (405, ["GET", "HEAD"])
    assert router.resolve("GET", "/static/deep/f.js")[1] == 200
    assert router.resolve("GET", "/y")[1] == 404
    with pytest.raises(ValueError):
        router.add("GET", "/x", a)
    with pytest.raises(ValueError):
        router.add("GET", "relative", a)


def test_listen_setting_is_validated():
    with pytest.raises(ConfigError, match="kbroker.http.listen"):
        BrokerConfig.from_dict({"kbroker.http.listen": "no-port"})
    cfg = BrokerConfig.from_dict({"kbroker.http.listen": "127.0.0.1:9404"})
    assert cfg.get("kbroker.http.listen") == "127.0.0.1:9404"
    assert "kbroker.http.listen" not in cfg.unused_keys()


def test_exposition_escapes_labels_and_formats_values():
    f = Family("x_total", "counter", "help with \\ and\nnewline")
    f.add(3, topic='a"b\\c\nd')
    f.add(1.5, topic="plain")
    f.add_histogram([0.1, 1.0], [1, 2, 3], 4.25, request="Fetch")
    text = f.render()
    assert text.startswith("# HELP x_total help with \\\\ and\\nnewline\n# TYPE x_total counter\n")
    assert 'x_total{topic="a\\"b\\\\c\\nd"} 3\n' in text
    assert 'x_total{topic="plain"} 1.5\n' in text
    assert 'x_total_bucket{request="Fetch",le="0.1"} 1\n' in text
    assert 'x_total_bucket{request="Fetch",le="1.0"} 3\n' in text
    assert 'x_total_bucket{request="Fetch",le="+Inf"} 6\n' in text
    assert 'x_total_count{request="Fetch"} 6\n' in text
    assert 'x_total_sum{request="Fetch"} 4.25\n' in text


async def test_not_ready_from_the_start_of_a_shutdown(tmp_path, nursery):
    """A fetch parked on the broker keeps the shutdown draining; meanwhile ``/ready`` says
    503 (stopping) and the broker state is no longer RUNNING, while ``/health`` is 200."""
    from kbroker.wire import messages
    from tests.broker.raw import RawClient
    config = BrokerConfig.from_dict({"listeners": "PLAINTEXT://127.0.0.1:0",
                                     "log.dirs": str(tmp_path / "data"),
                                     "kbroker.http.listen": "127.0.0.1:0"})
    server = await nursery.start(lambda task_status: serve(config, shutdown_timeout=20,
                                                           task_status=task_status))
    port = server.http.port
    client = await RawClient.connect(server)
    md = messages.get("MetadataRequest")
    with trio.fail_after(30):     # the topic exists with a leader before the fetch parks on it
        while True:
            resp = await client.request("Metadata", 4, topics=[md.MetadataRequestTopic(name="parked")],
                                        allow_auto_topic_creation=True)
            if resp.topics[0].error_code == 0 and resp.topics[0].partitions:
                break
            await trio.sleep(0.01)
    fetch = messages.get("FetchRequest")
    parked = trio.Event()

    async def long_poll():
        parked.set()
        # answered or cut by the forced stop at the end: either is fine here
        with contextlib.suppress(AssertionError, trio.BrokenResourceError, trio.ClosedResourceError):
            await client.request("Fetch", 4, replica_id=-1, max_wait_ms=300_000, min_bytes=1,
                                 max_bytes=1 << 20, isolation_level=0, topics=[
                                     fetch.FetchTopic(topic="parked", partitions=[
                                         fetch.FetchPartition(partition=0, fetch_offset=0,
                                                              partition_max_bytes=1 << 20)])])

    nursery.start_soon(long_poll)
    await parked.wait()
    with trio.fail_after(10):
        while not any(c.busy for c in server._conns):
            await trio.sleep(0.01)
    assert (await exchange(port, get("/ready"))).startswith(b"HTTP/1.1 200 ")
    server.request_shutdown()
    r = await exchange(port, get("/ready"))
    assert r.startswith(b"HTTP/1.1 503 ") and r.endswith(b"not ready: stopping\n")
    assert (await exchange(port, get("/health"))).startswith(b"HTTP/1.1 200 ")
    r = await exchange(port, get("/metrics"))
    assert b"\nkbroker_ready 0\n" in r
    assert b"\nkafka_server_kafkaserver_brokerstate 3\n" not in r
    server.request_shutdown(force=True)
    with trio.fail_after(20):
        await server.wait_stopped()
