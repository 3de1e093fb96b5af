//! Leaving QEMU with a status code through the `isa-debug-exit` device.
//!
//! Run QEMU with `-device isa-debug-exit,iobase=0xf4,iosize=0x04`. Writing `v` to port 0xF4
//! makes QEMU exit with status `(v << 1) | 1`. A triple fault under `-no-reboot` exits with
//! status 0, and a missing device lets the write fall through, so success must be an odd status
//! that only a deliberate write can produce: [`ExitCode::Success`] = 0x10, status 33.
//! Without the device (real hardware), [`exit_qemu`] halts the core instead.

use crate::cpu::{halt_forever, outl};

/// I/O port of QEMU's `isa-debug-exit` device (as configured by the run recipe).
pub const DEBUG_EXIT_PORT: u16 = 0xF4;

/// The values this HAL writes to the exit device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ExitCode {
    /// Everything checked passed: QEMU exits with status 33.
    Success = 0x10,
    /// A check failed, an exception or a panic happened: QEMU exits with status 35.
    Failure = 0x11,
}

impl ExitCode {
    /// The status the QEMU process exits with.
    pub const fn qemu_status(self) -> i32 {
        ((self as i32) << 1) | 1
    }
}

/// Exits QEMU with `code`; halts this core if the exit device is absent.
pub fn exit_qemu(code: ExitCode) -> ! {
    // SAFETY: port 0xF4 is the debug-exit device under QEMU and unused on PC hardware.
    unsafe { outl(DEBUG_EXIT_PORT, code as u32) };
    halt_forever()
}
