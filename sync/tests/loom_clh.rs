//! loom models of the CLH lock: every interleaving (and the weak-memory behaviours loom models) of
//! two and three CPUs. Run with `RUSTFLAGS="--cfg kernel_locks_loom" cargo test -p kernel-locks --release --test loom_clh`.
//!
//! These models have teeth: weakening the release store of `GRANTED` to `Relaxed` fails
//! `clh_two_cpus_lock`, and weakening the enqueue swap from `AcqRel` to `Acquire` (seL4's
//! pre-PR #199 bug: the successor may read the reused slot's stale `GRANTED`) fails three of the
//! four models (checked by hand on 2026-11-22).
#![cfg(kernel_locks_loom)]

#[path = "common/loom_model.rs"]
mod loom_model;

use kernel_locks::ClhLock;

#[test]
fn clh_two_cpus_lock() {
    loom_model::mutual_exclusion(ClhLock::<2>::new, 2, false);
}

#[test]
fn clh_two_cpus_try_lock() {
    loom_model::mutual_exclusion(ClhLock::<2>::new, 2, true);
}

#[test]
fn clh_three_cpus_lock() {
    loom_model::mutual_exclusion(ClhLock::<3>::new, 3, false);
}

#[test]
fn clh_slots_migrate_and_are_reused() {
    // Two acquisitions per CPU, so a CPU re-enqueues a slot it took over from its predecessor.
    use kernel_locks::KernelLock;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    loom::model(|| {
        let lock = Arc::new(ClhLock::<2>::new());
        let data = Arc::new(UnsafeCell::new(0usize));
        let twice = |lock: &ClhLock<2>, data: &UnsafeCell<usize>, cpu: usize| {
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
    });
}
