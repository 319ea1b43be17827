"""``python -m kbroker.node.codecache_build``: write the generated-code cache
(``kbroker/common/codecache.py``) that ``kbroker serve`` reads at start (``make setup``
runs it). It creates what a start creates, and more: a node started and stopped in a
temporary directory, then every API module (each loaded on its first request in a running
broker). Nothing of the node is kept but the compiled snippets."""
from __future__ import annotations

import sys


def warm() -> None:
    import tempfile     # here, after install(): it imports shutil, which makes a namedtuple

    import trio

    from kbroker.api import import_all
    from kbroker.config.broker import BrokerConfig
    from kbroker.server import serve

    with tempfile.TemporaryDirectory(prefix="kbroker-codecache-") as tmp:
        config = BrokerConfig.from_dict({"log.dirs": f"{tmp}/data",
                                         "listeners": "PLAINTEXT://127.0.0.1:0"})

        async def run():
            async with trio.open_nursery() as nursery:
                server = await nursery.start(serve, config)
                server.request_shutdown()
        trio.run(run)
    import_all()


def main() -> int:
    from kbroker.common import codecache
    codecache.install(None)      # only what is compiled now: no stale entries carried on
    warm()
    codecache.save()
    stats = codecache.statistics()
    print(f"wrote {stats['code_objects']} code objects to {stats['file']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
