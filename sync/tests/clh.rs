//! CLH lock stress tests on real threads (oversubscribed on small machines on purpose).

mod common;

use kernel_locks::pad::Align32;
use kernel_locks::{Backoff, ClhLock, KernelLock, Spin, Wfe};

#[test]
fn clh_exact_count_under_contention() {
    let threads = common::stress_threads();
    let lock = ClhLock::<64, common::Yield>::new();
    common::hammer(&lock, threads, 20_000);
}

#[test]
fn clh_exact_count_under_contention_unchecked() {
    let threads = common::stress_threads().min(64);
    common::hammer_unchecked(
        &ClhLock::<64, common::Yield>::with_cpus(threads),
        threads,
        2_000,
    );
}

#[test]
fn clh_try_lock_exact_count() {
    let threads = common::stress_threads();
    let lock = ClhLock::<64, common::Yield>::new();
    common::hammer_try(&lock, threads, 10_000);
}

#[test]
fn clh_mixed_lock_and_try_lock() {
    let threads = common::stress_threads();
    common::hammer_mixed(&ClhLock::<64, common::Yield>::new(), threads, 10_000);
}

#[test]
fn clh_other_strategies_and_layouts() {
    let threads = common::stress_threads();
    // Pure spinning strategies, not oversubscribed (one thread per host core) to stay fast.
    let threads = threads.min(std::thread::available_parallelism().map_or(2, |n| n.get()));
    common::hammer(&ClhLock::<64, Wfe>::new(), threads, 5_000);
    common::hammer(&ClhLock::<64, Spin, Align32>::new(), threads, 5_000);
    common::hammer(&ClhLock::<64, Backoff>::new(), threads, 5_000);
}

#[test]
fn clh_fifo_hand_over_order() {
    // CPU 0 holds the lock; CPUs 1, 2, 3 queue in that order; they must enter in that order.
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let lock = ClhLock::<4, common::Yield>::new();
    let order = Mutex::new(Vec::new());
    let queued = AtomicUsize::new(0);
    lock.lock(0);
    std::thread::scope(|s| {
        for cpu in 1..4 {
            while queued.load(Ordering::SeqCst) != cpu - 1 {
                std::thread::yield_now();
            }
            let (lock, order, queued) = (&lock, &order, &queued);
            s.spawn(move || {
                queued.fetch_add(1, Ordering::SeqCst);
                lock.lock(cpu);
                order.lock().unwrap().push(cpu);
                // SAFETY: `cpu` holds the lock.
                unsafe { lock.unlock(cpu) };
            });
            // Give the thread time to swap itself into the tail after announcing itself.
            while queued.load(Ordering::SeqCst) != cpu {
                std::thread::yield_now();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
    });
    assert_eq!(*order.lock().unwrap(), vec![1, 2, 3]);
}
