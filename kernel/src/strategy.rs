//! Locking strategies: how the kernel keeps cores from corrupting shared state. The strategy is a
//! type parameter of [`Kernel`](crate::Kernel), so every variant is compiled from the same code.
//!
//! Every kernel entry calls [`Strategy::enter`] right after entry (with [`Side::Shared`] for the
//! common calls: IPC, notifications, Yield, IRQ ack, interrupts, timer ticks and IPIs; with
//! [`Side::Exclusive`] for management calls), and [`Strategy::exit`] before leaving; the per-core
//! hardware actions run after `exit`. `enter` returns whether the section is *exclusive*, i.e.
//! no other core runs kernel code that touches kernel state at the same time. Only a non-exclusive
//! section (the fine-grained read side) takes the per-object locks through [`Strategy::lock`].
//!
//! | strategy | shared calls | management calls | object locks |
//! |---|---|---|---|
//! | [`BigLock<L>`] | `L` (CLH, ticket, ...) | `L` | none |
//! | [`FineGrained`] | big-reader lock, read side | write side | ticket lock per TCB, endpoint, notification, IRQ, run queue |
//! | [`Rtm<L>`] | one `RtmLock` transaction over fallback `L` | same | none |
//! | [`NoLock`] | nothing (unsafe) | nothing | none |
//!
//! # The fine-grained protocol
//! What protects what while a core holds the **read side** (see `kernel/access.rs` for the accessors):
//! * Object existence, CSpaces, TCB configuration (priority, core, address space, pager, life),
//!   address-space mapping tables, IRQ bindings and reference counts: written only under the
//!   write side (or by exclusive strategies), so readers read them without further locks.
//! * A TCB's IPC state (state, message, badge, result registers, reply link): its TCB lock;
//!   except that a core may touch its own current thread's state without it while that thread
//!   is `Runnable` and unpublished (in no queue, named by no reply link): no other core can
//!   reach it then ([`Kernel::own_current`](crate::Kernel), used by the IPC fastpath); and
//!   that the IPC fastpath touches the other thread's state without it while that thread, of
//!   its core, is blocked where only the section reaches it: a receiver in the queue of the
//!   endpoint whose lock it holds, or the caller that the reply link of its own current
//!   thread names (`Kernel::fast_peer` has the argument; reply links never outlive the wait).
//! * An endpoint's or notification's queue, and the queue links of the TCBs in it: the
//!   endpoint's or notification's lock.
//! * A run queue and the run-queue links of the TCBs in it: the core's run-queue lock; its
//!   priority bitmap is also read without the lock by the core's own IPC fastpath.
//! * A core's `current` thread: written only by that core (holding its run-queue lock, except
//!   on the IPC fastpath); read by that core without any lock (no other core writes it), by
//!   other cores with the lock. The fastpath's unlocked bitmap read and `current` store are
//!   made safe for a core that queues a thread here at the same time by a handshake
//!   ([`Kernel::wake`](crate::Kernel): a fence and a read of this core's reader slot, then a
//!   Reschedule IPI if it may be in a section; loom model `fastpath_against_remote_wake` in
//!   `kernel/tests/loom_handshake.rs`).
//! * An IRQ's masked flag: the IRQ's lock.
//! * Per-core actions and loaded address space: only that core touches them (no lock).
//!
//! **Lock order** (which makes the protocol deadlock-free): endpoint or notification or IRQ lock,
//! then TCB locks in increasing index order (all TCBs involved are identified first, under the
//! endpoint lock, then locked sorted), then at most one run-queue lock at a time. With the
//! `lockdep` feature the lock crate's lock-order checker checks this order at every acquisition
//! (one class per kind of lock, `strategy::lockdep`; TCB locks keyed by index), and that a core
//! leaves the kernel holding no object lock; the hosted stress and adversarial suites run so
//! (`cargo xtask test` step `lockdep:hosted`). A typical IPC
//! takes the read side, one endpoint lock, two TCB locks and one run-queue lock, as the seL4
//! multicore paper describes; around it, the entry checks the current thread (its TCB lock), the
//! scheduler re-reads its state (TCB lock, then the run-queue lock) and the exit reads the next
//! thread's result registers (its TCB lock): on one core a Call takes 8 object locks and a
//! ReplyRecv 10 on the full path (counted by the hosted benchmark,
//! `object_locks_per_round_trip`). The IPC fastpath takes 1 each, the endpoint's: the
//! caller's own TCB, the other thread's and the run queue are reached only by its core then
//! (above). Each object
//! lock costs an atomic read-modify-write plus its bookkeeping, which is most of what the
//! strategy adds to a round trip.
//!
//! Why readers never see a half-made change: the write side waits until every reader has left
//! (`BrLock`), so management calls see quiescent state and may touch everything; readers only
//! change fields guarded by the object locks they hold.

