//! loom models of the RTM elision lock, 2 CPUs:
//! * an engine that is never available (the fallback path, as on QEMU or AMD);
//! * a scripted engine whose attempts all abort, over a tiny test-and-set fallback: the skip
//!   counter, the wait-before-retry loop, statistics and deferred calls race with the fallback;
//! * the simulated HTM (`testing::HtmModel`), where CPUs really elide and the fallback really
//!   excludes them: loom reports a data race if an elided section can overlap another section
//!   (verified: with the `is_locked` check in `RtmLock::try_elide` removed,
//!   `htm_model_elision_against_a_fallback_holder` fails with "Concurrent write accesses to
//!   `UnsafeCell`"; it also caught a Relaxed `is_locked` in the model, which must be Acquire).
//!
//! Run: `RUSTFLAGS="--cfg kernel_locks_loom" CARGO_TARGET_DIR=target-loom-r cargo test -p kernel-locks --release --test loom_rtm`
#![cfg(kernel_locks_loom)]

#[path = "common/loom_model.rs"]
mod loom_model;

use kernel_locks::rtm::testing::{self, HtmModel, ScriptedEngine, CAPACITY, CONFLICT};
use kernel_locks::{KernelLock, MaxCpus, RtmLock, RtmPolicy, Spin, TxEngine};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use loom::sync::Arc;

/// A tiny test-and-set fallback lock.
struct Tas(AtomicBool);

impl Tas {
    fn new() -> Self {
        Self(AtomicBool::new(false))
    }
}

/// One flag, no per-CPU state: no bound.
impl MaxCpus for Tas {
    const MAX_CPUS: usize = usize::MAX;
}

// SAFETY: a CAS from false to true (Acquire) admits one holder; release stores false (Release).
// `is_locked` is a load.
unsafe impl KernelLock for Tas {
    fn name(&self) -> &'static str {
        "tas"
    }
    fn max_cpus(&self) -> usize {
        usize::MAX
    }
    fn lock(&self, cpu: usize) {
        while !self.try_lock(cpu) {
            while self.0.load(Relaxed) {
                loom::thread::yield_now();
            }
        }
    }
    fn try_lock(&self, _cpu: usize) -> bool {
        self.0
            .compare_exchange(false, true, Acquire, Relaxed)
            .is_ok()
    }
    unsafe fn unlock(&self, _cpu: usize) {
        self.0.store(false, Release);
    }
    fn is_locked(&self) -> bool {
        self.0.load(Relaxed)
    }
}

type Unavailable = RtmLock<Tas, 2, Spin, ScriptedEngine<'static>>;

fn unavailable() -> Unavailable {
    RtmLock::with_engine(Tas::new(), ScriptedEngine::unavailable())
}

#[test]
fn unavailable_engine_lock() {
    loom_model::mutual_exclusion(unavailable, 2, false);
}

#[test]
fn unavailable_engine_try_lock() {
    loom_model::mutual_exclusion(unavailable, 2, true);
}

