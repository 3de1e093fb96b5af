//! The boot translation table: a short-descriptor first-level table of 1 MiB sections that
//! identity-maps the machine's RAM window as Normal write-back shareable memory and its device
//! window as Device memory (see [`machine`](crate::machine) for the maps), and the MMU enable
//! sequence every core runs.
//!
//! # Protection (W^X, guard pages)
//! Every section is execute-never (XN) and kernel-only, except the sections that hold the
//! kernel image: those are second-level tables of 4 KiB small pages ([`IMAGE_TABLES`], from
//! `0x4020_0000`), so that protection can change at the page boundaries the link script puts
//! between the image's parts (`__text_end`, `__rodata_end`):
//!
//! | pages                                   | protection                         |
//! |-----------------------------------------|------------------------------------|
//! | `.text` (with the vector table)         | PL1 read-only, executable          |
//! | `.rodata`                               | PL1 read-only, XN                  |
//! | `.data`, `.bss`, `.stacks`, rest of RAM | PL1 read-write, XN                 |
//! | a guard page below every stack (SVC, ABT/IRQ, UND/FIQ of every core, see [`boot`](crate::boot)) | not mapped |
//! | devices                                 | PL1 read-write, XN (Device memory) |
//!
//! So no kernel page is both writable and executable, and a kernel stack that overflows takes
//! a data abort on its guard page (reported as `kernel stack overflow on CPU n`, see
//! [`exception`](crate::exception)) instead of overwriting the stack below. XN forbids
//! execution at PL1 as well as PL0, so kernel mappings need no PXN (which the Cortex-A9 does
//! not implement; on the A15 it only matters for user pages, which the kernel never runs).
//! User pages (in address spaces' own second-level tables, [`paging`](crate::paging)) are
//! outside these sections.
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
pub(crate) const TTBR_WALK_ATTRS: u32 = (1 << 6) | (1 << 1) | (0b01 << 3);

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

/// Second-level tables (1 MiB each) for the kernel image, from [`IMAGE_BASE`].
pub const IMAGE_TABLES: usize = 8;
/// The first section of the kernel image (`link.ld`).
pub const IMAGE_BASE: u32 = 0x4020_0000;
/// Entries of a second-level table.
const L2_ENTRIES: usize = 256;

/// A second-level table: 256 small-page entries, 1 KiB aligned.
#[repr(C, align(1024))]
struct L2Table(UnsafeCell<[u32; L2_ENTRIES]>);

struct ImageTables([L2Table; IMAGE_TABLES]);

// SAFETY: as for `L1Table`: written only by core 0 in `build`, before the MMU reads them.
unsafe impl Sync for ImageTables {}

static IMAGE_L2: ImageTables =
    ImageTables([const { L2Table(UnsafeCell::new([0; L2_ENTRIES])) }; IMAGE_TABLES]);

/// Small-page descriptor bits (short descriptors, TEX remap and access flag off).
mod small {
    /// XN (bit 0 of a small-page descriptor).
    pub const XN: u32 = 1 << 0;
    /// Bits \[1:0\] = 0b1x: a 4 KiB small page.
    pub const PAGE: u32 = 0b10;
    /// B.
    pub const B: u32 = 1 << 2;
    /// C.
    pub const C: u32 = 1 << 3;
    /// AP\[1:0\] = 0b01: PL1 access only.
    pub const AP_PL1: u32 = 0b01 << 4;
    /// TEX = 0b001 (with C, B: Normal write-back write-allocate).
    pub const TEX_001: u32 = 0b001 << 6;
    /// AP\[2\]: read-only (with AP\[1:0\] = 0b01: PL1 read-only, PL0 no access).
    pub const AP2_RO: u32 = 1 << 9;
    /// S: shareable.
    pub const S: u32 = 1 << 10;
    /// Normal memory, as the RAM sections.
    pub const NORMAL: u32 = PAGE | B | C | TEX_001 | S | AP_PL1;
}

/// First-level descriptor of a second-level table (domain 0).
const L1_COARSE: u32 = 0b01;

/// The kernel image's section boundaries (from the link script).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageLayout {
    /// Start of `.text`.
    pub text: usize,
    /// End of `.text` = start of `.rodata`.
    pub rodata: usize,
    /// End of `.rodata` = start of `.data`.
    pub data: usize,
    /// End of the image (after `.stacks`).
    pub end: usize,
}

