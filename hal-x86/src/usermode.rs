//! User mode: `syscall`/`sysret` entry, per-thread user contexts, returning to the thread the
//! kernel chose, user exceptions, and the idle loop.
//!
//! # Why it looks like this
//! The architecture-neutral part (saved contexts, the return to the thread the kernel chose,
//! the idle state, fault records) is [`hal_common::usermode`], shared with ARMv7; this module
//! is its x86-64 half: the `syscall` entry, the `sysretq`/`iretq` return, and what a frame
//! must look like to return to ring 3 ([`X86User`]).
//!
//! Every kernel entry from user mode starts at the top of the core's kernel stack (the
//! `syscall` entry switches to it through `gs:[8]`, interrupts through TSS.RSP0) and never
//! returns along the call chain: it ends by entering user mode or the idle loop. So nothing
//! lives on a kernel stack between two entries, and a thread switch is just "restore another
//! context". The kernel runs with interrupts disabled (SFMASK clears IF on `syscall`,
//! interrupt gates clear it), so entries never nest.
//!
//! # Registers
//! System call: `rax` = number, `rdi, rsi, rdx, r10, r8` = arguments 1..5 (`syscall` takes
//! `rcx`/`r11` for the return address and flags, hence `r10` as in Linux). Results come back in
//! the same six registers; every other register except `rcx` and `r11` is preserved.
//! Numbers from [`DEBUG_BASE`] up are debug calls that never reach the kernel core: the image
//! handles them (console output, test reports, shutdown) through the handler given to [`UserMode::install`].
//!
//! # Where a system call's registers go
//! Straight into the thread's context ([`hal_common::usermode`] keeps one per thread): every
//! return to user mode leaves the end of the thread's context frame in `gs:[24]`
//! ([`PerCpu::user_frame_top`](crate::percpu::PerCpu)), the `syscall` entry points RSP there,
//! pushes the frame into place and only then switches to the kernel stack, and the return pops
//! the frame from the context again. So a system call copies its frame neither into the
//! context nor back onto the kernel stack, as seL4 saves into the TCB (`docs/bench/ipc-fastpath.md`,
//! "How a round trip runs"). Interrupts and exceptions still arrive on the kernel stack
//! (TSS.RSP0) and are copied into the context, as they are rare on the IPC path.
//!
//! While RSP points into a context (the entry's pushes, the return's pops) interrupts are
//! masked; only an NMI or machine check could push onto it, and both are fatal here.
//!
//! # Return to user mode
//! A context saved by `syscall` returns with `sysretq`, the fast path; a context saved by an
//! interrupt or exception, or a fresh thread, with `iretq`. A `syscall` context's return
//! address is canonical: no user page ends at the canonical boundary (`kernel::config::USER_TOP`;
//! `sysretq` to a non-canonical address would fault in ring 0). Code and stack selectors and
//! RFLAGS are forced to user values before `iretq` (`sysretq` takes them from STAR and R11), so
//! a context can never return to ring 0 or with IOPL raised.
//!
//! # User exceptions
//! A page fault, invalid instruction, division error, protection fault ... in ring 3 is
//! printed (core, thread, vector, RIP, CR2, error code), recorded ([`UserMode::fault_record`]) and handed
//! to the kernel: [`kernel::Kernel::page_fault`] for #PF, [`kernel::Kernel::exception`]
//! otherwise. The kernel sends it to the thread's pager or suspends the thread; the core goes on
//! with its next thread, and the other cores never notice. Machine checks, NMIs and double
//! faults stay fatal.

use core::arch::global_asm;
use core::fmt;
use core::mem::offset_of;

use kernel::Regs;

pub use hal_common::usermode::{DebugHandler, FaultInfo, KernelEntry, DEBUG_BASE};
use hal_common::usermode::{Event, Fault, KernelFault, UserArch, UserMode};

use crate::cpu::{rdmsr, wrmsr};
use crate::gdt::{KERNEL_CODE, USER_CODE, USER_DATA};
use crate::interrupts::{exception_name, pop_gprs, push_gprs_kept, TrapFrame};
use crate::percpu::{
    CpuIndex, MAX_CPUS, PERCPU_KSTACK_OFFSET, PERCPU_SCRATCH_OFFSET, PERCPU_USER_FRAME_OFFSET,
};

