//! Kernel lock tracing (the `trace` feature): one [`Record`] per kernel entry, for the
//! analysis and the trace-replay simulator of the `sim` crate (issue 12, the thesis's
//! instrumentation).
//!
//! # Why it looks like this
//! The record is taken around the strategy's `enter`/`exit` in [`Kernel`](crate::Kernel)'s
//! entry path: timestamps (the HAL's cycle counter) at entry, before the lock is requested,
//! once it is acquired, before it is released and at exit, plus what entered (system-call
//! number, interrupt line, fault vector), the thread, and how many cores were in the kernel.
//! Each core writes only its own ring ([`sim::ring::Ring`], single writer, no lock, readable
//! while it runs), so recording adds no synchronisation between cores. The kernel does not own
//! the rings: the embedder gives it a [`TraceSink`] (`Kernel::set_tracer`), sized as it likes
//! (a static in an image, a leaked box in the hosted harness). Without the feature none of
//! this is compiled, and the entry path is the untraced one.
//!
//! Under the fine-grained strategy the entry also records its object locks ([`Objects`]): each
//! distinct object once, with the time of its first acquisition and how long that acquisition
//! waited (two counter reads around the lock, only while a tracer is set). The kernel takes a
//! TCB lock again in later phases of the same entry (the scheduler, the exit); those
//! re-acquisitions are not recorded, which is what the simulator's two-phase model assumes
//! (every object held from its first acquisition to the end of the section).
//!
//! "Contended" ([`sim::trace::FLAG_CONTENDED`]) is approximated as "another core was in the
//! kernel at entry": the strategies do not report whether their first attempt found the lock
//! taken, and for the big locks another core inside the kernel holds or awaits it unless it
//! is in its few instructions before the lock or after the release.

pub use sim::trace::{EntryKind, ObjectLock, Record};

use crate::config::MAX_CPUS;
use crate::CpuId;

/// Where a kernel puts its trace records.
pub trait TraceSink: Sync {
    /// Stores the record of an entry on `cpu`. Called only on `cpu` itself (one writer per
    /// core).
    fn record(&self, cpu: CpuId, r: &Record);
}

/// Per-core rings of the last `N` records each.
pub struct Tracer<const N: usize> {
    rings: [sim::ring::Ring<N>; MAX_CPUS],
}

impl<const N: usize> Tracer<N> {
    /// Empty rings (usable in a `static`).
    pub const fn new() -> Self {
        Tracer {
            rings: [const { sim::ring::Ring::new() }; MAX_CPUS],
        }
    }

    /// The ring of `cpu`.
    pub fn ring(&self, cpu: CpuId) -> &sim::ring::Ring<N> {
        &self.rings[cpu]
    }
}

impl<const N: usize> Default for Tracer<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> TraceSink for Tracer<N> {
    fn record(&self, cpu: CpuId, r: &Record) {
        if let Some(ring) = self.rings.get(cpu) {
            ring.record(r);
        }
    }
}

/// Cycles from `from` to `to`, saturated into the record's 32-bit offsets.
pub(crate) fn offset(from: u64, to: u64) -> u32 {
    to.saturating_sub(from).min(u64::from(u32::MAX)) as u32
}

/// The object locks an entry took so far: each distinct object once, in the order first taken.
/// One per core, touched only by that core's entry in progress.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Objects {
    /// The entry's timestamp (what the record's offsets count from).
    entry: u64,
    count: u8,
    truncated: bool,
    locks: [ObjectLock; sim::trace::MAX_OBJECTS],
}

impl Objects {
    /// None recorded.
    pub(crate) const EMPTY: Self = Objects {
        entry: 0,
        count: 0,
        truncated: false,
        locks: [ObjectLock {
            id: 0,
            acquired: 0,
            wait: 0,
        }; sim::trace::MAX_OBJECTS],
    };

    /// Starts the entry that began at `entry`. The slots of the last entry are left as they
    /// are (only the first `count` are ever read), so that no 72-byte copy runs per entry.
    #[inline]
    pub(crate) fn begin(&mut self, entry: u64) {
        self.entry = entry;
        self.count = 0;
        self.truncated = false;
    }

    /// Notes lock `id`, requested at `requested` and acquired at `acquired` (absolute cycles),
    /// unless the entry already holds or held it.
    pub(crate) fn note(&mut self, id: u32, requested: u64, acquired: u64) {
        let n = usize::from(self.count);
        if self.locks[..n].iter().any(|o| o.id == id) {
            return;
        }
        let Some(slot) = self.locks.get_mut(n) else {
            self.truncated = true;
            return;
        };
        *slot = ObjectLock {
            id,
            acquired: offset(self.entry, acquired),
            wait: offset(requested, acquired),
        };
        self.count += 1;
    }

    /// Copies what was noted into the entry's record, whose object slots are all zero (as in
    /// [`Record::EMPTY`]): only the noted slots are written, nothing under a big lock.
    #[inline]
    pub(crate) fn finish(&self, r: &mut Record) {
        r.object_count = self.count;
        for (to, from) in r
            .objects
            .iter_mut()
            .zip(&self.locks[..usize::from(self.count)])
        {
            *to = *from;
        }
        if self.truncated {
            r.flags |= sim::trace::FLAG_OBJECTS_TRUNCATED;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_first_acquisitions_and_flag_overflow() {
        let mut o = Objects::EMPTY;
        o.begin(1000);
        o.note(7, 1010, 1015);
        o.note(7, 1100, 1300); // retaken later: not recorded again
        for id in 1..=5 {
            o.note(id, 1020 + u64::from(id), 1030 + u64::from(id));
        }
        let mut r = Record::EMPTY;
        o.finish(&mut r);
        assert_eq!(r.object_count as usize, sim::trace::MAX_OBJECTS);
        assert_eq!(
            r.objects[0],
            ObjectLock {
                id: 7,
                acquired: 15,
                wait: 5
            }
        );
        assert_eq!(
            r.objects[5],
            ObjectLock {
                id: 5,
                acquired: 35,
                wait: 10
            }
        );
        assert_eq!(r.flags, 0);
        o.note(6, 1040, 1041);
        o.finish(&mut r);
        assert_eq!(r.flags, sim::trace::FLAG_OBJECTS_TRUNCATED);
        // A new entry starts empty, and its record's slots stay zero.
        o.begin(2000);
        let mut r = Record::EMPTY;
        o.finish(&mut r);
        assert_eq!(r, Record::EMPTY);
        // One lock: the record has it alone, the stale slots of the last entry are not copied.
        o.begin(3000);
        o.note(9, 3001, 3004);
        let mut r = Record::EMPTY;
        o.finish(&mut r);
        assert_eq!(r.object_count, 1);
        assert_eq!(
            r.object_locks(),
            [ObjectLock {
                id: 9,
                acquired: 4,
                wait: 3
            }]
        );
        assert!(r.objects[1..].iter().all(|o| *o == ObjectLock::default()));
    }
}
