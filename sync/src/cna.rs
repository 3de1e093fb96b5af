//! A compact NUMA-aware lock (CNA, Dice and Kogan, "Compact NUMA-aware Locks", EuroSys 2019):
//! the queued spinlock of [`QSpinLock`](crate::QSpinLock) whose queue head passes the queue on
//! to a waiter on its own NUMA node first, so that the lock and the data it protects stay in
//! one node's caches while that node has waiters.
//!
//! # The word and the nodes
//! The lock is the 32-bit word of [`QSpinLock`](crate::QSpinLock) (see [`crate::qspin`]):
//! the locked byte (bit 0), the pending bit (bit 8) and the tail (bits 16-31: the newest
//! queued CPU plus one and which of its four nodes it queued with). The lock is free exactly
//! when the word is 0 and costs 4 bytes. Its queue nodes live in a [`CnaNodePool`], one per
//! kernel, declared with [`cna_node_pool!`](crate::cna_node_pool): four nodes per CPU (task,
//! soft interrupt, interrupt, NMI), padded to whole cache lines, shared by every lock that
//! names the pool; its CPU count is the locks' [`MaxCpus`](crate::MaxCpus) bound. A
//! CNA node has, besides the MCS link and the head flag of a qspinlock node, the NUMA node of
//! its CPU and the secondary queue that is handed to it with the queue (its first and last
//! waiter and a hand-off count), so the pool is a type of its own. The secondary queue is kept
//! through the nodes' links; nothing is allocated.
//!
//! Which NUMA node a CPU is on comes from the embedder, through a [`NumaMap`]: [`Uniform`]
//! (every CPU on node 0), a table filled at boot ([`numa_map!`](crate::numa_map), e.g. from
//! the ACPI SRAT's processor affinity entries) or the embedder's own implementation. A waiter
//! reads its node once, when it queues. The map is a hint: whatever it answers, and however
//! its answers change while locks are in use (a table still being filled, a CPU brought up
//! later), the lock stays correct and fair (within the bound below); a wrong answer costs
//! locality only.
//!
//! # Paths
//! * **Fast path**, **pending path** and **unlock** are the qspinlock's (the same code, see
//!   [`crate::qspin`]): `compare_exchange(0, LOCKED)`; one waiter without a node on the pending
//!   bit when the lock is held and nobody queues; `fetch_and(!LOCKED)`.
//! * **Queue**: a waiter takes its CPU's next node, records its NUMA node in it, swaps its tail
//!   code into the word and links itself behind the previous tail, then spins on its own node
//!   until it is made the queue's head, receiving the secondary queue with it. The head spins
//!   on the word until locked and pending are clear and takes the lock; if it is the last in
//!   the queue it clears the tail (or, with a non-empty secondary queue, makes the secondary
//!   queue the queue, below), otherwise it passes the head on.
//!
//! # The hand-off: the main and the secondary queue
//! The waiters form two queues: the main queue, the MCS queue of the word's tail, and the
//! secondary queue, waiters the hand-off has passed over, which only the current head knows
//! about. When the head passes the queue on, it looks for the first waiter in the main queue
//! on its own NUMA node, among the waiters that have linked themselves (it never waits for a
//! link beyond its own successor's):
//! * found: the waiters before it move, in their order, to the end of the secondary queue,
//!   and the local waiter becomes the head (an **intra-node hand-off**);
//! * not found, secondary queue non-empty: the secondary queue is spliced back in front of the
//!   main queue (its last waiter links to the head's successor) and its first waiter becomes
//!   the head;
//! * not found, secondary queue empty: the successor becomes the head, as in MCS.
//!
//! A head that is the last in the main queue with a non-empty secondary queue swings the tail
//! to the secondary queue's last waiter (in the compare-exchange that takes the lock) and makes
//! the secondary queue's first waiter the head: the secondary queue becomes the main queue.
//!
//! ```text
//!   head ──▶ A(node 1) ──▶ B(node 1) ──▶ C(node 0) ──▶ D(node 0) ◀── tail    head on node 0
//!
//!   after the hand-off to C:      C ──▶ D ◀── tail        secondary: A ──▶ B  (count 1)
//! ```
//!
//! The head scans while it waits for the holder to leave (the scan reads only links and the
//! nodes' NUMA ids, which stay valid: waiters leave the queue only through the head), so the
//! hand-off after taking the lock is usually one store. On a uniform machine every waiter is
//! on the head's node, the scan stops at the successor and the hand-off is the qspinlock's.
//!
//! # Fairness bound
//! The secondary queue followed by the main queue is the *waiting order*. Every hand-off keeps
//! it (the waiters passed over are before the rest of the main queue and behind the secondary
//! queue's earlier waiters, exactly where they move; a splice puts the secondary queue back in
//! front), new waiters join at its end, and the head is always taken from it. A hand-off that
//! leaves a non-empty secondary queue behind counts one more intra-node hand-off past its
//! waiters; the count travels with the secondary queue and starts at 0 when it becomes empty
//! or is spliced back. When the count has reached `LOCAL_LIMIT` (the lock's const parameter,
//! [`DEFAULT_LOCAL_LIMIT`] = 2^16 by default, Linux's threshold) the next hand-off splices the
//! secondary queue back and makes its first waiter the head, whatever the main queue holds.
//! Hence:
//! * while a waiter is in the secondary queue, at most `LOCAL_LIMIT` hand-offs in a row go to
//!   waiters behind it in the waiting order; every other hand-off goes to a waiter before it or
//!   to it;
//! * a waiter with `k` waiters before it in the waiting order becomes the head, and takes the
//!   lock, after at most `(k + 1) * (LOCAL_LIMIT + 1)` hand-offs (the `k + 1` waiters up to it
//!   each leave the order once, each after at most `LOCAL_LIMIT` hand-offs past it). While
//!   anybody queues no CPU takes the lock but through the queue (the fast path needs a zero
//!   word, the pending path an empty queue), so these bound the acquisitions it waits for;
//! * with two NUMA nodes the secondary queue holds waiters of the other node only (the head
//!   stays on one node until a splice), so after a splice they are the head's node and take
//!   the lock one after the other: a waiter passed over waits for at most `LOCAL_LIMIT`
//!   intra-node hand-offs, then for the secondary waiters before it.
//!
//! With `LOCAL_LIMIT = 0` no waiter is passed over: the lock hands over in FIFO order, as the
//! qspinlock does.
//!
//! # Memory orderings (and their x86_64 / ARMv7 / AArch64 form)
//! Correct in the language's memory model; the loom models in `tests/loom_cna.rs` run the
//! hand-off within a node, the move to the secondary queue and both splices back under every
//! interleaving within their bounds, and one of them with the hand-off store weakened, which
//! loom must reject; weakening any other ordering of the queue path below fails a model too
//! (the models' file says which). On x86_64 every fence below is only a compiler barrier (no
//! instruction): every read-modify-write is a `lock`-prefixed instruction (a full barrier),
//! plain loads are acquire loads and plain stores release stores.
//!
//! * Fast path and `try_lock`: `compare_exchange(0, LOCKED, Acquire, Relaxed)`, as the
//!   qspinlock: the zero it read is the last holder's release (or later in its release
//!   sequence, every change of the word being a read-modify-write), so the previous critical
//!   section happens-before ours. x86_64 `lock cmpxchg`; ARMv7 `ldrex; cmp; strex`, then
//!   `dmb ish` on success only; AArch64 `casa` (LSE) or `ldaxr/stxr`.
//! * Unlock: `fetch_and(!LOCKED, Release)` on bit 0 only (the locked byte is 0 or 1): the
//!   critical section happens-before every later acquirer's read of the cleared bit. x86_64
//!   `lock btr`; ARMv7 `dmb ish`, then an `ldrex; bic; strex` loop; AArch64 `ldclrl` (LSE) or
//!   `ldxr/stlxr`. Then [`Relax::after_release`] (ARM with [`Wfe`](crate::Wfe): `dsb ish; sev`).
//! * Pending path: the qspinlock's own code and orderings ([`crate::qspin`]): a `Relaxed`
//!   `fetch_or` of the bit (atomicity only; ARMv7 `ldrex; orr; strex`, no barrier), `Relaxed`
//!   polls of `locked` and one `fence(Acquire)` once it reads 0 (pairs with the last holder's
//!   release; ARMv7 `dmb ish`, AArch64 `dmb ishld`), then a `Relaxed` add that turns pending
//!   into locked (nobody else sets locked or clears pending meanwhile).
//! * Enqueue: the node's `next` and `head` are reset with `Relaxed` stores and its NUMA id is
//!   written into a plain cell, all by the node's own CPU, then published by the tail exchange,
//!   an `AcqRel` compare-exchange loop on the word (`Relaxed` on failure, its first expected
//!   value from a `Relaxed` load that the loop corrects). Its release half publishes the reset
//!   to the CPU that queues behind us (whose exchange reads ours) before that CPU's link into
//!   our `next`; its acquire half orders our link into the predecessor's `next` after the
//!   predecessor's own reset of it (its exchange is in the release sequence we read), so the
//!   link is never overwritten. x86_64 `lock cmpxchg`; ARMv7 `ldrex; cmp`, `dmb ish; strex`,
//!   and `dmb ish` after the loop; AArch64 `casal` or `ldaxr/stlxr`. (The qspinlock makes do
//!   with a `Release` exchange and one fence at the link; CNA's heads read the NUMA id and the
//!   links of waiters they reach only by links, which the `Release` link below covers, and the
//!   exchange's acquire half keeps the argument local.)
//! * The link `prev.next.store(me, Release)` publishes the node, its NUMA id and its `head`
//!   reset included, to every head that reaches it through that link: the head's hand-off to
//!   it is then later in `head`'s coherence order than the reset. x86_64 `mov`; ARMv7
//!   `dmb ish; str`; AArch64 `stlr`. Then [`Relax::after_release`]: the predecessor may wait
//!   for the link.
//! * The head's scan: each link is read with a `Relaxed` load and, once non-zero, followed by
//!   one `fence(Acquire)` (pairs with that waiter's `Release` link) before the waiter's NUMA id
//!   is read. ARMv7 `dmb ish`, AArch64 `dmb ishld`, one per waiter examined; on a uniform
//!   machine one, for the successor, which the hand-off needs anyway.
//! * Waiting to be head: `head.load(Relaxed)` polls, then one `fence(Acquire)` when it reads 1,
//!   which pairs with the hand-off's `Release` store (below): the secondary queue handed over,
//!   the links the earlier heads changed and read, and the previous head's claim of the lock,
//!   happen-before our reads of them and our polls of the word. ARMv7 plain `ldr` polls and one
//!   `dmb ish`; AArch64 `dmb ishld`.
//! * The head's wait for the holder: `Relaxed` polls of the word until locked and pending are
//!   clear, then one `fence(Acquire)`, which pairs with the last holder's release (the word's
//!   value read is in its release sequence). ARMv7 `dmb ish`; AArch64 `dmb ishld`.
//! * The claim, last in the main queue with an empty secondary queue:
//!   `compare_exchange(val, LOCKED, Relaxed, Relaxed)`, as the qspinlock: nobody else can set
//!   `locked` while the tail is not empty and pending is clear, and the fence before did the
//!   acquiring; atomicity only (x86_64 `lock cmpxchg`; ARMv7 `ldrex; cmp; strex`, no barrier).
//!   Last with a secondary queue: the secondary queue's last waiter's `next` is reset
//!   (`Relaxed`), then `compare_exchange(val, LOCKED | its tail code, Release, Relaxed)`: the
//!   CPU that queues next swaps itself in behind that waiter and its `AcqRel` exchange reads
//!   our value, so the release orders the reset before its link store, which is never
//!   overwritten (ARMv7 `dmb ish` before the `strex`; AArch64 `casl` or `stlxr`). A failed
//!   compare (a successor queued, or a CPU's transient pending bit, whose CPU then queues behind
//!   us) is not retried: `fetch_or(LOCKED, Relaxed)` (atomicity only, as above) and the
//!   hand-off follow, so the head never clears a transient pending bit (its CPU does).
//! * The hand-off: the head writes the new head's secondary queue (first, last waiter, count)
//!   into that node's plain cell, and the links it changes (the `next` of the secondary queue's
//!   last waiter: the append, the splice) with `Relaxed` stores, then `head.store(1, Release)`
//!   and [`Relax::after_release`] (the new head may sleep on its flag). The release orders all
//!   of it, and, through the chain of hand-offs, everything earlier heads wrote, before the new
//!   head's acquire fence. Every link of a secondary waiter is written only by heads once it is
//!   moved (it linked its successor before), so this chain orders all writes to it. x86_64
//!   `mov`; ARMv7 `dmb ish; str`; AArch64 `stlr`. The loom model
//!   `cna_weakened_hand_off_is_caught` weakens this store to `Relaxed` and loom reports the new
//!   head's read of the secondary queue as unordered.
//! * The per-CPU nesting count is read and written only by its own CPU and its nested
//!   contexts (`Relaxed`: a CPU observes its own accesses in program order, interrupted or
//!   not), with a `compiler_fence(SeqCst)` after the increment and before the decrement, as in
//!   the qspinlock. No instruction on any target.
//! * The NUMA table's entries: `Relaxed` loads and stores (plain `mov`/`ldr`/`str`): a hint,
//!   nothing is ordered by it.
//! * Debug builds' list of held locks: `Relaxed` loads and stores, by its own CPU only.
//! * `is_locked` and the `Debug` form: `load(Relaxed)`, a snapshot that orders nothing.
//!
//! # Cost on a uniform machine
//! Uncontended, the qspinlock's: on x86_64 one `lock cmpxchg` and one `lock btr` (MCS: an
//! `xchg` and a `lock cmpxchg`), on ARMv7 two `dmb` (MCS: three). The map is read only when a
//! waiter queues, so [`Uniform`] and a table cost the same there. Two CPUs: the pending path,
//! no queue node. Three or more: the queue, and per hand-off one `dmb` more than the
//! qspinlock's on ARM (the exchange's acquire half), one load of the successor's NUMA id from
//! the node line that the hand-off writes anyway, and one compare. The hosted benchmarks
//! (`cargo xtask bench locks`) compare the lock with [`McsLock`](crate::McsLock) on one node
//! and on a simulated two-node map.
//!
//! # Layout and memory
//! A lock is its 4-byte word, aligned to 4 (wrap it in a [`Padded`](crate::Padded)`<_, `
//! [`Erg`](crate::Erg)`>` to keep other data out of its ARM exclusives granule, as for the
//! qspinlock). A CNA node is 24 bytes (the link, the head flag, the NUMA id and the 12-byte
//! secondary queue); the pool holds each CPU's four nodes, its nesting count and, in debug
//! builds, its list of held locks, padded to whole cache lines:
//! `size_of::<CachePadded<CnaCpuNodes>>()` is 128 bytes per CPU on x86_64 (256 in debug
//! builds) and 128 on ARMv7 (160 in debug builds); checked at compile time.
//!
//! # Misuse
//! | misuse | debug builds | release builds |
//! |---|---|---|
//! | CPU id out of range of the pool | panics | panics |
//! | a fifth nested context waiting | panics | panics |
//! | re-lock by the holder (any context) | panics at the `lock` (a per-CPU list of held locks in the pool) | deadlocks |
//! | unlock of a free lock | panics at the unlock | panics at the unlock (the word's locked bit) |
//! | unlock by a CPU that does not hold it | panics at the unlock | not caught (the word keeps no owner) |
//!
//! A NUMA map's answers are never misuse (above). [`NumaTable::set`] panics on a CPU beyond
//! its table, in every build.
//!
//! # Example
//! ```
//! use kernel_locks::{cna_node_pool, numa_map, CnaLock, KernelLock};
//!
//! // Queue nodes for 4 CPUs, shared by every lock that names the pool, and the CPUs' NUMA
//! // nodes, filled at boot (here: CPUs 0 and 1 on node 0, 2 and 3 on node 1).
//! cna_node_pool!(KernelNodes, 4);
//! numa_map!(KernelNuma, 4);
//! for cpu in 0..4 {
//!     KernelNuma::table().set(cpu, cpu as u32 / 2);
//! }
//!
//! static RUN_QUEUE: CnaLock<KernelNodes, KernelNuma> = CnaLock::new();
//! assert_eq!(core::mem::size_of_val(&RUN_QUEUE), 4);
//! RUN_QUEUE.lock(2);
//! assert!(!RUN_QUEUE.try_lock(1));
//! // SAFETY: CPU 2 holds the lock.
//! unsafe { RUN_QUEUE.unlock(2) };
//! assert_eq!((RUN_QUEUE.name(), RUN_QUEUE.max_cpus()), ("cna", 4));
//! ```

