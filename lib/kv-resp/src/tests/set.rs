//! Sets: `SMOVE`, `SINTER`, `SINTERCARD`, `SUNION`, `SDIFF`, the `STORE` forms and `SSCAN`,
//! against Redis 7.0's replies.

use super::*;
use std::collections::BTreeSet;
use std::format;
use std::string::{String, ToString};

const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const NOT_INT: &str = "-ERR value is not an integer or out of range\r\n";
const OOM: &str = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
const SYNTAX: &str = "-ERR syntax error\r\n";
const EMPTY: &str = "*0\r\n";

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

fn wrong_args(name: &str) -> String {
    format!("-ERR wrong number of arguments for '{name}' command\r\n")
}

/// A scan reply's cursor and elements.
fn scan_reply(reply: &str) -> (String, Vec<String>) {
    let mut lines = reply.split("\r\n");
    assert_eq!(lines.next(), Some("*2"), "{reply}");
    lines.next(); // The cursor's length.
    let cursor = lines.next().unwrap_or_default().to_string();
    let n: usize = lines.next().unwrap_or_default()[1..].parse().unwrap();
    let mut items = Vec::new();
    for _ in 0..n {
        lines.next();
        items.push(lines.next().unwrap_or_default().to_string());
    }
    (cursor, items)
}

/// `SADD key members...` of a fresh set.
fn set(t: &mut T, key: &str, members: &[&str]) {
    let mut args = vec!["SADD", key];
    args.extend_from_slice(members);
    assert_eq!(t.c(&args), int(members.len() as i64));
}

#[test]
fn smove() {
    let mut t = T::new();
    set(&mut t, "s", &["1", "a", "b"]);
    set(&mut t, "d", &["2", "3"]);
    assert_eq!(t.c(&["SMOVE", "s", "d", "a"]), int(1));
    assert_eq!(t.c(&["SMEMBERS", "s"]), arr(&["1", "b"]));
    assert_eq!(t.c(&["SMEMBERS", "d"]), arr(&["2", "3", "a"]));
    // Not in the source: nothing moves.
    assert_eq!(t.c(&["SMOVE", "s", "d", "x"]), int(0));
    // Already in the destination: it leaves the source only.
    set(&mut t, "s2", &["2", "z"]);
    assert_eq!(t.c(&["SMOVE", "s2", "d", "2"]), int(1));
    assert_eq!(t.c(&["SMEMBERS", "s2"]), arr(&["z"]));
    assert_eq!(t.c(&["SCARD", "d"]), int(3));
    // Into an absent destination; the emptied source is deleted.
    assert_eq!(t.c(&["SMOVE", "s2", "new", "z"]), int(1));
    assert_eq!(t.c(&["EXISTS", "s2"]), int(0));
    assert_eq!(t.c(&["SMEMBERS", "new"]), arr(&["z"]));
    // The same set: answers whether the member is there, changes nothing.
    assert_eq!(t.c(&["SMOVE", "s", "s", "b"]), int(1));
    assert_eq!(t.c(&["SMOVE", "s", "s", "q"]), int(0));
    assert_eq!(t.c(&["SMEMBERS", "s"]), arr(&["1", "b"]));
    // Types: an absent source answers 0 before the destination's type is looked at.
    assert_eq!(t.c(&["SET", "str", "v"]), "+OK\r\n");
    assert_eq!(t.c(&["SMOVE", "nokey", "str", "a"]), int(0));
    assert_eq!(t.c(&["SMOVE", "str", "d", "a"]), WRONGTYPE);
    assert_eq!(t.c(&["SMOVE", "s", "str", "b"]), WRONGTYPE);
    assert_eq!(t.c(&["SMOVE", "s", "str", "nomember"]), WRONGTYPE);
    assert_eq!(t.c(&["SMEMBERS", "s"]), arr(&["1", "b"]));
    assert_eq!(t.c(&["SMOVE", "s", "d"]), wrong_args("smove"));
    assert_eq!(t.c(&["SMOVE", "s", "d", "a", "b"]), wrong_args("smove"));
}

