//! Elision statistics in the shape of Table I of the transactional-IPC paper (Fiasco.OC):
//! total, direct commit, 1 retry, 2 retries, more, fallback; plus abort causes.

use core::fmt;

use super::engine::AbortCause;
use crate::shim::AtomicUsize;
use crate::shim::Ordering::Relaxed;

/// Index of each per-CPU counter.
pub(crate) mod idx {
    /// Committed on the first attempt.
    pub const DIRECT: usize = 0;
    /// Committed after 1 retry.
    pub const RETRY1: usize = 1;
    /// Committed after 2 retries.
    pub const RETRY2: usize = 2;
    /// Committed after more than 2 retries.
    pub const RETRY_MORE: usize = 3;
    /// Took the fallback after trying (or because RTM is unavailable or disabled by policy).
    pub const FALLBACK: usize = 4;
    /// Took the fallback directly because of the adaptive skip counter.
    pub const SKIPPED: usize = 5;
    /// First abort-cause counter; followed by the other causes in [`super::cause_index`] order.
    pub const ABORTS: usize = 6;
    /// Number of counters.
    pub const COUNT: usize = ABORTS + 6;
}

/// The counter of an abort cause.
pub(crate) const fn cause_index(cause: AbortCause) -> usize {
    idx::ABORTS
        + match cause {
            AbortCause::Busy => 0,
            AbortCause::Conflict => 1,
            AbortCause::Capacity => 2,
            AbortCause::Retry => 3,
            AbortCause::DebugNested => 4,
            AbortCause::Other => 5,
        }
}

/// One CPU's counters. Written only by that CPU and never inside a transaction (a write there
/// would add the line to the write set, so a `stats()` reader on another CPU would abort it).
///
/// A counter is a machine word: 64 bits on x86_64, the only architecture with RTM, and 32 bits
/// on ARMv7, where every acquisition is a fallback and a 64-bit atomic store would be an
/// `ldrexd`/`strexd` loop on every release. There a CPU's counter wraps after 2^32
/// acquisitions (about an hour at a million a second); [`RtmStats`] sums the wrapped values.
pub(crate) struct CpuCounters {
    counters: [AtomicUsize; idx::COUNT],
}

impl CpuCounters {
    maybe_const_fn! {
        /// All zero.
        pub(crate) fn new() -> Self {
            Self { counters: array_init!(idx::COUNT, AtomicUsize::new(0)) }
        }
    }

    /// Adds one to counter `i`. Single writer (the owning CPU), so a plain load and store: no
    /// locked read-modify-write on the acquisition path. Relaxed: statistics order nothing.
    #[inline]
    pub(crate) fn bump(&self, i: usize) {
        let c = &self.counters[i];
        c.store(c.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// Reads counter `i` (Relaxed: a racy snapshot is all statistics need).
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.counters[i].load(Relaxed) as u64
    }

    /// Zeroes every counter. An acquisition racing with this may survive it.
    pub(crate) fn reset(&self) {
        for c in &self.counters {
            c.store(0, Relaxed);
        }
    }
}

/// A snapshot of an [`RtmLock`](super::RtmLock)'s statistics, summed over its CPUs.
///
/// Every acquisition is counted exactly once, when it is released: as committed after 0, 1, 2 or
/// more retries (the attempt that committed, minus one), or as a fallback. Every aborted attempt
/// is counted under exactly one [`AbortCause`]. Plain data: copy it, compare it, print it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RtmStats {
    /// Whether the engine can run transactions on this machine; if false every acquisition is a
    /// fallback.
    pub rtm_available: bool,
    /// Committed on the first attempt ("direct commit").
    pub direct: u64,
    /// Committed after 1 retry.
    pub retry1: u64,
    /// Committed after 2 retries.
    pub retry2: u64,
    /// Committed after more than 2 retries.
    pub retry_more: u64,
    /// Acquisitions that took the fallback lock, for any reason: RTM unavailable, attempts
    /// exhausted, a non-retryable abort, or the adaptive skip counter ([`skipped`](Self::skipped)
    /// is that part).
    pub fallback: u64,
    /// The part of [`fallback`](Self::fallback) that did not try a transaction because the
    /// adaptive skip counter was positive.
    pub skipped: u64,
    /// Aborts by `XABORT 0xff`: the fallback lock was held.
    pub aborts_busy: u64,
    /// Aborts by a data conflict (see [`AbortCause`] for the precedence).
    pub aborts_conflict: u64,
    /// Aborts because the read or write set overflowed.
    pub aborts_capacity: u64,
    /// Aborts with only the retry bit.
    pub aborts_retry: u64,
    /// Aborts by a debug breakpoint or inside a nested transaction.
    pub aborts_debug_nested: u64,
    /// Aborts with no named cause (interrupt, exception, always-aborting instruction) or by an
    /// `XABORT` with another code.
    pub aborts_other: u64,
}

