"""Streams groups (KIP-1071): StreamsGroupHeartbeat/StreamsGroupDescribe, the broker-side task
assignment of Kafka Streams applications with ``group.protocol=streams``.

- :mod:`.topology`  — the topology a client registers, resolved against the topics
  (partition counts, internal topics to create, ``Status`` codes).
- :mod:`.assignor`  — the task assignors (``sticky``, Kafka's ``mock``): active and standby tasks.
- :mod:`.warmup`    — reported task offsets and the warm-up refinement of a target assignment.
- :mod:`.state`     — group, members, epochs, reconciliation (pure).
- :mod:`.records`   — the ``StreamsGroup*`` records of ``__consumer_offsets``.
- :mod:`.config`    — ``group.streams.*`` keys and the GROUP ``streams.*`` overrides.
- :mod:`.protocol`  — the heartbeat/describe rules, replay, timers (a part of the shard).
"""
