//! The kernel's entry points, the section around each (the strategy's enter and exit, the
//! actions after it, the entry's trace record), and the full path of an entry: what brought
//! the core in ([`Entry`]), the section's context ([`Ctx`]) and what the HAL restores after
//! it ([`Exit`]).

#[cfg(feature = "trace")]
use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering;

use kernel_locks::CpuId;

use crate::config::*;
use crate::error::Error;
use crate::hal::{Hal, IpiKind, PhysAddr, TlbGeneration};
use crate::ids::*;
use crate::strategy::{LockId, Side, Strategy};
use crate::syscall::{err_regs, message, IpcCall, Msg, Regs, Syscall};

#[cfg(feature = "trace")]
use super::cell_ref;
use super::{Kernel, Life, ThreadState, EXCEPTION_LABEL, FAULT_LABEL};

/// What the HAL restores after a kernel entry: the thread that now runs on the core (`None`:
/// the idle thread) and its result registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    /// The current thread of the core, or `None` for idle.
    pub thread: Option<ThreadId>,
    /// Its result registers (zeros for idle): what completes the system call in which it
    /// entered the kernel last. A thread that a trap (interrupt, fault, IPI) took off its
    /// core resumes with the registers the HAL saved then, and these are meaningless (stale:
    /// the IPC fastpath leaves `TcbIpc::ret` of the thread it resumes unwritten).
    pub regs: Regs,
}

/// What a caller of [`Kernel::syscall_then`] does with the entry's [`Exit`]: in line once per
/// path of the entry (a closure would be called, not copied, from two places).
pub trait ExitTo {
    /// What it gives back (`core::convert::Infallible` for a HAL whose `exit_to` never returns).
    type Out;
    /// Continues with `exit`.
    fn exit_to(self, exit: Exit) -> Self::Out;

    /// A system call the caller answers itself (a HAL's debug calls): `Some` with the exit to
    /// continue with, `None` (the default) for the kernel's. Asked only once the call is not
    /// one the IPC entry takes, so those pay no test for it.
    #[inline(always)]
    fn own_call(&self, regs: &Regs) -> Option<Exit> {
        let _ = regs;
        None
    }
}

/// A system call's registers where the HAL saved them (its frame of the calling thread),
/// for [`Kernel::syscall_then`], which reads each word where it is used: the message words at
/// the fastpath's commit, not held in registers (or spilled to the stack) from the decode on.
#[derive(Clone, Copy, Debug)]
pub struct SavedRegs(*const Regs);

impl SavedRegs {
    /// The registers at `regs`.
    ///
    /// # Safety
    /// `regs` is valid for reads, and nothing writes there, as long as this value or a copy
    /// of it is read ([`get`](Self::get)). The kernel reads it only before it hands its
    /// [`Exit`] to [`ExitTo::exit_to`], so a caller that keeps no copy of its own needs the
    /// memory only until then: the calling thread's saved frame qualifies, as the kernel
    /// writes no running thread's frame.
    pub unsafe fn new(regs: *const Regs) -> Self {
        Self(regs)
    }

    /// The registers, copied (the compiler loads only the words used).
    #[inline(always)]
    pub fn get(self) -> Regs {
        // SAFETY: valid and unchanged until the kernel is done with it (`new`'s contract);
        // every use is inside `syscall_then`, before its `exit_to`.
        unsafe { self.0.read() }
    }
}

/// [`ExitTo`] that returns the [`Exit`] ([`Kernel::syscall`]).
#[derive(Clone, Copy, Debug)]
struct ReturnExit;

impl ExitTo for ReturnExit {
    type Out = Exit;
    #[inline(always)]
    fn exit_to(self, exit: Exit) -> Exit {
        exit
    }
}

/// Context of one kernel entry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ctx {
    pub cpu: CpuId,
    /// Whether the strategy made this section exclusive (no object locks needed).
    pub excl: bool,
    /// Whether no other core is in the kernel during this section (implies `excl`): only then
    /// may the section read other cores' scheduling state without their run-queue locks
    /// ([`Kernel::current_anywhere`]). False for [`NoLock`](crate::strategy::NoLock)'s shared
    /// sections, which run concurrently with other cores' own sections.
    pub global: bool,
    /// Whether this section is a kernel entry, which ends with [`Kernel::schedule`] on this
    /// core: only then may [`Kernel::wake`] hand a thread of this core straight to that
    /// `schedule` ([`CoreLocal::direct`](super::CoreLocal::direct)) instead of queueing it. False for boot-time and
    /// inspection contexts, which never schedule.
    pub entry: bool,
}

