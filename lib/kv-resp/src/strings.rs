//! String commands: `GET`, `SET` (with `EX`, `PX`, `EXAT`, `PXAT`, `KEEPTTL`, `NX`, `XX`,
//! `GET`), `SETNX`, `SETEX`, `PSETEX`, `GETSET`, `GETDEL`, `GETEX`, `MGET`, `MSET`, `MSETNX`,
//! `APPEND`, `STRLEN`, `GETRANGE` (and its old name `SUBSTR`), `SETRANGE`, `SETBIT`, `GETBIT`,
//! `LCS`, and the counters `INCR`, `DECR`, `INCRBY`, `DECRBY`, `INCRBYFLOAT`.
//!
//! `APPEND`, and a `SETRANGE` or `SETBIT` that lengthens a string, build the new value in a new
//! block beside the old one (there is no scratch buffer to build it in): such a write needs room
//! for both at once, so near a full arena it can be refused (`-OOM`) where the value alone would
//! fit.
//!
//! `INCRBYFLOAT` computes as Redis does on x86_64, in C's `long double` (x87 extended
//! precision), with the software arithmetic of [`crate::longdouble`], so that its replies are
//! Redis's digit for digit. `LCS` fills its dynamic-programming table in the arena's free space
//! (it writes nothing else): a table that does not fit there is refused with `-OOM`.

use crate::commands::{eq, pairs, wrong_arity, Res, NOT_INT, OOM, SYNTAX, WRONGTYPE};
use crate::expire::invalid_expire;
use crate::longdouble::{self, LongDouble};
use crate::output::{fmt_i64, Reply};
use crate::parser::{parse_int, Command};
use crate::repeats::{Repeats, Seen};
use crate::store::{Budget, Kind, Scratch, Store, HDR};

/// The longest string `APPEND`, `SETRANGE` and `SETBIT` make (Redis's `proto-max-bulk-len`
/// default).
const MAX_STRING: i64 = 512 * 1024 * 1024;
const TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
const OVERFLOW: &str = "ERR increment or decrement would overflow";
const NOT_FLOAT: &str = "ERR value is not a valid float";

/// A command of this module's table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Cmd {
    Get,
    Set,
    SetNx,
    /// `SETEX` (1000 ms per unit) and `PSETEX` (1).
    SetEx(u64),
    GetSet,
    GetDel,
    GetEx,
    MGet,
    MSet,
    MSetNx,
    Append,
    StrLen,
    GetRange,
    SetRange,
    SetBit,
    GetBit,
    Lcs,
    /// `INCR` (1) and `DECR` (-1).
    Incr(i64),
    /// `INCRBY` (1) and `DECRBY` (-1): the argument times the sign.
    IncrBy(i64),
    IncrByFloat,
}

/// Name (lower case), arity as in Redis 7.0, command.
pub(crate) const TABLE: &[(&str, i32, Cmd)] = &[
    ("get", 2, Cmd::Get),
    ("set", -3, Cmd::Set),
    ("setnx", 3, Cmd::SetNx),
    ("setex", 4, Cmd::SetEx(1000)),
    ("psetex", 4, Cmd::SetEx(1)),
    ("getset", 3, Cmd::GetSet),
    ("getdel", 2, Cmd::GetDel),
    ("getex", -2, Cmd::GetEx),
    ("mget", -2, Cmd::MGet),
    ("mset", -3, Cmd::MSet),
    ("msetnx", -3, Cmd::MSetNx),
    ("append", 3, Cmd::Append),
    ("strlen", 2, Cmd::StrLen),
    ("getrange", 4, Cmd::GetRange),
    ("substr", 4, Cmd::GetRange),
    ("setrange", 4, Cmd::SetRange),
    ("setbit", 4, Cmd::SetBit),
    ("getbit", 3, Cmd::GetBit),
    ("lcs", -3, Cmd::Lcs),
    ("incr", 2, Cmd::Incr(1)),
    ("decr", 2, Cmd::Incr(-1)),
    ("incrby", 3, Cmd::IncrBy(1)),
    ("decrby", 3, Cmd::IncrBy(-1)),
    ("incrbyfloat", 3, Cmd::IncrByFloat),
];

