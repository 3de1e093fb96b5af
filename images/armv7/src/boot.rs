//! The bootstrap processor's main function and the other cores' entry.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hal_armv7::exit::ExitCode;
use hal_armv7::percpu::CpuIndex;
use hal_armv7::{println, smp, usermode, ArmHal, Platform};
use kernel::config::MAX_CPUS;

use crate::{selftest, system};
use image_common::cmdline::{Cmdline, LockChoice};

hal_armv7::entry_point!(kernel_main);

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
    ArmHal::exit(ExitCode::Failure)
}

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
    let cmdline = match Cmdline::parse(|k| p.cmdline_value(k)) {
        Ok(c) => c,
        Err(e) => fail(format_args!("{e}")),
    };
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
    if lock == LockChoice::Rtm {
        // ARMv7-A has no transactional memory: `kernel_locks::Rtm` detects that at run time and always
        // takes its fallback lock.
        println!(
            "lock: {} ({}; no RTM on ARMv7-A: every critical section falls back to the CLH lock)",
            lock.name(),
            lock.describe()
        );
    } else {
        println!("lock: {} ({})", lock.name(), lock.describe());
    }
    let cfg = match cmdline.on_cores(cores) {
        Ok(cfg) => cfg,
        Err(e) => fail(format_args!("{e}")),
    };
    if cfg.bench.is_some() {
        // The user-readable cycle counter where the core has one (virt); the other cores
        // enable theirs when released (`ap_main`).
        hal_armv7::pmu::enable();
        BENCH_MODE.store(true, Ordering::Release);
    }
    if test {
        selftest::after_smp(&cfg, report.expected);
    }

    image_common::strategy::boot_with(lock, cfg, system::Image)
}

/// A secondary core: waits (asleep) until the root task releases the cores, then schedules.
fn ap_main(cpu: CpuIndex) -> ! {
    hal_armv7::cpu::disable_interrupts();
    while !RELEASED.load(Ordering::Acquire) {
        // Sleep until an interrupt: the release IPI, or one of the root task's Reschedule IPIs
        // (the kernel sees those when the core enters it below). With IRQs masked, `wfi` still
        // wakes on a pending interrupt, so an SGI arriving after the check ends the wait; it is
        // taken (acknowledged and ended, before `usermode::run`: just counted) when IRQs are
        // unmasked for a moment.
        hal_armv7::cpu::wfi();
        hal_armv7::cpu::enable_interrupts();
        hal_armv7::cpu::disable_interrupts();
    }
    if cpu >= KERNEL_CORES.load(Ordering::Acquire) {
        hal_armv7::cpu::halt_forever();
    }
    if BENCH_MODE.load(Ordering::Acquire) {
        if hal_armv7::pmu::user_counter() {
            hal_armv7::pmu::enable_cpu();
        }
    } else {
        ArmHal::timer_start(TIMER_HZ);
    }
    usermode::USER.run()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    hal_armv7::panic_report(info)
}
