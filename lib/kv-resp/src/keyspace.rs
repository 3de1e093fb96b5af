//! Commands on keys of any type: `DEL`, `UNLINK`, `EXISTS`, `TOUCH`, `TYPE`, `RENAME`,
//! `RENAMENX`, `COPY`, `MOVE`, `SWAPDB`, `KEYS`, `SCAN`, `RANDOMKEY`, `MEMORY USAGE`.
//!
//! `SCAN`'s cursor is a slot index: a call walks the slot table from it, answers the keys of
//! the database it passes (filtered by `MATCH` and `TYPE`) and the index to go on from, 0 at
//! the end. A key keeps its slot for as long as it exists (renaming, moving to another
//! database, compaction of the arena and growing or shrinking a collection never change it), so
//! a full scan returns every key that exists for all of it exactly once, Redis's guarantee (a
//! key added or deleted meanwhile may or may not be returned). A key overwritten by a value of
//! another type (`SET` over a list, `COPY ... REPLACE`) keeps its slot too: the old key's slot
//! is the first free one when the new key takes one; and a `RENAME` onto an existing key moves
//! the renamed key into the overwritten key's slot. `COUNT` is, as in Redis, a hint:
//! a call stops after passing `COUNT` keys of the database, after `10 × COUNT` slots (at least
//! 1024), or when its reply would take a quarter of the output buffer.
//!
//! `KEYS` walks the whole slot table (after reclaiming expired keys), twice: once to count the
//! matches for the reply's header, once to write them; it answers in slot order, which is as
//! arbitrary as Redis's. `RANDOMKEY` takes the first key of the database at or after a random
//! slot, so keys after long runs of other databases' or free slots come up more often.

use crate::commands::{eq, Res, NOT_INT, OOM, SYNTAX};
use crate::output::{fmt_i64, Reply};
use crate::parser::{parse_int, Command};
use crate::store::{Budget, Kind, Store, DATABASES, HDR};

const SAME: &str = "ERR source and destination objects are the same";
const DB_RANGE: &str = "ERR DB index is out of range";

/// A command of this module's table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Cmd {
    /// `DEL` and `UNLINK`.
    Del,
    /// `EXISTS` and `TOUCH`.
    Exists,
    Copy,
    Move,
    SwapDb,
    Scan,
    Type,
    Rename,
    RenameNx,
    Keys,
    RandomKey,
    /// `MEMORY USAGE`.
    Memory,
}

/// Name (lower case), arity as in Redis 7.0, command.
pub(crate) const TABLE: &[(&str, i32, Cmd)] = &[
    ("del", -2, Cmd::Del),
    ("unlink", -2, Cmd::Del),
    ("exists", -2, Cmd::Exists),
    ("touch", -2, Cmd::Exists),
    ("copy", -3, Cmd::Copy),
    ("move", 3, Cmd::Move),
    ("swapdb", 3, Cmd::SwapDb),
    ("scan", -2, Cmd::Scan),
    ("type", 2, Cmd::Type),
    ("rename", 3, Cmd::Rename),
    ("renamenx", 3, Cmd::RenameNx),
    ("keys", 2, Cmd::Keys),
    ("randomkey", 1, Cmd::RandomKey),
    ("memory", -2, Cmd::Memory),
];

/// `-ERR invalid cursor`.
pub(crate) const INVALID_CURSOR: &str = "ERR invalid cursor";

/// A `SCAN`-family cursor as Redis reads it with `strtoul`: an optional sign (a negative one
/// wraps), then decimal digits that fit 64 bits.
pub(crate) fn scan_cursor(text: &[u8]) -> Option<u64> {
    let (neg, digits) = match text.split_first() {
        Some((b'-', d)) => (true, d),
        Some((b'+', d)) => (false, d),
        _ => (false, text),
    };
    core::str::from_utf8(digits)
        .ok()
        .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|d| d.parse::<u64>().ok())
        .map(|n| if neg { n.wrapping_neg() } else { n })
}

/// The options of a `SCAN`-family command.
pub(crate) struct ScanOptions<'c> {
    /// The `MATCH` pattern (`None` for none or `*`).
    pub(crate) pattern: Option<&'c [u8]>,
    /// The `COUNT` hint (10 by default).
    pub(crate) count: i64,
    /// The `TYPE` (`SCAN` only).
    pub(crate) kind: Option<&'c [u8]>,
}

