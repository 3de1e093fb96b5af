//! Simulated transaction engines, for tests of [`RtmLock`] and of code built on it
//! (the kernel's tests reuse them), on machines without RTM and under loom.
//!
//! * [`ScriptedEngine`]: `begin` returns the next entry of a script, to drive every abort path
//!   deterministically. It gives **no isolation**, so constructing one that can start a
//!   transaction is `unsafe`.
//! * [`HtmModel`] with [`model_lock`]: an engine and a fallback lock that share one word, so that
//!   elided sections really exclude each other and the fallback holder: a coarse but faithful
//!   model of hardware transactions (transactions are serialised, and taking the fallback lock
//!   waits until no transaction runs, which is one of the serialisations real hardware allows).
//!   Safe to use with real threads and under loom.
//!
//! A simulation cannot rewind: an abort can only happen in `begin` (or as the busy abort right
//! after it), never in the middle of a critical section that already returned from `lock`.

use core::ops::Deref;

use super::engine::{AbortStatus, TxEngine};
use super::{RtmLock, RtmPolicy};
use crate::raw::{CpuId, KernelLock};
use crate::relax::Relax;
use crate::shim::{wait_hint, AtomicUsize, Ordering::*};

/// One scripted outcome of `begin`: `Ok(())` starts a (simulated) transaction.
pub type Step = Result<(), AbortStatus>;

/// A conflict abort with the retry bit, as the hardware reports a data conflict.
pub const CONFLICT: AbortStatus =
    AbortStatus::from_bits(AbortStatus::CONFLICT | AbortStatus::RETRY);
/// A capacity abort.
pub const CAPACITY: AbortStatus = AbortStatus::from_bits(AbortStatus::CAPACITY);
/// An abort with only the retry bit.
pub const RETRY: AbortStatus = AbortStatus::from_bits(AbortStatus::RETRY);
/// An abort with no cause bit (an interrupt, say).
pub const UNNAMED: AbortStatus = AbortStatus::from_bits(0);

/// An engine whose `begin` calls return the entries of a script in order, then `then` forever.
///
/// The script is shared by all CPUs using the engine (one global call order). `abort_busy` and
/// `commit` return normally and are counted. [`in_transaction`](TxEngine::in_transaction) is true
/// while any simulated transaction is open (the engine does not know CPUs).
#[derive(Debug)]
pub struct ScriptedEngine<'a> {
    available: bool,
    script: &'a [Step],
    then: Step,
    next: AtomicUsize,
    open: AtomicUsize,
    commits: AtomicUsize,
    busy_aborts: AtomicUsize,
}

impl<'a> ScriptedEngine<'a> {
    fn build(available: bool, script: &'a [Step], then: Step) -> Self {
        Self {
            available,
            script,
            then,
            next: AtomicUsize::new(0),
            open: AtomicUsize::new(0),
            commits: AtomicUsize::new(0),
            busy_aborts: AtomicUsize::new(0),
        }
    }

    /// An engine whose `begin` calls return `script[0]`, `script[1]`, ..., then `then` forever.
    ///
    /// # Safety
    /// A scripted `Ok(())` gives no isolation at all. The caller must make sure that while a CPU
    /// runs a section elided through this engine, no other CPU runs a critical section of the same
    /// lock (elided or not) that touches the same data; for instance by running one CPU at a time,
    /// or by scripts that never return `Ok(())` when several CPUs may contend.
    pub unsafe fn new(script: &'a [Step], then: Step) -> Self {
        Self::build(true, script, then)
    }

    /// An engine whose `begin` calls only ever abort: the script entries must all be `Err`.
    /// Safe, since no transaction ever starts.
    ///
    /// # Panics
    /// If an entry of `script` is `Ok`.
    pub fn aborting(script: &'a [Step], then: AbortStatus) -> Self {
        assert!(
            script.iter().all(Result::is_err),
            "ScriptedEngine::aborting: script contains Ok"
        );
        Self::build(true, script, Err(then))
    }

    /// An engine that is not available: the lock never calls `begin` and always takes the
    /// fallback, as on a CPU without RTM.
    pub fn unavailable() -> Self {
        Self::build(false, &[], Err(UNNAMED))
    }

    /// How many times `begin` was called.
    pub fn begins(&self) -> usize {
        self.next.load(Relaxed)
    }

    /// How many simulated transactions were committed.
    pub fn commits(&self) -> usize {
        self.commits.load(Relaxed)
    }

    /// How many simulated transactions were aborted by `abort_busy`.
    pub fn busy_aborts(&self) -> usize {
        self.busy_aborts.load(Relaxed)
    }

    /// Closes one open transaction; whether there was one.
    fn close(&self) -> bool {
        self.open
            .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }
}

// SAFETY: `begin` only returns `Ok` for engines built by the `unsafe` constructor `new`, whose
// caller takes over the isolation obligation; `unavailable` and `aborting` never start one.
unsafe impl TxEngine for ScriptedEngine<'_> {
    fn available(&self) -> bool {
        self.available
    }

    fn begin(&self) -> Result<(), AbortStatus> {
        // Relaxed: the counters order nothing; the script index only needs atomicity.
        let i = self.next.fetch_add(1, Relaxed);
        let step = self.script.get(i).copied().unwrap_or(self.then);
        if step.is_ok() {
            self.open.fetch_add(1, Relaxed);
        }
        step
    }

    unsafe fn commit(&self) {
        if self.close() {
            self.commits.fetch_add(1, Relaxed);
        }
    }

    unsafe fn abort_busy(&self) {
        if self.close() {
            self.busy_aborts.fetch_add(1, Relaxed);
        }
    }

    fn in_transaction(&self) -> bool {
        self.open.load(Relaxed) != 0
    }
}

