#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine: install Debian's engine, debootstrap and
# compose when they are missing, start dockerd when nothing listens on its socket, and wait until
# `docker info` answers. Idempotent; run as root (or with sudo available).
set -euo pipefail
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
LOG=${DOCKERD_LOG:-/var/log/kbroker-dockerd.log}

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
if [ ${#need[@]} -gt 0 ]; then
    echo "ensure-engine: installing ${need[*]}"
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"
fi

if docker info >/dev/null 2>&1; then
    exit 0
fi
echo "ensure-engine: starting dockerd (log: $LOG)"
# setsid: the daemon outlives this make run (the machine keeps one engine, like a service would)
$SUDO setsid dockerd >>"$LOG" 2>&1 < /dev/null &
for _ in $(seq 1 120); do
    if docker info >/dev/null 2>&1; then
        echo "ensure-engine: dockerd is up"
        exit 0
    fi
    sleep 0.5
done
echo "ensure-engine: dockerd did not answer within 60 s; last lines of $LOG:" >&2
tail -20 "$LOG" >&2
exit 1
