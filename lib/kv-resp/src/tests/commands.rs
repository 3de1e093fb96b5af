//! One test (or a few) per command, against Redis 7's replies.

use super::*;

const OK: &str = "+OK\r\n";
const NIL: &str = "$-1\r\n";
const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const OOM: &str = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
const SYNTAX: &str = "-ERR syntax error\r\n";

#[test]
fn ping_echo_quit() {
    let mut t = T::new();
    assert_eq!(t.line("PING"), "+PONG\r\n");
    assert_eq!(t.line("ping hello"), "$5\r\nhello\r\n");
    assert_eq!(
        t.line("PING a b"),
        "-ERR wrong number of arguments for 'ping' command\r\n"
    );
    assert_eq!(t.line("ECHO x"), "$1\r\nx\r\n");
    assert_eq!(
        t.line("ECHO"),
        "-ERR wrong number of arguments for 'echo' command\r\n"
    );
    assert_eq!(t.line("quit"), OK);
}

#[test]
fn get_set_basic_and_binary() {
    let mut t = T::new();
    assert_eq!(t.c(&["GET", "k"]), NIL);
    assert_eq!(t.c(&["SET", "k", "v"]), OK);
    assert_eq!(t.c(&["get", "k"]), "$1\r\nv\r\n");
    assert_eq!(t.c(&["SET", "k", "longer value"]), OK);
    assert_eq!(t.c(&["GET", "k"]), "$12\r\nlonger value\r\n");
    assert_eq!(t.c(&["SET", "k", ""]), OK);
    assert_eq!(t.c(&["GET", "k"]), "$0\r\n\r\n");
    assert_eq!(t.c(&["SET", "b\r\n\0", "\r\n"]), OK);
    assert_eq!(t.c(&["GET", "b\r\n\0"]), "$2\r\n\r\n\r\n");
    assert_eq!(
        t.c(&["GET"]),
        "-ERR wrong number of arguments for 'get' command\r\n"
    );
    assert_eq!(
        t.c(&["GET", "a", "b"]),
        "-ERR wrong number of arguments for 'get' command\r\n"
    );
    assert_eq!(
        t.c(&["SET", "k"]),
        "-ERR wrong number of arguments for 'set' command\r\n"
    );
}

#[test]
fn set_nx_xx_get() {
    let mut t = T::new();
    assert_eq!(t.c(&["SET", "k", "1", "XX"]), NIL);
    assert_eq!(t.c(&["EXISTS", "k"]), ":0\r\n");
    assert_eq!(t.c(&["SET", "k", "1", "NX"]), OK);
    assert_eq!(t.c(&["SET", "k", "2", "NX"]), NIL);
    assert_eq!(t.c(&["GET", "k"]), "$1\r\n1\r\n");
    assert_eq!(t.c(&["SET", "k", "3", "xx"]), OK);
    assert_eq!(t.c(&["GET", "k"]), "$1\r\n3\r\n");
    assert_eq!(t.c(&["SET", "k", "4", "NX", "XX"]), SYNTAX);
    assert_eq!(t.c(&["SET", "k", "4", "XX", "NX"]), SYNTAX);
    assert_eq!(t.c(&["SET", "k", "4", "FOO"]), SYNTAX);
    assert_eq!(t.c(&["SET", "k", "5", "GET"]), "$1\r\n3\r\n");
    assert_eq!(t.c(&["SET", "new", "5", "GET"]), NIL);
    assert_eq!(t.c(&["GET", "new"]), "$1\r\n5\r\n");
    assert_eq!(t.c(&["SET", "k", "6", "NX", "GET"]), "$1\r\n5\r\n");
    assert_eq!(t.c(&["GET", "k"]), "$1\r\n5\r\n");
    assert_eq!(t.c(&["HSET", "h", "f", "v"]), ":1\r\n");
    assert_eq!(t.c(&["SET", "h", "x", "GET"]), WRONGTYPE);
    assert_eq!(t.c(&["HGET", "h", "f"]), "$1\r\nv\r\n");
    // Plain SET overwrites a hash.
    assert_eq!(t.c(&["SET", "h", "x"]), OK);
    assert_eq!(t.c(&["GET", "h"]), "$1\r\nx\r\n");
}

