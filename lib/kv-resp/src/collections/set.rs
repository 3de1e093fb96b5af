//! Sets: `SADD`, `SREM`, `SPOP`, `SMEMBERS`, `SISMEMBER`, `SMISMEMBER`, `SCARD`,
//! `SRANDMEMBER`, `SMOVE`, `SSCAN`, and the operations between sets: `SINTER`, `SINTERCARD`,
//! `SUNION`, `SDIFF` and the `STORE` forms of the three.
//!
//! `SPOP` and `SRANDMEMBER` pick members with the store's pseudo-random generator. One member is
//! reached by walking to a random rank, O(n); `count` distinct members are chosen in one walk
//! over the set (selection sampling: each member is taken with probability
//! `still needed / still left`), so the chosen members come in the set's order.
//!
//! The operations between sets keep no intermediate set: a member of the result is found by
//! looking it up in the other sets (O(1) each). The intersection walks its smallest set and
//! keeps the members that every other set has; the union walks every set and keeps a member
//! that no earlier set has; the difference walks the first set and keeps the members that no
//! other set has. A reply walks twice, to count the members for its header and to write them;
//! a `STORE` form walks once to plan the resources (the new set beside the sets it is made of,
//! or in place of the destination when the destination is none of them), once to build it.
//! The new set is built out of the key space and replaces the destination only when complete,
//! taking its slot (see [`Store::publish_set`]), since the destination may be one of the sets
//! read. As in Redis, the result replaces a destination of any type, and has no expiry.
//!
//! `SSCAN`'s cursor is a slot index, as `SCAN`'s (see `src/keyspace.rs`): a call walks the slot
//! table from it and answers the set's members it passes, so a full scan returns every member
//! that is in the set for all of it. A scan from 0 of a set of at most [`SCAN_WHOLE`] members
//! whose reply fits a quarter of the output buffer answers the whole set and cursor 0, as Redis
//! does for its small encodings.

use super::{pop_count, Cmd};
use crate::commands::{eq, Res, NOT_INT, OOM, SYNTAX, WRONGTYPE};
use crate::keyspace::{glob, scan_cursor, INVALID_CURSOR};
use crate::output::{fmt_i64, Reply, INT_REPLY_MAX};
use crate::parser::{parse_int, Command};
use crate::repeats::{Repeats, Seen};
use crate::store::{Budget, Kind, Store, HDR, NIL};

/// The largest set a scan from cursor 0 answers in one reply.
pub(crate) const SCAN_WHOLE: u32 = 128;

/// `SRANDMEMBER`'s count out of `-i64::MAX..=i64::MAX` (Redis's `-LONG_MAX`..`LONG_MAX`).
const COUNT_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
const NUMKEYS: &str = "ERR numkeys should be greater than 0";
const NUMKEYS_ARGS: &str = "ERR Number of keys can't be greater than number of args";
const LIMIT: &str = "ERR LIMIT can't be negative";

/// An operation between sets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The sets an operation reads: the `n` keys that the command's arguments name from `first` on
/// (an absent key is an empty set).
#[derive(Clone, Copy)]
struct Operands<'c, 'p> {
    c: &'c Command<'p>,
    first: usize,
    n: usize,
}

impl<'p> Operands<'_, 'p> {
    fn key(&self, j: usize) -> &'p [u8] {
        self.c.arg(self.first + j).unwrap_or(b"")
    }
}

