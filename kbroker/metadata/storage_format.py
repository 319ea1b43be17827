"""The format of a node's data directories, as Kafka's ``kafka-storage`` tool writes it, and
the start-up checks that read it back (``kbroker storage``, in ``kbroker/tools/storage.py``,
is the command line over this module).

What ``format`` writes is what Kafka's tool writes, so a directory formatted by either tool
starts the other's broker:

- ``meta.properties`` in every log directory (and ``metadata.log.dir``): ``version=1``,
  ``cluster.id``, ``node.id`` and a fresh ``directory.id``;
- ``bootstrap.checkpoint`` in the metadata directory: a KRaft snapshot file (KIP-630 layout:
  a control batch with a ``SnapshotHeaderRecord`` at offset 0, one batch of framed
  ``FeatureLevelRecord``s, a control batch with a ``SnapshotFooterRecord``) holding the
  feature levels the first active controller commits to an empty metadata log.

Feature levels: ``--release-version`` picks ``metadata.version`` (``4.0`` is its last
IV, ``4.0-IV1`` exactly that one); kbroker writes only the features it serves and refuses
levels it cannot serve (the bootstrap of a directory formatted by Kafka's tool is checked the
same way at start-up and levels above kbroker's are finalized at kbroker's, with a warning:
see :func:`check_bootstrap`).

Dynamic quorums (KIP-853, ``kraft.version`` 1), as Kafka 4.3's formatter: ``--standalone``
makes this controller the only voter, ``--initial-controllers`` names the first voters with
their directory ids (this node's metadata directory gets the one given for it), and both
write ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`` — one control
batch with the snapshot header, a ``KRaftVersionRecord`` (1) and the ``VotersRecord``
(endpoints on the first of ``controller.listener.names``), then the footer — which is what
the Raft core reads its voter set from. ``--no-initial-controllers`` formats a controller
that will join an existing dynamic quorum (``controller.quorum.bootstrap.servers``,
then ``kafka-metadata-quorum add-controller``). A controller with neither
``controller.quorum.voters`` nor one of the three flags is refused, as Kafka refuses it.
``--add-scram 'SCRAM-SHA-512=[name=...,password=...]'``
adds ``UserScramCredentialRecord``s to the bootstrap file (``kbroker.security.bootstrap``), as
Kafka's tool does.
"""
from __future__ import annotations

import base64
import os
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # the CLI builds this parser for every command: keep its import cheap
    from kbroker.config.broker import BrokerConfig


BOOTSTRAP_FILE = "bootstrap.checkpoint"
META_PROPERTIES = "meta.properties"

# metadata.version levels by name (Kafka's MetadataVersion), oldest first.
METADATA_VERSIONS: dict[str, int] = {
    "3.3-IV3": 7, "3.4-IV0": 8, "3.5-IV0": 9, "3.5-IV1": 10, "3.5-IV2": 11, "3.6-IV0": 12,
    "3.6-IV1": 13, "3.6-IV2": 14, "3.7-IV0": 15, "3.7-IV1": 16, "3.7-IV2": 17, "3.7-IV3": 18,
    "3.7-IV4": 19, "3.8-IV0": 20, "3.9-IV0": 21, "4.0-IV0": 22, "4.0-IV1": 23, "4.0-IV2": 24,
    "4.0-IV3": 25, "4.1-IV0": 26, "4.1-IV1": 27, "4.2-IV0": 28, "4.2-IV1": 29, "4.3-IV0": 30,
    "4.4-IV0": 31, "4.4-IV1": 32, "4.4-IV2": 33,
}
_NAME_OF_LEVEL = {v: k for k, v in METADATA_VERSIONS.items()}


class StorageError(Exception):
    """A refusal of the storage tool or of a start on a badly formatted directory."""


def supported_features() -> dict[str, tuple[int, int]]:
    """Feature name -> (min, max) level this kbroker serves (the ApiVersions answer's)."""
    from kbroker.config.features import SUPPORTED_FEATURES
    return dict(SUPPORTED_FEATURES)


def metadata_version_name(level: int) -> str:
    return _NAME_OF_LEVEL.get(level, str(level))


