//! Sorted sets: `ZADD`, `ZINCRBY`, `ZPOPMIN`, `ZPOPMAX`, `ZRANGE` (by rank or `BYSCORE`,
//! `REV`, `LIMIT`, `WITHSCORES`), `ZRANK`, `ZREVRANK`, `ZSCORE`, `ZCARD`, `ZREM`.
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
    let Some(e_at) = text.iter().position(|&b| b == b'e') else {
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

/// A score bound of `ZRANGE ... BYSCORE`: `(` before the number makes it exclusive.
#[derive(Clone, Copy)]
struct Bound {
    value: f64,
    exclusive: bool,
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
                    Ok(Some(0)) => return r.array(0),
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
                        self.slots[e as usize].expire = new.to_bits();
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
                        self.slots[e as usize].expire = score.to_bits();
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

    /// `ZRANGE key start stop [BYSCORE] [REV] [LIMIT offset count] [WITHSCORES]`.
    fn zrange(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let (mut byscore, mut rev, mut withscores) = (false, false, false);
        let mut limit: Option<(i64, i64)> = None;
        let mut j = 4;
        while let Some(a) = c.arg(j) {
            if eq(a, "withscores") {
                withscores = true;
            } else if eq(a, "rev") {
                rev = true;
            } else if eq(a, "byscore") {
                byscore = true;
            } else if eq(a, "limit") && c.argc() > j + 2 {
                let (Some(off), Some(n)) = (
                    parse_int(c.arg(j + 1).unwrap_or(b"")),
                    parse_int(c.arg(j + 2).unwrap_or(b"")),
                ) else {
                    return r.error(NOT_INT);
                };
                limit = Some((off, n));
                j += 2;
            } else {
                return r.error(SYNTAX);
            }
            j += 1;
        }
        if limit.is_some() && !byscore {
            return r.error(
                "ERR syntax error, LIMIT is only supported in combination with either BYSCORE \
                 or BYLEX",
            );
        }
        let (a2, a3) = (c.arg(2).unwrap_or(b""), c.arg(3).unwrap_or(b""));
        if byscore {
            // With REV the first bound is the maximum.
            let (lo, hi) = if rev { (a3, a2) } else { (a2, a3) };
            let (Some(min), Some(max)) = (parse_bound(lo), parse_bound(hi)) else {
                return r.error("ERR min or max is not a float");
            };
            let z = match self.find_kind(db, c.arg(1).unwrap_or(b""), Kind::ZSet, now) {
                Err(()) => return r.error(WRONGTYPE),
                Ok(None) => return r.array(0),
                Ok(Some(z)) => z,
            };
            let (offset, count) = limit.unwrap_or((0, -1));
            let mut n = 0;
            let _ = self.by_score(z, min, max, rev, offset, count, |_| {
                n += 1;
                Ok(())
            });
            r.array(if withscores { 2 * n } else { n })?;
            return self.by_score(z, min, max, rev, offset, count, |e| {
                r.bulk(self.key_of(e))?;
                if withscores {
                    Self::reply_score(r, self.score_of(e))?;
                }
                Ok(())
            });
        }
        let (Some(start), Some(stop)) = (parse_int(a2), parse_int(a3)) else {
            return r.error(NOT_INT);
        };
        let z = match self.find_kind(db, c.arg(1).unwrap_or(b""), Kind::ZSet, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) => return r.array(0),
            Ok(Some(z)) => z,
        };
        let Some((from, to)) = rank_range(start, stop, self.slots[z as usize].count) else {
            return r.array(0);
        };
        let n = (to - from + 1) as usize;
        r.array(if withscores { 2 * n } else { n })?;
        let from = i64::from(from);
        let mut e = self
            .nth_child(z, if rev { -1 - from } else { from })
            .unwrap_or(NIL);
        for _ in 0..n {
            r.bulk(self.key_of(e))?;
            if withscores {
                Self::reply_score(r, self.score_of(e))?;
            }
            e = self.step_from(e, !rev);
        }
        Ok(())
    }

    /// Calls `f` on the members of sorted set `z` whose scores lie between `min` and `max`, in
    /// order (from the highest for `rev`), skipping the first `offset` (none if negative) and
    /// stopping after `count` (all for a negative count).
    #[allow(clippy::too_many_arguments)]
    fn by_score(
        &self,
        z: u32,
        min: Bound,
        max: Bound,
        rev: bool,
        offset: i64,
        count: i64,
        mut f: impl FnMut(u32) -> Res,
    ) -> Res {
        if offset < 0 {
            return Ok(());
        }
        let above_min = |v: f64| v > min.value || (!min.exclusive && v == min.value);
        let below_max = |v: f64| v < max.value || (!max.exclusive && v == max.value);
        let (mut skip, mut left) = (offset, count);
        let mut e = self.end_of(z, !rev);
        while e != NIL && left != 0 {
            let v = self.score_of(e);
            let (inside_start, inside_end) = if rev {
                (below_max(v), above_min(v))
            } else {
                (above_min(v), below_max(v))
            };
            if !inside_end {
                break;
            }
            if inside_start {
                if skip > 0 {
                    skip -= 1;
                } else {
                    f(e)?;
                    left -= 1;
                }
            }
            e = self.step_from(e, !rev);
        }
        Ok(())
    }
}
