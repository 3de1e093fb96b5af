//! User mode on ARMv7-A: per-thread contexts, SVC system-call entry from USR mode, user
//! exceptions (data/prefetch abort, undefined instruction) handed to the kernel, IRQs (tick
//! timer, SGIs, device SPIs) from user mode or the idle loop entering the kernel, and the
//! return to the thread the kernel chose. The architecture-neutral part (saved contexts, the
//! return to the thread the kernel chose, the idle state, fault records) is
//! [`hal_common::usermode`], shared with x86-64; this module is its ARMv7 half ([`ArmUser`]).
//!
//! # System-call convention
//! `svc #0` in USR mode; number and arguments in `r0..r5` (the kernel's six `Regs`); results
//! in `r0..r5`; every other register is preserved. Numbers from [`DEBUG_BASE`] up are the
//! image's debug calls (console, done, exit), not kernel calls.
//!
//! # Entry stubs (in [`boot`](crate::boot))
//! While a thread runs in USR mode, SP_svc is the end of its saved context in
//! [`hal_common::usermode`] (the return leaves it there). An exception taken from USR mode
//! (the stub checks SPSR.M) saves the whole user context straight into it,
//! `[r0..r12, sp_usr, lr_usr, pc, cpsr]` (`srsdb`, `stm {r0-r14}^`), then points SP_svc at the
//! top of the core's SVC stack (empty: every kernel entry ends by returning to user mode or
//! in the idle loop) and calls [`user_trap`] with the frame and the vector number. So a system
//! call copies its frame neither into the context nor back onto the stack, as seL4 saves
//! into the TCB (x86_64 does the same). Interrupts and faults from user mode, rare on the IPC
//! path, work on a copy of the frame. Exceptions from the kernel's own modes keep the old
//! paths (fault report, IRQ return); IRQs are masked on every exception
//! entry, so nothing else lands on SP_svc while it points into a context.
//!
//! # The return
//! `hal_armv7_enter_user` points SP_svc at the saved frame's pc word, loads the user registers
//! below it (`ldmdb {r0-r14}^`: the user-bank form has no writeback, so loading downwards from
//! the pc's word saves the `add` that would move SP_svc past them) and returns with `rfeia`,
//! which restores pc and CPSR together and leaves SP_svc at the end of the context for the
//! next entry.

use core::arch::global_asm;
use core::fmt;

use kernel::Regs;

pub use hal_common::usermode::{DebugHandler, FaultInfo, KernelEntry, DEBUG_BASE};
use hal_common::usermode::{Event, Fault, KernelFault, UserArch, UserMode};

use crate::fault::FaultStatus;
use crate::gic;
use crate::percpu::{CpuIndex, MAX_CPUS};

/// Vector numbers passed to [`user_trap`] and to [`kernel::Kernel::exception`] (the ARM
/// exception vector index).
pub mod vector {
    /// Undefined instruction.
    pub const UNDEFINED: u32 = 1;
    /// Supervisor call.
    pub const SVC: u32 = 2;
    /// Prefetch abort.
    pub const PREFETCH_ABORT: u32 = 3;
    /// Data abort.
    pub const DATA_ABORT: u32 = 4;
    /// IRQ.
    pub const IRQ: u32 = 6;
}

/// USR mode, ARM state, IRQ/FIQ/async aborts enabled.
const CPSR_USER: u32 = 0x10;
/// CPSR bits a thread keeps across kernel entries: N Z C V Q, IT, GE, T.
const CPSR_KEPT: u32 = 0xFE0F_FC20;

/// A user context as the entry stubs save it (after the alignment pad).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UserFrame {
    /// r0..r12.
    pub r: [u32; 13],
    /// SP_usr.
    pub sp: u32,
    /// LR_usr.
    pub lr: u32,
    /// Where the thread continues.
    pub pc: u32,
    /// Its CPSR.
    pub cpsr: u32,
}

const _: () = assert!(core::mem::size_of::<UserFrame>() == 68);
// A power of two: a context's address is the thread index shifted (`UserArch::ContextPad`).
const _: () = assert!(hal_common::usermode::context_size::<ArmUser>() == 128);
// r0..r5 are the kernel's `Regs` in place (`syscall_regs_ptr`, `syscall_regs_mut`).
const _: () =
    assert!(core::mem::size_of::<Regs>() == 6 * 4 && core::mem::offset_of!(UserFrame, r) == 0);
