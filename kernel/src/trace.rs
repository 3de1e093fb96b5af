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

    /// Starts the entry that began at `entry`.
    pub(crate) fn begin(&mut self, entry: u64) {
        *self = Objects {
            entry,
            ..Self::EMPTY
        };
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

    /// Copies what was noted into the entry's record.
    pub(crate) fn finish(&self, r: &mut Record) {
        r.object_count = self.count;
        r.objects = self.locks;
        if self.truncated {
            r.flags |= sim::trace::FLAG_OBJECTS_TRUNCATED;
        }
    }
}

/// The RTM outcome of one section from `cpu`'s elision counters read `before` entering and
/// `after` leaving it: committed or fell back, the aborted attempts before, and the causes of
/// those aborts as the low byte of Intel's RTM status word would name them (ORed: bit 0 explicit
/// `XABORT` (the busy fallback), 1 retry, 2 conflict, 3 capacity, 4 debug, 5 nested; an
/// unnamed abort sets none). `NotUsed` if the counters did not move (no acquisition counted).
pub(crate) fn rtm_outcome(
    before: &kernel_locks::RtmStats,
    after: &kernel_locks::RtmStats,
) -> (sim::trace::RtmOutcome, u8, u8) {
    use sim::trace::RtmOutcome;
    let d = |a: u64, b: u64| b.wrapping_sub(a);
    let committed = d(before.elided(), after.elided());
    let fell_back = d(before.fallback, after.fallback);
    let outcome = if fell_back > 0 {
        RtmOutcome::FellBack
    } else if committed > 0 {
        RtmOutcome::Committed
    } else {
        RtmOutcome::NotUsed
    };
    let retries = d(before.aborts(), after.aborts()).min(255) as u8;
    let mut cause = 0u8;
    for (bit, a, b) in [
        (1 << 0, before.aborts_busy, after.aborts_busy),
        (1 << 1, before.aborts_retry, after.aborts_retry),
        (1 << 2, before.aborts_conflict, after.aborts_conflict),
        (1 << 3, before.aborts_capacity, after.aborts_capacity),
        (
            1 << 4,
            before.aborts_debug_nested,
            after.aborts_debug_nested,
        ),
    ] {
        if d(a, b) > 0 {
            cause |= bit;
        }
    }
    (outcome, retries, cause)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtm_outcomes_from_counter_differences() {
        use kernel_locks::RtmStats;
        use sim::trace::RtmOutcome;
        let before = RtmStats {
            direct: 5,
            fallback: 2,
            aborts_conflict: 3,
            ..RtmStats::default()
        };
        let commit_after_two = RtmStats {
            retry2: 1,
            aborts_conflict: 4,
            aborts_retry: 1,
            ..before
        };
        assert_eq!(
            rtm_outcome(&before, &commit_after_two),
            (RtmOutcome::Committed, 2, 0b110)
        );
        let fell_back = RtmStats {
            fallback: 3,
            aborts_busy: 1,
            aborts_capacity: 1,
            ..before
        };
        assert_eq!(
            rtm_outcome(&before, &fell_back),
            (RtmOutcome::FellBack, 2, 0b1001)
        );
        assert_eq!(rtm_outcome(&before, &before), (RtmOutcome::NotUsed, 0, 0));
    }

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
        // A new entry starts empty.
        o.begin(2000);
        let mut r = Record::EMPTY;
        o.finish(&mut r);
        assert_eq!((r.object_count, r.flags), (0, 0));
    }
}
