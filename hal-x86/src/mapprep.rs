//! The decode phase of a user mapping (`kernel::Hal::prepare_map`): creates the page tables
//! that [`paging::map_user`] will walk, so that the kernel's execute-phase `map_page` cannot run
//! out of frames, and refuses addresses that something the kernel does not track (the image
//! loader's ELF and stack pages) already maps, which `map_user` would silently replace without
//! any TLB flush.
//!
//! The tables are made by [`paging::ensure_tables`], the same walk that [`paging::map_user`]
//! uses, so the two cannot disagree about the layout.

use kernel::MapPrepError;

use crate::paging::{self, PhysAddr, PAGE_SIZE};

/// Prepares mapping the user page `vaddr` in the address space `root`: creates the missing
/// intermediate page tables (PDPT, page directory, page table; empty tables change nothing a
/// user or another core can observe) so that a following [`paging::map_user`] of `vaddr` in
/// `root` allocates nothing and cannot fail.
///
/// The caller must hold off every other writer of `root`'s page tables until it has mapped
/// (the kernel calls this and `map_page` in one critical section).
///
/// # Errors
/// * [`MapPrepError::Occupied`] if `vaddr` is already mapped or covered by a large page, or is
///   not a page-aligned user address (the kernel checks that first, so this only guards).
/// * [`MapPrepError::OutOfMemory`] if no frame is left for a table. Tables created before the
///   failure stay, empty, and are used by later mappings.
pub fn prepare_user_map(root: PhysAddr, vaddr: u64) -> Result<(), MapPrepError> {
    if vaddr % PAGE_SIZE != 0 || vaddr >= kernel::config::USER_TOP as u64 {
        return Err(MapPrepError::Occupied);
    }
    if paging::translate(root, vaddr).is_some() {
        return Err(MapPrepError::Occupied);
    }
    paging::ensure_tables(root, vaddr).map_err(|e| match e {
        paging::MapError::OutOfMemory => MapPrepError::OutOfMemory,
        paging::MapError::HugePage | paging::MapError::BadAddress => MapPrepError::Occupied,
    })
}

/// Stops the machine after a bug of this HAL that the kernel cannot recover from (for example
/// `map_page` failing although `prepare_map` succeeded): reports `what` on the console and
/// exits QEMU with failure.
pub fn hal_bug(what: core::fmt::Arguments<'_>) -> ! {
    crate::console::emergency_print(format_args!(
        "\n!!! HAL BUG on cpu {}: {}\n",
        crate::percpu::cpu_id(),
        what
    ));
    crate::exit::exit_qemu(crate::exit::ExitCode::Failure)
}
