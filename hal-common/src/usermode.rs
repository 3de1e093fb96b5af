//! User mode, the architecture-neutral part: every thread's saved user context, the return to
//! the thread the kernel chose, system-call and interrupt entry into the kernel, the idle
//! state, interrupts kept for a core's first entry, and the record of user faults.
//!
//! # Why it looks like this
//! The kernel core ([`kernel::Kernel`]) knows threads by index and hands back, at the end of
//! every entry, the thread that runs next on the core and that thread's result registers
//! ([`kernel::Exit`]). It keeps no machine state: the HAL saves each thread's full user
//! register set here when the thread enters the kernel, and restores it (with the result
//! registers of a system call) when the kernel picks the thread again, on this core or, after
//! a migration, another one. The kernel's lock orders the save on the old core before the
//! restore on the new one.
//!
//! Every kernel entry from user mode starts at the top of the core's kernel stack and never
//! returns along the call chain: it ends by entering user mode or the idle loop. So nothing
//! lives on a kernel stack between two entries, and a thread switch is just "restore another
//! context". The kernel runs with interrupts masked, so entries never nest.
//!
//! The architecture ([`UserArch`]) supplies the register frame its entry stubs save, how a
//! system call's arguments and results map onto it, what must be checked and forced before a
//! frame may return to user mode, the return itself, and the idle wait. [`UserMode`] is one
//! static per HAL.

use core::cell::UnsafeCell;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use kernel::config::{MAX_IRQS, MAX_THREADS};
use kernel::{AtomicId, Exit, ExitTo, Regs, SavedRegs, Strategy, ThreadId};

use crate::percpu::CpuIndex;
use crate::InitOnce;

/// First debug system-call number: calls from here up are the image's (console, test reports,
/// shutdown), handled by its [`DebugHandler`] without entering the kernel core.
pub const DEBUG_BASE: usize = 0x100;

