//! MCS lock tests on real threads: exact-total stress (oversubscribed on small machines on
//! purpose), `try_lock` and `is_locked` semantics, FIFO order, and misuse.
#![cfg(not(kernel_locks_loom))]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex as StdMutex;

use kernel_locks::{Backoff, ConstInit, CpuId, KernelLock, McsLock, Relax, Spin, Wfe};

#[test]
fn mcs_exact_count_under_contention() {
    let threads = common::stress_threads();
    common::hammer(&McsLock::<64, common::Yield>::new(), threads, 20_000);
}

#[test]
fn mcs_exact_count_under_contention_unchecked() {
    let threads = common::stress_threads().min(64);
    common::hammer_unchecked(
        &McsLock::<64, common::Yield>::with_cpus(threads),
        threads,
        2_000,
    );
}

#[test]
fn mcs_try_lock_exact_count() {
    let threads = common::stress_threads();
    common::hammer_try(&McsLock::<64, common::Yield>::new(), threads, 10_000);
}

#[test]
fn mcs_mixed_lock_and_try_lock() {
    let threads = common::stress_threads();
    common::hammer_mixed(&McsLock::<64, common::Yield>::new(), threads, 10_000);
}

#[test]
fn mcs_other_strategies() {
    // Pure spinning strategies, not oversubscribed (one thread per host core) to stay fast.
    let threads = common::stress_threads();
    let threads = threads.min(std::thread::available_parallelism().map_or(2, |n| n.get()));
    common::hammer(&McsLock::<64, Wfe>::new(), threads, 5_000);
    common::hammer(&McsLock::<64, Spin>::new(), threads, 5_000);
    common::hammer(&McsLock::<64, Backoff>::new(), threads, 5_000);
}

/// Flags "CPU `cpu` has polled at least once", a row for each test that uses them: set by
/// [`Announce`].
static POLLED: [[AtomicBool; 4]; 3] = [const { [const { AtomicBool::new(false) }; 4] }; 3];

/// A wait strategy that marks, in row `ROW` of [`POLLED`], each CPU that calls it. The lock calls
/// it only from its wait loops, which a CPU enters after it has joined the queue and linked
/// itself behind its predecessor: a set flag means the CPU is queued, with no sleep or timing.
#[derive(Default)]
struct Announce<const ROW: usize>;

impl<const ROW: usize> Relax for Announce<ROW> {
    fn relax(&mut self, cpu: CpuId) {
        POLLED[ROW][cpu].store(true, Ordering::SeqCst);
        std::thread::yield_now();
    }
}

/// Waits until CPU `cpu` has polled (is queued), in row `ROW`.
fn until_queued<const ROW: usize>(cpu: CpuId) {
    while !POLLED[ROW][cpu].load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
}

#[test]
fn mcs_hands_over_in_fifo_order() {
    // CPU 0 holds the lock; CPUs 3, 1, 2 queue in that order (each spawned only once the one
    // before is queued); they must enter in that order.
    let lock = McsLock::<4, Announce<0>>::new();
    let order = StdMutex::new(Vec::new());
    lock.lock(0);
    std::thread::scope(|s| {
        for cpu in [3, 1, 2] {
            let (lock, order) = (&lock, &order);
            s.spawn(move || {
                lock.lock(cpu);
                order.lock().unwrap().push(cpu);
                // SAFETY: `cpu` holds the lock.
                unsafe { lock.unlock(cpu) };
            });
            until_queued::<0>(cpu);
        }
        assert!(
            order.lock().unwrap().is_empty(),
            "a waiter entered while CPU 0 held the lock"
        );
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
    });
    assert_eq!(*order.lock().unwrap(), vec![3, 1, 2]);
    assert!(!lock.is_locked());
}

