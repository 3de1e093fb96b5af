//! User mode: `syscall`/`sysret` entry, per-thread user contexts, returning to the thread the
//! kernel chose, user exceptions, and the idle loop.
//!
//! # Why it looks like this
//! The kernel core ([`kernel::Kernel`]) knows threads by index and hands back, at the end of
//! every entry, the thread that runs next on the core and that thread's result registers
//! ([`kernel::Exit`]). It keeps no machine state: the HAL saves each thread's full user
//! register set here ([`save`]) when the thread enters the kernel, and restores it (with the
//! result registers of a system call) when the kernel picks the thread again, on this core or,
//! after a migration, another one. The kernel's lock orders the save on the old core before
//! the restore on the new one.
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
//! handles them (console output, test reports, shutdown) through [`install`]'s handler.
//!
//! # Return to user mode
//! A context saved by `syscall` returns with `sysretq`, the fast path; a context saved by an
//! interrupt or exception, or a fresh thread, with `iretq`. A `syscall` context whose return
//! address is non-canonical never returns: the thread gets a #GP through the kernel instead.
//! Code and stack selectors and RFLAGS are forced to user values before either, so a context
//! can never return to ring 0 or with IOPL raised.
//!
//! # User exceptions
//! A page fault, invalid instruction, division error, protection fault ... in ring 3 is
//! printed (core, thread, vector, RIP, CR2, error code), recorded ([`fault_record`]) and handed
//! to the kernel: [`kernel::Kernel::page_fault`] for #PF, [`kernel::Kernel::exception`]
//! otherwise. The kernel sends it to the thread's pager or suspends the thread; the core goes on
//! with its next thread, and the other cores never notice. Machine checks, NMIs and double
//! faults stay fatal.

use core::arch::global_asm;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use kernel::config::MAX_THREADS;
use kernel::{Exit, Regs, Strategy, ThreadId};

use crate::apic::IpiKind;
use crate::cpu::{rdmsr, wrmsr};
use crate::gdt::{KERNEL_CODE, USER_CODE, USER_DATA};
use crate::interrupts::{exception_name, TrapFrame};
use crate::percpu::{CpuIndex, MAX_CPUS, PERCPU, PERCPU_KSTACK_OFFSET, PERCPU_SCRATCH_OFFSET};
use crate::{InitOnce, X86Hal};

/// `TrapFrame::vector` of a context saved by the `syscall` entry.
pub const SYSCALL_VECTOR: u64 = 0x100;

/// First debug system-call number (handled by the image's [`DebugHandler`], not the kernel).
pub const DEBUG_BASE: usize = 0x100;

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

/// The entry points the HAL calls, type-erased so that the trap code need not know which
/// locking strategy the kernel was built with. Implemented for every `Kernel<S, X86Hal>`.
pub trait KernelEntry: Sync {
    /// [`kernel::Kernel::syscall`].
    fn syscall(&self, cpu: CpuIndex, regs: Regs) -> Exit;
    /// [`kernel::Kernel::ipi`].
    fn ipi(&self, cpu: CpuIndex, kind: kernel::IpiKind) -> Exit;
    /// [`kernel::Kernel::timer_tick`].
    fn timer_tick(&self, cpu: CpuIndex) -> Exit;
    /// [`kernel::Kernel::interrupt`].
    fn interrupt(&self, cpu: CpuIndex, irq: usize) -> Exit;
    /// [`kernel::Kernel::page_fault`].
    fn page_fault(&self, cpu: CpuIndex, vaddr: usize, write: bool) -> Exit;
    /// [`kernel::Kernel::exception`].
    fn exception(&self, cpu: CpuIndex, vector: usize, addr: usize) -> Exit;
}

impl<S: Strategy> KernelEntry for kernel::Kernel<S, X86Hal> {
    fn syscall(&self, cpu: CpuIndex, regs: Regs) -> Exit {
        kernel::Kernel::syscall(self, cpu, regs)
    }
    fn ipi(&self, cpu: CpuIndex, kind: kernel::IpiKind) -> Exit {
        kernel::Kernel::ipi(self, cpu, kind)
    }
    fn timer_tick(&self, cpu: CpuIndex) -> Exit {
        kernel::Kernel::timer_tick(self, cpu)
    }
    fn interrupt(&self, cpu: CpuIndex, irq: usize) -> Exit {
        kernel::Kernel::interrupt(self, cpu, irq)
    }
    fn page_fault(&self, cpu: CpuIndex, vaddr: usize, write: bool) -> Exit {
        kernel::Kernel::page_fault(self, cpu, vaddr, write)
    }
    fn exception(&self, cpu: CpuIndex, vector: usize, addr: usize) -> Exit {
        kernel::Kernel::exception(self, cpu, vector, addr)
    }
}

