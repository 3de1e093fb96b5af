//! A big-reader lock: reading costs one store to a CPU-private line, writing visits every CPU.
//!
//! # Algorithm
//! Each of the `N` CPUs has a reader slot (0 or 1) on its own padded line, and there is one writer
//! word (0 when free, else the writing CPU's id + 1) on another line.
//!
//! * **Read lock** (CPU `c`): raise slot `c`; full fence; if the writer word is 0 we are in.
//!   Otherwise lower slot `c` again, wait until the writer word is 0, and retry. A reader touches
//!   only its own line and reads the writer word, which stays shared in every cache while no
//!   writer comes: readers never contend with each other.
//! * **Read unlock**: lower slot `c`.
//! * **Write lock**: claim the writer word with a CAS `0 -> c + 1` (waiting while another writer
//!   holds it), full fence, then wait until every reader slot is 0. New readers see the writer
//!   word and back off, so the lock prefers writers; readers can starve under a stream of writers.
//! * **Write unlock**: store 0 to the writer word.
//!
//! Writing costs O(N) line transfers, so this suits data that is read on every CPU all the time
//! and written rarely.
//!
//! # Why the fences cannot be dropped
//! Reader and writer each *store* to their own word and then *load* the other's: the classic
//! store-buffering pattern. Without a store-load barrier both loads may read the old 0 (x86
//! forwards a store to later loads of the same CPU from its store buffer, ARM reorders freely)
//! and a reader and a writer enter together. With a `SeqCst` fence between store and load on both
//! sides, the fences are totally ordered: whichever CPU fenced second sees the other's store (or
//! a later one), so at least one of them backs off. This is the one barrier of the read path
//! (as in concurrencykit's `ck_brlock`).
//!
//! # Memory orderings (and what they become on x86_64 / ARMv7)
//! * Reader raise: `slot.store(1, Relaxed)` (`mov`; `str`), ordered before the writer check by
//!   the next fence, which is all it needs.
//! * `fence(SeqCst)`: x86 `mfence` (or a locked instruction); ARMv7 `dmb ish`.
//! * Reader check: `writer.load(Acquire)` (`mov`; `ldr; dmb ish`). When it reads the 0 stored by
//!   the last write unlock it synchronises with it, so the last writer's critical section is
//!   visible to ours, and our critical section's accesses stay after the check.
//! * Reader lower in read unlock: `slot.store(0, Release)` (`mov`; `dmb ish; str`). A writer's
//!   acquire load that reads it synchronises with it, so our reads are done before the writer
//!   writes.
//! * Reader lower when backing off: also `slot.store(0, Release)`. A writer may read the slot's 0
//!   from *this* store rather than from the unlock of our previous read hold, so it must carry
//!   that earlier critical section's ordering. The `SeqCst` fence just before it already does
//!   (it is a release fence sequenced before the store, and an acquire load reading the store
//!   synchronises with the fence), so `Relaxed` would be enough; `Release` costs one more
//!   `dmb ish` on a path that waits for a writer anyway, and keeps the rule simple: every store
//!   of 0 to a slot is a release.
//! * Writer claim: `writer.compare_exchange_weak(0, c + 1, Acquire, Relaxed)` (`lock cmpxchg`;
//!   `ldrex`/`strex` loop then `dmb ish`): synchronises with the previous write unlock, so writers
//!   exclude each other as in any spin lock. Waiting polls with relaxed loads; only the CAS that
//!   wins needs to acquire.
//! * Writer drain: `slot.load(Acquire)` for every slot, until each reads 0 (`mov`;
//!   `ldr; dmb ish`): synchronises with the reader's release lowering (see above).
//! * Write unlock, and a failed `try_lock` giving the word back: `writer.store(0, Release)`
//!   (`mov`; `dmb ish; str`): publishes the critical section to the next writer (whose CAS
//!   acquires) and to readers (whose check acquires). The give-back has no critical section to
//!   publish, but the next writer may read its 0 instead of the previous holder's, so it must pass
//!   on the previous holder's ordering (which the giver acquired with its CAS); as for the
//!   reader's back-off, the fence before it would do that too, and `Release` keeps it obvious.
//! * `is_locked` and friends: relaxed loads only (racy snapshots).
//!
//! After every store that a waiter may be waiting for (write unlock, read unlock, either
//! back-off) the lock calls [`Relax::after_release`], so that `WFE` sleepers are woken: a writer
//! sleeping until a slot drains and a backed-off reader sleeping until the writer leaves would
//! otherwise wait for each other's event forever.
//!
//! # Rules
//! Neither side is reentrant: a CPU must not read-lock twice, nor write-lock while it reads (the
//! writer would wait for its own slot) or the reverse. Every build detects, at no cost on the
//! fast path (each check loads a line the operation writes next anyway): a read lock or write
//! lock by a CPU that already holds the lock shared, a read unlock by a CPU that holds no shared
//! hold (another CPU's, or a double unlock), and a write unlock by a CPU other than the writer
//! (the writer word names it). Debug builds also detect a lock by the CPU holding the write side.
//!
//! `try_lock` and `try_read_lock` fail whenever they meet the other side's flag, even one raised
//! only for an attempt, so two CPUs retrying them against each other in lockstep can livelock
//! (loom finds such schedules). Wait with `lock` / `read_lock`, or bound the retries.