#[test]
fn set_expiry() {
    let mut t = T::new();
    let bad = "-ERR invalid expire time in 'set' command\r\n";
    assert_eq!(t.c(&["SET", "k", "v", "EX", "0"]), bad);
    assert_eq!(t.c(&["SET", "k", "v", "EX", "-5"]), bad);
    assert_eq!(t.c(&["SET", "k", "v", "PX", "0"]), bad);
    assert_eq!(t.c(&["SET", "k", "v", "EX", "9223372036854775807"]), bad);
    assert_eq!(t.c(&["SET", "k", "v", "EX", "abc"]), NOT_INT);
    assert_eq!(t.c(&["SET", "k", "v", "EX"]), SYNTAX);
    assert_eq!(t.c(&["SET", "k", "v", "EX", "1", "PX", "1"]), SYNTAX);
    assert_eq!(t.c(&["SET", "k", "v", "EX", "1", "KEEPTTL"]), SYNTAX);
    assert_eq!(t.c(&["EXISTS", "k"]), ":0\r\n");
    assert_eq!(t.c(&["SET", "k", "v", "EX", "10"]), OK);
    assert_eq!(t.c(&["TTL", "k"]), ":10\r\n");
    assert_eq!(t.c(&["PTTL", "k"]), ":10000\r\n");
    t.now += 10_000;
    assert_eq!(t.c(&["GET", "k"]), "$1\r\nv\r\n");
    t.now += 1;
    assert_eq!(t.c(&["GET", "k"]), NIL);
    assert_eq!(t.c(&["TTL", "k"]), ":-2\r\n");
    assert_eq!(t.st.used_memory(), 0, "expired key reclaimed");
    assert_eq!(t.c(&["SET", "k", "v", "PX", "100"]), OK);
    assert_eq!(t.c(&["SET", "k", "w", "KEEPTTL"]), OK);
    assert_eq!(t.c(&["PTTL", "k"]), ":100\r\n");
    assert_eq!(t.c(&["SET", "k", "w"]), OK);
    assert_eq!(t.c(&["TTL", "k"]), ":-1\r\n");
    // EXAT in the past deletes.
    assert_eq!(t.c(&["SET", "k", "w", "PXAT", "5"]), OK);
    assert_eq!(t.c(&["EXISTS", "k"]), ":0\r\n");
    assert_eq!(t.c(&["SET", "k", "w", "EXAT", "100"]), OK);
    assert_eq!(t.c(&["PTTL", "k"]), format!(":{}\r\n", 100_000 - t.now));
}

#[test]
fn expiry_commands_and_reclaim() {
    let mut t = T::new();
    assert_eq!(t.c(&["EXPIRE", "k", "10"]), ":0\r\n");
    t.c(&["SET", "k", "v"]);
    assert_eq!(t.c(&["EXPIRE", "k", "x"]), NOT_INT);
    assert_eq!(t.c(&["EXPIRE", "k", "10"]), ":1\r\n");
    assert_eq!(t.c(&["TTL", "k"]), ":10\r\n");
    assert_eq!(t.c(&["PERSIST", "k"]), ":1\r\n");
    assert_eq!(t.c(&["PERSIST", "k"]), ":0\r\n");
    assert_eq!(t.c(&["PEXPIRE", "k", "0"]), ":1\r\n");
    assert_eq!(t.c(&["EXISTS", "k"]), ":0\r\n");
    // Many expiring keys: DBSIZE does not count them once expired, and their memory returns.
    for i in 0..50 {
        t.c(&["SET", &format!("k{i}"), "v", "PX", "5"]);
    }
    t.c(&["HSET", "h", "a", "1"]);
    t.c(&["EXPIRE", "h", "1"]);
    assert_eq!(t.c(&["DBSIZE"]), ":51\r\n");
    t.now += 2_000;
    assert_eq!(t.c(&["DBSIZE"]), ":0\r\n");
    assert_eq!(t.st.used_memory(), 0);
    assert_eq!(t.st.used_slots(), 0);
}

