//! Time: the cycle/time source and the per-core tick timer.
//!
//! | machine   | cycle source                                   | tick timer (interrupt ID)        |
//! |-----------|------------------------------------------------|----------------------------------|
//! | sabrelite | A9 global timer, 64-bit, PERIPHBASE + 0x200     | A9 private timer, PPI 29         |
//! | virt      | generic timer virtual counter CNTVCT (CNTFRQ)  | generic virtual timer, PPI 27    |
//!
//! QEMU's Cortex-A9 has neither a working PMU cycle counter nor a generic timer, hence the
//! global timer. Both A9 timers count PERIPHCLK; QEMU clocks them at 100 MHz (10 ns per tick
//! with prescaler 0). The real i.MX6Q runs PERIPHCLK at half the ARM clock (396 MHz at
//! 792 MHz), so [`init`] calibrates it at boot against the i.MX6 General Purpose Timer clocked
//! by the 24 MHz crystal divided by 8 (3 MHz, as Linux's `timer-imx-gpt` does on the i.MX6Q):
//! it counts global-timer ticks over 15000 GPT ticks (5 ms), each end bracketed by two
//! global-timer reads, and rounds to whole MHz ([`hz_from_gpt_samples`](crate::machine::hz_from_gpt_samples)). If the GPT does not count
//! the frequency stays QEMU's 100 MHz and [`calibration`] says so.
//!
//! The global timer counter is shared by all cores (one time base); the private timers and
//! the generic timer's compare registers are per core.

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use tock_registers::interfaces::{Readable, Writeable};
use tock_registers::registers::ReadWrite;
use tock_registers::{register_bitfields, register_structs};

use aarch32_cpu::register::{CntVct, Cntfrq, CntvCtl, CntvTval};

use crate::machine::{a9, Machine};

register_bitfields![u32,
    /// Global timer control.
    GT_CONTROL [
        /// Timer (counter) enable.
        TIMER_ENABLE OFFSET(0) NUMBITS(1) [],
        /// Prescaler.
        PRESCALER OFFSET(8) NUMBITS(8) []
    ],
    /// Private timer control.
    PT_CONTROL [
        /// Timer enable.
        ENABLE OFFSET(0) NUMBITS(1) [],
        /// Reload from the load register when reaching zero.
        AUTO_RELOAD OFFSET(1) NUMBITS(1) [],
        /// Raise the interrupt when reaching zero.
        IRQ_ENABLE OFFSET(2) NUMBITS(1) [],
        /// Prescaler.
        PRESCALER OFFSET(8) NUMBITS(8) []
    ]
];

register_structs! {
    /// Cortex-A9 MPCore global timer (A9 MPCore TRM, 4.4).
    pub GlobalTimerRegs {
        (0x00 => counter_lo: ReadWrite<u32>),
        (0x04 => counter_hi: ReadWrite<u32>),
        (0x08 => control: ReadWrite<u32, GT_CONTROL::Register>),
        (0x0C => isr: ReadWrite<u32>),
        (0x10 => comparator_lo: ReadWrite<u32>),
        (0x14 => comparator_hi: ReadWrite<u32>),
        (0x18 => auto_increment: ReadWrite<u32>),
        (0x1C => @END),
    }
}

register_structs! {
    /// Cortex-A9 MPCore private timer, banked per core (A9 MPCore TRM, 4.2).
    pub PrivateTimerRegs {
        (0x00 => load: ReadWrite<u32>),
        (0x04 => counter: ReadWrite<u32>),
        (0x08 => control: ReadWrite<u32, PT_CONTROL::Register>),
        (0x0C => isr: ReadWrite<u32>),
        (0x10 => @END),
    }
}

/// PERIPHCLK of QEMU's Cortex-A9 MPCore model (global and private timers).
pub const QEMU_A9_PERIPHCLK_HZ: u64 = 100_000_000;
/// Interrupt ID of the A9 private timer.
pub const A9_PRIVATE_TIMER_IRQ: u32 = 29;
/// Interrupt ID of the generic virtual timer (PPI 11).
pub const VIRTUAL_TIMER_IRQ: u32 = 27;

/// The i.MX6 General Purpose Timer (GPT).
pub const IMX_GPT: usize = 0x0209_8000;
/// GPT_CR, GPT_PR and GPT_CNT offsets.
const GPT_CR: usize = 0x00;
const GPT_PR: usize = 0x04;
const GPT_CNT: usize = 0x24;
/// GPT_CR: CLKSRC = 5 (24 MHz crystal / 8), FRR (free run), ENMOD (reset on enable).
const GPT_CR_OSC_DIV8_FREE_RUN: u32 = (5 << 6) | (1 << 9) | (1 << 1);
/// GPT_CR enable bit.
const GPT_CR_EN: u32 = 1;
/// The GPT's count rate with [`GPT_CR_OSC_DIV8_FREE_RUN`].
pub const GPT_HZ: u64 = 3_000_000;
/// GPT ticks the calibration spans (5 ms).
const CALIBRATION_GPT_TICKS: u32 = 15_000;

