"""The web console (``kbroker/console``) at ``/`` and ``/api/console/``."""
from __future__ import annotations


def install(router) -> None:
    from kbroker.console import install as install_console
    install_console(router)
