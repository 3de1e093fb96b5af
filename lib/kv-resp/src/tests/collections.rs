//! Lists, sets, sorted sets, streams and `TYPE`, against Redis 7.0's replies.

use super::*;
use std::format;
use std::string::{String, ToString};

const OK: &str = "+OK\r\n";
const NIL: &str = "$-1\r\n";
const NIL_ARRAY: &str = "*-1\r\n";
const EMPTY: &str = "*0\r\n";
const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const NOT_POSITIVE: &str = "-ERR value is out of range, must be positive\r\n";
const NOT_FLOAT: &str = "-ERR value is not a valid float\r\n";
const OOM: &str = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
const SYNTAX: &str = "-ERR syntax error\r\n";

/// A RESP array of bulk strings.
fn arr(items: &[&str]) -> String {
    let mut s = format!("*{}\r\n", items.len());
    for i in items {
        s += &format!("${}\r\n{i}\r\n", i.len());
    }
    s
}

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

fn int(n: i64) -> String {
    format!(":{n}\r\n")
}

fn wrong_args(name: &str) -> String {
    format!("-ERR wrong number of arguments for '{name}' command\r\n")
}

#[test]
fn push_pop_range() {
    let mut t = T::new();
    assert_eq!(t.c(&["LPUSH", "l", "a", "b", "c"]), int(3));
    assert_eq!(t.c(&["RPUSH", "l", "d", "e"]), int(5));
    assert_eq!(
        t.c(&["LRANGE", "l", "0", "-1"]),
        arr(&["c", "b", "a", "d", "e"])
    );
    assert_eq!(t.c(&["LRANGE", "l", "-2", "100"]), arr(&["d", "e"]));
    assert_eq!(t.c(&["LRANGE", "l", "-100", "1"]), arr(&["c", "b"]));
    assert_eq!(t.c(&["LRANGE", "l", "3", "2"]), EMPTY);
    assert_eq!(t.c(&["LRANGE", "l", "5", "10"]), EMPTY);
    assert_eq!(t.c(&["LRANGE", "l", "x", "1"]), NOT_INT);
    assert_eq!(t.c(&["LRANGE", "nokey", "0", "-1"]), EMPTY);
    assert_eq!(t.c(&["LLEN", "l"]), int(5));
    assert_eq!(t.c(&["LLEN", "nokey"]), int(0));
    assert_eq!(t.c(&["LPOP", "l"]), bulk("c"));
    assert_eq!(t.c(&["RPOP", "l"]), bulk("e"));
    assert_eq!(t.c(&["LPOP", "l", "2"]), arr(&["b", "a"]));
    assert_eq!(t.c(&["LPOP", "l", "0"]), EMPTY);
    assert_eq!(t.c(&["RPOP", "l", "10"]), arr(&["d"]));
    // The emptied list is gone.
    assert_eq!(t.c(&["EXISTS", "l"]), int(0));
    assert_eq!(t.c(&["LPOP", "l"]), NIL);
    assert_eq!(t.c(&["LPOP", "l", "1"]), NIL_ARRAY);
    assert_eq!(t.c(&["RPOP", "l", "0"]), NIL_ARRAY);
    assert_eq!(t.c(&["LPOP", "l", "-1"]), NOT_POSITIVE);
    // Redis 7.0 gives a count that is no integer the negative count's error.
    assert_eq!(t.c(&["LPOP", "l", "x"]), NOT_POSITIVE);
    assert_eq!(t.c(&["LPOP", "l", "1", "2"]), wrong_args("lpop"));
    assert_eq!(t.c(&["LPUSH", "l"]), wrong_args("lpush"));
    assert_eq!(t.st.used_memory(), 0);
    assert_eq!(t.st.used_slots(), 0);
}

