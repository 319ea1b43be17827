"""The container image's own code: what runs between ``docker run`` and ``kbroker serve``.

- ``env``: the pure part — Kafka's image rules turning ``KAFKA_*`` environment variables,
  ``CLUSTER_ID`` and a mounted ``server.properties`` into the broker's configuration.
- ``entrypoint``: the image's ENTRYPOINT — writes that configuration, checks the data
  directories, then replaces itself with ``kbroker serve`` (PID 1, so ``docker stop``'s
  SIGTERM reaches the broker and it shuts down gracefully).
- ``start_lines``: the lines of Kafka's start-up log that testcontainers' Kafka modules wait
  for, logged once kbroker is ready (``kbroker serve --kafka-start-lines``, as the image runs).
- ``confluent``: the steps behind the image's ``/etc/confluent/docker/`` scripts (``configure``,
  ``launch``), the entry points tools written for Confluent's images call (``docker/compat``).
- ``healthcheck``: the image's HEALTHCHECK — an ApiVersions + Metadata probe of the node's
  own client listener (until the HTTP ``/ready`` endpoint of the operations work is merged).

Nothing here is imported by the broker itself; the files live in the package only so that the
image ships them with the wheel and the unit tests import them like any module.
"""