/// Handles a debug system call (`regs[0] >= DEBUG_BASE`) of `thread` on `cpu`; returns the
/// thread's result registers (it continues at once, the kernel core is not entered).
pub type DebugHandler = fn(cpu: CpuIndex, thread: ThreadId, regs: &Regs) -> Regs;

struct Installed {
    kernel: &'static dyn KernelEntry,
    debug: DebugHandler,
}

static INSTALLED: InitOnce<Installed> = InitOnce::new();

/// How a saved context was left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Saved {
    /// Never ran: `frame` holds the initial registers.
    Fresh,
    /// Through `syscall`: the result registers of the kernel's [`Exit`] are loaded on return.
    Syscall,
    /// Through an interrupt or exception: restored exactly.
    Trap,
}

#[derive(Clone, Copy)]
struct Context {
    frame: TrapFrame,
    saved: Saved,
}

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

struct Contexts([UnsafeCell<Context>; MAX_THREADS]);

// SAFETY: a thread's context is only touched by the core that runs the thread (save on kernel
// entry, restore on return), or by the boot code before any core runs user threads. A thread
// is the current thread of at most one core at a time, and when it moves between cores the
// kernel's critical section orders the old core's save before the new core's restore.
unsafe impl Sync for Contexts {}

static CONTEXTS: Contexts = Contexts(
    [const {
        UnsafeCell::new(Context {
            frame: EMPTY_FRAME,
            saved: Saved::Fresh,
        })
    }; MAX_THREADS],
);

/// Whether a thread index has a context set by [`set_initial_context`].
static HAS_CONTEXT: [AtomicBool; MAX_THREADS] = [const { AtomicBool::new(false) }; MAX_THREADS];

const NO_THREAD: usize = usize::MAX;
/// The thread each core runs (index), or `NO_THREAD` while idle.
static CURRENT: [AtomicUsize; MAX_CPUS] = [const { AtomicUsize::new(NO_THREAD) }; MAX_CPUS];
/// Whether the core waits in the idle loop (an interrupt then enters the kernel).
static IDLE: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];
/// Device interrupts (bit = line) that arrived on a core with a kernel installed but while it
/// could not enter it (kernel-mode code with interrupts on that is not the idle loop: an
/// application processor waiting to be released). Their lines are masked; [`run`] hands them
/// to the kernel at the core's first entry, so none is lost. Only the core itself touches its
/// entry (interrupt handler, then `run` with interrupts off).
static PENDING: [[AtomicU64; 2]; MAX_CPUS] = [const { [const { AtomicU64::new(0) }; 2] }; MAX_CPUS];

/// The last user exception of a thread, as recorded by the HAL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultInfo {
    /// Exception vector (14 = #PF, 6 = #UD, 0 = #DE, 13 = #GP ...).
    pub vector: u64,
    /// Faulting instruction address.
    pub rip: u64,
    /// CR2 (page faults).
    pub addr: u64,
    /// Error code pushed by the CPU (0 if none).
    pub error_code: u64,
    /// Core it happened on.
    pub cpu: CpuIndex,
    /// TSC at the fault.
    pub tsc: u64,
    /// User exceptions of this thread so far.
    pub count: u64,
    /// Whether the thread ran again after its last exception (a pager resolved it).
    pub resumed: bool,
}

struct FaultSlot {
    count: AtomicU64,
    vector: AtomicU64,
    rip: AtomicU64,
    addr: AtomicU64,
    error_code: AtomicU64,
    cpu: AtomicUsize,
    tsc: AtomicU64,
    stopped: AtomicBool,
    resumed: AtomicBool,
}

static FAULTS: [FaultSlot; MAX_THREADS] = [const {
    FaultSlot {
        count: AtomicU64::new(0),
        vector: AtomicU64::new(0),
        rip: AtomicU64::new(0),
        addr: AtomicU64::new(0),
        error_code: AtomicU64::new(0),
        cpu: AtomicUsize::new(0),
        tsc: AtomicU64::new(0),
        stopped: AtomicBool::new(false),
        resumed: AtomicBool::new(false),
    }
}; MAX_THREADS];

