//! A queued spinlock in the design of Linux's `qspinlock`: one 32-bit word per lock, per-CPU
//! MCS queue nodes shared by every lock, a pending bit for the first waiter.
//!
//! # The word
//! ```text
//!  31                 18 17  16 15      9   8   7        0
//! +---------------------+------+---------+---+----------+
//! |  tail CPU + 1        | idx  |    0    | P |  locked  |
//! +---------------------+------+---------+---+----------+
//! ```
//! * `locked` (bits 0-7, only ever 0 or 1): the lock is held.
//! * `P`, pending (bit 8): one CPU waits for the holder without a queue node.
//! * tail (bits 16-31): the newest queued CPU plus one (0: no queue) and which of its four
//!   nodes it queued with (`idx`, its nesting context: task, soft interrupt, interrupt, NMI).
//!
//! The lock is free exactly when the word is 0, so the all-zero lock is the free lock and a lock
//! can be built in a `const` ([`ConstInit`](crate::ConstInit)). A lock costs 4 bytes.
//!
//! # The nodes: one pool per kernel, four nodes per CPU
//! The queue nodes live in a [`QNodePool`], declared once per kernel with
//! [`qspin_node_pool!`](crate::qspin_node_pool) and named by every lock's type: each CPU owns
//! four nodes (one per nesting context), padded to whole cache lines, whichever lock it waits
//! for. A CPU waits for at most one lock per
//! context, and its contexts nest: an interrupt that waits for a lock runs to its end before the
//! code it interrupted resumes, so the waits of one CPU are strictly last-in, first-out and a
//! per-CPU count says which node is next. Four nodes are therefore enough as long as
//! * a CPU never switches tasks in the middle of a wait (kernel spinlocks run with preemption
//!   disabled), and
//! * a nested context never waits for a lock that the context it interrupted holds or waits
//!   for (that deadlocks in any lock; [`irq`](crate::irq)'s `lock_irqsave` masks interrupts
//!   around a lock that an interrupt handler takes too).
//!
//! A fifth nested wait on one CPU panics (Linux spins on `trylock` instead; a kernel with more
//! than four contexts is a bug this crate reports).
//!
//! # Paths
//! * **Fast path** (uncontended): `compare_exchange(0, LOCKED)`.
//! * **Pending** (the lock is held, nobody waits): set the pending bit, wait for the holder to
//!   clear `locked`, then turn pending into locked with one atomic add. One waiter spins on the
//!   lock word itself and needs no node. A CPU whose `fetch_or` finds that somebody else is
//!   pending or queued clears the bit again if it was the one that set it, and queues.
//! * **Queue** (anybody else): take this CPU's next node, swap its tail code into the word,
//!   link the node behind the previous tail's and spin on the own node's `head` flag until the
//!   predecessor sets it; the head of the queue spins on the word until locked and pending are
//!   both clear. Then it takes the lock: if the tail is still its own code, one
//!   `compare_exchange(tail | 0 | 0, LOCKED)` takes the lock and empties the queue; otherwise
//!   (a successor swapped itself in, or a CPU's transient pending bit made the compare fail) it
//!   sets `locked` with `fetch_or`, waits for its successor's link and sets the successor's
//!   `head` flag. The compare-exchange is not retried: a failure because of a transient pending
//!   bit would clear that bit with the tail, and the CPU that set it would then clear the bit of
//!   a pending owner that came after. The CPU that set a transient bit always queues next, so a
//!   failed compare always has a successor to wait for.
//! * **Unlock**: `fetch_and(!LOCKED)`. Linux stores a zero byte; Rust has no sound way to store
//!   one byte of an atomic word that other CPUs update as a whole (mixed-size atomics), so the
//!   release is a whole-word read-modify-write.
//!
//! Exclusion: `locked` goes from 0 to 1 only in the fast path (word 0), in the pending owner's
//! add (while its pending bit keeps everybody else out: the fast path needs a zero word, a
//! queue head waits for pending to clear, and no other CPU owns pending while it is set) and in
//! the queue head's claim (while the tail is not empty, which keeps the fast path and new
//! pending owners out, and after pending cleared). Order: the holder, then the pending waiter,
//! then the queue in FIFO order; `try_lock` and the fast path never pass a waiter (the word is
//! not 0 while anybody waits).
//!
//! # Memory orderings (and their x86_64 / ARMv7 / AArch64 form)
//! Correct in the language's memory model (the loom models in `tests/loom_qspin.rs` fail when
//! any one of these is weakened, but for the linking fence's release half in the case that
//! their header names, which is argued below only) and chosen so that ARMv7 pays as few `dmb`
//! as the algorithm allows. Every modification of the word is a read-modify-write, so any value
//! read from it is in the release sequence of the last release before it. On x86_64 every
//! fence below is only a compiler barrier (no instruction): every read-modify-write is a
//! `lock`-prefixed instruction (a full barrier) and plain moves are acquire loads and release
//! stores.
//!
//! * Fast path and `try_lock`: `compare_exchange(0, LOCKED, Acquire, Relaxed)`. Acquire: the
//!   zero it read is the last holder's release (or a later read-modify-write), so the previous
//!   critical section happens-before ours. A failure changes nothing: Relaxed. x86_64
//!   `lock cmpxchg`; ARMv7 `ldrex; cmp; strex`, then `dmb ish` on success only; AArch64 `casa`
//!   (LSE) or `ldaxr/stxr`.
//! * Unlock: `fetch_and(!LOCKED, Release)`: the critical section happens-before every later
//!   acquirer's read of the cleared bit. x86_64 `lock btr` (only bit 0 of the old value is
//!   tested); ARMv7 `dmb ish`, then an `ldrex; bic; strex` loop; AArch64 `ldclrl` (LSE) or
//!   `ldxr/stlxr`. Then [`Relax::after_release`] (ARM with [`Wfe`](crate::Wfe): `dsb ish; sev`).
//! * Pending: `load(Relaxed)` (a hint of which path to take; the read-modify-write reads the
//!   word again), then `fetch_or(PENDING, Relaxed)`: it needs atomicity only, since the polls
//!   that follow read the word at or after it (read-read coherence) and the fence after them
//!   does the acquiring, also when the `fetch_or` found the lock free. x86_64 `lock cmpxchg`
//!   loop (more than one bit of the old value is tested); ARMv7 `ldrex; orr; strex`, no barrier.
//!   Polls of `locked` with `Relaxed` loads, then one `fence(Acquire)` once it reads 0: the
//!   value read is in the last holder's release sequence, so its critical section
//!   happens-before ours. ARMv7 plain `ldr` polls and one `dmb ish`; AArch64 `dmb ishld`.
//!   Then `fetch_add(LOCKED - PENDING, Relaxed)`: only the pending owner clears pending and
//!   nobody else sets `locked` while it is set (above), so the add needs atomicity only
//!   (x86_64 `lock add`, ARMv7 `ldrex; add; strex`, no barrier).
//! * Pending refused: `fetch_and(!PENDING, Relaxed)`, the undo of a transient bit, atomicity
//!   only; then [`Relax::after_release`], since a queue head may be waiting for it.
//! * Queue, joining: the node's `next` and `head` are reset with `Relaxed` stores (by its own
//!   CPU, which alone writes them before it publishes the node); then the tail exchange, a
//!   `compare_exchange_weak` loop (`Release`, `Relaxed` on failure; its first expected value
//!   from a `Relaxed` load, a guess that the loop corrects) on the whole word: its
//!   release half orders the reset of `next` before the successor's link into it (the
//!   successor's exchange reads ours and its fence below acquires it), so the link is after the
//!   reset in `next`'s coherence order and never overwritten by it. x86_64 `lock cmpxchg`;
//!   ARMv7 `ldrex; cmp`, then `dmb ish; strex` once the compare matched; AArch64 `casl` or
//!   `ldxr/stlxr`. No barrier after it when the queue was empty: the head's fence (below) does
//!   the acquiring.
//! * Queue, linking (a predecessor exists): `fence(AcqRel)`, then the link
//!   `prev.next.store(code, Relaxed)`. One barrier, two jobs: its acquire half pairs with the
//!   predecessor's Release exchange, whose release sequence our exchange read, ordering the
//!   predecessor's reset of its `next` before our link; its release half orders our `head`
//!   reset before the link, so the predecessor, which sets our `head` only after reading the
//!   link (and its acquire fence), never has its hand-off overwritten by our reset. (Mostly the
//!   predecessor's claim read our exchange, or a later value, and its fence acquired our
//!   exchange already; the link is the only path when our exchange comes after its claim: we
//!   are the CPU whose transient pending bit failed its compare-exchange.) ARMv7 and AArch64
//!   one `dmb ish` (where an `AcqRel` exchange and a Release link store would take two). Then
//!   [`Relax::after_release`]: the predecessor may be waiting for the link.
//! * Queue, waiting to be head: `head.load(Relaxed)` polls, then `fence(Acquire)`, which pairs
//!   with the predecessor's hand-off fence: its claim of the lock (the `fetch_or`)
//!   happens-before our polls of the word, which so cannot read a `locked` of 0 from before that
//!   claim. ARMv7 plain `ldr` polls and one `dmb ish`; AArch64 `dmb ishld`.
//! * Queue head: `load(Relaxed)` polls of the word until locked and pending are clear, then
//!   `fence(Acquire)`: the 0 in the locked byte is in the last holder's release sequence, so
//!   its critical section happens-before ours. ARMv7 one `dmb ish`; AArch64 `dmb ishld`.
//! * Queue head's claim: `compare_exchange(val, LOCKED, Relaxed, Relaxed)` or
//!   `fetch_or(LOCKED, Relaxed)`: nobody else can set `locked` until we release it (above), and
//!   the fence before did the acquiring; atomicity only. x86_64 `lock cmpxchg` / `lock or`;
//!   ARMv7 an `ldrex/strex` loop, no barrier.
//! * Hand-off: `next.load(Relaxed)` polls until the successor's link, then `fence(AcqRel)`,
//!   then `succ.head.store(1, Relaxed)`. Its acquire half makes the successor's `head` reset
//!   happen-before our store, which so comes later in `head`'s coherence order: it acquires the
//!   successor's Release exchange when our claim (a read-modify-write) read it or a later
//!   value, and pairs with the successor's linking fence otherwise (see above). Its release
//!   half orders our claim of the lock before the successor's polls of the word (above). ARMv7
//!   and AArch64 one `dmb ish; str` (an Acquire load per poll and a Release store would take a
//!   barrier per poll and one more); then [`Relax::after_release`], since the successor may
//!   sleep on its `head`.
//! * `is_locked` and the `Debug` form: `load(Relaxed)`, a snapshot that orders nothing (plain
//!   `mov`/`ldr`).
//! * Debug builds' list of held locks: `Relaxed` loads and stores, by its own CPU only.
//! * The per-CPU nesting count is read and written only by its own CPU and its nested
//!   contexts (`Relaxed` loads and stores: a CPU observes its own accesses in program order,
//!   interrupted or not), with a `compiler_fence(SeqCst)` after the increment (an interrupt
//!   taken after it finds the count in place before this context touches the node) and before
//!   the decrement (the node is done with before the count gives it back). No instruction on
//!   any target.
//!
//! An uncontended acquire+release on ARMv7 therefore costs two `dmb` (the fast path's, after
//! its `strex`, and the release's), against three for [`McsLock`](crate::McsLock) and
//! [`ClhLock`](crate::ClhLock); on x86_64 one `lock cmpxchg` and one `lock btr`. The pending
//! waiter pays one more `dmb` (after its polls), a queued CPU one for its exchange, one for its
//! link, one after its `head` polls, one after its word polls and, with a successor, one for the
//! hand-off.
//!
//! # Misuse
//! | misuse | debug builds | release builds |
//! |---|---|---|
//! | CPU id out of range of the pool | panics | panics |
//! | a fifth nested context waiting on one CPU | panics | panics |
//! | re-lock by the holder (any context of its CPU) | panics at the `lock` (a per-CPU list of held locks in the pool) | deadlocks |
//! | unlock of a free lock | panics at the unlock | panics at the unlock (the word's locked bit) |
//! | unlock by a CPU that does not hold it | panics at the unlock | not caught (the word keeps no owner): the holder's lock is released |
//!
//! Every panic names the caller's line (`#[track_caller]`). The unlock of a free lock clears a
//! bit that is already clear, so it leaves the word as it was; the check costs the release
//! nothing but the test of the old value. The debug list holds up to eight locks per CPU (every
//! context of the CPU together); a CPU that holds more at once is checked for the first eight.
//! [`try_lock`](KernelLock::try_lock) by the holder is no misuse: it fails, as on any taken lock.
//!
//! # Layout and memory
//! A lock is its 4-byte word, aligned to 4: it fits into the object it protects, as Linux's
//! does. Unlike [`McsLock`](crate::McsLock) and [`ClhLock`](crate::ClhLock) it is not aligned to
//! the ARM exclusives reservation granule, so other data may share the granule of its word,
//! and stores to that data by other cores can make the word's `ldrex`/`strex` loops retry;
//! wrap a lock in a [`Padded`](crate::Padded)`<_, `[`Erg`](crate::Erg)`>` to keep it alone.
//! The pool holds each CPU's four nodes (8 bytes each), its nesting count and, in debug builds,
//! its list of held locks, padded to whole cache lines: `size_of::<CachePadded<QCpuNodes>>()` is
//! 128 bytes per CPU on x86_64 (both builds), 64 bytes on ARMv7 (96 in debug builds); checked
//! at compile time.
//!
//! # Example
//! ```
//! use kernel_locks::{qspin_node_pool, KernelLock, QSpinLock};
//!
//! // Queue nodes for 4 CPUs, shared by every lock that names the pool.
//! qspin_node_pool!(KernelNodes, 4);
//!
//! static RUN_QUEUE: QSpinLock<KernelNodes> = QSpinLock::new();
//! static TIMERS: QSpinLock<KernelNodes> = QSpinLock::new();
//! assert_eq!(core::mem::size_of_val(&RUN_QUEUE), 4);
//! RUN_QUEUE.lock(2);
//! assert!(!RUN_QUEUE.try_lock(1));
//! TIMERS.lock(2);
//! // SAFETY: CPU 2 holds both locks.
//! unsafe {
//!     TIMERS.unlock(2);
//!     RUN_QUEUE.unlock(2);
//! }
//! assert_eq!((RUN_QUEUE.name(), RUN_QUEUE.max_cpus()), ("qspin", 4));
//! ```

