//! The image's debug calls: console output, "done" reports, shutdown. They are not kernel
//! objects or capabilities: the x86 HAL passes numbers from `0x100` up to the image, which
//! serves them without entering the kernel core (like seL4's debug calls).

use core::fmt::{self, Write};

use protocol::console::{Outcome, TestLine};

use crate::image::{debug_nr, info};
use crate::sys::raw;

/// Writes `s` to the console (the image prints whole lines, prefixed with thread and core).
pub fn put_str(s: &str) {
    // Four argument words of `usize` bytes each (32 bytes on x86_64, 16 on ARMv7).
    const W: usize = core::mem::size_of::<usize>();
    for chunk in s.as_bytes().chunks(4 * W) {
        let mut words = [0usize; 4];
        for (i, b) in chunk.iter().enumerate() {
            words[i / W] |= usize::from(*b) << (8 * (i % W));
        }
        raw([
            debug_nr::PUT,
            chunk.len(),
            words[0],
            words[1],
            words[2],
            words[3],
        ]);
    }
}

/// A `fmt::Write` over [`put_str`].
pub struct Console;

impl Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        put_str(s);
        Ok(())
    }
}

/// Prints formatted text (used by [`uprintln!`](crate::uprintln)).
pub fn print(args: fmt::Arguments<'_>) {
    let _ = Console.write_fmt(args);
}

/// Prints a line to the console from a user program.
#[macro_export]
macro_rules! uprintln {
    ($($arg:tt)*) => { $crate::debug::print(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Reports a test result as one test line of the console protocol
/// (`TEST <name> ... ok|FAILED (<detail>)`, see the `protocol` crate).
pub fn test(name: &str, ok: bool, detail: fmt::Arguments<'_>) {
    report(name, if ok { Outcome::Ok } else { Outcome::Failed }, detail);
}

/// Reports a planned test this run cannot do: `TEST <name> ... skipped (<reason>)`.
pub fn skip(name: &str, reason: fmt::Arguments<'_>) {
    report(name, Outcome::Skipped, reason);
}

fn report(name: &str, outcome: Outcome, detail: fmt::Arguments<'_>) {
    print(format_args!(
        "{}\n",
        TestLine {
            name,
            outcome,
            detail
        }
    ));
}

/// Tells the image this program finished its work.
pub fn done() {
    raw([debug_nr::DONE, 0, 0, 0, 0, 0]);
}

/// Root only: stops the machine (success if `ok`).
pub fn exit(ok: bool) {
    raw([debug_nr::EXIT, usize::from(!ok), 0, 0, 0, 0]);
}

/// Root only: lets the other cores start scheduling.
pub fn release_cores() {
    raw([debug_nr::RELEASE, 0, 0, 0, 0, 0]);
}

/// Reports a user panic (the image counts it as a failure).
pub fn panicked() {
    raw([debug_nr::PANIC, 0, 0, 0, 0, 0]);
}

/// `mode=stackoverflow` only: makes the kernel overflow its stack on this core (the machine
/// stops with the overflow report; returns only if the image refused).
pub fn kernel_stack_overflow() {
    raw([debug_nr::KERNEL_STACK_OVERFLOW, 0, 0, 0, 0, 0]);
}

/// A fact from the image (see [`info`](mod@crate::image::info)).
pub fn info(selector: usize) -> usize {
    raw([debug_nr::INFO, selector, 0, 0, 0, 0])[1]
}

/// The calling core.
pub fn cpu() -> usize {
    info(info::CPU)
}

/// Whether the test suite runs.
pub fn test_mode() -> bool {
    info(info::TEST_MODE) != 0
}

/// Hands one benchmark value to the image (see
/// [`debug_nr::BENCH`]): `slot` is a sample index (the value is
/// added to that sample) or a [`param`](crate::image::bench::param). Returns whether the image
/// took it.
pub fn bench_report(record: usize, slot: usize, value: u64) -> bool {
    let r = raw([
        debug_nr::BENCH,
        record,
        slot,
        (value & 0xFFFF_FFFF) as usize,
        (value >> 32) as usize,
        0,
    ]);
    r[0] == 0
}
