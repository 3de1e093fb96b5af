//! The operations every HAL offers its kernel images and boot demos beyond the kernel's `Hal`
//! trait: core identity and counters, clocks, the tick timer, sleeping, the console, the test
//! IPI and the way out of QEMU. Each HAL implements [`ArchHal`] once on its HAL type
//! (`hal_x86::X86Hal`, `hal_armv7::ArmHal`); the boot demos ([`demo`](crate::demo)) and the
//! images' boot, debug calls and self-tests are written once against it.

use core::fmt;

use crate::percpu::{CoreStats, CpuIndex};

/// What only the architecture knows of the calling core, the clocks, the console and the
/// machine's exit. Every operation is callable from any core.
pub trait ArchHal {
    /// Index of the calling core (0 = boot core).
    fn cpu_id() -> CpuIndex;
    /// Cores online.
    fn online_count() -> usize;
    /// Cores the HAL knows (started or tried), once the secondaries were started.
    fn cpu_count() -> usize;
    /// Core `cpu`'s status and counters, `None` beyond the cores the HAL is built for.
    fn core_stats(cpu: CpuIndex) -> Option<&'static CoreStats>;
    /// The kernel's cycle counter.
    fn cycles() -> u64;
    /// Its frequency in Hz.
    fn cycles_hz() -> u64;
    /// Converts a difference of [`cycles`](Self::cycles) to nanoseconds.
    fn cycles_to_ns(delta: u64) -> u64;
    /// Nanoseconds since the kernel was entered.
    fn since_boot_ns() -> u64;
    /// Starts periodic timer interrupts at `hz` on the calling core.
    fn timer_start(hz: u32);
    /// Stops the calling core's timer.
    fn timer_stop();
    /// Unmasks the calling core's interrupts.
    fn enable_interrupts();
    /// Masks the calling core's interrupts.
    fn disable_interrupts();
    /// Sleeps until an interrupt (`hlt`, `wfi`).
    fn wait_for_interrupt();
    /// Called with the calling core's interrupts masked: sleeps until an interrupt is pending,
    /// lets it be taken and returns with interrupts masked again. An interrupt that arrives
    /// after the caller's last check still ends the sleep.
    fn sleep_masked();
    /// Stops the calling core for good.
    fn halt_forever() -> !;
    /// Writes a string to the console.
    fn console_write(s: &str);
    /// Prints formatted text to the console (whole calls never interleave).
    fn print(args: fmt::Arguments<'_>);
    /// Sends the test IPI to core `cpu` (it only counts it, and wakes the core).
    fn send_test_ipi(cpu: CpuIndex);
    /// Whether the CPU offers hardware transactional memory (Intel RTM).
    fn has_rtm() -> bool;
    /// Stops the machine: exits QEMU with the success or failure status (halts on hardware).
    fn exit(success: bool) -> !;

    /// Prints a line (`args` without the newline).
    fn println(args: fmt::Arguments<'_>) {
        Self::print(format_args!("{args}\n"));
    }
    /// Whether core `cpu` is up.
    fn is_online(cpu: CpuIndex) -> bool {
        Self::core_stats(cpu).is_some_and(|s| s.is_online())
    }
    /// IPIs core `cpu` received.
    fn ipis(cpu: CpuIndex) -> u64 {
        Self::core_stats(cpu).map_or(0, |s| s.ipis())
    }
    /// Timer interrupts the calling core has taken.
    fn timer_ticks() -> u64 {
        Self::core_stats(Self::cpu_id()).map_or(0, |s| s.ticks())
    }
}