// `return_from_syscall` and `hal_armv7_enter_user`: pc is word 15, and r6..r12, SP_usr and
// LR_usr are the 9 words before it (r0..r14 the 15).
const _: () = assert!(
    core::mem::offset_of!(UserFrame, sp) == 13 * 4
        && core::mem::offset_of!(UserFrame, pc) == 15 * 4
);

/// The ARMv7 half of user mode (see the module documentation).
pub struct ArmUser;

impl UserArch for ArmUser {
    type Frame = UserFrame;
    /// 68 bytes of frame, the kind's byte and these 59: 128 bytes per context.
    type ContextPad = [u8; 59];
    const CONTEXT_PAD: [u8; 59] = [0; 59];
    const EMPTY_FRAME: UserFrame = UserFrame {
        r: [0; 13],
        sp: 0,
        lr: 0,
        pc: 0,
        cpsr: CPSR_USER,
    };

    #[inline(always)]
    fn cpu_id() -> CpuIndex {
        crate::percpu::cpu_id()
    }
    fn disable_interrupts() {
        crate::cpu::disable_interrupts();
    }
    fn cycles() -> u64 {
        crate::timer::cycles()
    }
    fn print(args: fmt::Arguments<'_>) {
        crate::console::print(args);
    }
    fn fatal(args: fmt::Arguments<'_>) -> ! {
        crate::console::emergency_print(format_args!(
            "\n!!! hal-armv7 usermode on cpu {}: {args}\n",
            crate::percpu::cpu_id()
        ));
        crate::exit::exit_qemu(crate::exit::ExitCode::Failure)
    }

    fn initial_frame(pc: usize, sp: usize, args: [usize; 3]) -> UserFrame {
        let mut frame = UserFrame {
            pc: pc as u32,
            sp: sp as u32,
            ..Self::EMPTY_FRAME
        };
        for (r, a) in frame.r.iter_mut().zip(args) {
            *r = a as u32;
        }
        frame
    }
    fn pc(frame: &UserFrame) -> usize {
        frame.pc as usize
    }
    #[inline(always)]
    fn syscall_regs_ptr(frame: *const UserFrame) -> *const Regs {
        // The registers are the frame's first six words (checked below).
        frame.cast()
    }
    #[inline(always)]
    fn syscall_regs_mut(frame: &mut UserFrame) -> &mut Regs {
        // SAFETY: `UserFrame` is `repr(C)` and starts with r0..r12 (`u32`s); its first six
        // are `Regs` (`[usize; 6]`, `usize` being `u32` here, checked below); the pointer
        // comes from the whole frame's unique reference, and the result borrows `frame`.
        unsafe { &mut *(frame as *mut UserFrame).cast::<Regs>() }
    }
    /// Forces USR mode and keeps only the flags a thread may set; every frame can return. A
    /// system call's frame is left as it is: its CPSR is the SPSR that the SVC saved (see
    /// [`UserArch::prepare_return`]), USR mode with the mask bits a USR-mode `msr` cannot
    /// change.
    #[inline(always)]
    fn prepare_return(frame: &mut UserFrame, from_syscall: bool) {
        if !from_syscall {
            frame.cpsr = (frame.cpsr & CPSR_KEPT) | CPSR_USER;
        }
    }
    #[inline(always)]
    unsafe fn enter_user(_cpu: CpuIndex, frame: &UserFrame) -> ! {
        // SAFETY: the frame returns to USR mode (CPSR sanitised by `prepare_return`) and is
        // the thread's context, which stays in place (the caller's contract); the stub loads
        // it where it is and leaves SP_svc at its end for the thread's next entry; the SVC
        // stack's contents are dead (every entry ends here or in the idle loop).
        unsafe { hal_armv7_enter_user(frame) }
    }
    #[inline(always)]
    unsafe fn return_from_syscall(_cpu: CpuIndex, frame: &UserFrame, regs: Regs) -> ! {
        // SAFETY: as in `enter_user`, with r0-r5 the call's results (operands) instead of the
        // frame's first six words: SP_svc goes to the pc's word, `ldmdb ... ^` loads the nine
        // words below it, r6-r12, SP_usr and LR_usr (user bank, no writeback), and `rfeia`
        // the pc and CPSR at once, leaving SP_svc at the context's end for the thread's next
        // entry. `clrex`: no LDREX reservation of the kernel or another thread may pair with
        // this thread's STREX.
        unsafe {
            core::arch::asm!(
                "add sp, {frame}, #{pc}",
                "clrex",
                "ldmdb sp, {{r6-r14}}^",
                "rfeia sp!",
                frame = in(reg) frame as *const UserFrame,
                in("r0") regs[0],
                in("r1") regs[1],
                in("r2") regs[2],
                in("r3") regs[3],
                in("r4") regs[4],
                in("r5") regs[5],
                pc = const 15 * 4,
                options(noreturn),
            )
        }
    }
    fn wait_for_interrupt() {
        // SAFETY: unmask IRQs, wait, mask again; the IRQ handler runs on this stack and either
        // returns here or switches to user mode for good. `dsb` before `wfi` is not needed for
        // correctness (nothing is waiting on our stores) and `wfi` tolerates a pending IRQ.
        unsafe { core::arch::asm!("cpsie i", "wfi", "cpsid i", options(nomem, nostack)) };
    }
    /// A frame the entry saved in its context already (`dst == src`: an interrupt from user
    /// mode) is not copied; a fault's copy is.
    #[inline(always)]
    unsafe fn save_frame(dst: *mut UserFrame, src: &UserFrame) {
        if !core::ptr::eq(dst, src) {
            // SAFETY: forwarded contract (`src` does not overlap `dst` when they differ).
            unsafe { copy_frame(dst, src) }
        }
    }
}

