//! The kernel command line a boot loader passes in the device tree.
//!
//! Under QEMU the command line comes through semihosting (`-append`). On a board there is no
//! debugger to answer semihosting calls: U-Boot's `bootm` passes a flattened device tree
//! instead (its address in r2 at entry), with `setenv bootargs` in its `/chosen/bootargs`
//! property. QEMU's virt machine also places a device tree at the start of RAM for an ELF
//! kernel, with `-append` in the same property. [`from_device_tree`] decides which address to
//! trust: a candidate must lie in the machine's RAM window, be aligned, start with the
//! device-tree magic and fit in the window, so a stray r2 is never dereferenced outside RAM.
//!
//! Reading the property out of the tree ([`bootargs_in`]) is pure code over a byte slice that
//! builds for the host too, so the `bootargs` fuzz target (fuzz/) runs it on arbitrary trees.
//! It walks the structure block's tokens itself, checking every offset and length against the
//! blob: the `fdt` crate (0.1) that read the tree before panicked on malformed ones (a strings
//! block outside the blob, a truncated node), and a panic at boot stops the machine.

#[cfg(all(target_arch = "arm", target_os = "none"))]
use crate::machine::{Machine, VIRT_DTB};

/// `d00dfeed`, big-endian, at the start of every flattened device tree.
const FDT_MAGIC: u32 = 0xD00D_FEED;
/// The largest device tree accepted.
#[cfg(all(target_arch = "arm", target_os = "none"))]
const FDT_MAX: usize = 1 << 20;

/// Structure-block tokens (Devicetree Specification 0.4, 5.4.1).
const FDT_BEGIN_NODE: u32 = 1;
const FDT_END_NODE: u32 = 2;
const FDT_PROP: u32 = 3;
const FDT_NOP: u32 = 4;

/// Whether a device tree may start at `addr` on `machine`: inside the RAM window (mapped
/// normal memory once the MMU is on), aligned, with the magic and a size that fits. Its size
/// if so.
#[cfg(all(target_arch = "arm", target_os = "none"))]
fn plausible(machine: Machine, addr: usize) -> Option<usize> {
    let (ram, size) = machine.ram_window();
    let (ram, end) = (ram as usize, ram as usize + size as usize);
    if addr % 8 != 0 || addr < ram || addr.saturating_add(40) > end {
        return None;
    }
    // SAFETY: `addr..addr + 40` is RAM the kernel maps (checked above); reading the header is
    // harmless whatever it holds.
    let word = |i: usize| u32::from_be(unsafe { ((addr + 4 * i) as *const u32).read_volatile() });
    let total = word(1) as usize;
    (word(0) == FDT_MAGIC && (40..=FDT_MAX).contains(&total) && addr + total <= end)
        .then_some(total)
}

/// `/chosen/bootargs` of the device tree the boot loader left (`r2` at entry; on virt also
/// QEMU's at the start of RAM), copied into `buf` (the tree's memory is reused later). `None`
/// without a device tree or without the property.
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub fn from_device_tree(machine: Machine, r2: usize, buf: &mut [u8]) -> Option<&str> {
    let candidates = [Some(r2), (machine == Machine::Virt).then_some(VIRT_DTB)];
    let (addr, total) = candidates
        .into_iter()
        .flatten()
        .find_map(|a| plausible(machine, a).map(|total| (a, total)))?;
    // SAFETY: a plausible tree in mapped RAM (see `plausible`): its `total` bytes lie inside
    // the window, and nothing writes them while the slice lives.
    let blob = unsafe { core::slice::from_raw_parts(addr as *const u8, total) };
    bootargs_in(blob, buf)
}

/// `/chosen/bootargs` of the flattened device tree in `blob`, copied into `buf` (cut at a
/// character boundary when longer). `None` when `blob` is not a well-formed device tree as
/// far as the walk to the property goes, or the tree has no such property, or its value is
/// not UTF-8.
pub fn bootargs_in<'b>(blob: &[u8], buf: &'b mut [u8]) -> Option<&'b str> {
    let value = chosen_bootargs(blob)?;
    let args = core::str::from_utf8(value).ok()?.trim_end_matches('\0');
    let len = args.len().min(buf.len());
    let len = (0..=len).rev().find(|&l| args.is_char_boundary(l))?;
    buf[..len].copy_from_slice(&args.as_bytes()[..len]);
    core::str::from_utf8(&buf[..len]).ok()
}

/// The big-endian word at `at` of `b`, if it lies inside.
fn be32(b: &[u8], at: usize) -> Option<u32> {
    let w = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
}

/// `b[at..at + len]`, if it lies inside.
fn range(b: &[u8], at: usize, len: usize) -> Option<&[u8]> {
    b.get(at..at.checked_add(len)?)
}

/// The bytes of `b` from `at` up to the next NUL (excluded).
fn c_str(b: &[u8], at: usize) -> Option<&[u8]> {
    let rest = b.get(at..)?;
    Some(&rest[..rest.iter().position(|&c| c == 0)?])
}

/// `at` rounded up to the next multiple of 4 (tokens are 4-byte aligned).
fn align4(at: usize) -> Option<usize> {
    Some(at.checked_add(3)? & !3)
}

