//! The multiboot2 entry: how GRUB (or any multiboot2 loader) starts the kernel on a real PC,
//! beside QEMU's PVH `-kernel` entry ([`pvh`](crate::pvh)).
//!
//! # Header and entry
//! The image carries a multiboot2 header (magic `0xE85250D6`, architecture i386) in
//! `.boot.multiboot2`, the first input section of the `.boot` output section (`link.ld`), so it
//! lies 8-byte aligned within the first 32 KiB of the file where loaders look for it. Its
//! entry-address tag names [`hal_mb2_start32`](#entry): GRUB loads the ELF's `PT_LOAD`
//! segments at their physical addresses (as QEMU's PVH loader does) and jumps there in 32-bit
//! protected mode, paging off, with `eax` = `0x36D76289` and `ebx` = the physical address of
//! the boot information (MBI). That is the PVH entry's state, so the stub checks `eax`, marks
//! `ebx` as multiboot2 by setting its bit 0 (an MBI is 8-byte aligned, a PVH start info too,
//! so the bit is otherwise clear) and continues in the PVH entry code, which builds the boot
//! page tables and enters long mode. The Rust entry (`boot::bsp_entry`) hands the tagged value
//! to [`boot_info`], which reads the MBI or the PVH start info accordingly into the same
//! [`BootInfo`].
//!
//! # What is read from the MBI
//! * tag 1, the command line (GRUB's `multiboot2 /kernel ARGS` line, without the path);
//! * tag 6, the memory map (E820 types, the same numbering as PVH's);
//! * tag 15 (ACPI 2.0+ RSDP) or else tag 14 (ACPI 1.0 RSDP): a *copy* of the RSDP, which is
//!   copied once more into kernel memory so that [`BootInfo::rsdp`] is a physical address like
//!   PVH's.
//!
//! Everything is copied into kernel statics at once: the MBI lies in RAM the frame allocator
//! will hand out. The tag walker ([`parse`]) is pure and unit-tested on the host.

/// The magic a multiboot2 loader leaves in `eax`.
pub const BOOTLOADER_MAGIC: u32 = 0x36D7_6289;
/// The header's magic.
pub const HEADER_MAGIC: u32 = 0xE852_50D6;

/// Which boot protocol started the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootProtocol {
    /// QEMU's PVH `-kernel` entry (`hvm_start_info`).
    Pvh,
    /// A multiboot2 loader such as GRUB.
    Multiboot2,
}

impl BootProtocol {
    /// Its name for the boot log.
    pub const fn name(self) -> &'static str {
        match self {
            BootProtocol::Pvh => "PVH",
            BootProtocol::Multiboot2 => "multiboot2",
        }
    }
}

/// Why the boot information could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mb2Error {
    /// The MBI's total size is smaller than its 8-byte header or than the bytes given.
    BadTotalSize(u32),
    /// A tag runs past the end of the MBI or is shorter than its 8-byte header.
    BadTag {
        /// Offset of the tag in the MBI.
        offset: usize,
    },
    /// No end tag (type 0) before the end of the MBI.
    NoEndTag,
    /// The memory-map tag's entry size is below 24 bytes.
    BadMemoryMapEntrySize(u32),
}

/// One memory-map entry as the loader gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mb2MemoryEntry {
    /// Physical start.
    pub base: u64,
    /// Length in bytes.
    pub len: u64,
    /// Type (1 RAM, 2 reserved, 3 ACPI reclaimable, 4 ACPI NVS, 5 bad).
    pub kind: u32,
}

/// What [`parse`] found in an MBI (slices into it).
#[derive(Clone, Copy, Debug, Default)]
pub struct Mb2Info<'a> {
    /// The command line's bytes, without the terminating NUL.
    pub cmdline: Option<&'a [u8]>,
    /// The memory-map tag's entries and the size of one entry.
    mmap: Option<(&'a [u8], usize)>,
    /// The RSDP copy (tag 15 if present, else tag 14) and the tag type it came from.
    pub rsdp: Option<(&'a [u8], u32)>,
    /// The boot loader's name (tag 2), for the boot log.
    pub loader_name: Option<&'a [u8]>,
}

impl<'a> Mb2Info<'a> {
    /// The memory-map entries.
    pub fn memory_map(&self) -> impl Iterator<Item = Mb2MemoryEntry> + 'a {
        let (bytes, size) = self.mmap.unwrap_or((&[], 24));
        bytes.chunks_exact(size).map(|e| Mb2MemoryEntry {
            base: u64_at(e, 0),
            len: u64_at(e, 8),
            kind: u32_at(e, 16),
        })
    }
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from(u32_at(b, off)) | u64::from(u32_at(b, off + 4)) << 32
}