use core::fmt;

#[cfg(feature = "lockdep")]
use kernel_locks::lockdep::{Checked, ContextClaim, Contexts, LockClass};
use kernel_locks::ticket::TicketLock;
use kernel_locks::{
    BrLock, CachePadded, CpuId, KernelLock, MaxCpus, Relax, RtmLock, Spin, TxEngine,
};

use crate::config::*;
use crate::ids::*;

/// The fine-grained strategy's big-reader lock: with the `lockdep` feature, checked by the
/// lock-order checker as a lock of class `lockdep::BIG`.
#[cfg(not(feature = "lockdep"))]
type BigLockOf<R> = BrLock<MAX_CPUS, R>;
/// The fine-grained strategy's big-reader lock, checked as a lock of class [`lockdep::BIG`].
#[cfg(feature = "lockdep")]
type BigLockOf<R> = Checked<BrLock<MAX_CPUS, R>>;

/// A per-object lock of the fine-grained strategy: with the `lockdep` feature, checked by the
/// lock-order checker as a lock of its kind's class (see `lockdep`).
#[cfg(not(feature = "lockdep"))]
type ObjectLock<R> = TicketLock<R>;
/// A per-object lock of the fine-grained strategy, checked as a lock of its kind's class.
#[cfg(feature = "lockdep")]
type ObjectLock<R> = Checked<TicketLock<R>>;

/// The lock classes of the fine-grained strategy under the lock-order checker (feature
/// `lockdep`, [`kernel_locks::lockdep`]): one per kind of lock, so that the checker learns and
/// checks the protocol's lock order (see the [module documentation](self)): the big-reader
/// lock, then an endpoint, notification or IRQ lock, then TCB locks in increasing index order
/// (each TCB lock's key is its index, so the checker also checks that order), then one
/// run-queue lock. Both sides of the big-reader lock are one class.
#[cfg(feature = "lockdep")]
pub mod lockdep {
    use super::LockClass;

    /// The big-reader lock (both sides).
    pub static BIG: LockClass = LockClass::new("fine.big");
    /// A TCB's lock; nested in increasing index order (the key).
    pub static TCB: LockClass = LockClass::new("fine.tcb");
    /// An endpoint's lock.
    pub static ENDPOINT: LockClass = LockClass::new("fine.endpoint");
    /// A notification's lock.
    pub static NOTIFICATION: LockClass = LockClass::new("fine.notification");
    /// An IRQ's lock.
    pub static IRQ: LockClass = LockClass::new("fine.irq");
    /// A core's run-queue lock.
    pub static RUN_QUEUE: LockClass = LockClass::new("fine.run-queue");
}

/// Which side of the kernel lock an entry takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Side {
    /// Common calls.
    Shared,
    /// Management calls.
    Exclusive,
}

/// A per-object lock of the fine-grained strategy.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LockId {
    /// A TCB's IPC state.
    Tcb(ThreadId),
    /// An endpoint's queue.
    Endpoint(EndpointId),
    /// A notification's word and queue.
    Notification(NotificationId),
    /// An IRQ's masked flag.
    Irq(IrqId),
    /// A core's run queue and current thread.
    RunQueue(CpuId),
}

