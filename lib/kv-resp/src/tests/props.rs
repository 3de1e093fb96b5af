//! Property tests: no input panics; the store against a `HashMap` model of every type
//! (replies, memory accounting, OOM atomicity); no leak after FLUSHALL or after deleting every
//! key.

use super::*;
use proptest::prelude::*;
use std::collections::{HashMap, VecDeque};
use std::string::{String, ToString};

const HDR: usize = 8;

#[derive(Debug, Clone)]
enum Op {
    Set(u8, String),
    Get(u8),
    Del(u8),
    Incr(u8),
    HSet(u8, u8, String),
    HGet(u8, u8),
    HDel(u8, u8),
    /// `LPUSH` (true) or `RPUSH` of the elements.
    Push(bool, u8, Vec<String>),
    /// `LPOP` (true) or `RPOP`, with the optional count.
    Pop(bool, u8, Option<u8>),
    LRange(u8, i8, i8),
    LSet(u8, i8, String),
    LRem(u8, i8, String),
    SAdd(u8, Vec<u8>),
    SRem(u8, u8),
    /// `SPOP` without a count: the member is the store's pick, checked to be a member.
    SPop(u8),
    SMembers(u8),
    ZAdd(u8, ZFlag, bool, Vec<(Score, u8)>),
    ZIncrBy(u8, Score, u8),
    /// `ZPOPMIN` (true) or `ZPOPMAX`, with the optional count.
    ZPop(bool, u8, Option<u8>),
    ZRange(u8),
    ZRem(u8, u8),
    /// `XADD` with `*` (None) or an explicit `ms-seq` ID, and field-value pairs.
    XAdd(u8, Option<(u8, u8)>, Vec<(u8, String)>),
    XRange(u8),
    Type(u8),
    Append(u8, String),
    Rename(u8, u8),
    /// `COPY a b`, with `REPLACE` or not.
    Copy(u8, u8, bool),
    /// `SETBIT key bit value`.
    SetBit(u8, u8, bool),
}

/// `ZADD`'s exclusive flags (CH is a separate bool).
#[derive(Debug, Clone, Copy, PartialEq)]
enum ZFlag {
    None,
    Nx,
    Xx,
    Gt,
    Lt,
}

/// A score from a small set that formats the same in Redis and in `f64`'s `Display`.
#[derive(Debug, Clone, Copy)]
struct Score(f64);

impl Score {
    fn text(self) -> String {
        if self.0.is_infinite() {
            (if self.0 > 0.0 { "inf" } else { "-inf" }).into()
        } else {
            format!("{}", self.0)
        }
    }
}

fn score() -> impl Strategy<Value = Score> {
    prop_oneof![
        (-4i32..4).prop_map(|n| Score(f64::from(n) / 2.0)),
        Just(Score(f64::INFINITY)),
        Just(Score(f64::NEG_INFINITY)),
    ]
}

fn elem() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("".to_string()),
        (0usize..20).prop_map(|n| "e".repeat(n)),
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        (-1000i64..1000).prop_map(|n| n.to_string()),
        Just(i64::MAX.to_string()),
        Just((i64::MAX - 1).to_string()),
        Just("-0".to_string()),
        Just("007".to_string()),
        (0usize..60).prop_map(|n| "x".repeat(n)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..6;
    let f = 0u8..4;
    prop_oneof![
        3 => (k.clone(), value()).prop_map(|(k, v)| Op::Set(k, v)),
        2 => k.clone().prop_map(Op::Get),
        1 => k.clone().prop_map(Op::Del),
        2 => k.clone().prop_map(Op::Incr),
        3 => (k.clone(), f.clone(), value()).prop_map(|(k, f, v)| Op::HSet(k, f, v)),
        2 => (k.clone(), f.clone()).prop_map(|(k, f)| Op::HGet(k, f)),
        1 => (k.clone(), f.clone()).prop_map(|(k, f)| Op::HDel(k, f)),
        3 => (any::<bool>(), k.clone(), proptest::collection::vec(elem(), 1..4))
            .prop_map(|(l, k, v)| Op::Push(l, k, v)),
        2 => (any::<bool>(), k.clone(), proptest::option::of(0u8..4))
            .prop_map(|(l, k, n)| Op::Pop(l, k, n)),
        1 => (k.clone(), -4i8..4, -4i8..4).prop_map(|(k, a, b)| Op::LRange(k, a, b)),
        1 => (k.clone(), -3i8..3, elem()).prop_map(|(k, i, v)| Op::LSet(k, i, v)),
        1 => (k.clone(), -2i8..3, elem()).prop_map(|(k, n, v)| Op::LRem(k, n, v)),
        3 => (k.clone(), proptest::collection::vec(f.clone(), 1..4))
            .prop_map(|(k, m)| Op::SAdd(k, m)),
        1 => (k.clone(), f.clone()).prop_map(|(k, m)| Op::SRem(k, m)),
        1 => k.clone().prop_map(Op::SPop),
        1 => k.clone().prop_map(Op::SMembers),
        3 => (
            k.clone(),
            prop_oneof![
                Just(ZFlag::None),
                Just(ZFlag::None),
                Just(ZFlag::Nx),
                Just(ZFlag::Xx),
                Just(ZFlag::Gt),
                Just(ZFlag::Lt)
            ],
            any::<bool>(),
            proptest::collection::vec((score(), f.clone()), 1..4),
        )
            .prop_map(|(k, fl, ch, e)| Op::ZAdd(k, fl, ch, e)),
        1 => (k.clone(), score(), f.clone()).prop_map(|(k, s, m)| Op::ZIncrBy(k, s, m)),
        2 => (any::<bool>(), k.clone(), proptest::option::of(0u8..3))
            .prop_map(|(min, k, n)| Op::ZPop(min, k, n)),
        1 => k.clone().prop_map(Op::ZRange),
        1 => (k.clone(), f.clone()).prop_map(|(k, m)| Op::ZRem(k, m)),
        2 => (
            k.clone(),
            proptest::option::of((0u8..3, 0u8..3)),
            proptest::collection::vec((f, elem()), 1..3),
        )
            .prop_map(|(k, id, fs)| Op::XAdd(k, id, fs)),
        1 => k.clone().prop_map(Op::XRange),
        1 => k.clone().prop_map(Op::Type),
        2 => (k.clone(), elem()).prop_map(|(k, v)| Op::Append(k, v)),
        1 => (k.clone(), k.clone()).prop_map(|(a, b)| Op::Rename(a, b)),
        1 => (k.clone(), k.clone(), any::<bool>()).prop_map(|(a, b, r)| Op::Copy(a, b, r)),
        // Never a byte's top bit, so that values stay ASCII text.
        1 => (k, 0u8..5, 1u8..8, any::<bool>())
            .prop_map(|(k, byte, b, v)| Op::SetBit(k, byte * 8 + b, v)),
    ]
}

