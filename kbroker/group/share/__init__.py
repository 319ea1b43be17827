"""Share groups (KIP-932, Kafka 4.3): queues on Kafka topics.

- :mod:`.state`    — a ShareGroup and its members: group and member epochs, the simple
  assignor, session timeouts and fencing; pure data and rules (events with ``now_ms`` in).
- :mod:`.config`   — the ``group.share.*`` broker settings and the GROUP config keys.
- :mod:`.coordinator` — the trio-side holder: one table of share groups per broker, the
  session-expiry timer, what ShareGroupHeartbeat/ShareGroupDescribe call.

The share-partitions (the in-flight records of one group on one partition, kept by the
partition's leader) are :mod:`kbroker.share`, not here: the group coordinator only decides
which members may fetch which partitions.
"""