use core::marker::PhantomData;
use core::sync::atomic::compiler_fence;

use crate::pad::CachePadded;
use crate::qspin::{self, LOCKED, LOCKED_MASK, PENDING, TAIL_MASK};
use crate::raw::{CpuId, KernelLock};
use crate::relax::{Relax, Spin};
use crate::shim::{fence, wait_hint, AtomicU32, AtomicUsize, OrderedCell, Ordering};

pub use crate::qspin::{CONTEXTS, MAX_CPUS};

/// The default fairness bound: the most intra-node hand-offs in a row past a waiting secondary
/// queue (2^16, Linux's threshold); see the [module documentation](self#fairness-bound).
pub const DEFAULT_LOCAL_LIMIT: u32 = 1 << 16;

/// The embedder's map from CPUs to NUMA nodes.
///
/// Implemented on a type (the lock names it as a type parameter and stores nothing of it).
/// Its answers never affect the lock's correctness (see the [module documentation](self)).
pub trait NumaMap: 'static {
    /// The NUMA node of `cpu` (any `u32`: an ACPI proximity domain, a socket number...).
    fn node_of(cpu: CpuId) -> u32;
}

/// Every CPU on node 0: a uniform machine, where the lock hands over in FIFO order as the
/// qspinlock does.
#[derive(Clone, Copy, Debug, Default)]
pub struct Uniform;

