#!/usr/bin/env python3
"""Sends the same random command sequence to two Redis-protocol servers and compares replies.

    cargo run --release -p kv-resp --example tcp_server -- 6390 &
    redis-server --port 6391 --save '' --appendonly no &
    lib/kv-resp/tools/compare-with-redis.py --ours 6390 --redis 6391 [--seed N] [--count N]

The commands are kv-resp's (strings, keyspace, hashes, lists, sets, sorted sets, streams) with
arguments from small pools, valid and invalid (bad counts, scores, IDs, options), over a few
keys, so that types clash and errors of every kind come up; every 300th command is a
FLUSHALL. Left out: what is random or clock-bound on either side (SPOP and SRANDMEMBER picks,
RANDOMKEY, XADD with `*`, INFO). Members of SMEMBERS and KEYS replies are compared as sets
(their order is Redis's hash table's). Prints each difference; exits 1 if there was one.
"""

import argparse
import random
import socket
import sys

KEYS = ["k0", "k1", "k2", "str"]
MEMBERS = ["a", "b", "c", "dd", ""]
INTS = ["0", "1", "-1", "2", "-2", "3", "10", "-10", "x", "1.5"]
SCORES = ["1", "1.5", "-1", "0", "-inf", "+inf", "inf", "2.5", "x", "1e3", "0.1", "nan",
          "(1", "(2", "-0"]
LEX = ["-", "+", "[a", "(a", "[b", "(dd", "[", "(", "a"]
IDS = ["1-1", "2", "0-0", "3-*", "1", "5-5", "x", "2-x", "0-1",
       "18446744073709551615-18446744073709551615"]
BOUNDS = ["-", "+", "1-1", "2", "(1-1", "(2", "0", "5-5", "x", "(+", "(-"]
PATTERNS = ["*", "k*", "k[01]", "?", "*0", "s?r", "[^k]*", "k[1-2]", "\\k*", "[a-z]*", "[",
            "*[", "k[0"]


def some(pool, lo=1, hi=3):
    return [random.choice(pool) for _ in range(random.randint(lo, hi))]


def pairs(a, b, lo=1, hi=3):
    return sum([[random.choice(a), random.choice(b)] for _ in range(random.randint(lo, hi))], [])


