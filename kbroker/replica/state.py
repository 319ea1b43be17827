"""Partition replication state: pure rules (placeholder, filled in the next step)."""
from __future__ import annotations

from kbroker.wire.error_codes import ErrorCode


def acks_all_outcome(high_watermark: int, required_offset: int, isr_size: int,
                     min_insync_replicas: int) -> int | None:
    """Kafka's DelayedProduce completion: once the high watermark reaches
    ``required_offset`` the answer is NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
    committed ISR shrank below ``min.insync.replicas`` meanwhile; None = keep waiting."""
    if high_watermark >= required_offset:
        if isr_size < min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE
    return None
