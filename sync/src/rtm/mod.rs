//! Lock elision with Intel RTM over any fallback [`KernelLock`]: [`RtmLock`].
//!
//! A CPU that takes an [`RtmLock`] first tries to run the critical section as a hardware
//! transaction, without writing the lock: CPUs whose sections touch disjoint data then run in
//! parallel. Only when transactions keep aborting does it take the fallback lock (a ticket or CLH
//! lock in the kernel). This is the "RTM" kernel variant of the seL4 multicore paper and the
//! transactional IPC path of Fiasco.OC; the policy follows glibc's `elision-lock.c`, with oneTBB's
//! wait-before-retry.
//!
//! # Algorithm
//!
//! `lock(cpu)`:
//! 1. If the engine is not [`available`](TxEngine::available) (no RTM: AMD, TSX disabled, QEMU),
//!    or the policy allows no attempt, take the fallback lock. Done.
//! 2. Adaptive skip: if the lock's skip counter is positive, decrement it and take the fallback
//!    lock directly (counted as [`skipped`](RtmStats::skipped)).
//! 3. Up to [`max_attempts`](RtmPolicy::max_attempts) times: `XBEGIN`; inside the transaction read
//!    [`fallback.is_locked()`](KernelLock::is_locked) and `XABORT 0xff` if it is held; otherwise
//!    record "elided after k retries" in this CPU's slot and return, still inside the transaction.
//! 4. After an abort (the hardware has rolled everything back), count its [`AbortCause`] and apply
//!    [`RtmPolicy`]'s table: busy, conflict and retry-bit aborts wait until the fallback is free
//!    (spinning with the `R: Relax` strategy) and retry while attempts remain; capacity, debug,
//!    nested and unnamed aborts set the skip counter and take the fallback at once; busy aborts
//!    that exhaust the attempts set the skip counter too.
//! 5. Attempts exhausted: `fallback.lock(cpu)`.
//!
//! Waiting until the lock is free *before* every retry (oneTBB) avoids the lemming effect: while
//! one CPU holds the fallback, retrying at once would only abort again on the held lock word, and
//! CPUs that give up would all pile onto the fallback lock, which keeps it held and keeps everyone
//! else from eliding.
//!
//! `unlock(cpu)`: this CPU's slot says how it acquired. Elided: `XEND` commits, and only then are
//! the statistics updated. Fallback: `fallback.unlock(cpu)`. Then the deferred calls run.
//!
//! `try_lock(cpu)` makes at most one attempt (abort handled as "no attempts left"), then tries the
//! fallback with `try_lock`.
//!
//! # Why the lock word must be in the read set
//!
//! Transactions are atomic against each other and against single accesses, but a fallback holder
//! runs its critical section as many ordinary accesses. Without reading the lock word, a
//! transaction could run entirely between two accesses of a fallback holder (say between its
//! read and its write of a counter) and commit without any conflict: the holder then overwrites
//! the transaction's update. Reading the lock word inside the transaction means: if the lock is
//! held, the transaction sees it and aborts; if another CPU takes the lock later, its write to the
//! lock word conflicts with the transaction's read set and the hardware aborts the transaction.
//! A committed elided section therefore ran entirely while the fallback was free, which is what
//! makes it equivalent to holding the lock. (The test `elision_waits_for_a_fallback_holder` in
//! `tests/rtm.rs` and the loom model `htm_model_elision_against_a_fallback_holder` fail if the
//! check is removed.)
//!
//! For the same reason the fallback's `is_locked` must be a pure read ([`KernelLock`] guarantees
//! it): a write would put the lock word into the write set and make every pair of elided sections
//! conflict. Queue locks qualify because `is_locked` reads their tail or ticket words without
//! joining the queue. Nothing this lock writes shares a cache line with the fallback: the skip
//! counter and every per-CPU slot are padded.
//!
//! # Orderings
//!
//! * Inside a transaction no ordering is needed: a committed RTM region is atomic and ordered
//!   like a `LOCK`-prefixed instruction, and the `XBEGIN`/`XEND` `asm!` blocks are compiler memory
//!   barriers, so no access of the critical section leaves the transaction. A fallback holder's
//!   writes are seen by a later transaction because its release store of the lock word is ordered
//!   after them (x86-TSO) and the transaction read that word; a later fallback holder sees a
//!   committed transaction's writes because its acquiring write to the lock word can only happen
//!   after the commit (before it, it would have aborted the transaction). In C++-model terms the
//!   in-transaction `is_locked` read must be an acquire read: every x86 load is; a simulated
//!   engine's fallback must use `Acquire` there (the loom model checks it).
//! * The fallback path has the fallback lock's own `Acquire`/`Release` orderings.
//! * The skip counter is `Relaxed` load and store: a heuristic, read *before* `XBEGIN` so it is not
//!   in any read set; a lost decrement only changes how often elision is tried.
//! * Per-CPU slots (how this CPU acquired, whether it deferred calls, the deferred queue) and
//!   per-CPU counters are touched by their own CPU only (counters are also read by
//!   [`RtmLock::stats`]): `Relaxed`.
//! * The wait-before-retry loop reads `is_locked` racily: it is only a hint; correctness comes
//!   from the read inside the transaction.
//! * ARM has no RTM, so there every acquisition is the fallback path.
//!
//! # Statistics
//!
//! Counters live in each CPU's own padded slot and are written only outside transactions: after
//! `XEND` or after an abort. A write inside a transaction would put the counter line into the
//! write set (a [`stats`](RtmLock::stats) reader would then abort it) and would be rolled back on
//! abort anyway. See [`RtmStats`] (the shape of Table I of the transactional-IPC paper).
//!
//! # Deferred work
//!
//! Some operations abort every transaction (`MOV CR3`, segment loads, port and APIC I/O, `WRMSR`,
//! `CPUID`, `INVLPG`) or must not happen before the section is known to commit (sending an IPI,
//! acknowledging an interrupt). A critical section queues them with [`RtmLock::defer`]; `unlock`
//! runs them in FIFO order after the commit or after the fallback is released. On abort the
//! hardware rolls the queue back (and the lock clears it, for engines that cannot). This is safe
//! when the section cannot fail once it has decided to do them (the seL4 two-phase system call).
//!
//! # Availability: QEMU and machines without TSX
//!
//! QEMU's TCG does not implement RTM: `XBEGIN` raises #UD in a guest. Many CPUs lack TSX or have
//! it disabled by microcode. [`Rtm`] detects RTM with CPUID once (cached) and the lock asks the
//! engine before every acquisition, so a kernel can use `RtmLock` everywhere: without RTM it is
//! its fallback lock plus a few loads, and [`RtmStats::rtm_available`] says so. Never execute TSX
//! instructions without checking [`TxEngine::available`] first.
//!
//! # `is_locked`
//!
//! [`RtmLock::is_locked`](KernelLock::is_locked) is `fallback.is_locked()`: an elided section does
//! not write the lock, so it is invisible by design. Use [`RtmLock::is_elided`] for the calling
//! CPU's own view.