impl LockId {
    /// The lock's identity in a trace record ([`trace_format::ObjectLock::id`]): a rank in the
    /// top four bits, the object's index below, so that increasing ids follow the lock order
    /// above (an endpoint, notification or IRQ; then TCBs by index; then run queues), the order
    /// in which the simulator takes an entry's object locks.
    #[cfg(feature = "trace")]
    pub fn trace_id(self) -> u32 {
        let (rank, index) = match self {
            LockId::Endpoint(e) => (1, e.index()),
            LockId::Notification(n) => (2, n.index()),
            LockId::Irq(i) => (3, i.index()),
            LockId::Tcb(t) => (4, t.index()),
            LockId::RunQueue(c) => (5, c),
        };
        (rank << 28) | (index as u32 & 0x0FFF_FFFF)
    }
}

/// A locking strategy.
///
/// # Safety
/// Implementors guarantee:
/// * Between `enter(cpu, side)` returning `true` and the matching `exit`, no other core is
///   between an `enter` and `exit` of the same strategy (or, for [`NoLock`], the creator
///   promised that concurrent sections touch disjoint objects).
/// * `enter(cpu, Side::Exclusive)` returns `true`.
/// * When `enter` returns `false`, sections of other cores may run concurrently, but not with
///   an exclusive one, and [`lock`](Self::lock)/[`unlock`](Self::unlock) are mutual-exclusion
///   locks per [`LockId`] with acquire/release ordering.
/// * Acquire/release ordering between consecutive sections.
pub unsafe trait Strategy: Sync {
    /// A short name for reports.
    fn name(&self) -> &'static str;
    /// Enters the kernel's critical section; returns whether it is exclusive.
    fn enter(&self, cpu: CpuId, side: Side) -> bool;
    /// The cores whose ids the strategy takes: `0..max_cpus()`, the bound its locks were
    /// built with. [`Kernel::new`](crate::Kernel::new) refuses a strategy that serves fewer
    /// cores than the kernel has. The default: any id.
    fn max_cpus(&self) -> usize {
        usize::MAX
    }
    /// [`enter`](Self::enter) for a caller that checked `cpu < self.max_cpus()` (the kernel
    /// checks its core index once per entry): the strategy's locks may skip their own range
    /// checks ([`KernelLock::lock_unchecked`]). The default is `enter`.
    ///
    /// # Safety
    /// `cpu < self.max_cpus()`.
    #[inline(always)]
    unsafe fn enter_unchecked(&self, cpu: CpuId, side: Side) -> bool {
        self.enter(cpu, side)
    }
    /// Leaves the critical section.
    ///
    /// # Safety
    /// `cpu` entered with the same `side` and has not left since.
    unsafe fn exit(&self, cpu: CpuId, side: Side);
    /// Releases object lock `held` and leaves, as [`unlock`](Self::unlock) then
    /// [`exit`](Self::exit) would; a strategy may order both with one barrier (the
    /// fine-grained one, for the IPC fastpath's endpoint lock).
    ///
    /// # Safety
    /// As for `unlock` and `exit`.
    #[inline(always)]
    unsafe fn exit_releasing(&self, cpu: CpuId, side: Side, held: LockId) {
        // SAFETY: forwarded contract.
        unsafe {
            self.unlock(cpu, held);
            self.exit(cpu, side);
        }
    }
    /// Takes an object lock (non-exclusive sections only). The default does nothing.
    ///
    /// With the `lockdep` feature, `#[track_caller]`: the lock-order checker's reports name
    /// the kernel's line that takes the lock.
    #[cfg_attr(feature = "lockdep", track_caller)]
    fn lock(&self, _cpu: CpuId, _id: LockId) {}
    /// Releases an object lock.
    ///
    /// # Safety
    /// `cpu` holds `id`.
    unsafe fn unlock(&self, _cpu: CpuId, _id: LockId) {}
    /// Whether core `cpu` may be inside a section of a strategy whose sections overlap, read
    /// by another core's shared section after it queued a thread on `cpu`'s run queue and ran
    /// a `SeqCst` fence (the handshake in [`Kernel::wake`](crate::Kernel)): `true` unless the
    /// strategy knows `cpu` is not, with the core's last section ordered before the caller
    /// (acquire). The default, `true`, is always safe (the waker then sends a Reschedule IPI).
    fn may_be_in_section(&self, _cpu: CpuId) -> bool {
        true
    }
    /// Debug aid: whether `id` looks held (true when the strategy has no object locks).
    fn is_held(&self, _id: LockId) -> bool {
        true
    }
    /// Whether an exclusive section (`enter` returned `true`) also keeps every other core out
    /// of the kernel, so the section may read other cores' scheduling state, whatever its
    /// [`Side`]. True for the big locks; [`NoLock`] sections are "exclusive" only in that they
    /// take no object locks, and other cores run their own sections at the same time, so only
    /// its [`Side::Exclusive`] (management) sections may look at other cores (its creator
    /// promised no management call runs while another core is in the kernel). The default,
    /// `false`, is always safe.
    fn serialises(&self) -> bool {
        false
    }
    /// Tracing (the `trace` feature): `cpu`'s lock-elision counters, from which the trace takes
    /// an entry's RTM outcome (the difference of two reads around its section, both on `cpu`
    /// outside any transaction). `None`, the default: the strategy elides nothing.
    #[cfg(feature = "trace")]
    fn elision_stats(&self, cpu: CpuId) -> Option<kernel_locks::RtmStats> {
        let _ = cpu;
        None
    }
}