#[test]
fn mcs_try_lock_and_is_locked() {
    let lock = McsLock::<4>::new();
    assert!(!lock.is_locked());
    assert!(lock.try_lock(2));
    assert!(lock.is_locked());
    assert!(!lock.try_lock(1), "try_lock succeeded on a held lock");
    assert!(
        !lock.try_lock(2),
        "try_lock by the holder must fail (and not panic)"
    );
    // SAFETY: CPU 2 holds it (the failed try_lock calls changed nothing).
    unsafe { lock.unlock(2) };
    assert!(!lock.is_locked());
    // A lock taken with `lock` and released; then try_lock again, on every CPU.
    for cpu in 0..4 {
        lock.lock(cpu);
        assert!(!lock.try_lock((cpu + 1) % 4));
        // SAFETY: `cpu` holds it.
        unsafe { lock.unlock(cpu) };
        assert!(lock.try_lock(cpu));
        // SAFETY: `cpu` holds it.
        unsafe { lock.unlock(cpu) };
    }
    assert!(!lock.is_locked());
}

#[test]
fn mcs_waiter_blocks_then_gets_the_lock_try_lock_fails_throughout() {
    let lock = McsLock::<4, common::Yield>::new();
    lock.lock(0);
    common::waiter_blocks_until_release(
        || {
            lock.lock(1);
            // SAFETY: CPU 1 holds the lock.
            unsafe { lock.unlock(1) };
        },
        || {
            assert!(lock.is_locked());
            assert!(!lock.try_lock(2), "try_lock jumped the queue");
            // SAFETY: CPU 0 holds the lock.
            unsafe { lock.unlock(0) };
        },
        "CPU 0 held the lock",
    );
    assert!(!lock.is_locked());
}

#[test]
fn mcs_queue_with_waiters_stays_locked_and_try_lock_fails() {
    // CPU 0 holds, CPU 1 waits: the hand-over goes to CPU 1, never to a try_lock.
    let lock = McsLock::<4, Announce<1>>::new();
    lock.lock(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            lock.lock(1);
            // SAFETY: CPU 1 holds the lock.
            unsafe { lock.unlock(1) };
        });
        until_queued::<1>(1);
        assert!(!lock.try_lock(2));
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
    });
    assert!(!lock.is_locked());
    assert!(lock.try_lock(2));
    // SAFETY: CPU 2 holds the lock.
    unsafe { lock.unlock(2) };
}

#[test]
fn mcs_constructors() {
    static LOCK: McsLock<8> = McsLock::new();
    static AT_BOOT: McsLock<8> = McsLock::with_cpus(2);
    static FROM_INIT: McsLock<4> = <McsLock<4> as ConstInit>::INIT;
    LOCK.lock(7);
    // SAFETY: CPU 7 holds it.
    unsafe { LOCK.unlock(7) };
    assert_eq!(LOCK.max_cpus(), 8);
    assert_eq!(AT_BOOT.max_cpus(), 2);
    assert_eq!((FROM_INIT.name(), FROM_INIT.max_cpus()), ("mcs", 4));
    assert!(!FROM_INIT.is_locked());
    let default: McsLock<3, Backoff> = McsLock::default();
    assert_eq!(default.max_cpus(), 3);
    default.lock(2);
    assert_eq!(format!("{default:?}"), "McsLock { cpus: 3, locked: true }");
    // SAFETY: CPU 2 holds it.
    unsafe { default.unlock(2) };
    assert_eq!(format!("{default:?}"), "McsLock { cpus: 3, locked: false }");
}

#[test]
fn mcs_with_cpus_narrows_the_ids_and_keeps_working() {
    let lock = McsLock::<8, common::Yield>::with_cpus(3);
    assert_eq!(lock.max_cpus(), 3);
    common::hammer(&lock, 3, 2_000);
}