#[test]
fn smove_oom_changes_nothing() {
    // 8 + 1 per key, 8 + 1 per member: 45 bytes hold s {a b} and t {c}.
    let mut t = T::sized(45, 100);
    set(&mut t, "s", &["a", "b"]);
    set(&mut t, "t", &["c"]);
    assert_eq!(t.c(&["SMOVE", "s", "t", "a"]), int(1));
    // The source's last member: its key's bytes pay for the new destination's.
    assert_eq!(t.c(&["SMOVE", "s", "u", "b"]), int(1));
    assert_eq!(t.st.used_memory(), 45);
    // A new destination without a source to delete does not fit.
    assert_eq!(t.c(&["SMOVE", "t", "v", "c"]), OOM);
    assert_eq!(t.c(&["SMEMBERS", "t"]), arr(&["c", "a"]));
    assert_eq!(t.c(&["EXISTS", "v"]), int(0));
    // Into an existing set the member's bytes are freed and taken again.
    assert_eq!(t.c(&["SMOVE", "t", "u", "c"]), int(1));
    assert_eq!(t.st.used_memory(), 45);
}

#[test]
fn sinter_sunion_sdiff() {
    let mut t = T::new();
    set(&mut t, "a", &["1", "2", "3", "x"]);
    set(&mut t, "b", &["3", "y", "2"]);
    set(&mut t, "c", &["2", "x", "3", "z"]);
    // The intersection walks the smallest set, in its order.
    assert_eq!(t.c(&["SINTER", "a", "b"]), arr(&["3", "2"]));
    assert_eq!(t.c(&["SINTER", "a", "c", "b"]), arr(&["3", "2"]));
    assert_eq!(t.c(&["SINTER", "a", "c"]), arr(&["2", "3", "x"]));
    assert_eq!(t.c(&["SINTER", "a"]), arr(&["1", "2", "3", "x"]));
    assert_eq!(t.c(&["SINTER", "a", "a", "a"]), arr(&["1", "2", "3", "x"]));
    assert_eq!(t.c(&["SINTER", "a", "nokey"]), EMPTY);
    // The union: each set's members that no earlier set has.
    assert_eq!(t.c(&["SUNION", "a", "b"]), arr(&["1", "2", "3", "x", "y"]));
    assert_eq!(
        t.c(&["SUNION", "nokey", "b", "c", "nokey2"]),
        arr(&["3", "y", "2", "x", "z"])
    );
    assert_eq!(t.c(&["SUNION", "a", "a"]), arr(&["1", "2", "3", "x"]));
    assert_eq!(t.c(&["SUNION", "nokey"]), EMPTY);
    // The difference: the first set's members that no other set has.
    assert_eq!(t.c(&["SDIFF", "a", "b"]), arr(&["1", "x"]));
    assert_eq!(t.c(&["SDIFF", "a", "b", "c"]), arr(&["1"]));
    assert_eq!(t.c(&["SDIFF", "a", "nokey"]), arr(&["1", "2", "3", "x"]));
    assert_eq!(t.c(&["SDIFF", "a", "a"]), EMPTY);
    assert_eq!(t.c(&["SDIFF", "nokey", "a"]), EMPTY);
    // Every key's type is checked, absent keys or not, whichever comes first.
    assert_eq!(t.c(&["SET", "str", "v"]), "+OK\r\n");
    for cmd in ["SINTER", "SUNION", "SDIFF"] {
        assert_eq!(t.c(&[cmd, "nokey", "str"]), WRONGTYPE);
        assert_eq!(t.c(&[cmd, "str", "nokey"]), WRONGTYPE);
        assert_eq!(t.c(&[cmd, "a", "str"]), WRONGTYPE);
        assert_eq!(t.c(&[cmd]), wrong_args(&cmd.to_lowercase()));
    }
    // A read only: nothing was created.
    assert_eq!(t.c(&["DBSIZE"]), int(4));
}