/// What caused a kernel entry.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Entry {
    Syscall(Result<Syscall, Error>),
    Ipi,
    Timer,
    Interrupt(usize),
    Fault { vaddr: usize, write: bool },
    Exception { vector: usize, addr: usize },
}

impl<S: Strategy, H: Hal> Kernel<S, H> {
    /// System call of the current thread of `cpu`, with its raw registers. Returns the thread
    /// that runs next on `cpu` and its result registers.
    #[inline]
    pub fn syscall(&self, cpu: CpuId, raw: Regs) -> Exit {
        // SAFETY: `raw` is a local of this call, valid and unchanged until it returns.
        let saved = unsafe { SavedRegs::new(&raw) };
        self.syscall_then(cpu, saved, ReturnExit)
    }

    /// [`syscall`](Self::syscall), with the registers where the HAL saved them, handing the
    /// [`Exit`] to `then` (what the HAL does next: return to user mode) instead of returning
    /// it.
    ///
    /// For a HAL's system-call entry made for each kernel type, which has this in line, and
    /// `then`'s [`ExitTo::exit_to`] in line twice: once after the fastpath and once after the
    /// full path, a call. With one return value the two paths' [`Exit`]s would meet in a
    /// variable in memory (the call returns it there), so the fastpath would store its seven
    /// words and the return to user mode load them back; this way the fastpath's stay in
    /// registers. The registers are read where the HAL saved them ([`SavedRegs`]), each where
    /// it is used: the message words at the fastpath's commit (`docs/bench/ipc-fastpath.md`).
    #[inline(always)]
    pub fn syscall_then<T: ExitTo>(&self, cpu: CpuId, raw: SavedRegs, then: T) -> T::Out {
        // `Call` and `ReplyRecv` take the IPC entry when the fastpath is on; a traced kernel
        // keeps them on the generic entry, which writes the trace records. One compare for
        // both and for the core check (see `ipc_cores`).
        if cpu < self.ipc_cores {
            // One `ipc_entry` per call, each with its call a constant: the entry's shared part
            // does not carry the call in a register to branch on it again at the fastpath.
            match Syscall::decode_ipc(&raw.get()) {
                Some((IpcCall::Call, ep, _)) => {
                    return self.ipc_entry(cpu, IpcCall::Call, ep, || message(&raw.get()), then);
                }
                Some((IpcCall::ReplyRecv, ep, _)) => {
                    let msg = || message(&raw.get());
                    return self.ipc_entry(cpu, IpcCall::ReplyRecv, ep, msg, then);
                }
                None => {}
            }
        }
        let regs = raw.get();
        if let Some(exit) = then.own_call(&regs) {
            return then.exit_to(exit);
        }
        then.exit_to(self.generic_syscall(cpu, &regs))
    }

    /// A system call on the generic entry: decoded, on the side its kind needs. A call of its
    /// own: in line in the HAL's entry, its code spreads the fastpath's registers thin (x86_64,
    /// +32 instructions per round trip under `-icount`).
    #[inline(never)]
    fn generic_syscall(&self, cpu: CpuId, raw: &Regs) -> Exit {
        let call = Syscall::decode(raw);
        let side = match call {
            Ok(sc) if sc.is_management() => Side::Exclusive,
            _ => Side::Shared,
        };
        self.entry(cpu, side, Entry::Syscall(call))
    }

    /// An inter-processor interrupt of `kind` arrived on `cpu`.
    pub fn ipi(&self, cpu: CpuId, kind: IpiKind) -> Exit {
        let _ = kind; // every kind is handled alike: reschedule, and acknowledge shoot-downs
        self.leave_idle(cpu);
        self.entry(cpu, Side::Shared, Entry::Ipi)
    }

    /// A timer tick on `cpu` (round-robin among equal priorities).
    pub fn timer_tick(&self, cpu: CpuId) -> Exit {
        self.leave_idle(cpu);
        self.entry(cpu, Side::Shared, Entry::Timer)
    }

