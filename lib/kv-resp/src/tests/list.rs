//! Lists: `LINSERT`, `LPOS`, `LMOVE`, `RPOPLPUSH` and `LMPOP`, against Redis 7.0's replies.

use super::*;
use proptest::prelude::*;
use std::collections::VecDeque;
use std::format;
use std::string::{String, ToString};

const NIL: &str = "$-1\r\n";
const NIL_ARRAY: &str = "*-1\r\n";
const EMPTY: &str = "*0\r\n";
const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
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

/// A RESP array of integers.
fn ints(items: &[i64]) -> String {
    let mut s = format!("*{}\r\n", items.len());
    for i in items {
        s += &int(*i);
    }
    s
}

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

fn int(n: i64) -> String {
    format!(":{n}\r\n")
}

fn err(msg: &str) -> String {
    format!("-{msg}\r\n")
}

fn wrong_args(name: &str) -> String {
    format!("-ERR wrong number of arguments for '{name}' command\r\n")
}

/// `LMPOP`'s reply: the key and its popped elements.
fn popped(key: &str, items: &[&str]) -> String {
    format!("*2\r\n{}{}", bulk(key), arr(items))
}

/// The elements of list `key`.
fn all(t: &mut T, key: &str) -> String {
    t.c(&["LRANGE", key, "0", "-1"])
}

#[test]
fn linsert() {
    let mut t = T::new();
    assert_eq!(t.c(&["RPUSH", "l", "a", "b", "c", "b"]), int(4));
    assert_eq!(t.c(&["LINSERT", "l", "BEFORE", "b", "x"]), int(5));
    assert_eq!(t.c(&["LINSERT", "l", "after", "b", "y"]), int(6));
    assert_eq!(all(&mut t, "l"), arr(&["a", "x", "b", "y", "c", "b"]));
    // At either end.
    assert_eq!(t.c(&["LINSERT", "l", "before", "a", "first"]), int(7));
    assert_eq!(t.c(&["LINSERT", "l", "AfTeR", "c", "z"]), int(8));
    assert_eq!(t.c(&["RPUSH", "m", "only"]), int(1));
    assert_eq!(t.c(&["LINSERT", "m", "after", "only", "last"]), int(2));
    assert_eq!(all(&mut t, "m"), arr(&["only", "last"]));
    assert_eq!(
        all(&mut t, "l"),
        arr(&["first", "a", "x", "b", "y", "c", "z", "b"])
    );
    // No pivot: -1; no key: 0, and no key is made.
    assert_eq!(t.c(&["LINSERT", "l", "before", "nothere", "v"]), int(-1));
    assert_eq!(t.c(&["LINSERT", "nokey", "before", "a", "v"]), int(0));
    assert_eq!(t.c(&["EXISTS", "nokey"]), int(0));
    // The place is checked first, then the key.
    assert_eq!(t.c(&["LINSERT", "nokey", "aft3r", "a", "v"]), SYNTAX);
    assert_eq!(t.c(&["SET", "s", "v"]), "+OK\r\n");
    assert_eq!(t.c(&["LINSERT", "s", "aft3r", "a", "v"]), SYNTAX);
    assert_eq!(t.c(&["LINSERT", "s", "after", "a", "v"]), WRONGTYPE);
    assert_eq!(t.c(&["LINSERT", "l", "after", "a"]), wrong_args("linsert"));
    assert_eq!(
        t.c(&["LINSERT", "l", "after", "a", "b", "c"]),
        wrong_args("linsert")
    );
    assert_eq!(t.c(&["LLEN", "l"]), int(8));
}

#[test]
fn linsert_oom_changes_nothing() {
    // The key (8 + 1) and two elements (8 + 1 each).
    let mut t = T::sized(27, 100);
    assert_eq!(t.c(&["RPUSH", "l", "a", "b"]), int(2));
    assert_eq!(t.c(&["LINSERT", "l", "before", "b", "x"]), OOM);
    // Without a pivot nothing is written, and nothing is needed.
    assert_eq!(t.c(&["LINSERT", "l", "before", "q", "x"]), int(-1));
    assert_eq!(all(&mut t, "l"), arr(&["a", "b"]));
    assert_eq!(t.c(&["LPOP", "l"]), bulk("a"));
    assert_eq!(t.c(&["LINSERT", "l", "before", "b", "x"]), int(2));
    assert_eq!(t.st.used_memory(), 27);
}

