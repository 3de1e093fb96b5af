//! User mode on ARMv7-A: per-thread contexts, SVC system-call entry from USR mode, user
//! exceptions (data/prefetch abort, undefined instruction) handed to the kernel, IRQs (tick
//! timer, SGIs, device SPIs) from user mode or the idle loop entering the kernel, and the
//! return to the thread the kernel chose. Mirrors `hal_x86::usermode`.
//!
//! # System-call convention
//! `svc #0` in USR mode; number and arguments in `r0..r5` (the kernel's six `Regs`); results
//! in `r0..r5`; every other register is preserved. Numbers from [`DEBUG_BASE`] up are the
//! image's debug calls (console, done, exit), not kernel calls.
//!
//! # Entry stubs (in [`boot`](crate::boot))
//! An exception taken from USR mode (the stub checks SPSR.M) saves the whole user context on
//! the core's SVC stack, which is empty then (every kernel entry ends by returning to user
//! mode from its top, or in the idle loop):
//! `[pad, r0..r12, sp_usr, lr_usr, pc, cpsr]` (`srsdb` to the SVC stack, `stm {r0-r14}^`), and
//! calls [`user_trap`] with the frame and the vector number. Exceptions from the kernel's own
//! modes keep the old paths (fault report, IRQ return, semihosting SVC).
//!
//! # The return
//! `hal_armv7_enter_user` copies the thread's saved frame to the top of the SVC stack, loads
//! the user registers (`ldm {r0-r14}^`) and returns with `rfeia`, which restores pc and CPSR
//! together and leaves SP_svc at the top of the stack for the next entry.

use core::arch::global_asm;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use kernel::config::MAX_THREADS;
use kernel::{Exit, Regs, Strategy, ThreadId};

use crate::fault::FaultStatus;
use crate::gic::{self, IpiKind};
use crate::percpu::{CpuIndex, MAX_CPUS};
use crate::{ArmHal, InitOnce};

/// First debug-call number (below it: kernel system calls).
pub const DEBUG_BASE: usize = 0x100;

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

/// The kernel entry points the trap code calls (object-safe, so one image can hold one
/// kernel instance per locking strategy).
pub trait KernelEntry: Sync {
    /// A system call.
    fn syscall(&self, cpu: CpuIndex, regs: Regs) -> Exit;
    /// An IPI.
    fn ipi(&self, cpu: CpuIndex, kind: kernel::IpiKind) -> Exit;
    /// A tick.
    fn timer_tick(&self, cpu: CpuIndex) -> Exit;
    /// A device interrupt (SPI number).
    fn interrupt(&self, cpu: CpuIndex, irq: usize) -> Exit;
    /// A user page fault.
    fn page_fault(&self, cpu: CpuIndex, vaddr: usize, write: bool) -> Exit;
    /// Another user exception.
    fn exception(&self, cpu: CpuIndex, vector: usize, addr: usize) -> Exit;
}

impl<S: Strategy> KernelEntry for kernel::Kernel<S, ArmHal> {
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

/// The image's debug-call handler: gets the calling thread's registers, returns its results.
pub type DebugHandler = fn(cpu: CpuIndex, thread: ThreadId, regs: &Regs) -> Regs;

struct Installed {
    kernel: &'static dyn KernelEntry,
    debug: DebugHandler,
}

static INSTALLED: InitOnce<Installed> = InitOnce::new();

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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Saved {
    Fresh,
    Syscall,
    Trap,
}

#[derive(Clone, Copy)]
struct Context {
    frame: UserFrame,
    saved: Saved,
}

/// Per-thread saved contexts. A context is only accessed by the core that runs (or last ran,
/// and saved) its thread; the kernel hands a thread to another core only through its own
/// synchronisation (lock release / acquire), which orders the save before the load.
struct Contexts([UnsafeCell<Context>; MAX_THREADS]);

// SAFETY: see the type's documentation.
unsafe impl Sync for Contexts {}

static CONTEXTS: Contexts = Contexts(
    [const {
        UnsafeCell::new(Context {
            frame: UserFrame {
                r: [0; 13],
                sp: 0,
                lr: 0,
                pc: 0,
                cpsr: CPSR_USER,
            },
            saved: Saved::Fresh,
        })
    }; MAX_THREADS],
);

static HAS_CONTEXT: [AtomicBool; MAX_THREADS] = [const { AtomicBool::new(false) }; MAX_THREADS];

const NO_THREAD: usize = usize::MAX;
static CURRENT: [AtomicUsize; MAX_CPUS] = [const { AtomicUsize::new(NO_THREAD) }; MAX_CPUS];
static IDLE: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];
/// Device interrupts (bit = SPI) that arrived on a core with a kernel installed but while it
/// could not enter it (kernel code with IRQs unmasked that is not the idle loop: a secondary
/// core waiting to be released). Their SPIs are disabled; [`run`] hands them to the kernel at
/// the core's first entry, so none is lost. Only the core itself touches its entry (IRQ
/// handler, then `run` with IRQs masked).
static PENDING: [[AtomicU32; 4]; MAX_CPUS] = [const { [const { AtomicU32::new(0) }; 4] }; MAX_CPUS];

