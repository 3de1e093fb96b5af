//! In-kernel self-tests of the ARMv7 image (test mode), run on core 0 before the user programs
//! start: frame allocation, address spaces, user mappings, the vector table, command-line
//! parsing, the embedded user ELF, SMP bring-up, and an interrupt-safe lock that the timer
//! interrupt handler takes too. Each prints one `TEST` line.

use hal_armv7::paging::{self, PAGE_SIZE};

use crate::debugcalls::report;
use crate::system::System;
use core::sync::atomic::{AtomicU32, Ordering};
use hal_armv7::ArmHal;
use image_common::cmdline::Config;
use image_common::cmdline::LockChoice;
use image_common::{selftest, Arch};

/// In-kernel tests ([`before_smp`] + [`after_smp`]).
pub const KERNEL_TESTS: usize = 14;

/// Tests that need only core 0.
pub fn before_smp(lock: LockChoice) {
    timer_frequency();
    let a = selftest::frame_alloc::<System, ArmHal>();

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

    selftest::user_maps::<System, _, _, _, _>(
        root,
        a,
        &selftest::UserMaps {
            map: |r, va, f, w| paging::map_user_alloc(r, va as usize, f, w).is_ok(),
            translate: |r, va| paging::translate(r, va as usize).map(|(p, d)| (p, u64::from(d))),
            unmap: |r, va| paging::unmap_user(r, va as usize).is_ok(),
            // Small page, AP = 0b11 (user read/write), nG (ASID-tagged).
            entry_ok: |f, p, d| p == f + 0x10 && d & 0x2 != 0 && d & 0x30 == 0x30 && d & 0x800 != 0,
            kernel: (0x4020_0000, 0x4000_0000, "kernel-section"),
        },
    );

    let vbar = aarch32_vbar();
    report(
        "kernel:vector_table_installed",
        vbar == hal_armv7::boot::vectors_address() && vbar % 32 == 0,
        format_args!("vbar {vbar:#x}"),
    );

    selftest::lock_names::<System>(lock);
    protection();
    selftest::irqsave_lock::<System, ArmHal>();
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
    selftest::no_wx_pages::<System>(
        [layout.text, layout.rodata, layout.data, layout.end].map(|a| a as u64),
        PAGE_SIZE as u64,
        |va| kernel_protection(va as usize) == Some((true, true)),
    );
    selftest::stack_guards::<System, _>(hal_armv7::boot::stack_guards(), |g| {
        kernel_protection(g).is_none() && kernel_protection(g + PAGE_SIZE) == Some((true, false))
    });
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
    selftest::smp_online::<System>(cfg, online, expected, "GIC CPU interfaces");
    selftest::user_elf_parses::<System>(&System::parse_elf(include_bytes!(env!("USER_ELF"))));
    selftest::user_elf_rejects_garbage::<System>(System::parse_elf(
        b"\x7FELF\x01\x01not an ARM executable",
    ));
}
