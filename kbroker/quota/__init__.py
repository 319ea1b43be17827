"""Quotas enforced on the broker (Kafka's quota managers, KIP-13/KIP-55/KIP-73/KIP-124/
KIP-219/KIP-402/KIP-599/KIP-612).

- ``rate``: the pure sampled rate Kafka's quota sensors use (``quota.window.num`` samples of
  ``quota.window.size.seconds``) and the throttle time Kafka computes from it;
- ``manager``: which quota applies to a (user, client-id) — Kafka's eight-level precedence
  over the metadata image's ``ClientQuotaRecord``s — one rate per matched entity, and the
  produce / fetch / request-time throttle times the answers report in ``throttle_time_ms``;
  the connection then stays muted for that long after the answer (KIP-219);
- ``task_time``: the time a request really kept its connection task running
  (``request_percentage``);
- ``mutation``: ``controller_mutation_rate`` token buckets (KIP-599);
- ``connections``: connection limits on accept (``max.connections``,
  ``connection_creation_rate``, ``max.connections.per.ip`` and overrides);
- ``replication``: leader/follower replication throttles (KIP-73);
- ``managers``: ``QuotaManagers``, all of the above for one broker.
"""