/// The big kernel lock: one [`KernelLock`] (CLH, ticket, ...) taken right after kernel entry
/// and released before exit, for every call. Hardware actions run after the release.
pub struct BigLock<L> {
    lock: L,
}

impl<L: KernelLock> BigLock<L> {
    /// A strategy over `lock`, which must support the kernel's cores.
    pub const fn new(lock: L) -> Self {
        Self { lock }
    }

    /// The lock.
    pub fn inner(&self) -> &L {
        &self.lock
    }
}

impl<L: KernelLock> fmt::Debug for BigLock<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BigLock({})", self.lock.name())
    }
}

/// The [`Strategy`] methods of a strategy whose every section holds one lock, its field
/// `lock` (a [`KernelLock`]): the big lock's and RTM's. Enter and exit always in line: the IPC
/// entry has two exits (after the fastpath and after the full path), and with two call sites
/// the inliner leaves the exit a call on ARMv7 (+38 instructions per round trip under CLH).
macro_rules! one_lock_sections {
    () => {
        #[inline(always)]
        fn enter(&self, cpu: CpuId, _side: Side) -> bool {
            self.lock.lock(cpu);
            true
        }
        fn max_cpus(&self) -> usize {
            self.lock.max_cpus()
        }
        #[inline(always)]
        unsafe fn enter_unchecked(&self, cpu: CpuId, _side: Side) -> bool {
            // SAFETY: forwarded contract (`max_cpus` is the lock's).
            unsafe { self.lock.lock_unchecked(cpu) };
            true
        }
        fn serialises(&self) -> bool {
            true
        }
        #[inline(always)]
        unsafe fn exit(&self, cpu: CpuId, _side: Side) {
            // SAFETY: forwarded contract: `cpu` entered, so it holds the lock.
            unsafe { self.lock.unlock(cpu) }
        }
    };
}

// SAFETY: every section holds `lock`, a `KernelLock` (mutual exclusion, acquire/release).
unsafe impl<L: KernelLock> Strategy for BigLock<L> {
    fn name(&self) -> &'static str {
        self.lock.name()
    }
    one_lock_sections!();
}