    /// Device interrupt `irq` on `cpu`: masked and signalled to its bound notification.
    /// Unknown lines are ignored.
    pub fn interrupt(&self, cpu: CpuId, irq: usize) -> Exit {
        self.leave_idle(cpu);
        self.entry(cpu, Side::Shared, Entry::Interrupt(irq))
    }

    /// The current thread of `cpu` faulted at `vaddr`: it Calls its pager with a
    /// [`FAULT_LABEL`] message, and resumes (registers untouched) when the pager replies. A
    /// thread without pager is suspended.
    pub fn page_fault(&self, cpu: CpuId, vaddr: usize, write: bool) -> Exit {
        self.entry(cpu, Side::Shared, Entry::Fault { vaddr, write })
    }

    /// The current thread of `cpu` raised processor exception `vector` (architecture-defined
    /// number) at instruction address `addr`: like a page fault, it Calls its pager with an
    /// [`EXCEPTION_LABEL`] message and resumes (registers untouched) on the reply; a thread
    /// without pager is suspended.
    pub fn exception(&self, cpu: CpuId, vector: usize, addr: usize) -> Exit {
        self.entry(cpu, Side::Shared, Entry::Exception { vector, addr })
    }

    fn entry(&self, cpu: CpuId, side: Side, entry: Entry) -> Exit {
        self.begin(cpu);
        // Counted with the `trace` feature only: without it the entry path is unchanged.
        #[cfg(feature = "trace")]
        Self::bump(&self.counts[cpu].entries, 1);
        // The record is built in this core's cell (`trace_rec`), field by field, and handed
        // to the sink from there: no copy of it per entry.
        #[cfg(feature = "trace")]
        let tracer = self.tracer;
        #[cfg(feature = "trace")]
        if tracer.is_some() {
            self.trace_begin(cpu, &entry);
        }

        // The elision counters before the section (RTM strategies, traced entries only).
        #[cfg(feature = "trace")]
        let rtm_before = tracer.and_then(|_| self.strategy.elision_stats(cpu));
        // SAFETY: `begin` checked `cpu < cores`, and `new` that `cores <= max_cpus()`.
        let excl = unsafe { self.strategy.enter_unchecked(cpu, side) };
        #[cfg(feature = "trace")]
        if tracer.is_some() {
            self.trace_stamp(cpu, |r, t| r.lock_acquired = t);
        }
        let ctx = self.section(cpu, side, excl);
        // The core's current thread is read once per entry and passed along: only `schedule`,
        // on this core, changes it (and under the fine-grained strategy every read costs the
        // run-queue lock).
        let cur = self.current(ctx);
        #[cfg(feature = "trace")]
        if tracer.is_some() {
            let thread = cur.map_or(u32::MAX, |t| t.index() as u32);
            self.trace_pending(cpu, |p| p.record.thread = thread);
        }
        let fast = if self.fastpath {
            self.fastpath(ctx, cur, &entry)
        } else {
            None
        };
        let exit = match fast {
            Some(exit) => {
                #[cfg(test)]
                self.fast_taken.fetch_add(1, Ordering::Relaxed);
                exit
            }
            None => self.full_path(ctx, cur, entry),
        };
        #[cfg(feature = "trace")]
        if tracer.is_some() {
            self.trace_stamp(cpu, |r, t| r.lock_released = t);
        }
        // SAFETY: `cpu` entered with `side` above and leaves once.
        unsafe { self.strategy.exit(cpu, side) };
        #[cfg(feature = "trace")]
        if let Some(before) = rtm_before {
            if let Some(after) = self.strategy.elision_stats(cpu) {
                let (outcome, retries, cause) = crate::trace::rtm_outcome(&before, &after);
                self.trace_pending(cpu, |p| {
                    p.record.rtm_outcome = outcome;
                    p.record.rtm_retries = retries;
                    p.record.rtm_abort_cause = cause;
                });
            }
        }
        self.after_section(ctx);
        #[cfg(feature = "trace")]
        if let Some(sink) = tracer {
            let now = self.hal.trace_cycles();
            let exit = self.trace_pending(cpu, |p| {
                p.record.exit = p.since_entry(now);
                p.record.exit
            });
            Self::bump(&self.counts[cpu].cycles, u64::from(exit));
            // SAFETY: as in `trace_pending`; the sink gets a shared reference to the finished
            // record and no way to this kernel's cells (a sink that entered the kernel on this
            // core would stop at the `in_kernel` check before touching the cell).
            unsafe { cell_ref(&self.trace_rec[cpu], |p| sink.record(cpu, &p.record)) };
        }
        self.end(cpu);
        exit
    }