#[test]
fn pushx_index_set_rem_trim() {
    let mut t = T::new();
    assert_eq!(t.c(&["LPUSHX", "l", "a"]), int(0));
    assert_eq!(t.c(&["RPUSHX", "l", "a"]), int(0));
    assert_eq!(t.c(&["EXISTS", "l"]), int(0));
    assert_eq!(t.c(&["RPUSH", "l", "a", "b", "a", "c", "a"]), int(5));
    assert_eq!(t.c(&["RPUSHX", "l", "z"]), int(6));
    assert_eq!(t.c(&["LPUSHX", "l", "y"]), int(7));
    assert_eq!(t.c(&["LINDEX", "l", "0"]), bulk("y"));
    assert_eq!(t.c(&["LINDEX", "l", "-1"]), bulk("z"));
    assert_eq!(t.c(&["LINDEX", "l", "5"]), bulk("a"));
    assert_eq!(t.c(&["LINDEX", "l", "7"]), NIL);
    assert_eq!(t.c(&["LINDEX", "l", "-8"]), NIL);
    assert_eq!(t.c(&["LINDEX", "l", "x"]), NOT_INT);
    assert_eq!(t.c(&["LINDEX", "nokey", "x"]), NIL);
    assert_eq!(t.c(&["LSET", "l", "1", "A"]), OK);
    assert_eq!(t.c(&["LSET", "l", "-1", "longer"]), OK);
    assert_eq!(t.c(&["LSET", "l", "7", "v"]), "-ERR index out of range\r\n");
    assert_eq!(t.c(&["LSET", "l", "x", "v"]), NOT_INT);
    assert_eq!(t.c(&["LSET", "nokey", "0", "v"]), "-ERR no such key\r\n");
    assert_eq!(
        t.c(&["LRANGE", "l", "0", "-1"]),
        arr(&["y", "A", "b", "a", "c", "a", "longer"])
    );
    assert_eq!(t.c(&["RPUSH", "l", "a"]), int(8));
    // y A b a c a longer a: count -2 removes the last two "a"s.
    assert_eq!(t.c(&["LREM", "l", "-2", "a"]), int(2));
    assert_eq!(
        t.c(&["LRANGE", "l", "0", "-1"]),
        arr(&["y", "A", "b", "a", "c", "longer"])
    );
    assert_eq!(t.c(&["LREM", "l", "0", "b"]), int(1));
    assert_eq!(t.c(&["LREM", "l", "1", "nothere"]), int(0));
    assert_eq!(t.c(&["LREM", "l", "x", "a"]), NOT_INT);
    assert_eq!(t.c(&["LREM", "nokey", "0", "a"]), int(0));
    assert_eq!(t.c(&["LTRIM", "l", "1", "-2"]), OK);
    assert_eq!(t.c(&["LRANGE", "l", "0", "-1"]), arr(&["A", "a", "c"]));
    assert_eq!(t.c(&["LTRIM", "l", "x", "1"]), NOT_INT);
    assert_eq!(t.c(&["LTRIM", "nokey", "0", "1"]), OK);
    assert_eq!(t.c(&["LTRIM", "l", "5", "10"]), OK);
    assert_eq!(t.c(&["EXISTS", "l"]), int(0));
    assert_eq!(t.c(&["RPUSH", "l", "a", "a"]), int(2));
    assert_eq!(t.c(&["LREM", "l", "0", "a"]), int(2));
    assert_eq!(t.c(&["EXISTS", "l"]), int(0));
    assert_eq!(t.st.used_memory(), 0);
}

#[test]
fn wrong_types() {
    let mut t = T::new();
    assert_eq!(t.c(&["SET", "s", "v"]), OK);
    assert_eq!(t.c(&["RPUSH", "l", "a"]), int(1));
    assert_eq!(t.c(&["SADD", "set", "a"]), int(1));
    assert_eq!(t.c(&["ZADD", "z", "1", "a"]), int(1));
    assert_eq!(t.c(&["XADD", "x", "1-1", "f", "v"]), bulk("1-1"));
    assert_eq!(t.c(&["HSET", "h", "f", "v"]), int(1));
    for cmd in [
        &["LPUSH", "s", "a"][..],
        &["RPUSHX", "s", "a"],
        &["LPOP", "s"],
        &["LRANGE", "s", "0", "1"],
        &["LLEN", "s"],
        &["LINDEX", "s", "0"],
        &["LSET", "s", "0", "v"],
        &["LREM", "s", "0", "v"],
        &["LTRIM", "s", "0", "1"],
        &["SADD", "l", "a"],
        &["SREM", "l", "a"],
        &["SPOP", "l"],
        &["SMEMBERS", "l"],
        &["SISMEMBER", "l", "a"],
        &["SMISMEMBER", "l", "a"],
        &["SCARD", "l"],
        &["SRANDMEMBER", "l"],
        &["ZADD", "set", "1", "a"],
        &["ZINCRBY", "set", "1", "a"],
        &["ZPOPMIN", "set"],
        &["ZRANGE", "set", "0", "1"],
        &["ZRANK", "set", "a"],
        &["ZSCORE", "set", "a"],
        &["ZCARD", "set"],
        &["ZREM", "set", "a"],
        &["XADD", "z", "*", "f", "v"],
        &["XLEN", "z"],
        &["XRANGE", "z", "-", "+"],
        &["GET", "l"],
        &["HGET", "z", "f"],
        &["INCR", "x"],
        &["LPUSH", "h", "a"],
    ] {
        assert_eq!(t.c(cmd), WRONGTYPE, "{cmd:?}");
    }
    for (k, ty) in [
        ("s", "string"),
        ("l", "list"),
        ("set", "set"),
        ("z", "zset"),
        ("x", "stream"),
        ("h", "hash"),
        ("none", "none"),
    ] {
        assert_eq!(t.c(&["TYPE", k]), format!("+{ty}\r\n"));
    }
    // SET replaces a collection of any type; DEL and FLUSHALL free everything.
    assert_eq!(t.c(&["SET", "l", "v"]), OK);
    assert_eq!(t.c(&["TYPE", "l"]), "+string\r\n");
    assert_eq!(t.c(&["MSET", "z", "v", "set", "w"]), OK);
    assert_eq!(t.c(&["DEL", "x", "h"]), int(2));
    assert_eq!(t.c(&["DBSIZE"]), int(4));
    assert_eq!(t.c(&["DEL", "s", "l", "z", "set"]), int(4));
    assert_eq!(t.st.used_memory(), 0);
    assert_eq!(t.st.used_slots(), 0);
}