#[test]
fn del_exists() {
    let mut t = T::new();
    assert_eq!(t.c(&["DEL", "a", "b"]), ":0\r\n");
    t.c(&["MSET", "a", "1", "b", "2"]);
    t.c(&["HSET", "h", "f", "v"]);
    assert_eq!(t.c(&["EXISTS", "a", "a", "b", "c", "h"]), ":4\r\n");
    assert_eq!(t.c(&["DEL", "a", "a", "c", "h"]), ":2\r\n");
    assert_eq!(t.c(&["EXISTS", "a", "h", "b"]), ":1\r\n");
    assert_eq!(
        t.c(&["DEL"]),
        "-ERR wrong number of arguments for 'del' command\r\n"
    );
}

#[test]
fn incr_family() {
    let mut t = T::new();
    assert_eq!(t.c(&["INCR", "n"]), ":1\r\n");
    assert_eq!(t.c(&["INCRBY", "n", "41"]), ":42\r\n");
    assert_eq!(t.c(&["DECR", "n"]), ":41\r\n");
    assert_eq!(t.c(&["DECRBY", "n", "50"]), ":-9\r\n");
    assert_eq!(t.c(&["GET", "n"]), "$2\r\n-9\r\n");
    assert_eq!(t.c(&["INCRBY", "n", "x"]), NOT_INT);
    assert_eq!(t.c(&["INCRBY", "n", "1.5"]), NOT_INT);
    t.c(&["SET", "s", "abc"]);
    assert_eq!(t.c(&["INCR", "s"]), NOT_INT);
    t.c(&["SET", "s", " 1"]);
    assert_eq!(t.c(&["INCR", "s"]), NOT_INT);
    t.c(&["SET", "big", "9223372036854775807"]);
    let ovf = "-ERR increment or decrement would overflow\r\n";
    assert_eq!(t.c(&["INCR", "big"]), ovf);
    assert_eq!(t.c(&["INCRBY", "big", "1"]), ovf);
    assert_eq!(t.c(&["GET", "big"]), "$19\r\n9223372036854775807\r\n");
    t.c(&["SET", "small", "-9223372036854775808"]);
    assert_eq!(t.c(&["DECR", "small"]), ovf);
    assert_eq!(
        t.c(&["DECRBY", "n", "-9223372036854775808"]),
        "-ERR decrement would overflow\r\n"
    );
    assert_eq!(t.c(&["INCRBY", "n", "9223372036854775808"]), NOT_INT);
    t.c(&["HSET", "h", "f", "1"]);
    assert_eq!(t.c(&["INCR", "h"]), WRONGTYPE);
    // INCR keeps the TTL.
    t.c(&["SET", "t", "1", "EX", "100"]);
    assert_eq!(t.c(&["INCR", "t"]), ":2\r\n");
    assert_eq!(t.c(&["TTL", "t"]), ":100\r\n");
    // Growing and shrinking the value.
    t.c(&["SET", "g", "9"]);
    assert_eq!(t.c(&["INCR", "g"]), ":10\r\n");
    assert_eq!(t.c(&["DECRBY", "g", "1000"]), ":-990\r\n");
    assert_eq!(t.c(&["GET", "g"]), "$4\r\n-990\r\n");
}

#[test]
fn mset_plans_a_repeated_key_as_replaced() {
    // 200 bytes: one 1-byte key with a 50-byte value takes 59; four would not fit, four
    // writes of one key do.
    let mut t = T::sized(200, 100);
    let v = "v".repeat(50);
    assert_eq!(t.c(&["MSET", "a", &v, "a", &v, "a", &v, "a", "w"]), OK);
    assert_eq!(t.c(&["GET", "a"]), "$1\r\nw\r\n");
    // A larger value after a small one is planned against the small one it replaces.
    let big = "b".repeat(130);
    assert_eq!(t.c(&["MSET", "a", "1", "a", &big]), OK);
    assert_eq!(t.c(&["MSET", "a", "1", "a", &"b".repeat(192)]), OOM);
    assert_eq!(t.c(&["GET", "a"]), format!("$130\r\n{big}\r\n"));
}

