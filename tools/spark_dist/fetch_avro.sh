#!/usr/bin/env bash
# Fetch spark-avro (from_avro/to_avro) for spark_tests/test_schema_registry.py.
#
# The version is the Kafka connector's pin (tools/spark_dist/pom.xml); tools/spark_dist/avro/pom.xml
# must name the same one (checked here). The jar goes to .cache/spark/<version>-avro/jars, a
# folder of its own, through tools/pom_jars.sh (idempotent, never a partial copy); the folder
# is printed on the last line of stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=tools/pom_jars.sh
source "$ROOT/tools/pom_jars.sh"
POM="$ROOT/tools/spark_dist/avro/pom.xml"
pom_version spark_avro "$ROOT/tools/spark_dist/pom.xml" spark.version
AVRO="$(pom_prop "$POM" spark.version)"
if [[ "$AVRO" != "$VERSION" ]]; then
    echo "spark_avro: $POM pins Spark $AVRO, the connector (tools/spark_dist/pom.xml) $VERSION" >&2
    exit 1
fi

pom_jars spark_avro "$POM" "$ROOT/.cache/spark/$VERSION-avro" jars "spark-avro $VERSION" \
    "spark-avro_2.13-$VERSION.jar"
