"""Example programs that use kbroker (see examples/README.md)."""
