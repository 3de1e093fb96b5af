//! Which keys (or fields, or members) of one multi-key command repeat an earlier one.
//!
//! A write is planned against the memory budget before anything changes (see [`crate::store`]),
//! and in `MSET k 1 k 22` the second `k` replaces what the same command wrote a moment
//! before, not what the store holds: the plan needs, for each key, whether the command named
//! it before and with what. Searching the earlier arguments for each one costs a number of
//! comparisons quadratic in the request's length (200 million for the 20,002 arguments of
//! Redis's "large number of args" test), during which the server serves no one else.
//!
//! [`Repeats`] answers in constant time with a small table on the caller's stack (no
//! allocator): an open-addressed table of the keys seen, each with a value the caller chooses
//! (a value's length, say), and a bit set of their hashes. While fewer than [`EXACT_KEYS`]
//! distinct keys were seen, every answer is exact. After that, a key whose hash bit is clear
//! is still known to be new; one whose bit is set and that is not in the table is
//! [`Seen::Unknown`], and the caller plans for the worse case (a command with many distinct
//! keys may then be refused with `-OOM` a little before the arena is really full, never
//! accepted when it does not fit).

use crate::store::fnv;

/// Table entries; a power of two.
const ENTRIES: usize = 256;
/// Distinct keys the table holds exactly (three quarters of it, so that probes stay short).
pub(crate) const EXACT_KEYS: usize = ENTRIES * 3 / 4;
/// Bits of the hash set.
const BITS: usize = 4096;

/// What [`Repeats::note`] knows of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// The command did not name it before.
    First,
    /// The command named it before; the value noted with it last time.
    Again(usize),
    /// Perhaps named before (more than [`EXACT_KEYS`] distinct keys were seen).
    Unknown,
}

/// The keys one command named so far (see the module docs).
pub(crate) struct Repeats<'p> {
    table: [Option<(&'p [u8], usize)>; ENTRIES],
    bits: [u64; BITS / 64],
    held: usize,
    overflowed: bool,
}

impl<'p> Repeats<'p> {
    pub(crate) fn new() -> Self {
        Repeats {
            table: [None; ENTRIES],
            bits: [0; BITS / 64],
            held: 0,
            overflowed: false,
        }
    }

    /// Notes that the command names `key`, with `value`, and says whether it did before.
    pub(crate) fn note(&mut self, key: &'p [u8], value: usize) -> Seen {
        let h = fnv(0x811c_9dc5, key) as usize;
        let (word, bit) = ((h % BITS) / 64, 1u64 << (h % 64));
        let maybe = self.bits[word] & bit != 0;
        self.bits[word] |= bit;
        let mut i = (h >> 12) % ENTRIES;
        if maybe {
            // Linear probing: the run of occupied entries from the key's home holds it if
            // the table does.
            while let Some((k, v)) = &mut self.table[i] {
                if *k == key {
                    let before = *v;
                    *v = value;
                    return Seen::Again(before);
                }
                i = (i + 1) % ENTRIES;
            }
            if self.overflowed {
                return Seen::Unknown;
            }
        } else {
            while self.table[i].is_some() {
                i = (i + 1) % ENTRIES;
            }
        }
        // A new key: `i` is the free entry at the end of its probe run.
        if self.held < EXACT_KEYS {
            self.table[i] = Some((key, value));
            self.held += 1;
        } else {
            self.overflowed = true;
        }
        Seen::First
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::collections::HashMap;
    use std::format;
    use std::string::String;
    use std::vec::Vec;

    /// Checks every answer against a map of what was really noted, for `keys` drawn from
    /// `distinct` names: exact while at most [`EXACT_KEYS`] were seen, never wrong after.
    fn against_model(distinct: usize, notes: usize, seed: u64) -> (usize, usize) {
        let names: Vec<String> = (0..distinct).map(|i| format!("key:{i}")).collect();
        let mut model: HashMap<&[u8], usize> = HashMap::new();
        let mut r = Repeats::new();
        let mut x = seed;
        let (mut exact, mut unknown) = (0, 0);
        for value in 0..notes {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = names[(x % distinct as u64) as usize].as_bytes();
            let before = model.insert(key, value);
            match (r.note(key, value), before) {
                (Seen::First, None) => exact += 1,
                (Seen::Again(v), Some(b)) if v == b => exact += 1,
                (Seen::Unknown, _) => {
                    assert!(
                        model.len() > EXACT_KEYS,
                        "unknown after {} keys",
                        model.len()
                    );
                    unknown += 1;
                }
                (seen, before) => panic!("{seen:?} for a key noted before with {before:?}"),
            }
        }
        (exact, unknown)
    }

    #[test]
    fn exact_for_few_distinct_keys() {
        for seed in 1..20 {
            assert_eq!(against_model(EXACT_KEYS, 5000, seed), (5000, 0));
            assert_eq!(against_model(3, 5000, seed), (5000, 0));
        }
    }

    #[test]
    fn never_wrong_for_many_distinct_keys() {
        for seed in 1..20 {
            let (exact, unknown) = against_model(20_000, 30_000, seed);
            assert_eq!(exact + unknown, 30_000);
            // The keys the table holds, and the new ones whose hash bit is clear, are still
            // answered exactly.
            assert!(exact > EXACT_KEYS, "{exact}");
        }
    }

    #[test]
    fn one_key_repeated_keeps_its_last_value() {
        let mut r = Repeats::new();
        assert_eq!(r.note(b"k", 1), Seen::First);
        for v in 2..20_000 {
            assert_eq!(r.note(b"k", v), Seen::Again(v - 1));
        }
    }
}
