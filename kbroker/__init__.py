"""kbroker: a Kafka-protocol broker in Python on trio."""
