//! The boot address space and address translation helpers.
//!
//! The entry code (see [`boot`](crate::boot)) builds one set of page tables, 2 MiB pages only:
//!
//! | virtual range                                 | maps physical        | why                        |
//! |-----------------------------------------------|----------------------|----------------------------|
//! | `0 .. 4 GiB`                                  | `0 .. 4 GiB`         | identity, for the AP trampoline and the jump to the higher half; only in the boot tables, never in a user address space |
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
//!
//! # User address spaces
//! [`new_address_space`] makes a PML4 whose upper half repeats the boot PML4's entries (so the
//! kernel, its stacks and the physical window are mapped identically everywhere, and switching
//! CR3 never unmaps running kernel code) and whose lower half is empty: user space. User pages
//! are 4 KiB, mapped with the USER bit at every level by [`map_user`], which also makes the
//! intermediate tables. Frames come from [`alloc_frame`], a bump allocator over the usable RAM
//! above the kernel image (frames are never freed yet). Page-table writes are plain stores, so
//! the kernel may make them inside its critical section (see `kernel::Hal::map_page`).
//! Entries, flags, addresses and TLB instructions come from the `x86_64` crate
//! ([`PageTableEntry`], [`PageTableFlags`], [`VirtAddr`], `tlb::flush`).

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

// -------------------------------------------------------------------------------------------
// Physical frames and user address spaces.
// -------------------------------------------------------------------------------------------

use x86_64::structures::paging::page_table::PageTableEntry;
use x86_64::structures::paging::PageTableFlags;
use x86_64::VirtAddr;

use crate::pvh::{MemoryRegion, RegionKind};

/// Size of a page and of a frame.
pub const PAGE_SIZE: u64 = 4096;

/// Page-table entry bits used here, as raw `u64` masks (from the `x86_64` crate's
/// [`PageTableFlags`]) for callers that inspect [`translate`]'s flags.
pub mod pte {
    use x86_64::structures::paging::PageTableFlags;

    /// Present.
    pub const PRESENT: u64 = PageTableFlags::PRESENT.bits();
    /// Writable.
    pub const WRITABLE: u64 = PageTableFlags::WRITABLE.bits();
    /// Accessible from user mode (ring 3); needed at every level of the walk.
    pub const USER: u64 = PageTableFlags::USER_ACCESSIBLE.bits();
    /// Large page (2 MiB / 1 GiB) at PD / PDPT level.
    pub const HUGE: u64 = PageTableFlags::HUGE_PAGE.bits();
    /// The physical address bits of an entry.
    pub const ADDR: u64 = 0x000F_FFFF_FFFF_F000;
}

/// Lowest address the frame allocator hands out: the boot code, the kernel image, its stacks
/// and page tables all lie below the image end, and the first 2 MiB hold firmware data and the
/// AP trampoline.
const FRAMES_FROM: u64 = 2 << 20;

const MAX_FRAME_REGIONS: usize = 16;

/// A bump allocator over the usable RAM of the memory map. Frames are never freed: the kernel
/// creates its address spaces and user frames at boot, and page tables for later mappings.
struct FrameAllocator {
    regions: [(u64, u64); MAX_FRAME_REGIONS],
    count: usize,
    current: usize,
    next: u64,
    allocated: u64,
}

static FRAMES: spin::Mutex<FrameAllocator> = spin::Mutex::new(FrameAllocator {
    regions: [(0, 0); MAX_FRAME_REGIONS],
    count: 0,
    current: 0,
    next: 0,
    allocated: 0,
});

/// Root of the boot address space, whose upper half every user address space shares.
static BOOT_ROOT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// Hands the usable RAM above the kernel image (`kernel_end_phys`) to the frame allocator and
/// records the boot page tables as the template of the kernel half. Called once by the
/// bootstrap processor, with the boot address space loaded, before any address space is made.
pub fn init_frames(memory_map: &[MemoryRegion], kernel_end_phys: u64) {
    let floor = kernel_end_phys.max(FRAMES_FROM).next_multiple_of(PAGE_SIZE);
    let mut a = FRAMES.lock();
    a.count = 0;
    for r in memory_map.iter().filter(|r| r.kind == RegionKind::Ram) {
        let start = r.start.max(floor).next_multiple_of(PAGE_SIZE);
        let end = (r.start + r.len).min(PHYS_MAP_SIZE) & !(PAGE_SIZE - 1);
        if start < end && a.count < MAX_FRAME_REGIONS {
            let i = a.count;
            a.regions[i] = (start, end);
            a.count += 1;
        }
    }
    a.current = 0;
    a.next = if a.count > 0 { a.regions[0].0 } else { 0 };
    BOOT_ROOT.store(current_root(), core::sync::atomic::Ordering::Release);
}

