//! The ARMv7 side of the debug calls: what [`image_common::debugcalls`] needs to know of this
//! architecture beyond its HAL (the counter user programs read, the kernel's cycle counter,
//! the fault vectors). The calls themselves, the test counting and the shutdown are written
//! once there; the console, clocks, semihosting exit, release SGIs and fault records are the
//! HAL's (`hal_common::ArchHal`).

use core::fmt::Arguments;

use hal_armv7::usermode;
use image_common::debugcalls::{self, ArchFacts, Counter};
use servers::image::counter as ctr;

use crate::system::{Armv7, System};

impl ArchFacts for Armv7 {
    /// Data abort, undefined instruction, prefetch abort (`bkpt`: ARMv7-A has no division
    /// trap, see `servers::programs::trigger`); a write to a read-only page is a data abort
    /// (permission), the execution of a data page (XN) and a jump into the kernel's
    /// privileged-only sections are prefetch aborts.
    const FAULT_VECTORS: [u64; debugcalls::FAULTERS] = [
        usermode::vector::DATA_ABORT as u64,
        usermode::vector::UNDEFINED as u64,
        usermode::vector::PREFETCH_ABORT as u64,
        usermode::vector::DATA_ABORT as u64,
        usermode::vector::PREFETCH_ABORT as u64,
        usermode::vector::PREFETCH_ABORT as u64,
    ];

    /// PMCCNTR where the HAL enabled it for user mode (benchmark mode on the Cortex-A15, `-M
    /// virt`), else the kernel's counter through the COUNTER debug call (the A9 global timer on
    /// `-M sabrelite`, the generic timer's CNTVCT on `-M virt` outside benchmark mode).
    fn counter() -> Counter {
        if hal_armv7::pmu::user_counter() {
            Counter {
                kind: ctr::PMCCNTR,
                name: "pmccntr",
                hz: hal_armv7::pmu::hz(),
            }
        } else {
            Counter {
                kind: ctr::DEBUGCALL,
                name: "debugcall",
                hz: hal_armv7::timer::cycles_hz(),
            }
        }
    }

    /// The A9 global timer (`-M sabrelite`) or CNTVCT (`-M virt`), which the COUNTER debug call
    /// also reads (hence its name in the benchmark records, `debugcall`).
    fn kernel_counter() -> Counter {
        Counter {
            kind: ctr::DEBUGCALL,
            name: "debugcall",
            hz: hal_armv7::timer::cycles_hz(),
        }
    }

    /// PMCCNTR where [`counter`](ArchFacts::counter) is `pmccntr` (the HAL enabled it, so PL1
    /// reads it without a trap), else the kernel's counter (the A9 global timer, CNTVCT), the
    /// low word.
    #[inline(always)]
    fn read_counter() -> usize {
        if hal_armv7::pmu::user_counter() {
            hal_armv7::pmu::cycles() as usize
        } else {
            hal_armv7::timer::cycles() as usize
        }
    }
}

/// Prints one test line and counts it.
pub fn report(name: &str, ok: bool, detail: Arguments<'_>) {
    debugcalls::report::<System>(name, ok, detail);
}