/// The last user exception of thread `t`, if it had one.
pub fn fault_record(t: ThreadId) -> Option<FaultInfo> {
    let s = &FAULTS[t.index()];
    let count = s.count.load(Ordering::Acquire);
    (count > 0).then(|| FaultInfo {
        vector: s.vector.load(Ordering::Relaxed),
        rip: s.rip.load(Ordering::Relaxed),
        addr: s.addr.load(Ordering::Relaxed),
        error_code: s.error_code.load(Ordering::Relaxed),
        cpu: s.cpu.load(Ordering::Relaxed),
        tsc: s.tsc.load(Ordering::Relaxed),
        count,
        resumed: s.resumed.load(Ordering::Acquire),
    })
}

// The `syscall` entry. On entry: RCX = user RIP, R11 = user RFLAGS, RSP = user stack, GS = user
// GS, IF = 0 (SFMASK). It switches to the per-core GS and kernel stack, builds a `TrapFrame`
// (vector SYSCALL_VECTOR) exactly as an interrupt from user mode would, and calls
// `syscall_dispatch`, which never returns. The frame is 22 quadwords from the 4 KiB aligned
// stack top, so RSP is 16-byte aligned at the call.
global_asm!(
    r#"
    .text
    .global hal_syscall_entry
hal_syscall_entry:
    swapgs
    movq %rsp, %gs:{scratch}
    movq %gs:{kstack}, %rsp
    pushq ${user_ss}
    pushq %gs:{scratch}
    pushq %r11
    pushq ${user_cs}
    pushq %rcx
    pushq $0
    pushq ${vector}
    cld
    pushq %rax
    pushq %rbx
    pushq %rcx
    pushq %rdx
    pushq %rsi
    pushq %rdi
    pushq %rbp
    pushq %r8
    pushq %r9
    pushq %r10
    pushq %r11
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, %rdi
    xorl %ebp, %ebp
    callq {dispatch}
    ud2

    .global hal_enter_user
hal_enter_user:
    leaq -176(%rsi), %rsp
    movq %rdi, %rsi
    movq %rsp, %rdi
    movl $22, %ecx
    cld
    rep movsq
    movl %edx, %eax
    testl %eax, %eax
    jnz 2f
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %r11
    popq %r10
    popq %r9
    popq %r8
    popq %rbp
    popq %rdi
    popq %rsi
    popq %rdx
    popq %rcx
    popq %rbx
    popq %rax
    addq $16, %rsp
    swapgs
    iretq
2:
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %r11
    popq %r10
    popq %r9
    popq %r8
    popq %rbp
    popq %rdi
    popq %rsi
    popq %rdx
    popq %rcx
    popq %rbx
    popq %rax
    addq $16, %rsp
    movq (%rsp), %rcx
    movq 16(%rsp), %r11
    movq 24(%rsp), %rsp
    swapgs
    sysretq
"#,
    scratch = const PERCPU_SCRATCH_OFFSET,
    kstack = const PERCPU_KSTACK_OFFSET,
    user_ss = const USER_DATA as u64,
    user_cs = const USER_CODE as u64,
    vector = const SYSCALL_VECTOR,
    dispatch = sym syscall_dispatch,
    options(att_syntax),
);

const _: () = assert!(size_of::<TrapFrame>() == 22 * 8);

