"""Command line: a thin dispatcher. ``kbroker serve`` (also ``python -m kbroker serve``) runs
the broker, ``kbroker cluster`` a local multi-node cluster (``kbroker.tools.local_cluster``),
``kbroker storage`` Kafka's ``kafka-storage`` verbs (``kbroker.tools.storage``), and the client
commands (``topics``, ``produce``, ``consume``, ``groups``, ``configs``, ``acls``,
``users``, ``cluster describe|quorum``) live in ``kbroker.tools``. Nothing heavy is imported before the
command is known: client commands never import trio or the broker.

    kbroker serve [--config server.properties] [--data-dir DIR] [--listen HOST:PORT | --port N]
                  [--override key=value ...] [--log-level INFO] [--dev]

``--dev`` is the local-development profile: ``group.initial.rebalance.delay.ms=0``, unless
a data directory is given ``log.dirs=./data``, the schema registry on 127.0.0.1:8081 and the
REST gateway on 127.0.0.1:8082 (a warning, not an error, when such a port is taken); explicit
settings (file, ``--override``) win.

``--data-dir`` sets ``log.dirs``; ``--listen``/``--port`` set ``listeners`` (one PLAINTEXT
listener) and, unless ``advertised.listeners`` is given with ``--override``, the advertised
listener too (a wildcard host is then advertised by host name). ``--override`` wins over
the file. Exit codes: 0 after a clean shutdown (also one forced by a second SIGINT/SIGTERM),
2 for a configuration error (the message names the key and the fix), 1 for any other
startup failure, 128 + the signal when a forced stop itself stalled and was cut short
(``kbroker.server.signals``).
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
import sys

log = logging.getLogger("kbroker")

# What ``--dev`` (and ``make run``) change; explicit settings win (see README "Local development").
DEV_DEFAULTS = {"group.initial.rebalance.delay.ms": "0", "log.dirs": "./data",
                "kbroker.schema.registry.listen": "127.0.0.1:8081",
                "kbroker.rest.proxy.listen": "127.0.0.1:8082",
                "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1"}


def _version() -> str:
    # the package's own constant: also right for a checkout on PYTHONPATH and a --target install
    from kbroker import __version__
    return __version__


class _VersionAction(argparse.Action):
    """``--version``: the version is looked up only when asked for, not on every start."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"kbroker {_version()}")
        parser.exit()


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, made only when it formats: argparse makes one for every
    ``add_argument`` just to check the metavar (methods alone, no state), and each asked
    ``shutil.get_terminal_size`` for its width. The base class's ``__init__`` runs on the
    first use of its state, with the arguments it was given; what was set on the formatter
    before (a parser that sets up a formatter after making it) is kept over what it sets."""

    def __init__(self, *args, **kwargs):
        self._deferred = (args, kwargs)

    def __getattr__(self, name):
        deferred = self.__dict__.pop("_deferred", None)
        if deferred is None:
            raise AttributeError(name)
        set_before = dict(self.__dict__)
        super().__init__(*deferred[0], **deferred[1])
        self.__dict__.update(set_before)
        return getattr(self, name)


def _parser(serve_only: bool = False, command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser (``_build_parser``), each of argparse's own texts translated
    once while it is built: every ``ArgumentParser`` asks gettext for "positional arguments",
    "options" and its ``-h``'s help, and a lookup that finds no catalog searches the locale
    directories again each time (~230 k instructions; 6 lookups for ``serve``'s two parsers,
    29 for ``topics``', 135 for the whole command line)."""
    translate = argparse._
    argparse._ = functools.lru_cache(maxsize=None)(translate)
    try:
        return _build_parser(serve_only, command)
    finally:
        argparse._ = translate


