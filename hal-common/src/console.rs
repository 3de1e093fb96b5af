//! The serial console both HALs print through: whole lines under one lock, `\n` sent as
//! `\r\n`, and a fault path that cannot be silenced by a dead lock holder.
//!
//! One spin lock serialises whole `print!` calls, so lines from different cores never
//! interleave. The lock is taken with interrupts disabled on the calling core: an interrupt
//! handler that prints on the same core can then never find the lock held by the code it
//! interrupted. Fault reports use [`Console::emergency_print`], which waits a bounded time for
//! the lock and then takes it by force, so a core that died while printing cannot silence the
//! others.
//!
//! Before [`Console::enable_locking`] the console is used without its lock: on ARMv7 the lock
//! word needs the MMU and caches on (LDREX/STREX to Strongly-ordered memory are not reliable),
//! and only the boot core runs then. The architecture supplies the UART ([`SerialOut`]) and
//! how to mask interrupts ([`IrqMask`]).

use core::fmt::{self, Write};
use core::marker::PhantomData;
use core::sync::atomic::{AtomicBool, Ordering};

use spin::mutex::SpinMutex;

/// A UART's transmitter: sends one byte, waiting a bounded time for room (a missing or stuck
/// UART must not hang the kernel; the byte is dropped then).
pub trait SerialOut {
    /// Sends `byte`.
    fn write_byte(&mut self, byte: u8);
}

/// How the calling core masks its interrupts around a section.
pub trait IrqMask {
    /// Runs `f` with the calling core's interrupts masked, restoring the previous state after.
    fn without_interrupts<R>(f: impl FnOnce() -> R) -> R;
}

/// The calling core's interrupt mask: what a HAL states to get [`IrqMask`].
pub trait IrqState {
    /// Whether the calling core takes interrupts.
    fn interrupts_enabled() -> bool;
    /// Masks the calling core's interrupts.
    fn disable_interrupts();
    /// Unmasks the calling core's interrupts.
    fn enable_interrupts();
}

impl<T: IrqState> IrqMask for T {
    #[inline]
    fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
        let was = T::interrupts_enabled();
        if was {
            T::disable_interrupts();
        }
        let r = f();
        if was {
            T::enable_interrupts();
        }
        r
    }
}

/// Text written as a terminal wants lines: every `\n` is sent as `\r\n`.
pub struct Lines<'a, U: ?Sized>(pub &'a mut U);

impl<U: SerialOut + ?Sized> Write for Lines<'_, U> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for byte in s.bytes() {
            if byte == b'\n' {
                self.0.write_byte(b'\r');
            }
            self.0.write_byte(byte);
        }
        Ok(())
    }
}

/// How many times [`Console::emergency_print`] tries the lock before it breaks it.
const EMERGENCY_TRIES: u32 = 5_000_000;

/// The console: one UART behind a spin lock.
pub struct Console<U, I> {
    uart: SpinMutex<U>,
    locking: AtomicBool,
    _irq: PhantomData<fn() -> I>,
}

impl<U: SerialOut, I: IrqMask> Console<U, I> {
    /// A console on `uart`, used without its lock until [`enable_locking`](Self::enable_locking).
    pub const fn new(uart: U) -> Self {
        Self {
            uart: SpinMutex::new(uart),
            locking: AtomicBool::new(false),
            _irq: PhantomData,
        }
    }

    /// Runs `f` on the UART before locking is enabled (set-up, early output).
    ///
    /// # Safety
    /// Only the boot core runs, with interrupts masked, and locking is not enabled yet.
    pub unsafe fn with_unlocked<R>(&self, f: impl FnOnce(&mut U) -> R) -> R {
        // SAFETY: per the contract nothing else touches the UART now; `as_mut_ptr` makes no
        // reference to the lock word.
        f(unsafe { &mut *self.uart.as_mut_ptr() })
    }

    /// From now on every print takes the lock. Called once by the boot core, before any other
    /// core runs (and, on ARMv7, once its MMU and caches are on).
    pub fn enable_locking(&self) {
        self.locking.store(true, Ordering::Release);
    }

    /// Replaces the UART (a console moved to another port during boot).
    pub fn replace(&self, uart: U) {
        self.with_uart(|u| *u = uart);
    }

    fn with_uart<R>(&self, f: impl FnOnce(&mut U) -> R) -> R {
        if self.locking.load(Ordering::Acquire) {
            I::without_interrupts(|| f(&mut self.uart.lock()))
        } else {
            // SAFETY: before `enable_locking` only the boot core runs, with interrupts masked
            // (the contract of `with_unlocked`, which the HAL's early boot code keeps).
            unsafe { self.with_unlocked(f) }
        }
    }