use core::marker::PhantomData;
use core::sync::atomic::compiler_fence;

use crate::pad::CachePadded;
use crate::raw::{CpuId, KernelLock};
use crate::relax::{Relax, Spin};
use crate::shim::{fence, wait_hint, AtomicU32, AtomicUsize, Ordering};

/// The locked byte's value while the lock is held.
pub(crate) const LOCKED: u32 = 1;
/// The locked byte.
pub(crate) const LOCKED_MASK: u32 = 0xff;
/// The pending bit.
pub(crate) const PENDING: u32 = 1 << 8;
/// Where the tail starts.
const TAIL_SHIFT: u32 = 16;
/// The tail: CPU + 1 and node index.
pub(crate) const TAIL_MASK: u32 = !0 << TAIL_SHIFT;
/// Queue nodes per CPU: one per nesting context (task, soft interrupt, interrupt, NMI).
pub const CONTEXTS: usize = 4;
/// Bits of the tail that hold the node index.
const IDX_BITS: u32 = 2;
/// The most CPUs a tail can name: 14 bits of CPU + 1.
pub const MAX_CPUS: usize = (1 << (32 - TAIL_SHIFT - IDX_BITS)) - 1;

const _: () = assert!(CONTEXTS == 1 << IDX_BITS);

/// One MCS queue node.
struct QNode {
    /// The successor's tail code (0: none yet): reset by its own CPU before it joins a queue,
    /// written by the successor (the link).
    next: AtomicU32,
    /// Reset to 0 by its own CPU before it joins a queue, set to 1 by the predecessor when this
    /// node becomes the queue's head; only its own CPU reads it (spinning).
    head: AtomicU32,
}

