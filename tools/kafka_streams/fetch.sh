#!/usr/bin/env bash
# Fetch Kafka Streams (tools/kafka_streams/pom.xml) for the streams group tests (KIP-1071).
#
# The jars go to .cache/kafka-streams/<version>/libs (tools/pom_jars.sh: idempotent, never a
# partial copy; downloads cached in its m2_repo). The version must equal the
# Kafka pin of tools/kafka_dist/pom.xml.
#
# Usage: tools/kafka_streams/fetch.sh            fetch if needed, print the libs folder
#        tools/kafka_streams/fetch.sh --version  print the pinned version only
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=tools/pom_jars.sh
source "$ROOT/tools/pom_jars.sh"
POM="$ROOT/tools/kafka_streams/pom.xml"
pom_version kafka_streams "$POM" kafka.version "${1:-}"
KAFKA="$(pom_prop "$ROOT/tools/kafka_dist/pom.xml" kafka.version)"
if [[ "$KAFKA" != "$VERSION" ]]; then
    echo "kafka_streams: $POM pins $VERSION, tools/kafka_dist/pom.xml pins $KAFKA" >&2
    exit 1
fi

pom_jars kafka_streams "$POM" "$ROOT/.cache/kafka-streams/$VERSION" libs "Kafka Streams $VERSION" \
    "kafka-streams-$VERSION.jar" "kafka-clients-$VERSION.jar"
