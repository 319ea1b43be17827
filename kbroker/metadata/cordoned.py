"""Cordoned log directories (KIP-1066), as Kafka 4.4's controller keeps them.

A broker names the directory ids of its cordoned log dirs (``cordoned.log.dirs``) in every
heartbeat once it has caught up (``BrokerHeartbeat`` v2 ``CordonedLogDirs``; null before).
From ``metadata.version`` 4.3-IV0 the controller writes a list that differs from the one
registered as a ``BrokerRegistrationChangeRecord`` (Kafka's ``handleDirectoriesCordoned``:
compared as sets; null changes nothing), so every controller and broker knows it from the log.

Placement (Kafka's ``BrokerRegistration.hasUncordonedDirs``): a broker whose registered log
dirs are all cordoned takes no new replica -- the controller's placement leaves it out, and a
manual assignment naming it is INVALID_REPLICA_ASSIGNMENT. A broker that registered no dirs,
or has one dir not cordoned, takes replicas as before; which of its dirs holds a new replica
is the broker's choice (its log manager leaves the cordoned ones out).

Not done: Kafka's write of an empty list for a broker whose registration has none yet (the
image keeps "none" and "empty" alike, so kbroker writes nothing there).
"""
from __future__ import annotations

import uuid
from typing import Iterable

from kbroker.wire import messages

CORDONED_METADATA_VERSION = 30        # 4.3-IV0 (Kafka's isCordonedLogDirsSupported)


def supported(metadata_version: int | None) -> bool:
    return metadata_version is not None and metadata_version >= CORDONED_METADATA_VERSION


def change_record(image, broker_id: int, broker_epoch: int,
                  cordoned: Iterable[uuid.UUID] | None) -> messages.BrokerRegistrationChangeRecord | None:
    """The record of a heartbeat's ``CordonedLogDirs``, or None when nothing changes."""
    b = image.brokers.get(broker_id)
    if cordoned is None or b is None or not supported(image.features.get("metadata.version")):
        return None
    wanted = list(cordoned)
    if set(wanted) == set(b.cordoned_log_dirs):
        return None
    return messages.BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker_epoch,
                                                   cordoned_log_dirs=wanted)


def takes_new_replicas(broker) -> bool:
    """Kafka's ``hasUncordonedDirs``: no registered dirs, or one that is not cordoned."""
    if not broker.log_dirs:
        return True
    return bool(set(broker.log_dirs) - set(broker.cordoned_log_dirs))
