"""kbroker: a Kafka-protocol broker in Python on trio.

``__version__`` is the one place the version is written: the packaging reads it
(pyproject.toml, ``[tool.setuptools.dynamic]``) and ``kbroker --version`` prints it.
"""
__version__ = "0.1.0"
