"""Foundations every layer may use: the broker's two clocks and durable small-file writes,
the running request's scope, and the garbage collector's pause while ``kbroker serve`` loads.
Imports nothing else of kbroker."""
