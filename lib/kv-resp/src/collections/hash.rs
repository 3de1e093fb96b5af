//! Hashes: `HSET`, `HMSET`, `HSETNX`, `HGET`, `HMGET`, `HGETALL`, `HKEYS`, `HVALS`, `HDEL`,
//! `HEXISTS`, `HLEN`, `HSTRLEN`, `HINCRBY`, `HINCRBYFLOAT`, `HRANDFIELD`, `HSCAN`.
//!
//! Fields are answered in insertion order (as Redis answers a small hash). `HINCRBYFLOAT`
//! computes in the `long double` arithmetic of [`crate::longdouble`], as `INCRBYFLOAT` does.
//! `HRANDFIELD` picks fields with the store's pseudo-random generator: one field by walking to
//! a random rank, `count` distinct fields in one walk (in the hash's order), a negative count's
//! repeats one walk each.
//!
//! `HSCAN` answers a hash of at most 128 fields (Redis's `hash-max-listpack-entries` default)
//! whole, with the cursor 0, whatever the cursor, when the reply takes at most a quarter of the
//! output buffer, as Redis answers a listpack-encoded hash. Otherwise its cursor is a slot
//! index, as `SCAN`'s (see [`crate::keyspace`]): a field keeps its slot while it exists, so a
//! full scan returns every field that exists for all of it once (and a hash that shrank to a
//! small one meanwhile is answered whole).

use super::Cmd;
use crate::commands::{pairs, wrong_arity, Res, NOT_INT, OOM, SYNTAX, WRONGTYPE};
use crate::keyspace::{glob, scan_cursor, scan_options, ScanOptions, INVALID_CURSOR};
use crate::longdouble::{self, LongDouble};
use crate::output::{fmt_i64, Reply, INT_REPLY_MAX};
use crate::parser::{parse_int, Command};
use crate::repeats::{Repeats, Seen};
use crate::store::{Budget, Kind, Store, HDR, NIL};

/// The most fields of a hash `HSCAN` answers whole, in one reply.
const SCAN_WHOLE: u32 = 128;

