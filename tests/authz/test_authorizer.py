"""The StandardAuthorizer's rules as tables (examples from Kafka's StandardAuthorizerTest /
AclAuthorizerTest semantics), plus ACL records replayed through the metadata image and a
snapshot."""
from __future__ import annotations

import uuid

import pytest

from kbroker.authz.acls import (ALL, ALLOW, ALTER, ALTER_CONFIGS, CLUSTER, CREATE, DELETE, DENY,
                                DESCRIBE, DESCRIBE_CONFIGS, GROUP, IDEMPOTENT_WRITE, LITERAL, MATCH,
                                O_ANY, P_ANY, PERM_ANY, PREFIXED, R_ANY, READ, TOPIC, WRITE, Acl,
                                Filter, validate_new)
from kbroker.authz.authorizer import (AclIndex, authorize, authorize_by_resource_type,
                                      authorized_operations, parse_super_users)
from kbroker.authz.tokens import TokenInfo
from kbroker.metadata import snapshot
from kbroker.metadata.image import empty_image, replay_all
from kbroker.wire import messages

ALICE, BOB = "User:alice", "User:bob"
H1, H2 = "10.0.0.1", "10.0.0.2"


def acl(name, op, perm=ALLOW, principal=ALICE, host="*", rtype=TOPIC, pattern=LITERAL):
    return Acl(rtype, name, pattern, principal, host, op, perm)


