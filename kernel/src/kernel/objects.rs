//! The objects the kernel's tables hold: a thread's configuration and IPC state, queue
//! links, endpoints, notifications, interrupt lines, address spaces, each core's scheduler and
//! private state, and the allocation data and reference counts of every object. Which lock
//! guards each, and so which sections may write it, is said on each type; the accessors
//! (`access`) enforce it.

#[cfg(feature = "trace")]
use core::sync::atomic::AtomicU64;

use kernel_locks::CpuId;

use crate::cap::ObjRef;
use crate::config::*;
use crate::hal::{Actions, PhysAddr, TlbGeneration};
use crate::ids::*;
use crate::mem::Region;
use crate::syscall::{Msg, Regs};

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
/// shifted adds (24, 56 and 6 bytes take two instructions each, per access). x86_64 scales by
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
    /// by `priority` takes the shift-count register and a shuffle of what it held on x86_64).
    pub at_or_above: u32,
    pub core: CpuId,
    pub aspace: Option<AsId>,
    /// Fault endpoint and the badge of the capability it was bound with.
    pub pager: Option<(EndpointId, usize)>,
    /// Whether the thread has a user context to start from: given by the boot code to the
    /// threads of [`Kernel::create_thread`](super::Kernel::create_thread), by `WriteRegisters` to those of `CreateThread`.
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
/// ARMv7, 80 on x86_64, take two instructions to scale an index by, on every switch).
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
    /// A thread of this core that [`Kernel::wake`](super::Kernel::wake) made runnable in this entry and left out of
    /// the run queue for this entry's [`Kernel::schedule`](super::Kernel::schedule), which runs it at once or queues it
    /// (a direct switch, as seL4's IPC fastpath does). `None` between entries.
    pub direct: Option<ThreadId>,
}

/// A core's kernel-entry counters (counted by the entry path, `Kernel::entry`). Each is written
/// only by its core, with a plain load and store (no read-modify-write), and read by any core.
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