/// The user-mode state of this machine: install the kernel, set initial contexts, start each
/// core's scheduling (`run`), read fault records.
pub static USER: UserMode<ArmUser, MAX_CPUS> = UserMode::new();

global_asm!(
    r#"
    .section .text.hal_armv7_usermode, "ax"
    .arm
    .global hal_armv7_enter_user
    .type hal_armv7_enter_user, %function
    @ r0 = frame (17 words, in the thread's context). Does not return.
hal_armv7_enter_user:
    add     sp, r0, #60                     @ the pc's word
    clrex                                   @ no LDREX reservation of the kernel or another thread may pair with this thread's STREX
    ldmdb   sp, {{r0-r14}}^                 @ the 15 words below: user r0-r12, SP_usr, LR_usr (no writeback with ^)
    rfeia   sp!                             @ pc and CPSR at once; SP_svc ends at the context's end
"#
);

unsafe extern "C" {
    fn hal_armv7_enter_user(frame: *const UserFrame) -> !;
}

/// Copies a user frame word by word, unrolled in line, where `*dst = *src` becomes a call of
/// the word-at-a-time `__aeabi_memcpy4` (about 90 instructions for the 17 words, on every
/// trap). The volatile accesses only keep the compiler from turning the loop back into that
/// call; the memory is ordinary.
///
/// # Safety
/// `dst` is valid for writes of a `UserFrame` and nothing else accesses it meanwhile.
#[inline(always)]
unsafe fn copy_frame(dst: *mut UserFrame, src: &UserFrame) {
    const WORDS: usize = core::mem::size_of::<UserFrame>() / 4;
    let s = (src as *const UserFrame).cast::<u32>();
    let d = dst.cast::<u32>();
    for i in 0..WORDS {
        // SAFETY: `UserFrame` is `repr(C)` of 17 `u32`s (size checked above), so word `i` of
        // both is in bounds and aligned; `dst` is ours (caller), `src` a live reference.
        unsafe { d.add(i).write_volatile(s.add(i).read_volatile()) }
    }
}

/// Acknowledges one interrupt, does the HAL's part (timer reload, counters, `Halt`) and
/// signals its end. `None` if nothing was pending; `Some(None)` for one with nothing for the
/// kernel (spurious or unknown, already reported).
pub(crate) fn take_interrupt() -> Option<Option<Event>> {
    let irq = gic::acknowledge()?;
    let id = irq.id();
    let ev = if id < 16 {
        crate::percpu::this_cpu().count_ipi();
        match gic::ipi_of_sgi(id) {
            Some(kernel::IpiKind::Halt) => {
                gic::end_of_interrupt(irq);
                crate::cpu::halt_forever();
            }
            Some(k) => Some(Event::Ipi(k)),
            None => None,
        }
    } else if id == crate::timer::irq_id() {
        crate::timer::on_interrupt();
        Some(Event::Timer)
    } else if id >= 32 {
        // A device: disabled before the EOI below (whose `dsb` completes the disable first,
        // see `gic`), kept disabled until its driver acknowledges it through the kernel.
        let spi = id - 32;
        gic::count_spi(spi);
        gic::mask_spi(spi);
        Some(Event::Device(spi as usize))
    } else {
        crate::console::emergency_print(format_args!(
            "hal-armv7: cpu {}: unexpected interrupt {id}\n",
            crate::percpu::cpu_id()
        ));
        None
    };
    gic::end_of_interrupt(irq);
    Some(ev)
}

/// An interrupt taken in a kernel mode (`ev` from [`take_interrupt`]): see
/// [`UserMode::interrupt`] (enters the kernel only from the idle loop).
pub(crate) fn idle_interrupt(ev: Option<Event>) {
    // SAFETY: no user frame.
    unsafe { USER.interrupt(None, ev) };
}

/// Every other exception taken from USR mode (interrupts, aborts, undefined instructions),
/// with the user frame the entry saved in the current thread's context. System calls never
/// come here: the SVC stub calls the kernel's system-call entry (`UserMode::SYSCALL_ENTRY`).
pub(crate) extern "C" fn user_trap(frame: *const UserFrame, vec: u32) -> ! {
    match vec {
        vector::IRQ => {
            // SAFETY: the entry saved the current thread's registers at `frame`, in its
            // context; the save finds the frame already in place and copies nothing.
            unsafe { USER.interrupt(Some(frame), take_interrupt().flatten()) };
            unreachable!("an interrupt from user mode returns to user mode")
        }
        vector::DATA_ABORT | vector::PREFETCH_ABORT | vector::UNDEFINED => {
            // Faults work on a copy on this stack, so that no reference into the context lives
            // while the kernel writes it (the report prints from it after the save); they are
            // rare.
            // SAFETY: the entry saved the frame at `frame`; nothing has written it since.
            let copy = unsafe { frame.read() };
            user_fault(&copy, vec)
        }
        _ => ArmUser::fatal(format_args!("unexpected exception {vec} from user mode")),
    }
}

fn user_fault(frame: &UserFrame, vec: u32) -> ! {
    let (addr, status) = match vec {
        vector::DATA_ABORT => (
            aarch32_cpu::register::Dfar::read().0,
            aarch32_cpu::register::Dfsr::read().raw_value(),
        ),
        vector::PREFETCH_ABORT => (
            aarch32_cpu::register::Ifar::read().0,
            aarch32_cpu::register::Ifsr::read().raw_value(),
        ),
        _ => (0, 0),
    };
    let fs = FaultStatus::new(status);
    let kind = crate::fault::ExceptionKind::from_vector(vec).name();
    // Translation (section/page) and permission (section/page) faults are page faults the
    // pager may resolve; anything else is an exception.
    let page_fault =
        vec != vector::UNDEFINED && matches!(fs.fs(), 0b00101 | 0b00111 | 0b01101 | 0b01111);
    let to_kernel = if page_fault {
        KernelFault::Page {
            addr: addr as usize,
            write: vec == vector::DATA_ABORT && fs.is_write(),
        }
    } else {
        KernelFault::Exception {
            vector: vec as usize,
            addr: frame.pc as usize,
        }
    };
    let fault = Fault {
        vector: vec as usize,
        pc: frame.pc as usize,
        addr: addr as usize,
        code: status as usize,
    };
    USER.user_exception(
        frame,
        fault,
        to_kernel,
        format_args!(
            "{kind} at pc {:#x}, address {addr:#x}, status {status:#x} ({})",
            frame.pc,
            if vec == vector::UNDEFINED {
                "undefined instruction"
            } else {
                fs.description()
            },
        ),
    )
}
