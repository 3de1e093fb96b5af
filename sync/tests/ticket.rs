//! Ticket lock: stress tests on real threads, FIFO order, and debug misuse checks.
#![cfg(not(kernel_locks_loom))]

mod common;

use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kernel_locks::raw::ConstInit;
use kernel_locks::ticket::{DEFAULT_BACKOFF, MAX_BACKOFF_HINTS};
use kernel_locks::{Backoff, KernelLock, Spin, TicketBackoffLock, TicketLock, Wfe};

use common::Yield;

/// Iterations per CPU of the stress tests that wait with [`Yield`].
const ITERS: usize = 2_000;
/// Iterations per CPU with pure spinning: a FIFO lock on an oversubscribed machine (more threads
/// than cores) hands over only when the next ticket's thread is scheduled, up to a time slice per
/// hand-over, so these runs are kept short.
const SPIN_ITERS: usize = 20;

#[test]
fn hammer_lock() {
    common::hammer(
        &TicketLock::<Yield>::with_relax(),
        common::stress_threads(),
        ITERS,
    );
}

#[test]
fn hammer_lock_unchecked() {
    let threads = common::stress_threads();
    common::hammer_unchecked(
        &TicketLock::<Yield>::with_relax_and_cpus(threads),
        threads,
        ITERS,
    );
}

#[test]
fn hammer_proportional_backoff() {
    common::hammer(
        &TicketBackoffLock::<Yield>::with_relax(),
        common::stress_threads(),
        ITERS,
    );
}

#[test]
fn hammer_spin_relax_strategies() {
    let threads = common::stress_threads();
    common::hammer(&TicketLock::new(), threads, SPIN_ITERS);
    common::hammer(&TicketLock::<Backoff>::with_relax(), threads, SPIN_ITERS);
    common::hammer(&TicketLock::<Wfe>::with_relax(), threads, SPIN_ITERS);
    common::hammer(&TicketLock::with_backoff(), threads, SPIN_ITERS);
}

#[test]
fn hammer_try_lock() {
    common::hammer_try(
        &TicketLock::<Yield>::with_relax(),
        common::stress_threads(),
        ITERS,
    );
}

#[test]
fn hammer_mixed_lock_and_try_lock() {
    let threads = common::stress_threads().min(64);
    common::hammer_mixed(
        &TicketLock::<Yield>::with_relax_and_cpus(64),
        threads,
        ITERS,
    );
}

#[test]
fn names_and_cpus() {
    assert_eq!(TicketLock::new().name(), "ticket");
    assert_eq!(TicketLock::with_backoff().name(), "ticket-backoff");
    assert_eq!(TicketLock::new().max_cpus(), usize::MAX);
    assert_eq!(TicketLock::with_cpus(4).max_cpus(), 4);
    const { assert!(DEFAULT_BACKOFF > 0 && DEFAULT_BACKOFF < MAX_BACKOFF_HINTS) };
}

/// The constructors of the common locks need no type annotation: each fixes its wait strategy
/// and back-off (`Spin`; none or [`DEFAULT_BACKOFF`]), which the bindings below check, and each
/// keeps the CPU range it was given. `with_relax` and `with_relax_and_cpus` build the others.
#[test]
fn common_constructors_infer_their_type() {
    let plain = TicketLock::new();
    let bounded = TicketLock::with_cpus(2);
    let backoff = TicketLock::with_backoff();
    let backoff_bounded = TicketLock::with_backoff_and_cpus(3);
    let _: (&TicketLock<Spin, 0>, &TicketLock<Spin, 0>) = (&plain, &bounded);
    let _: (&TicketBackoffLock<Spin>, &TicketBackoffLock<Spin>) = (&backoff, &backoff_bounded);
    assert_eq!((plain.name(), plain.max_cpus()), ("ticket", usize::MAX));
    assert_eq!((bounded.name(), bounded.max_cpus()), ("ticket", 2));
    assert_eq!(
        (backoff.name(), backoff.max_cpus()),
        ("ticket-backoff", usize::MAX)
    );
    assert_eq!(
        (backoff_bounded.name(), backoff_bounded.max_cpus()),
        ("ticket-backoff", 3)
    );

    let woken = TicketLock::<Wfe, 8>::with_relax();
    let woken_bounded = TicketLock::<Wfe, 8>::with_relax_and_cpus(5);
    assert_eq!(
        (woken.name(), woken.max_cpus()),
        ("ticket-backoff", usize::MAX)
    );
    assert_eq!(woken_bounded.max_cpus(), 5);
    assert!(format!("{woken:?}").contains("backoff: 8"));
}

