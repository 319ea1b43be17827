"""Cluster metadata: the immutable image, Kafka's metadata records, the controller.

- ``image``: ``MetadataImage`` (cluster id, controller id, brokers, topics, configs,
  features, producer-id high mark) and ``replay``/``replay_all`` — the only way it changes;
- ``store``: the ``__cluster_metadata-0`` log (record framing of Kafka's metadata log);
- ``controller``: validate → records → commit → replay for every admin operation;
- ``configs``: topic config definitions and the DescribeConfigs view.
"""
from .image import (BrokerImage, MetadataImage, PartitionImage, TopicImage, replay,  # noqa: F401
                    replay_all)
