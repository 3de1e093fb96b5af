//! Per-process address spaces: short-descriptor translation tables tagged with ASIDs, the
//! frame allocator, and the TLB maintenance the kernel's `Hal` operations need.
//!
//! # Layout of every address space
//! Each address space has its own 16 KiB first-level table (TTBCR.N = 0, so TTBR0 translates
//! all 4 GiB). [`new_address_space`] copies into it, from the boot table, the *kernel sections*:
//! every 1 MiB section at or above [`KERNEL_RAM_START`] (the common RAM window the image and
//! every frame live in; identity mapped, kernel-only, global) and the few device sections the
//! kernel touches (UART, GIC, timers, SRC). Those entries are global (nG = 0), so their TLB
//! entries survive address-space switches. Everything else below
//! [`USER_TOP`](kernel::config::USER_TOP) is user space, mapped with 4 KiB small pages in
//! second-level tables, non-global (nG = 1) and so tagged with the address space's ASID.
//! A user mapping that would land in a kernel section is refused as
//! [`MapPrepError::Occupied`](kernel::MapPrepError::Occupied).
//!
//! Splitting with TTBCR.N and TTBR1 would need the kernel linked high; the image is identity
//! mapped at 0x4020_0000 (see `link.ld`), so this port copies the kernel entries instead (the
//! first-level tables never change after creation for those entries).
//!
//! # ASIDs
//! Address space *k* (creation order, at most [`MAX_SPACES`]) gets ASID *k* + 1; ASID 0 is the
//! boot table's (it has only global entries). No ASID is ever reused, so no rollover flush.
//! The *root* the kernel keeps for an address space (a 64-bit [`PhysAddr`]) holds both values
//! the switch writes: TTBR0's, the table's physical address with the walk attributes, in the
//! low word, and the ASID in the high word. The address-space switch of every IPC loads the
//! two words and writes them as they are, with no lookup and no bit-field instructions (see
//! [`asid_of`], [`table_of`]).
//!
//! # Table walks and caches
//! The Cortex-A9's table walker does not look in the L1 data cache, so every table store is
//! cleaned to the point of unification (DCCMVAU) before it can matter; the Cortex-A15 walks
//! coherently, where the clean is harmless.

use core::arch::asm;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use hal_common::table_pool::{FrameWindow, TablePool};
use kernel::config::USER_TOP;
use kernel::MapPrepError;

use crate::machine::{Machine, L1_ENTRIES, SECTION_SIZE};

/// A physical (= kernel virtual) address.
pub type PhysAddr = u64;

/// Page size.
pub const PAGE_SIZE: usize = 4096;
/// First section of the RAM window every address space maps for the kernel.
pub const KERNEL_RAM_START: u32 = 0x4000_0000;
/// End of the frame pool: the RAM both machines have (virt with `-m 256M`, sabrelite's 1 GiB).
pub const FRAME_POOL_END: usize = 0x5000_0000;
/// Address spaces [`new_address_space`] can make (8-bit ASIDs 1..=MAX_SPACES).
pub const MAX_SPACES: usize = 64;

use crate::mmu::TTBR_WALK_ATTRS;

/// Second-level (small page) descriptor bits, TEX remap and access flag off.
mod pte {
    /// Bits \[1:0\] = 0b1x: a 4 KiB small page (bit 0 is XN).
    pub const SMALL: u32 = 0b10;
    /// B.
    pub const B: u32 = 1 << 2;
    /// C.
    pub const C: u32 = 1 << 3;
    /// AP\[1:0\] = 0b11: read/write at PL0 and PL1.
    pub const AP_RW: u32 = 0b11 << 4;
    /// AP\[1:0\] = 0b10: read/write at PL1, read-only at PL0.
    pub const AP_RO: u32 = 0b10 << 4;
    /// TEX = 0b001 (with C, B: Normal, write-back write-allocate).
    pub const TEX_001: u32 = 0b001 << 6;
    /// S: shareable.
    pub const S: u32 = 1 << 10;
    /// nG: not global (tagged with the ASID).
    pub const NG: u32 = 1 << 11;
}

/// First-level descriptor of a second-level table (domain 0).
const L1_PAGE_TABLE: u32 = 0b01;

