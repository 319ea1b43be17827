# Shared by tools/fetch_kafka.sh and tools/spark_dist/fetch.sh (sourced, not run): read a
# property of a pinning pom, and copy a pom's runtime jars into a cache folder.
#
# pom_prop POM NAME
#     prints <NAME>…</NAME> of POM (the first one), empty if there is none.
#
# pom_version LABEL POM NAME [ARG]
#     sets VERSION to <NAME> of POM; exits the calling script with an error when there is
#     none, and with VERSION printed when ARG is --version.
#
# pom_jars LABEL POM DEST SUBDIR WHAT REQUIRED_JAR...
#     copies every runtime dependency of POM into DEST/SUBDIR and prints that folder. The
#     Maven local repository is the download cache $(m2_repo): outside the work tree, so a
#     fresh clone reuses what an earlier one downloaded (as pip's cache does), never read by
#     the tests themselves. Idempotent: DEST/.complete holds the pom's checksum once a copy is complete;
#     the jars are resolved into a temporary folder and moved into place only when every
#     REQUIRED_JAR is there, so a partial copy is never left. LABEL prefixes messages; WHAT
#     says what is being resolved. Exits the calling script on failure.

# The download cache of Maven artifacts: $KBROKER_CACHE/m2, KBROKER_CACHE defaulting to
# ~/.cache/kbroker (the Makefile exports the same default; KBROKER_CACHE=.cache keeps
# everything inside the work tree).
m2_repo() {
    echo "${KBROKER_CACHE:-$HOME/.cache/kbroker}/m2"
}

pom_prop() {
    sed -n "s:.*<$2>\(.*\)</$2>.*:\1:p" "$1" | head -n1
}

pom_version() {
    VERSION="$(pom_prop "$2" "$3")"
    if [[ -z "$VERSION" ]]; then
        echo "$1: no <$3> in $2" >&2
        exit 1
    fi
    if [[ "${4:-}" == "--version" ]]; then
        echo "$VERSION"
        exit 0
    fi
}

pom_jars() {
    local label="$1" pom="$2" dest="$3" subdir="$4" what="$5"
    shift 5
    local stamp="$dest/.complete" m2 sum tmp jar
    m2="$(m2_repo)"
    sum="$(sha256sum "$pom" | cut -d' ' -f1)"

    if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" && -d "$dest/$subdir" ]]; then
        echo "$dest/$subdir"
        return 0
    fi

    command -v mvn >/dev/null || { echo "$label: mvn not found (install Maven)" >&2; exit 1; }
    mkdir -p "$dest" "$m2"
    tmp="$(mktemp -d "$dest/$subdir.tmp.XXXXXX")"
    # shellcheck disable=SC2064  # expand now: $tmp is local to this function
    trap "rm -rf '$tmp'" EXIT

    echo "$label: resolving $what into $dest/$subdir" >&2
    if ! mvn -q -B -f "$pom" -Dmaven.repo.local="$m2" \
            dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" \
            > "$dest/mvn.log" 2>&1; then
        cat "$dest/mvn.log" >&2
        echo "$label: mvn failed (log: $dest/mvn.log)" >&2
        exit 1
    fi

    for jar in "$@"; do
        [[ -f "$tmp/$jar" ]] || { echo "$label: $jar missing after resolve" >&2; exit 1; }
    done

    rm -rf "${dest:?}/$subdir"
    mv "$tmp" "$dest/$subdir"
    trap - EXIT
    echo "$sum" > "$stamp"
    echo "$dest/$subdir"
}