unsafe extern "C" {
    fn hal_syscall_entry();
    /// Copies the context `frame` to the top of the kernel stack `kstack_top`, loads it and
    /// returns to user mode (`sysretq` if `sysret != 0`, else `iretq`).
    fn hal_enter_user(frame: *const TrapFrame, kstack_top: u64, sysret: u32) -> !;
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

/// Sets the registers thread `t` starts with: instruction pointer, stack pointer and the first
/// three argument registers (`rdi`, `rsi`, `rdx`).
///
/// # Safety
/// Only before `t` first runs (boot time, before [`run`] on any core), and `rip`/`rsp` must be
/// addresses mapped user-accessible in `t`'s address space (else the thread faults at once,
/// which is reported, not unsound for the kernel).
pub unsafe fn set_initial_context(t: ThreadId, rip: u64, rsp: u64, args: [u64; 3]) {
    let frame = TrapFrame {
        rip,
        rsp,
        rdi: args[0],
        rsi: args[1],
        rdx: args[2],
        ..EMPTY_FRAME
    };
    // SAFETY: the caller guarantees no core runs `t` yet.
    unsafe {
        CONTEXTS.0[t.index()].get().write(Context {
            frame,
            saved: Saved::Fresh,
        })
    };
    HAS_CONTEXT[t.index()].store(true, Ordering::Release);
}

/// Sets the context thread `t` starts from at its next run (the kernel's `WriteRegisters`,
/// through `kernel::Hal::set_entry`): `rip`, `rsp`, `rdi = arg`, everything else zero.
///
/// # Safety
/// No core runs `t` or saves its context now, and the next core to run it is ordered after
/// this call (the kernel calls it in its critical section for an inactive thread that no core
/// has as current thread, and a core picks a thread only in a later section).
pub unsafe fn set_entry(t: ThreadId, rip: u64, rsp: u64, arg: u64) {
    let frame = TrapFrame {
        rip,
        rsp,
        rdi: arg,
        ..EMPTY_FRAME
    };
    // SAFETY: the caller guarantees that no core runs `t` or touches its context now; the
    // core that runs it next reads the context after the kernel's section that ordered it.
    unsafe {
        CONTEXTS.0[t.index()].get().write(Context {
            frame,
            saved: Saved::Fresh,
        })
    };
    HAS_CONTEXT[t.index()].store(true, Ordering::Release);
}

/// Publishes the kernel the trap code enters and the image's debug-call handler. Once, before
/// any core calls [`run`].
pub fn install(kernel: &'static dyn KernelEntry, debug: DebugHandler) {
    INSTALLED.set(Installed { kernel, debug });
}

fn installed() -> &'static Installed {
    match INSTALLED.get() {
        Some(i) => i,
        None => fatal(format_args!("user mode used before usermode::install")),
    }
}

fn fatal(args: core::fmt::Arguments<'_>) -> ! {
    crate::console::emergency_print(format_args!(
        "\n!!! hal-x86 usermode on cpu {}: {args}\n",
        crate::percpu::cpu_id()
    ));
    crate::exit::exit_qemu(crate::exit::ExitCode::Failure)
}

/// The thread core `cpu` runs, if any.
pub fn current_thread(cpu: CpuIndex) -> Option<ThreadId> {
    ThreadId::new(CURRENT[cpu].load(Ordering::Relaxed))
}

/// Starts scheduling on the calling core: enters the kernel once (as for a Reschedule IPI) and
/// runs the thread it picks, or idles. Never returns.
pub fn run() -> ! {
    let cpu = crate::percpu::cpu_id();
    let k = installed().kernel;
    crate::cpu::disable_interrupts();
    // Device interrupts that arrived before this core could enter the kernel. Each entry's
    // `Exit` only says which thread the core runs now, and the kernel keeps every thread's
    // result registers itself: the last entry's `Exit` is the one to follow.
    for (word, pending) in PENDING[cpu].iter().enumerate() {
        let mut bits = pending.swap(0, Ordering::Relaxed);
        while bits != 0 {
            let irq = word * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let _ = k.interrupt(cpu, irq);
        }
    }
    let exit = k.ipi(cpu, kernel::IpiKind::Reschedule);
    resume(cpu, exit)
}

/// Saves the interrupted user context of the calling core's current thread.
fn save(cpu: CpuIndex, frame: &TrapFrame, saved: Saved) -> ThreadId {
    let Some(t) = current_thread(cpu) else {
        fatal(format_args!(
            "entry from user mode (vector {:#x}) with no current thread",
            frame.vector
        ))
    };
    // SAFETY: `t` is this core's current thread: no other core touches its context (see
    // `Contexts`).
    unsafe {
        CONTEXTS.0[t.index()].get().write(Context {
            frame: *frame,
            saved,
        })
    };
    t
}