/// The four queue nodes of one CPU and its nesting count; a pool is an array of these, each
/// padded to whole cache lines ([`CachePadded`]).
pub struct QCpuNodes {
    /// How many of `nodes` are in use (the nesting depth of this CPU's queued waits); read and
    /// written by this CPU only, in any of its contexts.
    count: AtomicUsize,
    nodes: [QNode; CONTEXTS],
    /// Debug builds: the locks this CPU holds, in all its contexts together, for the re-lock
    /// and non-holder checks.
    #[cfg(debug_assertions)]
    held: HeldLocks,
}

/// Debug builds: how many held locks per CPU the misuse checks follow.
#[cfg(debug_assertions)]
const HELD: usize = 8;

impl QCpuNodes {
    maybe_const_fn! {
        /// A CPU's unused nodes.
        pub fn new() -> Self {
            Self {
                count: AtomicUsize::new(0),
                nodes: array_init!(
                    CONTEXTS,
                    QNode {
                        next: AtomicU32::new(0),
                        head: AtomicU32::new(0),
                    }
                ),
                #[cfg(debug_assertions)]
                held: HeldLocks::new(),
            }
        }
    }
}

impl Default for QCpuNodes {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for QCpuNodes {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QCpuNodes")
            .field("in_use", &self.count.load(Ordering::Relaxed))
            .finish()
    }
}

