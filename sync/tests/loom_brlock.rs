//! loom models of the big-reader lock with two CPUs: writer against writer, writer against
//! reader (a reader never observes a write in progress), reader against reader (they overlap).
//! The models of the kernel's protocols over it are beside the kernel
//! (`kernel/tests/loom_handshake.rs`).
//!
//! Run: `RUSTFLAGS="--cfg kernel_locks_loom" cargo test -p kernel-locks --release --test loom_brlock`.
//!
//! Note that loom treats a `SeqCst` fence as at least as strong as the C++ model does (it joins
//! every thread's view at each such fence), so these models check the algorithm's logic; the
//! argument that the fences suffice under C++/ARM rules is in `sync/src/brlock.rs`.
#![cfg(kernel_locks_loom)]

#[path = "common/loom_model.rs"]
mod loom_model;

use kernel_locks::{BrLock, KernelLock, KernelRwLock, Spin};
use loom::cell::UnsafeCell;
use loom::sync::Arc;

type Lock = BrLock<2, Spin>;

#[test]
fn writer_against_writer() {
    loom_model::mutual_exclusion(Lock::new, 2, false);
}

#[test]
fn writer_against_writer_try_lock() {
    loom_model::mutual_exclusion(Lock::new, 2, true);
}

/// How the reader and the writer of [`writer_against_reader`] acquire the lock.
///
/// `Try` makes up to [`TRIES`] attempts and then waits. Looping on `try_lock` against
/// `try_read_lock` (or against a waiting reader) without a bound can livelock: each attempt
/// raises its flag, sees the other's, and backs off, forever in an adversarial schedule, which
/// loom finds. Real CPUs drift apart; a kernel should wait with `lock`/`read_lock` anyway.
#[derive(Clone, Copy)]
enum Acquire {
    Wait,
    Try,
}

/// Attempts of [`Acquire::Try`] before it falls back to waiting.
const TRIES: usize = 1;

/// Acquires for `cpu` as `how` says: `try_lock` makes the attempts, `lock` waits.
fn acquire(cpu: usize, how: Acquire, try_lock: impl Fn(usize) -> bool, lock: impl FnOnce(usize)) {
    if let Acquire::Try = how {
        for _ in 0..TRIES {
            if try_lock(cpu) {
                return;
            }
            loom::thread::yield_now();
        }
    }
    lock(cpu);
}

fn write_lock(lock: &Lock, cpu: usize, how: Acquire) {
    acquire(cpu, how, |cpu| lock.try_lock(cpu), |cpu| lock.lock(cpu));
}

fn read_lock(lock: &Lock, cpu: usize, how: Acquire) {
    acquire(
        cpu,
        how,
        |cpu| lock.try_read_lock(cpu),
        |cpu| lock.read_lock(cpu),
    );
}

/// CPU `cpu` reads `data` under the read lock and returns what it saw.
fn read(lock: &Lock, data: &UnsafeCell<usize>, cpu: usize) -> usize {
    lock.read_lock(cpu);
    // SAFETY: read under the read lock; loom reports an overlapping write as a race.
    let seen = data.with(|v| unsafe { *v });
    // SAFETY: `cpu` holds the lock shared.
    unsafe { lock.read_unlock(cpu) };
    seen
}

/// CPU `cpu` applies `update` to `data` under the write lock.
fn write(lock: &Lock, data: &UnsafeCell<usize>, cpu: usize, update: impl FnOnce(&mut usize)) {
    lock.lock(cpu);
    // SAFETY: written under the write lock; loom reports any overlapping access as a race.
    data.with_mut(|v| update(unsafe { &mut *v }));
    // SAFETY: `cpu` holds the lock exclusively.
    unsafe { lock.unlock(cpu) };
}