/// Fine-grained locking: a big-reader lock (read side for common calls, write side for
/// management calls) plus a ticket lock per TCB, endpoint, notification, IRQ and run queue. See
/// the [module documentation](self) for the protocol. `R` is the wait strategy of every lock.
///
/// With the `lockdep` feature every lock is checked by the lock-order checker (classes in
/// `strategy::lockdep`), with contexts of the strategy's own
/// (`kernel_locks::lockdep::Contexts::claim`), so that kernels running side by side in one
/// process (hosted tests) keep their cores' held locks apart.
pub struct FineGrained<R: Relax = Spin> {
    big: BigLockOf<R>,
    tcbs: [CachePadded<ObjectLock<R>>; MAX_THREADS],
    eps: [CachePadded<ObjectLock<R>>; MAX_ENDPOINTS],
    ntfns: [CachePadded<ObjectLock<R>>; MAX_NOTIFICATIONS],
    irqs: [CachePadded<ObjectLock<R>>; MAX_IRQS],
    rqs: [CachePadded<ObjectLock<R>>; MAX_CPUS],
    /// The checker's contexts of this strategy's cores (given back on drop).
    #[cfg(feature = "lockdep")]
    contexts: ContextClaim,
}

impl<R: Relax> FineGrained<R> {
    /// All locks free, for any of the kernel's [`MAX_CPUS`] cores.
    pub fn new() -> Self {
        Self::with_cpus(MAX_CPUS)
    }

    /// All locks free, for cores `0..cpus` (the core count the kernel learnt at boot): ids from
    /// `cpus` on panic, and the big-reader lock's writer drains only those cores' slots.
    ///
    /// # Panics
    /// Unless `1 <= cpus <= MAX_CPUS`.
    #[cfg(not(feature = "lockdep"))]
    pub fn with_cpus(cpus: usize) -> Self {
        fn locks<R: Relax, const N: usize>(cpus: usize) -> [CachePadded<TicketLock<R>>; N] {
            core::array::from_fn(|_| CachePadded::new(TicketLock::with_relax_and_cpus(cpus)))
        }
        Self {
            big: BrLock::with_cpus(cpus),
            tcbs: locks(cpus),
            eps: locks(cpus),
            ntfns: locks(cpus),
            irqs: locks(cpus),
            rqs: locks(cpus),
        }
    }

    /// All locks free, for cores `0..cpus`, each checked as a lock of its kind's class in
    /// contexts claimed for these cores.
    ///
    /// # Panics
    /// Unless `1 <= cpus <= MAX_CPUS`, or when the checker has no `cpus` free contexts.
    #[cfg(feature = "lockdep")]
    pub fn with_cpus(cpus: usize) -> Self {
        let claim = Contexts::claim(cpus);
        let contexts = claim.contexts();
        let locks = |class: &'static LockClass, keyed: bool| {
            move |i| {
                let lock = Checked::new(TicketLock::with_relax_and_cpus(cpus), class)
                    .in_contexts(contexts);
                CachePadded::new(if keyed { lock.ordered(i) } else { lock })
            }
        };
        Self {
            big: Checked::new(BrLock::with_cpus(cpus), &lockdep::BIG).in_contexts(contexts),
            tcbs: core::array::from_fn(locks(&lockdep::TCB, true)),
            eps: core::array::from_fn(locks(&lockdep::ENDPOINT, false)),
            ntfns: core::array::from_fn(locks(&lockdep::NOTIFICATION, false)),
            irqs: core::array::from_fn(locks(&lockdep::IRQ, false)),
            rqs: core::array::from_fn(locks(&lockdep::RUN_QUEUE, false)),
            contexts: claim,
        }
    }

    #[inline(always)]
    fn object(&self, id: LockId) -> &ObjectLock<R> {
        match id {
            LockId::Tcb(t) => &self.tcbs[t.index()],
            LockId::Endpoint(e) => &self.eps[e.index()],
            LockId::Notification(n) => &self.ntfns[n.index()],
            LockId::Irq(i) => &self.irqs[i.index()],
            // A core index from the kernel is always < MAX_CPUS (checked at entry).
            LockId::RunQueue(c) => &self.rqs[c % MAX_CPUS],
        }
    }
}

