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

use crate::machine::{Machine, VIRT_DTB};

/// `d00dfeed`, big-endian, at the start of every flattened device tree.
const FDT_MAGIC: u32 = 0xD00D_FEED;
/// The largest device tree accepted.
const FDT_MAX: usize = 1 << 20;

/// Whether a device tree may start at `addr` on `machine`: inside the RAM window (mapped
/// normal memory once the MMU is on), aligned, with the magic and a size that fits.
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
pub fn from_device_tree(machine: Machine, r2: usize, buf: &mut [u8]) -> Option<&str> {
    let candidates = [Some(r2), (machine == Machine::Virt).then_some(VIRT_DTB)];
    let addr = candidates
        .into_iter()
        .flatten()
        .find(|&a| plausible(machine, a))?;
    // SAFETY: a plausible tree in mapped RAM (see `plausible`); the crate reads within its
    // `totalsize`, which lies inside the window.
    let fdt = unsafe { fdt::Fdt::from_ptr(addr as *const u8) }.ok()?;
    let args = fdt.find_node("/chosen")?.property("bootargs")?.as_str()?;
    let len = args.len().min(buf.len());
    let len = (0..=len).rev().find(|&l| args.is_char_boundary(l))?;
    buf[..len].copy_from_slice(&args.as_bytes()[..len]);
    core::str::from_utf8(&buf[..len]).ok()
}
