//! CLH queue lock: FIFO, one spin location per waiter, as seL4's big kernel lock.
//!
//! # Algorithm
//! The lock is a queue of *request slots*. There is one slot per CPU plus one spare, and each
//! slot's state is `PENDING` or `GRANTED`. `tail` names the newest request. Initially the spare is
//! the tail and `GRANTED`, and CPU `i` owns slot `i`.
//!
//! * Acquire: mark the own slot `PENDING`, swap it into `tail` (joining the queue) and remember the
//!   previous tail as `watch`; spin until `watch` is `GRANTED`.
//! * Release: mark the own slot `GRANTED` (handing the lock to the successor, which spins on it),
//!   then take over `watch` as the own slot for next time: the predecessor has moved on and
//!   nobody else will look at it again. Slots thus migrate between CPUs, and every CPU always
//!   owns exactly one.
//!
//! Each waiter spins on a different slot, each slot on its own cache line, so a hand-over moves one
//! line from the releaser to the next waiter instead of invalidating every waiter's copy.
//!
//! # Memory orderings (and their ARMv7 form)
//! As strong as seL4's `clh_lock_acquire`/`clh_lock_release` after its PR #199 fix, with one
//! barrier fewer on ARM (the address dependency below):
//!
//! * `req[my].store(PENDING, Relaxed)` then `tail.swap(.., AcqRel)`: the swap's release half makes
//!   the `PENDING` store visible before the slot is published, so the successor can never see the
//!   slot's previous `GRANTED`. Its acquire half orders our reads of the predecessor's slot after
//!   the swap. (seL4 once used Acquire only here, which broke exclusion on big ARM servers.)
//!   ARMv7: `dmb ish; ldrex/strex loop`, then the first read of the predecessor's slot with no
//!   barrier between (next point).
//! * ARM only: the swap's acquire half is the address dependency instead of a `dmb`. The first
//!   read of the predecessor's slot takes its address from the value the swap's `ldrex` read
//!   (`prev & INDEX_MASK`), and the ARM architecture keeps a read with an address dependency on
//!   an earlier read after that read (the ARMv7 ARM's ordering of address-dependent reads; the
//!   litmus test *MP+dmb+addr*, forbidden by the ARM model of Alglave, Maranget and Tautschnig,
//!   "Herding cats", 2014, and by the ARMv8 model). The
//!   predecessor's `PENDING` store is ordered before its tail write by its own `dmb` (its swap's
//!   release half), and our swap reads that tail write (an exclusive read-modify-write reads the
//!   coherence-latest value). So the first read returns `PENDING` or a later value of the slot,
//!   never the `GRANTED` of its previous use; each later poll reads the same location, so it is
//!   not older than the first (read-read coherence). What the acquire half ordered besides (the
//!   critical section) the `fence(Acquire)` after the poll orders. The swap, the mask and the
//!   first read are one `asm!` block (`ClhLock::enqueue`): the Rust memory model does not order
//!   a `Relaxed` load by its address, and the compiler could in principle break a dependency it
//!   sees; it cannot change an `asm!` block. One `dmb` per acquisition less than seL4 (whose
//!   `__atomic_exchange_n(.., ACQ_REL)` compiles to `dmb; ldrex/strex; dmb`); loom models the
//!   portable `AcqRel` form, which the other targets and loom builds keep.
//! * Spinning uses `Relaxed` loads followed by one `fence(Acquire)` once `GRANTED` is seen: the
//!   fence pairs with the releaser's `Release` store, making the previous critical section visible.
//!   ARMv7: plain `ldr` while spinning, one `dmb ish` at the end (cheaper than a barrier per poll).
//! * Release: `req[my].store(GRANTED, Release)`: everything written in the critical section is
//!   visible before the hand-over. ARMv7: `dmb ish; str`. With the [`Wfe`](crate::Wfe) strategy a
//!   `dsb ish; sev` follows to wake sleeping waiters.
//! * Per-CPU bookkeeping (`myreq`, `watch`, `gen`) is only touched by its own CPU: `Relaxed`.
//!
//! Uncontended acquire+release on ARMv7 therefore costs three `dmb`: one before the swap, one
//! after the poll, one for the release; on x86 the swap is one `xchg` and everything else plain
//! moves.
//!
//! # `try_lock` and the tagged tail
//! `try_lock` must join the queue only behind a *granted* tail, atomically. It reads the tail,
//! checks its slot is `GRANTED`, and installs its own slot with a compare-exchange on `tail`.
//! Because slots are reused, a bare slot index could come back to the tail between the check and
//! the compare-exchange, now `PENDING` (ABA). So `tail` holds a tag: the slot index in the low
//! bits and, above it, a per-CPU enqueue counter, making every enqueue's tail value unique (up to
//! wrap-around of the counter: 2^(word bits - index bits) enqueues by one CPU inside the few
//! instructions of one `try_lock`, which cannot happen with interrupts off).
//! A granted tail stays granted while it is the tail: only a successor could reuse its slot.
//! The tail is read with `Acquire` so that the `PENDING` store of the enqueuer that wrote it is
//! visible (otherwise a stale `GRANTED` of the slot's previous use could be read).
//!
//! # Misuse
//! | misuse | debug builds | release builds |
//! |---|---|---|
//! | CPU id out of range (`with_cpus`) | panics | panics |
//! | re-lock by the holder (or a waiter) | panics at the `lock`: the CPU's own slot is `PENDING` | deadlocks (the check is a load, compare and branch per acquisition) |
//! | unlock by a CPU that does not hold the lock (stray, double, wrong CPU) | panics at the unlock, the holder's lock untouched | the same (its own slot's line, which the release writes anyway) |
//!
//! # Layout
//! The whole lock is aligned to `A` (default [`Erg`]: the 2 KiB exclusives
//! reservation granule on ARM, a cache line on x86, as seL4 aligns its lock) so that unrelated
//! data never shares the granule of `tail`; every slot and per-CPU node is on its own cache line.

