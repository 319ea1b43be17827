"""The image's ENTRYPOINT: configure like Kafka's image, check the data directories, then
become ``kbroker serve``.

    docker run IMAGE                         # kbroker serve with the environment's configuration
    docker run IMAGE serve --log-level DEBUG # the same, extra ``kbroker serve`` arguments
    docker run IMAGE --override num.partitions=3
    docker run IMAGE kbroker cluster ...     # any other command runs as given (bash, python...)

The configuration (``kbroker.container.env``: ``KAFKA_*`` variables, ``CLUSTER_ID``, a
``server.properties`` mounted in ``/mnt/shared/config`` as for Kafka's image, or
``KBROKER_CONFIG_FILE``) is written to ``/opt/kbroker/config/server.properties`` (``/tmp`` when
that is read-only) and checked here, so a wrong setting ends the container at once with one line
naming the key and the variable that set it (exit 2, in ``docker logs``). Each log directory is
created when missing and must be writable: a bind mount owned by another user, or ``-u`` with
a uid that cannot write it, ends with a message naming the path, its owner and mode, and the
uid/gid the container runs as (exit 1). The umask is 002 so that files stay writable by group
0, the group every ``-u <uid>`` runs with. The process then ``exec``s ``python -m kbroker
serve --kafka-start-lines`` (``kbroker.container.start_lines``: the lines of Kafka's own log
that testcontainers waits for): kbroker is PID 1 and ``docker stop``'s SIGTERM shuts it
down gracefully.
"""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from kbroker.container import env as cenv

MOUNTED_CONFIG = "/mnt/shared/config/server.properties"   # Kafka's image's file input
DEFAULT_CONFIG = "/etc/kbroker/docker/server.properties"   # the image's single-node defaults
CONFIG_DIRS = ("/opt/kbroker/config", "/tmp")
CONFIG_NAME = "server.properties"


def say(msg: str) -> None:
    print(f"kbroker-docker: {msg}", file=sys.stderr, flush=True)


def fail(msg: str, code: int) -> "NoReturn":  # noqa: F821 - typing only
    print(f"kbroker: {msg}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def _read(path: str | None) -> str | None:
    """The file's text; None when it does not exist. A file (or its directory) that exists
    but cannot be read is an error, not silently skipped."""
    if not path:
        return None
    try:
        return Path(path).read_text()
    except FileNotFoundError:
        return None
    except OSError as e:
        fail(f"configuration error: cannot read {path} ({e.strerror}) as uid {os.getuid()} "
             f"gid {os.getgid()}: {describe(Path(path).parent)}", 2)


def write_config(text: str, dirs=CONFIG_DIRS, name: str = CONFIG_NAME) -> str:
    """Write the final server.properties to the first writable one of ``dirs``; its path."""
    last = None
    for d in dirs:
        p = Path(d) / name
        try:
            Path(d).mkdir(parents=True, exist_ok=True)
            tmp = p.with_suffix(".tmp")
            tmp.write_text(text)
            os.replace(tmp, p)
            return str(p)
        except OSError as e:
            last = e
    fail(f"cannot write the configuration to any of {', '.join(dirs)}: {last}", 1)


def check_data_dir(path: str) -> str | None:
    """None when ``path`` exists (or could be created) and is writable, else the message."""
    who = f"uid {os.getuid()} gid {os.getgid()}"
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        parent = Path(path).parent
        while not parent.exists():
            parent = parent.parent
        return (f"data directory {path} cannot be created ({e.strerror}) by {who}: "
                f"{describe(parent)}; mount a writable volume there or pick another log.dirs")
    probe = Path(path) / f".kbroker-write-check-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        return (f"data directory {path} is not writable ({e.strerror}) by {who}: "
                f"{describe(Path(path))}; make it writable by this uid or by group 0 "
                f"(e.g. chown or chmod g+rwX on the host), or run with -u <owner uid>")
    return None


def describe(p: Path) -> str:
    try:
        st = p.stat()
    except OSError:
        return f"{p} cannot be inspected"
    return (f"{p} is owned by uid {st.st_uid} gid {st.st_gid}, "
            f"mode {stat.S_IMODE(st.st_mode):04o}")


def configure(environ, dirs=CONFIG_DIRS, name: str = CONFIG_NAME,
              **render_options) -> tuple[str, list[str]]:
    """Write and check the configuration; the config path and the extra serve arguments.
    ``render_options`` go to ``env.render`` (``cluster_id``, ``default_log_dirs``)."""
    mounted_path = environ.get("KBROKER_CONFIG_FILE") or MOUNTED_CONFIG
    mounted = _read(mounted_path)
    if environ.get("KBROKER_CONFIG_FILE") and mounted is None:
        fail(f"configuration error: KBROKER_CONFIG_FILE={mounted_path} does not exist", 2)
    default = _read(environ.get("KBROKER_DEFAULT_CONFIG", DEFAULT_CONFIG)) or ""
    try:
        rendered = cenv.render(environ, mounted, default, **render_options)
    except ValueError as e:
        fail(f"configuration error: {e}", 2)
    where = {"default": "the image's defaults (one combined node)",
             "mounted": mounted_path, "environment": "the environment",
             "mounted+environment": f"{mounted_path} and the environment"}[rendered.source]
    say(f"configuration from {where}")
    for key, var in rendered.from_env.items():
        say(f"  {key} <- {var}")
    for note in rendered.notes:
        say(note)
    path = write_config(rendered.text, dirs, name)

    from kbroker.config.broker import BrokerConfig, ConfigError
    try:
        config = BrokerConfig.load(path)
    except ConfigError as e:
        hint = ""
        if e.key and e.key in rendered.from_env:
            hint = f" (set by {rendered.from_env[e.key]})"
        elif e.key and rendered.source != "default":
            hint = f" (see {path}; the environment variable would be {cenv.env_name(e.key)})"
        fail(f"configuration error: {e}{hint}", 2)
    for d in config.log_dirs:
        msg = check_data_dir(d)
        if msg:
            fail(msg, 1)
    try:
        level = cenv.log_level(environ)
    except ValueError as e:
        fail(f"configuration error: {e}", 2)
    args = ["--log-level", level] if level else []
    return path, args + rendered.serve_args


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv) or ["serve"]
    if args[0] != "serve" and not args[0].startswith("-"):
        try:
            os.execvp(args[0], args)
        except OSError as e:
            fail(f"cannot run {args[0]!r}: {e.strerror}", 127)
    extra = args[1:] if args[0] == "serve" else args
    os.umask(0o002)
    path, serve_args = configure(os.environ)
    cmd = [sys.executable, "-m", "kbroker", "serve", "--kafka-start-lines", "--config", path,
           *serve_args, *extra]
    say("exec kbroker " + " ".join(cmd[3:]))
    os.execv(sys.executable, cmd)
    return 0   # not reached


if __name__ == "__main__":
    sys.exit(main())
