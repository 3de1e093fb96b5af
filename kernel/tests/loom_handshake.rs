//! loom models of the kernel's protocols over the lock crate's locks, with two CPUs: the IPC
//! fastpath's handshake with a remote waker (`Kernel::wake`), and the fine-grained strategy's
//! section end on the fastpath (one fence for the releases of an object lock and of the read
//! side). The locks' own models are in the lock crate (`sync/tests/loom_*.rs`); these are about
//! how the kernel uses them.
//!
//! Run: `RUSTFLAGS="--cfg kernel_loom --cfg kernel_locks_loom" CARGO_TARGET_DIR=target/loom
//! cargo test -p kernel --release --test loom_handshake`. `kernel_loom` builds this model;
//! `kernel_locks_loom` builds the lock crate on loom's atomics, without which loom could not
//! see the locks' orderings and the models would check nothing of them.
//!
//! Note that loom treats a `SeqCst` fence as at least as strong as the C++ model does (it joins
//! every thread's view at each such fence), so these models check the protocol's logic; the
//! argument that the fences suffice under C++/ARM rules is in `sync/src/brlock.rs`.
#![cfg(kernel_loom)]

#[cfg(not(kernel_locks_loom))]
compile_error!(
    "the kernel's loom models need the lock crate on loom's atomics: add `--cfg kernel_locks_loom`"
);

use kernel_locks::{BrLock, KernelLock, Spin};
use loom::cell::UnsafeCell;
use loom::sync::Arc;

/// The fine-grained strategy's big-reader lock, for two CPUs.
type Lock = BrLock<2, Spin>;

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
        let object = Arc::new(TicketLock::with_cpus(2));
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
