//! Serial console: the i.MX6 UART (sabrelite UART1) or the PL011 (virt), and the
//! [`print!`](crate::print) / [`println!`](crate::println) macros.
//!
//! The locking, line handling and fault-path printing are [`hal_common::console`], shared with
//! x86-64: one spin lock serialises whole `println!` calls, taken with IRQs masked, and
//! [`emergency_print`] breaks a lock held too long. The lock uses LDREX/STREX, which need the
//! MMU and caches on (see [`boot`](crate::boot)): until core 0 has enabled them, [`print`]
//! writes without the lock (only core 0 runs then).
//!
//! Writes wait (boundedly) for room in the transmit FIFO; a UART write is a store to Device
//! memory, which the CPU keeps in program order with other Device accesses, so no barrier is
//! needed between the status read and the data write.

use hal_common::console::{Console, SerialOut};

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::{ReadOnly, ReadWrite, WriteOnly};
use tock_registers::{register_bitfields, register_structs};

use crate::machine::Machine;

register_bitfields![u32,
    /// i.MX UART Control Register 1.
    UCR1 [
        /// UART enable.
        UARTEN OFFSET(0) NUMBITS(1) []
    ],
    /// i.MX UART Control Register 2.
    UCR2 [
        /// Software reset, active low: 1 = not in reset.
        SRST OFFSET(0) NUMBITS(1) [],
        /// Receiver enable.
        RXEN OFFSET(1) NUMBITS(1) [],
        /// Transmitter enable.
        TXEN OFFSET(2) NUMBITS(1) [],
        /// Word size: 1 = 8 bits.
        WS OFFSET(5) NUMBITS(1) [],
        /// Ignore the RTS pin.
        IRTS OFFSET(14) NUMBITS(1) []
    ],
    /// i.MX UART Control Register 3.
    UCR3 [
        /// RXD muxed input select: must be 1 on the i.MX6.
        RXDMUXSEL OFFSET(2) NUMBITS(1) []
    ],
    /// i.MX UART Test Register.
    UTS [
        /// Transmit FIFO full.
        TXFULL OFFSET(4) NUMBITS(1) []
    ],
    /// PL011 flag register.
    UARTFR [
        /// Busy transmitting.
        BUSY OFFSET(3) NUMBITS(1) [],
        /// Transmit FIFO full.
        TXFF OFFSET(5) NUMBITS(1) []
    ],
    /// PL011 line control.
    UARTLCR_H [
        /// FIFO enable.
        FEN OFFSET(4) NUMBITS(1) [],
        /// Word length: 0b11 = 8 bits.
        WLEN OFFSET(5) NUMBITS(2) []
    ],
    /// PL011 control.
    UARTCR [
        /// UART enable.
        UARTEN OFFSET(0) NUMBITS(1) [],
        /// Transmit enable.
        TXE OFFSET(8) NUMBITS(1) [],
        /// Receive enable.
        RXE OFFSET(9) NUMBITS(1) []
    ]
];

register_structs! {
    /// i.MX6 UART registers (i.MX6DQ reference manual, chapter 64).
    pub ImxUartRegs {
        (0x00 => urxd: ReadOnly<u32>),
        (0x04 => _reserved0),
        (0x40 => utxd: WriteOnly<u32>),
        (0x44 => _reserved1),
        (0x80 => ucr1: ReadWrite<u32, UCR1::Register>),
        (0x84 => ucr2: ReadWrite<u32, UCR2::Register>),
        (0x88 => ucr3: ReadWrite<u32, UCR3::Register>),
        (0x8C => ucr4: ReadWrite<u32>),
        (0x90 => ufcr: ReadWrite<u32>),
        (0x94 => usr1: ReadWrite<u32>),
        (0x98 => usr2: ReadWrite<u32>),
        (0x9C => _reserved2),
        (0xB4 => uts: ReadWrite<u32, UTS::Register>),
        (0xB8 => @END),
    }
}

register_structs! {
    /// ARM PrimeCell PL011 registers (PL011 TRM, 3.2).
    pub Pl011Regs {
        (0x00 => dr: ReadWrite<u32>),
        (0x04 => rsr: ReadWrite<u32>),
        (0x08 => _reserved0),
        (0x18 => fr: ReadOnly<u32, UARTFR::Register>),
        (0x1C => _reserved1),
        (0x24 => ibrd: ReadWrite<u32>),
        (0x28 => fbrd: ReadWrite<u32>),
        (0x2C => lcr_h: ReadWrite<u32, UARTLCR_H::Register>),
        (0x30 => cr: ReadWrite<u32, UARTCR::Register>),
        (0x34 => ifls: ReadWrite<u32>),
        (0x38 => imsc: ReadWrite<u32>),
        (0x3C => _reserved2),
        (0x44 => icr: WriteOnly<u32>),
        (0x48 => @END),
    }
}

/// How many status polls a byte may wait for FIFO room before it is written anyway: a broken
/// or absent UART must not hang the kernel.
const MAX_SPINS: u32 = 100_000;

/// The console UART (by base address: the register blocks' cells are not `Sync`, and the
/// console lock is what serialises access).
pub enum Uart {
    /// Not initialised yet: output is dropped.
    None,
    /// i.MX6 UART at this address.
    Imx(usize),
    /// PL011 at this address.
    Pl011(usize),
}