#[test]
fn lpos() {
    let mut t = T::new();
    assert_eq!(
        t.c(&["RPUSH", "l", "a", "b", "c", "1", "2", "3", "c", "c"]),
        int(8)
    );
    assert_eq!(t.c(&["LPOS", "l", "a"]), int(0));
    assert_eq!(t.c(&["LPOS", "l", "c"]), int(2));
    assert_eq!(t.c(&["LPOS", "l", "x"]), NIL);
    assert_eq!(t.c(&["LPOS", "l", "c", "RANK", "1"]), int(2));
    assert_eq!(t.c(&["LPOS", "l", "c", "rank", "2"]), int(6));
    assert_eq!(t.c(&["LPOS", "l", "c", "RANK", "4"]), NIL);
    assert_eq!(t.c(&["LPOS", "l", "c", "RANK", "-1"]), int(7));
    assert_eq!(t.c(&["LPOS", "l", "c", "RANK", "-2"]), int(6));
    // The last option given wins.
    assert_eq!(t.c(&["LPOS", "l", "c", "RANK", "-1", "RANK", "2"]), int(6));
    assert_eq!(t.c(&["LPOS", "l", "c", "COUNT", "0"]), ints(&[2, 6, 7]));
    assert_eq!(t.c(&["LPOS", "l", "c", "COUNT", "1"]), ints(&[2]));
    assert_eq!(t.c(&["LPOS", "l", "c", "COUNT", "2"]), ints(&[2, 6]));
    assert_eq!(t.c(&["LPOS", "l", "c", "COUNT", "100"]), ints(&[2, 6, 7]));
    assert_eq!(
        t.c(&["LPOS", "l", "c", "COUNT", "0", "RANK", "2"]),
        ints(&[6, 7])
    );
    assert_eq!(
        t.c(&["LPOS", "l", "c", "COUNT", "2", "RANK", "-1"]),
        ints(&[7, 6])
    );
    assert_eq!(t.c(&["LPOS", "l", "x", "COUNT", "2"]), EMPTY);
    assert_eq!(t.c(&["LPOS", "l", "c", "COUNT", "0", "RANK", "5"]), EMPTY);
    // MAXLEN: only that many elements are compared, from the end the rank says.
    assert_eq!(
        t.c(&["LPOS", "l", "a", "COUNT", "0", "MAXLEN", "1"]),
        ints(&[0])
    );
    assert_eq!(t.c(&["LPOS", "l", "c", "COUNT", "0", "MAXLEN", "1"]), EMPTY);
    assert_eq!(
        t.c(&["LPOS", "l", "c", "COUNT", "0", "MAXLEN", "3"]),
        ints(&[2])
    );
    assert_eq!(
        t.c(&["LPOS", "l", "c", "COUNT", "0", "MAXLEN", "3", "RANK", "-1"]),
        ints(&[7, 6])
    );
    assert_eq!(
        t.c(&["LPOS", "l", "c", "COUNT", "0", "MAXLEN", "7", "RANK", "2"]),
        ints(&[6])
    );
    assert_eq!(t.c(&["LPOS", "l", "c", "MAXLEN", "2"]), NIL);
    // Redis negates a rank of i64::MIN into itself: it then counts from the tail, from the
    // first match.
    assert_eq!(
        t.c(&["LPOS", "l", "c", "RANK", "-9223372036854775808"]),
        int(7)
    );
    // No key: nil, or an empty array with COUNT.
    assert_eq!(t.c(&["LPOS", "nokey", "c"]), NIL);
    assert_eq!(
        t.c(&["LPOS", "nokey", "c", "COUNT", "0", "RANK", "2"]),
        EMPTY
    );
}

