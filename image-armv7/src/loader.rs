//! Loads the embedded user ELF into user address spaces.
//!
//! The user ELF is static and position-dependent (linked at `servers::abi::USER_BASE`), so
//! loading is copying each `PT_LOAD` segment into fresh frames mapped at its virtual address:
//! writable when the segment is, zero-filled past its file size. Every address space gets its
//! own copy (no sharing, so one program's writes never reach another's). Checks are strict: a
//! malformed ELF is a build error of this project, reported at boot.

use hal_armv7::paging::{self, phys_to_virt, PhysAddr};

const PAGE_SIZE: u64 = paging::PAGE_SIZE as u64;

const PT_LOAD: u32 = 1;
const PF_W: u32 = 2;

/// Why the user ELF cannot be loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfError {
    /// Not a little-endian 32-bit ARM executable.
    NotAnExecutable,
    /// A header or segment lies outside the file.
    Truncated,
    /// A segment is not in the user half, or not page-aligned where it must be.
    BadSegment,
    /// No frame left.
    OutOfMemory,
}

/// One loadable segment.
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    /// Virtual address.
    pub vaddr: u64,
    /// Bytes in memory.
    pub memsz: u64,
    /// Offset in the file.
    pub offset: u64,
    /// Bytes in the file.
    pub filesz: u64,
    /// Writable.
    pub writable: bool,
}

/// A parsed user ELF.
pub struct Elf {
    data: &'static [u8],
    /// Entry point.
    pub entry: u64,
    segments: [Option<Segment>; 8],
}

fn u16_at(d: &[u8], o: usize) -> Result<u16, ElfError> {
    let b = d.get(o..o + 2).ok_or(ElfError::Truncated)?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

fn u32_at(d: &[u8], o: usize) -> Result<u32, ElfError> {
    let b = d.get(o..o + 4).ok_or(ElfError::Truncated)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn w(d: &[u8], o: usize) -> Result<u64, ElfError> {
    u32_at(d, o).map(u64::from)
}

impl Elf {
    /// Parses and checks `data`.
    pub fn parse(data: &'static [u8]) -> Result<Elf, ElfError> {
        if data.get(0..4) != Some(b"\x7FELF".as_slice())
            || data.get(4) != Some(&1)
            || data.get(5) != Some(&1)
            || u16_at(data, 16)? != 2
            || u16_at(data, 18)? != 40
        {
            return Err(ElfError::NotAnExecutable);
        }
        let entry = w(data, 24)?;
        let phoff = w(data, 28)? as usize;
        let phentsize = usize::from(u16_at(data, 42)?);
        let phnum = usize::from(u16_at(data, 44)?);
        let mut segments = [None; 8];
        let mut n = 0;
        for i in 0..phnum {
            let ph = phoff + i * phentsize;
            if u32_at(data, ph)? != PT_LOAD {
                continue;
            }
            let seg = Segment {
                offset: w(data, ph + 4)?,
                vaddr: w(data, ph + 8)?,
                filesz: w(data, ph + 16)?,
                memsz: w(data, ph + 20)?,
                writable: u32_at(data, ph + 24)? & PF_W != 0,
            };
            let end = seg
                .vaddr
                .checked_add(seg.memsz)
                .ok_or(ElfError::BadSegment)?;
            if seg.vaddr % PAGE_SIZE != 0
                || end > kernel::config::USER_TOP as u64
                || seg.filesz > seg.memsz
            {
                return Err(ElfError::BadSegment);
            }
            if (seg.offset + seg.filesz) as usize > data.len() {
                return Err(ElfError::Truncated);
            }
            if n == segments.len() {
                return Err(ElfError::BadSegment);
            }
            segments[n] = Some(seg);
            n += 1;
        }
        if n == 0 || entry >= kernel::config::USER_TOP as u64 {
            return Err(ElfError::BadSegment);
        }
        Ok(Elf {
            data,
            entry,
            segments,
        })
    }

    /// The loadable segments.
    pub fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.segments.iter().flatten()
    }

    /// Copies every segment into new frames mapped in the address space `root`.
    pub fn load_into(&self, root: PhysAddr) -> Result<(), ElfError> {
        for seg in self.segments() {
            let mut page = seg.vaddr;
            while page < seg.vaddr + seg.memsz {
                let frame = paging::alloc_frame().ok_or(ElfError::OutOfMemory)?;
                let off_in_seg = page - seg.vaddr;
                if off_in_seg < seg.filesz {
                    let n = (seg.filesz - off_in_seg).min(PAGE_SIZE) as usize;
                    let src = &self.data[(seg.offset + off_in_seg) as usize..][..n];
                    // SAFETY: `frame` is a fresh, zeroed frame in the physical window that only
                    // this loader uses until it is mapped; `n` <= one page.
                    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), phys_to_virt(frame), n) };
                    // The frame will be executed from: its bytes must reach the point of
                    // unification before the instruction cache can fetch them (the caches
                    // are invalidated for the new mapping by `paging::sync_icache` below).
                    paging::sync_icache(frame, n);
                }
                paging::map_user_alloc(root, page as usize, frame, seg.writable)
                    .map_err(|_| ElfError::OutOfMemory)?;
                page += PAGE_SIZE;
            }
        }
        Ok(())
    }
}

/// Maps a zeroed, writable stack of `size` bytes ending at `top` in `root`.
pub fn map_stack(root: PhysAddr, top: u64, size: u64) -> Result<(), ElfError> {
    let mut page = top - size;
    while page < top {
        let frame = paging::alloc_frame().ok_or(ElfError::OutOfMemory)?;
        paging::map_user_alloc(root, page as usize, frame, true)
            .map_err(|_| ElfError::OutOfMemory)?;
        page += PAGE_SIZE;
    }
    Ok(())
}
