//! Coherency and cache maintenance: the Cortex-A9 Snoop Control Unit, ACTLR.SMP, and the L1
//! cache, branch predictor and TLB invalidation every core does before turning its MMU on.
//!
//! # Why this comes before any atomic
//! LDREX/STREX (every `spin` lock and atomic read-modify-write) only work across cores when
//! the location is Normal, shareable, cacheable memory kept coherent by the SCU: with the MMU
//! off every data access is Strongly-ordered, and the i.MX6 has no global exclusive monitor for
//! such accesses, so exclusives there may never succeed (or not exclude). Hence each core
//! 1. (core 0, A9) invalidates the SCU tag RAMs and enables the SCU ([`scu_enable`]),
//! 2. sets ACTLR.SMP (and on the A9 ACTLR.FW) so that its L1 data cache takes part in
//!    coherency and its cache/TLB maintenance is broadcast ([`join_coherency`]),
//! 3. invalidates its L1 caches, branch predictor and TLB ([`invalidate_local`]): the A9 does
//!    not invalidate its data cache at reset, so stale lines must not become visible,
//! 4. then enables the MMU with Normal shareable write-back memory ([`mmu`](crate::mmu)).
//!
//! QEMU models neither caches nor the SCU's effect (its exclusives work even with the MMU off),
//! so under QEMU these steps are checked for not faulting only; they are what the real i.MX6Q
//! needs. QEMU's ACTLR reads as zero and ignores writes (the boot log shows `actlr.smp no`),
//! and its SCU reports every core in SMP mode. The PL310 L2 cache controller of the i.MX6 is left disabled: enabling it needs its
//! own invalidate-by-way and the errata setup, and QEMU models it as a stub.

use core::arch::asm;

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::ReadWrite;
use tock_registers::{register_bitfields, register_structs};

use crate::cpu::{dsb, isb};

register_bitfields![u32,
    /// SCU Control Register.
    SCU_CTRL [
        /// SCU enable.
        ENABLE OFFSET(0) NUMBITS(1) []
    ],
    /// SCU Configuration Register.
    SCU_CONFIG [
        /// Number of CPUs minus one.
        CPU_NUMBER OFFSET(0) NUMBITS(2) [],
        /// Which CPUs are in SMP (coherent) mode.
        CPU_SMP OFFSET(4) NUMBITS(4) []
    ]
];

register_structs! {
    /// Cortex-A9 MPCore Snoop Control Unit (A9 MPCore TRM, 2.2).
    pub ScuRegs {
        (0x00 => ctrl: ReadWrite<u32, SCU_CTRL::Register>),
        (0x04 => config: ReadWrite<u32, SCU_CONFIG::Register>),
        (0x08 => power: ReadWrite<u32>),
        (0x0C => invalidate_all: ReadWrite<u32>),
        (0x10 => @END),
    }
}

fn scu(periphbase: usize) -> &'static ScuRegs {
    // SAFETY: the SCU is at PERIPHBASE + 0 on every Cortex-A9 MPCore (CBAR gives PERIPHBASE),
    // identity mapped as Device memory or accessed with the MMU off.
    unsafe { &*((periphbase + crate::machine::a9::SCU) as *const ScuRegs) }
}

/// Number of cores the SCU reports (SCU_CONFIG.CPU_NUMBER + 1).
pub fn scu_cpu_count(periphbase: usize) -> u32 {
    scu(periphbase).config.read(SCU_CONFIG::CPU_NUMBER) + 1
}

/// Which cores the SCU sees in SMP mode (SCU_CONFIG bits \[7:4\], one bit per core).
pub fn scu_smp_mask(periphbase: usize) -> u32 {
    scu(periphbase).config.read(SCU_CONFIG::CPU_SMP)
}

/// Invalidates the SCU's duplicate tag RAMs for all cores and enables the SCU. Core 0, once,
/// before any core sets ACTLR.SMP.
pub fn scu_enable(periphbase: usize) {
    let scu = scu(periphbase);
    if scu.ctrl.is_set(SCU_CTRL::ENABLE) {
        return;
    }
    // All four ways of all four cores (Secure only; we run Secure on the i.MX6).
    scu.invalidate_all.set(0xFFFF);
    scu.ctrl.write(SCU_CTRL::ENABLE::SET);
    // The enable must have reached the SCU before any core starts relying on coherency.
    dsb();
}

