//! loom models of the MCS lock: every interleaving (and the weak-memory behaviours loom models) of
//! two and three CPUs. Run with `RUSTFLAGS="--cfg kernel_locks_loom" cargo test -p kernel-locks
//! --release --features testing --test loom_mcs`.
//!
//! The models have teeth: `mcs_weakened_hand_over_is_caught` runs the two-CPU model with the
//! hand-over fence weakened from `AcqRel` to `Acquire` (a knob that exists only in loom builds)
//! and asserts that loom reports the unsynchronised critical sections.
#![cfg(kernel_locks_loom)]

#[path = "common/loom_model.rs"]
mod loom_model;

use kernel_locks::{KernelLock, McsLock};
use loom::cell::UnsafeCell;
use loom::sync::Arc;

#[test]
fn mcs_two_cpus_lock() {
    loom_model::mutual_exclusion(McsLock::<2>::new, 2, false);
}

#[test]
fn mcs_two_cpus_try_lock() {
    loom_model::mutual_exclusion(McsLock::<2>::new, 2, true);
}

/// A builder that explores every interleaving with at most `preemptions` preemptions (the
/// environment's `LOOM_MAX_PREEMPTIONS` overrides it). Unbounded, the three-CPU and the
/// node-reuse models run for more than 5 minutes; the three-CPU model with a bound of 3 or more
/// exceeds loom's branch limit (three CPUs spinning, as for the ticket lock).
fn bounded(preemptions: usize) -> loom::model::Builder {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(preemptions);
    }
    builder
}

#[test]
fn mcs_three_cpus_lock() {
    loom_model::mutual_exclusion_in(bounded(2), McsLock::<3>::new, 3, false);
}

/// One CPU waits in `lock` while the other polls with `try_lock`.
#[test]
fn mcs_lock_against_try_lock() {
    loom::model(|| {
        let lock = Arc::new(McsLock::<2>::new());
        let data = Arc::new(UnsafeCell::new(0usize));
        let (lock2, data2) = (lock.clone(), data.clone());
        let t = loom::thread::spawn(move || {
            while !lock2.try_lock(1) {
                loom::thread::yield_now();
            }
            // SAFETY: loom reports a data race here if the lock does not exclude CPU 0.
            data2.with_mut(|v| unsafe { *v += 1 });
            // SAFETY: CPU 1 holds the lock.
            unsafe { lock2.unlock(1) };
        });
        lock.lock(0);
        // SAFETY: as above.
        data.with_mut(|v| unsafe { *v += 1 });
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
        t.join().unwrap();
        // SAFETY: both threads are done.
        assert_eq!(data.with(|v| unsafe { *v }), 2);
        assert!(!lock.is_locked());
    });
}

/// Two acquisitions per CPU: a node is reused, so its `next` cleared at one hand-over must not
/// overwrite the link of the next use (the Release swap's job).
#[test]
fn mcs_nodes_are_reused() {
    bounded(4).check(|| {
        let lock = Arc::new(McsLock::<2>::new());
        let data = Arc::new(UnsafeCell::new(0usize));
        let twice = |lock: &McsLock<2>, data: &UnsafeCell<usize>, cpu: usize| {
            for _ in 0..2 {
                lock.lock(cpu);
                // SAFETY: loom flags a race here if exclusion fails.
                data.with_mut(|v| unsafe { *v += 1 });
                // SAFETY: `cpu` holds the lock.
                unsafe { lock.unlock(cpu) };
            }
        };
        let (l2, d2) = (lock.clone(), data.clone());
        let t = loom::thread::spawn(move || twice(&l2, &d2, 1));
        twice(&lock, &data, 0);
        t.join().unwrap();
        // SAFETY: all threads joined.
        assert_eq!(data.with(|v| unsafe { *v }), 4);
        assert!(!lock.is_locked());
    });
}

/// The models over a lock whose hand-over fence is only `Acquire`: the successor's critical
/// section is then not ordered after the releaser's, and loom must say so (a causality
/// violation on the data cell), in the two-CPU model and in the bounded three-CPU one. If this
/// test fails, the models above could not tell a correct hand-over from a broken one.
#[test]
fn mcs_weakened_hand_over_is_caught() {
    let weakened = || McsLock::<3>::new().with_weakened_hand_over();
    assert_causality_violation(|| loom_model::mutual_exclusion(weakened, 2, false));
    assert_causality_violation(|| loom_model::mutual_exclusion_in(bounded(2), weakened, 3, false));
}

/// Runs `model`, which must panic with loom's report of unsynchronised accesses.
#[track_caller]
fn assert_causality_violation(model: impl FnOnce() + std::panic::UnwindSafe) {
    let payload = std::panic::catch_unwind(model)
        .expect_err("loom found no violation with the hand-over weakened");
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(
        message.contains("Causality violation"),
        "the weakened model failed for another reason: {message:?}"
    );
}