#[test]
fn sintercard() {
    let mut t = T::new();
    set(&mut t, "a", &["1", "2", "3", "x"]);
    set(&mut t, "b", &["3", "y", "2", "x"]);
    assert_eq!(t.c(&["SINTERCARD", "2", "a", "b"]), int(3));
    assert_eq!(t.c(&["SINTERCARD", "2", "a", "b", "LIMIT", "0"]), int(3));
    assert_eq!(t.c(&["SINTERCARD", "2", "a", "b", "limit", "2"]), int(2));
    assert_eq!(t.c(&["SINTERCARD", "2", "a", "b", "LIMIT", "9"]), int(3));
    assert_eq!(
        t.c(&["SINTERCARD", "2", "a", "b", "LIMIT", "9", "LIMIT", "1"]),
        int(1)
    );
    assert_eq!(t.c(&["SINTERCARD", "1", "a"]), int(4));
    assert_eq!(t.c(&["SINTERCARD", "2", "a", "nokey"]), int(0));
    assert_eq!(t.c(&["SINTERCARD", "1", "nokey", "LIMIT", "5"]), int(0));
    let numkeys = err("ERR numkeys should be greater than 0");
    assert_eq!(t.c(&["SINTERCARD", "0", "a"]), numkeys);
    assert_eq!(t.c(&["SINTERCARD", "-1", "a"]), numkeys);
    assert_eq!(t.c(&["SINTERCARD", "x", "a"]), numkeys);
    let args = err("ERR Number of keys can't be greater than number of args");
    assert_eq!(t.c(&["SINTERCARD", "2", "a"]), args);
    assert_eq!(t.c(&["SINTERCARD", "3", "a", "b"]), args);
    assert_eq!(t.c(&["SINTERCARD", "1", "a", "b"]), SYNTAX);
    assert_eq!(t.c(&["SINTERCARD", "1", "a", "LIMIT"]), SYNTAX);
    let limit = err("ERR LIMIT can't be negative");
    assert_eq!(t.c(&["SINTERCARD", "1", "a", "LIMIT", "-1"]), limit);
    assert_eq!(t.c(&["SINTERCARD", "1", "a", "LIMIT", "z"]), limit);
    // Argument errors come before types.
    assert_eq!(t.c(&["SET", "str", "v"]), "+OK\r\n");
    assert_eq!(t.c(&["SINTERCARD", "1", "str", "LIMIT", "-1"]), limit);
    assert_eq!(t.c(&["SINTERCARD", "1", "str"]), WRONGTYPE);
    assert_eq!(t.c(&["SINTERCARD", "2", "str", "nokey"]), WRONGTYPE);
    assert_eq!(t.c(&["SINTERCARD", "2", "a", "str"]), WRONGTYPE);
    assert_eq!(t.c(&["SINTERCARD", "1"]), wrong_args("sintercard"));
}

