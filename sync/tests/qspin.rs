//! The queued spinlock on real threads: exact totals through every path (fast, pending,
//! queue), nested waits on one CPU through the four contexts, and its misuse checks. Every test
//! declares a node pool of its own: a pool's nodes are per CPU, and the tests of this binary
//! run at once, each with its own threads as CPUs 0.., so two tests sharing a pool would be
//! two threads acting as one CPU.
#![cfg(not(kernel_locks_loom))]

mod common;

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use kernel_locks::{qspin_node_pool, KernelLock, QSpinLock, Relax, Spin};

#[test]
fn the_lock_is_one_word() {
    qspin_node_pool!(Pool, 4);
    assert_eq!(std::mem::size_of::<QSpinLock<Pool>>(), 4);
    let lock = QSpinLock::<Pool>::new();
    assert_eq!((lock.name(), lock.max_cpus()), ("qspin", 4));
    assert!(!lock.is_locked());
    assert!(lock.try_lock(3));
    assert!(lock.is_locked() && !lock.try_lock(0));
    // SAFETY: CPU 3 holds the lock.
    unsafe { lock.unlock(3) };
    assert!(!lock.is_locked());
}

#[test]
fn exact_totals_under_contention() {
    qspin_node_pool!(Pool, 16);
    let threads = common::stress_threads().min(16);
    let lock = QSpinLock::<Pool, common::Yield>::new();
    common::hammer(&lock, threads, 20_000);
    assert!(!lock.is_locked());
}

#[test]
fn exact_totals_with_try_lock_and_mixed_acquisitions() {
    qspin_node_pool!(Pool, 8);
    let lock = QSpinLock::<Pool, common::Yield>::new();
    common::hammer_try(&lock, 4, 10_000);
    common::hammer_mixed(&lock, 4, 10_000);
    assert!(!lock.is_locked());
}

#[test]
fn two_cpus_take_the_pending_path_and_three_the_queue() {
    // With two CPUs the waiter sets the pending bit and never queues; with a third, waiters
    // queue behind it. A wait strategy counts the polls of each path's loops: every loop calls
    // it, so both paths are seen to run, and the totals stay exact.
    qspin_node_pool!(Pool, 3);
    static POLLS: AtomicUsize = AtomicUsize::new(0);
    #[derive(Default)]
    struct Count(common::Yield);
    impl Relax for Count {
        fn relax(&mut self, cpu: usize) {
            POLLS.fetch_add(1, Ordering::Relaxed);
            self.0.relax(cpu);
        }
    }
    let lock = QSpinLock::<Pool, Count>::new();
    // One holder, one waiter: the waiter must wait (pending) until the release.
    lock.lock(0);
    common::waiter_blocks_until_release(
        || {
            lock.lock(1);
            // SAFETY: CPU 1 took it just above.
            unsafe { lock.unlock(1) };
        },
        // SAFETY: CPU 0 holds the lock.
        || unsafe { lock.unlock(0) },
        "the pending waiter entered while the lock was held",
    );
    assert!(POLLS.load(Ordering::Relaxed) > 0, "the waiter never polled");
    common::hammer(&lock, 3, 20_000);
    assert!(!lock.is_locked());
}