/// Allocates a zeroed 4 KiB frame; `None` when RAM is exhausted.
pub fn alloc_frame() -> Option<PhysAddr> {
    let frame = crate::cpu::without_interrupts(|| {
        let mut a = FRAMES.lock();
        while a.current < a.count {
            let (_, end) = a.regions[a.current];
            if a.next + PAGE_SIZE <= end {
                let f = a.next;
                a.next += PAGE_SIZE;
                a.allocated += 1;
                return Some(f);
            }
            a.current += 1;
            if a.current < a.count {
                a.next = a.regions[a.current].0;
            }
        }
        None
    })?;
    // SAFETY: the frame was just taken from free RAM inside the physical window; nobody else
    // has it.
    unsafe { core::ptr::write_bytes(phys_to_virt(frame), 0, PAGE_SIZE as usize) };
    Some(frame)
}

/// Frames handed out so far.
pub fn frames_allocated() -> u64 {
    FRAMES.lock().allocated
}

/// The kernel half's template root (the boot page tables).
pub fn boot_root() -> PhysAddr {
    BOOT_ROOT.load(core::sync::atomic::Ordering::Acquire)
}

fn table(phys: PhysAddr) -> *mut u64 {
    phys_to_virt(phys) as *mut u64
}

/// Creates an address space: a new PML4 whose upper half (slots 256..512: physical window and
/// kernel image) are the boot PML4's entries, so the kernel stays mapped, and whose lower half
/// (user space) is empty. The boot identity map of low memory (slot 0) is not copied.
pub fn new_address_space() -> Option<PhysAddr> {
    let root = alloc_frame()?;
    let boot = boot_root();
    assert!(boot != 0, "paging: init_frames was not called");
    for slot in 256..512 {
        // SAFETY: both are PML4 frames in the physical window; the boot PML4's upper half is
        // never changed after boot, and `root` is ours alone.
        unsafe { table(root).add(slot).write(table(boot).add(slot).read()) };
    }
    Some(root)
}

/// Why a mapping could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// The address is not a page-aligned user address (below 2^47).
    BadAddress,
    /// No frame left for a page table.
    OutOfMemory,
    /// A large page is in the way.
    HugePage,
}

/// The entry for `vaddr` in the page table at physical address `table`, at `level`
/// (4 = PML4 .. 1 = page table).
///
/// Entries are reached through raw pointers and volatile accesses, never through `&PageTable`:
/// the MMU reads these tables concurrently, and a core's page-fault path may translate while
/// another core maps (under the kernel's lock rules), so no Rust reference to a table is made.
fn entry(table: PhysAddr, vaddr: VirtAddr, level: u8) -> *mut PageTableEntry {
    let index = match level {
        4 => vaddr.p4_index(),
        3 => vaddr.p3_index(),
        2 => vaddr.p2_index(),
        _ => vaddr.p1_index(),
    };
    (phys_to_virt(table) as *mut PageTableEntry).wrapping_add(usize::from(index))
}

/// The page-table entry of `vaddr` in `root`, creating missing tables if `create`.
fn walk(
    root: PhysAddr,
    vaddr: VirtAddr,
    create: bool,
) -> Result<Option<*mut PageTableEntry>, MapError> {
    let mut table = root;
    for level in (2..=4).rev() {
        let e = entry(table, vaddr, level);
        // SAFETY: `table` is a page-table frame of this address space, in the physical window;
        // `e` points inside it (the index is below 512).
        let current = unsafe { e.read_volatile() };
        let flags = current.flags();
        if !flags.contains(PageTableFlags::PRESENT) {
            if !create {
                return Ok(None);
            }
            let new = alloc_frame().ok_or(MapError::OutOfMemory)?;
            let mut fresh = PageTableEntry::new();
            fresh.set_addr(
                x86_64::PhysAddr::new(new),
                PageTableFlags::PRESENT
                    | PageTableFlags::WRITABLE
                    | PageTableFlags::USER_ACCESSIBLE,
            );
            // SAFETY: as above; the new table is zeroed and only reachable through this entry.
            unsafe { e.write_volatile(fresh) };
            table = new;
        } else if flags.contains(PageTableFlags::HUGE_PAGE) {
            return Err(MapError::HugePage);
        } else {
            table = current.addr().as_u64();
        }
    }
    Ok(Some(entry(table, vaddr, 1)))
}