/// The kernel entry points the trap code calls, type-erased so that the trap code need not
/// know which locking strategy the kernel was built with (one image can hold one kernel
/// instance per strategy). Implemented for every [`kernel::Kernel`].
pub trait KernelEntry: Sync {
    /// [`kernel::Kernel::syscall_then`]: for a caller that knows the kernel's type (the
    /// system-call entry made for it, see [`UserMode::install`]).
    fn syscall_then<T: ExitTo>(&self, cpu: CpuIndex, regs: SavedRegs, then: T) -> T::Out
    where
        Self: Sized;
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

impl<S: Strategy, H: kernel::Hal> KernelEntry for kernel::Kernel<S, H> {
    // In line in `UserMode::syscall_entry`, the system-call entry of this kernel type.
    #[inline(always)]
    fn syscall_then<T: ExitTo>(&self, cpu: CpuIndex, regs: SavedRegs, then: T) -> T::Out {
        kernel::Kernel::syscall_then(self, cpu, regs, then)
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

/// What the architecture supplies.
pub trait UserArch: 'static {
    /// A user context as the entry stubs save it.
    type Frame: Copy + Send;
    /// The frame of a thread that never ran: user mode, interrupts on, every register zero.
    const EMPTY_FRAME: Self::Frame;
    /// Padding after a thread's saved context (frame and kind), so that the contexts' stride,
    /// which every system call's save and return scale a thread index by, is one the target
    /// scales cheaply (ARMv7: 72 bytes took two shifted adds, 128 takes one; x86_64 multiplies
    /// by any stride in one instruction and pads nothing). See [`context_size`].
    type ContextPad: Copy + Send;
    /// The padding's value.
    const CONTEXT_PAD: Self::ContextPad;

    /// The calling core's index.
    fn cpu_id() -> CpuIndex;
    /// The calling core's index in the system-call entry, from `passed`, the third argument
    /// the stub gives the entry (`UserMode::syscall_entry`, see [`UserMode::SYSCALL_ENTRY`]).
    /// The default returns it: ARMv7's stub read the index (TPIDRURO) for its stack and
    /// passes it on (fewer instructions than reading it again in the entry). x86_64's stub
    /// passes nothing there and its `syscall_cpu` reads GS: one
    /// load, straight into the register the entry keeps the index in (passed, it took a move
    /// there as well).
    #[inline(always)]
    fn syscall_cpu(passed: CpuIndex) -> CpuIndex {
        passed
    }
    /// Masks the calling core's interrupts.
    fn disable_interrupts();
    /// The cycle counter (fault records).
    fn cycles() -> u64;
    /// Prints a line of the user-fault report (the console).
    fn print(args: fmt::Arguments<'_>);
    /// Reports a HAL invariant broken on this path and stops the machine with failure.
    fn fatal(args: fmt::Arguments<'_>) -> !;

    /// A fresh frame: entry `pc`, stack `sp`, the first three argument registers `args`.
    fn initial_frame(pc: usize, sp: usize, args: [usize; 3]) -> Self::Frame;
    /// The frame's instruction pointer (reports).
    fn pc(frame: &Self::Frame) -> usize;
    /// Where a system call's number and arguments are in the frame the system-call entry
    /// saved (the frame keeps the six registers together, in the kernel's order), without a
    /// reference to the frame (for the kernel's [`SavedRegs`], which reads them while the
    /// entry runs).
    fn syscall_regs_ptr(frame: *const Self::Frame) -> *const Regs;
    /// The same registers, to load a system call's results into the frame (when it does not
    /// return at once, see [`return_from_syscall`](Self::return_from_syscall)).
    fn syscall_regs_mut(frame: &mut Self::Frame) -> &mut Regs;
    /// Forces the frame to return to user mode with user-safe flags. Every frame can return:
    /// what a return path could not survive is ruled out where the frame is made (x86_64's
    /// system-call return to a non-canonical address: no user page ends there).
    ///
    /// A system call's frame (`from_syscall`) needs no forcing: the stub saved the mode and
    /// flags that the processor recorded at the call, which user mode cannot make privileged,
    /// and nothing writes them afterwards (the kernel writes a context only whole, through
    /// [`UserMode::set_initial_context`], which marks it fresh, and a call's results,
    /// through [`syscall_regs_mut`](Self::syscall_regs_mut)). Skipping it is a load, two
    /// operations and a store less per system call.
    fn prepare_return(frame: &mut Self::Frame, from_syscall: bool);
    /// Returns to user mode with `frame`, the thread's saved context (an interrupt's, a
    /// fault's or a fresh thread's return), from the context itself, where the thread's next
    /// entry on this core then saves its registers.
    ///
    /// # Safety
    /// `frame` passed [`prepare_return`](Self::prepare_return) (not from a system call) and is
    /// the thread's context in this [`UserMode`], which stays where it is; nothing on the
    /// kernel stack is needed any more (every entry ends here, in
    /// [`return_from_syscall`](Self::return_from_syscall) or in the idle loop).
    unsafe fn enter_user(cpu: CpuIndex, frame: &Self::Frame) -> !;
    /// Returns from a system call to user mode: `frame` is the thread's context as its
    /// system-call entry saved it, `regs` the call's results, loaded into the six system-call
    /// registers directly. The frame's words for those registers are not read (they keep the
    /// call's arguments): storing the results there only for the return to load them again
    /// cost 12 instructions per IPC round trip on both architectures, and nothing else reads
    /// the context of a thread while it runs (see `UserMode::contexts`); its next entry saves
    /// it whole again.
    ///
    /// # Safety
    /// As for [`enter_user`](Self::enter_user), with `frame` having passed
    /// [`prepare_return`](Self::prepare_return) as a system call's.
    unsafe fn return_from_syscall(cpu: CpuIndex, frame: &Self::Frame, regs: Regs) -> !;
    /// Enables interrupts and waits for one, then masks them again (one round of the idle
    /// loop; an interrupt may leave the loop for user mode through [`UserMode::interrupt`]).
    fn wait_for_interrupt();

    /// Saves an interrupt's or fault's frame into a context slot (a system call's stub saves
    /// its frame in the context itself, see [`UserMode::SYSCALL_ENTRY`]). The default is a
    /// plain copy; ARMv7 overrides it to keep the compiler from calling `memcpy` on every
    /// trap, and to skip the copy of an interrupt's frame, which its entry saved in the
    /// context already (`dst == src`).
    ///
    /// # Safety
    /// `dst` is valid for a write of a frame, and nothing else accesses it meanwhile; `src`
    /// is either `dst` itself or does not overlap it.
    #[inline(always)]
    unsafe fn save_frame(dst: *mut Self::Frame, src: &Self::Frame) {
        // SAFETY: forwarded contract.
        unsafe { dst.write(*src) }
    }
}

/// What interrupted a core, as the kernel sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The tick timer.
    Timer,
    /// An inter-processor interrupt.
    Ipi(kernel::IpiKind),
    /// A device interrupt line, already masked at its controller until the driver acknowledges
    /// it through the kernel.
    Device(usize),
}

/// A user exception, as recorded for [`UserMode::fault_record`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The architecture's vector number (x86: 14 = #PF, 13 = #GP ...; ARMv7: 4 = data abort,
    /// 3 = prefetch abort, 1 = undefined instruction).
    pub vector: usize,
    /// The faulting instruction.
    pub pc: usize,
    /// The faulting address (x86 CR2; ARMv7 DFAR/IFAR), 0 if none.
    pub addr: usize,
    /// The status the CPU gave (x86 error code; ARMv7 DFSR/IFSR), 0 if none.
    pub code: usize,
}

/// What the kernel is told about a user exception.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelFault {
    /// A page fault the thread's pager may resolve.
    Page {
        /// The address.
        addr: usize,
        /// Whether it was a write.
        write: bool,
    },
    /// Another exception (the kernel gives it to the pager or stops the thread).
    Exception {
        /// The vector.
        vector: usize,
        /// The address reported with it (the faulting instruction).
        addr: usize,
    },
}

/// The last user exception of a thread, for tests and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultInfo {
    /// What happened.
    pub fault: Fault,
    /// Core it happened on.
    pub cpu: CpuIndex,
    /// Cycle counter when it happened.
    pub cycles: u64,
    /// User exceptions of this thread so far.
    pub count: u64,
    /// Whether the thread ran again after its last exception (a pager resolved it).
    pub resumed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Saved {
    /// Never ran: the frame holds the initial registers.
    Fresh,
    /// Through the system-call entry: the result registers of the kernel's [`Exit`] are
    /// loaded on return.
    Syscall,
    /// Through an interrupt or exception: restored exactly.
    Trap,
}

#[repr(C)]
struct Context<F, P> {
    frame: F,
    saved: Saved,
    _pad: P,
}

/// The size of a thread's saved context slot (frame, kind and [`UserArch::ContextPad`]), the
/// stride of the contexts' table, for a HAL's compile-time check of its padding.
pub const fn context_size<A: UserArch>() -> usize {
    core::mem::size_of::<Context<A::Frame, A::ContextPad>>()
}

struct FaultSlot {
    count: AtomicU64,
    vector: AtomicUsize,
    pc: AtomicUsize,
    addr: AtomicUsize,
    code: AtomicUsize,
    cpu: AtomicUsize,
    cycles: AtomicU64,
    stopped: AtomicBool,
    resumed: AtomicBool,
}

impl FaultSlot {
    const fn new() -> Self {
        Self {
            count: AtomicU64::new(0),
            vector: AtomicUsize::new(0),
            pc: AtomicUsize::new(0),
            addr: AtomicUsize::new(0),
            code: AtomicUsize::new(0),
            cpu: AtomicUsize::new(0),
            cycles: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            resumed: AtomicBool::new(false),
        }
    }
}

struct Installed {
    kernel: &'static dyn KernelEntry,
    debug: DebugHandler,
}

/// The type of [`UserMode::syscall_entry`] (see [`UserMode::SYSCALL_ENTRY`]).
type SyscallEntry<A, const CPUS: usize> =
    unsafe extern "C" fn(&UserMode<A, CPUS>, *const <A as UserArch>::Frame, CpuIndex) -> !;

/// Faults of one thread that get a console line each (see `user_exception`).
const PRINTED_FAULTS: u64 = 2;
/// Words of a core's kept-interrupt bitmap.
const PENDING_WORDS: usize = MAX_IRQS.div_ceil(32);

/// The user-mode state of a machine with `CPUS` cores.
///
/// `repr(C)`, in this order: the system-call stub reaches the entry word at a fixed small
/// offset (ARMv7: an `ldr` immediate, at most 4095), and the words every entry touches come
/// before the per-thread tables, so that ARMv7 reaches each with an immediate offset from
/// one base instead of building a large offset first.
#[repr(C)]
pub struct UserMode<A: UserArch, const CPUS: usize> {
    /// The address of [`UserMode::syscall_entry`] for the installed kernel's type (0 before
    /// [`install`](UserMode::install)): the HAL's system-call stub calls it through this word
    /// ([`UserMode::SYSCALL_ENTRY`]), so that the system call, the hot entry, reaches the
    /// kernel with its code in line (not through [`KernelEntry`]'s vtable) and with no Rust
    /// function of the HAL's in between.
    syscall_entry: AtomicUsize,
    installed: InitOnce<Installed>,
    /// The thread each core runs (`None` while idle).
    current: [AtomicId<ThreadId>; CPUS],
    /// Whether the core waits in the idle loop (an interrupt then enters the kernel).
    idle: [AtomicBool; CPUS],
    /// Whether a thread has a context ([`UserMode::set_initial_context`], `set_entry`).
    has_context: [AtomicBool; MAX_THREADS],
    /// Device interrupts (bit = line) that arrived on a core with a kernel installed but
    /// while it could not enter it (kernel code with interrupts on that is not the idle loop:
    /// a secondary core waiting to be released). Their lines are masked; [`UserMode::run`]
    /// hands them to the kernel at the core's first entry, so none is lost. Only the core
    /// itself touches its entry (interrupt handler, then `run` with interrupts masked).
    pending: [[AtomicU32; PENDING_WORDS]; CPUS],
    faults: [FaultSlot; MAX_THREADS],
    /// Per-thread saved contexts. A context is only accessed by the core that runs (or last
    /// ran, and saved) its thread, or by the kernel's `WriteRegisters` of a thread no core
    /// runs; the kernel hands a thread to another core only through its own synchronisation
    /// (lock release / acquire), which orders the save before the load.
    contexts: [UnsafeCell<Context<A::Frame, A::ContextPad>>; MAX_THREADS],
}

// SAFETY: the contexts are the only non-`Sync` part; see the field's documentation for why
// every access to one is made by one core at a time, ordered by the kernel's synchronisation.
unsafe impl<A: UserArch, const CPUS: usize> Sync for UserMode<A, CPUS> {}

impl<A: UserArch, const CPUS: usize> UserMode<A, CPUS> {
    /// No kernel installed, no thread with a context.
    pub const fn new() -> Self {
        Self {
            syscall_entry: AtomicUsize::new(0),
            installed: InitOnce::new(),
            current: [const { AtomicId::none() }; CPUS],
            idle: [const { AtomicBool::new(false) }; CPUS],
            has_context: [const { AtomicBool::new(false) }; MAX_THREADS],
            pending: [const { [const { AtomicU32::new(0) }; PENDING_WORDS] }; CPUS],
            faults: [const { FaultSlot::new() }; MAX_THREADS],
            contexts: [const {
                UnsafeCell::new(Context {
                    frame: A::EMPTY_FRAME,
                    saved: Saved::Fresh,
                    _pad: A::CONTEXT_PAD,
                })
            }; MAX_THREADS],
        }
    }