    /// Prints formatted text (whole, not interleaved with another core's).
    pub fn print(&self, args: fmt::Arguments<'_>) {
        self.with_uart(|u| {
            let _ = Lines(u).write_fmt(args);
        });
    }

    /// Writes a string.
    pub fn write_str(&self, s: &str) {
        self.with_uart(|u| {
            let _ = Lines(u).write_str(s);
        });
    }

    /// Prints from a fault or panic path: waits a bounded time for the lock, then takes it
    /// anyway (its holder may be the faulting code itself or a dead core).
    pub fn emergency_print(&self, args: fmt::Arguments<'_>) {
        if !self.locking.load(Ordering::Acquire) {
            self.print(args);
            return;
        }
        I::without_interrupts(|| {
            for _ in 0..EMERGENCY_TRIES {
                if let Some(mut uart) = self.uart.try_lock() {
                    let _ = Lines(&mut *uart).write_fmt(args);
                    return;
                }
                core::hint::spin_loop();
            }
            // SAFETY: the holder has not released the lock in a long time: it is this core
            // (a fault inside a print) or a stopped core. Breaking the lock may interleave
            // output, which is acceptable for a last report; a UART has no state a torn line
            // can corrupt.
            unsafe { self.uart.force_unlock() };
            let _ = Lines(&mut *self.uart.lock()).write_fmt(args);
        });
    }
}

/// Defines a HAL's console functions over its [`Console`] static `$console`: `print` (behind
/// the HAL's `print!` and `println!`), `write_str` (the `Hal` console operation) and
/// `emergency_print` (fault and panic paths).
#[macro_export]
macro_rules! console_functions {
    ($console:path) => {
        /// Prints formatted text to the console; used by `print!` and `println!`.
        pub fn print(args: core::fmt::Arguments<'_>) {
            $console.print(args);
        }

        /// Writes a string to the console (the `Hal` console operation).
        pub fn write_str(s: &str) {
            $console.write_str(s);
        }

        /// Prints from a fault or panic path: waits a bounded time for the console lock, then
        /// takes it anyway (its holder may be the faulting code itself or a dead core).
        pub fn emergency_print(args: core::fmt::Arguments<'_>) {
            $console.emergency_print(args);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Buf(Vec<u8>);
    impl SerialOut for Buf {
        fn write_byte(&mut self, byte: u8) {
            self.0.push(byte);
        }
    }
    struct NoIrq;
    impl IrqMask for NoIrq {
        fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
    }

    fn take(c: &Console<Buf, NoIrq>) -> String {
        // SAFETY: single-threaded test.
        let v = unsafe { c.with_unlocked(|u| core::mem::take(&mut u.0)) };
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn newlines_become_crlf_before_and_after_locking() {
        let c = Console::<Buf, NoIrq>::new(Buf::default());
        c.print(format_args!("a\nb{}\n", 1));
        assert_eq!(take(&c), "a\r\nb1\r\n");
        c.enable_locking();
        c.write_str("x\n");
        c.emergency_print(format_args!("!\n"));
        assert_eq!(take(&c), "x\r\n!\r\n");
    }

    #[test]
    fn emergency_print_breaks_a_lock_held_forever() {
        let c = Console::<Buf, NoIrq>::new(Buf::default());
        c.enable_locking();
        core::mem::forget(c.uart.lock());
        c.emergency_print(format_args!("last words\n"));
        assert_eq!(take(&c), "last words\r\n");
        assert!(!c.uart.is_locked(), "released after the forced print");
    }

    #[test]
    fn lines_from_threads_never_interleave() {
        let c = Console::<Buf, NoIrq>::new(Buf::default());
        c.enable_locking();
        std::thread::scope(|s| {
            for t in 0..4 {
                let c = &c;
                s.spawn(move || {
                    for i in 0..200 {
                        c.print(format_args!("thread {t} line {i} end\n"));
                    }
                });
            }
        });
        let out = take(&c);
        let lines: Vec<&str> = out.split_terminator('\n').collect();
        assert_eq!(lines.len(), 800);
        for l in lines {
            let l = l.strip_suffix('\r').expect("crlf");
            assert!(
                l.starts_with("thread ") && l.ends_with(" end"),
                "torn line {l:?}"
            );
        }
    }
}