impl RtmStats {
    /// All acquisitions: the sum of the committed buckets and [`fallback`](Self::fallback).
    pub const fn total(&self) -> u64 {
        self.elided() + self.fallback
    }

    /// Acquisitions that ran elided (committed transactions).
    pub const fn elided(&self) -> u64 {
        self.direct + self.retry1 + self.retry2 + self.retry_more
    }

    /// All aborted attempts.
    pub const fn aborts(&self) -> u64 {
        self.aborts_busy
            + self.aborts_conflict
            + self.aborts_capacity
            + self.aborts_retry
            + self.aborts_debug_nested
            + self.aborts_other
    }

    /// The count of aborts of one cause.
    pub const fn aborts_of(&self, cause: AbortCause) -> u64 {
        match cause {
            AbortCause::Busy => self.aborts_busy,
            AbortCause::Conflict => self.aborts_conflict,
            AbortCause::Capacity => self.aborts_capacity,
            AbortCause::Retry => self.aborts_retry,
            AbortCause::DebugNested => self.aborts_debug_nested,
            AbortCause::Other => self.aborts_other,
        }
    }

    /// Adds one CPU's counters.
    pub(crate) fn add(&mut self, c: &CpuCounters) {
        self.direct += c.get(idx::DIRECT);
        self.retry1 += c.get(idx::RETRY1);
        self.retry2 += c.get(idx::RETRY2);
        self.retry_more += c.get(idx::RETRY_MORE);
        self.fallback += c.get(idx::FALLBACK) + c.get(idx::SKIPPED);
        self.skipped += c.get(idx::SKIPPED);
        self.aborts_busy += c.get(cause_index(AbortCause::Busy));
        self.aborts_conflict += c.get(cause_index(AbortCause::Conflict));
        self.aborts_capacity += c.get(cause_index(AbortCause::Capacity));
        self.aborts_retry += c.get(cause_index(AbortCause::Retry));
        self.aborts_debug_nested += c.get(cause_index(AbortCause::DebugNested));
        self.aborts_other += c.get(cause_index(AbortCause::Other));
    }
}

impl fmt::Display for RtmStats {
    /// A small table:
    ///
    /// ```text
    /// lock elision (RTM available: no)
    ///        total       direct      1 retry    2 retries          > 2     fallback
    ///           10            0            0            0            0           10
    /// fallback skipped by the adaptive counter: 0
    /// aborts: busy 0, conflict 0, capacity 0, retry 0, debug/nested 0, other 0 (total 0)
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let yes_no = if self.rtm_available { "yes" } else { "no" };
        writeln!(f, "lock elision (RTM available: {yes_no})")?;
        writeln!(
            f,
            "{:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "total", "direct", "1 retry", "2 retries", "> 2", "fallback"
        )?;
        writeln!(
            f,
            "{:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
            self.total(),
            self.direct,
            self.retry1,
            self.retry2,
            self.retry_more,
            self.fallback
        )?;
        writeln!(
            f,
            "fallback skipped by the adaptive counter: {}",
            self.skipped
        )?;
        write!(
            f,
            "aborts: busy {}, conflict {}, capacity {}, retry {}, debug/nested {}, other {} (total {})",
            self.aborts_busy,
            self.aborts_conflict,
            self.aborts_capacity,
            self.aborts_retry,
            self.aborts_debug_nested,
            self.aborts_other,
            self.aborts()
        )
    }
}
