//! The boot demos' checks that both architectures share: every core takes timer ticks, core 0
//! sends a test IPI to every other core and waits for its acknowledgement, and the demo ends
//! with one verdict line and QEMU's exit status.
//!
//! The HALs' `boot-demo` binaries print what is particular to the machine (ACPI and I/O APICs,
//! GIC and PSCI) and run their interrupt-controller self-tests; this module does the rest, so
//! the two demos check the same things the same way.

use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::arch::ArchHal;
use crate::percpu::CpuIndex;

/// The tick rate the demos run the timer at.
pub const TIMER_HZ: u32 = 100;

/// How many timer ticks each core waits for: the command line's `ticks=N` (`value`), else 3.
pub fn wanted_ticks(value: Option<&str>) -> u64 {
    value.and_then(|v| v.parse().ok()).unwrap_or(3)
}

/// The fault kind the command line's `fault=KIND` (core 0) or `fault=ap-KIND` (core 1) names
/// in `flag` for core `cpu`, announced on the console; `None` when there is none for it.
pub fn fault_to_trigger<H: ArchHal>(flag: &str, cpu: CpuIndex) -> Option<&str> {
    let (target, kind) = match flag.strip_prefix("ap-") {
        Some(k) => (1, k),
        None => (0, flag),
    };
    if flag.is_empty() || target != cpu {
        return None;
    }
    H::println(format_args!(
        "cpu {cpu}: triggering fault '{kind}' on purpose"
    ));
    Some(kind)
}

/// `yes` or `no`, for the demos' feature lines.
pub fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// Nanoseconds in `cycles` cycles of a `hz` counter.
pub fn cycles_to_ns(cycles: u64, hz: u64) -> u64 {
    (u128::from(cycles) * 1_000_000_000 / u128::from(hz.max(1))) as u64
}

/// Polls `cond` until it holds or `us` microseconds of a `hz` cycle counter (`cycles`)
/// passed; returns whether it held.
pub fn wait_until(
    us: u64,
    hz: u64,
    cycles: impl Fn() -> u64,
    mut cond: impl FnMut() -> bool,
) -> bool {
    let start = cycles();
    let budget = (u128::from(us) * u128::from(hz) / 1_000_000) as u64;
    loop {
        if cond() {
            return true;
        }
        if cycles().wrapping_sub(start) >= budget {
            return cond();
        }
        core::hint::spin_loop();
    }
}

/// The demo's cross-core state for up to `CPUS` cores.
pub struct Demo<const CPUS: usize> {
    ticks_done: AtomicUsize,
    ipi_ack: [AtomicBool; CPUS],
}

impl<const CPUS: usize> Demo<CPUS> {
    /// Nothing done yet.
    pub const fn new() -> Self {
        Self {
            ticks_done: AtomicUsize::new(0),
            ipi_ack: [const { AtomicBool::new(false) }; CPUS],
        }
    }

    /// Prints the failure and exits QEMU with failure.
    pub fn fail<H: ArchHal>(&self, msg: fmt::Arguments<'_>) -> ! {
        H::println(format_args!("boot-demo: FAILED: {msg}"));
        H::exit(false)
    }

    /// Starts the timer, enables interrupts and sleeps until `n` ticks arrived or a timeout
    /// passed; returns the ticks seen. Sleeping rather than spinning matters under TCG, where a
    /// spinning vCPU takes a host core from the others.
    pub fn take_ticks<H: ArchHal>(&self, n: u64) -> u64 {
        H::timer_start(TIMER_HZ);
        H::enable_interrupts();
        let budget_ns = (1_000 + n * 4_000 / u64::from(TIMER_HZ)) * 1_000_000;
        let start = H::cycles();
        while H::timer_ticks() < n
            && cycles_to_ns(H::cycles().wrapping_sub(start), H::cycles_hz()) < budget_ns
        {
            H::wait_for_interrupt();
        }
        H::timer_ticks()
    }