/// The kernel image's section boundaries.
pub fn image_layout() -> ImageLayout {
    unsafe extern "C" {
        static __image_start: u8;
        static __text_end: u8;
        static __rodata_end: u8;
        static __image_end: u8;
    }
    ImageLayout {
        text: core::ptr::addr_of!(__image_start) as usize,
        rodata: core::ptr::addr_of!(__text_end) as usize,
        data: core::ptr::addr_of!(__rodata_end) as usize,
        end: core::ptr::addr_of!(__image_end) as usize,
    }
}

/// The small-page descriptor of image-section page `addr` (0: not mapped).
fn image_page(layout: &ImageLayout, addr: usize) -> u32 {
    if crate::boot::stack_guard_at(addr).is_some() {
        return 0;
    }
    let prot = if addr >= layout.text && addr < layout.rodata {
        small::AP2_RO
    } else if addr >= layout.rodata && addr < layout.data {
        small::AP2_RO | small::XN
    } else {
        small::XN
    };
    addr as u32 | small::NORMAL | prot
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
    // The image's sections: small pages with per-part protection and unmapped stack guards.
    let layout = image_layout();
    for (k, l2) in IMAGE_L2.0.iter().enumerate() {
        let section = IMAGE_BASE as usize + k * SECTION_SIZE as usize;
        for j in 0..L2_ENTRIES {
            let d = image_page(&layout, section + j * crate::paging::PAGE_SIZE);
            // SAFETY: `j` < 256; nothing else accesses the tables yet (caller's contract).
            unsafe { (*l2.0.get())[j] = d };
        }
        // SAFETY: as above; the index is the section's, below 4096.
        unsafe { (*table)[section / SECTION_SIZE as usize] = l2.0.get() as u32 | L1_COARSE };
    }
    // The table must be in memory before the walker reads it. The caches are still off, so
    // the stores went to memory; `dsb` waits for them to complete.
    dsb();
    boot_ttbr0()
}

/// The TTBR0 value of the boot table, as [`build`] returns it.
#[inline(always)]
pub fn boot_ttbr0() -> u32 {
    BOOT_TABLE.0.get() as u32 | TTBR_WALK_ATTRS
}

/// Loads [`boot_ttbr0`] into TTBR0 and waits until it is in use (`isb`): the first step of an
/// address-space switch (`paging::switch_address_space`). The value is a link-time constant
/// (the table is a static, at the same address physical and virtual), built by `movw`/`movt`
/// with the walk attributes in the relocation's addend: two instructions, where the compiler
/// loaded it from memory or added the attributes in a third.
///
/// # Safety
/// As for the switch: the caller changes the ASID and TTBR0 next, runs from the kernel's
/// global sections (which the boot table maps), and the MMU is on with this module's
/// settings.
#[inline(always)]
pub unsafe fn load_boot_ttbr0() {
    // SAFETY: the caller's contract; the boot table maps the code and stack in use.
    unsafe {
        asm!(
            "movw {r}, #:lower16:({table} + {attrs})",
            "movt {r}, #:upper16:({table} + {attrs})",
            "mcr p15, 0, {r}, c2, c0, 0",
            "isb",
            table = sym BOOT_TABLE,
            attrs = const TTBR_WALK_ATTRS,
            r = out(reg) _,
            options(nostack, preserves_flags)
        );
    }
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

/// How the boot table maps a kernel address: `(writable, executable)` at PL1, or `None` if
/// unmapped (for the protection self-tests; reads the tables, as the MMU would).
pub fn kernel_protection(addr: usize) -> Option<(bool, bool)> {
    let l1 = descriptor_of(addr as u32);
    match l1 & 0b11 {
        0b10 => {
            // Section: AP[2] is bit 15, XN bit 4.
            Some((l1 & (1 << 15) == 0, l1 & (1 << 4) == 0))
        }
        0b01 => {
            let l2 = (l1 & !0x3FF) as *const u32;
            let i = (addr >> 12) & 0xFF;
            // SAFETY: a second-level table of the boot table (one of `IMAGE_L2`), never
            // written after `build`; `i` < 256.
            let d = unsafe { l2.add(i).read_volatile() };
            (d & 0b10 != 0).then_some((d & small::AP2_RO == 0, d & small::XN == 0))
        }
        _ => None,
    }
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
