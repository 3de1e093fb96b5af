//! The kernel object: state tables, the accessors that encapsulate every `unsafe` access,
//! boot-time construction, and the entry points the HAL calls.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use kernel_locks::{CachePadded, CpuId};

use crate::cap::{CSpace, Cap, ObjKind, ObjRef, Rights};
use crate::config::*;
use crate::error::Error;
use crate::hal::{Actions, Hal, IpiKind, PhysAddr, TlbGeneration};
use crate::ids::*;
use crate::mem::Region;
use crate::strategy::{LockId, Side, Strategy};
use crate::syscall::{err_regs, message, IpcCall, Msg, Regs, Syscall};

/// A thread's IPC/scheduling state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ThreadState {
    /// Not runnable until resumed.
    Inactive,
    /// Running (the current thread of its core) or ready (in its core's run queue).
    Runnable,
    /// Blocked sending (or calling) on an endpoint.
    BlockedSend(EndpointId),
    /// Blocked receiving on an endpoint.
    BlockedRecv(EndpointId),
    /// Called and waiting for the reply.
    BlockedReply,
    /// Waiting on a notification.
    BlockedNotification(NotificationId),
}

/// Whether a TCB slot holds a thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Life {
    /// Unused.
    Free,
    /// A thread.
    Alive,
    /// Deleted while some core still had it as its current thread; that core drops it at its
    /// next kernel entry, after which the slot can be reused.
    Zombie,
}

/// TCB configuration: changed only by exclusive (management) sections.
///
/// The per-thread tables' strides (this, [`TcbIpc`], [`Endpoint`]) are powers of two on ARMv7,
/// where the IPC path scales a thread index by them: one shifted operand instead of two
/// shifted adds (24, 56 and 6 bytes took two instructions each, per access). x86_64 scales by
/// any stride in one instruction (`lea` or `imul`), so only the endpoint, 6 bytes to 8, is
/// padded there too (its index then scales in the addressing mode).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(target_arch = "arm", repr(align(32)))]
pub(crate) struct TcbConf {
    pub life: Life,
    /// Below [`NUM_PRIOS`]; written with [`set_priority`](Self::set_priority), which keeps
    /// `at_or_above` in step.
    pub priority: usize,
    /// The run-queue bitmap's bits of `priority` and above (`!0 << priority`): the fastpath's
    /// test that nothing queued on the core outranks the thread is one `and` with it (a shift
    /// by `priority` took the shift-count register and a shuffle of what it held on x86_64).
    pub at_or_above: u32,
    pub core: CpuId,
    pub aspace: Option<AsId>,
    /// Fault endpoint and the badge of the capability it was bound with.
    pub pager: Option<(EndpointId, usize)>,
    /// Whether the thread has a user context to start from: given by the boot code to the
    /// threads of [`Kernel::create_thread`], by `WriteRegisters` to those of `CreateThread`.
    /// `Resume` refuses a thread without one: the HAL would have no registers to run it with
    /// (or a deleted thread's, in a reused TCB).
    pub has_entry: bool,
}

impl TcbConf {
    /// Sets the priority (below [`NUM_PRIOS`], reduced modulo it otherwise) and its bitmap
    /// mask.
    pub fn set_priority(&mut self, priority: usize) {
        self.priority = priority % NUM_PRIOS;
        self.at_or_above = !0u32 << self.priority;
    }

    pub const FREE: TcbConf = TcbConf {
        life: Life::Free,
        priority: 0,
        at_or_above: !0,
        core: 0,
        aspace: None,
        pager: None,
        has_entry: false,
    };
}

/// TCB IPC state: protected by the TCB lock. (Its stride: see [`TcbConf`].)
#[derive(Clone, Copy, Debug)]
#[cfg_attr(target_arch = "arm", repr(align(64)))]
pub(crate) struct TcbIpc {
    pub state: ThreadState,
    /// Outgoing message while blocked sending.
    pub msg: Msg,
    /// Badge of the capability a blocked sender used.
    pub badge: usize,
    /// Whether the blocked send is a Call.
    pub is_call: bool,
    /// Whether the pending Call is a page fault (the reply must not touch `ret`).
    pub fault: bool,
    /// Result registers, restored when the thread next returns from a system call. Dead
    /// while the thread runs: the IPC fastpath hands the thread it resumes its registers
    /// directly and leaves this field as it was, and every system call writes it before
    /// the thread returns (the fastpath tests compare every exit's registers).
    pub ret: Regs,
    /// Reply slot: the caller this thread must answer (a one-shot reply capability).
    pub reply_to: Option<ThreadId>,
    /// While `BlockedReply`: the thread holding our reply capability.
    pub server: Option<ThreadId>,
}

impl TcbIpc {
    pub const INIT: TcbIpc = TcbIpc {
        state: ThreadState::Inactive,
        msg: [0; MSG_WORDS],
        badge: 0,
        is_call: false,
        fault: false,
        ret: [0; 6],
        reply_to: None,
        server: None,
    };
}

/// Doubly-linked intrusive list links.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Link {
    pub prev: Option<ThreadId>,
    pub next: Option<ThreadId>,
}

/// An intrusive FIFO of threads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Queue {
    pub head: Option<ThreadId>,
    pub tail: Option<ThreadId>,
}

/// An endpoint: a queue of blocked senders or of blocked receivers. (Its stride: see
/// [`TcbConf`].)
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(8))]
pub(crate) struct Endpoint {
    pub queue: Queue,
    /// Whether the (non-empty) queue holds receivers.
    pub receivers: bool,
}

#[cfg(target_arch = "arm")]
const _: () =
    assert!(size_of::<TcbConf>() == 32 && size_of::<TcbIpc>() == 64 && size_of::<Endpoint>() == 8);

/// A notification: a word of pending bits and a queue of waiters.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Notification {
    pub word: usize,
    pub waiters: Queue,
}

/// An interrupt line.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct IrqState {
    /// Notification and badge (bound: exclusive sections only).
    pub bound: Option<(NotificationId, usize)>,
    /// Masked since the last interrupt, until acknowledged (IRQ lock).
    pub masked: bool,
    /// A handler capability was issued for the line (`IssueIrqHandler`; exclusive sections
    /// only); cleared when its last capability is deleted.
    pub issued: bool,
}

/// Whether an address-space slot holds an address space (see [`mgmt`](crate::mgmt)).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum AsLife {
    /// An address space (or a slot never created at boot, beyond `n_aspaces`).
    Alive,
    /// Deleted: its mappings and capabilities are gone, its page tables reset. The slot (and
    /// its root) can be reused once every core in `wait` acknowledged its TLB shoot-down.
    Dying,
}

/// An address space (exclusive sections only, except `root` which never changes). What it
/// maps is recorded in its page tables only (see [`mem`](crate::mem)).
///
/// 64-byte aligned, so that its stride is a power of two on both architectures (48 bytes on
/// ARMv7, 80 on x86_64, took two instructions to scale an index by, on every switch).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(crate) struct AddressSpace {
    pub root: PhysAddr,
    pub life: AsLife,
    /// While `Dying`: the shoot-down generation each core must acknowledge (0: none) before
    /// the slot may be reused.
    pub wait: [TlbGeneration; MAX_CPUS],
}

/// A core's scheduler state (run-queue lock). The core's current thread is apart, in
/// `Kernel::current`, so that the core reads it without the lock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoreSched {
    pub queues: [Queue; NUM_PRIOS],
}

/// State only its own core touches.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoreLocal {
    pub actions: Actions,
    pub loaded: Option<AsId>,
    /// A thread of this core that [`Kernel::wake`] made runnable in this entry and left out of
    /// the run queue for this entry's [`Kernel::schedule`], which runs it at once or queues it
    /// (a direct switch, as seL4's IPC fastpath does). `None` between entries.
    pub direct: Option<ThreadId>,
}

/// A core's kernel-entry counters (see [`Kernel::count_entry`]). Each is written only by its
/// core, with a plain load and store (no read-modify-write), and read by any core.
#[cfg(feature = "trace")]
#[derive(Debug, Default)]
pub(crate) struct EntryCounts {
    /// Kernel entries.
    pub entries: AtomicU64,
    /// Counter ticks from entry to exit, of traced entries only (the `trace` feature with a
    /// tracer set, whose timestamps are reused: untraced entries read no counter for it).
    pub cycles: AtomicU64,
}

