//! In-kernel self-tests of the x86 image (test mode), run on the bootstrap processor before the
//! user programs start: frame allocation, address spaces, user mappings, the `syscall` MSRs,
//! command-line parsing, the embedded user ELF, SMP bring-up, and the kernel's own memory
//! protection (W^X of the image, NX physical window, unmapped stack guards, EFER.NXE on every
//! core), read back from the live page tables. Each prints one `TEST` line.

use hal_x86::paging::{self, phys_to_virt, pte, PAGE_SIZE};
use hal_x86::usermode;

use core::sync::atomic::{AtomicU64, Ordering};

use crate::debugcalls::report;
use image_common::cmdline::Config;
use image_common::cmdline::LockChoice;

/// In-kernel tests ([`before_smp`] + [`after_smp`]).
pub const KERNEL_TESTS: usize = 14;
/// `TEST` lines of the user errors program (`servers::programs::errors`).
pub const USER_ERROR_TESTS: usize = 7;

/// Tests that need only the bootstrap processor.
pub fn before_smp(lock: LockChoice) {
    let a = paging::alloc_frame();
    let b = paging::alloc_frame();
    let zeroed = a.is_some_and(|f| {
        // SAFETY: a fresh frame in the physical window, only read here.
        let s = unsafe { core::slice::from_raw_parts(phys_to_virt(f), PAGE_SIZE as usize) };
        s.iter().all(|&x| x == 0)
    });
    report(
        "kernel:frame_alloc_distinct_aligned_zeroed",
        a.is_some() && b.is_some() && a != b && a.is_some_and(|f| f % PAGE_SIZE == 0) && zeroed,
        format_args!("{a:?} {b:?}"),
    );

    let root = paging::new_address_space();
    let shares = root.is_some_and(|r| {
        (256..512).all(|i| {
            // SAFETY: both are PML4 frames in the physical window, read only.
            unsafe {
                (phys_to_virt(r) as *const u64).add(i).read()
                    == (phys_to_virt(paging::boot_root()) as *const u64)
                        .add(i)
                        .read()
            }
        })
    });
    let low_empty = root.is_some_and(|r| {
        // SAFETY: as above.
        (0..256).all(|i| unsafe { (phys_to_virt(r) as *const u64).add(i).read() } == 0)
    });
    report(
        "kernel:address_space_shares_kernel_half_only",
        shares && low_empty,
        format_args!("root {root:?}"),
    );

    let mapped = match (root, a) {
        (Some(r), Some(f)) => {
            let va = 0x1234_5000;
            let m = paging::map_user(r, va, f, true);
            let t = paging::translate(r, va + 0x10);
            let flags_ok = t.is_some_and(|(p, fl)| {
                p == f && fl & (pte::PRESENT | pte::USER | pte::WRITABLE) == 0x7
            });
            let u = paging::unmap_user(r, va);
            let gone = paging::translate(r, va).is_none();
            m.is_ok() && flags_ok && u.is_ok() && gone
        }
        _ => false,
    };
    report(
        "kernel:user_map_translate_unmap",
        mapped,
        format_args!("map, translate, unmap at 0x12345000"),
    );

    let rejected = root.is_some_and(|r| {
        paging::map_user(r, 0xFFFF_8000_0000_0000, 0x1000, false).is_err()
            && paging::map_user(r, 0x1001, 0x1000, false).is_err()
    });
    report(
        "kernel:user_map_rejects_kernel_and_unaligned",
        rejected,
        format_args!("kernel-half and unaligned addresses refused"),
    );

    let (efer, star, lstar, fmask) = usermode::syscall_msrs();
    report(
        "kernel:syscall_msrs",
        efer & 1 == 1
            && lstar == usermode::syscall_entry_address()
            && star >> 32 == 0x0013_0008
            && fmask == usermode::SYSCALL_FLAG_MASK,
        format_args!("efer {efer:#x} star {star:#x} lstar {lstar:#x} fmask {fmask:#x}"),
    );

    let names_ok = ["clh", "ticket", "brlock", "fine", "rtm", "none"]
        .iter()
        .all(|n| LockChoice::parse(n).is_some())
        && LockChoice::parse("spin").is_none()
        && LockChoice::parse("").is_none()
        && LockChoice::parse(lock.name()) == Some(lock);
    report(
        "kernel:cmdline_lock_names",
        names_ok,
        format_args!("running with {}", lock.name()),
    );
    protection();
}

/// A static in `.data` (non-zero, so not `.bss`), for the protection tests.
static DATA_PROBE: AtomicU64 = AtomicU64::new(0x5AFE);