#[test]
fn mset_of_many_arguments() {
    // Redis's "test large number of args": 10,000 writes of one key, then another key.
    let mut t = T::new();
    let mut args = vec!["MSET"];
    for _ in 0..10_000 {
        args.extend(["k", "v"]);
    }
    args.extend(["{k}2", "v2"]);
    assert_eq!(t.c(&args), OK);
    assert_eq!(t.c(&["GET", "{k}2"]), "$2\r\nv2\r\n");
    assert_eq!(t.c(&["DBSIZE"]), ":2\r\n");
    // More distinct keys than the plan's table holds exactly, each written twice.
    let names: Vec<String> = (0..2 * crate::repeats::EXACT_KEYS)
        .map(|i| format!("n{i}"))
        .collect();
    let mut args = vec!["MSET"];
    for n in names.iter().chain(&names) {
        args.extend([n.as_str(), n.as_str()]);
    }
    assert_eq!(t.c(&args), OK);
    assert_eq!(t.c(&["DBSIZE"]), format!(":{}\r\n", 2 + names.len()));
    assert_eq!(t.c(&["GET", "n300"]), "$4\r\nn300\r\n");
}

#[test]
fn mget_mset() {
    let mut t = T::new();
    assert_eq!(t.c(&["MSET", "a", "1", "b", "2", "a", "3"]), OK);
    t.c(&["HSET", "h", "f", "v"]);
    assert_eq!(
        t.c(&["MGET", "a", "b", "h", "zz"]),
        "*4\r\n$1\r\n3\r\n$1\r\n2\r\n$-1\r\n$-1\r\n"
    );
    assert_eq!(
        t.c(&["MSET", "a"]),
        "-ERR wrong number of arguments for 'mset' command\r\n"
    );
    assert_eq!(
        t.c(&["MSET", "a", "1", "b"]),
        "-ERR wrong number of arguments for 'mset' command\r\n"
    );
    t.c(&["SET", "e", "1", "EX", "10"]);
    assert_eq!(t.c(&["MSET", "e", "2", "h", "x"]), OK);
    assert_eq!(t.c(&["TTL", "e"]), ":-1\r\n");
    assert_eq!(t.c(&["GET", "h"]), "$1\r\nx\r\n");
    assert_eq!(t.c(&["DBSIZE"]), ":4\r\n");
}

#[test]
fn select_and_flush() {
    let mut t = T::new();
    t.c(&["SET", "k", "0"]);
    assert_eq!(t.c(&["SELECT", "15"]), OK);
    assert_eq!(t.s.db(), 15);
    assert_eq!(t.c(&["GET", "k"]), NIL);
    t.c(&["SET", "k", "15"]);
    t.c(&["HSET", "h", "f", "v"]);
    assert_eq!(t.c(&["SELECT", "16"]), "-ERR DB index is out of range\r\n");
    assert_eq!(t.c(&["SELECT", "-1"]), "-ERR DB index is out of range\r\n");
    assert_eq!(t.c(&["SELECT", "x"]), NOT_INT);
    assert_eq!(t.s.db(), 15);
    assert_eq!(t.c(&["DBSIZE"]), ":2\r\n");
    let info = t.c(&["INFO"]);
    assert!(
        info.contains("db0:keys=1,expires=0,avg_ttl=0\r\n"),
        "{info}"
    );
    assert!(
        info.contains("db15:keys=2,expires=0,avg_ttl=0\r\n"),
        "{info}"
    );
    assert_eq!(t.c(&["FLUSHDB", "now"]), SYNTAX);
    assert_eq!(t.c(&["FLUSHDB"]), OK);
    assert_eq!(t.c(&["DBSIZE"]), ":0\r\n");
    t.c(&["SELECT", "0"]);
    assert_eq!(t.c(&["GET", "k"]), "$1\r\n0\r\n");
    assert_eq!(t.c(&["FLUSHDB", "ASYNC"]), OK);
    assert_eq!(t.c(&["DBSIZE"]), ":0\r\n");
    t.c(&["SET", "k", "0"]);
    t.c(&["SELECT", "3"]);
    t.c(&["SET", "k", "3"]);
    assert_eq!(t.c(&["FLUSHALL", "sync"]), OK);
    assert_eq!(t.c(&["DBSIZE"]), ":0\r\n");
    assert_eq!(t.st.used_memory(), 0);
    assert_eq!(t.st.used_slots(), 0);
}

