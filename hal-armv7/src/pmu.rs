//! The PMU cycle counter (PMCCNTR), enabled for user mode on request where it exists.
//!
//! # Why
//! Benchmarks time IPC from user space, next to the system calls they time, with a counter
//! user mode can read without a trap. On the Cortex-A15 (`-M virt`) that is PMCCNTR: on
//! request ([`enable`] on the boot core, [`enable_cpu`] on each other core) the HAL enables it
//! (PMCR.E, PMCNTENSET bit 31, no divider) and lets user mode read it (PMUSERENR.EN), so a
//! user program reads it with `mrc p15, 0, r, c9, c13, 0`. Under QEMU it counts guest time at
//! 1 GHz, which `-icount shift=0` makes exactly one tick per guest instruction.
//!
//! It stays off unless asked for: while PMCCNTR is enabled, QEMU re-arms its overflow timer
//! (a lock on the global virtual-clock timer list) at every exception entry and return, which
//! made the multi-threaded 4-core demo several times slower in wall-clock time. The images
//! enable it in benchmark mode only.
//!
//! QEMU's Cortex-A9 (`-M sabrelite`) has no PMU cycle counter (ID_DFR0.PerfMon reads 0), so
//! nothing is enabled there and [`user_counter`] says so; the image then offers its
//! kernel-read counter through a debug call instead (the A9 global timer shares its page with
//! the GIC CPU interface, which user space must never map).
//!
//! Enabling user access also lets user mode write the PMU registers (reset or stop the
//! counter): acceptable for a benchmarking kernel whose user programs are its own, and the
//! kernel never relies on PMCCNTR itself.

use core::arch::asm;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// PMCR.E: enable the counters.
const PMCR_E: u32 = 1 << 0;
/// PMCR.C: reset the cycle counter.
const PMCR_C: u32 = 1 << 2;
/// PMCR.D: count every 64th cycle (cleared).
const PMCR_D: u32 = 1 << 3;
/// PMCNTENSET / PMUSERENR bits.
const CYCLE_COUNTER: u32 = 1 << 31;
const USER_ENABLE: u32 = 1 << 0;

static AVAILABLE: AtomicBool = AtomicBool::new(false);
static HZ: AtomicU64 = AtomicU64::new(0);

/// ID_DFR0.PerfMon (bits 27:24): 2 and up are PMUv2 and later (PMCCNTR architected); 0 (QEMU's
/// A9) and 0xF mean no architected PMU.
fn has_pmu() -> bool {
    let dfr0: u32;
    // SAFETY: ID_DFR0 (`mrc p15, 0, r, c0, c1, 2`) is a read-only identification register of
    // every ARMv7-A core.
    unsafe {
        asm!("mrc p15, 0, {}, c0, c1, 2", out(reg) dfr0, options(nomem, nostack, preserves_flags))
    };
    let perfmon = (dfr0 >> 24) & 0xF;
    (2..0xF).contains(&perfmon)
}

/// Reads PMCCNTR (only meaningful after [`enable_cpu`] returned `true`).
#[inline]
pub fn cycles() -> u32 {
    let v: u32;
    // SAFETY: reads PMCCNTR, which exists where `AVAILABLE` was set (callers check); at PL1 it
    // never traps.
    unsafe {
        asm!("mrc p15, 0, {}, c9, c13, 0", out(reg) v, options(nomem, nostack, preserves_flags))
    };
    v
}

/// Enables the cycle counter and its user-mode access on the calling core, if the core has a
/// PMU; returns whether it did. After [`enable`], every other core calls it before it runs
/// user threads.
pub fn enable_cpu() -> bool {
    if !has_pmu() {
        return false;
    }
    // SAFETY: the PMU registers exist (PMUv2+, checked above) and are accessible at PL1.
    // PMCR: enable, reset the cycle counter, no divider; PMCNTENSET: cycle counter on;
    // PMUSERENR.EN: user mode may read it. Nothing else uses the PMU.
    unsafe {
        let mut pmcr: u32;
        asm!("mrc p15, 0, {}, c9, c12, 0", out(reg) pmcr, options(nomem, nostack, preserves_flags));
        pmcr = (pmcr | PMCR_E | PMCR_C) & !PMCR_D;
        asm!("mcr p15, 0, {}, c9, c12, 0", in(reg) pmcr, options(nomem, nostack, preserves_flags));
        asm!("mcr p15, 0, {}, c9, c12, 1", in(reg) CYCLE_COUNTER, options(nomem, nostack, preserves_flags));
        asm!("mcr p15, 0, {}, c9, c14, 0", in(reg) USER_ENABLE, options(nomem, nostack, preserves_flags));
    }
    crate::cpu::isb();
    true
}

/// The boot core, once, before any other core runs user threads: enables the counter on this
/// core, checks that it counts and measures its frequency against the timer's cycle source
/// over 2 ms (rounded to whole MHz). Afterwards [`user_counter`] says whether user programs may
/// read PMCCNTR (once every core called [`enable_cpu`]).
pub fn enable() {
    if !enable_cpu() {
        return;
    }
    let (p0, t0) = (cycles(), crate::timer::cycles());
    crate::timer::delay_us(2000);
    let (p1, t1) = (cycles(), crate::timer::cycles());
    let ticks = u64::from(p1.wrapping_sub(p0));
    let time = t1.wrapping_sub(t0);
    if ticks == 0 || time == 0 {
        return;
    }
    let hz = (u128::from(ticks) * u128::from(crate::timer::cycles_hz()) / u128::from(time)) as u64;
    HZ.store((hz + 500_000) / 1_000_000 * 1_000_000, Ordering::Relaxed);
    AVAILABLE.store(true, Ordering::Release);
}

/// Whether [`enable`] enabled PMCCNTR for user mode (the other cores, of the same kind, do it
/// with [`enable_cpu`]).
pub fn user_counter() -> bool {
    AVAILABLE.load(Ordering::Acquire)
}

/// PMCCNTR's frequency in Hz as measured by [`enable`] (0 without a counter).
pub fn hz() -> u64 {
    HZ.load(Ordering::Relaxed)
}