impl<R: Relax> Default for FineGrained<R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: Relax> fmt::Debug for FineGrained<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FineGrained")
    }
}

// SAFETY: exclusive sections hold the BrLock write side, which excludes every reader and
// writer; shared sections hold the read side (excluding writers) and object ticket locks.
unsafe impl<R: Relax> Strategy for FineGrained<R> {
    fn name(&self) -> &'static str {
        "fine"
    }
    // Inlined into the entry, like the object locks: out of line each costs a call and the
    // `side` dispatch twice per one-way IPC.
    #[inline(always)]
    fn enter(&self, cpu: CpuId, side: Side) -> bool {
        assert!(
            cpu < self.max_cpus(),
            "fine: CPU id {cpu} out of range (this strategy supports CPUs 0..{})",
            self.max_cpus()
        );
        // SAFETY: `cpu < max_cpus()`, checked above.
        unsafe { self.enter_unchecked(cpu, side) }
    }
    fn max_cpus(&self) -> usize {
        self.big.max_cpus()
    }
    #[inline(always)]
    unsafe fn enter_unchecked(&self, cpu: CpuId, side: Side) -> bool {
        match side {
            Side::Shared => {
                // SAFETY: `cpu < max_cpus()` (forwarded contract). No double-read-lock
                // check: a core runs one entry at a time (the HAL contract, which the kernel
                // checks, see `Kernel::begin`), so it does not hold the read side.
                unsafe { self.big.read_lock_unnested_unchecked(cpu) };
                false
            }
            Side::Exclusive => {
                // SAFETY: forwarded contract.
                unsafe { self.big.lock_unchecked(cpu) };
                true
            }
        }
    }
    #[inline(always)]
    unsafe fn exit(&self, cpu: CpuId, side: Side) {
        match side {
            // SAFETY: forwarded contract: `cpu` holds the read side, which `enter` took with
            // `read_lock_unnested`, and leaves once. No check that it does (the kernel pairs
            // every `enter` with one `exit` in the same function).
            Side::Shared => unsafe { self.big.read_unlock_unnested(cpu) },
            // SAFETY: forwarded contract: `cpu` holds the write side.
            Side::Exclusive => unsafe { self.big.unlock(cpu) },
        }
        // The checker: a core leaves the kernel holding no lock.
        #[cfg(feature = "lockdep")]
        self.contexts.contexts().assert_none_held(cpu);
    }
    // One `fence(Release)` for the object lock and the read side (ARMv7: one `dmb ish` where
    // each release alone costs one): both stores come after every access of the section.
    #[inline(always)]
    unsafe fn exit_releasing(&self, cpu: CpuId, side: Side, held: LockId) {
        if side == Side::Exclusive {
            // SAFETY: forwarded contract.
            unsafe {
                self.unlock(cpu, held);
                self.exit(cpu, side);
            }
            return;
        }
        core::sync::atomic::fence(core::sync::atomic::Ordering::Release);
        // SAFETY: forwarded contract (`cpu` holds `held` and the read side, taken with
        // `read_lock_unnested`); the fence above follows the section's last access.
        unsafe {
            self.object(held).unlock_fenced(cpu);
            self.big.read_unlock_unnested_fenced(cpu);
        }
        // The checker: a core leaves the kernel holding no lock.
        #[cfg(feature = "lockdep")]
        self.contexts.contexts().assert_none_held(cpu);
    }
    // The object locks skip the ticket lock's CPU range check: object locks are taken inside a
    // shared section only, which `enter` opened after checking `cpu` against the bound every
    // lock here was built with (`with_cpus`), or `enter_unchecked` after its caller did. Repeated
    // per lock, the check costs x86_64 3 instructions and ARMv7 3 per object lock, 3 locks per
    // one-way IPC. (A ticket lock keeps no per-CPU state, so even a wrong id could not corrupt
    // it.)
    #[inline(always)]
    #[cfg_attr(feature = "lockdep", track_caller)]
    fn lock(&self, cpu: CpuId, id: LockId) {
        self.object(id).lock_prechecked(cpu);
    }
    #[inline(always)]
    unsafe fn unlock(&self, cpu: CpuId, id: LockId) {
        // SAFETY: forwarded contract.
        unsafe { self.object(id).unlock(cpu) }
    }
    fn is_held(&self, id: LockId) -> bool {
        self.object(id).is_locked()
    }
    // The core's reader slot: raised, then a `SeqCst` fence, at every shared entry; lowered
    // with release at its exit (`BrLock::is_reading`).
    fn may_be_in_section(&self, cpu: CpuId) -> bool {
        self.big.is_reading(cpu)
    }
}

