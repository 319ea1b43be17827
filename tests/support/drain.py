"""Read a kafka-python consumer's records up to the end offsets of its assigned partitions,
so a test that expects exactly N records stops there instead of waiting out
``consumer_timeout_ms`` (which stays the bound when fewer records come)."""
from __future__ import annotations


def values_to_end(consumer) -> list[bytes]:
    values = []
    for record in consumer:
        values.append(record.value)
        tps = list(consumer.assignment())
        ends = consumer.end_offsets(tps)
        if all(consumer.position(tp) >= ends[tp] for tp in tps):
            break
    return values
