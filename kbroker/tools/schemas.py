"""``kbroker schemas``: a schema registry's subjects, versions and levels from the command line,
over Confluent's REST API v1 (kbroker's own registry, ``kbroker serve --schema-registry``, or any
Confluent-compatible one).

    kbroker schemas list [--deleted] [--prefix P]      subjects: latest version, id, type
    kbroker schemas get SUBJECT [VERSION]              a version's schema text (default latest)
    kbroker schemas get --id ID                        a schema by id (--json: who uses it)
    kbroker schemas register SUBJECT (FILE | --file F | --schema TEXT) [--type AVRO|JSON|PROTOBUF]
                             [--references REFS] [--reference NAME=SUBJECT:VERSION ...] [--normalize]
    kbroker schemas check SUBJECT (FILE | --file F | --schema TEXT) [--version V] [...]
    kbroker schemas delete SUBJECT [VERSION] [--permanent]
    kbroker schemas config [SUBJECT] [--set LEVEL | --delete]

``VERSION`` may also be given as ``--version V`` (``get``, ``delete``).

Rules kept:

* The registry is named by ``--registry-url`` (or ``--registry``; default
  ``$KBROKER_SCHEMA_REGISTRY_URL`` or ``http://127.0.0.1:8081``, the port ``kbroker serve
  --dev`` uses); ``--user USER:PASSWORD`` (default ``$KBROKER_SCHEMA_REGISTRY_USER``) sends
  HTTP Basic credentials (a registry on a broker with SASL users asks for them).
* Standard library only (``urllib``): the command starts fast and needs no client package.
* Errors are one line, ``kbroker: <the registry's message> (error <code>)``, exit code 1; an
  unreachable registry is one line too. ``check`` prints its verdict and exits 1 when the
  schema is incompatible, so a script can gate on it.
* ``get`` prints the schema text alone (pretty-printed when it is JSON), so it can be
  redirected to a file; ``--json`` prints the registry's own answers (as Confluent's API
  returns them; ``register --json`` adds the version, ``list --json`` every version number).
* ``check`` without ``--version`` asks about the versions the subject's level looks at
  (``POST /compatibility/subjects/{s}/versions``), with a version about that one.
* ``--references`` takes ``NAME=SUBJECT:VERSION[,...]`` or a JSON array of
  ``{"name", "subject", "version"}`` objects, inline or in a file; ``--reference`` one
  ``NAME=SUBJECT:VERSION`` (repeatable).
* ``delete --permanent`` soft-deletes first when needed, as Confluent's registry only
  hard-deletes what is already soft-deleted.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import urllib.parse
from pathlib import Path
from typing import Any

from kbroker.tools.common import CommandError, table

DEFAULT_URL = "http://127.0.0.1:8081"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
TYPES = ("AVRO", "JSON", "PROTOBUF")
LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE",
          "FULL", "FULL_TRANSITIVE")
# Confluent's codes for "already soft-deleted" (subject, version): delete --permanent goes on.
SOFT_DELETED = (40404, 40406)
SUBJECT_LEVEL_NOT_SET = 40408


class RegistryError(CommandError):
    """An error answer of the registry: its HTTP status and Confluent error code."""

    def __init__(self, status: int, code: int | None, message: str):
        super().__init__(f"{message} (error {code})" if code else f"{message} (HTTP {status})")
        self.status = status
        self.code = code


class Registry:
    """One registry's REST API: ``call`` sends a request and returns the decoded JSON answer."""

    def __init__(self, url: str, user: str | None = None, timeout: float = 30.0):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.headers = {"Accept": CONTENT_TYPE}
        if user:
            self.headers["Authorization"] = "Basic " + base64.b64encode(user.encode()).decode()

    def call(self, method: str, path: str, body: Any = None, **query) -> Any:
        # here, not at the top: every CLI command builds this command's parser, and
        # urllib.request (http.client, email, ssl) was ~a third of `kbroker --version`
        import urllib.error
        import urllib.request
        params = {k: ("true" if v is True else v) for k, v in query.items() if v not in (None, False)}
        url = self.url + path + (f"?{urllib.parse.urlencode(params)}" if params else "")
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self.headers, **({"Content-Type": CONTENT_TYPE} if data is not None else {}))
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                text = resp.read().decode()
        except urllib.error.HTTPError as e:
            raw = e.read().decode(errors="replace")
            try:
                err = json.loads(raw)
                code, message = err.get("error_code"), err.get("message") or raw
            except (ValueError, AttributeError):
                code, message = None, raw.strip() or e.reason
            raise RegistryError(e.code, code, str(message)) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise CommandError(f"cannot reach the schema registry at {self.url}: {reason}") from None
        try:
            return json.loads(text) if text else None
        except ValueError:
            raise CommandError(f"the registry at {self.url} answered something that is not JSON: "
                               f"{text[:80]!r}") from None


