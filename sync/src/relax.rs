//! Wait strategies: what a CPU does while it waits for a lock.
//!
//! A lock calls [`Relax::relax`] once per iteration of every wait loop, and
//! [`Relax::after_release`] right after every release. The strategy is a type parameter of the
//! lock (as in spin's `RelaxStrategy`), so the choice costs nothing at run time.
//!
//! A kernel plugs its own strategy in to service cross-core requests while it spins (seL4 checks
//! for pending IPIs in its CLH wait loop): a core that waits for the big lock with interrupts off
//! would otherwise deadlock with a core that holds the lock and waits for it to answer an IPI.
//!
//! ```
//! use kernel_locks::{ClhLock, CpuId, KernelLock, Relax};
//!
//! /// A kernel's wait hook: service cross-core requests while waiting for a lock.
//! #[derive(Default)]
//! struct ServiceIpis;
//!
//! impl Relax for ServiceIpis {
//!     fn relax(&mut self, cpu: CpuId) {
//!         let _ = cpu; // a kernel would handle `cpu`'s pending IPIs here
//!         core::hint::spin_loop();
//!     }
//! }
//!
//! static BKL: ClhLock<4, ServiceIpis> = ClhLock::new();
//! BKL.lock(1);
//! // SAFETY: CPU 1 holds the lock.
//! unsafe { BKL.unlock(1) };
//! ```

use crate::raw::CpuId;

/// What a waiting CPU does between two polls of a lock word.
pub trait Relax: Default {
    /// Called once per iteration of a wait loop by `cpu`.
    fn relax(&mut self, cpu: CpuId);

    /// Called by a lock right after it released (made its release store visible). Strategies whose
    /// waiters sleep (ARM `WFE`) wake them here; the default does nothing.
    #[inline(always)]
    fn after_release() {}
}

/// Busy-wait with the CPU's spin-loop hint (`pause` on x86, `yield` on ARM).
#[derive(Clone, Copy, Debug, Default)]
pub struct Spin;

impl Relax for Spin {
    #[inline(always)]
    fn relax(&mut self, _cpu: CpuId) {
        core::hint::spin_loop();
    }
}

/// Exponential back-off: 1, 2, 4, ... up to 2^[`Backoff::MAX_SHIFT`] spin-loop hints per poll.
///
/// Fewer polls mean less coherence traffic on the lock's line while it is handed over.
#[derive(Clone, Copy, Debug, Default)]
pub struct Backoff {
    shift: u32,
}

impl Backoff {
    /// The largest back-off is `1 << MAX_SHIFT` hints.
    pub const MAX_SHIFT: u32 = 8;
}

impl Relax for Backoff {
    #[inline]
    fn relax(&mut self, _cpu: CpuId) {
        for _ in 0..(1u32 << self.shift) {
            core::hint::spin_loop();
        }
        if self.shift < Self::MAX_SHIFT {
            self.shift += 1;
        }
    }
}

/// ARM wait-for-event: the waiting core sleeps in `WFE` until an event, and every release sends
/// one with `DSB; SEV` (the DSB makes the release store visible before the event wakes anyone).
///
/// There is no lost wake-up: `SEV` sets the event register of every core even if it is not yet
/// in `WFE`, so a waiter that polled "busy" just before the release returns from `WFE` at once.
/// On other architectures this is [`Spin`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Wfe;

impl Relax for Wfe {
    #[inline(always)]
    fn relax(&mut self, _cpu: CpuId) {
        #[cfg(target_arch = "arm")]
        // SAFETY: WFE only suspends the core until the next event or interrupt; no memory effects.
        unsafe {
            core::arch::asm!("wfe", options(nomem, nostack, preserves_flags));
        }
        #[cfg(not(target_arch = "arm"))]
        core::hint::spin_loop();
    }

    #[inline(always)]
    fn after_release() {
        #[cfg(target_arch = "arm")]
        // SAFETY: DSB ISH waits for earlier stores to complete in the inner shareable domain; SEV
        // signals an event to all cores. Neither touches memory the compiler knows about.
        unsafe {
            core::arch::asm!("dsb ish", "sev", options(nostack, preserves_flags));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_saturates() {
        let mut b = Backoff::default();
        for _ in 0..20 {
            b.relax(0);
        }
        assert_eq!(b.shift, Backoff::MAX_SHIFT);
    }
}
