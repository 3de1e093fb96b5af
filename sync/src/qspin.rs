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
//! * `locked` (bit 0): the lock is held.
//! * `P`, pending (bit 8): one CPU waits for the holder without a queue node.
//! * tail (bits 16-31): the newest queued CPU plus one (0: no queue) and which of its four
//!   nodes it queued with (`idx`, its nesting context: task, soft interrupt, interrupt, NMI).
//!
//! The lock is free exactly when the word is 0. A lock costs 4 bytes; the queue nodes live in a
//! [`QNodePool`], one per kernel, declared once with [`qspin_node_pool!`]: every CPU owns four
//! nodes (one per nesting context) on its own cache line, whichever lock it waits for. A CPU
//! waits for at most one lock per context, and its contexts nest (an interrupt that waits for
//! a lock runs to its end before the code it interrupted resumes), so four nodes are enough.
//!
//! # Paths
//! * **Fast path** (uncontended): `compare_exchange(0, LOCKED)`.
//! * **Pending** (the lock is held, nobody waits): set the pending bit, wait for the holder to
//!   clear `locked`, then turn pending into locked with one atomic add. One waiter spins on the
//!   lock word itself and needs no node.
//! * **Queue** (anybody else): take this CPU's next node, swap it into the tail, link it behind
//!   the previous tail's node and spin on the own node until the predecessor makes it the head;
//!   the head spins on the word until locked and pending are both clear, takes the lock (and
//!   clears the tail if it is still the last), and passes the head on to its successor.
//! * **Unlock**: `fetch_and(!LOCKED)`. Linux stores a zero byte; Rust has no sound way to store
//!   one byte of an atomic word that other CPUs update as a whole (mixed-size atomics), so the
//!   release is a whole-word read-modify-write (x86 `lock sub`, ARMv7 a `ldrex`/`strex` loop).
//!
//! # Memory orderings (and what they become)
//! * Fast path: `compare_exchange(0, LOCKED, Acquire, Relaxed)`: synchronises with the previous
//!   holder's release. x86 `lock cmpxchg`; ARMv7 `ldrex`/`strex`, then `dmb ish`; AArch64
//!   `ldaxr`/`stxr` (or `casa` with LSE).
//! * Unlock: `fetch_and(!LOCKED, Release)`: the critical section happens-before the next
//!   acquirer's acquire. x86 `lock btr` (or a `lock cmpxchg` loop); ARMv7 `dmb ish` then the
//!   `ldrex`/`strex` loop; AArch64 `ldxr`/`stlxr`.
//! * Pending: `fetch_or(PENDING, Acquire)` (its acquire half orders our reads of the word after
//!   it), polls of `locked` with `Relaxed` loads and one `fence(Acquire)` when it reads 0 (the
//!   fence pairs with the holder's release, as in the ticket lock; ARMv7 one `dmb ish` at the
//!   end), then `fetch_add(LOCKED - PENDING, Relaxed)`: only the pending owner clears pending,
//!   and nobody else can take the lock while pending is set (the fast path needs a zero word, a
//!   queue head waits for pending to clear), so the add needs atomicity only.
//! * Queue: the node's fields are initialised with `Relaxed` stores and published by the tail
//!   exchange, an `AcqRel` compare-exchange loop on the whole word (ARMv7 `dmb ish` before and
//!   after it): its release half publishes our node to the successor, its acquire half orders
//!   our link into the predecessor's node after the predecessor's reset of it.
//!   The link `prev.next = me` is a `Release` store, and the successor pointer is read with
//!   `Acquire` by the predecessor, so the predecessor's hand-off store to our `head` flag comes
//!   after our initialisation of it (it cannot be overwritten by our own reset). The hand-off is
//!   a `Release` store; the waiter polls its flag with `Relaxed` loads and a `fence(Acquire)`.
//!   The head polls the word with `Relaxed` loads until locked and pending are clear, then one
//!   `fence(Acquire)`: it read 0 in the locked byte from the last holder's release, so it
//!   synchronises with it. It takes the lock with a `compare_exchange` (tail still its own:
//!   word becomes `LOCKED`) or `fetch_or(LOCKED)` (a successor queued behind it), both
//!   `Relaxed`: no other CPU can take the lock between (the fast path needs a zero word, the
//!   pending path backs off when it sees a tail).
//! * The per-CPU nesting count is only touched by its own CPU (`Relaxed`), with compiler fences
//!   so that an interrupt arriving between the count and the node's use sees them in order.
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
//! # Example
//! ```
//! use kernel_locks::{qspin_node_pool, KernelLock, QSpinLock};
//!
//! // Queue nodes for 4 CPUs, shared by every lock that names the pool.
//! qspin_node_pool!(KernelNodes, 4);
//!
//! static RUN_QUEUE: QSpinLock<KernelNodes> = QSpinLock::new();
//! assert_eq!(core::mem::size_of_val(&RUN_QUEUE), 4);
//! RUN_QUEUE.lock(2);
//! assert!(!RUN_QUEUE.try_lock(1));
//! // SAFETY: CPU 2 holds the lock.
//! unsafe { RUN_QUEUE.unlock(2) };
//! assert_eq!((RUN_QUEUE.name(), RUN_QUEUE.max_cpus()), ("qspin", 4));
//! ```

