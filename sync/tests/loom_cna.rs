//! loom models of the compact NUMA-aware lock: every interleaving (and the weak-memory
//! behaviours loom models) of two CPUs, and of three and four within a preemption bound, on a
//! two-node machine (even CPUs on node 0, odd on node 1). Run with `RUSTFLAGS="--cfg
//! kernel_locks_loom" cargo test -p kernel-locks --release --features testing --test loom_cna`
//! (about 25 s on two loaded cores; `LOOM_MAX_PREEMPTIONS` overrides every model's bound).
//!
//! The node pool is declared with `cna_node_pool!` as in a kernel: under
//! `--cfg kernel_locks_loom` the macro builds its nodes in a `loom::lazy_static!`, afresh in
//! every execution, so each execution starts with unused nodes and loom tracks every access to
//! them, the plain cells of the NUMA id and the secondary queue included.
//!
//! Two CPUs never queue (the second waits on the pending bit) and three queue one at a time, so
//! the hand-off, the secondary queue and the splices need CPUs that come back:
//! * `cna_hand_off_within_a_node`: three CPUs, CPU 0 twice, which can queue behind the head
//!   CPU 2 of its own node and be handed the queue within the node;
//! * `cna_secondary_queue`: four CPUs, CPU 0 twice: a head on node 0 passes CPU 3 (node 1)
//!   over to CPU 0, which, last in the main queue, makes the secondary queue the queue;
//! * `cna_secondary_queue_spliced_in_front`: four CPUs, CPUs 0 and 1 twice, with a fairness
//!   bound of 1: the head after a pass-over splices the secondary queue back in front of the
//!   waiters queued behind it.
//!
//! Each checks, through the loom builds' per-thread counts of the hand-off paths
//! (`cna::loom_stats`), that some execution took the paths it is about.
//!
//! The models have teeth: `cna_weakened_hand_off_is_caught` runs the hand-off model with the
//! hand-off store weakened from `Release` to `Relaxed` (a knob that exists only in loom builds)
//! and asserts that loom reports the new head's unordered read of the secondary queue.
//! Weakening any other ordering of the queue path, one at a time, also fails a model here
//! (checked by hand, not kept as tests, since each needs its own build): the link store's
//! `Release` (the three queue models: the scanning head's read of the NUMA id races with its
//! write), the tail exchange to `Release` or to `Acquire` (the queue models: a CPU waits for
//! ever, a link overwritten by a reset of the `next` it went into), the fence after the
//! `head` polls (the queue models: the new head's read of the secondary queue races with its
//! write), the scan's fence after each link (the queue models: the read of the NUMA id races),
//! the fence after the head's word polls (the three- and four-CPU models: two critical
//! sections race) and the `Release` of the claim that makes the secondary queue the queue (the
//! splice model: a CPU waits for ever).
#![cfg(kernel_locks_loom)]

mod common;
#[path = "common/loom_model.rs"]
mod loom_model;

use kernel_locks::cna::loom_stats::{self, Paths};
use kernel_locks::cna::NumaMap;
use kernel_locks::{cna_node_pool, CnaLock, CpuId};
use loom_model::bounded;

// Queue nodes for four CPUs, declared as in a kernel: under `--cfg kernel_locks_loom` the macro
// builds them in a `loom::lazy_static!`, afresh in every execution.
cna_node_pool!(Pool, 4);

/// Two NUMA nodes: even CPUs on node 0, odd ones on node 1.
struct TwoNodes;

impl NumaMap for TwoNodes {
    fn node_of(cpu: CpuId) -> u32 {
        (cpu % 2) as u32
    }
}

/// The lock of the models, whose waiters stop the model's branching after `POLLS` polls.
type Lock<const POLLS: u32> = CnaLock<Pool, TwoNodes, Patient<POLLS>>;

/// The lock of the two-CPU models, which explore every schedule: their waiters never stop the
/// branching (two CPUs have one waiter at a time).
type Unpruned = Lock<{ u32::MAX }>;

/// The models' wait strategy: after `POLLS` polls in one acquisition the model stops branching
/// (`loom::skip_branch`), and the rest of that execution runs as loom's scheduler prefers (the
/// thread that yielded least: the holder).
///
/// The pending waiter and the queue head both poll the lock word, and every poll yields
/// (`wait_hint`). loom, which treats their loads of one word as dependent, would otherwise
/// also explore the schedules in which the two hand the processor to each other for ever
/// while the holder never runs, and exceed its branch limit in them (it does with three CPUs
/// and a preemption bound of 2). A poll changes nothing another CPU can see, so a schedule in
/// which a waiter polls more often reaches no state that a schedule with fewer polls, where
/// the other CPUs' steps come earlier, does not: the models explore those.
#[derive(Default)]
struct Patient<const POLLS: u32>(u32);