def parse_release_version(text: str) -> int:
    """``4.0`` → the last IV of 4.0; ``4.0-IV1`` → that one (Kafka's ``fromVersionString``)."""
    text = text.strip()
    if text in METADATA_VERSIONS:
        return METADATA_VERSIONS[text]
    matching = [lvl for name, lvl in METADATA_VERSIONS.items() if name.split("-")[0] == text]
    if not matching:
        raise StorageError(f"Unknown metadata.version '{text}'. Supported metadata.version are: "
                           + ", ".join(METADATA_VERSIONS))
    return max(matching)


def new_uuid() -> str:
    """A random UUID in Kafka's form: URL-safe base64 without padding."""
    while True:
        raw = uuid.uuid4().bytes
        text = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        if not text.startswith("-"):       # Kafka avoids ids that look like an option
            return text


# ----------------------------------------------------------------------------- features

def check_features(features: dict[str, int]) -> None:
    """Refuse a level this kbroker does not serve (naming it, with the way out)."""
    supported = supported_features()
    for name, level in sorted(features.items()):
        if level == 0 and name != "metadata.version":
            continue
        lo_hi = supported.get(name)
        if lo_hi is None:
            raise StorageError(
                f"feature {name}={level} is not served by kbroker (it serves "
                + ", ".join(f"{n} {lo}-{hi}" for n, (lo, hi) in sorted(supported.items()))
                + f"); format with --feature {name}=0")
        lo, hi = lo_hi
        if not lo <= level <= hi:
            if name == "metadata.version":
                raise StorageError(
                    f"metadata.version {level} ({metadata_version_name(level)}) is not served by "
                    f"kbroker, which serves {lo} ({metadata_version_name(lo)}) to {hi} "
                    f"({metadata_version_name(hi)}); format with --release-version "
                    f"{metadata_version_name(hi)}")
            raise StorageError(f"feature {name}={level} is not served by kbroker (levels {lo}-{hi})")


def default_features(release_version: str | None, extra: list[str]) -> dict[str, int]:
    """metadata.version of the release (kbroker's highest by default), every other served
    feature at its default for that level (Kafka's format), then ``--feature`` overrides."""
    from kbroker.metadata.feature_control import default_levels, dependency_error, latest_defaults
    hi = supported_features()["metadata.version"][1]
    mv = parse_release_version(release_version) if release_version else hi
    features = {**default_levels(mv, supported_features()), "metadata.version": mv}
    if not release_version:                 # Kafka 4.3's own default format (see LATEST_DEFAULTS)
        features.update(latest_defaults(supported_features()))
    for item in extra:
        name, sep, level = item.partition("=")
        if not sep or not level.strip().lstrip("-").isdigit():
            raise StorageError(f"--feature expects NAME=LEVEL, got {item!r}")
        features[name.strip()] = int(level)
    check_features(features)
    problem = dependency_error(features)
    if problem:
        raise StorageError(problem)
    return features


# ----------------------------------------------------------------------------- bootstrap file

def bootstrap_bytes(features: dict[str, int], timestamp_ms: int, extra: list = ()) -> bytes:
    """The ``bootstrap.checkpoint`` snapshot: header, feature records (then ``extra``
    records: ``--add-scram``'s ``UserScramCredentialRecord``s), footer."""
    from kbroker.metadata.store import encode_record
    from kbroker.raft.control import SNAPSHOT_FOOTER, SNAPSHOT_HEADER, control_key
    from kbroker.wire import messages
    from kbroker.wire import records as rb

    header = messages.SnapshotHeaderRecord(version=0, last_contained_log_timestamp=0)
    footer = messages.SnapshotFooterRecord(version=0)
    values = [encode_record(messages.FeatureLevelRecord(name=n, feature_level=lvl))
              for n, lvl in sorted(features.items()) if lvl > 0 or n == "metadata.version"]
    # metadata.version first: Kafka replays it before any other record
    values.sort(key=lambda v: 0 if b"metadata.version" in v else 1)
    values += [encode_record(r) for r in extra]
    out = bytearray()
    out += rb.build_batch([(control_key(SNAPSHOT_HEADER), header.encode(0), (), timestamp_ms)],
                          base_offset=0, is_control=True)
    out += rb.build_batch([(None, v, (), timestamp_ms) for v in values], base_offset=1)
    out += rb.build_batch([(control_key(SNAPSHOT_FOOTER), footer.encode(0), (), timestamp_ms)],
                          base_offset=1 + len(values), is_control=True)
    return bytes(out)


