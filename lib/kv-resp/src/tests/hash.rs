//! The hash commands, against Redis 7.0's replies.

use super::*;

const OK: &str = "+OK\r\n";
const NIL: &str = "$-1\r\n";
const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const OOM: &str = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
const SYNTAX: &str = "-ERR syntax error\r\n";

/// The bulk strings of a flat array reply, in order.
fn bulks(reply: &str) -> Vec<String> {
    let mut lines = reply.split("\r\n");
    let mut out = Vec::new();
    while let Some(l) = lines.next() {
        if l.starts_with('$') && l != "$-1" {
            out.push(lines.next().unwrap_or("").to_string());
        }
    }
    out
}

#[test]
fn hashes() {
    let mut t = T::new();
    assert_eq!(t.c(&["HSET", "h", "a", "1", "b", "2", "a", "3"]), ":2\r\n");
    assert_eq!(t.c(&["HSET", "h", "a", "4", "c", "5"]), ":1\r\n");
    assert_eq!(t.c(&["HGET", "h", "a"]), "$1\r\n4\r\n");
    assert_eq!(t.c(&["HGET", "h", "zz"]), NIL);
    assert_eq!(t.c(&["HGET", "nokey", "a"]), NIL);
    assert_eq!(
        t.c(&["HGETALL", "h"]),
        "*6\r\n$1\r\na\r\n$1\r\n4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n5\r\n"
    );
    assert_eq!(t.c(&["HGETALL", "nokey"]), "*0\r\n");
    assert_eq!(
        t.c(&["HMGET", "h", "a", "x", "c"]),
        "*3\r\n$1\r\n4\r\n$-1\r\n$1\r\n5\r\n"
    );
    assert_eq!(t.c(&["HMGET", "nokey", "a"]), "*1\r\n$-1\r\n");
    assert_eq!(t.c(&["HLEN", "h"]), ":3\r\n");
    assert_eq!(t.c(&["HEXISTS", "h", "b"]), ":1\r\n");
    assert_eq!(t.c(&["HMSET", "h", "d", "6"]), OK);
    assert_eq!(t.c(&["HDEL", "h", "a", "a", "zz", "b"]), ":2\r\n");
    assert_eq!(t.c(&["HDEL", "nokey", "a"]), ":0\r\n");
    assert_eq!(
        t.c(&["HGETALL", "h"]),
        "*4\r\n$1\r\nc\r\n$1\r\n5\r\n$1\r\nd\r\n$1\r\n6\r\n"
    );
    assert_eq!(t.c(&["HDEL", "h", "c", "d"]), ":2\r\n");
    assert_eq!(
        t.c(&["EXISTS", "h"]),
        ":0\r\n",
        "an emptied hash is deleted"
    );
    assert_eq!(t.st.used_memory(), 0);
    let arity = "-ERR wrong number of arguments for 'hset' command\r\n";
    assert_eq!(t.c(&["HSET", "h", "a"]), arity);
    assert_eq!(t.c(&["HSET", "h", "a", "1", "b"]), arity);
    assert_eq!(
        t.c(&["HMSET", "h", "a", "1", "b"]),
        "-ERR wrong number of arguments for 'hmset' command\r\n"
    );
    t.c(&["SET", "s", "v"]);
    for c in [
        &["HSET", "s", "a", "1"][..],
        &["HGET", "s", "a"],
        &["HMGET", "s", "a"],
        &["HGETALL", "s"],
        &["HDEL", "s", "a"],
        &["HLEN", "s"],
        &["HMSET", "s", "a", "1"],
    ] {
        assert_eq!(t.c(c), WRONGTYPE, "{c:?}");
    }
    assert_eq!(t.c(&["GET", "s"]), "$1\r\nv\r\n");
    t.c(&["HSET", "h", "f", "v"]);
    assert_eq!(t.c(&["GET", "h"]), WRONGTYPE);
}