impl NumaMap for Uniform {
    #[inline(always)]
    fn node_of(_cpu: CpuId) -> u32 {
        0
    }
}

/// A CPU-to-node table for up to `CPUS` CPUs, filled at run time:
/// [`numa_map!`](crate::numa_map) declares a [`NumaMap`] over a `static` one. Every CPU starts on node 0; CPUs beyond the table are on
/// node 0.
///
/// Its entries are atomics accessed with `Relaxed` (plain `mov`/`ldr`/`str`) in every build,
/// under loom too: they order nothing, the lock reads them as hints.
pub struct NumaTable<const CPUS: usize> {
    nodes: [core::sync::atomic::AtomicU32; CPUS],
}

impl<const CPUS: usize> NumaTable<CPUS> {
    /// A table with every CPU on node 0.
    pub const fn new() -> Self {
        Self {
            nodes: [const { core::sync::atomic::AtomicU32::new(0) }; CPUS],
        }
    }

    /// Puts `cpu` on `node`: at boot (from the firmware's tables), or whenever the embedder
    /// learns it, locks in use or not.
    ///
    /// # Panics
    /// If `cpu` is not below `CPUS`.
    #[track_caller]
    pub fn set(&self, cpu: CpuId, node: u32) {
        match self.nodes.get(cpu) {
            Some(entry) => entry.store(node, core::sync::atomic::Ordering::Relaxed),
            None => crate::raw::cpu_out_of_range("NumaTable", cpu, CPUS),
        }
    }

