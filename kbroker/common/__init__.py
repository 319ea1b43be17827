"""Foundations every layer may use: the broker's two clocks and durable small-file writes.
Imports nothing else of kbroker."""