/// CPUs 0 and 1 each take `lock` once, increment loom-checked data and defer one call; checks the
/// data, that each deferred call ran once, and that the statistics count both acquisitions.
fn two_cpus_with_deferred_calls<L, E>(lock: RtmLock<L, 2, Spin, E>) -> Arc<RtmLock<L, 2, Spin, E>>
where
    L: KernelLock + Send + 'static,
    E: TxEngine + Send + 'static,
{
    /// `arg` is the address of the model's `deferred` counter.
    fn op(arg: usize) {
        // SAFETY: `arg` points into an `Arc` that the running thread keeps alive.
        let deferred = unsafe { &*(arg as *const AtomicUsize) };
        deferred.fetch_add(1, Relaxed);
    }
    fn run<L: KernelLock, E: TxEngine>(
        lock: &RtmLock<L, 2, Spin, E>,
        data: &UnsafeCell<usize>,
        deferred: &AtomicUsize,
        cpu: usize,
    ) {
        lock.lock(cpu);
        // SAFETY: loom reports a race if the lock does not exclude the other thread.
        data.with_mut(|v| unsafe { *v += 1 });
        lock.defer(cpu, op, deferred as *const AtomicUsize as usize)
            .unwrap();
        // SAFETY: `cpu` holds the lock.
        unsafe { lock.unlock(cpu) };
    }
    let lock = Arc::new(lock);
    let data = Arc::new(UnsafeCell::new(0usize));
    let deferred = Arc::new(AtomicUsize::new(0));
    let t = {
        let (lock, data, deferred) = (lock.clone(), data.clone(), deferred.clone());
        loom::thread::spawn(move || run(&lock, &data, &deferred, 1))
    };
    run(&lock, &data, &deferred, 0);
    t.join().unwrap();
    // SAFETY: both threads are done.
    assert_eq!(data.with(|v| unsafe { *v }), 2);
    assert_eq!(deferred.load(Relaxed), 2);
    assert!(!lock.is_locked());
    assert_eq!(lock.stats().total(), 2);
    lock
}

/// Every attempt aborts: first a conflict (retry after waiting), then a capacity abort (skip
/// counter set to 1), then conflicts. Both CPUs end on the fallback in every interleaving, each
/// deferred call runs once, and the statistics add up.
#[test]
fn scripted_aborts_fall_back_with_stats_and_deferred_calls() {
    loom::model(|| {
        let engine = ScriptedEngine::aborting(&[Err(CONFLICT), Err(CAPACITY)], CONFLICT);
        let policy = RtmPolicy::DEFAULT.with_max_attempts(2).with_skips(1, 1);
        let lock = two_cpus_with_deferred_calls(RtmLock::with_engine_and_policy(
            Tas::new(),
            engine,
            policy,
        ));
        let s = lock.stats();
        assert_eq!((s.fallback, s.elided()), (2, 0));
        assert_eq!(s.aborts(), lock.engine().begins() as u64);
    });
}

/// The simulated HTM: both CPUs elide or fall back, in every interleaving; deferred calls run
/// once each, after the commit or the release.
#[test]
fn htm_model_with_deferred_calls() {
    loom::model(|| {
        let s = two_cpus_with_deferred_calls(htm_model()).stats();
        assert!(
            s.elided() >= 1,
            "the first transaction cannot conflict: {s}"
        );
    });
}

fn htm_model(
) -> RtmLock<testing::ModelFallback<Arc<HtmModel>>, 2, Spin, testing::ModelEngine<Arc<HtmModel>>> {
    testing::model_lock::<_, 2, Spin>(
        Arc::new(HtmModel::new()),
        RtmPolicy::DEFAULT.with_max_attempts(2),
    )
}

#[test]
fn htm_model_lock() {
    loom_model::mutual_exclusion(htm_model, 2, false);
}

#[test]
fn htm_model_try_lock() {
    loom_model::mutual_exclusion(htm_model, 2, true);
}

/// One CPU takes the model's fallback lock directly while the other elides: the elided section
/// must never overlap the fallback holder's (a data race in loom's eyes).
#[test]
fn htm_model_elision_against_a_fallback_holder() {
    loom::model(|| {
        let lock = Arc::new(htm_model());
        let data = Arc::new(UnsafeCell::new(0usize));
        let t = {
            let (lock, data) = (lock.clone(), data.clone());
            loom::thread::spawn(move || {
                lock.fallback().lock(1);
                // SAFETY: loom reports a race if the elided section overlaps this one.
                data.with_mut(|v| unsafe { *v += 1 });
                // SAFETY: CPU 1 took the fallback just above.
                unsafe { lock.fallback().unlock(1) };
            })
        };
        lock.lock(0);
        // SAFETY: as above.
        data.with_mut(|v| unsafe { *v += 1 });
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
        t.join().unwrap();
        // SAFETY: both threads are done.
        assert_eq!(data.with(|v| unsafe { *v }), 2);
        assert_eq!(lock.stats().total(), 1);
    });
}