use core::fmt;
use core::marker::PhantomData;

use crate::pad::CachePadded;
use crate::raw::{check_cpu, cpu_out_of_range, CpuId, KernelLock, MaxCpus};
use crate::relax::{Relax, Spin};
use crate::shim::{wait_hint, AtomicU32, AtomicUsize, Ordering::Relaxed};

mod deferred;
mod engine;
mod policy;
mod stats;
#[cfg(feature = "testing")]
pub mod testing;

pub use deferred::{DeferFull, DEFER_CAPACITY};
pub use engine::{AbortCause, AbortStatus, Rtm, TxEngine};
pub use policy::RtmPolicy;
pub use stats::RtmStats;

use deferred::DeferQueue;
use stats::{cause_index, idx, CpuCounters};

// Atomic types the crate shim does not export.
#[cfg(not(kernel_locks_loom))]
use core::sync::atomic::AtomicPtr;
#[cfg(kernel_locks_loom)]
use loom::sync::atomic::AtomicPtr;

/// Per-CPU `mode`: this CPU does not hold the lock.
const FREE: usize = 0;
/// Per-CPU `mode`: holds the fallback lock after trying (or without RTM).
const FALLBACK: usize = 1;
/// Per-CPU `mode`: holds the fallback lock, taken directly because of the skip counter.
const SKIPPED: usize = 2;
/// Per-CPU `mode`: `ELIDED + k` = inside a transaction that started after `k` retries.
const ELIDED: usize = 3;
/// Flag in the per-CPU `mode`: the section deferred calls (set by [`RtmLock::defer`], cleared
/// with the mode at the release). With it, a release without deferred work that took the
/// fallback is recognised by one comparison (`mode == FALLBACK`), the only case on a machine
/// without RTM; every other case is out of line.
const DEFERRED: usize = 1 << (usize::BITS - 1);