#[test]
fn lpos_errors() {
    let mut t = T::new();
    assert_eq!(t.c(&["RPUSH", "l", "a"]), int(1));
    let rank_zero = err(
        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... \
         or use negative to start from the end of the list",
    );
    assert_eq!(t.c(&["LPOS", "l", "a", "RANK", "0"]), rank_zero);
    assert_eq!(t.c(&["LPOS", "l", "a", "RANK", "x"]), NOT_INT);
    let count = err("ERR COUNT can't be negative");
    assert_eq!(t.c(&["LPOS", "l", "a", "COUNT", "-1"]), count);
    assert_eq!(t.c(&["LPOS", "l", "a", "COUNT", "x"]), count);
    let maxlen = err("ERR MAXLEN can't be negative");
    assert_eq!(t.c(&["LPOS", "l", "a", "MAXLEN", "-1"]), maxlen);
    assert_eq!(t.c(&["LPOS", "l", "a", "MAXLEN", "1.5"]), maxlen);
    assert_eq!(t.c(&["LPOS", "l", "a", "RANK"]), SYNTAX);
    assert_eq!(t.c(&["LPOS", "l", "a", "COUNT", "1", "MAXLEN"]), SYNTAX);
    assert_eq!(t.c(&["LPOS", "l", "a", "FOO", "1"]), SYNTAX);
    // The options are checked before the key.
    assert_eq!(t.c(&["LPOS", "nokey", "a", "RANK", "0"]), rank_zero);
    assert_eq!(t.c(&["SET", "s", "v"]), "+OK\r\n");
    assert_eq!(t.c(&["LPOS", "s", "a", "FOO"]), SYNTAX);
    assert_eq!(t.c(&["LPOS", "s", "a"]), WRONGTYPE);
    assert_eq!(t.c(&["LPOS", "s", "a", "COUNT", "0"]), WRONGTYPE);
    assert_eq!(t.c(&["LPOS", "l"]), wrong_args("lpos"));
}

#[test]
fn lmove_between_lists() {
    let mut t = T::new();
    assert_eq!(t.c(&["RPUSH", "src", "a", "b", "c", "d"]), int(4));
    assert_eq!(t.c(&["RPUSH", "dst", "x"]), int(1));
    assert_eq!(t.c(&["LMOVE", "src", "dst", "LEFT", "LEFT"]), bulk("a"));
    assert_eq!(t.c(&["LMOVE", "src", "dst", "left", "right"]), bulk("b"));
    assert_eq!(t.c(&["LMOVE", "src", "dst", "RIGHT", "LEFT"]), bulk("d"));
    assert_eq!(all(&mut t, "src"), arr(&["c"]));
    assert_eq!(all(&mut t, "dst"), arr(&["d", "a", "x", "b"]));
    // The source's last element: the source goes.
    assert_eq!(t.c(&["LMOVE", "src", "dst", "right", "right"]), bulk("c"));
    assert_eq!(t.c(&["EXISTS", "src"]), int(0));
    assert_eq!(all(&mut t, "dst"), arr(&["d", "a", "x", "b", "c"]));
    // To a new key.
    assert_eq!(t.c(&["LMOVE", "dst", "new", "left", "right"]), bulk("d"));
    assert_eq!(all(&mut t, "new"), arr(&["d"]));
    // From a list of one element to a new key.
    assert_eq!(t.c(&["LMOVE", "new", "other", "left", "left"]), bulk("d"));
    assert_eq!(t.c(&["EXISTS", "new"]), int(0));
    assert_eq!(all(&mut t, "other"), arr(&["d"]));
    // Keys 8 + 3 ("dst") and 8 + 5 ("other"), five elements of 8 + 1.
    assert_eq!(t.st.used_memory(), 11 + 13 + 5 * 9);
    assert_eq!(t.st.used_slots(), 7);
}

