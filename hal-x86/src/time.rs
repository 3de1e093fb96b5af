//! Time: TSC and local APIC timer calibration, delays.
//!
//! The TSC and the APIC timer tick at rates the HAL must measure against a clock of known
//! frequency. The choice has to work on QEMU's `microvm` as well as on `q35`/`pc`:
//!
//! * `microvm` has no port 0x61, so the classic "PIT channel 2 gate" method is out; its ACPI is
//!   hardware-reduced, so it has no ACPI PM timer either; it does have an i8254 PIT (`pit=on`
//!   by default under TCG) whose channel 0 can be *polled* (latch + read), no IRQ and no port
//!   0x61 needed.
//! * `q35`/`pc` have the ACPI PM timer (FADT) and the PIT.
//! * Real Intel CPUs since Skylake describe the TSC exactly in CPUID leaf 0x15 (QEMU TCG does not).
//!
//! Order tried: CPUID 0x15 (if it gives the crystal frequency) -> ACPI PM timer -> polled PIT
//! channel 0 -> CPUID 0x16 base frequency. The command line can force one (`clock=pm`,
//! `clock=pit`) to test each path. With the reference chosen, the TSC and the APIC timer
//! (divide by 16) are measured together over a 10 ms window.

use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use crate::acpi::{AcpiInfo, PM_TIMER_HZ};
use crate::cpu::{cpuid, inb, inl, outb, rdtsc};

/// The reference the HAL calibrated against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockSource {
    /// CPUID leaf 0x15 (TSC / crystal ratio and crystal frequency): exact.
    Cpuid15,
    /// ACPI PM timer (3.579545 MHz).
    PmTimer,
    /// i8254 PIT channel 0, polled (1.193182 MHz).
    Pit,
    /// CPUID leaf 0x16 nominal base frequency (APIC timer measured against the TSC).
    Cpuid16,
    /// Nothing worked: 1 GHz assumed (reported as a warning).
    Assumed,
}

impl ClockSource {
    /// A short name for the boot log.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cpuid15 => "cpuid-0x15",
            Self::PmTimer => "acpi-pm-timer",
            Self::Pit => "pit-ch0-polled",
            Self::Cpuid16 => "cpuid-0x16",
            Self::Assumed => "assumed-1GHz",
        }
    }

    fn from_u8(v: u8) -> Self {
        match v {
            0 => Self::Cpuid15,
            1 => Self::PmTimer,
            2 => Self::Pit,
            3 => Self::Cpuid16,
            _ => Self::Assumed,
        }
    }
}

static TSC_HZ: AtomicU64 = AtomicU64::new(1_000_000_000);
static APIC_HZ: AtomicU64 = AtomicU64::new(62_500_000);
static SOURCE: AtomicU8 = AtomicU8::new(4);
static BOOT_TSC: AtomicU64 = AtomicU64::new(0);

const PIT_HZ: u64 = 1_193_182;
const WINDOW_US: u64 = 10_000;

/// TSC frequency in Hz (valid after calibration).
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// Local APIC timer frequency in Hz, divide-by-16 setting (valid after calibration).
pub fn apic_timer_hz() -> u64 {
    APIC_HZ.load(Ordering::Relaxed)
}

/// The reference used for calibration.
pub fn clock_source() -> ClockSource {
    ClockSource::from_u8(SOURCE.load(Ordering::Relaxed))
}

/// Reads the TSC (the `Hal` cycle counter).
#[inline]
pub fn cycles() -> u64 {
    rdtsc()
}

/// Records the boot TSC value (first Rust instruction of the bootstrap processor).
pub(crate) fn mark_boot() {
    BOOT_TSC.store(rdtsc(), Ordering::Relaxed);
}

/// Nanoseconds since the bootstrap processor entered Rust.
pub fn since_boot_ns() -> u64 {
    tsc_to_ns(rdtsc().wrapping_sub(BOOT_TSC.load(Ordering::Relaxed)))
}

/// Converts a TSC delta to nanoseconds.
pub fn tsc_to_ns(delta: u64) -> u64 {
    (u128::from(delta) * 1_000_000_000 / u128::from(tsc_hz().max(1))) as u64
}

/// The cycle counter's frequency under the name every HAL's clock gives it
/// ([`hal_common::arch_hal_forwards!`]): the TSC's.
pub use tsc_hz as cycles_hz;
/// [`tsc_to_ns`] under the name every HAL's clock gives it.
pub use tsc_to_ns as cycles_to_ns;

/// Busy-waits at least `us` microseconds (TSC based).
pub fn delay_us(us: u64) {
    let start = rdtsc();
    let ticks = (u128::from(us) * u128::from(tsc_hz()) / 1_000_000) as u64;
    while rdtsc().wrapping_sub(start) < ticks {
        core::hint::spin_loop();
    }
}

/// Waits until `cond` holds or `us` microseconds passed; returns whether `cond` held.
pub fn wait_until(us: u64, cond: impl FnMut() -> bool) -> bool {
    hal_common::demo::wait_until(us, tsc_hz(), rdtsc, cond)
}

