//! The x86_64 side of the debug calls: what [`image_common::debugcalls`] needs to know of this
//! architecture beyond its HAL (the counters, the TSC, and the fault vectors). The calls
//! themselves, the test counting and the shutdown are written once there; the console, clocks,
//! exit, release IPIs and fault records are the HAL's (`hal_common::ArchHal`).

use core::fmt::Arguments;

use image_common::debugcalls::{self, ArchFacts, Counter};
use servers::image::counter as ctr;

use crate::system::{System, X86};

impl ArchFacts for X86 {
    /// Page fault, invalid opcode, divide error; a write to a read-only page, the execution of
    /// a data page (NX) and a jump into the kernel half (a supervisor page) are page faults.
    const FAULT_VECTORS: [u64; debugcalls::FAULTERS] = [14, 6, 0, 14, 14, 14];

    /// The TSC, readable in user mode on every x86_64 CPU this image runs on.
    fn counter() -> Counter {
        Counter {
            kind: ctr::TSC,
            name: "tsc",
            hz: hal_x86::time::tsc_hz(),
        }
    }

    /// The TSC (the HAL's `cycles` and `trace_cycles`).
    fn kernel_counter() -> Counter {
        Self::counter()
    }

    /// `rdtsc`.
    #[inline(always)]
    fn read_counter() -> usize {
        hal_x86::time::cycles() as usize
    }
}

/// Prints one test line and counts it.
pub fn report(name: &str, ok: bool, detail: Arguments<'_>) {
    debugcalls::report::<System>(name, ok, detail);
}