    /// A secondary core's part: takes `ticks` ticks, reports them, then acknowledges every
    /// test IPI it receives. Never returns.
    pub fn secondary<H: ArchHal>(&self, cpu: CpuIndex, ticks: u64) -> ! {
        let got = self.take_ticks::<H>(ticks);
        H::println(format_args!("cpu {cpu}: {got} timer ticks"));
        self.ticks_done.fetch_add(1, Ordering::AcqRel);
        let mut seen = 0;
        loop {
            H::wait_for_interrupt();
            let n = H::ipis(cpu);
            if n > seen {
                seen = n;
                H::println(format_args!("cpu {cpu}: test ipi received (total {n})"));
                if let Some(ack) = self.ipi_ack.get(cpu) {
                    ack.store(true, Ordering::Release);
                }
            }
        }
    }

    /// Core 0's closing checks, after the secondaries were started (`online` cores up, `failed`
    /// that did not start): its own ticks, every secondary's ticks, a test IPI round trip to
    /// every online secondary; then the verdict line and QEMU's exit.
    pub fn finish<H: ArchHal>(&self, ticks: u64, online: usize, failed: usize) -> ! {
        let got = self.take_ticks::<H>(ticks);
        H::println(format_args!("cpu 0: {got} timer ticks"));
        if got < ticks {
            self.fail::<H>(format_args!("cpu 0 took only {got} timer ticks"));
        }
        let secondaries = online.saturating_sub(1);
        let hz = H::cycles_hz();
        if !wait_until(2_000_000, hz, H::cycles, || {
            self.ticks_done.load(Ordering::Acquire) >= secondaries
        }) {
            self.fail::<H>(format_args!(
                "only {} of {secondaries} secondary cpus took their timer ticks",
                self.ticks_done.load(Ordering::Acquire)
            ));
        }
        for cpu in 1..H::cpu_count().min(CPUS) {
            if !H::is_online(cpu) {
                continue;
            }
            let before = H::ipis(cpu);
            let t = H::cycles();
            H::send_test_ipi(cpu);
            let got = wait_until(500_000, hz, H::cycles, || {
                H::ipis(cpu) > before && self.ipi_ack[cpu].load(Ordering::Acquire)
            });
            let us = cycles_to_ns(H::cycles().wrapping_sub(t), hz) / 1_000;
            if !got {
                self.fail::<H>(format_args!("test ipi to cpu {cpu} not received"));
            }
            H::println(format_args!(
                "ipi: cpu 0 -> cpu {cpu} received ({us} us round trip)"
            ));
        }
        if failed > 0 {
            self.fail::<H>(format_args!("{failed} cpu(s) did not start"));
        }
        H::println(format_args!(
            "boot-demo: all checks passed in {} ms since kernel entry",
            H::since_boot_ns() / 1_000_000
        ));
        H::exit(true)
    }
}

impl<const CPUS: usize> Default for Demo<CPUS> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn ticks_default_to_three() {
        assert_eq!(wanted_ticks(Some("7")), 7);
        assert_eq!(wanted_ticks(Some("x")), 3);
        assert_eq!(wanted_ticks(None), 3);
    }

    #[test]
    fn cycles_to_ns_scales_without_overflow() {
        assert_eq!(cycles_to_ns(3_000_000_000, 3_000_000_000), 1_000_000_000);
        assert_eq!(cycles_to_ns(u64::MAX / 2, 1_000_000_000), u64::MAX / 2);
        assert_eq!(
            cycles_to_ns(5, 0),
            5_000_000_000,
            "a zero rate counts as 1 Hz"
        );
    }

    #[test]
    fn wait_until_stops_when_the_condition_holds_or_time_is_up() {
        let now = Cell::new(0u64);
        let clock = || {
            now.set(now.get() + 10);
            now.get()
        };
        // 1 MHz counter, 100 us budget: gives up after about 100 cycles.
        assert!(!wait_until(100, 1_000_000, clock, || false));
        assert!(
            (100..=130).contains(&now.get()),
            "waited {} cycles",
            now.get()
        );
        let polls = Cell::new(0);
        assert!(wait_until(100, 1_000_000, clock, || {
            polls.set(polls.get() + 1);
            polls.get() == 3
        }));
        assert_eq!(polls.get(), 3);
    }
}