#[derive(Debug, Clone)]
enum Val {
    Str(String),
    Hash(Vec<(String, String)>),
    List(VecDeque<String>),
    /// Members in insertion order.
    Set(Vec<String>),
    /// Members in (score, member) order.
    ZSet(Vec<(f64, String)>),
    /// Entries in ID order: ID, then field names and values.
    Stream(Vec<((u64, u64), Vec<String>)>),
}

impl Val {
    fn type_name(&self) -> &'static str {
        match self {
            Val::Str(_) => "string",
            Val::Hash(_) => "hash",
            Val::List(_) => "list",
            Val::Set(_) => "set",
            Val::ZSet(_) => "zset",
            Val::Stream(_) => "stream",
        }
    }
}

/// The reference: Redis semantics over a `HashMap`, with the crate's exact memory accounting.
struct Model {
    map: HashMap<String, Val>,
    cap: usize,
    slots: usize,
}

const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
const OOM: &str = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";

fn bulk(s: &str) -> String {
    format!("${}\r\n{s}\r\n", s.len())
}

/// A RESP array of bulk strings.
fn arr<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let items: Vec<S> = items.into_iter().collect();
    let mut r = format!("*{}\r\n", items.len());
    for i in &items {
        r += &bulk(i.as_ref());
    }
    r
}

/// A stream's entries as `XRANGE` replies them.
fn entries(es: &[((u64, u64), Vec<String>)]) -> String {
    let mut r = format!("*{}\r\n", es.len());
    for ((ms, seq), fs) in es {
        r += "*2\r\n";
        r += &bulk(&format!("{ms}-{seq}"));
        r += &arr(fs);
    }
    r
}

/// A sorted set's members with their scores, as `ZRANGE ... WITHSCORES` replies them.
fn with_scores<'a>(ms: impl IntoIterator<Item = &'a (f64, String)>) -> String {
    arr(ms
        .into_iter()
        .flat_map(|(s, m)| [m.clone(), Score(*s).text()]))
}

/// Redis's clamping of a rank range to a collection of `len`: the ranks, or none.
fn rank_range(start: i64, stop: i64, len: usize) -> std::ops::Range<usize> {
    let len = len as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + len
    } else {
        stop.min(len - 1)
    };
    if start > stop || start >= len {
        0..0
    } else {
        start as usize..stop as usize + 1
    }
}

/// Inserts (score, member) into a sorted member list at its place.
fn zinsert(zs: &mut Vec<(f64, String)>, score: f64, m: String) {
    let at = zs
        .iter()
        .position(|(s, om)| (*s, om.as_str()) > (score, m.as_str()))
        .unwrap_or(zs.len());
    zs.insert(at, (score, m));
}

fn strict_int(s: &str) -> Option<i64> {
    s.parse::<i64>().ok().filter(|n| n.to_string() == s)
}

impl Model {
    fn footprint(k: &str, v: &Val) -> (usize, usize) {
        match v {
            Val::Str(s) => (HDR + k.len() + s.len(), 1),
            Val::Hash(fs) => fs.iter().fold((HDR + k.len(), 1), |(b, n), (f, v)| {
                (b + HDR + f.len() + v.len(), n + 1)
            }),
            Val::List(es) => (
                HDR + k.len() + es.iter().map(|e| HDR + e.len()).sum::<usize>(),
                1 + es.len(),
            ),
            Val::Set(ms) => (
                HDR + k.len() + ms.iter().map(|m| HDR + m.len()).sum::<usize>(),
                1 + ms.len(),
            ),
            Val::ZSet(ms) => (
                HDR + k.len() + ms.iter().map(|(_, m)| HDR + m.len()).sum::<usize>(),
                1 + ms.len(),
            ),
            Val::Stream(es) => (
                HDR + k.len()
                    + es.iter()
                        .map(|(_, fs)| HDR + 16 + fs.iter().map(|f| 4 + f.len()).sum::<usize>())
                        .sum::<usize>(),
                1 + es.len(),
            ),
        }
    }