use core::marker::PhantomData;
use core::sync::atomic::compiler_fence;

use crate::pad::CachePadded;
use crate::raw::{CpuId, KernelLock};
use crate::relax::{Relax, Spin};
use crate::shim::{fence, wait_hint, AtomicU32, AtomicUsize, Ordering};

const LOCKED: u32 = 1;
const LOCKED_MASK: u32 = 0xff;
const PENDING: u32 = 1 << 8;
const TAIL_SHIFT: u32 = 16;
const TAIL_MASK: u32 = !0 << TAIL_SHIFT;
/// Queue nodes per CPU: one per nesting context (task, soft interrupt, interrupt, NMI).
pub const CONTEXTS: usize = 4;
const IDX_BITS: u32 = 2;
/// The most CPUs a tail can name: 14 bits of CPU + 1.
pub const MAX_CPUS: usize = (1 << (32 - TAIL_SHIFT - IDX_BITS)) - 1;

/// One MCS queue node.
struct QNode {
    /// The successor's tail code (0: none yet).
    next: AtomicU32,
    /// Set by the predecessor when this node becomes the queue's head.
    head: AtomicU32,
}

/// The four queue nodes of one CPU and its nesting count, on a cache line of their own.
pub struct QCpuNodes {
    /// How many of `nodes` are in use (the nesting depth of this CPU's waits).
    count: AtomicUsize,
    nodes: [QNode; CONTEXTS],
    /// Debug builds: the addresses of the locks this CPU holds (0: a free entry), one per
    /// context that can hold one at a time, for the re-lock and non-holder checks.
    #[cfg(debug_assertions)]
    held: [AtomicUsize; 8],
}

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
                held: array_init!(8, AtomicUsize::new(0)),
            }
        }
    }
}

impl Default for QCpuNodes {
    fn default() -> Self {
        Self::new()
    }
}

/// The per-CPU queue nodes every [`QSpinLock`] of a kernel shares; declare one with
/// [`qspin_node_pool!`].
///
/// # Safety
/// `nodes` returns the same slice on every call, used by these locks only, and at most
/// [`MAX_CPUS`] long.
pub unsafe trait QNodePool: 'static {
    /// The nodes of CPUs `0..nodes().len()`.
    fn nodes() -> &'static [CachePadded<QCpuNodes>];
}

/// Declares a [`QNodePool`] named `$name` for `$cpus` CPUs: a zero-sized type and a `static`
/// of `$cpus` cache lines of queue nodes. Not available under `--cfg kernel_locks_loom`, whose
/// atomics cannot be built in a `static` (loom tests implement the trait by hand).
#[macro_export]
macro_rules! qspin_node_pool {
    ($vis:vis $name:ident, $cpus:expr) => {
        /// Queue nodes of `QSpinLock`s (declared with `qspin_node_pool!`).
        $vis struct $name;

        // SAFETY: one `static`, returned whole on every call, used by nothing else; the
        // assertion keeps it within the tail's range.
        unsafe impl $crate::qspin::QNodePool for $name {
            fn nodes() -> &'static [$crate::CachePadded<$crate::qspin::QCpuNodes>] {
                const _: () = assert!($cpus >= 1 && $cpus <= $crate::qspin::MAX_CPUS);
                static NODES: [$crate::CachePadded<$crate::qspin::QCpuNodes>; $cpus] =
                    [const { $crate::CachePadded::new($crate::qspin::QCpuNodes::new()) }; $cpus];
                &NODES
            }
        }
    };
}

