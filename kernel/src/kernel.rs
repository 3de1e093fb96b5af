//! The kernel object: its state tables, its construction, and the entry points the HAL
//! calls, in one module per responsibility:
//!
//! - `objects`: the object types the tables hold (TCB parts, endpoints, notifications, IRQs,
//!   address spaces, per-core state, allocation and reference counts).
//! - `guard`: the tokens that prove a section may touch an object's lock-guarded state, and
//!   the methods that take them.
//! - `access`: the accessors of the state's cells, which hold the `unsafe` accesses and the
//!   argument for each, and the intrusive queues built on them.
//! - `entry`: the entry points, the section around each entry (the strategy's enter and exit,
//!   the actions after it, the trace record), and the full path.
//! - `idle`: each core's idle accounting.
//! - `shootdown`: the TLB shoot-down protocol with acknowledgement.
//! - `boot`: boot-time construction, and the TCB and capability-slot helpers the system calls
//!   share with it.
//!
//! The struct [`Kernel`] and the cell helpers stay here, so that every part reaches its
//! fields and the cells directly.

mod access;
mod boot;
mod entry;
mod guard;
mod idle;
mod objects;
mod shootdown;

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};

use kernel_locks::CachePadded;

use crate::cap::CSpace;
use crate::config::*;
use crate::hal::{Actions, Hal};
use crate::ids::*;
use crate::mem::Region;
use crate::strategy::Strategy;

pub use abi::syscall::{EXCEPTION_LABEL, FAULT_LABEL};
pub(crate) use entry::{Ctx, Entry};
pub use entry::{Exit, ExitTo, SavedRegs};
pub(crate) use guard::{Held, RunQueue};
use idle::IdleClock;
#[cfg(feature = "trace")]
pub(crate) use objects::EntryCounts;
pub(crate) use objects::{
    AddressSpace, AsLife, CoreLocal, CoreSched, Endpoint, IrqState, Link, Meta, Notification,
    Queue, Refs, TcbConf, TcbIpc,
};
pub use objects::{Life, ThreadState};
#[cfg(test)]
pub(crate) use shootdown::reached;

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
/// the compiler's field order, a strategy of 8-byte alignment (the ticket lock) lands away
/// from `cores`, and ARMv7's round trip under `-icount` takes 20 instructions more with the
/// ticket lock, 2 more with the fine-grained strategy and CLH (x86_64 the same either way).
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
    /// the round trip measures longer: ARMv7's under CLH by 12, x86_64's without a lock by 4.)
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
    /// round trip takes 16 instructions more under `-icount`, likely later fields moving out of
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

// SAFETY: all shared mutable state is in `UnsafeCell`s reached only through the accessors
// (`access`), each of which documents the strategy guarantee that makes its access race-free.
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
}