    /// Removes key `k` if its collection is empty.
    fn drop_if_empty(&mut self, k: &str) {
        let empty = match self.map.get(k) {
            Some(Val::List(v)) => v.is_empty(),
            Some(Val::Set(v)) => v.is_empty(),
            Some(Val::ZSet(v)) => v.is_empty(),
            _ => false,
        };
        if empty {
            self.map.remove(k);
        }
    }
    fn used(&self) -> (usize, usize) {
        self.map.iter().fold((0, 0), |(b, n), (k, v)| {
            let (fb, fn_) = Self::footprint(k, v);
            (b + fb, n + fn_)
        })
    }
    /// Whether replacing `freed` by `taken` (bytes, slots) fits.
    fn fits(&self, freed: (usize, usize), taken: (usize, usize)) -> bool {
        let (b, n) = self.used();
        b - freed.0 + taken.0 <= self.cap && n - freed.1 + taken.1 <= self.slots
    }
    fn set_str(&mut self, k: &str, v: String) -> bool {
        let freed = self
            .map
            .get(k)
            .map_or((0, 0), |old| Self::footprint(k, old));
        if !self.fits(freed, (HDR + k.len() + v.len(), 1)) {
            return false;
        }
        self.map.insert(k.to_string(), Val::Str(v));
        true
    }

    fn apply(&mut self, op: &Op) -> (Vec<String>, String) {
        let key = |k: &u8| format!("k{k}");
        let field = |f: &u8| format!("f{f}");
        match op {
            Op::Set(k, v) => {
                let k = key(k);
                let r = if self.set_str(&k, v.clone()) {
                    "+OK\r\n".into()
                } else {
                    OOM.into()
                };
                (vec!["SET".into(), k, v.clone()], r)
            }
            Op::Get(k) => {
                let k = key(k);
                let r = match self.map.get(&k) {
                    None => "$-1\r\n".into(),
                    Some(Val::Str(s)) => bulk(s),
                    Some(_) => WRONGTYPE.into(),
                };
                (vec!["GET".into(), k], r)
            }
            Op::Del(k) => {
                let k = key(k);
                let r = format!(":{}\r\n", u8::from(self.map.remove(&k).is_some()));
                (vec!["DEL".into(), k], r)
            }
            Op::Incr(k) => {
                let k = key(k);
                let r = match self.map.get(&k) {
                    Some(o) if !matches!(o, Val::Str(_)) => WRONGTYPE.into(),
                    old => {
                        let old = match old {
                            Some(Val::Str(s)) => strict_int(s),
                            _ => Some(0),
                        };
                        match old.map(|o| o.checked_add(1)) {
                            None => "-ERR value is not an integer or out of range\r\n".into(),
                            Some(None) => "-ERR increment or decrement would overflow\r\n".into(),
                            Some(Some(n)) => {
                                if self.set_str(&k, n.to_string()) {
                                    format!(":{n}\r\n")
                                } else {
                                    OOM.into()
                                }
                            }
                        }
                    }
                };
                (vec!["INCR".into(), k], r)
            }
            Op::HSet(k, f, v) => {
                let (k, f) = (key(k), field(f));
                let args = vec!["HSET".into(), k.clone(), f.clone(), v.clone()];
                let new_field = HDR + f.len() + v.len();
                let r = match self.map.get(&k) {
                    Some(o) if !matches!(o, Val::Hash(_)) => WRONGTYPE.into(),
                    None => {
                        if self.fits((0, 0), (HDR + k.len() + new_field, 2)) {
                            self.map.insert(k, Val::Hash(vec![(f, v.clone())]));
                            ":1\r\n".into()
                        } else {
                            OOM.into()
                        }
                    }
                    Some(_) => {
                        let Some(Val::Hash(fs)) = self.map.get(&k) else {
                            unreachable!()
                        };
                        let old = fs
                            .iter()
                            .find(|(of, _)| *of == f)
                            .map(|(of, ov)| HDR + of.len() + ov.len());
                        let ok = match old {
                            Some(old) => self.fits((old, 0), (new_field, 0)),
                            None => self.fits((0, 0), (new_field, 1)),
                        };
                        if !ok {
                            OOM.into()
                        } else {
                            let Some(Val::Hash(fs)) = self.map.get_mut(&k) else {
                                unreachable!()
                            };
                            match fs.iter_mut().find(|(of, _)| *of == f) {
                                Some(slot) => {
                                    slot.1 = v.clone();
                                    ":0\r\n".into()
                                }
                                None => {
                                    fs.push((f, v.clone()));
                                    ":1\r\n".into()
                                }
                            }
                        }
                    }
                };
                (args, r)
            }
            Op::HGet(k, f) => {
                let (k, f) = (key(k), field(f));
                let r = match self.map.get(&k) {
                    None => "$-1\r\n".into(),
                    Some(Val::Hash(fs)) => fs
                        .iter()
                        .find(|(of, _)| *of == f)
                        .map_or("$-1\r\n".into(), |(_, v)| bulk(v)),
                    Some(_) => WRONGTYPE.into(),
                };
                (vec!["HGET".into(), k, f], r)
            }
            Op::HDel(k, f) => {
                let (k, f) = (key(k), field(f));
                let r = match self.map.get_mut(&k) {
                    None => ":0\r\n".into(),
                    Some(Val::Hash(fs)) => {
                        let before = fs.len();
                        fs.retain(|(of, _)| *of != f);
                        let n = before - fs.len();
                        if fs.is_empty() {
                            self.map.remove(&k);
                        }
                        format!(":{n}\r\n")
                    }
                    Some(_) => WRONGTYPE.into(),
                };
                (vec!["HDEL".into(), k, f], r)
            }
            _ => self.apply_collection(op),
        }
    }
}

