//! Lists: `LPUSH`, `RPUSH`, `LPUSHX`, `RPUSHX`, `LPOP`, `RPOP`, `LMPOP`, `LRANGE`, `LLEN`,
//! `LINDEX`, `LPOS`, `LSET`, `LINSERT`, `LREM`, `LTRIM`, `LMOVE`, `RPOPLPUSH`.
//!
//! `LMOVE` and `RPOPLPUSH` move the element's entry from one list to the other, so that they
//! take no memory but the destination's key when it is new.

use super::{pop_count, rank_range, Cmd};
use crate::commands::{eq, Res, NOT_INT, OOM, SYNTAX, WRONGTYPE};
use crate::output::Reply;
use crate::parser::{parse_int, Command};
use crate::store::{Budget, Kind, Store, HDR, NIL};

impl Store<'_> {
    /// Executes a list command.
    pub(super) fn list_command(
        &mut self,
        db: u8,
        cmd: Cmd,
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        match cmd {
            Cmd::LPush | Cmd::RPush | Cmd::LPushX | Cmd::RPushX => self.push(db, cmd, c, now, r),
            Cmd::LPop | Cmd::RPop => {
                let count = match pop_count(c) {
                    _ if c.argc() > 3 => {
                        let name = if cmd == Cmd::LPop { "lpop" } else { "rpop" };
                        return crate::commands::wrong_arity(r, name);
                    }
                    Err(msg) => return r.error(msg),
                    Ok(n) => n,
                };
                let l = match self.find_kind(db, key, Kind::List, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) if count.is_some() => return r.raw(b"*-1\r\n"),
                    Ok(None) => return r.nil(),
                    Ok(Some(l)) => l,
                };
                self.pop_reply(l, count, cmd == Cmd::LPop, r)
            }
            Cmd::LMPop => self.lmpop(db, c, now, r),
            Cmd::LInsert => self.linsert(db, c, now, r),
            Cmd::LPos => self.lpos(db, c, now, r),
            Cmd::LMove | Cmd::RPopLPush => self.lmove(db, cmd, c, now, r),
            Cmd::LRange => {
                let (Some(start), Some(stop)) = (
                    parse_int(c.arg(2).unwrap_or(b"")),
                    parse_int(c.arg(3).unwrap_or(b"")),
                ) else {
                    return r.error(NOT_INT);
                };
                let l = match self.find_kind(db, key, Kind::List, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) => return r.array(0),
                    Ok(Some(l)) => l,
                };
                let Some((from, to)) = rank_range(start, stop, self.slots[l as usize].count) else {
                    return r.array(0);
                };
                r.array((to - from + 1) as usize)?;
                let mut e = self.nth_child(l, i64::from(from)).unwrap_or(NIL);
                for _ in from..=to {
                    r.bulk(self.val_of(e))?;
                    e = self.slots[e as usize].next;
                }
                Ok(())
            }
            Cmd::LLen => match self.find_kind(db, key, Kind::List, now) {
                Err(()) => r.error(WRONGTYPE),
                Ok(l) => r.int(l.map_or(0, |l| i64::from(self.slots[l as usize].count))),
            },
            Cmd::LIndex => {
                let l = match self.find_kind(db, key, Kind::List, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) => return r.nil(),
                    Ok(Some(l)) => l,
                };
                let Some(i) = parse_int(c.arg(2).unwrap_or(b"")) else {
                    return r.error(NOT_INT);
                };
                let e = self.nth_child(l, i);
                r.opt_bulk(e.map(|e| self.val_of(e)))
            }
            Cmd::LSet => {
                let l = match self.find_kind(db, key, Kind::List, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) => return r.error("ERR no such key"),
                    Ok(Some(l)) => l,
                };
                let Some(i) = parse_int(c.arg(2).unwrap_or(b"")) else {
                    return r.error(NOT_INT);
                };
                let Some(e) = self.nth_child(l, i) else {
                    return r.error("ERR index out of range");
                };
                let val = c.arg(3).unwrap_or(b"");
                let (ok, ()) = self.fits(now, |st| {
                    let mut b = Budget::new(st);
                    let old = HDR + st.slots[e as usize].vlen as usize;
                    b.step((old, 0), (HDR + val.len(), 0));
                    (b.ok(), ())
                });
                if !ok {
                    return r.error(OOM);
                }
                r.ok()?;
                self.replace_value(e, b"", val);
                Ok(())
            }
            Cmd::LRem => {
                let Some(count) = parse_int(c.arg(2).unwrap_or(b"")) else {
                    return r.error(NOT_INT);
                };
                let l = match self.find_kind(db, key, Kind::List, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) => return r.int(0),
                    Ok(Some(l)) => l,
                };
                let val = c.arg(3).unwrap_or(b"");
                r.reserve(24)?;
                // From the head for count >= 0, from the tail for a negative count; 0: all.
                let left = count >= 0;
                let max = if count == 0 {
                    u64::MAX
                } else {
                    count.unsigned_abs()
                };
                let (mut removed, mut e) = (0, self.end_of(l, left));
                while e != NIL && removed < max {
                    let next = self.step_from(e, left);
                    if self.val_of(e) == val {
                        removed += 1;
                        self.remove_child_or_key(e);
                    }
                    e = next;
                }
                r.int(removed as i64)
            }
            Cmd::LTrim => {
                let (Some(start), Some(stop)) = (
                    parse_int(c.arg(2).unwrap_or(b"")),
                    parse_int(c.arg(3).unwrap_or(b"")),
                ) else {
                    return r.error(NOT_INT);
                };
                let l = match self.find_kind(db, key, Kind::List, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) => return r.ok(),
                    Ok(Some(l)) => l,
                };
                r.ok()?;
                let len = self.slots[l as usize].count;
                let (head, tail) = match rank_range(start, stop, len) {
                    None => (len, 0),
                    Some((from, to)) => (from, len - 1 - to),
                };
                for _ in 0..head {
                    let e = self.slots[l as usize].next;
                    self.remove_child_or_key(e);
                }
                for _ in 0..tail {
                    let e = self.slots[l as usize].prev;
                    self.remove_child_or_key(e);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The first (`left`) or last child of collection `l`.
    pub(super) fn end_of(&self, l: u32, left: bool) -> u32 {
        let s = &self.slots[l as usize];
        if left {
            s.next
        } else {
            s.prev
        }
    }

    /// The child after (`forward`) or before child `e`.
    pub(super) fn step_from(&self, e: u32, forward: bool) -> u32 {
        let s = &self.slots[e as usize];
        if forward {
            s.next
        } else {
            s.prev
        }
    }

    /// `LPUSH`, `RPUSH`, `LPUSHX`, `RPUSHX`.
    fn push(&mut self, db: u8, cmd: Cmd, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        let only_existing = matches!(cmd, Cmd::LPushX | Cmd::RPushX);
        let l = match self.find_kind(db, key, Kind::List, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) if only_existing => return r.int(0),
            Ok(l) => l,
        };
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            if st.find_key(db, key, now).is_none() {
                b.step((0, 0), (HDR + key.len(), 1));
            }
            for e in c.args().skip(2) {
                b.step((0, 0), (HDR + e.len(), 1));
            }
            (b.ok(), ())
        });
        if !ok {
            return r.error(OOM);
        }
        let len = l.map_or(0, |l| self.slots[l as usize].count as usize);
        r.int((len + c.argc() - 2) as i64)?;
        let l = match l {
            Some(l) => l,
            None => match self.insert_key(db, Kind::List, key, None, 0) {
                Some(l) => l,
                None => return Ok(()), // Unreachable: the plan fitted.
            },
        };
        let left = matches!(cmd, Cmd::LPush | Cmd::LPushX);
        for e in c.args().skip(2) {
            let before = if left {
                self.slots[l as usize].next
            } else {
                NIL
            };
            self.insert_child(l, b"", e, before);
        }
        Ok(())
    }

    /// Pops `count` elements (one, answered as a bulk string, for `None`; as many as there
    /// are at most, answered as an array, for `Some`) from the head (`left`) or the tail of
    /// list `l`, deleting the list when it empties.
    fn pop_reply(&mut self, l: u32, count: Option<u64>, left: bool, r: &mut Reply<'_, '_>) -> Res {
        let len = self.slots[l as usize].count;
        let n = count.map_or(1, |n| n.min(u64::from(len)) as u32);
        if count.is_some() {
            r.array(n as usize)?;
        }
        let mut e = self.end_of(l, left);
        for _ in 0..n {
            r.bulk(self.val_of(e))?;
            e = self.step_from(e, left);
        }
        for _ in 0..n {
            let e = self.end_of(l, left);
            self.remove_child_or_key(e);
        }
        Ok(())
    }

    /// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`: pops from the first of the keys
    /// that holds a list.
    fn lmpop(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let Some(numkeys) = parse_int(c.arg(1).unwrap_or(b"")).filter(|&n| n >= 1) else {
            return r.error("ERR numkeys should be greater than 0");
        };
        let Some(where_at) = (numkeys as u64)
            .checked_add(2)
            .filter(|&i| i < c.argc() as u64)
        else {
            return r.error(SYNTAX);
        };
        let where_at = where_at as usize;
        let Some(left) = side(c.arg(where_at).unwrap_or(b"")) else {
            return r.error(SYNTAX);
        };
        let mut count = None;
        let mut j = where_at + 1;
        while let Some(opt) = c.arg(j) {
            match c.arg(j + 1) {
                Some(n) if count.is_none() && eq(opt, "count") => {
                    let Some(n) = parse_int(n).filter(|&n| n >= 1) else {
                        return r.error("ERR count should be greater than 0");
                    };
                    count = Some(n as u64);
                }
                _ => return r.error(SYNTAX),
            }
            j += 2;
        }
        for key in c.args().skip(2).take(numkeys as usize) {
            match self.find_kind(db, key, Kind::List, now) {
                Err(()) => return r.error(WRONGTYPE),
                Ok(None) => {}
                Ok(Some(l)) => {
                    r.array(2)?;
                    r.bulk(key)?;
                    return self.pop_reply(l, Some(count.unwrap_or(1)), left, r);
                }
            }
        }
        r.raw(b"*-1\r\n")
    }

    /// `LINSERT key BEFORE|AFTER pivot element`: inserts next to the first element equal to
    /// the pivot.
    fn linsert(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let place = c.arg(2).unwrap_or(b"");
        let before = if eq(place, "before") {
            true
        } else if eq(place, "after") {
            false
        } else {
            return r.error(SYNTAX);
        };
        let l = match self.find_kind(db, c.arg(1).unwrap_or(b""), Kind::List, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) => return r.int(0),
            Ok(Some(l)) => l,
        };
        let pivot = c.arg(3).unwrap_or(b"");
        let mut e = self.end_of(l, true);
        while e != NIL && self.val_of(e) != pivot {
            e = self.step_from(e, true);
        }
        if e == NIL {
            return r.int(-1);
        }
        let val = c.arg(4).unwrap_or(b"");
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            b.step((0, 0), (HDR + val.len(), 1));
            (b.ok(), ())
        });
        if !ok {
            return r.error(OOM);
        }
        r.int(i64::from(self.slots[l as usize].count) + 1)?;
        let at = if before { e } else { self.step_from(e, true) };
        self.insert_child(l, b"", val, at);
        Ok(())
    }

    /// `LPOS key element [RANK rank] [COUNT count] [MAXLEN len]`.
    fn lpos(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        // Redis's `long` arithmetic, wrapping as it does on x86_64 (a rank of i64::MIN stays
        // negative once negated).
        let (mut rank, mut count, mut maxlen) = (1i64, None, 0i64);
        let mut j = 3;
        while let Some(opt) = c.arg(j) {
            let Some(v) = c.arg(j + 1) else {
                return r.error(SYNTAX);
            };
            if eq(opt, "rank") {
                match parse_int(v) {
                    None => return r.error(NOT_INT),
                    Some(0) => return r.error(RANK_ZERO),
                    Some(n) => rank = n,
                }
            } else if eq(opt, "count") {
                match parse_int(v).filter(|&n| n >= 0) {
                    None => return r.error("ERR COUNT can't be negative"),
                    n => count = n,
                }
            } else if eq(opt, "maxlen") {
                match parse_int(v).filter(|&n| n >= 0) {
                    None => return r.error("ERR MAXLEN can't be negative"),
                    Some(n) => maxlen = n,
                }
            } else {
                return r.error(SYNTAX);
            }
            j += 2;
        }
        let from_tail = rank < 0;
        if from_tail {
            rank = rank.wrapping_neg();
        }
        let l = match self.find_kind(db, c.arg(1).unwrap_or(b""), Kind::List, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) if count.is_some() => return r.array(0),
            Ok(None) => return r.nil(),
            Ok(Some(l)) => l,
        };
        let ele = c.arg(2).unwrap_or(b"");
        let len = i64::from(self.slots[l as usize].count);
        // Calls `each` with the index of every match answered, in the order answered.
        let scan = |st: &Self, each: &mut dyn FnMut(i64) -> Res| -> Res {
            let (mut e, mut index, mut matches) = (st.end_of(l, !from_tail), 0i64, 0i64);
            while e != NIL && (maxlen == 0 || index < maxlen) {
                if st.val_of(e) == ele {
                    matches += 1;
                    if matches >= rank {
                        each(if from_tail { len - index - 1 } else { index })?;
                        match count {
                            None => break,
                            Some(n)
                                if n != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= n =>
                            {
                                break
                            }
                            Some(_) => {}
                        }
                    }
                }
                index += 1;
                e = st.step_from(e, !from_tail);
            }
            Ok(())
        };
        if count.is_none() {
            let mut found = None;
            scan(self, &mut |i| {
                found = Some(i);
                Ok(())
            })?;
            return match found {
                Some(i) => r.int(i),
                None => r.nil(),
            };
        }
        let mut n = 0;
        scan(self, &mut |_| {
            n += 1;
            Ok(())
        })?;
        r.array(n)?;
        scan(self, &mut |i| r.int(i))
    }

    /// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT` and `RPOPLPUSH source destination`
    /// (`RIGHT LEFT`).
    fn lmove(&mut self, db: u8, cmd: Cmd, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let (from_left, to_left) = if cmd == Cmd::RPopLPush {
            (false, true)
        } else {
            match (side(c.arg(3).unwrap_or(b"")), side(c.arg(4).unwrap_or(b""))) {
                (Some(from), Some(to)) => (from, to),
                _ => return r.error(SYNTAX),
            }
        };
        let (src, dst) = (c.arg(1).unwrap_or(b""), c.arg(2).unwrap_or(b""));
        let s = match self.find_kind(db, src, Kind::List, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) => return r.nil(),
            Ok(Some(s)) => s,
        };
        let Ok(d) = self.find_kind(db, dst, Kind::List, now) else {
            return r.error(WRONGTYPE);
        };
        if d.is_none() {
            // The destination's key is made before the source's goes.
            let (ok, ()) = self.fits(now, |st| {
                let mut b = Budget::new(st);
                b.step((0, 0), (HDR + dst.len(), 1));
                (b.ok(), ())
            });
            if !ok {
                return r.error(OOM);
            }
        }
        let e = self.end_of(s, from_left);
        r.bulk(self.val_of(e))?;
        let d = match d {
            Some(d) => d,
            None => match self.insert_key(db, Kind::List, dst, None, 0) {
                Some(d) => d,
                None => return Ok(()), // Unreachable: the plan fitted.
            },
        };
        let before = if to_left { self.end_of(d, true) } else { NIL };
        if d == s {
            self.move_child(e, before);
        } else {
            self.move_child_to(e, d, before);
            if self.slots[s as usize].count == 0 {
                self.remove_key(s);
            }
        }
        Ok(())
    }
}

/// `-ERR` for `LPOS ... RANK 0`.
const RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
                         second ... or use negative to start from the end of the list";

/// `LEFT` (true) or `RIGHT` (false), in any case.
fn side(arg: &[u8]) -> Option<bool> {
    if eq(arg, "left") {
        Some(true)
    } else if eq(arg, "right") {
        Some(false)
    } else {
        None
    }
}