/// How many capabilities name each object.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Refs {
    pub threads: [u32; MAX_THREADS],
    pub eps: [u32; MAX_ENDPOINTS],
    pub ntfns: [u32; MAX_NOTIFICATIONS],
    pub aspaces: [u32; MAX_ASPACES],
    pub mems: [u32; MAX_MEMS],
    pub irqs: [u32; MAX_IRQS],
    pub control: u32,
}

impl Refs {
    pub(crate) const ZERO: Refs = Refs {
        threads: [0; MAX_THREADS],
        eps: [0; MAX_ENDPOINTS],
        ntfns: [0; MAX_NOTIFICATIONS],
        aspaces: [0; MAX_ASPACES],
        mems: [0; MAX_MEMS],
        irqs: [0; MAX_IRQS],
        control: 0,
    };

    pub(crate) fn slot(&mut self, obj: ObjRef) -> &mut u32 {
        match obj {
            ObjRef::Thread(t) => &mut self.threads[t.index()],
            ObjRef::Endpoint(e) => &mut self.eps[e.index()],
            ObjRef::Notification(n) => &mut self.ntfns[n.index()],
            ObjRef::AddressSpace(a) => &mut self.aspaces[a.index()],
            ObjRef::Memory(m) => &mut self.mems[m.index()],
            ObjRef::IrqHandler(i) => &mut self.irqs[i.index()],
            ObjRef::Control => &mut self.control,
        }
    }
}

/// Object allocation and reference counts (exclusive sections only).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meta {
    pub n_eps: usize,
    pub n_ntfns: usize,
    pub n_aspaces: usize,
    /// Memory regions (see [`mem`](crate::mem)).
    pub regions: [Region; MAX_MEMS],
    pub refs: Refs,
}

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

pub use abi::syscall::{EXCEPTION_LABEL, FAULT_LABEL};

/// More than the shoot-down requests of one core that can be unacknowledged at once (a
/// requesting entry records its generations and waits for them right after its section; each
/// entry requests a few per core at most).
const MAX_UNACKED: TlbGeneration = 1 << 16;

/// Whether a core whose acknowledged generation is `ack` has acknowledged `g`: unless `g` is
/// at most [`MAX_UNACKED`] ahead of `ack` (wrapping). A generation kept for long (a deleted
/// address space's, checked at a later reuse) is then taken for unacknowledged only while the
/// counter passes a window of `MAX_UNACKED` values once per wrap, not for half of every wrap
/// as a signed serial-number comparison would (see the `shootdown` section of `Kernel`).
#[inline(always)]
pub(crate) fn reached(ack: TlbGeneration, g: TlbGeneration) -> bool {
    !(1..=MAX_UNACKED).contains(&g.wrapping_sub(ack))
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
    /// `schedule` ([`CoreLocal::direct`]) instead of queueing it. False for boot-time and
    /// inspection contexts, which never schedule.
    pub entry: bool,
}

/// An object whose state one lock guards: what [`Kernel::hold`] takes, and the key a [`Held`]
/// token carries.
pub(crate) trait Guarded: Copy + PartialEq + core::fmt::Debug {
    /// The lock of this object.
    fn lock_id(self) -> LockId;
}

impl Guarded for ThreadId {
    #[inline(always)]
    fn lock_id(self) -> LockId {
        LockId::Tcb(self)
    }
}

impl Guarded for EndpointId {
    #[inline(always)]
    fn lock_id(self) -> LockId {
        LockId::Endpoint(self)
    }
}

impl Guarded for NotificationId {
    #[inline(always)]
    fn lock_id(self) -> LockId {
        LockId::Notification(self)
    }
}

impl Guarded for IrqId {
    #[inline(always)]
    fn lock_id(self) -> LockId {
        LockId::Irq(self)
    }
}

/// A core's run queue and current thread, as a [`Guarded`] key.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct RunQueue(pub CpuId);

impl Guarded for RunQueue {
    #[inline(always)]
    fn lock_id(self) -> LockId {
        LockId::RunQueue(self.0)
    }
}

/// Proof that a section may touch one object's lock-guarded state: the object's lock is held
/// (released on drop), or the section is exclusive (nothing was taken), or the object is the
/// calling core's own unpublished current thread ([`Kernel::own_current`], nothing taken). The accessors of that
/// state ([`Kernel::ipc`], [`Kernel::ep`], [`Kernel::ntfn`], [`Kernel::irq`], [`Kernel::sched`],
/// [`Kernel::current_on`]) take the token instead of the object's id, so the fine-grained
/// discipline "hold the object's lock in shared sections" is checked by the compiler: the state
/// of an object cannot be reached without a guard of that very object, in release builds too.
pub(crate) struct Held<'k, S: Strategy, K: Guarded> {
    strategy: &'k S,
    cpu: CpuId,
    key: K,
    locked: bool,
}

impl<S: Strategy, K: Guarded> Held<'_, S, K> {
    /// Ends the token without releasing its lock: its key if it holds the lock, for a release
    /// at the section's end ([`Strategy::exit_releasing`]).
    #[inline(always)]
    pub(crate) fn keep_locked(self) -> Option<K> {
        let held = self.locked.then_some(self.key);
        core::mem::forget(self);
        held
    }

    /// The object this token guards.
    #[inline(always)]
    pub fn key(&self) -> K {
        self.key
    }
}

impl<S: Strategy, K: Guarded> Drop for Held<'_, S, K> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.locked {
            // SAFETY: `key`'s lock was taken by `cpu` in `Kernel::hold` and is released once,
            // here.
            unsafe { self.strategy.unlock(self.cpu, self.key.lock_id()) }
        }
    }
}

/// The tokens of two TCBs taken in index order ([`Kernel::hold2`]); one if both are the same.
pub(crate) struct Tcbs<'k, S: Strategy> {
    lo: Held<'k, S, ThreadId>,
    hi: Option<Held<'k, S, ThreadId>>,
}

impl<'k, S: Strategy> Tcbs<'k, S> {
    /// The token of `t`, one of the two. Naming another thread is a kernel bug, reported even
    /// in release builds (a compare per access, off any loop).
    #[inline(always)]
    pub fn of(&self, t: ThreadId) -> &Held<'k, S, ThreadId> {
        match &self.hi {
            Some(h) if h.key == t => h,
            _ => {
                assert!(self.lo.key == t, "TCB {t:?} accessed without its lock");
                &self.lo
            }
        }
    }
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