#[test]
fn hsetnx() {
    let mut t = T::new();
    assert_eq!(t.c(&["HSETNX", "h", "f", "v"]), ":1\r\n");
    assert_eq!(t.c(&["HSETNX", "h", "f", "w"]), ":0\r\n");
    assert_eq!(t.c(&["HGET", "h", "f"]), "$1\r\nv\r\n");
    assert_eq!(t.c(&["HSETNX", "h", "g", ""]), ":1\r\n");
    assert_eq!(t.c(&["HLEN", "h"]), ":2\r\n");
    assert_eq!(
        t.c(&["HSETNX", "h", "f"]),
        "-ERR wrong number of arguments for 'hsetnx' command\r\n"
    );
    t.c(&["SET", "s", "x"]);
    assert_eq!(t.c(&["HSETNX", "s", "f", "v"]), WRONGTYPE);
}

#[test]
fn hkeys_hvals_hstrlen() {
    let mut t = T::new();
    assert_eq!(t.c(&["HKEYS", "h"]), "*0\r\n");
    assert_eq!(t.c(&["HVALS", "h"]), "*0\r\n");
    t.c(&["HSET", "h", "a", "1", "bb", "22", "c", ""]);
    assert_eq!(
        t.c(&["HKEYS", "h"]),
        "*3\r\n$1\r\na\r\n$2\r\nbb\r\n$1\r\nc\r\n"
    );
    assert_eq!(
        t.c(&["HVALS", "h"]),
        "*3\r\n$1\r\n1\r\n$2\r\n22\r\n$0\r\n\r\n"
    );
    assert_eq!(t.c(&["HSTRLEN", "h", "bb"]), ":2\r\n");
    assert_eq!(t.c(&["HSTRLEN", "h", "c"]), ":0\r\n");
    assert_eq!(t.c(&["HSTRLEN", "h", "zz"]), ":0\r\n");
    assert_eq!(t.c(&["HSTRLEN", "nokey", "a"]), ":0\r\n");
    t.c(&["SET", "s", "x"]);
    for c in [
        &["HKEYS", "s"][..],
        &["HVALS", "s"],
        &["HSTRLEN", "s", "a"],
        &["HEXISTS", "s", "a"],
    ] {
        assert_eq!(t.c(c), WRONGTYPE, "{c:?}");
    }
    assert_eq!(
        t.c(&["HKEYS", "h", "x"]),
        "-ERR wrong number of arguments for 'hkeys' command\r\n"
    );
}

#[test]
fn hincrby() {
    let mut t = T::new();
    assert_eq!(t.c(&["HINCRBY", "h", "n", "5"]), ":5\r\n");
    assert_eq!(t.c(&["HINCRBY", "h", "n", "-7"]), ":-2\r\n");
    assert_eq!(t.c(&["HGET", "h", "n"]), "$2\r\n-2\r\n");
    assert_eq!(
        t.c(&["HINCRBY", "h", "n", "17179869184"]),
        ":17179869182\r\n"
    );
    t.c(&["HSET", "h", "big", "9223372036854775806"]);
    assert_eq!(
        t.c(&["HINCRBY", "h", "big", "1"]),
        ":9223372036854775807\r\n"
    );
    assert_eq!(
        t.c(&["HINCRBY", "h", "big", "1"]),
        "-ERR increment or decrement would overflow\r\n"
    );
    t.c(&["HSET", "h", "sp", " 11", "sp2", "11 ", "f", "1.5"]);
    for f in ["sp", "sp2", "f"] {
        assert_eq!(
            t.c(&["HINCRBY", "h", f, "1"]),
            "-ERR hash value is not an integer\r\n",
            "{f}"
        );
    }
    assert_eq!(t.c(&["HINCRBY", "h", "n", "x"]), NOT_INT);
    assert_eq!(t.c(&["HINCRBY", "h", "n", "1.0"]), NOT_INT);
    t.c(&["SET", "s", "x"]);
    assert_eq!(t.c(&["HINCRBY", "s", "n", "1"]), WRONGTYPE);
    assert_eq!(
        t.c(&["HINCRBY", "s", "n", "x"]),
        NOT_INT,
        "the increment first"
    );
    assert_eq!(t.c(&["HINCRBY", "new", "n", "x"]), NOT_INT);
    assert_eq!(t.c(&["EXISTS", "new"]), ":0\r\n");
}