/// The options of a `SCAN`-family command from argument `from` on, in Redis's order of checks,
/// `TYPE` allowed where `with_type` (`SCAN` only); `Err` holds the error to answer.
pub(crate) fn scan_options<'c>(
    c: &Command<'c>,
    from: usize,
    with_type: bool,
) -> Result<ScanOptions<'c>, &'static str> {
    let (mut pattern, mut count, mut kind) = (None, 10i64, None);
    let mut j = from;
    while let Some(opt) = c.arg(j) {
        let Some(v) = c.arg(j + 1) else {
            return Err(SYNTAX);
        };
        if eq(opt, "count") {
            match parse_int(v) {
                None => return Err(NOT_INT),
                Some(n) if n < 1 => return Err(SYNTAX),
                Some(n) => count = n,
            }
        } else if eq(opt, "match") {
            pattern = (v != b"*").then_some(v);
        } else if with_type && eq(opt, "type") {
            kind = Some(v);
        } else {
            return Err(SYNTAX);
        }
        j += 2;
    }
    Ok(ScanOptions {
        pattern,
        count,
        kind,
    })
}

/// Whether `s` matches the glob-style `pattern` as Redis's `KEYS` matches: `*` any run, `?` any
/// byte, `[abc]`, `[^abc]` and `[a-z]` classes, `\x` the byte `x`.
pub(crate) fn glob(pattern: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    // Where to resume after the last `*`: the pattern after it, and the next byte it takes.
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p < pattern.len() && pattern[p] == b'*' {
            p += 1;
            star = Some((p, i));
            continue;
        }
        if i == s.len() {
            // Only stars may be left.
            return pattern[p..].iter().all(|&b| b == b'*');
        }
        if let Some(next) = (p < pattern.len())
            .then(|| one(&pattern[p..], s[i]))
            .flatten()
        {
            p += next;
            i += 1;
            continue;
        }
        match star {
            // The last star takes one more byte.
            Some((sp, si)) => {
                star = Some((sp, si + 1));
                p = sp;
                i = si + 1;
            }
            None => return false,
        }
    }
}

/// Whether the pattern element at the start of `pattern` (not `*`) matches byte `c`: the
/// element's length if it does.
fn one(pattern: &[u8], c: u8) -> Option<usize> {
    match pattern[0] {
        b'?' => Some(1),
        b'\\' if pattern.len() >= 2 => (pattern[1] == c).then_some(2),
        b'[' => {
            let mut j = 1;
            let negate = pattern.get(j) == Some(&b'^');
            if negate {
                j += 1;
            }
            let mut hit = false;
            // An unterminated class ends with the pattern.
            while j < pattern.len() && pattern[j] != b']' {
                if pattern[j] == b'\\' && j + 1 < pattern.len() {
                    hit |= pattern[j + 1] == c;
                    j += 2;
                } else if j + 2 < pattern.len() && pattern[j + 1] == b'-' {
                    let (a, b) = (pattern[j], pattern[j + 2]);
                    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                    hit |= (lo..=hi).contains(&c);
                    j += 3;
                } else {
                    hit |= pattern[j] == c;
                    j += 1;
                }
            }
            let len = (j + 1).min(pattern.len());
            (hit != negate).then_some(len)
        }
        b => (b == c).then_some(1),
    }
}

