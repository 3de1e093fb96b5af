//! The boot translation table: a short-descriptor first-level table of 1 MiB sections that
//! identity-maps the machine's RAM window as Normal write-back shareable memory and its device
//! window as Device memory (see [`machine`](crate::machine) for the maps), and the MMU enable
//! sequence every core runs.
//!
//! The table is written once by core 0 with its caches still off, so it is in memory when any
//! core's table walker reads it; later changes would need a DCCMVAU clean of the entry (the A9
//! walker does not look in the L1 data cache) before the TLB maintenance.
//!
//! Settings: TTBCR = 0 (short descriptors, TTBR0 translates the whole 4 GiB), TTBR0 walks
//! Inner/Outer write-back write-allocate, shareable; DACR domain 0 = client (permissions in the
//! descriptors are checked); SCTLR.TRE = 0 (TEX/C/B used directly), SCTLR.AFE = 0, SCTLR.A = 0
//! (unaligned accesses allowed on Normal memory).
//!
//! QEMU tolerates exclusives and unaligned accesses with the MMU off; real Cortex-A9s do not
//! (see [`cache`](crate::cache)), which is why this runs before any lock is taken.

use core::arch::asm;
use core::cell::UnsafeCell;

use crate::cpu::{dsb, isb};
use crate::machine::{section_descriptor, Machine, L1_ENTRIES, SECTION_SIZE};

/// The first-level table: 4096 entries, 16 KiB aligned as TTBR0 requires with TTBCR.N = 0.
#[repr(C, align(16384))]
struct L1Table(UnsafeCell<[u32; L1_ENTRIES]>);

// SAFETY: written only by core 0 in `build`, before any other core runs or the MMU reads it.
unsafe impl Sync for L1Table {}

static BOOT_TABLE: L1Table = L1Table(UnsafeCell::new([0; L1_ENTRIES]));

/// TTBR0 attribute bits (multiprocessing-extensions format): IRGN = 0b01 (bit 6 set, bit 0
/// clear: inner write-back write-allocate), S (bit 1: shareable), RGN = 0b01 (bits [4:3]:
/// outer write-back write-allocate).
const TTBR_WALK_ATTRS: u32 = (1 << 6) | (1 << 1) | (0b01 << 3);

/// SCTLR bits this module sets or clears.
mod sctlr {
    /// MMU enable.
    pub const M: u32 = 1 << 0;
    /// Alignment check.
    pub const A: u32 = 1 << 1;
    /// Data (unified) cache enable.
    pub const C: u32 = 1 << 2;
    /// Branch prediction enable.
    pub const Z: u32 = 1 << 11;
    /// Instruction cache enable.
    pub const I: u32 = 1 << 12;
    /// High exception vectors (0xFFFF0000); must be clear for VBAR to be used.
    pub const V: u32 = 1 << 13;
    /// TEX remap enable.
    pub const TRE: u32 = 1 << 28;
    /// Access flag enable.
    pub const AFE: u32 = 1 << 29;
}

/// Fills the boot table for `machine`. Returns the TTBR0 value to load on every core.
///
/// # Safety
/// Core 0 only, once, with the MMU off and no other core running.
pub unsafe fn build(machine: Machine) -> u32 {
    let table = BOOT_TABLE.0.get();
    for i in 0..L1_ENTRIES {
        let addr = (i as u32) * SECTION_SIZE;
        let d = section_descriptor(addr, machine.section_kind(addr));
        // SAFETY: `i` < 4096; nothing else accesses the table yet (caller's contract).
        unsafe { (*table)[i] = d };
    }
    // The table must be in memory before the walker reads it. The caches are still off, so
    // the stores went to memory; `dsb` waits for them to complete.
    dsb();
    table as u32 | TTBR_WALK_ATTRS
}

/// Loads the translation table and enables the MMU, data and instruction caches and branch
/// prediction on the calling core.
///
/// # Safety
/// `ttbr0` must come from [`build`]; the calling core must have joined coherency and
/// invalidated its caches and TLB ([`cache`](crate::cache)). The code and stack in use must be
/// identity mapped by the table (they are: the image lives in the RAM window).
pub unsafe fn enable(ttbr0: u32) {
    // SAFETY: TTBCR = 0 (short descriptors, TTBR0 only), DACR = 1 (domain 0 client), then the
    // table base. The MMU is still off, so nothing translates with them yet; `isb` makes them
    // take effect before SCTLR.M is set.
    unsafe {
        asm!(
            "mcr p15, 0, {z}, c2, c0, 2",
            "mcr p15, 0, {dacr}, c3, c0, 0",
            "mcr p15, 0, {ttbr}, c2, c0, 0",
            "mcr p15, 0, {z}, c8, c7, 0",
            z = in(reg) 0u32,
            dacr = in(reg) 1u32,
            ttbr = in(reg) ttbr0,
            options(nostack, preserves_flags)
        );
    }
    // dsb: the TLB invalidate (TLBIALL above) is complete; isb: the new TTBR/DACR/TTBCR are
    // used by the instructions that follow.
    dsb();
    isb();
    let mut s = sctlr_read();
    s &= !(sctlr::A | sctlr::V | sctlr::TRE | sctlr::AFE);
    s |= sctlr::M | sctlr::C | sctlr::I | sctlr::Z;
    // SAFETY: identity map: the next instruction is fetched at the same address translated;
    // the `isb` right after the write makes every later instruction run with the MMU on.
    unsafe {
        asm!(
            "mcr p15, 0, {}, c1, c0, 0",
            "isb",
            in(reg) s,
            options(nostack, preserves_flags)
        );
    }
}

/// Reads SCTLR.
pub fn sctlr_read() -> u32 {
    let v: u32;
    // SAFETY: reading SCTLR (c1, c0, 0) has no side effects.
    unsafe {
        asm!("mrc p15, 0, {}, c1, c0, 0", out(reg) v, options(nomem, nostack, preserves_flags))
    };
    v
}

/// Whether the calling core's MMU is on.
pub fn enabled() -> bool {
    sctlr_read() & sctlr::M != 0
}

/// Whether the calling core's data cache is on.
pub fn dcache_enabled() -> bool {
    sctlr_read() & sctlr::C != 0
}

/// The first-level descriptor currently mapping `addr` (for the boot log and fault reports).
pub fn descriptor_of(addr: u32) -> u32 {
    let i = (addr / SECTION_SIZE) as usize;
    // SAFETY: read-only access to an entry of the table, which is never written after `build`.
    unsafe { (*BOOT_TABLE.0.get())[i] }
}

/// Invalidates the whole TLB of the calling core (TLBIALL) and waits for it.
pub fn flush_tlb_local() {
    // SAFETY: dropping cached translations is always safe; the walk refills them.
    unsafe { asm!("mcr p15, 0, {}, c8, c7, 0", in(reg) 0u32, options(nostack, preserves_flags)) };
    // dsb: the invalidate is complete; isb: later instructions use the refilled translations.
    dsb();
    isb();
}
