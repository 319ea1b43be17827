"""Kafka's error codes: number, name, whether a client may retry, and a short default message.

Numbers and names follow ``org.apache.kafka.common.protocol.Errors`` (through Kafka 4.4,
code 136); ``retriable`` is true exactly when Kafka's exception class for the code extends
``RetriableException`` (directly or via ``InvalidMetadataException``) — clients use that to
decide whether to retry, refresh metadata, or fail the operation. The messages are our own
wording. Data only: nothing here does I/O.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

try:
    # the standard library's own way to make its large enums (http.HTTPStatus,
    # signal.Signals...): the same IntEnum without EnumType's per-member checks, ~4 M
    # instructions against ~9 M for these ~138 members at every start (issue 32).
    # tests/wire/test_error_codes.py checks it against an ErrorCode made the ordinary way
    from enum import _simple_enum
except ImportError:     # pragma: no cover - a Python without it: made the ordinary way
    def _simple_enum(etype):
        def make(cls):
            members = {k: v for k, v in vars(cls).items() if not k.startswith("_")}
            made = etype(cls.__name__, members, module=cls.__module__, qualname=cls.__qualname__)
            made.__doc__ = cls.__doc__
            return made
        return make

__all__ = ["ERRORS", "ErrorCode", "ErrorInfo", "error_message", "error_name", "is_retriable"]


def _members_in_class_dict(cls):
    """As the ordinary ``IntEnum`` keeps them (CPython 3.11): each member in the class's own
    dictionary, where ``_simple_enum`` leaves an ``enum.property`` whose Python-level
    ``__get__`` made every ``ErrorCode.NONE`` ~3x slower to read."""
    for name, member in cls._member_map_.items():
        if type(cls.__dict__.get(name)) is not type(member):
            type.__setattr__(cls, name, member)
    return cls


@_members_in_class_dict
@_simple_enum(IntEnum)
class ErrorCode:
    """Every error code a Kafka response may carry (int16 on the wire)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133
    GROUP_DELETION_FAILED = 134
    STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED = 135
    CONTROLLER_ID_NOT_REGISTERED = 136


class ErrorInfo(NamedTuple):
    code: int
    name: str
    retriable: bool
    message: str | None


