//! Loads the embedded user ELF into user address spaces.
//!
//! The user ELF is static and position-dependent (linked at `servers::abi::USER_BASE`), so
//! loading is copying each `PT_LOAD` segment into fresh frames mapped at its virtual address:
//! writable when the segment is, zero-filled past its file size. The mappings are W^X: only a
//! segment that is executable and not writable stays executable (text: read + execute);
//! rodata, data and the stacks get the execute-disable bit. Every address space gets its
//! own copy (no sharing, so one program's writes never reach another's). Checks are strict: a
//! malformed ELF is a build error of this project, reported at boot.

use hal_x86::paging::{self, phys_to_virt, PhysAddr, PAGE_SIZE};

use image_common::elf::ElfTarget;
pub use image_common::elf::{Elf, ElfError};

/// The user ELF this image accepts.
const TARGET: ElfTarget = ElfTarget {
    class64: true,
    machine: 62,
    user_top: 1 << 46,
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
            }
            paging::map_user(root, page, frame, seg.writable).map_err(|_| ElfError::OutOfMemory)?;
            if seg.writable || !seg.executable {
                paging::set_user_no_execute(root, page).map_err(|_| ElfError::BadSegment)?;
            }
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
        paging::map_user(root, page, frame, true).map_err(|_| ElfError::OutOfMemory)?;
        paging::set_user_no_execute(root, page).map_err(|_| ElfError::BadSegment)?;
        page += PAGE_SIZE;
    }
    Ok(())
}
