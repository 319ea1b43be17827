"""How the suites build their Go test programs (compat_tests' franz-go driver, the schema
registry's franz-go client, docker_tests' testcontainers-go module): modules and build cache
under the checkout's .cache/go, no cgo, the local toolchain, and the compiler's optimizer and
inliner off (``-gcflags=all=-N -l``). A fresh checkout compiles these programs and the
standard library from scratch; without optimization that costs about 40% less CPU (about 45
instead of 74 CPU-seconds for the franz-go driver on the 2-core reference machine), and the
programs are test clients whose speed no test measures. The Makefile's GO_ENV says the same,
so its builds and these share one build cache."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOFLAGS = "-mod=mod '-gcflags=all=-N -l'"


def go_settings() -> dict[str, str]:
    """The Go variables alone (for a caller that builds the rest of the environment)."""
    cache = ROOT / ".cache" / "go"
    return {"GOPATH": str(cache), "GOMODCACHE": str(cache / "mod"),
            "GOCACHE": str(cache / "build"), "GOFLAGS": GOFLAGS, "GOTOOLCHAIN": "local",
            "CGO_ENABLED": "0"}


def go_env() -> dict[str, str]:
    """The environment of a ``go build`` or ``go test`` of the suites."""
    return {**os.environ, **go_settings()}