/// Cuts a tag's string at its NUL.
fn c_str(b: &[u8]) -> &[u8] {
    b.iter().position(|&c| c == 0).map_or(b, |n| &b[..n])
}

/// The MBI's total size (its first word): how many bytes [`parse`] needs.
pub fn total_size(header: [u8; 8]) -> u32 {
    u32_at(&header, 0)
}

/// Walks the tags of the MBI in `mbi` (exactly its `total_size` bytes, or more).
pub fn parse(mbi: &[u8]) -> Result<Mb2Info<'_>, Mb2Error> {
    if mbi.len() < 8 {
        return Err(Mb2Error::BadTotalSize(mbi.len() as u32));
    }
    let total = u32_at(mbi, 0);
    if (total as usize) < 16 || total as usize > mbi.len() {
        return Err(Mb2Error::BadTotalSize(total));
    }
    let mbi = &mbi[..total as usize];
    let mut info = Mb2Info::default();
    let mut old_rsdp = None;
    let mut off = 8;
    loop {
        if off + 8 > mbi.len() {
            return Err(Mb2Error::NoEndTag);
        }
        let kind = u32_at(mbi, off);
        let size = u32_at(mbi, off + 4) as usize;
        if size < 8 || off + size > mbi.len() {
            return Err(Mb2Error::BadTag { offset: off });
        }
        let body = &mbi[off + 8..off + size];
        match kind {
            0 => break,
            1 => info.cmdline = Some(c_str(body)),
            2 => info.loader_name = Some(c_str(body)),
            6 => {
                if body.len() < 8 {
                    return Err(Mb2Error::BadTag { offset: off });
                }
                let entry_size = u32_at(body, 0);
                if entry_size < 24 {
                    return Err(Mb2Error::BadMemoryMapEntrySize(entry_size));
                }
                info.mmap = Some((&body[8..], entry_size as usize));
            }
            14 => old_rsdp = Some((body, 14)),
            15 => info.rsdp = Some((body, 15)),
            _ => {}
        }
        // Tags start 8-byte aligned.
        off += (size + 7) & !7;
    }
    if info.rsdp.is_none() {
        info.rsdp = old_rsdp;
    }
    Ok(info)
}

/// The memory-map entries that describe something (loaders may end the map with an empty one).
pub fn nonempty_entries<'a>(info: &Mb2Info<'a>) -> impl Iterator<Item = Mb2MemoryEntry> + 'a {
    info.memory_map().filter(|e| e.len != 0)
}

#[cfg(target_os = "none")]
pub use target::*;

#[cfg(target_os = "none")]
mod target {
    use core::arch::global_asm;

    use super::{nonempty_entries, parse, BootProtocol, Mb2Error, BOOTLOADER_MAGIC, HEADER_MAGIC};
    use crate::paging::{kernel_virt_to_phys, phys_to_virt};
    use crate::pvh::{BootError, BootInfo, MemoryRegion, RegionKind, MAX_CMDLINE};

    /// Largest MBI read (GRUB's are a few KiB; an EFI memory map tag can add a few more).
    const MAX_MBI: usize = 64 * 1024;

    global_asm!(
        r#"
    .section .boot.multiboot2, "a"
    .balign 8
hal_mb2_header:
    .long {magic}
    .long 0
    .long hal_mb2_header_end - hal_mb2_header
    .long 0xFFFFFFFF & (0x100000000 - ({magic} + (hal_mb2_header_end - hal_mb2_header)))
    /* entry address tag: type 3, flags 0 (required), size 12 */
    .balign 8
    .short 3
    .short 0
    .long 12
    .long hal_mb2_start32
    /* end tag */
    .balign 8
    .short 0
    .short 0
    .long 8
hal_mb2_header_end:

    .section .boot.text, "ax"
    .code32
    .global hal_mb2_start32
hal_mb2_start32:
    cli
    cmpl ${loader_magic}, %eax
    jne 1f
    /* Mark ebx as a multiboot2 information pointer and continue in the PVH entry code. */
    orl $1, %ebx
    jmp hal_pvh_start32
1:
    hlt
    jmp 1b
    .code64
    .text
"#,
        magic = const HEADER_MAGIC,
        loader_magic = const BOOTLOADER_MAGIC,
        options(att_syntax),
    );

