//! Commands on keys of any type: `TYPE`, `RENAME`, `RENAMENX`, `KEYS`, `RANDOMKEY`.
//!
//! `KEYS` walks the whole slot table (after reclaiming expired keys), twice: once to count the
//! matches for the reply's header, once to write them; it answers in slot order, which is as
//! arbitrary as Redis's. `RANDOMKEY` takes the first key of the database at or after a random
//! slot, so keys after long runs of other databases' or free slots come up more often.

use crate::commands::{Res, OOM};
use crate::output::Reply;
use crate::parser::Command;
use crate::store::{Budget, Kind, Store, HDR};

/// A command of this module's table.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Cmd {
    Type,
    Rename,
    RenameNx,
    Keys,
    RandomKey,
}

/// Name (lower case), arity as in Redis 7.0, command.
pub(crate) const TABLE: &[(&str, i32, Cmd)] = &[
    ("type", 2, Cmd::Type),
    ("rename", 3, Cmd::Rename),
    ("renamenx", 3, Cmd::RenameNx),
    ("keys", 2, Cmd::Keys),
    ("randomkey", 1, Cmd::RandomKey),
];

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
                if let Some(d) = self.find_key(db, to, now) {
                    self.remove_key(d);
                }
                self.rename_key(e, db, to);
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
        }
    }
}
