"""Keys kbroker once accepted without acting on, now wired into a running node (one
in-process broker): ``metadata.max.idle.interval.ms`` keeps an idle metadata log moving
with NoOpRecords (KIP-835), ``log.cleaner.enable=false`` reaches the log manager."""
from __future__ import annotations

import trio


async def test_an_idle_node_commits_noop_records_and_honours_log_cleaner_enable(make_config, nursery):
    from kbroker.server import serve

    server = await nursery.start(serve, make_config(metadata_max_idle_interval_ms=50,
                                                    log_cleaner_enable="false"))
    try:
        broker = server.broker
        assert broker.logs.cleaner_enabled is False
        assert broker.logs.run_cleaner() is None
        start = broker.quorum.image.offset
        with trio.fail_after(30):
            # nobody asks anything: only the idle-interval writer moves the log
            while broker.quorum.image.offset < start + 3:
                await trio.sleep(0.05)
    finally:
        server.request_shutdown()
        with trio.fail_after(10):
            await server.wait_stopped()
