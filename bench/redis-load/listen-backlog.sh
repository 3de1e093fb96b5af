#!/usr/bin/env bash
# Shows why a network stalls under many connections opened at once: the backlog of the host
# socket that accepts the forwarded port, and the host kernel's listen-queue counters over a
# `redis-benchmark -c 50` run. For `cargo xtask qemu --net --network user|passt --client`:
#
#   cargo xtask qemu --net --network user --smp 2 --client bench/redis-load/listen-backlog.sh
#
# QEMU's user network (libslirp) listens with a backlog of 1; passt with 128. `ss` shows the
# backlog of a listening socket in its Send-Q column; `nstat` counts the SYNs the host kernel
# dropped because that socket's accept queue was full (TcpExtListenOverflows). The run is cut
# after LIMIT seconds (default 60): over the user network redis-benchmark stalls near zero
# requests a second, retrying dropped SYNs after 1, 3, 7, 15 ... s. Always exits 0: it
# reports, the reader judges (docs/network.md).
set -u
port=${REDIS_TEST_PORT:?set REDIS_TEST_PORT to the port of the server}
limit=${LIMIT:-60}

echo "== the listening socket of host port $port (a listener's Send-Q is its backlog)"
ss -ltn "sport = :$port"
nstat -n >/dev/null
echo "== redis-benchmark -c 50 -n 50000 -t set,get ($limit s limit), one progress line in 20"
start=$(date +%s)
timeout "$limit" redis-benchmark -p "$port" -c 50 -n 50000 -t set,get -q 2>&1 |
    tr '\r' '\n' | grep -v '^ *$' | awk 'NR % 20 == 1' | tail -8
echo "redis-benchmark: exit status ${PIPESTATUS[0]} (124: cut at the limit) after $(($(date +%s) - start)) s"
echo "== the host kernel's listen-queue counters over the run"
nstat -z TcpExtListenOverflows TcpExtListenDrops
exit 0