#[test]
fn hincrbyfloat() {
    let mut t = T::new();
    assert_eq!(t.c(&["HINCRBYFLOAT", "h", "f", "1.23"]), "$4\r\n1.23\r\n");
    assert_eq!(t.c(&["HINCRBYFLOAT", "h", "f", "0.77"]), "$1\r\n2\r\n");
    assert_eq!(t.c(&["HINCRBYFLOAT", "h", "f", "-0.1"]), "$3\r\n1.9\r\n");
    assert_eq!(t.c(&["HGET", "h", "f"]), "$3\r\n1.9\r\n");
    assert_eq!(t.c(&["HINCRBYFLOAT", "h", "g", "0.1"]), "$3\r\n0.1\r\n");
    assert_eq!(
        t.c(&["HINCRBYFLOAT", "h", "g", "0.2"]),
        "$3\r\n0.3\r\n",
        "long double arithmetic, as Redis on x86_64 (a double's sum is 0.30000000000000004)"
    );
    t.c(&["HSET", "h", "i", "17179869184"]);
    assert_eq!(
        t.c(&["HINCRBYFLOAT", "h", "i", "1.5"]),
        "$13\r\n17179869185.5\r\n"
    );
    t.c(&["HSET", "h", "sp", " 1", "sp2", "1 ", "nul", "1\u{0}2"]);
    for f in ["sp", "sp2", "nul"] {
        assert_eq!(
            t.c(&["HINCRBYFLOAT", "h", f, "1"]),
            "-ERR hash value is not a float\r\n",
            "{f}"
        );
    }
    assert_eq!(
        t.c(&["HINCRBYFLOAT", "h", "f", "x"]),
        "-ERR value is not a valid float\r\n"
    );
    for inf in ["+inf", "-inf", "inf"] {
        assert_eq!(
            t.c(&["HINCRBYFLOAT", "hfoo", "f", inf]),
            "-ERR value is NaN or Infinity\r\n"
        );
    }
    assert_eq!(t.c(&["EXISTS", "hfoo"]), ":0\r\n");
    t.c(&["HSET", "h", "inf", "inf"]);
    assert_eq!(
        t.c(&["HINCRBYFLOAT", "h", "inf", "1"]),
        "-ERR increment would produce NaN or Infinity\r\n"
    );
    assert_eq!(t.c(&["HGET", "h", "inf"]), "$3\r\ninf\r\n");
    t.c(&["SET", "s", "x"]);
    assert_eq!(t.c(&["HINCRBYFLOAT", "s", "f", "1"]), WRONGTYPE);
}

#[test]
fn hrandfield() {
    let mut t = T::new();
    assert_eq!(t.c(&["HRANDFIELD", "nokey"]), NIL);
    assert_eq!(t.c(&["HRANDFIELD", "nokey", "100"]), "*0\r\n");
    assert_eq!(t.c(&["HRANDFIELD", "nokey", "-3", "WITHVALUES"]), "*0\r\n");
    let fields = ["a", "b", "c", "d", "e"];
    for (i, f) in fields.iter().enumerate() {
        t.c(&["HSET", "h", f, &i.to_string()]);
    }
    assert_eq!(t.c(&["HRANDFIELD", "h", "0"]), "*0\r\n");
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let r = bulks(&t.c(&["HRANDFIELD", "h"]));
        assert_eq!(r.len(), 1);
        seen.insert(r[0].clone());
    }
    assert_eq!(seen.len(), fields.len(), "every field comes up");
    // Negative counts: repeats allowed.
    let r = bulks(&t.c(&["HRANDFIELD", "h", "-20"]));
    assert_eq!(r.len(), 20);
    assert!(r.iter().all(|f| fields.contains(&f.as_str())));
    let r = bulks(&t.c(&["HRANDFIELD", "h", "-7", "withvalues"]));
    assert_eq!(r.len(), 14);
    for p in r.chunks(2) {
        let i = fields.iter().position(|f| *f == p[0]).unwrap();
        assert_eq!(p[1], i.to_string());
    }
    // Positive counts: distinct fields, at most all of them.
    for n in 1..=fields.len() {
        let r = bulks(&t.c(&["HRANDFIELD", "h", &n.to_string(), "WITHVALUES"]));
        assert_eq!(r.len(), 2 * n);
        let names: std::collections::BTreeSet<_> = r.chunks(2).map(|p| p[0].clone()).collect();
        assert_eq!(names.len(), n);
    }
    assert_eq!(
        bulks(&t.c(&["HRANDFIELD", "h", "100"])),
        fields.map(String::from).to_vec(),
        "a count beyond the size answers the whole hash"
    );
    // Errors, in Redis's order.
    assert_eq!(t.c(&["HRANDFIELD", "h", "x"]), NOT_INT);
    assert_eq!(t.c(&["HRANDFIELD", "h", "1", "x"]), SYNTAX);
    assert_eq!(t.c(&["HRANDFIELD", "h", "1", "WITHVALUES", "x"]), SYNTAX);
    assert_eq!(
        t.c(&["HRANDFIELD", "h", "-9223372036854775808"]),
        "-ERR value is out of range, value must between -9223372036854775807 and \
         9223372036854775807\r\n"
    );
    for n in ["-9223372036854770000", "4611686018427387904"] {
        assert_eq!(
            t.c(&["HRANDFIELD", "h", n, "WITHVALUES"]),
            "-ERR value is out of range\r\n"
        );
    }
    t.c(&["SET", "s", "x"]);
    assert_eq!(t.c(&["HRANDFIELD", "s"]), WRONGTYPE);
    assert_eq!(t.c(&["HRANDFIELD", "s", "2"]), WRONGTYPE);
}

