"""Configuration: Kafka's broker keys with their types and defaults (``broker``), the generated
table of every key Kafka 4.x defines (``kafka_keys``) and the feature levels kbroker serves
(``features``). Imports nothing above the wire layer."""