#[test]
fn expiry_and_info_cover_collections() {
    let mut t = T::new();
    assert_eq!(t.c(&["RPUSH", "l", "a", "b"]), int(2));
    assert_eq!(t.c(&["SADD", "s", "a"]), int(1));
    assert_eq!(t.c(&["ZADD", "z", "1", "a"]), int(1));
    assert_eq!(t.c(&["XADD", "x", "*", "f", "v"]), bulk("1000-0"));
    for k in ["l", "s", "z", "x"] {
        assert_eq!(t.c(&["PEXPIRE", k, "100"]), int(1));
        assert_eq!(t.c(&["PTTL", k]), int(100));
    }
    let info = t.c(&["INFO"]);
    assert!(info.contains("db0:keys=4,expires=4,avg_ttl=0"), "{info}");
    t.now += 101;
    assert_eq!(t.c(&["LLEN", "l"]), int(0));
    assert_eq!(t.c(&["DBSIZE"]), int(0));
    assert_eq!(t.st.used_memory(), 0);
    assert_eq!(t.st.used_slots(), 0);
    // FLUSHDB of one database leaves the other's collections.
    assert_eq!(t.c(&["RPUSH", "l", "a"]), int(1));
    assert_eq!(t.c(&["SELECT", "1"]), OK);
    assert_eq!(t.c(&["ZADD", "z", "1", "a", "2", "b"]), int(2));
    assert_eq!(t.c(&["FLUSHDB"]), OK);
    assert_eq!(t.c(&["SELECT", "0"]), OK);
    assert_eq!(t.c(&["LLEN", "l"]), int(1));
    assert_eq!(t.st.used_slots(), 2);
}

#[test]
fn list_oom_changes_nothing() {
    // 8 + 1 for the key, 8 + 1 per element: 99 bytes hold the key and 10 elements.
    let mut t = T::sized(99, 100);
    assert_eq!(
        t.c(&["RPUSH", "l", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]),
        int(10)
    );
    assert_eq!(t.c(&["RPUSH", "l", "k"]), OOM);
    assert_eq!(t.c(&["LSET", "l", "0", "aa"]), OOM);
    assert_eq!(t.c(&["LLEN", "l"]), int(10));
    assert_eq!(t.c(&["LSET", "l", "0", "z"]), OK);
    assert_eq!(t.c(&["LPOP", "l"]), bulk("z"));
    assert_eq!(t.c(&["LPUSH", "l", "y"]), int(10));
    assert_eq!(t.st.used_memory(), 99);
    let mut t = T::sized(1000, 3);
    assert_eq!(t.c(&["RPUSH", "l", "a", "b", "c"]), OOM);
    assert_eq!(t.c(&["RPUSH", "l", "a", "b"]), int(2));
    assert_eq!(t.c(&["SADD", "s", "a"]), OOM);
    assert_eq!(t.c(&["XADD", "x", "*", "f", "v"]), OOM);
    assert_eq!(t.c(&["DBSIZE"]), int(1));
}

#[test]
fn sets() {
    let mut t = T::new();
    assert_eq!(t.c(&["SADD", "s", "a", "b", "a", "c"]), int(3));
    assert_eq!(t.c(&["SADD", "s", "a", "d"]), int(1));
    assert_eq!(t.c(&["SCARD", "s"]), int(4));
    assert_eq!(t.c(&["SCARD", "nokey"]), int(0));
    assert_eq!(t.c(&["SMEMBERS", "s"]), arr(&["a", "b", "c", "d"]));
    assert_eq!(t.c(&["SMEMBERS", "nokey"]), EMPTY);
    assert_eq!(t.c(&["SISMEMBER", "s", "b"]), int(1));
    assert_eq!(t.c(&["SISMEMBER", "s", "x"]), int(0));
    assert_eq!(t.c(&["SISMEMBER", "nokey", "x"]), int(0));
    assert_eq!(
        t.c(&["SMISMEMBER", "s", "a", "x", "d"]),
        "*3\r\n:1\r\n:0\r\n:1\r\n"
    );
    assert_eq!(t.c(&["SMISMEMBER", "nokey", "a"]), "*1\r\n:0\r\n");
    assert_eq!(t.c(&["SREM", "s", "a", "x", "a"]), int(1));
    assert_eq!(t.c(&["SREM", "nokey", "a"]), int(0));
    assert_eq!(t.c(&["SREM", "s", "b", "c", "d", "e"]), int(3));
    assert_eq!(t.c(&["EXISTS", "s"]), int(0));
    assert_eq!(t.st.used_memory(), 0);
    assert_eq!(t.c(&["SADD", "s"]), wrong_args("sadd"));
}

