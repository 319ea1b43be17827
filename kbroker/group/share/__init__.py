"""Share groups (KIP-932, Kafka 4.3): queues on Kafka topics.

- :mod:`.state`    — a ShareGroup and its members: group and member epochs, the simple
  assignor, session timeouts and fencing; pure data and rules (events with ``now_ms`` in).
- :mod:`.protocol` — the share group type of the coordinator shard: ShareGroupHeartbeat on
  a ShareGroup, what it changed written as ``__consumer_offsets`` records and replayed on
  load (a coordinator failover keeps epochs and assignments), session timers.
- :mod:`.records`  — those records (Kafka's types 10-15), builders and decoders.
- :mod:`.config`   — the ``group.share.*`` broker settings, the GROUP config keys, and the
  ``share.version`` gate.
- :mod:`.coordinator` — the front the share APIs call (heartbeat through the group
  coordinator's driver, describe, the effective config of a group).

The share-partitions (the in-flight records of one group on one partition, kept by the
partition's leader) are :mod:`kbroker.share`, not here: the group coordinator only decides
which members may fetch which partitions.
"""