    /// `Call` or `ReplyRecv` with the fastpath on and no tracer: [`entry`](Self::entry)
    /// without what these two calls do not need (the generic [`Entry`], its side, which is
    /// always shared, the trace records, the dispatch on the entry's kind). The fastpath runs
    /// first; when it does not apply, the full path runs in the same section. The caller
    /// checked `cpu < ipc_cores` (the entry is on, and `cpu` is one of the kernel's cores).
    #[inline(always)]
    fn ipc_entry<T: ExitTo>(
        &self,
        cpu: CpuId,
        call: IpcCall,
        ep: CapSlot,
        msg: impl Fn() -> Msg,
        then: T,
    ) -> T::Out {
        self.begin_ipc(cpu);
        // SAFETY: the caller checked `cpu < ipc_cores`, which is `cores` (see `begin_ipc`),
        // and `new` that `cores <= max_cpus()`.
        let excl = unsafe { self.strategy.enter_unchecked(cpu, Side::Shared) };
        let ctx = self.section(cpu, Side::Shared, excl);
        let cur = self.current(ctx);
        if let Some(fast) = self.fast_ipc(ctx, cur, call, ep, &msg) {
            #[cfg(test)]
            self.fast_taken.fetch_add(1, Ordering::Relaxed);
            // SAFETY: `cpu` entered the shared side above and leaves once, releasing the
            // endpoint lock the fastpath kept, if any (taken by `cpu` in this section).
            unsafe {
                match fast.held {
                    Some(ep) => {
                        self.strategy
                            .exit_releasing(cpu, Side::Shared, LockId::Endpoint(ep))
                    }
                    None => self.strategy.exit(cpu, Side::Shared),
                }
            }
            self.after_fast_section(cpu, fast.load);
            self.end_ipc(cpu);
            return then.exit_to(fast.exit);
        }
        let exit = self.full_path(ctx, cur, Entry::Syscall(Ok(call.syscall(ep, msg()))));
        // SAFETY: as above (the fastpath did not apply, so this is the one exit).
        unsafe { self.strategy.exit(cpu, Side::Shared) };
        self.after_section(ctx);
        self.end_ipc(cpu);
        then.exit_to(exit)
    }

    /// Whether entries are traced (the `trace` feature and a tracer installed).
    #[inline(always)]
    pub(crate) fn tracing(&self) -> bool {
        #[cfg(feature = "trace")]
        return self.tracer.is_some();
        #[cfg(not(feature = "trace"))]
        false
    }

    /// The start of every entry: checks the core index and that the core is not in the kernel
    /// already, and marks it in.
    #[inline(always)]
    fn begin(&self, cpu: CpuId) {
        assert!(
            cpu < self.cores,
            "kernel entry on CPU {cpu} of {} (HAL bug)",
            self.cores
        );
        // SAFETY: `cores` is written only by `new`, which checks it is at most MAX_CPUS.
        // Stated, so that the per-core tables (MAX_CPUS long) are indexed with `cpu` without a
        // second bounds check per entry.
        unsafe { core::hint::assert_unchecked(self.cores <= MAX_CPUS) };
        // Relaxed: `in_kernel[cpu]` is touched only by entries on core `cpu` (HAL contract), so
        // it orders nothing with other cores; it only catches a HAL that re-enters a core
        // (an entry nested in an entry, say from an interrupt taken in the kernel), which is
        // sequential on that core, so a plain load and store see it: no read-modify-write
        // (an `xchg`, a locked operation, on x86; `ldrex`/`strex` on ARMv7). Acquire and
        // Release would cost a `dmb ish` each on ARMv7, four per round trip. A HAL that hands
        // a core index from one host thread to another must order the hand-over itself (as a
        // thread spawn or join does), like any other data it passes; two host threads in the
        // kernel under the same index at once are not reliably caught here.
        let was = self.in_kernel[cpu].load(Ordering::Relaxed);
        assert!(!was, "kernel re-entered on CPU {cpu} (HAL bug)");
        self.in_kernel[cpu].store(true, Ordering::Relaxed);
    }