/// The kernel's own mappings: text read-only and executable, rodata read-only and NX, data and
/// the physical window NX, no page of the image both writable and executable, and every stack
/// guard page unmapped (with the stack page above it mapped).
fn protection() {
    let root = paging::current_root();
    let map = |va: u64| paging::effective_mapping(root, va);
    let layout = paging::image_layout();
    let text = map(protection as fn() as usize as u64);
    let rodata_str: &'static str = "a string literal in .rodata";
    let rodata = map(rodata_str.as_ptr() as u64);
    let data = map(&DATA_PROBE as *const AtomicU64 as u64);
    let window = map(phys_to_virt(0x1000) as u64);
    let text_ok = text.is_some_and(|m| m.executable && !m.writable && !m.user);
    let rodata_ok = rodata.is_some_and(|m| !m.executable && !m.writable);
    let data_ok = data.is_some_and(|m| !m.executable && m.writable)
        && DATA_PROBE.load(Ordering::Relaxed) == 0x5AFE;
    let window_ok = window.is_some_and(|m| !m.executable && m.writable && m.phys == 0x1000);
    report(
        "kernel:wx_text_rx_rodata_ro_data_and_window_nx",
        text_ok && rodata_ok && data_ok && window_ok,
        format_args!("text {text:?} rodata {rodata:?} data {data:?} window {window:?}"),
    );

    let mut wx = 0;
    let mut first_wx = 0;
    let mut va = layout.text;
    while va < layout.end {
        if map(va).is_some_and(|m| m.writable && m.executable) {
            wx += 1;
            if first_wx == 0 {
                first_wx = va;
            }
        }
        va += PAGE_SIZE;
    }
    report(
        "kernel:wx_no_image_page_writable_and_executable",
        wx == 0 && layout.text < layout.rodata && layout.rodata < layout.data,
        format_args!(
            "{wx} W+X pages (first {first_wx:#x}) in {:#x}..{:#x}",
            layout.text, layout.end
        ),
    );

    let guards = hal_x86::percpu::stack_guards();
    let (mut n, mut bad) = (0, 0);
    for g in guards {
        n += 1;
        let above = map(g + PAGE_SIZE);
        if map(g).is_some() || !above.is_some_and(|m| m.writable && !m.executable) {
            bad += 1;
        }
    }
    report(
        "kernel:stack_guard_pages_unmapped",
        n > 0 && bad == 0,
        format_args!("{n} guard pages, {bad} mapped or without a stack above"),
    );
}

/// Tests that need the other cores started.
pub fn after_smp(cfg: &Config, expected: usize) {
    let online = hal_x86::smp::online_count();
    let missing_nxe = (0..online)
        .filter(|&c| hal_x86::percpu::efer_at_boot(c) & hal_x86::cpu::EFER_NXE == 0)
        .count();
    let trampoline =
        paging::effective_mapping(paging::current_root(), hal_x86::smp::TRAMPOLINE_PHYS);
    report(
        "kernel:nxe_on_every_core_trampoline_unmapped",
        missing_nxe == 0 && trampoline.is_none(),
        format_args!(
            "{missing_nxe} of {online} cores without EFER.NXE; trampoline identity page {trampoline:?}"
        ),
    );

    let online = hal_x86::smp::online_count();
    report(
        "kernel:smp_all_cores_online",
        online == expected && cfg.cores == cfg.expected_cores(online, kernel::config::MAX_CPUS),
        format_args!("{online} online of {expected} in the MADT"),
    );
    let elf = crate::loader::parse(include_bytes!(env!("USER_ELF")));
    let elf_ok = elf
        .as_ref()
        .is_ok_and(|e| e.entry == servers::abi::USER_BASE && e.segments().count() >= 2);
    report(
        "kernel:user_elf_parses",
        elf_ok,
        format_args!("entry {:?}", elf.as_ref().map(|e| e.entry)),
    );
    let loaded = match (&elf, paging::new_address_space()) {
        (Ok(e), Some(r)) => crate::loader::load_into(e, r)
            .and_then(|()| crate::loader::map_stack(r, 0x7000_0000, PAGE_SIZE))
            .ok()
            .map(|()| (e, r)),
        _ => None,
    };
    let user_wx = loaded.is_some_and(|(e, r)| {
        let segs_ok = e.segments().all(|s| {
            let m = paging::effective_mapping(r, s.vaddr);
            m.is_some_and(|m| {
                m.user && m.writable == s.writable && m.executable == (s.executable && !s.writable)
            })
        });
        let stack = paging::effective_mapping(r, 0x7000_0000 - PAGE_SIZE);
        let text = paging::effective_mapping(r, e.entry);
        segs_ok
            && stack.is_some_and(|m| m.writable && !m.executable)
            && text.is_some_and(|m| m.executable && !m.writable)
            && e.segments().any(|s| s.writable)
    });
    report(
        "kernel:user_elf_loaded_wx",
        user_wx,
        format_args!("text RX, rodata R NX, data and stack RW NX"),
    );
    let bad = crate::loader::parse(b"\x7FELF\x01\x01not an x86_64 executable");
    report(
        "kernel:user_elf_rejects_garbage",
        bad.is_err(),
        format_args!("{:?}", bad.as_ref().err()),
    );
}