const IA32_EFER: u32 = 0xC000_0080;
const IA32_STAR: u32 = 0xC000_0081;
const IA32_LSTAR: u32 = 0xC000_0082;
const IA32_FMASK: u32 = 0xC000_0084;
const IA32_KERNEL_GS_BASE: u32 = 0xC000_0102;

/// RFLAGS bits cleared on `syscall`: IF (the kernel runs with interrupts off), TF, DF, NT, AC.
pub const SYSCALL_FLAG_MASK: u64 = 0x0004_4700;
/// RFLAGS bits a user context may keep (CF, PF, AF, ZF, SF, TF, DF, OF, AC, ID...), i.e. not
/// IOPL, NT, RF, VM, VIF/VIP.
const USER_FLAGS_KEPT: u64 = 0x0024_0DD5;
const RFLAGS_IF: u64 = 1 << 9;
const RFLAGS_FIXED: u64 = 1 << 1;

/// Lowest non-canonical address: `sysretq` to an address at or above it would fault in ring 0.
const NON_CANONICAL: u64 = 0x0000_8000_0000_0000;
/// No user page ends at the lowest non-canonical address, so a `syscall` returns to a
/// canonical one (see `X86User::prepare_return`).
const USER_TOP_LEAVES_THE_LAST_PAGE: () =
    assert!(kernel::config::USER_TOP as u64 + kernel::config::PAGE_SIZE as u64 <= NON_CANONICAL);
const _: () = USER_TOP_LEAVES_THE_LAST_PAGE;
/// #PF.
const PF_VECTOR: u64 = 14;

/// The x86-64 half of user mode (see the module documentation).
pub struct X86User;

impl UserArch for X86User {
    type Frame = TrapFrame;
    type ContextPad = ();
    const CONTEXT_PAD: () = ();
    const EMPTY_FRAME: TrapFrame = TrapFrame {
        r15: 0,
        r14: 0,
        r13: 0,
        r12: 0,
        r11: 0,
        r10: 0,
        r9: 0,
        r8: 0,
        rbp: 0,
        rdi: 0,
        rsi: 0,
        rdx: 0,
        rcx: 0,
        rbx: 0,
        rax: 0,
        vector: 0,
        error_code: 0,
        rip: 0,
        cs: USER_CODE as u64,
        rflags: RFLAGS_IF | RFLAGS_FIXED,
        rsp: 0,
        ss: USER_DATA as u64,
    };

    #[inline(always)]
    fn cpu_id() -> CpuIndex {
        crate::percpu::cpu_id()
    }
    /// The stub passes nothing (see [`UserArch::syscall_cpu`]): GS has the index.
    #[inline(always)]
    fn syscall_cpu(_passed: CpuIndex) -> CpuIndex {
        crate::percpu::cpu_id()
    }
    fn disable_interrupts() {
        crate::cpu::disable_interrupts();
    }
    fn cycles() -> u64 {
        crate::cpu::rdtsc()
    }
    fn print(args: fmt::Arguments<'_>) {
        crate::console::print(args);
    }
    fn fatal(args: fmt::Arguments<'_>) -> ! {
        crate::console::emergency_print(format_args!(
            "\n!!! hal-x86 usermode on cpu {}: {args}\n",
            crate::percpu::cpu_id()
        ));
        crate::exit::exit_qemu(crate::exit::ExitCode::Failure)
    }