/// Debug builds: the addresses of the locks one CPU holds (0: a free entry), in all its contexts
/// together, for the re-lock and non-holder checks of the locks whose word keeps no owner (this
/// one and [`CnaLock`](crate::CnaLock)). Written and read by its own CPU only: `Relaxed`, since
/// a CPU reads its own latest writes, interrupted or not (plain `mov`/`ldr`/`str`).
#[cfg(debug_assertions)]
pub(crate) struct HeldLocks([AtomicUsize; HELD]);

#[cfg(debug_assertions)]
impl HeldLocks {
    maybe_const_fn! {
        /// No lock held.
        pub(crate) fn new() -> Self {
            Self(array_init!(HELD, AtomicUsize::new(0)))
        }
    }

    /// Panics (as the lock type `lock`, for `cpu`) if the lock `key` is in the list.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn check_not_held(&self, key: usize, lock: &'static str, cpu: CpuId) {
        if self.0.iter().any(|h| h.load(Ordering::Relaxed) == key) {
            crate::raw::relocked(lock, cpu);
        }
    }

    /// Records the lock `key`. More than `HELD` locks held at once by one CPU: the checks skip
    /// this one.
    #[inline(always)]
    pub(crate) fn record(&self, key: usize) {
        if let Some(entry) = self.0.iter().find(|h| h.load(Ordering::Relaxed) == 0) {
            entry.store(key, Ordering::Relaxed);
        }
    }

    /// Forgets the lock `key`; panics (as `lock`, for `cpu`) if it is not in the list, unless
    /// the list is full (when `key` may be a lock it did not record).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn forget(&self, key: usize, lock: &'static str, cpu: CpuId) {
        match self.0.iter().find(|h| h.load(Ordering::Relaxed) == key) {
            Some(entry) => entry.store(0, Ordering::Relaxed),
            None if self.0.iter().all(|h| h.load(Ordering::Relaxed) != 0) => {}
            None => crate::raw::not_holder(lock, cpu, None),
        }
    }

    /// Whether no lock is recorded.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.iter().all(|h| h.load(Ordering::Relaxed) == 0)
    }
}

