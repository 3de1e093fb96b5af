//! Sorted sets: `ZADD`, `ZINCRBY`, `ZPOPMIN`, `ZPOPMAX`, `ZMPOP`, `ZRANGE` (by rank,
//! `BYSCORE` or `BYLEX`, `REV`, `LIMIT`, `WITHSCORES`) and its older forms (`ZREVRANGE`,
//! `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`, `ZRANGEBYLEX`, `ZREVRANGEBYLEX`), `ZRANGESTORE`,
//! `ZCOUNT`, `ZLEXCOUNT`, `ZREMRANGEBYRANK`, `ZREMRANGEBYSCORE`, `ZREMRANGEBYLEX`, `ZRANK`,
//! `ZREVRANK`, `ZSCORE`, `ZMSCORE`, `ZCARD`, `ZREM`, `ZRANDMEMBER`, `ZUNION`, `ZINTER`, `ZDIFF`
//! (and their `STORE` forms), `ZINTERCARD`, `ZSCAN`.
//!
//! A command whose result is a sorted set of its own (`ZRANGESTORE`, `ZUNION`, ...) builds it
//! as a key that no lookup by name finds (see [`Store::insert_unlisted_key`]), beside its
//! sources and the destination's old value, so that it needs room for all of them at once; a
//! result that does not fit is deleted again and the command answers `-OOM`, having changed
//! nothing. The members are added in any order, then sorted (a merge sort of the list).
//!
//! Members are kept in (score, member) order in their set's child list (see [`crate::store`]
//! for why a list and what it costs). Scores are `f64`s, parsed as Redis parses them (`inf`,
//! `-inf`, exponents; not NaN) and formatted as Redis 7.0 formats them (C's `%.17g`: `1`,
//! `1.5`, `0.10000000000000001`, `1e+17`, `inf`).

use core::cmp::Ordering;
use core::fmt::Write as _;

use super::{pop_count, rank_range, Cmd};
use crate::commands::{eq, pairs, Res, SliceWriter, NOT_INT, OOM, SYNTAX, WRONGTYPE};
use crate::keyspace::{glob, scan_cursor, INVALID_CURSOR};
use crate::output::fmt_i64;
use crate::output::Reply;
use crate::parser::{parse_int, Command};
use crate::repeats::{Repeats, Seen};
use crate::store::{Budget, Kind, Store, HDR, NIL};

const NOT_FLOAT: &str = "ERR value is not a valid float";
const NAN: &str = "ERR resulting score is not a number (NaN)";

/// A score argument: a float as C's `strtod` reads it, NaN and overflow refused.
fn parse_score(a: &[u8]) -> Option<f64> {
    let text = core::str::from_utf8(a).ok()?;
    let v: f64 = text.parse().ok()?;
    let said_inf = text.bytes().any(|b| b.eq_ignore_ascii_case(&b'i'));
    if v.is_nan() || (v.is_infinite() && !said_inf) {
        None
    } else {
        Some(v)
    }
}

/// Formats `v` as C's `printf("%.17g")` does (what Redis 7.0 replies with), `inf`/`-inf` for
/// the infinities.
pub(crate) fn fmt_score(v: f64, out: &mut [u8; 32]) -> &[u8] {
    if v.is_infinite() {
        return if v > 0.0 { b"inf" } else { b"-inf" };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { b"-0" } else { b"0" };
    }
    // 17 significant digits, correctly rounded: "d.dddddddddddddddde<exp>".
    let mut sci = [0u8; 32];
    let mut w = SliceWriter {
        buf: &mut sci,
        len: 0,
    };
    if write!(w, "{:.16e}", v.abs()).is_err() {
        return b"0"; // Cannot happen: the text has at most 24 bytes.
    }
    let len = w.len;
    let text = &sci[..len];
    // Cannot fail: the digits always sit at 0 and 2..18.
    let Some(e_at) = text.iter().position(|&b| b == b'e').filter(|&at| at == 18) else {
        return b"0";
    };
    let mut digits = [0u8; 17];
    digits[0] = text[0];
    digits[1..].copy_from_slice(&text[2..e_at]);
    let exp = parse_int(&text[e_at + 1..]).unwrap_or(0);
    // %g drops trailing zeros (and a point left with nothing after it).
    let sig = digits.iter().rposition(|&d| d != b'0').map_or(1, |i| i + 1);
    let mut n = 0;
    let mut put = |b: u8| {
        out[n] = b;
        n += 1;
    };
    if v < 0.0 {
        put(b'-');
    }
    if (-4..17).contains(&exp) {
        if exp >= 0 {
            let int = exp as usize + 1;
            for &d in &digits[..int] {
                put(d);
            }
            if sig > int {
                put(b'.');
                for &d in &digits[int..sig] {
                    put(d);
                }
            }
        } else {
            put(b'0');
            put(b'.');
            for _ in 0..(-exp - 1) {
                put(b'0');
            }
            for &d in &digits[..sig] {
                put(d);
            }
        }
    } else {
        put(digits[0]);
        if sig > 1 {
            put(b'.');
            for &d in &digits[1..sig] {
                put(d);
            }
        }
        put(b'e');
        put(if exp < 0 { b'-' } else { b'+' });
        let e = exp.unsigned_abs();
        if e >= 100 {
            put(b'0' + (e / 100) as u8);
        }
        put(b'0' + (e / 10 % 10) as u8);
        put(b'0' + (e % 10) as u8);
    }
    &out[..n]
}

/// Whether a member (by its slot) passes a bound.
type Test<'a> = &'a dyn Fn(u32) -> bool;

/// A score bound of `ZRANGE ... BYSCORE`: `(` before the number makes it exclusive.
#[derive(Clone, Copy)]
struct Bound {
    value: f64,
    exclusive: bool,
}

impl Bound {
    /// Whether `v` is at or above this minimum.
    fn below(self, v: f64) -> bool {
        v > self.value || (!self.exclusive && v == self.value)
    }

    /// Whether `v` is at or below this maximum.
    fn above(self, v: f64) -> bool {
        v < self.value || (!self.exclusive && v == self.value)
    }
}