#[test]
fn hscan() {
    let mut t = T::sized(1 << 20, 4096);
    assert_eq!(t.c(&["HSCAN", "nokey", "0"]), "*2\r\n$1\r\n0\r\n*0\r\n");
    assert_eq!(
        t.c(&["HSCAN", "nokey", "0", "COUNT", "0"]),
        "*2\r\n$1\r\n0\r\n*0\r\n",
        "an absent key's options are not looked at"
    );
    assert_eq!(t.c(&["HSCAN", "nokey", "x"]), "-ERR invalid cursor\r\n");
    t.c(&["HSET", "h", "a", "1", "b", "2", "ab", "3"]);
    assert_eq!(
        t.c(&["HSCAN", "h", "0"]),
        "*2\r\n$1\r\n0\r\n*6\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$2\r\nab\r\n$1\r\n3\r\n"
    );
    assert_eq!(
        t.c(&["HSCAN", "h", "0", "MATCH", "a*", "COUNT", "1"]),
        "*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$2\r\nab\r\n$1\r\n3\r\n"
    );
    assert_eq!(
        t.c(&["HSCAN", "h", "7", "MATCH", "b"]),
        "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
        "a small hash is answered whole whatever the cursor"
    );
    assert_eq!(t.c(&["HSCAN", "h", "0", "COUNT", "0"]), SYNTAX);
    assert_eq!(t.c(&["HSCAN", "h", "0", "COUNT", "x"]), NOT_INT);
    assert_eq!(t.c(&["HSCAN", "h", "0", "TYPE", "hash"]), SYNTAX);
    assert_eq!(t.c(&["HSCAN", "h", "0", "MATCH"]), SYNTAX);
    t.c(&["SET", "s", "x"]);
    assert_eq!(t.c(&["HSCAN", "s", "0"]), WRONGTYPE);
    // A large hash is walked by slot index; every field comes once, also while the hash
    // changes: f900.. are deleted and g.. added during the scan.
    let n = 1000;
    for i in 0..n {
        t.c(&["HSET", "big", &format!("f{i}"), &format!("v{i}")]);
    }
    let mut cursor = String::from("0");
    let mut got = std::collections::BTreeMap::new();
    let mut calls = 0;
    loop {
        let reply = t.c(&["HSCAN", "big", &cursor, "COUNT", "50"]);
        let b = bulks(&reply);
        cursor = b[0].clone();
        for p in b[1..].chunks(2) {
            assert!(
                got.insert(p[0].clone(), p[1].clone()).is_none(),
                "{p:?} twice"
            );
        }
        calls += 1;
        t.c(&["HDEL", "big", &format!("f{}", 900 + calls)]);
        t.c(&["HSET", "big", &format!("g{calls}"), &format!("v{calls}")]);
        if cursor == "0" {
            break;
        }
    }
    assert!(calls > 1);
    for i in 0..900 {
        assert_eq!(got.get(&format!("f{i}")), Some(&format!("v{i}")));
    }
    for (f, v) in &got {
        assert_eq!(f[1..], v[1..]);
    }
}

