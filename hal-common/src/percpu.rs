//! What every core's per-CPU record holds on both architectures: whether the core is up, and
//! how many timer ticks and IPIs it took. The HALs embed a [`CoreStats`] in their own per-CPU
//! record (beside the GDT and TSS on x86, the entry mode and MPIDR on ARMv7) and dereference to
//! it, so `PERCPU[cpu].ipis()` reads the same on both.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Index of a core, `0..MAX_CPUS`, 0 being the boot core. Same meaning as `kernel::CpuId`.
pub type CpuIndex = usize;

/// A core's status and counters. Every field is atomic: other cores read them.
#[derive(Debug)]
pub struct CoreStats {
    online: AtomicBool,
    ticks: AtomicU64,
    ipis: AtomicU64,
}

impl CoreStats {
    /// A core not yet up, nothing counted.
    pub const fn new() -> Self {
        Self {
            online: AtomicBool::new(false),
            ticks: AtomicU64::new(0),
            ipis: AtomicU64::new(0),
        }
    }

    /// Marks the core up (Release: what it set up before is visible to whoever sees it online).
    pub fn set_online(&self) {
        self.online.store(true, Ordering::Release);
    }

    /// Whether the core is up.
    pub fn is_online(&self) -> bool {
        self.online.load(Ordering::Acquire)
    }

    /// Counts a timer tick (by the core itself).
    pub fn count_tick(&self) {
        self.ticks.fetch_add(1, Ordering::Relaxed);
    }

    /// Timer interrupts taken.
    pub fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }

    /// Counts an IPI received (Release: pairs with the sender's Acquire in [`ipis`](Self::ipis),
    /// which then sees what the receiver did before counting).
    pub fn count_ipi(&self) {
        self.ipis.fetch_add(1, Ordering::Release);
    }

    /// IPIs received.
    pub fn ipis(&self) -> u64 {
        self.ipis.load(Ordering::Acquire)
    }
}

impl Default for CoreStats {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::CoreStats;

    #[test]
    fn counts_and_online_flag() {
        let s = CoreStats::new();
        assert!(!s.is_online());
        s.set_online();
        s.count_tick();
        s.count_tick();
        s.count_ipi();
        assert!(s.is_online());
        assert_eq!((s.ticks(), s.ipis()), (2, 1));
    }
}