# (ACLs, principal, host, operation, resource type, resource name, allow_if_no_acl, expected)
CASES = [
    ("no ACLs, default deny", [], ALICE, H1, READ, TOPIC, "t", False, False),
    ("no ACLs, allow everyone", [], ALICE, H1, READ, TOPIC, "t", True, True),
    ("literal allow", [acl("t", READ)], ALICE, H1, READ, TOPIC, "t", False, True),
    ("literal allow other op", [acl("t", READ)], ALICE, H1, WRITE, TOPIC, "t", False, False),
    ("literal other name", [acl("t", READ)], ALICE, H1, READ, TOPIC, "t2", False, False),
    ("literal other name, allow everyone (no ACL on t2)", [acl("t", READ)], ALICE, H1, READ, TOPIC,
     "t2", True, True),
    ("ACL for someone else blocks allow-everyone", [acl("t", READ, principal=BOB)], ALICE, H1, READ,
     TOPIC, "t", True, False),
    ("other principal", [acl("t", READ)], BOB, H1, READ, TOPIC, "t", False, False),
    ("wildcard principal", [acl("t", READ, principal="User:*")], BOB, H1, READ, TOPIC, "t", False, True),
    ("wildcard resource", [acl("*", READ)], ALICE, H1, READ, TOPIC, "anything", False, True),
    ("prefixed", [acl("foo", READ, pattern=PREFIXED)], ALICE, H1, READ, TOPIC, "foobar", False, True),
    ("prefixed equal name", [acl("foo", READ, pattern=PREFIXED)], ALICE, H1, READ, TOPIC, "foo", False, True),
    ("prefixed not a prefix", [acl("foo", READ, pattern=PREFIXED)], ALICE, H1, READ, TOPIC, "fo", False, False),
    ("literal is not a prefix", [acl("foo", READ)], ALICE, H1, READ, TOPIC, "foobar", False, False),
    ("host match", [acl("t", READ, host=H1)], ALICE, H1, READ, TOPIC, "t", False, True),
    ("host mismatch", [acl("t", READ, host=H1)], ALICE, H2, READ, TOPIC, "t", False, False),
    ("deny wins over allow", [acl("t", READ), acl("t", READ, DENY)], ALICE, H1, READ, TOPIC, "t", False, False),
    ("prefixed deny wins over literal allow", [acl("t", READ), acl("", READ, DENY, pattern=PREFIXED)],
     ALICE, H1, READ, TOPIC, "t", False, False),
    ("wildcard deny wins", [acl("t", ALL), acl("*", ALL, DENY, principal="User:*")], ALICE, H1, WRITE,
     TOPIC, "t", False, False),
    ("deny for other host does not apply", [acl("t", READ), acl("t", READ, DENY, host=H2)], ALICE, H1,
     READ, TOPIC, "t", False, True),
    ("ALL allows everything", [acl("t", ALL)], ALICE, H1, DELETE, TOPIC, "t", False, True),
    ("READ implies DESCRIBE", [acl("t", READ)], ALICE, H1, DESCRIBE, TOPIC, "t", False, True),
    ("WRITE implies DESCRIBE", [acl("t", WRITE)], ALICE, H1, DESCRIBE, TOPIC, "t", False, True),
    ("DELETE implies DESCRIBE", [acl("t", DELETE)], ALICE, H1, DESCRIBE, TOPIC, "t", False, True),
    ("ALTER implies DESCRIBE", [acl("t", ALTER)], ALICE, H1, DESCRIBE, TOPIC, "t", False, True),
    ("CREATE does not imply DESCRIBE", [acl("t", CREATE)], ALICE, H1, DESCRIBE, TOPIC, "t", False, False),
    ("ALTER_CONFIGS implies DESCRIBE_CONFIGS", [acl("t", ALTER_CONFIGS)], ALICE, H1, DESCRIBE_CONFIGS,
     TOPIC, "t", False, True),
    ("DESCRIBE implies nothing else", [acl("t", DESCRIBE)], ALICE, H1, READ, TOPIC, "t", False, False),
    ("DENY READ does not deny DESCRIBE", [acl("t", DESCRIBE), acl("t", READ, DENY)], ALICE, H1,
     DESCRIBE, TOPIC, "t", False, True),
    ("DENY ALL denies DESCRIBE", [acl("t", DESCRIBE), acl("t", ALL, DENY)], ALICE, H1, DESCRIBE, TOPIC,
     "t", False, False),
    ("resource types are separate", [acl("g", READ)], ALICE, H1, READ, GROUP, "g", False, False),
    ("group ACL", [acl("g", READ, rtype=GROUP)], ALICE, H1, READ, GROUP, "g", False, True),
    ("cluster ACL", [acl("kafka-cluster", IDEMPOTENT_WRITE, rtype=CLUSTER)], ALICE, H1, IDEMPOTENT_WRITE,
     CLUSTER, "kafka-cluster", False, True),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_authorize_table(case):
    _, acls, principal, host, op, rtype, name, allow_everyone, expected = case
    assert authorize(AclIndex.build(acls), principal, host, op, rtype, name,
                     frozenset(), allow_everyone) is expected


def test_super_users_bypass_deny():
    index = AclIndex.build([acl("t", ALL, DENY, principal="User:*")])
    supers = parse_super_users(" User:admin ; User:root;")
    assert supers == {"User:admin", "User:root"}
    assert authorize(index, "User:admin", H1, WRITE, TOPIC, "t", supers, False)
    assert not authorize(index, ALICE, H1, WRITE, TOPIC, "t", supers, True)


def test_authorize_by_resource_type():
    idx = AclIndex.build([acl("foo", WRITE, pattern=PREFIXED)])
    assert authorize_by_resource_type(idx, ALICE, H1, WRITE, TOPIC)
    assert not authorize_by_resource_type(idx, BOB, H1, WRITE, TOPIC)
    shadowed = AclIndex.build([acl("foobar", WRITE), acl("foo", WRITE, DENY, pattern=PREFIXED)])
    assert not authorize_by_resource_type(shadowed, ALICE, H1, WRITE, TOPIC)
    assert authorize_by_resource_type(AclIndex.build([]), ALICE, H1, WRITE, TOPIC, allow_if_no_acl=True)


def test_authorized_operations_bitfield():
    idx = AclIndex.build([acl("t", READ), acl("t", ALTER_CONFIGS)])
    bits = authorized_operations(idx, ALICE, H1, TOPIC, "t")
    assert bits == (1 << READ) | (1 << DESCRIBE) | (1 << ALTER_CONFIGS) | (1 << DESCRIBE_CONFIGS)
    assert authorized_operations(idx, BOB, H1, TOPIC, "t") == 0


@pytest.mark.parametrize("bad, message", [
    (Acl(R_ANY, "t", LITERAL, ALICE, "*", READ, ALLOW), "Invalid resourceType ANY"),
    (Acl(TOPIC, "t", MATCH, ALICE, "*", READ, ALLOW), "Invalid patternType MATCH"),
    (Acl(TOPIC, "t", LITERAL, ALICE, "*", O_ANY, ALLOW), "Invalid operation ANY"),
    (Acl(TOPIC, "t", LITERAL, ALICE, "*", READ, PERM_ANY), "Invalid permissionType ANY"),
    (Acl(TOPIC, "", LITERAL, ALICE, "*", READ, ALLOW), "Resource name should not be empty"),
    (Acl(TOPIC, "t", LITERAL, "alice", "*", READ, ALLOW), "Could not parse principal"),
    (Acl(CLUSTER, "c", LITERAL, ALICE, "*", ALTER, ALLOW), "kafka-cluster"),
    (Acl(TOPIC, "t", LITERAL, ALICE, "", READ, ALLOW), "Host pattern cannot be null or empty"),
])
def test_validate_new(bad, message):
    code, text = validate_new(bad)
    assert code == "INVALID_REQUEST" and message in text
    assert validate_new(acl("t", READ)) is None


@pytest.mark.parametrize("host, mv, want", [
    ("10.0.0.0/8", 32, None),                      # 4.4-IV1
    ("2001:db8::/32", 33, None),
    ("10.1.2.3/8", 32, None),                      # host bits ignored, as commons-net's SubnetUtils
    ("10.0.0.0/8", 31, ("UNSUPPORTED_VERSION",
                        "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.")),
    ("10.0.0.0/33", 32, "INVALID_REQUEST"),
    ("10.0.0.0/x", 32, "INVALID_REQUEST"),
    ("300.0.0.0/8", 32, "INVALID_REQUEST"),
    ("10.0.0.1", 20, None),                        # a plain address at any level
])
def test_cidr_hosts_need_4_4_iv1(host, mv, want):
    got = validate_new(Acl(TOPIC, "t", LITERAL, ALICE, host, READ, ALLOW), mv)
    if isinstance(want, str):
        assert got[0] == want and got[1].startswith(f"Invalid CIDR notation '{host}': "), got
    else:
        assert got == want


def test_cidr_hosts_match_the_addresses_in_their_block():
    idx = AclIndex.build([Acl(TOPIC, "t", LITERAL, ALICE, "10.0.0.0/8", READ, ALLOW),
                          Acl(TOPIC, "t", LITERAL, ALICE, "10.9.0.0/16", READ, DENY),
                          Acl(TOPIC, "t", LITERAL, ALICE, "2001:db8::/32", WRITE, ALLOW)])
    assert authorize(idx, ALICE, "10.1.2.3", READ, TOPIC, "t")
    assert authorize(idx, ALICE, "10.0.0.0", READ, TOPIC, "t")          # network and broadcast
    assert authorize(idx, ALICE, "10.255.255.255", READ, TOPIC, "t")    # addresses count
    assert not authorize(idx, ALICE, "10.9.1.1", READ, TOPIC, "t")      # the narrower DENY
    assert not authorize(idx, ALICE, "11.0.0.1", READ, TOPIC, "t")
    assert authorize(idx, ALICE, "2001:db8::7", WRITE, TOPIC, "t")
    assert not authorize(idx, ALICE, "10.1.2.3", WRITE, TOPIC, "t")     # v4 client, v6 block
    assert authorize_by_resource_type(idx, ALICE, "10.1.2.3", READ, TOPIC)
    assert not authorize_by_resource_type(idx, ALICE, "12.0.0.1", READ, TOPIC)


def test_filters():
    lit, pre, wild = acl("foo", READ), acl("fo", READ, pattern=PREFIXED), acl("*", READ)
    other = acl("bar", WRITE, DENY, principal=BOB, host=H2, rtype=GROUP)
    everything = [lit, pre, wild, other]

    def sel(**kw):
        f = Filter(**kw)
        return [a for a in everything if f.matches(a)]
    assert sel() == everything
    assert sel(resource_type=TOPIC) == [lit, pre, wild]
    assert sel(resource_type=TOPIC, resource_name="foo", pattern_type=MATCH) == [lit, pre, wild]
    assert sel(resource_name="foo", pattern_type=LITERAL) == [lit]
    assert sel(resource_name="foo", pattern_type=P_ANY) == [lit]
    assert sel(resource_name="fo", pattern_type=PREFIXED) == [pre]
    assert sel(principal=BOB) == [other]
    assert sel(host=H2, operation=WRITE, permission=DENY) == [other]
    assert Filter(resource_type=0).error() and Filter(operation=0).error()
    assert Filter().error() is None


def test_acl_records_replay_and_snapshot():
    ids = [uuid.uuid4() for _ in range(3)]
    acls = [acl("t", READ), acl("g", READ, rtype=GROUP), acl("p", WRITE, pattern=PREFIXED)]
    img = replay_all(empty_image("c", 1), [a.to_record(i) for a, i in zip(acls, ids)])
    assert dict(img.acls) == dict(zip(ids, acls))
    assert authorize(img.acl_index, ALICE, H1, WRITE, TOPIC, "px")
    img2 = replay_all(img, [messages.RemoveAccessControlEntryRecord(id=ids[2])])
    assert not authorize(img2.acl_index, ALICE, H1, WRITE, TOPIC, "px")
    assert img.acl_index is not img2.acl_index
    # unrelated records keep the same index object
    assert replay_all(img2, [messages.NoOpRecord()]).acl_index is img2.acl_index
    with pytest.raises(ValueError):
        replay_all(img2, [messages.RemoveAccessControlEntryRecord(id=ids[2])])
    token = TokenInfo("tok-1", ALICE, BOB, ("User:carol",), 1, 100, 50)
    img2 = replay_all(img2, [token.to_record()])
    assert img2.delegation_token("tok-1") == token
    again = snapshot.load(snapshot.dump(img2), "c", 1, img2.offset + 1)
    assert dict(again.acls) == dict(img2.acls)
    assert dict(again.delegation_tokens) == {"tok-1": token}
    assert replay_all(again, [messages.RemoveDelegationTokenRecord(token_id="tok-1")]).delegation_tokens == {}
