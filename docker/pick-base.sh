#!/usr/bin/env bash
# Print the image the Dockerfile should build FROM: the default base (python:3.11-slim) when it
# is present or can be pulled, else kbroker-base:bookworm made from Debian's packages
# (docker/make-base.sh; made once, then reused). Progress goes to stderr, the name to stdout.
set -euo pipefail
WANT=${1:-python:3.11-slim}
LOCAL=${2:-kbroker-base:bookworm}
if docker image inspect "$WANT" >/dev/null 2>&1; then echo "$WANT"; exit 0; fi
if docker image inspect "$LOCAL" >/dev/null 2>&1; then echo "$LOCAL"; exit 0; fi
if timeout "${PULL_TIMEOUT:-120}" docker pull -q "$WANT" >/dev/null 2>&1; then echo "$WANT"; exit 0; fi
echo "pick-base: $WANT cannot be pulled; making $LOCAL from Debian's packages" >&2
bash "$(dirname "$0")/make-base.sh" "$LOCAL" >&2
echo "$LOCAL"