/// The deprecated name of `with_relax_and_cpus` builds the same lock.
#[test]
#[allow(deprecated)]
fn with_max_cpus_is_with_relax_and_cpus() {
    let old = TicketLock::<Yield, 4>::with_max_cpus(3);
    let new = TicketLock::<Yield, 4>::with_relax_and_cpus(3);
    assert_eq!(format!("{old:?}"), format!("{new:?}"));
    assert_eq!((old.max_cpus(), old.name()), (new.max_cpus(), new.name()));
    old.lock(2);
    // SAFETY: CPU 2 holds the lock.
    unsafe { old.unlock(2) };
}

#[test]
fn try_lock_and_is_locked_single_cpu() {
    let lock = TicketLock::with_cpus(2);
    assert!(!lock.is_locked());
    assert_eq!(lock.queue_len(), 0);
    assert!(lock.try_lock(0));
    assert!(lock.is_locked());
    assert_eq!(lock.queue_len(), 1);
    assert!(!lock.try_lock(1), "try_lock succeeded on a held lock");
    // SAFETY: CPU 0 holds the lock.
    unsafe { lock.unlock(0) };
    assert!(!lock.is_locked());
    lock.lock(1);
    assert!(!lock.try_lock(0));
    // SAFETY: CPU 1 holds the lock.
    unsafe { lock.unlock(1) };
    assert!(lock.try_lock(0));
    // SAFETY: CPU 0 holds the lock.
    unsafe { lock.unlock(0) };
    assert!(!lock.is_locked());
}

static STATIC_LOCK: TicketLock = TicketLock::new();
static STATIC_INIT: TicketBackoffLock = ConstInit::INIT;

#[test]
fn usable_in_statics() {
    STATIC_LOCK.lock(3);
    // SAFETY: CPU 3 holds the lock.
    unsafe { STATIC_LOCK.unlock(3) };
    assert!(STATIC_INIT.try_lock(0));
    // SAFETY: CPU 0 holds the lock.
    unsafe { STATIC_INIT.unlock(0) };
    assert!(format!("{STATIC_LOCK:?}").contains("serving: 1"));
}

/// Waiters enter in the order they took their tickets. Thread `i` is only started once the
/// previous one is queued (`queue_len` shows it), so the ticket order is known.
#[test]
fn fifo_hand_over() {
    fn fifo<const B: usize>() {
        let lock = TicketLock::<Yield, B>::with_relax_and_cpus(8);
        let order = Mutex::new(Vec::new());
        lock.lock(0);
        std::thread::scope(|s| {
            for cpu in 1..=5 {
                let (lock, order) = (&lock, &order);
                s.spawn(move || {
                    lock.lock(cpu);
                    order.lock().unwrap().push(cpu);
                    // SAFETY: `cpu` took the lock just above.
                    unsafe { lock.unlock(cpu) };
                });
                let deadline = Instant::now() + Duration::from_secs(10);
                while lock.queue_len() != cpu + 1 {
                    assert!(Instant::now() < deadline, "waiter {cpu} never queued");
                    std::thread::yield_now();
                }
            }
            // SAFETY: CPU 0 took the lock above.
            unsafe { lock.unlock(0) };
        });
        assert_eq!(*order.lock().unwrap(), [1, 2, 3, 4, 5]);
        assert_eq!(lock.queue_len(), 0);
    }
    fifo::<0>();
    fifo::<DEFAULT_BACKOFF>();
}

