//! The string commands beyond GET/SET and the counters, and the keyspace commands, against
//! Redis 7.0's replies.

use super::*;
use std::format;
use std::string::String;

const OK: &str = "+OK\r\n";
const NIL: &str = "$-1\r\n";
const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const OOM: &str = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
const SYNTAX: &str = "-ERR syntax error\r\n";

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

fn int(n: i64) -> String {
    format!(":{n}\r\n")
}

#[test]
fn setnx_getdel_strlen() {
    let mut t = T::new();
    assert_eq!(t.c(&["SETNX", "k", "v"]), int(1));
    assert_eq!(t.c(&["SETNX", "k", "w"]), int(0));
    assert_eq!(t.c(&["GET", "k"]), bulk("v"));
    assert_eq!(t.c(&["STRLEN", "k"]), int(1));
    assert_eq!(t.c(&["STRLEN", "nokey"]), int(0));
    assert_eq!(t.c(&["GETDEL", "k"]), bulk("v"));
    assert_eq!(t.c(&["GETDEL", "k"]), NIL);
    assert_eq!(t.c(&["RPUSH", "l", "a"]), int(1));
    assert_eq!(t.c(&["SETNX", "l", "v"]), int(0));
    assert_eq!(t.c(&["GETDEL", "l"]), WRONGTYPE);
    assert_eq!(t.c(&["STRLEN", "l"]), WRONGTYPE);
    assert_eq!(
        t.c(&["SETNX", "k"]),
        "-ERR wrong number of arguments for 'setnx' command\r\n"
    );
}

#[test]
fn getex() {
    let mut t = T::new();
    assert_eq!(t.c(&["GETEX", "k"]), NIL);
    assert_eq!(t.c(&["SET", "k", "v"]), OK);
    assert_eq!(t.c(&["GETEX", "k", "EX", "10"]), bulk("v"));
    assert_eq!(t.c(&["TTL", "k"]), int(10));
    assert_eq!(t.c(&["GETEX", "k", "PX", "500", "PX", "700"]), bulk("v"));
    assert_eq!(t.c(&["PTTL", "k"]), int(700));
    assert_eq!(t.c(&["GETEX", "k", "PERSIST"]), bulk("v"));
    assert_eq!(t.c(&["TTL", "k"]), int(-1));
    assert_eq!(t.c(&["GETEX", "k", "PXAT", "5000"]), bulk("v"));
    assert_eq!(t.c(&["PTTL", "k"]), int(4000));
    assert_eq!(t.c(&["GETEX", "k"]), bulk("v"));
    assert_eq!(t.c(&["PTTL", "k"]), int(4000));
    assert_eq!(t.c(&["GETEX", "k", "EX", "10", "PX", "10"]), SYNTAX);
    assert_eq!(t.c(&["GETEX", "k", "EX", "10", "PERSIST"]), SYNTAX);
    assert_eq!(t.c(&["GETEX", "k", "PERSIST", "EX", "10"]), SYNTAX);
    assert_eq!(t.c(&["GETEX", "k", "EX"]), SYNTAX);
    assert_eq!(t.c(&["GETEX", "k", "EX", "x"]), NOT_INT);
    assert_eq!(
        t.c(&["GETEX", "k", "EX", "0"]),
        "-ERR invalid expire time in 'getex' command\r\n"
    );
    // An absolute time in the past deletes the key, after answering its value.
    assert_eq!(t.c(&["GETEX", "k", "EXAT", "1"]), bulk("v"));
    assert_eq!(t.c(&["EXISTS", "k"]), int(0));
    assert_eq!(t.c(&["SADD", "s", "a"]), int(1));
    assert_eq!(t.c(&["GETEX", "s"]), WRONGTYPE);
    // Options are checked before the key is looked up.
    assert_eq!(t.c(&["GETEX", "nokey", "FOO"]), SYNTAX);
}

