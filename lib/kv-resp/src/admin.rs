//! Server administration commands: `CONFIG GET`, `CONFIG SET`, `CONFIG RESETSTAT` and
//! `FUNCTION FLUSH`.
//!
//! `CONFIG` knows the parameters of [`PARAMS`], each of one of three kinds:
//!
//! * **fixed**: what this server is and cannot change (`maxmemory` is the arena's size,
//!   `maxmemory-policy` is `noeviction`, there is no persistence, so `save` is empty and
//!   `appendonly` is `no`). `CONFIG SET` of the value the parameter already has succeeds, as
//!   Redis's test harness does when it restores a block's settings; any other value is refused.
//! * **tunables**: integer parameters that Redis uses to choose an object's internal encoding
//!   (`list-max-listpack-size`, `hash-max-listpack-entries`, ...). This store has one
//!   representation per type, so they have no effect; they are accepted, range-checked and read
//!   back as set, so clients and test suites that tune them keep working.
//! * **flags**: `yes`/`no` parameters with no effect here either (`lazyfree-lazy-user-del`:
//!   every delete here is immediate).
//!
//! `CONFIG GET` takes any number of glob patterns (matched without regard to case, as Redis
//! does) and answers each matching parameter once, under the name it matched: a pattern that
//! names an alias (`list-max-ziplist-size`, Redis's older name) answers under that alias.
//! `CONFIG SET` takes any number of name-value pairs and applies all of them or none.
//!
//! `FUNCTION FLUSH` answers `OK`: there is no scripting, so there are never libraries to delete
//! (Redis's test harness sends it before each block). Every other `FUNCTION` subcommand is
//! refused as unknown.

use crate::commands::{eq, Res};
use crate::keyspace::glob;
use crate::output::{fmt_i64, Reply};
use crate::parser::Command;
use crate::store::Store;

/// What a [`Param`]'s value is.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value {
    /// A value this server cannot change.
    Fixed(&'static str),
    /// The arena's size in bytes (`maxmemory`); fixed.
    ArenaSize,
    /// An integer with no effect here: its default and inclusive range.
    Tunable { default: i64, min: i64, max: i64 },
    /// `yes` or `no`, with no effect here: its default.
    Flag { default: bool },
}

/// A configuration parameter: its name, the older name Redis also accepts, its value.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Param {
    pub(crate) name: &'static str,
    pub(crate) alias: Option<&'static str>,
    pub(crate) value: Value,
}

const fn fixed(name: &'static str, value: &'static str) -> Param {
    Param {
        name,
        alias: None,
        value: Value::Fixed(value),
    }
}

const fn tunable(name: &'static str, alias: Option<&'static str>, default: i64, min: i64) -> Param {
    Param {
        name,
        alias,
        value: Value::Tunable {
            default,
            min,
            max: i32::MAX as i64,
        },
    }
}

const fn flag(name: &'static str, default: bool) -> Param {
    Param {
        name,
        alias: None,
        value: Value::Flag { default },
    }
}

/// Every parameter `CONFIG` knows, with Redis 7.0's names, defaults and ranges.
pub(crate) const PARAMS: &[Param] = &[
    fixed("save", ""),
    fixed("appendonly", "no"),
    Param {
        name: "maxmemory",
        alias: None,
        value: Value::ArenaSize,
    },
    fixed("maxmemory-policy", "noeviction"),
    // The largest bulk string a request may carry: what the arena can hold. The caller's lent
    // buffer bounds it too (`Connection::set_lendable`).
    Param {
        name: "proto-max-bulk-len",
        alias: None,
        value: Value::ArenaSize,
    },
    fixed("databases", "16"),
    tunable(
        "list-max-listpack-size",
        Some("list-max-ziplist-size"),
        -2,
        i32::MIN as i64,
    ),
    tunable("list-compress-depth", None, 0, 0),
    tunable(
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        128,
        0,
    ),
    tunable(
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        64,
        0,
    ),
    tunable("set-max-intset-entries", None, 512, 0),
    tunable(
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        128,
        0,
    ),
    tunable(
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        64,
        0,
    ),
    tunable("stream-node-max-bytes", None, 4096, 0),
    tunable("stream-node-max-entries", None, 100, 0),
    flag("lazyfree-lazy-user-del", false),
    flag("lazyfree-lazy-user-flush", false),
    flag("lazyfree-lazy-expire", false),
    flag("lazyfree-lazy-server-del", false),
];

