"""``kbroker users``: SCRAM credentials (``kafka-configs.sh --entity-type users``;
DescribeUserScramCredentials and AlterUserScramCredentials, KIP-554).

    kbroker users list                          every user with a credential: mechanism, iterations
    kbroker users describe USER ...             the same for the named users (missing: error)
    kbroker users set-password USER (--password PW | --password-stdin)
                               [--mechanism SCRAM-SHA-256|SCRAM-SHA-512 ...] [--iterations N]
    kbroker users delete USER ... [--mechanism M ...]

``set-password`` salts and hashes on the client (librdkafka's AlterUserScramCredentials:
random salt, PBKDF2), so the password never travels; the mechanism defaults to SCRAM-SHA-512 and
the iterations to 4096 (Kafka accepts 4096-16384). ``delete`` without ``--mechanism`` deletes
every mechanism the user has. Salts and keys are never shown: brokers do not return them.
"""
from __future__ import annotations

import sys

from kbroker.tools.common import CommandError, UsageError, connect, emit

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


def _describe(args, users) -> dict:
    """{user: [(mechanism, iterations)]}; CommandError naming a user that has none."""
    conn = connect(args)
    a = conn.admin()
    if users is None:
        got = conn.wait(a.describe_user_scram_credentials(None, request_timeout=conn.timeout),
                        "list the SCRAM users", a)
    else:
        got = conn.wait_all(a.describe_user_scram_credentials(users, request_timeout=conn.timeout),
                            lambda u: f"describe user {u}", a)
        for user, d in got.items():
            if hasattr(d, "code"):
                raise conn.fail(d, f"user {user}")
    return {u: [(i.mechanism.name.replace("_", "-"), i.iterations) for i in d.scram_credential_infos]
            for u, d in got.items()}


def _rows(described) -> list[dict]:
    rows = [{"user": user, "mechanism": m, "iterations": it}
            for user, infos in described.items() for m, it in infos]
    return sorted(rows, key=lambda r: (r["user"], r["mechanism"]))   # Kafka's order is its own


def cmd_list(args) -> int:
    emit(args, _rows(_describe(args, None)), None, ["user", "mechanism", "iterations"])
    return 0


def cmd_describe(args) -> int:
    emit(args, _rows(_describe(args, list(dict.fromkeys(args.users)))), None,
         ["user", "mechanism", "iterations"])
    return 0


def _alter(args, alterations, what: str) -> None:
    conn = connect(args)
    a = conn.admin()
    got = conn.wait_all(a.alter_user_scram_credentials(alterations, request_timeout=conn.timeout),
                        lambda u: f"{what} of user {u}", a)
    for user, err in sorted(got.items()):
        if err is not None and hasattr(err, "code"):
            raise conn.fail(err, f"{what} of user {user}")


def _mechanism(name: str):
    from confluent_kafka.admin import ScramMechanism
    return ScramMechanism[name.replace("-", "_")]


def cmd_set_password(args) -> int:
    from confluent_kafka.admin import ScramCredentialInfo, UserScramCredentialUpsertion
    password = args.password
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise UsageError("the password is empty")
    mechanisms = list(dict.fromkeys(args.mechanism or ["SCRAM-SHA-512"]))
    _alter(args, [UserScramCredentialUpsertion(args.user, ScramCredentialInfo(_mechanism(m), args.iterations),
                                               password.encode()) for m in mechanisms],
           "cannot set the password")
    if args.json:
        emit(args, {"user": args.user, "mechanisms": mechanisms, "iterations": args.iterations})
    else:
        print(f"Set {', '.join(mechanisms)} credentials of user '{args.user}'.")
    return 0


def cmd_delete(args) -> int:
    from confluent_kafka.admin import UserScramCredentialDeletion
    users = list(dict.fromkeys(args.users))
    if args.mechanism:
        pairs = [(u, m) for u in users for m in dict.fromkeys(args.mechanism)]
    else:
        pairs = [(r["user"], r["mechanism"]) for r in _rows(_describe(args, users))]
    if not pairs:
        raise CommandError(f"no SCRAM credentials to delete for {', '.join(users)}")
    _alter(args, [UserScramCredentialDeletion(u, _mechanism(m)) for u, m in pairs], "cannot delete the credentials")
    if args.json:
        emit(args, [{"user": u, "mechanism": m} for u, m in pairs])
    else:
        for u, m in pairs:
            print(f"Deleted {m} credentials of user '{u}'.")
    return 0
