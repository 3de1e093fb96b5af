//! The kernel address space (W^X, stack guard pages) and address translation helpers.
//!
//! # Boot tables
//! The entry code (see [`boot`](crate::boot)) builds a first set of page tables, 2 MiB pages
//! only, all writable and executable (in 32-bit assembly, before the CPU features are known):
//! identity `0 .. 4 GiB`, the physical window and the kernel image. They live only until
//! `bsp_entry` has checked CPUID for the execute-disable bit and set EFER.NXE.
//!
//! # Kernel tables
//! [`init_kernel_space`] then builds the tables every core runs on, in statics of the image,
//! and loads them:
//!
//! | virtual range                                 | maps physical        | protection |
//! |-----------------------------------------------|----------------------|------------|
//! | `0x8000` (one page)                           | `0x8000`             | read-write-execute: the AP trampoline, which runs at its physical address while it turns paging on; unmapped by [`unmap_trampoline`] once the APs are up; never in a user address space |
//! | [`PHYS_MAP_BASE`] `.. + 4 GiB` (2 MiB pages)  | `0 .. 4 GiB`         | read-write, **NX** (page tables, ACPI tables, MMIO are data); the top 32 MiB below 4 GiB (`0xFE00_0000..`: I/O APIC, HPET, local APIC) uncached (PCD/PWT) |
//! | kernel `.text` (4 KiB pages)                  | its load address     | read-only, executable |
//! | kernel `.rodata`                              |                      | read-only, **NX** |
//! | kernel `.data`, `.bss` (stacks included)      |                      | read-write, **NX** |
//! | the guard page below every kernel and double-fault stack | -         | **not mapped** |
//!
//! So no kernel page is both writable and executable (W^X) once the trampoline page is gone,
//! and an overflowing kernel stack runs into an unmapped page instead of the stack below it.
//! The image is mapped with 4 KiB pages (rather than 2 MiB pages with a 2 MiB-aligned link
//! script) because protection changes at every section boundary and around every guard page;
//! the link script aligns the sections to pages and exports their boundaries (`__text_end`,
//! `__rodata_end`). The page tables are built in Rust, not in the entry assembly, because the
//! assembly runs before CPUID can tell whether the NX bit exists (without EFER.NXE it is a
//! reserved bit and every entry using it faults). CR0.WP is set from the start, so the kernel's
//! own writes obey the read-only bits too. The image fits [`IMAGE_TABLES`] page tables
//! (checked by the link script).
//!
//! The permission bits combine across the levels of a walk (writable only if every level says
//! so, executable only if no level sets NX), so intermediate entries are writable and
//! executable and the last level decides; the physical window also has NX at its PML4 entry.
//! All kernel mappings live in the upper half (PML4 slots 256 and 511), so a per-process
//! address space only has to share those two PML4 entries and may use the lower half (slot
//! 0..255) for user space.
//!
//! # User address spaces
//! [`new_address_space`] makes a PML4 whose upper half repeats the boot PML4's entries (so the
//! kernel, its stacks and the physical window are mapped identically everywhere, and switching
//! CR3 never unmaps running kernel code) and whose lower half is empty: user space. User pages
//! are 4 KiB, mapped with the USER bit at every level by [`map_user`], which also makes the
//! intermediate tables. Frames come from [`alloc_frame`], a bump allocator over the usable RAM
//! above the kernel image (frames are never freed). Page-table writes are plain stores, so
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

use hal_common::table_pool::{FrameWindow, TablePool};
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
    /// Execute-disable (needs EFER.NXE).
    pub const NO_EXECUTE: u64 = PageTableFlags::NO_EXECUTE.bits();
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
    let pages: u64 = a.regions[..a.count]
        .iter()
        .map(|r| (r.1 - r.0) / PAGE_SIZE)
        .sum();
    drop(a);
    BOOT_ROOT.store(current_root(), core::sync::atomic::Ordering::Release);
    reserve_table_pool(table_pool_frames(pages));
}

/// Page-table frames reserved for user address spaces: one per 64 pages of RAM (enough to map
/// all of RAM eight times over with 4 KiB pages, one table per 2 MiB), at least 256.
pub fn table_pool_frames(ram_pages: u64) -> u64 {
    (ram_pages / 64).max(256)
}

