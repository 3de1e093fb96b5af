//! MCS queue lock: FIFO, each waiter spinning on its own node, the nodes inside the lock.
//!
//! # Algorithm
//! The lock of Mellor-Crummey and Scott ("Algorithms for scalable synchronization on
//! shared-memory multiprocessors", 1991). The waiting CPUs form a linked queue; `tail` names the
//! newest one. Each CPU has one queue node in the lock, on its own cache line: `state` (what it
//! spins on) and `next` (its successor). The tail and every `next` hold a CPU id plus one, `0`
//! meaning none, so an all-zero lock is the free lock.
//!
//! * Acquire: swap `cpu + 1` into `tail`. If the old tail was `0` the queue was empty and the
//!   lock is ours. Otherwise mark the own node `WAITING`, link it behind the predecessor (store
//!   `cpu + 1` into the predecessor's `next`) and spin on the own `state` until the predecessor
//!   writes `GRANTED` into it.
//! * Release: if the own `next` names a successor, clear `next` (for this node's next use) and
//!   write `GRANTED` into the successor's `state`. If it names none, try to swing `tail` from
//!   `cpu + 1` back to `0` (compare-exchange): success means nobody queued, the lock is free.
//!   Failure means a successor has swapped itself into the tail but not yet linked itself:
//!   wait for the link, then hand over as before.
//!
//! Unlike CLH (see [`ClhLock`](crate::ClhLock)) a waiter spins on its *own* node, not on its
//! predecessor's, and nodes never migrate: CPU `i` always uses node `i`. A hand-over writes one
//! line the next waiter is spinning on, and the uncontended acquisition and release touch only
//! the tail's line and the own node's (the release reads `next`); CLH's uncontended
//! acquisition writes its own slot and reads the predecessor's. The price is the release's
//! compare-exchange and, when a successor is in the middle of joining, its short wait.
//!
//! # The tail: CPU index, not pointer
//! The tail holds `cpu + 1` rather than the address of the node. The lock then holds no address
//! of itself: it can be built in a `const` (a `static`, [`ConstInit`](crate::ConstInit)), the
//! all-zero state is the free lock, and moving a lock (which needs no borrow, even while some
//! CPU has it locked) cannot leave a dangling pointer in its queue. Every index comes from a
//! range-checked CPU id, so `tail` and `next` only ever hold `0..=N`. The cost is one address
//! computation per node access (`base + index * line`: x86_64 a shift and an add, ARMv7 one
//! `add` with a shifted operand), where a pointer would be used directly. `try_lock` needs no
//! ABA protection either way: it only joins an empty queue (`0` to `cpu + 1`), and the empty
//! queue has one value.
//!
//! # Memory orderings (and their x86_64 / ARMv7 / AArch64 form)
//! Correct in the language's memory model (the loom models in `tests/loom_mcs.rs` check it) and
//! chosen so that ARMv7 pays as few `dmb` as the algorithm allows: fences where one barrier
//! serves two purposes. On x86_64 every fence here is only a compiler barrier (no instruction):
//! the locked `xchg` and `cmpxchg` are full barriers and plain moves are acquire loads and
//! release stores.
//!
//! * Acquire, `tail.swap(cpu + 1, Release)`: the Release half publishes this node's cleared
//!   `next` (cleared at its previous release) to the successor that reads our tail value, so that
//!   the successor's link store into it comes later in its coherence order and is never
//!   overwritten by the clearing. x86_64 `xchg`; ARMv7 `dmb ish; ldrex/strex` loop; AArch64
//!   `swpl` (LSE) or an `ldxr/stlxr` loop.
//! * Empty queue: `fence(Acquire)`. The swap read the `0` of the last holder's releasing
//!   compare-exchange (a Release operation), so its critical section happens-before ours. ARMv7
//!   `dmb ish` (an `AcqRel` swap would be the same `dmb` after the `strex`); AArch64 `dmb ishld`.
//! * Queue not empty: `state.store(WAITING, Relaxed)`, then `fence(AcqRel)`, then the link
//!   `pred.next.store(cpu + 1, Relaxed)`. One barrier, two jobs: its release half orders the
//!   `WAITING` store before the link, so the predecessor, which writes `GRANTED` only after it
//!   read the link, never has its `GRANTED` overwritten by our `WAITING` (which would leave us
//!   spinning forever); its acquire half pairs with the predecessor's Release swap that our swap
//!   read, ordering the predecessor's clearing of its `next` before our link store. ARMv7 one
//!   `dmb ish` for both, where an `AcqRel` swap and a Release link store would take two in a row;
//!   AArch64 `dmb ish` (there, `ldaxr/stlxr` plus `stlr` would avoid the barrier: this crate's
//!   ARM target is ARMv7, whose only tool is `dmb`).
//! * After the link: [`Relax::after_release`], because the predecessor may be waiting for the
//!   link (ARM with [`Wfe`](crate::Wfe): `dsb ish; sev`; nothing otherwise).
//! * Waiting: `state.load(Relaxed)` until `GRANTED`, then `fence(Acquire)`, which pairs with the
//!   releaser's fence before its `GRANTED` store: the previous critical section happens-before
//!   ours. ARMv7 plain `ldr` polls and one `dmb ish` at the end; AArch64 `ldr` and `dmb ishld`.
//! * Release, `next.load(Relaxed)`: only a hint of which path to take; what it read is ordered
//!   by the fence below, on either path.
//! * No successor: `tail.compare_exchange(cpu + 1, 0, Release, Relaxed)`. Release: the critical
//!   section happens-before the next acquirer's swap (or `try_lock`), which reads this `0`.
//!   Failure only leads to the wait for the link: Relaxed. x86_64 `lock cmpxchg`; ARMv7
//!   `ldrex; cmp`, then `dmb ish; strex` once the compare matched (a failure executes no
//!   barrier); AArch64 `casl` or `ldxr/stlxr`.
//! * Waiting for the link: `next.load(Relaxed)` polls; the fence below orders what they read.
//! * Hand-over: `next.store(0, Relaxed)` (own node; it is after the link in `next`'s coherence
//!   order because it follows our read of the link, and before our next enqueue's Release swap,
//!   see above), `fence(AcqRel)`, `succ.state.store(GRANTED, Relaxed)`. The release half makes
//!   the critical section visible to the successor (its poll reads `GRANTED`, its acquire fence
//!   completes the pairing); the acquire half pairs with the successor's fence before its link,
//!   so its `WAITING` store happens-before our `GRANTED` store and comes first in coherence order.
//!   ARMv7 one `dmb ish; str` (an Acquire load of `next` and a Release store would take two
//!   barriers); AArch64 `dmb ish; str`. Then [`Relax::after_release`].
//! * `try_lock`: `tail.compare_exchange(0, cpu + 1, AcqRel, Relaxed)`. Acquire: read the last
//!   holder's releasing `0`; Release: publish the cleared `next`, as the swap. A failure changes
//!   nothing. ARMv7 `ldrex; cmp; dmb ish; strex`, then `dmb ish` on success (a busy lock is
//!   `ldrex; cmp; clrex`, no barrier); AArch64 `casal` or `ldaxr/stlxr`.
//! * `is_locked`: `tail.load(Relaxed)`, a snapshot that orders nothing (plain `mov`/`ldr`).
//!
//! An uncontended acquire+release on ARMv7 therefore costs three `dmb` (before and after the
//! swap, before the compare-exchange's `strex`), as [`ClhLock`](crate::ClhLock)'s; on x86_64
//! one `xchg` and one `lock cmpxchg`. The contended hand-over costs the releaser one `dmb` and
//! the waiter three (swap, link, after the poll). These are the sequences rustc emits for
//! `armv7a-none-eabi` in release builds (read in the assembly of `lock`, `try_lock` and
//! `unlock` of a `McsLock<4>`).
//!
//! # Misuse
//! Every build panics, naming the caller's line (`#[track_caller]`):
//! * on a CPU id beyond the lock's CPUs (`lock`, `try_lock`, `unlock`; `lock_unchecked` leaves
//!   the check to its caller and debug builds keep it);
//! * on an unlock of a free lock (no CPU holds or waits): its `next` is `0` (every release
//!   clears it, so an idle node's `next` is always `0`) and the compare-exchange on `tail`
//!   fails finding the empty queue. That failure path is the contended one, which waits for a
//!   link anyway, so the check adds nothing to the uncontended release.
//!
//! Debug builds also keep, per node, whether its CPU is idle, waiting or holding (written only
//! by that CPU, on its own line; one load and compare per operation), and panic:
//! * when a CPU locks a lock it holds (or waits for) already, instead of deadlocking: its node is
//!   in use ([`try_lock`](KernelLock::try_lock) by the holder is no misuse: it fails, as on any
//!   taken lock);
//! * on an unlock by a CPU that does not hold the lock, naming the holder.
//!
//! Release builds do not keep that state (it would cost a store on every acquisition and
//! release), so there an unlock naming a CPU that does not hold the lock while another does is
//! not caught: if that CPU is idle, its unlock waits for ever for a successor link that never
//! comes (the holder's lock is untouched); if it is a waiting CPU that already has a successor
//! linked, the unlock hands the lock to that successor beside the holder. Re-locking in a
//! release build deadlocks (the CPU links its node behind itself or behind its own waiters).
//! All of these break the contract of [`unlock`](KernelLock::unlock) and of the trait.
//!
//! # Layout
//! The whole lock is aligned to [`Erg`] (the 2 KiB exclusives reservation granule on ARM, a
//! cache line on x86), as [`ClhLock`](crate::ClhLock) is by default, so that unrelated data
//! never shares the granule of `tail`, whose `ldrex`/`strex` loops another core's store there
//! would disturb. The tail and every node are on their own cache line.
//!
//! # Memory
//! A `McsLock<N>` has `N + 1` cache lines (tail, `N` nodes), rounded up to its alignment:
//! `size = round_up((N + 1) x line, Erg)`. The bound `N` fixes the memory;
//! [`McsLock::with_cpus`] only narrows which ids are accepted.
//!
//! | `N` | x86_64 (128-byte lines, aligned to 128 B) | ARMv7 (32-byte lines, aligned to 2 KiB) |
//! |-----|-------------------------------------------|-----------------------------------------|
//! | 1   | 256 B                                     | 2 KiB                                   |
//! | 4   | 640 B                                     | 2 KiB                                   |
//! | 16  | 2,176 B                                   | 2 KiB                                   |
//! | 64  | 8,320 B                                   | 4 KiB                                   |
//!
//! These sizes are checked at compile time on every target (the formula) and by a host test
//! (the x86_64 column). Debug builds' per-node state fits in the node's line.