/// The expiry options of `SET` and `GETEX`, as Redis parses them.
#[derive(Clone, Copy, Default)]
struct SetOpts<'c> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// `EX`, `PX`, `EXAT` or `PXAT`: (its name, ms per unit, absolute?, argument).
    expiry: Option<(&'static str, u64, bool, &'c [u8])>,
}

impl<'c> SetOpts<'c> {
    /// Parses the options from argument `from` on: `set` for `SET`'s (`NX`, `XX`, `GET`,
    /// `KEEPTTL` and the expiries), else `GETEX`'s (the expiries and `PERSIST`). An expiry may
    /// be given again with the same name (the last one counts), never with another.
    fn parse(c: &Command<'c>, from: usize, set: bool) -> Option<Self> {
        const UNITS: [(&str, u64, bool); 4] = [
            ("ex", 1000, false),
            ("px", 1, false),
            ("exat", 1000, true),
            ("pxat", 1, true),
        ];
        let mut o = SetOpts::default();
        let mut j = from;
        while let Some(opt) = c.arg(j) {
            let unit = UNITS.iter().find(|(n, _, _)| eq(opt, n));
            let next = c.arg(j + 1);
            let other_expiry = |name: &str| o.expiry.is_some_and(|(n, ..)| n != name);
            if set && eq(opt, "nx") && !o.xx {
                o.nx = true;
            } else if set && eq(opt, "xx") && !o.nx {
                o.xx = true;
            } else if set && eq(opt, "get") {
                o.get = true;
            } else if set && eq(opt, "keepttl") && o.expiry.is_none() {
                o.keepttl = true;
            } else if !set && eq(opt, "persist") && o.expiry.is_none() {
                o.persist = true;
            } else if let (Some(&(n, mul, abs)), Some(v)) = (unit, next) {
                if o.keepttl || o.persist || other_expiry(n) {
                    return None;
                }
                o.expiry = Some((n, mul, abs, v));
                j += 1;
            } else {
                return None;
            }
            j += 1;
        }
        Some(o)
    }
}

/// The absolute expiry in ms that `arg` (`mul` ms per unit, absolute or relative to `now`)
/// gives, as Redis's `SET`, `SETEX` and `GETEX` compute it: `Err(true)` for a bad integer,
/// `Err(false)` for a time that is not positive or overflows.
fn expiry_ms(arg: &[u8], mul: u64, abs: bool, now: u64) -> Result<u64, bool> {
    let n = parse_int(arg).ok_or(true)?;
    if n <= 0 {
        return Err(false);
    }
    let ms = (n as u64).checked_mul(mul).ok_or(false)?;
    let at = if abs { Some(ms) } else { ms.checked_add(now) };
    at.filter(|&t| t <= i64::MAX as u64).ok_or(false)
}