#[test]
fn spop_and_srandmember() {
    let mut t = T::new();
    assert_eq!(t.c(&["SPOP", "s"]), NIL);
    assert_eq!(t.c(&["SPOP", "s", "2"]), EMPTY);
    assert_eq!(t.c(&["SRANDMEMBER", "s"]), NIL);
    assert_eq!(t.c(&["SRANDMEMBER", "s", "2"]), EMPTY);
    assert_eq!(t.c(&["SPOP", "s", "-1"]), NOT_POSITIVE);
    assert_eq!(t.c(&["SPOP", "s", "x"]), NOT_POSITIVE);
    assert_eq!(t.c(&["SRANDMEMBER", "s", "x"]), NOT_INT);
    assert_eq!(t.c(&["SPOP", "s", "1", "2"]), SYNTAX);
    let members: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    let mut args = vec!["SADD", "s"];
    args.extend(members.iter().map(String::as_str));
    assert_eq!(t.c(&args), int(20));
    let all = t.c(&["SMEMBERS", "s"]);
    // One member: one of the set's.
    let one = t.c(&["SRANDMEMBER", "s"]);
    assert!(members.iter().any(|m| bulk(m) == one), "{one}");
    // Distinct members, in the set's order, at most the set's size.
    let five = t.c(&["SRANDMEMBER", "s", "5"]);
    let got: Vec<&str> = five
        .split("\r\n")
        .skip(2)
        .step_by(2)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(got.len(), 5, "{five}");
    let mut sorted = got.clone();
    sorted.sort_by_key(|m| m[1..].parse::<u32>().unwrap());
    sorted.dedup();
    assert_eq!(sorted, got);
    assert_eq!(t.c(&["SRANDMEMBER", "s", "50"]), all);
    let neg = t.c(&["SRANDMEMBER", "s", "-30"]);
    assert!(neg.starts_with("*30\r\n"), "{neg}");
    assert_eq!(t.c(&["SCARD", "s"]), int(20));
    // SPOP removes what it returns.
    let popped = t.c(&["SPOP", "s"]);
    let m = popped.split("\r\n").nth(1).unwrap().to_string();
    assert_eq!(t.c(&["SISMEMBER", "s", &m]), int(0));
    let three = t.c(&["SPOP", "s", "3"]);
    assert!(three.starts_with("*3\r\n"), "{three}");
    for m in three
        .split("\r\n")
        .skip(2)
        .step_by(2)
        .filter(|s| !s.is_empty())
    {
        assert_eq!(t.c(&["SISMEMBER", "s", m]), int(0), "{m}");
    }
    assert_eq!(t.c(&["SCARD", "s"]), int(16));
    let rest = t.c(&["SPOP", "s", "100"]);
    assert!(rest.starts_with("*16\r\n"), "{rest}");
    assert_eq!(t.c(&["EXISTS", "s"]), int(0));
    assert_eq!(t.st.used_memory(), 0);
    assert_eq!(t.st.used_slots(), 0);
}

#[test]
fn score_format_is_printf_17g() {
    use crate::collections::fmt_score;
    for (v, want) in [
        (1.0, "1"),
        (1.5, "1.5"),
        (-2.25, "-2.25"),
        (0.0, "0"),
        (-0.0, "-0"),
        (0.1, "0.10000000000000001"),
        (1e16, "10000000000000000"),
        (1e17, "1e+17"),
        (1.5e300, "1.5000000000000001e+300"),
        (0.0001, "0.0001"),
        (0.00001, "1.0000000000000001e-05"),
        (123456.789, "123456.789"),
        (f64::INFINITY, "inf"),
        (f64::NEG_INFINITY, "-inf"),
        (f64::MAX, "1.7976931348623157e+308"),
        (5e-324, "4.9406564584124654e-324"),
    ] {
        let mut buf = [0; 32];
        assert_eq!(
            std::str::from_utf8(fmt_score(v, &mut buf)).unwrap(),
            want,
            "{v:e}"
        );
    }
}