    /// Publishes the kernel the trap code enters and the image's debug-call handler. Once,
    /// before any core calls [`run`](Self::run).
    ///
    /// The kernel's type is kept for the system-call entry (see [`syscall_entry`]): an
    /// image holds one kernel per strategy and installs the one it booted, so every other
    /// entry reaches it through [`KernelEntry`]'s vtable, but the system call, with the IPC
    /// fastpath on it, gets its own copy of the entry with the kernel's code in line: no
    /// dynamic call, no frame for the kernel's function, no copies of the arguments and the
    /// [`Exit`] through memory.
    ///
    /// [`syscall_entry`]: Self::syscall_entry
    pub fn install<K: KernelEntry + 'static>(&self, kernel: &'static K, debug: DebugHandler) {
        let entry: SyscallEntry<A, CPUS> = Self::syscall_entry::<K>;
        // Relaxed: published by the Release of `set` below; a core reaches user mode, and so
        // the stub that reads this word, only after `run` saw the set (Acquire).
        self.syscall_entry.store(entry as usize, Ordering::Relaxed);
        self.installed.set(Installed { kernel, debug });
    }

    /// Whether [`install`](Self::install) happened.
    pub fn is_installed(&self) -> bool {
        self.installed.get().is_some()
    }

    fn installed(&self) -> &Installed {
        match self.installed.get() {
            Some(i) => i,
            None => A::fatal(format_args!("user mode used before usermode::install")),
        }
    }

