"""Client quotas enforced on the broker (Kafka's ``ClientQuotaManager``, KIP-13/KIP-55/KIP-219).

- ``rate``: the pure sampled rate Kafka's quota sensors use (``quota.window.num`` samples of
  ``quota.window.size.seconds``) and the throttle time Kafka computes from it;
- ``manager``: which quota applies to a (user, client-id) — Kafka's eight-level precedence
  over the metadata image's ``ClientQuotaRecord``s — one rate per matched entity, and the
  produce / fetch throttle times the API modules report in ``throttle_time_ms``; the
  connection then stays muted for that long after the answer (KIP-219).
"""