    /// The section's context, once the strategy let `cpu` in on `side` (`excl`: what
    /// [`Strategy::enter`] said), with this core's per-entry record reset.
    #[inline(always)]
    fn section(&self, cpu: CpuId, side: Side, excl: bool) -> Ctx {
        let global = excl && (side == Side::Exclusive || self.strategy.serialises());
        let ctx = Ctx {
            cpu,
            excl,
            global,
            entry: true,
        };
        // The record starts clear: the last entry's `after_section` cleared it after running
        // it (the fastpath records none: its switch is carried in a register), and boot-time
        // operations clear what they record. Not cleared here: a store and a test less on
        // the fastpath's entry.
        #[cfg(debug_assertions)]
        self.local(ctx, |l| {
            debug_assert!(
                l.actions.is_clear(),
                "actions left over by the last entry or a boot-time operation"
            );
            debug_assert!(
                l.direct.is_none(),
                "direct switch left over by the last entry"
            );
        });
        ctx
    }

    /// The full path of an entry: execute it, schedule, and read back the result registers of
    /// the thread that runs next.
    fn full_path(&self, ctx: Ctx, cur: Option<ThreadId>, entry: Entry) -> Exit {
        let (rotate, cur) = self.handle(ctx, cur, entry);
        let next = self.schedule(ctx, cur, rotate);
        if next.is_none() {
            // The fastpath always hands the core to a thread: only here can it go idle.
            self.enter_idle(ctx.cpu);
        }
        self.exit_regs(ctx, next)
    }

    /// After the section: the hardware actions the entry decided on, then shoot-downs and
    /// page-table reclaim.
    #[inline(always)]
    fn after_section(&self, ctx: Ctx) {
        let cpu = ctx.cpu;
        // The actions run in place (no copy of the record): the HAL's operations do not enter
        // the kernel, so nothing else touches this core's `local` cell meanwhile.
        // A switch away from an address space leaves this core's flag of it set (see
        // `Kernel::as_active`): the flags are cleared when the core flushes its whole TLB.
        let rare = self.local(ctx, |l| {
            l.actions.run(&self.hal, cpu);
            l.actions.rare()
        });
        if rare {
            // The core's index only: passing `ctx` (by reference, in the Rust ABI on ARMv7)
            // made it escape, and the entry then kept it in memory and tested its `excl`
            // before every object lock of the fastpath.
            self.after_rare(cpu);
        } else {
            // Nothing to wait for: only this core's own requests to service (what the first
            // pass of `await_shootdowns` does with all-zero generations).
            self.service_shootdown(cpu);
        }
        // Done with: the next entry starts with a clear record (see `section`).
        self.local_of(cpu, |l| l.actions.clear());
    }

    /// [`after_section`](Self::after_section) for the fastpath's exit, whose only action is
    /// the address-space switch it hands over in a register (`load`, see
    /// [`FastExit`](crate::fastpath::FastExit)): its recorded actions stayed clear, so there
    /// is nothing else to run and no shoot-down of its own to wait for.
    ///
    /// Nor does it service this core's pending shoot-down requests (a load, a load and a
    /// compare per system call): each comes with its IPI, which the requester sends after its
    /// section, and which this core takes as soon as it returns to user mode (interrupts are
    /// masked only in the kernel), to service it in that entry (see
    /// `kernel/shootdown.rs`). The requester waits for the acknowledgement, so a translation this core uses
    /// meanwhile is one it could have used before the unmap.
    #[inline(always)]
    fn after_fast_section(&self, cpu: CpuId, load: Option<PhysAddr>) {
        debug_assert!(
            self.local_of(cpu, |l| l.actions.switch_to.is_none() && !l.actions.rare()),
            "the fastpath recorded actions its exit does not run"
        );
        if let Some(root) = load {
            // SAFETY: the root of an address space of this kernel (its table maps the kernel),
            // the core's new current thread's, whose bookkeeping `aspace_to_load` did in the
            // section.
            unsafe { self.hal.switch_address_space(cpu, root) };
        }
    }