//!
//! # Memory
//! A `ClhLock<N>` has `2N + 2` cache lines (tail, spare slot, `N` slots, `N` per-CPU nodes),
//! rounded up to its alignment `A`: `size = round_up(2 (N + 1) x line, A)`. The bound `N` fixes
//! the memory; [`ClhLock::with_cpus`] only narrows which ids are accepted.
//!
//! | `N` | x86_64 (128-byte lines, `A` = 128 B) | ARMv7 (32-byte lines, `A` = 2 KiB ERG) |
//! |-----|--------------------------------------|----------------------------------------|
//! | 1   | 512 B                                | 2 KiB                                  |
//! | 4   | 1,280 B                              | 2 KiB                                  |
//! | 16  | 4,352 B                              | 2 KiB                                  |
//! | 64  | 16,640 B                             | 6 KiB                                  |
//!
//! These sizes are checked at compile time on every target (the formula) and by a host test
//! (the x86_64 column).

use core::marker::PhantomData;

use crate::pad::{Alignment, CachePadded, Erg};
use crate::raw::{CpuId, KernelLock};
use crate::relax::{Relax, Spin};
use crate::shim::{fence, wait_hint, AtomicUsize, Ordering};

const GRANTED: usize = 0;
const PENDING: usize = 1;

/// log2 of a request slot's size (the slots are padded to a cache line), for the ARM
/// enqueue's address computation.
#[cfg(all(target_arch = "arm", target_has_atomic = "ptr", not(kernel_locks_loom)))]
const SLOT_SHIFT: u32 = {
    let size = core::mem::size_of::<CachePadded<AtomicUsize>>();
    assert!(size.is_power_of_two());
    size.trailing_zeros()
};

/// Per-CPU bookkeeping, only ever touched by its own CPU.
struct Node {
    /// The request slot this CPU owns (and enqueues next).
    myreq: AtomicUsize,
    /// The slot of our predecessor in the queue, valid while we wait or hold the lock.
    watch: AtomicUsize,
    /// Counts this CPU's enqueues; part of the tail tag.
    gen: AtomicUsize,
    /// How many CPUs the lock serves (`with_cpus`), the same in every node: a copy on each CPU's
    /// own line, so that the range check reads only that line. Never written
    /// after construction.
    cpus: usize,
}

