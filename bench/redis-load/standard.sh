#!/usr/bin/env bash
# The standard client load against one key-value server, then a read-back of what it wrote.
#
#   REDIS_TEST_PORT=PORT [REDIS_TEST_HOST=127.0.0.1] [REQUESTS=100000] [CLIENTS=50] \
#   [PIPELINE=16] bench/redis-load/standard.sh
#
# `cargo xtask qemu --net --client` sets REDIS_TEST_PORT (steps net:*-c50). It runs every
# redis-benchmark test the server implements (PING inline and multi-bulk, SET, GET, INCR, HSET,
# MSET of 10 keys) with redis-benchmark's default 50 connections, first unpipelined, then
# PIPELINE deep; each test opens its 50 connections at once and closes them at its end.
# redis-benchmark exits non-zero when a connection is refused or reset.
#
# No `-r`: every request goes to the same key of its test (`key:__rand_int__`,
# `counter:__rand_int__`, field `element:__rand_int__` of `myhash`), so the read-back knows
# exactly what an acknowledged request left behind: the counter must equal the INCR requests
# of both runs (one lost or doubled increment shows), each written value must read back, and
# the store must hold those three keys and nothing else.
set -euo pipefail

host=${REDIS_TEST_HOST:-127.0.0.1}
port=${REDIS_TEST_PORT:?set REDIS_TEST_PORT to the port of the server}
requests=${REQUESTS:-100000}
clients=${CLIENTS:-50}
pipeline=${PIPELINE:-16}
tests=ping_inline,ping_mbulk,set,get,incr,hset,mset

cli() { redis-cli -h "$host" -p "$port" "$@"; }
fail() { echo "standard load: FAILED: $*" >&2; exit 1; }

# redis-benchmark sends whole rounds of PIPELINE requests per connection and finishes the
# round that reaches REQUESTS: only a multiple of CLIENTS * PIPELINE sends exactly REQUESTS.
[ $((requests % (clients * pipeline))) = 0 ] ||
    fail "REQUESTS ($requests) must be a multiple of CLIENTS * PIPELINE ($((clients * pipeline))) for the read-back to be exact"

[ "$(cli FLUSHALL)" = OK ] || fail "FLUSHALL was not answered OK"
start=$(date +%s)
for p in 1 "$pipeline"; do
    echo "standard load: redis-benchmark -c $clients -n $requests -P $p -t $tests (port $port)"
    # Its progress lines (rewritten in place with a carriage return) left out of the log.
    redis-benchmark -h "$host" -p "$port" -c "$clients" -n "$requests" -P "$p" -t "$tests" -q |
        tr '\r' '\n' | grep -v 'rps=' | grep -v '^ *$'
done

# The read-back.
want_counter=$((2 * requests))
counter=$(cli GET 'counter:__rand_int__')
[ "$counter" = "$want_counter" ] ||
    fail "counter:__rand_int__ is '$counter' after $want_counter acknowledged INCRs"
# SET, MSET and HSET write the same 3-byte payload (redis-benchmark's default -d 3).
value=$(cli GET 'key:__rand_int__')
[ "${#value}" = 3 ] || fail "key:__rand_int__ reads back as '$value', not a 3-byte payload"
[ "$(cli HGET myhash 'element:__rand_int__')" = "$value" ] ||
    fail "myhash's field element:__rand_int__ does not read back as '$value'"
[ "$(cli HLEN myhash)" = 1 ] || fail "myhash has $(cli HLEN myhash) fields, not 1"
[ "$(cli DBSIZE)" = 3 ] || fail "the store holds $(cli DBSIZE) keys, not the 3 the tests write"
echo "standard load: ok: $((2 * 7 * requests)) requests answered, every acknowledged write read back ($(($(date +%s) - start)) s)"