/// Returns to the thread the kernel chose (or idles). Never returns.
///
/// A context saved by `syscall` whose return address is non-canonical cannot return with
/// `sysretq` (it would #GP in ring 0 on Intel) nor with `iretq` (it faults in ring 0 after
/// `swapgs`): the thread gets a #GP (vector 13) through [`kernel::Kernel::exception`] instead,
/// as if its next instruction had faulted, and the core goes on with the thread the kernel
/// picks then. The kernel never maps the highest user page (see
/// [`kernel::config::USER_TOP`]), so this is a defensive check.
fn resume(cpu: CpuIndex, mut exit: Exit) -> ! {
    loop {
        let Some(t) = exit.thread else {
            CURRENT[cpu].store(NO_THREAD, Ordering::Relaxed);
            idle(cpu)
        };
        if !HAS_CONTEXT[t.index()].load(Ordering::Acquire) {
            fatal(format_args!(
                "the kernel picked thread {} which has no user context (created without \
                 set_initial_context)",
                t.index()
            ));
        }
        CURRENT[cpu].store(t.index(), Ordering::Relaxed);
        IDLE[cpu].store(false, Ordering::Relaxed);
        let f = &FAULTS[t.index()];
        // Load first, swap only when set: the common case (no fault recorded) then makes no
        // atomic read-modify-write (a locked `xchg` on x86, `ldrex`/`strex` on ARMv7). The
        // flag is set by `record_fault` on the core where `t` faulted, in the fault's entry,
        // which the kernel's sections order before the one that picked `t` again here; the
        // only other writer is this clear, by the core resuming `t` (one at a time). So a
        // `false` read here is not a set that the swap would have seen.
        if f.stopped.load(Ordering::Relaxed) && f.stopped.swap(false, Ordering::Relaxed) {
            f.resumed.store(true, Ordering::Release);
        }
        // SAFETY: `t` is now this core's current thread (see `Contexts`).
        let ctx = unsafe { &mut *CONTEXTS.0[t.index()].get() };
        let fr = &mut ctx.frame;
        if ctx.saved == Saved::Syscall {
            let r = exit.regs;
            fr.rax = r[0] as u64;
            fr.rdi = r[1] as u64;
            fr.rsi = r[2] as u64;
            fr.rdx = r[3] as u64;
            fr.r10 = r[4] as u64;
            fr.r8 = r[5] as u64;
            if fr.rip >= NON_CANONICAL {
                let rip = fr.rip;
                record_fault(cpu, t, 13, rip, 0, 0);
                crate::println!(
                    "user fault: cpu {cpu} thread {}: system call returns to non-canonical \
                     rip {rip:#x}: #GP handed to the kernel (pager, or the thread stops)",
                    t.index()
                );
                exit = installed().kernel.exception(cpu, 13, rip as usize);
                continue;
            }
        }
        fr.cs = u64::from(USER_CODE);
        fr.ss = u64::from(USER_DATA);
        fr.rflags = (fr.rflags & USER_FLAGS_KEPT) | RFLAGS_IF | RFLAGS_FIXED;
        let sysret = ctx.saved == Saved::Syscall;
        let top = PERCPU[cpu].kstack_top.load(Ordering::Relaxed);
        // SAFETY: the frame holds user selectors and sanitised flags (and, for `sysretq`, a
        // canonical return address: checked above); the assembly switches to the top of this
        // core's kernel stack (nothing on it is needed any more: every entry ends here or in
        // `idle`) before it copies and loads the frame.
        unsafe { hal_enter_user(fr, top, u32::from(sysret)) }
    }
}

/// Records a user exception of thread `t` for [`fault_record`].
fn record_fault(cpu: CpuIndex, t: ThreadId, vector: u64, rip: u64, addr: u64, error_code: u64) {
    let s = &FAULTS[t.index()];
    s.vector.store(vector, Ordering::Relaxed);
    s.rip.store(rip, Ordering::Relaxed);
    s.addr.store(addr, Ordering::Relaxed);
    s.error_code.store(error_code, Ordering::Relaxed);
    s.cpu.store(cpu, Ordering::Relaxed);
    s.tsc.store(crate::cpu::rdtsc(), Ordering::Relaxed);
    s.resumed.store(false, Ordering::Relaxed);
    s.stopped.store(true, Ordering::Relaxed);
    s.count.fetch_add(1, Ordering::Release);
}

/// Waits for interrupts with no thread to run; an interrupt enters the kernel (see
/// [`interrupt`]), which may pick a thread and leave this loop for good.
fn idle(cpu: CpuIndex) -> ! {
    IDLE[cpu].store(true, Ordering::Relaxed);
    loop {
        // SAFETY: `sti; hlt` sleeps until the next interrupt (the `sti` shadow makes the pair
        // atomic); the handler runs on this stack and either returns here or switches to user
        // mode; `cli` restores the kernel's interrupts-off state.
        unsafe { core::arch::asm!("sti", "hlt", "cli", options(nomem, nostack)) };
    }
}