def read_bootstrap(path: Path) -> list:
    """The metadata records of a ``bootstrap.checkpoint`` (control batches skipped)."""
    from kbroker.metadata.store import decode_record
    from kbroker.wire import records as rb

    data = path.read_bytes()
    view = memoryview(data)
    out = []
    pos = 0
    while len(data) - pos >= rb.BATCH_HEADER_SIZE:
        header = rb.parse_header(view, pos)
        if pos + header.size > len(data):
            raise StorageError(f"{path}: truncated record batch at byte {pos}")
        if not header.is_control:
            for rec in rb.decode_records(view, pos, header, verify=True):
                try:
                    out.append(decode_record(rec.value))
                except ValueError as e:
                    raise StorageError(f"{path}: record at offset {rec.offset}: {e}") from None
        pos += header.size
    return out


def check_bootstrap(metadata_dir: Path) -> list | None:
    """The bootstrap records of a formatted metadata directory (None without the file),
    their feature levels made servable by :func:`servable_features`."""
    path = Path(metadata_dir) / BOOTSTRAP_FILE
    if not path.exists():
        return None
    return servable_features(read_bootstrap(path), str(path))


def servable_features(records: list, source: str) -> list:
    """``records`` with every ``FeatureLevelRecord`` at a level kbroker serves.

    A level above what kbroker serves (Kafka's tool formats with its own release's features,
    e.g. ``group.version=1``; from Kafka 4.4 in the metadata log's first snapshot rather than
    ``bootstrap.checkpoint``) is finalized at the highest level kbroker serves instead, with a
    warning naming it: clients then see what kbroker really serves and never use a feature it
    lacks. A level below kbroker's minimum cannot be served and refuses the start."""
    import logging

    from kbroker.wire import messages

    log = logging.getLogger("kbroker.storage")
    supported = supported_features()
    out = []
    for r in records:
        if type(r).__name__ == "FeatureLevelRecord":
            lo, hi = supported.get(r.name, (0, 0))
            if r.feature_level < lo:
                raise StorageError(f"{source}: {r.name}={r.feature_level} is below what kbroker serves "
                                   f"({lo}); re-format with `kbroker storage format`")
            if r.feature_level > hi:
                shown = (metadata_version_name if r.name == "metadata.version" else str)
                log.warning("%s asks for %s=%s; kbroker serves up to %s and finalizes that",
                            source, r.name, shown(r.feature_level), shown(hi))
                if hi == 0 and r.name != "metadata.version":
                    continue
                r = messages.FeatureLevelRecord(name=r.name, feature_level=hi)
        out.append(r)
    return out


# ----------------------------------------------------------------------------- meta.properties

def meta_properties_text(cluster_id: str, node_id: int, directory_id: str) -> str:
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    return (f"#\n#{stamp}\nnode.id={node_id}\ndirectory.id={directory_id}\nversion=1\n"
            f"cluster.id={cluster_id}\n")


def read_directory_id(log_dir) -> str | None:
    """The ``directory.id`` of ``log_dir``'s ``meta.properties`` as written there (Kafka's
    base64 form), or None when the file cannot be read or names none."""
    from kbroker.config.broker import parse_properties
    try:
        props = parse_properties((Path(log_dir) / META_PROPERTIES).read_text())
    except (OSError, TypeError, ValueError):
        return None
    return props.get("directory.id") or None


def _write_file(path: Path, data: bytes) -> None:
    from kbroker.common.fileio import write_atomically
    write_atomically(path, data)