#[test]
fn new_writes_are_atomic_on_oom() {
    // A key of 1 byte takes 9; a field "f" with a 1-byte value 10.
    let mut t = T::sized(19, 100);
    assert_eq!(t.c(&["HSETNX", "h", "f", "1"]), ":1\r\n");
    assert_eq!(t.c(&["HSETNX", "h", "g", "1"]), OOM);
    assert_eq!(t.c(&["HINCRBY", "h", "g", "1"]), OOM);
    assert_eq!(t.c(&["HINCRBYFLOAT", "h", "g", "1"]), OOM);
    assert_eq!(t.c(&["HINCRBY", "h", "f", "10"]), OOM, "a longer value");
    assert_eq!(t.c(&["HINCRBY", "h", "f", "1"]), ":2\r\n", "in place");
    assert_eq!(t.c(&["HINCRBYFLOAT", "h", "f", "1.5"]), OOM);
    assert_eq!(t.c(&["HGETALL", "h"]), "*2\r\n$1\r\nf\r\n$1\r\n2\r\n");
    assert_eq!(t.c(&["HINCRBY", "other", "f", "1"]), OOM);
    assert_eq!(t.c(&["EXISTS", "other"]), ":0\r\n");
    let mut t = T::sized(1000, 2);
    assert_eq!(t.c(&["HSETNX", "h", "f", "1"]), ":1\r\n");
    assert_eq!(t.c(&["HSETNX", "h", "g", "1"]), OOM, "no slot left");
    assert_eq!(t.c(&["HINCRBY", "h", "f", "100"]), ":101\r\n");
}

#[test]
fn memory_usage() {
    let mut t = T::new();
    assert_eq!(t.c(&["MEMORY", "USAGE", "h"]), NIL);
    t.c(&["HSET", "h", "f", "v"]);
    assert_eq!(t.c(&["MEMORY", "USAGE", "h"]), ":19\r\n");
    assert_eq!(t.c(&["MEMORY", "USAGE", "h", "SAMPLES", "0"]), ":19\r\n");
    assert_eq!(t.c(&["MEMORY", "USAGE", "h", "SAMPLES", "-1"]), SYNTAX);
    assert_eq!(t.c(&["MEMORY", "USAGE", "h", "SAMPLES", "x"]), NOT_INT);
    assert_eq!(t.c(&["MEMORY", "USAGE", "h", "x"]), SYNTAX);
    assert_eq!(
        t.c(&["MEMORY", "USAGE"]),
        "-ERR wrong number of arguments for 'memory|usage' command\r\n"
    );
    assert_eq!(
        t.c(&["MEMORY", "STATS"]),
        "-ERR unknown subcommand 'STATS'. Try MEMORY HELP.\r\n"
    );
    assert_eq!(OK, t.c(&["SET", "s", "xy"]));
    assert_eq!(t.c(&["MEMORY", "USAGE", "s"]), ":11\r\n");
}

#[test]
fn hset_counts_repeated_and_many_fields_exactly() {
    let mut t = T::new();
    let mut args = vec!["HSET", "h"];
    for _ in 0..5000 {
        args.extend(["f", "v"]);
    }
    args.extend(["f", "last"]);
    assert_eq!(t.c(&args), ":1\r\n");
    assert_eq!(t.c(&["HGET", "h", "f"]), "$4\r\nlast\r\n");
    let names: Vec<String> = (0..2 * crate::repeats::EXACT_KEYS)
        .map(|i| format!("n{i}"))
        .collect();
    assert_eq!(t.c(&["HSET", "h", "n0", "x"]), ":1\r\n");
    let mut args = vec!["HSET", "h"];
    for n in names.iter().chain(&names) {
        args.extend([n.as_str(), n.as_str()]);
    }
    assert_eq!(t.c(&args), format!(":{}\r\n", names.len() - 1));
    assert_eq!(t.c(&["HLEN", "h"]), format!(":{}\r\n", names.len() + 1));
    assert_eq!(t.c(&["HGET", "h", "n0"]), "$2\r\nn0\r\n");
}

#[test]
fn hset_plans_a_repeated_field_as_replaced() {
    // 300 bytes: four writes of one 50-byte field fit only planned as one.
    let mut t = T::sized(300, 100);
    let v = "v".repeat(50);
    assert_eq!(
        t.c(&["HSET", "h", "f", &v, "f", &v, "f", &v, "f", &v]),
        ":1\r\n"
    );
    assert_eq!(t.c(&["HSTRLEN", "h", "f"]), ":50\r\n");
}