/// What a CPU's own slot holds: how it acquired, and its deferred calls. Written inside
/// transactions, so it has its own cache line (nobody else reads it).
struct CpuState {
    mode: AtomicUsize,
    deferred: DeferQueue,
}

/// One CPU's slot and its counters, on separate cache lines: `stats()` on another CPU reads the
/// counters, which must not abort this CPU's transactions (that write `state`).
struct PerCpu {
    state: CachePadded<CpuState>,
    counters: CachePadded<CpuCounters>,
}

impl PerCpu {
    maybe_const_fn! {
        fn new() -> Self {
            Self {
                state: CachePadded::new(CpuState {
                    mode: AtomicUsize::new(FREE),
                    deferred: DeferQueue::new(),
                }),
                counters: CachePadded::new(CpuCounters::new()),
            }
        }
    }
}

/// What to do after an aborted attempt.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Next {
    /// Wait until the fallback is free, then try again.
    Retry,
    /// Take the fallback lock, after setting the skip counter to this value if non-zero.
    Fallback(u32),
}

/// Lock elision over the fallback lock `L`, for CPUs `0..N`, with wait strategy `R` for the
/// wait-before-retry loop and transaction engine `E` (default: the real [`Rtm`]; the others are
/// test engines). The parameters follow the crate's order: what the lock is made of (`L`, `N`),
/// the wait strategy, then the rest, so choosing `R` never means naming `E`.
///
/// See the [module docs](self) for the algorithm. Typical kernel use:
/// `RtmLock<TicketLock, MAX_CPUS>` or `RtmLock<ClhLock<MAX_CPUS>, MAX_CPUS>`. `N` sizes the
/// lock's own per-CPU slots; a fallback with a CPU bound of its own ([`MaxCpus`]: `ClhLock<N>`,
/// `McsLock<N>`, `BrLock<N>`) must have the same `N`, or the constructors do not compile:
///
/// ```compile_fail,E0080
/// use kernel_locks::{ClhLock, RtmLock};
///
/// // error: RtmLock<L, N>: N differs from the CPU count of the fallback lock L ...
/// static LOCK: RtmLock<ClhLock<2>, 4> = RtmLock::new(ClhLock::new());
/// ```
///
/// Without RTM (AMD, QEMU, TSX disabled) it behaves as `L` (plus statistics and deferred work).
///
/// ```
/// use kernel_locks::{ClhLock, KernelLock, RtmLock};
///
/// // Elision over a CLH fallback. On a machine without RTM every acquisition takes the CLH lock.
/// let lock: RtmLock<ClhLock<4>, 4> = RtmLock::new(ClhLock::new());
/// fn flush_tlb(_: usize) { /* work that would abort a transaction: runs after the release */ }
/// lock.lock(2);
/// lock.defer(2, flush_tlb, 0).expect("room in the deferred queue");
/// // SAFETY: CPU 2 holds the lock.
/// unsafe { lock.unlock(2) };
/// let stats = lock.stats();
/// assert_eq!(stats.total(), 1);
/// if !stats.rtm_available {
///     assert_eq!(stats.fallback, 1, "without RTM the lock is its fallback");
/// }
/// ```
pub struct RtmLock<L, const N: usize, R = Spin, E = Rtm> {
    fallback: L,
    engine: E,
    policy: RtmPolicy,
    /// Adaptive skip counter: acquisitions left that take the fallback without trying.
    skip: CachePadded<AtomicU32>,
    cpus: [PerCpu; N],
    _relax: PhantomData<fn() -> R>,
}

impl<L: KernelLock + MaxCpus, const N: usize, R: Relax> RtmLock<L, N, R, Rtm> {
    maybe_const_fn! {
        /// Elision with the real RTM engine over `fallback`, with the default [`RtmPolicy`].
        /// RTM is detected on first use.
        pub fn new(fallback: L) -> Self {
            #[allow(clippy::let_unit_value)]
            let () = Self::N_IS_THE_FALLBACKS_CPU_COUNT;
            Self::with_engine_and_policy(fallback, Rtm, RtmPolicy::DEFAULT)
        }
    }