/// Next free frame of the bump allocator (0: not initialised).
static NEXT_FRAME: AtomicUsize = AtomicUsize::new(0);
/// First address of the frame pool.
static FRAME_START: AtomicUsize = AtomicUsize::new(0);
/// Frames handed out.
static FRAMES_USED: AtomicUsize = AtomicUsize::new(0);
/// The machine (which device sections the kernel keeps in every address space).
static MACHINE_VIRT: AtomicU32 = AtomicU32::new(0);
/// Tables of the address spaces, by ASID - 1 (0: free): which ASIDs are taken.
static ROOTS: [AtomicU32; MAX_SPACES] = [const { AtomicU32::new(0) }; MAX_SPACES];
/// A first-level table's alignment.
const L1_ALIGN: usize = 4 * PAGE_SIZE;
/// The bits of a TTBR0 value below the table's address (its walk attributes).
const TTBR_LOW_BITS: u32 = L1_ALIGN as u32 - 1;
// Every ASID fits CONTEXTIDR's 8-bit ASID field.
const _: () = assert!(MAX_SPACES < 256);
// The attributes fit below a first-level table's address.
const _: () = assert!(TTBR_WALK_ATTRS & !TTBR_LOW_BITS == 0);

unsafe extern "C" {
    /// End of the image (link.ld).
    static __image_end: u8;
}

/// Sets up the frame pool (everything from the end of the image to [`FRAME_POOL_END`]) and
/// records the boot table. Core 0, once, before any other function here.
pub fn init(machine: Machine) {
    let end = core::ptr::addr_of!(__image_end) as usize;
    let start = end.next_multiple_of(PAGE_SIZE);
    FRAME_START.store(start, Ordering::Relaxed);
    NEXT_FRAME.store(start, Ordering::Relaxed);
    MACHINE_VIRT.store(u32::from(machine == Machine::Virt), Ordering::Relaxed);
    // The page-table pool: one frame per 64 pages of the RAM window (at least 256), each
    // frame one second-level table (1 KiB) and its tag shadow.
    let frames = ((FRAME_POOL_END - start) / PAGE_SIZE / 64).max(256);
    if let Some(base) = alloc_aligned(frames, PAGE_SIZE) {
        POOL.reserve(base, base + (frames * PAGE_SIZE) as PhysAddr);
    }
}

/// Hands over the frames left after the boot image (they become the root task's RAM region):
/// writes `(start, end)` to `out[0]` and returns 1 (0 if nothing is left or `out` is empty).
/// Afterwards [`alloc_frame`] finds nothing.
pub fn take_free_ram(out: &mut [(u64, u64)]) -> usize {
    let Some(first) = out.first_mut() else {
        return 0;
    };
    let start = NEXT_FRAME.swap(FRAME_POOL_END, Ordering::Relaxed);
    if start == 0 || start >= FRAME_POOL_END {
        return 0;
    }
    let start = start.next_multiple_of(PAGE_SIZE);
    *first = (start as u64, FRAME_POOL_END as u64);
    1
}

/// Allocates `n` zeroed contiguous frames aligned to `align` bytes.
fn alloc_aligned(n: usize, align: usize) -> Option<PhysAddr> {
    let mut cur = NEXT_FRAME.load(Ordering::Relaxed);
    loop {
        if cur == 0 {
            return None;
        }
        let start = cur.next_multiple_of(align);
        let end = start.checked_add(n * PAGE_SIZE)?;
        if end > FRAME_POOL_END {
            return None;
        }
        match NEXT_FRAME.compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => {
                FRAMES_USED.fetch_add(n, Ordering::Relaxed);
                // SAFETY: [start, end) was just taken from the pool: identity-mapped RAM of the
                // kernel's window that nothing else uses.
                unsafe { core::ptr::write_bytes(start as *mut u8, 0, end - start) };
                return Some(start as PhysAddr);
            }
            Err(now) => cur = now,
        }
    }
}

/// Allocates one zeroed 4 KiB frame.
pub fn alloc_frame() -> Option<PhysAddr> {
    alloc_aligned(1, PAGE_SIZE)
}

/// First address of the frame pool (the end of the image).
pub fn frames_start() -> usize {
    FRAME_START.load(Ordering::Relaxed)
}

/// Frames allocated so far.
pub fn frames_allocated() -> usize {
    FRAMES_USED.load(Ordering::Relaxed)
}

/// The kernel-side pointer to physical address `phys` (identity map).
pub fn phys_to_virt(phys: PhysAddr) -> *mut u8 {
    phys as usize as *mut u8
}