    /// The node of `cpu` (0 beyond the table).
    #[inline]
    pub fn get(&self, cpu: CpuId) -> u32 {
        self.nodes
            .get(cpu)
            .map_or(0, |entry| entry.load(core::sync::atomic::Ordering::Relaxed))
    }
}

impl<const CPUS: usize> Default for NumaTable<CPUS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const CPUS: usize> core::fmt::Debug for NumaTable<CPUS> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list()
            .entries((0..CPUS).map(|cpu| self.get(cpu)))
            .finish()
    }
}

/// Declares a [`NumaMap`] named `$name` over a `static` [`NumaTable`] of `$cpus` CPUs, which
/// `$name::table()` returns for the embedder to fill (`set(cpu, node)`), at boot or later.
#[macro_export]
macro_rules! numa_map {
    ($vis:vis $name:ident, $cpus:expr) => {
        /// A CPU-to-NUMA-node map over a table filled at run time (declared with `numa_map!`).
        $vis struct $name;

        impl $name {
            /// The table behind the map.
            #[allow(dead_code)]
            $vis fn table() -> &'static $crate::cna::NumaTable<{ $cpus }> {
                static TABLE: $crate::cna::NumaTable<{ $cpus }> = $crate::cna::NumaTable::new();
                &TABLE
            }
        }

        impl $crate::cna::NumaMap for $name {
            #[inline]
            fn node_of(cpu: $crate::CpuId) -> u32 {
                Self::table().get(cpu)
            }
        }
    };
}

/// The secondary queue handed to a new head: its first and last waiter (tail codes; `head` 0:
/// empty) and the intra-node hand-offs past it so far.
#[derive(Clone, Copy)]
struct Secondary {
    head: u32,
    tail: u32,
    handoffs: u32,
}

impl Secondary {
    const EMPTY: Self = Self {
        head: 0,
        tail: 0,
        handoffs: 0,
    };

    fn is_empty(&self) -> bool {
        self.head == 0
    }
}

/// One CNA queue node.
struct CnaNode {
    /// The successor's tail code (0: none yet): written by the successor (the link), by its own
    /// CPU (cleared at the enqueue) and, while the node is in a secondary queue, by heads.
    next: AtomicU32,
    /// Set by a head when this node becomes the queue's head.
    head: AtomicU32,
    /// The NUMA node of its CPU, written by that CPU before it links the node.
    numa: OrderedCell<u32>,
    /// The secondary queue handed over with the head, written by the head that hands over.
    secondary: OrderedCell<Secondary>,
}

