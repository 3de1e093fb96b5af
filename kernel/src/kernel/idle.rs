//! Each core's idle accounting ([`IdleClock`]): when the core last went idle and its idle
//! cycles since boot, which `KernelInfo` reports.

use core::sync::atomic::{AtomicU64, Ordering};

use kernel_locks::CpuId;

use crate::hal::Hal;
use crate::strategy::Strategy;

use super::Kernel;

/// A core's idle accounting: when it last went idle, and its idle cycles so far. Written only
/// by that core, with plain loads and stores (no read-modify-write); read by any core
/// (`KernelInfo`), which adds the current idle stretch: a core idle since boot with no
/// interrupt would otherwise read 0 for as long as it stays idle.
///
/// Ordering: ending a stretch clears `since` and then adds the stretch to `total` with a
/// Release store. A reader loads `total` (Acquire), then `since`, then `total` again, and
/// retries if the totals differ: if its first load saw a total that includes a stretch, the
/// Acquire makes the cleared `since` visible, so no stretch is counted twice. Starting a
/// stretch is a Relaxed store (a reader that misses it just reads the idle time a moment
/// late).
#[derive(Debug, Default)]
pub(crate) struct IdleClock {
    /// The counter when the core's last entry left it idle; 0: not idle.
    since: AtomicU64,
    /// Idle cycles since boot.
    total: AtomicU64,
}

impl<S: Strategy, H: Hal> Kernel<S, H> {
    /// The core will leave the kernel with no thread to run: its idle time starts now (a few
    /// instructions before the exit, counted as idle).
    #[cold]
    pub(super) fn enter_idle(&self, cpu: CpuId) {
        // 0 means "not idle": a counter that reads 0 counts from 1.
        let now = self.hal.cycles().max(1);
        self.idle[cpu].since.store(now, Ordering::Relaxed);
    }

    /// An interrupt, IPI or tick arrived on `cpu`: if the core was idle, its idle time ends
    /// now. (System calls and faults come from a running thread, never from an idle core, so
    /// their entry path does not look.)
    #[inline]
    pub(super) fn leave_idle(&self, cpu: CpuId) {
        let Some(clock) = self.idle.get(cpu) else {
            return; // `entry` reports the bad core index
        };
        let since = clock.since.load(Ordering::Relaxed);
        if since != 0 {
            let idle = self.hal.cycles().saturating_sub(since);
            clock.since.store(0, Ordering::Relaxed);
            let total = clock.total.load(Ordering::Relaxed);
            // Release: a reader that sees the new total sees `since` cleared (type docs).
            clock
                .total
                .store(total.wrapping_add(idle), Ordering::Release);
        }
    }

    /// Cycles core `cpu` has spent idle since boot, its current idle stretch included (see
    /// [`IdleClock`] for why this is consistent).
    pub(crate) fn idle_cycles(&self, cpu: CpuId) -> u64 {
        let Some(clock) = self.idle.get(cpu).filter(|_| cpu < self.cores) else {
            return 0;
        };
        loop {
            let total = clock.total.load(Ordering::Acquire);
            let since = clock.since.load(Ordering::Relaxed);
            if clock.total.load(Ordering::Relaxed) != total {
                continue; // a stretch ended meanwhile: read again
            }
            if since == 0 {
                return total;
            }
            return total.wrapping_add(self.hal.cycles().saturating_sub(since));
        }
    }
}