/// The `N + 1` request slots: `N` then the spare, one contiguous run of equal cache lines
/// (`repr(C)`, and a `CachePadded`'s size is a multiple of its alignment, so there is no gap), so
/// that slot `i` is one address computation for every `i`, the spare included. Stable Rust cannot
/// write the type `[_; N + 1]`.
#[repr(C)]
struct Slots<const N: usize> {
    first: [CachePadded<AtomicUsize>; N],
    spare: CachePadded<AtomicUsize>,
}

impl<const N: usize> Slots<N> {
    /// Slot `index`, which must be at most `N`.
    ///
    /// Unchecked because every index the lock uses is a slot index by construction: `myreq`
    /// starts as the CPU's own number (`< N`) and is only ever replaced by a `watch`; `watch` and
    /// the tail's index bits only ever hold values of `myreq` (the tail starts at the spare, `N`).
    /// A bounds check would add a compare and a branch to each of the three slot accesses of a
    /// lock-unlock pair.
    #[inline(always)]
    fn get(&self, index: usize) -> &AtomicUsize {
        debug_assert!(
            index <= N,
            "ClhLock: slot index {index} beyond the spare {N}"
        );
        let first: *const CachePadded<AtomicUsize> = (self as *const Self).cast();
        // SAFETY: `index <= N` (see above). `Slots` is `repr(C)`: `first`'s `N` elements and then
        // `spare`, all of the same type, whose size is a multiple of its alignment, so element
        // `index` of a run of `N + 1` starting at `self` is `first[index]` or, for `N`, `spare`.
        // The pointer is derived from `&self` as a whole, so it may reach `spare`.
        unsafe { &*first.add(index) }
    }
}

/// A CLH queue lock for up to `N` CPUs; see the [module docs](self) for the algorithm.
///
/// `R` is the wait strategy, `A` the alignment of the whole lock (see [`Erg`]).
///
/// ```
/// use kernel_locks::{Backoff, ClhLock, KernelLock};
///
/// // Up to 8 CPUs at compile time; this machine booted with 4.
/// let lock: ClhLock<8, Backoff> = ClhLock::with_cpus(4);
/// lock.lock(3);
/// assert!(lock.is_locked());
/// assert!(!lock.try_lock(0), "FIFO queue lock: CPU 0 must wait for CPU 3");
/// // SAFETY: CPU 3 holds the lock.
/// unsafe { lock.unlock(3) };
/// assert!(lock.try_lock(0));
/// // SAFETY: CPU 0 holds the lock.
/// unsafe { lock.unlock(0) };
/// assert_eq!((lock.name(), lock.max_cpus()), ("clh", 4));
/// ```
#[repr(C)]
pub struct ClhLock<const N: usize, R: Relax = Spin, A: Alignment = Erg> {
    _align: [A; 0],
    /// Tagged index of the newest request slot.
    tail: CachePadded<AtomicUsize>,
    /// Request slots `0..=N`, contiguous.
    slots: Slots<N>,
    nodes: [CachePadded<Node>; N],
    _relax: PhantomData<fn() -> R>,
}

impl<const N: usize, R: Relax, A: Alignment> ClhLock<N, R, A> {
    /// Bits of the tail that hold the slot index (enough for `0..=N`).
    const INDEX_BITS: u32 = usize::BITS - N.leading_zeros();
    const INDEX_MASK: usize = (1 << Self::INDEX_BITS) - 1;
    const VALID: () = assert!(N >= 1 && N < (1 << 16), "ClhLock supports 1..65536 CPUs");