/// Whether the 1 MiB section at `addr` belongs to the kernel in every address space.
fn kernel_section(addr: u32) -> bool {
    if addr >= KERNEL_RAM_START {
        return true;
    }
    let s = addr / SECTION_SIZE;
    if MACHINE_VIRT.load(Ordering::Relaxed) != 0 {
        // GIC distributor and CPU interface (0x0800_0000), PL011 (0x0900_0000).
        matches!(s, 0x080 | 0x090)
    } else {
        // MPCore private region (0x00A0_0000), AIPS1 with UART1 and the SRC (0x0200_0000..).
        matches!(s, 0x00A | 0x020 | 0x021)
    }
}

/// The boot translation table's physical address (global kernel entries only).
pub fn boot_table() -> PhysAddr {
    PhysAddr::from(crate::mmu::boot_ttbr0() & !0x3FFF)
}

/// Whether the 1 MiB section at `addr` is one of the kernel's (mapped in every address space).
pub fn is_kernel_section(addr: u32) -> bool {
    kernel_section(addr)
}

/// The ASID of the address space `root` (0 for the boot table): its high word (the module
/// docs' *ASIDs*). A value, not a lookup: the address-space switch of every IPC takes it.
#[inline(always)]
pub fn asid_of(root: PhysAddr) -> u32 {
    (root >> 32) as u32
}

/// The value TTBR0 holds while `root` is loaded: its low word.
#[inline(always)]
fn ttbr0_of(root: PhysAddr) -> u32 {
    root as u32
}

/// The physical address of the first-level table of the address space `root`.
#[inline(always)]
pub fn table_of(root: PhysAddr) -> usize {
    (ttbr0_of(root) & !TTBR_LOW_BITS) as usize
}

/// The root of the table at `table` (16 KiB aligned) with ASID `asid`.
fn root_of(table: u32, asid: u32) -> PhysAddr {
    PhysAddr::from(asid) << 32 | PhysAddr::from(table | TTBR_WALK_ATTRS)
}

/// Makes a new address space: a first-level table with the kernel sections of the boot table
/// and no user mappings. Returns its root: TTBR0's value for the table, with its ASID in the
/// high word (module docs).
pub fn new_address_space() -> Option<PhysAddr> {
    let slot = ROOTS.iter().position(|r| r.load(Ordering::Relaxed) == 0)?;
    let root = alloc_aligned(L1_ALIGN / PAGE_SIZE, L1_ALIGN)?;
    let boot = (crate::mmu::boot_ttbr0() & !0x3FFF) as *const u32;
    let table = root as usize as *mut u32;
    for i in 0..L1_ENTRIES {
        let addr = (i as u32) * SECTION_SIZE;
        if kernel_section(addr) {
            // SAFETY: both tables have L1_ENTRIES entries; the new one is ours alone.
            unsafe { table.add(i).write(boot.add(i).read()) };
        }
    }
    clean_table(root as usize, 4 * PAGE_SIZE);
    if ROOTS[slot]
        .compare_exchange(0, root as u32, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        return None;
    }
    Some(root_of(root as u32, slot as u32 + 1))
}

/// Cleans `[addr, addr + len)` to the point of unification so that the table walker sees it,
/// and waits for the clean.
fn clean_table(addr: usize, len: usize) {
    const LINE: usize = 32;
    let mut a = addr & !(LINE - 1);
    while a < addr + len {
        // SAFETY: DCCMVAU (c7, c11, 1) writes one line back; it never loses data.
        unsafe { asm!("mcr p15, 0, {}, c7, c11, 1", in(reg) a, options(nostack, preserves_flags)) };
        a += LINE;
    }
    // dsb ish: the table stores and their cleans are complete and visible to every core's
    // table walker (inner shareable domain) before any TLB maintenance or later access that
    // could walk them.
    // SAFETY: a barrier has no memory-safety effect.
    unsafe { asm!("dsb ish", options(nostack, preserves_flags)) };
}

/// The first-level entry for `vaddr` in `root`.
fn l1_entry(root: PhysAddr, vaddr: usize) -> *mut u32 {
    (table_of(root) as *mut u32).wrapping_add(vaddr >> 20)
}

