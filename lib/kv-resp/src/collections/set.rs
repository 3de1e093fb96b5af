//! Sets: `SADD`, `SREM`, `SPOP`, `SMEMBERS`, `SISMEMBER`, `SMISMEMBER`, `SCARD`,
//! `SRANDMEMBER`.
//!
//! `SPOP` and `SRANDMEMBER` pick members with the store's pseudo-random generator. One member is
//! reached by walking to a random rank, O(n); `count` distinct members are chosen in one walk
//! over the set (selection sampling: each member is taken with probability
//! `still needed / still left`), so the chosen members come in the set's order.

use super::{pop_count, Cmd};
use crate::commands::{Res, NOT_INT, OOM, SYNTAX, WRONGTYPE};
use crate::output::Reply;
use crate::parser::{parse_int, Command};
use crate::store::{Budget, Kind, Store, HDR, NIL};

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
        let (ok, added) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            let s = st.find_key(db, key, now);
            if s.is_none() {
                b.step((0, 0), (HDR + key.len(), 1));
            }
            let mut added = 0;
            for (i, m) in c.args().skip(2).enumerate() {
                let earlier = c.args().skip(2).take(i).any(|p| p == m);
                if !earlier && s.and_then(|s| st.find_field(s, m)).is_none() {
                    added += 1;
                    b.step((0, 0), (HDR + m.len(), 1));
                }
            }
            (b.ok(), added)
        });
        if !ok {
            return r.error(OOM);
        }
        r.int(added)?;
        let s = match s {
            Some(s) => s,
            None => match self.insert_key(db, Kind::Set, key, None, 0) {
                Some(s) => s,
                None => return Ok(()), // Unreachable: the plan fitted.
            },
        };
        for m in c.args().skip(2) {
            if self.find_field(s, m).is_none() {
                self.insert_child(s, m, b"", NIL);
            }
        }
        Ok(())
    }
}