impl Store<'_> {
    /// Executes a hash command.
    pub(super) fn hash_command(
        &mut self,
        db: u8,
        cmd: Cmd,
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        let field = c.arg(2).unwrap_or(b"");
        // Redis's checks before the key's type.
        match cmd {
            Cmd::HSet | Cmd::HMSet if c.argc() % 2 == 1 => {
                return wrong_arity(r, if cmd == Cmd::HSet { "hset" } else { "hmset" });
            }
            Cmd::HIncrBy => {
                let Some(incr) = parse_int(c.arg(3).unwrap_or(b"")) else {
                    return r.error(NOT_INT);
                };
                return self.hincrby(db, key, field, incr, now, r);
            }
            Cmd::HIncrByFloat => return self.hincrbyfloat(db, c, now, r),
            Cmd::HRandField => return self.hrandfield(db, c, now, r),
            Cmd::HScan if scan_cursor(field).is_none() => return r.error(INVALID_CURSOR),
            _ => {}
        }
        let h = match self.find_kind(db, key, Kind::Hash, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(h) => h,
        };
        let find = |st: &Self, f: &[u8]| h.and_then(|h| st.find_field(h, f));
        match cmd {
            Cmd::HSet | Cmd::HMSet => self.hset(db, c, now, cmd == Cmd::HMSet, r),
            Cmd::HSetNx => {
                if find(self, field).is_some() {
                    return r.int(0);
                }
                let val = c.arg(3).unwrap_or(b"");
                self.put_field(db, key, field, val, now, |r| r.int(1), r)
            }
            Cmd::HGet => r.opt_bulk(find(self, field).map(|f| self.val_of(f))),
            Cmd::HExists => r.int(i64::from(find(self, field).is_some())),
            Cmd::HStrLen => r.int(find(self, field).map_or(0, |f| self.val_of(f).len() as i64)),
            Cmd::HMGet => {
                r.array(c.argc() - 2)?;
                for f in c.args().skip(2) {
                    r.opt_bulk(find(self, f).map(|f| self.val_of(f)))?;
                }
                Ok(())
            }
            Cmd::HGetAll | Cmd::HKeys | Cmd::HVals => {
                let Some(h) = h else {
                    return r.array(0);
                };
                let (keys, vals) = (cmd != Cmd::HVals, cmd != Cmd::HKeys);
                let n = self.slots[h as usize].count as usize;
                r.array(if keys && vals { 2 * n } else { n })?;
                let mut f = self.slots[h as usize].next;
                while f != NIL {
                    self.reply_field(r, f, keys, vals)?;
                    f = self.slots[f as usize].next;
                }
                Ok(())
            }
            Cmd::HLen => r.int(h.map_or(0, |h| i64::from(self.slots[h as usize].count))),
            Cmd::HDel => {
                let Some(h) = h else {
                    return r.int(0);
                };
                r.reserve(24)?;
                let mut n = 0;
                for f in c.args().skip(2) {
                    if let Some(f) = self.find_field(h, f) {
                        let last = self.slots[h as usize].count == 1;
                        self.remove_child_or_key(f);
                        n += 1;
                        if last {
                            break; // The hash was emptied, and deleted with its last field.
                        }
                    }
                }
                r.int(n)
            }
            Cmd::HScan => match h {
                None => {
                    r.array(2)?;
                    r.bulk(b"0")?;
                    r.array(0)
                }
                Some(h) => self.hscan(h, c, r),
            },
            _ => Ok(()),
        }
    }

    /// Writes field `f`'s name (if `key`) and value (if `val`).
    fn reply_field(&self, r: &mut Reply<'_, '_>, f: u32, key: bool, val: bool) -> Res {
        if key {
            r.bulk(self.key_of(f))?;
        }
        if val {
            r.bulk(self.val_of(f))?;
        }
        Ok(())
    }

    /// `HSET key field value [field value ...]` and `HMSET` (which answers `+OK`); the
    /// argument count and the key's type were checked.
    fn hset(
        &mut self,
        db: u8,
        c: &Command<'_>,
        now: u64,
        hmset: bool,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            let h = st.find_key(db, key, now);
            if h.is_none() {
                b.step((0, 0), (HDR + key.len(), 1));
            }
            // A field set earlier by this same command is replaced again; one that may have
            // been (`Seen::Unknown`) is planned as a new field, freeing nothing.
            let mut repeats = Repeats::new();
            for (f, v) in pairs(c.args().skip(2)) {
                let old = match repeats.note(f, v.len()) {
                    Seen::Again(pv) => Some(HDR + f.len() + pv),
                    Seen::First => h.and_then(|h| st.find_field(h, f)).map(|fi| {
                        let s = &st.slots[fi as usize];
                        HDR + s.klen as usize + s.vlen as usize
                    }),
                    Seen::Unknown => None,
                };
                match old {
                    Some(old) => b.step((old, 0), (HDR + f.len() + v.len(), 0)),
                    None => b.step((0, 0), (HDR + f.len() + v.len(), 1)),
                }
            }
            (b.ok(), ())
        });
        if !ok {
            return r.error(OOM);
        }
        // HSET's count is taken while the fields are set, its reply's room reserved first.
        r.reserve(INT_REPLY_MAX)?;
        let Some(h) = self.hash_or_new(db, key, now) else {
            return Ok(()); // Unreachable: the plan fitted.
        };
        let mut added = 0;
        for (f, v) in pairs(c.args().skip(2)) {
            added += i64::from(self.set_field(h, f, v));
        }
        if hmset {
            r.ok()
        } else {
            r.int(added)
        }
    }

    /// Hash `key`, created empty if absent; the caller has checked the resources.
    fn hash_or_new(&mut self, db: u8, key: &[u8], now: u64) -> Option<u32> {
        match self.find_key(db, key, now) {
            Some(h) => Some(h),
            None => self.insert_key(db, Kind::Hash, key, None, 0),
        }
    }

    /// Sets field `f` of hash `h` to `v`, answering whether the field is new; the caller has
    /// checked the resources.
    fn set_field(&mut self, h: u32, f: &[u8], v: &[u8]) -> bool {
        match self.find_field(h, f) {
            Some(fi) => {
                self.replace_value(fi, f, v);
                false
            }
            None => {
                self.insert_field(h, f, v);
                true
            }
        }
    }

    /// Sets field `field` of hash `key` (of the right type or absent) to `val`, answering
    /// `reply` first, or `-OOM` with nothing changed.
    #[allow(clippy::too_many_arguments)]
    fn put_field(
        &mut self,
        db: u8,
        key: &[u8],
        field: &[u8],
        val: &[u8],
        now: u64,
        reply: impl FnOnce(&mut Reply<'_, '_>) -> Res,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            let h = st.find_key(db, key, now);
            if h.is_none() {
                b.step((0, 0), (HDR + key.len(), 1));
            }
            let new = HDR + field.len() + val.len();
            match h.and_then(|h| st.find_field(h, field)) {
                Some(f) => {
                    let s = &st.slots[f as usize];
                    b.step((HDR + s.klen as usize + s.vlen as usize, 0), (new, 0));
                }
                None => b.step((0, 0), (new, 1)),
            }
            (b.ok(), ())
        });
        if !ok {
            return r.error(OOM);
        }
        reply(r)?;
        if let Some(h) = self.hash_or_new(db, key, now) {
            self.set_field(h, field, val);
        }
        Ok(())
    }

    /// `HINCRBY key field increment` (the increment parsed).
    fn hincrby(
        &mut self,
        db: u8,
        key: &[u8],
        field: &[u8],
        incr: i64,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let old = match self.find_kind(db, key, Kind::Hash, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(h) => match h.and_then(|h| self.find_field(h, field)) {
                None => 0,
                Some(f) => match parse_int(self.val_of(f)) {
                    Some(v) => v,
                    None => return r.error("ERR hash value is not an integer"),
                },
            },
        };
        let Some(new) = old.checked_add(incr) else {
            return r.error("ERR increment or decrement would overflow");
        };
        let mut digits = [0u8; 24];
        let text = fmt_i64(new, &mut digits);
        self.put_field(db, key, field, text, now, |r| r.int(new), r)
    }

    /// `HINCRBYFLOAT key field increment`, in `long double` arithmetic as Redis on x86_64.
    fn hincrbyfloat(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let (key, field) = (c.arg(1).unwrap_or(b""), c.arg(2).unwrap_or(b""));
        let Some(incr) = longdouble::parse(c.arg(3).unwrap_or(b"")) else {
            return r.error("ERR value is not a valid float");
        };
        if incr.finite().is_none() {
            return r.error("ERR value is NaN or Infinity");
        }
        let old = match self.find_kind(db, key, Kind::Hash, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(h) => match h.and_then(|h| self.find_field(h, field)) {
                None => Some(LongDouble::ZERO),
                Some(f) => longdouble::parse(self.val_of(f)),
            },
        };
        let Some(old) = old else {
            return r.error("ERR hash value is not a float");
        };
        match old.add(incr).finite() {
            None => r.error("ERR increment would produce NaN or Infinity"),
            Some(new) => self.put_float(db, key, field, new, now, r),
        }
    }

    /// Stores and answers `HINCRBYFLOAT`'s result. A function of its own, so that its text
    /// buffer and the parse's big integers are never on the stack together.
    #[inline(never)]
    fn put_float(
        &mut self,
        db: u8,
        key: &[u8],
        field: &[u8],
        new: LongDouble,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let mut text = [0u8; longdouble::MAX_TEXT];
        let text = new.format(&mut text);
        self.put_field(db, key, field, text, now, |r| r.bulk(text), r)
    }

    /// `HRANDFIELD key [count [WITHVALUES]]`.
    fn hrandfield(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        let mut with_values = false;
        let count = match c.arg(2) {
            None => None,
            Some(a) => {
                let n = match parse_int(a) {
                    None => return r.error(NOT_INT),
                    Some(i64::MIN) => {
                        return r.error(
                            "ERR value is out of range, value must between \
                             -9223372036854775807 and 9223372036854775807",
                        )
                    }
                    Some(n) => n,
                };
                match c.arg(3) {
                    _ if c.argc() > 4 => return r.error(SYNTAX),
                    Some(o) if !crate::commands::eq(o, "withvalues") => return r.error(SYNTAX),
                    Some(_) => {
                        if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&n) {
                            return r.error("ERR value is out of range");
                        }
                        with_values = true;
                    }
                    None => {}
                }
                Some(n)
            }
        };
        let h = match self.find_kind(db, key, Kind::Hash, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) if count.is_some() => return r.array(0),
            Ok(None) => return r.nil(),
            Ok(Some(h)) => h,
        };
        let len = self.slots[h as usize].count as usize;
        let per = if with_values { 2 } else { 1 };
        match count {
            None => {
                let i = self.random_below(len) as i64;
                let f = self.nth_child(h, i);
                r.bulk(f.map_or(&[][..], |f| self.key_of(f)))
            }
            Some(n) if n < 0 => {
                // Repeats allowed: |n| picks (a count too large for the output buffer ends in
                // its error).
                let picks = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
                r.array(picks.saturating_mul(per))?;
                for _ in 0..picks {
                    let i = self.random_below(len) as i64;
                    let f = self.nth_child(h, i).unwrap_or(NIL);
                    self.reply_field(r, f, true, with_values)?;
                }
                Ok(())
            }
            Some(n) => {
                let n = (n as u64).min(len as u64) as i64;
                r.array(n as usize * per)?;
                self.sample(h, n, |st, f| st.reply_field(r, f, true, with_values))
            }
        }
    }

    /// `HSCAN key cursor [MATCH pattern] [COUNT count]` on hash `h` (the cursor was checked).
    fn hscan(&mut self, h: u32, c: &Command<'_>, r: &mut Reply<'_, '_>) -> Res {
        let cursor = scan_cursor(c.arg(2).unwrap_or(b"")).unwrap_or(0);
        let ScanOptions { pattern, count, .. } = match scan_options(c, 3, false) {
            Ok(o) => o,
            Err(msg) => return r.error(msg),
        };
        let wanted = |st: &Self, f: u32| pattern.is_none_or(|p| glob(p, st.key_of(f)));
        let cost = |st: &Self, f: u32| {
            let s = &st.slots[f as usize];
            32 + s.klen as usize + s.vlen as usize
        };
        let budget = r.capacity() / 4;
        let hs = self.slots[h as usize];
        if hs.count <= SCAN_WHOLE {
            let (mut n, mut bytes, mut f) = (0, 0, hs.next);
            while f != NIL {
                if wanted(self, f) {
                    n += 1;
                    bytes += cost(self, f);
                }
                f = self.slots[f as usize].next;
            }
            if bytes <= budget {
                r.array(2)?;
                r.bulk(b"0")?;
                r.array(2 * n)?;
                let mut f = hs.next;
                while f != NIL {
                    if wanted(self, f) {
                        self.reply_field(r, f, true, true)?;
                    }
                    f = self.slots[f as usize].next;
                }
                return Ok(());
            }
        }
        let ours = |st: &Self, i: usize| {
            let s = &st.slots[i];
            s.kind == Kind::Field && s.parent == h
        };
        let (start, end, n) = self.scan_window(cursor, count, budget, |st, i| {
            ours(st, i).then(|| (wanted(st, i as u32), cost(st, i as u32)))
        });
        self.scan_header(end, r)?;
        r.array(2 * n)?;
        for i in start..end {
            if ours(self, i) && wanted(self, i as u32) {
                self.reply_field(r, i as u32, true, true)?;
            }
        }
        Ok(())
    }
}