/// The second-level entry for `vaddr`, if its table exists (`Err(true)`: a kernel section).
fn l2_entry(root: PhysAddr, vaddr: usize) -> Result<*mut u32, bool> {
    // SAFETY: `root` is a first-level table made by `new_address_space` (callers' contract
    // through the kernel, which only passes roots it got from the image).
    let l1 = unsafe { l1_entry(root, vaddr).read_volatile() };
    match l1 & 0b11 {
        0b01 => {
            let l2 = (l1 & !0x3FF) as usize as *mut u32;
            Ok(l2.wrapping_add((vaddr >> 12) & 0xFF))
        }
        0b00 => Err(false),
        _ => Err(true),
    }
}

/// Decode phase of a user mapping: creates the second-level table `vaddr` needs; refuses
/// addresses in kernel sections or already mapped.
pub fn prepare_user_map(root: PhysAddr, vaddr: usize) -> Result<(), MapPrepError> {
    if vaddr % PAGE_SIZE != 0 || vaddr >= USER_TOP || kernel_section(vaddr as u32) {
        return Err(MapPrepError::Occupied);
    }
    match l2_entry(root, vaddr) {
        // SAFETY: an entry of an existing second-level table.
        Ok(e) if unsafe { e.read_volatile() } != 0 => Err(MapPrepError::Occupied),
        Ok(_) => Ok(()),
        Err(true) => Err(MapPrepError::Occupied),
        Err(false) => {
            let l2 = alloc_table().ok_or(MapPrepError::OutOfMemory)?;
            // An empty table (already zeroed) must reach memory before the entry pointing to
            // it can be walked.
            clean_table(l2 as usize, 1024);
            let e = l1_entry(root, vaddr);
            // SAFETY: the first-level entry of a user section in a table we own.
            unsafe { e.write_volatile(l2 as u32 | L1_PAGE_TABLE) };
            clean_table(e as usize, 4);
            Ok(())
        }
    }
}

/// Maps the user page `vaddr` to `frame` in `root` as the image loader's (tag 0): writable and
/// never executable if `writable`, else read-only and executable. Fails only if the table is
/// missing (no `prepare_user_map` first) or `vaddr` is in a kernel section.
pub fn map_user(
    root: PhysAddr,
    vaddr: usize,
    frame: PhysAddr,
    writable: bool,
) -> Result<(), MapError> {
    map_leaf(
        root,
        vaddr,
        frame,
        hal_common::arch::loader_attrs(writable),
        0,
    )
}

/// Device memory: TEX 000, C 0, B 1 (shareable device).
const DEVICE_ATTRS: u32 = pte::B;
/// Normal memory: TEX 001, C 1, B 1 (write-back, write-allocate), shareable.
const NORMAL_ATTRS: u32 = pte::TEX_001 | pte::C | pte::B | pte::S;
/// The memory-type bits of a descriptor (TEX, C, B, S).
const TYPE_MASK: u32 = (0b111 << 6) | pte::C | pte::B | pte::S;
/// XN (bit 0 of a small-page descriptor).
const XN: u32 = 1;

/// The region tags of a second-level table: 256 half-words after its 1 KiB of entries, in the
/// same 4 KiB frame (the short-descriptor format has no software bits).
fn tag_slot(e: *mut u32) -> *mut u16 {
    let table = (e as usize) & !0x3FF;
    let index = ((e as usize) & 0x3FF) / 4;
    (table + 1024 + 2 * index) as *mut u16
}

/// Maps the user page `vaddr` to `frame` in `root` with `attrs` and region tag `tag`.
pub fn map_leaf(
    root: PhysAddr,
    vaddr: usize,
    frame: PhysAddr,
    attrs: kernel::PageAttrs,
    tag: kernel::MapTag,
) -> Result<(), MapError> {
    let e = l2_entry_or_err(root, vaddr)?;
    let ap = if attrs.contains(kernel::PageAttrs::WRITE) {
        pte::AP_RW
    } else {
        pte::AP_RO
    };
    let ty = if attrs.contains(kernel::PageAttrs::DEVICE) {
        DEVICE_ATTRS
    } else {
        NORMAL_ATTRS
    };
    let xn = if attrs.contains(kernel::PageAttrs::EXEC) {
        0
    } else {
        XN
    };
    let d = (frame as u32 & !0xFFF) | pte::NG | ty | ap | pte::SMALL | xn;
    // SAFETY: an entry of a second-level table of `root` and its tag slot in the same frame.
    unsafe {
        tag_slot(e).write_volatile(tag);
        e.write_volatile(d);
    }
    // An invalid entry is never cached in a TLB, so a new mapping needs no TLB maintenance:
    // only the clean + dsb ish that make it visible to the walkers.
    clean_table(e as usize, 4);
    Ok(())
}