//!
//! # Memory
//! A `BrLock<N>` has `N + 1` lines of its padding unit `A` (the writer line and `N` reader
//! slots): `size = (N + 1) x A`, 128 bytes per CPU on x86_64 and 32 on ARMv7 (Cortex-A9 lines).
//! [`BrLock::with_cpus`] narrows the CPUs in use, and the writer drains only their slots; the
//! memory stays that of `N`.
//!
//! | `N` | x86_64 (`A` = 128 B) | ARMv7 (`A` = 32 B) |
//! |-----|----------------------|--------------------|
//! | 4   | 640 B                | 160 B              |
//! | 16  | 2,176 B              | 544 B              |
//! | 64  | 8,320 B              | 2,080 B            |
//!
//! Checked at compile time on every target (the formula) and by a host test (x86_64).

use core::fmt;
use core::marker::PhantomData;

use crate::pad::{Alignment, CacheLine, Padded};
use crate::raw::{check_cpu, cpu_out_of_range, CpuId, KernelLock, KernelRwLock};
use crate::relax::{Relax, Spin};
use crate::shim::{fence, AtomicUsize, Ordering};

/// A big-reader lock for CPUs `0..N`; see the [module documentation](self).
///
/// The [`KernelLock`] operations are the write (exclusive) side, the [`KernelRwLock`] ones the
/// read side. `R` is the wait strategy of both sides, `A` the padding unit of every slot.
///
/// ```
/// use kernel_locks::{BrLock, KernelLock, KernelRwLock};
///
/// let lock = BrLock::<4>::new();
/// lock.read_lock(0); // readers touch only their own slot...
/// lock.read_lock(1); // ...so they never wait for each other
/// assert!(!lock.try_lock(2), "a writer must wait for the readers to drain");
/// // SAFETY: CPUs 0 and 1 hold the lock shared.
/// unsafe {
///     lock.read_unlock(0);
///     lock.read_unlock(1);
/// }
/// lock.lock(2); // the write side: KernelLock's operations
/// assert!(lock.is_write_locked() && !lock.try_read_lock(3));
/// // SAFETY: CPU 2 holds the write side.
/// unsafe { lock.unlock(2) };
/// ```
pub struct BrLock<const N: usize, R: Relax = Spin, A: Alignment = CacheLine> {
    /// The writer word and the CPU count, on one line.
    writer: Padded<WriterLine, A>,
    /// Slot `c` is 1 while CPU `c` holds the lock shared (or is trying to get it). Only slots
    /// `0..cpus` are ever used.
    readers: [Padded<AtomicUsize, A>; N],
    /// The wait strategy is only a type; `fn() -> R` keeps the lock `Send + Sync` whatever `R` is.
    _relax: PhantomData<fn() -> R>,
}