impl Store<'_> {
    /// Executes a set command.
    pub(super) fn set_command(
        &mut self,
        db: u8,
        cmd: Cmd,
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let op = match cmd {
            Cmd::SMove => return self.smove(db, c, now, r),
            Cmd::SScan => return self.sscan(db, c, now, r),
            Cmd::SInterCard => return self.sintercard(db, c, now, r),
            Cmd::SInter | Cmd::SInterStore => Some(Op::Inter),
            Cmd::SUnion | Cmd::SUnionStore => Some(Op::Union),
            Cmd::SDiff | Cmd::SDiffStore => Some(Op::Diff),
            _ => None,
        };
        if let Some(op) = op {
            let store = matches!(cmd, Cmd::SInterStore | Cmd::SUnionStore | Cmd::SDiffStore);
            let first = 1 + usize::from(store);
            let sets = Operands {
                c,
                first,
                n: c.argc() - first,
            };
            if !self.operands_are_sets(db, sets, now) {
                return r.error(WRONGTYPE);
            }
            return if store {
                self.store_result(db, op, sets, now, r)
            } else {
                self.reply_result(db, op, sets, now, r)
            };
        }
        let key = c.arg(1).unwrap_or(b"");
        if matches!(cmd, Cmd::SPop | Cmd::SRandMember) && c.argc() > 3 {
            return r.error(SYNTAX);
        }
        let count = match cmd {
            Cmd::SPop => match pop_count(c) {
                Err(msg) => return r.error(msg),
                Ok(n) => n.map(|n| n.min(i64::MAX as u64) as i64),
            },
            Cmd::SRandMember => match c.arg(2).map(parse_int) {
                None => None,
                Some(None) => return r.error(NOT_INT),
                Some(Some(i64::MIN)) => return r.error(COUNT_RANGE),
                Some(n) => n,
            },
            _ => None,
        };
        let s = match self.find_kind(db, key, Kind::Set, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(s) => s,
        };
        match cmd {
            Cmd::SAdd => self.sadd(db, c, s, now, r),
            Cmd::SRem => {
                let Some(s) = s else {
                    return r.int(0);
                };
                r.reserve(24)?;
                let mut n = 0;
                for m in c.args().skip(2) {
                    if let Some(e) = self.find_field(s, m) {
                        let last = self.slots[s as usize].count == 1;
                        self.remove_child_or_key(e);
                        n += 1;
                        if last {
                            break; // The set was emptied, and deleted with its last member.
                        }
                    }
                }
                r.int(n)
            }
            Cmd::SPop | Cmd::SRandMember => {
                let pop = cmd == Cmd::SPop;
                let Some(s) = s else {
                    return if count.is_some() { r.array(0) } else { r.nil() };
                };
                let len = i64::from(self.slots[s as usize].count);
                match count {
                    None => {
                        let i = self.random_below(len as usize);
                        let e = self.nth_child(s, i as i64).unwrap_or(NIL);
                        r.bulk(self.key_of(e))?;
                        if pop {
                            self.remove_child_or_key(e);
                        }
                        Ok(())
                    }
                    Some(n) if n < 0 => {
                        // SRANDMEMBER with a negative count: |n| picks, repeats allowed (a
                        // count too large for the output buffer ends in its error).
                        let picks = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
                        r.array(picks)?;
                        for _ in 0..picks {
                            let i = self.random_below(len as usize);
                            let e = self.nth_child(s, i as i64).unwrap_or(NIL);
                            r.bulk(self.key_of(e))?;
                        }
                        Ok(())
                    }
                    Some(n) => {
                        let n = n.min(len);
                        r.array(n as usize)?;
                        // The same draws choose the same members in both walks.
                        let seed = self.rng_state();
                        self.sample(s, n, |st, e| st.reply_member(r, e))?;
                        if pop {
                            self.set_rng_state(seed);
                            let _ = self.sample(s, n, |st, e| {
                                st.remove_child_or_key(e);
                                Ok::<(), ()>(())
                            });
                        }
                        Ok(())
                    }
                }
            }
            Cmd::SMembers => {
                let Some(s) = s else {
                    return r.array(0);
                };
                r.array(self.slots[s as usize].count as usize)?;
                let mut e = self.slots[s as usize].next;
                while e != NIL {
                    r.bulk(self.key_of(e))?;
                    e = self.slots[e as usize].next;
                }
                Ok(())
            }
            Cmd::SIsMember => {
                let m = c.arg(2).unwrap_or(b"");
                r.int(i64::from(s.and_then(|s| self.find_field(s, m)).is_some()))
            }
            Cmd::SMIsMember => {
                r.array(c.argc() - 2)?;
                for m in c.args().skip(2) {
                    r.int(i64::from(s.and_then(|s| self.find_field(s, m)).is_some()))?;
                }
                Ok(())
            }
            Cmd::SCard => r.int(s.map_or(0, |s| i64::from(self.slots[s as usize].count))),
            _ => Ok(()),
        }
    }

    fn reply_member(&self, r: &mut Reply<'_, '_>, e: u32) -> Res {
        r.bulk(self.key_of(e))
    }

    /// Calls `f` on `n` distinct members of set `s` chosen at random (`n` at most the set's
    /// size), in the set's order; `f` may remove the member it is given.
    pub(super) fn sample<E>(
        &mut self,
        s: u32,
        n: i64,
        mut f: impl FnMut(&mut Self, u32) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut left = i64::from(self.slots[s as usize].count);
        let mut needed = n;
        let mut e = self.slots[s as usize].next;
        while e != NIL && needed > 0 {
            let next = self.slots[e as usize].next;
            if (self.random_below(left as usize) as i64) < needed {
                needed -= 1;
                f(self, e)?;
            }
            left -= 1;
            e = next;
        }
        Ok(())
    }

    /// `SADD key member...`.
    fn sadd(
        &mut self,
        db: u8,
        c: &Command<'_>,
        s: Option<u32>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            let s = st.find_key(db, key, now);
            if s.is_none() {
                b.step((0, 0), (HDR + key.len(), 1));
            }
            // A member named twice is added once; one that may have been named before
            // (`Seen::Unknown`) is planned as new.
            let mut repeats = Repeats::new();
            for m in c.args().skip(2) {
                let new = match repeats.note(m, 0) {
                    Seen::Again(_) => false,
                    Seen::First => s.and_then(|s| st.find_field(s, m)).is_none(),
                    Seen::Unknown => true,
                };
                if new {
                    b.step((0, 0), (HDR + m.len(), 1));
                }
            }
            (b.ok(), ())
        });
        if !ok {
            return r.error(OOM);
        }
        // The count is taken while the members are added, its reply's room reserved first.
        r.reserve(INT_REPLY_MAX)?;
        let s = match s {
            Some(s) => s,
            None => match self.insert_key(db, Kind::Set, key, None, 0) {
                Some(s) => s,
                None => return Ok(()), // Unreachable: the plan fitted.
            },
        };
        let mut added = 0;
        for m in c.args().skip(2) {
            if self.find_field(s, m).is_none() {
                self.insert_child(s, m, b"", NIL);
                added += 1;
            }
        }
        r.int(added)
    }

    /// `SMOVE source destination member`.
    fn smove(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let (src, dst, m) = (
            c.arg(1).unwrap_or(b""),
            c.arg(2).unwrap_or(b""),
            c.arg(3).unwrap_or(b""),
        );
        let s = self.find_key(db, src, now);
        let d = self.find_key(db, dst, now);
        let Some(s) = s else {
            return r.int(0);
        };
        let is_set = |st: &Self, e: u32| st.slots[e as usize].kind == Kind::Set;
        if !is_set(self, s) || d.is_some_and(|d| !is_set(self, d)) {
            return r.error(WRONGTYPE);
        }
        if d == Some(s) {
            return r.int(i64::from(self.find_field(s, m).is_some()));
        }
        let Some(e) = self.find_field(s, m) else {
            return r.int(0);
        };
        let adds = d.is_none_or(|d| self.find_field(d, m).is_none());
        if adds {
            let (ok, ()) = self.fits(now, |st| {
                let mut b = Budget::new(st);
                let member = (HDR + m.len(), 1);
                let freed = if st.slots[s as usize].count == 1 {
                    (member.0 + HDR + src.len(), 2)
                } else {
                    member
                };
                let taken = if d.is_none() {
                    (member.0 + HDR + dst.len(), 2)
                } else {
                    member
                };
                b.step(freed, taken);
                (b.ok(), ())
            });
            if !ok {
                return r.error(OOM);
            }
        }
        r.int(1)?;
        self.remove_child_or_key(e);
        if adds {
            let d = match d {
                Some(d) => d,
                None => match self.insert_key(db, Kind::Set, dst, None, 0) {
                    Some(d) => d,
                    None => return Ok(()), // Unreachable: the plan fitted.
                },
            };
            self.insert_child(d, m, b"", NIL);
        }
        Ok(())
    }

    /// `SINTERCARD numkeys key... [LIMIT limit]`.
    fn sintercard(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let n = match c.arg(1).and_then(parse_int) {
            Some(n) if n >= 1 => n,
            _ => return r.error(NUMKEYS),
        };
        let argc = c.argc();
        if n > (argc - 2) as i64 {
            return r.error(NUMKEYS_ARGS);
        }
        let n = n as usize;
        let mut limit = 0;
        let mut j = 2 + n;
        while let Some(opt) = c.arg(j) {
            if !(eq(opt, "limit") && j + 1 < argc) {
                return r.error(SYNTAX);
            }
            j += 1;
            match c.arg(j).and_then(parse_int) {
                Some(l) if l >= 0 => limit = l,
                _ => return r.error(LIMIT),
            }
            j += 1;
        }
        let sets = Operands { c, first: 2, n };
        if !self.operands_are_sets(db, sets, now) {
            return r.error(WRONGTYPE);
        }
        let mut card = 0;
        let _ = self.for_each_result(db, Op::Inter, sets, now, |_, _| {
            card += 1;
            Ok::<bool, ()>(limit == 0 || card < limit)
        });
        r.int(card)
    }

    /// Whether each of the operands is a set or absent (deleting the expired ones).
    fn operands_are_sets(&mut self, db: u8, sets: Operands<'_, '_>, now: u64) -> bool {
        (0..sets.n).all(|j| self.find_kind(db, sets.key(j), Kind::Set, now).is_ok())
    }

    /// Operand `j`: its set, `None` when absent.
    fn operand(&mut self, db: u8, sets: Operands<'_, '_>, j: usize, now: u64) -> Option<u32> {
        self.find_kind(db, sets.key(j), Kind::Set, now)
            .ok()
            .flatten()
    }

    /// Whether operand `j` has a member named as member `e` (of any set).
    fn operand_has(&mut self, db: u8, sets: Operands<'_, '_>, j: usize, e: u32, now: u64) -> bool {
        match self.operand(db, sets, j, now) {
            None => false,
            Some(s) => {
                s == self.slots[e as usize].parent || self.find_field(s, self.key_of(e)).is_some()
            }
        }
    }

    /// Calls `f` with each member of the result of `op` over `sets` (each a member of one of
    /// the sets, each name once), until it answers `false`; `f` may change anything but the
    /// operands.
    fn for_each_result<E>(
        &mut self,
        db: u8,
        op: Op,
        sets: Operands<'_, '_>,
        now: u64,
        mut f: impl FnMut(&mut Self, u32) -> Result<bool, E>,
    ) -> Result<(), E> {
        let base = match op {
            Op::Union => {
                for j in 0..sets.n {
                    let Some(s) = self.operand(db, sets, j, now) else {
                        continue;
                    };
                    let mut e = self.slots[s as usize].next;
                    while e != NIL {
                        if !(0..j).any(|i| self.operand_has(db, sets, i, e, now)) && !f(self, e)? {
                            return Ok(());
                        }
                        e = self.slots[e as usize].next;
                    }
                }
                return Ok(());
            }
            Op::Diff => 0,
            Op::Inter => {
                // The smallest set; the intersection is empty when a set is absent.
                let mut base: Option<(usize, u32)> = None;
                for j in 0..sets.n {
                    let Some(s) = self.operand(db, sets, j, now) else {
                        return Ok(());
                    };
                    let count = |e: u32| self.slots[e as usize].count;
                    if base.is_none_or(|(_, b)| count(s) < count(b)) {
                        base = Some((j, s));
                    }
                }
                base.map_or(0, |(j, _)| j)
            }
        };
        let Some(s) = self.operand(db, sets, base, now) else {
            return Ok(());
        };
        let mut e = self.slots[s as usize].next;
        while e != NIL {
            let mut others = (0..sets.n).filter(|&j| j != base);
            let keep = if op == Op::Inter {
                others.all(|j| self.operand_has(db, sets, j, e, now))
            } else {
                !others.any(|j| self.operand_has(db, sets, j, e, now))
            };
            if keep && !f(self, e)? {
                return Ok(());
            }
            e = self.slots[e as usize].next;
        }
        Ok(())
    }

    /// `SINTER`, `SUNION`, `SDIFF`: the result's members.
    fn reply_result(
        &mut self,
        db: u8,
        op: Op,
        sets: Operands<'_, '_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let mut n = 0;
        let _ = self.for_each_result(db, op, sets, now, |_, _| {
            n += 1;
            Ok::<bool, ()>(true)
        });
        r.array(n)?;
        self.for_each_result(db, op, sets, now, |st, e| {
            st.reply_member(r, e).map(|()| true)
        })
    }

    /// `SINTERSTORE`, `SUNIONSTORE`, `SDIFFSTORE`: the result replaces the destination (an
    /// empty result deletes it); answers the result's size.
    fn store_result(
        &mut self,
        db: u8,
        op: Op,
        sets: Operands<'_, '_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let dst = sets.c.arg(1).unwrap_or(b"");
        let old = self.find_key(db, dst, now);
        let read =
            old.is_some_and(|d| (0..sets.n).any(|j| self.operand(db, sets, j, now) == Some(d)));
        let (ok, count) = self.fits(now, |st| {
            let (mut count, mut bytes) = (0, HDR + dst.len());
            let _ = st.for_each_result(db, op, sets, now, |st, e| {
                count += 1;
                bytes += HDR + st.slots[e as usize].klen as usize;
                Ok::<bool, ()>(true)
            });
            let mut b = Budget::new(st);
            if count > 0 {
                let freed = match old {
                    Some(d) if !read => st.footprint(d),
                    _ => (0, 0),
                };
                b.step(freed, (bytes, 1 + count));
            }
            (b.ok(), count)
        });
        if !ok {
            return r.error(OOM);
        }
        r.int(count as i64)?;
        if count == 0 {
            if let Some(d) = old {
                self.remove_key(d);
            }
            return Ok(());
        }
        let old = match old {
            Some(d) if !read => {
                self.remove_key(d);
                None
            }
            old => old,
        };
        let Some(n) = self.insert_unpublished_set(db, dst) else {
            return Ok(()); // Unreachable: the plan fitted.
        };
        let _ = self.for_each_result(db, op, sets, now, |st, e| {
            st.copy_child(e, n).map(|_| true).ok_or(())
        });
        self.publish_set(n, old);
        Ok(())
    }

    /// `SSCAN key cursor [MATCH pattern] [COUNT count]` (see the module's docs).
    fn sscan(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let Some(cursor) = scan_cursor(c.arg(2).unwrap_or(b"")) else {
            return r.error(INVALID_CURSOR);
        };
        let s = match self.find_kind(db, c.arg(1).unwrap_or(b""), Kind::Set, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) => {
                r.array(2)?;
                r.bulk(b"0")?;
                return r.array(0);
            }
            Ok(Some(s)) => s,
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
        let wanted = |st: &Self, e: u32| pattern.is_none_or(|p| glob(p, st.key_of(e)));
        let budget = r.capacity() / 4;
        let cost = |st: &Self, e: u32| 16 + st.slots[e as usize].klen as usize;
        let set = self.slots[s as usize];
        if cursor == 0 && set.count <= SCAN_WHOLE {
            let (mut bytes, mut n, mut e) = (0, 0, set.next);
            while e != NIL {
                bytes += cost(self, e);
                n += usize::from(wanted(self, e));
                e = self.slots[e as usize].next;
            }
            if bytes <= budget {
                r.array(2)?;
                r.bulk(b"0")?;
                r.array(n)?;
                let mut e = set.next;
                while e != NIL {
                    if wanted(self, e) {
                        r.bulk(self.key_of(e))?;
                    }
                    e = self.slots[e as usize].next;
                }
                return Ok(());
            }
        }
        // The slots this call passes: up to `end`, which is where the next call starts.
        let ours = |st: &Self, i: usize| {
            let m = &st.slots[i];
            m.kind == Kind::Member && m.parent == s
        };
        let nslots = self.nslots;
        let start = cursor.min(nslots as u64) as usize;
        let max_slots = (count.saturating_mul(10).max(1024) as usize).min(nslots);
        let (mut end, mut seen, mut bytes, mut n) = (start, 0, 0, 0);
        while end < nslots && end - start < max_slots && seen < count {
            if ours(self, end) {
                let c = cost(self, end as u32);
                if n > 0 && bytes + c > budget {
                    break;
                }
                seen += 1;
                if wanted(self, end as u32) {
                    bytes += c;
                    n += 1;
                }
            }
            end += 1;
        }
        let next = if end >= nslots { 0 } else { end as i64 };
        r.array(2)?;
        r.bulk(fmt_i64(next, &mut [0; 24]))?;
        r.array(n)?;
        for i in start..end {
            if ours(self, i) && wanted(self, i as u32) {
                r.bulk(self.key_of(i as u32))?;
            }
        }
        Ok(())
    }
}
