//! The x86_64 multiboot2 boot-information reader (`hal_x86::multiboot2`): arbitrary bytes as
//! the MBI a boot loader leaves. Checks that parsing never panics and that what it returns (the
//! command line, the loader name, the RSDP copy, the memory map) lies inside the MBI.
#![no_main]

use hal_x86::multiboot2::{nonempty_entries, parse, total_size};
use libfuzzer_sys::fuzz_target;

/// Whether `part` is a sub-slice of `whole`.
fn inside(part: &[u8], whole: &[u8]) -> bool {
    let (start, end) = (part.as_ptr() as usize, part.as_ptr() as usize + part.len());
    let (lo, hi) = (
        whole.as_ptr() as usize,
        whole.as_ptr() as usize + whole.len(),
    );
    lo <= start && end <= hi
}

fuzz_target!(|data: &[u8]| {
    let Ok(info) = parse(data) else {
        return;
    };
    let mut header = [0u8; 8];
    header.copy_from_slice(&data[..8]);
    let mbi = &data[..total_size(header) as usize];
    for s in [info.cmdline, info.loader_name].into_iter().flatten() {
        assert!(
            inside(s, mbi) && !s.contains(&0),
            "string outside the MBI or with a NUL"
        );
    }
    if let Some((rsdp, tag)) = info.rsdp {
        assert!(inside(rsdp, mbi) && (tag == 14 || tag == 15));
    }
    let all = info.memory_map().count();
    let nonempty = nonempty_entries(&info)
        .inspect(|e| assert_ne!(e.len, 0))
        .count();
    assert!(nonempty <= all && all <= mbi.len() / 24);
});