/// The values of the tunables and flags, one per row of [`PARAMS`] (fixed rows unused).
#[derive(Clone, Debug)]
pub(crate) struct Config {
    values: [i64; PARAMS.len()],
}

impl Config {
    /// Every parameter at its default.
    pub(crate) fn new() -> Self {
        let mut values = [0; PARAMS.len()];
        for (v, p) in values.iter_mut().zip(PARAMS) {
            *v = match p.value {
                Value::Tunable { default, .. } => default,
                Value::Flag { default } => i64::from(default),
                Value::Fixed(_) | Value::ArenaSize => 0,
            };
        }
        Config { values }
    }
}

/// The most bytes of a `CONFIG GET` pattern that are matched (longer patterns match nothing:
/// no parameter name comes near).
const PATTERN_MAX: usize = 64;

/// Lower-cases `pattern` into `buf` (`None` when it is longer than [`PATTERN_MAX`]).
fn lowered<'b>(pattern: &[u8], buf: &'b mut [u8; PATTERN_MAX]) -> Option<&'b [u8]> {
    let out = buf.get_mut(..pattern.len())?;
    for (o, b) in out.iter_mut().zip(pattern) {
        *o = b.to_ascii_lowercase();
    }
    Some(out)
}

/// Parses `text` as Redis parses a configuration integer: optional `-`, decimal digits only.
fn parse_int(text: &[u8]) -> Option<i64> {
    let s = core::str::from_utf8(text).ok()?;
    if s.starts_with('+') || s.is_empty() {
        return None;
    }
    s.parse().ok()
}