    fn initial_frame(pc: usize, sp: usize, args: [usize; 3]) -> TrapFrame {
        TrapFrame {
            rip: pc as u64,
            rsp: sp as u64,
            rdi: args[0] as u64,
            rsi: args[1] as u64,
            rdx: args[2] as u64,
            ..Self::EMPTY_FRAME
        }
    }
    fn pc(frame: &TrapFrame) -> usize {
        frame.rip as usize
    }
    #[inline(always)]
    fn syscall_regs_ptr(frame: *const TrapFrame) -> *const Regs {
        // The registers are the frame's first six words (checked below).
        frame.cast()
    }
    #[inline(always)]
    fn syscall_regs_mut(f: &mut TrapFrame) -> &mut Regs {
        // SAFETY: `TrapFrame` is `repr(C)` and starts with `rax, rdi, rsi, rdx, r10, r8`, six
        // `u64`s (checked below), which is the layout of `Regs` (`[usize; 6]`, `usize` being
        // `u64` here); the pointer comes from the whole frame's unique reference, and the
        // result borrows `f`.
        unsafe { &mut *(f as *mut TrapFrame).cast::<Regs>() }
    }
    /// Forces user selectors and sanitised RFLAGS, so a context can never return to ring 0
    /// or with IOPL raised.
    ///
    /// A context saved by `syscall` with a non-canonical return address could return neither
    /// with `sysretq` (it would #GP in ring 0 on Intel) nor with `iretq` (it faults in ring 0
    /// after `swapgs`). It cannot exist: the return address is the one after the thread's
    /// `syscall` instruction, in a page it has mapped, below [`kernel::config::USER_TOP`],
    /// which leaves out the highest canonical page (both the kernel's check and this HAL's
    /// mapping code refuse it; `USER_TOP_LEAVES_THE_LAST_PAGE` below holds the bound at
    /// compile time), so the address is at most `USER_TOP`, canonical; and nothing writes a
    /// system call's saved return address afterwards (see [`UserArch::prepare_return`]).
    /// Debug builds check it; release builds leave the compare and branch out of every
    /// system call's return (6 instructions per round trip, 1.4%).
    ///
    /// A system call's return (`sysretq`) takes its selectors from the STAR MSR, so the
    /// frame's are left as they are then; the next entry saves new ones anyway. Its RFLAGS
    /// are left too: they are the ones `syscall` put in R11 (see
    /// [`UserArch::prepare_return`]), which ring 3 cannot have given IOPL or cleared IF
    /// in (POPF ignores both there).
    #[inline(always)]
    fn prepare_return(f: &mut TrapFrame, from_syscall: bool) {
        if from_syscall {
            debug_assert!(
                f.rip < NON_CANONICAL,
                "a system call saved the non-canonical return address {:#x}",
                f.rip
            );
        } else {
            f.cs = u64::from(USER_CODE);
            f.ss = u64::from(USER_DATA);
            f.rflags = (f.rflags & USER_FLAGS_KEPT) | RFLAGS_IF | RFLAGS_FIXED;
        }
    }
    #[inline(always)]
    unsafe fn enter_user(_cpu: CpuIndex, frame: &TrapFrame) -> ! {
        let frame = next_entry_saves_at(frame);
        // SAFETY: the frame holds user selectors and sanitised flags, set by
        // `prepare_return`, and is the thread's context, which stays in place (the caller's
        // contract); the assembly pops it from there with interrupts masked, leaving the
        // kernel stack, whose contents are dead.
        unsafe { hal_enter_user(frame) }
    }
    #[inline(always)]
    unsafe fn return_from_syscall(_cpu: CpuIndex, frame: &TrapFrame, regs: Regs) -> ! {
        let frame = next_entry_saves_at(frame);
        // SAFETY: the frame holds a canonical return address (see `prepare_return`),
        // and the flags `syscall` recorded in R11 (user flags only, see `prepare_return`),
        // and is the thread's context, which stays in place (the
        // caller's contract). The registers the call does not return come from the frame
        // (RSP points at it: every other register is loaded, the six results are operands);
        // RCX and R11 are the return address and flags `sysretq` takes, RSP the user stack,
        // the last load. Interrupts stay masked until `sysretq` (SFMASK cleared IF at the
        // entry); the kernel stack's contents are dead.
        unsafe {
            core::arch::asm!(
                "mov rsp, {frame}",
                "mov r15, [rsp + {r15}]",
                "mov r14, [rsp + {r14}]",
                "mov r13, [rsp + {r13}]",
                "mov r12, [rsp + {r12}]",
                "mov r9, [rsp + {r9}]",
                "mov rbp, [rsp + {rbp}]",
                "mov rbx, [rsp + {rbx}]",
                "mov rcx, [rsp + {rip}]",
                "mov r11, [rsp + {rflags}]",
                "mov rsp, [rsp + {rsp}]",
                "swapgs",
                "sysretq",
                frame = in(reg) frame,
                in("rax") regs[0],
                in("rdi") regs[1],
                in("rsi") regs[2],
                in("rdx") regs[3],
                in("r10") regs[4],
                in("r8") regs[5],
                r15 = const offset_of!(TrapFrame, r15),
                r14 = const offset_of!(TrapFrame, r14),
                r13 = const offset_of!(TrapFrame, r13),
                r12 = const offset_of!(TrapFrame, r12),
                r9 = const offset_of!(TrapFrame, r9),
                rbp = const offset_of!(TrapFrame, rbp),
                rbx = const offset_of!(TrapFrame, rbx),
                rip = const offset_of!(TrapFrame, rip),
                rflags = const offset_of!(TrapFrame, rflags),
                rsp = const offset_of!(TrapFrame, rsp),
                options(noreturn),
            )
        }
    }
    fn wait_for_interrupt() {
        // SAFETY: `sti; hlt` sleeps until the next interrupt (the `sti` shadow makes the pair
        // atomic); the handler runs on this stack and either returns here or switches to user
        // mode; `cli` restores the kernel's interrupts-off state.
        unsafe { core::arch::asm!("sti", "hlt", "cli", options(nomem, nostack)) };
    }
}