fn parse_bound(a: &[u8]) -> Option<Bound> {
    let (exclusive, num) = match a.split_first() {
        Some((b'(', rest)) => (true, rest),
        _ => (false, a),
    };
    Some(Bound {
        value: parse_score(num)?,
        exclusive,
    })
}

/// A member bound of `ZRANGE ... BYLEX`: `-`, `+`, `[member` or `(member` (exclusive).
#[derive(Clone, Copy)]
enum Lex<'a> {
    Min,
    Max,
    Inclusive(&'a [u8]),
    Exclusive(&'a [u8]),
}

impl Lex<'_> {
    /// Whether `m` is at or above this minimum.
    fn below(self, m: &[u8]) -> bool {
        match self {
            Lex::Min => true,
            Lex::Max => false,
            Lex::Inclusive(b) => m >= b,
            Lex::Exclusive(b) => m > b,
        }
    }

    /// Whether `m` is at or below this maximum.
    fn above(self, m: &[u8]) -> bool {
        match self {
            Lex::Min => false,
            Lex::Max => true,
            Lex::Inclusive(b) => m <= b,
            Lex::Exclusive(b) => m < b,
        }
    }
}

impl Lex<'_> {
    /// Whether a range from `min` to `max` can hold a member, as Redis decides it (`-` and `+`
    /// count as exclusive bounds).
    fn some_between(min: Lex<'_>, max: Lex<'_>) -> bool {
        use core::cmp::Ordering::{Equal, Greater, Less};
        let (order, exclusive) = match (min, max) {
            (Lex::Min, Lex::Min) | (Lex::Max, Lex::Max) => (Equal, true),
            (Lex::Min, _) | (_, Lex::Max) => (Less, true),
            (Lex::Max, _) | (_, Lex::Min) => (Greater, true),
            (Lex::Inclusive(a) | Lex::Exclusive(a), Lex::Inclusive(b) | Lex::Exclusive(b)) => (
                a.cmp(b),
                matches!(min, Lex::Exclusive(_)) || matches!(max, Lex::Exclusive(_)),
            ),
        };
        order == Less || (order == Equal && !exclusive)
    }
}

fn parse_lex(a: &[u8]) -> Option<Lex<'_>> {
    match a {
        b"-" => Some(Lex::Min),
        b"+" => Some(Lex::Max),
        [b'[', rest @ ..] => Some(Lex::Inclusive(rest)),
        [b'(', rest @ ..] => Some(Lex::Exclusive(rest)),
        _ => None,
    }
}

/// What a range command's bounds are: ranks, scores or members.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// The bounds of a range command.
#[derive(Clone, Copy)]
enum Range<'a> {
    Rank(i64, i64),
    Score(Bound, Bound),
    Lex(Lex<'a>, Lex<'a>),
}

impl<'a> Range<'a> {
    /// The range from `min` to `max` by `by`, or Redis's error for bounds that are none.
    fn parse(by: By, min: &'a [u8], max: &'a [u8]) -> Result<Self, &'static str> {
        match by {
            By::Rank => match (parse_int(min), parse_int(max)) {
                (Some(start), Some(stop)) => Ok(Range::Rank(start, stop)),
                _ => Err(NOT_INT),
            },
            By::Score => match (parse_bound(min), parse_bound(max)) {
                (Some(min), Some(max)) => Ok(Range::Score(min, max)),
                _ => Err("ERR min or max is not a float"),
            },
            By::Lex => match (parse_lex(min), parse_lex(max)) {
                (Some(min), Some(max)) => Ok(Range::Lex(min, max)),
                _ => Err("ERR min or max not valid string range item"),
            },
        }
    }
}

/// `ZADD`'s flags (`ZINCRBY` is `ZADD INCR` with one pair).
#[derive(Clone, Copy, Default)]
struct Flags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