#[test]
fn lmove_within_a_list() {
    let mut t = T::new();
    assert_eq!(t.c(&["RPUSH", "l", "a", "b", "c"]), int(3));
    assert_eq!(t.c(&["LMOVE", "l", "l", "right", "left"]), bulk("c"));
    assert_eq!(all(&mut t, "l"), arr(&["c", "a", "b"]));
    assert_eq!(t.c(&["LMOVE", "l", "l", "left", "right"]), bulk("c"));
    assert_eq!(all(&mut t, "l"), arr(&["a", "b", "c"]));
    assert_eq!(t.c(&["LMOVE", "l", "l", "left", "left"]), bulk("a"));
    assert_eq!(t.c(&["LMOVE", "l", "l", "right", "right"]), bulk("c"));
    assert_eq!(all(&mut t, "l"), arr(&["a", "b", "c"]));
    assert_eq!(t.c(&["RPOPLPUSH", "l", "l"]), bulk("c"));
    assert_eq!(all(&mut t, "l"), arr(&["c", "a", "b"]));
    // A list of one element stays.
    assert_eq!(t.c(&["RPUSH", "one", "x"]), int(1));
    for (from, to) in [
        ("left", "left"),
        ("left", "right"),
        ("right", "left"),
        ("right", "right"),
    ] {
        assert_eq!(t.c(&["LMOVE", "one", "one", from, to]), bulk("x"));
        assert_eq!(all(&mut t, "one"), arr(&["x"]));
    }
}

#[test]
fn rpoplpush() {
    let mut t = T::new();
    assert_eq!(t.c(&["RPUSH", "src", "a", "b", "c", "d"]), int(4));
    assert_eq!(t.c(&["RPOPLPUSH", "src", "dst"]), bulk("d"));
    assert_eq!(t.c(&["RPOPLPUSH", "src", "dst"]), bulk("c"));
    assert_eq!(all(&mut t, "src"), arr(&["a", "b"]));
    assert_eq!(all(&mut t, "dst"), arr(&["c", "d"]));
    assert_eq!(t.c(&["RPOPLPUSH", "nokey", "dst"]), NIL);
    assert_eq!(t.c(&["RPOPLPUSH", "nokey", "nokey2"]), NIL);
    assert_eq!(t.c(&["EXISTS", "nokey", "nokey2"]), int(0));
    assert_eq!(t.c(&["RPOPLPUSH", "src"]), wrong_args("rpoplpush"));
}

#[test]
fn lmove_errors_change_nothing() {
    let mut t = T::new();
    assert_eq!(t.c(&["RPUSH", "l", "a", "b"]), int(2));
    assert_eq!(t.c(&["SET", "s", "v"]), "+OK\r\n");
    // The sides are checked first, the source second, the destination last.
    assert_eq!(t.c(&["LMOVE", "s", "s", "up", "left"]), SYNTAX);
    assert_eq!(t.c(&["LMOVE", "l", "s", "left", "down"]), SYNTAX);
    assert_eq!(t.c(&["LMOVE", "s", "l", "left", "left"]), WRONGTYPE);
    assert_eq!(t.c(&["LMOVE", "nokey", "s", "left", "left"]), NIL);
    assert_eq!(t.c(&["LMOVE", "l", "s", "left", "left"]), WRONGTYPE);
    assert_eq!(t.c(&["RPOPLPUSH", "l", "s"]), WRONGTYPE);
    assert_eq!(t.c(&["RPOPLPUSH", "s", "l"]), WRONGTYPE);
    assert_eq!(t.c(&["GET", "s"]), bulk("v"));
    assert_eq!(all(&mut t, "l"), arr(&["a", "b"]));
    assert_eq!(t.c(&["LMOVE", "l", "s", "left"]), wrong_args("lmove"));
}

#[test]
fn lmove_oom_changes_nothing() {
    // Keys "l" and "d" (8 + 1 each), three elements (8 + 1 each).
    let mut t = T::sized(45, 100);
    assert_eq!(t.c(&["RPUSH", "l", "a", "b"]), int(2));
    assert_eq!(t.c(&["RPUSH", "d", "c"]), int(1));
    assert_eq!(t.st.used_memory(), 45);
    // Moving to an existing list takes nothing.
    assert_eq!(t.c(&["LMOVE", "l", "d", "left", "left"]), bulk("a"));
    assert_eq!(t.c(&["RPOPLPUSH", "d", "l"]), bulk("c"));
    assert_eq!(all(&mut t, "l"), arr(&["c", "b"]));
    assert_eq!(all(&mut t, "d"), arr(&["a"]));
    // A new destination's key does not fit beside the source's.
    assert_eq!(t.c(&["LMOVE", "l", "e", "left", "left"]), OOM);
    assert_eq!(t.c(&["LMOVE", "d", "e", "left", "left"]), OOM);
    assert_eq!(all(&mut t, "l"), arr(&["c", "b"]));
    assert_eq!(all(&mut t, "d"), arr(&["a"]));
    assert_eq!(t.c(&["EXISTS", "e"]), int(0));
    assert_eq!(t.st.used_memory(), 45);
    // Out of slots too.
    let mut t = T::sized(1000, 3);
    assert_eq!(t.c(&["RPUSH", "l", "a", "b"]), int(2));
    assert_eq!(t.c(&["RPOPLPUSH", "l", "m"]), OOM);
    assert_eq!(t.c(&["RPOPLPUSH", "l", "l"]), bulk("b"));
    assert_eq!(all(&mut t, "l"), arr(&["b", "a"]));
}