impl Store<'_> {
    /// Executes a command of [`TABLE`] whose arity was checked.
    pub(crate) fn string_command(
        &mut self,
        db: u8,
        (name, cmd): (&str, Cmd),
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        let a2 = c.arg(2).unwrap_or(b"");
        match cmd {
            Cmd::Get => match self.find_kind(db, key, Kind::Str, now) {
                Err(()) => r.error(WRONGTYPE),
                Ok(e) => r.opt_bulk(e.map(|e| self.val_of(e))),
            },
            Cmd::Set => match SetOpts::parse(c, 3, true) {
                None => r.error(SYNTAX),
                Some(o) => self.set(db, name, key, a2, o, now, r),
            },
            Cmd::SetEx(mul) => {
                let o = SetOpts {
                    expiry: Some(("", mul, false, a2)),
                    ..SetOpts::default()
                };
                self.set(db, name, key, c.arg(3).unwrap_or(b""), o, now, r)
            }
            Cmd::GetSet => {
                let o = SetOpts {
                    get: true,
                    ..SetOpts::default()
                };
                self.set(db, name, key, a2, o, now, r)
            }
            Cmd::MGet => {
                r.array(c.argc() - 1)?;
                for k in c.args().skip(1) {
                    match self.find_key(db, k, now) {
                        Some(e) if self.slots[e as usize].kind == Kind::Str => {
                            r.bulk(self.val_of(e))?
                        }
                        _ => r.nil()?,
                    }
                }
                Ok(())
            }
            Cmd::MSet => {
                if c.argc() % 2 == 0 {
                    return wrong_arity(r, name);
                }
                self.mset(db, c, now, false, r)
            }
            Cmd::Incr(sign) => self.incr(db, key, Ok(sign), now, r),
            Cmd::IncrBy(sign) => {
                let delta = match parse_int(a2) {
                    None => Err(NOT_INT),
                    Some(d) if sign > 0 => Ok(d),
                    Some(i64::MIN) => Err("ERR decrement would overflow"),
                    Some(d) => Ok(-d),
                };
                self.incr(db, key, delta, now, r)
            }
            Cmd::IncrByFloat => self.incr_by_float(db, key, a2, now, r),
            Cmd::SetNx => {
                if self.find_key(db, key, now).is_some() {
                    return r.int(0);
                }
                if !self.fits_key(db, key, HDR + key.len() + a2.len(), now) {
                    return r.error(OOM);
                }
                r.int(1)?;
                self.insert_key(db, Kind::Str, key, Some(a2), 0);
                Ok(())
            }
            Cmd::GetDel => match self.find_key(db, key, now) {
                None => r.nil(),
                Some(e) if self.slots[e as usize].kind != Kind::Str => r.error(WRONGTYPE),
                Some(e) => {
                    r.bulk(self.val_of(e))?;
                    self.remove_key(e);
                    Ok(())
                }
            },
            Cmd::GetEx => self.getex(db, c, now, r),
            Cmd::StrLen => match self.find_kind(db, key, Kind::Str, now) {
                Err(()) => r.error(WRONGTYPE),
                Ok(e) => r.int(e.map_or(0, |e| i64::from(self.slots[e as usize].vlen))),
            },
            Cmd::GetRange => {
                let (Some(start), Some(end)) = (parse_int(a2), parse_int(c.arg(3).unwrap_or(b"")))
                else {
                    return r.error(NOT_INT);
                };
                let v = match self.find_kind(db, key, Kind::Str, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) => return r.bulk(b""),
                    Ok(Some(e)) => self.val_of(e),
                };
                let len = v.len() as i64;
                if start < 0 && end < 0 && start > end {
                    return r.bulk(b"");
                }
                let start = if start < 0 {
                    (len + start).max(0)
                } else {
                    start
                };
                let end = if end < 0 { (len + end).max(0) } else { end }.min(len - 1);
                if start > end || len == 0 {
                    return r.bulk(b"");
                }
                r.bulk(&v[start as usize..=end as usize])
            }
            Cmd::Append => {
                let e = match self.find_kind(db, key, Kind::Str, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(e) => e,
                };
                let old = e.map_or(0, |e| self.slots[e as usize].vlen as usize);
                self.write_at(db, key, e, old, a2, None, now, r)
            }
            Cmd::SetRange => {
                let Some(offset) = parse_int(a2) else {
                    return r.error(NOT_INT);
                };
                if offset < 0 {
                    return r.error("ERR offset is out of range");
                }
                let val = c.arg(3).unwrap_or(b"");
                let e = match self.find_kind(db, key, Kind::Str, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(e) => e,
                };
                if val.is_empty() {
                    return r.int(e.map_or(0, |e| i64::from(self.slots[e as usize].vlen)));
                }
                if offset.saturating_add(val.len() as i64) > MAX_STRING {
                    return r.error(TOO_LONG);
                }
                self.write_at(db, key, e, offset as usize, val, None, now, r)
            }
            Cmd::MSetNx => {
                if c.argc() % 2 == 0 {
                    return wrong_arity(r, name);
                }
                let mut keys = c.args().skip(1).step_by(2);
                if keys.any(|k| self.find_key(db, k, now).is_some()) {
                    return r.int(0);
                }
                self.mset(db, c, now, true, r)
            }
            Cmd::SetBit | Cmd::GetBit => {
                // Redis's bound: a bit of a string of at most `proto-max-bulk-len` bytes.
                let Some(bit) = parse_int(a2).filter(|&b| (0..MAX_STRING * 8).contains(&b)) else {
                    return r.error("ERR bit offset is not an integer or out of range");
                };
                let set_to = match c.arg(3).map(|v| (v, parse_int(v))) {
                    None => None,
                    Some((_, Some(v @ (0 | 1)))) => Some(v as u8),
                    Some(_) => return r.error("ERR bit is not an integer or out of range"),
                };
                let e = match self.find_kind(db, key, Kind::Str, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(e) => e,
                };
                let (byte, mask) = ((bit >> 3) as usize, 0x80u8 >> (bit & 7));
                let old = e
                    .and_then(|e| self.val_of(e).get(byte).copied())
                    .unwrap_or(0);
                let was = i64::from(old & mask != 0);
                match set_to {
                    None => r.int(was),
                    Some(v) => {
                        let new = if v == 1 { old | mask } else { old & !mask };
                        self.write_at(db, key, e, byte, &[new], Some(was), now, r)
                    }
                }
            }
            Cmd::Lcs => self.lcs(db, c, now, r),
        }
    }

    /// `APPEND`, `SETRANGE` and `SETBIT`: writes `val` at `offset` into the string `e` (or a
    /// new one, zero-padded up to `offset`), answering `answer`, or the new length for `None`.
    #[allow(clippy::too_many_arguments)]
    fn write_at(
        &mut self,
        db: u8,
        key: &[u8],
        e: Option<u32>,
        offset: usize,
        val: &[u8],
        answer: Option<i64>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let old = e.map_or(0, |e| self.slots[e as usize].vlen as usize);
        let len = old.max(offset + val.len());
        if len as i64 > MAX_STRING {
            return r.error(TOO_LONG);
        }
        // In place when the string does not grow; else a new block beside the old one.
        let grows = e.is_none() || len > old;
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            let slot = usize::from(st.find_key(db, key, now).is_none());
            if grows {
                b.step((0, 0), (HDR + key.len() + len, slot));
            }
            (b.ok(), ())
        });
        if !ok {
            return r.error(OOM);
        }
        r.int(answer.unwrap_or(len as i64))?;
        let Some(e) = self.find_key(db, key, now) else {
            let fill = |d: &mut [u8]| {
                d[..offset].fill(0);
                d[offset..].copy_from_slice(val);
            };
            self.insert_key_with(db, Kind::Str, key, len, fill, 0);
            return Ok(());
        };
        let dest = if len > self.slots[e as usize].vlen as usize {
            self.rewrite_block(e, key, len)
        } else {
            self.value_mut(e)
        };
        if let Some(d) = dest.get_mut(offset..offset + val.len()) {
            d.copy_from_slice(val);
        }
        Ok(())
    }

    /// `GETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST]`.
    fn getex(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let Some(o) = SetOpts::parse(c, 2, false) else {
            return r.error(SYNTAX);
        };
        let e = match self.find_key(db, c.arg(1).unwrap_or(b""), now) {
            None => return r.nil(),
            Some(e) if self.slots[e as usize].kind != Kind::Str => return r.error(WRONGTYPE),
            Some(e) => e,
        };
        let mut at = None;
        if let Some((_, mul, abs, v)) = o.expiry {
            match expiry_ms(v, mul, abs, now) {
                Ok(t) => at = Some(t),
                Err(true) => return r.error(NOT_INT),
                Err(false) => return invalid_expire(r, "getex"),
            }
        }
        r.bulk(self.val_of(e))?;
        match at {
            Some(t) if t <= now => self.remove_key(e),
            Some(t) => self.slots[e as usize].expire = t,
            None if o.persist => self.slots[e as usize].expire = 0,
            None => {}
        }
        Ok(())
    }

    /// `SET` with options `o` (`name`: the command, for its errors), and `SETEX`, `PSETEX`
    /// and `GETSET` in its terms.
    #[allow(clippy::too_many_arguments)]
    fn set(
        &mut self,
        db: u8,
        name: &str,
        key: &[u8],
        val: &[u8],
        o: SetOpts<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let mut at = None;
        if let Some((_, mul, abs, v)) = o.expiry {
            match expiry_ms(v, mul, abs, now) {
                Ok(t) => at = Some(t),
                Err(true) => return r.error(NOT_INT),
                Err(false) => return invalid_expire(r, name),
            }
        }
        let existing = self.find_key(db, key, now);
        let is_str = existing.map(|e| self.slots[e as usize].kind == Kind::Str);
        if o.get && is_str == Some(false) {
            return r.error(WRONGTYPE);
        }
        if (o.nx && existing.is_some()) || (o.xx && existing.is_none()) {
            return if o.get {
                r.opt_bulk(existing.map(|e| self.val_of(e)))
            } else {
                r.nil()
            };
        }
        // EXAT/PXAT in the past: the key is deleted, as it expires at once in Redis.
        let dead = at.is_some_and(|t| t <= now);
        if !dead {
            let need = HDR + key.len() + val.len();
            if !self.fits_key(db, key, need, now) {
                return r.error(OOM);
            }
        }
        let existing = self.find_key(db, key, now);
        if o.get {
            r.opt_bulk(existing.map(|e| self.val_of(e)))?;
        } else {
            r.ok()?;
        }
        let expire = match (at, existing) {
            (Some(t), _) => t,
            (None, Some(e)) if o.keepttl => self.slots[e as usize].expire,
            _ => 0,
        };
        match existing {
            Some(e) if !dead && self.slots[e as usize].kind == Kind::Str => {
                self.replace_value(e, key, val);
                self.slots[e as usize].expire = expire;
            }
            Some(e) => {
                self.remove_key(e);
                if !dead {
                    self.insert_key(db, Kind::Str, key, Some(val), expire);
                }
            }
            None if !dead => {
                self.insert_key(db, Kind::Str, key, Some(val), expire);
            }
            None => {}
        }
        Ok(())
    }

    /// Replaces the value of string `key` (keeping its expiry) or creates it with `text`,
    /// answering `reply` first; `text` is the counter's new value.
    fn store_counter(
        &mut self,
        db: u8,
        key: &[u8],
        text: &[u8],
        now: u64,
        reply: impl FnOnce(&mut Reply<'_, '_>) -> Res,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        if !self.fits_key(db, key, HDR + key.len() + text.len(), now) {
            return r.error(OOM);
        }
        reply(r)?;
        match self.find_key(db, key, now) {
            Some(e) => self.replace_value(e, key, text),
            None => {
                self.insert_key(db, Kind::Str, key, Some(text), 0);
            }
        }
        Ok(())
    }

    /// The string value of `key` for a counter: `Ok(None)` when absent, `Err` (answered) when
    /// of another type.
    fn counter_value(&mut self, db: u8, key: &[u8], now: u64) -> Result<Option<u32>, ()> {
        self.find_kind(db, key, Kind::Str, now)
    }

    fn incr(
        &mut self,
        db: u8,
        key: &[u8],
        delta: Result<i64, &'static str>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let delta = match delta {
            Ok(d) => d,
            Err(msg) => return r.error(msg),
        };
        let old = match self.counter_value(db, key, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) => 0,
            Ok(Some(e)) => match parse_int(self.val_of(e)) {
                Some(v) => v,
                None => return r.error(NOT_INT),
            },
        };
        let Some(new) = old.checked_add(delta) else {
            return r.error(OVERFLOW);
        };
        let mut digits = [0u8; 24];
        let text = fmt_i64(new, &mut digits);
        self.store_counter(db, key, text, now, |r| r.int(new), r)
    }

    /// `INCRBYFLOAT key increment`, in `long double` arithmetic as Redis on x86_64.
    fn incr_by_float(
        &mut self,
        db: u8,
        key: &[u8],
        incr: &[u8],
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let old = match self.counter_value(db, key, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) => Some(LongDouble::ZERO),
            Ok(Some(e)) => longdouble::parse(self.val_of(e)),
        };
        let (Some(old), Some(incr)) = (old, longdouble::parse(incr)) else {
            return r.error(NOT_FLOAT);
        };
        match old.add(incr).finite() {
            None => r.error("ERR increment would produce NaN or Infinity"),
            Some(new) => self.store_float(db, key, new, now, r),
        }
    }

    /// Stores and answers `INCRBYFLOAT`'s result. A function of its own, so that its text
    /// buffer and the parse's big integers are never on the stack together.
    #[inline(never)]
    fn store_float(
        &mut self,
        db: u8,
        key: &[u8],
        new: LongDouble,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let mut text = [0u8; longdouble::MAX_TEXT];
        let text = new.format(&mut text);
        self.store_counter(db, key, text, now, |r| r.bulk(text), r)
    }

    /// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`: Redis's dynamic
    /// programming over the two strings (an absent key is empty), its table of
    /// `(len1 + 1) × (len2 + 1)` 32-bit lengths in the arena's free space.
    fn lcs(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let mut ends = [None; 2];
        for (n, end) in ends.iter_mut().enumerate() {
            match self.find_kind(db, c.arg(n + 1).unwrap_or(b""), Kind::Str, now) {
                Err(()) => return r.error("ERR The specified keys must contain string values"),
                Ok(e) => *end = e,
            }
        }
        let (mut len, mut idx, mut withlen, mut minlen) = (false, false, false, 0i64);
        let mut j = 3;
        while let Some(opt) = c.arg(j) {
            if eq(opt, "idx") {
                idx = true;
            } else if eq(opt, "len") {
                len = true;
            } else if eq(opt, "withmatchlen") {
                withlen = true;
            } else if let (true, Some(v)) = (eq(opt, "minmatchlen"), c.arg(j + 1)) {
                let Some(v) = parse_int(v) else {
                    return r.error(NOT_INT);
                };
                minlen = v.max(0);
                j += 1;
            } else {
                return r.error(SYNTAX);
            }
            j += 1;
        }
        if len && idx {
            return r.error("ERR If you want both the length and indexes, please just use IDX.");
        }
        let lens = ends.map(|e| e.map_or(0, |e| self.slots[e as usize].vlen as usize));
        let cells = (lens[0] + 1).saturating_mul(lens[1] + 1);
        // The table, then the common subsequence itself (built backwards).
        let need = cells.saturating_mul(4).saturating_add(lens[0].min(lens[1]));
        let Some(Scratch {
            live,
            free: scratch,
            spans,
        }) = self.scratch(need, ends)
        else {
            return r.error(OOM);
        };
        let val = |e: Option<(usize, usize)>| e.map_or(&live[..0], |(at, n)| &live[at..at + n]);
        let (a, b) = (val(spans[0]), val(spans[1]));
        let (table, result) = scratch.split_at_mut(cells * 4);
        let w = b.len() + 1;
        let at = |t: &[u8], i: usize, j: usize| {
            let k = 4 * (j + i * w);
            u32::from_le_bytes([t[k], t[k + 1], t[k + 2], t[k + 3]])
        };
        for i in 0..=a.len() {
            for j in 0..=b.len() {
                let v = if i == 0 || j == 0 {
                    0
                } else if a[i - 1] == b[j - 1] {
                    at(table, i - 1, j - 1) + 1
                } else {
                    at(table, i - 1, j).max(at(table, i, j - 1))
                };
                let k = 4 * (j + i * w);
                table[k..k + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        let total = at(table, a.len(), b.len()) as usize;
        // Walks back from the end, writing the subsequence into `result` and passing each
        // range of consecutive matches (start and end in `a`, then in `b`) to `emit`.
        let walk = |result: &mut [u8], emit: &mut dyn FnMut([usize; 4]) -> Res| -> Res {
            let (mut i, mut j, mut k) = (a.len(), b.len(), total);
            let mut range: Option<[usize; 4]> = None;
            while i > 0 && j > 0 {
                let mut done = false;
                if a[i - 1] == b[j - 1] {
                    result[k - 1] = a[i - 1];
                    match &mut range {
                        None => range = Some([i - 1, i - 1, j - 1, j - 1]),
                        Some(rg) if rg[0] == i && rg[2] == j => {
                            rg[0] -= 1;
                            rg[2] -= 1;
                        }
                        Some(_) => done = true,
                    }
                    if range.is_some_and(|rg| rg[0] == 0 || rg[2] == 0) {
                        done = true;
                    }
                    i -= 1;
                    j -= 1;
                    k -= 1;
                } else {
                    if at(table, i - 1, j) > at(table, i, j - 1) {
                        i -= 1;
                    } else {
                        j -= 1;
                    }
                    done = range.is_some();
                }
                if done {
                    if let Some(rg) = range.take() {
                        if minlen == 0 || (rg[1] - rg[0] + 1) as i64 >= minlen {
                            emit(rg)?;
                        }
                    }
                }
            }
            Ok(())
        };
        if !idx {
            if len {
                return r.int(total as i64);
            }
            walk(result, &mut |_| Ok(()))?;
            return r.bulk(&result[..total]);
        }
        let mut n = 0;
        walk(result, &mut |_| {
            n += 1;
            Ok(())
        })?;
        r.array(4)?;
        r.bulk(b"matches")?;
        r.array(n)?;
        walk(result, &mut |rg| {
            r.array(2 + usize::from(withlen))?;
            for pair in [[rg[0], rg[1]], [rg[2], rg[3]]] {
                r.array(2)?;
                r.int(pair[0] as i64)?;
                r.int(pair[1] as i64)?;
            }
            if withlen {
                r.int((rg[1] - rg[0] + 1) as i64)?;
            }
            Ok(())
        })?;
        r.bulk(b"len")?;
        r.int(total as i64)
    }

    /// `MSET`, and `MSETNX` (`nx`: the caller found none of the keys) answering `:1`.
    pub(crate) fn mset(
        &mut self,
        db: u8,
        c: &Command<'_>,
        now: u64,
        nx: bool,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            let mut repeats = Repeats::new();
            for (k, v) in pairs(c.args().skip(1)) {
                // A key set earlier by this same command is replaced again; one that may have
                // been is planned as freeing nothing.
                let freed = match repeats.note(k, v.len()) {
                    Seen::Again(pv) => (HDR + k.len() + pv, 1),
                    Seen::First => st.find_key(db, k, now).map_or((0, 0), |e| st.footprint(e)),
                    Seen::Unknown => (0, 0),
                };
                b.step(freed, (HDR + k.len() + v.len(), 1));
            }
            (b.ok(), ())
        });
        if !ok {
            return r.error(OOM);
        }
        if nx {
            r.int(1)?;
        } else {
            r.ok()?;
        }
        for (k, v) in pairs(c.args().skip(1)) {
            match self.find_key(db, k, now) {
                Some(e) if self.slots[e as usize].kind == Kind::Str => {
                    self.replace_value(e, k, v);
                    self.slots[e as usize].expire = 0;
                }
                Some(e) => {
                    self.remove_key(e);
                    self.insert_key(db, Kind::Str, k, Some(v), 0);
                }
                None => {
                    self.insert_key(db, Kind::Str, k, Some(v), 0);
                }
            }
        }
        Ok(())
    }
}