/// The last user exception of a thread, for tests and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultInfo {
    /// Vector (see [`vector`]).
    pub vector: u32,
    /// Faulting instruction.
    pub pc: u32,
    /// DFAR/IFAR (0 for undefined instructions).
    pub addr: u32,
    /// DFSR/IFSR (0 for undefined instructions).
    pub status: u32,
    /// Core it happened on.
    pub cpu: CpuIndex,
    /// Cycle counter when it happened.
    pub tsc: u64,
    /// Exceptions of this thread so far.
    pub count: u64,
    /// Whether the thread ran again after its last exception.
    pub resumed: bool,
}

struct FaultSlot {
    count: AtomicU64,
    vector: AtomicU32,
    pc: AtomicU32,
    addr: AtomicU32,
    status: AtomicU32,
    cpu: AtomicUsize,
    tsc: AtomicU64,
    stopped: AtomicBool,
    resumed: AtomicBool,
}

static FAULTS: [FaultSlot; MAX_THREADS] = [const {
    FaultSlot {
        count: AtomicU64::new(0),
        vector: AtomicU32::new(0),
        pc: AtomicU32::new(0),
        addr: AtomicU32::new(0),
        status: AtomicU32::new(0),
        cpu: AtomicUsize::new(0),
        tsc: AtomicU64::new(0),
        stopped: AtomicBool::new(false),
        resumed: AtomicBool::new(false),
    }
}; MAX_THREADS];

/// The last user exception of `t`, if it had one.
pub fn fault_record(t: ThreadId) -> Option<FaultInfo> {
    let s = &FAULTS[t.index()];
    let count = s.count.load(Ordering::Acquire);
    (count > 0).then(|| FaultInfo {
        vector: s.vector.load(Ordering::Relaxed),
        pc: s.pc.load(Ordering::Relaxed),
        addr: s.addr.load(Ordering::Relaxed),
        status: s.status.load(Ordering::Relaxed),
        cpu: s.cpu.load(Ordering::Relaxed),
        tsc: s.tsc.load(Ordering::Relaxed),
        count,
        resumed: s.resumed.load(Ordering::Acquire),
    })
}

global_asm!(
    r#"
    .section .text.hal_armv7_usermode, "ax"
    .arm
    .global hal_armv7_enter_user
    .type hal_armv7_enter_user, %function
    @ r0 = frame (17 words), r1 = top of this core's SVC stack. Does not return.
hal_armv7_enter_user:
    sub     r2, r1, #68
    mov     sp, r2
    ldmia   r0!, {{r3-r10}}                 @ r0..r7
    stmia   r2!, {{r3-r10}}
    ldmia   r0!, {{r3-r10}}                 @ r8..r12, sp, lr, pc
    stmia   r2!, {{r3-r10}}
    ldr     r3, [r0]                        @ cpsr
    str     r3, [r2]
    clrex                                   @ no LDREX reservation of the kernel or another thread may pair with this thread's STREX
    ldm     sp, {{r0-r14}}^                 @ user r0-r12, SP_usr, LR_usr (no writeback with ^)
    add     sp, sp, #60
    rfeia   sp!                             @ pc and CPSR at once; SP_svc ends at the top
"#
);