/// The kernel: every object table, generic over the locking strategy `S` and the HAL `H`.
///
/// Build it with [`Kernel::new`], populate it with the boot-time methods (`create_*`,
/// `install_cap`, `start`), which take `&mut self`, then share `&Kernel` with every core, whose
/// HAL calls [`syscall`](Self::syscall), [`interrupt`](Self::interrupt),
/// [`timer_tick`](Self::timer_tick), [`ipi`](Self::ipi) and [`page_fault`](Self::page_fault).
///
/// # HAL contract
/// Each entry is called on the core it names (`cpu < cores`, checked: a violation panics, it is
/// a HAL bug), never re-entered on the same core (checked on every entry in debug builds and on
/// every entry but `Call` and `ReplyRecv` in release builds, see `begin_ipc`).
///
/// # Field order
/// `repr(C)`, so that the IPC path's fields keep offsets that do not depend on the strategy's
/// alignment: the strategy first (a big lock at offset 0 needs no base address), then the
/// scalars and arrays that `Call` and `ReplyRecv` read, the rest, and the large cold tables
/// (`meta`, `cspaces`) last. ARMv7 pays for a far field: a load's immediate offset reaches
/// 4 KiB (255 bytes for half-words) and an `add` immediate takes 8 significant bits, beyond
/// which each access costs a `movw` more; x86_64's 32-bit displacements do not care. Left to
/// the compiler's field order, the ticket lock moving from 4- to 8-byte alignment moved the
/// strategy away from `cores` and cost ARMv7's round trip 6 instructions; this order took it
/// from 423 to 403 under `-icount` (fine-grained 482 -> 480, CLH 455 -> 453; x86_64 the same).
#[repr(C)]
pub struct Kernel<S: Strategy, H: Hal> {
    pub(crate) strategy: S,
    pub(crate) cores: usize,
    /// The core count while system calls take the IPC entry (the fastpath on and, with the
    /// `trace` feature, no tracer), 0 otherwise: the entry's switch and its core check in one
    /// compare (`cpu < ipc_cores`; a core at or above the count takes the generic entry, whose
    /// check fails). Written with `fastpath` and the tracer.
    ipc_cores: usize,
    /// Whether `Call` and `ReplyRecv` try the fastpath ([`crate::fastpath`]) first.
    fastpath: bool,
    in_kernel: [CachePadded<AtomicBool>; MAX_CPUS],
    pub(crate) conf: [UnsafeCell<TcbConf>; MAX_THREADS],
    pub(crate) ipc: [UnsafeCell<TcbIpc>; MAX_THREADS],
    /// Endpoint/notification queue links (lock of the queue's owner).
    pub(crate) qlinks: [UnsafeCell<Link>; MAX_THREADS],
    pub(crate) eps: [UnsafeCell<Endpoint>; MAX_ENDPOINTS],
    pub(crate) aspaces: [UnsafeCell<AddressSpace>; MAX_ASPACES],
    /// Per core, per address space: whether the core may cache it (TLB shoot-down targets).
    /// A core sets its flag in the section that decides to load the address space, and keeps
    /// it when it switches to another one: the HAL's switch may leave the old address space's
    /// TLB entries in place (ARMv7 tags them with its ASID; flushing them on every switch cost
    /// a TLB invalidation, a `dsb` and the walks that refill the entries when the address space
    /// comes back, twice per IPC round trip). The core clears its flags when it flushes its
    /// whole TLB for a shoot-down, all but the loaded address space's
    /// ([`Kernel::flush_and_ack`]). An idle core keeps the address space it last ran loaded,
    /// and its flag. Only the core itself writes its row, so each flag is a plain
    /// store, not a read-modify-write of a word that all cores share (a bit mask cost two
    /// locked RMWs on x86_64, two `ldrex`/`strex` loops on ARMv7, per address-space switch),
    /// and the rows are cache-line padded so that the IPC path's stores never move a line
    /// between cores. Readers (unmappers, rare) load every core's flag ([`Kernel::as_cores`]).
    pub(crate) as_active: [CachePadded<[AtomicBool; MAX_ASPACES]>; MAX_CPUS],
    /// Per core: bit `p` set iff its run queue's priority `p` queue is non-empty. Written only
    /// by holders of that core's run-queue lock (a relaxed load and store, no read-modify-write);
    /// read under the lock, and without it by the core's own IPC fastpath (see
    /// [`Kernel::wake`] for why a stale read there is harmless). Atomic for that one racy read,
    /// and outside the queues' cell, which a lock holder borrows mutably. (On the queues' line
    /// instead, measured: ARMv7 CLH round trip 876 -> 888, x86_64 none 762 -> 766.)
    pub(crate) rq_bits: [CachePadded<AtomicU32>; MAX_CPUS],
    /// Per core: its current thread (`None`: idle). Written only by that core: holding its
    /// run-queue lock in [`schedule`](Kernel::schedule), without it on the IPC fastpath
    /// ([`Kernel::set_current_fast`]). Read by that core without the lock, by other cores
    /// with the lock (see [`Kernel::wake`]).
    pub(crate) current: [CachePadded<AtomicId<ThreadId>>; MAX_CPUS],
    pub(crate) local: [CachePadded<UnsafeCell<CoreLocal>>; MAX_CPUS],
    /// Run-queue links (run-queue lock of the thread's core).
    pub(crate) slinks: [UnsafeCell<Link>; MAX_THREADS],
    pub(crate) ntfns: [UnsafeCell<Notification>; MAX_NOTIFICATIONS],
    /// Per core: TLB shoot-down generation requested of it (see [`Kernel::shootdown_pending`]).
    pub(crate) tlb_req: [CachePadded<AtomicUsize>; MAX_CPUS],
    /// Per core: TLB shoot-down generation it acknowledged (flushed).
    pub(crate) tlb_ack: [CachePadded<AtomicUsize>; MAX_CPUS],
    pub(crate) sched: [CachePadded<UnsafeCell<CoreSched>>; MAX_CPUS],
    /// Per core: its idle clock (see [`IdleClock`]).
    idle: [CachePadded<IdleClock>; MAX_CPUS],
    pub(crate) irqs: [UnsafeCell<IrqState>; MAX_IRQS],
    pub(crate) meta: UnsafeCell<Meta>,
    pub(crate) cspaces: [UnsafeCell<CSpace>; MAX_THREADS],
    pub(crate) hal: H,
    /// Per core: its entry counters since boot (the benchmark call `KernelCounters`). Written
    /// only by that core, read by any. With the `trace` feature only: in the other builds the
    /// kernel's fields keep their offsets (with these padded lines in every build, ARMv7's IPC
    /// round trip took 16 instructions more under `-icount`, likely later fields moving out of
    /// load-immediate range).
    #[cfg(feature = "trace")]
    pub(crate) counts: [CachePadded<EntryCounts>; MAX_CPUS],
    /// Per core: the counters at the last `KernelCounters` zero (the counters themselves are
    /// never reset: only their core writes them, so a zero from another core could be lost).
    #[cfg(feature = "trace")]
    pub(crate) counts_base: [EntryCounts; MAX_CPUS],
    /// Where entries are traced (see [`crate::trace`]); `None`: not traced.
    #[cfg(feature = "trace")]
    tracer: Option<&'static dyn crate::trace::TraceSink>,
    /// Per core: the trace record of its traced entry in progress.
    #[cfg(feature = "trace")]
    trace_rec: [CachePadded<UnsafeCell<crate::trace::Pending>>; MAX_CPUS],
    /// Entries the fastpath completed (unit tests: that their scenarios reach it).
    #[cfg(test)]
    pub(crate) fast_taken: core::sync::atomic::AtomicUsize,
}

/// A core's idle accounting: when it last went idle, and its idle cycles so far. Written only
/// by that core, with plain loads and stores (no read-modify-write); read by any core
/// (`KernelInfo`), which adds the current idle stretch: a core idle since boot with no
/// interrupt would otherwise read 0 for as long as it stays idle.
///
/// Ordering: ending a stretch clears `since` and then adds the stretch to `total` with a
/// Release store. A reader loads `total` (Acquire), then `since`, then `total` again, and
/// retries if the totals differ: if its first load saw a total that includes a stretch, the
/// Acquire makes the cleared `since` visible, so no stretch is counted twice. Starting a
/// stretch is a Relaxed store (a reader that misses it just reads the idle time a moment
/// late).
#[derive(Debug, Default)]
pub(crate) struct IdleClock {
    /// The counter when the core's last entry left it idle; 0: not idle.
    since: AtomicU64,
    /// Idle cycles since boot.
    total: AtomicU64,
}

// SAFETY: all shared mutable state is in `UnsafeCell`s reached only through the accessors
// below, each of which documents the strategy guarantee that makes its access race-free.
unsafe impl<S: Strategy, H: Hal> Sync for Kernel<S, H> {}
// SAFETY: the kernel owns its state; moving it between threads moves no borrowed data.
unsafe impl<S: Strategy + Send, H: Hal + Send> Send for Kernel<S, H> {}

fn cells<T: Copy, const N: usize>(v: T) -> [UnsafeCell<T>; N] {
    core::array::from_fn(|_| UnsafeCell::new(v))
}

/// Per-core cells, each on its own cache line: a core's entry writes its own state on every
/// kernel entry, and without the padding the neighbouring core's line would bounce with it
/// (false sharing; the hosted multicore ping-pong with no lock lost half its throughput on two
/// cores).
fn padded_cells<T: Copy, const N: usize>(v: T) -> [CachePadded<UnsafeCell<T>>; N] {
    core::array::from_fn(|_| CachePadded::new(UnsafeCell::new(v)))
}

/// Runs `f` on a shared reference to the cell's content.
///
/// # Safety
/// No `&mut` to the content exists (on any core) while `f` runs.
unsafe fn cell_ref<T, R>(cell: &UnsafeCell<T>, f: impl FnOnce(&T) -> R) -> R {
    // SAFETY: forwarded contract.
    f(unsafe { &*cell.get() })
}

