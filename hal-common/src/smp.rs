//! What starting the other cores looks like on every architecture, around the way each wakes
//! them (INIT-SIPI-SIPI on x86, the i.MX6 reset controller or PSCI on ARMv7): the entry the
//! boot core hands them, how many cores the HAL knows, and the report of who came up.

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::percpu::{CoreStats, CpuIndex};
use crate::InitOnce;

/// The outcome of starting the other cores; `F` says why one did not come up.
#[derive(Clone, Copy, Debug)]
pub struct StartReport<F, const CPUS: usize> {
    /// Cores online, the boot core included.
    pub online: usize,
    /// Cores present (bounded by `CPUS`).
    pub expected: usize,
    /// Cores that failed (first `failure_count` entries valid).
    pub failures: [Option<F>; CPUS],
    /// How many entries of `failures` are set.
    pub failure_count: usize,
    /// Cores present beyond `CPUS`, not started.
    pub skipped: usize,
}

impl<F: Copy, const CPUS: usize> StartReport<F, CPUS> {
    /// Only the boot core up, of `expected` cores present; `skipped` more not started.
    pub const fn new(expected: usize, skipped: usize) -> Self {
        Self {
            online: 1,
            expected,
            failures: [None; CPUS],
            failure_count: 0,
            skipped,
        }
    }

    /// Counts a core that came up.
    pub fn started(&mut self) {
        self.online += 1;
    }

    /// Records a core that did not come up.
    pub fn failed(&mut self, failure: F) {
        if let Some(slot) = self.failures.get_mut(self.failure_count) {
            *slot = Some(failure);
        }
        self.failure_count += 1;
    }
}

/// The boot core's hand-over to the others: the function each runs once it is set up, and how
/// many cores the HAL knows (started or tried).
pub struct Bringup {
    ap_main: InitOnce<fn(CpuIndex) -> !>,
    cpu_count: AtomicUsize,
}

impl Bringup {
    /// No entry yet; only the boot core known.
    pub const fn new() -> Self {
        Self {
            ap_main: InitOnce::new(),
            cpu_count: AtomicUsize::new(1),
        }
    }

    /// Sets the function the other cores run (once, before starting any).
    pub fn set_ap_main(&self, ap_main: fn(CpuIndex) -> !) {
        self.ap_main.set(ap_main);
    }

    /// The function the other cores run, once set.
    pub fn ap_main(&self) -> Option<fn(CpuIndex) -> !> {
        self.ap_main.get().copied()
    }

    /// Records how many cores the HAL knows.
    pub fn set_cpu_count(&self, n: usize) {
        self.cpu_count.store(n, Ordering::Release);
    }

    /// Cores the HAL knows (started or tried).
    pub fn cpu_count(&self) -> usize {
        self.cpu_count.load(Ordering::Acquire)
    }
}

impl Default for Bringup {
    fn default() -> Self {
        Self::new()
    }
}

/// Cores online among `cores`.
pub fn online_count<'a>(cores: impl IntoIterator<Item = &'a CoreStats>) -> usize {
    cores.into_iter().filter(|c| c.is_online()).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_counts_starts_and_failures() {
        let mut r = StartReport::<u8, 2>::new(3, 1);
        r.started();
        r.failed(7);
        r.failed(8);
        r.failed(9);
        assert_eq!((r.online, r.expected, r.skipped), (2, 3, 1));
        assert_eq!(r.failure_count, 3);
        assert_eq!(r.failures, [Some(7), Some(8)]);
    }

    #[test]
    fn bringup_hands_over_the_entry_and_count() {
        fn entry(_: CpuIndex) -> ! {
            panic!("not run")
        }
        let b = Bringup::new();
        assert!(b.ap_main().is_none());
        assert_eq!(b.cpu_count(), 1);
        b.set_ap_main(entry);
        b.set_cpu_count(4);
        assert!(b.ap_main().is_some());
        assert_eq!(b.cpu_count(), 4);
        let stats = [CoreStats::new(), CoreStats::new()];
        stats[1].set_online();
        assert_eq!(online_count(&stats), 1);
    }
}