/// How the A9 timer frequency was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Calibration {
    /// Not an A9 (the generic timer's CNTFRQ is used) or not yet initialised.
    NotNeeded,
    /// Measured against the GPT: this many Hz.
    Measured(u64),
    /// The GPT did not count; QEMU's 100 MHz is assumed.
    Failed,
}

static CALIBRATION: AtomicU64 = AtomicU64::new(0);

/// How [`init`] found the cycle counter's frequency.
pub fn calibration() -> Calibration {
    match CALIBRATION.load(Ordering::Relaxed) {
        0 => Calibration::NotNeeded,
        1 => Calibration::Failed,
        hz => Calibration::Measured(hz),
    }
}

fn gpt(offset: usize) -> *mut u32 {
    (IMX_GPT + offset) as *mut u32
}

/// One bracketed sample: (GPT count, global timer before, global timer after), the tightest
/// of a few tries (a vCPU or an interrupt may stall between the reads).
fn bracketed_sample() -> (u32, u64, u64) {
    let mut best = (0, 0, u64::MAX);
    for _ in 0..8 {
        let a = cycles();
        // SAFETY: GPT_CNT of the i.MX6 GPT, mapped as Device memory (the device window).
        let g = unsafe { gpt(GPT_CNT).read_volatile() };
        let b = cycles();
        if b.wrapping_sub(a) < best.2.wrapping_sub(best.1) {
            best = (g, a, b);
        }
    }
    best
}

/// Measures the A9 global timer against the GPT (see the module docs).
fn calibrate_a9() -> Option<u64> {
    // SAFETY: the GPT's control and prescaler registers, Device memory in the identity map;
    // nothing else in the kernel uses the GPT.
    unsafe {
        gpt(GPT_CR).write_volatile(0);
        gpt(GPT_PR).write_volatile(0);
        gpt(GPT_CR).write_volatile(GPT_CR_OSC_DIV8_FREE_RUN);
        gpt(GPT_CR).write_volatile(GPT_CR_OSC_DIV8_FREE_RUN | GPT_CR_EN);
    }
    let start = bracketed_sample();
    // Give up after 2^28 global-timer ticks (0.13 s at 2 GHz, 2.7 s at QEMU's 100 MHz).
    let mut end = start;
    while end.0.wrapping_sub(start.0) < CALIBRATION_GPT_TICKS {
        if cycles().wrapping_sub(start.1) > 1 << 28 {
            break;
        }
        end = bracketed_sample();
    }
    // SAFETY: as above: stop the GPT again.
    unsafe { gpt(GPT_CR).write_volatile(0) };
    crate::machine::hz_from_gpt_samples(start, end, GPT_HZ)
}

/// PERIPHBASE on the A9, 0 on virt (selects the time source).
static PERIPHBASE: AtomicUsize = AtomicUsize::new(0);
static HZ: AtomicU64 = AtomicU64::new(1);
static BOOT_CYCLES: AtomicU64 = AtomicU64::new(0);
/// Per-core tick period in timer counts (generic timer: reloaded by the handler).
static PERIOD: [AtomicU32; crate::percpu::MAX_CPUS] =
    [const { AtomicU32::new(0) }; crate::percpu::MAX_CPUS];

fn global_timer() -> &'static GlobalTimerRegs {
    let base = PERIPHBASE.load(Ordering::Relaxed) + a9::GLOBAL_TIMER;
    // SAFETY: only called on the A9 (PERIPHBASE != 0), where the global timer is at
    // PERIPHBASE + 0x200, mapped as Device memory.
    unsafe { &*(base as *const GlobalTimerRegs) }
}

fn private_timer() -> &'static PrivateTimerRegs {
    let base = PERIPHBASE.load(Ordering::Relaxed) + a9::PRIVATE_TIMER;
    // SAFETY: as above; the private timer at PERIPHBASE + 0x600 is banked per core.
    unsafe { &*(base as *const PrivateTimerRegs) }
}

fn is_a9() -> bool {
    PERIPHBASE.load(Ordering::Relaxed) != 0
}