/// Runs `f` on an exclusive reference to the cell's content.
///
/// # Safety
/// No other reference to the content exists (on any core) while `f` runs.
unsafe fn cell_mut<T, R>(cell: &UnsafeCell<T>, f: impl FnOnce(&mut T) -> R) -> R {
    // SAFETY: forwarded contract.
    f(unsafe { &mut *cell.get() })
}

impl<S: Strategy, H: Hal> Kernel<S, H> {
    /// An empty kernel for cores `0..cores` (`1..=MAX_CPUS`).
    ///
    /// # Panics
    /// If `cores` is 0 or above [`MAX_CPUS`], or above the strategy's
    /// [`max_cpus`](Strategy::max_cpus) (configuration errors).
    pub fn new(strategy: S, hal: H, cores: usize) -> Self {
        assert!(
            (1..=MAX_CPUS).contains(&cores),
            "kernel: 1..={MAX_CPUS} cores"
        );
        assert!(
            cores <= strategy.max_cpus(),
            "kernel: {cores} cores, but the {} strategy was built for {}",
            strategy.name(),
            strategy.max_cpus()
        );
        Self {
            strategy,
            hal,
            cores,
            in_kernel: core::array::from_fn(|_| CachePadded::new(AtomicBool::new(false))),
            meta: UnsafeCell::new(Meta {
                n_eps: 0,
                n_ntfns: 0,
                n_aspaces: 0,
                regions: [Region::FREE; MAX_MEMS],
                refs: Refs::ZERO,
            }),
            conf: cells(TcbConf::FREE),
            cspaces: cells(CSpace::new()),
            ipc: cells(TcbIpc::INIT),
            qlinks: cells(Link::default()),
            slinks: cells(Link::default()),
            eps: cells(Endpoint::default()),
            ntfns: cells(Notification::default()),
            irqs: cells(IrqState::default()),
            aspaces: cells(AddressSpace {
                root: 0,
                life: AsLife::Alive,
                wait: [0; MAX_CPUS],
            }),
            as_active: core::array::from_fn(|_| {
                CachePadded::new(core::array::from_fn(|_| AtomicBool::new(false)))
            }),
            tlb_req: core::array::from_fn(|_| CachePadded::new(AtomicUsize::new(0))),
            tlb_ack: core::array::from_fn(|_| CachePadded::new(AtomicUsize::new(0))),
            sched: padded_cells(CoreSched {
                queues: [Queue::default(); NUM_PRIOS],
            }),
            rq_bits: core::array::from_fn(|_| CachePadded::new(AtomicU32::new(0))),
            current: core::array::from_fn(|_| CachePadded::new(AtomicId::none())),
            local: padded_cells(CoreLocal {
                actions: Actions::NONE,
                loaded: None,
                direct: None,
            }),
            #[cfg(feature = "trace")]
            counts: core::array::from_fn(|_| CachePadded::new(EntryCounts::default())),
            #[cfg(feature = "trace")]
            counts_base: core::array::from_fn(|_| EntryCounts::default()),
            #[cfg(feature = "trace")]
            tracer: None,
            #[cfg(feature = "trace")]
            trace_rec: padded_cells(crate::trace::Pending::EMPTY),
            fastpath: true,
            ipc_cores: cores,
            #[cfg(test)]
            fast_taken: core::sync::atomic::AtomicUsize::new(0),
            idle: core::array::from_fn(|_| CachePadded::new(IdleClock::default())),
        }
    }

    /// Turns the IPC fastpath (`kernel/src/fastpath.rs`) on (the default) or off. Either way every
    /// system call has the same result; off, `Call` and `ReplyRecv` always take the full path.
    pub fn set_fastpath(&mut self, on: bool) {
        self.fastpath = on;
        self.ipc_cores = if on && !self.tracing() { self.cores } else { 0 };
    }

    /// Traces every later kernel entry into `sink` (the `trace` feature; see [`crate::trace`]).
    #[cfg(feature = "trace")]
    pub fn set_tracer(&mut self, sink: &'static dyn crate::trace::TraceSink) {
        self.tracer = Some(sink);
        self.ipc_cores = 0;
    }

    /// The strategy.
    pub fn strategy(&self) -> &S {
        &self.strategy
    }

    /// The HAL.
    pub fn hal(&self) -> &H {
        &self.hal
    }

    /// Cores this kernel runs on.
    pub fn cores(&self) -> usize {
        self.cores
    }

    // ---------------------------------------------------------------------------------------
    // Accessors. Every unsafe access to kernel state is in this block.
    //
    // Common argument: in an exclusive section (`ctx.excl`), the strategy guarantees that no
    // other core runs kernel code (see `Strategy`), and the code of one section never holds two
    // references to the same cell (closures do not re-enter the accessor of their own cell), so
    // every access is unique. The per-accessor comments give the argument for shared sections
    // (the fine-grained read side).
    // ---------------------------------------------------------------------------------------

