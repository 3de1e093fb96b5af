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