impl Store<'_> {
    /// Executes a command of [`TABLE`] whose arity was checked.
    pub(crate) fn keyspace_command(
        &mut self,
        db: u8,
        cmd: Cmd,
        c: &Command<'_>,
        now: u64,
        r: &mut Reply<'_, '_>,
    ) -> Res {
        let key = c.arg(1).unwrap_or(b"");
        match cmd {
            Cmd::Del => {
                r.reserve(24)?;
                let mut n = 0;
                for k in c.args().skip(1) {
                    if let Some(e) = self.find_key(db, k, now) {
                        self.remove_key(e);
                        n += 1;
                    }
                }
                r.int(n)
            }
            Cmd::Exists => {
                let mut n = 0;
                for k in c.args().skip(1) {
                    n += i64::from(self.find_key(db, k, now).is_some());
                }
                r.int(n)
            }
            Cmd::Copy => self.copy(db, c, now, r),
            Cmd::Move => {
                let to = match parse_int(c.arg(2).unwrap_or(b"")) {
                    Some(n) if i32::try_from(n).is_err() => {
                        return r.error(
                            "ERR value is out of range, value must between -2147483648 and \
                             2147483647",
                        )
                    }
                    None => return r.error(NOT_INT),
                    Some(n) if !(0..DATABASES as i64).contains(&n) => return r.error(DB_RANGE),
                    Some(n) => n as u8,
                };
                if to == db {
                    return r.error(SAME);
                }
                r.reserve(24)?;
                let Some(e) = self.find_key(db, key, now) else {
                    return r.int(0);
                };
                if self.find_key(to, key, now).is_some() {
                    return r.int(0);
                }
                self.move_key(e, to);
                r.int(1)
            }
            Cmd::SwapDb => {
                let index = |a: Option<&[u8]>, msg| match parse_int(a.unwrap_or(b"")) {
                    Some(n) if i32::try_from(n).is_ok() => Ok(n),
                    _ => Err(msg),
                };
                let ids = index(c.arg(1), "ERR invalid first DB index")
                    .and_then(|a| Ok((a, index(c.arg(2), "ERR invalid second DB index")?)));
                match ids {
                    Err(msg) => r.error(msg),
                    Ok((a, b)) => {
                        let range = 0..DATABASES as i64;
                        if !range.contains(&a) || !range.contains(&b) {
                            return r.error(DB_RANGE);
                        }
                        r.ok()?;
                        self.swap_dbs(a as u8, b as u8);
                        Ok(())
                    }
                }
            }
            Cmd::Scan => self.scan(db, c, now, r),
            Cmd::Type => {
                let kind = self
                    .find_key(db, key, now)
                    .map_or(Kind::Free, |e| self.slots[e as usize].kind);
                r.simple(kind.type_name().as_bytes())
            }
            Cmd::Rename | Cmd::RenameNx => {
                let nx = cmd == Cmd::RenameNx;
                let to = c.arg(2).unwrap_or(b"");
                let Some(e) = self.find_key(db, key, now) else {
                    return r.error("ERR no such key");
                };
                if key == to {
                    return if nx { r.int(0) } else { r.ok() };
                }
                let dst = self.find_key(db, to, now);
                if nx && dst.is_some() {
                    return r.int(0);
                }
                let (ok, ()) = self.fits(now, |st| {
                    let mut b = Budget::new(st);
                    let freed = st.find_key(db, to, now).map_or((0, 0), |d| st.footprint(d));
                    // The renamed key's new block is written beside its old one.
                    let vlen = st.slots[e as usize].vlen as usize;
                    b.step(freed, (HDR + to.len() + vlen, 0));
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
                match self.find_key(db, to, now) {
                    Some(d) => self.rename_over(e, d, db, to),
                    None => self.rename_key(e, db, to),
                }
                Ok(())
            }
            Cmd::Keys => {
                self.sweep_all(now);
                let matching = |st: &Self, i: usize| {
                    let s = &st.slots[i];
                    s.kind.is_key() && s.db == db && glob(key, st.key_of(i as u32))
                };
                let n = (0..self.nslots).filter(|&i| matching(self, i)).count();
                r.array(n)?;
                for i in 0..self.nslots {
                    if matching(self, i) {
                        r.bulk(self.key_of(i as u32))?;
                    }
                }
                Ok(())
            }
            Cmd::RandomKey => match self.random_key(db, now) {
                None => r.nil(),
                Some(e) => r.bulk(self.key_of(e)),
            },
            Cmd::Memory => self.memory(db, c, now, r),
        }
    }

    /// `MEMORY USAGE key [SAMPLES count]`: the arena bytes the key takes with its children
    /// (headers included: what deleting it gives back), nil for an absent key. `SAMPLES` is
    /// checked and has no effect: the size is always exact.
    fn memory(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let sub = c.arg(1).unwrap_or(b"");
        if !eq(sub, "usage") {
            return crate::admin::unknown_subcommand(r, sub, "MEMORY");
        }
        let Some(key) = c.arg(2) else {
            return r.error("ERR wrong number of arguments for 'memory|usage' command");
        };
        let mut j = 3;
        while let Some(opt) = c.arg(j) {
            match (eq(opt, "samples"), c.arg(j + 1).map(parse_int)) {
                (true, Some(None)) => return r.error(NOT_INT),
                (true, Some(Some(n))) if n >= 0 => j += 2,
                _ => return r.error(SYNTAX),
            }
        }
        match self.find_key(db, key, now) {
            None => r.nil(),
            Some(e) => r.int(self.footprint(e).0 as i64),
        }
    }

    /// `COPY source destination [DB db] [REPLACE]`.
    fn copy(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let (key, to) = (c.arg(1).unwrap_or(b""), c.arg(2).unwrap_or(b""));
        let (mut dst_db, mut replace) = (db, false);
        let mut j = 3;
        while let Some(opt) = c.arg(j) {
            if eq(opt, "replace") {
                replace = true;
            } else if let (true, Some(v)) = (eq(opt, "db"), c.arg(j + 1)) {
                match parse_int(v) {
                    None => return r.error(NOT_INT),
                    Some(n) if !(0..DATABASES as i64).contains(&n) => return r.error(DB_RANGE),
                    Some(n) => dst_db = n as u8,
                }
                j += 1;
            } else {
                return r.error(SYNTAX);
            }
            j += 1;
        }
        if dst_db == db && key == to {
            return r.error(SAME);
        }
        let Some(e) = self.find_key(db, key, now) else {
            return r.int(0);
        };
        if self.find_key(dst_db, to, now).is_some() && !replace {
            return r.int(0);
        }
        let (ok, ()) = self.fits(now, |st| {
            let mut b = Budget::new(st);
            let freed = st
                .find_key(dst_db, to, now)
                .map_or((0, 0), |d| st.footprint(d));
            b.step(freed, st.copy_footprint(e, to));
            (b.ok(), ())
        });
        if !ok {
            return r.error(OOM);
        }
        r.int(1)?;
        if let Some(d) = self.find_key(dst_db, to, now) {
            self.remove_key(d);
        }
        let expire = self.slots[e as usize].expire;
        self.copy_key(e, dst_db, to, expire);
        Ok(())
    }

    /// The slots one call of a `SCAN`-family command passes, from slot `cursor` on (see the
    /// module's docs): it stops after `count` entries, after `10 × count` slots (at least
    /// 1024), or before its wanted entries' replies would take more than `budget` bytes (but
    /// after one at least). `entry` tells, for slot `i`, whether it holds an entry of the scan
    /// (`None`: not), and then whether it is wanted (matches the pattern) and the bytes its
    /// reply takes; it may reclaim an expired key. Answers the window `start..end` and the
    /// number of wanted entries in it.
    pub(crate) fn scan_window(
        &mut self,
        cursor: u64,
        count: i64,
        budget: usize,
        mut entry: impl FnMut(&mut Self, usize) -> Option<(bool, usize)>,
    ) -> (usize, usize, usize) {
        let start = cursor.min(self.nslots as u64) as usize;
        let max_slots = (count.saturating_mul(10).max(1024) as usize).min(self.nslots);
        let (mut end, mut seen, mut bytes, mut n) = (start, 0, 0, 0);
        while end < self.nslots && end - start < max_slots && seen < count {
            if let Some((wanted, cost)) = entry(self, end) {
                if n > 0 && bytes + cost > budget {
                    break;
                }
                seen += 1;
                if wanted {
                    bytes += cost;
                    n += 1;
                }
            }
            end += 1;
        }
        (start, end, n)
    }

    /// Writes the start of a `SCAN`-family reply for a window ending at slot `end`: a pair of
    /// the next cursor (0 at the table's end) and, for the caller to follow, the entries.
    pub(crate) fn scan_header(&self, end: usize, r: &mut Reply<'_, '_>) -> Res {
        let next = if end >= self.nslots { 0 } else { end as i64 };
        r.array(2)?;
        r.bulk(fmt_i64(next, &mut [0; 24]))
    }

    /// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]` (see the module's docs).
    fn scan(&mut self, db: u8, c: &Command<'_>, now: u64, r: &mut Reply<'_, '_>) -> Res {
        let Some(cursor) = scan_cursor(c.arg(1).unwrap_or(b"")) else {
            return r.error(INVALID_CURSOR);
        };
        let ScanOptions {
            pattern,
            count,
            kind,
        } = match scan_options(c, 2, true) {
            Ok(o) => o,
            Err(msg) => return r.error(msg),
        };
        let wanted = |st: &Self, i: usize| {
            let s = &st.slots[i];
            s.kind.is_key()
                && s.db == db
                && pattern.is_none_or(|p| glob(p, st.key_of(i as u32)))
                && kind.is_none_or(|t| eq(t, s.kind.type_name()))
        };
        let budget = r.capacity() / 4;
        let (start, end, n) = self.scan_window(cursor, count, budget, |st, i| {
            let s = st.slots[i];
            if !(s.kind.is_key() && s.db == db) {
                return None;
            }
            if Store::expired(&s, now) {
                st.remove_key(i as u32);
                return None;
            }
            Some((wanted(st, i), 16 + s.klen as usize))
        });
        self.scan_header(end, r)?;
        r.array(n)?;
        for i in start..end {
            if wanted(self, i) {
                r.bulk(self.key_of(i as u32))?;
            }
        }
        Ok(())
    }
}
