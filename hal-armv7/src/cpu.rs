//! Small CPU operations: interrupt masking, waiting, the CPSR, and the barriers.
//!
//! # Barriers
//! ARMv7-A is weakly ordered. The three barriers this HAL uses:
//! - `dmb` orders memory accesses before it against those after it, as seen by other
//!   observers (cores, devices): what `Acquire`/`Release` atomics compile to.
//! - `dsb` additionally waits until the earlier accesses, cache and TLB maintenance are
//!   *complete*: needed before `wfi`/`sev`, after page-table and cache maintenance, and before
//!   telling another agent (GIC, SRC, PSCI firmware) to act on memory we just wrote.
//! - `isb` flushes the pipeline so that later instructions are fetched and executed with the
//!   effects of earlier system-register writes (SCTLR, TTBR0, VBAR, ACTLR, CPSR) in place.
//!
//! System registers go through `aarch32-cpu` where it has them, otherwise through small inline
//! `mrc`/`mcr` sequences documented where they are used.

use core::arch::asm;

pub use aarch32_cpu::asm::{dmb, dsb, isb};

/// Reads the CPSR.
#[inline]
pub fn cpsr() -> u32 {
    let v: u32;
    // SAFETY: reading the CPSR has no side effects.
    unsafe { asm!("mrs {}, cpsr", out(reg) v, options(nomem, nostack, preserves_flags)) };
    v
}

/// Masks IRQs on the calling core.
#[inline]
pub fn disable_interrupts() {
    // SAFETY: masking interrupts cannot break memory safety. The clobber (no `nomem`) keeps
    // the compiler from moving memory accesses out of the masked region.
    unsafe { asm!("cpsid i", options(nostack, preserves_flags)) };
}

/// Unmasks IRQs on the calling core.
#[inline]
pub fn enable_interrupts() {
    // SAFETY: the vector table and IRQ stub are installed before any core unmasks IRQs.
    unsafe { asm!("cpsie i", options(nostack, preserves_flags)) };
}

/// Whether IRQs are unmasked on the calling core (CPSR.I clear).
#[inline]
pub fn interrupts_enabled() -> bool {
    cpsr() & (1 << 7) == 0
}

/// Runs `f` with interrupts masked on this core, restoring the previous state afterwards.
#[inline]
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    <crate::ArmHal as hal_common::console::IrqMask>::without_interrupts(f)
}

/// Waits for an interrupt. A pending (even masked) interrupt ends the wait, so this is safe to
/// call with IRQs masked as a "sleep until something happens".
#[inline]
pub fn wfi() {
    // `dsb` first: the architecture requires outstanding memory accesses to complete before
    // the core may sleep, and makes our last stores visible to the core that will wake us.
    dsb();
    aarch32_cpu::asm::wfi();
}

/// Masks interrupts and sleeps forever (the end of a stopped core).
pub fn halt_forever() -> ! {
    disable_interrupts();
    loop {
        wfi();
    }
}

/// Reads MPIDR (Multiprocessor Affinity Register).
#[inline]
pub fn mpidr() -> u32 {
    aarch32_cpu::register::Mpidr::read().0
}

/// Reads MIDR (Main ID Register).
#[inline]
pub fn midr() -> u32 {
    let v: u32;
    // SAFETY: MIDR is a read-only identification register (`mrc p15, 0, Rt, c0, c0, 0`).
    unsafe {
        asm!("mrc p15, 0, {}, c0, c0, 0", out(reg) v, options(nomem, nostack, preserves_flags))
    };
    v
}

/// The Cortex-A9 MPCore's PERIPHBASE, from its Configuration Base Address Register
/// (`mrc p15, 4, Rt, c15, c0, 0`, A9 TRM 4.3.24; `aarch32-cpu`'s `ImpCbar` is the Cortex-R/A5x
/// encoding, which is undefined on the A9). Returns 0 unless `is_a9` (the register is
/// implementation defined: undefined on other cores).
#[inline]
pub fn a9_periphbase_if(is_a9: bool) -> usize {
    if !is_a9 {
        return 0;
    }
    let v: u32;
    // SAFETY: CBAR is a read-only configuration register of the Cortex-A9.
    unsafe {
        asm!("mrc p15, 4, {}, c15, c0, 0", out(reg) v, options(nomem, nostack, preserves_flags))
    };
    (v & 0xFFFF_8000) as usize
}
