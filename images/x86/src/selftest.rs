//! In-kernel self-tests of the x86 image (test mode), run on the bootstrap processor before the
//! user programs start: frame allocation, address spaces, user mappings, the `syscall` MSRs,
//! command-line parsing, the embedded user ELF, SMP bring-up, and the kernel's own memory
//! protection (W^X of the image, NX physical window, unmapped stack guards, EFER.NXE on every
//! core), read back from the live page tables, and an interrupt-safe lock that the timer
//! interrupt handler takes too. Each prints one `TEST` line.

use hal_x86::paging::{self, phys_to_virt, pte, PAGE_SIZE};
use hal_x86::usermode;

use core::sync::atomic::{AtomicU64, Ordering};

use crate::debugcalls::report;
use crate::system::System;
use hal_x86::X86Hal;
use image_common::cmdline::Config;
use image_common::cmdline::LockChoice;
use image_common::elf::map_stack;
use image_common::{selftest, Arch};

/// In-kernel tests ([`before_smp`] + [`after_smp`]).
pub const KERNEL_TESTS: usize = 15;

/// Tests that need only the bootstrap processor.
pub fn before_smp(lock: LockChoice) {
    let a = selftest::frame_alloc::<System, X86Hal>();

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

    selftest::user_maps::<System, _, _, _, _>(
        root,
        a,
        &selftest::UserMaps {
            map: |r, va, f, w| paging::map_user(r, va, f, w).is_ok(),
            translate: paging::translate,
            unmap: |r, va| paging::unmap_user(r, va).is_ok(),
            entry_ok: |f, p, fl| p == f && fl & (pte::PRESENT | pte::USER | pte::WRITABLE) == 0x7,
            kernel: (0xFFFF_8000_0000_0000, 0x1000, "kernel-half"),
        },
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

    selftest::lock_names::<System>(lock);
    protection();
    selftest::irqsave_lock::<System, X86Hal>();
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

    selftest::no_wx_pages::<System>(
        [layout.text, layout.rodata, layout.data, layout.end],
        PAGE_SIZE,
        |va| map(va).is_some_and(|m| m.writable && m.executable),
    );
    selftest::stack_guards::<System, _>(hal_x86::percpu::stack_guards(), |g| {
        map(g).is_none() && map(g + PAGE_SIZE).is_some_and(|m| m.writable && !m.executable)
    });
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

    selftest::smp_online::<System>(cfg, online, expected, "in the MADT");
    let elf = System::parse_elf(include_bytes!(env!("USER_ELF")));
    selftest::user_elf_parses::<System>(&elf);
    let loaded = match (&elf, paging::new_address_space()) {
        (Ok(e), Some(r)) => e
            .load_into::<X86Hal>(r)
            .and_then(|()| map_stack::<X86Hal>(r, 0x7000_0000, PAGE_SIZE))
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
    selftest::user_elf_rejects_garbage::<System>(System::parse_elf(
        b"\x7FELF\x01\x01not an x86_64 executable",
    ));
}
