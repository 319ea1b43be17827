"""Groups and committed offsets, durable in ``__consumer_offsets`` (Kafka 4's
group-coordinator module in miniature).

Shared plumbing:

- :mod:`.manager`  — ``GroupManager``, the coordinator shard: the group table (any type),
  timers, outbox, load/replay dispatch; a pure state machine (events with the wall-clock
  ``now_ms`` and the monotonic ``mono_ms`` in; records to append, replies, deadlines out).
- :mod:`.base`     — what every group type shares: ``Result``, admin answers, ``ShardPart``.
- :mod:`.offsets`  — committed and transactional offsets, retention (every group type).
- :mod:`.records`  — the key/value format of ``__consumer_offsets`` and group → partition.
- :mod:`.timers`   — the keyed deadline table the shard schedules delays into (on the
  monotonic clock, as Kafka's ``CoordinatorTimer``).
- :mod:`.config`   — the broker settings (Kafka's keys and defaults).
- :mod:`.service`  — the trio driver (``GroupCoordinator``): parks requests, runs the
  timers, appends records and replays them at start-up; makes the manager on first use.

Group types, each a pure state (``state.py``) plus its protocol's rules (``protocol.py``):

- :mod:`.classic`  — JoinGroup/SyncGroup/Heartbeat/LeaveGroup.
- :mod:`.consumer` — KIP-848: ConsumerGroupHeartbeat/ConsumerGroupDescribe, server-side
  assignors, regex subscriptions, the consumer group records.
- :mod:`.streams`  — KIP-1071: StreamsGroupHeartbeat/StreamsGroupDescribe, topologies and
  internal topics, the sticky task assignor, the streams group records.

A group type plugs in the same way: a group class, a protocol part registered in
``GroupManager._protocols``, its record keys dispatched by ``records.decode_key``. Every
type but classic is made on its first use (``GroupManager._part``), so a node that never
sees such a group never imports its modules (start-up, issue 32).
"""
