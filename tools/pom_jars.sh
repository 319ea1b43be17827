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

# The resolved folders are kept as well, in $(resolved_cache)/<label>/<key>/ (hard links where
# the file system allows, else copies): a fresh clone whose pom did not change takes its folder
# from there instead of starting Maven, which costs 6-11 CPU-s per pom (37 CPU-s for the five
# folders of `make test-setup`, measured with tools' SHELL wrapped in /usr/bin/time).
# A folder is used only once its "<key>.complete" marker exists (written after it is whole).
resolved_cache() {
    echo "${KBROKER_CACHE:-$HOME/.cache/kbroker}/resolved"
}

# copy_tree SRC DST: DST (absent) becomes SRC's copy, by hard links when they share a file system.
copy_tree() {
    cp -al "$1" "$2" 2>/dev/null || { rm -rf "$2"; cp -a "$1" "$2"; }
}

# resolved_get LABEL KEY DST: DST becomes the cached folder; false on a miss.
resolved_get() {
    local dir
    dir="$(resolved_cache)/$1/$2"
    [[ -f "$dir.complete" && -d "$dir" ]] || return 1
    rm -rf "$3"
    copy_tree "$dir" "$3"
}

# resolved_put LABEL KEY SRC: keeps the complete folder SRC for the next clone. Never fails
# the caller: a folder not kept only costs the next clone a Maven run.
resolved_put() {
    local dir part
    dir="$(resolved_cache)/$1/$2"
    part="$dir.part.$$"
    [[ -f "$dir.complete" ]] && return 0
    mkdir -p "$(dirname "$dir")" 2>/dev/null || return 0
    rm -rf "$part"
    if copy_tree "$3" "$part" 2>/dev/null && mv -T "$part" "$dir" 2>/dev/null; then
        touch "$dir.complete" 2>/dev/null || true
    else
        rm -rf "$part"
    fi
    return 0
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

    local cached=""
    if resolved_get "$label" "$sum" "$tmp"; then
        cached=1
        echo "$label: $what from $(resolved_cache)/$label/$sum" >&2
    else
        echo "$label: resolving $what into $dest/$subdir" >&2
        if ! mvn -q -B -f "$pom" -Dmaven.repo.local="$m2" \
                dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" \
                > "$dest/mvn.log" 2>&1; then
            cat "$dest/mvn.log" >&2
            echo "$label: mvn failed (log: $dest/mvn.log)" >&2
            exit 1
        fi
    fi

    for jar in "$@"; do
        [[ -f "$tmp/$jar" ]] || { echo "$label: $jar missing after resolve" >&2; exit 1; }
    done
    [[ -n "$cached" ]] || resolved_put "$label" "$sum" "$tmp"

    rm -rf "${dest:?}/$subdir"
    mv "$tmp" "$dest/$subdir"
    trap - EXIT
    echo "$sum" > "$stamp"
    echo "$dest/$subdir"
}