/// What the model expects of `SPOP` without a count: the store picks the member.
const SPOP_PICKS: &str = "(the store's pick)";

impl Model {
    /// The commands of the collection types (`apply`'s other half).
    fn apply_collection(&mut self, op: &Op) -> (Vec<String>, String) {
        let key = |k: &u8| format!("k{k}");
        let member = |m: &u8| format!("m{m}");
        match op {
            Op::Push(left, k, es) => {
                let k = key(k);
                let mut args = vec![(if *left { "LPUSH" } else { "RPUSH" }).into(), k.clone()];
                args.extend(es.iter().cloned());
                let r = match self.map.get(&k) {
                    Some(o) if !matches!(o, Val::List(_)) => WRONGTYPE.into(),
                    old => {
                        let key_cost = if old.is_none() {
                            (HDR + k.len(), 1)
                        } else {
                            (0, 0)
                        };
                        let taken = es
                            .iter()
                            .fold(key_cost, |(b, n), e| (b + HDR + e.len(), n + 1));
                        if !self.fits((0, 0), taken) {
                            OOM.into()
                        } else {
                            let entry = self.map.entry(k).or_insert(Val::List(VecDeque::new()));
                            let Val::List(l) = entry else { unreachable!() };
                            for e in es {
                                if *left {
                                    l.push_front(e.clone());
                                } else {
                                    l.push_back(e.clone());
                                }
                            }
                            format!(":{}\r\n", l.len())
                        }
                    }
                };
                (args, r)
            }
            Op::Pop(left, k, n) => {
                let k = key(k);
                let mut args = vec![(if *left { "LPOP" } else { "RPOP" }).into(), k.clone()];
                args.extend(n.map(|n| n.to_string()));
                let r = match self.map.get_mut(&k) {
                    None if n.is_some() => "*-1\r\n".into(),
                    None => "$-1\r\n".into(),
                    Some(Val::List(l)) => {
                        let mut pop = || if *left { l.pop_front() } else { l.pop_back() };
                        match n {
                            None => bulk(&pop().unwrap_or_default()),
                            Some(n) => arr((0..*n).map_while(|_| pop()).collect::<Vec<_>>()),
                        }
                    }
                    Some(_) => WRONGTYPE.into(),
                };
                self.drop_if_empty(&k);
                (args, r)
            }
            Op::LRange(k, a, b) => {
                let k = key(k);
                let args = vec!["LRANGE".into(), k.clone(), a.to_string(), b.to_string()];
                let r = match self.map.get(&k) {
                    None => "*0\r\n".into(),
                    Some(Val::List(l)) => {
                        arr(rank_range(i64::from(*a), i64::from(*b), l.len()).map(|i| &l[i]))
                    }
                    Some(_) => WRONGTYPE.into(),
                };
                (args, r)
            }
            Op::LSet(k, i, v) => {
                let k = key(k);
                let args = vec!["LSET".into(), k.clone(), i.to_string(), v.clone()];
                let r = match self.map.get(&k) {
                    None => "-ERR no such key\r\n".into(),
                    Some(Val::List(l)) => {
                        let len = l.len() as i64;
                        let at = if *i < 0 {
                            len + i64::from(*i)
                        } else {
                            i64::from(*i)
                        };
                        if at < 0 || at >= len {
                            "-ERR index out of range\r\n".into()
                        } else if !self.fits((HDR + l[at as usize].len(), 0), (HDR + v.len(), 0)) {
                            OOM.into()
                        } else {
                            let Some(Val::List(l)) = self.map.get_mut(&k) else {
                                unreachable!()
                            };
                            l[at as usize] = v.clone();
                            "+OK\r\n".into()
                        }
                    }
                    Some(_) => WRONGTYPE.into(),
                };
                (args, r)
            }
            Op::LRem(k, n, v) => {
                let k = key(k);
                let args = vec!["LREM".into(), k.clone(), n.to_string(), v.clone()];
                let r = match self.map.get_mut(&k) {
                    None => ":0\r\n".into(),
                    Some(Val::List(l)) => {
                        let max = if *n == 0 {
                            usize::MAX
                        } else {
                            n.unsigned_abs() as usize
                        };
                        let mut order: Vec<usize> = (0..l.len()).collect();
                        if *n < 0 {
                            order.reverse();
                        }
                        let hits: Vec<usize> = order
                            .into_iter()
                            .filter(|&i| l[i] == *v)
                            .take(max)
                            .collect();
                        let mut i = 0;
                        l.retain(|_| {
                            i += 1;
                            !hits.contains(&(i - 1))
                        });
                        format!(":{}\r\n", hits.len())
                    }
                    Some(_) => WRONGTYPE.into(),
                };
                self.drop_if_empty(&k);
                (args, r)
            }
            Op::SAdd(k, ms) => {
                let k = key(k);
                let ms: Vec<String> = ms.iter().map(member).collect();
                let mut args = vec!["SADD".into(), k.clone()];
                args.extend(ms.iter().cloned());
                let r = match self.map.get(&k) {
                    Some(o) if !matches!(o, Val::Set(_)) => WRONGTYPE.into(),
                    old => {
                        let mut new: Vec<String> = Vec::new();
                        for m in &ms {
                            let present = matches!(old, Some(Val::Set(s)) if s.contains(m));
                            if !present && !new.contains(m) {
                                new.push(m.clone());
                            }
                        }
                        let key_cost = if old.is_none() {
                            (HDR + k.len(), 1)
                        } else {
                            (0, 0)
                        };
                        let taken = new
                            .iter()
                            .fold(key_cost, |(b, n), m| (b + HDR + m.len(), n + 1));
                        if !self.fits((0, 0), taken) {
                            OOM.into()
                        } else {
                            let entry = self.map.entry(k).or_insert(Val::Set(Vec::new()));
                            let Val::Set(set) = entry else { unreachable!() };
                            let n = new.len();
                            set.extend(new);
                            format!(":{n}\r\n")
                        }
                    }
                };
                (args, r)
            }
            Op::SRem(k, m) => {
                let (k, m) = (key(k), member(m));
                let args = vec!["SREM".into(), k.clone(), m.clone()];
                let r = match self.map.get_mut(&k) {
                    None => ":0\r\n".into(),
                    Some(Val::Set(set)) => {
                        let before = set.len();
                        set.retain(|x| *x != m);
                        format!(":{}\r\n", before - set.len())
                    }
                    Some(_) => WRONGTYPE.into(),
                };
                self.drop_if_empty(&k);
                (args, r)
            }
            Op::SPop(k) => (vec!["SPOP".into(), key(k)], SPOP_PICKS.into()),
            Op::SMembers(k) => {
                let k = key(k);
                let r = match self.map.get(&k) {
                    None => "*0\r\n".into(),
                    Some(Val::Set(set)) => arr(set),
                    Some(_) => WRONGTYPE.into(),
                };
                (vec!["SMEMBERS".into(), k], r)
            }
            Op::ZAdd(k, flag, ch, es) => {
                let k = key(k);
                let es: Vec<(f64, String)> = es.iter().map(|(s, m)| (s.0, member(m))).collect();
                let mut args = vec!["ZADD".into(), k.clone()];
                match flag {
                    ZFlag::None => {}
                    ZFlag::Nx => args.push("NX".into()),
                    ZFlag::Xx => args.push("XX".into()),
                    ZFlag::Gt => args.push("GT".into()),
                    ZFlag::Lt => args.push("LT".into()),
                }
                if *ch {
                    args.push("CH".into());
                }
                for (s, m) in &es {
                    args.push(Score(*s).text());
                    args.push(m.clone());
                }
                let r = match self.map.get(&k) {
                    Some(o) if !matches!(o, Val::ZSet(_)) => WRONGTYPE.into(),
                    None if *flag == ZFlag::Xx => ":0\r\n".into(),
                    old => {
                        let mut new: Vec<&String> = Vec::new();
                        if *flag != ZFlag::Xx {
                            for (_, m) in &es {
                                let present = matches!(old, Some(Val::ZSet(z)) if z.iter().any(|(_, x)| x == m));
                                if !present && !new.contains(&m) {
                                    new.push(m);
                                }
                            }
                        }
                        let key_cost = if old.is_none() {
                            (HDR + k.len(), 1)
                        } else {
                            (0, 0)
                        };
                        let taken = new
                            .iter()
                            .fold(key_cost, |(b, n), m| (b + HDR + m.len(), n + 1));
                        if !self.fits((0, 0), taken) {
                            OOM.into()
                        } else {
                            let entry = self.map.entry(k).or_insert(Val::ZSet(Vec::new()));
                            let Val::ZSet(z) = entry else { unreachable!() };
                            let (mut added, mut updated) = (0, 0);
                            for (s, m) in es {
                                match z.iter().position(|(_, x)| *x == m) {
                                    Some(i) => {
                                        let cur = z[i].0;
                                        let skip = match flag {
                                            ZFlag::Nx => true,
                                            ZFlag::Gt => s <= cur,
                                            ZFlag::Lt => s >= cur,
                                            _ => false,
                                        };
                                        if !skip && s != cur {
                                            z.remove(i);
                                            zinsert(z, s, m);
                                            updated += 1;
                                        }
                                    }
                                    None if *flag == ZFlag::Xx => {}
                                    None => {
                                        zinsert(z, s, m);
                                        added += 1;
                                    }
                                }
                            }
                            format!(":{}\r\n", if *ch { added + updated } else { added })
                        }
                    }
                };
                (args, r)
            }
            Op::ZIncrBy(k, inc, m) => {
                let (k, m) = (key(k), member(m));
                let args = vec!["ZINCRBY".into(), k.clone(), inc.text(), m.clone()];
                let r = match self.map.get(&k) {
                    Some(o) if !matches!(o, Val::ZSet(_)) => WRONGTYPE.into(),
                    old => {
                        let cur = match old {
                            Some(Val::ZSet(z)) => z.iter().find(|(_, x)| *x == m).map(|e| e.0),
                            _ => None,
                        };
                        let new = cur.unwrap_or(0.0) + inc.0;
                        let key_cost = if old.is_none() {
                            (HDR + k.len(), 1)
                        } else {
                            (0, 0)
                        };
                        if new.is_nan() {
                            "-ERR resulting score is not a number (NaN)\r\n".into()
                        } else if cur.is_none()
                            && !self.fits((0, 0), (key_cost.0 + HDR + m.len(), key_cost.1 + 1))
                        {
                            OOM.into()
                        } else {
                            let entry = self.map.entry(k).or_insert(Val::ZSet(Vec::new()));
                            let Val::ZSet(z) = entry else { unreachable!() };
                            z.retain(|(_, x)| *x != m);
                            zinsert(z, new, m);
                            bulk(&Score(new).text())
                        }
                    }
                };
                (args, r)
            }
            Op::ZPop(min, k, n) => {
                let k = key(k);
                let mut args = vec![(if *min { "ZPOPMIN" } else { "ZPOPMAX" }).into(), k.clone()];
                args.extend(n.map(|n| n.to_string()));
                let r = match self.map.get_mut(&k) {
                    None => "*0\r\n".into(),
                    Some(Val::ZSet(z)) => {
                        let take = usize::from(n.unwrap_or(1)).min(z.len());
                        let popped: Vec<(f64, String)> = if *min {
                            z.drain(..take).collect()
                        } else {
                            z.drain(z.len() - take..).rev().collect()
                        };
                        with_scores(&popped)
                    }
                    Some(_) => WRONGTYPE.into(),
                };
                self.drop_if_empty(&k);
                (args, r)
            }
            Op::ZRange(k) => {
                let k = key(k);
                let args = vec![
                    "ZRANGE".into(),
                    k.clone(),
                    "0".into(),
                    "-1".into(),
                    "WITHSCORES".into(),
                ];
                let r = match self.map.get(&k) {
                    None => "*0\r\n".into(),
                    Some(Val::ZSet(z)) => with_scores(z.iter()),
                    Some(_) => WRONGTYPE.into(),
                };
                (args, r)
            }
            Op::ZRem(k, m) => {
                let (k, m) = (key(k), member(m));
                let args = vec!["ZREM".into(), k.clone(), m.clone()];
                let r = match self.map.get_mut(&k) {
                    None => ":0\r\n".into(),
                    Some(Val::ZSet(z)) => {
                        let before = z.len();
                        z.retain(|(_, x)| *x != m);
                        format!(":{}\r\n", before - z.len())
                    }
                    Some(_) => WRONGTYPE.into(),
                };
                self.drop_if_empty(&k);
                (args, r)
            }
            Op::XAdd(k, id, fs) => {
                let k = key(k);
                let fields: Vec<String> = fs
                    .iter()
                    .flat_map(|(f, v)| [format!("f{f}"), v.clone()])
                    .collect();
                let id_text = id.map_or("*".into(), |(ms, seq)| format!("{ms}-{seq}"));
                let mut args = vec!["XADD".into(), k.clone(), id_text];
                args.extend(fields.iter().cloned());
                let last = match self.map.get(&k) {
                    Some(Val::Stream(es)) => es.last().map_or((0, 0), |e| e.0),
                    _ => (0, 0),
                };
                // The caller's clock is 0: `*` takes the last ID's successor.
                let new = id.map_or((last.0, last.1 + 1), |(ms, seq)| {
                    (u64::from(ms), u64::from(seq))
                });
                let r = match self.map.get(&k) {
                    _ if new == (0, 0) => {
                        "-ERR The ID specified in XADD must be greater than 0-0\r\n".into()
                    }
                    Some(o) if !matches!(o, Val::Stream(_)) => WRONGTYPE.into(),
                    _ if new <= last => "-ERR The ID specified in XADD is equal or smaller \
                                         than the target stream top item\r\n"
                        .into(),
                    old => {
                        let key_cost = if old.is_none() { HDR + k.len() } else { 0 };
                        let entry = HDR + 16 + fields.iter().map(|f| 4 + f.len()).sum::<usize>();
                        let slots = 1 + usize::from(old.is_none());
                        if !self.fits((0, 0), (key_cost + entry, slots)) {
                            OOM.into()
                        } else {
                            let e = self.map.entry(k).or_insert(Val::Stream(Vec::new()));
                            let Val::Stream(es) = e else { unreachable!() };
                            es.push((new, fields));
                            bulk(&format!("{}-{}", new.0, new.1))
                        }
                    }
                };
                (args, r)
            }
            Op::XRange(k) => {
                let k = key(k);
                let args = vec!["XRANGE".into(), k.clone(), "-".into(), "+".into()];
                let r = match self.map.get(&k) {
                    None => "*0\r\n".into(),
                    Some(Val::Stream(es)) => entries(es),
                    Some(_) => WRONGTYPE.into(),
                };
                (args, r)
            }
            Op::Type(k) => {
                let k = key(k);
                let t = self.map.get(&k).map_or("none", Val::type_name);
                (vec!["TYPE".into(), k], format!("+{t}\r\n"))
            }
            Op::Append(k, v) => {
                let k = key(k);
                let args = vec!["APPEND".into(), k.clone(), v.clone()];
                let r = match self.map.get(&k) {
                    Some(Val::Str(old)) => {
                        let new = format!("{old}{v}");
                        // The longer value is written beside the old one.
                        if new.len() > old.len()
                            && !self.fits((0, 0), (HDR + k.len() + new.len(), 0))
                        {
                            OOM.into()
                        } else {
                            let n = new.len();
                            self.map.insert(k, Val::Str(new));
                            format!(":{n}\r\n")
                        }
                    }
                    Some(_) => WRONGTYPE.into(),
                    None => {
                        if self.fits((0, 0), (HDR + k.len() + v.len(), 1)) {
                            self.map.insert(k, Val::Str(v.clone()));
                            format!(":{}\r\n", v.len())
                        } else {
                            OOM.into()
                        }
                    }
                };
                (args, r)
            }
            Op::Rename(a, b) => {
                let (a, b) = (key(a), key(b));
                let args = vec!["RENAME".into(), a.clone(), b.clone()];
                let r = match self.map.get(&a) {
                    None => "-ERR no such key\r\n".into(),
                    Some(_) if a == b => "+OK\r\n".into(),
                    Some(v) => {
                        let vlen = match v {
                            Val::Str(s) => s.len(),
                            _ => 0,
                        };
                        let freed = self.map.get(&b).map_or((0, 0), |d| Self::footprint(&b, d));
                        // The renamed key's new block is written beside its old one.
                        if self.fits(freed, (HDR + b.len() + vlen, 0)) {
                            let v = self.map.remove(&a).unwrap_or(Val::Str(String::new()));
                            self.map.insert(b, v);
                            "+OK\r\n".into()
                        } else {
                            OOM.into()
                        }
                    }
                };
                (args, r)
            }
            _ => self.apply_keyspace(op),
        }
    }

