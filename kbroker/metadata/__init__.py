"""Cluster metadata: the immutable image, Kafka's metadata records, the controller.

- ``image``: ``MetadataImage`` (cluster id, controller id, brokers, topics, configs,
  features, producer-id high mark) and ``replay``/``replay_all`` — the only way it changes;
- ``store``: the ``__cluster_metadata-0`` log (record framing of Kafka's metadata log);
- ``controller``: validate → records → commit → replay for every admin operation;
- ``configs``: topic config definitions and the DescribeConfigs view;
- ``quorum``: the Raft-replicated metadata log as the image's state machine (every node);
- ``quorum_controller``: the active controller (commit = Raft commit; registration,
  heartbeats, fencing, leader movement); ``channel``: the broker's route to it (local or
  forwarded); ``lifecycle``: broker registration and heartbeats; ``snapshot``: image ↔ records.
"""
from .image import (BrokerImage, MetadataImage, PartitionImage, TopicImage, replay,  # noqa: F401
                    replay_all)