#[test]
fn store_forms() {
    let mut t = T::new();
    set(&mut t, "a", &["1", "2", "3", "x"]);
    set(&mut t, "b", &["3", "y", "2"]);
    assert_eq!(t.c(&["SINTERSTORE", "d", "a", "b"]), int(2));
    assert_eq!(t.c(&["SMEMBERS", "d"]), arr(&["3", "2"]));
    assert_eq!(t.c(&["SUNIONSTORE", "d", "a", "b"]), int(5));
    assert_eq!(t.c(&["SMEMBERS", "d"]), arr(&["1", "2", "3", "x", "y"]));
    assert_eq!(t.c(&["SDIFFSTORE", "d", "a", "b"]), int(2));
    assert_eq!(t.c(&["SMEMBERS", "d"]), arr(&["1", "x"]));
    // A destination of another type, with an expiry, is replaced by a set without one.
    assert_eq!(t.c(&["SET", "str", "v", "EX", "100"]), "+OK\r\n");
    assert_eq!(t.c(&["SUNIONSTORE", "str", "b"]), int(3));
    assert_eq!(t.c(&["TYPE", "str"]), "+set\r\n");
    assert_eq!(t.c(&["TTL", "str"]), int(-1));
    // The destination may be one of the sets read.
    assert_eq!(t.c(&["SUNIONSTORE", "a", "a", "b"]), int(5));
    assert_eq!(t.c(&["SMEMBERS", "a"]), arr(&["1", "2", "3", "x", "y"]));
    assert_eq!(t.c(&["SDIFFSTORE", "a", "a", "b"]), int(2));
    assert_eq!(t.c(&["SMEMBERS", "a"]), arr(&["1", "x"]));
    assert_eq!(t.c(&["SINTERSTORE", "b", "str", "b"]), int(3));
    assert_eq!(t.c(&["SMEMBERS", "b"]), arr(&["3", "y", "2"]));
    // An empty result deletes the destination, of any type.
    assert_eq!(t.c(&["SINTERSTORE", "d", "a", "b"]), int(0));
    assert_eq!(t.c(&["EXISTS", "d"]), int(0));
    assert_eq!(t.c(&["SET", "s", "v"]), "+OK\r\n");
    assert_eq!(t.c(&["SUNIONSTORE", "s", "nokey"]), int(0));
    assert_eq!(t.c(&["EXISTS", "s"]), int(0));
    assert_eq!(t.c(&["SDIFFSTORE", "a", "a", "a"]), int(0));
    assert_eq!(t.c(&["EXISTS", "a"]), int(0));
    assert_eq!(t.c(&["SINTERSTORE", "nokey", "nokey2"]), int(0));
    // Type errors leave the destination as it was; the destination's own type is not checked.
    assert_eq!(t.c(&["SET", "s", "v"]), "+OK\r\n");
    for cmd in ["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"] {
        assert_eq!(t.c(&[cmd, "b", "s", "nokey"]), WRONGTYPE);
        assert_eq!(t.c(&[cmd, "b", "nokey", "s"]), WRONGTYPE);
        assert_eq!(t.c(&[cmd, "b"]), wrong_args(&cmd.to_lowercase()));
    }
    assert_eq!(t.c(&["SMEMBERS", "b"]), arr(&["3", "y", "2"]));
    assert_eq!(t.c(&["SUNIONSTORE", "s", "b"]), int(3));
    assert_eq!(t.c(&["TYPE", "s"]), "+set\r\n");
}

#[test]
fn store_keeps_the_destinations_slot() {
    let mut t = T::new();
    set(&mut t, "a", &["1", "2"]);
    set(&mut t, "b", &["2", "3"]);
    assert_eq!(t.c(&["SET", "d", "v"]), "+OK\r\n");
    let slot = |t: &mut T, key: &str| t.st.find_key(0, key.as_bytes(), t.now);
    let (a, d) = (slot(&mut t, "a"), slot(&mut t, "d"));
    assert_eq!(t.c(&["SUNIONSTORE", "d", "a", "b"]), int(3));
    assert_eq!(slot(&mut t, "d"), d);
    assert_eq!(t.c(&["SUNIONSTORE", "a", "a", "b"]), int(3));
    assert_eq!(slot(&mut t, "a"), a);
    assert_eq!(t.c(&["SMEMBERS", "a"]), arr(&["1", "2", "3"]));
    assert_eq!(t.c(&["SISMEMBER", "a", "3"]), int(1));
}

#[test]
fn store_oom_changes_nothing() {
    // 8 + 1 per key, 8 + 1 per member: a {x y} and b {y z} take 54 bytes, their union as a
    // one-letter key 36.
    let mut t = T::sized(90, 100);
    set(&mut t, "a", &["x", "y"]);
    set(&mut t, "b", &["y", "z"]);
    assert_eq!(t.c(&["SET", "d", "vvvvv"]), "+OK\r\n");
    // A destination that is not read is deleted before the result is built.
    assert_eq!(t.c(&["SUNIONSTORE", "d", "a", "b"]), int(3));
    assert_eq!(t.st.used_memory(), 90);
    assert_eq!(t.c(&["DEL", "d"]), int(1));
    // One that is read is deleted after: the new set is built beside it.
    assert_eq!(t.c(&["SET", "e", "v"]), "+OK\r\n");
    assert_eq!(t.c(&["SUNIONSTORE", "a", "a", "b"]), OOM);
    assert_eq!(t.c(&["SUNIONSTORE", "d", "a", "b"]), OOM);
    assert_eq!(t.c(&["SINTERSTORE", "d", "a", "b"]), int(1));
    assert_eq!(t.c(&["SMEMBERS", "a"]), arr(&["x", "y"]));
    assert_eq!(t.c(&["EXISTS", "d"]), int(1));
    assert_eq!(t.c(&["DEL", "e", "d"]), int(2));
    assert_eq!(t.c(&["SUNIONSTORE", "a", "a", "b"]), int(3));
    assert_eq!(t.st.used_memory(), 27 + 36);
    // Slots bound the result too.
    let mut t = T::sized(1000, 7);
    set(&mut t, "a", &["x", "y"]);
    set(&mut t, "b", &["z"]);
    assert_eq!(t.c(&["SUNIONSTORE", "d", "a", "b"]), OOM);
    assert_eq!(t.c(&["SUNIONSTORE", "d", "b"]), int(1));
    assert_eq!(t.c(&["DBSIZE"]), int(3));
}