/// The frames left in the bump allocator, handed over whole (they become the root task's RAM
/// regions): writes up to `out.len()` ranges `(start, end)` and returns how many. Afterwards
/// [`alloc_frame`] finds nothing.
pub fn take_free_ram(out: &mut [(u64, u64)]) -> usize {
    let mut a = FRAMES.lock();
    let mut n = 0;
    while a.current < a.count && n < out.len() {
        let (_, end) = a.regions[a.current];
        if a.next < end {
            out[n] = (a.next, end);
            n += 1;
        }
        a.current += 1;
        if a.current < a.count {
            a.next = a.regions[a.current].0;
        }
    }
    n
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
            let new = alloc_table().ok_or(MapError::OutOfMemory)?;
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
/// writable and never executable if `writable`, else read-only and executable), as the image
/// loader's (tag 0), creating page tables as needed. Replaces an existing mapping (the caller
/// flushes TLBs).
pub fn map_user(
    root: PhysAddr,
    vaddr: u64,
    phys: PhysAddr,
    writable: bool,
) -> Result<(), MapError> {
    map_leaf(
        root,
        vaddr,
        phys,
        hal_common::arch::loader_attrs(writable),
        0,
    )
}

/// Maps the frame `phys` at user address `vaddr` in `root` with `attrs` (NX unless EXEC, PCD|PWT
/// for device memory) and the region tag `tag` in the entry's software bits, creating page
/// tables as needed.
pub fn map_leaf(
    root: PhysAddr,
    vaddr: u64,
    phys: PhysAddr,
    attrs: kernel::PageAttrs,
    tag: kernel::MapTag,
) -> Result<(), MapError> {
    let vaddr = check_user(vaddr)?;
    let frame = x86_64::PhysAddr::try_new(phys).map_err(|_| MapError::BadAddress)?;
    let e = walk(root, vaddr, true)?.ok_or(MapError::OutOfMemory)?;
    let mut flags = PageTableFlags::PRESENT | PageTableFlags::USER_ACCESSIBLE;
    if attrs.contains(kernel::PageAttrs::WRITE) {
        flags |= PageTableFlags::WRITABLE;
    }
    if !attrs.contains(kernel::PageAttrs::EXEC) {
        flags |= PageTableFlags::NO_EXECUTE;
    }
    if attrs.contains(kernel::PageAttrs::DEVICE) {
        flags |= PageTableFlags::NO_CACHE | PageTableFlags::WRITE_THROUGH;
    }
    let value = frame.align_down(PAGE_SIZE).as_u64() | flags.bits() | tag_bits(tag);
    // SAFETY: `e` points at the page-table entry of `vaddr` in a table of this address space.
    unsafe { (e as *mut u64).write_volatile(value) };
    Ok(())
}

/// The software bits of an entry holding a region tag: 9..11 (low 3 bits) and 52..58 (high 7).
fn tag_bits(tag: kernel::MapTag) -> u64 {
    ((u64::from(tag) & 0x7) << 9) | ((u64::from(tag) >> 3 & 0x7F) << 52)
}

/// The region tag of an entry (see [`tag_bits`]).
fn entry_tag(e: u64) -> kernel::MapTag {
    (((e >> 9) & 0x7) | (((e >> 52) & 0x7F) << 3)) as kernel::MapTag
}

/// The leaf an entry value describes (present, 4 KiB).
fn leaf_of(e: u64) -> kernel::Leaf {
    let mut attrs = kernel::PageAttrs::empty();
    if e & pte::WRITABLE != 0 {
        attrs |= kernel::PageAttrs::WRITE;
    }
    if e & pte::NO_EXECUTE == 0 {
        attrs |= kernel::PageAttrs::EXEC;
    }
    if e & PageTableFlags::NO_CACHE.bits() != 0 {
        attrs |= kernel::PageAttrs::DEVICE;
    }
    kernel::Leaf {
        phys: e & pte::ADDR,
        attrs,
        tag: entry_tag(e),
    }
}

/// The user leaf of `vaddr` in `root`, if mapped.
pub fn lookup_leaf(root: PhysAddr, vaddr: u64) -> Option<kernel::Leaf> {
    let vaddr = check_user(vaddr).ok()?;
    let e = walk(root, vaddr, false).ok()??;
    // SAFETY: `e` points at the page-table entry of `vaddr` in a table of this address space.
    let v = unsafe { (e as *const u64).read_volatile() };
    (v & pte::PRESENT != 0).then(|| leaf_of(v))
}

/// Whether every entry of the table at `phys` is zero.
fn table_empty(phys: PhysAddr) -> bool {
    // SAFETY: `phys` is a page-table frame in the physical window, 512 entries.
    (0..512).all(|i| unsafe { table(phys).add(i).read_volatile() } == 0)
}

/// Removes the user leaf of `vaddr` in `root`, if any; page tables left empty are unlinked and
/// retired for core `cpu` (back to the pool at its next [`reclaim_tables`], after the TLB
/// shoot-down). The caller flushes TLBs.
pub fn unmap_leaf(cpu: usize, root: PhysAddr, vaddr: u64) {
    let Ok(va) = check_user(vaddr) else { return };
    // The tables of the walk: [PML4, PDPT, PD, PT].
    let mut tables = [root, 0, 0, 0];
    for (i, level) in (2..=4u8).rev().enumerate() {
        // SAFETY: `tables[i]` is a page-table frame of this address space in the window.
        let v = unsafe { (entry(tables[i], va, level) as *const u64).read_volatile() };
        if v & pte::PRESENT == 0 || v & pte::HUGE != 0 {
            return;
        }
        tables[i + 1] = v & pte::ADDR;
    }
    // SAFETY: the leaf entry of `vaddr` in the page table found above.
    unsafe { (entry(tables[3], va, 1) as *mut u64).write_volatile(0) };
    // Unlink emptied tables bottom-up (never the PML4).
    for i in (1..4).rev() {
        if !table_empty(tables[i]) {
            break;
        }
        let level = 5 - i as u8;
        // SAFETY: the entry of the parent table that points at `tables[i]`.
        unsafe { (entry(tables[i - 1], va, level) as *mut u64).write_volatile(0) };
        retire_table(cpu, tables[i]);
    }
}

/// Visits every user leaf of `root` (PML4 slots 0..256) and removes or retags it as `f` says;
/// emptied tables are unlinked and retired for `cpu`. Returns how many leaves it removed.
pub fn sweep(
    cpu: usize,
    root: PhysAddr,
    f: &mut dyn FnMut(&kernel::Leaf) -> kernel::SweepAction,
) -> usize {
    let mut removed = 0;
    for i in 0..256 {
        // SAFETY: slot `i` < 512 of the PML4 `root`.
        let e = unsafe { table(root).add(i) };
        removed += sweep_table(cpu, e, 3, f);
    }
    removed
}

/// Sweeps the table the entry `e` (of a table at `level + 1`) points at; `level` 1 is a page
/// table of leaves. Unlinks and retires the table if it ends up empty.
fn sweep_table(
    cpu: usize,
    e: *mut u64,
    level: u8,
    f: &mut dyn FnMut(&kernel::Leaf) -> kernel::SweepAction,
) -> usize {
    // SAFETY: `e` points into a page-table frame of the address space being swept.
    let v = unsafe { e.read_volatile() };
    if v & pte::PRESENT == 0 || v & pte::HUGE != 0 {
        return 0;
    }
    let t = v & pte::ADDR;
    let mut removed = 0;
    for i in 0..512 {
        // SAFETY: entry `i` < 512 of the table `t`, a frame in the physical window.
        let child = unsafe { table(t).add(i) };
        if level > 1 {
            removed += sweep_table(cpu, child, level - 1, f);
            continue;
        }
        // SAFETY: as above.
        let c = unsafe { child.read_volatile() };
        if c & pte::PRESENT == 0 {
            continue;
        }
        match f(&leaf_of(c)) {
            kernel::SweepAction::Keep => {}
            kernel::SweepAction::Remove => {
                // SAFETY: as above.
                unsafe { child.write_volatile(0) };
                removed += 1;
            }
            kernel::SweepAction::Retag(tag) => {
                let v = (c & !tag_bits(0x3FF)) | tag_bits(tag);
                // SAFETY: as above.
                unsafe { child.write_volatile(v) };
            }
        }
    }
    if table_empty(t) {
        // SAFETY: `e` is the entry pointing at `t`.
        unsafe { e.write_volatile(0) };
        retire_table(cpu, t);
    }
    removed
}

// -------------------------------------------------------------------------------------------
// The page-table pool: frames for user page tables, reserved at boot, recycled.
// -------------------------------------------------------------------------------------------

/// Frames reached through the physical window.
struct Window;

impl FrameWindow for Window {
    fn frame_ptr(phys: PhysAddr) -> *mut u8 {
        phys_to_virt(phys)
    }
}

/// The pool (see [`hal_common::table_pool`] for the retire-then-reclaim rule).
static POOL: TablePool<Window, crate::X86Hal, { crate::percpu::MAX_CPUS }> = TablePool::new();

/// Reserves `frames` frames from the frame allocator for page tables (fewer if RAM is short).
fn reserve_table_pool(frames: u64) {
    let mut got = 0;
    let (mut start, mut end) = (0, 0);
    while got < frames {
        let Some(f) = alloc_frame() else { break };
        if got == 0 {
            start = f;
        } else if f != end {
            break; // keep the pool one contiguous range (the first RAM region suffices)
        }
        end = f + PAGE_SIZE;
        got += 1;
    }
    POOL.reserve(start, end);
}

/// A zeroed page-table frame from the pool (`None`: exhausted).
fn alloc_table() -> Option<PhysAddr> {
    POOL.alloc()
}

/// Puts an unlinked table on core `cpu`'s retired list.
fn retire_table(cpu: usize, f: PhysAddr) {
    POOL.retire(cpu, f);
}

/// Returns core `cpu`'s retired tables to the free list (after its TLB shoot-down).
pub fn reclaim_tables(cpu: usize) {
    POOL.reclaim(cpu);
}

/// `(free, total)` frames of the page-table pool.
pub fn table_frames() -> (usize, usize) {
    POOL.counts()
}

/// Creates the page tables that mapping the user page `vaddr` in `root` needs, without mapping
/// it (empty tables change nothing a user or another core can observe). A following
/// [`map_user`] of `vaddr` then allocates nothing and cannot fail.
pub fn ensure_tables(root: PhysAddr, vaddr: u64) -> Result<(), MapError> {
    walk(root, check_user(vaddr)?, true).map(|_| ())
}

/// Boot-time unmap (self-tests): removes the mapping of `vaddr` in `root`, if any, and returns
/// emptied tables to the pool at once, which is right only while no core has `root` loaded
/// (the caller flushes its own TLB if it has).
pub fn unmap_user(root: PhysAddr, vaddr: u64) -> Result<(), MapError> {
    check_user(vaddr)?;
    let cpu = crate::percpu::cpu_id();
    unmap_leaf(cpu, root, vaddr);
    reclaim_tables(cpu);
    Ok(())
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

// -------------------------------------------------------------------------------------------
// The kernel's own tables: W^X and stack guard pages.
// -------------------------------------------------------------------------------------------

/// Page tables (of 2 MiB each) for the kernel image, at `KERNEL_BASE .. + 16 MiB`.
pub const IMAGE_TABLES: usize = 8;

/// Physical address of the AP trampoline page, the one identity mapping of the kernel tables.
const TRAMPOLINE_PAGE: u64 = crate::smp::TRAMPOLINE_PHYS;

#[repr(C, align(4096))]
struct Table(core::cell::UnsafeCell<[u64; 512]>);

impl Table {
    const fn new() -> Self {
        Self(core::cell::UnsafeCell::new([0; 512]))
    }

    /// The table's physical address (it lies in the kernel image).
    fn phys(&self) -> PhysAddr {
        kernel_virt_to_phys(self.0.get() as u64)
    }

    /// Writes entry `i` (volatile: the MMU may read the table once it is loaded).
    fn set(&self, i: usize, value: u64) {
        assert!(i < 512);
        // SAFETY: `i` is in bounds; the tables are written by the bootstrap processor during
        // `init_kernel_space` (before any other core runs) and by `unmap_trampoline` (once,
        // on the bootstrap processor, after every AP left the trampoline); no Rust reference to
        // a table's contents exists.
        unsafe { (self.0.get() as *mut u64).add(i).write_volatile(value) }
    }
}

/// The kernel tables (see the module docs).
struct KernelTables {
    pml4: Table,
    pdpt_low: Table,
    pd_low: Table,
    pt_low: Table,
    pdpt_phys: Table,
    pd_phys: [Table; 4],
    pdpt_high: Table,
    pd_high: Table,
    pt_image: [Table; IMAGE_TABLES],
}

// SAFETY: see `Table::set`: written only by the bootstrap processor while no other core runs,
// and by `unmap_trampoline` (one entry, one core); otherwise only the MMU reads them.
unsafe impl Sync for KernelTables {}

static KERNEL_TABLES: KernelTables = KernelTables {
    pml4: Table::new(),
    pdpt_low: Table::new(),
    pd_low: Table::new(),
    pt_low: Table::new(),
    pdpt_phys: Table::new(),
    pd_phys: [const { Table::new() }; 4],
    pdpt_high: Table::new(),
    pd_high: Table::new(),
    pt_image: [const { Table::new() }; IMAGE_TABLES],
};

const P: u64 = pte::PRESENT;
const W: u64 = pte::WRITABLE;
const NX: u64 = pte::NO_EXECUTE;
const PS: u64 = pte::HUGE;
const PWT: u64 = PageTableFlags::WRITE_THROUGH.bits();
const PCD: u64 = PageTableFlags::NO_CACHE.bits();

/// The kernel image's section boundaries (virtual addresses, from the link script).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageLayout {
    /// Start of `.text` (page aligned).
    pub text: u64,
    /// End of `.text` = start of `.rodata`.
    pub rodata: u64,
    /// End of `.rodata` = start of `.data`.
    pub data: u64,
    /// End of `.bss`.
    pub end: u64,
}

/// The kernel image's section boundaries.
pub fn image_layout() -> ImageLayout {
    unsafe extern "C" {
        static __kernel_start: u8;
        static __text_end: u8;
        static __rodata_end: u8;
        static __kernel_end: u8;
    }
    // SAFETY: linker-script symbols: only their addresses are used.
    unsafe {
        ImageLayout {
            text: &__kernel_start as *const u8 as u64,
            rodata: &__text_end as *const u8 as u64,
            data: &__rodata_end as *const u8 as u64,
            end: &__kernel_end as *const u8 as u64,
        }
    }
}

/// The leaf entry for kernel-image page `virt` (0 = not mapped).
fn image_entry(layout: &ImageLayout, virt: u64) -> u64 {
    if virt < layout.text || virt >= layout.end || crate::percpu::stack_guard_at(virt).is_some() {
        return 0;
    }
    let flags = if virt < layout.rodata {
        P
    } else if virt < layout.data {
        P | NX
    } else {
        P | W | NX
    };
    kernel_virt_to_phys(virt) | flags
}

/// Builds the kernel tables (module docs) and loads them on the calling core.
///
/// # Safety
/// Once, on the bootstrap processor, on the boot tables (which map the image, its stacks and
/// the physical window), before any other core starts, with EFER.NXE set.
pub unsafe fn init_kernel_space() {
    let t = &KERNEL_TABLES;
    // Identity: only the trampoline page.
    t.pml4.set(0, t.pdpt_low.phys() | P | W);
    t.pdpt_low.set(0, t.pd_low.phys() | P | W);
    t.pd_low.set(0, t.pt_low.phys() | P | W);
    t.pt_low.set(
        (TRAMPOLINE_PAGE / PAGE_SIZE) as usize,
        TRAMPOLINE_PAGE | P | W,
    );
    // The physical window: 4 GiB of 2 MiB pages, NX (also at the PML4 level).
    t.pml4.set(256, t.pdpt_phys.phys() | P | W | NX);
    for (i, pd) in t.pd_phys.iter().enumerate() {
        t.pdpt_phys.set(i, pd.phys() | P | W);
        for j in 0..512 {
            let large = (i * 512 + j) as u64;
            let uncached = if large >= 2032 { PCD | PWT } else { 0 };
            pd.set(j, (large << 21) | P | W | PS | NX | uncached);
        }
    }
    // The kernel image, 4 KiB pages, by section.
    let layout = image_layout();
    t.pml4.set(511, t.pdpt_high.phys() | P | W);
    t.pdpt_high.set(510, t.pd_high.phys() | P | W);
    for (i, pt) in t.pt_image.iter().enumerate() {
        t.pd_high.set(i, pt.phys() | P | W);
        for j in 0..512 {
            let virt = KERNEL_BASE + ((i * 512 + j) as u64) * PAGE_SIZE;
            pt.set(j, image_entry(&layout, virt));
        }
    }
    // SAFETY: the new tables map the running code (text), its stack (core 0's kernel stack,
    // data), the statics and the physical window as the boot tables did, at the same
    // addresses; EFER.NXE is set (the caller's contract), so the NX bits are valid.
    unsafe { crate::cpu::write_cr3(t.pml4.phys()) }
}

/// Removes the identity mapping of the AP trampoline page, the last writable and executable
/// kernel page. Called by [`smp::start_aps`](crate::smp::start_aps) once every AP has left
/// the trampoline; APs that cached the translation drop it at their next CR3 load, and none
/// jumps there again.
pub fn unmap_trampoline() {
    KERNEL_TABLES
        .pt_low
        .set((TRAMPOLINE_PAGE / PAGE_SIZE) as usize, 0);
    flush_page(TRAMPOLINE_PAGE);
}

/// How a kernel address is mapped, with the permissions combined over every level of the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelMapping {
    /// The physical address `vaddr` translates to.
    pub phys: PhysAddr,
    /// Writable (at every level).
    pub writable: bool,
    /// Executable (NX clear at every level).
    pub executable: bool,
    /// User-accessible (at every level).
    pub user: bool,
}