#[test]
fn info_ends_with_the_servers_section_written_once() {
    use core::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    fn section(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
        // A different value on every call: a second call would make the bulk length wrong.
        let n = CALLS.fetch_add(1, Ordering::Relaxed);
        write!(w, "# CPU\r\ncalls:{}\r\n", 10usize.pow(n as u32 % 6))
    }
    fn too_long(w: &mut dyn core::fmt::Write) -> core::fmt::Result {
        for _ in 0..=crate::INFO_SECTION_MAX {
            w.write_str("x")?;
        }
        Ok(())
    }
    let mut t = T::new();
    t.st.set_info_section(section);
    let info = t.c(&["INFO"]);
    assert_eq!(CALLS.load(Ordering::Relaxed), 1, "one call per INFO");
    let body_start = info.find("\r\n").unwrap() + 2;
    let len: usize = info[1..body_start - 2].parse().unwrap();
    assert_eq!(
        info.len(),
        body_start + len + 2,
        "bulk length matches: {info:?}"
    );
    assert!(info.ends_with("\r\n# CPU\r\ncalls:1\r\n\r\n"), "{info:?}");
    t.st.set_info_section(too_long);
    let info = t.c(&["INFO"]);
    assert!(
        info.contains("info_section_error:longer than 1024 bytes"),
        "{info:?}"
    );
    assert!(!info.contains("xxxx"), "{info:?}");
}

#[test]
fn info_command_config() {
    let mut t = T::sized(5000, 10);
    t.c(&["SET", "k", "v", "EX", "100"]);
    let info = t.c(&["INFO"]);
    let body_start = info.find("\r\n").unwrap() + 2;
    let len: usize = info[1..body_start - 2].parse().unwrap();
    assert_eq!(info.len(), body_start + len + 2, "bulk length matches");
    for part in [
        "# Server\r\n",
        "# Memory\r\n",
        "# Keyspace\r\n",
        "used_memory:10\r\n",
        "maxmemory:5000\r\n",
        "db0:keys=1,expires=1",
    ] {
        assert!(info.contains(part), "{part} in {info}");
    }
    assert_eq!(t.c(&["COMMAND"]), "*0\r\n");
    assert_eq!(t.c(&["COMMAND", "DOCS"]), "*0\r\n");
    assert_eq!(
        t.c(&["CONFIG", "GET", "save"]),
        "*2\r\n$4\r\nsave\r\n$0\r\n\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG", "GET", "appendonly", "nosuch", "MAXMEMORY"]),
        "*4\r\n$10\r\nappendonly\r\n$2\r\nno\r\n$9\r\nmaxmemory\r\n$4\r\n5000\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG", "GET"]),
        "-ERR wrong number of arguments for 'config|get' command\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG", "REWRITE"]),
        "-ERR unknown subcommand 'REWRITE'. Try CONFIG HELP.\r\n"
    );
    assert_eq!(
        t.c(&["CONFIG"]),
        "-ERR wrong number of arguments for 'config' command\r\n"
    );
}

#[test]
fn unknown_commands() {
    let mut t = T::new();
    assert_eq!(
        t.c(&["FOO", "a", "b"]),
        "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n"
    );
    assert_eq!(
        t.c(&["BLPOP"]),
        "-ERR unknown command 'BLPOP', with args beginning with: \r\n"
    );
    // CR/LF in echoed text are replaced; long names and arguments are truncated.
    assert_eq!(
        t.c(&["a\r\nb", "x\ny"]),
        "-ERR unknown command 'a  b', with args beginning with: 'x y' \r\n"
    );
    let long = "x".repeat(500);
    let reply = t.c(&[&long, &long, "b"]);
    assert_eq!(
        reply.len(),
        1 + 21 + 128 + 29 + 1 + 127 + 2 + 2 + 1,
        "{reply}"
    );
    assert!(reply.ends_with("' \r\n"));
}