# (code, name, retriable, default message) — one row per code, in numeric order.
_TABLE: tuple[tuple[int, str, bool, str | None], ...] = (
    (-1, 'UNKNOWN_SERVER_ERROR', False, 'The server hit an unexpected error.'),
    (0, 'NONE', False, None),
    (1, 'OFFSET_OUT_OF_RANGE', False, 'The offset is outside the range held by the partition.'),
    (2, 'CORRUPT_MESSAGE', True, 'A record batch failed its CRC or structural checks.'),
    (3, 'UNKNOWN_TOPIC_OR_PARTITION', True, 'This broker does not host the topic or partition.'),
    (4, 'INVALID_FETCH_SIZE', False, 'The fetch size is invalid.'),
    (5, 'LEADER_NOT_AVAILABLE', True, 'The partition has no leader right now (election in progress).'),
    (6, 'NOT_LEADER_OR_FOLLOWER', True, 'This broker is not the leader (or a follower) of the partition.'),
    (7, 'REQUEST_TIMED_OUT', True, 'The request timed out.'),
    (8, 'BROKER_NOT_AVAILABLE', False, 'The broker is not available.'),
    (9, 'REPLICA_NOT_AVAILABLE', True, 'The replica is not available for the partition.'),
    (10, 'MESSAGE_TOO_LARGE', False, 'A record batch is larger than the broker accepts.'),
    (11, 'STALE_CONTROLLER_EPOCH', False, 'The request came from an old controller.'),
    (12, 'OFFSET_METADATA_TOO_LARGE', False, 'The offset commit metadata is too large.'),
    (13, 'NETWORK_EXCEPTION', True, 'The connection closed before a response arrived.'),
    (14, 'COORDINATOR_LOAD_IN_PROGRESS', True, 'The coordinator is still loading its state.'),
    (15, 'COORDINATOR_NOT_AVAILABLE', True, 'The coordinator is not available.'),
    (16, 'NOT_COORDINATOR', True, 'This broker is not the coordinator for that key.'),
    (17, 'INVALID_TOPIC_EXCEPTION', False, 'The topic name is invalid or the topic may not be used this way.'),
    (18, 'RECORD_LIST_TOO_LARGE', False, 'The records are larger than a log segment.'),
    (19, 'NOT_ENOUGH_REPLICAS', True, 'Fewer in-sync replicas than required; records rejected.'),
    (20, 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', True, 'Records were written, but to fewer in-sync replicas than required.'),
    (21, 'INVALID_REQUIRED_ACKS', False, 'The acks value is invalid.'),
    (22, 'ILLEGAL_GENERATION', False, 'The group generation id is not current.'),
    (23, 'INCONSISTENT_GROUP_PROTOCOL', False, "The member's protocol type or protocols do not match the group."),
    (24, 'INVALID_GROUP_ID', False, 'The group id is invalid.'),
    (25, 'UNKNOWN_MEMBER_ID', False, 'The coordinator does not know this member id.'),
    (26, 'INVALID_SESSION_TIMEOUT', False, 'The session timeout is outside the allowed range.'),
    (27, 'REBALANCE_IN_PROGRESS', False, 'The group is rebalancing; rejoin.'),
    (28, 'INVALID_COMMIT_OFFSET_SIZE', False, 'The offset commit is too large.'),
    (29, 'TOPIC_AUTHORIZATION_FAILED', False, 'Not authorized for the topic.'),
    (30, 'GROUP_AUTHORIZATION_FAILED', False, 'Not authorized for the group.'),
    (31, 'CLUSTER_AUTHORIZATION_FAILED', False, 'Not authorized for the cluster.'),
    (32, 'INVALID_TIMESTAMP', False, 'A timestamp is outside the accepted range.'),
    (33, 'UNSUPPORTED_SASL_MECHANISM', False, 'The SASL mechanism is not enabled.'),
    (34, 'ILLEGAL_SASL_STATE', False, 'The request is not valid in the current SASL state.'),
    (35, 'UNSUPPORTED_VERSION', False, 'The API version is not supported.'),
    (36, 'TOPIC_ALREADY_EXISTS', False, 'A topic with this name exists.'),
    (37, 'INVALID_PARTITIONS', False, 'The number of partitions is invalid.'),
    (38, 'INVALID_REPLICATION_FACTOR', False, 'The replication factor is invalid for the available brokers.'),
    (39, 'INVALID_REPLICA_ASSIGNMENT', False, 'The replica assignment is invalid.'),
    (40, 'INVALID_CONFIG', False, 'The configuration is invalid.'),
    (41, 'NOT_CONTROLLER', True, 'This node is not the active controller.'),
    (42, 'INVALID_REQUEST', False, 'The request is malformed or not valid for this broker.'),
    (43, 'UNSUPPORTED_FOR_MESSAGE_FORMAT', False, 'The request needs a newer message format.'),
    (44, 'POLICY_VIOLATION', False, 'The request breaks a configured policy.'),
    (45, 'OUT_OF_ORDER_SEQUENCE_NUMBER', False, 'The producer sequence number is out of order.'),
    (46, 'DUPLICATE_SEQUENCE_NUMBER', False, 'The producer sequence number is a duplicate.'),
    (47, 'INVALID_PRODUCER_EPOCH', False, 'The producer epoch is old.'),
    (48, 'INVALID_TXN_STATE', False, 'The transaction is not in a state that allows this operation.'),
    (49, 'INVALID_PRODUCER_ID_MAPPING', False, 'The producer id does not belong to this transactional id.'),
    (50, 'INVALID_TRANSACTION_TIMEOUT', False, 'The transaction timeout is above transaction.max.timeout.ms.'),
    (51, 'CONCURRENT_TRANSACTIONS', True, 'Another transaction operation for this producer is still completing.'),
    (52, 'TRANSACTION_COORDINATOR_FENCED', False, 'A newer transaction coordinator exists for this transactional id.'),
    (53, 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', False, 'Not authorized for the transactional id.'),
    (54, 'SECURITY_DISABLED', False, 'Security features are turned off.'),
    (55, 'OPERATION_NOT_ATTEMPTED', False, 'The operation was not attempted because a related one failed.'),
    (56, 'KAFKA_STORAGE_ERROR', True, 'A disk error occurred on the broker.'),
    (57, 'LOG_DIR_NOT_FOUND', False, 'The log directory is not configured on the broker.'),
    (58, 'SASL_AUTHENTICATION_FAILED', False, 'SASL authentication failed.'),
    (59, 'UNKNOWN_PRODUCER_ID', False, 'The broker has no state for this producer id.'),
    (60, 'REASSIGNMENT_IN_PROGRESS', False, 'A partition reassignment is running.'),
    (61, 'DELEGATION_TOKEN_AUTH_DISABLED', False, 'Delegation tokens are not enabled.'),
    (62, 'DELEGATION_TOKEN_NOT_FOUND', False, 'The delegation token does not exist.'),
    (63, 'DELEGATION_TOKEN_OWNER_MISMATCH', False, 'The principal does not own or renew this delegation token.'),
    (64, 'DELEGATION_TOKEN_REQUEST_NOT_ALLOWED', False, 'Delegation token requests need an authenticated channel.'),
    (65, 'DELEGATION_TOKEN_AUTHORIZATION_FAILED', False, 'Not authorized for the delegation token.'),
    (66, 'DELEGATION_TOKEN_EXPIRED', False, 'The delegation token has expired.'),
    (67, 'INVALID_PRINCIPAL_TYPE', False, 'The principal type is not supported.'),
    (68, 'NON_EMPTY_GROUP', False, 'The group still has members.'),
    (69, 'GROUP_ID_NOT_FOUND', False, 'The group does not exist.'),
    (70, 'FETCH_SESSION_ID_NOT_FOUND', True, 'The fetch session does not exist.'),
    (71, 'INVALID_FETCH_SESSION_EPOCH', True, 'The fetch session epoch is wrong.'),
    (72, 'LISTENER_NOT_FOUND', True, "The leader has no listener matching the request's listener."),
    (73, 'TOPIC_DELETION_DISABLED', False, 'Topic deletion is turned off.'),
    (74, 'FENCED_LEADER_EPOCH', True, "The request's leader epoch is older than the broker's."),
    (75, 'UNKNOWN_LEADER_EPOCH', True, "The request's leader epoch is newer than the broker's."),
    (76, 'UNSUPPORTED_COMPRESSION_TYPE', False, "The client cannot read the partition's compression type."),
    (77, 'STALE_BROKER_EPOCH', False, 'The broker epoch is out of date.'),
    (78, 'OFFSET_NOT_AVAILABLE', True, 'The offset is not available yet (high watermark catching up).'),
    (79, 'MEMBER_ID_REQUIRED', False, 'Rejoin with the member id the coordinator assigned.'),
    (80, 'PREFERRED_LEADER_NOT_AVAILABLE', True, 'The preferred leader is not available.'),
    (81, 'GROUP_MAX_SIZE_REACHED', False, 'The group is at its maximum size.'),
    (82, 'FENCED_INSTANCE_ID', False, 'Another member with the same group.instance.id replaced this one.'),
    (83, 'ELIGIBLE_LEADERS_NOT_AVAILABLE', True, 'No eligible leader is available for the partition.'),
    (84, 'ELECTION_NOT_NEEDED', True, 'The partition needs no leader election.'),
    (85, 'NO_REASSIGNMENT_IN_PROGRESS', False, 'No partition reassignment is running.'),
    (86, 'GROUP_SUBSCRIBED_TO_TOPIC', False, 'Cannot delete offsets of a topic the group is subscribed to.'),
    (87, 'INVALID_RECORD', False, 'A record failed broker-side validation.'),
    (88, 'UNSTABLE_OFFSET_COMMIT', True, 'Pending transactional offsets must settle first.'),
    (89, 'THROTTLING_QUOTA_EXCEEDED', True, 'The throttling quota is exhausted.'),
    (90, 'PRODUCER_FENCED', False, 'A newer producer with the same transactional id exists.'),
    (91, 'RESOURCE_NOT_FOUND', False, 'The referenced resource does not exist.'),
    (92, 'DUPLICATE_RESOURCE', False, 'The same resource is referenced twice.'),
    (93, 'UNACCEPTABLE_CREDENTIAL', False, 'The credential does not meet the acceptance criteria.'),
    (94, 'INCONSISTENT_VOTER_SET', False, 'Sender or receiver is not in the current voter set.'),
    (95, 'INVALID_UPDATE_VERSION', False, 'The update version is invalid.'),
    (96, 'FEATURE_UPDATE_FAILED', False, 'Finalized features could not be updated.'),
    (97, 'PRINCIPAL_DESERIALIZATION_FAILURE', False, 'The forwarded request principal could not be read.'),
    (98, 'SNAPSHOT_NOT_FOUND', False, 'The snapshot does not exist.'),
    (99, 'POSITION_OUT_OF_RANGE', False, 'The snapshot position is out of range.'),
    (100, 'UNKNOWN_TOPIC_ID', True, 'This broker does not host a topic with that id.'),
    (101, 'DUPLICATE_BROKER_REGISTRATION', False, 'The broker id is already registered.'),
    (102, 'BROKER_ID_NOT_REGISTERED', False, 'The broker id is not registered.'),
    (103, 'INCONSISTENT_TOPIC_ID', True, "The topic id does not match the log's."),
    (104, 'INCONSISTENT_CLUSTER_ID', False, "The cluster id does not match this node's."),
    (105, 'TRANSACTIONAL_ID_NOT_FOUND', False, 'The transactional id does not exist.'),
    (106, 'FETCH_SESSION_TOPIC_ID_ERROR', True, 'The fetch session mixed topic ids and names inconsistently.'),
    (107, 'INELIGIBLE_REPLICA', False, 'The proposed ISR contains an ineligible replica.'),
    (108, 'NEW_LEADER_ELECTED', False, 'The partition state was updated, but the leader changed.'),
    (109, 'OFFSET_MOVED_TO_TIERED_STORAGE', False, 'The offset now lives in tiered storage.'),
    (110, 'FENCED_MEMBER_EPOCH', False, 'The member epoch is fenced; release partitions and rejoin.'),
    (111, 'UNRELEASED_INSTANCE_ID', False, 'Another member still holds this instance id.'),
    (112, 'UNSUPPORTED_ASSIGNOR', False, 'The group does not support this assignor or version.'),
    (113, 'STALE_MEMBER_EPOCH', False, 'The member epoch is stale; heartbeat to learn the current one.'),
    (114, 'MISMATCHED_ENDPOINT_TYPE', False, 'The request reached an endpoint of the wrong type.'),
    (115, 'UNSUPPORTED_ENDPOINT_TYPE', False, 'The endpoint type is not supported.'),
    (116, 'UNKNOWN_CONTROLLER_ID', False, 'The controller id is unknown.'),
    (117, 'UNKNOWN_SUBSCRIPTION_ID', False, 'The telemetry subscription id is unknown or outdated.'),
    (118, 'TELEMETRY_TOO_LARGE', False, 'The telemetry push is too large.'),
    (119, 'INVALID_REGISTRATION', False, 'The controller rejected the broker registration.'),
    (120, 'TRANSACTION_ABORTABLE', False, 'The transaction failed; abort it to continue.'),
    (121, 'INVALID_RECORD_STATE', False, 'The record state does not allow this acknowledgement.'),
    (122, 'SHARE_SESSION_NOT_FOUND', True, 'The share session does not exist.'),
    (123, 'INVALID_SHARE_SESSION_EPOCH', True, 'The share session epoch is wrong.'),
    (124, 'FENCED_STATE_EPOCH', False, 'The share-group state epoch does not match.'),
    (125, 'INVALID_VOTER_KEY', False, 'The voter key does not match the receiving replica.'),
    (126, 'DUPLICATE_VOTER', False, 'The voter is already in the voter set.'),
    (127, 'VOTER_NOT_FOUND', False, 'The voter is not in the voter set.'),
    (128, 'INVALID_REGULAR_EXPRESSION', False, 'The regular expression is invalid.'),
    (129, 'REBOOTSTRAP_REQUIRED', False, 'Client metadata is stale; rebootstrap.'),
    (130, 'STREAMS_INVALID_TOPOLOGY', False, 'The streams topology is invalid.'),
    (131, 'STREAMS_INVALID_TOPOLOGY_EPOCH', False, 'The streams topology epoch is invalid.'),
    (132, 'STREAMS_TOPOLOGY_FENCED', False, 'The streams topology epoch is outdated.'),
    (133, 'SHARE_SESSION_LIMIT_REACHED', True, 'The broker has reached its share session limit.'),
    (134, 'GROUP_DELETION_FAILED', False, 'A group could not be deleted; the result says why.'),
    (135, 'STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED', False,
     'The topology description update was not processed; the message says why.'),
    (136, 'CONTROLLER_ID_NOT_REGISTERED', False, 'No controller is registered with this id.'),
)

# that the table and ErrorCode agree is tests/wire/test_error_codes.py's to check, not every
# start's (the two walks over the enum were ~2 M instructions)
ERRORS: dict[int, ErrorInfo] = {row[0]: ErrorInfo(*row) for row in _TABLE}


def is_retriable(code: int) -> bool:
    """Whether clients treat ``code`` as transient. Unknown codes are not retriable."""
    info = ERRORS.get(int(code))
    return info.retriable if info is not None else False


def error_name(code: int) -> str:
    info = ERRORS.get(int(code))
    return info.name if info is not None else f"UNKNOWN_ERROR_CODE_{int(code)}"


def error_message(code: int) -> str | None:
    """Default human-readable message (None for NONE); for unknown codes a generic sentence."""
    info = ERRORS.get(int(code))
    if info is None:
        return f"Unrecognised error code {int(code)}."
    return info.message
