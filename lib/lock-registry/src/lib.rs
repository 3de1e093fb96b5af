//! The kernel's locking strategies, listed once.
//!
//! Every place that names a strategy takes it from here: the kernel command line's `lock=`
//! word (the images' parser), the `--lock` option of `qemu`, `bench`, `trace` and `flash`
//! (through `clap::ValueEnum`, feature `clap`), the test matrix of `cargo xtask test` (each
//! strategy's [`Rows`]) and the reports. A lock added to the lock crate reaches every command
//! through one entry in [`ENTRIES`] and one line in the images' `strategy.rs`, the one place
//! that needs the lock's type (an exhaustive `match` on [`Lock`], which fails to compile until
//! the line is there). `docs/locks.md` ("Adding a lock") walks through it.
//!
//! `no_std`: the images parse `lock=` with it.
#![no_std]

/// A kernel locking strategy, as `lock=` on the kernel command line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lock {
    /// Big kernel lock: CLH queue lock (the default, as seL4).
    Clh,
    /// Big kernel lock: ticket lock.
    Ticket,
    /// Big kernel lock: MCS queue lock.
    Mcs,
    /// Big kernel lock: queued spinlock (Linux's `qspinlock`: one word, a pending bit, MCS
    /// nodes per core in a pool of the kernel's).
    Qspin,
    /// Big kernel lock: compact NUMA-aware queue lock (CNA, over the qspinlock's word): the
    /// queue head hands over to a waiter on its own NUMA node first, within a fairness bound;
    /// the cores' NUMA nodes come from the firmware (the ACPI SRAT on x86).
    Cna,
    /// Fine-grained: big-reader lock (read side for IPC, write side for management) plus
    /// per-object ticket locks. `brlock` names the same strategy.
    Fine,
    /// Intel RTM elision of a CLH big lock (falls back to the lock where RTM is absent, as
    /// under QEMU TCG).
    Rtm,
    /// No lock at all: only sound because every core's threads use only their own objects and
    /// the root task finishes its management calls before the other cores enter the kernel.
    None,
}

/// How a strategy synchronises the kernel's cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One lock around the whole kernel, taken on every entry.
    BigLock,
    /// A big-reader lock plus per-object locks.
    FineGrained,
    /// Hardware transactions over a big lock, which is their fallback.
    Elided,
    /// Nothing: the unsafe baseline.
    NoLock,
}

/// Which rows of the test matrix of `cargo xtask test` a strategy gets (each row costs CI
/// time: a strategy that only varies the big lock may run fewer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows {
    /// The kernel's test suite in QEMU with one core (`qemu:smp1-<lock>` and its ARMv7 rows).
    pub suite_smp1: bool,
    /// The kernel's test suite in QEMU with four cores (`qemu:smp4-<lock>`, ARMv7 rows).
    pub suite_smp4: bool,
    /// The system-call fuzzer on every machine (`fuzz:<machine>-<lock>`).
    pub fuzz: bool,
}

impl Rows {
    /// Every row.
    pub const ALL: Rows = Rows {
        suite_smp1: true,
        suite_smp4: true,
        fuzz: true,
    };
}

/// What the registry says of one strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The strategy.
    pub lock: Lock,
    /// The `lock=` word and `--lock` value; also the name in the boot log (`lock: NAME`) and
    /// in benchmark records.
    pub name: &'static str,
    /// Other words accepted for it.
    pub aliases: &'static [&'static str],
    /// What the strategy is, in a few words (boot log, `--help`).
    pub describe: &'static str,
    /// How it synchronises.
    pub kind: Kind,
    /// Its rows in the test matrix.
    pub rows: Rows,
}

/// Every strategy, in the order reports and the test matrix list them.
pub const ENTRIES: &[Entry] = &[
    Entry {
        lock: Lock::Clh,
        name: "clh",
        aliases: &[],
        describe: "big kernel lock, CLH queue lock",
        kind: Kind::BigLock,
        rows: Rows::ALL,
    },
    Entry {
        lock: Lock::Ticket,
        name: "ticket",
        aliases: &[],
        describe: "big kernel lock, ticket lock",
        kind: Kind::BigLock,
        rows: Rows::ALL,
    },
    Entry {
        lock: Lock::Mcs,
        name: "mcs",
        aliases: &[],
        describe: "big kernel lock, MCS queue lock",
        kind: Kind::BigLock,
        rows: Rows::ALL,
    },
    Entry {
        lock: Lock::Qspin,
        name: "qspin",
        aliases: &[],
        describe: "big kernel lock, queued spinlock (Linux's qspinlock)",
        kind: Kind::BigLock,
        rows: Rows::ALL,
    },
    Entry {
        lock: Lock::Cna,
        name: "cna",
        aliases: &[],
        describe: "big kernel lock, NUMA-aware queue lock (CNA), its nodes from the firmware",
        kind: Kind::BigLock,
        rows: Rows::ALL,
    },
    Entry {
        lock: Lock::Fine,
        name: "fine",
        aliases: &["brlock"],
        describe: "fine-grained: big-reader lock + per-object ticket locks",
        kind: Kind::FineGrained,
        rows: Rows::ALL,
    },
    Entry {
        lock: Lock::Rtm,
        name: "rtm",
        aliases: &[],
        describe: "RTM lock elision over a CLH big lock",
        kind: Kind::Elided,
        rows: Rows::ALL,
    },
    Entry {
        lock: Lock::None,
        name: "none",
        aliases: &[],
        describe: "no lock (disjoint per-core objects only)",
        kind: Kind::NoLock,
        rows: Rows::ALL,
    },
];