/// A waiter does not get in while the lock is held, and does once it is released.
#[test]
fn waiter_blocks_until_release() {
    let lock = TicketLock::new();
    lock.lock(0);
    common::waiter_blocks_until_release(
        || {
            lock.lock(1);
            // SAFETY: CPU 1 took the lock just above.
            unsafe { lock.unlock(1) };
        },
        // SAFETY: CPU 0 took the lock above.
        || unsafe { lock.unlock(0) },
        "another CPU held the lock",
    );
}

/// Release builds: a stray release (of a lock that nothing holds, or a second one) panics at
/// the next acquisition instead of letting it wait forever for a turn that never comes (debug
/// builds panic at the unlock itself: `tests/misuse.rs`).
#[cfg(not(debug_assertions))]
#[test]
fn stray_unlocks_panic_at_the_next_acquisition() {
    common::assert_each_panics(&[
        ("TicketLock: serving counter ahead", &|| {
            let lock = TicketLock::new();
            // SAFETY: deliberately wrong (nothing is held); the next acquisition must panic
            // instead of waiting forever for a turn that never comes.
            unsafe { lock.unlock(0) };
            lock.lock(1);
        }),
        ("TicketLock: serving counter ahead", &|| {
            let lock = TicketLock::new();
            lock.lock(0);
            // SAFETY: CPU 0 holds the lock.
            unsafe { lock.unlock(0) };
            // SAFETY: deliberately wrong (released already).
            unsafe { lock.unlock(0) };
            let _ = lock.try_lock(0);
        }),
    ]);
}

#[test]
fn a_busy_try_lock_is_not_taken_for_a_stray_unlock() {
    // The try_lock check must not fire on a lock that is merely held or contended: `serving`
    // behind `next` is the normal state then.
    let lock = TicketLock::new();
    for _ in 0..1000 {
        lock.lock(0);
        assert!(!lock.try_lock(1));
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
        assert!(lock.try_lock(1));
        assert!(!lock.try_lock(0));
        // SAFETY: CPU 1 holds the lock.
        unsafe { lock.unlock(1) };
    }
}

#[test]
fn cpu_ids_out_of_range_panic() {
    common::assert_each_panics(&[
        (
            "TicketLock: CPU id 2 out of range (this lock supports CPUs 0..2)",
            &|| TicketLock::with_cpus(2).lock(2),
        ),
        ("TicketLock: CPU id 7 out of range", &|| {
            TicketLock::with_cpus(4).try_lock(7);
        }),
    ]);
}

#[test]
fn prechecked_locks_exclude_each_other() {
    // Two locks taken together without the per-lock range check (a kernel's object locks after
    // its entry checked the id once): every thread's increments of both counters are kept.
    use std::sync::atomic::AtomicUsize;
    let threads = common::stress_threads();
    let (a, b) = (
        TicketLock::<Yield>::with_relax_and_cpus(threads),
        TicketLock::<Yield>::with_relax_and_cpus(threads),
    );
    let (x, y) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        for cpu in 0..threads {
            let (a, b, x, y) = (&a, &b, &x, &y);
            s.spawn(move || {
                for i in 0..ITERS {
                    if i % 2 == 0 {
                        TicketLock::lock_all_prechecked([a, b], cpu);
                    } else {
                        a.lock_prechecked(cpu);
                        b.lock_prechecked(cpu);
                    }
                    // Non-atomic read-modify-writes in effect: a lost update shows a broken lock.
                    x.store(x.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                    y.store(y.load(Ordering::Relaxed) + 2, Ordering::Relaxed);
                    // SAFETY: this thread's CPU holds both, each named once.
                    unsafe { TicketLock::unlock_all([b, a], cpu) };
                }
            });
        }
    });
    assert_eq!(x.into_inner(), threads * ITERS);
    assert_eq!(y.into_inner(), 2 * threads * ITERS);
    assert!(!a.is_locked() && !b.is_locked());
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "TicketLock: CPU id 2 out of range (this lock supports CPUs 0..2)")]
fn prechecked_lock_still_checks_in_debug_builds() {
    TicketLock::with_cpus(2).lock_prechecked(2);
}
