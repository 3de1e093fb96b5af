#!/usr/bin/env bash
# Runs YCSB 0.17.0 (site.ycsb.Client) with the locked-in Redis binding, without
# YCSB's bin/ycsb Python launcher.
#
#   run-ycsb.sh load|run [YCSB options...]
#
#   run-ycsb.sh load -P workloads/workloada -p redis.host=127.0.0.1 -p redis.port=6379
#   run-ycsb.sh run  -P workloads/workloada -p redis.host=127.0.0.1 -p redis.port=6379
#
# `load` passes -load (insert recordcount records), `run` passes -t (do
# operationcount operations). Everything after the phase goes to
# site.ycsb.Client unchanged (-P file, -p name=value, -threads n, -target n,
# -s, ...); -db is set here. Relative -P paths are relative to the caller's
# directory, as usual.
#
# YCSB prints its results on stdout ([OVERALL], [READ], [UPDATE], [INSERT],
# [CLEANUP] lines) and its progress on stderr. It exits 0 even when every
# client thread failed to connect, so this script checks its stdout and exits
#   0  results printed, every operation returned OK;
#   1  usage error, or the binding is not built;
#   2  no [OVERALL] throughput or no operations in the output, or a client
#      thread failed to initialise (site.ycsb.DBException);
#   3  some operation returned something other than OK (Return=ERROR,
#      Return=NOT_FOUND, ...);
#   else the JVM's own exit status.
# YCSB_STRICT=0 turns the checks off (the JVM's status is returned as is).
#
# Environment: JAVA (default: java on PATH), JAVA_OPTS (extra JVM options).
# Build first (once online, then offline): cd bench/ycsb-redis && mvn -q -o package
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() {
  echo "usage: $0 load|run [YCSB options: -P workload -p redis.host=H -p redis.port=P ...]" >&2
  exit 1
}

[ $# -ge 1 ] || usage
case "$1" in
  load) phase=-load ;;
  run) phase=-t ;;
  *) usage ;;
esac
shift

if [ ! -d "$here/target/classes/dev/lockedin/ycsb" ] || [ ! -f "$here/target/lib/core-0.17.0.jar" ]; then
  echo "$0: the binding is not built; run: (cd '$here' && mvn -q -o package)" >&2
  exit 1
fi

java="${JAVA:-java}"
# shellcheck disable=SC2206 # JAVA_OPTS is a list of words on purpose
opts=(${JAVA_OPTS:-})
cmd=("$java" "${opts[@]}" -cp "$here/target/classes:$here/target/lib/*"
  site.ycsb.Client "$phase" -db dev.lockedin.ycsb.RedisClient "$@")

if [ "${YCSB_STRICT:-1}" = 0 ]; then
  exec "${cmd[@]}"
fi

out="$(mktemp "${TMPDIR:-/tmp}/run-ycsb.XXXXXX")"
trap 'rm -f "$out"' EXIT

set +e
"${cmd[@]}" | tee "$out"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "$0: YCSB exited with status $status" >&2
  exit "$status"
fi

if grep -q 'site\.ycsb\.DBException' "$out"; then
  echo "$0: a YCSB client thread failed to initialise (site.ycsb.DBException above)" >&2
  exit 2
fi
if ! grep -q '^\[OVERALL\], Throughput(ops/sec), ' "$out" \
  || ! grep -Eq '^\[(READ|UPDATE|INSERT|DELETE|SCAN|READ-MODIFY-WRITE)\], Operations, [1-9]' "$out"; then
  echo "$0: YCSB printed no [OVERALL] throughput or did no operations" >&2
  exit 2
fi
if grep -E '^\[[A-Z-]+\], Return=' "$out" | grep -Evq ', Return=OK, '; then
  echo "$0: some operations did not return OK:" >&2
  grep -E '^\[[A-Z-]+\], Return=' "$out" | grep -Ev ', Return=OK, ' >&2
  exit 3
fi