    maybe_const_fn! {
        /// Elision with the real RTM engine over `fallback`, with `policy`.
        pub fn with_policy(fallback: L, policy: RtmPolicy) -> Self {
            #[allow(clippy::let_unit_value)]
            let () = Self::N_IS_THE_FALLBACKS_CPU_COUNT;
            Self::with_engine_and_policy(fallback, Rtm, policy)
        }
    }
}

impl<L: KernelLock + MaxCpus, const N: usize, E: TxEngine, R: Relax> RtmLock<L, N, R, E> {
    /// Evaluated by every constructor, each itself so that the error names the caller's line:
    /// `N` is the fallback's own CPU bound, where it has one ([`MaxCpus`]). A mismatch is a
    /// compile error, at the construction of a `static` or `const`, or when the constructor is
    /// instantiated (`cargo build`; `cargo check` does not instantiate) otherwise.
    const N_IS_THE_FALLBACKS_CPU_COUNT: () = assert!(
        L::MAX_CPUS == usize::MAX || L::MAX_CPUS == N,
        "RtmLock<L, N>: N differs from the CPU count of the fallback lock L (MaxCpus::MAX_CPUS, \
         such as ClhLock<N>'s N); give both the same count, as in RtmLock<ClhLock<4>, 4>"
    );

    maybe_const_fn! {
        /// Elision with `engine` over `fallback`, with the default [`RtmPolicy`].
        pub fn with_engine(fallback: L, engine: E) -> Self {
            #[allow(clippy::let_unit_value)]
            let () = Self::N_IS_THE_FALLBACKS_CPU_COUNT;
            Self::with_engine_and_policy(fallback, engine, RtmPolicy::DEFAULT)
        }
    }

    maybe_const_fn! {
        /// Elision with `engine` over `fallback`, with `policy`.
        pub fn with_engine_and_policy(fallback: L, engine: E, policy: RtmPolicy) -> Self {
            #[allow(clippy::let_unit_value)]
            let () = Self::N_IS_THE_FALLBACKS_CPU_COUNT;
            Self {
                fallback,
                engine,
                policy,
                skip: CachePadded::new(AtomicU32::new(0)),
                cpus: array_init!(N, PerCpu::new()),
                _relax: PhantomData,
            }
        }
    }
}

impl<L: KernelLock, const N: usize, E: TxEngine, R: Relax> RtmLock<L, N, R, E> {
    /// The fallback lock. Locking it directly is allowed (it makes eliding CPUs abort and wait).
    pub fn fallback(&self) -> &L {
        &self.fallback
    }

    /// The transaction engine.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// The policy.
    pub fn policy(&self) -> RtmPolicy {
        self.policy
    }

    /// The adaptive skip counter: how many of the next acquisitions take the fallback directly.
    pub fn skip_count(&self) -> u32 {
        self.skip.load(Relaxed)
    }

    /// Whether `cpu` holds the lock inside a transaction (its critical section is elided), as
    /// opposed to holding the fallback lock or not holding it at all.
    pub fn is_elided(&self, cpu: CpuId) -> bool {
        check_cpu("rtm", cpu, self.max_cpus());
        self.cpus[cpu].state.mode.load(Relaxed) & !DEFERRED >= ELIDED
    }

    /// Queues `f(arg)` to run on `cpu` right after it releases the lock (after the commit, or after
    /// releasing the fallback lock), in FIFO order with its other deferred calls.
    ///
    /// Call it inside the critical section, for operations that abort transactions or cannot be
    /// undone (CR3 loads, IPIs, interrupt acknowledgements). If the section's transaction aborts,
    /// the queued calls are dropped with it. At most [`DEFER_CAPACITY`] calls per section; beyond
    /// that it returns [`DeferFull`] and queues nothing (it never panics for that).
    ///
    /// # Panics
    /// If `cpu` does not hold the lock.
    #[track_caller]
    pub fn defer(&self, cpu: CpuId, f: fn(usize), arg: usize) -> Result<(), DeferFull> {
        check_cpu("rtm", cpu, self.max_cpus());
        let state = &self.cpus[cpu].state;
        let mode = state.mode.load(Relaxed);
        // Every build: a flag on a free mode would pass for a held lock.
        assert!(
            mode != FREE,
            "rtm: defer by CPU {cpu}, which does not hold the lock"
        );
        state.deferred.push(f, arg)?;
        // Our own slot (inside a transaction too: rolled back with the queue on abort).
        state.mode.store(mode | DEFERRED, Relaxed);
        Ok(())
    }

