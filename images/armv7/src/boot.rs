//! The bootstrap processor's main function and the other cores' entry.

use hal_armv7::percpu::CpuIndex;
use hal_armv7::{println, smp, usermode, ArmHal, Platform};

use crate::{selftest, system};

hal_armv7::entry_point!(kernel_main);

/// The user ELF built by `build.rs`.
static USER_ELF: &[u8] = include_bytes!(env!("USER_ELF"));

fn kernel_main(p: &'static Platform) -> ! {
    println!();
    println!(
        "locked-in armv7 image: {} ({}, {}), cmdline \"{}\" (from {}), console at {:#x}, HAL \
         ready after {} ms",
        p.machine.name(),
        p.machine.description(),
        hal_armv7::machine::cpu_name(p.midr),
        p.cmdline,
        p.cmdline_source.name(),
        p.machine.uart_base(),
        hal_armv7::timer::since_boot_ns() / 1_000_000
    );
    match hal_armv7::timer::calibration() {
        hal_armv7::timer::Calibration::Measured(hz) => println!(
            "timer: A9 global timer at {} MHz (calibrated against the i.MX6 GPT, 24 MHz / 8)",
            hz / 1_000_000
        ),
        hal_armv7::timer::Calibration::Failed => println!(
            "timer: the i.MX6 GPT did not count; assuming QEMU's {} MHz for the A9 global timer",
            hal_armv7::timer::QEMU_A9_PERIPHCLK_HZ / 1_000_000
        ),
        hal_armv7::timer::Calibration::NotNeeded => {}
    }
    if !p.semihosting {
        println!(
            "boot: semihosting unavailable: no exit status for QEMU (the machine halts at the end)"
        );
    }
    let cmdline = image_common::boot::parse_cmdline::<ArmHal>(|k| p.cmdline_value(k));
    let (lock, test) = (cmdline.lock, cmdline.test);
    println!(
        "boot: rtm absent on ARMv7-A (elision falls back to the lock); SVC entry via VBAR, \
         {} KiB of frames free",
        (hal_armv7::paging::FRAME_POOL_END - hal_armv7::paging::frames_start()) / 1024
    );

    if test {
        selftest::before_smp(lock);
    }

    let report = smp::start_secondaries(p, ap_main);
    for f in report.failures.iter().flatten() {
        println!("smp: cpu {} did not start: {:?}", f.cpu, f.error);
    }
    // SAFETY: booted once, here, on the boot core before any other core runs kernel code.
    let image = unsafe {
        image_common::boot::Start::<system::System, _, _>::new(
            &usermode::USER,
            selftest::KERNEL_TESTS,
            USER_ELF,
        )
    };
    image_common::boot::run(
        &cmdline,
        (report.online, report.failure_count),
        Some("no RTM on ARMv7-A: every critical section falls back to the CLH lock"),
        |cfg| {
            if cfg.cmdline.bench.is_some() {
                // The user-readable cycle counter where the core has one (virt); the other
                // cores enable theirs when released (`ap_main`).
                hal_armv7::pmu::enable();
            }
            if test {
                selftest::after_smp(cfg, report.expected);
            }
        },
        image,
    )
}

/// A secondary core: waits for the release and schedules
/// ([`image_common::boot::secondary`]); in benchmark mode it enables its user-readable cycle
/// counter, where the core has one.
fn ap_main(cpu: CpuIndex) -> ! {
    image_common::boot::secondary::<ArmHal, _, _>(cpu, &usermode::USER, || {
        if hal_armv7::pmu::user_counter() {
            hal_armv7::pmu::enable_cpu();
        }
    })
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    hal_armv7::panic_report(info)
}
