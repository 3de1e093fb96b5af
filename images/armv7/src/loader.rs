//! Loads the embedded user ELF into user address spaces.
//!
//! The user ELF is static and position-dependent (linked at `servers::abi::USER_BASE`), so
//! loading is copying each `PT_LOAD` segment into fresh frames mapped at its virtual address:
//! writable when the segment is, zero-filled past its file size. Every address space gets its
//! own copy (no sharing, so one program's writes never reach another's). Checks are strict: a
//! malformed ELF is a build error of this project, reported at boot.

use hal_armv7::paging::{self, phys_to_virt, PhysAddr};

const PAGE_SIZE: u64 = paging::PAGE_SIZE as u64;

use image_common::elf::ElfTarget;
pub use image_common::elf::{Elf, ElfError};

/// The user ELF this image accepts.
const TARGET: ElfTarget = ElfTarget {
    class64: false,
    machine: 40,
    user_top: kernel::config::USER_TOP as u64,
    page_size: PAGE_SIZE,
};

/// Parses and checks `data` as this image's user ELF.
pub fn parse(data: &'static [u8]) -> Result<Elf, ElfError> {
    Elf::parse(data, &TARGET)
}

/// Copies every segment of `elf` into new frames mapped in the address space `root`.
pub fn load_into(elf: &Elf, root: PhysAddr) -> Result<(), ElfError> {
    for seg in elf.segments() {
        let mut page = seg.vaddr;
        while page < seg.vaddr + seg.memsz {
            let frame = paging::alloc_frame().ok_or(ElfError::OutOfMemory)?;
            let off_in_seg = page - seg.vaddr;
            if off_in_seg < seg.filesz {
                let n = (seg.filesz - off_in_seg).min(PAGE_SIZE) as usize;
                let src = &elf.data()[(seg.offset + off_in_seg) as usize..][..n];
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