#[test]
fn oom_is_atomic() {
    // 200 bytes: SET of a 1-byte key with a 50-byte value takes 59.
    let mut t = T::sized(200, 100);
    let v = "v".repeat(50);
    assert_eq!(t.c(&["SET", "a", &v]), OK);
    assert_eq!(t.c(&["SET", "b", &v]), OK);
    assert_eq!(t.c(&["SET", "c", &v]), OK);
    assert_eq!(t.st.used_memory(), 177);
    assert_eq!(t.c(&["SET", "d", &v]), OOM);
    assert_eq!(t.c(&["MSET", "d", "1", "e", &v]), OOM);
    assert_eq!(t.c(&["EXISTS", "d"]), ":0\r\n", "MSET not half applied");
    assert_eq!(t.c(&["HSET", "h", "f", &v]), OOM);
    assert_eq!(t.c(&["EXISTS", "h"]), ":0\r\n");
    // Overwriting in place, or with a value that fits once the old one is freed, works.
    let w = "w".repeat(70);
    assert_eq!(t.c(&["SET", "a", &w]), OK);
    assert_eq!(t.c(&["SET", "a", &"w".repeat(80)]), OOM);
    assert_eq!(t.c(&["GET", "a"]), format!("$70\r\n{w}\r\n"));
    assert_eq!(t.c(&["INCR", "x"]), OOM);
    assert_eq!(t.c(&["DEL", "b"]), ":1\r\n");
    assert_eq!(t.c(&["INCR", "x"]), ":1\r\n");
    // Reads and deletes still work when full.
    assert_eq!(t.c(&["GET", "c"]), format!("$50\r\n{v}\r\n"));
    // Expired keys are reclaimed before refusing.
    assert_eq!(t.c(&["SET", "c", &v, "PX", "10"]), OK);
    t.now += 11;
    assert_eq!(t.c(&["SET", "d", &v]), OK);
}

#[test]
fn slot_limit_is_oom_too() {
    let mut t = T::sized(10_000, 3);
    assert_eq!(t.c(&["SET", "a", "1"]), OK);
    assert_eq!(t.c(&["HSET", "h", "f", "1"]), ":1\r\n");
    assert_eq!(t.c(&["HSET", "h", "g", "1"]), OOM);
    assert_eq!(t.c(&["SET", "b", "1"]), OOM);
    assert_eq!(
        t.c(&["HSET", "h", "f", "2"]),
        ":0\r\n",
        "replacing a field needs no slot"
    );
    assert_eq!(t.c(&["HGETALL", "h"]), "*2\r\n$1\r\nf\r\n$1\r\n2\r\n");
    assert_eq!(
        t.c(&["SET", "h", "x"]),
        OK,
        "overwriting the hash frees its slots"
    );
    assert_eq!(t.c(&["SET", "b", "1"]), OK);
}

#[test]
fn zero_sized_store() {
    let mut t = T::sized(0, 0);
    assert_eq!(t.c(&["SET", "a", "1"]), OOM);
    assert_eq!(t.c(&["GET", "a"]), NIL);
    assert_eq!(t.c(&["HSET", "a", "f", "v"]), OOM);
    assert_eq!(t.c(&["DBSIZE"]), ":0\r\n");
    assert_eq!(t.c(&["FLUSHDB"]), OK);
}

#[test]
fn compaction_keeps_data() {
    let mut t = T::sized(2_000, 200);
    for round in 0..20 {
        for i in 0..30 {
            let v = format!("{round}-{i}-{}", "z".repeat(i % 7));
            assert_eq!(t.c(&["SET", &format!("k{i}"), &v]), OK);
            assert_eq!(
                t.c(&["HSET", "h", &format!("f{i}"), &v]).chars().next(),
                Some(':')
            );
        }
        for i in 0..30 {
            let v = format!("{round}-{i}-{}", "z".repeat(i % 7));
            assert_eq!(
                t.c(&["GET", &format!("k{i}")]),
                format!("${}\r\n{v}\r\n", v.len())
            );
            assert_eq!(
                t.c(&["HGET", "h", &format!("f{i}")]),
                format!("${}\r\n{v}\r\n", v.len())
            );
        }
    }
}