    /// [`installed`](Self::installed) for entries from user mode, without the Acquire load
    /// (a `dmb ish` per trap on ARMv7): a core reaches user mode only through `resume`, first
    /// called from [`run`](Self::run) on that core, whose `installed` saw the value set
    /// (Acquire) earlier in program order.
    fn installed_from_user(&self) -> &Installed {
        // SAFETY: see above: this core's `run` got `Some` from `installed.get()` before it
        // first entered user mode, so before any entry from user mode on this core.
        unsafe { self.installed.get_observed() }
    }

    /// The thread core `cpu` runs, if any.
    pub fn current_thread(&self, cpu: CpuIndex) -> Option<ThreadId> {
        self.current.get(cpu)?.load(Ordering::Relaxed)
    }

    /// Sets the registers `t` starts with: `pc`, `sp` and the first three argument registers.
    ///
    /// # Safety
    /// No core runs `t` or saves its context now, and the core that runs it next does so
    /// after this call in a way that orders it: before any core runs user threads (boot), or
    /// inside the kernel's critical section for an inactive thread that no core has as its
    /// current thread (`WriteRegisters`), which orders it before the section that picks `t`.
    pub unsafe fn set_initial_context(&self, t: ThreadId, pc: usize, sp: usize, args: [usize; 3]) {
        let frame = A::initial_frame(pc, sp, args);
        // SAFETY: the caller guarantees no core runs `t` or touches its context now.
        unsafe {
            self.contexts[t.index()].get().write(Context {
                frame,
                saved: Saved::Fresh,
                _pad: A::CONTEXT_PAD,
            })
        };
        self.has_context[t.index()].store(true, Ordering::Release);
    }

