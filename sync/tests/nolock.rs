//! `NoLock`: it builds, costs nothing, and works for what it is meant for (disjoint per-CPU
//! data). It deliberately excludes nothing, so there is no exclusion test.
#![cfg(not(kernel_locks_loom))]

mod common;

use std::mem::{align_of, size_of};

use kernel_locks::{KernelLock, KernelRwLock, NoLock, Padded};

// SAFETY: no critical section runs under this lock in this file other than on per-CPU data.
static STATIC: NoLock = unsafe { NoLock::new() };

#[test]
fn zero_sized_and_trivial() {
    assert_eq!(size_of::<NoLock>(), 0);
    assert_eq!(align_of::<NoLock>(), 1);
    // SAFETY: nothing runs under this lock.
    let lock = unsafe { NoLock::new() };
    assert_eq!(lock.name(), "none");
    assert_eq!(lock.max_cpus(), usize::MAX);
    lock.lock(0);
    assert!(!lock.is_locked(), "NoLock reports itself free, always");
    // SAFETY: CPU 0 "holds" the lock.
    unsafe { lock.unlock(0) };
    assert!(lock.try_lock(usize::MAX - 1));
    // SAFETY: as above.
    unsafe { lock.unlock(usize::MAX - 1) };
    lock.read_lock(1);
    assert!(lock.try_read_lock(2));
    // SAFETY: CPUs 1 and 2 "hold" the lock shared.
    unsafe {
        lock.read_unlock(1);
        lock.read_unlock(2);
    }
    assert!(format!("{STATIC:?}").contains("NoLock"));
}

/// The intended use: every CPU updates only its own counter, "under" the lock.
#[test]
fn disjoint_per_cpu_counters() {
    const MAX: usize = 64;
    const ITERS: usize = 10_000;
    let threads = common::stress_threads().min(MAX);
    let counters: Vec<Padded<common::RacyCounter>> = (0..threads)
        .map(|_| Padded::new(common::RacyCounter::new()))
        .collect();
    common::on_cpus(threads, ITERS, |cpu| {
        STATIC.lock(cpu);
        counters[cpu].increment();
        // SAFETY: `cpu` "took" the lock just above.
        unsafe { STATIC.unlock(cpu) };
    });
    for counter in &counters {
        assert_eq!(counter.get(), ITERS as u64);
    }
}
