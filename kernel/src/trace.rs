//! Kernel lock tracing (the `trace` feature): one [`Record`] per kernel entry, in the format of
//! the `trace-format` crate, for the analysis and the trace-replay simulator of the `sim` crate
//! (the thesis's instrumentation).
//!
//! # Why it looks like this
//! The record is taken around the strategy's `enter`/`exit` in [`Kernel`](crate::Kernel)'s
//! entry path: timestamps (the HAL's cycle counter) at entry, before the lock is requested,
//! once it is acquired, before it is released and at exit, plus what entered (system-call
//! number, interrupt line, fault vector), the thread, and how many cores were in the kernel.
//! Each core writes only its own ring ([`trace_format::ring::Ring`], single writer, no lock,
//! readable while it runs), so recording adds no synchronisation between cores. The kernel does
//! not own the rings: the embedder gives it a [`TraceSink`] (`Kernel::set_tracer`), sized as it
//! likes (a static in an image, a leaked box in the hosted harness). Without the feature none
//! of this is compiled, and the entry path is the untraced one.
//!
//! The record of the entry in progress is built in place, in a per-core cell of the kernel
//! (`Pending`), and handed to the sink by reference; the ring stores it as 32-bit words
//! ([`Record::put_words`]). Built on the stack and moved around instead, the 112-byte record
//! would be copied whole several times per entry (an out-of-line `memcpy` each on ARMv7), and
//! written into the ring through a byte array: about three times the instructions per entry
//! on ARMv7 (docs/bench/trace-overhead-images.md).
//!
//! Under the fine-grained strategy the entry also records its object locks (`Pending::note`):
//! each distinct object once, with the time of its first acquisition and how long that
//! acquisition waited (two counter reads around the lock, only while a tracer is set). The
//! kernel takes a TCB lock again in later phases of the same entry (the scheduler, the exit); those
//! re-acquisitions are not recorded, which is what the simulator's two-phase model assumes
//! (every object held from its first acquisition to the end of the section).
//!
//! "Contended" ([`trace_format::FLAG_CONTENDED`]) is approximated as "another core was in the
//! kernel at entry": the strategies do not report whether their first attempt found the lock
//! taken, and for the big locks another core inside the kernel holds or awaits it unless it
//! is in its few instructions before the lock or after the release.

pub use trace_format::{EntryKind, ObjectLock, Record};

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
    rings: [trace_format::ring::Ring<N>; MAX_CPUS],
}

impl<const N: usize> Tracer<N> {
    /// Empty rings (usable in a `static`).
    pub const fn new() -> Self {
        Tracer {
            rings: [const { trace_format::ring::Ring::new() }; MAX_CPUS],
        }
    }

    /// The ring of `cpu`.
    pub fn ring(&self, cpu: CpuId) -> &trace_format::ring::Ring<N> {
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

/// The trace record of a core's entry in progress, built in place in that core's cell and
/// handed to the [`TraceSink`] from there by reference.
///
/// Why in place: a record is 112 bytes; built on the stack and moved (out of a constructor,
/// into an `Option`, the object locks copied in from their own notes), it would be copied
/// whole several times per entry, which on ARMv7 is a call to the out-of-line `memcpy` each
/// time.
/// Here every field is stored once, and the six object slots are cleared only where the last
/// entry used them (nothing under a big lock).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    /// The record so far. Invariant: the object slots from `object_count` on are zero (what
    /// [`Record::decode`] demands), so that the record is complete as it stands.
    pub(crate) record: Record,
}

impl Pending {
    /// No entry yet.
    pub(crate) const EMPTY: Self = Pending {
        record: Record::EMPTY,
    };

    /// Starts the record of the entry that began at `entry`: every field zero but `entry`.
    #[inline]
    pub(crate) fn begin(&mut self, entry: u64) {
        let r = &mut self.record;
        let used = usize::from(r.object_count).min(trace_format::MAX_OBJECTS);
        for o in &mut r.objects[..used] {
            *o = ObjectLock::default();
        }
        r.entry = entry;
        r.lock_requested = 0;
        r.lock_acquired = 0;
        r.lock_released = 0;
        r.exit = 0;
        r.thread = 0;
        r.core = 0;
        r.number = 0;
        r.kind = EntryKind::Syscall;
        r.in_kernel = 0;
        r.flags = 0;
        r.rtm_outcome = trace_format::RtmOutcome::NotUsed;
        r.rtm_retries = 0;
        r.rtm_abort_cause = 0;
        r.object_count = 0;
    }

    /// Cycles from the entry to `now` (absolute), saturated into the record's 32-bit offsets.
    #[inline]
    pub(crate) fn since_entry(&self, now: u64) -> u32 {
        offset(self.record.entry, now)
    }

    /// Notes object lock `id`, requested at `requested` and acquired at `acquired` (absolute
    /// cycles), unless the entry already holds or held it: each distinct object once, in the
    /// order first taken; past [`trace_format::MAX_OBJECTS`] the record keeps the first ones and
    /// says so ([`trace_format::FLAG_OBJECTS_TRUNCATED`]).
    pub(crate) fn note(&mut self, id: u32, requested: u64, acquired: u64) {
        let r = &mut self.record;
        let n = usize::from(r.object_count).min(trace_format::MAX_OBJECTS);
        if r.objects[..n].iter().any(|o| o.id == id) {
            return;
        }
        let Some(slot) = r.objects.get_mut(n) else {
            r.flags |= trace_format::FLAG_OBJECTS_TRUNCATED;
            return;
        };
        *slot = ObjectLock {
            id,
            acquired: offset(r.entry, acquired),
            wait: offset(requested, acquired),
        };
        r.object_count += 1;
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
) -> (trace_format::RtmOutcome, u8, u8) {
    use trace_format::RtmOutcome;
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
        use trace_format::RtmOutcome;
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
        let mut p = Pending::EMPTY;
        p.begin(1000);
        p.note(7, 1010, 1015);
        p.note(7, 1100, 1300); // retaken later: not recorded again
        for id in 1..=5 {
            p.note(id, 1020 + u64::from(id), 1030 + u64::from(id));
        }
        let r = p.record;
        assert_eq!(r.object_count as usize, trace_format::MAX_OBJECTS);
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
        p.note(6, 1040, 1041);
        assert_eq!(p.record.flags, trace_format::FLAG_OBJECTS_TRUNCATED);
        assert_eq!(p.record.object_count as usize, trace_format::MAX_OBJECTS);
        // A new entry starts empty: the last entry's slots are cleared.
        p.record.exit = 99;
        p.begin(2000);
        assert_eq!(
            p.record,
            Record {
                entry: 2000,
                ..Record::EMPTY
            }
        );
        // One lock: the record has it alone, the other slots stay zero.
        p.begin(3000);
        p.note(9, 3001, 3004);
        assert_eq!(p.since_entry(3010), 10);
        assert_eq!(p.since_entry(2000), 0);
        let r = p.record;
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
        // Complete as it stands: with the later timestamps set, it decodes.
        let mut full = r;
        full.lock_released = 10;
        full.exit = 20;
        assert_eq!(trace_format::Record::decode(&full.encode(), 0), Ok(full));
    }
}
