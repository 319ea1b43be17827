#!/usr/bin/env bash
# Fetch the pinned Apache Kafka jars for the compatibility suite (compat_tests/).
#
# The version is pinned once, in tools/kafka_dist/pom.xml (<kafka.version>). This script copies
# every runtime jar of that pom into .cache/kafka/<version>/libs (Maven's downloads stay in the
# cache named by tools/pom_jars.sh's m2_repo, outside the work tree). It is idempotent: a stamp file
# holding the pom's checksum marks a complete copy; a partial copy is never left in place
# (tools/pom_jars.sh does the copying, shared with tools/spark_dist/fetch.sh).
#
# Usage: tools/fetch_kafka.sh            fetch if needed, print the libs folder
#        tools/fetch_kafka.sh --version  print the pinned version only
#        tools/fetch_kafka.sh 4.3.1      the same for another release (a second reference of the
#                                        compatibility suite, `pytest compat_tests
#                                        --kafka-version=4.3.1`): the pom with that version,
#                                        written to .cache/kafka/<version>/pom.xml, is resolved
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=tools/pom_jars.sh
source "$ROOT/tools/pom_jars.sh"
POM="$ROOT/tools/kafka_dist/pom.xml"
pom_version fetch_kafka "$POM" kafka.version "${1:-}"
if [[ -n "${1:-}" && "$1" != "$VERSION" ]]; then
    [[ "$1" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "fetch_kafka: not a release version: $1" >&2; exit 1; }
    VERSION="$1"
    mkdir -p "$ROOT/.cache/kafka/$VERSION"
    sed "s:<kafka.version>[^<]*</kafka.version>:<kafka.version>$VERSION</kafka.version>:" \
        "$ROOT/tools/kafka_dist/pom.xml" > "$ROOT/.cache/kafka/$VERSION/pom.xml"
    POM="$ROOT/.cache/kafka/$VERSION/pom.xml"
fi

# The broker, the storage tool and the CLI tools must all be there.
pom_jars fetch_kafka "$POM" "$ROOT/.cache/kafka/$VERSION" libs "Apache Kafka $VERSION" \
    "kafka_2.13-$VERSION.jar" "kafka-tools-$VERSION.jar" "kafka-clients-$VERSION.jar" \
    "kafka-server-$VERSION.jar" "kafka-storage-$VERSION.jar"
