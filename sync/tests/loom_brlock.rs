//! loom models of the big-reader lock with two CPUs: writer against writer, writer against
//! reader (a reader never observes a write in progress), reader against reader (they overlap),
//! and the fenced releases of a read side and a ticket lock under one fence.
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

fn write_lock(lock: &Lock, cpu: usize, how: Acquire) {
    if let Acquire::Try = how {
        for _ in 0..TRIES {
            if lock.try_lock(cpu) {
                return;
            }
            loom::thread::yield_now();
        }
    }
    lock.lock(cpu);
}

fn read_lock(lock: &Lock, cpu: usize, how: Acquire) {
    if let Acquire::Try = how {
        for _ in 0..TRIES {
            if lock.try_read_lock(cpu) {
                return;
            }
            loom::thread::yield_now();
        }
    }
    lock.read_lock(cpu);
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

/// Two readers and no writer: both always get in at the first attempt, whatever the
/// interleaving, so they may overlap; their reads of shared data are not races.
#[test]
fn reader_against_reader() {
    loom::model(|| {
        let lock = Arc::new(Lock::new());
        let data = Arc::new(UnsafeCell::new(7usize));
        let (lock2, data2) = (lock.clone(), data.clone());
        let t = loom::thread::spawn(move || {
            assert!(
                lock2.try_read_lock(1),
                "a reader was refused without any writer"
            );
            // SAFETY: reads only, under the read lock.
            assert_eq!(data2.with(|v| unsafe { *v }), 7);
            // SAFETY: CPU 1 holds the lock shared.
            unsafe { lock2.read_unlock(1) };
        });
        lock.read_lock(0);
        // SAFETY: reads only, under the read lock.
        assert_eq!(data.with(|v| unsafe { *v }), 7);
        // SAFETY: CPU 0 holds the lock shared.
        unsafe { lock.read_unlock(0) };
        t.join().unwrap();
        assert!(!lock.is_locked());
    });
}

/// A CPU that writes and then reads against one that reads and then writes: checks that each
/// side's earlier hold is ordered before the other side's later one (the release lowering and
/// release unlock stores), in every interleaving.
#[test]
fn write_then_read_against_read_then_write() {
    loom::model(|| {
        let lock = Arc::new(Lock::new());
        let data = Arc::new(UnsafeCell::new(0usize));
        let (lock2, data2) = (lock.clone(), data.clone());
        let t = loom::thread::spawn(move || {
            lock2.read_lock(1);
            // SAFETY: read under the read lock.
            let seen = data2.with(|v| unsafe { *v });
            // SAFETY: CPU 1 holds the lock shared.
            unsafe { lock2.read_unlock(1) };
            lock2.lock(1);
            // SAFETY: write under the write lock.
            data2.with_mut(|v| unsafe { *v += 10 });
            // SAFETY: CPU 1 holds the lock exclusively.
            unsafe { lock2.unlock(1) };
            seen
        });
        lock.lock(0);
        // SAFETY: write under the write lock.
        data.with_mut(|v| unsafe { *v += 1 });
        // SAFETY: CPU 0 holds the lock exclusively.
        unsafe { lock.unlock(0) };
        lock.read_lock(0);
        // SAFETY: read under the read lock.
        let seen0 = data.with(|v| unsafe { *v });
        // SAFETY: CPU 0 holds the lock shared.
        unsafe { lock.read_unlock(0) };
        let seen1 = t.join().unwrap();
        assert!(seen0 == 1 || seen0 == 11, "CPU 0 must see its own write");
        assert!(seen1 == 0 || seen1 == 1);
        // SAFETY: both threads are done.
        assert_eq!(data.with(|v| unsafe { *v }), 11);
        assert!(!lock.is_locked());
    });
}

/// CPU 0 reads twice while CPU 1 writes once. The second read may back off because of the
/// writer, and the writer may then see CPU 0's slot at 0 from that back-off store rather than
/// from the first read's unlock; the first read must still be ordered before the write (loom
/// reports a race otherwise), and the second read must not see an older value than the first.
#[test]
fn reader_twice_against_writer() {
    loom::model(|| {
        let lock = Arc::new(Lock::new());
        let data = Arc::new(UnsafeCell::new(0usize));
        let (lock2, data2) = (lock.clone(), data.clone());
        let t = loom::thread::spawn(move || {
            lock2.lock(1);
            // SAFETY: write under the write lock.
            data2.with_mut(|v| unsafe { *v = 1 });
            // SAFETY: CPU 1 holds the lock exclusively.
            unsafe { lock2.unlock(1) };
        });
        let mut seen = [0; 2];
        for seen in &mut seen {
            lock.read_lock(0);
            // SAFETY: read under the read lock.
            *seen = data.with(|v| unsafe { *v });
            // SAFETY: CPU 0 holds the lock shared.
            unsafe { lock.read_unlock(0) };
        }
        t.join().unwrap();
        assert!(seen[0] <= seen[1], "a later read saw an older value");
        assert!(!lock.is_locked());
    });
}

/// The kernel's handshake between a core's IPC fastpath and a remote waker
/// (`kernel::Kernel::wake`): CPU 0, inside its read side, reads its run queue's priority bitmap
/// and, finding it empty, hands the core to a thread `R` (stores its `current`), without the
/// run-queue lock. CPU 1 queues a thread on CPU 0's run queue (the bitmap store), runs a
/// `SeqCst` fence and decides on a Reschedule IPI: when CPU 0 may be reading (`is_reading`),
/// or when CPU 0's current thread is `R`, which the queued thread preempts (it does not
/// preempt the old current thread `T`). What must not happen: CPU 0 runs `R` without having
/// seen the queued thread, and CPU 1 sends no IPI.
#[test]
fn fastpath_against_remote_wake() {
    use loom::sync::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
    const T: usize = 0;
    const R: usize = 1;
    loom::model(|| {
        let lock = Arc::new(Lock::new());
        let bitmap = Arc::new(AtomicU32::new(0));
        let current = Arc::new(AtomicUsize::new(T));
        let (lock2, bitmap2, current2) = (lock.clone(), bitmap.clone(), current.clone());
        let waker = loom::thread::spawn(move || {
            bitmap2.store(1, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            lock2.is_reading(0) || current2.load(Ordering::Relaxed) == R
        });
        lock.read_lock_unnested(0);
        let runs_r = bitmap.load(Ordering::Relaxed) == 0;
        if runs_r {
            current.store(R, Ordering::Relaxed);
        }
        // SAFETY: CPU 0 holds the read side, taken above; released once.
        unsafe { lock.read_unlock_unnested(0) };
        let ipi = waker.join().unwrap();
        assert!(
            !runs_r || ipi,
            "the fastpath missed the queued thread and the waker sent no IPI"
        );
    });
}

/// The fine-grained kernel's section end on its IPC fastpath: one `fence(Release)`, then the
/// relaxed releases of an object ticket lock (`unlock_fenced`) and of the read side
/// (`read_unlock_unnested_fenced`). The reader writes a cell under the ticket lock and reads
/// one under the read side; a writer (write side) then writes the read-side cell, and another
/// CPU takes the ticket lock and reads the ticket cell. loom reports a data race on either
/// cell if the one fence does not order the section before both releases.
#[test]
fn fenced_releases_share_one_fence() {
    use kernel_locks::ticket::TicketLock;
    loom::model(|| {
        let lock = Arc::new(Lock::new());
        let object = Arc::new(TicketLock::<Spin>::with_cpus(2));
        let cells = Arc::new((UnsafeCell::new(0usize), UnsafeCell::new(0usize)));
        let (lock2, object2, cells2) = (lock.clone(), object.clone(), cells.clone());
        let t = loom::thread::spawn(move || {
            lock2.lock(1);
            // SAFETY: the write side is held; loom reports an overlapping access as a race.
            cells2.0.with_mut(|a| unsafe { *a = 7 });
            // SAFETY: CPU 1 holds the write side.
            unsafe { lock2.unlock(1) };
            object2.lock(1);
            // SAFETY: the ticket lock is held.
            let b = cells2.1.with(|b| unsafe { *b });
            assert!(b == 0 || b == 1);
            // SAFETY: CPU 1 holds the ticket lock.
            unsafe { object2.unlock(1) };
        });

        lock.read_lock_unnested(0);
        object.lock(0);
        // SAFETY: the read side is held; loom reports an overlapping write as a race.
        let a = cells.0.with(|a| unsafe { *a });
        assert!(a == 0 || a == 7);
        // SAFETY: the ticket lock is held.
        cells.1.with_mut(|b| unsafe { *b = 1 });
        loom::sync::atomic::fence(loom::sync::atomic::Ordering::Release);
        // SAFETY: CPU 0 holds the ticket lock and the read side (unnested), and the release
        // fence above follows the last access of both sections.
        unsafe {
            object.unlock_fenced(0);
            lock.read_unlock_unnested_fenced(0);
        }

        t.join().unwrap();
        assert!(!lock.is_locked() && !object.is_locked());
    });
}
