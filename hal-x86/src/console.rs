//! COM1 serial console (16550 UART at I/O port 0x3F8) and the [`print!`](crate::print) /
//! [`println!`](crate::println) macros.
//!
//! One spin lock serialises whole `println!` calls, so lines from different cores never
//! interleave. The lock is taken with interrupts disabled on the calling core: an interrupt
//! handler that prints on the same core can then never find the lock held by the code it
//! interrupted. Fault reports use [`emergency_print`], which waits a bounded time for the lock
//! and then takes it by force, so a core that died while printing cannot silence the others.

use core::fmt::{self, Write};

use crate::cpu::{inb, outb, without_interrupts};

/// I/O base of COM1.
pub const COM1: u16 = 0x3F8;

/// A 16550-compatible UART driven through port I/O.
pub struct Uart {
    base: u16,
}

impl Uart {
    /// A UART at I/O base `base` (not yet initialised).
    pub const fn new(base: u16) -> Self {
        Self { base }
    }

    /// Programs 115200 baud, 8N1, FIFOs on, interrupts off.
    pub fn init(&mut self) {
        let b = self.base;
        // SAFETY: standard 16550 register programming of the UART this struct owns.
        unsafe {
            outb(b + 1, 0x00); // IER: no interrupts
            outb(b + 3, 0x80); // LCR: DLAB on
            outb(b, 0x01); // DLL: divisor 1 = 115200 baud
            outb(b + 1, 0x00); // DLM
            outb(b + 3, 0x03); // LCR: 8N1, DLAB off
            outb(b + 2, 0xC7); // FCR: enable + clear FIFOs
            outb(b + 4, 0x03); // MCR: DTR + RTS (OUT2 off: no IRQ line)
        }
    }

    /// Sends one byte, waiting for room in the transmitter.
    pub fn write_byte(&mut self, byte: u8) {
        let b = self.base;
        let mut spins = 0u32;
        // SAFETY: LSR read and THR write of the UART this struct owns.
        unsafe {
            // Bounded wait: a missing UART must not hang the kernel.
            while inb(b + 5) & 0x20 == 0 && spins < 100_000 {
                spins += 1;
                core::hint::spin_loop();
            }
            outb(b, byte);
        }
    }
}

impl Write for Uart {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for byte in s.bytes() {
            if byte == b'\n' {
                self.write_byte(b'\r');
            }
            self.write_byte(byte);
        }
        Ok(())
    }
}

static CONSOLE: spin::Mutex<Uart> = spin::Mutex::new(Uart::new(COM1));

/// Initialises COM1. Called once by the boot code before anything prints.
pub fn init() {
    CONSOLE.lock().init();
}

/// Prints formatted text to the console; used by [`print!`](crate::print).
pub fn print(args: fmt::Arguments<'_>) {
    without_interrupts(|| {
        let _ = CONSOLE.lock().write_fmt(args);
    });
}

/// Writes a string to the console (the `Hal` console operation).
pub fn write_str(s: &str) {
    without_interrupts(|| {
        let _ = CONSOLE.lock().write_str(s);
    });
}

/// Prints from a fault or panic path: waits a bounded time for the console lock, then takes it
/// anyway (its holder may be the faulting code itself or a dead core).
pub fn emergency_print(args: fmt::Arguments<'_>) {
    without_interrupts(|| {
        for _ in 0..5_000_000u32 {
            if let Some(mut uart) = CONSOLE.try_lock() {
                let _ = uart.write_fmt(args);
                return;
            }
            core::hint::spin_loop();
        }
        // SAFETY: the holder has not released the lock in a long time: it is this core (fault
        // inside a print) or a stopped core. Breaking the lock may interleave output, which is
        // acceptable for a last report; the UART itself has no state a torn line can corrupt.
        unsafe { CONSOLE.force_unlock() };
        let _ = CONSOLE.lock().write_fmt(args);
    });
}

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
