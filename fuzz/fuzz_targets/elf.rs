//! The user-ELF reader of the images (`image_common::elf::Headers::parse`, what
//! `Elf::parse` checks before an image loads its user programs): arbitrary bytes as a 32- or
//! 64-bit ELF file. Checks that reading never panics and that every segment it accepts obeys
//! the loader's rules: page-aligned, in the user half, its file bytes inside the file and no
//! more of them than of memory.
//!
//! Input: a byte choosing the target (even: x86_64, ELFCLASS64; odd: ARMv7, ELFCLASS32), then
//! the file.
#![no_main]

use image_common::elf::{ElfTarget, Headers};
use libfuzzer_sys::fuzz_target;

/// The x86_64 images' user ELF: 64-bit, `EM_X86_64`, below the canonical hole, 4 KiB pages.
const X86_64: ElfTarget = ElfTarget {
    class64: true,
    machine: 62,
    user_top: 0x0000_8000_0000_0000,
    page_size: 4096,
};

/// The ARMv7 images' user ELF: 32-bit, `EM_ARM`, below 2 GiB, 4 KiB pages.
const ARMV7: ElfTarget = ElfTarget {
    class64: false,
    machine: 40,
    user_top: 0x8000_0000,
    page_size: 4096,
};

fuzz_target!(|data: &[u8]| {
    let Some((&which, file)) = data.split_first() else {
        return;
    };
    let target = if which % 2 == 0 { X86_64 } else { ARMV7 };
    let Ok(headers) = Headers::parse(file, &target) else {
        return;
    };
    assert!(headers.entry < target.user_top);
    let mut count = 0;
    for seg in headers.segments() {
        count += 1;
        assert_eq!(seg.vaddr % target.page_size, 0, "{seg:?}");
        assert!(seg.vaddr + seg.memsz <= target.user_top, "{seg:?}");
        assert!(seg.filesz <= seg.memsz, "{seg:?}");
        assert!(seg.offset + seg.filesz <= file.len() as u64, "{seg:?}");
    }
    assert!((1..=8).contains(&count));
});
