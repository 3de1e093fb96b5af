//! loom models of the ticket lock: every interleaving of two CPUs (and a bounded three-CPU run).
//!
//! Run: `RUSTFLAGS="--cfg kernel_locks_loom" cargo test -p kernel-locks --release --test loom_ticket`.
#![cfg(kernel_locks_loom)]

#[path = "common/loom_model.rs"]
mod loom_model;

use kernel_locks::{KernelLock, TicketLock};
use loom::cell::UnsafeCell;
use loom::sync::Arc;

#[test]
fn ticket_lock_two_cpus() {
    loom_model::mutual_exclusion(TicketLock::new, 2, false);
}

#[test]
fn ticket_try_lock_two_cpus() {
    loom_model::mutual_exclusion(TicketLock::new, 2, true);
}

#[test]
fn ticket_backoff_lock_two_cpus() {
    loom_model::mutual_exclusion(TicketLock::with_backoff, 2, false);
}

/// One CPU waits in `lock` while the other polls with `try_lock`.
#[test]
fn ticket_lock_against_try_lock() {
    loom_model::lock_against_try_lock(TicketLock::new);
}

/// `lock_all` / `unlock_all` (one barrier each way for several locks) against the single-lock
/// operations: CPU 1 takes both locks together, CPU 0 takes them one by one; loom reports a
/// data race on either cell if the shared fences do not order each lock's critical sections.
#[test]
fn ticket_lock_all_against_single_locks() {
    loom::model(|| {
        let locks = Arc::new((TicketLock::new(), TicketLock::new()));
        let data = Arc::new((UnsafeCell::new(0usize), UnsafeCell::new(0usize)));
        let (locks2, data2) = (locks.clone(), data.clone());
        let t = loom::thread::spawn(move || {
            let (a, b) = (&locks2.0, &locks2.1);
            TicketLock::lock_all([a, b], 1);
            // SAFETY: loom reports a data race here if the locks do not exclude CPU 0.
            data2.0.with_mut(|v| unsafe { *v += 1 });
            // SAFETY: as above.
            data2.1.with_mut(|v| unsafe { *v += 1 });
            // SAFETY: CPU 1 holds both locks, each named once.
            unsafe { TicketLock::unlock_all([b, a], 1) };
        });
        for (lock, cell) in [(&locks.0, &data.0), (&locks.1, &data.1)] {
            lock.lock(0);
            // SAFETY: as above.
            cell.with_mut(|v| unsafe { *v += 1 });
            // SAFETY: CPU 0 holds the lock.
            unsafe { lock.unlock(0) };
        }
        t.join().unwrap();
        // SAFETY: both threads are done.
        assert_eq!(data.0.with(|v| unsafe { *v }), 2);
        // SAFETY: as above.
        assert_eq!(data.1.with(|v| unsafe { *v }), 2);
        assert!(!locks.0.is_locked() && !locks.1.is_locked());
    });
}

// No three-CPU model for the ticket lock: loom gives up on it (two waiters yielding to each other
// exceed its branch limit even with a preemption bound of 1-2; with a raised branch limit one
// model runs for more than 10 minutes). The two-CPU models above are exhaustive; three or more
// CPUs are exercised on real threads in `tests/ticket.rs`; the three-CPU loom model is CLH's.
