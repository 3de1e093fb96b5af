//! What both HALs keep around their interrupt controllers' device lines: the count of
//! interrupts delivered per line ([`LineCounts`], for the boot self-tests and diagnostics), the
//! self-tests' moment with interrupts on ([`with_interrupts_on`]), and a function the tick
//! handler calls for a self-test that needs code in the interrupt path ([`set_tick_hook`]). The
//! controllers themselves (GIC, I/O APIC) stay in the HALs.

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

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

/// The function [`run_tick_hook`] calls, as an address; 0 for none.
static TICK_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Installs `hook` (or, with `None`, removes the hook): called by every core's tick handler,
/// with that core's interrupts masked, after the HAL counted the tick. For self-tests of the
/// interrupt path (the kernel's own tick handling does not go through it); the hook runs on
/// every core, so it checks which core it is on, and it publishes nothing through this
/// install: what it shares with the installing code it reads through atomics of its own, with
/// their own orderings.
pub fn set_tick_hook(hook: Option<fn()>) {
    // Relaxed: only the code address travels here (see above), so the tick path stays one
    // plain load without a barrier (x86_64 and ARMv7: `mov` / `str` here, `mov` / `ldr` there).
    TICK_HOOK.store(hook.map_or(0, |f| f as usize), Ordering::Relaxed);
}

/// Calls the hook of [`set_tick_hook`], if any: the HALs' tick handlers call it.
#[inline]
pub fn run_tick_hook() {
    // Relaxed, as the store of `set_tick_hook` (x86_64: `mov`; ARMv7: `ldr`).
    let f = TICK_HOOK.load(Ordering::Relaxed);
    if f != 0 {
        // SAFETY: non-zero values are only ever stored from a `fn()` pointer.
        let f = unsafe { core::mem::transmute::<usize, fn()>(f) };
        f();
    }
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

    static HOOK_RUNS: AtomicU32 = AtomicU32::new(0);

    fn count_run() {
        HOOK_RUNS.fetch_add(1, Ordering::Relaxed);
    }

    #[test]
    fn the_tick_hook_runs_while_installed() {
        run_tick_hook();
        set_tick_hook(Some(count_run));
        run_tick_hook();
        run_tick_hook();
        set_tick_hook(None);
        run_tick_hook();
        assert_eq!(HOOK_RUNS.load(Ordering::Relaxed), 2);
    }
}