/// The line every operation reads: the writer word, and the CPU count that the range check of
/// every operation and the writer's drain loop need. Readers read this line anyway (the writer
/// check), writers claim it, so the count costs no extra line.
struct WriterLine {
    /// 0 when no writer holds or claims the lock, else the writer's CPU id + 1.
    word: AtomicUsize,
    /// CPUs `0..cpus` may use the lock (`with_cpus`); never written after construction.
    cpus: usize,
}

impl<const N: usize, R: Relax, A: Alignment> BrLock<N, R, A> {
    maybe_const_fn! {
        /// An unlocked lock for CPUs `0..N` (`N` must be at least 1).
        pub fn new() -> Self {
            const { assert!(N > 0, "BrLock needs at least one CPU") };
            Self::build(N)
        }
    }

    maybe_const_fn! {
        /// An unlocked lock for CPUs `0..cpus`, a core count learnt at boot, up to the
        /// compile-time bound `N`. Ids from `cpus` on panic, and the writer drains only the slots
        /// of CPUs `0..cpus`. The memory is still that of `N` CPUs (see the
        /// [module docs](self#memory)).
        ///
        /// # Panics
        /// Unless `1 <= cpus <= N`.
        #[track_caller]
        pub fn with_cpus(cpus: usize) -> Self {
            assert!(
                cpus >= 1 && cpus <= N,
                "BrLock::with_cpus: the CPU count must be in 1..=N (the lock's compile-time bound)"
            );
            Self::build(cpus)
        }
    }

    maybe_const_fn! {
        /// An unlocked lock for CPUs `0..cpus` (`1 <= cpus <= N`, checked by the callers).
        fn build(cpus: usize) -> Self {
            Self {
                writer: Padded::new(WriterLine {
                    word: AtomicUsize::new(0),
                    cpus,
                }),
                readers: array_init!(N, Padded::new(AtomicUsize::new(0))),
                _relax: PhantomData,
            }
        }
    }

    /// The reader slots of the CPUs in use (`0..cpus`).
    #[inline(always)]
    fn slots(&self) -> &[Padded<AtomicUsize, A>] {
        &self.readers[..self.writer.cpus]
    }

    /// Whether a writer holds the lock or has claimed it and waits for readers to drain.
    /// A racy snapshot.
    pub fn is_write_locked(&self) -> bool {
        self.writer.word.load(Ordering::Relaxed) != 0
    }

    /// Whether some CPU holds the lock shared (or is trying to get it). A racy snapshot.
    pub fn is_read_locked(&self) -> bool {
        self.slots()
            .iter()
            .any(|slot| slot.load(Ordering::Acquire) != 0)
    }

    /// Whether `cpu`'s reader slot is raised: it holds the read side or is trying to get it
    /// (a waiting writer does not raise it). Acquire: a lowered slot read here was lowered by
    /// `cpu`'s last read unlock (release), so its read-side section happens-before what the
    /// caller does next. For a kernel's handshake with a reader (store, `SeqCst` fence, then
    /// this load, against the read side's slot store and fence): either the reader's later
    /// loads see the caller's store or this sees the slot raised. An id out of range reads as
    /// not reading.
    pub fn is_reading(&self, cpu: CpuId) -> bool {
        self.readers
            .get(cpu)
            .is_some_and(|slot| slot.load(Ordering::Acquire) != 0)
    }

    /// Panics if `cpu` already holds the lock in any mode, which would deadlock (write side) or
    /// corrupt its slot (read side). The reader-slot check runs in every build: the slot is
    /// `cpu`'s own line, which the read side writes next anyway. The writer-word check is
    /// debug-only: loading the shared writer word before claiming it would cost a writer an
    /// extra coherence transaction.
    #[inline(always)]
    #[track_caller]
    fn check_not_held(&self, cpu: CpuId, side: &str) {
        // Relaxed: only `cpu` writes its own slot, and the writer word is `cpu + 1` only if `cpu`
        // wrote it; our own earlier stores are visible to us.
        if self.readers[cpu].load(Ordering::Relaxed) != 0 {
            already_reading(cpu, side);
        }
        if cfg!(debug_assertions) && self.writer.word.load(Ordering::Relaxed) == cpu + 1 {
            self_writer(cpu, side);
        }
    }

