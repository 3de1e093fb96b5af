//! The Rust side of the exception vectors (the assembly stubs are in [`boot`](crate::boot)).
//!
//! Exceptions taken from USR mode (system calls, user faults, IRQs interrupting a thread) go to
//! [`usermode::user_trap`](crate::usermode::user_trap) instead; this module handles those taken
//! in the kernel's own modes.
//!
//! - IRQ: `irq_entry` acknowledges interrupts from the GIC until none is pending: the tick
//!   timer counts a tick, SGIs count as IPIs (a `Halt` IPI stops the core), a device SPI is
//!   disabled before its end of interrupt; on a core in the user-mode idle loop each one enters
//!   the kernel.
//! - SVC: the kernel makes none itself (semihosting traps with HLT, see
//!   [`exit`](crate::exit)), so release builds take every SVC as a system call; debug builds
//!   check the mode and report an SVC from a kernel mode (`svc_entry`) like a fault.
//! - Undefined instruction: from a kernel mode, a semihosting HLT without semihosting returns
//!   -1 to its caller (the vector does it, no Rust code); any other is a fault, as below.
//! - Prefetch abort, data abort, FIQ, the unused vectors and other undefined instructions:
//!   `fault_entry` prints the report (exception, faulting PC, the mode and core it happened
//!   in, DFAR/DFSR or IFAR/IFSR decoded, registers) and exits QEMU with failure; a kernel data
//!   abort on a stack guard page (see [`boot`](crate::boot)) is first reported as
//!   `kernel stack overflow on CPU n (stack guard at 0x...)`. Each such
//!   exception runs on its own per-core stack (abort or undefined mode), so a broken SVC stack
//!   still gets reported.

use crate::fault::{ExceptionKind, FaultStatus, Mode};

/// Registers saved by the fault stubs, lowest address first.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ExceptionFrame {
    /// SP of the interrupted mode (0 if it could not be read: Hyp/Monitor).
    pub sp: u32,
    /// LR of the interrupted mode (0 if it could not be read).
    pub lr: u32,
    /// SPSR: the interrupted CPSR.
    pub spsr: u32,
    /// r0..r12.
    pub r: [u32; 13],
    /// Address of the faulting instruction (the banked LR minus the exception's offset).
    pub pc: u32,
}

/// Registers saved by the SVC stub, lowest address first.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SvcFrame {
    /// r0..r12.
    pub r: [u32; 13],
    /// Return address (the instruction after the `svc`).
    pub lr: u32,
}

/// IRQ handler, called by the IRQ stub on the interrupted core's SVC stack with IRQs masked
/// (interrupts taken in USR mode go to [`usermode::user_trap`](crate::usermode::user_trap)
/// instead). Handles every pending interrupt; on a core idling in the user-mode layer's idle
/// loop, each one enters the kernel, which may switch to a user thread (never returning here).
pub(crate) extern "C" fn irq_entry() {
    while let Some(ev) = crate::usermode::take_interrupt() {
        crate::usermode::idle_interrupt(ev);
    }
}

/// SVC handler for an SVC from a kernel mode, which the kernel never makes (debug builds'
/// SVC stub calls it; release builds take every SVC as a system call): reports it.
pub(crate) extern "C" fn svc_entry(frame: &SvcFrame) -> ! {
    // SAFETY: the SVC was executed in ARM state (the kernel has no Thumb code), so the 32-bit
    // instruction word is at LR - 4, in mapped kernel text.
    let insn = unsafe { ((frame.lr - 4) as *const u32).read_volatile() };
    let spsr: u32;
    // SAFETY: reading SPSR_svc (the caller's CPSR) has no side effects.
    unsafe { core::arch::asm!("mrs {}, spsr", out(reg) spsr, options(nomem, nostack)) };
    let full = ExceptionFrame {
        sp: frame as *const SvcFrame as u32 + core::mem::size_of::<SvcFrame>() as u32,
        // LR_svc was overwritten by taking the SVC (the kernel runs in SVC mode itself).
        lr: 0,
        spsr,
        r: frame.r,
        pc: frame.lr - 4,
    };
    report(
        ExceptionKind::Svc,
        &full,
        format_args!(
            "svc immediate {:#x} from a kernel mode (system calls come from USR mode)",
            insn & 0x00FF_FFFF
        ),
    )
}