    /// [`after_section`](Self::after_section) for an entry that recorded more than an
    /// address-space switch: waits for the shoot-downs it started, and reclaims page tables.
    #[inline(never)]
    fn after_rare(&self, cpu: CpuId) {
        let (awaits, reclaim) =
            self.local_of(cpu, |l| (l.actions.awaits_acks(), l.actions.reclaim()));
        if awaits {
            let acks: [TlbGeneration; MAX_CPUS] =
                self.local_of(cpu, |l| core::array::from_fn(|c| l.actions.acks(c)));
            self.await_shootdowns(cpu, &acks);
        } else {
            self.service_shootdown(cpu);
        }
        if reclaim {
            // Every core that may cache the address spaces this entry unmapped from flushed
            // (local flush above, acknowledged shoot-downs): no walk can reach the page tables
            // the unmaps emptied any more.
            self.hal.reclaim_tables(cpu);
        }
    }

    /// The end of every entry: the core leaves the kernel.
    #[inline(always)]
    fn end(&self, cpu: CpuId) {
        // Relaxed: see `begin`.
        self.in_kernel[cpu].store(false, Ordering::Relaxed);
    }

    /// [`begin`](Self::begin) for the IPC entry: the re-entry check and the in-kernel mark
    /// only in debug builds. The mark's other reader, the trace records' count of cores in
    /// the kernel, runs only when a tracer is installed, and then every entry takes the
    /// generic path, which marks the core. The re-entry check catches a HAL bug, not
    /// anything user space can do (the HALs take system calls with interrupts masked, so
    /// nothing nests in them), and it costs 5 loads, stores and branches per system call (10
    /// per round trip, 2% of x86_64's), a share seL4, with no such check, does not pay; the
    /// hosted tests, which run debug builds, keep it.
    ///
    /// The core index was checked by the caller: `cpu < ipc_cores`, which is `cores` here.
    #[inline(always)]
    fn begin_ipc(&self, cpu: CpuId) {
        debug_assert_eq!(self.ipc_cores, self.cores, "the IPC entry taken while off");
        #[cfg(debug_assertions)]
        self.begin(cpu);
        // SAFETY: `cpu < ipc_cores` (the caller's test), which is `cores` while the IPC entry
        // is on (`new`, `set_fastpath` and `set_tracer` keep it so), at most MAX_CPUS
        // (`new`). Stated, so that the per-core tables are indexed without bounds checks.
        unsafe { core::hint::assert_unchecked(cpu < MAX_CPUS) };
    }

    /// [`end`](Self::end) for the IPC entry (see [`begin_ipc`](Self::begin_ipc)).
    #[inline(always)]
    fn end_ipc(&self, cpu: CpuId) {
        #[cfg(debug_assertions)]
        self.end(cpu);
        #[cfg(not(debug_assertions))]
        let _ = cpu;
    }

    /// Stores the time since the traced entry began into a field of its record (`set`).
    #[cfg(feature = "trace")]
    #[inline(always)]
    fn trace_stamp(&self, cpu: CpuId, set: impl FnOnce(&mut crate::trace::Record, u32)) {
        let now = self.hal.trace_cycles();
        self.trace_pending(cpu, |p| {
            let t = p.since_entry(now);
            set(&mut p.record, t);
        });
    }