use core::marker::PhantomData;

use crate::pad::{CachePadded, Erg};
use crate::raw::{CpuId, KernelLock};
use crate::relax::{Relax, Spin};
use crate::shim::{fence, wait_hint, AtomicUsize, Ordering};

/// A node's `state` while its CPU waits behind a predecessor.
const WAITING: usize = 0;
/// A node's `state` once its predecessor handed it the lock.
const GRANTED: usize = 1;

/// Debug builds' per-node record of what its CPU does with the lock.
#[cfg(debug_assertions)]
mod usage {
    /// Neither holding nor waiting.
    pub(super) const IDLE: usize = 0;
    /// Queued, not yet holding.
    pub(super) const WAITING: usize = 1;
    /// Holding the lock.
    pub(super) const HOLDING: usize = 2;
}

/// The queue node of one CPU.
struct Node {
    /// `WAITING` or `GRANTED`: written `WAITING` by its own CPU before it links itself, `GRANTED`
    /// by its predecessor; only its own CPU reads it (spinning).
    state: AtomicUsize,
    /// The successor's CPU id plus one, `0` for none: written by the successor (the link) and by
    /// its own CPU (cleared at the hand-over).
    next: AtomicUsize,
    /// How many CPUs the lock serves (`with_cpus`), the same in every node: a copy on each CPU's
    /// own line, so that the range check reads only that line. Never written after construction.
    cpus: usize,
    /// Debug builds: `usage::IDLE`, `WAITING` or `HOLDING`, written only by its own CPU.
    #[cfg(debug_assertions)]
    usage: AtomicUsize,
}