/// The per-CPU queue nodes every [`QSpinLock`] of a kernel shares; declare one with
/// [`qspin_node_pool!`](crate::qspin_node_pool).
///
/// A lock's word names queued nodes by CPU index and node index into this pool, so every lock
/// that has the pool in its type uses the same nodes, and the CPU ids passed to those locks
/// are indices into [`nodes`](QNodePool::nodes).
///
/// # Safety
/// An implementor's `nodes` returns the same slice (the same address and length) on every
/// call, [`CPUS`](QNodePool::CPUS) long and at most [`MAX_CPUS`], whose nodes no other pool's
/// `nodes` returns. The macro's pools are a `static` each, and so meet this. (Its nodes have no
/// public operations, so nothing but these locks can touch them.)
pub unsafe trait QNodePool: 'static {
    /// How many CPUs the pool has nodes for, the length of [`nodes`](QNodePool::nodes): the
    /// [`MaxCpus`](crate::MaxCpus) bound of every lock over the pool.
    const CPUS: usize;

    /// The nodes of CPUs `0..CPUS`.
    fn nodes() -> &'static [CachePadded<QCpuNodes>];
}

/// Declares a [`QNodePool`] named `$name` for `$cpus` CPUs (a constant in `1..=MAX_CPUS`): a
/// zero-sized type and a `static` of `$cpus` padded [`QCpuNodes`].
///
/// ```
/// use kernel_locks::{qspin_node_pool, KernelLock, QNodePool, QSpinLock};
///
/// qspin_node_pool!(pub Nodes, 8);
/// assert_eq!(Nodes::nodes().len(), 8);
/// let lock: QSpinLock<Nodes> = QSpinLock::new();
/// assert_eq!(lock.max_cpus(), 8);
/// ```
///
/// Under `--cfg kernel_locks_loom` the `static` is a `loom::lazy_static!` instead: loom's
/// atomics cannot be built in a `static` initialiser, and loom gives every execution of a
/// model fresh lazy statics, so each execution starts with unused nodes. The same invocation
/// therefore serves normal builds and loom models.
#[macro_export]
macro_rules! qspin_node_pool {
    ($vis:vis $name:ident, $cpus:expr) => {
        /// Queue nodes of `QSpinLock`s (declared with `qspin_node_pool!`).
        $vis struct $name;

        // SAFETY: one `static` (a per-execution lazy static under loom), returned whole on every
        // call and by this pool only; the assertion keeps it within the tail's range.
        unsafe impl $crate::qspin::QNodePool for $name {
            const CPUS: usize = $cpus;

            fn nodes() -> &'static [$crate::CachePadded<$crate::qspin::QCpuNodes>] {
                const _: () = assert!(
                    $cpus >= 1 && $cpus <= $crate::qspin::MAX_CPUS,
                    "qspin_node_pool!: the CPU count must be in 1..=MAX_CPUS"
                );
                $crate::__qspin_nodes_static!($cpus)
            }
        }
    };
}

/// The `static` of `qspin_node_pool!`: an expression of type `&'static [..; $cpus]`; with a
/// per-CPU node type first, the same for another pool of that type (`cna_node_pool!`).
#[cfg(not(kernel_locks_loom))]
#[doc(hidden)]
#[macro_export]
macro_rules! __qspin_nodes_static {
    ($cpus:expr) => {
        $crate::__qspin_nodes_static!($crate::qspin::QCpuNodes, $cpus)
    };
    ($nodes:ty, $cpus:expr) => {{
        static NODES: [$crate::CachePadded<$nodes>; $cpus] =
            [const { $crate::CachePadded::new(<$nodes>::new()) }; $cpus];
        &NODES
    }};
}

/// The `static` of `qspin_node_pool!` under loom: a lazy static, fresh in every execution
/// (and the same for another node type, as above).
#[cfg(kernel_locks_loom)]
#[doc(hidden)]
#[macro_export]
macro_rules! __qspin_nodes_static {
    ($cpus:expr) => {
        $crate::__qspin_nodes_static!($crate::qspin::QCpuNodes, $cpus)
    };
    ($nodes:ty, $cpus:expr) => {{
        $crate::qspin::__loom::lazy_static! {
            static ref NODES: [$crate::CachePadded<$nodes>; $cpus] =
                ::core::array::from_fn(|_| $crate::CachePadded::new(<$nodes>::new()));
        }
        &*NODES
    }};
}

/// loom, for `qspin_node_pool!`'s expansion in the crates that declare pools.
#[cfg(kernel_locks_loom)]
#[doc(hidden)]
pub use ::loom as __loom;

/// A queued spinlock in one 32-bit word, its queue nodes in the pool `P`; see the
/// [module documentation](self).
///
/// `R` is the wait strategy. Valid CPU ids are `0..P::nodes().len()`.
///
/// Every lock over one pool shares its per-CPU nodes, so the rule that a CPU passes its own
/// index (see [`KernelLock`]) covers all of them together: two threads must never use one CPU
/// id at once on any locks of the same pool, and a CPU's waits nest only as its contexts do
/// (no task switch in the middle of a wait; see the module documentation).
pub struct QSpinLock<P: QNodePool, R: Relax = Spin> {
    word: AtomicU32,
    /// loom builds only: see [`QSpinLock::with_weakened_release`].
    #[cfg(kernel_locks_loom)]
    weak_release: bool,
    _types: PhantomData<fn() -> (P, R)>,
}