#[test]
fn zadd_and_reads() {
    let mut t = T::new();
    assert_eq!(t.c(&["ZADD", "z", "1", "a", "2", "b", "1.5", "c"]), int(3));
    assert_eq!(
        t.c(&["ZADD", "z", "1", "d", "-inf", "e", "+inf", "f"]),
        int(3)
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        arr(&["e", "-inf", "a", "1", "d", "1", "c", "1.5", "b", "2", "f", "inf"])
    );
    assert_eq!(t.c(&["ZRANGE", "z", "1", "2"]), arr(&["a", "d"]));
    assert_eq!(t.c(&["ZRANGE", "z", "0", "1", "REV"]), arr(&["f", "b"]));
    assert_eq!(
        t.c(&["ZRANGE", "z", "-2", "-1", "rev", "withscores"]),
        arr(&["a", "1", "e", "-inf"])
    );
    assert_eq!(t.c(&["ZRANGE", "z", "5", "3"]), EMPTY);
    assert_eq!(t.c(&["ZRANGE", "z", "a", "3"]), NOT_INT);
    assert_eq!(t.c(&["ZRANGE", "nokey", "0", "-1"]), EMPTY);
    assert_eq!(t.c(&["ZCARD", "z"]), int(6));
    assert_eq!(t.c(&["ZCARD", "nokey"]), int(0));
    assert_eq!(t.c(&["ZSCORE", "z", "c"]), bulk("1.5"));
    assert_eq!(t.c(&["ZSCORE", "z", "x"]), NIL);
    assert_eq!(t.c(&["ZSCORE", "nokey", "x"]), NIL);
    assert_eq!(t.c(&["ZRANK", "z", "e"]), int(0));
    assert_eq!(t.c(&["ZRANK", "z", "c"]), int(3));
    assert_eq!(t.c(&["ZREVRANK", "z", "c"]), int(2));
    assert_eq!(t.c(&["ZRANK", "z", "x"]), NIL);
    // Re-scoring moves a member; CH counts changed ones.
    assert_eq!(t.c(&["ZADD", "z", "3", "a"]), int(0));
    assert_eq!(
        t.c(&["ZADD", "z", "CH", "4", "a", "4", "g", "1.5", "c"]),
        int(2)
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "0", "-1"]),
        arr(&["e", "d", "c", "b", "a", "g", "f"])
    );
    assert_eq!(t.c(&["ZADD", "z", "x", "a"]), NOT_FLOAT);
    assert_eq!(t.c(&["ZADD", "z", "nan", "a"]), NOT_FLOAT);
    assert_eq!(t.c(&["ZADD", "z", "1e999", "a"]), NOT_FLOAT);
    assert_eq!(t.c(&["ZADD", "z", "1", "a", "2"]), SYNTAX);
    assert_eq!(t.c(&["ZADD", "z", "NX", "CH"]), SYNTAX);
    assert_eq!(t.c(&["ZADD", "z", "1"]), wrong_args("zadd"));
    assert_eq!(
        t.c(&["ZADD", "z", "NX", "XX", "1", "a"]),
        "-ERR XX and NX options at the same time are not compatible\r\n"
    );
    assert_eq!(
        t.c(&["ZADD", "z", "GT", "LT", "1", "a"]),
        "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"
    );
    assert_eq!(
        t.c(&["ZADD", "z", "NX", "GT", "1", "a"]),
        "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"
    );
    assert_eq!(
        t.c(&["ZADD", "z", "INCR", "1", "a", "2", "b"]),
        "-ERR INCR option supports a single increment-element pair\r\n"
    );
}

