"""Sans-I/O Kafka wire protocol: framing, headers, message codecs, record batches."""