    /// The statistics, summed over all CPUs (a racy snapshot while CPUs use the lock).
    pub fn stats(&self) -> RtmStats {
        let mut stats = RtmStats {
            rtm_available: self.engine.available(),
            ..RtmStats::default()
        };
        for cpu in &self.cpus {
            stats.add(&cpu.counters);
        }
        stats
    }

    /// The statistics of one CPU (a racy snapshot while it uses the lock; exact when read by
    /// that CPU between its acquisitions, which is how a kernel's tracing takes the outcome of
    /// one critical section: the difference of two reads around it).
    ///
    /// # Panics
    /// If `cpu` is not below `N`.
    #[track_caller]
    pub fn cpu_stats(&self, cpu: CpuId) -> RtmStats {
        let mut stats = RtmStats {
            rtm_available: self.engine.available(),
            ..RtmStats::default()
        };
        stats.add(&self.cpus[cpu].counters);
        stats
    }

    /// Zeroes the statistics (meant for quiescent moments: a concurrent release may be counted
    /// before or after the reset). The skip counter is not statistics and is left alone.
    pub fn reset_stats(&self) {
        for cpu in &self.cpus {
            cpu.counters.reset();
        }
    }

    fn counters(&self, cpu: CpuId) -> &CpuCounters {
        &self.cpus[cpu].counters
    }

    /// Takes one acquisition from the skip counter if it is positive.
    #[inline]
    fn take_skip(&self) -> bool {
        let skip = self.skip.load(Relaxed);
        if skip == 0 {
            return false;
        }
        self.skip.store(skip - 1, Relaxed);
        true
    }

    /// One transaction attempt: `Ok` means this CPU now holds the lock inside a transaction.
    #[inline(always)]
    fn try_elide(&self, cpu: CpuId, retries: u32) -> Result<(), AbortStatus> {
        self.engine.begin()?;
        // Inside the transaction: this read puts the lock word into the read set (module docs).
        if self.fallback.is_locked() {
            // SAFETY: we started this transaction just above and no critical section runs in it.
            unsafe { self.engine.abort_busy() };
            // Only reached with an engine that cannot rewind; the hardware resumes in `begin`.
            return Err(AbortStatus::BUSY);
        }
        // A write to our own slot's line (nobody else reads it), rolled back on abort.
        self.cpus[cpu]
            .state
            .mode
            .store(ELIDED + retries as usize, Relaxed);
        Ok(())
    }

    /// Counts an abort (we run non-transactionally again) and decides what to do next.
    fn after_abort(&self, cpu: CpuId, status: AbortStatus, attempts_left: bool) -> Next {
        // The hardware rolled the queue back; an engine that cannot rewind did not.
        self.cpus[cpu].state.deferred.clear();
        let cause = status.cause();
        self.counters(cpu).bump(cause_index(cause));
        match cause {
            AbortCause::Busy | AbortCause::Conflict | AbortCause::Retry if attempts_left => {
                Next::Retry
            }
            AbortCause::Busy => Next::Fallback(self.policy.busy_skip),
            AbortCause::Conflict | AbortCause::Retry => Next::Fallback(0),
            AbortCause::Capacity | AbortCause::DebugNested | AbortCause::Other => {
                Next::Fallback(self.policy.abort_skip)
            }
        }
    }

    fn set_skip(&self, skip: u32) {
        if skip != 0 {
            self.skip.store(skip, Relaxed);
        }
    }

    /// Spins until the fallback lock looks free (a hint; see the module docs).
    fn wait_until_free(&self, cpu: CpuId) {
        let mut relax = R::default();
        while self.fallback.is_locked() {
            relax.relax(cpu);
            wait_hint();
        }
    }

    /// The rest of [`lock`](KernelLock::lock) when elision is on: the skip counter, then
    /// transaction attempts until one runs or the policy falls back.
    #[inline(never)]
    fn lock_eliding(&self, cpu: CpuId) {
        if self.take_skip() {
            return self.lock_fallback(cpu, SKIPPED);
        }
        let mut attempt = 0;
        loop {
            let Err(status) = self.try_elide(cpu, attempt) else {
                return; // inside the transaction
            };
            attempt += 1;
            match self.after_abort(cpu, status, attempt < self.policy.max_attempts) {
                Next::Retry => self.wait_until_free(cpu),
                Next::Fallback(skip) => {
                    self.set_skip(skip);
                    return self.lock_fallback(cpu, FALLBACK);
                }
            }
        }
    }