/// The leaf a descriptor describes, with the tag in its shadow slot.
fn leaf_of(e: *mut u32, d: u32) -> kernel::Leaf {
    let mut attrs = kernel::PageAttrs::empty();
    if d & (0b11 << 4) == pte::AP_RW {
        attrs |= kernel::PageAttrs::WRITE;
    }
    if d & XN == 0 {
        attrs |= kernel::PageAttrs::EXEC;
    }
    if d & TYPE_MASK == DEVICE_ATTRS {
        attrs |= kernel::PageAttrs::DEVICE;
    }
    kernel::Leaf {
        phys: PhysAddr::from(d & !0xFFF),
        attrs,
        // SAFETY: the tag slot of a second-level table entry.
        tag: unsafe { tag_slot(e).read_volatile() },
    }
}

/// The user leaf mapping `vaddr` in `root`, if any.
pub fn lookup_leaf(root: PhysAddr, vaddr: usize) -> Option<kernel::Leaf> {
    if vaddr >= USER_TOP {
        return None;
    }
    let e = l2_entry(root, vaddr).ok()?;
    // SAFETY: an entry of a second-level table of `root`.
    let d = unsafe { e.read_volatile() };
    (d & 0b10 != 0).then(|| leaf_of(e, d))
}

/// Whether a second-level table (1 KiB at `l2`) has no entry.
fn l2_empty(l2: usize) -> bool {
    // SAFETY: 256 entries of a second-level table frame.
    (0..256).all(|i| unsafe { (l2 as *const u32).add(i).read_volatile() } == 0)
}

/// Unlinks the second-level table of `vaddr`'s section from `root` and retires it for `cpu`.
fn unlink_l2(cpu: usize, root: PhysAddr, vaddr: usize, l2: usize) {
    let e = l1_entry(root, vaddr);
    // SAFETY: the first-level entry of a user section of `root`.
    unsafe { e.write_volatile(0) };
    clean_table(e as usize, 4);
    retire_table(cpu, l2);
}

/// Removes the user leaf `vaddr` from `root` (no TLB maintenance: the kernel flushes after its
/// critical section, and shoots down the other cores); an emptied second-level table is
/// unlinked and retired for `cpu`.
pub fn unmap_leaf(cpu: usize, root: PhysAddr, vaddr: usize) {
    let Ok(e) = l2_entry(root, vaddr) else { return };
    // SAFETY: an entry of a second-level table of `root`, and its tag slot.
    unsafe {
        e.write_volatile(0);
        tag_slot(e).write_volatile(0);
    }
    clean_table(e as usize, 4);
    let l2 = (e as usize) & !0x3FF;
    if l2_empty(l2) {
        unlink_l2(cpu, root, vaddr, l2);
    }
}

/// Visits every user leaf of `root` and removes or retags it as `f` says; emptied tables are
/// unlinked and retired for `cpu`. Returns how many leaves it removed.
pub fn sweep(
    cpu: usize,
    root: PhysAddr,
    f: &mut dyn FnMut(&kernel::Leaf) -> kernel::SweepAction,
) -> usize {
    let mut removed = 0;
    for i in 0..L1_ENTRIES {
        let section = i * SECTION_SIZE as usize;
        if section >= USER_TOP || kernel_section(section as u32) {
            continue;
        }
        let Ok(first) = l2_entry(root, section) else {
            continue;
        };
        let l2 = first as usize;
        for j in 0..256 {
            let e = (l2 as *mut u32).wrapping_add(j);
            // SAFETY: entry `j` of the section's second-level table.
            let d = unsafe { e.read_volatile() };
            if d & 0b10 == 0 {
                continue;
            }
            match f(&leaf_of(e, d)) {
                kernel::SweepAction::Keep => {}
                kernel::SweepAction::Remove => {
                    // SAFETY: as above, and the entry's tag slot.
                    unsafe {
                        e.write_volatile(0);
                        tag_slot(e).write_volatile(0);
                    }
                    removed += 1;
                }
                // SAFETY: the entry's tag slot.
                kernel::SweepAction::Retag(tag) => unsafe { tag_slot(e).write_volatile(tag) },
            }
        }
        clean_table(l2, 1024);
        if l2_empty(l2) {
            unlink_l2(cpu, root, section, l2);
        }
    }
    removed
}