#[test]
fn zadd_flags_and_incr() {
    let mut t = T::new();
    assert_eq!(t.c(&["ZADD", "z", "XX", "1", "a"]), int(0));
    assert_eq!(t.c(&["ZADD", "z", "XX", "INCR", "1", "a"]), NIL);
    assert_eq!(t.c(&["EXISTS", "z"]), int(0));
    assert_eq!(t.c(&["ZADD", "z", "NX", "1", "a", "2", "b"]), int(2));
    assert_eq!(t.c(&["ZADD", "z", "NX", "CH", "5", "a", "3", "c"]), int(1));
    assert_eq!(t.c(&["ZSCORE", "z", "a"]), bulk("1"));
    assert_eq!(t.c(&["ZADD", "z", "XX", "CH", "5", "a", "3", "d"]), int(1));
    assert_eq!(t.c(&["ZSCORE", "z", "d"]), NIL);
    assert_eq!(t.c(&["ZADD", "z", "GT", "CH", "4", "a", "6", "b"]), int(1));
    assert_eq!(
        t.c(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        arr(&["c", "3", "a", "5", "b", "6"])
    );
    assert_eq!(
        t.c(&["ZADD", "z", "LT", "CH", "4", "a", "7", "b", "1", "n"]),
        int(2)
    );
    assert_eq!(t.c(&["ZSCORE", "z", "n"]), bulk("1"));
    assert_eq!(t.c(&["ZADD", "z", "INCR", "2.5", "a"]), bulk("6.5"));
    assert_eq!(t.c(&["ZADD", "z", "INCR", "2.5", "new"]), bulk("2.5"));
    assert_eq!(t.c(&["ZADD", "z", "NX", "INCR", "1", "a"]), NIL);
    assert_eq!(t.c(&["ZADD", "z", "GT", "INCR", "-1", "a"]), NIL);
    assert_eq!(t.c(&["ZADD", "z", "LT", "INCR", "-1", "a"]), bulk("5.5"));
    assert_eq!(t.c(&["ZINCRBY", "z", "0.5", "a"]), bulk("6"));
    assert_eq!(t.c(&["ZINCRBY", "z", "1", "fresh"]), bulk("1"));
    assert_eq!(t.c(&["ZINCRBY", "z", "x", "a"]), NOT_FLOAT);
    assert_eq!(t.c(&["ZINCRBY", "z", "inf", "a"]), bulk("inf"));
    assert_eq!(
        t.c(&["ZINCRBY", "z", "-inf", "a"]),
        "-ERR resulting score is not a number (NaN)\r\n"
    );
    assert_eq!(t.c(&["ZSCORE", "z", "a"]), bulk("inf"));
    // Duplicates within one ZADD: the last score wins, added once.
    assert_eq!(t.c(&["ZADD", "y", "1", "m", "2", "m"]), int(1));
    assert_eq!(t.c(&["ZSCORE", "y", "m"]), bulk("2"));
    assert_eq!(t.c(&["ZADD", "y", "CH", "3", "m", "3", "m"]), int(1));
}

#[test]
fn zpop_zrem_byscore() {
    let mut t = T::new();
    assert_eq!(t.c(&["ZPOPMIN", "z"]), EMPTY);
    assert_eq!(t.c(&["ZPOPMIN", "z", "-1"]), NOT_POSITIVE);
    assert_eq!(t.c(&["ZPOPMAX", "z", "1", "2"]), SYNTAX);
    assert_eq!(t.c(&["ZPOPMAX", "z", "1.5"]), NOT_POSITIVE);
    assert_eq!(t.c(&["SET", "s", "v"]), OK);
    assert_eq!(t.c(&["ZPOPMAX", "s", "0"]), WRONGTYPE);
    assert_eq!(t.c(&["DEL", "s"]), int(1));
    assert_eq!(
        t.c(&["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"]),
        int(5)
    );
    assert_eq!(t.c(&["ZPOPMIN", "z"]), arr(&["a", "1"]));
    assert_eq!(t.c(&["ZPOPMAX", "z", "2"]), arr(&["e", "5", "d", "4"]));
    assert_eq!(t.c(&["ZPOPMIN", "z", "0"]), EMPTY);
    assert_eq!(t.c(&["ZADD", "z", "2", "bb", "2.5", "x"]), int(2));
    assert_eq!(
        t.c(&["ZRANGE", "z", "2", "3", "BYSCORE"]),
        arr(&["b", "bb", "x", "c"])
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "(2", "3", "BYSCORE"]),
        arr(&["x", "c"])
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "-inf", "(3", "BYSCORE", "WITHSCORES"]),
        arr(&["b", "2", "bb", "2", "x", "2.5"])
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "+inf", "2", "BYSCORE", "REV"]),
        arr(&["c", "x", "bb", "b"])
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "2", "+inf", "BYSCORE", "LIMIT", "1", "2"]),
        arr(&["bb", "x"])
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "3", "-inf", "BYSCORE", "REV", "LIMIT", "1", "-1"]),
        arr(&["x", "bb", "b"])
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "2", "+inf", "BYSCORE", "LIMIT", "-1", "2"]),
        EMPTY
    );
    assert_eq!(t.c(&["ZRANGE", "z", "3", "2", "BYSCORE"]), EMPTY);
    assert_eq!(
        t.c(&["ZRANGE", "z", "x", "2", "BYSCORE"]),
        "-ERR min or max is not a float\r\n"
    );
    assert_eq!(t.c(&["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"]), "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n");
    assert_eq!(
        t.c(&["ZRANGE", "z", "0", "1", "BYSCORE", "LIMIT", "0"]),
        SYNTAX
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "0", "1", "BYSCORE", "LIMIT", "0", "x"]),
        NOT_INT
    );
    assert_eq!(t.c(&["ZRANGE", "z", "0", "1", "FOO"]), SYNTAX);
    assert_eq!(t.c(&["ZRANGE", "z", "0", "1", "REV", "REV"]), SYNTAX);
    assert_eq!(t.c(&["ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"]), SYNTAX);
    // LIMIT with a count of -1 is no limit, allowed by rank too.
    assert_eq!(
        t.c(&["ZRANGE", "z", "0", "0", "LIMIT", "5", "-1"]),
        arr(&["b"])
    );
    assert_eq!(t.c(&["ZREM", "z", "b", "nope", "b"]), int(1));
    assert_eq!(t.c(&["ZREM", "nokey", "b"]), int(0));
    assert_eq!(t.c(&["ZREM", "z", "bb", "x", "c"]), int(3));
    assert_eq!(t.c(&["EXISTS", "z"]), int(0));
    assert_eq!(t.c(&["ZADD", "z", "1", "a", "2", "b"]), int(2));
    assert_eq!(t.c(&["ZPOPMAX", "z", "10"]), arr(&["b", "2", "a", "1"]));
    assert_eq!(t.c(&["EXISTS", "z"]), int(0));
    assert_eq!(t.st.used_memory(), 0);
    assert_eq!(t.st.used_slots(), 0);
}

#[test]
fn zrange_bylex() {
    let mut t = T::new();
    assert_eq!(
        t.c(&["ZADD", "z", "0", "a", "0", "b", "0", "c", "0", "dd"]),
        int(4)
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "-", "+", "BYLEX"]),
        arr(&["a", "b", "c", "dd"])
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "[b", "(dd", "BYLEX"]),
        arr(&["b", "c"])
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "(a", "[c", "BYLEX", "LIMIT", "1", "5"]),
        arr(&["c"])
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "+", "[b", "BYLEX", "REV"]),
        arr(&["dd", "c", "b"])
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "[", "+", "BYLEX"]),
        arr(&["a", "b", "c", "dd"])
    );
    assert_eq!(t.c(&["ZRANGE", "z", "+", "-", "BYLEX"]), EMPTY);
    assert_eq!(
        t.c(&["ZRANGE", "z", "a", "+", "BYLEX"]),
        "-ERR min or max not valid string range item\r\n"
    );
    assert_eq!(
        t.c(&["ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"]),
        "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"
    );
    // Members whose scores differ: Redis's walk, which gives up when the last member is below
    // the minimum ("" after the others, by its score).
    assert_eq!(t.c(&["ZADD", "m", "0", "a", "0", "b", "5", ""]), int(3));
    assert_eq!(t.c(&["ZRANGE", "m", "[a", "[b", "BYLEX"]), EMPTY);
    assert_eq!(
        t.c(&["ZRANGE", "m", "-", "[b", "BYLEX"]),
        arr(&["a", "b", ""])
    );
    assert_eq!(t.c(&["ZRANGE", "m", "(a", "(a", "BYLEX"]), EMPTY);
    assert_eq!(t.c(&["ZRANGE", "m", "-", "-", "BYLEX"]), EMPTY);
}

