//! The kernel command line a boot loader passes in the device tree.
//!
//! Under QEMU the command line comes through semihosting (`-append`). On a board there is no
//! debugger to answer semihosting calls: U-Boot's `bootm` passes a flattened device tree
//! instead (its address in r2 at entry), with `setenv bootargs` in its `/chosen/bootargs`
//! property. QEMU's virt machine also places a device tree at the start of RAM for an ELF
//! kernel, with `-append` in the same property. The `fdt` crate parses it without an
//! allocator; this module only decides which address to trust: a candidate must lie in the
//! machine's RAM window, be aligned, start with the device-tree magic and fit in the window,
//! so a stray r2 is never dereferenced outside RAM.
//!
//! Reading the property out of a tree ([`bootargs_in`]) is pure code over a byte slice and
//! builds for the host too, so the `bootargs` fuzz target (fuzz/) runs it on arbitrary
//! trees; finding the tree in memory is the bare-metal part.

#[cfg(all(target_arch = "arm", target_os = "none"))]
use crate::machine::{Machine, VIRT_DTB};

/// `d00dfeed`, big-endian, at the start of every flattened device tree.
#[cfg(all(target_arch = "arm", target_os = "none"))]
const FDT_MAGIC: u32 = 0xD00D_FEED;
/// The largest device tree accepted.
#[cfg(all(target_arch = "arm", target_os = "none"))]
const FDT_MAX: usize = 1 << 20;

/// Whether a device tree may start at `addr` on `machine`: inside the RAM window (mapped
/// normal memory once the MMU is on), aligned, with the magic and a size that fits.
#[cfg(all(target_arch = "arm", target_os = "none"))]
fn plausible(machine: Machine, addr: usize) -> bool {
    let (ram, size) = machine.ram_window();
    let (ram, end) = (ram as usize, ram as usize + size as usize);
    if addr % 8 != 0 || addr < ram || addr.saturating_add(40) > end {
        return false;
    }
    // SAFETY: `addr..addr + 40` is RAM the kernel maps (checked above); reading the header is
    // harmless whatever it holds.
    let word = |i: usize| u32::from_be(unsafe { ((addr + 4 * i) as *const u32).read_volatile() });
    let total = word(1) as usize;
    word(0) == FDT_MAGIC && (40..=FDT_MAX).contains(&total) && addr + total <= end
}

/// `/chosen/bootargs` of the device tree the boot loader left (`r2` at entry; on virt also
/// QEMU's at the start of RAM), copied into `buf` (the tree's memory is reused later). `None`
/// without a device tree or without the property.
#[cfg(all(target_arch = "arm", target_os = "none"))]
pub fn from_device_tree(machine: Machine, r2: usize, buf: &mut [u8]) -> Option<&str> {
    let candidates = [Some(r2), (machine == Machine::Virt).then_some(VIRT_DTB)];
    let addr = candidates
        .into_iter()
        .flatten()
        .find(|&a| plausible(machine, a))?;
    // SAFETY: a plausible tree in mapped RAM (see `plausible`); the crate reads within its
    // `totalsize`, which lies inside the window.
    let fdt = unsafe { fdt::Fdt::from_ptr(addr as *const u8) }.ok()?;
    copy_bootargs(&fdt, buf)
}

/// `/chosen/bootargs` of the flattened device tree in `blob`, copied into `buf` (cut at a
/// character boundary when longer). `None` when `blob` is not a device tree or the tree has
/// no such property.
pub fn bootargs_in<'b>(blob: &[u8], buf: &'b mut [u8]) -> Option<&'b str> {
    copy_bootargs(&fdt::Fdt::new(blob).ok()?, buf)
}

/// The property's text copied into `buf`, as much of it as fits.
fn copy_bootargs<'b>(fdt: &fdt::Fdt<'_>, buf: &'b mut [u8]) -> Option<&'b str> {
    let args = fdt.find_node("/chosen")?.property("bootargs")?.as_str()?;
    let len = args.len().min(buf.len());
    let len = (0..=len).rev().find(|&l| args.is_char_boundary(l))?;
    buf[..len].copy_from_slice(&args.as_bytes()[..len]);
    core::str::from_utf8(&buf[..len]).ok()
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

    #[test]
    fn anything_but_a_tree_has_no_bootargs() {
        let mut buf = [0u8; 8];
        assert_eq!(bootargs_in(&[0; 64], &mut buf), None);
        let blob = tree(b"x");
        assert_eq!(bootargs_in(&blob[..40], &mut buf), None);
    }
}