#[test]
fn lmpop() {
    let mut t = T::new();
    assert_eq!(t.c(&["RPUSH", "a", "1", "2", "3", "4", "5"]), int(5));
    assert_eq!(
        t.c(&["LMPOP", "2", "a", "a", "left", "count", "2"]),
        popped("a", &["1", "2"])
    );
    assert_eq!(
        t.c(&["LMPOP", "1", "a", "RIGHT", "COUNT", "2"]),
        popped("a", &["5", "4"])
    );
    assert_eq!(t.c(&["LMPOP", "1", "a", "left"]), popped("a", &["3"]));
    assert_eq!(t.c(&["EXISTS", "a"]), int(0));
    assert_eq!(t.c(&["LMPOP", "1", "a", "left"]), NIL_ARRAY);
    assert_eq!(
        t.c(&["LMPOP", "2", "a", "b", "right", "count", "9"]),
        NIL_ARRAY
    );
    // The first key that holds a list; all of it when the count exceeds it.
    assert_eq!(t.c(&["RPUSH", "b", "x", "y"]), int(2));
    assert_eq!(t.c(&["RPUSH", "c", "z"]), int(1));
    assert_eq!(
        t.c(&["LMPOP", "3", "a", "b", "c", "left", "count", "10"]),
        popped("b", &["x", "y"])
    );
    assert_eq!(
        t.c(&["LMPOP", "3", "a", "b", "c", "right", "count", "10"]),
        popped("c", &["z"])
    );
    assert_eq!(t.st.used_memory(), 0);
    // A key of another type is an error once it is reached.
    assert_eq!(t.c(&["SET", "s", "v"]), "+OK\r\n");
    assert_eq!(t.c(&["RPUSH", "l", "e"]), int(1));
    assert_eq!(t.c(&["LMPOP", "2", "a", "s", "left"]), WRONGTYPE);
    assert_eq!(t.c(&["LMPOP", "2", "l", "s", "left"]), popped("l", &["e"]));
}

#[test]
fn lmpop_errors() {
    let mut t = T::new();
    assert_eq!(t.c(&["RPUSH", "l", "a"]), int(1));
    assert_eq!(t.c(&["LMPOP"]), wrong_args("lmpop"));
    assert_eq!(t.c(&["LMPOP", "1"]), wrong_args("lmpop"));
    assert_eq!(t.c(&["LMPOP", "1", "l"]), wrong_args("lmpop"));
    let numkeys = err("ERR numkeys should be greater than 0");
    assert_eq!(t.c(&["LMPOP", "0", "l", "LEFT"]), numkeys);
    assert_eq!(t.c(&["LMPOP", "a", "l", "LEFT"]), numkeys);
    assert_eq!(t.c(&["LMPOP", "-1", "l", "RIGHT"]), numkeys);
    assert_eq!(t.c(&["LMPOP", "1", "l", "bad_where"]), SYNTAX);
    assert_eq!(t.c(&["LMPOP", "1", "l", "LEFT", "bar_arg"]), SYNTAX);
    assert_eq!(t.c(&["LMPOP", "1", "l", "RIGHT", "LEFT"]), SYNTAX);
    assert_eq!(t.c(&["LMPOP", "1", "l", "COUNT"]), SYNTAX);
    assert_eq!(t.c(&["LMPOP", "1", "l", "LEFT", "COUNT"]), SYNTAX);
    assert_eq!(
        t.c(&["LMPOP", "1", "l", "LEFT", "COUNT", "1", "COUNT", "2"]),
        SYNTAX
    );
    assert_eq!(t.c(&["LMPOP", "2", "l", "m", "bad_arg"]), SYNTAX);
    // More keys than arguments, however many.
    assert_eq!(t.c(&["LMPOP", "5", "l", "LEFT"]), SYNTAX);
    assert_eq!(t.c(&["LMPOP", "9223372036854775807", "l", "LEFT"]), SYNTAX);
    let count = err("ERR count should be greater than 0");
    assert_eq!(t.c(&["LMPOP", "1", "l", "LEFT", "COUNT", "0"]), count);
    assert_eq!(t.c(&["LMPOP", "1", "l", "RIGHT", "COUNT", "a"]), count);
    assert_eq!(t.c(&["LMPOP", "1", "l", "LEFT", "COUNT", "-1"]), count);
    assert_eq!(all(&mut t, "l"), arr(&["a"]));
}

