//! Sorted sets: `ZADD`, `ZINCRBY`, `ZPOPMIN`, `ZPOPMAX`, `ZRANGE` (by rank, `BYSCORE` or
//! `BYLEX`, `REV`, `LIMIT`, `WITHSCORES`), `ZRANK`, `ZREVRANK`, `ZSCORE`, `ZCARD`, `ZREM`.
//!
//! Members are kept in (score, member) order in their set's child list (see [`crate::store`]
//! for why a list and what it costs). Scores are `f64`s, parsed as Redis parses them (`inf`,
//! `-inf`, exponents; not NaN) and formatted as Redis 7.0 formats them (C's `%.17g`: `1`,
//! `1.5`, `0.10000000000000001`, `1e+17`, `inf`).

use core::cmp::Ordering;
use core::fmt::Write as _;

use super::{pop_count, rank_range, Cmd};
use crate::commands::{eq, pairs, Res, SliceWriter, NOT_INT, OOM, SYNTAX, WRONGTYPE};
use crate::output::Reply;
use crate::parser::{parse_int, Command};
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
                let min = cmd == Cmd::ZPopMin;
                r.array(2 * n as usize)?;
                let mut e = self.end_of(z, min);
                for _ in 0..n {
                    r.bulk(self.key_of(e))?;
                    Self::reply_score(r, self.score_of(e))?;
                    e = self.step_from(e, min);
                }
                for _ in 0..n {
                    let e = self.end_of(z, min);
                    self.remove_child_or_key(e);
                }
                Ok(())
            }
            Cmd::ZRange => self.zrange(db, c, now, r),
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
                for (i, (_, m)) in elements().enumerate() {
                    let earlier = elements().take(i).any(|(_, p)| p == m);
                    if !earlier && z.and_then(|z| st.find_field(z, m)).is_none() {
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

    /// `ZRANGE key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`.
    fn zrange(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        #[derive(PartialEq)]
        enum By {
            Rank,
            Score,
            Lex,
        }
        let (mut by, mut rev, mut withscores) = (None, None, false);
        // Redis's default count, -1, also means "no LIMIT".
        let (mut offset, mut count) = (0, -1);
        let mut j = 4;
        while let Some(a) = c.arg(j) {
            if eq(a, "withscores") {
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
        let (a2, a3) = (c.arg(2).unwrap_or(b""), c.arg(3).unwrap_or(b""));
        // By score or member, with REV, the first bound is the maximum.
        let (lo, hi) = if rev && by != By::Rank {
            (a3, a2)
        } else {
            (a2, a3)
        };
        enum Range<'a> {
            Rank(i64, i64),
            Score(Bound, Bound),
            Lex(Lex<'a>, Lex<'a>),
        }
        let range = match by {
            By::Rank => match (parse_int(lo), parse_int(hi)) {
                (Some(start), Some(stop)) => Range::Rank(start, stop),
                _ => return r.error(NOT_INT),
            },
            By::Score => match (parse_bound(lo), parse_bound(hi)) {
                (Some(min), Some(max)) => Range::Score(min, max),
                _ => return r.error("ERR min or max is not a float"),
            },
            By::Lex => match (parse_lex(lo), parse_lex(hi)) {
                (Some(min), Some(max)) => Range::Lex(min, max),
                _ => return r.error("ERR min or max not valid string range item"),
            },
        };
        let z = match self.find_kind(db, c.arg(1).unwrap_or(b""), Kind::ZSet, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) => return r.array(0),
            Ok(Some(z)) => z,
        };
        let per = if withscores { 2 } else { 1 };
        let member = |st: &Self, r: &mut Reply<'_, '_>, e: u32| {
            r.bulk(st.key_of(e))?;
            if withscores {
                Self::reply_score(r, st.score_of(e))?;
            }
            Ok(())
        };
        let st: &Self = self;
        // Whether the range can hold anything; whether a member is above the minimum, below the
        // maximum.
        let (some, above, below): (bool, Test<'_>, Test<'_>) = match range {
            Range::Rank(start, stop) => {
                return st.by_rank(z, start, stop, rev, per, member, r);
            }
            Range::Score(min, max) => (
                min.value < max.value
                    || (min.value == max.value && !min.exclusive && !max.exclusive),
                &move |e| min.below(st.score_of(e)),
                &move |e| max.above(st.score_of(e)),
            ),
            Range::Lex(min, max) => (
                Lex::some_between(min, max),
                &move |e| min.below(st.key_of(e)),
                &move |e| max.above(st.key_of(e)),
            ),
        };
        let mut n = 0;
        if some {
            let _ = st.in_range(z, above, below, rev, offset, count, |_| {
                n += 1;
                Ok(())
            });
        }
        r.array(per * n)?;
        if n == 0 {
            return Ok(());
        }
        st.in_range(z, above, below, rev, offset, count, |e| member(st, r, e))
    }

    /// `ZRANGE` by rank: members `start` to `stop` (Redis's clamping) from the lowest (from the
    /// highest for `rev`), each written by `member` as `per` reply elements.
    #[allow(clippy::too_many_arguments)]
    fn by_rank(
        &self,
        z: u32,
        start: i64,
        stop: i64,
        rev: bool,
        per: usize,
        member: impl Fn(&Self, &mut Reply<'_, '_>, u32) -> Res,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let Some((from, to)) = rank_range(start, stop, self.slots[z as usize].count) else {
            return r.array(0);
        };
        let n = (to - from + 1) as usize;
        r.array(per * n)?;
        let from = i64::from(from);
        let mut e = self
            .nth_child(z, if rev { -1 - from } else { from })
            .unwrap_or(NIL);
        for _ in 0..n {
            member(self, r, e)?;
            e = self.step_from(e, !rev);
        }
        Ok(())
    }

    /// Calls `f` on the members of sorted set `z` that are `above` the minimum and `below` the
    /// maximum, in order (from the highest for `rev`), skipping the first `offset` (none at all
    /// if negative) and stopping after `count` (all for a negative count). The walk is Redis's
    /// (over a small sorted set), which matters for `BYLEX` over members whose scores differ,
    /// where the members in range need not be consecutive: nothing when the last member is
    /// below the minimum or the first above the maximum; else from the first member past the
    /// near bound, if it is within the far one, skipping `offset` members, until the first
    /// member past the far bound.
    #[allow(clippy::too_many_arguments)]
    fn in_range(
        &self,
        z: u32,
        above: Test<'_>,
        below: Test<'_>,
        rev: bool,
        offset: i64,
        count: i64,
        mut f: impl FnMut(u32) -> Res,
    ) -> Res {
        let (first, last) = (self.end_of(z, true), self.end_of(z, false));
        if offset < 0 || first == NIL || !above(last) || !below(first) {
            return Ok(());
        }
        let (near, far) = if rev { (below, above) } else { (above, below) };
        let mut e = self.end_of(z, !rev);
        while e != NIL && !near(e) {
            e = self.step_from(e, !rev);
        }
        if e == NIL || !far(e) {
            return Ok(());
        }
        for _ in 0..offset {
            if e == NIL {
                break;
            }
            e = self.step_from(e, !rev);
        }
        let mut left = count;
        while e != NIL && left != 0 && far(e) {
            f(e)?;
            left -= 1;
            e = self.step_from(e, !rev);
        }
        Ok(())
    }
}