/// `vaddr` as a page-aligned user address (below the kernel's `USER_TOP`, hence canonical).
fn check_user(vaddr: u64) -> Result<VirtAddr, MapError> {
    if vaddr % PAGE_SIZE != 0 || vaddr >= kernel::config::USER_TOP as u64 {
        return Err(MapError::BadAddress);
    }
    VirtAddr::try_new(vaddr).map_err(|_| MapError::BadAddress)
}

/// Maps the frame `phys` at user address `vaddr` in the address space `root` (user-accessible,
/// writable if `writable`), creating page tables as needed. Replaces an existing mapping (the
/// caller flushes TLBs).
pub fn map_user(
    root: PhysAddr,
    vaddr: u64,
    phys: PhysAddr,
    writable: bool,
) -> Result<(), MapError> {
    let vaddr = check_user(vaddr)?;
    let frame = x86_64::PhysAddr::try_new(phys).map_err(|_| MapError::BadAddress)?;
    let e = walk(root, vaddr, true)?.ok_or(MapError::OutOfMemory)?;
    let mut flags = PageTableFlags::PRESENT | PageTableFlags::USER_ACCESSIBLE;
    if writable {
        flags |= PageTableFlags::WRITABLE;
    }
    let mut new = PageTableEntry::new();
    new.set_addr(frame.align_down(PAGE_SIZE), flags);
    // SAFETY: `e` points at the page-table entry of `vaddr` in a table of this address space.
    unsafe { e.write_volatile(new) };
    Ok(())
}

/// Creates the page tables that mapping the user page `vaddr` in `root` needs, without mapping
/// it (empty tables change nothing a user or another core can observe). A following
/// [`map_user`] of `vaddr` then allocates nothing and cannot fail.
pub fn ensure_tables(root: PhysAddr, vaddr: u64) -> Result<(), MapError> {
    walk(root, check_user(vaddr)?, true).map(|_| ())
}

/// Removes the mapping of `vaddr` in `root`, if any (the caller flushes TLBs).
pub fn unmap_user(root: PhysAddr, vaddr: u64) -> Result<(), MapError> {
    let vaddr = check_user(vaddr)?;
    if let Some(e) = walk(root, vaddr, false)? {
        // SAFETY: as in `map_user`.
        unsafe { e.write_volatile(PageTableEntry::new()) };
    }
    Ok(())
}

/// Empties the user half of address space `root` (PML4 slots 0..256), for the kernel's
/// address-space deletion; the kernel half stays, so a core that still has `root` loaded keeps
/// running the kernel. The lower page tables are not freed (the frame allocator is a bump
/// allocator that never frees): they leak, and the next use of `root` allocates new ones. The
/// caller flushes TLBs.
pub fn clear_user_half(root: PhysAddr) {
    for slot in 0..256 {
        // SAFETY: `root` is a PML4 frame in the physical window (made by
        // `new_address_space`) and `slot` is below 512; volatile, as the MMU reads it.
        unsafe { table(root).add(slot).write_volatile(0) };
    }
}

/// The frame and entry flags `vaddr` maps to in `root`, if mapped.
pub fn translate(root: PhysAddr, vaddr: u64) -> Option<(PhysAddr, u64)> {
    let vaddr = VirtAddr::try_new(vaddr).ok()?.align_down(PAGE_SIZE);
    let e = walk(root, vaddr, false).ok()??;
    // SAFETY: as in `map_user`.
    let v = unsafe { e.read_volatile() };
    let flags = v.flags();
    flags
        .contains(PageTableFlags::PRESENT)
        .then_some((v.addr().as_u64(), flags.bits()))
}

/// Invalidates the calling core's TLB entry for `vaddr`.
pub fn flush_page(vaddr: u64) {
    // A non-canonical address has no TLB entry to drop.
    if let Ok(vaddr) = VirtAddr::try_new(vaddr) {
        x86_64::instructions::tlb::flush(vaddr);
    }
}

/// Invalidates the calling core's non-global TLB entries (reloads CR3).
pub fn flush_all() {
    x86_64::instructions::tlb::flush_all();
}