#[test]
fn pops_and_moves_wait_for_room_in_the_output() {
    // A reply that does not fit changes nothing: the command runs again once there is room.
    let mut st = store(1 << 16, 1024);
    let mut s = Session::new();
    let big = "x".repeat(400);
    cmd_at(&mut st, &mut s, &["RPUSH", "l", &big, &big], 0);
    for args in [
        &["LMPOP", "1", "l", "left", "count", "2"][..],
        &["LMOVE", "l", "m", "left", "left"][..],
        &["RPOPLPUSH", "l", "m"][..],
    ] {
        let mut buf = [0u8; crate::MIN_OUTPUT];
        let mut out = OutBuf::new(&mut buf);
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let input = encode(&args);
        let mut inbuf = vec![0u8; input.len()];
        let mut p = Parser::new(&mut inbuf);
        p.receive(&input);
        let c = p.next_command().unwrap().unwrap();
        // The reply is replaced by an error when even the empty buffer cannot hold it.
        assert_eq!(
            st.execute(&mut s, &c, 0, &mut out),
            Ok(crate::Outcome::Continue)
        );
        assert!(out.pending().starts_with(b"-ERR reply exceeds"));
        st.check();
        assert_eq!(
            cmd_at(&mut st, &mut s, &["LLEN", "l"], 0),
            int(2),
            "{args:?}"
        );
        assert_eq!(cmd_at(&mut st, &mut s, &["EXISTS", "m"], 0), int(0));
    }
}

/// A list command of the property test: keys `l0` to `l2` hold lists, `s` a string.
#[derive(Debug, Clone)]
enum Op {
    /// `LPUSH` (true) or `RPUSH`.
    Push(bool, u8, Vec<u8>),
    /// `LMOVE` from and to the head (true) or the tail.
    Move(u8, u8, bool, bool),
    /// `RPOPLPUSH`.
    RPopLPush(u8, u8),
    /// `LINSERT BEFORE` (true) or `AFTER`.
    Insert(u8, bool, u8, u8),
    /// `LMPOP` of two keys, `LEFT` (true) or `RIGHT`, `COUNT`.
    MPop(u8, u8, bool, u8),
    /// `LPOS` with `RANK`, `COUNT` and `MAXLEN`.
    Pos(u8, u8, i8, Option<u8>, u8),
}

/// Key `k`'s name: `s` for 3, `l<k>` otherwise.
fn key(k: u8) -> String {
    if k == 3 {
        "s".into()
    } else {
        format!("l{k}")
    }
}