/// An MCS queue lock for up to `N` CPUs; see the [module docs](self) for the algorithm.
///
/// `R` is the wait strategy. The lock holds one queue node per CPU, so it needs no allocation
/// and no node from its caller.
///
/// ```
/// use kernel_locks::{Backoff, KernelLock, McsLock};
///
/// // Up to 8 CPUs at compile time; this machine booted with 4.
/// let lock: McsLock<8, Backoff> = McsLock::with_cpus(4);
/// lock.lock(3);
/// assert!(lock.is_locked());
/// assert!(!lock.try_lock(0), "CPU 3 holds it");
/// // SAFETY: CPU 3 holds the lock.
/// unsafe { lock.unlock(3) };
/// assert!(lock.try_lock(0));
/// // SAFETY: CPU 0 holds the lock.
/// unsafe { lock.unlock(0) };
/// assert_eq!((lock.name(), lock.max_cpus()), ("mcs", 4));
///
/// // In a static, for all 4 CPUs:
/// static BKL: McsLock<4> = McsLock::new();
/// BKL.lock(1);
/// // SAFETY: CPU 1 holds the lock.
/// unsafe { BKL.unlock(1) };
/// ```
#[repr(C)]
pub struct McsLock<const N: usize, R: Relax = Spin> {
    _align: [Erg; 0],
    /// The newest queued CPU plus one; `0`: the queue is empty and the lock free.
    tail: CachePadded<AtomicUsize>,
    nodes: [CachePadded<Node>; N],
    /// loom builds only: see [`McsLock::with_weakened_hand_over`].
    #[cfg(kernel_locks_loom)]
    weak_hand_over: bool,
    _relax: PhantomData<fn() -> R>,
}