/// The four CNA queue nodes of one CPU and its nesting count; a pool is an array of these, each
/// padded to whole cache lines ([`CachePadded`]).
pub struct CnaCpuNodes {
    /// How many of `nodes` are in use (the nesting depth of this CPU's waits).
    count: AtomicUsize,
    nodes: [CnaNode; CONTEXTS],
    /// Debug builds: the locks this CPU holds, for the re-lock and non-holder checks.
    #[cfg(debug_assertions)]
    held: qspin::HeldLocks,
}

// SAFETY: the atomics are shared as atomics; the two plain cells of each node are written and
// read only in the orders the module documentation gives (the NUMA id before the link that
// publishes it, read after an acquire of that link; the secondary queue before the Release
// hand-off, read after its acquire, and written again only after the next enqueue's link).
unsafe impl Sync for CnaCpuNodes {}

impl CnaCpuNodes {
    maybe_const_fn! {
        /// A CPU's unused nodes.
        pub fn new() -> Self {
            Self {
                count: AtomicUsize::new(0),
                nodes: array_init!(
                    CONTEXTS,
                    CnaNode {
                        next: AtomicU32::new(0),
                        head: AtomicU32::new(0),
                        numa: OrderedCell::new(0),
                        secondary: OrderedCell::new(Secondary::EMPTY),
                    }
                ),
                #[cfg(debug_assertions)]
                held: qspin::HeldLocks::new(),
            }
        }
    }
}

impl Default for CnaCpuNodes {
    fn default() -> Self {
        Self::new()
    }
}

/// The per-CPU queue nodes every [`CnaLock`] of a kernel shares; declare one with
/// [`cna_node_pool!`](crate::cna_node_pool).
///
/// # Safety
/// `nodes` returns the same slice (the same address and length) on every call,
/// [`CPUS`](CnaNodePool::CPUS) long and at most [`MAX_CPUS`], used by these locks only.
pub unsafe trait CnaNodePool: 'static {
    /// How many CPUs the pool has nodes for, the length of [`nodes`](CnaNodePool::nodes): the
    /// [`MaxCpus`](crate::MaxCpus) bound of every lock over the pool.
    const CPUS: usize;

    /// The nodes of CPUs `0..CPUS`.
    fn nodes() -> &'static [CachePadded<CnaCpuNodes>];
}

/// Declares a [`CnaNodePool`] named `$name` for `$cpus` CPUs (a constant in `1..=MAX_CPUS`): a
/// zero-sized type and a `static` of `$cpus` cache lines of queue nodes.
///
/// Under `--cfg kernel_locks_loom` the `static` is a `loom::lazy_static!`, fresh in every
/// execution of a model, as in [`qspin_node_pool!`](crate::qspin_node_pool): the same
/// invocation serves normal builds and loom models.
#[macro_export]
macro_rules! cna_node_pool {
    ($vis:vis $name:ident, $cpus:expr) => {
        /// Queue nodes of `CnaLock`s (declared with `cna_node_pool!`).
        $vis struct $name;

        // SAFETY: one `static` (a per-execution lazy static under loom), returned whole on every
        // call and by this pool only; the assertion keeps it within the tail's range.
        unsafe impl $crate::cna::CnaNodePool for $name {
            const CPUS: usize = $cpus;

            fn nodes() -> &'static [$crate::CachePadded<$crate::cna::CnaCpuNodes>] {
                const _: () = assert!(
                    $cpus >= 1 && $cpus <= $crate::cna::MAX_CPUS,
                    "cna_node_pool!: the CPU count must be in 1..=MAX_CPUS"
                );
                $crate::__qspin_nodes_static!($crate::cna::CnaCpuNodes, $cpus)
            }
        }
    };
}

/// loom builds only: how often each hand-off path ran on the calling thread, so that a model
/// can check that some execution reached the paths it is about.
///
/// Counted per host thread: loom runs every thread of a model, and every execution, on the
/// thread that called `loom::model`, so the counts of one test are its own even while other
/// tests of the binary run at once.
#[cfg(kernel_locks_loom)]
#[doc(hidden)]
pub mod loom_stats {
    use std::cell::Cell;

    /// The hand-off paths counted.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Paths {
        /// Hand-offs to a waiter on the head's node found by the scan (the successor or a
        /// waiter further on).
        pub local: usize,
        /// Intra-node hand-offs that moved waiters to the secondary queue.
        pub passed_over: usize,
        /// Secondary queues spliced back in front of the main queue's remaining waiters.
        pub spliced_in_front: usize,
        /// Secondary queues made the whole queue by the last waiter of the main queue.
        pub spliced_as_queue: usize,
    }

    std::thread_local! {
        static PATHS: Cell<Paths> = const {
            Cell::new(Paths {
                local: 0,
                passed_over: 0,
                spliced_in_front: 0,
                spliced_as_queue: 0,
            })
        };
    }

    /// The counts of the calling thread so far.
    pub fn paths() -> Paths {
        PATHS.with(Cell::get)
    }

    /// Counts one run of a path.
    pub(crate) fn count(path: fn(&mut Paths) -> &mut usize) {
        PATHS.with(|cell| {
            let mut paths = cell.get();
            *path(&mut paths) += 1;
            cell.set(paths);
        });
    }
}