    /// Why no boot information could be read.
    #[derive(Clone, Copy, Debug)]
    pub enum EntryError {
        /// The PVH start info was not valid.
        Pvh(BootError),
        /// The multiboot2 information was not valid.
        Multiboot2(Mb2Error),
    }

    /// Reads the boot information the entry code passed on: a PVH start info, or a multiboot2
    /// MBI when bit 0 is set (see the module docs).
    ///
    /// # Safety
    /// Called once, by the bootstrap processor, before other cores run, with the value the
    /// entry code passed to `bsp_entry`.
    pub(crate) unsafe fn boot_info(tagged: u32) -> Result<BootInfo, EntryError> {
        if tagged & 1 == 0 {
            // SAFETY: forwarded contract: a PVH start info address from `ebx`.
            return unsafe { BootInfo::from_start_info(u64::from(tagged)) }
                .map_err(EntryError::Pvh);
        }
        let phys = u64::from(tagged & !1);
        let mut header = [0u8; 8];
        // SAFETY: the MBI lies below 4 GiB (a 32-bit register), inside the physical window;
        // its first 8 bytes are the header the loader wrote.
        unsafe {
            core::ptr::copy_nonoverlapping(phys_to_virt(phys), header.as_mut_ptr(), 8);
        }
        let total = super::total_size(header) as usize;
        if !(16..=MAX_MBI).contains(&total) {
            return Err(EntryError::Multiboot2(Mb2Error::BadTotalSize(total as u32)));
        }
        // SAFETY: the loader's MBI is `total` bytes long, below 4 GiB, and nothing writes it
        // while it is read here.
        let mbi = unsafe { core::slice::from_raw_parts(phys_to_virt(phys), total) };
        let info = parse(mbi).map_err(EntryError::Multiboot2)?;
        // SAFETY: see the function contract: once, before other cores run.
        let st = unsafe { crate::pvh::storage() };

        let raw = info.cmdline.unwrap_or(&[]);
        let len = raw.len().min(MAX_CMDLINE);
        st.cmdline[..len].copy_from_slice(&raw[..len]);
        let cmdline = crate::pvh::cmdline_str(&st.cmdline[..len]);
        let mut n = 0;
        for (slot, e) in st.regions.iter_mut().zip(nonempty_entries(&info)) {
            *slot = MemoryRegion {
                start: e.base,
                len: e.len,
                kind: RegionKind::from_e820(e.kind),
            };
            n += 1;
        }
        let rsdp = info.rsdp.map(|(copy, _)| {
            let len = copy.len().min(st.rsdp.len());
            st.rsdp[..len].copy_from_slice(&copy[..len]);
            kernel_virt_to_phys(st.rsdp.as_ptr() as u64)
        });
        Ok(BootInfo {
            cmdline,
            memory_map: &st.regions[..n],
            rsdp,
            start_info_version: 0,
            start_info_phys: phys,
            protocol: BootProtocol::Multiboot2,
        })
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// Builds an MBI from `(type, body)` tags, padding each to 8 bytes and adding the end tag.
    fn mbi(tags: &[(u32, Vec<u8>)]) -> Vec<u8> {
        let mut b = vec![0u8; 8];
        for (kind, body) in tags {
            b.extend_from_slice(&kind.to_le_bytes());
            b.extend_from_slice(&(8 + body.len() as u32).to_le_bytes());
            b.extend_from_slice(body);
            while b.len() % 8 != 0 {
                b.push(0);
            }
        }
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&8u32.to_le_bytes());
        let total = b.len() as u32;
        b[..4].copy_from_slice(&total.to_le_bytes());
        b
    }

    fn mmap(entries: &[(u64, u64, u32)]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&24u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for (base, len, kind) in entries {
            b.extend_from_slice(&base.to_le_bytes());
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(&kind.to_le_bytes());
            b.extend_from_slice(&0u32.to_le_bytes());
        }
        b
    }