def directories(config: BrokerConfig) -> tuple[list[Path], Path]:
    """(every directory to format, the metadata directory)."""
    dirs = [Path(d) for d in config.log_dirs]
    mdir = config.values.get("metadata.log.dir")
    meta = Path(mdir).expanduser() if mdir else dirs[0]
    if meta not in dirs:
        dirs.append(meta)
    return dirs, meta


def parse_initial_controllers(text: str) -> list:
    """``id@host:port:directoryId,...`` (Kafka's ``--initial-controllers``) as ``Voter``s
    without their listener name (filled in by the caller)."""
    from kbroker.raft.control import Voter, uuid_from_kafka
    voters = []
    for item in text.split(","):
        item = item.strip()
        vid, at, rest = item.partition("@")
        host_port, _, dir_id = rest.rpartition(":")
        host, _, port = host_port.rpartition(":")
        host = host.strip("[]")
        if not at or not vid.isdigit() or not host or not port.isdigit() or not dir_id:
            raise StorageError(f"--initial-controllers: {item!r} is not id@host:port:directoryId")
        try:
            uuid_from_kafka(dir_id)
        except ValueError:
            raise StorageError(f"--initial-controllers: {dir_id!r} is not a directory id "
                               "(use `kbroker storage random-uuid`)") from None
        voters.append(Voter(int(vid), dir_id, (("", host, int(port)),)))
    ids = [v.voter_id for v in voters]
    if len(set(ids)) != len(ids):
        raise StorageError("--initial-controllers: a node id appears twice")
    return voters


def standalone_voter(config: BrokerConfig, directory_id: str):
    """This controller as the only voter: its controller listener (advertised if given)."""
    from kbroker.raft.control import Voter
    lst = controller_listener(config)
    if lst is None:
        raise StorageError("--standalone needs a controller listener: name it in listeners and "
                           "controller.listener.names")
    return Voter(config.node_id, directory_id, ((lst[0], lst[1], lst[2]),))


def controller_listener(config: BrokerConfig):
    """(name, host, port) of the first of ``controller.listener.names``: what this node
    announces as leader (KIP-853) and records as its voter endpoint. Kafka's rule
    (``effectiveAdvertisedControllerListeners``): its ``advertised.listeners`` entry if any;
    else the bound listener, except that a wildcard host (empty or 0.0.0.0) takes this node's
    own ``controller.quorum.voters`` entry -- the address every other voter already uses, which
    followers now fetch from."""
    names = [n.upper() for n in config.values.get("controller.listener.names") or ["CONTROLLER"]]
    adv = {}
    for entry in config.values.get("advertised.listeners") or []:
        name, _, rest = entry.partition("://")
        host, _, port = rest.rpartition(":")
        if port.isdigit():
            adv[name.upper()] = (host or "localhost", int(port))
    for l in config.controller_listeners:
        if l.name == names[0]:
            if l.name in adv:
                host, port = adv[l.name]
            elif l.host in (None, "", "0.0.0.0", "::"):
                host, port = config.quorum_voters.get(config.node_id, ("localhost", l.port))
            else:
                host, port = l.host, l.port
            if host in ("0.0.0.0", "::"):
                host = "localhost"
            return l.name, host, port
    return None


def voters_checkpoint(voters, timestamp_ms: int) -> bytes:
    """The 0-0 checkpoint of a dynamic quorum (Kafka's layout, see the module docstring)."""
    from kbroker.raft.control import SNAPSHOT_FOOTER, control_key, snapshot_prefix
    from kbroker.wire import messages
    from kbroker.wire import records as rb
    footer = messages.SnapshotFooterRecord(version=0)
    return (snapshot_prefix(voters, timestamp_ms)
            + rb.build_batch([(control_key(SNAPSHOT_FOOTER), footer.encode(0), (), timestamp_ms)],
                             base_offset=3, is_control=True))


VOTERS_CHECKPOINT = "00000000000000000000-0000000000.checkpoint"


