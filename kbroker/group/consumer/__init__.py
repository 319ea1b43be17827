"""The consumer group protocol (KIP-848, Kafka 4.3's group coordinator):

- :mod:`.state`     — a ConsumerGroup and its members (epochs, assignments, reconciliation);
  pure data and rules.
- :mod:`.assignors` — the server-side ``uniform`` and ``range`` assignors (pure functions).
- :mod:`.regex`     — ``SubscribedTopicRegex`` validation and resolution (RE2/J semantics).
- :mod:`.topics`    — the read-only view of the cluster's topics the protocol is given.
- :mod:`.records`   — the ``__consumer_offsets`` records of consumer groups (schema.json:
  the facts of Kafka 4.3.1's definitions).
- :mod:`.protocol`  — ConsumerGroupHeartbeat / ConsumerGroupDescribe as a part of the
  coordinator shard: events in, records (replayed at once), timers and answers out.
"""