    /// The last user exception of `t`, if it had one.
    pub fn fault_record(&self, t: ThreadId) -> Option<FaultInfo> {
        let s = self.faults.get(t.index())?;
        let count = s.count.load(Ordering::Acquire);
        (count > 0).then(|| FaultInfo {
            fault: Fault {
                vector: s.vector.load(Ordering::Relaxed),
                pc: s.pc.load(Ordering::Relaxed),
                addr: s.addr.load(Ordering::Relaxed),
                code: s.code.load(Ordering::Relaxed),
            },
            cpu: s.cpu.load(Ordering::Relaxed),
            cycles: s.cycles.load(Ordering::Relaxed),
            count,
            resumed: s.resumed.load(Ordering::Acquire),
        })
    }

    /// Starts scheduling on the calling core: hands it the device interrupts kept for its
    /// first entry, enters the kernel once (as for a Reschedule IPI) and runs the thread it
    /// picks, or idles. Never returns.
    pub fn run(&self) -> ! {
        let cpu = A::cpu_id();
        let k = self.installed().kernel;
        A::disable_interrupts();
        // Each entry's `Exit` only says which thread the core runs now, and the kernel keeps
        // every thread's result registers itself: the last entry's `Exit` is the one to follow.
        if let Some(words) = self.pending.get(cpu) {
            for (word, pending) in words.iter().enumerate() {
                let mut bits = pending.swap(0, Ordering::Relaxed);
                while bits != 0 {
                    let irq = word * 32 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let _ = k.interrupt(cpu, irq);
                }
            }
        }
        let exit = k.ipi(cpu, kernel::IpiKind::Reschedule);
        self.resume(cpu, exit)
    }

    /// Saves the interrupted user context of the calling core's current thread, saved as
    /// `saved` says. A system call's stub saved its frame in the context already (the contract
    /// of [`syscall_entry`](Self::syscall_entry)): only the kind is written then, and debug
    /// builds check the frame's address (in release builds the comparison, and the branch
    /// around a copy that never happened, are left out: 2 instructions per system call).
    /// Another entry's frame is copied ([`UserArch::save_frame`]). In line, so that each
    /// caller's constant `saved` picks its branch at compile time.
    #[inline(always)]
    fn save(&self, cpu: CpuIndex, frame: &A::Frame, saved: Saved) -> ThreadId {
        let Some(t) = self.current_thread(cpu) else {
            A::fatal(format_args!(
                "entry from user mode (pc {:#x}) with no current thread",
                A::pc(frame)
            ))
        };
        let ctx = self.contexts[t.index()].get();
        // SAFETY: `t` is this core's current thread (see `contexts`), so nothing else
        // accesses its context; `addr_of!` and `addr_of_mut!` make no reference.
        unsafe {
            if saved == Saved::Syscall {
                debug_assert!(
                    core::ptr::eq(core::ptr::addr_of!((*ctx).frame), frame),
                    "system-call frame not in the current thread's context"
                );
            } else {
                A::save_frame(core::ptr::addr_of_mut!((*ctx).frame), frame);
            }
            core::ptr::addr_of_mut!((*ctx).saved).write(saved);
        }
        t
    }

