//! The bootstrap processor's main function and the other cores' entry.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hal_x86::exit::ExitCode;
use hal_x86::percpu::CpuIndex;
use hal_x86::{println, smp, usermode, Platform, X86Hal};
use kernel::config::MAX_CPUS;

use crate::{selftest, system};
use image_common::cmdline::Cmdline;

hal_x86::entry_point!(kernel_main);

/// Timer interrupts per second on every core (round-robin among equal priorities).
pub const TIMER_HZ: u32 = 100;

/// Set in benchmark mode: no tick timer on any core (nothing to preempt, and a tick would land
/// in samples).
pub static BENCH_MODE: AtomicBool = AtomicBool::new(false);

/// Set by the root task (debug call RELEASE): the other cores may enter the scheduler.
pub static RELEASED: AtomicBool = AtomicBool::new(false);
/// Cores the kernel uses (APs with a higher index stay parked).
pub static KERNEL_CORES: AtomicUsize = AtomicUsize::new(1);

/// Stops with the failure status after a message.
pub fn fail(args: core::fmt::Arguments<'_>) -> ! {
    println!("boot: FAILED: {args}");
    X86Hal::exit(ExitCode::Failure)
}

fn kernel_main(p: &'static Platform) -> ! {
    println!();
    println!(
        "locked-in x86_64 image: {} boot ok, cmdline \"{}\", {} MiB RAM, HAL ready after {} ms",
        p.boot.protocol.name(),
        p.boot.cmdline,
        p.boot.usable_ram() >> 20,
        hal_x86::time::since_boot_ns() / 1_000_000
    );
    let cmdline = match Cmdline::parse(|k| p.boot.cmdline_value(k)) {
        Ok(c) => c,
        Err(e) => fail(format_args!("{e}")),
    };
    let (lock, test) = (cmdline.lock, cmdline.test);
    let acpi = match &p.acpi {
        Ok(a) => a,
        Err(e) => fail(format_args!("ACPI tables unreadable: {e:?}")),
    };
    if let Some(srat) = &acpi.srat {
        println!(
            "acpi: srat: {} cpus and {} memory ranges in {} proximity domains ({} disabled, {} \
             malformed entries left out)",
            srat.cpus().len(),
            srat.memory().len(),
            srat.domain_count(),
            srat.disabled,
            srat.skipped
        );
        for m in srat.memory() {
            println!(
                "acpi: srat: {:#x}..{:#x} in domain {}{}{}",
                m.base,
                m.end(),
                m.domain,
                if m.hot_pluggable {
                    ", hot-pluggable"
                } else {
                    ""
                },
                if m.non_volatile { ", non-volatile" } else { "" }
            );
        }
    }

    unsafe extern "C" {
        static __kernel_end_phys: u8;
    }
    // SAFETY: a linker-script symbol: only its address (the image's physical end) is used.
    let kernel_end = unsafe { &__kernel_end_phys as *const u8 as u64 };
    hal_x86::paging::init_frames(p.boot.memory_map, kernel_end);
    usermode::init_cpu();
    println!(
        "boot: cpu {} rtm {}; syscall entry at {:#x}",
        p.cpu.vendor_str(),
        if p.cpu.rtm {
            "present"
        } else {
            "absent (elision falls back to the lock)"
        },
        usermode::syscall_entry_address()
    );

    if test {
        selftest::before_smp(lock);
    }

    let report = smp::start_aps(acpi, ap_main);
    for f in report.failures.iter().flatten() {
        println!(
            "smp: cpu {} (apic id {}) did not start, reached stage {}",
            f.cpu, f.apic_id, f.stage
        );
    }
    println!("cpus online: {}", report.online);
    if report.failure_count > 0 {
        fail(format_args!(
            "{} core(s) did not start",
            report.failure_count
        ));
    }
    let cores = cmdline.cores(report.online, MAX_CPUS);
    if report.online > MAX_CPUS {
        println!("boot: the kernel is built for {MAX_CPUS} cores; cores {MAX_CPUS}.. stay parked");
    }
    if cores < report.online.min(MAX_CPUS) {
        println!("boot: cpus={cores} on the command line: cores {cores}.. stay parked");
    }
    KERNEL_CORES.store(cores, Ordering::Release);
    println!("lock: {} ({})", lock.name(), lock.describe());
    let cfg = match cmdline.on_cores(cores) {
        Ok(cfg) => cfg,
        Err(e) => fail(format_args!("{e}")),
    };
    if cfg.bench.is_some() {
        BENCH_MODE.store(true, Ordering::Release);
    }
    if test {
        selftest::after_smp(&cfg, report.expected);
    }

    image_common::strategy::boot_with(lock, cfg, system::Image)
}

/// An application processor: sets up `syscall`, waits (asleep) until the root task releases the
/// cores, then schedules.
fn ap_main(cpu: CpuIndex) -> ! {
    usermode::init_cpu();
    hal_x86::cpu::disable_interrupts();
    while !RELEASED.load(Ordering::Acquire) {
        // Sleep until an interrupt: the release IPI, or one of the root task's Reschedule IPIs
        // (the kernel sees those when the core enters it below). `sti; hlt` is atomic (the
        // `sti` shadow), so an IPI arriving after the check still ends the `hlt`.
        // SAFETY: the IDT is loaded; interrupts before `usermode::run` just return here.
        unsafe { core::arch::asm!("sti", "hlt", "cli", options(nomem, nostack)) };
    }
    if cpu >= KERNEL_CORES.load(Ordering::Acquire) {
        hal_x86::cpu::halt_forever();
    }
    if !BENCH_MODE.load(Ordering::Acquire) {
        X86Hal::timer_start(TIMER_HZ);
    }
    usermode::USER.run()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    hal_x86::panic_report(info)
}
