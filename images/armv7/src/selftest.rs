//! In-kernel self-tests of the ARMv7 image (test mode), run on core 0 before the user programs
//! start: frame allocation, address spaces, user mappings, the vector table, command-line
//! parsing, the embedded user ELF, SMP bring-up. Each prints one `TEST` line.

use hal_armv7::paging::{self, phys_to_virt, PAGE_SIZE};

use crate::debugcalls::report;
use core::sync::atomic::{AtomicU32, Ordering};
use image_common::cmdline::Config;
use image_common::cmdline::LockChoice;

/// In-kernel tests ([`before_smp`] + [`after_smp`]).
pub const KERNEL_TESTS: usize = 13;
/// `TEST` lines of the user errors program (`servers::programs::errors`).
pub const USER_ERROR_TESTS: usize = 7;

/// Tests that need only core 0.
pub fn before_smp(lock: LockChoice) {
    timer_frequency();
    let a = paging::alloc_frame();
    let b = paging::alloc_frame();
    let zeroed = a.is_some_and(|f| {
        // SAFETY: a fresh frame in the identity-mapped pool, only read here.
        let s = unsafe { core::slice::from_raw_parts(phys_to_virt(f), PAGE_SIZE) };
        s.iter().all(|&x| x == 0)
    });
    report(
        "kernel:frame_alloc_distinct_aligned_zeroed",
        a.is_some()
            && b.is_some()
            && a != b
            && a.is_some_and(|f| f % PAGE_SIZE as u64 == 0)
            && zeroed,
        format_args!("{a:?} {b:?}"),
    );

    let root = paging::new_address_space();
    let boot = paging::boot_table() as usize as *const u32;
    let layout_ok = root.is_some_and(|r| {
        let t = paging::table_of(r) as *const u32;
        (0..4096).all(|i| {
            let addr = (i as u32) << 20;
            // SAFETY: both are 4096-entry first-level tables, read only.
            let (new, old) = unsafe { (t.add(i).read(), boot.add(i).read()) };
            if paging::is_kernel_section(addr) {
                new == old
            } else {
                new == 0
            }
        })
    });
    report(
        "kernel:address_space_shares_kernel_sections_only",
        layout_ok
            && root.is_some_and(|r| paging::asid_of(r) != 0 && paging::table_of(r) % 0x4000 == 0),
        format_args!("root {root:x?}, asid {}", root.map_or(0, paging::asid_of)),
    );

    let mapped = match (root, a) {
        (Some(r), Some(f)) => {
            let va = 0x1234_5000;
            let m = paging::map_user_alloc(r, va, f, true);
            let t = paging::translate(r, va + 0x10);
            // Small page, AP = 0b11 (user read/write), nG (ASID-tagged).
            let flags_ok = t.is_some_and(|(p, d)| {
                p == f + 0x10 && d & 0x2 != 0 && d & 0x30 == 0x30 && d & 0x800 != 0
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
        paging::map_user_alloc(r, 0x4020_0000, 0x4000_0000, false).is_err()
            && paging::map_user_alloc(r, 0x1001, 0x4000_0000, false).is_err()
    });
    report(
        "kernel:user_map_rejects_kernel_and_unaligned",
        rejected,
        format_args!("kernel-section and unaligned addresses refused"),
    );

    let vbar = aarch32_vbar();
    report(
        "kernel:vector_table_installed",
        vbar == hal_armv7::boot::vectors_address() && vbar % 32 == 0,
        format_args!("vbar {vbar:#x}"),
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
static DATA_PROBE: AtomicU32 = AtomicU32::new(0x5AFE);

/// The kernel's own mappings, read back from the boot table: text read-only and executable,
/// rodata read-only and XN, data and the rest of RAM XN, no image page both writable and
/// executable, every stack guard page unmapped with its stack page above mapped.
fn protection() {
    use hal_armv7::mmu::{image_layout, kernel_protection};
    let layout = image_layout();
    let text = kernel_protection(protection as fn() as usize);
    let rodata_str: &'static str = "a string literal in .rodata";
    let rodata = kernel_protection(rodata_str.as_ptr() as usize);
    let data = kernel_protection(&DATA_PROBE as *const AtomicU32 as usize);
    let frame = paging::alloc_frame().map(|f| kernel_protection(f as usize));
    let ok = text == Some((false, true))
        && rodata == Some((false, false))
        && data == Some((true, false))
        && DATA_PROBE.load(Ordering::Relaxed) == 0x5AFE
        && frame == Some(Some((true, false)));
    report(
        "kernel:wx_text_rx_rodata_ro_data_and_ram_xn",
        ok,
        format_args!(
            "(writable, executable): text {text:?} rodata {rodata:?} data {data:?} frame {frame:?}"
        ),
    );
    let (mut wx, mut first) = (0, 0);
    for va in (layout.text..layout.end).step_by(PAGE_SIZE) {
        if kernel_protection(va) == Some((true, true)) {
            wx += 1;
            if first == 0 {
                first = va;
            }
        }
    }
    report(
        "kernel:wx_no_image_page_writable_and_executable",
        wx == 0 && layout.text < layout.rodata && layout.rodata < layout.data,
        format_args!(
            "{wx} W+X pages (first {first:#x}) in {:#x}..{:#x}",
            layout.text, layout.end
        ),
    );
    let (mut n, mut bad) = (0, 0);
    for g in hal_armv7::boot::stack_guards() {
        n += 1;
        if kernel_protection(g).is_some() || kernel_protection(g + PAGE_SIZE) != Some((true, false))
        {
            bad += 1;
        }
    }
    report(
        "kernel:stack_guard_pages_unmapped",
        n > 0 && bad == 0,
        format_args!("{n} guard pages, {bad} mapped or without a stack above"),
    );
}

/// VBAR of the calling core.
fn aarch32_vbar() -> u32 {
    let v: u32;
    // SAFETY: reading VBAR has no side effects.
    unsafe {
        core::arch::asm!("mrc p15, 0, {}, c12, c0, 0", out(reg) v, options(nomem, nostack, preserves_flags))
    };
    v
}

/// The cycle counter's frequency: on the A9 (sabrelite) calibrated against the GPT at boot,
/// which under QEMU must give QEMU's 100 MHz; on virt the generic timer's CNTFRQ.
fn timer_frequency() {
    use hal_armv7::timer::{self, Calibration};
    let hz = timer::cycles_hz();
    let ok = match timer::calibration() {
        Calibration::Measured(m) => m == hz && m == timer::QEMU_A9_PERIPHCLK_HZ,
        Calibration::Failed => false,
        Calibration::NotNeeded => hz > 0,
    };
    report(
        "kernel:timer_frequency",
        ok,
        format_args!("{hz} Hz ({:?})", timer::calibration()),
    );
}

/// Tests that need the other cores started.
pub fn after_smp(cfg: &Config, expected: usize) {
    let online = hal_armv7::smp::online_count();
    report(
        "kernel:smp_all_cores_online",
        online == expected && cfg.cores == cfg.expected_cores(online, kernel::config::MAX_CPUS),
        format_args!("{online} online of {expected} GIC CPU interfaces"),
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
    let bad = crate::loader::parse(b"\x7FELF\x01\x01not an ARM executable");
    report(
        "kernel:user_elf_rejects_garbage",
        bad.is_err(),
        format_args!("{:?}", bad.as_ref().err()),
    );
}
