//! The memory tests the root task runs in test mode, on the memory capabilities it received at
//! boot (see `image::slot::ROOT_MEM`): 64 MiB split off, mapped, touched, partly unmapped and
//! revoked with the page-table pool back at its start count; a page mapped twice; and the
//! mappings the kernel must refuse.

use abi::syscall::{info, nr};
use abi::{Error, PageAttrs};

use crate::debug::test;
use crate::image::slot;
use crate::sys::{self, slot as s};

/// `TEST` lines [`run`] prints.
pub const TESTS: usize = 4;

/// Where the 64 MiB go (below the ARMv7 kernel window at 0x4000_0000, clear of the user ELF,
/// the stacks and the pager test's page).
const VA: usize = 0x1000_0000;
/// Where the second mapping of one page goes.
const ALIAS: usize = 0x1800_0000;
/// 64 MiB in pages.
const PAGES: usize = 16 * 1024;

/// Runs the tests; every outcome is a `TEST` line.
pub fn run() {
    let mem = s(slot::ROOT_MEM);
    let dev = s(slot::ROOT_DEVICE);
    let aspace = s(slot::ROOT_ASPACE);
    let child = s(slot::ROOT_SCRATCH);
    let free0 = sys::kernel_info(info::TABLE_FRAMES_FREE).unwrap_or(0);
    let info = sys::mem_info(mem);
    let pages = info.map_or(0, |i| i.1).min(PAGES);
    let split = sys::mem_split(mem, child, 0, pages);

    // Map and touch every page, then read each back.
    let mut mapped = 0;
    let mut touched = 0;
    for i in 0..pages {
        if sys::map_page(aspace, child, i, VA + i * 4096, PageAttrs::WRITE).is_ok() {
            mapped += 1;
            let p = (VA + i * 4096) as *mut usize;
            // SAFETY: the page was just mapped writable in this address space, and nothing
            // else in this program uses that range.
            unsafe { p.write_volatile(i ^ 0x5A5A) };
        }
    }
    for i in 0..mapped {
        // SAFETY: as above, mapped and written.
        if unsafe { ((VA + i * 4096) as *const usize).read_volatile() } == i ^ 0x5A5A {
            touched += 1;
        }
    }
    let used = free0.saturating_sub(sys::kernel_info(info::TABLE_FRAMES_FREE).unwrap_or(0));

    // The same page twice: what is written through one mapping is read through the other, and
    // MemInfo gives the child the parent's physical base (offset 0).
    let alias = sys::map_page(aspace, child, 5, ALIAS, PageAttrs::empty());
    // SAFETY: mapped read-only just above (if `alias` is Ok, checked first).
    let seen = alias.is_ok() && unsafe { (ALIAS as *const usize).read_volatile() } == 5 ^ 0x5A5A;
    let bases = (sys::mem_info(child).map(|i| i.0), info.map(|i| i.0));
    test(
        "user:mem_phys_address_and_second_mapping",
        seen && bases.0.is_ok() && bases.0 == bases.1,
        format_args!("alias {alias:?}, read back {seen}, bases {bases:x?}"),
    );

    // What the kernel must refuse, each without effect.
    let wx = abi::syscall::result(&sys::raw([
        nr::MAP_PAGE,
        slot::ROOT_ASPACE,
        slot::ROOT_SCRATCH,
        ALIAS + 4096,
        3,
        0,
    ]))
    .err();
    let dev_normal = sys::map_page(aspace, dev, 0, ALIAS + 4096, PageAttrs::WRITE).err();
    let ram_device = sys::map_page(aspace, child, 0, ALIAS + 4096, PageAttrs::DEVICE).err();
    let again = sys::map_page(aspace, child, 0, VA, PageAttrs::empty()).err();
    let overlap = sys::mem_split(mem, s(slot::ROOT_SCRATCH + 1), 1, 1).err();
    let kernel_va = sys::map_page(aspace, child, 0, usize::MAX & !0xFFF, PageAttrs::empty()).err();
    test(
        "user:mem_refusals",
        wx == Some(Error::InvalidArgument)
            && dev_normal == Some(Error::WrongMemoryKind)
            && ram_device == Some(Error::WrongMemoryKind)
            && again == Some(Error::AlreadyMapped)
            && overlap == Some(Error::Overlap)
            && kernel_va == Some(Error::OutOfRange),
        format_args!(
            "write+exec {wx:?}, device as normal {dev_normal:?}, RAM as device {ram_device:?}, \
             twice {again:?}, overlapping split {overlap:?}, kernel address {kernel_va:?}"
        ),
    );

    // Unmap half page by page, revoke the rest through the parent.
    let mut unmapped = 0;
    for i in (0..mapped).step_by(2) {
        unmapped += usize::from(sys::unmap_page(aspace, VA + i * 4096).is_ok());
    }
    let revoked = sys::mem_revoke(mem);
    let gone = sys::mem_info(child).err();
    let still = sys::unmap_page(aspace, VA + 4096).err();
    let free1 = sys::kernel_info(info::TABLE_FRAMES_FREE).unwrap_or(0);
    test(
        "user:mem_64mib_map_touch_unmap_revoke",
        split.is_ok()
            && pages == PAGES
            && mapped == pages
            && touched == pages
            && used > 0
            && revoked.is_ok()
            && gone == Some(Error::InvalidCap)
            && still == Some(Error::NotMapped)
            && free1 == free0,
        format_args!(
            "table frames free {free0} -> {free1}, {used} used; {mapped}/{pages} mapped, \
             {touched} read back, {unmapped} unmapped; {split:?} {revoked:?} {gone:?} {still:?}"
        ),
    );

    // Run-time objects: an endpoint from the control capability.
    let ep = sys::create_endpoint(s(slot::ROOT_CONTROL), s(slot::ROOT_SCRATCH + 2));
    let deleted = sys::cap_delete(s(slot::ROOT_SCRATCH + 2));
    test(
        "user:create_endpoint_at_run_time",
        ep.is_ok() && deleted.is_ok(),
        format_args!("create {ep:?}, delete {deleted:?}"),
    );
}