    /// Takes an object lock unless the section is exclusive.
    ///
    /// Always inlined, like [`Held`]'s drop and the fine-grained strategy's `lock`/`unlock`:
    /// a round trip passes here 18 times, and out of line each pass costs a call, a return and
    /// a jump-table dispatch on the [`LockId`] kind that inlining folds into the call site
    /// (measured on the hosted ping-pong: about 80 of ~575 cycles per round trip).
    #[inline(always)]
    pub(crate) fn hold<K: Guarded>(&self, ctx: Ctx, key: K) -> Held<'_, S, K> {
        let locked = !ctx.excl;
        if locked {
            #[cfg(feature = "trace")]
            if self.tracer.is_some() {
                self.lock_traced(ctx.cpu, key.lock_id());
            } else {
                self.strategy.lock(ctx.cpu, key.lock_id());
            }
            #[cfg(not(feature = "trace"))]
            self.strategy.lock(ctx.cpu, key.lock_id());
        }
        self.token(ctx, key, locked)
    }

    /// The token of `key` for a section of `ctx` (`locked`: its lock was taken for it).
    #[inline(always)]
    fn token<K: Guarded>(&self, ctx: Ctx, key: K, locked: bool) -> Held<'_, S, K> {
        Held {
            strategy: &self.strategy,
            cpu: ctx.cpu,
            key,
            locked,
        }
    }

    /// Takes object lock `id` and notes it in the entry's trace record (the `trace` feature
    /// with a tracer set): the counter read before the request and after the acquisition.
    #[cfg(feature = "trace")]
    #[inline(never)]
    fn lock_traced(&self, cpu: CpuId, id: LockId) {
        let requested = self.hal.trace_cycles();
        self.strategy.lock(cpu, id);
        let acquired = self.hal.trace_cycles();
        self.trace_pending(cpu, |p| p.note(id.trace_id(), requested, acquired));
    }

    /// This core's trace record of its traced entry in progress (the `trace` feature).
    #[cfg(feature = "trace")]
    #[inline(always)]
    fn trace_pending<R>(&self, cpu: CpuId, f: impl FnOnce(&mut crate::trace::Pending) -> R) -> R {
        // SAFETY: only entries on `cpu` touch its cell, one at a time (the HAL contract that
        // `entry` checks with `in_kernel`), and `f` (field stores, `begin`, `note`) reaches no
        // accessor, so this is the only reference while it runs.
        unsafe { cell_mut(&self.trace_rec[cpu], f) }
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

    /// Locks two TCBs in index order (one if equal).
    #[inline(always)]
    pub(crate) fn hold2(&self, ctx: Ctx, a: ThreadId, b: ThreadId) -> Tcbs<'_, S> {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let lo = self.hold(ctx, lo);
        let hi = (lo.key != hi).then(|| self.hold(ctx, hi));
        Tcbs { lo, hi }
    }

    /// TCB configuration (copy). Written only in exclusive sections, so a shared section reads
    /// it while nobody writes.
    pub(crate) fn conf(&self, t: ThreadId) -> TcbConf {
        // SAFETY: writers (`conf_mut`) run only in exclusive sections; a shared section runs
        // while none does; within an exclusive section this copy ends before any write.
        unsafe { cell_ref(&self.conf[t.index()], |c| *c) }
    }

    /// Changes TCB configuration (exclusive sections only).
    pub(crate) fn conf_mut<R>(
        &self,
        ctx: Ctx,
        t: ThreadId,
        f: impl FnOnce(&mut TcbConf) -> R,
    ) -> R {
        assert!(ctx.excl, "TCB configuration written in a shared section");
        // SAFETY: exclusive section (common argument).
        unsafe { cell_mut(&self.conf[t.index()], f) }
    }

    /// The IPC state of `cur`, the calling core's current thread as the entry read it, without
    /// its TCB lock: the token if the thread is `Runnable`, `None` otherwise (the caller then
    /// takes the lock, [`hold`](Self::hold)). The IPC fastpath's way to touch the caller's own
    /// state, as the fine-grained protocol allows (see [`strategy`](crate::strategy)).
    ///
    /// Why no other core can touch the thread meanwhile: shared sections of other cores reach
    /// a thread only through an endpoint's or notification's queue, a server's reply link, or
    /// a run queue, and none of these holds the current thread of a core while it is current
    /// and `Runnable` (it is in no queue, and a reply link names only a thread blocked on its
    /// reply); management calls could, but run in exclusive sections, which no shared section
    /// overlaps. The current thread at the start of an entry is in that state or in one only
    /// an exclusive section made (suspended, moved, deleted: in no queue either), so the read of
    /// its state here races with nothing.
    ///
    /// **The token is valid only until the section publishes the thread**: once it is pushed
    /// onto a queue or named by a reply link, other cores may take its lock as soon as the
    /// lock guarding that queue or link is released, so the caller must be done with the token
    /// before it releases that lock (the fastpath drops it before the endpoint's guard).
    #[inline(always)]
    pub(crate) fn own_current(&self, ctx: Ctx, cur: ThreadId) -> Option<Held<'_, S, ThreadId>> {
        debug_assert_eq!(
            Some(cur),
            self.current(ctx),
            "not the core's current thread"
        );
        let g = self.token(ctx, cur, false);
        (self.ipc(&g, |i| i.state) == ThreadState::Runnable).then_some(g)
    }

    /// The IPC state of `peer`, the other thread of a fastpath IPC, without its TCB lock: a
    /// thread of this core, blocked where only this section can reach it. Either it waits as
    /// a receiver in the queue of an endpoint whose lock this section holds (`Call`), or it
    /// waits for the reply of this core's current thread, whose reply link names it
    /// (`ReplyRecv`); the caller has checked which.
    ///
    /// Why no other core touches it meanwhile: shared sections of other cores reach a blocked
    /// thread only through what holds it, the endpoint's queue (under the endpoint's lock,
    /// which this section holds) or the server's reply link (followed only by the server's
    /// core while the server runs, and the server is this core's current thread, which this
    /// section owns, see [`own_current`](Self::own_current)). Reply links never outlive the
    /// wait (`answer` and `detach` clear the server's link whenever a caller stops waiting;
    /// [`check_invariants`](Self::check_invariants) checks it), a blocked thread is no core's
    /// current thread and in no run queue, and management calls run in exclusive sections.
    /// The section that blocked the thread ran before this one: on this core, or on another
    /// before an exclusive section moved the thread here (which orders it before this one).
    ///
    /// What the caller writes is published as the thread's lock would publish it: every later
    /// access by another core reaches the thread through the endpoint's lock (released after
    /// the writes), through a lock this core releases later (the thread runs here next), or in
    /// an exclusive section (which waits for this core's read side to end). Debug builds check
    /// that no other core holds the thread's lock at the start and at the end.
    #[inline(always)]
    pub(crate) fn fast_peer(&self, ctx: Ctx, peer: ThreadId) -> Held<'_, S, ThreadId> {
        debug_assert!(
            ctx.excl || !self.strategy.is_held(LockId::Tcb(peer)),
            "the fastpath's peer's TCB lock is held elsewhere"
        );
        self.token(ctx, peer, false)
    }

    /// Ends a [`fast_peer`](Self::fast_peer) token: debug builds check again that no other
    /// core took the thread's lock while this section wrote its state.
    #[inline(always)]
    pub(crate) fn fast_peer_done(&self, ctx: Ctx, g: Held<'_, S, ThreadId>) {
        debug_assert!(
            ctx.excl || !self.strategy.is_held(LockId::Tcb(g.key)),
            "the fastpath's peer's TCB lock was taken elsewhere"
        );
        drop(g);
    }

    /// TCB IPC state: needs the TCB lock in shared sections.
    pub(crate) fn ipc<R>(&self, g: &Held<'_, S, ThreadId>, f: impl FnOnce(&mut TcbIpc) -> R) -> R {
        // SAFETY: the token proves an exclusive section, or that the caller holds the TCB lock
        // of `g.key`, which every accessor of this cell in a shared section holds, or (made by
        // `own_current`) that `g.key` is the calling core's unpublished current thread, which
        // no other core can reach until this section publishes it and releases the lock that
        // guards where it published it, or (made by `fast_peer`) that `g.key` is blocked where
        // only this section reaches it.
        unsafe { cell_mut(&self.ipc[g.key.index()], f) }
    }

    /// A capability of `t`'s CSpace (copy). CSpaces are written only in exclusive sections.
    pub(crate) fn cap(&self, t: ThreadId, slot: CapSlot) -> Result<Cap, Error> {
        // SAFETY: as for `conf`: writers (`cspace_mut`) are exclusive.
        unsafe { cell_ref(&self.cspaces[t.index()], |c| c.get(slot)) }
    }

    /// The endpoint and badge of `t`'s capability in `slot` if it is an endpoint capability
    /// with `rights` ([`CSpace::endpoint`]): the fastpath's lookup, `None` for every failure
    /// (the full path then finds the same slot and reports why).
    #[inline(always)]
    pub(crate) fn fast_lookup_ep(
        &self,
        t: ThreadId,
        slot: CapSlot,
        rights: Rights,
    ) -> Option<(EndpointId, usize)> {
        // SAFETY: as for `cap`.
        unsafe { cell_ref(&self.cspaces[t.index()], |c| c.endpoint(slot, rights)) }
    }

    /// Looks up a capability of `t` and checks kind and rights.
    pub(crate) fn lookup(
        &self,
        t: ThreadId,
        slot: CapSlot,
        kind: ObjKind,
        rights: Rights,
    ) -> Result<Cap, Error> {
        self.cap(t, slot)?.check(kind, rights)
    }

    /// Changes a CSpace (exclusive sections only).
    pub(crate) fn cspace_mut<R>(
        &self,
        ctx: Ctx,
        t: ThreadId,
        f: impl FnOnce(&mut CSpace) -> R,
    ) -> R {
        assert!(ctx.excl, "CSpace written in a shared section");
        // SAFETY: exclusive section (common argument).
        unsafe { cell_mut(&self.cspaces[t.index()], f) }
    }

    /// Reads allocation data and reference counts (written only in exclusive sections).
    pub(crate) fn meta<R>(&self, f: impl FnOnce(&Meta) -> R) -> R {
        // SAFETY: as for `conf`.
        unsafe { cell_ref(&self.meta, f) }
    }

    /// Changes allocation data and reference counts (exclusive sections only).
    pub(crate) fn meta_mut<R>(&self, ctx: Ctx, f: impl FnOnce(&mut Meta) -> R) -> R {
        assert!(ctx.excl, "metadata written in a shared section");
        // SAFETY: exclusive section (common argument).
        unsafe { cell_mut(&self.meta, f) }
    }

    /// A queue link: `links` is `qlinks` (guarded by the lock of the endpoint or notification
    /// whose queue the thread is in) or `slinks` (guarded by the run-queue lock of the thread's
    /// core). Callers hold that lock in shared sections.
    pub(crate) fn link<R>(
        &self,
        links: &[UnsafeCell<Link>; MAX_THREADS],
        t: ThreadId,
        f: impl FnOnce(&mut Link) -> R,
    ) -> R {
        // SAFETY: exclusive section, or the caller holds the lock of the queue containing `t`
        // (or that `t` is being inserted into), which every access to these links holds.
        unsafe { cell_mut(&links[t.index()], f) }
    }

    /// An endpoint: needs the endpoint lock in shared sections.
    pub(crate) fn ep<R>(
        &self,
        g: &Held<'_, S, EndpointId>,
        f: impl FnOnce(&mut Endpoint) -> R,
    ) -> R {
        // SAFETY: the token proves an exclusive section, or that the caller holds the lock.
        unsafe { cell_mut(&self.eps[g.key.index()], f) }
    }

    /// A notification: needs the notification lock in shared sections.
    pub(crate) fn ntfn<R>(
        &self,
        g: &Held<'_, S, NotificationId>,
        f: impl FnOnce(&mut Notification) -> R,
    ) -> R {
        // SAFETY: the token proves an exclusive section, or that the caller holds the lock.
        unsafe { cell_mut(&self.ntfns[g.key.index()], f) }
    }

    /// An IRQ: needs the IRQ lock in shared sections (`bound` is only written exclusively).
    pub(crate) fn irq<R>(&self, g: &Held<'_, S, IrqId>, f: impl FnOnce(&mut IrqState) -> R) -> R {
        // SAFETY: the token proves an exclusive section, or that the caller holds the lock.
        unsafe { cell_mut(&self.irqs[g.key.index()], f) }
    }

    /// An address space (read; written only in exclusive sections).
    pub(crate) fn aspace<R>(&self, a: AsId, f: impl FnOnce(&AddressSpace) -> R) -> R {
        // SAFETY: as for `conf`.
        unsafe { cell_ref(&self.aspaces[a.index()], f) }
    }

    /// Changes an address space (exclusive sections only).
    pub(crate) fn aspace_mut<R>(
        &self,
        ctx: Ctx,
        a: AsId,
        f: impl FnOnce(&mut AddressSpace) -> R,
    ) -> R {
        assert!(ctx.excl, "address space written in a shared section");
        // SAFETY: exclusive section (common argument).
        unsafe { cell_mut(&self.aspaces[a.index()], f) }
    }

    /// A core's scheduler state: needs that core's run-queue lock in shared sections.
    pub(crate) fn sched<R>(
        &self,
        g: &Held<'_, S, RunQueue>,
        f: impl FnOnce(&mut CoreSched) -> R,
    ) -> R {
        // SAFETY: the token proves an exclusive section, or that the caller holds the
        // run-queue lock of core `g.key`.
        unsafe { cell_mut(&self.sched[g.key.0], f) }
    }

    /// The calling core's private state.
    #[inline(always)]
    pub(crate) fn local<R>(&self, ctx: Ctx, f: impl FnOnce(&mut CoreLocal) -> R) -> R {
        self.local_of(ctx.cpu, f)
    }

    /// [`local`](Self::local) for code that has only the core's index: the per-core part of
    /// an entry after its section ([`after_rare`](Self::after_rare)).
    #[inline(always)]
    fn local_of<R>(&self, cpu: CpuId, f: impl FnOnce(&mut CoreLocal) -> R) -> R {
        // SAFETY: only core `cpu` touches its `local` cell (callers pass their own core's
        // index), and a core runs one kernel entry at a time (HAL contract; the `in_kernel`
        // flag checks it, see `begin` and `begin_ipc`).
        unsafe { cell_mut(&self.local[cpu], f) }
    }

    /// Records a hardware action for after the critical section.
    pub(crate) fn act(&self, ctx: Ctx, f: impl FnOnce(&mut Actions)) {
        self.local(ctx, |l| f(&mut l.actions));
    }

    // ---------------------------------------------------------------------------------------
    // Intrusive queues.
    // ---------------------------------------------------------------------------------------

    pub(crate) fn q_push(
        &self,
        links: &[UnsafeCell<Link>; MAX_THREADS],
        q: &mut Queue,
        t: ThreadId,
    ) {
        let tail = q.tail;
        self.link(links, t, |l| {
            *l = Link {
                prev: tail,
                next: None,
            }
        });
        match tail {
            Some(p) => self.link(links, p, |l| l.next = Some(t)),
            None => q.head = Some(t),
        }
        q.tail = Some(t);
    }

    pub(crate) fn q_remove(
        &self,
        links: &[UnsafeCell<Link>; MAX_THREADS],
        q: &mut Queue,
        t: ThreadId,
    ) {
        let l = self.link(links, t, core::mem::take);
        match l.prev {
            Some(p) => self.link(links, p, |pl| pl.next = l.next),
            None => q.head = l.next,
        }
        match l.next {
            Some(n) => self.link(links, n, |nl| nl.prev = l.prev),
            None => q.tail = l.prev,
        }
    }

    // ---------------------------------------------------------------------------------------
    // Entry points.
    // ---------------------------------------------------------------------------------------

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
    /// full path, a call. With one return value the two paths' [`Exit`]s met in a variable
    /// in memory (the call returns it there), so the fastpath stored its seven words and the
    /// return to user mode loaded them back; now the fastpath's stay in registers. The
    /// registers are read where the HAL saved them ([`SavedRegs`]), each where it is used:
    /// the message words at the fastpath's commit (`docs/bench/ipc-fastpath.md`, session 21).
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
    /// own: in line in the HAL's entry, its code spread the fastpath's registers thin (x86_64,
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
    /// masked only in the kernel), to service it in that entry (see the shoot-down section
    /// below). The requester waits for the acknowledgement, so a translation this core uses
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
    /// nothing nests in them), and it cost 5 loads, stores and branches per system call (10
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

    /// The core will leave the kernel with no thread to run: its idle time starts now (a few
    /// instructions before the exit, counted as idle).
    #[cold]
    fn enter_idle(&self, cpu: CpuId) {
        // 0 means "not idle": a counter that reads 0 counts from 1.
        let now = self.hal.cycles().max(1);
        self.idle[cpu].since.store(now, Ordering::Relaxed);
    }

    /// An interrupt, IPI or tick arrived on `cpu`: if the core was idle, its idle time ends
    /// now. (System calls and faults come from a running thread, never from an idle core, so
    /// their entry path does not look.)
    #[inline]
    fn leave_idle(&self, cpu: CpuId) {
        let Some(clock) = self.idle.get(cpu) else {
            return; // `entry` reports the bad core index
        };
        let since = clock.since.load(Ordering::Relaxed);
        if since != 0 {
            let idle = self.hal.cycles().saturating_sub(since);
            clock.since.store(0, Ordering::Relaxed);
            let total = clock.total.load(Ordering::Relaxed);
            // Release: a reader that sees the new total sees `since` cleared (type docs).
            clock
                .total
                .store(total.wrapping_add(idle), Ordering::Release);
        }
    }

    /// Cycles core `cpu` has spent idle since boot, its current idle stretch included (see
    /// [`IdleClock`] for why this is consistent).
    pub(crate) fn idle_cycles(&self, cpu: CpuId) -> u64 {
        let Some(clock) = self.idle.get(cpu).filter(|_| cpu < self.cores) else {
            return 0;
        };
        loop {
            let total = clock.total.load(Ordering::Acquire);
            let since = clock.since.load(Ordering::Relaxed);
            if clock.total.load(Ordering::Relaxed) != total {
                continue; // a stretch ended meanwhile: read again
            }
            if since == 0 {
                return total;
            }
            return total.wrapping_add(self.hal.cycles().saturating_sub(since));
        }
    }

    /// Adds `n` to a counter of this core's [`EntryCounts`]. Relaxed load and store, no
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

    /// The calling core's current thread, read without the run-queue lock: only the core itself
    /// changes its `current` (in [`schedule`](Self::schedule) and on the fastpath), so no write
    /// can race with this read, and the value stays valid until the core changes it.
    #[inline(always)]
    pub(crate) fn current(&self, ctx: Ctx) -> Option<ThreadId> {
        // Relaxed: only this core writes it (program order).
        self.current[ctx.cpu].load(Ordering::Relaxed)
    }

    /// The current thread of core `g.key`, read holding that core's run-queue lock in shared
    /// sections: the lock orders it after the core's `schedule` (which writes under the lock);
    /// the core's fastpath writes it without the lock, and [`wake`](Self::wake) says why a
    /// value it races with is still the right one to act on.
    pub(crate) fn current_on(&self, g: &Held<'_, S, RunQueue>) -> Option<ThreadId> {
        // Relaxed: see above; the ordering comes from the lock or from `wake`'s handshake.
        self.current[g.key.0].load(Ordering::Relaxed)
    }

    /// Sets the calling core's current thread (caller holds its run-queue lock in shared
    /// sections).
    #[inline(always)]
    pub(crate) fn set_current(&self, g: &Held<'_, S, RunQueue>, t: Option<ThreadId>) {
        assert_eq!(g.key.0, g.cpu, "a core set another core's current thread");
        self.current[g.cpu].store(t, Ordering::Relaxed);
    }

    /// Sets the calling core's current thread without its run-queue lock: the IPC fastpath,
    /// which hands the core from its current thread to a thread it just took off an endpoint
    /// or a reply link. Other cores read `current` only under the run-queue lock, in
    /// [`wake`](Self::wake), whose handshake with the fastpath makes either value right.
    #[inline(always)]
    pub(crate) fn set_current_fast(&self, ctx: Ctx, t: ThreadId) {
        // Relaxed: ordered for other cores by the section's release (the read side's), which
        // `wake`'s acquire of this core's reader slot pairs with.
        self.current[ctx.cpu].store(Some(t), Ordering::Relaxed);
    }

    /// The priority bitmap of core `cpu`'s run queue; exact under its run-queue lock (or in an
    /// exclusive section), a possibly stale snapshot for the core's own fastpath (see
    /// [`wake`](Self::wake)).
    #[inline(always)]
    pub(crate) fn rq_bitmap(&self, cpu: CpuId) -> u32 {
        self.rq_bits[cpu].load(Ordering::Relaxed)
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

    /// Whether `t` is the current thread of some core (sections with no other core in the
    /// kernel only: `ctx.global`).
    pub(crate) fn current_anywhere(&self, ctx: Ctx, t: ThreadId) -> Option<CpuId> {
        debug_assert!(
            ctx.global,
            "other cores' scheduling state read concurrently"
        );
        (0..self.cores).find(|&c| self.current_on(&self.hold(ctx, RunQueue(c))) == Some(t))
    }

    // ---------------------------------------------------------------------------------------
    // TLB shoot-down with acknowledgement.
    //
    // Each core `c` has a requested generation `tlb_req[c]` and an acknowledged one
    // `tlb_ack[c]`. A core that removed mappings other cores may cache (in its critical
    // section, page-table stores first) bumps `tlb_req[c]` of each target, records the new
    // generation in its actions (`Actions::acks`) and a TlbShootdown IPI. After its section
    // (lock released or transaction committed) it sends the IPIs and spins until
    // `tlb_ack[c]` reached the generation for every target. Every kernel entry of every
    // core but the IPC fastpath's, after its section, *services* its own requests: if
    // `tlb_req != tlb_ack` it flushes its whole TLB and publishes the requested value it read
    // as `tlb_ack` (release). The waiting loop services too, so two cores shooting down each
    // other both progress, and no core waits inside a critical section, so the lock holder
    // never waits for a waiter. A target in user mode or idle takes the IPI and enters the
    // kernel (`Kernel::ipi`); a
    // target in the kernel services at the end of the entry it is in, or (the fastpath's) at
    // the entry the IPI causes right after it returns to user mode.
    //
    // Generations are words that wrap ([`TlbGeneration`]; 32 bits on ARMv7, where a 64-bit
    // atomic load is an `ldrexd` and a `clrex` on every entry). Only core `c` stores
    // `tlb_ack[c]`, and only values it read from `tlb_req[c]`, which only moves forward; each
    // requester has at most one request of `c` outstanding (it waits after its section), so
    // `tlb_req[c] - tlb_ack[c]` (wrapping) is small: the requests of the entries that wait for
    // them. Hence "pending" is `req != ack`, and "`ack` reached `g`" is "`g` is not a little
    // ahead of `ack`" (`reached`): exact for a waiter, which spins right after its section. A
    // deleted address space keeps its generations until its slot is reused, perhaps much
    // later; once acknowledged they read as acknowledged except while `ack` passes a window
    // of `MAX_UNACKED` values below them once per wrap (2^32 requests of one core on ARMv7),
    // which only delays the reuse. 0 means "nothing to wait for" in the actions, so
    // `request_shootdown` never hands it out.
    // ---------------------------------------------------------------------------------------

    /// Requests a TLB shoot-down of core `c` from the calling core's section: the new
    /// generation is waited for after the section.
    pub(crate) fn request_shootdown(&self, ctx: Ctx, c: CpuId) -> TlbGeneration {
        let mut g = self.tlb_req[c]
            .fetch_add(1, Ordering::AcqRel)
            .wrapping_add(1);
        if g == 0 {
            // The counter wrapped onto the "none" value: take the next one (the target may
            // acknowledge 0 meanwhile, which does not reach 1 in serial order).
            g = self.tlb_req[c]
                .fetch_add(1, Ordering::AcqRel)
                .wrapping_add(1);
        }
        self.act(ctx, |a| {
            a.ack(c, g);
            a.ipi(c, IpiKind::TlbShootdown);
        });
        g
    }

    /// Whether core `cpu` has a TLB shoot-down to acknowledge (a HAL may use it to decide
    /// whether an idle core must enter the kernel).
    pub fn shootdown_pending(&self, cpu: CpuId) -> bool {
        self.tlb_req[cpu].load(Ordering::Acquire) != self.tlb_ack[cpu].load(Ordering::Relaxed)
    }

    /// Whether core `c` acknowledged generation `g` (0: nothing to wait for): its
    /// acknowledgement is not a little behind `g` ([`reached`]; see the section comment).
    pub(crate) fn acked(&self, c: CpuId, g: TlbGeneration) -> bool {
        g == 0 || reached(self.tlb_ack[c].load(Ordering::Acquire), g)
    }

    /// Flushes the calling core's TLB if another core requested it, and acknowledges
    /// (outside the critical section).
    ///
    /// The check is a Relaxed load, and the Acquire fence is taken only when a request is
    /// pending: with nothing to service, nothing read here needs ordering (every entry but
    /// the fastpath's checks; on ARMv7 an Acquire load is a `dmb ish`). The fence makes the load
    /// that saw `req` synchronise with the requester's AcqRel `fetch_add` (the fence rule of
    /// the C++ model), so the flush below is ordered after the requester's page-table stores,
    /// exactly as an Acquire load would. Freshness is not the load's business, Acquire or not:
    /// a request that is not seen yet is seen at the entry its IPI causes, or by the loop of
    /// `await_shootdowns`.
    #[inline(always)]
    fn service_shootdown(&self, cpu: CpuId) {
        let req = self.tlb_req[cpu].load(Ordering::Relaxed);
        if req != self.tlb_ack[cpu].load(Ordering::Relaxed) {
            self.flush_and_ack(cpu, req);
        }
    }

    /// [`service_shootdown`](Self::service_shootdown) with a request pending: flushes this
    /// core's whole TLB, clears its flags of the address spaces it no longer caches, and
    /// acknowledges `req`.
    ///
    /// The whole TLB, not only the loaded address space's entries: switches keep the entries
    /// of the address space left (ARMv7 tags them with its ASID, and the HAL does not flush
    /// them: that is what lets two address spaces that take turns on a core, as in an IPC
    /// round trip, keep their translations), so this core may cache any address space whose
    /// flag it has set. After the flush it caches none but the loaded one (whose table the
    /// walker may read again at once), so it clears every other flag: later unmaps in those
    /// address spaces need not shoot it down.
    ///
    /// The flag stores are Relaxed, as the stores that set them: what a cleared flag promises
    /// an unmapper is about this core's TLB, not about memory. The HAL's flush returned only
    /// once it was complete (ARMv7 `dsb`, `isb`; x86 the CR3 reload), before these stores in
    /// program order; and this core cannot cache a cleared address space again before it
    /// loads it, which it does only in a later section that sets the flag again first (see
    /// `switch_aspace`). An unmapper that still reads a flag as set merely shoots down
    /// needlessly.
    #[cold]
    #[inline(never)]
    fn flush_and_ack(&self, cpu: CpuId, req: TlbGeneration) {
        // Pairs with the requester's AcqRel `fetch_add` (see `service_shootdown`).
        core::sync::atomic::fence(Ordering::Acquire);
        self.hal.flush_tlb(cpu, 0, None);
        // SAFETY: only core `cpu` touches its `local` cell and it runs one entry at a time
        // (HAL contract, see `begin`), so no other reference to it exists.
        let loaded = unsafe { cell_ref(&self.local[cpu], |l| l.loaded) };
        for (i, flag) in self.as_active[cpu].iter().enumerate() {
            if loaded.map(AsId::index) != Some(i) {
                flag.store(false, Ordering::Relaxed);
            }
        }
        self.tlb_ack[cpu].store(req, Ordering::Release);
    }

    /// The cores (bit per core) that may cache address space `a`: the shoot-down targets of
    /// an unmap in `a` (see [`as_active`](Self::as_active)).
    pub(crate) fn as_cores(&self, a: AsId) -> u64 {
        self.as_active
            .iter()
            .take(self.cores)
            .enumerate()
            .filter(|(_, row)| row[a.index()].load(Ordering::Acquire))
            .fold(0, |m, (c, _)| m | 1 << c)
    }

    /// After the section: services this core's own shoot-downs and waits until every core in
    /// `acks` acknowledged its generation.
    fn await_shootdowns(&self, cpu: CpuId, acks: &[TlbGeneration; MAX_CPUS]) {
        loop {
            self.service_shootdown(cpu);
            if acks.iter().enumerate().all(|(c, &g)| self.acked(c, g)) {
                return;
            }
            self.hal.relax(cpu);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Boot-time construction (exclusive through `&mut self`).
    // ---------------------------------------------------------------------------------------

    fn boot_ctx(&mut self) -> Ctx {
        Ctx {
            cpu: 0,
            excl: true,
            global: true,
            entry: false,
        }
    }

    /// Creates an inactive thread whose user context the boot code sets (through its HAL)
    /// before anything resumes it.
    pub fn create_thread(
        &mut self,
        priority: usize,
        core: CpuId,
        aspace: Option<AsId>,
    ) -> Result<ThreadId, Error> {
        let t = self.create_thread_without_entry(priority, core, aspace)?;
        let ctx = self.boot_ctx();
        self.conf_mut(ctx, t, |c| c.has_entry = true);
        Ok(t)
    }

    /// Creates an inactive thread with no user context, as the `CreateThread` system call
    /// does: `Resume` refuses it until `WriteRegisters` gives it one.
    pub fn create_thread_without_entry(
        &mut self,
        priority: usize,
        core: CpuId,
        aspace: Option<AsId>,
    ) -> Result<ThreadId, Error> {
        if priority >= NUM_PRIOS {
            return Err(Error::OutOfRange);
        }
        if core >= self.cores {
            return Err(Error::InvalidCore);
        }
        if aspace.is_some_and(|a| a.index() >= self.meta(|m| m.n_aspaces)) {
            return Err(Error::OutOfRange);
        }
        let ctx = self.boot_ctx();
        let t = self.free_tcb(ctx).ok_or(Error::NoFreeObject)?;
        self.init_tcb(ctx, t, priority, core, aspace);
        Ok(t)
    }

    /// Creates an endpoint.
    pub fn create_endpoint(&mut self) -> Result<EndpointId, Error> {
        let n = self.meta.get_mut();
        let id = EndpointId::new(n.n_eps).ok_or(Error::NoFreeObject)?;
        n.n_eps += 1;
        Ok(id)
    }

    /// Creates a notification.
    pub fn create_notification(&mut self) -> Result<NotificationId, Error> {
        let n = self.meta.get_mut();
        let id = NotificationId::new(n.n_ntfns).ok_or(Error::NoFreeObject)?;
        n.n_ntfns += 1;
        Ok(id)
    }

    /// Creates an address space whose page-table root is `root` (made by the HAL).
    pub fn create_address_space(&mut self, root: PhysAddr) -> Result<AsId, Error> {
        let n = self.meta.get_mut();
        let id = AsId::new(n.n_aspaces).ok_or(Error::NoFreeObject)?;
        n.n_aspaces += 1;
        let s = self.aspaces[id.index()].get_mut();
        s.root = root;
        s.life = AsLife::Alive;
        Ok(id)
    }

    /// Puts a capability into an empty slot of `thread`'s CSpace.
    pub fn install_cap(
        &mut self,
        thread: ThreadId,
        slot: CapSlot,
        obj: ObjRef,
        rights: Rights,
        badge: usize,
    ) -> Result<(), Error> {
        if self.conf[thread.index()].get_mut().life != Life::Alive {
            return Err(Error::InvalidCap);
        }
        if !self.object_exists(obj) {
            return Err(Error::InvalidCap);
        }
        let ctx = self.boot_ctx();
        if !self.cspaces[thread.index()].get_mut().is_empty(slot) {
            return Err(Error::SlotOccupied);
        }
        self.put_cap(ctx, thread, slot, Cap { obj, rights, badge });
        Ok(())
    }

    /// Makes an inactive thread runnable.
    pub fn start(&mut self, thread: ThreadId) -> Result<(), Error> {
        if self.conf[thread.index()].get_mut().life != Life::Alive {
            return Err(Error::InvalidCap);
        }
        let ctx = self.boot_ctx();
        self.resume(ctx, thread);
        // What the wake-up recorded (a Reschedule IPI for the thread's core) is moot before
        // the cores run: each starts by scheduling. Entries start with a clear record.
        self.local(ctx, |l| l.actions.clear());
        Ok(())
    }

    fn object_exists(&mut self, obj: ObjRef) -> bool {
        let m = *self.meta.get_mut();
        match obj {
            ObjRef::Thread(t) => self.conf[t.index()].get_mut().life == Life::Alive,
            ObjRef::Endpoint(e) => e.index() < m.n_eps,
            ObjRef::Notification(n) => n.index() < m.n_ntfns,
            ObjRef::AddressSpace(a) => {
                a.index() < m.n_aspaces && self.aspaces[a.index()].get_mut().life == AsLife::Alive
            }
            ObjRef::Memory(r) => m.regions[r.index()].live,
            ObjRef::IrqHandler(_) | ObjRef::Control => true,
        }
    }

    /// A TCB slot that can be (re)used: free, or a zombie no core runs any more.
    pub(crate) fn free_tcb(&self, ctx: Ctx) -> Option<ThreadId> {
        ThreadId::all().find(|&t| match self.conf(t).life {
            Life::Free => true,
            Life::Zombie => self.current_anywhere(ctx, t).is_none(),
            Life::Alive => false,
        })
    }

    pub(crate) fn init_tcb(
        &self,
        ctx: Ctx,
        t: ThreadId,
        priority: usize,
        core: CpuId,
        aspace: Option<AsId>,
    ) {
        self.conf_mut(ctx, t, |c| {
            *c = TcbConf {
                life: Life::Alive,
                core,
                aspace,
                ..TcbConf::FREE
            };
            c.set_priority(priority);
        });
        self.ipc(&self.hold(ctx, t), |i| *i = TcbIpc::INIT);
        self.link(&self.qlinks, t, |l| *l = Link::default());
        self.link(&self.slinks, t, |l| *l = Link::default());
        self.cspace_mut(ctx, t, |c| *c = CSpace::new());
    }

    /// Stores a capability and counts the reference (exclusive).
    pub(crate) fn put_cap(&self, ctx: Ctx, t: ThreadId, slot: CapSlot, cap: Cap) {
        let old = self.cspace_mut(ctx, t, |c| c.set(slot, Some(cap)));
        self.meta_mut(ctx, |m| {
            *m.refs.slot(cap.obj) += 1;
            if let Some(old) = old {
                *m.refs.slot(old.obj) -= 1;
            }
        });
    }

    /// Empties a slot and uncounts the reference (exclusive). Dropping the last capability to
    /// a memory region destroys the region (see [`mem`](crate::mem)).
    pub(crate) fn take_cap(&self, ctx: Ctx, t: ThreadId, slot: CapSlot) {
        if let Some(old) = self.cspace_mut(ctx, t, |c| c.set(slot, None)) {
            self.meta_mut(ctx, |m| *m.refs.slot(old.obj) -= 1);
            match old.obj {
                ObjRef::Memory(m) => self.memory_unreferenced(ctx, m),
                ObjRef::IrqHandler(i) => self.irq_unreferenced(ctx, i),
                _ => {}
            }
        }
    }
}
