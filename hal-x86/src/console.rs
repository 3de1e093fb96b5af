//! COM1 serial console (16550 UART at I/O port 0x3F8) and the [`print!`](crate::print) /
//! [`println!`](crate::println) macros.
//!
//! The locking, line handling and fault-path printing are [`hal_common::console`], shared with
//! ARMv7: one spin lock serialises whole `println!` calls, taken with interrupts disabled, and
//! [`emergency_print`] breaks a lock held too long.

use hal_common::console::{Console, SerialOut};
use uart_16550::SerialPort;

use crate::cpu::outb;

/// I/O base of COM1.
pub const COM1: u16 = 0x3F8;

/// A 16550-compatible UART driven through port I/O: the `uart_16550` crate's driver, with two
/// things of the console's own. The wait for room in the transmitter is bounded (the crate's
/// `send` waits forever, and a missing UART must not hang the kernel), and the receive
/// interrupt the crate's `init` enables is switched off again (the console polls; the kernel
/// keeps COM1's line masked).
pub struct Uart {
    base: u16,
    port: SerialPort,
}

impl Uart {
    /// A UART at I/O base `base` (not yet initialised).
    ///
    /// # Safety
    /// `base` must be a 16550's I/O base that nothing else drives.
    pub const unsafe fn new(base: u16) -> Self {
        Self {
            base,
            // SAFETY: forwarded contract.
            port: unsafe { SerialPort::new(base) },
        }
    }

    /// Programs 38400 baud, 8N1, FIFOs on (the crate's defaults), interrupts off.
    pub fn init(&mut self) {
        self.port.init();
        // SAFETY: IER of the UART this struct owns: no interrupts.
        unsafe { outb(self.base + 1, 0x00) };
    }

    /// Sends one byte, waiting a bounded time for room in the transmitter (the byte is dropped
    /// if the UART never becomes ready).
    pub fn write_byte(&mut self, byte: u8) {
        for _ in 0..100_000u32 {
            if self.port.try_send_raw(byte).is_ok() {
                return;
            }
            core::hint::spin_loop();
        }
    }
}

impl SerialOut for Uart {
    fn write_byte(&mut self, byte: u8) {
        Uart::write_byte(self, byte);
    }
}

// SAFETY: COM1 is the PC's first serial port; this console is its only driver.
static CONSOLE: Console<Uart, crate::X86Hal> = Console::new(unsafe { Uart::new(COM1) });

/// Initialises COM1. Called once by the boot code before anything prints; from then on every
/// print takes the console lock.
pub fn init() {
    // SAFETY: the boot code calls this once on the bootstrap processor, with interrupts off,
    // before any other core runs.
    unsafe { CONSOLE.with_unlocked(Uart::init) };
    CONSOLE.enable_locking();
}

hal_common::console_functions!(CONSOLE);

/// Prints to the serial console, like `std::print!`; safe to call from any core.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::console::print(format_args!($($arg)*)) };
}

/// Prints a line to the serial console, like `std::println!`; safe to call from any core (whole
/// lines never interleave).
#[macro_export]
macro_rules! println {
    () => { $crate::console::print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::console::print(format_args!("{}\n", format_args!($($arg)*))) };
}
