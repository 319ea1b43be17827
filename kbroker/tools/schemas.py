"""``kbroker schemas``: a schema registry's subjects from the command line, over its REST API
(kbroker's own registry or any Confluent-compatible one: Confluent's, Karapace, Redpanda's).

    kbroker schemas list [--deleted] [--prefix P]        subjects: latest version, id, type
    kbroker schemas get SUBJECT [--version V]            the schema text (--json: everything)
    kbroker schemas register SUBJECT (--file F | --schema TEXT) [--type AVRO|JSON|PROTOBUF]
                             [--reference NAME=SUBJECT:VERSION ...] [--normalize]
    kbroker schemas check SUBJECT (--file F | --schema TEXT) [--version V] [--type ...]
    kbroker schemas delete SUBJECT [--version V] [--permanent]
    kbroker schemas config [SUBJECT] [--set LEVEL]

The registry is ``--registry URL`` (default ``$KBROKER_SCHEMA_REGISTRY_URL`` or
``http://127.0.0.1:8081``); ``--user USER:PASSWORD`` (or ``$KBROKER_SCHEMA_REGISTRY_USER``)
sends HTTP Basic credentials. A registry error is one line with Confluent's error code
(exit 1); ``check`` exits 1 when the schema is incompatible, so scripts and CI can gate on
it. Standard library only (urllib): nothing heavy is imported.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from kbroker.tools.common import CommandError, emit

DEFAULT_URL = "http://127.0.0.1:8081"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
TYPES = ("AVRO", "JSON", "PROTOBUF")
LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
          "FULL_TRANSITIVE")


def _parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--registry", "-r", metavar="URL",
                   default=os.environ.get("KBROKER_SCHEMA_REGISTRY_URL", DEFAULT_URL),
                   help=f"the registry (default $KBROKER_SCHEMA_REGISTRY_URL or {DEFAULT_URL})")
    p.add_argument("--user", "-u", metavar="USER:PASSWORD",
                   default=os.environ.get("KBROKER_SCHEMA_REGISTRY_USER"),
                   help="HTTP Basic credentials (default $KBROKER_SCHEMA_REGISTRY_USER)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def _schema_args(s) -> None:
    src = s.add_mutually_exclusive_group(required=True)
    src.add_argument("--file", "-f", metavar="FILE", help="the schema text from a file ('-': stdin)")
    src.add_argument("--schema", "-s", metavar="TEXT", help="the schema text")
    s.add_argument("--type", "-t", type=str.upper, choices=TYPES, default="AVRO")
    s.add_argument("--reference", action="append", default=[], metavar="NAME=SUBJECT:VERSION",
                   help="a schema reference (repeatable)")
    s.add_argument("--normalize", action="store_true", help="normalize the schema first")


def add_parser(sub, common) -> None:
    parent = _parent()
    p = sub.add_parser("schemas", help="schema registry subjects: list, get, register, check, "
                                       "delete, config")
    ssub = p.add_subparsers(dest="action", required=True)
    s = ssub.add_parser("list", parents=[parent], help="subjects with their latest version")
    s.add_argument("--deleted", action="store_true", help="soft-deleted subjects too")
    s.add_argument("--prefix", default="", metavar="P", help="only subjects starting with P")
    s.set_defaults(func=cmd_list)
    s = ssub.add_parser("get", parents=[parent], help="a version's schema")
    s.add_argument("subject", metavar="SUBJECT")
    s.add_argument("--version", "-v", default="latest", metavar="V")
    s.set_defaults(func=cmd_get)
    s = ssub.add_parser("register", parents=[parent], help="register a schema under a subject")
    s.add_argument("subject", metavar="SUBJECT")
    _schema_args(s)
    s.set_defaults(func=cmd_register)
    s = ssub.add_parser("check", parents=[parent],
                        help="is a schema compatible with a subject's versions? (exit 1 if not)")
    s.add_argument("subject", metavar="SUBJECT")
    s.add_argument("--version", "-v", default=None, metavar="V",
                   help="one version (default: the versions the subject's level looks at)")
    _schema_args(s)
    s.set_defaults(func=cmd_check)
    s = ssub.add_parser("delete", parents=[parent], help="delete a subject or one version")
    s.add_argument("subject", metavar="SUBJECT")
    s.add_argument("--version", "-v", default=None, metavar="V")
    s.add_argument("--permanent", action="store_true",
                   help="delete for good (after a soft delete, as the registry requires)")
    s.set_defaults(func=cmd_delete)
    s = ssub.add_parser("config", parents=[parent], help="show or set a compatibility level")
    s.add_argument("subject", nargs="?", metavar="SUBJECT", help="default: the global level")
    s.add_argument("--set", type=str.upper, choices=LEVELS, metavar="LEVEL",
                   help=", ".join(LEVELS))
    s.set_defaults(func=cmd_config)


# ------------------------------------------------------------------------------ HTTP

def call(args, method: str, path: str, body=None, query: dict | None = None):
    url = args.registry.rstrip("/") + path
    if query:
        url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Accept": CONTENT_TYPE, "Content-Type": CONTENT_TYPE})
    if args.user:
        req.add_header("Authorization", "Basic " + base64.b64encode(args.user.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        try:
            err = json.loads(e.read())
            raise CommandError(f"{err.get('message')} (error {err.get('error_code')})") from None
        except (ValueError, AttributeError):
            raise CommandError(f"{url}: HTTP {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        raise CommandError(f"cannot reach the schema registry at {args.registry}: {e.reason}") from None


def _q(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _schema_body(args) -> dict:
    if args.file:
        try:
            text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
        except OSError as e:
            raise CommandError(f"{args.file}: {e.strerror}") from None
    else:
        text = args.schema
    body: dict = {"schema": text}
    if args.type != "AVRO":
        body["schemaType"] = args.type
    refs = []
    for item in args.reference:
        name, eq, rest = item.partition("=")
        subject, colon, version = rest.rpartition(":")
        if not eq or not colon or not version.lstrip("-").isdigit():
            raise CommandError(f"--reference expects NAME=SUBJECT:VERSION, got {item!r}")
        refs.append({"name": name, "subject": subject, "version": int(version)})
    if refs:
        body["references"] = refs
    return body


# ------------------------------------------------------------------------------ commands

def cmd_list(args) -> int:
    rows = []
    for subject in call(args, "GET", "/subjects", query={"deleted": "true" if args.deleted else None,
                                                         "subjectPrefix": args.prefix or None}):
        try:
            v = call(args, "GET", f"/subjects/{_q(subject)}/versions/latest",
                     query={"deleted": "true" if args.deleted else None})
        except CommandError:
            continue        # deleted meanwhile
        rows.append({"subject": subject, "version": v["version"], "id": v["id"],
                     "type": v.get("schemaType", "AVRO")})
    emit(args, rows, None, ["subject", "version", "id", "type"])
    return 0


def cmd_get(args) -> int:
    v = call(args, "GET", f"/subjects/{_q(args.subject)}/versions/{_q(str(args.version))}")
    if args.json:
        emit(args, v)
    else:
        print(v["schema"])
    return 0


def cmd_register(args) -> int:
    got = call(args, "POST", f"/subjects/{_q(args.subject)}/versions", _schema_body(args),
               query={"normalize": "true" if args.normalize else None})
    emit(args, got, [{"subject": args.subject, "id": got["id"]}], ["subject", "id"])
    return 0


def cmd_check(args) -> int:
    path = f"/compatibility/subjects/{_q(args.subject)}/versions"
    if args.version is not None:
        path += f"/{_q(str(args.version))}"
    got = call(args, "POST", path, _schema_body(args),
               query={"verbose": "true", "normalize": "true" if args.normalize else None})
    if args.json:
        emit(args, got)
    else:
        print("compatible" if got["is_compatible"] else "incompatible")
        for m in got.get("messages") or []:
            print(f"  {m}")
    return 0 if got["is_compatible"] else 1


def cmd_delete(args) -> int:
    query = {"permanent": "true" if args.permanent else None}
    if args.version is None:
        got = call(args, "DELETE", f"/subjects/{_q(args.subject)}", query=query)
        rows = [{"subject": args.subject, "version": v} for v in got]
    else:
        got = call(args, "DELETE", f"/subjects/{_q(args.subject)}/versions/{_q(str(args.version))}",
                   query=query)
        rows = [{"subject": args.subject, "version": got}]
    emit(args, got, rows, ["subject", "version"])
    return 0


def cmd_config(args) -> int:
    path = "/config" + (f"/{_q(args.subject)}" if args.subject else "")
    if args.set:
        got = call(args, "PUT", path, {"compatibility": args.set})
        level = got["compatibility"]
    else:
        got = call(args, "GET", path, query={"defaultToGlobal": "true" if args.subject else None})
        level = got["compatibilityLevel"]
    emit(args, got, [{"subject": args.subject or "(global)", "compatibility": level}],
         ["subject", "compatibility"])
    return 0
