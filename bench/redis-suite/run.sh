#!/usr/bin/env bash
# Redis's own test units against one key-value server, in the suite's external-server mode.
#
#   REDIS_TEST_PORT=PORT [REDIS_TEST_HOST=127.0.0.1] [REDIS_SUITE_DIR=DIR] \
#   [REDIS_SUITE_RESULTS=FILE REDIS_SUITE_SERVER='what the server is'] [REDIS_SUITE_GUEST=1] \
#   bench/redis-suite/run.sh [UNIT ...]
#
# DIR is Redis 7.0.15's source tree (Debian's orig tarball, which `cargo xtask test` and
# `cargo xtask doctor --install` unpack into target/tools/src/redis-7.0.15; the default). The
# UNITs (default: all of UNITS below) are run one after another with
# `tclsh tests/test_helper.tcl --host HOST --port PORT --single UNIT --durable`: the suite's
# harness connects to the running server instead of starting its own, sends `SELECT 9`,
# `FLUSHALL` and `FUNCTION FLUSH` before each block of tests and `CONFIG SET` for the block's
# settings, and reports each test `[ok]`, `[err]` (an assertion failed), `[exception]` (the
# unit stopped), `[skip]` or `[ignore]`.
#
# What is left out, and why:
#   * the tests in bench/redis-suite/skips/UNIT.txt, a reason before each group of names (a
#     Redis internal such as an object's encoding, a command this server deliberately does
#     not have, a size the per-core store cannot hold): given to the harness as --skipfile;
#   * the harness's checks of an object's internal encoding (`assert_encoding`, off with
#     --ignore-encoding): this server keeps one representation per type, and no reply
#     depends on it;
#   * the tests the harness itself tags as needing what an external server does not offer
#     (`external:skip`), or needing `DEBUG` (`needs:debug`: Redis's introspection and fault
#     injection), replication (`needs:repl`), persistence (`needs:save`), the server's local
#     process (`needs:local-process`) or RESP3 (`resp3`: this server speaks RESP2, and the
#     list and sorted-set units switch a whole block to RESP3 with `HELLO 3` unless the tag is
#     denied): denied with --tags, the harness prints them `[ignore]`.
#
# The tests in bench/redis-suite/failing/UNIT.txt are ones this server does not pass yet (a
# command or an option not written yet, its reason beside it): they run, and their failures
# are expected. A listed test that passes is reported, so the list only shrinks. With
# REDIS_SUITE_GUEST=1 (the kernel's server: the net:*-redis-suite steps set it), the tests in
# bench/redis-suite/failing/guest/UNIT.txt are expected to fail too: what the guest lacks
# that the host build of the same store has (a wall clock, for one).
#
# With REDIS_SUITE_RESULTS it also writes the counts as JSON to FILE, with the date, the
# server's description (REDIS_SUITE_SERVER) and the host (docs/bench/redis-suite/results.json
# is such a file, and the book's table of the suite's results is generated from it).
#
# It prints each unit's counts and a total, and fails when a test outside the failing lists
# failed, a unit stopped (`[exception]`), a listed test passed, or a skip list names a test
# that the unit does not run (a stale entry hides nothing, but says the list is out of date).
set -euo pipefail