/// A queued spinlock in one 32-bit word; see the [module documentation](self).
///
/// `P` is the node pool, `R` the wait strategy.
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

    /// The same lock with its release weakened from `Release` to `Relaxed`: only in loom
    /// builds, for the model test that must see the broken lock fail.
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
        // Relaxed: only `cpu` writes its own list, and a CPU reads its own latest writes.
        #[cfg(debug_assertions)]
        if _nodes
            .held
            .iter()
            .any(|h| h.load(Ordering::Relaxed) == self.key())
        {
            crate::raw::relocked("QSpinLock", _cpu);
        }
    }

    /// Debug builds: records that `cpu` holds this lock.
    #[inline(always)]
    fn record_held(&self, _nodes: &QCpuNodes) {
        #[cfg(debug_assertions)]
        {
            let free = _nodes.held.iter().find(|h| h.load(Ordering::Relaxed) == 0);
            // More than 8 qspinlocks held at once by one CPU: the check then forgets this one.
            if let Some(entry) = free {
                entry.store(self.key(), Ordering::Relaxed);
            }
        }
    }

    /// Debug builds: forgets that `cpu` holds this lock; panics if it does not.
    #[inline(always)]
    #[track_caller]
    fn forget_held(&self, _nodes: &QCpuNodes, _cpu: CpuId) {
        #[cfg(debug_assertions)]
        match _nodes
            .held
            .iter()
            .find(|h| h.load(Ordering::Relaxed) == self.key())
        {
            Some(entry) => entry.store(0, Ordering::Relaxed),
            None if _nodes.held.iter().all(|h| h.load(Ordering::Relaxed) != 0) => {}
            None => crate::raw::not_holder("QSpinLock", _cpu, None),
        }
    }

    /// The slow path of `lock`, after the fast path found the word non-zero.
    #[cold]
    #[inline(never)]
    fn lock_contended(&self, cpu: CpuId) {
        let mut relax = R::default();
        let mut val = self.word.load(Ordering::Relaxed);
        // Pending: only when the lock is held and nobody else waits.
        if val & !LOCKED_MASK == 0 {
            // Acquire: orders the polls below after the claim.
            val = self.word.fetch_or(PENDING, Ordering::Acquire);
            if val & !LOCKED_MASK == 0 {
                // We own the pending bit: wait for the holder to leave.
                while self.word.load(Ordering::Relaxed) & LOCKED_MASK != 0 {
                    relax.relax(cpu);
                    wait_hint();
                }
                // Pairs with the holder's release (module documentation).
                fence(Ordering::Acquire);
                // Pending becomes locked in one step; only we clear pending (module docs).
                self.word
                    .fetch_add(LOCKED.wrapping_sub(PENDING), Ordering::Relaxed);
                return;
            }
            // Somebody else is pending or queued: undo our bit if we set it, and queue.
            if val & PENDING == 0 {
                self.word.fetch_and(!PENDING, Ordering::Relaxed);
            }
        }
        self.queue(cpu, &mut relax);
    }

    /// The queue path (module documentation).
    fn queue(&self, cpu: CpuId, relax: &mut R) {
        let mine = Self::cpu_nodes(cpu);
        let idx = mine.count.load(Ordering::Relaxed);
        if idx >= CONTEXTS {
            too_deep(cpu);
        }
        mine.count.store(idx + 1, Ordering::Relaxed);
        // An interrupt taken from here on uses the next node (the count is in place first).
        compiler_fence(Ordering::SeqCst);
        let node = &mine.nodes[idx];
        node.next.store(0, Ordering::Relaxed);
        node.head.store(0, Ordering::Relaxed);
        let code = (((cpu as u32) + 1) << IDX_BITS | idx as u32) << TAIL_SHIFT;

        // Swap our code into the tail. AcqRel: Release publishes the node's initialisation to
        // our successor; Acquire orders our link into the predecessor's node after its reset
        // (the exchange reads the predecessor's, whose Release published it).
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
        if old & TAIL_MASK != 0 {
            let prev = node_of(P::nodes(), old & TAIL_MASK);
            // Release: our node's reset happens-before the predecessor's hand-off store.
            prev.next.store(code, Ordering::Release);
            while node.head.load(Ordering::Relaxed) == 0 {
                relax.relax(cpu);
                wait_hint();
            }
            // Pairs with the predecessor's Release hand-off.
            fence(Ordering::Acquire);
        }

        // Head of the queue: wait for the holder and the pending waiter to leave.
        let mut val = self.word.load(Ordering::Relaxed);
        while val & (LOCKED_MASK | PENDING) != 0 {
            relax.relax(cpu);
            wait_hint();
            val = self.word.load(Ordering::Relaxed);
        }
        // Pairs with the last holder's release (module documentation).
        fence(Ordering::Acquire);
        loop {
            if val & TAIL_MASK == code {
                // Still the last: take the lock and empty the queue in one step.
                match self
                    .word
                    .compare_exchange(val, LOCKED, Ordering::Relaxed, Ordering::Relaxed)
                {
                    Ok(_) => break,
                    Err(now) => val = now,
                }
            } else {
                // A successor queued behind us: take the lock, then pass the head on.
                self.word.fetch_or(LOCKED, Ordering::Relaxed);
                let mut next = node.next.load(Ordering::Acquire);
                while next == 0 {
                    relax.relax(cpu);
                    wait_hint();
                    next = node.next.load(Ordering::Acquire);
                }
                // Release: the successor's head poll (and fence) sees our queue work done.
                node_of(P::nodes(), next).head.store(1, Ordering::Release);
                break;
            }
        }
        compiler_fence(Ordering::SeqCst);
        mine.count.store(idx, Ordering::Relaxed);
    }
}

