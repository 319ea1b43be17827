#!/usr/bin/env bash
# Fetch the pinned Apache Kafka jars for the compatibility suite (compat_tests/).
#
# The version is pinned once, in tools/kafka_dist/pom.xml (<kafka.version>). This script copies
# every runtime jar of that pom into .cache/kafka/<version>/libs, using a Maven local repository
# under .cache/m2 so nothing outside the work tree is touched. It is idempotent: a stamp file
# holding the pom's checksum marks a complete copy; a partial copy is never left in place.
#
# Usage: tools/fetch_kafka.sh            fetch if needed, print the libs folder
#        tools/fetch_kafka.sh --version  print the pinned version only
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POM="$ROOT/tools/kafka_dist/pom.xml"
VERSION="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM" | head -n1)"
if [[ -z "$VERSION" ]]; then
    echo "fetch_kafka: no <kafka.version> in $POM" >&2
    exit 1
fi
if [[ "${1:-}" == "--version" ]]; then
    echo "$VERSION"
    exit 0
fi

DEST="$ROOT/.cache/kafka/$VERSION"
STAMP="$DEST/.complete"
M2="$ROOT/.cache/m2"
SUM="$(sha256sum "$POM" | cut -d' ' -f1)"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$SUM" && -d "$DEST/libs" ]]; then
    echo "$DEST/libs"
    exit 0
fi

command -v mvn >/dev/null || { echo "fetch_kafka: mvn not found (install Maven)" >&2; exit 1; }
mkdir -p "$DEST" "$M2"
TMP="$(mktemp -d "$DEST/libs.tmp.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

echo "fetch_kafka: resolving Apache Kafka $VERSION into $DEST/libs" >&2
if ! mvn -q -B -f "$POM" -Dmaven.repo.local="$M2" \
        dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$TMP" \
        > "$DEST/mvn.log" 2>&1; then
    cat "$DEST/mvn.log" >&2
    echo "fetch_kafka: mvn failed (log: $DEST/mvn.log)" >&2
    exit 1
fi

# The broker, the storage tool and the CLI tools must all be there.
for jar in "kafka_2.13-$VERSION.jar" "kafka-tools-$VERSION.jar" "kafka-clients-$VERSION.jar" \
           "kafka-server-$VERSION.jar" "kafka-storage-$VERSION.jar"; do
    [[ -f "$TMP/$jar" ]] || { echo "fetch_kafka: $jar missing after resolve" >&2; exit 1; }
done

rm -rf "$DEST/libs"
mv "$TMP" "$DEST/libs"
trap - EXIT
echo "$SUM" > "$STAMP"
echo "$DEST/libs"
