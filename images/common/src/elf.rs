//! Parses and checks the embedded user ELF (32- or 64-bit, little-endian) and loads it into
//! user address spaces through the HAL's [`UserPaging`].
//!
//! The user ELF is static and position-dependent (linked at `servers::image::USER_BASE`), so
//! loading is copying each `PT_LOAD` segment into fresh frames mapped at its virtual address.
//! Checks are strict: a malformed ELF is a build error of this project, reported at boot.

use hal_common::arch::{MapUserError, UserPaging};

const PT_LOAD: u32 = 1;
const PF_X: u32 = 1;
const PF_W: u32 = 2;

/// Why the user ELF cannot be loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfError {
    /// Not a little-endian executable of the expected class and machine.
    NotAnExecutable,
    /// A header or segment lies outside the file.
    Truncated,
    /// A segment is not in the user half, or not page-aligned where it must be.
    BadSegment,
    /// No frame left.
    OutOfMemory,
}

/// What an image accepts as its user ELF.
#[derive(Clone, Copy, Debug)]
pub struct ElfTarget {
    /// ELFCLASS64 (else ELFCLASS32).
    pub class64: bool,
    /// `e_machine` (62 for x86_64, 40 for ARM).
    pub machine: u16,
    /// End of the user part of the address space: segments and entry must lie below it.
    pub user_top: u64,
    /// Page size: segments must start page-aligned.
    pub page_size: u64,
}

impl ElfTarget {
    /// An ELF of this build's class (ELFCLASS64 on 64-bit targets) for `e_machine` `machine`,
    /// its segments below `user_top` and aligned to `page_size`.
    pub const fn native(machine: u16, user_top: u64, page_size: u64) -> Self {
        Self {
            class64: cfg!(target_pointer_width = "64"),
            machine,
            user_top,
            page_size,
        }
    }
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
    /// Executable (`PF_X`). Loaders map a segment executable only if it is executable and
    /// not writable (W^X).
    pub executable: bool,
}

/// A parsed user ELF.
pub struct Elf {
    data: &'static [u8],
    /// Entry point.
    pub entry: u64,
    segments: [Option<Segment>; 8],
}

fn u16_at(d: &[u8], o: usize) -> Result<u16, ElfError> {
    let b = d
        .get(o..o.checked_add(2).ok_or(ElfError::Truncated)?)
        .ok_or(ElfError::Truncated)?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

fn u32_at(d: &[u8], o: usize) -> Result<u32, ElfError> {
    let b = d
        .get(o..o.checked_add(4).ok_or(ElfError::Truncated)?)
        .ok_or(ElfError::Truncated)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn u64_at(d: &[u8], o: usize) -> Result<u64, ElfError> {
    let b = d
        .get(o..o.checked_add(8).ok_or(ElfError::Truncated)?)
        .ok_or(ElfError::Truncated)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok(u64::from_le_bytes(a))
}

/// The entry point and loadable segments of an ELF file, read and checked against a target:
/// what [`Elf::parse`] reads, from any byte slice and without keeping it (the `elf` fuzz target
/// runs it on arbitrary bytes).
#[derive(Clone, Copy, Debug)]
pub struct Headers {
    /// Entry point.
    pub entry: u64,
    segments: [Option<Segment>; 8],
}

impl Headers {
    /// Reads and checks `data`'s file and program headers as an executable for `target`.
    pub fn parse(data: &[u8], target: &ElfTarget) -> Result<Headers, ElfError> {
        let wide = target.class64;
        if data.get(0..4) != Some(b"\x7FELF".as_slice())
            || data.get(4) != Some(if wide { &2 } else { &1 })
            || data.get(5) != Some(&1)
            || u16_at(data, 16)? != 2
            || u16_at(data, 18)? != target.machine
        {
            return Err(ElfError::NotAnExecutable);
        }
        // A word (address or offset) of the ELF's class.
        let w = |o: usize| {
            if wide {
                u64_at(data, o)
            } else {
                u32_at(data, o).map(u64::from)
            }
        };
        let (entry, phoff, phentsize, phnum) = if wide {
            (w(24)?, w(32)?, u16_at(data, 54)?, u16_at(data, 56)?)
        } else {
            (w(24)?, w(28)?, u16_at(data, 42)?, u16_at(data, 44)?)
        };
        let (phoff, phentsize, phnum) =
            (phoff as usize, usize::from(phentsize), usize::from(phnum));
        let mut segments = [None; 8];
        let mut n = 0;
        for i in 0..phnum {
            // Offsets come from the file: a sum past the address space is a header outside it.
            let ph = i
                .checked_mul(phentsize)
                .and_then(|o| o.checked_add(phoff))
                .ok_or(ElfError::Truncated)?;
            if u32_at(data, ph)? != PT_LOAD {
                continue;
            }
            let seg = if wide {
                Segment {
                    writable: u32_at(data, ph + 4)? & PF_W != 0,
                    executable: u32_at(data, ph + 4)? & PF_X != 0,
                    offset: w(ph + 8)?,
                    vaddr: w(ph + 16)?,
                    filesz: w(ph + 32)?,
                    memsz: w(ph + 40)?,
                }
            } else {
                Segment {
                    offset: w(ph + 4)?,
                    vaddr: w(ph + 8)?,
                    filesz: w(ph + 16)?,
                    memsz: w(ph + 20)?,
                    writable: u32_at(data, ph + 24)? & PF_W != 0,
                    executable: u32_at(data, ph + 24)? & PF_X != 0,
                }
            };
            let end = seg
                .vaddr
                .checked_add(seg.memsz)
                .ok_or(ElfError::BadSegment)?;
            if seg.vaddr % target.page_size != 0 || end > target.user_top || seg.filesz > seg.memsz
            {
                return Err(ElfError::BadSegment);
            }
            let file_end = seg.offset.checked_add(seg.filesz);
            if file_end.is_none_or(|e| e > data.len() as u64) {
                return Err(ElfError::Truncated);
            }
            if n == segments.len() {
                return Err(ElfError::BadSegment);
            }
            segments[n] = Some(seg);
            n += 1;
        }
        if n == 0 || entry >= target.user_top {
            return Err(ElfError::BadSegment);
        }
        Ok(Headers { entry, segments })
    }

    /// The loadable segments.
    pub fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.segments.iter().flatten()
    }
}

impl Elf {
    /// Parses and checks `data` as an executable for `target` (see [`Headers::parse`]).
    pub fn parse(data: &'static [u8], target: &ElfTarget) -> Result<Elf, ElfError> {
        let Headers { entry, segments } = Headers::parse(data, target)?;
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

    /// The bytes of the whole file.
    pub fn data(&self) -> &'static [u8] {
        self.data
    }
}
impl Elf {
    /// Copies every segment into new frames mapped at its virtual addresses in the address
    /// space `root`: writable when the segment is, zero-filled past its file size, executable
    /// only if executable and not writable. Every address space gets its own copy (no sharing,
    /// so one program's writes never reach another's).
    pub fn load_into<P: UserPaging>(&self, root: u64) -> Result<(), ElfError> {
        for seg in self.segments() {
            let mut page = seg.vaddr;
            while page < seg.vaddr + seg.memsz {
                let frame = P::alloc_frame().ok_or(ElfError::OutOfMemory)?;
                let off_in_seg = page - seg.vaddr;
                if off_in_seg < seg.filesz {
                    let n = (seg.filesz - off_in_seg).min(P::PAGE_SIZE) as usize;
                    let src = &self.data[(seg.offset + off_in_seg) as usize..][..n];
                    // SAFETY: `frame` is a fresh, zeroed frame that only this loader uses
                    // until it is mapped, and `frame_ptr` is where the kernel sees it; `n` is
                    // at most one page.
                    unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), P::frame_ptr(frame), n) };
                    P::frame_written(frame, n);
                }
                P::map_user(root, page, frame, seg.writable, seg.executable).map_err(map_error)?;
                page += P::PAGE_SIZE;
            }
        }
        Ok(())
    }
}