/// Sets ACTLR.SMP (bit 6: this core's L1 data cache takes part in coherency; required before
/// the data cache and MMU are enabled) and, on the Cortex-A9, ACTLR.FW (bit 0: broadcast cache
/// and TLB maintenance to the other cores). On a Cortex-A15 in Non-secure state the write may
/// be ignored (NSACR.NS_SMP; QEMU's ACTLR ignores writes): there the firmware owns the bit and
/// the A15 is coherent regardless.
pub fn join_coherency(a9: bool) {
    let mut actlr = aarch32_cpu::register::Actlr::read().0;
    actlr |= 1 << 6;
    if a9 {
        actlr |= 1;
    }
    // SAFETY: setting SMP/FW is the documented requirement for SMP operation; the caches are
    // still off, so there is no dirty data whose coherency could change under us.
    unsafe { aarch32_cpu::register::Actlr::write(aarch32_cpu::register::Actlr(actlr)) };
    // The new ACTLR must be in effect before the cache maintenance and MMU enable that follow.
    isb();
}

/// Whether ACTLR.SMP is set on this core.
pub fn smp_bit() -> bool {
    aarch32_cpu::register::Actlr::read().0 & (1 << 6) != 0
}

/// Invalidates (without cleaning) this core's L1 data cache by set/way, its instruction cache,
/// branch predictor and unified TLB. For a core whose caches are still off; must not be
/// called with dirty lines that matter (they would be lost).
pub fn invalidate_local() {
    invalidate_l1_dcache();
    // SAFETY: ICIALLU (c7, c5, 0), BPIALL (c7, c5, 6) and TLBIALL (c8, c7, 0) discard cached
    // instructions, predictions and translations only; with the MMU off none is in use.
    unsafe {
        asm!(
            "mcr p15, 0, {z}, c7, c5, 0",
            "mcr p15, 0, {z}, c7, c5, 6",
            "mcr p15, 0, {z}, c8, c7, 0",
            z = in(reg) 0u32,
            options(nostack, preserves_flags)
        );
    }
    // dsb: the invalidations are complete; isb: later instructions are fetched afresh.
    dsb();
    isb();
}

/// Invalidates the L1 data cache by set/way, with the geometry read from CCSIDR (Cortex-A9:
/// 32 KiB, 4 ways, 32-byte lines; Cortex-A15: 32 KiB, 2 ways, 64-byte lines).
fn invalidate_l1_dcache() {
    let ccsidr: u32;
    // SAFETY: CSSELR = 0 selects the L1 data cache; the `isb` makes the selection visible to
    // the CCSIDR read that follows (ARM ARM B4.1.41).
    unsafe {
        asm!(
            "mcr p15, 2, {z}, c0, c0, 0",
            "isb",
            "mrc p15, 1, {c}, c0, c0, 0",
            z = in(reg) 0u32,
            c = out(reg) ccsidr,
            options(nostack, preserves_flags)
        );
    }
    let line_shift = (ccsidr & 7) + 4;
    let ways = ((ccsidr >> 3) & 0x3FF) + 1;
    let sets = ((ccsidr >> 13) & 0x7FFF) + 1;
    let way_shift = if ways > 1 {
        (ways - 1).leading_zeros()
    } else {
        0
    };
    for way in 0..ways {
        for set in 0..sets {
            let sw = (way << way_shift) | (set << line_shift);
            // SAFETY: DCISW (c7, c6, 2) on level 0 (bits [3:1] = 0) invalidates one line of
            // this core's L1 data cache, which is still disabled.
            unsafe {
                asm!("mcr p15, 0, {}, c7, c6, 2", in(reg) sw, options(nostack, preserves_flags))
            };
        }
    }
    dsb();
}

/// Cleans the data cache lines covering `[addr, addr + len)` to the point of coherency
/// (DCCMVAC), so that a core with its caches still off reads the current data from memory.
pub fn clean_to_poc(addr: usize, len: usize) {
    // The smallest line of the supported cores (A9: 32 bytes; A15: 64).
    const LINE: usize = 32;
    let mut a = addr & !(LINE - 1);
    while a < addr + len {
        // SAFETY: DCCMVAC (c7, c10, 1) writes back one line; it never loses data.
        unsafe { asm!("mcr p15, 0, {}, c7, c10, 1", in(reg) a, options(nostack, preserves_flags)) };
        a += LINE;
    }
    // The clean must be complete before we tell another core (via SRC/PSCI) to read memory.
    dsb();
}