/// Element `e`'s bytes: its digit, repeated for the larger ones.
fn elem(e: u8) -> String {
    e.to_string().repeat(1 + usize::from(e / 3))
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..4;
    let e = 0u8..6;
    prop_oneof![
        (
            any::<bool>(),
            k.clone(),
            proptest::collection::vec(e.clone(), 1..4)
        )
            .prop_map(|(l, k, es)| Op::Push(l, k, es)),
        (k.clone(), k.clone(), any::<bool>(), any::<bool>())
            .prop_map(|(a, b, f, t)| Op::Move(a, b, f, t)),
        (k.clone(), k.clone()).prop_map(|(a, b)| Op::RPopLPush(a, b)),
        (k.clone(), any::<bool>(), e.clone(), e.clone())
            .prop_map(|(k, b, p, v)| Op::Insert(k, b, p, v)),
        (k.clone(), k.clone(), any::<bool>(), 1u8..4).prop_map(|(a, b, l, n)| Op::MPop(a, b, l, n)),
        (k, e, -3i8..4, proptest::option::of(0u8..3), 0u8..4)
            .prop_map(|(k, e, r, c, m)| Op::Pos(k, e, r, c, m)),
    ]
}

/// The lists (and the string `s`, which takes 8 + 1 + 1 bytes and a slot), with the budget.
struct Model {
    lists: [VecDeque<String>; 3],
    cap: usize,
    slots: usize,
}

impl Model {
    /// Bytes and slots in use.
    fn used(&self) -> (usize, usize) {
        let (mut bytes, mut slots) = (8 + 1 + 1, 1);
        for (k, l) in self.lists.iter().enumerate() {
            if !l.is_empty() {
                bytes += 8 + key(k as u8).len();
                slots += 1;
                for e in l {
                    bytes += 8 + e.len();
                    slots += 1;
                }
            }
        }
        (bytes, slots)
    }

    /// Whether taking `bytes` and `slots` more fits.
    fn fits(&self, bytes: usize, slots: usize) -> bool {
        let (b, s) = self.used();
        b + bytes <= self.cap && s + slots <= self.slots
    }

    /// The command's arguments and its expected reply, applied to the model.
    fn apply(&mut self, op: &Op) -> (Vec<String>, String) {
        let list = |k: u8| (k < 3).then_some(usize::from(k));
        match op {
            Op::Push(left, k, es) => {
                let name = if *left { "LPUSH" } else { "RPUSH" };
                let mut args = vec![name.into(), key(*k)];
                args.extend(es.iter().map(|&e| elem(e)));
                let Some(i) = list(*k) else {
                    return (args, WRONGTYPE.into());
                };
                let new_key = usize::from(self.lists[i].is_empty());
                let bytes: usize = args[2..].iter().map(|e| 8 + e.len()).sum();
                if !self.fits(bytes + new_key * (8 + args[1].len()), es.len() + new_key) {
                    return (args, OOM.into());
                }
                for e in &args[2..] {
                    if *left {
                        self.lists[i].push_front(e.clone());
                    } else {
                        self.lists[i].push_back(e.clone());
                    }
                }
                (args, int(self.lists[i].len() as i64))
            }
            Op::Move(a, b, from, to) => {
                let side = |l: bool| String::from(if l { "LEFT" } else { "RIGHT" });
                let args = vec!["LMOVE".into(), key(*a), key(*b), side(*from), side(*to)];
                (args, self.lmove(*a, *b, *from, *to))
            }
            Op::RPopLPush(a, b) => (
                vec!["RPOPLPUSH".into(), key(*a), key(*b)],
                self.lmove(*a, *b, false, true),
            ),
            Op::Insert(k, before, pivot, e) => {
                let place = if *before { "BEFORE" } else { "AFTER" };
                let args = vec![
                    "LINSERT".into(),
                    key(*k),
                    place.into(),
                    elem(*pivot),
                    elem(*e),
                ];
                let Some(i) = list(*k) else {
                    return (args, WRONGTYPE.into());
                };
                if self.lists[i].is_empty() {
                    return (args, int(0));
                }
                let Some(at) = self.lists[i].iter().position(|x| *x == args[3]) else {
                    return (args, int(-1));
                };
                if !self.fits(8 + args[4].len(), 1) {
                    return (args, OOM.into());
                }
                let at = if *before { at } else { at + 1 };
                self.lists[i].insert(at, args[4].clone());
                (args, int(self.lists[i].len() as i64))
            }
            Op::MPop(a, b, left, n) => {
                let side = if *left { "LEFT" } else { "RIGHT" };
                let args = vec![
                    "LMPOP".into(),
                    "2".into(),
                    key(*a),
                    key(*b),
                    side.into(),
                    "COUNT".into(),
                    n.to_string(),
                ];
                for k in [*a, *b] {
                    let Some(i) = list(k) else {
                        return (args, WRONGTYPE.into());
                    };
                    if self.lists[i].is_empty() {
                        continue;
                    }
                    let mut got = Vec::new();
                    while got.len() < usize::from(*n) {
                        let e = if *left {
                            self.lists[i].pop_front()
                        } else {
                            self.lists[i].pop_back()
                        };
                        match e {
                            Some(e) => got.push(e),
                            None => break,
                        }
                    }
                    let got: Vec<&str> = got.iter().map(String::as_str).collect();
                    return (args, popped(&key(k), &got));
                }
                (args, NIL_ARRAY.into())
            }
            Op::Pos(k, e, rank, count, maxlen) => {
                let rank = if *rank == 0 { 1 } else { i64::from(*rank) };
                let mut args = vec!["LPOS".into(), key(*k), elem(*e)];
                args.extend(["RANK".into(), rank.to_string()]);
                if let Some(c) = count {
                    args.extend(["COUNT".into(), c.to_string()]);
                }
                args.extend(["MAXLEN".into(), maxlen.to_string()]);
                let Some(i) = list(*k) else {
                    return (args, WRONGTYPE.into());
                };
                let l = &self.lists[i];
                // The indices of the matches, in the order of the scan the rank says.
                let scan: Vec<i64> = (0..l.len())
                    .map(|j| if rank < 0 { l.len() - 1 - j } else { j })
                    .take(if *maxlen == 0 {
                        l.len()
                    } else {
                        usize::from(*maxlen)
                    })
                    .filter(|&j| l[j] == args[2])
                    .map(|j| j as i64)
                    .collect();
                let found = scan.iter().skip(rank.unsigned_abs() as usize - 1);
                let want = match count {
                    None => found.take(1).next().map_or(NIL.into(), |&j| int(j)),
                    Some(0) => ints(&found.copied().collect::<Vec<_>>()),
                    Some(c) => ints(&found.take(usize::from(*c)).copied().collect::<Vec<_>>()),
                };
                (args, want)
            }
        }
    }

