"""Authorized operations (KIP-430) as a broker without an authorizer answers them.

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


def authorized(requested: bool, operations: int) -> int:
    return operations if requested else NOT_REQUESTED
