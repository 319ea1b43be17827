#!/usr/bin/env bash
# Fetch the jars of Spark's Kafka connector for spark_tests/ and examples/.
#
# The Spark version is pinned in tools/spark_dist/pom.xml (<spark.version>) and must equal the
# pyspark pin in requirements-spark.txt (checked here). The pom's four jars are copied into
# .cache/spark/<version>/jars with a Maven local repository under .cache/m2, so nothing outside
# the work tree is touched. Idempotent: a stamp holding the pom's checksum marks a complete
# copy; a partial copy is never left in place.
#
# Usage: tools/spark_dist/fetch.sh            fetch if needed, print the jars folder
#        tools/spark_dist/fetch.sh --version  print the pinned Spark version only
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
POM="$ROOT/tools/spark_dist/pom.xml"
REQ="$ROOT/requirements-spark.txt"
prop() { sed -n "s:.*<$1>\(.*\)</$1>.*:\1:p" "$POM" | head -n1; }
VERSION="$(prop spark.version)"
if [[ -z "$VERSION" ]]; then
    echo "spark_dist: no <spark.version> in $POM" >&2
    exit 1
fi
if [[ "${1:-}" == "--version" ]]; then
    echo "$VERSION"
    exit 0
fi
PYSPARK="$(sed -n 's/^pyspark==\([^ ;#]*\).*/\1/p' "$REQ" | head -n1)"
if [[ "$PYSPARK" != "$VERSION" ]]; then
    echo "spark_dist: pyspark pin ($PYSPARK, $REQ) differs from <spark.version> ($VERSION, $POM)" >&2
    exit 1
fi

DEST="$ROOT/.cache/spark/$VERSION"
STAMP="$DEST/.complete"
M2="$ROOT/.cache/m2"
SUM="$(sha256sum "$POM" | cut -d' ' -f1)"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$SUM" && -d "$DEST/jars" ]]; then
    echo "$DEST/jars"
    exit 0
fi

command -v mvn >/dev/null || { echo "spark_dist: mvn not found (install Maven)" >&2; exit 1; }
mkdir -p "$DEST" "$M2"
TMP="$(mktemp -d "$DEST/jars.tmp.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

echo "spark_dist: resolving Spark $VERSION's Kafka connector into $DEST/jars" >&2
if ! mvn -q -B -f "$POM" -Dmaven.repo.local="$M2" \
        dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$TMP" \
        > "$DEST/mvn.log" 2>&1; then
    cat "$DEST/mvn.log" >&2
    echo "spark_dist: mvn failed (log: $DEST/mvn.log)" >&2
    exit 1
fi

for jar in "spark-sql-kafka-0-10_2.13-$VERSION.jar" "spark-token-provider-kafka-0-10_2.13-$VERSION.jar" \
           "kafka-clients-$(prop kafka.clients.version).jar" "commons-pool2-$(prop commons.pool2.version).jar"; do
    [[ -f "$TMP/$jar" ]] || { echo "spark_dist: $jar missing after resolve" >&2; exit 1; }
done

rm -rf "$DEST/jars"
mv "$TMP" "$DEST/jars"
trap - EXIT
echo "$SUM" > "$STAMP"
echo "$DEST/jars"
