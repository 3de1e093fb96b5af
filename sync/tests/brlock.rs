//! Big-reader lock: writer exclusion, reader/writer mixes on real threads, and misuse checks.
#![cfg(not(kernel_locks_loom))]

mod common;

use std::cell::UnsafeCell;
use std::mem::{align_of, size_of};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;

use kernel_locks::pad::{Align32, Align64};
use kernel_locks::raw::ConstInit;
use kernel_locks::{Backoff, BrLock, KernelLock, KernelRwLock, Spin, Wfe};

use common::Yield;

/// Iterations per CPU of the stress tests that wait with [`Yield`].
const ITERS: usize = 2_000;
/// Iterations per CPU with pure spinning (oversubscribed machines hand over slowly).
const SPIN_ITERS: usize = 100;
/// CPUs the stress locks support.
const MAX: usize = 64;

fn threads() -> usize {
    let threads = common::stress_threads();
    assert!(threads <= MAX, "raise MAX to {threads}");
    threads
}

/// Two plain values that writers always update together (`a = b = k + 1`), with a pause and a
/// yield in between, so that a reader running concurrently with a writer sees `a != b`.
struct Pair {
    a: UnsafeCell<u64>,
    b: UnsafeCell<u64>,
}

// SAFETY: accessed only under the lock under test (readers shared, writers exclusive); a broken
// lock shows up as a torn pair or a wrong count, which is what the tests look for.
unsafe impl Sync for Pair {}

impl Pair {
    fn new() -> Self {
        Self {
            a: UnsafeCell::new(0),
            b: UnsafeCell::new(0),
        }
    }

    /// Call with the lock held exclusively. Returns the new value.
    fn write(&self) -> u64 {
        // SAFETY: volatile accesses to our own cells; exclusivity is what the lock provides.
        unsafe {
            let k = std::ptr::read_volatile(self.a.get());
            std::ptr::write_volatile(self.a.get(), k + 1);
            // Widen the window: let other threads run (on few cores they would rarely overlap
            // this otherwise), and spin a little for those already running elsewhere.
            std::thread::yield_now();
            for _ in 0..16 {
                std::hint::spin_loop();
            }
            std::ptr::write_volatile(self.b.get(), k + 1);
            k + 1
        }
    }

    /// Call with the lock held shared. Returns `(a, b)`. Reads `b` first, so that a writer that
    /// enters while we read (its `a` update lands between our two reads) shows as `a != b`;
    /// `yield_inside` widens that window.
    fn read(&self, yield_inside: bool) -> (u64, u64) {
        // SAFETY: volatile reads of our own cells; no writer runs while the lock is held shared.
        unsafe {
            let b = std::ptr::read_volatile(self.b.get());
            if yield_inside {
                std::thread::yield_now();
            }
            for _ in 0..16 {
                std::hint::spin_loop();
            }
            (std::ptr::read_volatile(self.a.get()), b)
        }
    }
}