unsafe extern "C" {
    fn hal_armv7_enter_user(frame: *const UserFrame, stack_top: usize) -> !;
}

/// Sets the registers `t` starts with: `pc`, `sp` and `r0..r2` = `args`, USR mode.
///
/// # Safety
/// Only before `t` first runs (before [`run`] on any core).
pub unsafe fn set_initial_context(t: ThreadId, pc: u32, sp: u32, args: [u32; 3]) {
    let mut frame = UserFrame {
        pc,
        sp,
        cpsr: CPSR_USER,
        ..UserFrame::default()
    };
    frame.r[..3].copy_from_slice(&args);
    // SAFETY: the caller guarantees no core runs `t` yet.
    unsafe {
        CONTEXTS.0[t.index()].get().write(Context {
            frame,
            saved: Saved::Fresh,
        })
    };
    HAS_CONTEXT[t.index()].store(true, Ordering::Release);
}

/// Sets the context `t` starts from the next time a core runs it (`WriteRegisters`): `pc`,
/// `sp`, `arg` in `r0`, every other register zero, USR mode.
///
/// # Safety
/// No core runs `t` or saves its context now, and the core that runs it next does so after a
/// kernel section ordered after this call (the kernel calls it for an inactive thread that is no
/// core's current thread, inside its critical section).
pub unsafe fn set_entry(t: ThreadId, pc: u32, sp: u32, arg: u32) {
    // SAFETY: the caller's guarantee is the one `set_initial_context` needs: nobody runs `t`.
    unsafe { set_initial_context(t, pc, sp, [arg, 0, 0]) }
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

/// [`installed`] for exceptions taken from user mode, without the Acquire load (a `dmb ish`
/// per trap): a core reaches user mode only through [`resume`], first called from [`run`] on
/// that core, whose [`installed`] saw the value set (Acquire) earlier in program order.
fn installed_from_user() -> &'static Installed {
    // SAFETY: see above: this core's `run` got `Some` from `INSTALLED.get()` before it first
    // entered user mode, so before any trap from user mode on this core.
    unsafe { INSTALLED.get_observed() }
}

fn fatal(args: core::fmt::Arguments<'_>) -> ! {
    crate::console::emergency_print(format_args!(
        "\n!!! hal-armv7 usermode on cpu {}: {args}\n",
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
            let irq = word * 32 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let _ = k.interrupt(cpu, irq);
        }
    }
    let exit = k.ipi(cpu, kernel::IpiKind::Reschedule);
    resume(cpu, exit)
}

