//! Sorted sets' range, store, set-operation, pop and random-member commands, against Redis
//! 7.0's replies.

use super::*;
use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

const NIL: &str = "$-1\r\n";
const NIL_ARRAY: &str = "*-1\r\n";
const EMPTY: &str = "*0\r\n";
const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const NOT_FLOAT: &str = "-ERR min or max is not a float\r\n";
const NOT_LEX: &str = "-ERR min or max not valid string range item\r\n";
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

fn int(n: i64) -> String {
    format!(":{n}\r\n")
}

fn err(msg: &str) -> String {
    format!("-{msg}\r\n")
}

/// A store with `z` = a:1 b:2 c:3 d:4 e:5 and the string `s`.
fn abcde() -> T {
    let mut t = T::new();
    let r = t.c(&[
        "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
    ]);
    assert_eq!(r, int(5));
    assert_eq!(t.c(&["SET", "s", "x"]), "+OK\r\n");
    t
}

#[test]
fn zrevrange_and_the_by_score_commands() {
    let mut t = abcde();
    assert_eq!(t.c(&["ZREVRANGE", "z", "0", "1"]), arr(&["e", "d"]));
    assert_eq!(
        t.c(&["ZREVRANGE", "z", "-2", "-1", "WITHSCORES"]),
        arr(&["b", "2", "a", "1"])
    );
    assert_eq!(t.c(&["ZREVRANGE", "z", "0", "1", "REV"]), SYNTAX);
    assert_eq!(t.c(&["ZREVRANGE", "z", "0", "1", "BYSCORE"]), SYNTAX);
    assert_eq!(t.c(&["ZREVRANGE", "z", "a", "1"]), NOT_INT);
    assert_eq!(t.c(&["ZREVRANGE", "nokey", "0", "1"]), EMPTY);
    assert_eq!(t.c(&["ZREVRANGE", "s", "0", "1"]), WRONGTYPE);
    assert_eq!(t.c(&["ZRANGEBYSCORE", "z", "(1", "3"]), arr(&["b", "c"]));
    assert_eq!(
        t.c(&["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "2"]),
        arr(&["b", "c"])
    );
    assert_eq!(
        t.c(&[
            "ZRANGEBYSCORE",
            "z",
            "2",
            "5",
            "LIMIT",
            "2",
            "3",
            "WITHSCORES"
        ]),
        arr(&["d", "4", "e", "5"])
    );
    assert_eq!(t.c(&["ZREVRANGEBYSCORE", "z", "4", "(2"]), arr(&["d", "c"]));
    assert_eq!(t.c(&["ZREVRANGEBYSCORE", "z", "2", "4"]), EMPTY);
    assert_eq!(t.c(&["ZRANGEBYSCORE", "z", "str", "1"]), NOT_FLOAT);
    assert_eq!(
        t.c(&["ZRANGEBYSCORE", "z", "1", "2", "LIMIT", "x", "1"]),
        NOT_INT
    );
    assert_eq!(t.c(&["ZRANGEBYSCORE", "z", "1", "2", "BYLEX"]), SYNTAX);
    assert_eq!(t.c(&["ZRANGEBYSCORE", "s", "1", "2"]), WRONGTYPE);
}

#[test]
fn the_by_lex_commands() {
    let mut t = T::new();
    let r = t.c(&[
        "ZADD", "z", "0", "alpha", "0", "bar", "0", "cool", "0", "down",
    ]);
    assert_eq!(r, int(4));
    assert_eq!(
        t.c(&["ZRANGEBYLEX", "z", "-", "[cool"]),
        arr(&["alpha", "bar", "cool"])
    );
    assert_eq!(
        t.c(&["ZRANGEBYLEX", "z", "(bar", "+", "LIMIT", "1", "5"]),
        arr(&["down"])
    );
    assert_eq!(
        t.c(&["ZREVRANGEBYLEX", "z", "+", "(bar"]),
        arr(&["down", "cool"])
    );
    assert_eq!(t.c(&["ZREVRANGEBYLEX", "z", "-", "+"]), EMPTY);
    assert_eq!(t.c(&["ZRANGEBYLEX", "z", "foo", "+"]), NOT_LEX);
    assert_eq!(
        t.c(&["ZRANGEBYLEX", "z", "-", "+", "WITHSCORES"]),
        err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
    );
    assert_eq!(t.c(&["ZLEXCOUNT", "z", "[bar", "[cool"]), int(2));
    assert_eq!(t.c(&["ZLEXCOUNT", "z", "+", "-"]), int(0));
    assert_eq!(t.c(&["ZLEXCOUNT", "z", "bar", "+"]), NOT_LEX);
    assert_eq!(t.c(&["ZLEXCOUNT", "nokey", "-", "+"]), int(0));
    assert_eq!(t.c(&["ZREMRANGEBYLEX", "z", "(alpha", "[cool"]), int(2));
    assert_eq!(t.c(&["ZRANGE", "z", "0", "-1"]), arr(&["alpha", "down"]));
    assert_eq!(t.c(&["ZREMRANGEBYLEX", "z", "-", "+"]), int(2));
    assert_eq!(t.c(&["EXISTS", "z"]), int(0));
}

#[test]
fn zcount_and_zremrange() {
    let mut t = abcde();
    assert_eq!(t.c(&["ZCOUNT", "z", "2", "4"]), int(3));
    assert_eq!(t.c(&["ZCOUNT", "z", "(2", "(4"]), int(1));
    assert_eq!(t.c(&["ZCOUNT", "z", "4", "2"]), int(0));
    assert_eq!(t.c(&["ZCOUNT", "z", "x", "2"]), NOT_FLOAT);
    assert_eq!(t.c(&["ZCOUNT", "s", "1", "2"]), WRONGTYPE);
    assert_eq!(t.c(&["ZCOUNT", "nokey", "1", "2"]), int(0));
    assert_eq!(t.c(&["ZREMRANGEBYSCORE", "z", "(1", "2"]), int(1));
    assert_eq!(t.c(&["ZREMRANGEBYSCORE", "z", "x", "2"]), NOT_FLOAT);
    assert_eq!(t.c(&["ZRANGE", "z", "0", "-1"]), arr(&["a", "c", "d", "e"]));
    assert_eq!(t.c(&["ZREMRANGEBYRANK", "z", "1", "-2"]), int(2));
    assert_eq!(t.c(&["ZREMRANGEBYRANK", "z", "5", "9"]), int(0));
    assert_eq!(t.c(&["ZREMRANGEBYRANK", "z", "a", "9"]), NOT_INT);
    assert_eq!(t.c(&["ZREMRANGEBYRANK", "s", "0", "1"]), WRONGTYPE);
    assert_eq!(t.c(&["ZRANGE", "z", "0", "-1"]), arr(&["a", "e"]));
    assert_eq!(t.c(&["ZREMRANGEBYRANK", "z", "0", "-1"]), int(2));
    assert_eq!(t.c(&["EXISTS", "z"]), int(0));
    assert_eq!(t.c(&["ZREMRANGEBYSCORE", "z", "-inf", "+inf"]), int(0));
}

#[test]
fn zmscore() {
    let mut t = abcde();
    assert_eq!(
        t.c(&["ZMSCORE", "z", "b", "x", "e"]),
        format!("*3\r\n$1\r\n2\r\n{NIL}$1\r\n5\r\n")
    );
    assert_eq!(
        t.c(&["ZMSCORE", "nokey", "a", "b"]),
        format!("*2\r\n{NIL}{NIL}")
    );
    assert_eq!(t.c(&["ZMSCORE", "s", "a"]), WRONGTYPE);
    assert_eq!(
        t.c(&["ZMSCORE", "z"]),
        err("ERR wrong number of arguments for 'zmscore' command")
    );
}

#[test]
fn zrangestore() {
    let mut t = abcde();
    assert_eq!(t.c(&["ZRANGESTORE", "d", "z", "1", "2"]), int(2));
    assert_eq!(
        t.c(&["ZRANGE", "d", "0", "-1", "WITHSCORES"]),
        arr(&["b", "2", "c", "3"])
    );
    let r = t.c(&[
        "ZRANGESTORE",
        "d",
        "z",
        "5",
        "(1",
        "BYSCORE",
        "REV",
        "LIMIT",
        "1",
        "2",
    ]);
    assert_eq!(r, int(2));
    assert_eq!(t.c(&["ZRANGE", "d", "0", "-1"]), arr(&["c", "d"]));
    // Over another type, and from a key onto itself.
    assert_eq!(t.c(&["ZRANGESTORE", "s", "z", "0", "0"]), int(1));
    assert_eq!(t.c(&["TYPE", "s"]), "+zset\r\n");
    assert_eq!(t.c(&["ZRANGESTORE", "z", "z", "-2", "-1"]), int(2));
    assert_eq!(t.c(&["ZRANGE", "z", "0", "-1"]), arr(&["d", "e"]));
    // An empty range or a missing source deletes the destination.
    assert_eq!(t.c(&["ZRANGESTORE", "d", "z", "5", "9"]), int(0));
    assert_eq!(t.c(&["EXISTS", "d"]), int(0));
    assert_eq!(t.c(&["ZRANGESTORE", "s", "nokey", "0", "-1"]), int(0));
    assert_eq!(t.c(&["EXISTS", "s"]), int(0));
    assert_eq!(t.c(&["SET", "s", "x"]), "+OK\r\n");
    assert_eq!(t.c(&["ZRANGESTORE", "d", "s", "0", "-1"]), WRONGTYPE);
    assert_eq!(
        t.c(&["ZRANGESTORE", "d", "z", "0", "-1", "WITHSCORES"]),
        SYNTAX
    );
    assert_eq!(
        t.c(&["ZRANGESTORE", "d", "z", "0", "-1", "LIMIT", "0", "1"]),
        err(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or \
             BYLEX"
        )
    );
}

#[test]
fn zrangestore_oom_changes_nothing() {
    // 9 slots, 2 of them left: a result is built beside the destination's old value.
    let mut t = T::sized(1 << 12, 9);
    assert_eq!(
        t.c(&["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"]),
        int(4)
    );
    assert_eq!(t.c(&["ZADD", "d", "1", "x"]), int(1));
    let used = t.st.used_memory();
    assert_eq!(t.c(&["ZRANGESTORE", "d", "z", "0", "-1"]), OOM);
    assert_eq!(t.c(&["ZUNIONSTORE", "d", "1", "z"]), OOM);
    assert_eq!(t.c(&["ZUNION", "1", "z"]), OOM);
    assert_eq!(t.st.used_memory(), used);
    assert_eq!(t.c(&["ZRANGE", "d", "0", "-1"]), arr(&["x"]));
    assert_eq!(t.c(&["ZRANGESTORE", "d", "z", "0", "0"]), int(1));
    assert_eq!(t.c(&["ZRANGE", "d", "0", "-1"]), arr(&["a"]));
}

/// `a` = a:1 b:2 c:3, `b` = b:1 c:2 d:3, the set `set` = {a, c, x}.
fn two_sets() -> T {
    let mut t = T::new();
    assert_eq!(t.c(&["ZADD", "a", "1", "a", "2", "b", "3", "c"]), int(3));
    assert_eq!(t.c(&["ZADD", "b", "1", "b", "2", "c", "3", "d"]), int(3));
    assert_eq!(t.c(&["SADD", "set", "a", "c", "x"]), int(3));
    assert_eq!(t.c(&["SET", "s", "x"]), "+OK\r\n");
    t
}

#[test]
fn zunion_zinter_zdiff() {
    let mut t = two_sets();
    assert_eq!(
        t.c(&["ZUNION", "2", "a", "b", "WITHSCORES"]),
        arr(&["a", "1", "b", "3", "d", "3", "c", "5"])
    );
    assert_eq!(
        t.c(&["ZUNION", "2", "a", "b", "WEIGHTS", "2", "3", "WITHSCORES"]),
        arr(&["a", "2", "b", "7", "d", "9", "c", "12"])
    );
    assert_eq!(
        t.c(&["ZUNION", "2", "a", "b", "AGGREGATE", "MAX", "WITHSCORES"]),
        arr(&["a", "1", "b", "2", "c", "3", "d", "3"])
    );
    assert_eq!(
        t.c(&["ZINTER", "2", "a", "b", "AGGREGATE", "min", "WITHSCORES"]),
        arr(&["b", "1", "c", "2"])
    );
    assert_eq!(t.c(&["ZINTER", "2", "a", "set"]), arr(&["a", "c"]));
    assert_eq!(t.c(&["ZINTER", "2", "a", "nokey"]), EMPTY);
    assert_eq!(
        t.c(&["ZDIFF", "2", "a", "b", "WITHSCORES"]),
        arr(&["a", "1"])
    );
    assert_eq!(t.c(&["ZDIFF", "2", "a", "a"]), EMPTY);
    assert_eq!(
        t.c(&["ZDIFF", "1", "set", "WITHSCORES"]),
        arr(&["a", "1", "c", "1", "x", "1"])
    );
    assert_eq!(t.c(&["ZUNION", "1", "nokey"]), EMPTY);
    assert_eq!(t.c(&["ZINTERCARD", "2", "a", "b"]), int(2));
    assert_eq!(t.c(&["ZINTERCARD", "2", "a", "b", "LIMIT", "1"]), int(1));
    assert_eq!(t.c(&["ZINTERCARD", "3", "a", "b", "set"]), int(1));
    // Opposite infinities add up to 0, NaN products count as 0.
    assert_eq!(t.c(&["ZADD", "i", "inf", "m"]), int(1));
    assert_eq!(t.c(&["ZADD", "j", "-inf", "m"]), int(1));
    assert_eq!(
        t.c(&["ZUNION", "2", "i", "j", "WITHSCORES"]),
        arr(&["m", "0"])
    );
    assert_eq!(
        t.c(&["ZINTER", "2", "i", "j", "WITHSCORES"]),
        arr(&["m", "0"])
    );
    assert_eq!(
        t.c(&["ZUNION", "1", "i", "WEIGHTS", "0", "WITHSCORES"]),
        arr(&["m", "0"])
    );
    t.st.check();
}

#[test]
fn set_operation_errors() {
    let mut t = two_sets();
    assert_eq!(t.c(&["ZUNION", "x", "a"]), NOT_INT);
    assert_eq!(
        t.c(&["ZUNION", "0", "a"]),
        err("ERR at least 1 input key is needed for 'zunion' command")
    );
    assert_eq!(
        t.c(&["ZINTERSTORE", "d", "0", "a"]),
        err("ERR at least 1 input key is needed for 'zinterstore' command")
    );
    assert_eq!(t.c(&["ZUNION", "3", "a", "b"]), SYNTAX);
    assert_eq!(t.c(&["ZUNION", "2", "a", "s"]), WRONGTYPE);
    // The keys' types are checked before the options.
    assert_eq!(t.c(&["ZUNION", "2", "s", "a", "bad"]), WRONGTYPE);
    assert_eq!(t.c(&["ZUNION", "2", "a", "b", "bad"]), SYNTAX);
    assert_eq!(
        t.c(&["ZUNION", "2", "a", "b", "WEIGHTS", "1", "nan"]),
        err("ERR weight value is not a float")
    );
    assert_eq!(t.c(&["ZUNION", "2", "a", "b", "WEIGHTS", "1"]), SYNTAX);
    assert_eq!(t.c(&["ZUNION", "2", "a", "b", "AGGREGATE", "avg"]), SYNTAX);
    assert_eq!(t.c(&["ZDIFF", "2", "a", "b", "WEIGHTS", "1", "2"]), SYNTAX);
    assert_eq!(
        t.c(&["ZUNIONSTORE", "d", "2", "a", "b", "WITHSCORES"]),
        SYNTAX
    );
    assert_eq!(t.c(&["ZINTERCARD", "1", "a", "WITHSCORES"]), SYNTAX);
    assert_eq!(t.c(&["ZINTERCARD", "1", "a", "LIMIT"]), SYNTAX);
    assert_eq!(
        t.c(&["ZINTERCARD", "1", "a", "LIMIT", "-1"]),
        err("ERR LIMIT can't be negative")
    );
}

#[test]
fn set_operations_store() {
    let mut t = two_sets();
    assert_eq!(t.c(&["ZUNIONSTORE", "d", "2", "a", "b"]), int(4));
    assert_eq!(
        t.c(&["ZRANGE", "d", "0", "-1", "WITHSCORES"]),
        arr(&["a", "1", "b", "3", "d", "3", "c", "5"])
    );
    // The destination may be a source, and of another type.
    assert_eq!(
        t.c(&["ZINTERSTORE", "a", "2", "a", "set", "WEIGHTS", "1", "10"]),
        int(2)
    );
    assert_eq!(
        t.c(&["ZRANGE", "a", "0", "-1", "WITHSCORES"]),
        arr(&["a", "11", "c", "13"])
    );
    assert_eq!(t.c(&["ZDIFFSTORE", "s", "2", "b", "a"]), int(2));
    assert_eq!(t.c(&["ZRANGE", "s", "0", "-1"]), arr(&["b", "d"]));
    // An empty result deletes the destination.
    assert_eq!(t.c(&["ZINTERSTORE", "s", "2", "a", "nokey"]), int(0));
    assert_eq!(t.c(&["EXISTS", "s"]), int(0));
    assert_eq!(t.c(&["ZUNIONSTORE", "s", "1", "nokey"]), int(0));
    assert_eq!(t.c(&["EXISTS", "s"]), int(0));
    t.st.check();
}

#[test]
fn results_are_sorted_by_score_then_member() {
    let mut t = T::new();
    for (i, m) in ["q", "w", "e", "r", "t", "y", "u", "i", "o", "p"]
        .iter()
        .enumerate()
    {
        let score = format!("{}", (i * 7) % 4);
        assert_eq!(t.c(&["SADD", "s", m]), int(1));
        assert_eq!(t.c(&["ZADD", "z", &score, m]), int(1));
    }
    let sorted = t.c(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]);
    assert_eq!(t.c(&["ZUNION", "1", "z", "WITHSCORES"]), sorted);
    assert_eq!(
        t.c(&["ZDIFF", "1", "s"]),
        arr(&["e", "i", "o", "p", "q", "r", "t", "u", "w", "y"])
    );
    assert_eq!(
        t.c(&["ZUNIONSTORE", "d", "2", "z", "s", "WEIGHTS", "1", "0"]),
        int(10)
    );
    assert_eq!(t.c(&["ZRANGE", "d", "0", "-1", "WITHSCORES"]), sorted);
}

#[test]
fn zmpop() {
    let mut t = abcde();
    assert_eq!(
        t.c(&["ZMPOP", "2", "nokey", "z", "MIN"]),
        "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"
    );
    assert_eq!(
        t.c(&["ZMPOP", "1", "z", "max", "COUNT", "9"]),
        "*2\r\n$1\r\nz\r\n*4\r\n*2\r\n$1\r\ne\r\n$1\r\n5\r\n*2\r\n$1\r\nd\r\n$1\r\n4\r\n\
         *2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n"
    );
    assert_eq!(t.c(&["EXISTS", "z"]), int(0));
    assert_eq!(t.c(&["ZMPOP", "1", "z", "MIN"]), NIL_ARRAY);
    assert_eq!(t.c(&["ZMPOP", "2", "nokey", "s", "MIN"]), WRONGTYPE);
    let numkeys = err("ERR numkeys should be greater than 0");
    assert_eq!(t.c(&["ZMPOP", "0", "z", "MIN"]), numkeys);
    assert_eq!(t.c(&["ZMPOP", "a", "z", "MIN"]), numkeys);
    assert_eq!(t.c(&["ZMPOP", "1", "z", "MID"]), SYNTAX);
    assert_eq!(t.c(&["ZMPOP", "2", "z", "MIN"]), SYNTAX);
    assert_eq!(t.c(&["ZMPOP", "1", "z", "MIN", "COUNT"]), SYNTAX);
    assert_eq!(
        t.c(&["ZMPOP", "1", "z", "MIN", "COUNT", "1", "COUNT", "2"]),
        SYNTAX
    );
    let count = err("ERR count should be greater than 0");
    assert_eq!(t.c(&["ZMPOP", "1", "z", "MIN", "COUNT", "0"]), count);
    assert_eq!(t.c(&["ZMPOP", "1", "z", "MIN", "COUNT", "x"]), count);
}

#[test]
fn zrandmember() {
    let mut t = abcde();
    let one = t.c(&["ZRANDMEMBER", "z"]);
    assert!(["a", "b", "c", "d", "e"]
        .iter()
        .any(|m| one == format!("$1\r\n{m}\r\n")));
    assert_eq!(t.c(&["ZRANDMEMBER", "nokey"]), NIL);
    assert_eq!(t.c(&["ZRANDMEMBER", "nokey", "3"]), EMPTY);
    assert_eq!(t.c(&["ZRANDMEMBER", "z", "0"]), EMPTY);
    assert_eq!(t.c(&["ZRANDMEMBER", "s"]), WRONGTYPE);
    // A count above the size: every member once, in order.
    assert_eq!(
        t.c(&["ZRANDMEMBER", "z", "9", "WITHSCORES"]),
        arr(&["a", "1", "b", "2", "c", "3", "d", "4", "e", "5"])
    );
    // Distinct members below the size, repeats for a negative count.
    for _ in 0..20 {
        let r = t.c(&["ZRANDMEMBER", "z", "3"]);
        let members: Vec<&str> = r
            .split("\r\n")
            .skip(2)
            .step_by(2)
            .filter(|m| !m.is_empty())
            .collect();
        assert_eq!(members.len(), 3);
        assert!(members.windows(2).all(|w| w[0] < w[1]), "{r}");
    }
    let r = t.c(&["ZRANDMEMBER", "z", "-7", "WITHSCORES"]);
    assert!(r.starts_with("*14\r\n"));
    assert_eq!(t.c(&["ZRANDMEMBER", "z", "1", "bad"]), SYNTAX);
    assert_eq!(t.c(&["ZRANDMEMBER", "z", "x"]), NOT_INT);
    assert_eq!(
        t.c(&["ZRANDMEMBER", "z", "-9223372036854770000", "WITHSCORES"]),
        err("ERR value is out of range")
    );
    assert_eq!(
        t.c(&["ZRANDMEMBER", "z", "-9223372036854775808"]),
        err(
            "ERR value is out of range, value must between -9223372036854775807 and \
             9223372036854775807"
        )
    );
}

/// The members and the cursor of a `ZSCAN` reply.
fn zscan(t: &mut T, args: &[&str]) -> (String, Vec<String>) {
    let r = t.c(args);
    let lines: Vec<&str> = r.split("\r\n").collect();
    assert_eq!(lines[0], "*2", "{r}");
    let items = lines[4..]
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| c[1].to_string());
    (lines[2].to_string(), items.collect())
}

