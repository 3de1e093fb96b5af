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
    loom_model::exclusion(loom::model::Builder::new(), ClhLock::<2>::new, 2, 2, |_| {
        false
    });
}