/// Measures TSC and APIC timer ticks while `elapsed()` (reference ticks since its first call)
/// reaches `window`; returns `(tsc_delta, apic_delta, reference_delta)`, or `None` if the
/// reference does not move.
fn measure(window: u64, mut elapsed: impl FnMut() -> u64) -> Option<(u64, u64, u64)> {
    crate::apic::timer_start_calibration();
    let apic0 = crate::apic::timer_current();
    let tsc0 = rdtsc();
    let _ = elapsed();
    let mut polls = 0u64;
    let mut e;
    loop {
        e = elapsed();
        if e >= window {
            break;
        }
        polls += 1;
        if e == 0 && polls > 2_000_000 {
            return None;
        }
    }
    let tsc1 = rdtsc();
    let apic1 = crate::apic::timer_current();
    crate::apic::timer_stop();
    Some((tsc1 - tsc0, u64::from(apic0 - apic1), e))
}

fn pm_timer_elapsed(port: u16, ext32: bool) -> impl FnMut() -> u64 {
    let mask: u32 = if ext32 { u32::MAX } else { 0x00FF_FFFF };
    let mut last: Option<u32> = None;
    let mut total = 0u64;
    move || {
        // SAFETY: the FADT names this port as the PM timer counter; reading it has no effects.
        let now = unsafe { inl(port) } & mask;
        if let Some(l) = last {
            total += u64::from(now.wrapping_sub(l) & mask);
        }
        last = Some(now);
        total
    }
}

fn pit_elapsed() -> impl FnMut() -> u64 {
    // SAFETY: programs PIT channel 0 (ports 0x40/0x43) as a free-running mode-2 counter with
    // reload 65536; its IRQ 0 stays masked at the PIC / I/O APIC, so only reads observe it.
    unsafe {
        outb(0x43, 0x34);
        outb(0x40, 0);
        outb(0x40, 0);
    }
    let mut last: Option<u16> = None;
    let mut total = 0u64;
    move || {
        // SAFETY: latch and read channel 0 (counter latch command, then low and high byte).
        let now = unsafe {
            outb(0x43, 0x00);
            let lo = inb(0x40);
            let hi = inb(0x40);
            u16::from_le_bytes([lo, hi])
        };
        if let Some(l) = last {
            // The counter counts down.
            total += u64::from(l.wrapping_sub(now));
        }
        last = Some(now);
        total
    }
}

/// Calibrates the TSC and the APIC timer on the calling core (the bootstrap processor, with its
/// APIC enabled). `force` names a source from the command line (`"pm"`, `"pit"`).
pub(crate) fn calibrate(acpi: Option<&AcpiInfo>, force: Option<&str>) -> ClockSource {
    let store = |tsc: u64, apic: u64, src: ClockSource| {
        TSC_HZ.store(tsc, Ordering::Relaxed);
        APIC_HZ.store(apic, Ordering::Relaxed);
        SOURCE.store(src as u8, Ordering::Relaxed);
        src
    };
    let scale = |delta: u64, ref_hz: u64, ref_delta: u64| {
        (u128::from(delta) * u128::from(ref_hz) / u128::from(ref_delta.max(1))) as u64
    };

    let max_leaf = cpuid(0, 0).eax;
    if force.is_none() && max_leaf >= 0x15 {
        let l = cpuid(0x15, 0);
        if l.eax != 0 && l.ebx != 0 && l.ecx != 0 {
            let tsc = u64::from(l.ecx) * u64::from(l.ebx) / u64::from(l.eax);
            TSC_HZ.store(tsc, Ordering::Relaxed);
            let window = tsc / 100;
            let start = rdtsc();
            if let Some((_, apic, t)) = measure(window, || rdtsc() - start) {
                return store(tsc, scale(apic, tsc, t), ClockSource::Cpuid15);
            }
        }
    }
    if let Some(pm) = acpi.and_then(|a| a.pm_timer) {
        if force.is_none() || force == Some("pm") {
            let window = PM_TIMER_HZ * WINDOW_US / 1_000_000;
            if let Some((tsc, apic, r)) = measure(window, pm_timer_elapsed(pm.port, pm.ext32)) {
                return store(
                    scale(tsc, PM_TIMER_HZ, r),
                    scale(apic, PM_TIMER_HZ, r),
                    ClockSource::PmTimer,
                );
            }
        }
    }
    if force.is_none() || force == Some("pit") {
        let window = PIT_HZ * WINDOW_US / 1_000_000;
        if let Some((tsc, apic, r)) = measure(window, pit_elapsed()) {
            return store(
                scale(tsc, PIT_HZ, r),
                scale(apic, PIT_HZ, r),
                ClockSource::Pit,
            );
        }
    }
    if max_leaf >= 0x16 {
        let mhz = u64::from(cpuid(0x16, 0).eax & 0xFFFF);
        if mhz != 0 {
            let tsc = mhz * 1_000_000;
            TSC_HZ.store(tsc, Ordering::Relaxed);
            let start = rdtsc();
            if let Some((_, apic, t)) = measure(tsc / 100, || rdtsc() - start) {
                return store(tsc, scale(apic, tsc, t), ClockSource::Cpuid16);
            }
        }
    }
    store(1_000_000_000, 62_500_000, ClockSource::Assumed)
}