    /// `LMOVE a b` from the head (`from`) or tail, to the head (`to`) or tail.
    fn lmove(&mut self, a: u8, b: u8, from: bool, to: bool) -> String {
        if a == 3 {
            return WRONGTYPE.into();
        }
        let (a, b) = (usize::from(a), usize::from(b));
        if self.lists[a].is_empty() {
            return NIL.into();
        }
        if b == 3 {
            return WRONGTYPE.into();
        }
        // The destination's key is taken before the source's is freed.
        if self.lists[b].is_empty() && !self.fits(8 + key(b as u8).len(), 1) {
            return OOM.into();
        }
        let e = if from {
            self.lists[a].pop_front()
        } else {
            self.lists[a].pop_back()
        };
        let e = e.unwrap_or_default();
        if to {
            self.lists[b].push_front(e.clone());
        } else {
            self.lists[b].push_back(e.clone());
        }
        bulk(&e)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Against a model of three lists, with budgets from tight to plenty: the replies, the
    /// bytes and slots in use after every command (a refused command changes nothing), and
    /// the lists at the end.
    #[test]
    fn lists_match_a_model(
        ops in proptest::collection::vec(op(), 1..150),
        cap in 10usize..300,
        slots in 1usize..20,
    ) {
        let mut t = T::sized(cap, slots);
        prop_assert_eq!(t.c(&["SET", "s", "v"]), "+OK\r\n");
        let mut model = Model { lists: Default::default(), cap, slots };
        for op in &ops {
            let (args, want) = model.apply(op);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            prop_assert_eq!(t.c(&args), want, "{:?}", op);
            prop_assert_eq!(t.st.used_memory(), model.used().0, "memory after {:?}", op);
            prop_assert_eq!(t.st.used_slots(), model.used().1, "slots after {:?}", op);
        }
        for (k, l) in model.lists.iter().enumerate() {
            let l: Vec<&str> = l.iter().map(String::as_str).collect();
            prop_assert_eq!(all(&mut t, &key(k as u8)), arr(&l));
        }
    }
}