    #[inline]
    fn lock_fallback(&self, cpu: CpuId, mode: usize) {
        self.fallback.lock(cpu);
        self.cpus[cpu].state.mode.store(mode, Relaxed);
    }

    /// Whether elision is to be tried at all. The engine first: on a machine without RTM that
    /// one cached load decides, and the policy is not read.
    #[inline]
    fn eliding(&self) -> bool {
        self.engine.available() && self.policy.max_attempts > 0
    }

    /// The rest of [`unlock`](KernelLock::unlock): a skipped or elided acquisition, deferred
    /// calls, or a CPU that does not hold the lock (`mode` free: a panic in every build).
    ///
    /// # Safety
    /// As for [`KernelLock::unlock`]; `cpu` is in range of the slots and `mode` is its mode.
    #[inline(never)]
    #[track_caller]
    unsafe fn unlock_other(&self, cpu: CpuId, mode: usize) {
        let slot = &self.cpus[cpu];
        // Every build: the mode is loaded anyway to know how the lock was taken.
        assert!(
            mode != FREE,
            "rtm: unlock by CPU {cpu}, which does not hold the lock"
        );
        let counter = match mode & !DEFERRED {
            FREE => unreachable!("rtm: a free mode with the deferred flag"),
            FALLBACK | SKIPPED => {
                slot.state.mode.store(FREE, Relaxed);
                // SAFETY: `mode` says this CPU acquired the fallback (by `lock` or a successful
                // `try_lock`) and has not released it; the caller guarantees it holds our lock.
                unsafe { self.fallback.unlock(cpu) };
                if mode & !DEFERRED == FALLBACK {
                    idx::FALLBACK
                } else {
                    idx::SKIPPED
                }
            }
            elided => {
                debug_assert!(
                    self.engine.in_transaction(),
                    "rtm: CPU {cpu} elided but is not in a transaction"
                );
                // SAFETY: `lock`/`try_lock` started this transaction on this CPU, and the caller
                // guarantees that its critical section is over (it is unlocking).
                unsafe { self.engine.commit() };
                // Committed: nothing below is speculative any more.
                slot.state.mode.store(FREE, Relaxed);
                match elided - ELIDED {
                    0 => idx::DIRECT,
                    1 => idx::RETRY1,
                    2 => idx::RETRY2,
                    _ => idx::RETRY_MORE,
                }
            }
        };
        slot.counters.bump(counter);
        if mode & DEFERRED != 0 {
            slot.state.deferred.run();
        }
    }

    /// The fallback path of `lock` and `lock_unchecked` once `slot`, `cpu`'s, is found: the
    /// reentrance check (every build, as in `check_not_holding`), `take` (the fallback lock's
    /// acquisition), and the slot's record of the hold.
    #[inline(always)]
    #[track_caller]
    fn take_fallback(slot: &PerCpu, cpu: CpuId, take: impl FnOnce()) {
        assert!(
            slot.state.mode.load(Relaxed) == FREE,
            "rtm: CPU {cpu} locks a lock it already holds (locks are not reentrant)"
        );
        take();
        slot.state.mode.store(FALLBACK, Relaxed);
    }

    #[inline]
    #[track_caller]
    fn check_not_holding(&self, cpu: CpuId) {
        check_cpu("rtm", cpu, self.max_cpus());
        // Every build: this CPU's own padded slot, read before any transaction starts.
        assert!(
            self.cpus[cpu].state.mode.load(Relaxed) == FREE,
            "rtm: CPU {cpu} locks a lock it already holds (locks are not reentrant)"
        );
    }
}