impl Store<'_> {
    /// The score of sorted-set member `e`.
    fn score_of(&self, e: u32) -> f64 {
        f64::from_bits(self.slots[e as usize].expire)
    }

    /// Sets the score of sorted-set member `e`; -0 is stored as 0, as Redis 7.0's small sorted
    /// sets store it (its `ZINCRBY` still answers the -0 it computed).
    fn set_score(&mut self, e: u32, v: f64) {
        let v = if v == 0.0 { 0.0 } else { v };
        self.slots[e as usize].expire = v.to_bits();
    }

    /// How member `e` compares with (`score`, `member`).
    fn zcmp(&self, e: u32, score: f64, member: &[u8]) -> Ordering {
        self.score_of(e)
            .partial_cmp(&score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| self.key_of(e).cmp(member))
    }

    /// Where (`score`, `member`) goes in sorted set `z`: the first member after it (`NIL`: at
    /// the end), not counting member `skip`. Appending (a score above every other) is O(1).
    fn zplace(&self, z: u32, score: f64, member: &[u8], skip: u32) -> u32 {
        let mut last = self.slots[z as usize].prev;
        if last == skip && last != NIL {
            last = self.slots[last as usize].prev;
        }
        if last == NIL || self.zcmp(last, score, member) == Ordering::Less {
            return NIL;
        }
        let mut e = self.slots[z as usize].next;
        while e != NIL && (e == skip || self.zcmp(e, score, member) == Ordering::Less) {
            e = self.slots[e as usize].next;
        }
        e
    }

    /// Writes a score as a bulk string.
    fn reply_score(r: &mut Reply<'_, '_>, v: f64) -> Res {
        r.bulk(fmt_score(v, &mut [0; 32]))
    }

    /// Executes a sorted-set command.
    pub(super) fn zset_command(
        &mut self,
        db: u8,
        cmd: Cmd,
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        match cmd {
            Cmd::ZAdd => {
                let mut f = Flags::default();
                let mut first = 2;
                while let Some(a) = c.arg(first) {
                    let flag = match a {
                        _ if eq(a, "nx") => &mut f.nx,
                        _ if eq(a, "xx") => &mut f.xx,
                        _ if eq(a, "gt") => &mut f.gt,
                        _ if eq(a, "lt") => &mut f.lt,
                        _ if eq(a, "ch") => &mut f.ch,
                        _ if eq(a, "incr") => &mut f.incr,
                        _ => break,
                    };
                    *flag = true;
                    first += 1;
                }
                let elements = c.argc() - first;
                if elements == 0 || elements % 2 == 1 {
                    return r.error(SYNTAX);
                }
                if f.nx && f.xx {
                    return r.error("ERR XX and NX options at the same time are not compatible");
                }
                if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
                    return r.error(
                        "ERR GT, LT, and/or NX options at the same time are not compatible",
                    );
                }
                if f.incr && elements > 2 {
                    return r.error("ERR INCR option supports a single increment-element pair");
                }
                self.zadd(db, c, f, first, now, r)
            }
            Cmd::ZIncrBy => {
                let f = Flags {
                    incr: true,
                    ..Flags::default()
                };
                self.zadd(db, c, f, 2, now, r)
            }
            Cmd::ZPopMin | Cmd::ZPopMax => {
                if c.argc() > 3 {
                    return r.error(SYNTAX);
                }
                let count = match pop_count(c) {
                    Err(msg) => return r.error(msg),
                    Ok(n) => n.unwrap_or(1),
                };
                let z = match self.find_kind(db, key, Kind::ZSet, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) => return r.array(0),
                    Ok(Some(z)) => z,
                };
                let n = count.min(u64::from(self.slots[z as usize].count)) as u32;
                self.zpop(z, n, cmd == Cmd::ZPopMin, false, r)
            }
            Cmd::ZRange => self.zrange(db, c, 1, false, None, None, now, r),
            Cmd::ZRevRange => self.zrange(db, c, 1, false, Some(By::Rank), Some(true), now, r),
            Cmd::ZRangeByScore => {
                self.zrange(db, c, 1, false, Some(By::Score), Some(false), now, r)
            }
            Cmd::ZRevRangeByScore => {
                self.zrange(db, c, 1, false, Some(By::Score), Some(true), now, r)
            }
            Cmd::ZRangeByLex => self.zrange(db, c, 1, false, Some(By::Lex), Some(false), now, r),
            Cmd::ZRevRangeByLex => self.zrange(db, c, 1, false, Some(By::Lex), Some(true), now, r),
            Cmd::ZRangeStore => self.zrange(db, c, 2, true, None, None, now, r),
            Cmd::ZCount => self.zcount_range(db, c, By::Score, false, now, r),
            Cmd::ZLexCount => self.zcount_range(db, c, By::Lex, false, now, r),
            Cmd::ZRemRangeByRank => self.zcount_range(db, c, By::Rank, true, now, r),
            Cmd::ZRemRangeByScore => self.zcount_range(db, c, By::Score, true, now, r),
            Cmd::ZRemRangeByLex => self.zcount_range(db, c, By::Lex, true, now, r),
            Cmd::ZMScore => {
                let z = match self.find_kind(db, key, Kind::ZSet, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(z) => z,
                };
                r.array(c.argc() - 2)?;
                for m in c.args().skip(2) {
                    match z.and_then(|z| self.find_field(z, m)) {
                        Some(e) => Self::reply_score(r, self.score_of(e))?,
                        None => r.nil()?,
                    }
                }
                Ok(())
            }
            Cmd::ZUnion
            | Cmd::ZInter
            | Cmd::ZDiff
            | Cmd::ZUnionStore
            | Cmd::ZInterStore
            | Cmd::ZDiffStore
            | Cmd::ZInterCard => self.zset_op(db, cmd, c, now, r),
            Cmd::ZMPop => self.zmpop(db, c, now, r),
            Cmd::ZRandMember => self.zrandmember(db, c, now, r),
            Cmd::ZScan => self.zscan(db, c, now, r),
            Cmd::ZRank | Cmd::ZRevRank | Cmd::ZScore => {
                let z = match self.find_kind(db, key, Kind::ZSet, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) => return r.nil(),
                    Ok(Some(z)) => z,
                };
                let Some(e) = self.find_field(z, c.arg(2).unwrap_or(b"")) else {
                    return r.nil();
                };
                if cmd == Cmd::ZScore {
                    return Self::reply_score(r, self.score_of(e));
                }
                let mut rank = 0;
                let mut cur = self.slots[z as usize].next;
                while cur != e && cur != NIL {
                    rank += 1;
                    cur = self.slots[cur as usize].next;
                }
                if cmd == Cmd::ZRevRank {
                    rank = i64::from(self.slots[z as usize].count) - 1 - rank;
                }
                r.int(rank)
            }
            Cmd::ZCard => match self.find_kind(db, key, Kind::ZSet, now) {
                Err(()) => r.error(WRONGTYPE),
                Ok(z) => r.int(z.map_or(0, |z| i64::from(self.slots[z as usize].count))),
            },
            Cmd::ZRem => {
                let z = match self.find_kind(db, key, Kind::ZSet, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) => return r.int(0),
                    Ok(Some(z)) => z,
                };
                r.reserve(24)?;
                let mut n = 0;
                for m in c.args().skip(2) {
                    if let Some(e) = self.find_field(z, m) {
                        let last = self.slots[z as usize].count == 1;
                        self.remove_child_or_key(e);
                        n += 1;
                        if last {
                            break; // The set was emptied, and deleted with its last member.
                        }
                    }
                }
                r.int(n)
            }
            _ => Ok(()),
        }
    }

    /// `ZADD` (flags parsed and checked; the score-member pairs start at argument `first`) and
    /// `ZINCRBY`.
    fn zadd(
        &mut self,
        db: u8,
        c: &Command<'_>,
        f: Flags,
        first: usize,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        if pairs(c.args().skip(first)).any(|(s, _)| parse_score(s).is_none()) {
            return r.error(NOT_FLOAT);
        }
        let elements = || pairs(c.args().skip(first)).map(|(s, m)| (parse_score(s), m));
        let z = match self.find_kind(db, key, Kind::ZSet, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) if f.xx => return if f.incr { r.nil() } else { r.int(0) },
            Ok(z) => z,
        };
        if f.incr {
            // One pair: its outcome is known before anything changes.
            let (inc, m) = elements().next().unwrap_or((None, b""));
            let inc = inc.unwrap_or(0.0);
            if let Some(e) = z.and_then(|z| self.find_field(z, m)) {
                let cur = self.score_of(e);
                let new = cur + inc;
                if f.nx {
                    return r.nil();
                }
                if new.is_nan() {
                    return r.error(NAN);
                }
                if (f.lt && new >= cur) || (f.gt && new <= cur) {
                    return r.nil();
                }
            }
        }
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            let z = st.find_key(db, key, now);
            if z.is_none() {
                b.step((0, 0), (HDR + key.len(), 1));
            }
            if !f.xx {
                // A member named twice is added once; one that may have been named before
                // (`Seen::Unknown`) is planned as new.
                let mut repeats = Repeats::new();
                for (_, m) in elements() {
                    let new = match repeats.note(m, 0) {
                        Seen::Again(_) => false,
                        Seen::First => z.and_then(|z| st.find_field(z, m)).is_none(),
                        Seen::Unknown => true,
                    };
                    if new {
                        b.step((0, 0), (HDR + m.len(), 1));
                    }
                }
            }
            (b.ok(), ())
        });
        if !ok {
            return r.error(OOM);
        }
        // The reply depends on what the pairs do, one after the other: its bound is reserved
        // (a score's bulk string or an integer), then it is written at the end.
        r.reserve(48)?;
        let z = match z {
            Some(z) => z,
            None => match self.insert_key(db, Kind::ZSet, key, None, 0) {
                Some(z) => z,
                None => return Ok(()), // Unreachable: the plan fitted.
            },
        };
        let (mut added, mut updated, mut result) = (0, 0, None);
        for (score, m) in elements() {
            let score = score.unwrap_or(0.0);
            match self.find_field(z, m) {
                Some(e) => {
                    if f.nx {
                        continue;
                    }
                    let cur = self.score_of(e);
                    let new = if f.incr { cur + score } else { score };
                    if (f.lt && new >= cur) || (f.gt && new <= cur) {
                        continue;
                    }
                    result = Some(new);
                    if new != cur {
                        self.set_score(e, new);
                        let before = self.zplace(z, new, m, e);
                        self.move_child(e, before);
                        updated += 1;
                    }
                }
                None => {
                    if f.xx {
                        continue;
                    }
                    let before = self.zplace(z, score, m, NIL);
                    if let Some(e) = self.insert_child(z, m, b"", before) {
                        self.set_score(e, score);
                    }
                    result = Some(score);
                    added += 1;
                }
            }
        }
        if f.incr {
            match result {
                Some(v) => Self::reply_score(r, v),
                None => r.nil(),
            }
        } else {
            r.int(if f.ch { added + updated } else { added })
        }
    }

    /// `ZRANGE key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`, the
    /// older range commands (`ZREVRANGE`, `ZRANGEBYSCORE`, ...: `by` and `rev` given, which
    /// their options then cannot change) and `ZRANGESTORE dst src ...` (`store`, without
    /// `WITHSCORES`); the source key is argument `src`.
    #[allow(clippy::too_many_arguments)]
    fn zrange(
        &mut self,
        db: u8,
        c: &Command<'_>,
        src: usize,
        store: bool,
        mut by: Option<By>,
        mut rev: Option<bool>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let mut withscores = false;
        // Redis's default count, -1, also means "no LIMIT".
        let (mut offset, mut count) = (0, -1);
        let mut j = src + 3;
        while let Some(a) = c.arg(j) {
            if !store && eq(a, "withscores") {
                withscores = true;
            } else if eq(a, "limit") && c.argc() > j + 2 {
                let (Some(off), Some(n)) = (
                    parse_int(c.arg(j + 1).unwrap_or(b"")),
                    parse_int(c.arg(j + 2).unwrap_or(b"")),
                ) else {
                    return r.error(NOT_INT);
                };
                (offset, count) = (off, n);
                j += 2;
            } else if rev.is_none() && eq(a, "rev") {
                rev = Some(true);
            } else if by.is_none() && eq(a, "bylex") {
                by = Some(By::Lex);
            } else if by.is_none() && eq(a, "byscore") {
                by = Some(By::Score);
            } else {
                return r.error(SYNTAX);
            }
            j += 1;
        }
        let (by, rev) = (by.unwrap_or(By::Rank), rev.unwrap_or(false));
        if count != -1 && by == By::Rank {
            return r.error(
                "ERR syntax error, LIMIT is only supported in combination with either BYSCORE \
                 or BYLEX",
            );
        }
        if withscores && by == By::Lex {
            return r.error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
        }
        let (a1, a2) = (c.arg(src + 1).unwrap_or(b""), c.arg(src + 2).unwrap_or(b""));
        // By score or member, with REV, the first bound is the maximum.
        let (lo, hi) = if rev && by != By::Rank {
            (a2, a1)
        } else {
            (a1, a2)
        };
        let range = match Range::parse(by, lo, hi) {
            Ok(range) => range,
            Err(msg) => return r.error(msg),
        };
        let dst = c.arg(1).unwrap_or(b"");
        let z = match self.find_kind(db, c.arg(src).unwrap_or(b""), Kind::ZSet, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) if store => return self.zstore_built(db, dst, now, r, |_, _| true),
            Ok(None) => return r.array(0),
            Ok(Some(z)) => z,
        };
        let (first, n) = self.zspan(z, range, rev, offset, count);
        if store {
            return self.zstore_built(db, dst, now, r, |st, h| {
                let mut e = first;
                for _ in 0..n {
                    if st.zappend_member(h, e, st.score_of(e)).is_none() {
                        return false;
                    }
                    e = st.step_from(e, !rev);
                }
                true
            });
        }
        r.array(if withscores { 2 } else { 1 } * n as usize)?;
        let mut e = first;
        for _ in 0..n {
            self.zreply_member(r, e, withscores)?;
            e = self.step_from(e, !rev);
        }
        Ok(())
    }

    /// Writes member `e`, and its score if `withscores`.
    fn zreply_member(&self, r: &mut Reply<'_, '_>, e: u32, withscores: bool) -> Res {
        r.bulk(self.key_of(e))?;
        if withscores {
            Self::reply_score(r, self.score_of(e))?;
        }
        Ok(())
    }

    /// The members of sorted set `z` in `range`, from the lowest (from the highest for `rev`),
    /// skipping the first `offset` and taking at most `count` (all for a negative count): the
    /// first of them and how many, consecutive in that direction.
    fn zspan(&self, z: u32, range: Range<'_>, rev: bool, offset: i64, count: i64) -> (u32, u32) {
        // Whether the range can hold anything; whether a member is above the minimum, below the
        // maximum.
        let (some, above, below): (bool, Test<'_>, Test<'_>) = match range {
            Range::Rank(start, stop) => {
                let Some((from, to)) = rank_range(start, stop, self.slots[z as usize].count) else {
                    return (NIL, 0);
                };
                let at = i64::from(from);
                let first = self.nth_child(z, if rev { -1 - at } else { at });
                return (first.unwrap_or(NIL), to - from + 1);
            }
            Range::Score(min, max) => (
                min.value < max.value
                    || (min.value == max.value && !min.exclusive && !max.exclusive),
                &move |e| min.below(self.score_of(e)),
                &move |e| max.above(self.score_of(e)),
            ),
            Range::Lex(min, max) => (
                Lex::some_between(min, max),
                &move |e| min.below(self.key_of(e)),
                &move |e| max.above(self.key_of(e)),
            ),
        };
        if !some {
            return (NIL, 0);
        }
        self.in_range(z, above, below, rev, offset, count)
    }

    /// The members of sorted set `z` that are `above` the minimum and `below` the maximum, in
    /// order (from the highest for `rev`), skipping the first `offset` (none at all if
    /// negative) and stopping after `count` (all for a negative count): the first and how
    /// many. The walk is Redis's (over a small sorted set), which matters for `BYLEX` over
    /// members whose scores differ, where the members in range need not be consecutive:
    /// nothing when the last member is below the minimum or the first above the maximum; else
    /// from the first member past the near bound, if it is within the far one, skipping
    /// `offset` members, until the first member past the far bound.
    #[allow(clippy::too_many_arguments)]
    fn in_range(
        &self,
        z: u32,
        above: Test<'_>,
        below: Test<'_>,
        rev: bool,
        offset: i64,
        count: i64,
    ) -> (u32, u32) {
        let (first, last) = (self.end_of(z, true), self.end_of(z, false));
        if offset < 0 || first == NIL || !above(last) || !below(first) {
            return (NIL, 0);
        }
        let (near, far) = if rev { (below, above) } else { (above, below) };
        let mut e = self.end_of(z, !rev);
        while e != NIL && !near(e) {
            e = self.step_from(e, !rev);
        }
        if e == NIL || !far(e) {
            return (NIL, 0);
        }
        for _ in 0..offset {
            if e == NIL {
                break;
            }
            e = self.step_from(e, !rev);
        }
        let (start, mut n, mut left) = (e, 0, count);
        while e != NIL && left != 0 && far(e) {
            n += 1;
            left -= 1;
            e = self.step_from(e, !rev);
        }
        (start, n)
    }

    /// `ZCOUNT`, `ZLEXCOUNT` (`remove`: false) and `ZREMRANGEBYRANK`, `ZREMRANGEBYSCORE`,
    /// `ZREMRANGEBYLEX`: the members of `key` in the range of arguments 2 and 3.
    fn zcount_range(
        &mut self,
        db: u8,
        c: &Command<'_>,
        by: By,
        remove: bool,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let (lo, hi) = (c.arg(2).unwrap_or(b""), c.arg(3).unwrap_or(b""));
        let range = match Range::parse(by, lo, hi) {
            Ok(range) => range,
            Err(msg) => return r.error(msg),
        };
        let z = match self.find_kind(db, c.arg(1).unwrap_or(b""), Kind::ZSet, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) => return r.int(0),
            Ok(Some(z)) => z,
        };
        let (mut e, n) = self.zspan(z, range, false, 0, -1);
        r.int(i64::from(n))?;
        if remove {
            for _ in 0..n {
                let next = self.slots[e as usize].next;
                self.remove_child_or_key(e);
                e = next;
            }
        }
        Ok(())
    }

    /// Appends member `from` (of any collection) to sorted set `z` with score `score`, out of
    /// order (see [`Store::zsort`]); `None` when the arena or the slot table is full.
    fn zappend_member(&mut self, z: u32, from: u32, score: f64) -> Option<u32> {
        let e = self.append_child_named_as(z, from)?;
        self.set_score(e, score);
        Some(e)
    }

    /// Sorts the members of sorted set `z` in (score, member) order: a bottom-up merge sort
    /// of its list, O(n log n).
    fn zsort(&mut self, z: u32) {
        let n = self.slots[z as usize].count as usize;
        let mut head = self.slots[z as usize].next;
        let mut width = 1;
        while width < n {
            let (mut merged, mut tail, mut rest) = (NIL, NIL, head);
            while rest != NIL {
                let a = rest;
                let b = self.zcut_after(a, width);
                rest = self.zcut_after(b, width);
                let (h, t) = self.zmerge(a, b);
                match tail {
                    NIL => merged = h,
                    t => self.slots[t as usize].next = h,
                }
                tail = t;
            }
            head = merged;
            width *= 2;
        }
        let (mut prev, mut e) = (NIL, head);
        while e != NIL {
            self.slots[e as usize].prev = prev;
            prev = e;
            e = self.slots[e as usize].next;
        }
        self.slots[z as usize].next = head;
        self.slots[z as usize].prev = prev;
    }

    /// Cuts the chain of members from `e` after `n` of them; returns the rest of it (`NIL`:
    /// none).
    fn zcut_after(&mut self, e: u32, n: usize) -> u32 {
        if e == NIL {
            return NIL;
        }
        let mut cur = e;
        for _ in 1..n {
            match self.slots[cur as usize].next {
                NIL => return NIL,
                next => cur = next,
            }
        }
        let rest = self.slots[cur as usize].next;
        self.slots[cur as usize].next = NIL;
        rest
    }

    /// Merges two ordered chains of members into one: its first and last member.
    fn zmerge(&mut self, mut a: u32, mut b: u32) -> (u32, u32) {
        let (mut head, mut tail) = (NIL, NIL);
        while a != NIL || b != NIL {
            let take_a =
                b == NIL || (a != NIL && self.zcmp(a, self.score_of(b), self.key_of(b)).is_le());
            let e = if take_a { a } else { b };
            if take_a {
                a = self.slots[a as usize].next;
            } else {
                b = self.slots[b as usize].next;
            }
            match tail {
                NIL => head = e,
                t => self.slots[t as usize].next = e,
            }
            tail = e;
        }
        if tail != NIL {
            self.slots[tail as usize].next = NIL;
        }
        (head, tail)
    }

    /// Builds a sorted set with `fill`, in an unlisted key named `name` (see
    /// [`Store::insert_unlisted_key`]): `fill` adds its members in any order and answers false
    /// when the arena or the slot table ran out; the set is then sorted. Out of resources, the
    /// expired keys are reclaimed and `fill` runs again on a new set; `None` when that fails
    /// too (nothing changed then, expired keys aside).
    fn zbuild(
        &mut self,
        db: u8,
        name: &[u8],
        now: u64,
        mut fill: impl FnMut(&mut Self, u32) -> bool,
    ) -> Option<u32> {
        for attempt in 0..2 {
            if attempt == 1 {
                self.sweep_all(now);
            }
            let Some(h) = self.insert_unlisted_key(db, Kind::ZSet, name) else {
                continue;
            };
            if fill(self, h) {
                self.zsort(h);
                return Some(h);
            }
            self.remove_key(h);
        }
        None
    }

    /// Builds a sorted set with `fill` (see [`Store::zbuild`]) and stores it as `dst`, in place
    /// of what `dst` held (an empty result deletes `dst`); answers its size, or -OOM.
    fn zstore_built(
        &mut self,
        db: u8,
        dst: &[u8],
        now: u64,
        r: &mut Reply<'_, '_>,
        fill: impl FnMut(&mut Self, u32) -> bool,
    ) -> Res {
        r.reserve(OOM.len() + 3)?;
        let Some(h) = self.zbuild(db, dst, now, fill) else {
            return r.error(OOM);
        };
        if let Some(old) = self.find_key(db, dst, now) {
            self.remove_key(old);
        }
        let n = self.slots[h as usize].count;
        if n == 0 {
            self.remove_key(h);
        } else {
            self.list_key(h);
        }
        r.int(i64::from(n))
    }

    /// The sorted set or set `key` (`Err`: another type), a source of `ZUNION` and its kin.
    fn zsource(&mut self, db: u8, key: &[u8], now: u64) -> Result<Option<u32>, ()> {
        match self.find_key(db, key, now) {
            Some(s) if !matches!(self.slots[s as usize].kind, Kind::ZSet | Kind::Set) => Err(()),
            s => Ok(s),
        }
    }

    /// The score of member `e` of a sorted set, or 1 for a set's member.
    fn zmember_score(&self, e: u32) -> f64 {
        if self.slots[e as usize].kind == Kind::ZMember {
            self.score_of(e)
        } else {
            1.0
        }
    }

    /// `ZUNION`, `ZINTER`, `ZDIFF`, their `STORE` forms and `ZINTERCARD`, with Redis's
    /// checks in Redis's order (the number of keys, the keys' types, then the options).
    fn zset_op(
        &mut self,
        db: u8,
        cmd: Cmd,
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let (op, store, name) = match cmd {
            Cmd::ZUnion => (Op::Union, false, "zunion"),
            Cmd::ZInter => (Op::Inter, false, "zinter"),
            Cmd::ZDiff => (Op::Diff, false, "zdiff"),
            Cmd::ZUnionStore => (Op::Union, true, "zunionstore"),
            Cmd::ZInterStore => (Op::Inter, true, "zinterstore"),
            Cmd::ZDiffStore => (Op::Diff, true, "zdiffstore"),
            _ => (Op::Card, false, "zintercard"),
        };
        let at = if store { 2 } else { 1 };
        let Some(n) = parse_int(c.arg(at).unwrap_or(b"")) else {
            return r.error(NOT_INT);
        };
        if n < 1 {
            r.raw(b"-ERR at least 1 input key is needed for '")?;
            r.raw(name.as_bytes())?;
            return r.raw(b"' command\r\n");
        }
        let first = at + 1;
        if n as u64 > (c.argc() - first) as u64 {
            return r.error(SYNTAX);
        }
        let n = n as usize;
        let key = |i: usize| c.arg(first + i).unwrap_or(b"");
        for i in 0..n {
            if self.zsource(db, key(i), now).is_err() {
                return r.error(WRONGTYPE);
            }
        }
        let (mut weights, mut agg, mut withscores, mut limit) = (None, Agg::Sum, false, 0);
        let mut j = first + n;
        let full = op != Op::Diff && op != Op::Card;
        while let Some(a) = c.arg(j) {
            let remaining = c.argc() - j;
            if full && remaining > n && eq(a, "weights") {
                if (0..n).any(|i| parse_score(c.arg(j + 1 + i).unwrap_or(b"")).is_none()) {
                    return r.error("ERR weight value is not a float");
                }
                weights = Some(j + 1);
                j += n + 1;
            } else if full && remaining >= 2 && eq(a, "aggregate") {
                let b = c.arg(j + 1).unwrap_or(b"");
                agg = match b {
                    _ if eq(b, "sum") => Agg::Sum,
                    _ if eq(b, "min") => Agg::Min,
                    _ if eq(b, "max") => Agg::Max,
                    _ => return r.error(SYNTAX),
                };
                j += 2;
            } else if !store && op != Op::Card && eq(a, "withscores") {
                withscores = true;
                j += 1;
            } else if op == Op::Card && remaining >= 2 && eq(a, "limit") {
                match parse_int(c.arg(j + 1).unwrap_or(b"")) {
                    Some(l) if l >= 0 => limit = l,
                    _ => return r.error("ERR LIMIT can't be negative"),
                }
                j += 2;
            } else {
                return r.error(SYNTAX);
            }
        }
        let weight = |i: usize| {
            weights.map_or(1.0, |w| {
                parse_score(c.arg(w + i).unwrap_or(b"")).unwrap_or(1.0)
            })
        };
        if op == Op::Card {
            let mut found = 0;
            self.zmembers_of_all(db, n, &key, now, |_, _| {
                found += 1;
                limit == 0 || found < limit
            });
            return r.int(found);
        }
        let dst = if store { c.arg(1).unwrap_or(b"") } else { b"" };
        let fill = |st: &mut Self, h: u32| match op {
            Op::Union => {
                for i in 0..n {
                    let Ok(Some(s)) = st.zsource(db, key(i), now) else {
                        continue;
                    };
                    let w = weight(i);
                    let mut e = st.slots[s as usize].next;
                    while e != NIL {
                        let v = w * st.zmember_score(e);
                        let v = if v.is_nan() { 0.0 } else { v };
                        match st.find_field(h, st.key_of(e)) {
                            Some(x) => st.set_score(x, agg.apply(st.score_of(x), v)),
                            None => {
                                if st.zappend_member(h, e, v).is_none() {
                                    return false;
                                }
                            }
                        }
                        e = st.slots[e as usize].next;
                    }
                }
                true
            }
            Op::Inter => {
                let mut ok = true;
                st.zmembers_of_all(db, n, &key, now, |st, e| {
                    let v = weight(0) * st.zmember_score(e);
                    let mut score = if v.is_nan() { 0.0 } else { v };
                    for i in 1..n {
                        let Ok(Some(s)) = st.zsource(db, key(i), now) else {
                            continue;
                        };
                        let x = st.find_field(s, st.key_of(e)).unwrap_or(e);
                        score = agg.apply(score, st.zmember_score(x) * weight(i));
                    }
                    ok = st.zappend_member(h, e, score).is_some();
                    ok
                });
                ok
            }
            _ => {
                let Ok(Some(s0)) = st.zsource(db, key(0), now) else {
                    return true;
                };
                let mut e = st.slots[s0 as usize].next;
                while e != NIL {
                    let elsewhere = (1..n).any(|i| match st.zsource(db, key(i), now) {
                        Ok(Some(s)) => st.find_field(s, st.key_of(e)).is_some(),
                        _ => false,
                    });
                    if !elsewhere && st.zappend_member(h, e, st.zmember_score(e)).is_none() {
                        return false;
                    }
                    e = st.slots[e as usize].next;
                }
                true
            }
        };
        if store {
            return self.zstore_built(db, dst, now, r, fill);
        }
        let Some(h) = self.zbuild(db, dst, now, fill) else {
            return r.error(OOM);
        };
        let res = self.zreply_all(h, withscores, r);
        self.remove_key(h);
        res
    }

    /// Calls `f` on each member of the first of the `n` keys `key(0)`, ... that is in every
    /// other (all of them present), until `f` answers false.
    fn zmembers_of_all<'k>(
        &mut self,
        db: u8,
        n: usize,
        key: &dyn Fn(usize) -> &'k [u8],
        now: u64,
        mut f: impl FnMut(&mut Self, u32) -> bool,
    ) {
        for i in 0..n {
            if !matches!(self.zsource(db, key(i), now), Ok(Some(_))) {
                return;
            }
        }
        let Ok(Some(s0)) = self.zsource(db, key(0), now) else {
            return;
        };
        let mut e = self.slots[s0 as usize].next;
        while e != NIL {
            let everywhere = (1..n).all(|i| match self.zsource(db, key(i), now) {
                Ok(Some(s)) => self.find_field(s, self.key_of(e)).is_some(),
                _ => false,
            });
            let next = self.slots[e as usize].next;
            if everywhere && !f(self, e) {
                return;
            }
            e = next;
        }
    }

    /// Writes every member of sorted set `z`, with their scores if `withscores`.
    fn zreply_all(&self, z: u32, withscores: bool, r: &mut Reply<'_, '_>) -> Res {
        let n = self.slots[z as usize].count as usize;
        r.array(if withscores { 2 * n } else { n })?;
        let mut e = self.slots[z as usize].next;
        while e != NIL {
            self.zreply_member(r, e, withscores)?;
            e = self.slots[e as usize].next;
        }
        Ok(())
    }

    /// Pops `n` members of sorted set `z` from its lowest (`min`) or its highest, answering them
    /// with their scores: one flat array, or (`nested`) an array of member-score pairs.
    fn zpop(&mut self, z: u32, n: u32, min: bool, nested: bool, r: &mut Reply<'_, '_>) -> Res {
        r.array(if nested { n } else { 2 * n } as usize)?;
        let mut e = self.end_of(z, min);
        for _ in 0..n {
            if nested {
                r.array(2)?;
            }
            self.zreply_member(r, e, true)?;
            e = self.step_from(e, min);
        }
        for _ in 0..n {
            let e = self.end_of(z, min);
            self.remove_child_or_key(e);
        }
        Ok(())
    }

    /// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`.
    fn zmpop(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let numkeys = match parse_int(c.arg(1).unwrap_or(b"")) {
            Some(n) if n >= 1 => n as u64,
            _ => return r.error("ERR numkeys should be greater than 0"),
        };
        if numkeys + 2 > c.argc() as u64 - 1 {
            return r.error(SYNTAX);
        }
        let at = numkeys as usize + 2;
        let w = c.arg(at).unwrap_or(b"");
        let min = match w {
            _ if eq(w, "min") => true,
            _ if eq(w, "max") => false,
            _ => return r.error(SYNTAX),
        };
        let (mut count, mut j) = (None, at + 1);
        while let Some(a) = c.arg(j) {
            if count.is_none() && eq(a, "count") && c.argc() > j + 1 {
                match parse_int(c.arg(j + 1).unwrap_or(b"")) {
                    Some(n) if n >= 1 => count = Some(n as u64),
                    _ => return r.error("ERR count should be greater than 0"),
                }
                j += 2;
            } else {
                return r.error(SYNTAX);
            }
        }
        for key in c.args().skip(2).take(numkeys as usize) {
            match self.find_kind(db, key, Kind::ZSet, now) {
                Err(()) => return r.error(WRONGTYPE),
                Ok(None) => continue,
                Ok(Some(z)) => {
                    let n = count
                        .unwrap_or(1)
                        .min(u64::from(self.slots[z as usize].count));
                    r.array(2)?;
                    r.bulk(key)?;
                    return self.zpop(z, n as u32, min, true, r);
                }
            }
        }
        r.raw(b"*-1\r\n")
    }

    /// `ZRANDMEMBER key [count [WITHSCORES]]`.
    fn zrandmember(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let mut withscores = false;
        let count = match c.arg(2) {
            None => None,
            Some(a) => {
                let Some(n) = parse_int(a) else {
                    return r.error(NOT_INT);
                };
                if n == i64::MIN {
                    return r.error(
                        "ERR value is out of range, value must between -9223372036854775807 and \
                         9223372036854775807",
                    );
                }
                match c.arg(3) {
                    Some(w) if c.argc() == 4 && eq(w, "withscores") => {
                        if !(-i64::MAX / 2..=i64::MAX / 2).contains(&n) {
                            return r.error("ERR value is out of range");
                        }
                        withscores = true;
                    }
                    Some(_) => return r.error(SYNTAX),
                    None => {}
                }
                Some(n)
            }
        };
        let z = match self.find_kind(db, c.arg(1).unwrap_or(b""), Kind::ZSet, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) if count.is_some() => return r.array(0),
            Ok(None) => return r.nil(),
            Ok(Some(z)) => z,
        };
        let len = self.slots[z as usize].count as usize;
        let per = if withscores { 2 } else { 1 };
        match count {
            None => {
                let i = self.random_below(len);
                let e = self.nth_child(z, i as i64).unwrap_or(NIL);
                r.bulk(self.key_of(e))
            }
            Some(n) if n < 0 => {
                // |n| picks, repeats allowed (a count too large for the output buffer ends in
                // its error).
                let picks = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
                r.array(picks.saturating_mul(per))?;
                for _ in 0..picks {
                    let i = self.random_below(len);
                    let e = self.nth_child(z, i as i64).unwrap_or(NIL);
                    self.zreply_member(r, e, withscores)?;
                }
                Ok(())
            }
            Some(n) => {
                // Distinct members, each kept with the chance that leaves the right number for
                // the rest (selection sampling), in the set's order.
                let mut want = (n as u64).min(len as u64) as usize;
                r.array(want * per)?;
                let (mut e, mut left) = (self.slots[z as usize].next, len);
                while want > 0 && e != NIL {
                    if self.random_below(left) < want {
                        self.zreply_member(r, e, withscores)?;
                        want -= 1;
                    }
                    left -= 1;
                    e = self.slots[e as usize].next;
                }
                Ok(())
            }
        }
    }

    /// `ZSCAN key cursor [MATCH pattern] [COUNT count]`. The cursor is a slot index, as
    /// `SCAN`'s (see `src/keyspace.rs`): a member keeps its slot for as long as it exists, so a
    /// full scan returns every member present for all of it exactly once. A call answers the
    /// members (those `MATCH` lets through, with their scores, in the set's order) of the next
    /// `COUNT` slots holding one from the cursor on (fewer when their reply would take a
    /// quarter of the output buffer), and the slot to go on from, 0 at the end; finding them
    /// costs a walk over the set per member.
    fn zscan(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let Some(cursor) = scan_cursor(c.arg(2).unwrap_or(b"")) else {
            return r.error(INVALID_CURSOR);
        };
        let z = match self.find_kind(db, c.arg(1).unwrap_or(b""), Kind::ZSet, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) => return r.raw(b"*2\r\n$1\r\n0\r\n*0\r\n"),
            Ok(Some(z)) => z,
        };
        let (mut pattern, mut count) = (None, 10i64);
        let mut j = 3;
        while let Some(opt) = c.arg(j) {
            let Some(v) = c.arg(j + 1) else {
                return r.error(SYNTAX);
            };
            if eq(opt, "count") {
                match parse_int(v) {
                    None => return r.error(NOT_INT),
                    Some(n) if n < 1 => return r.error(SYNTAX),
                    Some(n) => count = n,
                }
            } else if eq(opt, "match") {
                pattern = (v != b"*").then_some(v);
            } else {
                return r.error(SYNTAX);
            }
            j += 2;
        }
        // The first slot at or after `from` that holds a member.
        let next_slot = |from: u64| {
            let mut e = self.slots[z as usize].next;
            let mut best = None;
            while e != NIL {
                if u64::from(e) >= from && best.is_none_or(|b| e < b) {
                    best = Some(e);
                }
                e = self.slots[e as usize].next;
            }
            best
        };
        // This call's slots: from the cursor up to `end` (`None`: to the end of the table).
        let budget = r.capacity() / 4;
        let (mut end, mut taken, mut bytes) = (Some(cursor), 0, 0);
        while let Some(from) = end {
            let Some(e) = next_slot(from) else {
                end = None;
                break;
            };
            let cost = 48 + self.slots[e as usize].klen as usize;
            if taken == count || (taken > 0 && bytes + cost > budget) {
                end = Some(u64::from(e));
                break;
            }
            (taken, bytes, end) = (taken + 1, bytes + cost, Some(u64::from(e) + 1));
        }
        let wanted = |e: u32| {
            let e64 = u64::from(e);
            e64 >= cursor
                && end.is_none_or(|end| e64 < end)
                && pattern.is_none_or(|p| glob(p, self.key_of(e)))
        };
        let mut n = 0;
        let mut e = self.slots[z as usize].next;
        while e != NIL {
            n += usize::from(wanted(e));
            e = self.slots[e as usize].next;
        }
        r.array(2)?;
        r.bulk(fmt_i64(end.map_or(0, |end| end as i64), &mut [0; 24]))?;
        r.array(2 * n)?;
        let mut e = self.slots[z as usize].next;
        while e != NIL {
            if wanted(e) {
                self.zreply_member(r, e, true)?;
            }
            e = self.slots[e as usize].next;
        }
        Ok(())
    }
}

/// The set operation of `ZUNION`, `ZINTER`, `ZDIFF` (and their `STORE` forms) or
/// `ZINTERCARD`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
    Card,
}

/// How `ZUNION` and `ZINTER` combine a member's scores (`AGGREGATE`).
#[derive(Clone, Copy)]
enum Agg {
    Sum,
    Min,
    Max,
}

impl Agg {
    /// `acc` combined with `v`, as Redis does it (a sum of opposite infinities is 0).
    fn apply(self, acc: f64, v: f64) -> f64 {
        match self {
            Agg::Sum => {
                let s = acc + v;
                if s.is_nan() {
                    0.0
                } else {
                    s
                }
            }
            Agg::Min => {
                if v < acc {
                    v
                } else {
                    acc
                }
            }
            Agg::Max => {
                if v > acc {
                    v
                } else {
                    acc
                }
            }
        }
    }
}
