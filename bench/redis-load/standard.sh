#!/usr/bin/env bash
# The standard client load against one key-value server, then a read-back of what it wrote.
#
#   REDIS_TEST_PORT=PORT [REDIS_TEST_HOST=127.0.0.1] [REQUESTS=100000] [CLIENTS=50] \
#   [PIPELINE=16] bench/redis-load/standard.sh
#
# `cargo xtask qemu --net --client` sets REDIS_TEST_PORT (steps net:*-c50). It runs
# redis-benchmark's whole default test list (no `-t`: PING inline and multi-bulk, SET, GET,
# INCR, LPUSH, RPUSH, LPOP, RPOP, SADD, HSET, SPOP, ZADD, ZPOPMIN, LPUSH again for the LRANGE
# tests, LRANGE of the first 100, 300, 500 and 600 elements, MSET of 10 keys, and from
# redis-benchmark 7.2 on XADD; before 7.2, Debian 12's 7.0 among them, the same XADD is run as
# an explicit command after the list) with its default 50 connections, first unpipelined, then
# PIPELINE deep; each test opens its 50 connections at once and closes them at its end.
# redis-benchmark exits non-zero when a connection is refused or reset, or when the server
# answers an error (an unknown command, say).
#
# No `-r`: every request goes to the same key of its test (`key:__rand_int__`,
# `counter:__rand_int__`, field `element:__rand_int__` of `myhash`, `mylist`, member
# `element:__rand_int__` of `myset` and `myzset`, `mystream`), so the read-back knows exactly
# what the acknowledged requests left behind, after both runs:
#   * the counter equals the INCR requests (one lost or doubled increment shows);
#   * the value SET and MSET wrote reads back, and so does HSET's field (the one field);
#   * each run's LPUSH and RPUSH tests add REQUESTS elements to `mylist` each, its LPOP and
#     RPOP tests take as many off again, and the LPUSH for the LRANGE tests adds REQUESTS that
#     stay: `mylist` holds 2 * REQUESTS elements, the second run's (its payload) first;
#   * SPOP takes the one member SADD added, ZPOPMIN the one ZADD added: `myset` and `myzset`
#     are gone (an emptied collection is deleted);
#   * `mystream` holds the 2 * REQUESTS XADD entries, the last one with the second run's
#     payload, under IDs that grow (the server refuses any other);
#   * the store holds those five keys and nothing else.
set -euo pipefail

host=${REDIS_TEST_HOST:-127.0.0.1}
port=${REDIS_TEST_PORT:?set REDIS_TEST_PORT to the port of the server}
requests=${REQUESTS:-100000}
clients=${CLIENTS:-50}
pipeline=${PIPELINE:-16}

cli() { redis-cli -h "$host" -p "$port" "$@"; }
fail() { echo "standard load: FAILED: $*" >&2; exit 1; }

# redis-benchmark sends whole rounds of PIPELINE requests per connection and finishes the
# round that reaches REQUESTS: only a multiple of CLIENTS * PIPELINE sends exactly REQUESTS.
[ $((requests % (clients * pipeline))) = 0 ] ||
    fail "REQUESTS ($requests) must be a multiple of CLIENTS * PIPELINE ($((clients * pipeline))) for the read-back to be exact"

# redis-benchmark with the given options, its progress lines (rewritten in place with a
# carriage return) left out of the log and what it printed also in $out; its exit status is
# the function's (pipefail).
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bench() {
    redis-benchmark -h "$host" -p "$port" -c "$clients" -n "$requests" -q "$@" |
        tr '\r' '\n' | { grep -v 'rps=' | grep -v '^ *$' || true; } | tee "$out"
}

[ "$(cli FLUSHALL)" = OK ] || fail "FLUSHALL was not answered OK"
start=$(date +%s)
for p in 1 "$pipeline"; do
    echo "standard load: redis-benchmark -c $clients -n $requests -P $p, the default tests (port $port)"
    bench -P "$p"
    if ! grep -q '^XADD' "$out"; then
        # The XADD test as redis-benchmark 7.2 runs it, with the payload of this run's tests.
        bench -P "$p" XADD mystream '*' myfield "$(cli GET 'key:__rand_int__')"
    fi
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
want_len=$((2 * requests))
[ "$(cli LLEN mylist)" = "$want_len" ] ||
    fail "mylist has $(cli LLEN mylist) elements, not the $want_len the LPUSH, RPUSH, LPOP and RPOP tests leave"
# The second run's LRANGE pushes are the first REQUESTS elements, the first run's the rest.
[ "$(cli LINDEX mylist 0)" = "$value" ] && [ "$(cli LINDEX mylist $((requests - 1)))" = "$value" ] ||
    fail "mylist's first $requests elements are not the second run's payload '$value'"
first_run=$(cli LINDEX mylist $((requests)))
[ "${#first_run}" = 3 ] && [ "$(cli LINDEX mylist -1)" = "$first_run" ] ||
    fail "mylist's last $requests elements are not one 3-byte payload"
for k in myset myzset; do
    [ "$(cli EXISTS $k)" = 0 ] || fail "$k is left ($(cli TYPE $k)) after SPOP and ZPOPMIN took its one member"
done
[ "$(cli XLEN mystream)" = "$want_len" ] ||
    fail "mystream has $(cli XLEN mystream) entries, not the $want_len the XADD tests added"
last=$(cli XREVRANGE mystream + - COUNT 1 | tr '\n' ' ')
[ "${last#* }" = "myfield $value " ] ||
    fail "mystream's last entry is '$last', not field myfield with the payload '$value'"
[ "$(cli DBSIZE)" = 5 ] || fail "the store holds $(cli DBSIZE) keys, not the 5 the tests leave"
echo "standard load: ok: $((2 * 21 * requests)) requests answered, every acknowledged write read back ($(($(date +%s) - start)) s)"
