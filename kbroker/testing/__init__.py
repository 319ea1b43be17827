"""Testing support for other projects: brokers in child processes (``processes``) and the
pytest plugin built on them (``pytest_plugin``)."""