    maybe_const_fn! {
        /// A new, unlocked lock for CPUs `0..N`.
        pub fn new() -> Self {
            #[allow(clippy::let_unit_value)]
            let () = Self::VALID;
            let mut lock = Self {
                _align: [],
                tail: CachePadded::new(AtomicUsize::new(N)),
                slots: Slots {
                    first: array_init!(N, CachePadded::new(AtomicUsize::new(GRANTED))),
                    spare: CachePadded::new(AtomicUsize::new(GRANTED)),
                },
                nodes: array_init!(
                    N,
                    CachePadded::new(Node {
                        myreq: AtomicUsize::new(0),
                        watch: AtomicUsize::new(usize::MAX),
                        gen: AtomicUsize::new(0),
                        cpus: N,
                    })
                ),
                _relax: PhantomData,
            };
            // CPU `i` starts owning slot `i` (a loop: `array_init!` builds equal elements).
            let mut i = 0;
            while i < N {
                lock.nodes[i].get_mut().myreq = AtomicUsize::new(i);
                i += 1;
            }
            lock
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
                "ClhLock::with_cpus: the CPU count must be in 1..=N (the lock's compile-time bound)"
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

    /// The node of `cpu`, after the range check of `lock` and `try_lock` (against the run-time
    /// count, which this CPU's own node line holds).
    #[inline(always)]
    #[track_caller]
    fn node(&self, cpu: CpuId) -> &Node {
        match self.nodes.get(cpu) {
            Some(node) if cpu < node.cpus => node,
            _ => crate::raw::cpu_out_of_range("ClhLock", cpu, self.max_cpus()),
        }
    }

    /// Acquires the lock with `node`, the node of `cpu` (the body of `lock` and
    /// `lock_unchecked`, which differ in how they find the node).
    #[inline(always)]
    #[track_caller]
    fn lock_node(&self, node: &Node, cpu: CpuId) {
        // Debug builds: a CPU whose own slot is PENDING is queued or holds the lock already
        // (the state `unlock` checks); enqueueing again would wait for itself forever. The
        // slot is this CPU's own line, which `prepare` writes next.
        if cfg!(debug_assertions)
            && self
                .slot(node.myreq.load(Ordering::Relaxed))
                .load(Ordering::Relaxed)
                == PENDING
        {
            crate::raw::relocked("ClhLock", cpu);
        }
        let (_, tagged) = self.prepare(node);
        let (watch, first) = self.enqueue(tagged);
        node.watch.store(watch, Ordering::Relaxed);
        let watched = self.slot(watch);
        let mut relax = R::default();
        let mut state = match first {
            Some(state) => state,
            None => watched.load(Ordering::Relaxed),
        };
        // Relaxed polls: each reads the slot at or after the first read's place in its
        // coherence order (read-read coherence), so none goes back before the PENDING store.
        while state != GRANTED {
            relax.relax(cpu);
            wait_hint();
            state = watched.load(Ordering::Relaxed);
        }
        // Pairs with the predecessor's Release store of GRANTED.
        fence(Ordering::Acquire);
    }

    /// The state word of request slot `index` (`N` is the spare).
    #[inline(always)]
    fn slot(&self, index: usize) -> &AtomicUsize {
        self.slots.get(index)
    }

    /// Marks the slot of the CPU owning `node` pending and returns (slot, tail value that
    /// enqueues it).
    #[inline(always)]
    fn prepare(&self, node: &Node) -> (usize, usize) {
        let my = node.myreq.load(Ordering::Relaxed);
        // Relaxed: published by the Release half of the swap/compare-exchange that follows.
        self.slot(my).store(PENDING, Ordering::Relaxed);
        let gen = node.gen.load(Ordering::Relaxed).wrapping_add(1);
        node.gen.store(gen, Ordering::Relaxed);
        (my, (gen << Self::INDEX_BITS) | my)
    }

    /// Joins the queue: swaps `tagged` into the tail, and returns the predecessor's slot and,
    /// on ARM, a first read of its state that is not older than the predecessor's `PENDING`
    /// store (module documentation, "Memory orderings"); elsewhere the caller reads it (with
    /// the read here, the x86_64 kernel's IPC round trip is 9 instructions longer: register
    /// allocation around it).
    #[inline(always)]
    fn enqueue(&self, tagged: usize) -> (usize, Option<usize>) {
        #[cfg(all(target_arch = "arm", target_has_atomic = "ptr", not(kernel_locks_loom)))]
        {
            let (watch, state): (usize, usize);
            // SAFETY: a release barrier, then the `ldrex`/`strex` retry loop that swaps
            // `tagged` into `tail` (an atomic swap of the word this lock owns), then one load
            // of slot `prev & INDEX_MASK`, which is a slot of this lock: every tail value is a
            // tagged slot index (`prepare`, `new`), and `Slots` is `N + 1` contiguous padded
            // slots of `1 << SLOT_SHIFT` bytes from `slots`. No stack, no other memory.
            // Without `nomem` the compiler keeps every other access on its side of the block.
            //
            // Why assembly: the `dmb ish` after the swap that an `AcqRel` swap compiles to is
            // replaced by the address dependency from the swap's load to the slot's load (see
            // "Memory orderings"), which only holds if the compiler keeps the dependency; the
            // Rust memory model does not order a `Relaxed` load by its address, so the swap,
            // the mask and the load are one block the compiler cannot change.
            unsafe {
                core::arch::asm!(
                    "dmb ish",
                    "2:",
                    "ldrex {prev}, [{tail}]",
                    "strex {fail}, {new}, [{tail}]",
                    "cmp {fail}, #0",
                    "bne 2b",
                    "and {watch}, {prev}, {mask}",
                    "ldr {state}, [{slots}, {watch}, lsl #{shift}]",
                    tail = in(reg) self.tail.as_ptr(),
                    new = in(reg) tagged,
                    mask = in(reg) Self::INDEX_MASK,
                    slots = in(reg) (&self.slots as *const Slots<N>),
                    shift = const SLOT_SHIFT,
                    prev = out(reg) _,
                    fail = out(reg) _,
                    watch = out(reg) watch,
                    state = out(reg) state,
                    options(nostack),
                );
            }
            (watch, Some(state))
        }
        #[cfg(not(all(target_arch = "arm", target_has_atomic = "ptr", not(kernel_locks_loom))))]
        {
            // AcqRel: Release publishes our PENDING slot; Acquire orders the slot's reads after
            // the swap (x86: one `xchg` either way).
            let prev = self.tail.swap(tagged, Ordering::AcqRel);
            (prev & Self::INDEX_MASK, None)
        }
    }

    /// The number of the slot at the tail, and whether it is granted (the lock is free).
    #[inline(always)]
    fn tail_state(&self) -> (usize, bool) {
        // Acquire: see the PENDING store that preceded the enqueue which wrote this tail value.
        let tail = self.tail.load(Ordering::Acquire);
        // Acquire: if GRANTED, synchronise with the release that granted it (try_lock relies on
        // this to see the previous critical section).
        let granted = self.slot(tail & Self::INDEX_MASK).load(Ordering::Acquire) == GRANTED;
        (tail, granted)
    }
}

/// The panic of an unlock by a CPU that does not hold the lock, out of line. An id beyond the
/// run-time count (which `unlock` leaves to this path) is reported as out of range.
#[cold]
#[inline(never)]
#[track_caller]
fn not_holder(cpu: CpuId, cpus: usize) -> ! {
    if cpu >= cpus {
        crate::raw::cpu_out_of_range("ClhLock", cpu, cpus);
    }
    panic!("ClhLock: unlock by CPU {cpu}, which does not hold the lock");
}

impl<const N: usize, R: Relax, A: Alignment> Default for ClhLock<N, R, A> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: mutual exclusion follows from the CLH queue: a CPU enters only once its predecessor's
// slot is GRANTED, which its predecessor does only when leaving; every slot is enqueued by one CPU
// at a time (ownership moves on release). Acquire/Release as documented in the module docs.
// `is_locked` only loads.
unsafe impl<const N: usize, R: Relax, A: Alignment> KernelLock for ClhLock<N, R, A> {
    fn name(&self) -> &'static str {
        "clh"
    }

    fn max_cpus(&self) -> usize {
        self.nodes[0].cpus
    }

    // Always in line: a kernel's entry calls it once or twice, and as a call it costs a frame
    // and the callee-saved registers around a few instructions (with the inliner's plain hint,
    // ARMv7's in-line system call leaves it a call, +13 instructions per one-way).
    #[inline(always)]
    fn lock(&self, cpu: CpuId) {
        self.lock_node(self.node(cpu), cpu);
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn lock_unchecked(&self, cpu: CpuId) {
        debug_assert!(cpu < self.max_cpus(), "ClhLock: CPU id {cpu} out of range");
        // SAFETY: `cpu < max_cpus()` (the caller's contract), which is `nodes[0].cpus`, at
        // most `N` (`with_cpus` asserts it), the length of `nodes`.
        let node: &Node = unsafe { self.nodes.get_unchecked(cpu) };
        self.lock_node(node, cpu);
    }

    #[inline]
    fn try_lock(&self, cpu: CpuId) -> bool {
        let node = self.node(cpu);
        let (tail, granted) = self.tail_state();
        if !granted {
            return false;
        }
        let (my, tagged) = self.prepare(node);
        // AcqRel on success: publish our PENDING slot and acquire the tail's history. Relaxed on
        // failure: we leave without touching shared state.
        match self
            .tail
            .compare_exchange(tail, tagged, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => {
                node.watch.store(tail & Self::INDEX_MASK, Ordering::Relaxed);
                true
            }
            Err(_) => {
                // Not enqueued: nobody watches our slot; restore its idle state.
                self.slot(my).store(GRANTED, Ordering::Relaxed);
                false
            }
        }
    }

    // Always in line, as `lock`.
    #[inline(always)]
    unsafe fn unlock(&self, cpu: CpuId) {
        // Only the compile-time bound here: an id within `N` but beyond the run-time count never
        // got past `lock`, so its slot is GRANTED and the holder check below catches it (and
        // reports it as out of range).
        let Some(node) = self.nodes.get(cpu) else {
            crate::raw::cpu_out_of_range("ClhLock", cpu, self.max_cpus())
        };
        let slot = self.slot(node.myreq.load(Ordering::Relaxed));
        // Checked in every build: the slot is this CPU's own line, which the store below writes
        // anyway (one cached load and a predictable branch). A CPU that does not hold the lock
        // has its slot GRANTED, so a stray unlock, a double unlock, or an unlock naming another
        // CPU than the holder is caught before it hands a lock it does not own to a successor.
        if slot.load(Ordering::Relaxed) != PENDING {
            not_holder(cpu, node.cpus);
        }
        // Release: the critical section happens-before the successor's entry.
        slot.store(GRANTED, Ordering::Release);
        // Take over the predecessor's slot; it is ours alone from now on.
        node.myreq
            .store(node.watch.load(Ordering::Relaxed), Ordering::Relaxed);
        R::after_release();
    }

    #[inline]
    fn is_locked(&self) -> bool {
        !self.tail_state().1
    }
}

/// The queue nodes' count, `N`.
impl<const N: usize, R: Relax, A: Alignment> crate::raw::MaxCpus for ClhLock<N, R, A> {
    const MAX_CPUS: usize = N;
}

#[cfg(not(kernel_locks_loom))]
impl<const N: usize, R: Relax, A: Alignment> crate::raw::ConstInit for ClhLock<N, R, A> {
    const INIT: Self = Self::new();
}

impl<const N: usize, R: Relax, A: Alignment> core::fmt::Debug for ClhLock<N, R, A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ClhLock")
            .field("cpus", &self.max_cpus())
            .field("locked", &self.is_locked())
            .finish()
    }
}

