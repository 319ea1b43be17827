"""Reads of cluster metadata for the gateway, through the Metadata handler (API key 3) so
that topics the principal may not DESCRIBE stay hidden and auto-creation follows the
broker's ``auto.create.topics.enable`` — exactly what a client's Metadata request gets."""
from __future__ import annotations

import trio

from kbroker.metadata.image import INTERNAL_TOPICS
from kbroker.wire import messages
from kbroker.wire.error_codes import ErrorCode

from . import errors
from .errors import RestError, from_kafka
from .inproc import call_api

METADATA_VERSION = 12
# how long a topic being auto-created is waited for, and how often it is looked up
CREATE_WAIT_S = 10.0
CREATE_POLL_S = 0.05


async def metadata(broker, topics: list[str] | None, *, auto_create: bool = False):
    R = messages.MetadataRequest
    req = R(topics=None if topics is None else [R.MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=auto_create, include_topic_authorized_operations=False)
    return await call_api(broker, 3, METADATA_VERSION, req)


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS or name.startswith("__")


async def topic(broker, name: str, *, auto_create: bool = False, v3: bool = False):
    """The Metadata answer for one topic; 404 (40401) when it does not exist, 403 when
    the principal may not see it, waiting out an auto-creation in progress."""
    # Kafka 4.3+ answers UNKNOWN_TOPIC_OR_PARTITION to the Metadata request that starts an
    # auto-creation (and until the topic exists), as a client sees it: with auto-creation on,
    # that answer is waited out like LEADER_NOT_AVAILABLE, and only a topic that never
    # appears is not found
    creating = auto_create and bool(broker.config.get("auto.create.topics.enable"))
    not_found = RestError(404, 404 if v3 else errors.TOPIC_NOT_FOUND,
                          "This server does not host this topic-partition." if v3
                          else "Topic not found.")
    with trio.move_on_after(CREATE_WAIT_S):
        while True:
            resp = await metadata(broker, [name], auto_create=auto_create)
            t = resp.topics[0]
            if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                if not creating:
                    raise not_found
                await trio.sleep(CREATE_POLL_S)
                continue
            if t.error_code in (ErrorCode.LEADER_NOT_AVAILABLE,) or (
                    not t.error_code and any(p.error_code == ErrorCode.LEADER_NOT_AVAILABLE
                                             for p in t.partitions) and auto_create):
                await trio.sleep(CREATE_POLL_S)
                continue
            if t.error_code:
                raise from_kafka(t.error_code, v3=v3)
            return t
    if creating and t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        raise not_found
    raise RestError(500, 500 if v3 else errors.KAFKA_RETRIABLE_ERROR,
                    f"topic {name!r} has no leader yet (LEADER_NOT_AVAILABLE)")


def partition_of(t, partition: int, *, v3: bool = False):
    for p in t.partitions:
        if p.partition_index == partition:
            return p
    raise RestError(404, 404 if v3 else errors.PARTITION_NOT_FOUND,
                    "This server does not host this topic-partition." if v3 else "Partition not found.")


def parse_partition(text: str, *, v3: bool = False) -> int:
    try:
        value = int(text)
    except ValueError:
        raise RestError(404, 404 if v3 else errors.PARTITION_NOT_FOUND,
                        f"Partition not found: {text!r} is not a partition number") from None
    return value