fn save(cpu: CpuIndex, frame: &UserFrame, saved: Saved) -> ThreadId {
    let Some(t) = current_thread(cpu) else {
        fatal(format_args!(
            "entry from user mode (pc {:#x}) with no current thread",
            frame.pc
        ))
    };
    let ctx = CONTEXTS.0[t.index()].get();
    // SAFETY: `t` is this core's current thread (see `Contexts`), so nothing else accesses
    // its context; `addr_of_mut!` makes no reference.
    unsafe {
        copy_frame(core::ptr::addr_of_mut!((*ctx).frame), frame);
        core::ptr::addr_of_mut!((*ctx).saved).write(saved);
    }
    t
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

/// Returns to the thread the kernel chose (or idles). Never returns.
fn resume(cpu: CpuIndex, exit: Exit) -> ! {
    let Some(t) = exit.thread else {
        CURRENT[cpu].store(NO_THREAD, Ordering::Relaxed);
        idle(cpu)
    };
    // Relaxed (an Acquire load is a `dmb ish` per return to user mode): this is a check of
    // the kernel's choice, not what publishes the context. The context of `t` was written
    // either before any core ran (`set_initial_context`, published by the secondary cores'
    // start) or in a kernel section (`set_entry`, WriteRegisters of an inactive thread) that
    // the strategy orders before the section that made `t` runnable and before the one that
    // just picked `t` here, which read `t`'s state under the same ordering. That chain makes
    // the context write (and the flag's store) happen-before this load and the frame accesses
    // below, as it does for the kernel's own TCB state; coherence then rules out reading the
    // flag's old `false`.
    if !HAS_CONTEXT[t.index()].load(Ordering::Relaxed) {
        fatal(format_args!(
            "the kernel picked thread {} which has no user context",
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
        for (r, v) in fr.r[..6].iter_mut().zip(exit.regs) {
            *r = v as u32;
        }
    }
    fr.cpsr = (fr.cpsr & CPSR_KEPT) | CPSR_USER;
    let top = crate::boot::stack_top(cpu);
    // SAFETY: the frame returns to USR mode (CPSR sanitised above); the stub resets SP_svc to
    // the top of this core's SVC stack, whose contents are dead (every entry ends here or in
    // `idle`).
    unsafe { hal_armv7_enter_user(fr, top) }
}

/// Waits for interrupts with no thread to run; an interrupt enters the kernel (see
/// [`idle_interrupt`]), which may pick a thread and leave this loop for good.
fn idle(cpu: CpuIndex) -> ! {
    IDLE[cpu].store(true, Ordering::Relaxed);
    loop {
        // SAFETY: unmask IRQs, wait, mask again; the IRQ handler runs on this stack and either
        // returns here or switches to user mode for good. `dsb` before `wfi` is not needed for
        // correctness (nothing is waiting on our stores) and `wfi` tolerates a pending IRQ.
        unsafe { core::arch::asm!("cpsie i", "wfi", "cpsid i", options(nomem, nostack)) };
    }
}

fn kernel_ipi_kind(kind: IpiKind) -> kernel::IpiKind {
    match kind {
        IpiKind::Reschedule => kernel::IpiKind::Reschedule,
        IpiKind::TlbShootdown => kernel::IpiKind::TlbShootdown,
        IpiKind::Halt => kernel::IpiKind::Halt,
        IpiKind::Test => kernel::IpiKind::Test,
    }
}

/// What an acknowledged interrupt means for the kernel.
pub(crate) enum Event {
    /// The tick timer.
    Timer,
    /// An SGI.
    Ipi(IpiKind),
    /// A device interrupt (SPI number), already disabled at the distributor.
    Device(usize),
    /// Nothing for the kernel (spurious or unknown, already reported).
    None,
}

/// Acknowledges one interrupt, does the HAL's part (timer reload, counters, `Halt`) and
/// signals its end; `None` if nothing was pending.
pub(crate) fn take_interrupt() -> Option<Event> {
    let irq = gic::acknowledge()?;
    let id = irq.id();
    let ev = if id < 16 {
        crate::percpu::this_cpu()
            .ipis
            .fetch_add(1, Ordering::Relaxed);
        match IpiKind::from_sgi(id) {
            Some(IpiKind::Halt) => {
                gic::end_of_interrupt(irq);
                crate::cpu::halt_forever();
            }
            Some(k) => Event::Ipi(k),
            None => Event::None,
        }
    } else if id == crate::timer::irq_id() {
        crate::timer::on_interrupt();
        Event::Timer
    } else if id >= 32 {
        // A device: disabled before the EOI below (whose `dsb` completes the disable first,
        // see `gic`), kept disabled until its driver acknowledges it through the kernel.
        let spi = id - 32;
        gic::count_spi(spi);
        gic::mask_spi(spi);
        Event::Device(spi as usize)
    } else {
        crate::console::emergency_print(format_args!(
            "hal-armv7: cpu {}: unexpected interrupt {id}\n",
            crate::percpu::cpu_id()
        ));
        Event::None
    };
    gic::end_of_interrupt(irq);
    Some(ev)
}

fn enter_kernel(inst: &Installed, cpu: CpuIndex, ev: &Event) -> Option<Exit> {
    match ev {
        Event::Timer => Some(inst.kernel.timer_tick(cpu)),
        Event::Ipi(k) => Some(inst.kernel.ipi(cpu, kernel_ipi_kind(*k))),
        Event::Device(irq) => Some(inst.kernel.interrupt(cpu, *irq)),
        Event::None => None,
    }
}

/// An interrupt taken in a kernel mode: if the core idles in [`idle`] with a kernel
/// installed, enters the kernel and may leave for user mode (does not return then); otherwise
/// (boot code, no kernel yet) it only returns. A device interrupt's SPI stays disabled then:
/// with no kernel it is dropped (no driver can have bound it), with a kernel it is kept for
/// the core's first entry ([`run`]).
pub(crate) fn idle_interrupt(ev: &Event) {
    let Some(inst) = INSTALLED.get() else { return };
    let cpu = crate::percpu::cpu_id();
    if !IDLE[cpu].load(Ordering::Relaxed) {
        if let Event::Device(irq) = *ev {
            if let Some(w) = PENDING[cpu].get(irq / 32) {
                w.fetch_or(1 << (irq % 32), Ordering::Relaxed);
            }
        }
        return;
    }
    if let Some(exit) = enter_kernel(inst, cpu, ev) {
        if exit.thread.is_some() {
            resume(cpu, exit);
        }
    }
}

/// Every exception taken from USR mode, with the saved user frame on the SVC stack.
pub(crate) extern "C" fn user_trap(frame: &mut UserFrame, vec: u32) -> ! {
    let cpu = crate::percpu::cpu_id();
    let inst = installed_from_user();
    match vec {
        vector::SVC => {
            let t = save(cpu, frame, Saved::Syscall);
            let mut regs: Regs = [0; 6];
            for (r, v) in regs.iter_mut().zip(frame.r) {
                *r = v as usize;
            }
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
        vector::IRQ => {
            save(cpu, frame, Saved::Trap);
            let t = current_thread(cpu);
            let exit = take_interrupt()
                .and_then(|ev| enter_kernel(inst, cpu, &ev))
                .unwrap_or(Exit {
                    thread: t,
                    regs: [0; 6],
                });
            resume(cpu, exit)
        }
        vector::DATA_ABORT | vector::PREFETCH_ABORT | vector::UNDEFINED => {
            user_fault(inst, cpu, frame, vec)
        }
        _ => fatal(format_args!("unexpected exception {vec} from user mode")),
    }
}

fn user_fault(inst: &Installed, cpu: CpuIndex, frame: &UserFrame, vec: u32) -> ! {
    let t = save(cpu, frame, Saved::Trap);
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
    let s = &FAULTS[t.index()];
    s.vector.store(vec, Ordering::Relaxed);
    s.pc.store(frame.pc, Ordering::Relaxed);
    s.addr.store(addr, Ordering::Relaxed);
    s.status.store(status, Ordering::Relaxed);
    s.cpu.store(cpu, Ordering::Relaxed);
    s.tsc.store(crate::timer::cycles(), Ordering::Relaxed);
    s.resumed.store(false, Ordering::Relaxed);
    s.stopped.store(true, Ordering::Relaxed);
    s.count.fetch_add(1, Ordering::Release);
    let fs = FaultStatus::new(status);
    let kind = crate::fault::ExceptionKind::from_vector(vec).name();
    // Translation (section/page) and permission (section/page) faults are page faults the
    // pager may resolve; anything else is an exception.
    let page_fault =
        vec != vector::UNDEFINED && matches!(fs.fs(), 0b00101 | 0b00111 | 0b01101 | 0b01111);
    crate::println!(
        "user fault: cpu {cpu} thread {}: {kind} at pc {:#x}, address {addr:#x}, status {status:#x} \
         ({}): handed to the kernel (pager, or the thread stops)",
        t.index(),
        frame.pc,
        if vec == vector::UNDEFINED { "undefined instruction" } else { fs.description() },
    );
    let exit = if page_fault {
        inst.kernel.page_fault(
            cpu,
            addr as usize,
            vec == vector::DATA_ABORT && fs.is_write(),
        )
    } else {
        inst.kernel.exception(cpu, vec as usize, frame.pc as usize)
    };
    resume(cpu, exit)
}