    /// Checks the store's reply `got` to an `SPOP` of `k` and applies it.
    fn spop(&mut self, k: &str, got: &str) -> Result<(), TestCaseError> {
        match self.map.get_mut(k) {
            None => prop_assert_eq!(got, "$-1\r\n"),
            Some(Val::Set(set)) => {
                let m = got.split("\r\n").nth(1).unwrap_or("").to_string();
                prop_assert_eq!(got, bulk(&m));
                let at = set.iter().position(|x| *x == m);
                prop_assert!(at.is_some(), "SPOP returned {:?}, not a member", m);
                set.remove(at.unwrap_or(0));
                self.drop_if_empty(k);
            }
            Some(_) => prop_assert_eq!(got, WRONGTYPE),
        }
        Ok(())
    }
}

impl Model {
    /// `COPY` and `SETBIT` (`apply_collection`'s fallback).
    fn apply_keyspace(&mut self, op: &Op) -> (Vec<String>, String) {
        let key = |k: &u8| format!("k{k}");
        match op {
            Op::Copy(a, b, replace) => {
                let (a, b) = (key(a), key(b));
                let mut args = vec!["COPY".into(), a.clone(), b.clone()];
                if *replace {
                    args.push("REPLACE".into());
                }
                let r = match self.map.get(&a) {
                    _ if a == b => "-ERR source and destination objects are the same\r\n".into(),
                    None => ":0\r\n".into(),
                    Some(_) if self.map.contains_key(&b) && !replace => ":0\r\n".into(),
                    Some(v) => {
                        let freed = self.map.get(&b).map_or((0, 0), |d| Self::footprint(&b, d));
                        if self.fits(freed, Self::footprint(&b, v)) {
                            let v = v.clone();
                            self.map.insert(b, v);
                            ":1\r\n".into()
                        } else {
                            OOM.into()
                        }
                    }
                };
                (args, r)
            }
            Op::SetBit(k, bit, on) => {
                let k = key(k);
                let args = vec![
                    "SETBIT".into(),
                    k.clone(),
                    bit.to_string(),
                    u8::from(*on).to_string(),
                ];
                let (byte, mask) = (usize::from(*bit / 8), 0x80u8 >> (bit % 8));
                let r = match self.map.get(&k) {
                    None | Some(Val::Str(_)) => {
                        let old = match self.map.get(&k) {
                            Some(Val::Str(v)) => Some(v.clone().into_bytes()),
                            _ => None,
                        };
                        let mut bytes = old.clone().unwrap_or_default();
                        let was = bytes.get(byte).is_some_and(|b| b & mask != 0);
                        // A string that grows is written beside the old one.
                        let grows = old.is_none() || byte >= bytes.len();
                        bytes.resize(bytes.len().max(byte + 1), 0);
                        let slot = usize::from(old.is_none());
                        if grows && !self.fits((0, 0), (HDR + k.len() + bytes.len(), slot)) {
                            OOM.into()
                        } else {
                            bytes[byte] = if *on {
                                bytes[byte] | mask
                            } else {
                                bytes[byte] & !mask
                            };
                            // The ops never touch a byte's top bit: the value stays ASCII.
                            let text = String::from_utf8(bytes).unwrap_or_default();
                            self.map.insert(k, Val::Str(text));
                            format!(":{}\r\n", u8::from(was))
                        }
                    }
                    Some(_) => WRONGTYPE.into(),
                };
                (args, r)
            }
            _ => unreachable!("the other commands are apply's and apply_collection's"),
        }
    }
}

