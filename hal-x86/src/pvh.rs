//! The PVH boot protocol: what QEMU hands the kernel in `ebx` (`hvm_start_info`).
//!
//! The start info, the command line and the memory map live in low memory that the kernel does
//! not own (QEMU's loader put them there), so `BootInfo::from_start_info` copies everything
//! into kernel statics before anything (like the AP trampoline at 0x8000) may overwrite it.

use core::cell::UnsafeCell;

use crate::paging::phys_to_virt;

/// `hvm_start_info.magic`.
pub const START_INFO_MAGIC: u32 = 0x336E_C578;

/// Most memory map entries kept.
pub const MAX_MEMORY_REGIONS: usize = 64;
/// Longest command line kept (bytes); longer ones are cut.
pub const MAX_CMDLINE: usize = 1024;

/// `struct hvm_start_info` (Xen `arch-x86/hvm/start_info.h`), version 1.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct StartInfo {
    magic: u32,
    version: u32,
    flags: u32,
    nr_modules: u32,
    modlist_paddr: u64,
    cmdline_paddr: u64,
    rsdp_paddr: u64,
    memmap_paddr: u64,
    memmap_entries: u32,
    reserved: u32,
}

/// `struct hvm_memmap_table_entry`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct MemmapEntry {
    addr: u64,
    size: u64,
    kind: u32,
    reserved: u32,
}

/// Kind of a physical memory region (E820 numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionKind {
    /// Usable RAM (type 1).
    Ram,
    /// Reserved (type 2).
    Reserved,
    /// ACPI tables, reclaimable after parsing (type 3).
    AcpiReclaimable,
    /// ACPI non-volatile storage (type 4).
    AcpiNvs,
    /// Defective memory (type 5).
    Unusable,
    /// Any other type.
    Other(u32),
}

impl RegionKind {
    /// The kind of E820 type `t` (PVH's and multiboot2's memory maps number them alike).
    pub(crate) fn from_e820(t: u32) -> Self {
        match t {
            1 => Self::Ram,
            2 => Self::Reserved,
            3 => Self::AcpiReclaimable,
            4 => Self::AcpiNvs,
            5 => Self::Unusable,
            other => Self::Other(other),
        }
    }
}

/// One entry of the physical memory map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRegion {
    /// Physical start address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// What the region is.
    pub kind: RegionKind,
}

/// What the boot protocol provided, copied into kernel memory.
#[derive(Debug)]
pub struct BootInfo {
    /// The kernel command line (QEMU `-append`), `""` if none.
    pub cmdline: &'static str,
    /// The physical memory map.
    pub memory_map: &'static [MemoryRegion],
    /// Physical address of the ACPI RSDP, if the loader gave one.
    pub rsdp: Option<u64>,
    /// `hvm_start_info.version` (0 under multiboot2).
    pub start_info_version: u32,
    /// Physical address of the start info (under multiboot2: of the boot information).
    pub start_info_phys: u64,
    /// The protocol that started the kernel (PVH or multiboot2, see [`crate::multiboot2`]).
    pub protocol: crate::multiboot2::BootProtocol,
}

impl BootInfo {
    /// The value of `key=value` in the command line (the first occurrence), if present.
    pub fn cmdline_value(&self, key: &str) -> Option<&'static str> {
        cmdline_value(self.cmdline, key)
    }

    /// Whether the command line contains the word `flag` (or `flag=...`).
    pub fn cmdline_has(&self, flag: &str) -> bool {
        self.cmdline
            .split_ascii_whitespace()
            .any(|w| w == flag || w.split('=').next() == Some(flag))
    }

    /// Total usable RAM in bytes.
    pub fn usable_ram(&self) -> u64 {
        self.memory_map
            .iter()
            .filter(|r| r.kind == RegionKind::Ram)
            .map(|r| r.len)
            .sum()
    }

    /// Whether `[start, start + len)` lies inside usable RAM.
    pub fn is_ram(&self, start: u64, len: u64) -> bool {
        self.memory_map.iter().any(|r| {
            r.kind == RegionKind::Ram && r.start <= start && start + len <= r.start + r.len
        })
    }
}

