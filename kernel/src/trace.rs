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
//! "Contended" ([`sim::trace::FLAG_CONTENDED`]) is approximated as "another core was in the
//! kernel at entry": the strategies do not report whether their first attempt found the lock
//! taken, and for the big locks another core inside the kernel holds or awaits it unless it
//! is in its few instructions before the lock or after the release.

pub use sim::trace::{EntryKind, Record};

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
