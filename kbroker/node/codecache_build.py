"""``python -m kbroker.node.codecache_build``: write the generated-code cache
(``kbroker/common/codecache.py``) that ``kbroker serve`` reads at start (``make setup``
runs it). It creates what a start creates, and more: a node started and stopped in a
temporary directory, then every API module (each loaded on its first request in a running
broker), then the message codecs of a client's first requests and of the metadata records.
Nothing of the node is kept but the compiled snippets and the programs of the regular
expressions compiled meanwhile. Then it starts ``kbroker serve`` as a user does, so that
its clean exit writes the start-up module image (``kbroker/common/modimage.py``) for that
command's ``sys.path``; ``--no-module-image`` leaves that out (the container image's build,
whose ``sys.path`` is not its runtime's)."""
from __future__ import annotations

import sys


def warm() -> None:
    import tempfile     # here, after install(): it imports shutil, which makes a namedtuple

    import trio

    from kbroker.api import import_all
    from kbroker.config.broker import BrokerConfig
    from kbroker.server import serve

    with tempfile.TemporaryDirectory(prefix="kbroker-codecache-") as tmp:
        # with the HTTP listener (/metrics, /health, /ready: the pytest plugin's brokers and
        # the container image run one)
        config = BrokerConfig.from_dict({"log.dirs": f"{tmp}/data",
                                         "listeners": "PLAINTEXT://127.0.0.1:0",
                                         "kbroker.http.listen": "127.0.0.1:0"})

        async def run():
            async with trio.open_nursery() as nursery:
                server = await nursery.start(serve, config)
                server.request_shutdown()
        trio.run(run)
    import_all()
    warm_codecs()


# the APIs of a client's first contact (bootstrap, a topic's auto-creation, a first produce
# or fetch): their request readers and response writers at every version
FIRST_CONTACT = (18, 3, 0, 22, 10, 1, 2)   # ApiVersions, Metadata, Produce, InitProducerId,
#                                            FindCoordinator, Fetch, ListOffsets


def warm_codecs() -> None:
    """Compile the message codecs a node needs first, each on its first use: those of the
    first-contact APIs and of every metadata record (a topic's creation writes and replays
    records the empty node's start did not)."""
    from kbroker.wire import messages
    from kbroker.wire.codegen import reader_for, writer_for

    def every_version(cls, *makers):
        valid = cls._message.valid
        for version in range(valid.low, valid.high + 1):
            for make in makers:
                make(cls, version)
        for struct in {cls, *cls._classes.values()}:
            struct()        # its __init__, compiled on the first construction

    for key in FIRST_CONTACT:
        every_version(messages.request_class(key), reader_for)
        every_version(messages.response_class(key), writer_for)
    for name, raw in messages._RAW.items():
        if raw.get("type") == "metadata":
            every_version(messages.get(name), reader_for, writer_for)


def serve_until_ready(command: list[str], workdir: str, *, extra: tuple[str, ...] = (),
                      env: dict | None = None, timeout: float = 120.0) -> str:
    """Run ``command serve`` (listening on a free port, its data in ``workdir``) until its
    ready line, then stop it cleanly (SIGTERM) and return what it logged; ``RuntimeError``
    if it exits with an error."""
    import signal
    import subprocess

    proc = subprocess.Popen([*command, "serve", "--data-dir", f"{workdir}/data", "--listen",
                             "127.0.0.1:0", *extra], cwd=workdir, env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "kbroker ready" in line:
                proc.send_signal(signal.SIGTERM)
        try:
            failed = proc.wait(timeout) != 0
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"kbroker serve did not stop within {timeout} s") from None
        if failed:
            raise RuntimeError("kbroker serve failed:\n" + "".join(lines[-30:]))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return "".join(lines)


def write_module_image() -> int:
    """Start ``kbroker serve`` as a user does (the console script beside this interpreter, else
    ``python -m kbroker``) on a temporary directory and stop it cleanly at its ready line, so
    that its clean exit writes the start-up module image (``kbroker.common.modimage``) for
    that command's ``sys.path``; again while a start still adds modules to it (one whose
    package folders changed within its start writes them at the next). The number of starts."""
    import tempfile

    command = serve_command()
    for start in range(1, 4):
        with tempfile.TemporaryDirectory(prefix="kbroker-modimage-") as tmp:
            logged = serve_until_ready(command, tmp)
        if "start-up module image" not in logged:
            return start
    return start


def serve_command() -> list[str]:
    """``kbroker`` as a user runs it: the console script beside this interpreter, else
    ``python -m kbroker``."""
    from pathlib import Path

    script = Path(sys.executable).with_name("kbroker")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kbroker"]


def what_a_start_compiles(codecache) -> None:
    """Add to the cache what a real ``kbroker serve`` compiles: one started with a cache file
    of its own, empty, writes at its clean exit everything it compiled (the command line's
    patterns and namedtuples among them, compiled after ``kbroker/__main__.py`` installs
    the cache), which is then loaded beside what this process compiled."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kbroker-codecache-") as tmp:
        # (its module image in there too: write_module_image writes the real one)
        env = {**os.environ, "KBROKER_CODECACHE_FILE": f"{tmp}/codecache.bin",
               "KBROKER_MODIMAGE_FILE": f"{tmp}/modimage.bin"}
        serve_until_ready(serve_command(), tmp, env=env)
        codecache.load(f"{tmp}/codecache.bin")


def main() -> int:
    from kbroker.common import codecache
    codecache.install(None)      # only what is compiled now: no stale entries carried on
    warm()
    what_a_start_compiles(codecache)
    codecache.save()
    stats = codecache.statistics()
    print(f"wrote {stats['code_objects']} code objects and {stats['regexes']} regular expressions "
          f"to {stats['file']}")
    # and the message schema's parsed copy (codecache.read_json_entries)
    from kbroker.wire.model import SCHEMA_FILE, read_definitions
    codecache.parsed_copy(SCHEMA_FILE).unlink(missing_ok=True)
    read_definitions(SCHEMA_FILE, write=True)
    print(f"wrote the parsed message schema to {codecache.parsed_copy(SCHEMA_FILE)}")
    # last: the module image's start reads the cache and the schema's copy just written
    # (not needed: without it a start imports as usual, and its clean exit writes it)
    if "--no-module-image" in sys.argv[1:]:
        return 0
    from kbroker.common import modimage
    try:
        starts = write_module_image()
    except (OSError, RuntimeError, TimeoutError) as e:
        print(f"start-up module image not written: {e}")
        return 0
    print(f"wrote the start-up module image ({starts} starts of kbroker serve) for "
          f"{modimage.image_file()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