/// Frames reached by their physical address: the kernel maps RAM one to one.
struct Identity;

impl FrameWindow for Identity {
    fn frame_ptr(phys: PhysAddr) -> *mut u8 {
        phys as usize as *mut u8
    }
}

/// The pool of second-level tables (see [`hal_common::table_pool`] for the retire-then-reclaim
/// rule). Each frame holds one table (1 KiB) and its tag shadow.
static POOL: TablePool<Identity, crate::ArmHal, { crate::percpu::MAX_CPUS }> = TablePool::new();

/// A zeroed frame for a second-level table and its tags (`None`: the pool is exhausted).
fn alloc_table() -> Option<PhysAddr> {
    POOL.alloc()
}

/// Puts an unlinked table frame on core `cpu`'s retired list.
fn retire_table(cpu: usize, f: usize) {
    POOL.retire(cpu, f as PhysAddr);
}

/// Returns core `cpu`'s retired tables to the free list (after its TLB shoot-down).
pub fn reclaim_tables(cpu: usize) {
    POOL.reclaim(cpu);
}

/// `(free, total)` frames of the page-table pool.
pub fn table_frames() -> (usize, usize) {
    POOL.counts()
}

/// Why a page-table write was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapError {
    /// No second-level table covers the address (no `prepare_user_map` first).
    NoTable,
    /// The address is in a kernel section.
    KernelSection,
}

/// The second-level entry for `vaddr`, or why there is none.
fn l2_entry_or_err(root: PhysAddr, vaddr: usize) -> Result<*mut u32, MapError> {
    l2_entry(root, vaddr).map_err(|kernel| {
        if kernel {
            MapError::KernelSection
        } else {
            MapError::NoTable
        }
    })
}

/// Creates the table and maps in one go (boot-time loader).
pub fn map_user_alloc(
    root: PhysAddr,
    vaddr: usize,
    frame: PhysAddr,
    writable: bool,
) -> Result<(), MapPrepError> {
    prepare_user_map(root, vaddr)?;
    map_user(root, vaddr, frame, writable).map_err(|_| MapPrepError::Occupied)
}

/// Boot-time unmap (self-tests): removes the user page `vaddr` from `root` and returns an
/// emptied table to the pool at once, which is right only while no core has `root` loaded.
pub fn unmap_user(root: PhysAddr, vaddr: usize) -> Result<(), MapError> {
    l2_entry_or_err(root, vaddr)?;
    let cpu = crate::percpu::cpu_id() as usize;
    unmap_leaf(cpu, root, vaddr);
    reclaim_tables(cpu);
    Ok(())
}

/// The frame and descriptor mapping `vaddr` in `root`, if any.
pub fn translate(root: PhysAddr, vaddr: usize) -> Option<(PhysAddr, u32)> {
    let e = l2_entry(root, vaddr).ok()?;
    // SAFETY: an entry of a second-level table of `root`.
    let d = unsafe { e.read_volatile() };
    (d & 0b10 != 0).then(|| (PhysAddr::from(d & !0xFFF) | (vaddr as u64 & 0xFFF), d))
}

fn ttbr0_read() -> u32 {
    let v: u32;
    // SAFETY: reading TTBR0 has no side effects.
    unsafe {
        asm!("mrc p15, 0, {}, c2, c0, 0", out(reg) v, options(nomem, nostack, preserves_flags))
    };
    v
}

/// The root loaded on the calling core (0: the boot table): TTBR0's table with CONTEXTIDR's
/// ASID, as [`new_address_space`] made it.
pub fn current_root() -> PhysAddr {
    let t = ttbr0_read();
    if t & !TTBR_LOW_BITS == crate::mmu::boot_ttbr0() & !TTBR_LOW_BITS {
        return 0;
    }
    let contextidr: u32;
    // SAFETY: reading CONTEXTIDR has no side effects.
    unsafe {
        asm!("mrc p15, 0, {}, c13, c0, 1", out(reg) contextidr,
            options(nomem, nostack, preserves_flags))
    };
    root_of(t & !TTBR_LOW_BITS, contextidr & 0xFF)
}