/// CPU 1 writes a pair of values (two separate writes, so a reader in between would see them
/// differ); CPU 0 reads the pair under the read lock. loom reports a data race if the read can
/// overlap the write, and the reader also checks that the pair is consistent.
fn writer_against_reader(writer: Acquire, reader: Acquire) {
    loom::model(move || {
        let lock = Arc::new(Lock::new());
        let pair = Arc::new((UnsafeCell::new(0usize), UnsafeCell::new(0usize)));
        let (lock2, pair2) = (lock.clone(), pair.clone());
        let t = loom::thread::spawn(move || {
            write_lock(&lock2, 1, writer);
            // SAFETY: the write lock is held; loom reports any overlapping access as a race.
            pair2.0.with_mut(|a| unsafe { *a = 1 });
            // SAFETY: as above.
            pair2.1.with_mut(|b| unsafe { *b = 1 });
            // SAFETY: CPU 1 holds the lock exclusively.
            unsafe { lock2.unlock(1) };
        });

        read_lock(&lock, 0, reader);
        // SAFETY: the read lock is held; loom reports an overlapping write as a race.
        let a = pair.0.with(|a| unsafe { *a });
        // SAFETY: as above.
        let b = pair.1.with(|b| unsafe { *b });
        assert_eq!(a, b, "the reader saw a write in progress");
        // SAFETY: CPU 0 holds the lock shared.
        unsafe { lock.read_unlock(0) };

        t.join().unwrap();
        assert!(!lock.is_locked());
    });
}

#[test]
fn writer_against_reader_waiting() {
    writer_against_reader(Acquire::Wait, Acquire::Wait);
}

#[test]
fn writer_against_reader_try() {
    writer_against_reader(Acquire::Try, Acquire::Try);
}

#[test]
fn writer_against_reader_mixed() {
    writer_against_reader(Acquire::Try, Acquire::Wait);
    writer_against_reader(Acquire::Wait, Acquire::Try);
}

/// In every interleaving: CPU 1 runs `cpu1` on a second loom thread while CPU 0 runs `cpu0`, on
/// one lock and one loom-checked value that starts at `initial`; once both are done the lock must
/// be free, and `check` gets what `cpu0` and `cpu1` returned and the final value.
fn two_cpus<R0: 'static, R1: Send + 'static>(
    initial: usize,
    cpu0: fn(&Lock, &UnsafeCell<usize>) -> R0,
    cpu1: fn(&Lock, &UnsafeCell<usize>) -> R1,
    check: fn(R0, R1, usize),
) {
    loom::model(move || {
        let lock = Arc::new(Lock::new());
        let data = Arc::new(UnsafeCell::new(initial));
        let t = {
            let (lock, data) = (lock.clone(), data.clone());
            loom::thread::spawn(move || cpu1(&lock, &data))
        };
        let seen0 = cpu0(&lock, &data);
        let seen1 = t.join().unwrap();
        // SAFETY: both threads are done.
        check(seen0, seen1, data.with(|v| unsafe { *v }));
        assert!(!lock.is_locked());
    });
}

/// Two readers and no writer: both always get in at the first attempt, whatever the
/// interleaving, so they may overlap; their reads of shared data are not races.
#[test]
fn reader_against_reader() {
    two_cpus(
        7,
        |lock, data| assert_eq!(read(lock, data, 0), 7),
        |lock, data| {
            assert!(
                lock.try_read_lock(1),
                "a reader was refused without any writer"
            );
            // SAFETY: reads only, under the read lock.
            assert_eq!(data.with(|v| unsafe { *v }), 7);
            // SAFETY: CPU 1 holds the lock shared.
            unsafe { lock.read_unlock(1) };
        },
        |(), (), _| {},
    );
}

/// A CPU that writes and then reads against one that reads and then writes: checks that each
/// side's earlier hold is ordered before the other side's later one (the release lowering and
/// release unlock stores), in every interleaving.
#[test]
fn write_then_read_against_read_then_write() {
    two_cpus(
        0,
        |lock, data| {
            write(lock, data, 0, |v| *v += 1);
            read(lock, data, 0)
        },
        |lock, data| {
            let seen = read(lock, data, 1);
            write(lock, data, 1, |v| *v += 10);
            seen
        },
        |seen0, seen1, last| {
            assert!(seen0 == 1 || seen0 == 11, "CPU 0 must see its own write");
            assert!(seen1 == 0 || seen1 == 1);
            assert_eq!(last, 11);
        },
    );
}

/// CPU 0 reads twice while CPU 1 writes once. The second read may back off because of the
/// writer, and the writer may then see CPU 0's slot at 0 from that back-off store rather than
/// from the first read's unlock; the first read must still be ordered before the write (loom
/// reports a race otherwise), and the second read must not see an older value than the first.
#[test]
fn reader_twice_against_writer() {
    two_cpus(
        0,
        |lock, data| [read(lock, data, 0), read(lock, data, 0)],
        |lock, data| write(lock, data, 1, |v| *v = 1),
        |seen, (), _| assert!(seen[0] <= seen[1], "a later read saw an older value"),
    );
}