/// Walks `root` for any address (kernel or user, large pages included) and returns its
/// effective mapping, for the protection self-tests.
pub fn effective_mapping(root: PhysAddr, vaddr: u64) -> Option<KernelMapping> {
    let va = VirtAddr::try_new(vaddr).ok()?;
    let mut table = root;
    let (mut writable, mut executable, mut user) = (true, true, true);
    for level in (1..=4).rev() {
        // SAFETY: `table` is a page-table frame (of the kernel image or the frame pool) inside
        // the physical window; the entry pointer is inside it; read only.
        let e = unsafe { entry(table, va, level).read_volatile() };
        let flags = e.flags();
        if !flags.contains(PageTableFlags::PRESENT) {
            return None;
        }
        writable &= flags.contains(PageTableFlags::WRITABLE);
        executable &= !flags.contains(PageTableFlags::NO_EXECUTE);
        user &= flags.contains(PageTableFlags::USER_ACCESSIBLE);
        let size = match level {
            3 if flags.contains(PageTableFlags::HUGE_PAGE) => 1 << 30,
            2 if flags.contains(PageTableFlags::HUGE_PAGE) => 2 << 20,
            1 => PAGE_SIZE,
            _ => {
                table = e.addr().as_u64();
                continue;
            }
        };
        return Some(KernelMapping {
            phys: e.addr().as_u64() + (vaddr & (size - 1)),
            writable,
            executable,
            user,
        });
    }
    None
}

/// Sets the execute-disable bit of the user page `vaddr` in `root`, already mapped with
/// [`map_user`]: the boot-time ELF loader makes data, rodata and stacks non-executable (W^X for
/// the user images). Does nothing if `vaddr` is not mapped. The caller flushes TLBs if the
/// address space may be loaded.
pub fn set_user_no_execute(root: PhysAddr, vaddr: u64) -> Result<(), MapError> {
    let vaddr = check_user(vaddr)?;
    if let Some(e) = walk(root, vaddr, false)? {
        // SAFETY: as in `map_user`: `e` points at the page-table entry of `vaddr`.
        unsafe {
            let mut v = e.read_volatile();
            if v.flags().contains(PageTableFlags::PRESENT) {
                v.set_flags(v.flags() | PageTableFlags::NO_EXECUTE);
                e.write_volatile(v);
            }
        }
    }
    Ok(())
}