/// A compact NUMA-aware queued spinlock in one 32-bit word; see the
/// [module documentation](self).
///
/// `P` is the node pool, `M` the CPU-to-node map, `R` the wait strategy, `LOCAL_LIMIT` the
/// fairness bound (the most intra-node hand-offs in a row past a waiting secondary queue).
pub struct CnaLock<
    P: CnaNodePool,
    M: NumaMap,
    R: Relax = Spin,
    const LOCAL_LIMIT: u32 = DEFAULT_LOCAL_LIMIT,
> {
    word: AtomicU32,
    /// loom builds only: see [`CnaLock::with_weakened_hand_off`].
    #[cfg(kernel_locks_loom)]
    weak_hand_off: bool,
    _types: Types<P, M, R>,
}

/// What a [`CnaLock`] is made of, without owning any of it (the lock is `Send` and `Sync`
/// whatever the parameters).
type Types<P, M, R> = PhantomData<fn() -> (P, M, R)>;

impl<P: CnaNodePool, M: NumaMap, R: Relax, const LOCAL_LIMIT: u32> CnaLock<P, M, R, LOCAL_LIMIT> {
    maybe_const_fn! {
        /// A new, unlocked lock for the CPUs of the pool `P`.
        pub fn new() -> Self {
            Self {
                word: AtomicU32::new(0),
                #[cfg(kernel_locks_loom)]
                weak_hand_off: false,
                _types: PhantomData,
            }
        }
    }

    /// The same lock with the hand-off store weakened from `Release` to `Relaxed`: only in loom
    /// builds, for the model test that must see the broken lock fail.
    #[cfg(kernel_locks_loom)]
    #[doc(hidden)]
    pub fn with_weakened_hand_off(mut self) -> Self {
        self.weak_hand_off = true;
        self
    }

    /// The ordering of the hand-off store (module docs): `Release`, except in a loom build that
    /// asked for it weakened.
    #[inline(always)]
    fn hand_off_ordering(&self) -> Ordering {
        #[cfg(kernel_locks_loom)]
        if self.weak_hand_off {
            return Ordering::Relaxed;
        }
        Ordering::Release
    }

