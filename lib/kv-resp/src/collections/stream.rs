//! Streams, minimal: `XADD` (`*`, `<ms>-*` and explicit IDs, `NOMKSTREAM`; no trimming),
//! `XLEN`, `XRANGE` and `XREVRANGE` (`-`, `+`, `<ms>`, `<ms>-<seq>`, exclusive `(` bounds,
//! `COUNT`).
//!
//! An entry's ID is its key, 16 bytes big-endian (see [`crate::store`]), its fields the value;
//! the stream's last ID is its last entry's, so IDs only grow: there is no `XDEL` or `XTRIM`
//! that would leave a stream whose last ID is not an entry's.

use core::fmt::Write as _;

use super::Cmd;
use crate::commands::{eq, wrong_arity, Res, SliceWriter, NOT_INT, OOM, SYNTAX, WRONGTYPE};
use crate::output::Reply;
use crate::parser::{parse_int, Command};
use crate::store::{Budget, Kind, Store, HDR, NIL};

const BAD_ID: &str = "ERR Invalid stream ID specified as stream command argument";
const NOT_GREATER: &str =
    "ERR The ID specified in XADD is equal or smaller than the target stream top item";

/// A stream entry ID.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Id {
    ms: u64,
    seq: u64,
}

impl Id {
    const MAX: Id = Id {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    fn bytes(self) -> [u8; 16] {
        let mut b = [0; 16];
        b[..8].copy_from_slice(&self.ms.to_be_bytes());
        b[8..].copy_from_slice(&self.seq.to_be_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> Id {
        let word = |r: core::ops::Range<usize>| {
            b.get(r)
                .and_then(|w| <[u8; 8]>::try_from(w).ok())
                .map_or(0, u64::from_be_bytes)
        };
        Id {
            ms: word(0..8),
            seq: word(8..16),
        }
    }

    /// The next ID, `None` after the last.
    fn next(self) -> Option<Id> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(Id { ms: self.ms, seq }),
            None => Some(Id {
                ms: self.ms.checked_add(1)?,
                seq: 0,
            }),
        }
    }

    /// The previous ID, `None` before 0-0.
    fn prev(self) -> Option<Id> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(Id { ms: self.ms, seq }),
            None => Some(Id {
                ms: self.ms.checked_sub(1)?,
                seq: u64::MAX,
            }),
        }
    }

    /// `<ms>-<seq>` as text.
    fn text(self, buf: &mut [u8; 48]) -> &[u8] {
        let mut w = SliceWriter { buf, len: 0 };
        // 41 bytes at most: always fits.
        let _ = write!(w, "{}-{}", self.ms, self.seq);
        let len = w.len;
        &buf[..len]
    }
}

/// A decimal `u64`, digits only.
fn parse_u64(a: &[u8]) -> Option<u64> {
    if a.is_empty() || !a.iter().all(u8::is_ascii_digit) {
        return None;
    }
    a.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// `<ms>` (sequence `missing_seq`), `<ms>-<seq>`, or, where `auto_seq`, `<ms>-*` (sequence
/// `None`).
fn parse_id(a: &[u8], missing_seq: u64, auto_seq: bool) -> Option<(u64, Option<u64>)> {
    match a.iter().position(|&b| b == b'-') {
        None => Some((parse_u64(a)?, Some(missing_seq))),
        Some(dash) => {
            let ms = parse_u64(&a[..dash])?;
            let seq = &a[dash + 1..];
            if auto_seq && seq == b"*" {
                Some((ms, None))
            } else {
                Some((ms, Some(parse_u64(seq)?)))
            }
        }
    }
}

/// An `XRANGE` bound: `-`, `+`, an ID (a missing sequence is `missing_seq`), exclusive after
/// `(`. `Err` carries the error text.
fn parse_bound(a: &[u8], missing_seq: u64, start: bool) -> Result<Id, &'static str> {
    let (exclusive, a) = match a {
        [b'(', rest @ ..] if !rest.is_empty() => (true, rest),
        _ => (false, a),
    };
    let id = match a {
        // `(-` and `(+` are no IDs.
        b"-" if !exclusive => Id { ms: 0, seq: 0 },
        b"+" if !exclusive => Id::MAX,
        _ => match parse_id(a, missing_seq, false) {
            Some((ms, Some(seq))) => Id { ms, seq },
            _ => return Err(BAD_ID),
        },
    };
    match (exclusive, start) {
        (false, _) => Ok(id),
        (true, true) => id.next().ok_or("ERR invalid start ID for the interval"),
        (true, false) => id.prev().ok_or("ERR invalid end ID for the interval"),
    }
}

/// The fields of a stream entry's value: each a 4-byte little-endian length and the bytes.
fn fields(mut v: &[u8]) -> impl Iterator<Item = &[u8]> {
    core::iter::from_fn(move || {
        let len = u32::from_le_bytes(v.get(..4)?.try_into().ok()?) as usize;
        let f = v.get(4..4 + len)?;
        v = &v[4 + len..];
        Some(f)
    })
}

