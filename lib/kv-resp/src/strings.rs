//! String commands beyond `GET`/`SET` and the counters: `SETNX`, `GETDEL`, `GETEX`, `APPEND`,
//! `STRLEN`, `GETRANGE`, `SETRANGE`, `MSETNX`.
//!
//! `APPEND` and a `SETRANGE` that lengthens a string build the new value in a new block beside
//! the old one (there is no scratch buffer to build it in): such a write needs room for both
//! at once, so near a full arena it can be refused (`-OOM`) where the value alone would fit.

use crate::commands::{eq, wrong_arity, Res, NOT_INT, OOM, SYNTAX, WRONGTYPE};
use crate::output::Reply;
use crate::parser::{parse_int, Command};
use crate::store::{Budget, Kind, Store, HDR};

/// The longest string `APPEND` and `SETRANGE` make (Redis's `proto-max-bulk-len` default).
const MAX_STRING: i64 = 512 * 1024 * 1024;
const TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";

/// A command of this module's table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Cmd {
    SetNx,
    GetDel,
    GetEx,
    Append,
    StrLen,
    GetRange,
    SetRange,
    MSetNx,
}

/// Name (lower case), arity as in Redis 7.0, command.
pub(crate) const TABLE: &[(&str, i32, Cmd)] = &[
    ("setnx", 3, Cmd::SetNx),
    ("getdel", 2, Cmd::GetDel),
    ("getex", -2, Cmd::GetEx),
    ("append", 3, Cmd::Append),
    ("strlen", 2, Cmd::StrLen),
    ("getrange", 4, Cmd::GetRange),
    ("setrange", 4, Cmd::SetRange),
    ("msetnx", -3, Cmd::MSetNx),
];

impl Store<'_> {
    /// Executes a command of [`TABLE`] whose arity was checked.
    pub(crate) fn string_command(
        &mut self,
        db: u8,
        cmd: Cmd,
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        let a2 = c.arg(2).unwrap_or(b"");
        match cmd {
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
                self.write_at(db, key, e, old, a2, now, r)
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
                self.write_at(db, key, e, offset as usize, val, now, r)
            }
            Cmd::MSetNx => {
                if c.argc() % 2 == 0 {
                    return wrong_arity(r, "msetnx");
                }
                let mut keys = c.args().skip(1).step_by(2);
                if keys.any(|k| self.find_key(db, k, now).is_some()) {
                    return r.int(0);
                }
                self.mset(db, c, now, true, r)
            }
        }
    }

    /// `APPEND` and `SETRANGE`: writes `val` at `offset` into the string `e` (or a new one,
    /// zero-padded up to `offset`), answering the new length.
    #[allow(clippy::too_many_arguments)]
    fn write_at(
        &mut self,
        db: u8,
        key: &[u8],
        e: Option<u32>,
        offset: usize,
        val: &[u8],
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
        r.int(len as i64)?;
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
        // (option, multiplier to ms, absolute?): one of them, given again or not, or PERSIST.
        const UNITS: [(&str, u64, bool); 4] = [
            ("ex", 1000, false),
            ("px", 1, false),
            ("exat", 1000, true),
            ("pxat", 1, true),
        ];
        let mut expiry: Option<(&str, u64, bool, &[u8])> = None;
        let mut persist = false;
        let mut j = 2;
        while let Some(opt) = c.arg(j) {
            let unit = UNITS.iter().find(|(n, _, _)| eq(opt, n));
            match (unit, c.arg(j + 1)) {
                _ if eq(opt, "persist") && expiry.is_none() => persist = true,
                (Some(&(n, mul, abs)), Some(v))
                    if !persist && expiry.is_none_or(|(given, ..)| given == n) =>
                {
                    expiry = Some((n, mul, abs, v));
                    j += 1;
                }
                _ => return r.error(SYNTAX),
            }
            j += 1;
        }
        let e = match self.find_key(db, c.arg(1).unwrap_or(b""), now) {
            None => return r.nil(),
            Some(e) if self.slots[e as usize].kind != Kind::Str => return r.error(WRONGTYPE),
            Some(e) => e,
        };
        let mut at = None;
        if let Some((_, mul, abs, v)) = expiry {
            let Some(n) = parse_int(v) else {
                return r.error(NOT_INT);
            };
            let ms = (n > 0)
                .then(|| (n as u64).checked_mul(mul))
                .flatten()
                .and_then(|ms| if abs { Some(ms) } else { ms.checked_add(now) })
                .filter(|&ms| ms <= i64::MAX as u64);
            match ms {
                Some(ms) => at = Some(ms),
                None => return r.error("ERR invalid expire time in 'getex' command"),
            }
        }
        r.bulk(self.val_of(e))?;
        match at {
            Some(t) if t <= now => self.remove_key(e),
            Some(t) => self.slots[e as usize].expire = t,
            None if persist => self.slots[e as usize].expire = 0,
            None => {}
        }
        Ok(())
    }
}