/// The raw value of `/chosen/bootargs`: the header's blocks checked to lie inside the blob,
/// then the structure block walked token by token (every step moves forward, so the walk
/// ends), tracking the depth: the property counts only directly in the root's `chosen` node.
fn chosen_bootargs(blob: &[u8]) -> Option<&[u8]> {
    if be32(blob, 0)? != FDT_MAGIC {
        return None;
    }
    let blob = blob.get(..be32(blob, 4)? as usize)?;
    let header = |i: usize| be32(blob, 4 * i).map(|w| w as usize);
    let structs = range(blob, header(2)?, header(9)?)?;
    let strings = range(blob, header(3)?, header(8)?)?;
    let (mut at, mut depth, mut in_chosen) = (0usize, 0usize, false);
    loop {
        let token = be32(structs, at)?;
        at += 4;
        match token {
            FDT_BEGIN_NODE => {
                let name = c_str(structs, at)?;
                at = align4(at + name.len() + 1)?;
                depth += 1;
                if depth == 2 {
                    in_chosen = name == b"chosen" || name.starts_with(b"chosen@");
                }
            }
            FDT_END_NODE => {
                if depth == 2 {
                    in_chosen = false;
                }
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return None;
                }
            }
            FDT_PROP => {
                let len = be32(structs, at)? as usize;
                let name_at = be32(structs, at + 4)? as usize;
                let value = range(structs, at + 8, len)?;
                at = align4(at + 8 + len)?;
                if depth == 2 && in_chosen && c_str(strings, name_at)? == b"bootargs" {
                    return Some(value);
                }
            }
            FDT_NOP => {}
            // FDT_END, or anything unknown: no `/chosen/bootargs` before it.
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    /// A flattened device tree whose `/chosen` has `bootargs` = `args` (NUL added).
    fn tree(args: &[u8]) -> Vec<u8> {
        let be = |v: u32| v.to_be_bytes();
        let mut st = Vec::new();
        let node = |st: &mut Vec<u8>, name: &[u8]| {
            st.extend_from_slice(&be(1)); // FDT_BEGIN_NODE
            st.extend_from_slice(name);
            st.push(0);
            st.resize(st.len().next_multiple_of(4), 0);
        };
        node(&mut st, b"");
        node(&mut st, b"chosen");
        st.extend_from_slice(&be(3)); // FDT_PROP
        st.extend_from_slice(&be(args.len() as u32 + 1));
        st.extend_from_slice(&be(0)); // name offset: "bootargs"
        st.extend_from_slice(args);
        st.push(0);
        st.resize(st.len().next_multiple_of(4), 0);
        for token in [2, 2, 9] {
            st.extend_from_slice(&be(token)); // FDT_END_NODE twice, FDT_END
        }
        let strings = b"bootargs\0";
        let (rsv, structs) = (40u32, 56u32);
        let strings_at = structs + st.len() as u32;
        let total = strings_at + strings.len() as u32;
        let mut t = Vec::new();
        for w in [
            0xD00D_FEED,
            total,
            structs,
            strings_at,
            rsv,
            17,
            16,
            0,
            strings.len() as u32,
            st.len() as u32,
        ] {
            t.extend_from_slice(&be(w));
        }
        t.extend_from_slice(&[0; 16]); // the empty memory reservation map
        t.extend_from_slice(&st);
        t.extend_from_slice(strings);
        t
    }

    #[test]
    fn the_chosen_bootargs_are_read() {
        let mut buf = [0u8; 64];
        let blob = tree(b"lock=clh cpus=4");
        assert_eq!(bootargs_in(&blob, &mut buf), Some("lock=clh cpus=4"));
    }

    #[test]
    fn long_bootargs_are_cut_at_a_character_boundary() {
        // `é` takes bytes 2 and 3: a 3-byte buffer holds `ab` and half of it.
        let mut buf = [0u8; 3];
        let blob = tree("ab\u{e9}cd".as_bytes());
        assert_eq!(bootargs_in(&blob, &mut buf), Some("ab"));
    }

    /// Found by the `bootargs` fuzz target: the `fdt` crate, which read the tree before,
    /// panicked on a header whose strings block lies outside the blob.
    #[test]
    fn a_strings_block_outside_the_blob_is_no_tree() {
        let mut blob = tree(b"lock=clh");
        blob[12..16].copy_from_slice(&0x0300_0000u32.to_be_bytes());
        let mut buf = [0u8; 16];
        assert_eq!(bootargs_in(&blob, &mut buf), None);
    }

    /// A property whose length runs past the structure block, and a tree cut short inside a
    /// node: no bootargs, no panic.
    #[test]
    fn a_truncated_tree_has_no_bootargs() {
        let good = tree(b"lock=clh");
        let mut buf = [0u8; 16];
        let prop_len_at = 56 + 8 + 4 + 8 + 4; // root, `chosen` (name padded to 8), FDT_PROP
        let mut long = good.clone();
        long[prop_len_at..prop_len_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(bootargs_in(&long, &mut buf), None);
        for cut in [41, 60, 70, 80] {
            let mut short = good[..cut].to_vec();
            short[4..8].copy_from_slice(&(cut as u32).to_be_bytes());
            assert_eq!(bootargs_in(&short, &mut buf), None, "cut at {cut}");
        }
    }

    #[test]
    fn only_the_roots_chosen_node_counts() {
        let mut buf = [0u8; 16];
        let mut blob = tree(b"lock=clh");
        let name_at = 56 + 8 + 4;
        blob[name_at..name_at + 6].copy_from_slice(b"chosex");
        assert_eq!(bootargs_in(&blob, &mut buf), None);
    }

    #[test]
    fn anything_but_a_tree_has_no_bootargs() {
        let mut buf = [0u8; 8];
        assert_eq!(bootargs_in(&[0; 64], &mut buf), None);
        let blob = tree(b"x");
        assert_eq!(bootargs_in(&blob[..40], &mut buf), None);
    }
}
