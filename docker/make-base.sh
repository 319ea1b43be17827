#!/usr/bin/env bash
# Make the image the Dockerfile builds FROM when `python:3.11-slim` cannot be pulled (no image
# registry reachable): a minimal Debian bookworm from Debian's own packages (debootstrap
# --variant=minbase) with python3 and python3-venv, imported with `docker import`.
#
#   docker/make-base.sh [TAG]        default TAG: kbroker-base:bookworm
#
# Cached: nothing happens when TAG already exists (`docker rmi TAG` to rebuild it). The
# machine's extra CA certificates (/usr/local/share/ca-certificates) go into the image so that
# `pip install` during `docker build` trusts the same TLS peers the machine does; PIP_CERT
# points pip at the resulting bundle. Docs, man pages, locales and apt lists are left out.
set -euo pipefail
TAG=${1:-kbroker-base:bookworm}
SUITE=${DEBIAN_SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

if docker image inspect "$TAG" >/dev/null 2>&1; then
    echo "make-base: $TAG exists (cached)"
    exit 0
fi
command -v debootstrap >/dev/null 2>&1 || { echo "make-base: debootstrap is missing" >&2; exit 1; }

ROOT=$(mktemp -d /tmp/kbroker-base.XXXXXX)
trap 'rm -rf "$ROOT"' EXIT
echo "make-base: debootstrap $SUITE into $ROOT (a few minutes on a cold cache)"
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    "$SUITE" "$ROOT" "$MIRROR" >"$ROOT.log" 2>&1 || { tail -30 "$ROOT.log" >&2; exit 1; }
rm -f "$ROOT.log"

if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
fi
chroot "$ROOT" update-ca-certificates >/dev/null
chroot "$ROOT" apt-get clean
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/*.bin "$ROOT"/var/log/*.log \
       "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/usr/share/info/* \
       "$ROOT"/usr/share/locale/* "$ROOT"/var/cache/debconf/*-old "$ROOT"/tmp/* \
       "$ROOT"/usr/share/python-wheels/*.whl.unused 2>/dev/null || true
# an image carries no device nodes or mounts of the build host
rm -rf "$ROOT"/dev/* "$ROOT"/proc/* "$ROOT"/sys/* 2>/dev/null || true

tar -C "$ROOT" --numeric-owner -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["/bin/bash"]' \
    - "$TAG" >/dev/null
echo "make-base: $TAG made ($(docker image inspect -f '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}'))"