// SAFETY: mutual exclusion: a CPU holds the lock either through the fallback (which excludes other
// fallback holders) or inside a transaction that read the fallback free and, by the `TxEngine`
// contract, commits only if no other CPU took the fallback or touched its data meanwhile; such a
// transaction is atomic, so it is equivalent to a section run under the fallback (module docs).
// Orderings: the fallback's, and the engine's for transactions. `is_locked` only reads.
unsafe impl<L: KernelLock, const N: usize, E: TxEngine, R: Relax> KernelLock
    for RtmLock<L, N, R, E>
{
    fn name(&self) -> &'static str {
        "rtm"
    }

    fn max_cpus(&self) -> usize {
        N.min(self.fallback.max_cpus())
    }

    // In line up to the elision decision, so that a machine without RTM (or a policy without
    // attempts) pays the fallback lock and a few loads in its caller; the transaction loop is
    // a call of its own. Always: the inliner's hint does not hold in the kernel's larger
    // system-call path (13 instructions per round trip under `-icount`).
    #[inline(always)]
    fn lock(&self, cpu: CpuId) {
        if !self.eliding() {
            // The slots' bound here; the fallback checks `cpu` against its own, which
            // `max_cpus` never exceeds, before anything is taken.
            let Some(slot) = self.cpus.get(cpu) else {
                cpu_out_of_range("rtm", cpu, self.max_cpus())
            };
            Self::take_fallback(slot, cpu, || self.fallback.lock(cpu));
            return;
        }
        self.check_not_holding(cpu);
        self.lock_eliding(cpu);
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn lock_unchecked(&self, cpu: CpuId) {
        if !self.eliding() {
            debug_assert!(cpu < self.max_cpus(), "rtm: CPU id {cpu} out of range");
            // SAFETY: `cpu < max_cpus()` (the caller's contract), at most `N`, the slots'
            // count.
            let slot = unsafe { self.cpus.get_unchecked(cpu) };
            // SAFETY: `cpu < max_cpus()`, at most the fallback's `max_cpus`.
            Self::take_fallback(slot, cpu, || unsafe { self.fallback.lock_unchecked(cpu) });
            return;
        }
        self.check_not_holding(cpu);
        self.lock_eliding(cpu);
    }

    fn try_lock(&self, cpu: CpuId) -> bool {
        self.check_not_holding(cpu);
        let mut mode = FALLBACK;
        if self.eliding() {
            if self.take_skip() {
                mode = SKIPPED;
            } else {
                match self.try_elide(cpu, 0) {
                    Ok(()) => return true,
                    Err(status) => {
                        // A single attempt: whatever the cause, no retry.
                        if let Next::Fallback(skip) = self.after_abort(cpu, status, false) {
                            self.set_skip(skip);
                        }
                    }
                }
            }
        }
        if self.fallback.try_lock(cpu) {
            self.cpus[cpu].state.mode.store(mode, Relaxed);
            true
        } else {
            false
        }
    }

    // Always in line, as `lock`: a call of its own costs 23 instructions per release in the
    // kernel's system-call path.
    #[inline(always)]
    unsafe fn unlock(&self, cpu: CpuId) {
        // The range check `lock` made, without recomputing the bound: a CPU in range of the
        // slots but not of the fallback never locked, so its mode is free (`unlock_other`
        // panics).
        let Some(slot) = self.cpus.get(cpu) else {
            cpu_out_of_range("rtm", cpu, self.max_cpus())
        };
        let mode = slot.state.mode.load(Relaxed);
        if mode == FALLBACK {
            // The fallback, nothing deferred (the flag would be set): every release without RTM.
            slot.state.mode.store(FREE, Relaxed);
            // SAFETY: `mode` says this CPU acquired the fallback (by `lock` or a successful
            // `try_lock`) and has not released it; the caller guarantees it holds our lock.
            unsafe { self.fallback.unlock(cpu) };
            slot.counters.bump(idx::FALLBACK);
            return;
        }
        // SAFETY: forwarded from our caller.
        unsafe { self.unlock_other(cpu, mode) };
    }

    fn is_locked(&self) -> bool {
        self.fallback.is_locked()
    }
}

/// The slots' count, `N`.
impl<L, const N: usize, R, E> MaxCpus for RtmLock<L, N, R, E> {
    const MAX_CPUS: usize = N;
}

#[cfg(not(kernel_locks_loom))]
impl<L: KernelLock + MaxCpus + crate::raw::ConstInit, const N: usize, R: Relax>
    crate::raw::ConstInit for RtmLock<L, N, R, Rtm>
{
    const INIT: Self = Self::new(L::INIT);
}

impl<L: KernelLock, const N: usize, E: TxEngine, R: Relax> fmt::Debug for RtmLock<L, N, R, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RtmLock")
            .field("fallback", &self.fallback.name())
            .field("rtm_available", &self.engine.available())
            .field("policy", &self.policy)
            .field("skip", &self.skip_count())
            .finish_non_exhaustive()
    }
}