impl<P: QNodePool, R: Relax> QSpinLock<P, R> {
    maybe_const_fn! {
        /// A new, unlocked lock for the CPUs of the pool `P`.
        pub fn new() -> Self {
            Self {
                word: AtomicU32::new(0),
                #[cfg(kernel_locks_loom)]
                weak_release: false,
                _types: PhantomData,
            }
        }
    }

    /// loom builds only, for the model test that shows the models catch a weakened ordering:
    /// the lock with its release weakened from `Release` to `Relaxed` (the holder's critical
    /// section is then no longer ordered before the next holder's, on every path).
    #[cfg(kernel_locks_loom)]
    #[doc(hidden)]
    pub fn with_weakened_release(mut self) -> Self {
        self.weak_release = true;
        self
    }

    /// The ordering of the release (module docs): `Release`, except in a loom build that
    /// asked for it weakened.
    #[inline(always)]
    fn release_ordering(&self) -> Ordering {
        #[cfg(kernel_locks_loom)]
        if self.weak_release {
            return Ordering::Relaxed;
        }
        Ordering::Release
    }

    /// The nodes of `cpu`, after the range check.
    #[inline(always)]
    #[track_caller]
    fn cpu_nodes(cpu: CpuId) -> &'static QCpuNodes {
        let nodes = P::nodes();
        match nodes.get(cpu) {
            Some(n) => n,
            None => crate::raw::cpu_out_of_range("QSpinLock", cpu, nodes.len()),
        }
    }

    /// The address that identifies this lock in the debug held-lock lists.
    #[cfg(debug_assertions)]
    fn key(&self) -> usize {
        self as *const Self as usize
    }

    /// Debug builds: panics if `cpu` holds this lock already.
    #[inline(always)]
    #[track_caller]
    fn check_not_held(&self, _nodes: &QCpuNodes, _cpu: CpuId) {
        #[cfg(debug_assertions)]
        _nodes.held.check_not_held(self.key(), "QSpinLock", _cpu);
    }

    /// Debug builds: records that the CPU of `_nodes` holds this lock.
    #[inline(always)]
    fn record_held(&self, _nodes: &QCpuNodes) {
        #[cfg(debug_assertions)]
        _nodes.held.record(self.key());
    }

    /// Debug builds: forgets that `cpu` holds this lock; panics if it does not (unless its list
    /// is full, when this lock may be one it did not record).
    #[inline(always)]
    #[track_caller]
    fn forget_held(&self, _nodes: &QCpuNodes, _cpu: CpuId) {
        #[cfg(debug_assertions)]
        _nodes.held.forget(self.key(), "QSpinLock", _cpu);
    }

    /// `lock` for `cpu`, whose nodes are `nodes`.
    #[inline(always)]
    #[track_caller]
    fn lock_with(&self, nodes: &'static QCpuNodes, cpu: CpuId) {
        self.check_not_held(nodes, cpu);
        // Acquire: synchronises with the previous holder's release (module docs).
        if self
            .word
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended(nodes, cpu);
        }
        self.record_held(nodes);
    }

    /// The slow path of `lock`, after the fast path found the word non-zero: the pending bit
    /// if nobody waits, else the queue.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn lock_contended(&self, mine: &'static QCpuNodes, cpu: CpuId) {
        let mut relax = R::default();
        if !pending(&self.word, cpu, &mut relax) {
            self.queue(mine, cpu, &mut relax);
        }
    }

    /// The queue path (module documentation), with the nodes `mine` of `cpu`.
    #[inline(always)]
    #[track_caller]
    fn queue(&self, mine: &'static QCpuNodes, cpu: CpuId, relax: &mut R) {
        // Relaxed: only this CPU, in this or a nested context, touches its count.
        let idx = mine.count.load(Ordering::Relaxed);
        if idx >= CONTEXTS {
            too_deep("QSpinLock", cpu);
        }
        mine.count.store(idx + 1, Ordering::Relaxed);
        // An interrupt taken from here on uses the next node (the count is in place first).
        compiler_fence(Ordering::SeqCst);
        let node = &mine.nodes[idx];
        // Relaxed: published by the tail exchange (`next`) and by the link fence (`head`).
        node.next.store(0, Ordering::Relaxed);
        node.head.store(0, Ordering::Relaxed);
        let code = tail_code(cpu, idx);

        // Swap our code into the tail. Release: our reset of `next` before the successor's
        // link (its exchange reads ours). Relaxed on failure: retried with the value read.
        let mut val = self.word.load(Ordering::Relaxed);
        let old = loop {
            match self.word.compare_exchange_weak(
                val,
                (val & !TAIL_MASK) | code,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(old) => break old,
                Err(now) => val = now,
            }
        };
        if old & TAIL_MASK != 0 {
            let prev = node_of(P::nodes(), old);
            // Acquire half: the predecessor's reset of its `next` (before its Release exchange,
            // whose release sequence ours read) before our link; release half: our `head`
            // reset before the link, which the predecessor reads before its hand-off.
            fence(Ordering::AcqRel);
            prev.next.store(code, Ordering::Relaxed);
            // The predecessor may be waiting for the link.
            R::after_release();
            while node.head.load(Ordering::Relaxed) == 0 {
                relax.relax(cpu);
                wait_hint();
            }
            // Pairs with the predecessor's hand-off fence: its claim of the lock before our
            // polls of the word.
            fence(Ordering::Acquire);
        }

        // Head of the queue: wait for the holder and the pending waiter to leave.
        let mut val = self.word.load(Ordering::Relaxed);
        while val & (LOCKED_MASK | PENDING) != 0 {
            relax.relax(cpu);
            wait_hint();
            val = self.word.load(Ordering::Relaxed);
        }
        // Pairs with the last holder's release, whose release sequence the poll read.
        fence(Ordering::Acquire);
        // Still the last: take the lock and empty the queue in one step. Not retried on a
        // failure (module docs). Relaxed: the fence above acquired; nobody else sets locked.
        let alone = val & TAIL_MASK == code
            && self
                .word
                .compare_exchange(val, LOCKED, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok();
        if !alone {
            // A successor swapped itself in, or is about to (the CPU whose transient pending
            // bit failed the compare queues next): take the lock, then pass the head on.
            // Relaxed: as the compare-exchange.
            self.word.fetch_or(LOCKED, Ordering::Relaxed);
            let mut next = node.next.load(Ordering::Relaxed);
            while next == 0 {
                relax.relax(cpu);
                wait_hint();
                next = node.next.load(Ordering::Relaxed);
            }
            // Acquire half: the successor's `head` reset (before its link fence) before our
            // store; release half: our claim of the lock before the successor's word polls.
            fence(Ordering::AcqRel);
            node_of(P::nodes(), next).head.store(1, Ordering::Relaxed);
            // The successor may sleep on its `head`.
            R::after_release();
        }
        // The node is done with before the count gives it back.
        compiler_fence(Ordering::SeqCst);
        mine.count.store(idx, Ordering::Relaxed);
    }
}