thread_local! {
    /// How deep the simulated interrupts of `Nesting` go on this thread.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

qspin_node_pool!(NestPool, 16);
/// The locks of the nesting runs, all over `NestPool`: run `r` uses `NESTED[BASE..]`.
static NESTED: [QSpinLock<NestPool, Nesting>; 12] = [const { QSpinLock::new() }; 12];
/// The run's first lock, the CPU whose waits are interrupted, and how deep.
static BASE: AtomicUsize = AtomicUsize::new(0);
static NESTER: AtomicUsize = AtomicUsize::new(usize::MAX);
static LEVELS: AtomicUsize = AtomicUsize::new(0);

/// A wait strategy that plays interrupts on the CPU `NESTER`: while it waits for lock `d` of
/// the run, it takes lock `d + 1` on the same CPU (a nested context), up to `LEVELS` deep.
#[derive(Default)]
struct Nesting;

impl Relax for Nesting {
    fn relax(&mut self, cpu: usize) {
        let depth = DEPTH.with(Cell::get);
        if cpu == NESTER.load(Ordering::Relaxed) && depth < LEVELS.load(Ordering::Relaxed) {
            DEPTH.with(|d| d.set(depth + 1));
            let lock = &NESTED[BASE.load(Ordering::Relaxed) + depth + 1];
            lock.lock(cpu);
            // SAFETY: `cpu` took it just above.
            unsafe { lock.unlock(cpu) };
        }
        std::thread::yield_now();
    }
}

/// One nesting run: CPU `first` holds locks `base..=base + levels`, CPUs `first + 2..` wait on
/// them with the pending bit (one each), so that CPU `first + 1`, waiting for lock `base` and,
/// "interrupted" in every wait, for the next one, queues on each with its next node. Returns
/// whether CPU `first + 1` ran to its end.
fn nesting_run(base: usize, first: usize, levels: usize) -> bool {
    let locks = &NESTED[base..=base + levels];
    BASE.store(base, Ordering::Relaxed);
    LEVELS.store(levels, Ordering::Relaxed);
    NESTER.store(first + 1, Ordering::Relaxed);
    for lock in locks {
        lock.lock(first);
    }
    let ended = std::thread::scope(|s| {
        for (k, lock) in locks.iter().enumerate() {
            s.spawn(move || {
                lock.lock(first + 2 + k);
                // SAFETY: this CPU took it just above.
                unsafe { lock.unlock(first + 2 + k) };
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        let nester = s.spawn(move || {
            locks[0].lock(first + 1);
            // SAFETY: this CPU took it just above.
            unsafe { locks[0].unlock(first + 1) };
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        for lock in locks.iter().rev() {
            // SAFETY: CPU `first` holds every lock of the run.
            unsafe { lock.unlock(first) };
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        nester.join().is_ok()
    });
    NESTER.store(usize::MAX, Ordering::Relaxed);
    ended
}

#[test]
fn nested_contexts_wait_with_their_own_nodes_and_a_fifth_panics() {
    // Four waits on one CPU at once (task, soft interrupt, interrupt, NMI), each queued with
    // its own node: they all end, and the locks are free after.
    assert!(nesting_run(0, 0, 3), "four nested waits did not all end");
    assert!(NESTED[..4].iter().all(|l| !l.is_locked()));
    // A fifth nested wait has no node: it panics (on other CPUs and locks, since the
    // panicking CPU's nodes are left queued).
    assert!(!nesting_run(4, 8, 4), "a fifth nested wait did not panic");
}

#[test]
fn misuse_is_caught() {
    qspin_node_pool!(Pool, 2);
    let lock = QSpinLock::<Pool, Spin>::new();
    common::assert_each_panics(&[
        ("QSpinLock: CPU id 2 out of range", &|| lock.lock(2)),
        (
            "QSpinLock: unlock by CPU 0, which does not hold the lock",
            &|| {
                // SAFETY: deliberately wrong: nothing is held.
                unsafe { lock.unlock(0) }
            },
        ),
    ]);
    assert!(!lock.is_locked(), "a misuse changed the word");
    #[cfg(debug_assertions)]
    {
        lock.lock(1);
        common::assert_each_panics(&[
            ("QSpinLock: CPU 1 locks a lock it already holds", &|| {
                lock.lock(1)
            }),
            ("QSpinLock: unlock by CPU 0", &|| {
                // SAFETY: deliberately wrong: CPU 1 holds the lock.
                unsafe { lock.unlock(0) }
            }),
        ]);
        // SAFETY: CPU 1 holds it.
        unsafe { lock.unlock(1) };
    }
    assert!(!lock.is_locked());
}
