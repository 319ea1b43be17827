#!/usr/bin/env bash
# Fetch the jars of Spark's Kafka connector for spark_tests/ and examples/.
#
# The Spark version is pinned in tools/spark_dist/pom.xml (<spark.version>) and must equal the
# pyspark pin in requirements-spark.txt (checked here). The pom's four jars are copied into
# .cache/spark/<version>/jars (Maven's downloads stay in tools/pom_jars.sh's m2_repo).
# Idempotent: a stamp holding the pom's checksum marks a complete
# copy; a partial copy is never left in place (tools/pom_jars.sh does the copying, shared
# with tools/fetch_kafka.sh).
#
# Usage: tools/spark_dist/fetch.sh            fetch if needed, print the jars folder
#        tools/spark_dist/fetch.sh --version  print the pinned Spark version only
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=tools/pom_jars.sh
source "$ROOT/tools/pom_jars.sh"
POM="$ROOT/tools/spark_dist/pom.xml"
REQ="$ROOT/requirements-spark.txt"
pom_version spark_dist "$POM" spark.version "${1:-}"
PYSPARK="$(sed -n 's/^pyspark==\([^ ;#]*\).*/\1/p' "$REQ" | head -n1)"
if [[ "$PYSPARK" != "$VERSION" ]]; then
    echo "spark_dist: pyspark pin ($PYSPARK, $REQ) differs from <spark.version> ($VERSION, $POM)" >&2
    exit 1
fi

pom_jars spark_dist "$POM" "$ROOT/.cache/spark/$VERSION" jars "Spark $VERSION's Kafka connector" \
    "spark-sql-kafka-0-10_2.13-$VERSION.jar" "spark-token-provider-kafka-0-10_2.13-$VERSION.jar" \
    "kafka-clients-$(pom_prop "$POM" kafka.clients.version).jar" \
    "commons-pool2-$(pom_prop "$POM" commons.pool2.version).jar"