/// The number of strategies.
pub const COUNT: usize = ENTRIES.len();

/// Every strategy, in the order of [`ENTRIES`].
pub const ALL: [Lock; COUNT] = {
    let mut all = [Lock::Clh; COUNT];
    let mut i = 0;
    while i < COUNT {
        all[i] = ENTRIES[i].lock;
        i += 1;
    }
    all
};

/// Every strategy in the order of reports, tables and plots: the baseline (`none`) first, then
/// the order of [`ENTRIES`].
pub const REPORT_ORDER: [Lock; COUNT] = {
    let mut order = [Lock::None; COUNT];
    let (mut i, mut n) = (0, 1);
    while i < COUNT {
        if !matches!(ALL[i], Lock::None) {
            order[n] = ALL[i];
            n += 1;
        }
        i += 1;
    }
    order
};

impl Lock {
    /// Every strategy, in the order of [`ENTRIES`].
    pub const ALL: [Lock; COUNT] = ALL;

    /// Every accepted command-line word, a strategy's aliases before its name, for messages.
    pub const NAMES: &'static str = "clh, ticket, mcs, qspin, cna, brlock, fine, rtm, none";

    /// The registry's entry for this strategy.
    pub const fn entry(self) -> &'static Entry {
        let mut i = 0;
        while i < ENTRIES.len() {
            if ENTRIES[i].lock as u8 == self as u8 {
                return &ENTRIES[i];
            }
            i += 1;
        }
        panic!("a Lock without an entry in ENTRIES");
    }

    /// Parses a command-line word (a name or an alias).
    pub fn parse(word: &str) -> Option<Lock> {
        ENTRIES
            .iter()
            .find(|e| e.name == word || e.aliases.contains(&word))
            .map(|e| e.lock)
    }

    /// The name (`lock=` word, boot log, benchmark records).
    pub const fn name(self) -> &'static str {
        self.entry().name
    }

    /// What the strategy is.
    pub const fn describe(self) -> &'static str {
        self.entry().describe
    }

    /// How it synchronises.
    pub const fn kind(self) -> Kind {
        self.entry().kind
    }

    /// Its rows in the test matrix.
    pub const fn rows(self) -> Rows {
        self.entry().rows
    }
}

impl core::fmt::Display for Lock {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(feature = "clap")]
impl clap::ValueEnum for Lock {
    fn value_variants<'a>() -> &'a [Self] {
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let e = self.entry();
        Some(
            clap::builder::PossibleValue::new(e.name)
                .aliases(e.aliases.iter().copied())
                .help(e.describe),
        )
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    #[test]
    fn every_variant_has_one_entry_and_unique_words() {
        for lock in ALL {
            assert_eq!(ENTRIES.iter().filter(|e| e.lock == lock).count(), 1);
            assert_eq!(lock.entry().lock, lock);
        }
        let words: Vec<&str> = ENTRIES
            .iter()
            .flat_map(|e| core::iter::once(e.name).chain(e.aliases.iter().copied()))
            .collect();
        for (i, w) in words.iter().enumerate() {
            assert!(!words[i + 1..].contains(w), "{w} names two strategies");
        }
    }

    #[test]
    fn names_lists_every_word_in_order() {
        let words: Vec<&str> = ENTRIES
            .iter()
            .flat_map(|e| e.aliases.iter().copied().chain(core::iter::once(e.name)))
            .collect();
        assert_eq!(Lock::NAMES, words.join(", "));
    }

    #[test]
    fn the_report_order_is_the_baseline_then_the_registry() {
        assert_eq!(REPORT_ORDER[0], Lock::None);
        let rest: Vec<Lock> = ALL.into_iter().filter(|l| *l != Lock::None).collect();
        assert_eq!(REPORT_ORDER[1..], rest[..]);
    }

    #[test]
    fn parse_takes_names_and_aliases_only() {
        for e in ENTRIES {
            assert_eq!(Lock::parse(e.name), Some(e.lock));
            for a in e.aliases {
                assert_eq!(Lock::parse(a), Some(e.lock));
            }
        }
        assert_eq!(Lock::parse("brlock"), Some(Lock::Fine));
        for bad in ["", "spin", "CLH", "clh "] {
            assert_eq!(Lock::parse(bad), None, "{bad:?}");
        }
    }

    #[cfg(feature = "clap")]
    #[test]
    fn clap_values_are_the_names_with_their_aliases() {
        use clap::ValueEnum;
        for e in ENTRIES {
            assert_eq!(Lock::from_str(e.name, false), Ok(e.lock));
            for a in e.aliases {
                assert_eq!(Lock::from_str(a, false), Ok(e.lock));
            }
        }
        assert!(Lock::from_str("spin", false).is_err());
    }
}