/// `threads` CPUs each run `iters` operations on a shared [`Pair`]: every `write_every`-th one
/// (offset by the CPU id, so writes interleave) a write, the rest reads, which must never see a
/// torn pair. Writes go through `lock` or `try_lock`, reads through `read_lock` or `try_read_lock`.
/// At the end the pair must count every write exactly.
fn readers_and_writers<L: KernelRwLock>(
    lock: &L,
    threads: usize,
    iters: usize,
    write_every: usize,
    use_try: bool,
) {
    let pair = Pair::new();
    let writes = AtomicUsize::new(0);
    let max_read_seen = AtomicUsize::new(0);
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        for cpu in 0..threads {
            let (lock, pair, writes, max_read_seen, barrier) =
                (lock, &pair, &writes, &max_read_seen, &barrier);
            s.spawn(move || {
                barrier.wait();
                let mut last_seen = 0;
                for i in 0..iters {
                    if (i + cpu) % write_every == 0 {
                        if use_try {
                            while !lock.try_lock(cpu) {
                                std::thread::yield_now();
                            }
                        } else {
                            lock.lock(cpu);
                        }
                        assert!(lock.is_locked());
                        let k = pair.write();
                        // SAFETY: `cpu` holds the lock exclusively.
                        unsafe { lock.unlock(cpu) };
                        assert!(k > last_seen, "{}: a write went backwards", lock.name());
                        last_seen = k;
                        writes.fetch_add(1, Ordering::Relaxed);
                    } else {
                        if use_try {
                            while !lock.try_read_lock(cpu) {
                                std::thread::yield_now();
                            }
                        } else {
                            lock.read_lock(cpu);
                        }
                        let (a, b) = pair.read(i % 8 == 1);
                        // SAFETY: `cpu` holds the lock shared.
                        unsafe { lock.read_unlock(cpu) };
                        assert_eq!(a, b, "{}: a reader saw a write in progress", lock.name());
                        // Our own earlier writes and reads happen before this read.
                        assert!(
                            a >= last_seen,
                            "{}: a reader saw an older value",
                            lock.name()
                        );
                        last_seen = a;
                        max_read_seen.fetch_max(a as usize, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let (a, b) = pair.read(false);
    assert_eq!(a, b);
    assert_eq!(
        a,
        writes.load(Ordering::Relaxed) as u64,
        "{}: lost writes",
        lock.name()
    );
    assert!(max_read_seen.load(Ordering::Relaxed) as u64 <= a);
    assert!(
        !lock.is_locked(),
        "{}: still locked after all CPUs released",
        lock.name()
    );
}

#[test]
fn hammer_write_side() {
    common::hammer(&BrLock::<MAX, Yield>::new(), threads(), ITERS);
}

#[test]
fn hammer_write_side_try_lock() {
    common::hammer_try(&BrLock::<MAX, Yield>::new(), threads(), ITERS);
}

#[test]
fn hammer_write_side_spin_relax_strategies() {
    let threads = threads();
    common::hammer(&BrLock::<MAX, Spin>::new(), threads, SPIN_ITERS);
    common::hammer(&BrLock::<MAX, Backoff>::new(), threads, SPIN_ITERS);
    common::hammer(&BrLock::<MAX, Wfe>::new(), threads, SPIN_ITERS);
}

#[test]
fn readers_and_writers_mostly_reading() {
    readers_and_writers(&BrLock::<MAX, Yield>::new(), threads(), ITERS, 8, false);
}

#[test]
fn readers_and_writers_half_writing() {
    readers_and_writers(&BrLock::<MAX, Yield>::new(), threads(), ITERS, 2, false);
}

#[test]
fn readers_and_writers_try_variants() {
    readers_and_writers(&BrLock::<MAX, Yield>::new(), threads(), ITERS, 4, true);
}

#[test]
fn readers_and_writers_small_padding_spin() {
    // Few CPUs, the Cortex-A9 line size, plain spinning.
    readers_and_writers(&BrLock::<4, Spin, Align32>::new(), 4, SPIN_ITERS, 4, false);
}

#[test]
fn readers_overlap() {
    let lock = BrLock::<3>::new();
    assert!(lock.try_read_lock(0));
    assert!(lock.try_read_lock(1), "a second reader was refused");
    lock.read_lock(2);
    assert!(lock.is_read_locked() && lock.is_locked() && !lock.is_write_locked());
    assert!(!lock.try_lock(1), "a writer got in with readers inside");
    // The failed try_lock gave the writer word back.
    assert!(!lock.is_write_locked());
    for cpu in 0..3 {
        // SAFETY: `cpu` holds the lock shared.
        unsafe { lock.read_unlock(cpu) };
    }
    assert!(!lock.is_locked());
    assert!(lock.try_lock(1));
    assert!(lock.is_write_locked() && !lock.is_read_locked());
    assert!(
        !lock.try_read_lock(0),
        "a reader got in with a writer inside"
    );
    assert!(!lock.try_lock(2), "two writers");
    // SAFETY: CPU 1 holds the lock exclusively.
    unsafe { lock.unlock(1) };
    assert!(!lock.is_locked());
}

/// The unnested pair excludes writers while held and lets them in once released, for each
/// CPU; the writer that got in then shuts readers out, as after `read_unlock`.
#[test]
fn unnested_read_side_excludes_writers() {
    let lock = BrLock::<3>::with_cpus(2);
    for cpu in 0..2 {
        lock.read_lock_unnested(cpu);
        assert!(lock.is_read_locked() && !lock.is_write_locked());
        assert!(!lock.try_lock(1 - cpu), "a writer got in beside a reader");
        // SAFETY: `cpu` holds the read side, taken above; released once.
        unsafe { lock.read_unlock_unnested(cpu) };
        assert!(!lock.is_locked(), "the reader's slot stayed raised");
        assert!(lock.try_lock(1 - cpu));
        assert!(!lock.try_read_lock(cpu), "a reader got in beside a writer");
        // SAFETY: `1 - cpu` holds the write side.
        unsafe { lock.unlock(1 - cpu) };
    }
}

/// The unchecked read side (for a caller that checked the CPU id) excludes writers as the
/// checked one does; debug builds still check the id.
#[test]
fn unchecked_unnested_read_side_excludes_writers() {
    let lock = BrLock::<3>::with_cpus(2);
    for cpu in 0..2 {
        // SAFETY: `cpu < 2 = max_cpus()`, and it does not hold the lock.
        unsafe { lock.read_lock_unnested_unchecked(cpu) };
        assert!(lock.is_read_locked() && !lock.is_write_locked());
        assert!(!lock.try_lock(1 - cpu), "a writer got in beside a reader");
        // SAFETY: `cpu` holds the read side, taken above; released once.
        unsafe { lock.read_unlock_unnested(cpu) };
        assert!(lock.try_lock(1 - cpu), "the reader's slot stayed raised");
        // SAFETY: `1 - cpu` holds the write side.
        unsafe { lock.unlock(1 - cpu) };
    }
}

/// A writer waits until the last reader leaves, readers wait until the writer leaves.
#[test]
fn writer_and_reader_wait_for_each_other() {
    let lock = BrLock::<2>::new();
    // CPU 0's acquisition, CPU 1's acquisition and release, CPU 0's release, what CPU 0 holds.
    for (hold, wait, release, held) in [
        (
            ReadLock(0),
            [Lock(1), Unlock(1)],
            ReadUnlock(0),
            "a reader was inside (a writer waited)",
        ),
        (
            Lock(0),
            [ReadLock(1), ReadUnlock(1)],
            Unlock(0),
            "a writer was inside (a reader waited)",
        ),
    ] {
        run(&lock, &[hold]);
        common::waiter_blocks_until_release(|| run(&lock, &wait), || run(&lock, &[release]), held);
    }
    assert!(!lock.is_locked());
}

static STATIC_LOCK: BrLock<4> = BrLock::new();
static STATIC_INIT: BrLock<2, Backoff, Align64> = ConstInit::INIT;

#[test]
fn statics_layout_and_names() {
    STATIC_LOCK.read_lock(3);
    // SAFETY: CPU 3 holds the lock shared.
    unsafe { STATIC_LOCK.read_unlock(3) };
    STATIC_INIT.lock(1);
    assert!(format!("{STATIC_INIT:?}").contains("writer: Some(1)"));
    // SAFETY: CPU 1 holds the lock exclusively.
    unsafe { STATIC_INIT.unlock(1) };
    assert_eq!(STATIC_LOCK.name(), "brlock");
    assert_eq!(STATIC_LOCK.max_cpus(), 4);
    // The writer word and each slot on a line of their own.
    assert_eq!(size_of::<BrLock<4, Spin, Align64>>(), 5 * 64);
    assert_eq!(align_of::<BrLock<4, Spin, Align64>>(), 64);
    assert_eq!(size_of::<BrLock<2, Spin, Align32>>(), 3 * 32);
}

#[test]
fn with_cpus_narrows_the_ids_and_keeps_exclusion() {
    // A kernel that learns at boot that it has 2 of up to 64 cores.
    let lock = BrLock::<64, common::Yield>::with_cpus(2);
    assert_eq!(lock.max_cpus(), 2);
    common::hammer(&lock, 2, 5_000);
    lock.read_lock(1);
    assert!(
        !lock.try_lock(0),
        "the writer ignored a reader of a CPU in use"
    );
    // SAFETY: CPU 1 holds it shared.
    unsafe { lock.read_unlock(1) };
    assert!(format!("{lock:?}").contains("cpus: 2"));
}

#[test]
#[cfg(target_arch = "x86_64")]
fn memory_per_n_on_x86_64_is_as_documented() {
    assert_eq!(std::mem::size_of::<BrLock<4>>(), 640);
    assert_eq!(std::mem::size_of::<BrLock<16>>(), 2176);
    assert_eq!(std::mem::size_of::<BrLock<64>>(), 8320);
}

#[test]
fn read_lock_unnested_excludes_writers_like_read_lock() {
    // Two threads: readers through `read_lock_unnested`, a writer through `lock`; a reader
    // never sees the writer's two halves apart.
    let lock = BrLock::<2>::new();
    let halves = [AtomicUsize::new(0), AtomicUsize::new(0)];
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 1..=2000 {
                lock.lock(0);
                halves[0].store(i, Ordering::Relaxed);
                halves[1].store(i, Ordering::Relaxed);
                // SAFETY: CPU 0 holds the write side.
                unsafe { lock.unlock(0) };
            }
        });
        s.spawn(|| {
            for _ in 0..2000 {
                lock.read_lock_unnested(1);
                let (a, b) = (
                    halves[0].load(Ordering::Relaxed),
                    halves[1].load(Ordering::Relaxed),
                );
                assert_eq!(a, b, "a reader saw a half-written pair");
                // SAFETY: CPU 1 holds the read side.
                unsafe { lock.read_unlock(1) };
            }
        });
    });
    assert!(!lock.is_read_locked() && !lock.is_write_locked());
}

/// One step of a test that [`run`]s a sequence: an operation of the lock by a CPU.
#[derive(Clone, Copy)]
enum Op {
    ReadLock(usize),
    TryReadLock(usize),
    ReadUnlock(usize),
    ReadLockUnnested(usize),
    /// `read_lock_unnested_unchecked`.
    #[cfg_attr(not(debug_assertions), allow(dead_code))] // debug-build cases only
    ReadLockUnchecked(usize),
    #[cfg_attr(not(debug_assertions), allow(dead_code))] // debug-build cases only
    ReadUnlockUnnested(usize),
    Lock(usize),
    Unlock(usize),
}

use Op::*;

/// Runs `ops` in order on `lock`. Every step is a correct use (a release by the CPU that holds
/// the lock in that mode) except the last of a misuse case, which is the misuse under test: the
/// lock detects it and panics before it touches anything (`ReadLockUnchecked` only in debug
/// builds, whose cases run only there; its cases take an id whose slot exists, so a release
/// build could not misbehave either).
fn run<const N: usize>(lock: &BrLock<N>, ops: &[Op]) {
    for op in ops {
        match *op {
            ReadLock(cpu) => lock.read_lock(cpu),
            TryReadLock(cpu) => drop(lock.try_read_lock(cpu)),
            // SAFETY: a release by the holder, or the detected misuse under test (see above).
            ReadUnlock(cpu) => unsafe { lock.read_unlock(cpu) },
            ReadLockUnnested(cpu) => lock.read_lock_unnested(cpu),
            // SAFETY: the detected misuse under test, in debug builds only (see above).
            ReadLockUnchecked(cpu) => unsafe { lock.read_lock_unnested_unchecked(cpu) },
            // SAFETY: a release by the holder, or the detected misuse under test (see above).
            ReadUnlockUnnested(cpu) => unsafe { lock.read_unlock_unnested(cpu) },
            Lock(cpu) => lock.lock(cpu),
            // SAFETY: a release by the holder, or the detected misuse under test (see above).
            Unlock(cpu) => unsafe { lock.unlock(cpu) },
        }
    }
}

/// Misuse that every build detects: releases by a CPU that does not hold the lock in that mode,
/// acquisitions by a CPU that holds it shared already, and CPU ids beyond the lock's range (the
/// run-time count of `with_cpus` included) through every entry point.
#[test]
fn misuse_panics() {
    common::assert_each_panics(&[
        (
            "BrLock: read_unlock by CPU 0, which does not hold the lock shared",
            &|| run(&BrLock::<2>::new(), &[ReadUnlock(0)]),
        ),
        (
            "BrLock: read_unlock by CPU 1, which does not hold the lock shared",
            &|| run(&BrLock::<2>::new(), &[ReadLock(0), ReadUnlock(1)]),
        ),
        (
            "BrLock: unlock by CPU 0 of a lock that is not write-held",
            &|| run(&BrLock::<2>::new(), &[Unlock(0)]),
        ),
        (
            "BrLock: unlock by CPU 1, but CPU 0 holds the write lock",
            &|| run(&BrLock::<2>::new(), &[Lock(0), Unlock(1)]),
        ),
        (
            "BrLock: CPU 0 read-locked a lock it already holds shared",
            &|| run(&BrLock::<2>::new(), &[ReadLock(0), ReadLock(0)]),
        ),
        (
            "BrLock: CPU 1 write-locked a lock it already holds shared",
            &|| run(&BrLock::<2>::new(), &[ReadLock(1), Lock(1)]),
        ),
        (
            "BrLock: CPU id 4 out of range (this lock supports CPUs 0..4)",
            &|| run(&BrLock::<4>::new(), &[Lock(4)]),
        ),
        (
            "BrLock: CPU id 9 out of range (this lock supports CPUs 0..2)",
            &|| run(&BrLock::<2>::new(), &[ReadLock(9)]),
        ),
        ("BrLock: CPU id 2 out of range", &|| {
            run(&BrLock::<2>::new(), &[TryReadLock(2)])
        }),
        ("BrLock: CPU id 2 out of range", &|| {
            run(&BrLock::<2>::new(), &[ReadUnlock(2)])
        }),
        (
            "BrLock: CPU id 2 out of range (this lock supports CPUs 0..2)",
            &|| run(&BrLock::<64>::with_cpus(2), &[ReadLock(2)]),
        ),
        (
            "BrLock: CPU id 2 out of range (this lock supports CPUs 0..2)",
            &|| run(&BrLock::<64>::with_cpus(2), &[ReadLockUnnested(2)]),
        ),
        // Only the compile-time bound is checked in line; the id's lowered slot leads to the
        // range check, so the message still names the range rather than a missing shared hold.
        (
            "BrLock: CPU id 5 out of range (this lock supports CPUs 0..2)",
            &|| run(&BrLock::<64>::with_cpus(2), &[ReadUnlock(5)]),
        ),
        ("BrLock::with_cpus: the CPU count must be in 1..=N", &|| {
            run(&BrLock::<4>::with_cpus(5), &[])
        }),
    ]);
}

/// What debug builds check besides: the unchecked read side's range, the releasing CPU of the
/// unnested read side, and nesting (a read lock by the writer, an unnested read lock twice).
#[test]
#[cfg(debug_assertions)]
fn debug_builds_check_more() {
    common::assert_each_panics(&[
        ("BrLock: CPU id 2 out of range", &|| {
            run(&BrLock::<3>::with_cpus(2), &[ReadLockUnchecked(2)])
        }),
        (
            "BrLock: read_unlock by CPU 1, which does not hold the lock shared",
            &|| {
                run(
                    &BrLock::<2>::new(),
                    &[ReadLockUnnested(0), ReadUnlockUnnested(1)],
                )
            },
        ),
        (
            "BrLock: CPU 0 read-locked a lock it already holds for writing",
            &|| run(&BrLock::<2>::new(), &[Lock(0), ReadLock(0)]),
        ),
        (
            "BrLock: CPU 1 read-locked a lock it already holds shared",
            &|| {
                run(
                    &BrLock::<2>::new(),
                    &[ReadLockUnnested(1), ReadLockUnnested(1)],
                )
            },
        ),
    ]);
}