def _build_parser(serve_only: bool, command: str | None) -> argparse.ArgumentParser:
    """The whole command line; ``serve_only``: just ``serve`` (start-up of a broker imports
    none of the client commands' modules); ``command``: one client command's module
    (``topics``, ``groups``...) beside ``serve``, the only parser a ``kbroker <command> ...``
    needs (building all of them is ~60 ms, a fifth of a short command's run)."""
    p = argparse.ArgumentParser(prog="kbroker", description="A Kafka-protocol broker on trio, "
                                "and client commands for any Kafka-protocol broker.",
                                formatter_class=_HelpFormatter)
    p.add_argument("--version", action=_VersionAction)
    # prog: what argparse would format from the usage of ``p``'s positionals (there are none)
    sub = p.add_subparsers(dest="command", required=True, prog="kbroker")
    s = sub.add_parser("serve", help="run the broker until SIGINT/SIGTERM",
                       formatter_class=_HelpFormatter)
    s.add_argument("--config", "-c", metavar="FILE", help="a Kafka server.properties file")
    s.add_argument("--data-dir", metavar="DIR", help="log directory (sets log.dirs)")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--listen", metavar="HOST:PORT", help="the PLAINTEXT listener")
    where.add_argument("--port", type=int, metavar="N", help="listen on 127.0.0.1:N")
    s.add_argument("--override", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="set a configuration key (repeatable)")
    s.add_argument("--log-level", default="INFO",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
    s.add_argument("--shutdown-timeout", type=float, default=5.0, metavar="SECONDS",
                   help="grace period for in-flight requests on shutdown")
    s.add_argument("--http-listen", metavar="HOST:PORT",
                   help="serve /metrics, /health and /ready here (sets kbroker.http.listen)")
    s.add_argument("--rest-proxy", metavar="HOST:PORT",
                   help="serve the REST gateway (Confluent REST Proxy API v2/v3) here "
                        "(sets kbroker.rest.proxy.listen; --dev: 127.0.0.1:8082)")
    s.add_argument("--schema-registry", metavar="HOST:PORT",
                   help="serve the schema registry here (sets kbroker.schema.registry.listen)")
    s.add_argument("--dev", action="store_true",
                   help="local-development profile: group.initial.rebalance.delay.ms=0, data in ./data")
    s.add_argument("--kafka-start-lines", action="store_true",
                   help="after the ready line, also log the lines of Kafka's start-up log that "
                        "container tools (testcontainers) wait for; the image sets it")
    if serve_only:
        return p
    from kbroker import tools
    if command in tools._COMMAND_MODULES:
        import importlib
        importlib.import_module(f"kbroker.tools.{command}").add_parser(sub, tools.common_parent())
        return p
    c = sub.add_parser("cluster", help="run a local cluster (no subcommand), restart one of its "
                                       "nodes, or describe any cluster")
    c.add_argument("--nodes", type=int, default=3, help="number of nodes (voters), default 3")
    c.add_argument("--controllers", type=int, default=0, metavar="K",
                   help="K dedicated controllers (the voters) and --nodes dedicated brokers; "
                        "default 0: every node combined")
    c.add_argument("--base-port", type=int, default=19092,
                   help="node i listens on base+2(i-1) (clients) and base+2(i-1)+1 (controller)")
    c.add_argument("--data-dir", default="./data-cluster", metavar="DIR", help="node-<i> dirs go here")
    c.add_argument("--override", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="set a configuration key on every node (repeatable)")
    c.add_argument("--log-level", default="INFO",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
    from kbroker.tools.storage import add_parser as add_storage_parser
    add_storage_parser(sub)
    from kbroker.tools.local_cluster import add_control_subcommands
    from kbroker.tools import cluster_info
    csub = c.add_subparsers(dest="cluster_command", metavar="{describe,quorum,restart}")
    cluster_info.add_subcommands(csub, tools.common_parent())
    add_control_subcommands(csub)
    tools.add_parsers(sub)
    return p


def build_config(args) -> "BrokerConfig":
    from kbroker.config.broker import BrokerConfig, ConfigError
    overrides: dict[str, str] = {}
    sr_optional = False
    rest_optional = False       # the REST gateway on --dev's own 8082: a busy port only warns
    for item in args.override:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(None, f"--override expects key=value, got {item!r}")
        overrides[key.strip()] = value
    if args.data_dir:
        overrides["log.dirs"] = args.data_dir
    if getattr(args, "http_listen", None):
        overrides["kbroker.http.listen"] = args.http_listen
    if getattr(args, "rest_proxy", None):
        overrides["kbroker.rest.proxy.listen"] = args.rest_proxy
    if getattr(args, "schema_registry", None):
        overrides["kbroker.schema.registry.listen"] = args.schema_registry
    if getattr(args, "dev", False):
        from kbroker.config.broker import parse_properties
        in_file = set()
        if args.config:
            try:
                with open(args.config, encoding="utf-8") as f:
                    in_file = set(parse_properties(f.read()))
            except OSError:
                pass   # BrokerConfig.load reports the file below, naming it
        for key, value in DEV_DEFAULTS.items():
            taken = {key, "log.dir"} if key == "log.dirs" else {key}
            if not taken & (set(overrides) | in_file):
                overrides[key] = value
                # the registry on --dev's own default port: a busy 8081 only warns
                sr_optional = sr_optional or key == "kbroker.schema.registry.listen"
                rest_optional = rest_optional or key == "kbroker.rest.proxy.listen"
    listen = args.listen
    if args.port is not None:
        listen = f"127.0.0.1:{args.port}"
    if listen:
        host, colon, port = listen.rpartition(":")
        if not colon or not port.isdigit():
            raise ConfigError("listeners", f"--listen expects HOST:PORT, got {listen!r}")
        listener = f"PLAINTEXT://{host}:{port}"
        overrides["listeners"] = listener
        if "advertised.listeners" not in overrides:
            if host in ("", "0.0.0.0", "::", "[::]"):
                overrides["advertised.listeners"] = ""   # falls back to the host name
            else:
                overrides["advertised.listeners"] = listener
    if overrides.get("advertised.listeners") == "":
        overrides.pop("advertised.listeners")
        cfg = BrokerConfig.load(args.config, overrides)
        if "advertised.listeners" in cfg.explicit:   # from the file: rebuild without it
            raw = {k: v for k, v in cfg.values.items() if k in cfg.explicit}
            raw.pop("advertised.listeners")
            cfg = BrokerConfig.from_dict(raw, cfg.source_file)
    else:
        cfg = BrokerConfig.load(args.config, overrides)
    cfg.schema_registry_optional = sr_optional
    cfg.rest_proxy_optional = rest_optional
    return cfg


def _leaf(e: BaseException) -> BaseException:
    """The single exception inside (nested) exception groups, if there is just one."""
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    return e


def _run_client(func, args) -> int:
    """A client command: every failure is one line ``kbroker: <sentence>`` (exit codes in
    ``kbroker.tools``' docstring)."""
    from kbroker.tools.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, CommandError, UsageError
    try:
        return func(args)
    except UsageError as e:
        print(f"kbroker: {e}", file=sys.stderr)
        return EXIT_USAGE
    except CommandError as e:
        print(f"kbroker: {e}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0


def _glue_cluster_id(argv: list[str]) -> list[str]:
    """``storage format -t ID``: a cluster id is 22 base64url characters and may start with
    ``-``, which argparse would take for an option; glue it to its flag (``--cluster-id=ID``)."""
    if "storage" not in argv:
        return argv
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in ("-t", "--cluster-id") and i + 1 < len(argv):
            out.append(f"--cluster-id={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    argv = _glue_cluster_id(list(sys.argv[1:] if argv is None else argv))
    first = argv[0] if argv else None
    # ``serve`` and ``--version`` need no client command; one client command needs its own
    args = _parser(serve_only=first in ("serve", "--version"), command=first).parse_args(argv)
    if args.command == "storage":
        from kbroker.tools.storage import main as storage_main
        return storage_main(args)
    func = getattr(args, "func", None)
    if func is not None:
        return _run_client(func, args)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "cluster":
        from kbroker.tools.local_cluster import run_cluster
        extra = {}
        for item in args.override:
            key, sep, value = item.partition("=")
            if not sep:
                print(f"kbroker: --override expects key=value, got {item!r}", file=sys.stderr)
                return 2
            extra[key.strip()] = value
        if args.nodes < 1:
            print("kbroker: --nodes must be at least 1", file=sys.stderr)
            return 2
        if args.controllers < 0:
            print("kbroker: --controllers must be at least 0", file=sys.stderr)
            return 2
        return run_cluster(args.nodes, args.base_port, args.data_dir, extra, controllers=args.controllers)
    if args.command == "serve":
        # no cyclic collection while the broker's modules load (kbroker.common.startup_gc);
        # run_until_signal resumes it once the server is built
        from kbroker.common import startup_gc
        startup_gc.pause()
        # generated methods' code from the build's cache (kbroker.common.codecache)
        from kbroker.common import codecache
        codecache.install()
        cached = codecache.statistics()
        # (read from the file: kbroker/__main__.py installed it before this module's imports,
        # which may have compiled a few)
        log.debug("generated code: %d snippets cached in %s",
                  cached["code_objects"] - cached["compiled"], cached["file"])
        # trio's thread names without an `ldconfig -p` child at its import
        from kbroker.common import pthread_lookup
        pthread_lookup.install()
        if args.kafka_start_lines:
            from kbroker.container.start_lines import install
            install()
        # before any thread exists: SIGINT/SIGTERM are taken by kbroker.server.signals' own
        # thread, which sees a second signal even while the trio thread is stuck
        from kbroker.server.signals import block
        block()
        from kbroker.config.broker import ConfigError
        try:
            config = build_config(args)
        except ConfigError as e:
            print(f"kbroker: configuration error: {e}", file=sys.stderr)
            return 2
        config.log_unused()
        import functools
        import trio
        pthread_lookup.uninstall()
        from kbroker.server import run_until_signal
        try:
            trio.run(functools.partial(run_until_signal, config,
                                       shutdown_timeout=args.shutdown_timeout))
        except BaseException as e:  # noqa: BLE001 - report startup failures as one line
            leaf = _leaf(e)
            if isinstance(leaf, ConfigError):
                print(f"kbroker: configuration error: {leaf}", file=sys.stderr)
                return 2
            if isinstance(leaf, OSError):
                from kbroker.replica.log_dir_failure import unhandled_storage_error
                print(f"kbroker: {unhandled_storage_error(leaf) or leaf.strerror or leaf}",
                      file=sys.stderr)
                return 1
            raise
        _save_generated_code(codecache)
        _exit_without_teardown()
    return 2


def _save_generated_code(codecache) -> None:
    """After a clean stop: keep what this start compiled, and the modules it imported, for
    the next (a ``pip install``ed package has no build step that writes them;
    kbroker.common.codecache, kbroker.common.modimage)."""
    from kbroker.common import modimage
    for what, save, written, where in (
            ("generated-code cache", codecache.save_if_compiled,
             "%d snippets compiled by this start written to %s for the next",
             lambda: codecache.statistics()["file"]),
            ("start-up module image", modimage.save_if_incomplete,
             "%d modules written to %s for the next start", modimage.image_file)):
        try:
            count = save()
        except OSError as e:
            log.debug("%s not written (%s): the next start does without it", what, e)
            continue
        if count:
            log.info(f"{what}: {written}", count, where())


def _exit_without_teardown() -> None:
    """End the process after a clean stop without the interpreter's teardown: every log is
    closed and synced by now, and freeing a node's objects one by one at exit (100,000
    partitions' logs, replicas and metadata images) took 19 s of a 110 s graceful stop --
    the JVM's exit does not free its heap either. Logging and the standard streams are
    flushed first."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