    #[test]
    fn reads_cmdline_memory_map_and_new_rsdp() {
        let rsdp_v1 = b"RSD PTR \x01OEMID\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
        let rsdp_v2 = [b"RSD PTR ".as_slice(), &[2u8; 28]].concat();
        let b = mbi(&[
            (1, b"lock=clh mode=demo smp=2\0".to_vec()),
            (2, b"GRUB 2.06\0".to_vec()),
            (14, rsdp_v1),
            (
                6,
                mmap(&[
                    (0, 0x9fc00, 1),
                    (0x9fc00, 0x400, 2),
                    (0x100000, 0x7ee0000, 1),
                    (0x7fe0000, 0x20000, 3),
                    (0x8000000, 0, 1),
                ]),
            ),
            (15, rsdp_v2.clone()),
            (42, vec![1, 2, 3]),
        ]);
        let info = parse(&b).unwrap();
        assert_eq!(info.cmdline, Some(b"lock=clh mode=demo smp=2".as_slice()));
        assert_eq!(info.loader_name, Some(b"GRUB 2.06".as_slice()));
        assert_eq!(info.rsdp, Some((rsdp_v2.as_slice(), 15)));
        assert_eq!(info.memory_map().count(), 5);
        let out: Vec<Mb2MemoryEntry> = nonempty_entries(&info).collect();
        assert_eq!(out.len(), 4, "the empty entry is skipped");
        assert_eq!(
            out[2],
            Mb2MemoryEntry {
                base: 0x100000,
                len: 0x7ee0000,
                kind: 1
            }
        );
        assert_eq!((out[1].kind, out[3].kind), (2, 3));
    }

    #[test]
    fn old_rsdp_is_used_when_there_is_no_new_one() {
        let b = mbi(&[(14, b"RSD PTR old".to_vec())]);
        let info = parse(&b).unwrap();
        assert_eq!(info.rsdp, Some((b"RSD PTR old".as_slice(), 14)));
        assert_eq!(info.cmdline, None);
        assert_eq!(info.memory_map().count(), 0);
    }

    #[test]
    fn larger_memory_map_entries_are_stepped_over() {
        // A loader may use entries longer than 24 bytes; only the first 20 are read.
        let mut body = Vec::new();
        body.extend_from_slice(&32u32.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        for i in 0..2u64 {
            body.extend_from_slice(&(i << 20).to_le_bytes());
            body.extend_from_slice(&(1u64 << 20).to_le_bytes());
            body.extend_from_slice(&1u32.to_le_bytes());
            body.extend_from_slice(&[0xee; 12]);
        }
        let b = mbi(&[(6, body)]);
        let entries: Vec<_> = parse(&b).unwrap().memory_map().collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].base, 1 << 20);
        assert_eq!(entries[1].kind, 1);
    }

    #[test]
    fn malformed_information_is_refused() {
        assert_eq!(parse(&[0; 4]).unwrap_err(), Mb2Error::BadTotalSize(4));
        let good = mbi(&[(1, b"x\0".to_vec())]);
        // Total size larger than the bytes given.
        let mut big = good.clone();
        big[..4].copy_from_slice(&1000u32.to_le_bytes());
        assert_eq!(parse(&big).unwrap_err(), Mb2Error::BadTotalSize(1000));
        // A tag running past the end.
        let mut long_tag = good.clone();
        long_tag[12..16].copy_from_slice(&100u32.to_le_bytes());
        assert_eq!(
            parse(&long_tag).unwrap_err(),
            Mb2Error::BadTag { offset: 8 }
        );
        // A tag shorter than its header.
        let mut short_tag = good.clone();
        short_tag[12..16].copy_from_slice(&4u32.to_le_bytes());
        assert_eq!(
            parse(&short_tag).unwrap_err(),
            Mb2Error::BadTag { offset: 8 }
        );
        // No end tag: cut it off and shrink the total size.
        let mut no_end = good.clone();
        no_end.truncate(good.len() - 8);
        let total = no_end.len() as u32;
        no_end[..4].copy_from_slice(&total.to_le_bytes());
        assert_eq!(parse(&no_end).unwrap_err(), Mb2Error::NoEndTag);
        // A memory map with entries too small to hold base, length and type.
        let mut tiny = mmap(&[]);
        tiny[..4].copy_from_slice(&16u32.to_le_bytes());
        assert_eq!(
            parse(&mbi(&[(6, tiny)])).unwrap_err(),
            Mb2Error::BadMemoryMapEntrySize(16)
        );
    }
}