impl<const N: usize, R: Relax> McsLock<N, R> {
    const VALID: () = assert!(N >= 1, "McsLock needs at least one CPU");

    maybe_const_fn! {
        /// A new, unlocked lock for CPUs `0..N`.
        pub fn new() -> Self {
            #[allow(clippy::let_unit_value)]
            let () = Self::VALID;
            Self {
                _align: [],
                tail: CachePadded::new(AtomicUsize::new(0)),
                nodes: array_init!(
                    N,
                    CachePadded::new(Node {
                        state: AtomicUsize::new(WAITING),
                        next: AtomicUsize::new(0),
                        cpus: N,
                        #[cfg(debug_assertions)]
                        usage: AtomicUsize::new(usage::IDLE),
                    })
                ),
                #[cfg(kernel_locks_loom)]
                weak_hand_over: false,
                _relax: PhantomData,
            }
        }
    }

    maybe_const_fn! {
        /// A new, unlocked lock for CPUs `0..cpus`, a core count learnt at boot, up to the
        /// compile-time bound `N`. Ids from `cpus` on panic like ids beyond `N`. The memory is
        /// still that of `N` CPUs (see the [module docs](self#memory)).
        ///
        /// # Panics
        /// Unless `1 <= cpus <= N`.
        #[track_caller]
        pub fn with_cpus(cpus: usize) -> Self {
            assert!(
                cpus >= 1 && cpus <= N,
                "McsLock::with_cpus: the CPU count must be in 1..=N (the lock's compile-time bound)"
            );
            let mut lock = Self::new();
            let mut i = 0;
            while i < N {
                lock.nodes[i].get_mut().cpus = cpus;
                i += 1;
            }
            lock
        }
    }

    /// loom builds only, for the model test that shows the models catch a weakened ordering:
    /// the lock with its hand-over fence weakened from `AcqRel` to `Acquire` (the releaser's
    /// critical section is then no longer ordered before the successor's).
    #[cfg(kernel_locks_loom)]
    #[doc(hidden)]
    pub fn with_weakened_hand_over(mut self) -> Self {
        self.weak_hand_over = true;
        self
    }

    /// The ordering of the hand-over fence (module docs): `AcqRel`, except in a loom build
    /// that asked for it weakened.
    #[inline(always)]
    fn hand_over_fence(&self) -> Ordering {
        #[cfg(kernel_locks_loom)]
        if self.weak_hand_over {
            return Ordering::Acquire;
        }
        Ordering::AcqRel
    }

    /// The node of `cpu`, after the range check against the run-time count, which this CPU's
    /// own node line holds.
    #[inline(always)]
    #[track_caller]
    fn node(&self, cpu: CpuId) -> &Node {
        match self.nodes.get(cpu) {
            Some(node) if cpu < node.cpus => node,
            _ => crate::raw::cpu_out_of_range("McsLock", cpu, self.max_cpus()),
        }
    }

    /// The node that a nonzero `tail` or `next` value names (CPU id plus one).
    ///
    /// Unchecked because every such value is `cpu + 1` of a CPU that passed the range check
    /// (`lock`, `try_lock`) or the caller's promise (`lock_unchecked`), so `1..=N`; a bounds
    /// check would add a compare and a branch to every link and hand-over.
    #[inline(always)]
    fn queued(&self, index: usize) -> &Node {
        debug_assert!(
            (1..=N).contains(&index),
            "McsLock: queue index {index} beyond 1..={N}"
        );
        // SAFETY: `1 <= index <= N` (see above), so `index - 1` is in bounds of `nodes`.
        unsafe { self.nodes.get_unchecked(index - 1) }
    }

