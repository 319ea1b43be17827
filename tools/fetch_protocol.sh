#!/usr/bin/env bash
# Fetch Apache Kafka's message definitions (the protocol reference) for the pinned Kafka release.
#
# The version is the one pin of tools/kafka_dist/pom.xml (<kafka.version>), the same release the
# compatibility suite runs. The definitions are the `*.json` files inside the *sources* jars of
# that release on Maven Central, or, when a release publishes no sources jars (4.4.0 does not),
# the same files inside its binary jars (they are resources of the jars: for 4.3.1 the two
# copies are byte for byte equal). This script resolves those jars with Maven (its local
# repository is tools/pom_jars.sh's m2_repo) and extracts the JSON into
# .cache/kafka-protocol/<version>/, laid out as:
#
#   *.json                     kafka-clients            common/message (requests, responses)
#   metadata/                  kafka-metadata           common/metadata (KRaft metadata records)
#   group-coordinator/         kafka-group-coordinator  records of __consumer_offsets
#   transaction-coordinator/   kafka-transaction-coordinator  records of __transaction_state
#   share-coordinator/         kafka-share-coordinator  records of __share_group_state
#   raft/                      kafka-raft               Raft state files (quorum-state)
#   storage/                   kafka-storage            remote-log metadata, producer snapshots
#
# plus SOURCE.txt naming the jars and their checksums. tools/genschema.py regenerates
# kbroker/wire/schema/messages.json from that folder and tests/wire/test_reference.py checks
# the model against it. Idempotent: a stamp holding the version and the artifact list marks a
# complete copy; the copy is built in a temporary folder and moved into place only when every
# artifact delivered definitions, so a partial copy is never left.
#
# Usage: tools/fetch_protocol.sh            fetch if needed, print the folder
#        tools/fetch_protocol.sh --version  print the pinned version only
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=tools/pom_jars.sh
source "$ROOT/tools/pom_jars.sh"
POM="$ROOT/tools/kafka_dist/pom.xml"
pom_version fetch_protocol "$POM" kafka.version "${1:-}"

# artifact:folder-inside-the-jar:destination-subfolder ("." = top level)
LAYOUT=(
    "kafka-clients:common/message:."
    "kafka-metadata:common/metadata:metadata"
    "kafka-group-coordinator:common/message:group-coordinator"
    "kafka-transaction-coordinator:common/message:transaction-coordinator"
    "kafka-share-coordinator:common/message:share-coordinator"
    "kafka-raft:common/message:raft"
    "kafka-storage:message:storage"
)

DEST="$ROOT/.cache/kafka-protocol/$VERSION"
STAMP="$DEST/.complete"
WANT="$VERSION ${LAYOUT[*]}"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    echo "$DEST"
    exit 0
fi

command -v mvn >/dev/null || { echo "fetch_protocol: mvn not found (install Maven)" >&2; exit 1; }
command -v unzip >/dev/null || { echo "fetch_protocol: unzip not found" >&2; exit 1; }
M2="$(m2_repo)"
mkdir -p "$ROOT/.cache/kafka-protocol" "$M2"
TMP="$(mktemp -d "$ROOT/.cache/kafka-protocol/$VERSION.tmp.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# a fresh clone takes the folder an earlier one extracted (tools/pom_jars.sh's resolved_cache)
KEY="$(echo "$WANT" | sha256sum | cut -c1-16)"
if resolved_get kafka-protocol "$KEY" "$TMP/out" && [[ "$(cat "$TMP/out/.complete")" == "$WANT" ]]; then
    rm -rf "$DEST"
    mv "$TMP/out" "$DEST"
    echo "$DEST"
    exit 0
fi
rm -rf "$TMP/out"

ids=""
for entry in "${LAYOUT[@]}"; do ids="$ids${ids:+,}${entry%%:*}"; done

# The pinning pom depends on every artifact above (directly or through kafka_2.13/kafka-server),
# so its dependency tree gives their versions; the `sources` classifier selects the sources jars,
# and an empty classifier the binary jars (the fallback).
resolve() {
    rm -rf "$TMP/jars"
    mvn -q -B -f "$POM" -Dmaven.repo.local="$M2" \
        dependency:copy-dependencies -DincludeScope=runtime ${1:+-Dclassifier=$1} \
        -DincludeGroupIds=org.apache.kafka -DincludeArtifactIds="$ids" \
        -DoutputDirectory="$TMP/jars" > "$TMP/mvn.log" 2>&1
}
echo "fetch_protocol: resolving the sources jars of Apache Kafka $VERSION" >&2
SUFFIX="-sources"
KIND="sources"
# copy-dependencies may succeed without a jar it could not download: check each one is there.
all_there() {
    local entry
    for entry in "${LAYOUT[@]}"; do
        [[ -f "$TMP/jars/${entry%%:*}-$VERSION$1.jar" ]] || return 1
    done
}
if ! resolve sources || ! all_there -sources; then
    echo "fetch_protocol: no sources jars for $VERSION; taking the definitions from the binary jars" >&2
    SUFFIX=""
    KIND="binary"
    if ! resolve ""; then
        cat "$TMP/mvn.log" >&2
        echo "fetch_protocol: mvn failed" >&2
        exit 1
    fi
fi

{
    echo "Apache Kafka $VERSION message definitions (Apache License 2.0), data files only."
    echo "Extracted by tools/fetch_protocol.sh from these $KIND jars (sha256):"
} > "$TMP/out.SOURCE.txt"
mkdir -p "$TMP/out"
for entry in "${LAYOUT[@]}"; do
    IFS=: read -r artifact inner sub <<< "$entry"
    jar="$TMP/jars/$artifact-$VERSION$SUFFIX.jar"
    [[ -f "$jar" ]] || { echo "fetch_protocol: $artifact-$VERSION$SUFFIX.jar not resolved" >&2; exit 1; }
    mkdir -p "$TMP/x" "$TMP/out/$sub"
    unzip -q -o "$jar" "$inner/*.json" -d "$TMP/x"
    n=$(find "$TMP/x/$inner" -maxdepth 1 -name '*.json' | wc -l)
    [[ "$n" -gt 0 ]] || { echo "fetch_protocol: no definitions in $artifact" >&2; exit 1; }
    mv "$TMP/x/$inner"/*.json "$TMP/out/$sub/"
    rm -rf "$TMP/x"
    echo "  $(sha256sum "$jar" | cut -d' ' -f1)  org.apache.kafka:$artifact:$VERSION:$KIND  ($n files -> $sub/)" \
        >> "$TMP/out.SOURCE.txt"
done
mv "$TMP/out.SOURCE.txt" "$TMP/out/SOURCE.txt"
echo "$WANT" > "$TMP/out/.complete"
resolved_put kafka-protocol "$KEY" "$TMP/out"

rm -rf "$DEST"
mv "$TMP/out" "$DEST"
echo "$DEST"