#[test]
fn append_getrange_setrange() {
    let mut t = T::new();
    assert_eq!(t.c(&["APPEND", "k", "Hello"]), int(5));
    assert_eq!(t.c(&["APPEND", "k", " World"]), int(11));
    assert_eq!(t.c(&["GET", "k"]), bulk("Hello World"));
    assert_eq!(t.c(&["GETRANGE", "k", "0", "4"]), bulk("Hello"));
    assert_eq!(t.c(&["GETRANGE", "k", "-5", "-1"]), bulk("World"));
    assert_eq!(t.c(&["GETRANGE", "k", "-100", "100"]), bulk("Hello World"));
    assert_eq!(t.c(&["GETRANGE", "k", "5", "3"]), bulk(""));
    assert_eq!(t.c(&["GETRANGE", "k", "-1", "-5"]), bulk(""));
    assert_eq!(t.c(&["GETRANGE", "k", "20", "30"]), bulk(""));
    assert_eq!(t.c(&["GETRANGE", "nokey", "0", "1"]), bulk(""));
    assert_eq!(t.c(&["GETRANGE", "k", "x", "1"]), NOT_INT);
    assert_eq!(t.c(&["SETRANGE", "k", "6", "Redis"]), int(11));
    assert_eq!(t.c(&["GET", "k"]), bulk("Hello Redis"));
    assert_eq!(t.c(&["SETRANGE", "k", "13", "!"]), int(14));
    assert_eq!(t.c(&["GET", "k"]), "$14\r\nHello Redis\0\0!\r\n");
    assert_eq!(t.c(&["SETRANGE", "k", "0", ""]), int(14));
    assert_eq!(t.c(&["SETRANGE", "new", "2", "ab"]), int(4));
    assert_eq!(t.c(&["GET", "new"]), "$4\r\n\0\0ab\r\n");
    assert_eq!(t.c(&["SETRANGE", "none", "5", ""]), int(0));
    assert_eq!(t.c(&["EXISTS", "none"]), int(0));
    assert_eq!(
        t.c(&["SETRANGE", "k", "-1", "a"]),
        "-ERR offset is out of range\r\n"
    );
    assert_eq!(t.c(&["SETRANGE", "k", "x", "a"]), NOT_INT);
    assert_eq!(
        t.c(&["SETRANGE", "k", "536870912", "a"]),
        "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
    );
    assert_eq!(t.c(&["HSET", "h", "f", "v"]), int(1));
    for cmd in [
        &["APPEND", "h", "x"][..],
        &["GETRANGE", "h", "0", "1"],
        &["SETRANGE", "h", "0", "x"],
    ] {
        assert_eq!(t.c(cmd), WRONGTYPE, "{cmd:?}");
    }
    // APPEND keeps the TTL.
    assert_eq!(t.c(&["EXPIRE", "k", "100"]), int(1));
    assert_eq!(t.c(&["APPEND", "k", "?"]), int(15));
    assert_eq!(t.c(&["TTL", "k"]), int(100));
}

#[test]
fn append_needs_room_for_both_blocks() {
    // Key "k" with "aaaa": 13 bytes. Appending "b" needs 14 beside them: 27.
    let mut t = T::sized(26, 10);
    assert_eq!(t.c(&["SET", "k", "aaaa"]), OK);
    assert_eq!(t.c(&["APPEND", "k", "b"]), OOM);
    assert_eq!(t.c(&["SETRANGE", "k", "0", "bb"]), int(4));
    assert_eq!(t.c(&["GET", "k"]), bulk("bbaa"));
    let mut t = T::sized(27, 10);
    assert_eq!(t.c(&["SET", "k", "aaaa"]), OK);
    assert_eq!(t.c(&["APPEND", "k", "b"]), int(5));
    assert_eq!(t.st.used_memory(), 14);
    // A new key takes one block: 8 + 1 + 4 bytes fit exactly.
    let mut t = T::sized(13, 10);
    assert_eq!(t.c(&["SETRANGE", "k", "2", "ab"]), int(4));
    assert_eq!(t.c(&["GET", "k"]), "$4\r\n\0\0ab\r\n");
    assert_eq!(t.c(&["DEL", "k"]), int(1));
    assert_eq!(t.c(&["APPEND", "k", "abcd"]), int(4));
    assert_eq!(t.c(&["APPEND", "k", "e"]), OOM);
}