/// Fault handler, called by the fault stubs with the frame on the exception mode's stack.
pub(crate) extern "C" fn fault_entry(vector: u32, frame: &ExceptionFrame) -> ! {
    let kind = ExceptionKind::from_vector(vector);
    match kind {
        ExceptionKind::DataAbort => {
            let dfsr = FaultStatus::new(aarch32_cpu::register::Dfsr::read().raw_value());
            let dfar = aarch32_cpu::register::Dfar::read().0;
            if Mode::from_psr(frame.spsr).is_privileged() {
                if let Some(g) = crate::boot::stack_guard_at(dfar as usize) {
                    crate::console::emergency_print(format_args!(
                        "\n!!! kernel stack overflow on CPU {} (stack guard at {:#010x}: the {} \
                         stack of cpu {})\n!!!   pc {:#010x}, sp {:#010x}, dfar {dfar:#010x}\n",
                        crate::percpu::cpu_id(),
                        g.guard,
                        g.stack,
                        g.owner,
                        frame.pc,
                        frame.sp,
                    ));
                }
            }
            report(
                kind,
                frame,
                format_args!(
                    "dfar {dfar:#010x}  dfsr {dfsr} ({}, domain {})",
                    if dfsr.is_write() { "write" } else { "read" },
                    dfsr.domain()
                ),
            )
        }
        ExceptionKind::PrefetchAbort => {
            let ifsr = FaultStatus::new(aarch32_cpu::register::Ifsr::read().raw_value());
            let ifar = aarch32_cpu::register::Ifar::read().0;
            report(kind, frame, format_args!("ifar {ifar:#010x}  ifsr {ifsr}"))
        }
        ExceptionKind::Undefined => {
            // SAFETY: the faulting instruction was fetched from this (mapped, ARM-state)
            // address a moment ago.
            let insn = unsafe { (frame.pc as *const u32).read_volatile() };
            report(kind, frame, format_args!("instruction {insn:#010x}"))
        }
        _ => report(kind, frame, format_args!("unexpected exception")),
    }
}

/// Prints the fault report and exits QEMU with failure.
fn report(kind: ExceptionKind, f: &ExceptionFrame, detail: core::fmt::Arguments<'_>) -> ! {
    let cpu = crate::percpu::cpu_id();
    let mode = Mode::from_psr(f.spsr);
    let level = if mode.is_privileged() {
        "kernel"
    } else {
        "user"
    };
    let r = &f.r;
    crate::console::emergency_print(format_args!(
        "\n!!! EXCEPTION on cpu {cpu}: {} in {mode} mode ({level}), vector offset {:#x}\n\
         !!!   pc {:#010x}  spsr {:#010x}  sp {:#010x}  lr {:#010x}\n\
         !!!   {detail}\n\
         !!!   r0 {:#x} r1 {:#x} r2 {:#x} r3 {:#x} r4 {:#x} r5 {:#x} r6 {:#x}\n\
         !!!   r7 {:#x} r8 {:#x} r9 {:#x} r10 {:#x} r11 {:#x} r12 {:#x}\n\
         !!! cpu {cpu} stopped; exiting QEMU with failure\n",
        kind.name(),
        kind.vector_offset(),
        f.pc,
        f.spsr,
        f.sp,
        f.lr,
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        r[6],
        r[7],
        r[8],
        r[9],
        r[10],
        r[11],
        r[12],
    ));
    crate::exit::exit_qemu(crate::exit::ExitCode::Failure)
}
