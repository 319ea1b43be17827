"""Authorized operations (KIP-430) as a broker without an authorizer answers them
(with one, ``RequestContext.authorized_operations`` computes them from the ACLs).

Kafka with no authorizer allows every operation, so when a client asks for a resource's
authorized operations it gets the full bit set of that resource type (bit N set for ACL
operation N): Metadata's topics, DescribeGroups' groups, Metadata v8–v10's and
DescribeCluster's cluster. When not asked, the field keeps Kafka's "not requested" value.
"""
from __future__ import annotations

NOT_REQUESTED = -(2 ** 31)

# READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11
TOPIC_OPERATIONS = 3576
# READ 3, DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11
GROUP_OPERATIONS = 3400
# CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
# IDEMPOTENT_WRITE 12
CLUSTER_OPERATIONS = 8096

# TRANSACTIONAL_ID: WRITE 4, DESCRIBE 8; DELEGATION_TOKEN: DESCRIBE 8
ALL_OPERATIONS = {2: TOPIC_OPERATIONS, 3: GROUP_OPERATIONS, 4: CLUSTER_OPERATIONS, 5: 272, 6: 256}


def authorized(requested: bool, operations: int) -> int:
    return operations if requested else NOT_REQUESTED


def denied_names(ctx, operation: int, resource_type: int, names) -> frozenset:
    """The names among ``names`` the request's principal may not ``operation`` (empty, at
    the cost of one attribute test, when no authorizer is configured)."""
    if ctx.authorizer is None:
        return frozenset()
    names = {n for n in names if n is not None}
    return frozenset(names - ctx.authorized_names(operation, resource_type, names))


def denied_topics(ctx, operation: int, names) -> frozenset:
    return denied_names(ctx, operation, 2, names)


def config_denied(ctx, operation: int, resource_type: int, name: str):
    """(code, message) when the principal may not ``operation`` (DESCRIBE_CONFIGS or
    ALTER_CONFIGS) the config resource — a topic (ConfigResource type 2) is checked on the
    topic, a broker (4) or broker logger (8) on the cluster, as Kafka's ConfigHelper — or None."""
    if ctx.authorizer is None:
        return None
    if resource_type == 2:
        if not ctx.authorize(operation, 2, name):
            return 29, None                       # TOPIC_AUTHORIZATION_FAILED
    elif resource_type in (4, 8):
        if not ctx.authorize_cluster(operation):
            return 31, None                       # CLUSTER_AUTHORIZATION_FAILED
    return None