def command():
    k, m, i = random.choice(KEYS), random.choice(MEMBERS), random.choice(INTS)
    return random.choice([
        lambda: ["LPUSH", k] + some(MEMBERS), lambda: ["RPUSH", k] + some(MEMBERS),
        lambda: ["LPUSHX", k] + some(MEMBERS), lambda: ["RPUSHX", k] + some(MEMBERS),
        lambda: ["LPOP", k] + some(INTS, 0, 1), lambda: ["RPOP", k] + some(INTS, 0, 2),
        lambda: ["LRANGE", k, i, random.choice(INTS)], lambda: ["LLEN", k],
        lambda: ["LINDEX", k, i], lambda: ["LSET", k, i, m],
        lambda: ["LREM", k, i, m], lambda: ["LTRIM", k, i, random.choice(INTS)],
        lambda: ["SADD", k] + some(MEMBERS), lambda: ["SREM", k] + some(MEMBERS),
        lambda: ["SISMEMBER", k, m], lambda: ["SMISMEMBER", k] + some(MEMBERS),
        lambda: ["SCARD", k], lambda: ["SMEMBERS", k],
        lambda: ["SPOP", k, random.choice(["-1", "x", "0"])],
        lambda: ["SRANDMEMBER", k, "x"],
        lambda: ["ZADD", k] + some(["NX", "XX", "GT", "LT", "CH", "INCR"], 0, 2)
        + pairs(SCORES, MEMBERS) + some(SCORES, 0, 1),
        lambda: ["ZADD", k, "0", m, "0", random.choice(MEMBERS)],
        lambda: ["ZINCRBY", k, random.choice(SCORES), m],
        lambda: ["ZPOPMIN", k] + some(INTS, 0, 1), lambda: ["ZPOPMAX", k] + some(INTS, 0, 2),
        lambda: ["ZRANGE", k, random.choice(INTS + SCORES + LEX),
                 random.choice(INTS + SCORES + LEX)]
        + some(["WITHSCORES", "REV", "BYSCORE", "BYLEX", "LIMIT", "0", "1", "-1", "x"], 0, 4),
        lambda: ["ZRANGE", k, random.choice(LEX), random.choice(LEX), "BYLEX"]
        + some(["REV", "LIMIT", "0", "1", "-1", "2"], 0, 4),
        lambda: ["ZRANK", k, m], lambda: ["ZREVRANK", k, m],
        lambda: ["ZSCORE", k, m], lambda: ["ZCARD", k], lambda: ["ZREM", k] + some(MEMBERS),
        lambda: ["XADD", k] + some(["NOMKSTREAM"], 0, 1) + [random.choice(IDS)]
        + some(MEMBERS, 0, 4),
        lambda: ["XLEN", k],
        lambda: ["XRANGE", k, random.choice(BOUNDS), random.choice(BOUNDS)]
        + some(["COUNT", "1", "0", "x", "-1"], 0, 2),
        lambda: ["XREVRANGE", k, random.choice(BOUNDS), random.choice(BOUNDS)]
        + some(["COUNT", "2"], 0, 2),
        lambda: ["HSET", k, m, random.choice(MEMBERS)], lambda: ["HGETALL", k],
        lambda: ["TYPE", k], lambda: ["DEL", k], lambda: ["GET", k],
        lambda: ["SET", k, random.choice(["1", "10", "abc", "-5", m])],
        lambda: ["SETNX", k, m], lambda: ["GETDEL", k],
        lambda: ["GETEX", k] + some(["EX", "PX", "EXAT", "PXAT", "PERSIST", "10", "0", "-1",
                                     "x", "100000", "1", "99999999999999"], 0, 4),
        lambda: ["APPEND", k, m], lambda: ["STRLEN", k], lambda: ["INCR", k],
        lambda: ["GETRANGE", k, i, random.choice(INTS)], lambda: ["SETRANGE", k, i, m],
        lambda: ["MSETNX"] + pairs(KEYS, MEMBERS) + some(MEMBERS, 0, 1),
        lambda: ["RENAME", k, random.choice(KEYS)], lambda: ["RENAMENX", k, random.choice(KEYS)],
        lambda: ["KEYS", random.choice(PATTERNS)],
        lambda: ["TTL", k], lambda: ["EXPIRE", k, random.choice(["100", "0"])],
    ])()


def encode(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def reply(f):
    """One whole reply, as its bytes."""
    line = f.readline()
    kind = line[:1]
    if kind in (b"+", b"-", b":"):
        return line
    if kind == b"$":
        n = int(line[1:-2])
        return line if n < 0 else line + f.read(n + 2)
    if kind == b"*":
        return line + b"".join(reply(f) for _ in range(max(int(line[1:-2]), 0)))
    raise SystemExit("compare-with-redis: malformed reply %r" % line)


def comparable(cmd, r):
    if cmd[0] in ("SMEMBERS", "KEYS") and r.startswith(b"*"):
        parts = r.split(b"\r\n")
        return parts[0] + b" " + b" ".join(sorted(parts[2:-1:2]))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ours", type=int, required=True, help="port of the kv-resp server")
    ap.add_argument("--redis", type=int, required=True, help="port of the Redis server")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=5000)
    args = ap.parse_args()
    random.seed(args.seed)
    servers = []
    for port in (args.ours, args.redis):
        s = socket.create_connection(("127.0.0.1", port))
        servers.append((s, s.makefile("rb")))
    differences = 0
    for n in range(args.count):
        cmd = ["FLUSHALL"] if n % 300 == 0 else command()
        for s, _ in servers:
            s.sendall(encode(cmd))
        ours, theirs = (reply(f) for _, f in servers)
        if comparable(cmd, ours) != comparable(cmd, theirs):
            differences += 1
            print("%s\n  ours:  %r\n  redis: %r" % (cmd, ours[:300], theirs[:300]))
    print("compare-with-redis: %d commands, %d differences" % (args.count, differences))
    sys.exit(1 if differences else 0)


if __name__ == "__main__":
    main()