def format_storage(config: BrokerConfig, cluster_id: str, features: dict[str, int], *,
                   ignore_formatted: bool = False, out=sys.stdout, scram: list = (),
                   standalone: bool = False, initial_controllers: list | None = None,
                   no_initial_controllers: bool = False) -> int:
    from kbroker.config.broker import check_cluster_id
    check_cluster_id(cluster_id)
    dirs, meta = directories(config)
    todo = []
    for d in dirs:
        if (d / META_PROPERTIES).exists():
            if ignore_formatted:
                continue
            raise StorageError(f"Log directory {d} is already formatted. Use --ignore-formatted "
                               "to ignore this directory and format the others.")
        todo.append(d)
    if not todo:
        print("All of the log directories are already formatted.", file=out)
        return 0
    node_id = config.node_id
    mv = features["metadata.version"]
    is_controller = "controller" in (config.values.get("process.roles") or [])
    dynamic = standalone or initial_controllers is not None or no_initial_controllers
    if dynamic and not is_controller:
        raise StorageError("--standalone, --initial-controllers and --no-initial-controllers "
                           "are for controllers (process.roles has no controller)")
    if dynamic and config.values.get("controller.quorum.voters"):
        raise StorageError("You cannot use --standalone, --initial-controllers or "
                           "--no-initial-controllers with the static quorum of "
                           "controller.quorum.voters: remove it and set "
                           "controller.quorum.bootstrap.servers")
    if is_controller and not dynamic and not config.values.get("controller.quorum.voters") \
            and config.values.get("controller.quorum.bootstrap.servers"):
        raise StorageError("Because controller.quorum.voters is not set on this controller, you "
                           "must specify one of the following: --standalone, "
                           "--initial-controllers, or --no-initial-controllers.")
    meta_dir_id = new_uuid()
    voters = None
    if standalone:
        voters = [standalone_voter(config, meta_dir_id)]
    elif initial_controllers is not None:
        lst = controller_listener(config)
        name = lst[0] if lst else (config.values.get("controller.listener.names") or ["CONTROLLER"])[0]
        voters = [type(v)(v.voter_id, v.directory_id, ((name,) + v.endpoints[0][1:],))
                  for v in initial_controllers]
        mine = [v for v in voters if v.voter_id == node_id]
        if mine:
            meta_dir_id = mine[0].directory_id   # Kafka gives the metadata dir that id
    if dynamic:
        features = dict(features, **{"kraft.version": 1})
    for d in todo:
        try:
            d.mkdir(parents=True, exist_ok=True)
            stamp = int(time.time() * 1000)
            if d == meta:
                _write_file(d / BOOTSTRAP_FILE, bootstrap_bytes(
                    {k: v for k, v in features.items() if k != "kraft.version"}, stamp, scram))
                if voters is not None:
                    from kbroker.metadata.store import METADATA_DIR
                    (d / METADATA_DIR).mkdir(exist_ok=True)
                    _write_file(d / METADATA_DIR / VOTERS_CHECKPOINT, voters_checkpoint(voters, stamp))
            _write_file(d / META_PROPERTIES, meta_properties_text(
                cluster_id, node_id, meta_dir_id if d == meta else new_uuid()).encode())
        except OSError as e:
            raise StorageError(f"cannot format {d}: {e.strerror or e}") from None
        what = ("dynamic metadata voter" if voters is not None and d == meta else
                "metadata" if d == meta else "data")
        print(f"Formatting {what} directory {d} with metadata.version {metadata_version_name(mv)}.",
              file=out)
    return 0


def read_voters_checkpoint(metadata_dir: Path):
    """The voter set of a dynamic quorum's newest checkpoint (None: a static quorum)."""
    from kbroker.metadata.store import METADATA_DIR
    from kbroker.raft.control import snapshot_voters
    # the formatter's 0-0 checkpoint, or a later snapshot that replaced it (newest first);
    # the names by their ending, not Path.glob, whose pattern compiles a regular expression
    # at every start
    folder = Path(metadata_dir) / METADATA_DIR
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".checkpoint")]
    except (FileNotFoundError, NotADirectoryError, PermissionError):   # as glob: none
        names = []
    for p in sorted((folder / n for n in names), reverse=True):
        with open(p, "rb") as f:
            voters = snapshot_voters(f.read(1 << 20))
        if voters is not None:
            return voters
    return None