/// Lock word bit: the fallback lock is held.
const HELD: usize = 1;
/// Lock word bit: a simulated transaction is running.
const TXN: usize = 2;

/// A simulated hardware transactional memory together with its fallback lock, sharing one word.
///
/// * A transaction starts only if no other one runs (else `begin` reports a conflict with the
///   retry bit): transactions are serialised, as if every pair conflicted.
/// * The fallback lock is a test-and-set lock that is acquired only when the word is 0: no holder
///   and no transaction. Real hardware would abort a running transaction when the lock word is
///   written; the model instead lets the transaction finish first. Either way the transaction
///   appears entirely before the fallback holder.
/// * Its `is_locked` reads the HELD bit, so the elision check works as on hardware.
///
/// Build the pair with [`model_lock`].
#[derive(Debug)]
pub struct HtmModel {
    word: AtomicUsize,
}

impl HtmModel {
    maybe_const_fn! {
        /// No holder, no transaction.
        pub fn new() -> Self {
            Self { word: AtomicUsize::new(0) }
        }
    }
}

impl Default for HtmModel {
    fn default() -> Self {
        Self::new()
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A handle to an [`HtmModel`] that always designates the same model: `&HtmModel`, and under
/// loom `loom::sync::Arc<HtmModel>`. Sealed, because isolation depends on the engine and the
/// fallback of a lock reaching the same word.
pub trait ModelRef: sealed::Sealed + Deref<Target = HtmModel> + Clone + Sync {}

impl sealed::Sealed for &HtmModel {}
impl ModelRef for &HtmModel {}
#[cfg(kernel_locks_loom)]
impl sealed::Sealed for loom::sync::Arc<HtmModel> {}
#[cfg(kernel_locks_loom)]
impl ModelRef for loom::sync::Arc<HtmModel> {}

/// The engine half of an [`HtmModel`]; obtained only through [`model_lock`].
#[derive(Debug)]
pub struct ModelEngine<P> {
    model: P,
}

/// The fallback-lock half of an [`HtmModel`]; obtained only through [`model_lock`].
#[derive(Debug)]
pub struct ModelFallback<P> {
    model: P,
}

/// An [`RtmLock`] for CPUs `0..N`, with wait strategy `R`, whose engine and fallback lock are the
/// two halves of `model`.
pub fn model_lock<P: ModelRef, const N: usize, R: Relax>(
    model: P,
    policy: RtmPolicy,
) -> RtmLock<ModelFallback<P>, N, R, ModelEngine<P>> {
    RtmLock::with_engine_and_policy(
        ModelFallback {
            model: model.clone(),
        },
        ModelEngine { model },
        policy,
    )
}

// SAFETY: a transaction runs only while the TXN bit is ours; `begin` sets it with an Acquire RMW
// and `commit`/`abort_busy` clear it with a Release RMW, and the fallback lock is acquired only
// by a CAS from 0 (Acquire) and released by a Release RMW, all on the same word: so transactions
// and fallback holders run one at a time, each synchronised with the previous one. A transaction
// that starts while the fallback is held reads HELD (same word, later in modification order) and
// is aborted by the lock. Engine and fallback reach the same word (`model_lock`, sealed `P`).
unsafe impl<P: ModelRef> TxEngine for ModelEngine<P> {
    fn available(&self) -> bool {
        true
    }

    fn begin(&self) -> Result<(), AbortStatus> {
        let word = &self.model.word;
        let mut w = word.load(Relaxed);
        loop {
            if w & TXN != 0 {
                return Err(CONFLICT);
            }
            match word.compare_exchange(w, w | TXN, Acquire, Relaxed) {
                Ok(_) => return Ok(()),
                Err(now) => w = now,
            }
        }
    }

    unsafe fn commit(&self) {
        self.model.word.fetch_and(!TXN, Release);
    }

    unsafe fn abort_busy(&self) {
        self.model.word.fetch_and(!TXN, Release);
    }

    fn in_transaction(&self) -> bool {
        self.model.word.load(Relaxed) & TXN != 0
    }
}

/// One lock word, no per-CPU state: no bound.
impl<P: ModelRef> crate::raw::MaxCpus for ModelFallback<P> {
    const MAX_CPUS: usize = usize::MAX;
}

// SAFETY: the lock is acquired by a CAS from 0 to HELD (Acquire), so at most one holder; released
// by clearing HELD with a Release RMW. `is_locked` is a load.
unsafe impl<P: ModelRef> KernelLock for ModelFallback<P> {
    fn name(&self) -> &'static str {
        "htm-model"
    }

    fn max_cpus(&self) -> usize {
        usize::MAX
    }

    fn lock(&self, cpu: CpuId) {
        while !self.try_lock(cpu) {
            while self.model.word.load(Relaxed) != 0 {
                core::hint::spin_loop();
                wait_hint();
            }
        }
    }

    fn try_lock(&self, _cpu: CpuId) -> bool {
        self.model
            .word
            .compare_exchange(0, HELD, Acquire, Relaxed)
            .is_ok()
    }

    unsafe fn unlock(&self, _cpu: CpuId) {
        let before = self.model.word.fetch_and(!HELD, Release);
        debug_assert!(before & HELD != 0, "htm-model: unlock of a free lock");
    }

    fn is_locked(&self) -> bool {
        // Acquire: an elided section that reads "free" here must see the writes of the fallback
        // holder that released it (on x86 every load is an acquire load; the model must say so).
        self.model.word.load(Acquire) & HELD != 0
    }
}