    /// The nodes of `cpu`, after the range check.
    #[inline(always)]
    #[track_caller]
    fn cpu_nodes(cpu: CpuId) -> &'static CnaCpuNodes {
        let nodes = P::nodes();
        match nodes.get(cpu) {
            Some(n) => n,
            None => crate::raw::cpu_out_of_range("CnaLock", cpu, nodes.len()),
        }
    }

    /// The address that identifies this lock in the debug held-lock lists.
    #[cfg(debug_assertions)]
    fn key(&self) -> usize {
        self as *const Self as usize
    }

    /// `lock` for `cpu`, whose nodes are `nodes`.
    #[inline(always)]
    #[track_caller]
    fn lock_with(&self, nodes: &'static CnaCpuNodes, cpu: CpuId) {
        #[cfg(debug_assertions)]
        nodes.held.check_not_held(self.key(), "CnaLock", cpu);
        // Acquire: synchronises with the previous holder's release.
        if self
            .word
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended(nodes, cpu);
        }
        #[cfg(debug_assertions)]
        nodes.held.record(self.key());
    }

    /// The slow path of `lock`, after the fast path found the word non-zero: the qspinlock's
    /// pending path if nobody waits, else the queue.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn lock_contended(&self, mine: &'static CnaCpuNodes, cpu: CpuId) {
        let mut relax = R::default();
        if !qspin::pending(&self.word, cpu, &mut relax) {
            self.queue(mine, cpu, &mut relax);
        }
    }

    /// The queue path (module documentation), with the nodes `mine` of `cpu`: wait in the
    /// queue, then lead it.
    #[inline(always)]
    #[track_caller]
    fn queue(&self, mine: &'static CnaCpuNodes, cpu: CpuId, relax: &mut R) {
        // Relaxed: only this CPU, in this or a nested context, touches its count.
        let idx = mine.count.load(Ordering::Relaxed);
        if idx >= CONTEXTS {
            qspin::too_deep("CnaLock", cpu);
        }
        mine.count.store(idx + 1, Ordering::Relaxed);
        // An interrupt taken from here on uses the next node (the count is in place first).
        compiler_fence(Ordering::SeqCst);
        let node = &mine.nodes[idx];
        let numa = M::node_of(cpu);
        node.next.store(0, Ordering::Relaxed);
        node.head.store(0, Ordering::Relaxed);
        // SAFETY: the node is this CPU's and unused: every head that read its NUMA id did so
        // before it handed over (the hand-off that made this CPU head before), which
        // happens-before this write; the next read comes after the link below.
        unsafe { node.numa.set(numa) };
        let code = qspin::tail_code(cpu, idx);

        // Swap our code into the tail. AcqRel: Release publishes the node's initialisation to
        // our successor; Acquire orders our link into the predecessor's node after its reset.
        let mut val = self.word.load(Ordering::Relaxed);
        let old = loop {
            match self.word.compare_exchange_weak(
                val,
                (val & !TAIL_MASK) | code,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(old) => break old,
                Err(now) => val = now,
            }
        };
        let mut secondary = Secondary::EMPTY;
        if old & TAIL_MASK != 0 {
            // Release: our node, NUMA id included, before any head that reaches it by this link.
            queued::<P>(old).next.store(code, Ordering::Release);
            // The predecessor may be waiting for the link.
            R::after_release();
            while node.head.load(Ordering::Relaxed) == 0 {
                relax.relax(cpu);
                wait_hint();
            }
            // Pairs with the hand-off's Release store: the secondary queue and the links the
            // heads before us changed are ours to read.
            fence(Ordering::Acquire);
            // SAFETY: written by the head that handed over, before its Release store that the
            // fence above pairs with; written again only after our next enqueue's link.
            secondary = unsafe { node.secondary.get() };
        }
        self.lead(node, code, numa, secondary, cpu, relax);
        compiler_fence(Ordering::SeqCst);
        mine.count.store(idx, Ordering::Relaxed);
    }

    /// The queue head's part: wait for the holder, take the lock, pass the queue on.
    #[inline(always)]
    fn lead(
        &self,
        node: &'static CnaNode,
        code: u32,
        numa: u32,
        secondary: Secondary,
        cpu: CpuId,
        relax: &mut R,
    ) {
        // The fairness bound reached: this hand-off splices the secondary queue back, so there
        // is no local waiter to look for (and with a bound of 0, never: FIFO).
        let flush = !secondary.is_empty() && secondary.handoffs >= LOCAL_LIMIT;
        let mut scan = Scan::<P>::new(numa, !flush && LOCAL_LIMIT > 0);

        let mut val = self.word.load(Ordering::Relaxed);
        while val & (LOCKED_MASK | PENDING) != 0 {
            scan.advance(node);
            relax.relax(cpu);
            wait_hint();
            val = self.word.load(Ordering::Relaxed);
        }
        // Pairs with the last holder's release (module documentation).
        fence(Ordering::Acquire);

        if val & TAIL_MASK == code {
            // Last in the main queue: take the lock and empty the queue, or make the
            // secondary queue the queue, in one step.
            let taken = if secondary.is_empty() {
                self.word
                    .compare_exchange(val, LOCKED, Ordering::Relaxed, Ordering::Relaxed)
            } else {
                queued::<P>(secondary.tail).next.store(0, Ordering::Relaxed);
                // Release: the cleared link before the link of the CPU that queues behind it.
                self.word.compare_exchange(
                    val,
                    LOCKED | secondary.tail,
                    Ordering::Release,
                    Ordering::Relaxed,
                )
            };
            if taken.is_ok() {
                if !secondary.is_empty() {
                    #[cfg(kernel_locks_loom)]
                    loom_stats::count(|p| &mut p.spliced_as_queue);
                    self.hand_off(secondary.head, Secondary::EMPTY);
                }
                return;
            }
            // A successor swapped itself in, or a CPU's transient pending bit is set and that
            // CPU queues behind us: either way a successor links to us.
        }
        // Nobody else can take the lock while we lead the queue (module documentation).
        self.word.fetch_or(LOCKED, Ordering::Relaxed);
        // What linked since the last look, and our successor's link, which we wait for.
        loop {
            scan.advance(node);
            if scan.first != 0 {
                break;
            }
            relax.relax(cpu);
            wait_hint();
        }

        let (to, handed) = if scan.found != 0 {
            // An intra-node hand-off; the waiters before the local one move to the secondary
            // queue's end.
            let mut next = secondary;
            if scan.last != 0 {
                if next.is_empty() {
                    next.head = scan.first;
                } else {
                    queued::<P>(next.tail)
                        .next
                        .store(scan.first, Ordering::Relaxed);
                }
                next.tail = scan.last;
                #[cfg(kernel_locks_loom)]
                loom_stats::count(|p| &mut p.passed_over);
            }
            #[cfg(kernel_locks_loom)]
            loom_stats::count(|p| &mut p.local);
            next.handoffs = if next.is_empty() {
                0
            } else {
                secondary.handoffs + 1
            };
            (scan.found, next)
        } else if !secondary.is_empty() {
            // No local waiter, or the bound reached: the secondary queue goes first.
            queued::<P>(secondary.tail)
                .next
                .store(scan.first, Ordering::Relaxed);
            #[cfg(kernel_locks_loom)]
            loom_stats::count(|p| &mut p.spliced_in_front);
            (secondary.head, Secondary::EMPTY)
        } else {
            (scan.first, Secondary::EMPTY)
        };
        self.hand_off(to, handed);
    }

    /// Makes the waiter `to` the queue's head, with the secondary queue `secondary`.
    #[inline(always)]
    fn hand_off(&self, to: u32, secondary: Secondary) {
        let node = queued::<P>(to);
        // SAFETY: `to` waits for its `head` flag and reads the cell only after it (Acquire);
        // its previous reader was itself, before its enqueue, which happens-before our read of
        // the link that led us to it.
        unsafe { node.secondary.set(secondary) };
        // Release: the secondary queue and every link we changed or read before the new head's
        // Acquire fence.
        node.head.store(1, self.hand_off_ordering());
        R::after_release();
    }
}

/// The node of the pool `P` that a non-zero tail code names (a code made from a range-checked
/// CPU).
#[inline(always)]
fn queued<P: CnaNodePool>(code: u32) -> &'static CnaNode {
    let (cpu, idx) = qspin::tail_cpu_idx(code);
    &P::nodes()[cpu].nodes[idx]
}

/// The head's scan of the main queue for a waiter on its own NUMA node.
struct Scan<P> {
    /// The head's NUMA node.
    numa: u32,
    /// Whether to look for a local waiter (not when the fairness bound is reached).
    look: bool,
    /// The head's successor (0: not linked yet).
    first: u32,
    /// The last waiter examined and found on another node (0: none).
    last: u32,
    /// The first waiter on the head's node (0: none found yet).
    found: u32,
    _pool: PhantomData<fn() -> P>,
}

impl<P: CnaNodePool> Scan<P> {
    fn new(numa: u32, look: bool) -> Self {
        Self {
            numa,
            look,
            first: 0,
            last: 0,
            found: 0,
            _pool: PhantomData,
        }
    }