    /// [`read_lock`](KernelRwLock::read_lock) for a caller that never takes the read side twice
    /// on one CPU: the CPU range check stays, the check that `cpu` does not hold the lock
    /// already runs in debug builds only. For a kernel whose entries take the read side once
    /// each and that already rejects a nested entry on a core (this project's kernel checks a
    /// per-core in-kernel flag at every entry): there the check repeated the entry's (a load,
    /// a compare and a branch per entry).
    ///
    /// Nested use without the check corrupts the CPU's slot: the inner `read_unlock` lowers
    /// it while the outer hold continues, and a writer can then enter beside it.
    ///
    /// ```
    /// use kernel_locks::{BrLock, KernelLock, KernelRwLock};
    ///
    /// let lock = BrLock::<2>::new();
    /// lock.read_lock_unnested(1);
    /// assert!(!lock.try_lock(0), "a writer got in beside a reader");
    /// // SAFETY: CPU 1 holds the lock shared.
    /// unsafe { lock.read_unlock(1) };
    /// assert!(lock.try_lock(0));
    /// // SAFETY: CPU 0 holds the write side.
    /// unsafe { lock.unlock(0) };
    /// ```
    ///
    /// # Panics
    /// If `cpu` is out of range; in debug builds also if `cpu` holds the lock already.
    #[inline(always)]
    #[track_caller]
    pub fn read_lock_unnested(&self, cpu: CpuId) {
        check_cpu("BrLock", cpu, self.writer.cpus);
        if cfg!(debug_assertions) {
            self.check_not_held(cpu, "read");
        }
        self.read_slot(cpu);
    }

