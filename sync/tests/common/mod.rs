//! Shared helpers for the lock stress tests (real threads) and loom models.
#![allow(dead_code)]

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::Duration;

/// A plain, non-atomic counter. Incremented with a deliberately wide read-modify-write window, so
/// that two CPUs inside the critical section at once lose updates and the exact-total check fails.
pub struct RacyCounter(UnsafeCell<u64>);

// SAFETY: only accessed inside a lock's critical section (that is what the tests check); a broken
// lock shows up as a wrong total, which is the point.
unsafe impl Sync for RacyCounter {}

impl RacyCounter {
    /// A zero counter.
    pub const fn new() -> Self {
        Self(UnsafeCell::new(0))
    }

    /// Read, pause, write back plus one. Call only while holding the lock under test.
    pub fn increment(&self) {
        // SAFETY: volatile accesses to our own cell; exclusivity is what the caller's lock provides.
        unsafe {
            let v = std::ptr::read_volatile(self.0.get());
            for _ in 0..4 {
                std::hint::spin_loop();
            }
            std::ptr::write_volatile(self.0.get(), v + 1);
        }
    }

    /// The current value (call after all threads joined).
    pub fn get(&self) -> u64 {
        // SAFETY: called when no thread increments any more.
        unsafe { std::ptr::read_volatile(self.0.get()) }
    }
}

/// Runs `threads` threads, thread `i` acting as CPU `i`, each calling `body(cpu)` `iters` times after
/// a common start barrier.
pub fn on_cpus(threads: usize, iters: usize, body: impl Fn(usize) + Sync) {
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        for cpu in 0..threads {
            let (barrier, body) = (&barrier, &body);
            s.spawn(move || {
                barrier.wait();
                for _ in 0..iters {
                    body(cpu);
                }
            });
        }
    });
}

/// Stress-tests a mutual-exclusion lock: every CPU increments the racy counter `iters` times under
/// the lock; the total must be exact.
pub fn hammer<L: kernel_locks::KernelLock>(lock: &L, threads: usize, iters: usize) {
    hammer_via(lock, threads, iters, |cpu| lock.lock(cpu));
}

/// [`hammer`] through `lock_unchecked` (the acquisition for callers that checked the CPU
/// id): `threads` must be at most `lock.max_cpus()`.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn hammer_unchecked<L: kernel_locks::KernelLock>(lock: &L, threads: usize, iters: usize) {
    assert!(
        threads <= lock.max_cpus(),
        "more threads than the lock's CPUs"
    );
    // SAFETY: `on_cpus` passes ids below `threads`, at most `max_cpus()` (checked above).
    hammer_via(lock, threads, iters, |cpu| unsafe {
        lock.lock_unchecked(cpu)
    });
}

/// [`hammer`] with `acquire` taking the lock for a CPU.
fn hammer_via<L: kernel_locks::KernelLock>(
    lock: &L,
    threads: usize,
    iters: usize,
    acquire: impl Fn(usize) + Sync,
) {
    let counter = RacyCounter::new();
    on_cpus(threads, iters, |cpu| {
        acquire(cpu);
        assert!(
            lock.is_locked(),
            "{}: is_locked() false while held",
            lock.name()
        );
        counter.increment();
        // SAFETY: `cpu` took the lock just above.
        unsafe { lock.unlock(cpu) };
    });
    assert_eq!(
        counter.get(),
        (threads * iters) as u64,
        "{}: lost updates, so two CPUs were in the critical section at once",
        lock.name()
    );
    assert!(
        !lock.is_locked(),
        "{}: still locked after all CPUs released",
        lock.name()
    );
}

/// Like [`hammer`] but through `try_lock`, retrying until it succeeds.
pub fn hammer_try<L: kernel_locks::KernelLock>(lock: &L, threads: usize, iters: usize) {
    hammer_via(lock, threads, iters, |cpu| {
        while !lock.try_lock(cpu) {
            std::hint::spin_loop();
        }
    });
}

/// Like [`hammer`], with the even CPUs acquiring through `lock` and the odd ones through
/// `try_lock`, retried (yielding the host thread in between) until it succeeds.
pub fn hammer_mixed<L: kernel_locks::KernelLock>(lock: &L, threads: usize, iters: usize) {
    hammer_via(lock, threads, iters, |cpu| {
        if cpu % 2 == 0 {
            lock.lock(cpu);
        } else {
            while !lock.try_lock(cpu) {
                std::thread::yield_now();
            }
        }
    });
}

/// Checks that a CPU waiting for a lock that the caller holds does not get in until the caller
/// releases it: another thread runs `wait` (which acquires and releases the lock as another CPU)
/// and then marks that it got through. `held` describes the caller's hold for the failure
/// message. After 50 ms the mark must still be unset; then `release` gives the lock back, and
/// once the thread is joined the mark must be set.
pub fn waiter_blocks_until_release(wait: impl FnOnce() + Send, release: impl FnOnce(), held: &str) {
    let entered = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            wait();
            entered.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !entered.load(Ordering::SeqCst),
            "a waiter entered while {held}"
        );
        release();
    });
    assert!(
        entered.load(Ordering::SeqCst),
        "the waiter never entered after the release"
    );
}

/// Number of threads for stress tests: at least 4 (oversubscribed on small machines, which is
/// what shakes out hand-over bugs), or the machine's parallelism if larger.
pub fn stress_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .max(4)
}

/// A wait strategy for oversubscribed stress tests: spin briefly, then yield the host thread.
///
/// FIFO locks (CLH, ticket) convoy badly when the next waiter in line is descheduled: with more
/// threads than cores a pure spin makes a test take minutes. A kernel never has this problem (one
/// CPU per waiter), so tests use this strategy and keep pure spinning for the benchmarks.
#[derive(Default)]
pub struct Yield {
    polls: u32,
}

impl kernel_locks::Relax for Yield {
    fn relax(&mut self, _cpu: usize) {
        self.polls += 1;
        if self.polls % 16 == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Asserts that every case panics with a message that contains its text, as
/// `#[should_panic(expected = ...)]` checks for a whole test; give each case a lock of its own,
/// since a panicking case may leave its lock in any state.
#[track_caller]
pub fn assert_each_panics(cases: &[(&str, &dyn Fn())]) {
    for (expected, case) in cases {
        let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(case))
            .expect_err(&format!("no panic, expected one with {expected:?}"));
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        assert!(
            message.contains(expected),
            "the panic message {message:?} lacks {expected:?}"
        );
    }
}