    /// Returns to the thread the kernel chose (or idles). Never returns. In line in every
    /// entry (the system call's return is the hot one: a call and a copy of the [`Exit`]
    /// less per IPC).
    #[inline(always)]
    fn resume(&self, cpu: CpuIndex, exit: Exit) -> ! {
        let Some(t) = exit.thread else {
            self.current[cpu].store(None, Ordering::Relaxed);
            self.idle(cpu)
        };
        self.current[cpu].store(Some(t), Ordering::Relaxed);
        // SAFETY: `t` is now this core's current thread (see `contexts`).
        let ctx = unsafe { &mut *self.contexts[t.index()].get() };
        // A context that a system call saved, the common case, needs no check: it exists
        // (its thread ran), and its thread has no fault to clear (a fault's entry saves a
        // trap's context).
        let from_syscall = ctx.saved == Saved::Syscall;
        if !from_syscall {
            self.resume_checks(t);
        }
        A::prepare_return(&mut ctx.frame, from_syscall);
        if from_syscall {
            // SAFETY: the frame passed `prepare_return` as a system call's; every entry ends
            // here or in `idle`, so nothing on the kernel stack is needed any more.
            unsafe { A::return_from_syscall(cpu, &ctx.frame, exit.regs) }
        }
        // SAFETY: as above, as another entry's frame.
        unsafe { A::enter_user(cpu, &ctx.frame) }
    }

    /// The checks of [`resume`](Self::resume) for `t`'s context when a system call did not
    /// save it: that it exists, and the fault flags.
    #[inline(never)]
    fn resume_checks(&self, t: ThreadId) {
        // Relaxed (an Acquire load is a `dmb ish` on ARMv7): this is a check of the kernel's
        // choice, not what publishes the context. The context of `t` was written either
        // before any core ran (`set_initial_context`, published by the secondary cores'
        // start) or in a kernel section (`set_entry`) that the strategy orders before the
        // section that made `t` runnable and before the one that just picked `t` here, which
        // read `t`'s state under the same ordering. That chain makes the context write (and
        // the flag's store) happen-before this load and the frame accesses after it;
        // coherence then rules out reading the old `false`.
        if !self.has_context[t.index()].load(Ordering::Relaxed) {
            A::fatal(format_args!(
                "the kernel picked thread {} which has no user context",
                t.index()
            ));
        }
        let f = &self.faults[t.index()];
        // Load first, swap only when set: the common case (no fault recorded) then makes
        // no atomic read-modify-write (a locked `xchg` on x86, `ldrex`/`strex` on ARMv7).
        // The flag is set by `record_fault` on the core where `t` faulted, in the fault's
        // entry, which the kernel's sections order before the one that picked `t` again
        // here; the only other writer is this clear, by the core resuming `t` (one at a
        // time). So a `false` read here is not a set that the swap would have seen. A thread
        // with the flag set takes this path: its context was saved by a trap (its fault's
        // entry) or rewritten whole (`set_initial_context`: fresh).
        if f.stopped.load(Ordering::Relaxed) && f.stopped.swap(false, Ordering::Relaxed) {
            f.resumed.store(true, Ordering::Release);
        }
    }

    /// Records a user exception of thread `t` for [`fault_record`](Self::fault_record).
    /// Returns how many faults `t` has had, this one included.
    fn record_fault(&self, cpu: CpuIndex, t: ThreadId, fault: Fault) -> u64 {
        let s = &self.faults[t.index()];
        s.vector.store(fault.vector, Ordering::Relaxed);
        s.pc.store(fault.pc, Ordering::Relaxed);
        s.addr.store(fault.addr, Ordering::Relaxed);
        s.code.store(fault.code, Ordering::Relaxed);
        s.cpu.store(cpu, Ordering::Relaxed);
        s.cycles.store(A::cycles(), Ordering::Relaxed);
        s.resumed.store(false, Ordering::Relaxed);
        s.stopped.store(true, Ordering::Relaxed);
        s.count.fetch_add(1, Ordering::Release) + 1
    }

    /// Waits for interrupts with no thread to run; an interrupt enters the kernel (see
    /// [`interrupt`](Self::interrupt)), which may pick a thread and leave this loop for good.
    fn idle(&self, cpu: CpuIndex) -> ! {
        self.idle[cpu].store(true, Ordering::Relaxed);
        loop {
            A::wait_for_interrupt();
        }
    }

    /// Where the system-call stub finds the system call's entry: the byte offset in a
    /// `UserMode` of a word with the address of an
    /// `unsafe extern "C" fn(user: &UserMode, frame: *const Frame, cpu: CpuIndex) -> !` (see
    /// [`syscall_entry`](Self::syscall_entry) for its contract). Set by
    /// [`install`](Self::install), before any core can enter from user mode.
    pub const SYSCALL_ENTRY: usize = core::mem::offset_of!(Self, syscall_entry);