/// The documented memory formula (module docs), checked at compile time on every target.
#[cfg(not(kernel_locks_loom))]
const _: () = {
    use crate::pad::CacheLine;
    use core::mem::size_of;
    const fn documented(n: usize) -> usize {
        let bytes = 2 * (n + 1) * CacheLine::BYTES;
        bytes.div_ceil(Erg::BYTES) * Erg::BYTES
    }
    assert!(size_of::<ClhLock<1>>() == documented(1));
    assert!(size_of::<ClhLock<4>>() == documented(4));
    assert!(size_of::<ClhLock<16>>() == documented(16));
    assert!(size_of::<ClhLock<64>>() == documented(64));
};

#[cfg(all(test, not(kernel_locks_loom)))]
mod tests {
    use super::*;
    use crate::pad::Align128;

    #[test]
    fn lock_unlock_and_try_lock_on_one_cpu() {
        let lock = ClhLock::<4>::new();
        assert!(!lock.is_locked());
        lock.lock(2);
        assert!(lock.is_locked());
        assert!(!lock.try_lock(1), "try_lock succeeded on a held lock");
        // SAFETY: CPU 2 holds it.
        unsafe { lock.unlock(2) };
        assert!(!lock.is_locked());
        assert!(lock.try_lock(1));
        // SAFETY: CPU 1 holds it.
        unsafe { lock.unlock(1) };
        // Many rounds on every CPU: slots migrate between CPUs.
        for round in 0..100 {
            let cpu = round % 4;
            lock.lock(cpu);
            // SAFETY: `cpu` holds it.
            unsafe { lock.unlock(cpu) };
        }
        assert!(!lock.is_locked());
    }