/// The pending path (module documentation) of the lock whose word is `word`, shared with
/// [`CnaLock`](crate::CnaLock): whether `cpu` took the lock through it (else it must queue).
#[inline(always)]
pub(crate) fn pending<R: Relax>(word: &AtomicU32, cpu: CpuId, relax: &mut R) -> bool {
    // Relaxed: which path to try; the fetch_or reads the word again.
    if word.load(Ordering::Relaxed) & !LOCKED_MASK == 0 {
        // Relaxed: atomicity only; the fence after the polls acquires (module docs).
        let val = word.fetch_or(PENDING, Ordering::Relaxed);
        if val & !LOCKED_MASK == 0 {
            // We own the pending bit: wait for the holder to leave.
            while word.load(Ordering::Relaxed) & LOCKED_MASK != 0 {
                relax.relax(cpu);
                wait_hint();
            }
            // Pairs with the last holder's release, whose release sequence the poll read.
            fence(Ordering::Acquire);
            // Pending becomes locked in one step; only we clear pending, and nobody else
            // sets locked while it is set (module docs): atomicity only.
            word.fetch_add(LOCKED.wrapping_sub(PENDING), Ordering::Relaxed);
            return true;
        }
        // Somebody else is pending or queued: undo our bit if we set it, and queue.
        if val & PENDING == 0 {
            // Relaxed: atomicity only.
            word.fetch_and(!PENDING, Ordering::Relaxed);
            // A queue head may be waiting for the bit to clear.
            R::after_release();
        }
    }
    false
}

/// The tail code of node `idx` of `cpu` (in its place in the word).
#[inline(always)]
pub(crate) fn tail_code(cpu: CpuId, idx: usize) -> u32 {
    // `cpu < MAX_CPUS` (the pool's length, asserted by the pool) and `idx < CONTEXTS`: the code
    // fits the 16 tail bits.
    ((((cpu as u32) + 1) << IDX_BITS) | idx as u32) << TAIL_SHIFT
}

/// The node a word's tail (or a `next` link, which holds a tail code) names; `code` has a
/// nonzero tail.
#[inline(always)]
fn node_of(nodes: &'static [CachePadded<QCpuNodes>], code: u32) -> &'static QNode {
    let (cpu, idx) = tail_cpu_idx(code);
    &nodes[cpu].nodes[idx]
}

/// The CPU and the node index that a code with a nonzero tail names (shared with
/// [`CnaLock`](crate::CnaLock), whose pool is indexed the same way).
#[inline(always)]
pub(crate) fn tail_cpu_idx(code: u32) -> (CpuId, usize) {
    let code = code >> TAIL_SHIFT;
    (
        (code >> IDX_BITS) as usize - 1,
        (code & ((1 << IDX_BITS) - 1)) as usize,
    )
}

/// The panic of a fifth nested wait on one CPU, out of line.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn too_deep(lock: &'static str, cpu: CpuId) -> ! {
    panic!(
        "{lock}: CPU {cpu} waits in a fifth nested context (the nodes cover task, soft \
         interrupt, interrupt and NMI)"
    );
}