    /// A system call from user mode (`frame` as the system-call entry saved it) for an
    /// installed kernel of type `K`: a debug call goes to the image's handler, every other one
    /// to the kernel; continues with the thread the kernel picks. The HAL's stub calls it
    /// through the word at [`SYSCALL_ENTRY`](Self::SYSCALL_ENTRY), with the C calling
    /// convention.
    ///
    /// # Safety
    /// `this` is the `UserMode` whose kernel, of type `K`, was installed (the stub reads the
    /// entry from it, and `install` stores this function only with a kernel of that type).
    /// `frame` is the frame the system-call stub saved for this core's current thread, in
    /// that thread's own context (the frame field of its context slot, which release builds
    /// do not check, see `save`), valid for reads until
    /// the entry resumes a thread. It is a pointer, not a reference, because the context may
    /// be written again before this call ends (`resume`: a result the return cannot carry,
    /// see [`UserArch::return_from_syscall`]). `stub_cpu` is what the stub passes for
    /// [`UserArch::syscall_cpu`], which gives the calling core's index, below `CPUS`.
    unsafe extern "C" fn syscall_entry<K: KernelEntry + 'static>(
        this: &Self,
        frame: *const A::Frame,
        stub_cpu: CpuIndex,
    ) -> ! {
        let cpu = A::syscall_cpu(stub_cpu);
        debug_assert_eq!(
            cpu,
            A::cpu_id(),
            "the system-call stub passed another core's index"
        );
        // SAFETY: the caller's contract (the index of a core that runs, below `CPUS`); stated
        // so that the per-core tables are indexed without bounds checks, as `cpu_id` states it.
        unsafe { core::hint::assert_unchecked(cpu < CPUS) };
        let inst = this.installed_from_user();
        // SAFETY: `inst.kernel` was made from a `&'static K` (the contract above); this casts
        // the trait object's data pointer back to it.
        let kernel = unsafe { &*(inst.kernel as *const dyn KernelEntry).cast::<K>() };
        let t = {
            // SAFETY: the caller's contract: `frame` is valid for reads until this entry
            // resumes a thread; the reference ends here, before `resume` writes the context.
            let f = unsafe { &*frame };
            this.save(cpu, f, Saved::Syscall)
        };
        let regs = A::syscall_regs_ptr(frame);
        // A debug call (`regs[0] >= DEBUG_BASE`) is answered by `Resume::own_call`, which the
        // kernel asks only for a call its IPC entry does not take.
        // SAFETY: the frame is the calling thread's, valid (the caller's contract) and
        // written by nothing until the kernel hands its `Exit` to `Resume` (the kernel writes
        // no running thread's context; `resume` writes it after the kernel is done).
        let saved = unsafe { SavedRegs::new(regs) };
        // `resume` in line on each of the kernel's paths (see `Kernel::syscall_then`); it
        // never returns, which `Infallible` says to the compiler.
        let then = Resume {
            user: this,
            cpu,
            thread: t,
        };
        match kernel.syscall_then(cpu, saved, then) {}
    }

    /// A debug call (`regs[0] >= DEBUG_BASE`) of `t`: the image's handler answers, `t` goes
    /// on. Out of line: with the handler's `&regs` in line, the arguments were address-taken
    /// on both branches and went through memory on the kernel's path too (x86_64: 6 more
    /// stores per system call).
    #[cold]
    #[inline(never)]
    fn debug_call(inst: &Installed, cpu: CpuIndex, t: ThreadId, regs: Regs) -> Exit {
        Exit {
            thread: Some(t),
            regs: (inst.debug)(cpu, t, &regs),
        }
    }

    /// An acknowledged interrupt (`event`; `None` for one with nothing for the kernel, such as
    /// a spurious one). `user` is the interrupted user frame when it came from user mode: on
    /// this core's kernel stack, or in the current thread's own context where the entry saves
    /// it in place (then the save below copies nothing, see [`UserArch::save_frame`]).
    ///
    /// From user mode, or on a core in the idle loop, it enters the kernel and continues with
    /// the thread the kernel picks (does not return; an idle core whose kernel entry picks no
    /// thread returns to its idle loop). Otherwise (boot code, no kernel installed, a core
    /// not yet released) it returns to the interrupted code; a device interrupt's line stays
    /// masked then: with no kernel it is dropped (no driver can have bound it), with a kernel
    /// it is kept for the core's first entry ([`run`](Self::run)).
    ///
    /// # Safety
    /// A `user` frame is the one the entry saved for this core's current thread, valid for
    /// reads until the save below. It is a pointer, not a reference, for the same reason as in
    /// [`syscall_entry`](Self::syscall_entry): in the thread's own context it is written again
    /// (by the resume) before this call ends.
    pub unsafe fn interrupt(&self, user: Option<*const A::Frame>, event: Option<Event>) {
        let Some(inst) = (match user {
            Some(_) => Some(self.installed_from_user()),
            None => self.installed.get(),
        }) else {
            return;
        };
        let cpu = A::cpu_id();
        let idle = self.idle.get(cpu);
        if user.is_none() && !idle.is_some_and(|i| i.load(Ordering::Relaxed)) {
            if let (Some(Event::Device(irq)), Some(words)) = (event, self.pending.get(cpu)) {
                if let Some(w) = words.get(irq / 32) {
                    w.fetch_or(1 << (irq % 32), Ordering::Relaxed);
                }
            }
            return;
        }
        if let Some(frame) = user {
            // SAFETY: the caller's contract: `frame` is valid for reads until the save; the
            // reference ends with this call, before anything writes the context.
            self.save(cpu, unsafe { &*frame }, Saved::Trap);
        }
        let exit = match event {
            Some(Event::Timer) => inst.kernel.timer_tick(cpu),
            Some(Event::Ipi(kind)) => inst.kernel.ipi(cpu, kind),
            Some(Event::Device(irq)) => inst.kernel.interrupt(cpu, irq),
            None => Exit {
                thread: self.current_thread(cpu),
                regs: [0; 6],
            },
        };
        if user.is_none() {
            if exit.thread.is_none() {
                // Nothing to run: back to the idle loop, whose flag stays raised.
                return;
            }
            // The core leaves its idle loop for a thread: the flag is lowered here, the one
            // way out of the loop (`idle` raises it on the way in), not on every resume (a
            // store per system call).
            if let Some(i) = idle {
                i.store(false, Ordering::Relaxed);
            }
        }
        self.resume(cpu, exit)
    }

    /// An exception in user mode (`frame` as the entry saved it): records it for
    /// [`fault_record`](Self::fault_record), prints the report line (`what` describes it),
    /// hands it to the kernel as `to_kernel` and continues with the thread the kernel picks.
    pub fn user_exception(
        &self,
        frame: &A::Frame,
        fault: Fault,
        to_kernel: KernelFault,
        what: fmt::Arguments<'_>,
    ) -> ! {
        let cpu = A::cpu_id();
        let inst = self.installed_from_user();
        let t = self.save(cpu, frame, Saved::Trap);
        let count = self.record_fault(cpu, t, fault);
        // The first faults of a thread are reported; a thread whose pager serves its faults
        // may have thousands (the memory benchmark), whose lines would cost more than the
        // faults themselves.
        if count <= PRINTED_FAULTS {
            A::print(format_args!(
                "user fault: cpu {cpu} thread {}: {what}: handed to the kernel (pager, or the \
                 thread stops)\n",
                t.index()
            ));
        } else if count == PRINTED_FAULTS + 1 {
            A::print(format_args!(
                "user fault: cpu {cpu} thread {}: {what}: handed to the kernel; its further \
                 faults are counted, not printed\n",
                t.index()
            ));
        }
        let exit = match to_kernel {
            KernelFault::Page { addr, write } => inst.kernel.page_fault(cpu, addr, write),
            KernelFault::Exception { vector, addr } => inst.kernel.exception(cpu, vector, addr),
        };
        self.resume(cpu, exit)
    }
}

/// [`UserMode::resume`] as the kernel's [`ExitTo`] (the system-call entry).
struct Resume<'a, A: UserArch, const CPUS: usize> {
    user: &'a UserMode<A, CPUS>,
    cpu: CpuIndex,
    /// The calling thread (for a debug call's handler).
    thread: ThreadId,
}

impl<A: UserArch, const CPUS: usize> ExitTo for Resume<'_, A, CPUS> {
    type Out = core::convert::Infallible;
    #[inline(always)]
    fn exit_to(self, exit: Exit) -> Self::Out {
        self.user.resume(self.cpu, exit)
    }
    #[inline(always)]
    fn own_call(&self, regs: &Regs) -> Option<Exit> {
        (regs[0] >= DEBUG_BASE).then(|| {
            UserMode::<A, CPUS>::debug_call(
                self.user.installed_from_user(),
                self.cpu,
                self.thread,
                *regs,
            )
        })
    }
}

impl<A: UserArch, const CPUS: usize> Default for UserMode<A, CPUS> {
    fn default() -> Self {
        Self::new()
    }
}