fn check_against_model(ops: &[Op], cap: usize, slots: usize) -> Result<(), TestCaseError> {
    let mut st = store(cap, slots);
    let mut s = Session::new();
    let mut model = Model {
        map: HashMap::new(),
        cap,
        slots,
    };
    for op in ops {
        let (args, want) = model.apply(op);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = cmd_at(&mut st, &mut s, &args, 0);
        if want == SPOP_PICKS {
            model.spop(args[1], &got)?;
        } else {
            prop_assert_eq!(&got, &want, "{:?}", op);
        }
        prop_assert_eq!(st.used_memory(), model.used().0, "memory after {:?}", op);
        prop_assert_eq!(st.used_slots(), model.used().1, "slots after {:?}", op);
    }
    // Every acknowledged write reads back.
    for (k, v) in &model.map {
        match v {
            Val::Str(s_) => prop_assert_eq!(cmd_at(&mut st, &mut s, &["GET", k], 0), bulk(s_)),
            Val::Hash(fs) => {
                let mut want = format!("*{}\r\n", 2 * fs.len());
                for (f, v) in fs {
                    want += &bulk(f);
                    want += &bulk(v);
                }
                prop_assert_eq!(cmd_at(&mut st, &mut s, &["HGETALL", k], 0), want);
            }
            Val::List(l) => {
                prop_assert_eq!(
                    cmd_at(&mut st, &mut s, &["LRANGE", k, "0", "-1"], 0),
                    arr(l)
                );
            }
            Val::Set(set) => {
                prop_assert_eq!(cmd_at(&mut st, &mut s, &["SMEMBERS", k], 0), arr(set))
            }
            Val::ZSet(z) => prop_assert_eq!(
                cmd_at(&mut st, &mut s, &["ZRANGE", k, "0", "-1", "WITHSCORES"], 0),
                with_scores(z)
            ),
            Val::Stream(es) => {
                prop_assert_eq!(
                    cmd_at(&mut st, &mut s, &["XRANGE", k, "-", "+"], 0),
                    entries(es)
                );
            }
        }
    }
    prop_assert_eq!(
        cmd_at(&mut st, &mut s, &["DBSIZE"], 0),
        format!(":{}\r\n", model.map.len())
    );
    prop_assert_eq!(cmd_at(&mut st, &mut s, &["FLUSHALL"], 0), "+OK\r\n");
    prop_assert_eq!(st.used_memory(), 0);
    prop_assert_eq!(st.used_slots(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Plenty of memory: the replies are Redis's.
    #[test]
    fn matches_hashmap_model(ops in proptest::collection::vec(op(), 1..120)) {
        check_against_model(&ops, 1 << 20, 4096)?;
    }

    /// Little memory and few slots: a refused command changes nothing (the model's state is
    /// compared after every command), OOM happens exactly when the budget is exceeded, and
    /// every acknowledged write reads back at the end.
    #[test]
    fn oom_changes_nothing(
        ops in proptest::collection::vec(op(), 1..200),
        cap in 0usize..400,
        slots in 0usize..12,
    ) {
        check_against_model(&ops, cap, slots)?;
    }

    /// Deleting every key by hand (not FLUSHALL) also frees every byte and slot.
    #[test]
    fn deletes_free_everything(ops in proptest::collection::vec(op(), 1..100)) {
        let mut st = store(1 << 16, 256);
        let mut s = Session::new();
        let mut model = Model { map: HashMap::new(), cap: 1 << 16, slots: 256 };
        for op in &ops {
            let (args, _) = model.apply(op);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            cmd_at(&mut st, &mut s, &args, 0);
        }
        for k in 0..6 {
            cmd_at(&mut st, &mut s, &["DEL", &format!("k{k}")], 0);
        }
        prop_assert_eq!(st.used_memory(), 0);
        prop_assert_eq!(st.used_slots(), 0);
    }

    /// Arbitrary bytes in arbitrary fragments, with small buffers, never panic, and the
    /// connection either waits for input or closes after a protocol error.
    #[test]
    fn random_bytes_never_panic(
        frags in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8),
        drain in 1usize..500,
    ) {
        let mut st = store(2048, 32);
        let input = Box::leak(vec![0u8; 64].into_boxed_slice());
        let output = Box::leak(vec![0u8; crate::MIN_OUTPUT].into_boxed_slice());
        let mut conn = Connection::new(input, output).unwrap();
        let frags: Vec<&[u8]> = frags.iter().map(Vec::as_slice).collect();
        drive(&mut st, &mut conn, &frags, drain);
        st.check();
    }

    /// Random sequences of RESP-looking tokens reach deeper into the parser and the commands.
    #[test]
    fn random_resp_tokens_never_panic(
        toks in proptest::collection::vec(prop_oneof![
            Just("*"), Just("$"), Just("\r\n"), Just("\n"), Just("\r"), Just("-1"), Just("0"),
            Just("1"), Just("2"), Just("3"), Just("4"), Just("-"), Just("99999999999999999999"),
            Just(" "), Just("SET"), Just("GET"), Just("HSET"), Just("INCR"), Just("MSET"),
            Just("EX"), Just("PX"), Just("NX"), Just("XX"), Just("GET"), Just("DEL"),
            Just("HGETALL"), Just("SELECT"), Just("FLUSHALL"), Just("INFO"), Just("k"), Just("f"),
            Just("CONFIG"), Just("PING"), Just("EXPIRE"), Just("DECRBY"), Just("HDEL"),
            Just("LPUSH"), Just("RPOP"), Just("LRANGE"), Just("LSET"), Just("LREM"),
            Just("LTRIM"), Just("SADD"), Just("SPOP"), Just("SRANDMEMBER"), Just("ZADD"),
            Just("ZRANGE"), Just("ZPOPMAX"), Just("ZINCRBY"), Just("XADD"), Just("XRANGE"),
            Just("TYPE"), Just("+"), Just("(1"), Just("1.5"), Just("inf"), Just("-inf"),
            Just("BYSCORE"), Just("REV"), Just("LIMIT"), Just("WITHSCORES"), Just("COUNT"),
            Just("INCR"), Just("CH"), Just("GT"), Just("1-1"), Just("-"),
        ], 0..80),
        split in 0usize..400,
    ) {
        let bytes: Vec<u8> = toks.concat().into_bytes();
        let split = split.min(bytes.len());
        let mut st = store(1024, 16);
        let input = Box::leak(vec![0u8; 128].into_boxed_slice());
        let output = Box::leak(vec![0u8; crate::MIN_OUTPUT].into_boxed_slice());
        let mut conn = Connection::new(input, output).unwrap();
        drive(&mut st, &mut conn, &[&bytes[..split], &bytes[split..]], 100);
        st.check();
    }
}