#[test]
fn zscan_returns_every_member_once() {
    let mut t = T::new();
    for i in 0..50 {
        let m = format!("m{i}");
        assert_eq!(t.c(&["ZADD", "z", &format!("{i}"), &m]), int(1));
    }
    let (mut cursor, mut seen) = (String::from("0"), Vec::new());
    let mut calls = 0;
    loop {
        let (next, items) = zscan(&mut t, &["ZSCAN", "z", &cursor, "COUNT", "7"]);
        assert!(items.len() <= 14);
        for pair in items.chunks(2) {
            assert_eq!(format!("m{}", pair[1]), pair[0], "a member and its score");
            seen.push(pair[0].clone());
        }
        calls += 1;
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    assert!(calls > 1);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 50);
    let (cursor, items) = zscan(&mut t, &["ZSCAN", "z", "0", "MATCH", "m4*", "COUNT", "100"]);
    assert_eq!(cursor, "0");
    let members: Vec<&String> = items.iter().step_by(2).collect();
    assert_eq!(
        members,
        ["m4", "m40", "m41", "m42", "m43", "m44", "m45", "m46", "m47", "m48", "m49"]
    );
    assert_eq!(t.c(&["ZSCAN", "nokey", "0"]), "*2\r\n$1\r\n0\r\n*0\r\n");
    assert_eq!(t.c(&["ZSCAN", "z", "x"]), err("ERR invalid cursor"));
    assert_eq!(t.c(&["ZSCAN", "z", "0", "COUNT", "0"]), SYNTAX);
    assert_eq!(t.c(&["ZSCAN", "z", "0", "COUNT", "x"]), NOT_INT);
    assert_eq!(t.c(&["ZSCAN", "z", "0", "TYPE", "zset"]), SYNTAX);
    assert_eq!(t.c(&["ZSCAN", "z", "0", "MATCH"]), SYNTAX);
    assert_eq!(t.c(&["SET", "s", "x"]), "+OK\r\n");
    assert_eq!(t.c(&["ZSCAN", "s", "0"]), WRONGTYPE);
}

#[test]
fn zadd_counts_repeated_and_many_members_exactly() {
    let mut t = T::new();
    let mut args = vec!["ZADD", "z"];
    for _ in 0..5000 {
        args.extend(["1", "m"]);
    }
    assert_eq!(t.c(&args), int(1));
    let names: Vec<String> = (0..2 * crate::repeats::EXACT_KEYS)
        .map(|i| format!("n{i}"))
        .collect();
    let mut args = vec!["ZADD", "z"];
    for n in names.iter().chain(&names) {
        args.extend(["2", n.as_str()]);
    }
    assert_eq!(t.c(&args), int(names.len() as i64));
    assert_eq!(t.c(&["ZCARD", "z"]), int(names.len() as i64 + 1));
}