#[test]
fn sscan_small_set_in_one_reply() {
    let mut t = T::new();
    set(&mut t, "s", &["a", "bb", "ab"]);
    assert_eq!(
        t.c(&["SSCAN", "s", "0"]),
        format!("*2\r\n$1\r\n0\r\n{}", arr(&["a", "bb", "ab"]))
    );
    assert_eq!(
        t.c(&["SSCAN", "s", "0", "MATCH", "a*", "COUNT", "1"]),
        format!("*2\r\n$1\r\n0\r\n{}", arr(&["a", "ab"]))
    );
    assert_eq!(t.c(&["SSCAN", "nokey", "0"]), "*2\r\n$1\r\n0\r\n*0\r\n");
    // Options are read after the key: an absent key answers an empty scan regardless.
    assert_eq!(
        t.c(&["SSCAN", "nokey", "0", "COUNT", "x"]),
        "*2\r\n$1\r\n0\r\n*0\r\n"
    );
    assert_eq!(t.c(&["SSCAN", "s", "x"]), err("ERR invalid cursor"));
    assert_eq!(t.c(&["SSCAN", "s", "0", "COUNT", "x"]), NOT_INT);
    assert_eq!(t.c(&["SSCAN", "s", "0", "COUNT", "0"]), SYNTAX);
    assert_eq!(t.c(&["SSCAN", "s", "0", "COUNT"]), SYNTAX);
    assert_eq!(t.c(&["SSCAN", "s", "0", "TYPE", "set"]), SYNTAX);
    assert_eq!(t.c(&["SET", "str", "v"]), "+OK\r\n");
    assert_eq!(t.c(&["SSCAN", "str", "0"]), WRONGTYPE);
    assert_eq!(t.c(&["SSCAN", "s"]), wrong_args("sscan"));
}

