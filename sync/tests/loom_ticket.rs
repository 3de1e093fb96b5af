//! loom models of the ticket lock: every interleaving of two CPUs (and a bounded three-CPU run).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p sync --release --test loom_ticket`.
#![cfg(loom)]

#[path = "common/loom_model.rs"]
mod loom_model;

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use sync::{KernelLock, Spin, TicketBackoffLock, TicketLock};

#[test]
fn ticket_lock_two_cpus() {
    loom_model::mutual_exclusion(TicketLock::<Spin>::new, 2, false);
}

#[test]
fn ticket_try_lock_two_cpus() {
    loom_model::mutual_exclusion(TicketLock::<Spin>::new, 2, true);
}

#[test]
fn ticket_backoff_lock_two_cpus() {
    loom_model::mutual_exclusion(TicketBackoffLock::<Spin>::new, 2, false);
}

/// One CPU waits in `lock` while the other polls with `try_lock`.
#[test]
fn ticket_lock_against_try_lock() {
    loom::model(|| {
        let lock = Arc::new(TicketLock::<Spin>::new());
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

/// Three CPUs, with a preemption bound of 1: loom explores every execution in which at most one
/// thread switch happens other than at a wait loop's yield (switches there are free, so the
/// waiters still interleave in every order). Unbounded, or with a bound of 2, loom also builds
/// schedules in which the two waiters keep yielding to each other while the holder never runs,
/// and gives up at its branch limit; the two-CPU models above are exhaustive.
#[test]
fn ticket_lock_three_cpus_bounded() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(1);
    builder.check(|| {
        let lock = Arc::new(TicketLock::<Spin>::new());
        let data = Arc::new(UnsafeCell::new(0usize));
        let handles: Vec<_> = (1..3)
            .map(|cpu| {
                let (lock, data) = (lock.clone(), data.clone());
                loom::thread::spawn(move || {
                    lock.lock(cpu);
                    // SAFETY: loom reports a data race here if the lock does not exclude.
                    data.with_mut(|v| unsafe { *v += 1 });
                    // SAFETY: `cpu` holds the lock.
                    unsafe { lock.unlock(cpu) };
                })
            })
            .collect();
        lock.lock(0);
        // SAFETY: as above.
        data.with_mut(|v| unsafe { *v += 1 });
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
        for h in handles {
            h.join().unwrap();
        }
        // SAFETY: all threads are done.
        assert_eq!(data.with(|v| unsafe { *v }), 3);
        assert!(!lock.is_locked());
    });
}