/// Hardware lock elision: the whole kernel section is one [`RtmLock`] critical section over the
/// fallback lock `L`, with transaction engine `E` (the real RTM by default; without RTM it is
/// `L`). Hardware actions are recorded in the kernel's per-core action record, which is
/// written inside the transaction (and so rolled back with it) and run after the commit.
pub struct Rtm<L, E = kernel_locks::Rtm, R = Spin> {
    lock: RtmLock<L, MAX_CPUS, R, E>,
}

impl<L: KernelLock + MaxCpus, R: Relax> Rtm<L, kernel_locks::Rtm, R> {
    /// Elision with the real RTM over `fallback`.
    pub fn new(fallback: L) -> Self {
        Self {
            lock: RtmLock::new(fallback),
        }
    }
}

impl<L: KernelLock, E: TxEngine, R: Relax> Rtm<L, E, R> {
    /// Elision over an already built lock (for instance with a simulated engine).
    pub fn from_lock(lock: RtmLock<L, MAX_CPUS, R, E>) -> Self {
        Self { lock }
    }

    /// The elided lock (statistics, deferred work).
    pub fn inner(&self) -> &RtmLock<L, MAX_CPUS, R, E> {
        &self.lock
    }
}

impl<L: KernelLock, E: TxEngine, R: Relax> fmt::Debug for Rtm<L, E, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rtm({:?})", self.lock)
    }
}

// SAFETY: `RtmLock` is a `KernelLock`: an elided section commits only if it ran while the
// fallback was free and without conflicting accesses, which is equivalent to holding it.
unsafe impl<L: KernelLock, E: TxEngine, R: Relax> Strategy for Rtm<L, E, R> {
    fn name(&self) -> &'static str {
        "rtm"
    }
    #[cfg(feature = "trace")]
    fn elision_stats(&self, cpu: CpuId) -> Option<kernel_locks::RtmStats> {
        Some(self.lock.cpu_stats(cpu))
    }
    one_lock_sections!();
}

/// No locking at all, for benchmarks whose cores touch disjoint objects only.
#[derive(Debug)]
pub struct NoLock {
    _private: (),
}

impl NoLock {
    /// The no-op strategy.
    ///
    /// # Safety
    /// The caller guarantees that kernel entries on different cores never touch the same object
    /// at the same time: each core runs only its own threads, which use only their own
    /// endpoints, notifications and address spaces, and no management call runs while another
    /// core is in the kernel. Otherwise the kernel has data races (undefined behaviour).
    pub const unsafe fn new() -> Self {
        Self { _private: () }
    }
}

// SAFETY: the creator of the `NoLock` promised disjoint sections (see `NoLock::new`).
unsafe impl Strategy for NoLock {
    fn name(&self) -> &'static str {
        "none"
    }
    #[inline(always)]
    fn enter(&self, _cpu: CpuId, _side: Side) -> bool {
        true
    }
    #[inline(always)]
    unsafe fn exit(&self, _cpu: CpuId, _side: Side) {}
}