    /// Acquires the lock with `node`, the node of `cpu` (the body of `lock` and
    /// `lock_unchecked`, which differ in how they find the node).
    #[inline(always)]
    #[track_caller]
    fn lock_node(&self, node: &Node, cpu: CpuId) {
        #[cfg(debug_assertions)]
        {
            if node.usage.load(Ordering::Relaxed) != usage::IDLE {
                crate::raw::relocked("McsLock", cpu);
            }
            node.usage.store(usage::WAITING, Ordering::Relaxed);
        }
        // Release: publishes this node's cleared `next` to the successor (module docs).
        let pred = self.tail.swap(cpu + 1, Ordering::Release);
        if pred == 0 {
            // Pairs with the last holder's releasing compare-exchange, whose 0 the swap read.
            fence(Ordering::Acquire);
        } else {
            // Relaxed: ordered before the link by the fence.
            node.state.store(WAITING, Ordering::Relaxed);
            // Release half: WAITING before the link; acquire half: the predecessor's cleared
            // `next` (before its Release swap, which ours read) before our link store.
            fence(Ordering::AcqRel);
            self.queued(pred).next.store(cpu + 1, Ordering::Relaxed);
            // The predecessor may be waiting for the link.
            R::after_release();
            let mut relax = R::default();
            while node.state.load(Ordering::Relaxed) != GRANTED {
                relax.relax(cpu);
                wait_hint();
            }
            // Pairs with the predecessor's fence before its GRANTED store.
            fence(Ordering::Acquire);
        }
        #[cfg(debug_assertions)]
        node.usage.store(usage::HOLDING, Ordering::Relaxed);
    }

    /// Releases the lock held by `cpu`, whose node is `node`.
    #[inline(always)]
    #[track_caller]
    fn unlock_node(&self, node: &Node, cpu: CpuId) {
        #[cfg(debug_assertions)]
        {
            if node.usage.load(Ordering::Relaxed) != usage::HOLDING {
                self.not_holder(cpu);
            }
            node.usage.store(usage::IDLE, Ordering::Relaxed);
        }
        // Relaxed: which path to take; the hand-over fence orders what it read.
        let mut next = node.next.load(Ordering::Relaxed);
        if next == 0 {
            // Release: the critical section before the next acquirer's read of this 0.
            match self
                .tail
                .compare_exchange(cpu + 1, 0, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => {
                    R::after_release();
                    return;
                }
                // An idle node has no successor and the queue is empty: nothing was held.
                Err(0) => self.not_holder(cpu),
                // A successor swapped itself in and is about to link itself.
                Err(_) => {
                    let mut relax = R::default();
                    loop {
                        next = node.next.load(Ordering::Relaxed);
                        if next != 0 {
                            break;
                        }
                        relax.relax(cpu);
                        wait_hint();
                    }
                }
            }
        }
        // Own node, cleared for its next use; no other CPU writes it until then.
        node.next.store(0, Ordering::Relaxed);
        // Release half: the critical section before the successor's entry; acquire half: the
        // successor's WAITING store before our GRANTED store.
        fence(self.hand_over_fence());
        self.queued(next).state.store(GRANTED, Ordering::Relaxed);
        R::after_release();
    }

    /// The panic of an unlock by `cpu`, which does not hold the lock; in debug builds it names
    /// the holder (a racy scan of the per-node state, for the message only).
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn not_holder(&self, cpu: CpuId) -> ! {
        #[cfg(debug_assertions)]
        let holder = self
            .nodes
            .iter()
            .position(|node| node.usage.load(Ordering::Relaxed) == usage::HOLDING);
        #[cfg(not(debug_assertions))]
        let holder = None;
        crate::raw::not_holder("McsLock", cpu, holder)
    }
}