#[test]
fn mcs_out_of_range_ids_panic_in_every_build() {
    let lock = McsLock::<4>::new();
    let narrowed = McsLock::<8>::with_cpus(3);
    common::assert_each_panics(&[
        (
            "McsLock: CPU id 4 out of range (this lock supports CPUs 0..4)",
            &|| lock.lock(4),
        ),
        ("McsLock: CPU id 9 out of range", &|| {
            let _ = lock.try_lock(9);
        }),
        ("McsLock: CPU id 4 out of range", &|| {
            // SAFETY: deliberately violated (CPU 4 does not exist); every build must catch it.
            unsafe { lock.unlock(4) }
        }),
        (
            "McsLock: CPU id 3 out of range (this lock supports CPUs 0..3)",
            &|| narrowed.lock(3),
        ),
        ("McsLock: CPU id 3 out of range", &|| {
            let _ = narrowed.try_lock(3);
        }),
        ("McsLock: CPU id 5 out of range", &|| {
            // SAFETY: deliberately violated (CPU 5 is beyond the run-time count).
            unsafe { narrowed.unlock(5) }
        }),
        (
            "McsLock::with_cpus: the CPU count must be in 1..=N",
            &|| {
                let _ = McsLock::<4>::with_cpus(5);
            },
        ),
        (
            "McsLock::with_cpus: the CPU count must be in 1..=N",
            &|| {
                let _ = McsLock::<4>::with_cpus(0);
            },
        ),
    ]);
    // None of the rejected calls took or changed anything.
    assert!(!lock.is_locked() && !narrowed.is_locked());
    assert!(lock.try_lock(3) && narrowed.try_lock(2));
    // SAFETY: CPU 3 holds `lock`, CPU 2 `narrowed`.
    unsafe {
        lock.unlock(3);
        narrowed.unlock(2);
    }
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "McsLock: CPU id 4 out of range")]
fn mcs_lock_unchecked_keeps_the_range_check_in_debug_builds() {
    // SAFETY: deliberately violated; debug builds must catch it.
    unsafe { McsLock::<4>::new().lock_unchecked(4) };
}

#[test]
fn mcs_unlock_of_a_free_lock_panics_in_every_build_and_harms_nothing() {
    let lock = McsLock::<4>::new();
    lock.lock(1);
    // SAFETY: CPU 1 holds it.
    unsafe { lock.unlock(1) };
    common::assert_each_panics(&[
        (
            "McsLock: unlock by CPU 0, which does not hold the lock",
            &|| {
                // SAFETY: deliberately violated (nothing is held); every build must catch it.
                unsafe { lock.unlock(0) }
            },
        ),
        (
            "McsLock: unlock by CPU 1, which does not hold the lock",
            &|| {
                // SAFETY: deliberately violated (a double unlock); every build must catch it.
                unsafe { lock.unlock(1) }
            },
        ),
    ]);
    assert!(!lock.is_locked());
    common::hammer(&lock, 2, 100);
}

#[test]
#[cfg(debug_assertions)]
fn mcs_relocking_and_unlocks_by_non_holders_panic_in_debug_builds_and_harm_nothing() {
    let lock = McsLock::<4>::new();
    lock.lock(2);
    common::assert_each_panics(&[
        (
            "McsLock: CPU 2 locks a lock it already holds (re-locking deadlocks",
            &|| lock.lock(2),
        ),
        (
            "McsLock: unlock by CPU 3, but CPU 2 holds the lock",
            &|| {
                // SAFETY: deliberately violated: CPU 2 holds it, not CPU 3.
                unsafe { lock.unlock(3) }
            },
        ),
    ]);
    // The holder's lock is intact.
    assert!(lock.is_locked() && !lock.try_lock(0));
    // SAFETY: CPU 2 holds it.
    unsafe { lock.unlock(2) };
    assert!(!lock.is_locked());
    // A lock taken through try_lock is checked the same way.
    assert!(lock.try_lock(0));
    common::assert_each_panics(&[("McsLock: CPU 0 locks a lock it already holds", &|| {
        lock.lock(0)
    })]);
    // SAFETY: CPU 0 holds it.
    unsafe { lock.unlock(0) };
    common::hammer(&lock, 2, 100);
}

#[test]
#[cfg(debug_assertions)]
fn mcs_unlock_naming_a_waiting_cpu_panics_in_debug_builds_and_harms_nothing() {
    // In a release build this unlock would hand the lock on beside its holder (module docs).
    let lock = McsLock::<4, Announce<2>>::new();
    lock.lock(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            lock.lock(3);
            // SAFETY: CPU 3 holds the lock.
            unsafe { lock.unlock(3) };
        });
        until_queued::<2>(3);
        common::assert_each_panics(&[(
            "McsLock: unlock by CPU 3, but CPU 0 holds the lock",
            &|| {
                // SAFETY: deliberately violated: CPU 3 waits, CPU 0 holds.
                unsafe { lock.unlock(3) }
            },
        )]);
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
    });
    assert!(!lock.is_locked());
}