#[test]
fn negative_zero_scores() {
    // Redis 7.0 stores -0 as 0, and answers ZINCRBY with the -0 it computed.
    let mut t = T::new();
    assert_eq!(t.c(&["ZINCRBY", "z", "-0", "a"]), bulk("-0"));
    assert_eq!(t.c(&["ZSCORE", "z", "a"]), bulk("0"));
    assert_eq!(t.c(&["ZADD", "z", "-0", "b"]), int(1));
    assert_eq!(t.c(&["ZPOPMAX", "z"]), arr(&["b", "0"]));
}

#[test]
fn zset_oom_changes_nothing() {
    // Key "z": 9 bytes; member "a".."j": 9 bytes each.
    let mut t = T::sized(9 * 4, 100);
    assert_eq!(t.c(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]), int(3));
    assert_eq!(t.c(&["ZADD", "z", "1", "d"]), OOM);
    assert_eq!(t.c(&["ZINCRBY", "z", "1", "d"]), OOM);
    // Updates need no memory, nor does a member given twice (changed twice here).
    assert_eq!(t.c(&["ZADD", "z", "CH", "5", "a", "6", "a"]), int(2));
    assert_eq!(t.c(&["ZADD", "z", "XX", "1", "d"]), int(0));
    assert_eq!(t.c(&["ZRANGE", "z", "0", "-1"]), arr(&["b", "c", "a"]));
}

#[test]
fn streams() {
    let mut t = T::new();
    t.now = 5;
    assert_eq!(t.c(&["XADD", "s", "*", "f", "v"]), bulk("5-0"));
    assert_eq!(t.c(&["XADD", "s", "*", "f", "v", "g", "w"]), bulk("5-1"));
    t.now = 4; // The clock went back: the IDs still grow.
    assert_eq!(t.c(&["XADD", "s", "*", "a", "b"]), bulk("5-2"));
    assert_eq!(
        t.c(&["XADD", "s", "5-2", "a", "b"]),
        format!(
            "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n"
        )
    );
    assert_eq!(
        t.c(&["XADD", "s", "5", "a", "b"]),
        "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n"
    );
    assert_eq!(t.c(&["XADD", "s", "5-*", "a", "b"]), bulk("5-3"));
    assert_eq!(t.c(&["XADD", "s", "7-*", "a", "b"]), bulk("7-0"));
    assert_eq!(t.c(&["XADD", "s", "9", "a", "b"]), bulk("9-0"));
    assert_eq!(t.c(&["XADD", "s", "10-5", "a", ""]), bulk("10-5"));
    assert_eq!(t.c(&["XLEN", "s"]), int(7));
    assert_eq!(t.c(&["XLEN", "nokey"]), int(0));
    assert_eq!(
        t.c(&["XADD", "s", "x", "a", "b"]),
        "-ERR Invalid stream ID specified as stream command argument\r\n"
    );
    assert_eq!(
        t.c(&["XADD", "s", "1-x", "a", "b"]),
        "-ERR Invalid stream ID specified as stream command argument\r\n"
    );
    assert_eq!(t.c(&["XADD", "s", "*", "a"]), wrong_args("xadd"));
    assert_eq!(t.c(&["XADD", "s", "*", "a", "b", "c"]), wrong_args("xadd"));
    assert_eq!(
        t.c(&["XADD", "n", "0-0", "a", "b"]),
        "-ERR The ID specified in XADD must be greater than 0-0\r\n"
    );
    assert_eq!(t.c(&["XADD", "n", "0-*", "a", "b"]), bulk("0-1"));
    assert_eq!(t.c(&["XADD", "m", "NOMKSTREAM", "*", "a", "b"]), NIL);
    assert_eq!(t.c(&["EXISTS", "m"]), int(0));
    assert_eq!(
        t.c(&["XADD", "n", "NOMKSTREAM", "*", "a", "b"]),
        bulk("4-0")
    );
    assert_eq!(
        t.c(&["XADD", "n", "MAXLEN", "10", "*", "a", "b"]),
        "-ERR XADD's MAXLEN and MINID (trimming) are not supported\r\n"
    );
    assert_eq!(
        t.c(&["XRANGE", "s", "-", "+", "COUNT", "2"]),
        "*2\r\n*2\r\n$3\r\n5-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n\
         *2\r\n$3\r\n5-1\r\n*4\r\n$1\r\nf\r\n$1\r\nv\r\n$1\r\ng\r\n$1\r\nw\r\n"
    );
    let ids = |reply: String| -> Vec<String> {
        reply
            .split("\r\n")
            .filter(|l| l.contains('-') && !l.starts_with('$') && !l.starts_with('*'))
            .map(|l| l.to_string())
            .collect()
    };
    assert_eq!(
        ids(t.c(&["XRANGE", "s", "5-2", "9"])),
        ["5-2", "5-3", "7-0", "9-0"]
    );
    assert_eq!(
        ids(t.c(&["XRANGE", "s", "(5-2", "(9"])),
        ["5-3", "7-0", "9-0"]
    );
    assert_eq!(ids(t.c(&["XRANGE", "s", "(5-2", "(9-0"])), ["5-3", "7-0"]);
    assert_eq!(ids(t.c(&["XRANGE", "s", "6", "+"])), ["7-0", "9-0", "10-5"]);
    assert_eq!(
        ids(t.c(&["XREVRANGE", "s", "+", "-", "COUNT", "3"])),
        ["10-5", "9-0", "7-0"]
    );
    assert_eq!(ids(t.c(&["XREVRANGE", "s", "7", "5-3"])), ["7-0", "5-3"]);
    assert_eq!(t.c(&["XRANGE", "s", "9", "7"]), EMPTY);
    assert_eq!(t.c(&["XRANGE", "s", "-", "+", "COUNT", "0"]), NIL_ARRAY);
    assert_eq!(t.c(&["XRANGE", "s", "-", "+", "COUNT", "x"]), NOT_INT);
    assert_eq!(t.c(&["XRANGE", "s", "-", "+", "COUNT"]), SYNTAX);
    assert_eq!(t.c(&["XRANGE", "s", "-", "+", "FOO", "1"]), SYNTAX);
    assert_eq!(
        t.c(&["XRANGE", "s", "x", "+"]),
        "-ERR Invalid stream ID specified as stream command argument\r\n"
    );
    assert_eq!(
        t.c(&[
            "XRANGE",
            "s",
            "(18446744073709551615-18446744073709551615",
            "+"
        ]),
        "-ERR invalid start ID for the interval\r\n"
    );
    assert_eq!(
        t.c(&["XRANGE", "s", "-", "(0-0"]),
        "-ERR invalid end ID for the interval\r\n"
    );
    assert_eq!(t.c(&["XRANGE", "nokey", "-", "+"]), EMPTY);
    assert_eq!(
        t.c(&[
            "XADD",
            "s",
            "18446744073709551615-18446744073709551615",
            "a",
            "b"
        ]),
        bulk("18446744073709551615-18446744073709551615")
    );
    assert_eq!(
        t.c(&["XADD", "s", "*", "a", "b"]),
        "-ERR The stream has exhausted the last possible ID, unable to add more items\r\n"
    );
    assert_eq!(t.c(&["DEL", "s", "n"]), int(2));
    assert_eq!(t.st.used_memory(), 0);
    assert_eq!(t.st.used_slots(), 0);
}