fn imx(base: usize) -> &'static ImxUartRegs {
    // SAFETY: `Uart::Imx` is only built by `Uart::new` with the machine's UART address, which
    // the caller of `new` guaranteed to be mapped and ours.
    unsafe { &*(base as *const ImxUartRegs) }
}

fn pl011(base: usize) -> &'static Pl011Regs {
    // SAFETY: as for `imx`.
    unsafe { &*(base as *const Pl011Regs) }
}

impl Uart {
    /// Sets up the UART of `machine`.
    ///
    /// # Safety
    /// The machine's UART must be at [`Machine::uart_base`], mapped as Device memory (or the
    /// MMU off), and not driven by anything else.
    pub unsafe fn new(machine: Machine) -> Uart {
        // `imx`/`pl011` below (and every later access through the returned handle) rely on
        // this function's contract.
        match machine {
            Machine::Sabrelite => {
                let r = imx(machine.uart_base());
                // Enable the UART and its transmitter and receiver, 8N1. The baud rate stays
                // as the boot loader set it (QEMU ignores it): the real board's U-Boot
                // programs UFCR/UBIR/UBMR for 115200.
                r.ucr1.write(UCR1::UARTEN::SET);
                r.ucr2.write(
                    UCR2::SRST::SET
                        + UCR2::RXEN::SET
                        + UCR2::TXEN::SET
                        + UCR2::WS::SET
                        + UCR2::IRTS::SET,
                );
                r.ucr3.write(UCR3::RXDMUXSEL::SET);
                Uart::Imx(machine.uart_base())
            }
            Machine::Virt => {
                let r = pl011(machine.uart_base());
                // Disable, set 8N1 with FIFOs, mask and clear interrupts, enable TX and RX.
                // QEMU's PL011 ignores the divisors; 0x1a/0x3 would be 115200 at 48 MHz.
                r.cr.set(0);
                r.lcr_h
                    .write(UARTLCR_H::WLEN.val(0b11) + UARTLCR_H::FEN::SET);
                r.imsc.set(0);
                r.icr.set(0x7FF);
                r.cr.write(UARTCR::UARTEN::SET + UARTCR::TXE::SET + UARTCR::RXE::SET);
                Uart::Pl011(machine.uart_base())
            }
        }
    }

    /// Sends one byte, waiting (boundedly) for room in the transmit FIFO.
    pub fn write_byte(&mut self, byte: u8) {
        match self {
            Uart::None => {}
            Uart::Imx(base) => {
                let r = imx(*base);
                let mut spins = 0;
                while r.uts.is_set(UTS::TXFULL) && spins < MAX_SPINS {
                    spins += 1;
                    core::hint::spin_loop();
                }
                r.utxd.set(u32::from(byte));
            }
            Uart::Pl011(base) => {
                let r = pl011(*base);
                let mut spins = 0;
                while r.fr.is_set(UARTFR::TXFF) && spins < MAX_SPINS {
                    spins += 1;
                    core::hint::spin_loop();
                }
                r.dr.set(u32::from(byte));
            }
        }
    }
}

impl SerialOut for Uart {
    fn write_byte(&mut self, byte: u8) {
        Uart::write_byte(self, byte);
    }
}

static CONSOLE: Console<Uart, crate::ArmHal> = Console::new(Uart::None);

/// Initialises the console UART of `machine`. Called once by core 0, before the MMU is on.
///
/// # Safety
/// Core 0 only, once, while no other core runs, with IRQs masked.
pub(crate) unsafe fn init_early(machine: Machine) {
    // SAFETY: the UART of the detected machine; the MMU is off, so it is accessed as
    // Strongly-ordered memory. Only core 0 runs, IRQs masked, locking not enabled yet.
    unsafe { CONSOLE.with_unlocked(|u| *u = Uart::new(machine)) };
}

/// Moves the console to the UART [`Machine::uart_base`] names now (after
/// [`use_uart2_console`](crate::machine::use_uart2_console)): sets it up and prints through it
/// from then on.
///
/// # Safety
/// Core 0 only, during boot, before any other core runs.
pub(crate) unsafe fn reselect(machine: Machine) {
    // SAFETY: the machine's (new) console UART, in the device window the MMU maps as Device
    // memory; only core 0 runs.
    let uart = unsafe { Uart::new(machine) };
    CONSOLE.replace(uart);
}

/// Switches the console to the locked UART: called by core 0 once its MMU and caches are on
/// (LDREX/STREX then work on the lock word).
///
/// # Safety
/// Core 0 only, once, before any other core runs.
pub(crate) unsafe fn enable_locking() {
    CONSOLE.enable_locking();
}

hal_common::console_functions!(CONSOLE);

/// Prints to the serial console, like `std::print!`; safe to call from any core.
#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::console::print(format_args!($($arg)*)) };
}

/// Prints a line to the serial console, like `std::println!`; safe to call from any core.
#[macro_export]
macro_rules! println {
    () => { $crate::print!("\n") };
    ($($arg:tt)*) => { $crate::console::print(format_args!("{}\n", format_args!($($arg)*))) };
}