/// Maps a zeroed, writable, non-executable stack of `size` bytes ending at `top` in `root`.
pub fn map_stack<P: UserPaging>(root: u64, top: u64, size: u64) -> Result<(), ElfError> {
    let mut page = top - size;
    while page < top {
        let frame = P::alloc_frame().ok_or(ElfError::OutOfMemory)?;
        P::map_user(root, page, frame, true, false).map_err(map_error)?;
        page += P::PAGE_SIZE;
    }
    Ok(())
}

/// What a failed user mapping means for the loader: no frame for a page table (or an address
/// the page tables refuse), or a protection the page tables refuse.
fn map_error(e: MapUserError) -> ElfError {
    match e {
        MapUserError::Map => ElfError::OutOfMemory,
        MapUserError::Protect => ElfError::BadSegment,
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    const X86_64: ElfTarget = ElfTarget {
        class64: true,
        machine: 62,
        user_top: 0x0000_8000_0000_0000,
        page_size: 4096,
    };

    /// An ELF64 executable header with its program headers at `phoff`, then `phdrs`.
    fn elf64(phoff: u64, phnum: u16, phdrs: &[[u64; 7]]) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(b"\x7FELF\x02\x01\x01");
        f.resize(16, 0);
        f.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        f.extend_from_slice(&62u16.to_le_bytes());
        f.extend_from_slice(&1u32.to_le_bytes());
        f.extend_from_slice(&0x40_0000u64.to_le_bytes()); // entry
        f.extend_from_slice(&phoff.to_le_bytes());
        f.extend_from_slice(&0u64.to_le_bytes());
        f.extend_from_slice(&[0; 4]);
        for h in [64u16, 56, phnum, 64, 0, 0] {
            f.extend_from_slice(&h.to_le_bytes());
        }
        for p in phdrs {
            // p_type PT_LOAD, p_flags R+X, then offset, vaddr, paddr, filesz, memsz, align.
            f.extend_from_slice(&PT_LOAD.to_le_bytes());
            f.extend_from_slice(&5u32.to_le_bytes());
            for w in &p[..6] {
                f.extend_from_slice(&w.to_le_bytes());
            }
        }
        f
    }

    #[test]
    fn a_well_formed_executable_is_read() {
        let f = elf64(64, 1, &[[0, 0x40_0000, 0x40_0000, 120, 0x2000, 0x1000, 0]]);
        let h = Headers::parse(&f, &X86_64).unwrap();
        assert_eq!(h.entry, 0x40_0000);
        assert_eq!(h.segments().count(), 1);
    }

    /// Found by the `elf` fuzz target: a program-header offset near the top of the address
    /// space overflowed `offset + size` when reading a header field.
    #[test]
    fn a_program_header_offset_at_the_top_of_the_address_space_is_truncated() {
        let f = elf64(u64::MAX - 1, 1, &[]);
        assert_eq!(
            Headers::parse(&f, &X86_64).unwrap_err(),
            ElfError::Truncated
        );
    }

    /// Found by the `elf` fuzz target: a segment's file offset plus its file size overflowed.
    #[test]
    fn a_segment_whose_file_range_overflows_is_truncated() {
        let f = elf64(
            64,
            1,
            &[[u64::MAX, 0x40_0000, 0x40_0000, 16, 0x1000, 0x1000, 0]],
        );
        assert_eq!(
            Headers::parse(&f, &X86_64).unwrap_err(),
            ElfError::Truncated
        );
    }
}