impl<const N: usize, R: Relax> Default for McsLock<N, R> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: mutual exclusion follows from the MCS queue: a CPU enters only with an empty queue
// (its swap or compare-exchange read tail 0) or once its predecessor wrote GRANTED into its node,
// which the predecessor does only when leaving; a leaving CPU either empties the queue or hands
// over to exactly one successor. Acquire/Release as documented in the module docs. `is_locked`
// only loads.
unsafe impl<const N: usize, R: Relax> KernelLock for McsLock<N, R> {
    fn name(&self) -> &'static str {
        "mcs"
    }

    fn max_cpus(&self) -> usize {
        self.nodes[0].cpus
    }

    #[inline(always)]
    fn lock(&self, cpu: CpuId) {
        self.lock_node(self.node(cpu), cpu);
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn lock_unchecked(&self, cpu: CpuId) {
        debug_assert!(cpu < self.max_cpus(), "McsLock: CPU id {cpu} out of range");
        // SAFETY: `cpu < max_cpus()` (the caller's contract), which is `nodes[0].cpus`, at most
        // `N` (`with_cpus` asserts it), the length of `nodes`.
        let node: &Node = unsafe { self.nodes.get_unchecked(cpu) };
        self.lock_node(node, cpu);
    }

    #[inline]
    fn try_lock(&self, cpu: CpuId) -> bool {
        let node = self.node(cpu);
        // AcqRel on success: acquire the last holder's releasing 0, publish our cleared `next`.
        // Relaxed on failure: nothing changed.
        let taken = self
            .tail
            .compare_exchange(0, cpu + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        #[cfg(debug_assertions)]
        if taken {
            node.usage.store(usage::HOLDING, Ordering::Relaxed);
        }
        #[cfg(not(debug_assertions))]
        let _ = node;
        taken
    }

    #[inline(always)]
    unsafe fn unlock(&self, cpu: CpuId) {
        self.unlock_node(self.node(cpu), cpu);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        // Relaxed: a snapshot; nothing is read on the strength of it.
        self.tail.load(Ordering::Relaxed) != 0
    }
}

/// The queue nodes' count, `N`.
impl<const N: usize, R: Relax> crate::raw::MaxCpus for McsLock<N, R> {
    const MAX_CPUS: usize = N;
}

#[cfg(not(kernel_locks_loom))]
impl<const N: usize, R: Relax> crate::raw::ConstInit for McsLock<N, R> {
    const INIT: Self = Self::new();
}

impl<const N: usize, R: Relax> core::fmt::Debug for McsLock<N, R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("McsLock")
            .field("cpus", &self.max_cpus())
            .field("locked", &self.is_locked())
            .finish()
    }
}

/// The documented memory formula (module docs), checked at compile time on every target.
#[cfg(not(kernel_locks_loom))]
const _: () = {
    use crate::pad::{Alignment, CacheLine};
    use core::mem::size_of;
    const fn documented(n: usize) -> usize {
        let bytes = (n + 1) * CacheLine::BYTES;
        bytes.div_ceil(Erg::BYTES) * Erg::BYTES
    }
    assert!(size_of::<McsLock<1>>() == documented(1));
    assert!(size_of::<McsLock<4>>() == documented(4));
    assert!(size_of::<McsLock<16>>() == documented(16));
    assert!(size_of::<McsLock<64>>() == documented(64));
};

#[cfg(all(test, not(kernel_locks_loom)))]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn memory_per_n_on_x86_64_is_as_documented() {
        use core::mem::size_of;
        assert_eq!(size_of::<McsLock<1>>(), 256);
        assert_eq!(size_of::<McsLock<4>>(), 640);
        assert_eq!(size_of::<McsLock<16>>(), 2176);
        assert_eq!(size_of::<McsLock<64>>(), 8320);
    }

    #[test]
    fn the_lock_is_aligned_to_the_erg_and_every_node_is_its_own_line() {
        use crate::pad::{Alignment, CacheLine};
        let lock = McsLock::<4>::new();
        assert_eq!(core::mem::align_of::<McsLock<4>>(), Erg::BYTES);
        let base = &lock as *const McsLock<4> as usize;
        for i in 1..=4 {
            let at = lock.queued(i) as *const Node as usize;
            assert_eq!(at - base, i * CacheLine::BYTES, "node {}", i - 1);
        }
    }

    #[test]
    fn nodes_are_clean_after_contended_and_uncontended_use() {
        let lock = McsLock::<4>::new();
        for round in 0..20 {
            let cpu = round % 4;
            lock.lock(cpu);
            // SAFETY: `cpu` holds it.
            unsafe { lock.unlock(cpu) };
        }
        for node in lock.nodes.iter() {
            assert_eq!(node.next.load(Ordering::Relaxed), 0);
        }
        assert_eq!(lock.tail.load(Ordering::Relaxed), 0);
    }
}