/// The value of `key=value` among the whitespace-separated words of `cmdline`.
pub fn cmdline_value<'a>(cmdline: &'a str, key: &str) -> Option<&'a str> {
    cmdline.split_ascii_whitespace().find_map(|w| {
        let (k, v) = w.split_once('=')?;
        (k == key).then_some(v)
    })
}

/// The kernel statics the boot information is copied into, for either entry (PVH here,
/// multiboot2 in [`multiboot2`](crate::multiboot2)): the command line, the memory map, and the
/// RSDP where the loader passed a copy of it (multiboot2; 36 bytes for ACPI 2.0+, 20 before).
pub(crate) struct Storage {
    pub(crate) cmdline: [u8; MAX_CMDLINE],
    pub(crate) regions: [MemoryRegion; MAX_MEMORY_REGIONS],
    pub(crate) rsdp: [u8; 36],
}

/// The command line copied into `bytes`, up to the first byte that is not UTF-8.
pub(crate) fn cmdline_str(bytes: &[u8]) -> &str {
    match core::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => core::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
    }
}

struct StorageCell(UnsafeCell<Storage>);

// SAFETY: written once by the bootstrap processor before other cores exist; read-only after.
unsafe impl Sync for StorageCell {}

static STORAGE: StorageCell = StorageCell(UnsafeCell::new(Storage {
    cmdline: [0; MAX_CMDLINE],
    regions: [MemoryRegion {
        start: 0,
        len: 0,
        kind: RegionKind::Reserved,
    }; MAX_MEMORY_REGIONS],
    rsdp: [0; 36],
}));

/// The boot information's storage, to fill.
///
/// # Safety
/// Called once, by the bootstrap processor, before other cores run: nobody else touches the
/// storage yet.
pub(crate) unsafe fn storage() -> &'static mut Storage {
    // SAFETY: the caller's contract.
    unsafe { &mut *STORAGE.0.get() }
}

/// Why the start info could not be used.
#[derive(Clone, Copy, Debug)]
pub enum BootError {
    /// `ebx` did not point at a `hvm_start_info` (magic mismatch): not booted through PVH.
    BadMagic(u32),
}

impl BootInfo {
    /// Copies what the PVH start info at `phys` describes into kernel statics.
    ///
    /// # Safety
    /// Called once, by the bootstrap processor, before other cores run; `phys` is the value the
    /// loader passed in `ebx`.
    pub(crate) unsafe fn from_start_info(phys: u64) -> Result<BootInfo, BootError> {
        // SAFETY: `phys` is below 4 GiB (it came from a 32-bit register), so it lies in the
        // physical window; the loader put a start info there (checked by the magic).
        let si = unsafe { (phys_to_virt(phys) as *const StartInfo).read_unaligned() };
        if si.magic != START_INFO_MAGIC {
            return Err(BootError::BadMagic(si.magic));
        }
        // SAFETY: see the function contract: once, before other cores run.
        let st = unsafe { storage() };

        let mut len = 0;
        if si.cmdline_paddr != 0 {
            let p = phys_to_virt(si.cmdline_paddr) as *const u8;
            while len < MAX_CMDLINE {
                // SAFETY: the loader's NUL-terminated command line; reading stops at the NUL.
                let b = unsafe { p.add(len).read() };
                if b == 0 {
                    break;
                }
                st.cmdline[len] = b;
                len += 1;
            }
        }
        let cmdline = cmdline_str(&st.cmdline[..len]);

        let mut n = 0;
        if si.version >= 1 && si.memmap_paddr != 0 {
            let p = phys_to_virt(si.memmap_paddr) as *const MemmapEntry;
            for i in 0..(si.memmap_entries as usize).min(MAX_MEMORY_REGIONS) {
                // SAFETY: the loader's table has `memmap_entries` entries.
                let e = unsafe { p.add(i).read_unaligned() };
                if e.size == 0 {
                    continue; // QEMU's table ends with an empty entry
                }
                st.regions[n] = MemoryRegion {
                    start: e.addr,
                    len: e.size,
                    kind: RegionKind::from_e820(e.kind),
                };
                n += 1;
            }
        }
        Ok(BootInfo {
            cmdline,
            memory_map: &st.regions[..n],
            rsdp: (si.rsdp_paddr != 0).then_some(si.rsdp_paddr),
            start_info_version: si.version,
            start_info_phys: phys,
            protocol: crate::multiboot2::BootProtocol::Pvh,
        })
    }
}