    /// Examines the waiters linked behind those examined so far, without waiting for a link;
    /// stops at a local one.
    #[inline(always)]
    fn advance(&mut self, head: &'static CnaNode) {
        while self.found == 0 && (self.look || self.first == 0) {
            let from = if self.last == 0 {
                head
            } else {
                queued::<P>(self.last)
            };
            let next = from.next.load(Ordering::Relaxed);
            if next == 0 {
                return;
            }
            // Pairs with the Release link of `next`'s CPU: its node, NUMA id included.
            fence(Ordering::Acquire);
            if self.first == 0 {
                self.first = next;
            }
            if !self.look {
                return;
            }
            // SAFETY: written by its CPU before the link the fence above ordered us after, and
            // not written again while it waits.
            if unsafe { queued::<P>(next).numa.get() } == self.numa {
                self.found = next;
            } else {
                self.last = next;
            }
        }
    }
}

/// The pool's CPU count, [`P::CPUS`](CnaNodePool::CPUS).
impl<P: CnaNodePool, M: NumaMap, R: Relax, const LOCAL_LIMIT: u32> crate::raw::MaxCpus
    for CnaLock<P, M, R, LOCAL_LIMIT>
{
    const MAX_CPUS: usize = P::CPUS;
}

/// The documented pool memory per CPU (module docs), checked at compile time on every target.
#[cfg(not(kernel_locks_loom))]
const _: () = {
    use crate::pad::{Alignment, CacheLine};
    use core::mem::size_of;
    let bytes = size_of::<CachePadded<CnaCpuNodes>>();
    #[cfg(all(
        any(target_arch = "x86_64", target_arch = "aarch64"),
        not(debug_assertions)
    ))]
    assert!(bytes == 128);
    #[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), debug_assertions))]
    assert!(bytes == 256);
    #[cfg(all(target_arch = "arm", not(debug_assertions)))]
    assert!(bytes == 128);
    #[cfg(all(target_arch = "arm", debug_assertions))]
    assert!(bytes == 160);
    assert!(bytes % CacheLine::BYTES == 0);
};

impl<P: CnaNodePool, M: NumaMap, R: Relax, const LOCAL_LIMIT: u32> Default
    for CnaLock<P, M, R, LOCAL_LIMIT>
{
    fn default() -> Self {
        Self::new()
    }
}

impl<P: CnaNodePool, M: NumaMap, R: Relax, const LOCAL_LIMIT: u32> core::fmt::Debug
    for CnaLock<P, M, R, LOCAL_LIMIT>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CnaLock")
            .field(
                "word",
                &format_args!("{:#010x}", self.word.load(Ordering::Relaxed)),
            )
            .finish()
    }
}

#[cfg(not(kernel_locks_loom))]
impl<P: CnaNodePool, M: NumaMap, R: Relax, const LOCAL_LIMIT: u32> crate::raw::ConstInit
    for CnaLock<P, M, R, LOCAL_LIMIT>
{
    const INIT: Self = Self::new();
}

// SAFETY: exclusion: the lock is taken only by a transition of the locked byte from 0 to 1
// (the fast path's compare-exchange, the pending owner's add while the pending bit keeps every
// other taker out, and the queue head's claim while only the head may take it) and released by
// the holder alone; the hand-off chooses which waiter becomes the head, never a second holder.
// Orderings as the module documentation gives. `is_locked` only loads.
unsafe impl<P: CnaNodePool, M: NumaMap, R: Relax, const LOCAL_LIMIT: u32> KernelLock
    for CnaLock<P, M, R, LOCAL_LIMIT>
{
    fn name(&self) -> &'static str {
        "cna"
    }

    fn max_cpus(&self) -> usize {
        P::nodes().len()
    }

    #[inline(always)]
    fn lock(&self, cpu: CpuId) {
        self.lock_with(Self::cpu_nodes(cpu), cpu);
    }

    #[inline(always)]
    unsafe fn lock_unchecked(&self, cpu: CpuId) {
        // Debug builds keep the range check.
        #[cfg(debug_assertions)]
        let nodes = Self::cpu_nodes(cpu);
        // SAFETY: `cpu < max_cpus()` (the caller's contract), the length of `P::nodes()`.
        #[cfg(not(debug_assertions))]
        let nodes: &'static CnaCpuNodes = unsafe { P::nodes().get_unchecked(cpu) };
        self.lock_with(nodes, cpu);
    }

    #[inline]
    fn try_lock(&self, cpu: CpuId) -> bool {
        let _nodes = Self::cpu_nodes(cpu);
        // Acquire on success: synchronises with the previous holder's release.
        let locked = self
            .word
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        #[cfg(debug_assertions)]
        if locked {
            _nodes.held.record(self.key());
        }
        locked
    }

    #[inline(always)]
    unsafe fn unlock(&self, cpu: CpuId) {
        let _nodes = Self::cpu_nodes(cpu);
        #[cfg(debug_assertions)]
        _nodes.held.forget(self.key(), "CnaLock", cpu);
        // Release: the critical section before the next holder's acquire. Bit 0 only (the
        // locked byte is 0 or 1): a free lock's word stays as it was, and x86 tests the old
        // bit in the same `lock btr`.
        let before = self.word.fetch_and(!LOCKED, Ordering::Release);
        if before & LOCKED == 0 {
            crate::raw::not_holder("CnaLock", cpu, None);
        }
        R::after_release();
    }

    #[inline]
    fn is_locked(&self) -> bool {
        // Relaxed: a snapshot; nothing is read on the strength of it.
        self.word.load(Ordering::Relaxed) != 0
    }
}