#[test]
fn sscan_large_set_returns_every_member_once() {
    let mut t = T::new();
    let names: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
    for n in &names {
        assert_eq!(t.c(&["SADD", "s", n]), int(1));
        // Other keys' slots interleave with the set's.
        assert_eq!(t.c(&["SET", &format!("k{n}"), "v"]), "+OK\r\n");
    }
    let (mut cursor, mut seen, mut calls) = ("0".to_string(), Vec::new(), 0);
    loop {
        let (next, items) = scan_reply(&t.c(&["SSCAN", "s", &cursor, "COUNT", "7"]));
        assert!(items.len() <= 7);
        // Members that stay for the whole scan are returned; one removed meanwhile may be.
        if calls == 3 {
            assert_eq!(t.c(&["SREM", "s", "m299"]), int(1));
        }
        seen.extend(items);
        calls += 1;
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    assert!(calls > 1);
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no member twice");
    let expected: BTreeSet<&String> = names[..299].iter().collect();
    assert!(expected.is_subset(&unique));
    assert!(seen.iter().all(|m| m.starts_with('m')));
    // MATCH filters what is passed.
    let (mut cursor, mut matched) = ("0".to_string(), BTreeSet::new());
    loop {
        let (next, items) = scan_reply(&t.c(&["SSCAN", "s", &cursor, "MATCH", "m1?"]));
        matched.extend(items);
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    let ten: BTreeSet<String> = (10..20).map(|i| format!("m{i}")).collect();
    assert_eq!(matched, ten);
}

#[test]
fn srandmember_count_range() {
    let mut t = T::new();
    set(&mut t, "s", &["a"]);
    assert_eq!(
        t.c(&["SRANDMEMBER", "s", "-9223372036854775808"]),
        err(
            "ERR value is out of range, value must between -9223372036854775807 and \
             9223372036854775807"
        )
    );
    assert_eq!(t.c(&["SRANDMEMBER", "s", "-3"]), arr(&["a", "a", "a"]));
}

/// The members of set `key` as the store holds them.
fn members(t: &mut T, key: &str) -> BTreeSet<String> {
    let reply = t.c(&["SMEMBERS", key]);
    let mut lines = reply.split("\r\n").skip(1);
    let mut out = BTreeSet::new();
    while let (Some(_), Some(m)) = (lines.next(), lines.next()) {
        out.insert(m.to_string());
    }
    out
}

#[test]
fn operations_match_a_model_in_a_tight_arena() {
    // A small arena, so that blocks are compacted while results are built, and some writes
    // do not fit; the store's invariants are checked after every command.
    let mut t = T::sized(400, 120);
    let keys = ["k0", "k1", "k2", "k3"];
    let mut model: Vec<BTreeSet<String>> = vec![BTreeSet::new(); keys.len()];
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n) as usize
    };
    let (mut stored, mut refused) = (0, 0);
    for _ in 0..600 {
        let k = next(keys.len() as u64);
        match next(8) {
            0..=3 => {
                let m = format!("m{}", next(24));
                if t.c(&["SADD", keys[k], &m]) != OOM {
                    model[k].insert(m);
                }
            }
            4 => {
                let m = format!("m{}", next(24));
                t.c(&["SREM", keys[k], &m]);
                model[k].remove(&m);
            }
            _ => {
                let (a, b) = (next(keys.len() as u64), next(keys.len() as u64));
                let (sa, sb) = (&model[a], &model[b]);
                let (cmd, want): (&str, BTreeSet<String>) = match next(3) {
                    0 => ("SINTERSTORE", sa.intersection(sb).cloned().collect()),
                    1 => ("SUNIONSTORE", sa.union(sb).cloned().collect()),
                    _ => ("SDIFFSTORE", sa.difference(sb).cloned().collect()),
                };
                let read = cmd.replace("STORE", "");
                let mut sorted: Vec<String> = members_of_reply(&t.c(&[&read, keys[a], keys[b]]));
                sorted.sort();
                assert_eq!(sorted, want.iter().cloned().collect::<Vec<_>>(), "{read}");
                let reply = t.c(&[cmd, keys[k], keys[a], keys[b]]);
                if reply == OOM {
                    refused += 1;
                } else {
                    assert_eq!(reply, int(want.len() as i64), "{cmd}");
                    model[k] = want;
                    stored += 1;
                }
            }
        }
        for (key, set) in keys.iter().zip(&model) {
            assert_eq!(&members(&mut t, key), set, "{key}");
        }
    }
    assert!(
        stored > 50 && refused > 0,
        "{stored} stored, {refused} refused"
    );
}

/// The bulk strings of an array reply.
fn members_of_reply(reply: &str) -> Vec<String> {
    let mut lines = reply.split("\r\n").skip(1);
    let mut out = Vec::new();
    while let (Some(_), Some(m)) = (lines.next(), lines.next()) {
        out.push(m.to_string());
    }
    out
}

#[test]
fn sadd_counts_repeated_and_many_members_exactly() {
    let mut t = T::new();
    let mut args = vec!["SADD", "s"];
    args.extend(std::iter::repeat_n("m", 5000));
    assert_eq!(t.c(&args), int(1));
    // More distinct members than the plan's table holds exactly, each named twice, some
    // there already.
    let names: Vec<String> = (0..2 * crate::repeats::EXACT_KEYS)
        .map(|i| format!("n{i}"))
        .collect();
    assert_eq!(t.c(&["SADD", "s", "n0", "n1"]), int(2));
    let mut args = vec!["SADD", "s"];
    args.extend(names.iter().chain(&names).map(String::as_str));
    assert_eq!(t.c(&args), int(names.len() as i64 - 2));
    assert_eq!(t.c(&["SCARD", "s"]), int(names.len() as i64 + 1));
}