    #[test]
    fn the_whole_lock_is_aligned_to_a() {
        assert_eq!(core::mem::align_of::<ClhLock<2, Spin, Align128>>(), 128);
        assert!(core::mem::align_of::<ClhLock<2>>() >= core::mem::align_of::<CachePadded<u8>>());
    }

    #[test]
    fn const_construction() {
        static LOCK: ClhLock<8> = ClhLock::new();
        LOCK.lock(7);
        // SAFETY: CPU 7 holds it.
        unsafe { LOCK.unlock(7) };
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn memory_per_n_on_x86_64_is_as_documented() {
        use core::mem::size_of;
        assert_eq!(size_of::<ClhLock<1>>(), 512);
        assert_eq!(size_of::<ClhLock<4>>(), 1280);
        assert_eq!(size_of::<ClhLock<16>>(), 4352);
        assert_eq!(size_of::<ClhLock<64>>(), 16640);
    }

    #[test]
    fn with_cpus_narrows_the_ids_and_keeps_working() {
        let lock = ClhLock::<8>::with_cpus(3);
        assert_eq!(lock.max_cpus(), 3);
        for round in 0..30 {
            let cpu = round % 3;
            lock.lock(cpu);
            assert!(!lock.try_lock((cpu + 1) % 3));
            // SAFETY: `cpu` holds it.
            unsafe { lock.unlock(cpu) };
        }
        static AT_BOOT: ClhLock<8> = ClhLock::with_cpus(2);
        assert_eq!(AT_BOOT.max_cpus(), 2);
    }

    #[test]
    #[should_panic(expected = "ClhLock: CPU id 3 out of range (this lock supports CPUs 0..3)")]
    fn with_cpus_rejects_ids_beyond_the_count() {
        ClhLock::<8>::with_cpus(3).lock(3);
    }

    #[test]
    #[should_panic(expected = "ClhLock: CPU id 3 out of range (this lock supports CPUs 0..3)")]
    fn unlock_by_an_id_beyond_the_count_is_reported_as_out_of_range() {
        let lock = ClhLock::<8>::with_cpus(3);
        lock.lock(2);
        // SAFETY: deliberately violated (CPU 3 does not exist); every build must catch it.
        unsafe { lock.unlock(3) };
    }

    #[test]
    fn every_slot_the_spare_included_is_its_own_line_in_order() {
        let lock = ClhLock::<4>::new();
        let base = lock.slot(0) as *const AtomicUsize as usize;
        for i in 0..=4 {
            let at = lock.slot(i) as *const AtomicUsize as usize;
            assert_eq!(
                at - base,
                i * core::mem::size_of::<CachePadded<AtomicUsize>>()
            );
        }
        assert!(core::ptr::eq(lock.slot(4), &*lock.slots.spare));
        assert!(core::ptr::eq(lock.slot(3), &*lock.slots.first[3]));
    }

    #[test]
    #[should_panic(expected = "ClhLock::with_cpus: the CPU count must be in 1..=N")]
    fn with_cpus_beyond_n_panics() {
        let _ = ClhLock::<4>::with_cpus(5);
    }

    #[test]
    #[should_panic(expected = "ClhLock::with_cpus: the CPU count must be in 1..=N")]
    fn with_cpus_zero_panics() {
        let _ = ClhLock::<4>::with_cpus(0);
    }

    #[test]
    #[should_panic(expected = "CPU id 4 out of range")]
    fn cpu_out_of_range_panics() {
        ClhLock::<4>::new().lock(4);
    }

    #[test]
    #[should_panic(expected = "does not hold the lock")]
    fn unlock_without_lock_panics() {
        let lock = ClhLock::<2>::new();
        // SAFETY: deliberately violated; every build must catch it.
        unsafe { lock.unlock(0) };
    }
}