impl Store<'_> {
    /// Executes a stream command.
    pub(super) fn stream_command(
        &mut self,
        db: u8,
        cmd: Cmd,
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        match cmd {
            Cmd::XAdd => self.xadd(db, c, now, r),
            Cmd::XLen => match self.find_kind(db, key, Kind::Stream, now) {
                Err(()) => r.error(WRONGTYPE),
                Ok(s) => r.int(s.map_or(0, |s| i64::from(self.slots[s as usize].count))),
            },
            Cmd::XRange | Cmd::XRevRange => {
                let rev = cmd == Cmd::XRevRange;
                let (a, b) = (c.arg(2).unwrap_or(b""), c.arg(3).unwrap_or(b""));
                let (start, end) = if rev { (b, a) } else { (a, b) };
                let start = match parse_bound(start, 0, true) {
                    Ok(id) => id,
                    Err(msg) => return r.error(msg),
                };
                let end = match parse_bound(end, u64::MAX, false) {
                    Ok(id) => id,
                    Err(msg) => return r.error(msg),
                };
                let mut count = None;
                let mut j = 4;
                while let Some(opt) = c.arg(j) {
                    match c.arg(j + 1) {
                        Some(n) if eq(opt, "count") => match parse_int(n) {
                            None => return r.error(NOT_INT),
                            Some(n) => count = Some(n.max(0) as u64),
                        },
                        _ => return r.error(SYNTAX),
                    }
                    j += 2;
                }
                let s = match self.find_kind(db, key, Kind::Stream, now) {
                    Err(()) => return r.error(WRONGTYPE),
                    Ok(None) => return r.array(0),
                    Ok(Some(s)) => s,
                };
                if count == Some(0) {
                    return r.raw(b"*-1\r\n");
                }
                let max = count.unwrap_or(u64::MAX);
                let mut n = 0;
                self.entries(s, start, end, rev, max, |_| {
                    n += 1;
                    Ok(())
                })?;
                r.array(n)?;
                self.entries(s, start, end, rev, max, |e| {
                    let mut buf = [0; 48];
                    r.array(2)?;
                    r.bulk(Id::from_bytes(self.key_of(e)).text(&mut buf))?;
                    r.array(fields(self.val_of(e)).count())?;
                    for f in fields(self.val_of(e)) {
                        r.bulk(f)?;
                    }
                    Ok(())
                })
            }
            _ => Ok(()),
        }
    }

    /// Calls `f` on the entries of stream `s` with IDs from `start` to `end`, in ID order
    /// (from the end for `rev`), at most `max` of them.
    fn entries(
        &self,
        s: u32,
        start: Id,
        end: Id,
        rev: bool,
        max: u64,
        mut f: impl FnMut(u32) -> Res,
    ) -> Res {
        let mut left = max;
        let mut e = self.end_of(s, !rev);
        while e != NIL && left > 0 {
            let id = Id::from_bytes(self.key_of(e));
            let (before_first, past_last) = if rev {
                (id > end, id < start)
            } else {
                (id < start, id > end)
            };
            if past_last {
                break;
            }
            if !before_first {
                f(e)?;
                left -= 1;
            }
            e = self.step_from(e, !rev);
        }
        Ok(())
    }

    /// `XADD key [NOMKSTREAM] <* | id> field value [field value ...]`.
    fn xadd(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        let mut at = 2;
        let nomkstream = c.arg(at).is_some_and(|a| eq(a, "nomkstream"));
        if nomkstream {
            at += 1;
        }
        let id_arg = c.arg(at).unwrap_or(b"");
        if eq(id_arg, "maxlen") || eq(id_arg, "minid") {
            return r.error("ERR XADD's MAXLEN and MINID (trimming) are not supported");
        }
        // None: `*`; Some((ms, None)): `<ms>-*`.
        let given = if id_arg == b"*" {
            None
        } else {
            match parse_id(id_arg, 0, true) {
                Some(id) => Some(id),
                None => return r.error(BAD_ID),
            }
        };
        let nfields = c.argc() - at - 1;
        if nfields == 0 || nfields % 2 == 1 {
            return wrong_arity(r, "xadd");
        }
        if given == Some((0, Some(0))) {
            return r.error("ERR The ID specified in XADD must be greater than 0-0");
        }
        let s = match self.find_kind(db, key, Kind::Stream, now) {
            Err(()) => return r.error(WRONGTYPE),
            Ok(None) if nomkstream => return r.nil(),
            Ok(s) => s,
        };
        let last = match s.map(|s| self.slots[s as usize].prev) {
            Some(e) if e != NIL => Id::from_bytes(self.key_of(e)),
            _ => Id { ms: 0, seq: 0 },
        };
        if last == Id::MAX {
            return r.error(
                "ERR The stream has exhausted the last possible ID, unable to add more items",
            );
        }
        let id = match given {
            None if now > last.ms => Some(Id { ms: now, seq: 0 }),
            None => last.next(),
            Some((ms, None)) if ms == last.ms => last.seq.checked_add(1).map(|seq| Id { ms, seq }),
            Some((ms, None)) => Some(Id { ms, seq: 0 }),
            Some((ms, Some(seq))) => Some(Id { ms, seq }),
        };
        let id = match id {
            Some(id) if id > last => id,
            _ => return r.error(NOT_GREATER),
        };
        let vlen: usize = c.args().skip(at + 1).map(|f| 4 + f.len()).sum();
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            if st.find_key(db, key, now).is_none() {
                b.step((0, 0), (HDR + key.len(), 1));
            }
            b.step((0, 0), (HDR + 16 + vlen, 1));
            (b.ok(), ())
        });
        if !ok {
            return r.error(OOM);
        }
        r.bulk(id.text(&mut [0; 48]))?;
        let s = match s {
            Some(s) => s,
            None => match self.insert_key(db, Kind::Stream, key, None, 0) {
                Some(s) => s,
                None => return Ok(()), // Unreachable: the plan fitted.
            },
        };
        let fill = |d: &mut [u8]| {
            let mut at_byte = 0;
            for f in c.args().skip(at + 1) {
                d[at_byte..at_byte + 4].copy_from_slice(&(f.len() as u32).to_le_bytes());
                d[at_byte + 4..at_byte + 4 + f.len()].copy_from_slice(f);
                at_byte += 4 + f.len();
            }
        };
        self.insert_child_with(s, &id.bytes(), vlen, fill, NIL);
        Ok(())
    }
}