UNITS=(
    unit/protocol unit/type/string unit/type/incr unit/keyspace unit/expire
    unit/type/hash unit/type/list unit/type/set unit/type/zset
)
DENIED_TAGS=(needs:debug needs:repl needs:save needs:local-process resp3)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
host=${REDIS_TEST_HOST:-127.0.0.1}
port=${REDIS_TEST_PORT:?set REDIS_TEST_PORT to the port of the server}
suite=${REDIS_SUITE_DIR:-${CARGO_TARGET_DIR:-$root/target}/tools/src/redis-7.0.15}
[ $# -gt 0 ] && UNITS=("$@")

fail() { echo "redis suite: FAILED: $*" >&2; exit 1; }
[ -f "$suite/tests/test_helper.tcl" ] ||
    fail "no Redis test suite in $suite (set REDIS_SUITE_DIR, or run \`cargo xtask doctor --install\`, which unpacks it there)"
command -v tclsh >/dev/null || fail "tclsh is not installed (Debian package tcl)"

tags=()
for t in "${DENIED_TAGS[@]}"; do tags+=(--tags "-$t"); done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The names of a list file: its lines that are neither comments nor blank.
names() { [ -f "$1" ] && { grep -v '^#' "$1" | grep -v '^[[:space:]]*$' || true; }; }

rows=()
total_ok=0 total_err=0 total_known=0 total_skip=0 total_ignore=0 bad=0
printf '%-20s %5s %5s %6s %5s %7s  %s\n' unit ok err known skip ignored result
for unit in "${UNITS[@]}"; do
    [ -f "$suite/tests/$unit.tcl" ] || fail "the suite has no unit $unit"
    skipfile=$work/skip.txt
    names "$here/skips/$unit.txt" >"$skipfile" || true
    known=$work/known.txt
    names "$here/failing/$unit.txt" >"$known" || true
    if [ -n "${REDIS_SUITE_GUEST:-}" ]; then
        names "$here/failing/guest/$unit.txt" >>"$known" || true
    fi
    log=$work/$(echo "$unit" | tr / -).log
    status=0
    (cd "$suite" && tclsh tests/test_helper.tcl --host "$host" --port "$port" --single "$unit" \
        --durable --ignore-encoding --timeout 600 --skipfile "$skipfile" "${tags[@]}") >"$log" 2>&1 || status=$?
    # The harness colours its tags; the counts read the plain text.
    sed -i 's/\x1b\[[0-9;]*m//g' "$log"
    count() { grep -c "^\[$1\]: " "$log" || true; }
    ok=$(count ok) exc=$(count exception) skip=$(count skip) ignore=$(count ignore)
    # Failed tests by name ("[err]: NAME in tests/unit/....tcl").
    sed -n 's/^\[err\]: \(.*\) in tests\/.*\.tcl$/\1/p' "$log" | sort -u >"$work/failed.txt"
    unexpected=$(grep -vxF -f "$known" "$work/failed.txt" || true)
    passing=$(while IFS= read -r name; do
        grep -qxF "$name" "$work/failed.txt" && continue
        grep -qxF "[ok]: $name" <(sed 's/ ([0-9]* ms)$//' "$log") && echo "$name"
    done <"$known")
    # An entry is a test's name, or a regular expression after a `/` (the harness's rule).
    stale=$(while IFS= read -r name; do
        case $name in
        /*) grep -qE "^\[skip\]: .*${name#/}" "$log" || echo "$name" ;;
        *) grep -qxF "[skip]: $name" "$log" || echo "$name" ;;
        esac
    done <"$skipfile")
    err=$(grep -c . <<<"$unexpected" || true)
    knownn=$(grep -cxF -f "$known" "$work/failed.txt" || true)
    knownn=${knownn:-0} # grep prints nothing for an empty pattern file
    result=ok
    if [ -n "$unexpected" ] || [ "$exc" -gt 0 ] || [ -n "$passing" ] || [ -n "$stale" ]; then
        result=FAILED
        bad=1
    elif [ "$status" -ne 0 ] && [ "$knownn" = 0 ]; then
        result=FAILED
        bad=1
    fi
    printf '%-20s %5s %5s %6s %5s %7s  %s\n' "$unit" "$ok" "$((err + exc))" "$knownn" "$skip" \
        "$ignore" "$result"
    if [ "$result" = FAILED ]; then
        while IFS= read -r name; do
            [ -n "$name" ] && { grep -m1 -A1 -F "[err]: $name in " "$log" | sed "s/^/    | /" || true; }
        done <<<"$unexpected"
        { grep -A3 '^\[exception\]: ' "$log" | sed 's/^/    | /' | head -8; } || true
        [ -n "$passing" ] && printf '    passes, but failing/%s.txt lists it: %s\n' "$unit" "$passing"
        [ -n "$stale" ] && printf '    not run, but skips/%s.txt lists it: %s\n' "$unit" "$stale"
        if [ -z "$unexpected$passing$stale" ] && [ "$exc" = 0 ]; then
            tail -20 "$log" | sed 's/^/    | /'
        fi
    fi
    rows+=("$(printf '{"unit": "%s", "passed": %s, "failed": %s, "failed_as_listed": %s, "skipped": %s, "ignored": %s}' \
        "$unit" "$ok" "$((err + exc))" "$knownn" "$skip" "$ignore")")
    total_ok=$((total_ok + ok)) total_err=$((total_err + err + exc))
    total_known=$((total_known + knownn))
    total_skip=$((total_skip + skip)) total_ignore=$((total_ignore + ignore))
done
printf '%-20s %5s %5s %6s %5s %7s\n' total "$total_ok" "$total_err" "$total_known" \
    "$total_skip" "$total_ignore"
if [ -n "${REDIS_SUITE_RESULTS:-}" ]; then
    {
        printf '{\n  "suite": "Redis 7.0.15 tests/ (Debian redis_7.0.15.orig.tar.gz), external-server mode",\n'
        printf '  "utc": "%s",\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
        printf '  "server": "%s",\n' "${REDIS_SUITE_SERVER:-unnamed}"
        printf '  "host": "%s, %s CPUs",\n' \
            "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" "$(nproc)"
        printf '  "denied_tags": ["%s"],\n' "$(printf '%s", "' "${DENIED_TAGS[@]}" | sed 's/", "$//')"
        printf '  "units": [\n'
        for i in "${!rows[@]}"; do
            printf '    %s%s\n' "${rows[$i]}" "$([ "$i" -lt $((${#rows[@]} - 1)) ] && echo ,)"
        done
        printf '  ]\n}\n'
    } >"$REDIS_SUITE_RESULTS"
fi
[ "$bad" = 0 ] || fail "see the units marked FAILED above"
echo "redis suite: ok: $total_ok tests passed, $total_known failed as listed, $total_skip skipped by list, $total_ignore left out by tag"
