//! Lists: `LPUSH`, `RPUSH`, `LPUSHX`, `RPUSHX`, `LPOP`, `RPOP`, `LRANGE`, `LLEN`, `LINDEX`,
//! `LSET`, `LREM`, `LTRIM`.

use super::{pop_count, rank_range, Cmd};
use crate::commands::{Res, NOT_INT, OOM, WRONGTYPE};
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
                let len = self.slots[l as usize].count;
                let n = count.map_or(1, |n| n.min(u64::from(len)) as u32);
                let left = cmd == Cmd::LPop;
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
}