    /// [`read_lock_unnested`](Self::read_lock_unnested) for a caller that checked `cpu`
    /// against [`max_cpus`](KernelLock::max_cpus) itself (a kernel checks its core index once
    /// per entry): no range check (debug builds keep it).
    ///
    /// # Safety
    /// `cpu < self.max_cpus()`, and as for `read_lock_unnested`, `cpu` does not hold the lock.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn read_lock_unnested_unchecked(&self, cpu: CpuId) {
        if cfg!(debug_assertions) {
            check_cpu("BrLock", cpu, self.writer.cpus);
            self.check_not_held(cpu, "read");
        }
        // SAFETY: `cpu < max_cpus()` (the caller's contract), which is `writer.cpus`, at most
        // `N` (`with_cpus` asserts it), the length of `readers`.
        let slot = unsafe { self.readers.get_unchecked(cpu) };
        self.read_slot_at(slot, cpu);
    }

    /// [`read_unlock`](KernelRwLock::read_unlock) for the caller of
    /// [`read_lock_unnested`](Self::read_lock_unnested): the same release store, without the
    /// check that `cpu`'s slot is raised (in debug builds it stays). For a kernel whose every
    /// entry leaves the read side once, in the code that entered it: there the check read the
    /// slot the store then writes (a load, a compare and a branch per entry, on both
    /// architectures).
    ///
    /// ```
    /// use kernel_locks::{BrLock, KernelLock};
    ///
    /// let lock = BrLock::<2>::new();
    /// lock.read_lock_unnested(0);
    /// // SAFETY: CPU 0 holds the read side, taken above and released once.
    /// unsafe { lock.read_unlock_unnested(0) };
    /// assert!(lock.try_lock(1), "the reader's slot stayed raised");
    /// // SAFETY: CPU 1 holds the write side.
    /// unsafe { lock.unlock(1) };
    /// ```
    ///
    /// # Safety
    /// `cpu` holds the read side, and releases it once. A stray call lowers a slot that
    /// another hold of the same CPU still needs, and a writer may then enter beside it.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn read_unlock_unnested(&self, cpu: CpuId) {
        // SAFETY: forwarded contract. Release, as in `read_unlock`.
        unsafe { self.lower_slot(cpu, Ordering::Release) }
    }

    /// [`read_unlock_unnested`](Self::read_unlock_unnested) for a caller that has executed
    /// `fence(Release)` (or a stronger fence) after its read-side section: a relaxed store, so
    /// that the read side's release and other locks' share one barrier (ARMv7: no `dmb`
    /// here). The writer's acquire load of the slot that reads 0 synchronises with the fence.
    ///
    /// # Safety
    /// As for `read_unlock_unnested`, and `cpu` executed a release fence after its last access
    /// of the section.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn read_unlock_unnested_fenced(&self, cpu: CpuId) {
        // SAFETY: forwarded contract. Relaxed: the caller's release fence orders the section
        // before the store.
        unsafe { self.lower_slot(cpu, Ordering::Relaxed) }
    }

    /// Lowers `cpu`'s reader slot with `order` (the unnested releases; debug builds check
    /// that the slot was raised).
    ///
    /// # Safety
    /// `cpu` holds the read side, taken by a read-lock call that range-checked it.
    #[inline(always)]
    #[track_caller]
    unsafe fn lower_slot(&self, cpu: CpuId, order: Ordering) {
        if cfg!(debug_assertions) && self.readers[cpu].load(Ordering::Relaxed) == 0 {
            check_cpu("BrLock", cpu, self.writer.cpus);
            not_reader(cpu);
        }
        // SAFETY: `cpu` holds the read side (the caller's contract), so the read-lock call
        // that took it range-checked `cpu` against `writer.cpus`, which is at most `N`
        // (`with_cpus` asserts it).
        let slot = unsafe { self.readers.get_unchecked(cpu) };
        slot.store(0, order);
        R::after_release();
    }

    /// Raises `cpu`'s slot once no writer holds or claims the lock (the checks are the
    /// caller's).
    #[inline(always)]
    #[track_caller]
    fn read_slot(&self, cpu: CpuId) {
        self.read_slot_at(&self.readers[cpu], cpu);
    }

    /// [`read_slot`](Self::read_slot) with `cpu`'s slot found.
    #[inline(always)]
    #[track_caller]
    fn read_slot_at(&self, slot: &AtomicUsize, cpu: CpuId) {
        if !self.read_attempt(slot) {
            self.read_slot_contended(slot, cpu);
        }
    }

    /// The rest of [`read_slot_at`](Self::read_slot_at) after a failed attempt, out of line:
    /// waits for the writer to leave and tries again.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn read_slot_contended(&self, slot: &AtomicUsize, cpu: CpuId) {
        let mut relax = R::default();
        loop {
            // Relaxed polling; the next attempt's acquire load does the synchronising.
            loop {
                match self.writer.word.load(Ordering::Relaxed) {
                    0 => break,
                    // In every build, at no cost to the uncontended path: only a failed
                    // attempt gets here. The word is `cpu + 1` only if `cpu` wrote it, so the
                    // writer this reader would wait for is itself.
                    w if w == cpu + 1 => self_writer(cpu, "read"),
                    _ => {}
                }
                crate::shim::wait_hint();
                relax.relax(cpu);
            }
            if self.read_attempt(slot) {
                return;
            }
        }
    }

    /// One read attempt: raise our slot, fence, check the writer word. On failure the slot is
    /// lowered again (and waiters woken) and `false` returned.
    #[inline]
    fn read_attempt(&self, slot: &AtomicUsize) -> bool {
        // Relaxed: ordered before the writer check by the fence.
        slot.store(1, Ordering::Relaxed);
        // The store-load barrier (see the module documentation): ARMv7 `dmb ish`, x86 `mfence`.
        fence(Ordering::SeqCst);
        // Acquire: synchronises with the last write unlock; keeps our critical section after it.
        if self.writer.word.load(Ordering::Acquire) == 0 {
            return true;
        }
        // A writer holds or claims the lock: back off. Release (the fence above would already do),
        // see the module documentation.
        slot.store(0, Ordering::Release);
        R::after_release();
        false
    }
}