impl Store<'_> {
    /// `CONFIG GET|SET|RESETSTAT ...`.
    pub(crate) fn config(&mut self, c: &Command<'_>, r: &mut Reply<'_, '_>) -> Res {
        let sub = c.arg(1).unwrap_or(b"");
        if eq(sub, "get") {
            if c.argc() < 3 {
                return r.error("ERR wrong number of arguments for 'config|get' command");
            }
            self.config_get(c, r)
        } else if eq(sub, "set") {
            if c.argc() < 4 || c.argc() % 2 == 1 {
                return r.error("ERR wrong number of arguments for 'config|set' command");
            }
            self.config_set(c, r)
        } else if eq(sub, "resetstat") {
            if c.argc() != 2 {
                return r.error("ERR wrong number of arguments for 'config|resetstat' command");
            }
            // The store keeps no statistics that a reset would clear.
            r.ok()
        } else {
            unknown_subcommand(r, sub, "CONFIG")
        }
    }

    /// The text of parameter `i`'s value, written into `buf`.
    fn param_text<'b>(&self, i: usize, buf: &'b mut [u8; 24]) -> &'b [u8] {
        match PARAMS[i].value {
            Value::Fixed(v) => {
                buf[..v.len()].copy_from_slice(v.as_bytes());
                &buf[..v.len()]
            }
            Value::ArenaSize => fmt_i64(self.cap as i64, buf),
            Value::Tunable { .. } => fmt_i64(self.config.values[i], buf),
            Value::Flag { .. } => {
                let v: &[u8] = if self.config.values[i] != 0 {
                    b"yes"
                } else {
                    b"no"
                };
                buf[..v.len()].copy_from_slice(v);
                &buf[..v.len()]
            }
        }
    }

    /// For each parameter, the name it is answered under when one of `c`'s patterns matches it.
    fn config_matches(&self, c: &Command<'_>) -> [Option<&'static str>; PARAMS.len()] {
        let mut found = [None; PARAMS.len()];
        for pattern in c.args().skip(2) {
            let mut buf = [0; PATTERN_MAX];
            let Some(pattern) = lowered(pattern, &mut buf) else {
                continue;
            };
            for (f, p) in found.iter_mut().zip(PARAMS) {
                if f.is_some() {
                    continue;
                }
                if glob(pattern, p.name.as_bytes()) {
                    *f = Some(p.name);
                } else if let Some(alias) = p.alias.filter(|a| glob(pattern, a.as_bytes())) {
                    *f = Some(alias);
                }
            }
        }
        found
    }

    fn config_get(&self, c: &Command<'_>, r: &mut Reply<'_, '_>) -> Res {
        let found = self.config_matches(c);
        r.array(2 * found.iter().flatten().count())?;
        for (i, name) in found.iter().enumerate() {
            if let Some(name) = name {
                let mut buf = [0; 24];
                r.bulk(name.as_bytes())?;
                r.bulk(self.param_text(i, &mut buf))?;
            }
        }
        Ok(())
    }

    fn config_set(&mut self, c: &Command<'_>, r: &mut Reply<'_, '_>) -> Res {
        // Checked whole before anything is applied: all pairs or none.
        let mut values = self.config.values;
        let mut args = c.args().skip(2);
        while let (Some(name), Some(text)) = (args.next(), args.next()) {
            let Some(i) = PARAMS
                .iter()
                .position(|p| eq(name, p.name) || p.alias.is_some_and(|a| eq(name, a)))
            else {
                r.raw(b"-ERR Unknown option or number of arguments for CONFIG SET - '")?;
                crate::commands::sanitized(r, name, 128)?;
                return r.raw(b"'\r\n");
            };
            let mut buf = [0; 24];
            let why = match PARAMS[i].value {
                Value::Fixed(_) | Value::ArenaSize if text == self.param_text(i, &mut buf) => None,
                Value::Fixed(_) | Value::ArenaSize => Some("this server's value is fixed"),
                Value::Tunable { min, max, .. } => match parse_int(text) {
                    None => Some("argument couldn't be parsed into an integer"),
                    Some(v) if v < min || v > max => Some("argument must be in range"),
                    Some(v) => {
                        values[i] = v;
                        None
                    }
                },
                Value::Flag { .. } => {
                    if eq(text, "yes") {
                        values[i] = 1;
                        None
                    } else if eq(text, "no") {
                        values[i] = 0;
                        None
                    } else {
                        Some("argument must be 'yes' or 'no'")
                    }
                }
            };
            if let Some(why) = why {
                r.raw(b"-ERR CONFIG SET failed (possibly related to argument '")?;
                r.raw(PARAMS[i].name.as_bytes())?;
                r.raw(b"') - ")?;
                r.raw(why.as_bytes())?;
                return r.raw(b"\r\n");
            }
        }
        r.ok()?;
        self.config.values = values;
        Ok(())
    }

    /// `FUNCTION FLUSH [ASYNC|SYNC]`.
    pub(crate) fn function(&mut self, c: &Command<'_>, r: &mut Reply<'_, '_>) -> Res {
        let sub = c.arg(1).unwrap_or(b"");
        if !eq(sub, "flush") {
            return unknown_subcommand(r, sub, "FUNCTION");
        }
        match c.arg(2) {
            None => r.ok(),
            Some(mode) if c.argc() == 3 && (eq(mode, "async") || eq(mode, "sync")) => r.ok(),
            Some(_) if c.argc() == 3 => {
                r.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
            }
            Some(_) => r.error("ERR wrong number of arguments for 'function|flush' command"),
        }
    }
}

/// `-ERR unknown subcommand '<sub>'. Try <CMD> HELP.`
pub(crate) fn unknown_subcommand(r: &mut Reply<'_, '_>, sub: &[u8], cmd: &str) -> Res {
    r.raw(b"-ERR unknown subcommand '")?;
    crate::commands::sanitized(r, sub, 128)?;
    r.raw(b"'. Try ")?;
    r.raw(cmd.as_bytes())?;
    r.raw(b" HELP.\r\n")
}