/// The node a tail code names.
fn node_of(nodes: &'static [CachePadded<QCpuNodes>], code: u32) -> &'static QNode {
    let code = code >> TAIL_SHIFT;
    let cpu = (code >> IDX_BITS) as usize - 1;
    &nodes[cpu].nodes[(code & ((1 << IDX_BITS) - 1)) as usize]
}

/// The panic of a fifth nested wait on one CPU, out of line.
#[cold]
#[inline(never)]
fn too_deep(cpu: CpuId) -> ! {
    panic!(
        "QSpinLock: CPU {cpu} waits in a fifth nested context (the nodes cover task, soft \
         interrupt, interrupt and NMI)"
    );
}

impl<P: QNodePool, R: Relax> Default for QSpinLock<P, R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: QNodePool, R: Relax> core::fmt::Debug for QSpinLock<P, R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QSpinLock")
            .field(
                "word",
                &format_args!("{:#010x}", self.word.load(Ordering::Relaxed)),
            )
            .finish()
    }
}

#[cfg(not(kernel_locks_loom))]
impl<P: QNodePool, R: Relax> crate::raw::ConstInit for QSpinLock<P, R> {
    const INIT: Self = Self::new();
}

// SAFETY: exclusion: the lock is taken only by a transition of the locked byte from 0 to 1
// (the fast path's compare-exchange, the pending owner's add, which runs while the pending
// bit keeps every other taker out, and the queue head's claim, which runs while only the head
// may take it) and released by the holder alone. Orderings as the module documentation gives.
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
        let nodes = Self::cpu_nodes(cpu);
        self.check_not_held(nodes, cpu);
        // Acquire: synchronises with the previous holder's release.
        if self
            .word
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended(cpu);
        }
        self.record_held(nodes);
    }

    #[inline]
    fn try_lock(&self, cpu: CpuId) -> bool {
        let nodes = Self::cpu_nodes(cpu);
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
        // Clearing the locked byte leaves a free lock's word as it was, so the check costs
        // the release nothing but the test of the old value (x86 `lock btr` and a branch).
        let before = self.word.fetch_and(!LOCKED_MASK, self.release_ordering());
        if before & LOCKED_MASK == 0 {
            crate::raw::not_holder("QSpinLock", cpu, None);
        }
        R::after_release();
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.word.load(Ordering::Acquire) != 0
    }
}