#[test]
fn stream_memory_is_exact() {
    // Key "s" (9) and an entry: 8 + 16 + (4 + 1) * 2 = 34.
    let mut t = T::sized(9 + 34, 10);
    assert_eq!(t.c(&["XADD", "s", "1-1", "f", "v"]), bulk("1-1"));
    assert_eq!(t.st.used_memory(), 43);
    assert_eq!(t.c(&["XADD", "s", "*", "f", "v"]), OOM);
    assert_eq!(t.c(&["XLEN", "s"]), int(1));
}

#[test]
fn replies_too_big_for_the_buffer_are_an_error() {
    // LRANGE of 600 3-byte elements (redis-benchmark's LRANGE_600) is 5,406 bytes: an output
    // buffer of 4 KiB can never hold it, and the command gets an error instead of waiting.
    let mut st = store(1 << 20, 1024);
    let mut s = Session::new();
    let mut push = vec!["RPUSH", "l"];
    push.extend(std::iter::repeat_n("xxx", 600));
    assert_eq!(cmd_at(&mut st, &mut s, &push, 0), int(600));
    let mut out = vec![0u8; 4096];
    let mut out = OutBuf::new(&mut out);
    let mut input = encode(&[b"LRANGE", b"l", b"0", b"599"]);
    input.extend_from_slice(&encode(&[b"LPOP", b"l", b"600"]));
    let mut inbuf = vec![0u8; 256];
    let mut p = Parser::new(&mut inbuf);
    p.receive(&input);
    for _ in 0..2 {
        let c = p.next_command().unwrap().unwrap();
        let n = c.frame_len();
        assert!(st.execute(&mut s, &c, 0, &mut out).is_ok());
        assert_eq!(
            out.pending(),
            b"-ERR reply exceeds the connection's output buffer\r\n"
        );
        let len = out.pending().len();
        out.consume(len);
        p.consume(n);
    }
    // LPOP changed nothing.
    assert_eq!(cmd_at(&mut st, &mut s, &["LLEN", "l"], 0), int(600));
    let mut big = vec![0u8; 8192];
    let mut big = OutBuf::new(&mut big);
    let c = encode(&[b"LRANGE", b"l", b"0", b"599"]);
    let mut inbuf = vec![0u8; 256];
    let mut p = Parser::new(&mut inbuf);
    p.receive(&c);
    let c = p.next_command().unwrap().unwrap();
    assert!(st.execute(&mut s, &c, 0, &mut big).is_ok());
    assert_eq!(big.pending().len(), 6 + 600 * 9);
}