impl<const POLLS: u32> kernel_locks::Relax for Patient<POLLS> {
    fn relax(&mut self, _cpu: CpuId) {
        self.0 += 1;
        if self.0 == POLLS {
            loom::skip_branch();
        }
    }
}

#[test]
fn cna_two_cpus_lock() {
    loom_model::mutual_exclusion(Unpruned::new, 2, false);
}

#[test]
fn cna_two_cpus_try_lock() {
    loom_model::mutual_exclusion(Unpruned::new, 2, true);
}

/// One CPU waits in `lock` while the other polls with `try_lock`.
#[test]
fn cna_lock_against_try_lock() {
    loom_model::lock_against_try_lock(Unpruned::new);
}

/// Fast path, pending bit and one queued CPU (the head, which clears the tail).
#[test]
fn cna_three_cpus_lock() {
    loom_model::mutual_exclusion_in(bounded(3), Lock::<3>::new, 3, false);
}

/// Runs `model` and returns how often each hand-off path ran in its executions.
fn paths_of(model: impl FnOnce()) -> Paths {
    let before = loom_stats::paths();
    model();
    let after = loom_stats::paths();
    Paths {
        local: after.local - before.local,
        passed_over: after.passed_over - before.passed_over,
        spliced_in_front: after.spliced_in_front - before.spliced_in_front,
        spliced_as_queue: after.spliced_as_queue - before.spliced_as_queue,
    }
}

/// Three CPUs, CPU 0 twice: its second acquisition can queue behind a head on its own node
/// (CPU 2), which then hands the queue over within the node; behind CPU 1 (node 1) it is
/// handed the queue in FIFO order, no local waiter being there. Some execution must make an
/// intra-node hand-off.
#[test]
fn cna_hand_off_within_a_node() {
    let paths = paths_of(|| {
        loom_model::exclusion_per_cpu(bounded(3), Lock::<3>::new, vec![2, 1, 1], |_| false)
    });
    assert!(paths.local > 0, "no intra-node hand-off: {paths:?}");
}

/// Four CPUs, CPU 0 twice: queues of up to three waiters on two nodes, where a head on node 0
/// passes a waiter of node 1 over to one of node 0, which, last in the main queue, makes the
/// secondary queue the queue. Some execution must reach both.
#[test]
fn cna_secondary_queue() {
    let paths = paths_of(|| {
        loom_model::exclusion_per_cpu(bounded(2), Lock::<2>::new, vec![2, 1, 1, 1], |_| false)
    });
    assert!(paths.passed_over > 0, "no waiter passed over: {paths:?}");
    assert!(
        paths.spliced_as_queue > 0,
        "no secondary queue became the queue: {paths:?}"
    );
}

/// Four CPUs, CPUs 0 and 1 twice, over a lock with a fairness bound of 1: a head passes a
/// waiter over, and the next head, its bound reached, splices the secondary queue back in
/// front of the waiters queued behind it (or makes it the queue when none is). Some execution
/// must splice in front.
#[test]
fn cna_secondary_queue_spliced_in_front() {
    let paths = paths_of(|| {
        loom_model::exclusion_per_cpu(
            bounded(2),
            CnaLock::<Pool, TwoNodes, Patient<2>, 1>::new,
            vec![2, 2, 1, 1],
            |_| false,
        )
    });
    assert!(paths.passed_over > 0, "no waiter passed over: {paths:?}");
    assert!(
        paths.spliced_in_front > 0,
        "no secondary queue spliced in front: {paths:?}"
    );
}

/// The hand-off model over a lock whose hand-off store is only `Relaxed`: the new head's read
/// of the secondary queue that comes with the hand-off is then not ordered after the old
/// head's write of it, and loom must say so. If this test fails, the models above could not
/// tell a correct hand-off from a broken one.
#[test]
fn cna_weakened_hand_off_is_caught() {
    common::assert_each_panics(&[("Causality violation", &|| {
        loom_model::exclusion_per_cpu(
            bounded(2),
            || Lock::<3>::new().with_weakened_hand_off(),
            vec![2, 1, 1],
            |_| false,
        )
    })]);
}
