"""The clickstream example pipeline: generator → PySpark Structured Streaming → consumer.

Run it with `make demo` (or `python -m examples.clickstream.run_demo`); see examples/README.md.
"""
