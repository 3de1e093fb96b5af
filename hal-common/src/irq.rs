//! What both HALs keep around their interrupt controllers' device lines: the count of
//! interrupts delivered per line ([`LineCounts`], for the boot self-tests and diagnostics), and
//! the self-tests' moment with interrupts on ([`with_interrupts_on`]). The controllers
//! themselves (GIC, I/O APIC) stay in the HALs.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::console::IrqState;

/// Interrupts delivered per device line `0..N`; a line past `N` is not counted (and reads 0).
pub struct LineCounts<const N: usize>([AtomicU32; N]);

impl<const N: usize> LineCounts<N> {
    /// Every line at 0.
    pub const fn new() -> Self {
        Self([const { AtomicU32::new(0) }; N])
    }

    /// Counts an interrupt of line `line` (the interrupt path).
    pub fn count(&self, line: u32) {
        if let Some(c) = self.0.get(line as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Interrupts of line `line` delivered since boot.
    pub fn delivered(&self, line: u32) -> u32 {
        self.0
            .get(line as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

impl<const N: usize> Default for LineCounts<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Runs `wait` with the calling core's interrupts enabled, so that an interrupt a self-test
/// made pending is taken, then masks them again if they were masked before.
pub fn with_interrupts_on<I: IrqState, R>(wait: impl FnOnce() -> R) -> R {
    let was_on = I::interrupts_enabled();
    I::enable_interrupts();
    let r = wait();
    if !was_on {
        I::disable_interrupts();
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_count_apart_and_lines_past_the_end_read_zero() {
        let c = LineCounts::<4>::new();
        c.count(1);
        c.count(1);
        c.count(3);
        c.count(4);
        assert_eq!([0, 1, 2, 3, 4].map(|l| c.delivered(l)), [0, 2, 0, 1, 0]);
    }
}
