"""``kbroker users``: SCRAM credentials (``kafka-configs.sh --entity-type users``;
DescribeUserScramCredentials and AlterUserScramCredentials, KIP-554).

    kbroker users list                          every user with a credential: mechanism, iterations
    kbroker users describe USER ...             the same for the named users (missing: error)
    kbroker users set-password USER (--password PW | --password-stdin)
                               [--mechanism SCRAM-SHA-256|SCRAM-SHA-512 ...] [--iterations N]
    kbroker users delete USER ... [--mechanism M ...]

``set-password`` salts and hashes on the client (kafka-python's ``UserScramCredentialUpsertion``:
random salt, PBKDF2), so the password never travels; the mechanism defaults to SCRAM-SHA-512 and
the iterations to 4096 (Kafka accepts 4096-16384). ``delete`` without ``--mechanism`` deletes
every mechanism the user has. Salts and keys are never shown: brokers do not return them.
"""
from __future__ import annotations

import sys

from kbroker.tools.common import CommandError, admin, emit

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def add_parser(sub, parent) -> None:
    p = sub.add_parser("users", help="SCRAM users: list, describe, set-password, delete")
    usub = p.add_subparsers(dest="action", required=True)
    s = usub.add_parser("list", parents=[parent], help="users with SCRAM credentials")
    s.set_defaults(func=cmd_list)
    s = usub.add_parser("describe", parents=[parent], help="the credentials of the named users")
    s.add_argument("users", nargs="+", metavar="USER")
    s.set_defaults(func=cmd_describe)
    s = usub.add_parser("set-password", parents=[parent], help="create or update a SCRAM credential")
    s.add_argument("user", metavar="USER")
    pw = s.add_mutually_exclusive_group(required=True)
    pw.add_argument("--password", metavar="PW")
    pw.add_argument("--password-stdin", action="store_true", help="read the password (one line) from stdin")
    s.add_argument("--mechanism", action="append", default=[], type=str.upper, choices=MECHANISMS,
                   help="default SCRAM-SHA-512 (repeatable)")
    s.add_argument("--iterations", type=int, default=4096, metavar="N", help="default 4096")
    s.set_defaults(func=cmd_set_password)
    s = usub.add_parser("delete", parents=[parent], help="delete SCRAM credentials")
    s.add_argument("users", nargs="+", metavar="USER")
    s.add_argument("--mechanism", action="append", default=[], type=str.upper, choices=MECHANISMS,
                   help="default: every mechanism the user has")
    s.set_defaults(func=cmd_delete)


def _describe(args, users):
    from kafka.errors import KafkaError
    a = admin(args)
    try:
        return a.describe_user_scram_credentials(users)
    except KafkaError as e:
        raise CommandError(f"describe users: {type(e).__name__}: {e}") from None
    finally:
        a.close()


def _rows(described) -> list[dict]:
    rows = [{"user": user, "mechanism": info["mechanism"].name.replace("_", "-"),
             "iterations": info["iterations"]}
            for user, d in described.items() for info in d["credential_infos"]]
    return sorted(rows, key=lambda r: (r["user"], r["mechanism"]))   # Kafka's order is its own


def _show(args, described) -> None:
    errors = [f"{u}: {d['error']}" for u, d in sorted(described.items()) if d["error"]]
    if errors:
        raise CommandError("; ".join(errors))
    emit(args, _rows(described), None, ["user", "mechanism", "iterations"])


def cmd_list(args) -> int:
    _show(args, _describe(args, None))
    return 0


def cmd_describe(args) -> int:
    _show(args, _describe(args, list(dict.fromkeys(args.users))))
    return 0


def _alter(args, alterations, what: str) -> None:
    from kafka.errors import KafkaError
    a = admin(args)
    try:
        result = a.alter_user_scram_credentials(alterations)
    except KafkaError as e:
        raise CommandError(f"{what}: {type(e).__name__}: {e}") from None
    finally:
        a.close()
    errors = [f"{u}: {msg}" for u, msg in sorted(result.items()) if msg]
    if errors:
        raise CommandError(f"{what}: " + "; ".join(errors))


def cmd_set_password(args) -> int:
    from kafka.admin import UserScramCredentialUpsertion
    password = args.password
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise CommandError("the password is empty")
    mechanisms = list(dict.fromkeys(args.mechanism or ["SCRAM-SHA-512"]))
    _alter(args, [UserScramCredentialUpsertion(args.user, m, password, iterations=args.iterations)
                  for m in mechanisms], f"set the password of {args.user}")
    if args.json:
        emit(args, {"user": args.user, "mechanisms": mechanisms, "iterations": args.iterations})
    else:
        print(f"Set {', '.join(mechanisms)} credentials of user '{args.user}'.")
    return 0


def cmd_delete(args) -> int:
    from kafka.admin import UserScramCredentialDeletion
    users = list(dict.fromkeys(args.users))
    if args.mechanism:
        pairs = [(u, m) for u in users for m in dict.fromkeys(args.mechanism)]
    else:
        described = _describe(args, users)
        missing = [f"{u}: {d['error']}" for u, d in sorted(described.items()) if d["error"]]
        if missing:
            raise CommandError("; ".join(missing))
        pairs = [(r["user"], r["mechanism"]) for r in _rows(described)]
    _alter(args, [UserScramCredentialDeletion(u, m) for u, m in pairs], "delete credentials")
    if args.json:
        emit(args, [{"user": u, "mechanism": m} for u, m in pairs])
    else:
        for u, m in pairs:
            print(f"Deleted {m} credentials of user '{u}'.")
    return 0
