//! loom models of the MCS lock: every interleaving (and the weak-memory behaviours loom models) of
//! two and three CPUs. Run with `RUSTFLAGS="--cfg kernel_locks_loom" cargo test -p kernel-locks
//! --release --features testing --test loom_mcs`.
//!
//! The models have teeth: `mcs_weakened_hand_over_is_caught` runs the two-CPU model with the
//! hand-over fence weakened from `AcqRel` to `Acquire` (a knob that exists only in loom builds)
//! and asserts that loom reports the unsynchronised critical sections.
#![cfg(kernel_locks_loom)]

mod common;
#[path = "common/loom_model.rs"]
mod loom_model;

use kernel_locks::McsLock;
use loom_model::bounded;

#[test]
fn mcs_two_cpus_lock() {
    loom_model::mutual_exclusion(McsLock::<2>::new, 2, false);
}

#[test]
fn mcs_two_cpus_try_lock() {
    loom_model::mutual_exclusion(McsLock::<2>::new, 2, true);
}

/// Bounded, as the node-reuse model below (`loom_model::bounded`): unbounded, each runs for more
/// than 5 minutes; with a bound of 3 or more this one exceeds loom's branch limit (three CPUs
/// spinning, as for the ticket lock).
#[test]
fn mcs_three_cpus_lock() {
    loom_model::mutual_exclusion_in(bounded(2), McsLock::<3>::new, 3, false);
}

/// One CPU waits in `lock` while the other polls with `try_lock`.
#[test]
fn mcs_lock_against_try_lock() {
    loom_model::lock_against_try_lock(McsLock::<2>::new);
}

/// Two acquisitions per CPU: a node is reused, so its `next` cleared at one hand-over must not
/// overwrite the link of the next use (the Release swap's job).
#[test]
fn mcs_nodes_are_reused() {
    loom_model::exclusion(bounded(4), McsLock::<2>::new, 2, 2, |_| false);
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
fn assert_causality_violation(model: impl Fn()) {
    common::assert_each_panics(&[("Causality violation", &model)]);
}