/// The panic of a lock call by a CPU that already holds the lock shared, out of line.
#[cold]
#[inline(never)]
#[track_caller]
fn already_reading(cpu: CpuId, side: &str) -> ! {
    panic!("BrLock: CPU {cpu} {side}-locked a lock it already holds shared");
}

/// The panic of a CPU that waits for the write side it holds itself, out of line.
#[cold]
#[inline(never)]
#[track_caller]
fn self_writer(cpu: CpuId, side: &str) -> ! {
    panic!("BrLock: CPU {cpu} {side}-locked a lock it already holds for writing");
}

/// The panic of a write unlock by a CPU that does not hold the write lock, out of line.
#[cold]
#[inline(never)]
#[track_caller]
fn not_writer(cpu: CpuId, owner: usize) -> ! {
    match owner.checked_sub(1) {
        None => panic!("BrLock: unlock by CPU {cpu} of a lock that is not write-held"),
        Some(owner) => {
            panic!("BrLock: unlock by CPU {cpu}, but CPU {owner} holds the write lock")
        }
    }
}

/// The panic of a read unlock by a CPU that holds no shared hold, out of line.
#[cold]
#[inline(never)]
#[track_caller]
fn not_reader(cpu: CpuId) -> ! {
    panic!("BrLock: read_unlock by CPU {cpu}, which does not hold the lock shared");
}

impl<const N: usize, R: Relax, A: Alignment> Default for BrLock<N, R, A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize, R: Relax, A: Alignment> fmt::Debug for BrLock<N, R, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let writer = self.writer.word.load(Ordering::Relaxed);
        let readers = self
            .slots()
            .iter()
            .filter(|s| s.load(Ordering::Relaxed) != 0)
            .count();
        f.debug_struct("BrLock")
            .field("cpus", &self.writer.cpus)
            .field("writer", &writer.checked_sub(1))
            .field("readers", &readers)
            .finish()
    }
}

/// The reader slots' count, `N`.
impl<const N: usize, R: Relax, A: Alignment> crate::raw::MaxCpus for BrLock<N, R, A> {
    const MAX_CPUS: usize = N;
}

#[cfg(not(kernel_locks_loom))]
impl<const N: usize, R: Relax, A: Alignment> crate::raw::ConstInit for BrLock<N, R, A> {
    const INIT: Self = Self::new();
}