#[test]
fn msetnx() {
    let mut t = T::new();
    assert_eq!(t.c(&["MSETNX", "a", "1", "b", "2"]), int(1));
    assert_eq!(t.c(&["MSETNX", "b", "3", "c", "4"]), int(0));
    assert_eq!(t.c(&["EXISTS", "c"]), int(0));
    assert_eq!(t.c(&["MGET", "a", "b"]), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
    assert_eq!(t.c(&["MSETNX", "d", "1", "d", "2"]), int(1));
    assert_eq!(t.c(&["GET", "d"]), bulk("2"));
    assert_eq!(
        t.c(&["MSETNX", "a", "1", "b"]),
        "-ERR wrong number of arguments for 'msetnx' command\r\n"
    );
}

#[test]
fn rename() {
    let mut t = T::new();
    assert_eq!(t.c(&["RENAME", "a", "b"]), "-ERR no such key\r\n");
    assert_eq!(t.c(&["RENAMENX", "a", "b"]), "-ERR no such key\r\n");
    assert_eq!(t.c(&["SET", "a", "1", "EX", "100"]), OK);
    assert_eq!(t.c(&["RENAME", "a", "a"]), OK);
    assert_eq!(t.c(&["RENAMENX", "a", "a"]), int(0));
    assert_eq!(t.c(&["RENAME", "a", "longer name"]), OK);
    assert_eq!(t.c(&["GET", "a"]), NIL);
    assert_eq!(t.c(&["GET", "longer name"]), bulk("1"));
    assert_eq!(t.c(&["TTL", "longer name"]), int(100));
    // A collection keeps its children (found by the key's slot, which does not change).
    assert_eq!(t.c(&["HSET", "h", "f", "v", "g", "w"]), int(2));
    assert_eq!(t.c(&["ZADD", "z", "1", "m"]), int(1));
    assert_eq!(t.c(&["RENAMENX", "h", "z"]), int(0));
    assert_eq!(t.c(&["RENAMENX", "h", "h2"]), int(1));
    assert_eq!(t.c(&["HGET", "h2", "g"]), bulk("w"));
    assert_eq!(
        t.c(&["HGETALL", "h2"]),
        "*4\r\n$1\r\nf\r\n$1\r\nv\r\n$1\r\ng\r\n$1\r\nw\r\n"
    );
    // RENAME replaces a key of any type.
    assert_eq!(t.c(&["RENAME", "h2", "z"]), OK);
    assert_eq!(t.c(&["TYPE", "z"]), "+hash\r\n");
    assert_eq!(t.c(&["HLEN", "z"]), int(2));
    assert_eq!(t.c(&["DBSIZE"]), int(2));
    assert_eq!(t.c(&["DEL", "z", "longer name"]), int(2));
    assert_eq!(t.st.used_memory(), 0);
    assert_eq!(t.st.used_slots(), 0);
}

#[test]
fn rename_oom_changes_nothing() {
    // "a" = "v": 10 bytes; renamed to "bb" it needs 11 more beside the old block.
    let mut t = T::sized(20, 10);
    assert_eq!(t.c(&["SET", "a", "v"]), OK);
    assert_eq!(t.c(&["RENAME", "a", "bb"]), OOM);
    assert_eq!(t.c(&["GET", "a"]), bulk("v"));
    assert_eq!(t.c(&["RENAME", "a", "b"]), OK);
    assert_eq!(t.c(&["GET", "b"]), bulk("v"));
    assert_eq!(t.st.used_memory(), 10);
}

#[test]
fn keys_and_randomkey() {
    let mut t = T::new();
    assert_eq!(t.c(&["RANDOMKEY"]), NIL);
    assert_eq!(t.c(&["KEYS", "*"]), "*0\r\n");
    assert_eq!(
        t.c(&["MSET", "k1", "a", "k2", "b", "key", "c", "x*y", "d"]),
        OK
    );
    assert_eq!(t.c(&["SADD", "set", "m"]), int(1));
    let keys = |t: &mut T, p: &str| {
        let reply = t.c(&["KEYS", p]);
        let mut ks: Vec<String> = reply
            .split("\r\n")
            .skip(2)
            .step_by(2)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        ks.sort();
        ks
    };
    assert_eq!(keys(&mut t, "*"), ["k1", "k2", "key", "set", "x*y"]);
    assert_eq!(keys(&mut t, "k?"), ["k1", "k2"]);
    assert_eq!(keys(&mut t, "k*"), ["k1", "k2", "key"]);
    assert_eq!(keys(&mut t, "k[^1]*"), ["k2", "key"]);
    assert_eq!(keys(&mut t, "k[0-1]"), ["k1"]);
    assert_eq!(keys(&mut t, "k[2-0]"), ["k1", "k2"]);
    assert_eq!(keys(&mut t, "x\\*y"), ["x*y"]);
    assert_eq!(keys(&mut t, "*e*"), ["key", "set"]);
    assert_eq!(keys(&mut t, "nomatch"), Vec::<String>::new());
    // Other databases' keys are not listed.
    assert_eq!(t.c(&["SELECT", "1"]), OK);
    assert_eq!(t.c(&["KEYS", "*"]), "*0\r\n");
    assert_eq!(t.c(&["SET", "only", "1"]), OK);
    assert_eq!(t.c(&["RANDOMKEY"]), bulk("only"));
    assert_eq!(t.c(&["SELECT", "0"]), OK);
    let k = t.c(&["RANDOMKEY"]);
    assert!(
        ["k1", "k2", "key", "set", "x*y"]
            .iter()
            .any(|m| bulk(m) == k),
        "{k}"
    );
    // Expired keys are neither listed nor picked.
    assert_eq!(t.c(&["FLUSHDB"]), OK);
    assert_eq!(t.c(&["SET", "gone", "1", "PX", "5"]), OK);
    t.now += 10;
    assert_eq!(t.c(&["RANDOMKEY"]), NIL);
    assert_eq!(t.c(&["KEYS", "*"]), "*0\r\n");
}

#[test]
fn glob_matches_as_redis() {
    use crate::keyspace::glob;
    for (p, s, want) in [
        ("*", "", true),
        ("", "", true),
        ("", "a", false),
        ("a*b*c", "axxbyyc", true),
        ("a*b*c", "axxbyy", false),
        ("*a", "bba", true),
        ("**", "x", true),
        ("?", "", false),
        ("h?llo", "hello", true),
        ("h[ae]llo", "hallo", true),
        ("h[ae]llo", "hillo", false),
        ("h[^e]llo", "hallo", true),
        ("h[^e]llo", "hello", false),
        ("h[a-b]llo", "hbllo", true),
        ("[]", "a", false),
        ("[\\]]", "]", true),
        ("[a", "a", true),
        ("\\", "\\", true),
        ("a\\", "a\\", true),
        ("*x*x*x*x*x*x*y", "xxxxxxxxxxxxxxxxxxxxxxxxxxxx", false),
    ] {
        assert_eq!(glob(p.as_bytes(), s.as_bytes()), want, "{p:?} {s:?}");
    }
}

#[test]
fn setex_getset_and_set_options() {
    let mut t = T::new();
    assert_eq!(t.c(&["SETEX", "k", "10", "v"]), OK);
    assert_eq!(t.c(&["PTTL", "k"]), int(10_000));
    assert_eq!(t.c(&["PSETEX", "k", "1500", "w"]), OK);
    assert_eq!(t.c(&["PTTL", "k"]), int(1500));
    assert_eq!(
        t.c(&["SETEX", "k", "0", "v"]),
        "-ERR invalid expire time in 'setex' command\r\n"
    );
    assert_eq!(
        t.c(&["PSETEX", "k", "-1", "v"]),
        "-ERR invalid expire time in 'psetex' command\r\n"
    );
    assert_eq!(t.c(&["SETEX", "k", "x", "v"]), NOT_INT);
    // GETSET answers the old value and drops the expiry.
    assert_eq!(t.c(&["GETSET", "k", "x"]), bulk("w"));
    assert_eq!(t.c(&["TTL", "k"]), int(-1));
    assert_eq!(t.c(&["GETSET", "new", "y"]), NIL);
    assert_eq!(t.c(&["RPUSH", "l", "a"]), int(1));
    assert_eq!(t.c(&["GETSET", "l", "y"]), WRONGTYPE);
    // SET: an expiry given twice under the same name counts once, the last one.
    assert_eq!(t.c(&["SET", "k", "v", "EX", "5", "EX", "7"]), OK);
    assert_eq!(t.c(&["TTL", "k"]), int(7));
    assert_eq!(t.c(&["SET", "k", "v", "EX", "5", "PX", "7"]), SYNTAX);
    assert_eq!(t.c(&["SET", "k", "v", "KEEPTTL", "EX", "5"]), SYNTAX);
    assert_eq!(t.c(&["SET", "k", "v", "NX", "XX"]), SYNTAX);
    assert_eq!(t.c(&["SET", "k", "v", "PERSIST"]), SYNTAX);
    assert_eq!(t.c(&["GETEX", "k", "KEEPTTL"]), SYNTAX);
    assert_eq!(t.c(&["SUBSTR", "k", "0", "0"]), bulk("v"));
}

#[test]
fn setbit_getbit() {
    let mut t = T::new();
    assert_eq!(t.c(&["SETBIT", "k", "1", "1"]), int(0));
    assert_eq!(t.c(&["GET", "k"]), bulk("@"));
    assert_eq!(t.c(&["SETBIT", "k", "1", "0"]), int(1));
    assert_eq!(t.c(&["GETBIT", "k", "1"]), int(0));
    assert_eq!(t.c(&["SETBIT", "k", "23", "1"]), int(0));
    assert_eq!(t.c(&["STRLEN", "k"]), int(3));
    assert_eq!(t.c(&["GETBIT", "k", "23"]), int(1));
    assert_eq!(t.c(&["GETBIT", "k", "100"]), int(0));
    assert_eq!(t.c(&["GETBIT", "nokey", "0"]), int(0));
    let bad_offset = "-ERR bit offset is not an integer or out of range\r\n";
    assert_eq!(t.c(&["SETBIT", "k", "-1", "1"]), bad_offset);
    assert_eq!(t.c(&["SETBIT", "k", "4294967296", "1"]), bad_offset);
    assert_eq!(t.c(&["GETBIT", "k", "x"]), bad_offset);
    let bad_bit = "-ERR bit is not an integer or out of range\r\n";
    assert_eq!(t.c(&["SETBIT", "k", "0", "2"]), bad_bit);
    assert_eq!(t.c(&["SETBIT", "k", "0", "-1"]), bad_bit);
    assert_eq!(t.c(&["RPUSH", "l", "a"]), int(1));
    assert_eq!(t.c(&["SETBIT", "l", "0", "1"]), WRONGTYPE);
    assert_eq!(t.c(&["GETBIT", "l", "0"]), WRONGTYPE);
}

#[test]
fn lcs() {
    let mut t = T::new();
    assert_eq!(t.c(&["MSET", "a", "ohmytext", "b", "mynewtext"]), OK);
    assert_eq!(t.c(&["LCS", "a", "b"]), bulk("mytext"));
    assert_eq!(t.c(&["LCS", "a", "b", "LEN"]), int(6));
    assert_eq!(
        t.c(&["LCS", "a", "b", "IDX"]),
        "*4\r\n$7\r\nmatches\r\n*2\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n\
         *2\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n$3\r\nlen\r\n:6\r\n"
    );
    assert_eq!(
        t.c(&["LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"]),
        "*4\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n\
         $3\r\nlen\r\n:6\r\n"
    );
    assert_eq!(t.c(&["LCS", "a", "nokey"]), bulk(""));
    assert_eq!(
        t.c(&["LCS", "a", "b", "LEN", "IDX"]),
        "-ERR If you want both the length and indexes, please just use IDX.\r\n"
    );
    assert_eq!(t.c(&["LCS", "a", "b", "FOO"]), SYNTAX);
    assert_eq!(t.c(&["RPUSH", "l", "a"]), int(1));
    assert_eq!(
        t.c(&["LCS", "a", "l"]),
        "-ERR The specified keys must contain string values\r\n"
    );
    // The table lives in the arena's free space: it must fit there, and nothing changes.
    let mut t = T::sized(2048, 64);
    let long = "x".repeat(100);
    assert_eq!(t.c(&["MSET", "a", &long, "b", &long]), OK);
    let used = t.st.used_memory();
    assert_eq!(t.c(&["LCS", "a", "b", "LEN"]), OOM);
    assert_eq!(t.st.used_memory(), used);
}

#[test]
fn incrbyfloat() {
    let mut t = T::new();
    assert_eq!(t.c(&["INCRBYFLOAT", "k", "0.1"]), bulk("0.1"));
    assert_eq!(t.c(&["INCRBYFLOAT", "k", "0.2"]), bulk("0.3"));
    assert_eq!(t.c(&["INCRBYFLOAT", "k", "-0.3"]), bulk("0"));
    assert_eq!(t.c(&["SET", "k", "10.5", "EX", "100"]), OK);
    assert_eq!(t.c(&["INCRBYFLOAT", "k", "5.0e3"]), bulk("5010.5"));
    assert_eq!(t.c(&["TTL", "k"]), int(100), "the expiry stays");
    assert_eq!(
        t.c(&["INCRBYFLOAT", "k", "1 "]),
        "-ERR value is not a valid float\r\n"
    );
    assert_eq!(
        t.c(&["INCRBYFLOAT", "k", "nan"]),
        "-ERR value is not a valid float\r\n"
    );
    assert_eq!(
        t.c(&["INCRBYFLOAT", "k", "+inf"]),
        "-ERR increment would produce NaN or Infinity\r\n"
    );
    assert_eq!(t.c(&["GET", "k"]), bulk("5010.5"));
    assert_eq!(t.c(&["SET", "s", "abc"]), OK);
    assert_eq!(
        t.c(&["INCRBYFLOAT", "s", "1"]),
        "-ERR value is not a valid float\r\n"
    );
    assert_eq!(t.c(&["RPUSH", "l", "a"]), int(1));
    assert_eq!(t.c(&["INCRBYFLOAT", "l", "1"]), WRONGTYPE);
    // A result that does not fit is refused, and nothing changes.
    let mut t = T::sized(30, 4);
    assert_eq!(
        t.c(&["INCRBYFLOAT", "abcdefghijklmnop", "0.123456789"]),
        OOM
    );
    assert_eq!(t.st.used_memory(), 0);
}

#[test]
fn expire_family() {
    let mut t = T::new();
    assert_eq!(t.c(&["SET", "k", "v"]), OK);
    assert_eq!(t.c(&["EXPIRE", "k", "100", "XX"]), int(0));
    assert_eq!(t.c(&["EXPIRE", "k", "100", "GT"]), int(0));
    assert_eq!(t.c(&["EXPIRE", "k", "100", "NX"]), int(1));
    assert_eq!(t.c(&["EXPIRE", "k", "200", "NX"]), int(0));
    assert_eq!(t.c(&["EXPIRE", "k", "50", "GT"]), int(0));
    assert_eq!(t.c(&["EXPIRE", "k", "200", "gt"]), int(1));
    assert_eq!(t.c(&["EXPIRE", "k", "300", "LT"]), int(0));
    assert_eq!(t.c(&["PEXPIRE", "k", "1500", "LT", "XX"]), int(1));
    assert_eq!(t.c(&["PTTL", "k"]), int(1500));
    assert_eq!(t.c(&["TTL", "k"]), int(2));
    assert_eq!(t.c(&["PEXPIRETIME", "k"]), int(2500));
    assert_eq!(t.c(&["EXPIRETIME", "k"]), int(3));
    assert_eq!(t.c(&["EXPIREAT", "k", "100"]), int(1));
    assert_eq!(t.c(&["EXPIRETIME", "k"]), int(100));
    assert_eq!(t.c(&["PEXPIREAT", "k", "5000"]), int(1));
    assert_eq!(t.c(&["PTTL", "k"]), int(4000));
    assert_eq!(t.c(&["PERSIST", "k"]), int(1));
    assert_eq!(t.c(&["EXPIRETIME", "k"]), int(-1));
    assert_eq!(t.c(&["EXPIRETIME", "nokey"]), int(-2));
    // LT on a key without expiry sets one; a time in the past deletes the key.
    assert_eq!(t.c(&["EXPIRE", "k", "10", "LT"]), int(1));
    assert_eq!(t.c(&["PEXPIREAT", "k", "1000"]), int(1));
    assert_eq!(t.c(&["EXISTS", "k"]), int(0));
    assert_eq!(t.c(&["EXPIRE", "nokey", "10"]), int(0));
    assert_eq!(
        t.c(&["EXPIRE", "k", "10", "NX", "XX"]),
        "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
    );
    assert_eq!(
        t.c(&["EXPIRE", "k", "10", "GT", "LT"]),
        "-ERR GT and LT options at the same time are not compatible\r\n"
    );
    assert_eq!(
        t.c(&["EXPIRE", "k", "10", "AB"]),
        "-ERR Unsupported option AB\r\n"
    );
    assert_eq!(t.c(&["EXPIRE", "k", "x"]), NOT_INT);
    let bad = "-ERR invalid expire time in 'expire' command\r\n";
    assert_eq!(t.c(&["EXPIRE", "k", "9223372036854775807"]), bad);
    assert_eq!(t.c(&["EXPIRE", "k", "-9223372036854775807"]), bad);
    let bad = "-ERR invalid expire time in 'pexpire' command\r\n";
    assert_eq!(t.c(&["PEXPIRE", "k", "9223372036854775807"]), bad);
    assert_eq!(t.c(&["SET", "k", "v"]), OK);
    assert_eq!(t.c(&["PEXPIREAT", "k", "9223372036854770000"]), int(1));
    assert_eq!(t.c(&["PEXPIRETIME", "k"]), int(9223372036854770000));
    assert_eq!(t.c(&["PEXPIREAT", "k", "-9223372036854770000"]), int(1));
    assert_eq!(t.c(&["EXISTS", "k"]), int(0));
    assert_eq!(t.c(&["TIME"]), "*2\r\n$1\r\n1\r\n$1\r\n0\r\n");
}

#[test]
fn copy_move_swapdb() {
    let mut t = T::new();
    assert_eq!(t.c(&["SET", "s", "v", "EX", "100"]), OK);
    assert_eq!(t.c(&["COPY", "s", "s2"]), int(1));
    assert_eq!(t.c(&["GET", "s2"]), bulk("v"));
    assert_eq!(t.c(&["TTL", "s2"]), int(100));
    assert_eq!(t.c(&["COPY", "s", "s2"]), int(0));
    assert_eq!(
        t.c(&["COPY", "s", "s"]),
        "-ERR source and destination objects are the same\r\n"
    );
    assert_eq!(t.c(&["COPY", "nokey", "x"]), int(0));
    assert_eq!(t.c(&["ZADD", "z", "1", "a", "2.5", "b"]), int(2));
    assert_eq!(t.c(&["HSET", "h", "f", "1", "g", "2"]), int(2));
    assert_eq!(t.c(&["RPUSH", "l", "a", "b", "c"]), int(3));
    assert_eq!(t.c(&["SADD", "set", "x", "y"]), int(2));
    assert_eq!(t.c(&["XADD", "x", "1-1", "f", "v"]), bulk("1-1"));
    for k in ["z", "h", "l", "set", "x"] {
        assert_eq!(t.c(&["COPY", k, "s2", "REPLACE"]), int(1));
        assert_eq!(t.c(&["TTL", "s2"]), int(-1));
        assert_eq!(t.c(&["COPY", k, k, "DB", "3"]), int(1));
    }
    assert_eq!(t.c(&["DEL", "z", "h", "l", "set", "x"]), int(5));
    assert_eq!(t.c(&["SELECT", "3"]), OK);
    assert_eq!(
        t.c(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$3\r\n2.5\r\n"
    );
    assert_eq!(t.c(&["HGET", "h", "g"]), bulk("2"));
    assert_eq!(t.c(&["LRANGE", "l", "1", "1"]), "*1\r\n$1\r\nb\r\n");
    assert_eq!(t.c(&["SISMEMBER", "set", "y"]), int(1));
    assert_eq!(t.c(&["XLEN", "x"]), int(1));
    assert_eq!(
        t.c(&["COPY", "h", "h", "DB", "16"]),
        "-ERR DB index is out of range\r\n"
    );
    assert_eq!(t.c(&["COPY", "h", "h", "DB", "x"]), NOT_INT);
    assert_eq!(t.c(&["COPY", "h", "h", "FOO"]), SYNTAX);
    // MOVE keeps the expiry, refuses an existing name and the same database.
    assert_eq!(t.c(&["SET", "m", "v", "EX", "50"]), OK);
    assert_eq!(t.c(&["MOVE", "m", "4"]), int(1));
    assert_eq!(t.c(&["EXISTS", "m"]), int(0));
    assert_eq!(t.c(&["SET", "m", "w"]), OK);
    assert_eq!(t.c(&["MOVE", "m", "4"]), int(0));
    assert_eq!(
        t.c(&["MOVE", "m", "3"]),
        "-ERR source and destination objects are the same\r\n"
    );
    assert_eq!(t.c(&["MOVE", "m", "x"]), NOT_INT);
    assert_eq!(
        t.c(&["MOVE", "m", "99"]),
        "-ERR DB index is out of range\r\n"
    );
    assert_eq!(t.c(&["SELECT", "4"]), OK);
    assert_eq!(t.c(&["TTL", "m"]), int(50));
    // SWAPDB exchanges the databases' contents under the same sessions.
    assert_eq!(t.c(&["SWAPDB", "4", "3"]), OK);
    assert_eq!(t.c(&["GET", "m"]), bulk("w"));
    assert_eq!(t.c(&["DBSIZE"]), int(6));
    assert_eq!(
        t.c(&["SWAPDB", "x", "3"]),
        "-ERR invalid first DB index\r\n"
    );
    assert_eq!(
        t.c(&["SWAPDB", "3", "x"]),
        "-ERR invalid second DB index\r\n"
    );
    assert_eq!(
        t.c(&["SWAPDB", "3", "16"]),
        "-ERR DB index is out of range\r\n"
    );
    assert_eq!(t.c(&["UNLINK", "m", "nokey"]), int(1));
    assert_eq!(t.c(&["TOUCH", "h", "l", "nokey"]), int(2));
    // A copy that does not fit is refused whole.
    let mut t = T::sized(400, 64);
    assert_eq!(
        t.c(&["RPUSH", "l", &"a".repeat(100), &"b".repeat(100)]),
        int(2)
    );
    let used = t.st.used_memory();
    assert_eq!(t.c(&["COPY", "l", "l2"]), OOM);
    assert_eq!(t.st.used_memory(), used);
}

#[test]
fn scan_returns_every_key_once() {
    let mut t = T::new();
    for i in 0..300 {
        assert_eq!(t.c(&["SET", &format!("k{i}"), "v"]), OK);
    }
    assert_eq!(t.c(&["SADD", "set", "a"]), int(1));
    assert_eq!(t.c(&["RPUSH", "list", "a"]), int(1));
    assert_eq!(t.c(&["RPUSH", "flip", "a"]), int(1));
    let mut seen = std::collections::BTreeSet::new();
    let mut cursor = String::from("0");
    let mut calls = 0;
    loop {
        let reply = t.c(&["SCAN", &cursor, "COUNT", "7"]);
        let lines: Vec<&str> = reply.split("\r\n").collect();
        cursor = lines[2].to_string();
        for k in lines[4..].iter().skip(1).step_by(2) {
            assert!(seen.insert(k.to_string()), "{k} twice");
        }
        // Keys added meanwhile do not disturb the others, and a key overwritten by a value of
        // another type is still the same key.
        t.c(&["SET", &format!("new{calls}"), "v"]);
        match calls % 3 {
            0 => assert_eq!(t.c(&["SET", "flip", "v"]), OK),
            1 => assert_eq!(t.c(&["COPY", "list", "flip", "REPLACE"]), int(1)),
            _ => {
                assert_eq!(t.c(&["SADD", &format!("src{calls}"), "a", "b"]), int(2));
                assert_eq!(t.c(&["RENAME", &format!("src{calls}"), "flip"]), OK);
                assert_eq!(t.c(&["SCARD", "flip"]), int(2));
            }
        }
        calls += 1;
        if cursor == "0" {
            break;
        }
    }
    for i in 0..300 {
        assert!(seen.contains(&format!("k{i}")));
    }
    assert!(seen.contains("flip"));
    assert!(calls > 10);
    assert_eq!(t.c(&["DEL", "flip"]), int(1));
    let one = |t: &mut T, args: &[&str]| {
        let reply = t.c(args);
        assert!(reply.starts_with("*2\r\n$1\r\n0\r\n"), "{reply}");
        reply
    };
    assert_eq!(
        one(&mut t, &["SCAN", "0", "COUNT", "10000", "TYPE", "set"]),
        "*2\r\n$1\r\n0\r\n*1\r\n$3\r\nset\r\n"
    );
    assert_eq!(
        one(&mut t, &["SCAN", "0", "MATCH", "k29?", "COUNT", "10000"])
            .matches("k29")
            .count(),
        10
    );
    assert_eq!(t.c(&["SCAN", "x"]), "-ERR invalid cursor\r\n");
    assert_eq!(
        t.c(&["SCAN", "18446744073709551616"]),
        "-ERR invalid cursor\r\n"
    );
    assert_eq!(t.c(&["SCAN", " 1"]), "-ERR invalid cursor\r\n");
    assert_eq!(t.c(&["SCAN", "-1"]), "*2\r\n$1\r\n0\r\n*0\r\n");
    assert_eq!(t.c(&["SCAN", "0", "COUNT", "0"]), SYNTAX);
    assert_eq!(t.c(&["SCAN", "0", "COUNT"]), SYNTAX);
    assert_eq!(t.c(&["SCAN", "0", "FOO", "1"]), SYNTAX);
    assert_eq!(t.c(&["SCAN", "99999999999"]), "*2\r\n$1\r\n0\r\n*0\r\n");
}

#[test]
fn randomkey_is_uniform_enough() {
    let mut t = T::sized(1 << 16, 4096);
    assert_eq!(t.c(&["SET", "foo", "x"]), OK);
    assert_eq!(t.c(&["SET", "bar", "y"]), OK);
    let foo = (0..200)
        .filter(|_| t.c(&["RANDOMKEY"]) == bulk("foo"))
        .count();
    assert!((50..150).contains(&foo), "{foo} of 200");
}

#[test]
fn an_overwritten_name_keeps_its_slot() {
    let mut t = T::new();
    let slot = |t: &mut T, k: &str| t.st.find_key(0, k.as_bytes(), t.now);
    assert_eq!(t.c(&["RPUSH", "dst", "a"]), int(1));
    let at = slot(&mut t, "dst");
    assert_eq!(t.c(&["HSET", "src", "f", "1", "g", "2"]), int(2));
    assert_eq!(t.c(&["RENAME", "src", "dst"]), OK);
    assert_eq!(slot(&mut t, "dst"), at);
    assert_eq!(t.c(&["HGET", "dst", "g"]), bulk("2"));
    assert_eq!(t.c(&["SET", "dst", "v"]), OK);
    assert_eq!(slot(&mut t, "dst"), at);
    assert_eq!(t.c(&["SADD", "s", "m"]), int(1));
    assert_eq!(t.c(&["COPY", "s", "dst", "REPLACE"]), int(1));
    assert_eq!(slot(&mut t, "dst"), at);
    assert_eq!(t.c(&["MSET", "dst", "w"]), OK);
    assert_eq!(slot(&mut t, "dst"), at);
}