extern "C" fn syscall_dispatch(frame: &mut TrapFrame) -> ! {
    let cpu = crate::percpu::cpu_id();
    let inst = installed();
    let t = save(cpu, frame, Saved::Syscall);
    let regs: Regs = [
        frame.rax as usize,
        frame.rdi as usize,
        frame.rsi as usize,
        frame.rdx as usize,
        frame.r10 as usize,
        frame.r8 as usize,
    ];
    let exit = if regs[0] >= DEBUG_BASE {
        Exit {
            thread: Some(t),
            regs: (inst.debug)(cpu, t, &regs),
        }
    } else {
        inst.kernel.syscall(cpu, regs)
    };
    resume(cpu, exit)
}

/// What interrupted: the local timer, an IPI or a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The local APIC timer.
    Timer,
    /// An inter-processor interrupt.
    Ipi(IpiKind),
    /// A device interrupt line (GSI), already masked at its I/O APIC.
    Device(usize),
}

fn kernel_ipi_kind(kind: IpiKind) -> kernel::IpiKind {
    match kind {
        IpiKind::Reschedule => kernel::IpiKind::Reschedule,
        IpiKind::TlbShootdown => kernel::IpiKind::TlbShootdown,
        IpiKind::Halt => kernel::IpiKind::Halt,
        IpiKind::Test => kernel::IpiKind::Test,
    }
}

/// A timer tick, IPI or device interrupt (already acknowledged): from user mode or on an idle
/// core it enters the kernel and continues with the thread the kernel picks (does not return);
/// otherwise (boot, no kernel installed) it returns to the interrupted code. A device
/// interrupt's line stays masked then: with no kernel it is dropped (no driver can have bound
/// it), with a kernel it is kept for the core's first entry ([`run`]).
pub(crate) fn interrupt(frame: &mut TrapFrame, event: Event) {
    let Some(inst) = INSTALLED.get() else { return };
    let cpu = crate::percpu::cpu_id();
    let from_user = frame.cs & 3 == 3;
    if !from_user && !IDLE[cpu].load(Ordering::Relaxed) {
        if let Event::Device(irq) = event {
            if let Some(w) = PENDING[cpu].get(irq / 64) {
                w.fetch_or(1 << (irq % 64), Ordering::Relaxed);
            }
        }
        return;
    }
    if from_user {
        save(cpu, frame, Saved::Trap);
    }
    let exit = match event {
        Event::Timer => inst.kernel.timer_tick(cpu),
        Event::Ipi(kind) => inst.kernel.ipi(cpu, kernel_ipi_kind(kind)),
        Event::Device(irq) => inst.kernel.interrupt(cpu, irq),
    };
    if from_user || exit.thread.is_some() {
        resume(cpu, exit);
    }
}

/// An exception in user mode: report it, record it and hand it to the kernel; continues with
/// the thread the kernel picks. NMIs, double faults and machine checks stay fatal.
pub(crate) fn user_exception(frame: &mut TrapFrame) -> ! {
    let v = frame.vector;
    if matches!(v, 2 | 8 | 18) || INSTALLED.get().is_none() {
        crate::interrupts::exception(frame);
    }
    let cpu = crate::percpu::cpu_id();
    let t = save(cpu, frame, Saved::Trap);
    let cr2 = crate::cpu::read_cr2();
    record_fault(cpu, t, v, frame.rip, cr2, frame.error_code);
    if v == 14 {
        crate::println!(
            "user fault: cpu {cpu} thread {}: vector {v} ({}) at rip {:#x}, address {cr2:#x}, \
             error code {:#x}: handed to the kernel (pager, or the thread stops)",
            t.index(),
            exception_name(v),
            frame.rip,
            frame.error_code
        );
    } else {
        crate::println!(
            "user fault: cpu {cpu} thread {}: vector {v} ({}) at rip {:#x}, error code {:#x}: \
             handed to the kernel (pager, or the thread stops)",
            t.index(),
            exception_name(v),
            frame.rip,
            frame.error_code
        );
    }
    let k = installed().kernel;
    let exit = if v == 14 {
        k.page_fault(cpu, cr2 as usize, frame.error_code & 2 != 0)
    } else {
        k.exception(cpu, v as usize, frame.rip as usize)
    };
    resume(cpu, exit)
}
