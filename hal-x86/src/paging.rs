//! The boot address space and address translation helpers.
//!
//! The entry code (see [`boot`](crate::boot)) builds one set of page tables, 2 MiB pages only:
//!
//! | virtual range                                 | maps physical        | why                        |
//! |-----------------------------------------------|----------------------|----------------------------|
//! | `0 .. 4 GiB`                                  | `0 .. 4 GiB`         | identity, for the AP trampoline and the jump to the higher half; to be removed once user space exists |
//! | [`PHYS_MAP_BASE`] `.. + 4 GiB`                | `0 .. 4 GiB`         | the kernel's window on physical memory (ACPI tables, LAPIC, page tables) |
//! | [`KERNEL_BASE`] `.. + 2 GiB` (top 2 GiB)      | `0 .. 2 GiB`         | the kernel image (linked at `KERNEL_BASE + 1 MiB`) |
//!
//! The top 32 MiB below 4 GiB (`0xFE00_0000..`: I/O APIC, HPET, local APIC) are mapped uncached
//! (PCD|PWT) in both the identity map and the physical-memory window. Everything else is
//! write-back. All kernel mappings live in the upper half (PML4 slots 256 and 511), so a later
//! per-process address space only has to share those two PML4 entries and may use the lower
//! half (slot 0..255) for user space.
//!
//! Mappings are writable and executable for now (no W^X yet).

/// Where the kernel image is linked: physical address `p` of the image is at `KERNEL_BASE + p`.
pub const KERNEL_BASE: u64 = 0xFFFF_FFFF_8000_0000;

/// Start of the kernel's window on physical memory (`phys_to_virt(p) = PHYS_MAP_BASE + p`).
pub const PHYS_MAP_BASE: u64 = 0xFFFF_8000_0000_0000;

/// How much physical memory the window covers.
pub const PHYS_MAP_SIZE: u64 = 4 << 30;

/// A physical address.
pub type PhysAddr = u64;

/// The virtual address at which the kernel sees physical address `phys` (`< 4 GiB`).
///
/// # Panics
/// If `phys` lies outside the physical-memory window.
#[inline]
pub fn phys_to_virt(phys: PhysAddr) -> *mut u8 {
    assert!(
        phys < PHYS_MAP_SIZE,
        "physical address {phys:#x} outside the 4 GiB window"
    );
    (PHYS_MAP_BASE + phys) as *mut u8
}

/// The physical address of a kernel-image virtual address (code, statics, stacks).
#[inline]
pub fn kernel_virt_to_phys(virt: u64) -> PhysAddr {
    virt - KERNEL_BASE
}

/// The root of the current address space (CR3 without flag bits).
pub fn current_root() -> PhysAddr {
    crate::cpu::read_cr3() & 0x000F_FFFF_FFFF_F000
}

/// Switches this core to the address space rooted at `root` (the `Hal` address-space switch).
///
/// # Safety
/// `root` must be the physical address of a PML4 whose upper half (slots 256..512) equals the
/// boot PML4's, so that the kernel, its stacks and the physical window stay mapped.
pub unsafe fn switch_address_space(root: PhysAddr) {
    // SAFETY: the caller guarantees the kernel half is shared.
    unsafe { crate::cpu::write_cr3(root) }
}