impl<P: QNodePool, R: Relax> Default for QSpinLock<P, R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: QNodePool, R: Relax> core::fmt::Debug for QSpinLock<P, R> {
    /// The word, in hex: `QSpinLock { word: 0x00000101 }` is a held lock with a pending waiter.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QSpinLock")
            .field(
                "word",
                // Relaxed: a snapshot.
                &format_args!("{:#010x}", self.word.load(Ordering::Relaxed)),
            )
            .finish()
    }
}

/// The pool's CPU count, [`P::CPUS`](QNodePool::CPUS).
impl<P: QNodePool, R: Relax> crate::raw::MaxCpus for QSpinLock<P, R> {
    const MAX_CPUS: usize = P::CPUS;
}

#[cfg(not(kernel_locks_loom))]
impl<P: QNodePool, R: Relax> crate::raw::ConstInit for QSpinLock<P, R> {
    const INIT: Self = Self::new();
}

// SAFETY: exclusion: the lock is taken only by a transition of the locked byte from 0 to 1
// (the fast path's compare-exchange of a zero word, the pending owner's add, which runs while
// its pending bit keeps every other taker out, and the queue head's claim, which runs while
// the tail keeps every other taker out) and released by the holder alone (module docs).
// Every acquisition synchronises with the last release, as the module docs argue per path.
// `is_locked` only loads.
unsafe impl<P: QNodePool, R: Relax> KernelLock for QSpinLock<P, R> {
    fn name(&self) -> &'static str {
        "qspin"
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
        let nodes: &'static QCpuNodes = unsafe { P::nodes().get_unchecked(cpu) };
        self.lock_with(nodes, cpu);
    }

    #[inline]
    fn try_lock(&self, cpu: CpuId) -> bool {
        let nodes = Self::cpu_nodes(cpu);
        // Acquire on success: as the fast path; Relaxed on failure: nothing changed.
        let locked = self
            .word
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        if locked {
            self.record_held(nodes);
        }
        locked
    }

    #[inline(always)]
    unsafe fn unlock(&self, cpu: CpuId) {
        let nodes = Self::cpu_nodes(cpu);
        self.forget_held(nodes, cpu);
        // Release: the critical section before the next acquirer's read of the cleared bit.
        // A free lock's bit is clear already: its word stays as it was.
        let before = self.word.fetch_and(!LOCKED, self.release_ordering());
        if before & LOCKED == 0 {
            crate::raw::not_holder("QSpinLock", cpu, None);
        }
        R::after_release();
    }

    #[inline]
    fn is_locked(&self) -> bool {
        // Relaxed: a snapshot; nothing is read on the strength of it.
        self.word.load(Ordering::Relaxed) != 0
    }
}

/// The documented pool memory per CPU (module docs), checked at compile time on every target.
#[cfg(not(kernel_locks_loom))]
const _: () = {
    use crate::pad::{Alignment, CacheLine};
    use core::mem::size_of;
    let bytes = size_of::<CachePadded<QCpuNodes>>();
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    assert!(bytes == 128);
    #[cfg(all(target_arch = "arm", not(debug_assertions)))]
    assert!(bytes == 64);
    #[cfg(all(target_arch = "arm", debug_assertions))]
    assert!(bytes == 96);
    assert!(bytes % CacheLine::BYTES == 0);
};

#[cfg(all(test, not(kernel_locks_loom)))]
mod tests {
    use super::*;

    qspin_node_pool!(Pool, 3);

    #[test]
    fn tail_codes_name_their_nodes() {
        let nodes = Pool::nodes();
        for cpu in 0..3 {
            for idx in 0..CONTEXTS {
                let code = tail_code(cpu, idx);
                assert_eq!(code & !TAIL_MASK, 0);
                assert!(core::ptr::eq(node_of(nodes, code), &nodes[cpu].nodes[idx]));
            }
        }
        // The largest CPU and node fill the tail exactly.
        assert_eq!(tail_code(MAX_CPUS - 1, CONTEXTS - 1), TAIL_MASK);
    }

    /// Yields the host thread while waiting: three threads on fewer host cores (or under
    /// QEMU) would otherwise convoy behind a descheduled waiter.
    #[derive(Default)]
    struct Yield;

    impl Relax for Yield {
        fn relax(&mut self, _cpu: CpuId) {
            std::thread::yield_now();
        }
    }

    #[test]
    fn nodes_and_counts_are_clean_after_contended_and_uncontended_use() {
        let lock = QSpinLock::<Pool, Yield>::new();
        std::thread::scope(|s| {
            for cpu in 0..3 {
                let lock = &lock;
                s.spawn(move || {
                    for _ in 0..2_000 {
                        lock.lock(cpu);
                        // SAFETY: `cpu` holds it.
                        unsafe { lock.unlock(cpu) };
                    }
                });
            }
        });
        assert_eq!(lock.word.load(Ordering::Relaxed), 0);
        for cpu in Pool::nodes() {
            assert_eq!(cpu.count.load(Ordering::Relaxed), 0);
            #[cfg(debug_assertions)]
            assert!(cpu.held.is_empty());
        }
    }
}