/// Loads the address space `root` (with its ASID) on the calling core. The TLB entries of the
/// address space it leaves stay, tagged with that space's ASID, for when it comes back (an IPC
/// round trip switches back at once): the kernel keeps shooting this core down for every
/// address space it loaded until it flushes its whole TLB (see `kernel::Hal`). ASIDs are never
/// reused for another table (module docs), so a kept entry can only serve its own address space.
///
/// # Safety
/// `root` must come from [`new_address_space`] (it maps the kernel).
#[inline(always)]
pub unsafe fn switch_address_space(root: PhysAddr) {
    let asid = asid_of(root);
    let ttbr = ttbr0_of(root);
    // ARM ARM B3.10.4 (synchronising ASID and TTBR changes): go through the boot table, which
    // has only global entries, so that no walk between the writes can cache an entry of the
    // old table under the new ASID or of the new table under the old ASID (Linux's classic-MMU
    // switch does the same).
    // SAFETY: the boot table and `root` both map the kernel identically (global sections), so
    // the code and stack in use stay mapped throughout. Barriers, each one the architecture
    // requires for a context-changing CP15 write to take effect:
    //   isb 1 (in `load_boot_ttbr0`): TTBR0 = boot table is in use before the ASID changes;
    //   isb 2: the new ASID is in effect before the new table is loaded.
    // None after the table's write: the return to user mode, the first code that translates
    // through the new table, is an exception return, which synchronises context as an `isb`
    // does (ARM ARM glossary, "context synchronization operation"), and until then the kernel
    // touches only its own sections, which every table maps alike (the kernel's contract:
    // `kernel::Hal::switch_address_space`), so whichever table a walk uses meanwhile gives the
    // same translation. (A core that idles instead takes an interrupt, an exception entry,
    // before it runs user code again.)
    // No TLB maintenance, so no `dsb`: the old ASID's entries stay (see above).
    unsafe {
        crate::mmu::load_boot_ttbr0();
        asm!(
            "mcr p15, 0, {asid}, c13, c0, 1",
            "isb",
            "mcr p15, 0, {ttbr}, c2, c0, 0",
            asid = in(reg) asid,
            ttbr = in(reg) ttbr,
            options(nostack, preserves_flags)
        );
    }
}

/// Invalidates the calling core's TLB entries for the user page `vaddr` of `root`
/// (TLBIMVA by MVA and ASID), or all of `root`'s (TLBIASID), or everything (root 0).
pub fn flush_local(root: PhysAddr, vaddr: Option<usize>) {
    let asid = asid_of(root);
    // SAFETY: dropping cached translations is always safe; walks refill them.
    unsafe {
        match (asid, vaddr) {
            (0, _) => {
                asm!("mcr p15, 0, {}, c8, c7, 0", in(reg) 0u32, options(nostack, preserves_flags))
            }
            (a, Some(v)) => asm!(
                "mcr p15, 0, {}, c8, c7, 1",
                in(reg) (v as u32 & !0xFFF) | a,
                options(nostack, preserves_flags)
            ),
            (a, None) => {
                asm!("mcr p15, 0, {}, c8, c7, 2", in(reg) a, options(nostack, preserves_flags))
            }
        }
        // dsb ish: the invalidation is complete (the table store it follows was made visible
        // by `clean_table`'s dsb ish); isb: the instructions after this one, including the
        // return to user mode, translate without the stale entry. Also invalidate the branch
        // predictor (BPIALL) so no prediction made from the old mapping survives.
        asm!(
            "mcr p15, 0, {}, c7, c5, 6",
            "dsb ish",
            "isb",
            in(reg) 0u32,
            options(nostack, preserves_flags)
        );
    }
}

/// Makes code the kernel wrote at `frame` (through the identity map) fetchable by user mode
/// through any mapping: cleans the data cache lines to the point of unification, then
/// invalidates every instruction cache and branch predictor in the inner shareable domain.
pub fn sync_icache(frame: PhysAddr, len: usize) {
    // Clean to PoU, then `dsb ish` (in `clean_table`): the instructions are where the
    // instruction fetches of every core look before the invalidation below.
    clean_table(frame as usize, len);
    // SAFETY: invalidating instruction caches and branch predictors loses nothing.
    unsafe {
        asm!(
            "mcr p15, 0, {z}, c7, c1, 0", // ICIALLUIS
            "mcr p15, 0, {z}, c7, c1, 6", // BPIALLIS
            // dsb ish: the invalidations are complete on every core; isb: this core refetches.
            "dsb ish",
            "isb",
            z = in(reg) 0u32,
            options(nostack, preserves_flags)
        );
    }
}
