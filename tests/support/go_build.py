"""How the suites build their Go test programs (compat_tests' franz-go driver, the schema
registry's franz-go client, docker_tests' testcontainers-go module): modules and build cache
under the download cache ``$KBROKER_CACHE/go`` (default ``~/.cache/kbroker``, outside the
checkout, so a fresh clone reuses the modules and compiled packages of an earlier one), no cgo, the local toolchain, and the compiler's optimizer and
inliner off (``-gcflags=all=-N -l``). A cold cache compiles these programs and the
standard library from scratch; without optimization that costs about 40% less CPU (about 45
instead of 74 CPU-seconds for the franz-go driver on the 2-core reference machine), and the
programs are test clients whose speed no test measures. The Makefile's GO_ENV says the same,
so its builds and these share one build cache."""
from __future__ import annotations

import os
from pathlib import Path

# The cache of downloads and builds shared by checkouts (the Makefile exports the same default;
# tools/pom_jars.sh keeps Maven's repository in its m2/).
DOWNLOADS = Path(os.environ.get("KBROKER_CACHE") or Path.home() / ".cache" / "kbroker").absolute()
GOFLAGS = "-mod=mod '-gcflags=all=-N -l'"


def go_settings() -> dict[str, str]:
    """The Go variables alone (for a caller that builds the rest of the environment)."""
    cache = DOWNLOADS / "go"
    return {"GOPATH": str(cache), "GOMODCACHE": str(cache / "mod"),
            "GOCACHE": str(cache / "build"), "GOFLAGS": GOFLAGS, "GOTOOLCHAIN": "local",
            "CGO_ENABLED": "0"}


def go_env() -> dict[str, str]:
    """The environment of a ``go build`` or ``go test`` of the suites."""
    return {**os.environ, **go_settings()}