def seg(text: str | int) -> str:
    """A path segment: subjects may hold '/', ':' and other reserved characters."""
    return urllib.parse.quote(str(text), safe="")


# --- parsing -----------------------------------------------------------------------------------

def add_parser(sub, parent=None) -> None:
    """``parent`` (the Kafka commands' bootstrap options) is not used: this command talks HTTP."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--registry-url", "--registry", "-r", dest="registry_url", metavar="URL",
                        default=os.environ.get("KBROKER_SCHEMA_REGISTRY_URL", DEFAULT_URL),
                        help=f"the registry (default $KBROKER_SCHEMA_REGISTRY_URL or {DEFAULT_URL})")
    common.add_argument("--user", "-u", metavar="USER:PASSWORD",
                        default=os.environ.get("KBROKER_SCHEMA_REGISTRY_USER"),
                        help="HTTP Basic credentials (default $KBROKER_SCHEMA_REGISTRY_USER)")
    common.add_argument("--json", action="store_true", help="print the registry's JSON answers")

    p = sub.add_parser("schemas", help="schema registry: list, get, register, check, delete, config")
    ssub = p.add_subparsers(dest="action", required=True)

    s = ssub.add_parser("list", parents=[common], help="subjects with their versions")
    s.add_argument("--deleted", action="store_true", help="include soft-deleted subjects")
    s.add_argument("--prefix", default="", help="only subjects starting with this")
    s.set_defaults(func=cmd_list)

    s = ssub.add_parser("get", parents=[common], help="a subject's version, or a schema by id")
    s.add_argument("subject", nargs="?", metavar="SUBJECT")
    s.add_argument("version", nargs="?", metavar="VERSION", help="a number or latest (default)")
    s.add_argument("--version", "-v", dest="version_opt", metavar="V", help="the same as VERSION")
    s.add_argument("--id", type=int, metavar="ID", help="a schema id instead of a subject")
    s.set_defaults(func=cmd_get)

    for name, func, text in (("register", cmd_register, "register a schema under a subject"),
                             ("check", cmd_check, "is a schema compatible with a subject's version")):
        s = ssub.add_parser(name, parents=[common], help=text)
        s.add_argument("subject", metavar="SUBJECT")
        s.add_argument("file", nargs="?", metavar="FILE", help="the schema text ('-' for stdin)")
        src = s.add_mutually_exclusive_group()
        src.add_argument("--file", "-f", dest="file_opt", metavar="FILE", help="the same as FILE")
        src.add_argument("--schema", "-s", metavar="TEXT", help="the schema text itself")
        s.add_argument("--type", "-t", type=str.upper, choices=TYPES, default="AVRO", help="default AVRO")
        s.add_argument("--references", metavar="REFS",
                       help="NAME=SUBJECT:VERSION[,...], or a JSON array (inline or a file)")
        s.add_argument("--reference", action="append", default=[], metavar="NAME=SUBJECT:VERSION",
                       help="one reference (repeatable)")
        s.add_argument("--normalize", action="store_true", help="normalize the schema first")
        if name == "check":
            s.add_argument("--version", "-v", default=None, metavar="V",
                           help="one version (default: those the subject's level looks at)")
        s.set_defaults(func=func)

    s = ssub.add_parser("delete", parents=[common], help="delete a subject or one of its versions")
    s.add_argument("subject", metavar="SUBJECT")
    s.add_argument("version", nargs="?", metavar="VERSION")
    s.add_argument("--version", "-v", dest="version_opt", metavar="V", help="the same as VERSION")
    s.add_argument("--permanent", action="store_true", help="hard delete (soft-deletes first)")
    s.set_defaults(func=cmd_delete)

    s = ssub.add_parser("config", parents=[common], help="the compatibility level, global or a subject's")
    s.add_argument("subject", nargs="?", metavar="SUBJECT")
    how = s.add_mutually_exclusive_group()
    how.add_argument("--set", type=str.upper, choices=LEVELS, metavar="LEVEL",
                     help=f"set the level ({', '.join(LEVELS)})")
    how.add_argument("--delete", action="store_true",
                     help="remove the subject's own level (it falls back to the global one)")
    s.set_defaults(func=cmd_config)


def _registry(args) -> Registry:
    return Registry(args.registry_url, args.user)


def _print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


def _version(text: str) -> str:
    if text == "latest" or text.lstrip("-").isdigit():
        return text
    raise CommandError(f"a version is a number or latest, not {text!r}")


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text()
    except OSError as e:
        raise CommandError(f"cannot read {path}: {e.strerror}") from None


def parse_references(text: str | None) -> list[dict]:
    """``NAME=SUBJECT:VERSION[,...]`` or a JSON array, inline or in a file."""
    if not text:
        return []
    source = text
    if not text.lstrip().startswith("[") and "=" not in text:
        source = _read_text(text)
    if source.lstrip().startswith("["):
        try:
            refs = json.loads(source)
        except ValueError as e:
            raise CommandError(f"--references: not a JSON array: {e}") from None
        if not all(isinstance(r, dict) and {"name", "subject", "version"} <= r.keys() for r in refs):
            raise CommandError('--references: every entry needs "name", "subject" and "version"')
        return refs
    return _pairs(source)


def _pairs(source: str) -> list[dict]:
    refs = []
    for item in source.split(","):
        name, _, rest = item.strip().partition("=")
        subject, _, version = rest.rpartition(":")
        if not name or not subject or not version.isdigit():
            raise CommandError(f"--references expects NAME=SUBJECT:VERSION, got {item.strip()!r}")
        refs.append({"name": name, "subject": subject, "version": int(version)})
    return refs


def _one_version(args) -> str | None:
    if args.version and args.version_opt and args.version != args.version_opt:
        raise CommandError(f"two versions given: {args.version} and --version {args.version_opt}")
    return args.version or args.version_opt


def _schema_body(args) -> dict:
    given = [x for x in (args.file, args.file_opt) if x is not None] + ([None] if args.schema is not None else [])
    if len(given) != 1:
        raise CommandError(f"{args.action} needs the schema once: FILE, --file FILE or --schema TEXT")
    text = args.schema if args.schema is not None else _read_text(args.file or args.file_opt)
    body: dict[str, Any] = {"schema": text}
    if args.type != "AVRO":
        body["schemaType"] = args.type
    refs = parse_references(args.references)
    refs += _pairs(",".join(args.reference)) if args.reference else []
    if refs:
        body["references"] = refs
    return body


def _pretty(schema: str) -> str:
    try:
        return json.dumps(json.loads(schema), indent=2)
    except ValueError:
        return schema          # Protobuf text, as registered


# --- commands ----------------------------------------------------------------------------------

def cmd_list(args) -> int:
    reg = _registry(args)
    subjects = reg.call("GET", "/subjects", deleted=args.deleted, subjectPrefix=args.prefix or None)
    rows = []
    for subject in sorted(subjects):
        try:
            versions = reg.call("GET", f"/subjects/{seg(subject)}/versions", deleted=args.deleted)
            latest = reg.call("GET", f"/subjects/{seg(subject)}/versions/{max(versions)}",
                              deleted=args.deleted)
        except RegistryError as e:
            if e.status == 404:
                continue            # deleted meanwhile
            raise
        rows.append({"subject": subject, "version": latest["version"], "id": latest["id"],
                     "type": latest.get("schemaType", "AVRO"), "versions": versions})
    if args.json:
        _print_json(rows)
    else:
        table(rows, ["subject", "version", "id", "type"])
    return 0


def cmd_get(args) -> int:
    reg = _registry(args)
    if args.id is not None:
        if args.subject:
            raise CommandError("get takes a SUBJECT [VERSION] or --id ID, not both")
        got = reg.call("GET", f"/schemas/ids/{args.id}")
        got["id"] = args.id
        got["versions"] = reg.call("GET", f"/schemas/ids/{args.id}/versions")
    else:
        if not args.subject:
            raise CommandError("get needs a SUBJECT [VERSION] or --id ID")
        version = _version(_one_version(args) or "latest")
        got = reg.call("GET", f"/subjects/{seg(args.subject)}/versions/{version}")
    if args.json:
        _print_json(got)
    else:
        print(_pretty(got["schema"]))
    return 0


def cmd_register(args) -> int:
    reg = _registry(args)
    body = _schema_body(args)     # read once: FILE may be stdin
    got = reg.call("POST", f"/subjects/{seg(args.subject)}/versions", body, normalize=args.normalize)
    # Confluent's answer is the id alone; the version comes from a lookup of the same schema.
    found = reg.call("POST", f"/subjects/{seg(args.subject)}", body, normalize=args.normalize)
    out = {"subject": args.subject, "id": got["id"], "version": found.get("version")}
    if args.json:
        _print_json(out)
    else:
        print(f"registered {args.subject} version {out['version']} id {out['id']}")
    return 0


def cmd_check(args) -> int:
    reg = _registry(args)
    path = f"/compatibility/subjects/{seg(args.subject)}/versions"
    if args.version is not None:
        path += f"/{_version(args.version)}"
    got = reg.call("POST", path, _schema_body(args), verbose=True, normalize=args.normalize)
    if args.json:
        _print_json(got)
    else:
        print("compatible" if got.get("is_compatible") else "incompatible")
        for message in got.get("messages") or []:
            print(f"  {message}")
    return 0 if got.get("is_compatible") else 1


def cmd_delete(args) -> int:
    reg = _registry(args)
    version = _one_version(args)
    path = f"/subjects/{seg(args.subject)}" + (f"/versions/{_version(version)}" if version else "")
    deleted = None
    try:
        deleted = reg.call("DELETE", path)
    except RegistryError as e:
        if not (args.permanent and e.code in SOFT_DELETED):
            raise
    if args.permanent:
        deleted = reg.call("DELETE", path, permanent=True)
    versions = deleted if isinstance(deleted, list) else [deleted]
    if args.json:
        _print_json(deleted)        # the registry's answer: the versions, or the one version
    else:
        how = "permanently deleted" if args.permanent else "deleted"
        print(f"{how} {args.subject} version{'s' if len(versions) != 1 else ''} "
              f"{', '.join(str(v) for v in versions)}")
    return 0


def cmd_config(args) -> int:
    reg = _registry(args)
    path = f"/config/{seg(args.subject)}" if args.subject else "/config"
    scope = f"subject {args.subject}" if args.subject else "global"
    if args.set:
        got = reg.call("PUT", path, {"compatibility": args.set})
        level, source = got.get("compatibility", args.set), scope
    elif args.delete:
        if not args.subject:
            raise CommandError("config --delete needs a SUBJECT (the global level is only set)")
        got = reg.call("DELETE", path)
        level, source = None, scope
    else:
        try:
            got = reg.call("GET", path)
            source = scope
        except RegistryError as e:
            if not (args.subject and e.code == SUBJECT_LEVEL_NOT_SET):
                raise
            got = reg.call("GET", "/config")
            source = "global"
        level = got.get("compatibilityLevel") or got.get("compatibility")
    if args.json:
        _print_json({"subject": args.subject, "level": level, "from": source, "answer": got})
    elif args.delete:
        print(f"removed the level of {args.subject} (was {got.get('compatibilityLevel') or got.get('compatibility')})")
    else:
        print(f"{args.subject or 'global'}: {level}" + (" (the global level)" if args.subject and source == "global" else ""))
    return 0
