//! `Mutex<L, T>` / `RwLock<L, T>` on real threads (each thread one CPU): exact totals of a plain,
//! non-atomic counter updated through the guards, for every lock kind; and the compile-fail
//! checks that a guard cannot be sent to another thread (tests/ui), whose expected errors name
//! the guards' marker, `CpuBound`.
#![cfg(not(kernel_locks_loom))]

mod common;

use kernel_locks::{
    BrLock, ClhLock, KernelLock, KernelRwLock, Mutex, NoLock, RtmLock, RwLock, TicketLock,
};

/// Every CPU adds 1 to a plain `u64` through a guard `iters` times, with a read-pause-write window
/// wide enough that two CPUs inside at once lose updates.
fn hammer_mutex<L: KernelLock>(mutex: &Mutex<L, u64>, threads: usize, iters: usize) {
    common::on_cpus(threads, iters, |cpu| {
        let mut guard = mutex.lock(cpu);
        assert_eq!(guard.cpu(), cpu);
        let v = *guard;
        for _ in 0..4 {
            std::hint::spin_loop();
        }
        *guard = v + 1;
    });
    assert_eq!(
        *mutex.lock(0),
        (threads * iters) as u64,
        "{}: lost updates through Mutex guards",
        mutex.raw().name()
    );
    assert!(!mutex.is_locked());
}

#[test]
fn mutex_exact_totals_over_every_lock() {
    let threads = common::stress_threads();
    hammer_mutex(
        &Mutex::new(ClhLock::<64, common::Yield>::new(), 0),
        threads,
        10_000,
    );
    hammer_mutex(
        &Mutex::new(TicketLock::<common::Yield>::with_relax(), 0),
        threads,
        10_000,
    );
    hammer_mutex(
        &Mutex::new(BrLock::<64, common::Yield>::new(), 0),
        threads,
        5_000,
    );
    let rtm = RtmLock::<_, 64>::new(TicketLock::<common::Yield>::with_relax());
    hammer_mutex(&Mutex::new(rtm, 0), threads, 5_000);
}

#[test]
fn mutex_try_lock_exact_total() {
    let threads = common::stress_threads();
    let mutex = Mutex::new(ClhLock::<64, common::Yield>::new(), 0u64);
    common::on_cpus(threads, 5_000, |cpu| loop {
        if let Some(mut guard) = mutex.try_lock(cpu) {
            *guard += 1;
            break;
        }
        std::thread::yield_now();
    });
    assert_eq!(mutex.into_inner(), threads as u64 * 5_000);
}

#[test]
fn mutex_try_lock_fails_while_held_and_guard_releases() {
    let mutex = Mutex::new(ClhLock::<2>::new(), vec![1, 2]);
    let guard = mutex.lock(0);
    assert!(
        mutex.try_lock(1).is_none(),
        "try_lock succeeded on a held mutex"
    );
    assert!(mutex.is_locked());
    drop(guard);
    assert!(
        !mutex.is_locked(),
        "dropping the guard did not release the lock"
    );
    mutex.try_lock(1).expect("free mutex").push(3);
    assert_eq!(*mutex.lock(1), [1, 2, 3]);
}

#[test]
fn rwlock_readers_and_writers_exact_totals() {
    // Writers add 1 to every cell; readers check that all cells are equal (a torn write shows as
    // unequal cells) and count what they saw.
    let threads = common::stress_threads();
    let lock = RwLock::new(BrLock::<64, common::Yield>::new(), [0u64; 8]);
    let writes = std::sync::atomic::AtomicU64::new(0);
    common::on_cpus(threads, 4_000, |cpu| {
        if cpu % 2 == 0 {
            let mut cells = lock.write(cpu);
            for cell in cells.iter_mut() {
                let v = *cell;
                std::hint::spin_loop();
                *cell = v + 1;
            }
            writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        } else {
            let cells = lock.read(cpu);
            assert_eq!(cells.cpu(), cpu);
            assert!(
                cells.iter().all(|c| *c == cells[0]),
                "torn write seen: {cells:?}"
            );
        }
    });
    let expected = writes.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(expected, threads.div_ceil(2) as u64 * 4_000);
    assert_eq!(*lock.read(0), [expected; 8]);
    assert!(!lock.is_locked());
}

#[test]
fn rwlock_try_variants_respect_the_other_side() {
    let lock = RwLock::new(BrLock::<4>::new(), 5u32);
    {
        let r = lock.read(0);
        assert!(lock.try_write(1).is_none(), "writer beside a reader");
        assert_eq!(*lock.try_read(2).expect("second reader"), 5);
        assert_eq!(*r, 5);
    }
    {
        let mut w = lock.try_write(3).expect("free lock");
        *w = 6;
        assert!(lock.try_read(0).is_none(), "reader beside a writer");
    }
    assert!(!lock.raw().is_read_locked() && !lock.raw().is_write_locked());
    assert_eq!(lock.into_inner(), 6);
}

#[test]
fn rwlock_over_nolock_is_a_plain_cell_for_disjoint_use() {
    // SAFETY: one thread, no conflicting critical sections.
    let lock = RwLock::new(unsafe { NoLock::new() }, 1u8);
    *lock.write(0) += 1;
    assert_eq!(*lock.read(0), 2);
    assert_eq!(lock.raw().max_cpus(), usize::MAX);
    let _ = <NoLock as KernelRwLock>::try_read_lock;
}

/// The marker that makes the guards `!Send` takes no room: a guard is its reference and its CPU.
#[test]
fn the_cpu_bound_marker_is_zero_sized() {
    use core::mem::size_of;
    assert_eq!(size_of::<kernel_locks::CpuBound>(), 0);
    let guard = size_of::<(&(), kernel_locks::CpuId)>();
    assert_eq!(
        size_of::<kernel_locks::MutexGuard<'static, ClhLock<2>, u32>>(),
        guard
    );
    assert_eq!(
        size_of::<kernel_locks::RwLockWriteGuard<'static, BrLock<2>, u32>>(),
        guard
    );
}

/// Every guard and token of the crate is `!Send`, and the compiler's error names the marker
/// that makes it so (`*const CpuBound`, see the `.stderr` files).
#[test]
fn guards_cannot_be_sent_to_another_thread() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