/// The user-mode state of this machine: install the kernel, set initial contexts, start each
/// core's scheduling (`run`), read fault records.
pub static USER: UserMode<X86User, MAX_CPUS> = UserMode::new();

// The `syscall` entry. On entry: RCX = user RIP, R11 = user RFLAGS, RSP = user stack, GS = user
// GS, IF = 0 and DF = 0 (SFMASK, so no `cld`). It switches to the per-core GS, builds a
// `TrapFrame` as an interrupt from user mode would, but in the current thread's context
// (`gs:[user_frame]`, set by `enter_user`) and without the four words a system call's return
// (`sysretq`) does not read: the error code, the vector, and the RCX and R11 slots, which
// `syscall` overwrote (their values are in the RIP and RFLAGS slots). Then it switches to the
// kernel stack and calls the installed kernel's system-call entry (`UserMode::SYSCALL_ENTRY`: a
// word of `USER`) with `USER` and the frame (System V: RDI, RSI; nothing in RDX, see
// `X86User::syscall_cpu`); it never returns. RBP keeps the user's value (saved in the frame):
// the kernel keeps no frame-pointer chain (x86_64-unknown-none omits frame pointers), so
// there is no chain to end with a zero. RSP is the 4 KiB aligned stack
// top at the call, so 16-byte aligned.
//
// `hal_enter_user` returns from a frame in its context: RSP points at it, the pops load it.
global_asm!(
    concat!(
    r#"
    .text
    .global hal_syscall_entry
hal_syscall_entry:
    swapgs
    movq %rsp, %gs:{scratch}
    movq %gs:{user_frame}, %rsp
    pushq ${user_ss}
    pushq %gs:{scratch}
    pushq %r11
    pushq ${user_cs}
    pushq %rcx
    subq $32, %rsp
"#,
    push_gprs_kept!(),
    r#"
    movq %rsp, %rsi
    movq %gs:{kstack}, %rsp
    movq ${user}, %rdi
    callq *{user}+{syscall_entry}(%rip)
    ud2

    .global hal_enter_user
hal_enter_user:
    movq %rdi, %rsp
"#,
    pop_gprs!(),
    r#"
    addq $16, %rsp
    swapgs
    iretq
"#),
    scratch = const PERCPU_SCRATCH_OFFSET,
    kstack = const PERCPU_KSTACK_OFFSET,
    user_frame = const PERCPU_USER_FRAME_OFFSET,
    user_ss = const USER_DATA as u64,
    user_cs = const USER_CODE as u64,
    user = sym USER,
    syscall_entry = const UserMode::<X86User, MAX_CPUS>::SYSCALL_ENTRY,
    options(att_syntax),
);

const _: () = assert!(size_of::<TrapFrame>() == 22 * 8);
// The system-call registers are the frame's first six words, in `Regs` order
// (`syscall_regs_ptr`, `syscall_regs_mut`).
const _: () = {
    use core::mem::offset_of;
    assert!(size_of::<Regs>() == 6 * 8);
    assert!(offset_of!(TrapFrame, rax) == 0);
    assert!(offset_of!(TrapFrame, rdi) == 8);
    assert!(offset_of!(TrapFrame, rsi) == 16);
    assert!(offset_of!(TrapFrame, rdx) == 24);
    assert!(offset_of!(TrapFrame, r10) == 32);
    assert!(offset_of!(TrapFrame, r8) == 40);
};

unsafe extern "C" {
    fn hal_syscall_entry();
    /// Loads the context `frame` where it is and returns to user mode with `iretq` (a system
    /// call returns with `sysretq`, see `X86User::return_from_syscall`).
    fn hal_enter_user(frame: *const TrapFrame) -> !;
}

/// Records where the thread that returns to user mode on this core with `frame` saves its
/// registers at its next `syscall` (the end of the frame, in its context) and hands the frame
/// on as a pointer.
#[inline(always)]
fn next_entry_saves_at(frame: &TrapFrame) -> *const TrapFrame {
    let frame: *const TrapFrame = frame;
    // Only this core reads it, in its `syscall` entry, after this store in program order.
    crate::percpu::set_user_frame_top(frame as u64 + size_of::<TrapFrame>() as u64);
    frame
}

/// Enables `syscall`/`sysret` on the calling core: EFER.SCE, the selectors (STAR: kernel CS/SS
/// from 0x08, user SS/CS from 0x13 + 8 / + 16, see [`gdt`](crate::gdt)), the entry point
/// (LSTAR), the RFLAGS mask (SFMASK) and a zero user GS base. Called once per core.
pub fn init_cpu() {
    let star = ((u64::from(USER_DATA) - 8) << 48) | (u64::from(KERNEL_CODE) << 32);
    // SAFETY: these MSRs exist on every x86_64 CPU; the values follow the GDT layout and the
    // entry code above. Nothing executes `syscall` before this.
    unsafe {
        wrmsr(IA32_EFER, rdmsr(IA32_EFER) | 1);
        wrmsr(IA32_STAR, star);
        wrmsr(IA32_LSTAR, hal_syscall_entry as *const () as u64);
        wrmsr(IA32_FMASK, SYSCALL_FLAG_MASK);
        wrmsr(IA32_KERNEL_GS_BASE, 0);
    }
}

/// The `syscall` MSRs of the calling core: (EFER, STAR, LSTAR, SFMASK), for self-tests.
pub fn syscall_msrs() -> (u64, u64, u64, u64) {
    // SAFETY: reading architectural MSRs that exist on every x86_64 CPU.
    unsafe {
        (
            rdmsr(IA32_EFER),
            rdmsr(IA32_STAR),
            rdmsr(IA32_LSTAR),
            rdmsr(IA32_FMASK),
        )
    }
}

/// The entry address the LSTAR MSR must hold.
pub fn syscall_entry_address() -> u64 {
    hal_syscall_entry as *const () as u64
}

/// A timer tick, IPI or device interrupt (already acknowledged; a device line already masked
/// at its I/O APIC): see [`UserMode::interrupt`].
pub(crate) fn interrupt(frame: &mut TrapFrame, event: Event) {
    let user = (frame.cs & 3 == 3).then_some(&*frame as *const TrapFrame);
    // SAFETY: a user frame is the one the interrupt entry pushed on this core's kernel stack
    // for its current thread, valid until this call ends (nothing else writes it).
    unsafe { USER.interrupt(user, Some(event)) };
}

/// An exception in user mode: report it, record it and hand it to the kernel; continues with
/// the thread the kernel picks. NMIs, double faults and machine checks stay fatal.
pub(crate) fn user_exception(frame: &mut TrapFrame) -> ! {
    let v = frame.vector;
    if matches!(v, 2 | 8 | 18) || !USER.is_installed() {
        crate::interrupts::exception(frame);
    }
    let cr2 = if v == PF_VECTOR {
        crate::cpu::read_cr2()
    } else {
        0
    };
    let fault = Fault {
        vector: v as usize,
        pc: frame.rip as usize,
        addr: cr2 as usize,
        code: frame.error_code as usize,
    };
    let to_kernel = if v == PF_VECTOR {
        KernelFault::Page {
            addr: cr2 as usize,
            write: frame.error_code & 2 != 0,
        }
    } else {
        KernelFault::Exception {
            vector: v as usize,
            addr: frame.rip as usize,
        }
    };
    USER.user_exception(
        frame,
        fault,
        to_kernel,
        format_args!(
            "vector {v} ({}) at rip {:#x}{}, error code {:#x}",
            exception_name(v),
            frame.rip,
            Address(v == PF_VECTOR, cr2),
            frame.error_code
        ),
    )
}

/// `, address 0x...` for a page fault, nothing otherwise.
struct Address(bool, u64);

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 {
            write!(f, ", address {:#x}", self.1)
        } else {
            Ok(())
        }
    }
}