/// Starts the cycle source. Core 0, once, after its MMU is on.
pub fn init(machine: Machine, periphbase: usize) {
    match machine {
        Machine::Sabrelite => {
            PERIPHBASE.store(periphbase, Ordering::Relaxed);
            let gt = global_timer();
            if !gt.control.is_set(GT_CONTROL::TIMER_ENABLE) {
                gt.control
                    .write(GT_CONTROL::TIMER_ENABLE::SET + GT_CONTROL::PRESCALER.val(0));
            }
            let hz = calibrate_a9();
            CALIBRATION.store(hz.unwrap_or(1), Ordering::Relaxed);
            HZ.store(hz.unwrap_or(QEMU_A9_PERIPHCLK_HZ), Ordering::Relaxed);
        }
        Machine::Virt => {
            HZ.store(u64::from(Cntfrq::read().0.max(1)), Ordering::Relaxed);
        }
    }
    BOOT_CYCLES.store(cycles(), Ordering::Relaxed);
}

/// The cycle counter: the A9 global timer or the virtual counter.
#[inline]
pub fn cycles() -> u64 {
    if is_a9() {
        let gt = global_timer();
        // The two halves are separate reads: re-read until the high word did not change.
        loop {
            let hi = gt.counter_hi.get();
            let lo = gt.counter_lo.get();
            if gt.counter_hi.get() == hi {
                return (u64::from(hi) << 32) | u64::from(lo);
            }
        }
    } else {
        CntVct::read().0
    }
}

/// Frequency of [`cycles`] in Hz.
pub fn cycles_hz() -> u64 {
    HZ.load(Ordering::Relaxed)
}

/// Converts a cycle count to nanoseconds.
pub fn cycles_to_ns(delta: u64) -> u64 {
    (u128::from(delta) * 1_000_000_000 / u128::from(cycles_hz())) as u64
}

/// Nanoseconds since [`init`].
pub fn since_boot_ns() -> u64 {
    cycles_to_ns(cycles().wrapping_sub(BOOT_CYCLES.load(Ordering::Relaxed)))
}

/// Busy-waits `us` microseconds.
pub fn delay_us(us: u64) {
    let _ = wait_until(us, || false);
}

/// Polls `cond` until it holds or `us` microseconds passed; returns whether it held.
pub fn wait_until(us: u64, cond: impl FnMut() -> bool) -> bool {
    hal_common::demo::wait_until(us, cycles_hz(), cycles, cond)
}

/// Interrupt ID of the tick timer.
pub fn irq_id() -> u32 {
    if is_a9() {
        A9_PRIVATE_TIMER_IRQ
    } else {
        VIRTUAL_TIMER_IRQ
    }
}

/// Starts periodic tick interrupts at `hz` on the calling core.
pub fn start_periodic(hz: u32) {
    let count = (cycles_hz() / u64::from(hz.max(1))).clamp(1, u64::from(u32::MAX)) as u32;
    PERIOD[crate::percpu::cpu_id() % crate::percpu::MAX_CPUS].store(count, Ordering::Relaxed);
    if is_a9() {
        let pt = private_timer();
        pt.control.set(0);
        pt.isr.set(1);
        pt.load.set(count);
        pt.control.write(
            PT_CONTROL::ENABLE::SET + PT_CONTROL::AUTO_RELOAD::SET + PT_CONTROL::IRQ_ENABLE::SET,
        );
    } else {
        CntvTval::write(CntvTval(count));
        CntvCtl::write(
            CntvCtl::new_with_raw_value(0)
                .with_enable(true)
                .with_imask(false),
        );
    }
    crate::gic::enable_ppi(irq_id());
}

/// Stops the calling core's tick timer.
pub fn stop() {
    crate::gic::disable_ppi(irq_id());
    if is_a9() {
        let pt = private_timer();
        pt.control.set(0);
        pt.isr.set(1);
    } else {
        CntvCtl::write(CntvCtl::new_with_raw_value(0).with_imask(true));
    }
}

/// Handles a tick on the calling core: acknowledges the timer, counts the tick and runs the
/// self-tests' tick hook ([`hal_common::irq::run_tick_hook`]).
pub(crate) fn on_interrupt() {
    if is_a9() {
        // Clear the event flag (write 1); auto-reload already restarted the count.
        private_timer().isr.set(1);
    } else {
        // The generic timer's interrupt is level: moving the compare value into the future
        // (TVAL = period) deasserts it.
        let period = PERIOD[crate::percpu::cpu_id() % crate::percpu::MAX_CPUS]
            .load(Ordering::Relaxed)
            .max(1);
        CntvTval::write(CntvTval(period));
    }
    crate::percpu::this_cpu().count_tick();
    hal_common::irq::run_tick_hook();
}
