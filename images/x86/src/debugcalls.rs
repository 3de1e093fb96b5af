//! The x86_64 side of the debug calls: what [`image_common::debugcalls`] needs from this
//! architecture (the TSC, `isa-debug-exit`, the release IPIs, the fault records and their
//! vectors). The calls themselves, the test counting and the shutdown are written once there.

use core::fmt::Arguments;

use hal_x86::ArchHal;
use hal_x86::{println, usermode, X86Hal};
use image_common::debugcalls::{self, Counter, DebugArch, FaultFacts};
use kernel::ThreadId;
use servers::abi::counter as ctr;

use crate::system::X86;

impl DebugArch for X86 {
    type Fault = usermode::FaultInfo;
    /// Page fault, invalid opcode, divide error; a write to a read-only page, the execution of
    /// a data page (NX) and a jump into the kernel half (a supervisor page) are page faults.
    const FAULT_VECTORS: [u64; debugcalls::FAULTERS] = [14, 6, 0, 14, 14, 14];

    fn println(args: Arguments<'_>) {
        println!("{args}");
    }

    fn cycles() -> u64 {
        hal_x86::time::cycles()
    }

    fn cycles_to_ns(delta: u64) -> u64 {
        hal_x86::time::tsc_to_ns(delta)
    }

    fn since_boot_ns() -> u64 {
        hal_x86::time::since_boot_ns()
    }

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

    fn exit(success: bool) -> ! {
        <X86Hal as ArchHal>::exit(success)
    }

    fn halt_forever() -> ! {
        hal_x86::cpu::halt_forever()
    }

    fn release_cores(cores: usize) {
        image_common::boot::release_cores::<X86Hal>(cores);
    }

    fn fault_record(t: ThreadId) -> Option<usermode::FaultInfo> {
        usermode::USER.fault_record(t)
    }

    fn fault_facts(f: &usermode::FaultInfo) -> FaultFacts {
        f.into()
    }
}

/// Prints one test line and counts it.
pub fn report(name: &str, ok: bool, detail: Arguments<'_>) {
    debugcalls::report::<X86>(name, ok, detail);
}
