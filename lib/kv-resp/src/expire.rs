//! Expiry commands, for keys of any type: `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` (with
//! Redis 7's `NX`, `XX`, `GT` and `LT` conditions), `TTL`, `PTTL`, `EXPIRETIME`,
//! `PEXPIRETIME`, `PERSIST`, and `TIME`, the clock they are measured against.
//!
//! A key's expiry is an absolute time in milliseconds of the caller's clock (`now_ms`), kept in
//! its slot (0 for none; see [`crate::store`]). As in Redis, an expiry at or before the present
//! deletes the key at once (the command still answers `1`), so a stored expiry is always in the
//! future when it is set, and a key counts as expired once `now` is past it.

use crate::commands::{eq, Res, NOT_INT};
use crate::output::{fmt_i64, Reply};
use crate::parser::{parse_int, Command};
use crate::store::Store;

/// A command of this module's table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Cmd {
    /// `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT`: (milliseconds per unit, absolute?).
    Expire(i64, bool),
    /// `TTL`, `PTTL`, `EXPIRETIME`, `PEXPIRETIME`: (in milliseconds?, absolute?).
    Ttl(bool, bool),
    Persist,
    Time,
}

/// Name (lower case), arity as in Redis 7.0, command.
pub(crate) const TABLE: &[(&str, i32, Cmd)] = &[
    ("expire", -3, Cmd::Expire(1000, false)),
    ("pexpire", -3, Cmd::Expire(1, false)),
    ("expireat", -3, Cmd::Expire(1000, true)),
    ("pexpireat", -3, Cmd::Expire(1, true)),
    ("ttl", 2, Cmd::Ttl(false, false)),
    ("pttl", 2, Cmd::Ttl(true, false)),
    ("expiretime", 2, Cmd::Ttl(false, true)),
    ("pexpiretime", 2, Cmd::Ttl(true, true)),
    ("persist", 2, Cmd::Persist),
    ("time", 1, Cmd::Time),
];

/// `-ERR invalid expire time in '<command>' command`, Redis's reply to an expiry that overflows.
pub(crate) fn invalid_expire(r: &mut Reply<'_, '_>, name: &str) -> Res {
    r.raw(b"-ERR invalid expire time in '")?;
    r.raw(name.as_bytes())?;
    r.raw(b"' command\r\n")
}

/// The conditions of `EXPIRE`'s family (Redis 7).
#[derive(Clone, Copy, Default)]
struct Cond {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Cond {
    /// Whether an expiry `when` may replace `current` (`None`: the key has none). A key without
    /// an expiry counts as never expiring: `GT` always fails on it, `LT` always succeeds.
    fn allows(self, current: Option<i64>, when: i64) -> bool {
        !((self.nx && current.is_some())
            || (self.xx && current.is_none())
            || (self.gt && current.is_none_or(|c| when <= c))
            || (self.lt && current.is_some_and(|c| when >= c)))
    }
}

impl Store<'_> {
    /// Executes a command of [`TABLE`] whose arity was checked.
    pub(crate) fn expire_command(
        &mut self,
        db: u8,
        (name, cmd): (&str, Cmd),
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        match cmd {
            Cmd::Expire(unit, abs) => self.expire(db, name, (unit, abs), c, now, r),
            Cmd::Ttl(ms, abs) => {
                let Some(e) = self.find_key(db, key, now) else {
                    return r.int(-2);
                };
                match self.slots[e as usize].expire {
                    0 => r.int(-1),
                    at => {
                        let t = if abs { at } else { at.saturating_sub(now) };
                        let t = t.min(i64::MAX as u64 - 500);
                        r.int(if ms { t } else { (t + 500) / 1000 } as i64)
                    }
                }
            }
            Cmd::Persist => {
                r.reserve(24)?;
                match self.find_key(db, key, now) {
                    Some(e) if self.slots[e as usize].expire != 0 => {
                        self.slots[e as usize].expire = 0;
                        r.int(1)
                    }
                    _ => r.int(0),
                }
            }
            Cmd::Time => {
                let mut secs = [0u8; 24];
                let mut micros = [0u8; 24];
                r.array(2)?;
                r.bulk(fmt_i64((now / 1000).min(i64::MAX as u64) as i64, &mut secs))?;
                r.bulk(fmt_i64((now % 1000 * 1000) as i64, &mut micros))
            }
        }
    }

    /// `EXPIRE` and its kin: `unit` milliseconds per unit of the argument, relative to `now`
    /// unless `abs`.
    fn expire(
        &mut self,
        db: u8,
        name: &str,
        (unit, abs): (i64, bool),
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let mut cond = Cond::default();
        for opt in c.args().skip(3) {
            let flag = if eq(opt, "nx") {
                &mut cond.nx
            } else if eq(opt, "xx") {
                &mut cond.xx
            } else if eq(opt, "gt") {
                &mut cond.gt
            } else if eq(opt, "lt") {
                &mut cond.lt
            } else {
                r.raw(b"-ERR Unsupported option ")?;
                r.raw(opt)?;
                return r.raw(b"\r\n");
            };
            *flag = true;
        }
        if cond.nx && (cond.xx || cond.gt || cond.lt) {
            return r.error("ERR NX and XX, GT or LT options at the same time are not compatible");
        }
        if cond.gt && cond.lt {
            return r.error("ERR GT and LT options at the same time are not compatible");
        }
        let Some(n) = parse_int(c.arg(2).unwrap_or(b"")) else {
            return r.error(NOT_INT);
        };
        let base = if abs {
            0
        } else {
            now.min(i64::MAX as u64) as i64
        };
        // Redis refuses what overflows the conversion to milliseconds or the addition of the
        // present (a negative result is fine: it deletes the key).
        let when = n.checked_mul(unit).and_then(|ms| ms.checked_add(base));
        let Some(when) = when else {
            return invalid_expire(r, name);
        };
        r.reserve(24)?;
        let Some(e) = self.find_key(db, c.arg(1).unwrap_or(b""), now) else {
            return r.int(0);
        };
        let current = match self.slots[e as usize].expire {
            0 => None,
            t => Some(t.min(i64::MAX as u64) as i64),
        };
        if !cond.allows(current, when) {
            return r.int(0);
        }
        if when <= now as i64 {
            self.remove_key(e);
        } else {
            self.slots[e as usize].expire = when as u64;
        }
        r.int(1)
    }
}