    /// Adds `n` to a counter of this core's [`EntryCounts`](super::EntryCounts). Relaxed load and store, no
    /// read-modify-write (a locked instruction on x86, `ldrex`/`strex` on ARMv7): only the core
    /// itself writes its counters, one entry at a time; readers on other cores only need some
    /// recent value, and a counter is a statistic that orders nothing.
    #[cfg(feature = "trace")]
    #[inline(always)]
    fn bump(c: &AtomicU64, n: u64) {
        c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    /// The start of an entry's trace record: its timestamp (also the lock request's, which
    /// follows at once), what entered, and the cores in the kernel (this one included).
    #[cfg(feature = "trace")]
    #[inline(always)]
    fn trace_begin(&self, cpu: CpuId, entry: &Entry) {
        use crate::trace::EntryKind;
        let t0 = self.hal.trace_cycles();
        let (kind, number) = match entry {
            Entry::Syscall(Ok(sc)) => (EntryKind::Syscall, sc.encode()[0]),
            Entry::Syscall(Err(_)) => (EntryKind::Syscall, 0),
            Entry::Interrupt(irq) => (EntryKind::Interrupt, *irq),
            // IPIs and ticks have no line of their own here: the top of the number range.
            Entry::Ipi => (EntryKind::Interrupt, 0xFFFF),
            Entry::Timer => (EntryKind::Interrupt, 0xFFFE),
            Entry::Fault { .. } => (EntryKind::Fault, 0xFFFF),
            Entry::Exception { vector, .. } => (EntryKind::Fault, *vector),
        };
        // Relaxed: a statistic; the flags of other cores are read as they happen to be.
        let inside = (0..self.cores)
            .filter(|&c| self.in_kernel[c].load(Ordering::Relaxed))
            .count();
        // The lock is requested right after this (a few instructions): `lock_requested` stays
        // 0, one counter read fewer per entry.
        self.trace_pending(cpu, |p| {
            p.begin(t0);
            let r = &mut p.record;
            r.core = cpu as u16;
            r.number = number.min(0xFFFF) as u16;
            r.kind = kind;
            r.in_kernel = inside.min(255) as u8;
            if inside > 1 {
                r.flags = trace_format::FLAG_CONTENDED;
            }
        });
    }

    /// Handles one entry, `cur` being the core's current thread; returns whether the
    /// scheduler should rotate (Yield, timer) and the current thread afterwards.
    fn handle(
        &self,
        ctx: Ctx,
        mut cur: Option<ThreadId>,
        entry: Entry,
    ) -> (bool, Option<ThreadId>) {
        let usable = cur.filter(|&t| self.runnable_here(ctx, t));
        if let (Some(t), None) = (cur, usable) {
            // The current thread was suspended, deleted or moved by another core while it ran
            // in user mode: drop it now (the other core sent us an IPI for this). A system call
            // it made meanwhile is not executed.
            if matches!(entry, Entry::Syscall(_)) && self.conf(t).life == Life::Alive {
                let g = self.hold(ctx, t);
                self.ipc(&g, |i| i.ret = err_regs(Error::Interrupted));
            }
            cur = self.schedule(ctx, cur, false);
        }
        (self.handle_entry(ctx, usable, entry), cur)
    }

    /// Handles one entry once an unusable current thread was dropped: `usable` is the current
    /// thread if it may run here. Returns whether the scheduler should rotate.
    fn handle_entry(&self, ctx: Ctx, usable: Option<ThreadId>, entry: Entry) -> bool {
        match entry {
            Entry::Syscall(call) => {
                let Some(t) = usable else { return false };
                let res = call.and_then(|sc| self.decode(ctx, t, sc));
                match res {
                    Ok(op) => self.execute(ctx, t, op),
                    Err(e) => {
                        self.set_ret(ctx, t, err_regs(e));
                        false
                    }
                }
            }
            // TLB shoot-downs are acknowledged after the section by every entry
            // (`await_shootdowns`), whatever woke the core.
            Entry::Ipi => false,
            Entry::Timer => {
                self.handle_tick(ctx);
                true
            }
            Entry::Interrupt(irq) => {
                if let Some(irq) = IrqId::new(irq) {
                    self.handle_irq(ctx, irq);
                }
                false
            }
            Entry::Fault { vaddr, write } => {
                if let Some(t) = usable {
                    self.handle_fault(ctx, t, [FAULT_LABEL, vaddr, write as usize, t.index()]);
                }
                false
            }
            Entry::Exception { vector, addr } => {
                if let Some(t) = usable {
                    self.handle_fault(ctx, t, [EXCEPTION_LABEL, vector, addr, t.index()]);
                }
                false
            }
        }
    }

    /// Result registers of the new current thread `thread`.
    fn exit_regs(&self, ctx: Ctx, thread: Option<ThreadId>) -> Exit {
        let regs = match thread {
            Some(t) => {
                let g = self.hold(ctx, t);
                self.ipc(&g, |i| i.ret)
            }
            None => [0; 6],
        };
        Exit { thread, regs }
    }

    /// Sets a thread's result registers.
    pub(crate) fn set_ret(&self, ctx: Ctx, t: ThreadId, regs: Regs) {
        let g = self.hold(ctx, t);
        self.ipc(&g, |i| i.ret = regs);
    }

    /// Whether `t` may keep running on the calling core.
    fn runnable_here(&self, ctx: Ctx, t: ThreadId) -> bool {
        let conf = self.conf(t);
        if conf.life != Life::Alive || conf.core != ctx.cpu {
            return false;
        }
        let g = self.hold(ctx, t);
        self.ipc(&g, |i| i.state == ThreadState::Runnable)
    }
}