// SAFETY: writers exclude each other through the CAS on the writer word (acquire) and its release
// store; a writer and a reader exclude each other through the store / SeqCst fence / load pattern
// on both sides (module documentation), with acquire loads reading the other side's release
// stores for ordering. `is_locked` only loads.
unsafe impl<const N: usize, R: Relax, A: Alignment> KernelLock for BrLock<N, R, A> {
    fn name(&self) -> &'static str {
        "brlock"
    }

    fn max_cpus(&self) -> usize {
        self.writer.cpus
    }

    fn lock(&self, cpu: CpuId) {
        check_cpu("BrLock", cpu, self.writer.cpus);
        self.check_not_held(cpu, "write");
        let mut relax = R::default();
        // Acquire on success: synchronises with the previous write unlock. Polling is relaxed.
        while self
            .writer
            .word
            .compare_exchange_weak(0, cpu + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            loop {
                match self.writer.word.load(Ordering::Relaxed) {
                    0 => break,
                    // Every build, only on the contended path (as for readers).
                    w if w == cpu + 1 => self_writer(cpu, "write"),
                    _ => {}
                }
                crate::shim::wait_hint();
                relax.relax(cpu);
            }
        }
        // The writer's store-load barrier: our claim is visible before we read the slots.
        fence(Ordering::SeqCst);
        for slot in self.slots() {
            // Acquire: synchronises with the reader's release lowering.
            while slot.load(Ordering::Acquire) != 0 {
                crate::shim::wait_hint();
                relax.relax(cpu);
            }
        }
    }

    fn try_lock(&self, cpu: CpuId) -> bool {
        check_cpu("BrLock", cpu, self.writer.cpus);
        // Strong CAS: a free writer word is never reported busy spuriously.
        if self
            .writer
            .word
            .compare_exchange(0, cpu + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        fence(Ordering::SeqCst);
        if self
            .slots()
            .iter()
            .all(|slot| slot.load(Ordering::Acquire) == 0)
        {
            return true;
        }
        // Readers are in: give the word back. Release passes on the previous writer's ordering
        // (see the module documentation).
        self.writer.word.store(0, Ordering::Release);
        R::after_release();
        false
    }

    unsafe fn unlock(&self, cpu: CpuId) {
        check_cpu("BrLock", cpu, self.writer.cpus);
        // Checked in every build: the writer word already names its owner, and the holder has
        // its line (it is about to store to it), so this is one cached load and a branch.
        // Relaxed: if `cpu` holds the lock, it wrote this value itself.
        let owner = self.writer.word.load(Ordering::Relaxed);
        if owner != cpu + 1 {
            not_writer(cpu, owner);
        }
        // Release: publishes the critical section to the next writer and to readers.
        self.writer.word.store(0, Ordering::Release);
        R::after_release();
    }

    /// Whether the lock is held **in any mode**: a writer holds or claims it, or a reader slot is
    /// raised. This is the predicate lock elision needs: a transaction that elides the write side
    /// must also conflict with readers, which it does by having every slot in its read set (a
    /// reader's raise then aborts it). See [`is_write_locked`](BrLock::is_write_locked) and
    /// [`is_read_locked`](BrLock::is_read_locked) for either side alone.
    fn is_locked(&self) -> bool {
        self.is_write_locked() || self.is_read_locked()
    }
}

// SAFETY: see the `KernelLock` impl: readers and writers exclude each other; readers may overlap.
unsafe impl<const N: usize, R: Relax, A: Alignment> KernelRwLock for BrLock<N, R, A> {
    fn read_lock(&self, cpu: CpuId) {
        check_cpu("BrLock", cpu, self.writer.cpus);
        self.check_not_held(cpu, "read");
        self.read_slot(cpu);
    }

    fn try_read_lock(&self, cpu: CpuId) -> bool {
        check_cpu("BrLock", cpu, self.writer.cpus);
        self.check_not_held(cpu, "read");
        self.read_attempt(&self.readers[cpu])
    }

    unsafe fn read_unlock(&self, cpu: CpuId) {
        // Only the compile-time bound in line (as `ClhLock::unlock`): an id within `N` but
        // beyond the run-time count never got past `read_lock`, so its slot is 0 and the reader
        // check below catches it, and reports it as out of range. One load, compare and branch
        // fewer than a range check here.
        let Some(slot) = self.readers.get(cpu) else {
            cpu_out_of_range("BrLock", cpu, self.writer.cpus)
        };
        // Relaxed: only `cpu` writes its slot. Checked in every build (its own line, written
        // next): catches a read unlock by a CPU other than the reader, and a double unlock.
        if slot.load(Ordering::Relaxed) == 0 {
            check_cpu("BrLock", cpu, self.writer.cpus);
            not_reader(cpu);
        }
        // Release: our critical section's reads are done before a writer that sees 0 writes.
        slot.store(0, Ordering::Release);
        R::after_release();
    }

    fn is_write_locked(&self) -> bool {
        // The inherent method (inherent methods take precedence over trait ones).
        BrLock::is_write_locked(self)
    }
}

/// The documented memory formula (module docs), checked at compile time on every target.
#[cfg(not(kernel_locks_loom))]
const _: () = {
    use core::mem::size_of;
    assert!(size_of::<BrLock<4>>() == 5 * CacheLine::BYTES);
    assert!(size_of::<BrLock<16>>() == 17 * CacheLine::BYTES);
    assert!(size_of::<BrLock<64>>() == 65 * CacheLine::BYTES);
};
