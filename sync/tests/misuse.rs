//! Misuse each lock detects, build by build (the tables in the locks' module docs and the
//! crate README: every row is a test here), and where the panics point: every trait method is
//! `#[track_caller]`, so a misuse panic names the caller's line in this file, not a line inside
//! the crate. Tests of debug-only rows are `cfg(debug_assertions)`, of release-only rows
//! `cfg(not(debug_assertions))`; `cargo xtask test` runs this file in both builds.
#![cfg(not(kernel_locks_loom))]

use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex as StdMutex;

use kernel_locks::{
    qspin_node_pool, BrLock, ClhLock, KernelLock, KernelRwLock, McsLock, Mutex, NoLock, QSpinLock,
    RtmLock, RwLock, TicketLock,
};

/// The file and message of the panic raised by `f`, which must panic.
fn panic_site(f: impl FnOnce()) -> (String, String) {
    static SITE: StdMutex<Option<(String, String)>> = StdMutex::new(None);
    // One hook for the whole process: calls of this function serialise on a lock of their own.
    static HOOK: StdMutex<()> = StdMutex::new(());
    let _serial = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    let previous = panic::take_hook();
    // Other tests of this binary panic on purpose on their own threads: record only ours.
    let this_thread = std::thread::current().id();
    panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() != this_thread {
            return;
        }
        let file = info
            .location()
            .map(|l| l.file().to_owned())
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        *SITE.lock().unwrap_or_else(|e| e.into_inner()) = Some((file, message));
    }));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    panic::set_hook(previous);
    assert!(result.is_err(), "no panic");
    SITE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .expect("the hook saw the panic")
}

/// Asserts that `f` panics with a message containing `expected`, located in this file.
#[track_caller]
fn assert_panics_here(expected: &str, f: impl FnOnce()) {
    let (file, message) = panic_site(f);
    assert!(
        message.contains(expected),
        "message {message:?} lacks {expected:?}"
    );
    assert!(
        file.ends_with("tests/misuse.rs"),
        "the panic for {expected:?} points into {file}, not at the caller"
    );
}

#[test]
fn every_misuse_panic_names_the_callers_line() {
    // CPU ids out of range, on every lock that takes one, through every entry point.
    let clh = ClhLock::<2>::new();
    assert_panics_here("ClhLock: CPU id 2 out of range", || clh.lock(2));
    assert_panics_here("ClhLock: CPU id 5 out of range", || {
        clh.try_lock(5);
    });
    let mcs = McsLock::<2>::new();
    assert_panics_here("McsLock: CPU id 2 out of range", || mcs.lock(2));
    assert_panics_here("McsLock: CPU id 5 out of range", || {
        mcs.try_lock(5);
    });
    assert_panics_here("McsLock: CPU id 3 out of range", || {
        // SAFETY: deliberately violated (CPU 3 does not exist); the check must catch it.
        unsafe { mcs.unlock(3) }
    });
    qspin_node_pool!(QSpinNodes, 2);
    let qspin = QSpinLock::<QSpinNodes>::new();
    assert_panics_here("QSpinLock: CPU id 2 out of range", || qspin.lock(2));
    assert_panics_here("QSpinLock: CPU id 5 out of range", || {
        qspin.try_lock(5);
    });
    assert_panics_here("QSpinLock: CPU id 3 out of range", || {
        // SAFETY: deliberately violated (CPU 3 does not exist); the check must catch it.
        unsafe { qspin.unlock(3) }
    });
    let ticket = TicketLock::with_cpus(2);
    assert_panics_here("TicketLock: CPU id 3 out of range", || ticket.lock(3));
    let br = BrLock::<2>::new();
    assert_panics_here("BrLock: CPU id 2 out of range", || br.read_lock(2));
    assert_panics_here("BrLock: CPU id 2 out of range", || {
        br.try_read_lock(2);
    });
    let rtm = RtmLock::<_, 2>::new(TicketLock::new());
    assert_panics_here("rtm: CPU id 2 out of range", || rtm.lock(2));

    // Stray unlocks: each one is deliberately wrong, and the lock must panic before any damage
    // (the ticket lock: at its next acquisition, which the release path leaves to it).
    // Debug builds catch the ticket lock's at the unlock, release builds at the next
    // acquisition.
    #[cfg(debug_assertions)]
    assert_panics_here("TicketLock: unlock by CPU 0, which does not hold", || {
        // SAFETY: deliberately violated (nothing is held); the check must catch it.
        unsafe { ticket.unlock(0) }
    });
    #[cfg(not(debug_assertions))]
    {
        // SAFETY: deliberately violated (nothing is held); the next acquisition must catch it.
        unsafe { ticket.unlock(0) };
        assert_panics_here("TicketLock: serving counter ahead", || ticket.lock(1));
    }
    assert_panics_here("ClhLock: unlock by CPU 1, which does not hold", || {
        // SAFETY: deliberately violated (nothing is held); the check must catch it.
        unsafe { clh.unlock(1) }
    });
    assert_panics_here("McsLock: unlock by CPU 1, which does not hold", || {
        // SAFETY: deliberately violated (nothing is held); the check must catch it.
        unsafe { mcs.unlock(1) }
    });
    assert_panics_here("QSpinLock: unlock by CPU 1, which does not hold", || {
        // SAFETY: deliberately violated (nothing is held); the check must catch it.
        unsafe { qspin.unlock(1) }
    });
    assert!(!qspin.is_locked(), "a stray unlock changed the word");
    assert_panics_here("BrLock: read_unlock by CPU 1", || {
        // SAFETY: deliberately violated (no shared hold); the check must catch it.
        unsafe { br.read_unlock(1) }
    });
    assert_panics_here("rtm: unlock by CPU 0, which does not hold", || {
        // SAFETY: deliberately violated (nothing is held); the check must catch it.
        unsafe { rtm.unlock(0) }
    });

    // Through the data-carrying wrappers the location is still the caller's.
    let mutex = Mutex::new(ClhLock::<2>::new(), 0u8);
    assert_panics_here("ClhLock: CPU id 9 out of range", || {
        let _ = mutex.lock(9);
    });
    let rw = RwLock::new(BrLock::<2>::new(), 0u8);
    assert_panics_here("BrLock: CPU id 4 out of range", || {
        let _ = rw.write(4);
    });
    assert_panics_here("BrLock: CPU id 4 out of range", || {
        let _ = rw.read(4);
    });
}

// Release builds: debug builds catch these at the unlock (`debug_ticket_unlocks_*`).
#[cfg(not(debug_assertions))]
#[test]
fn ticket_unlock_all_with_one_lock_free_is_caught_by_its_next_acquisition() {
    // Several locks released with one barrier: the release path checks nothing (it costs the
    // fast path nothing); the free lock released by mistake is caught by its next acquisition.
    let (a, b) = (TicketLock::with_cpus(2), TicketLock::with_cpus(2));
    assert_panics_here("TicketLock: CPU id 2 out of range", || {
        TicketLock::lock_all([&a, &b], 2)
    });
    assert!(
        !a.is_locked() && !b.is_locked(),
        "a range check took a lock"
    );
    TicketLock::lock_all([&a], 1);
    // SAFETY: deliberately violated (`b` is free); its next acquisition must catch it.
    unsafe { TicketLock::unlock_all([&a, &b], 1) };
    assert!(!a.is_locked(), "the held lock was not released");
    assert_panics_here("TicketLock: serving counter ahead", || {
        TicketLock::lock_all([&a, &b], 0)
    });
    // `a` was taken before `b` panicked; the panicking acquisition absorbed the stray
    // increment of `b` with its own ticket, so `b` is free and whole again.
    assert!(a.is_locked() && !b.is_locked());
    // SAFETY: CPU 0 holds `a`.
    unsafe { TicketLock::unlock_all([&a], 0) };
    TicketLock::lock_all([&a, &b], 0);
    assert!(a.is_locked() && b.is_locked());
    assert_eq!((a.queue_len(), b.queue_len()), (1, 1));
    // SAFETY: CPU 0 holds both, each named once.
    unsafe { TicketLock::unlock_all([&b, &a], 0) };
    assert!(!a.is_locked() && !b.is_locked());
}

// Release builds: debug builds catch these at the unlock (`debug_ticket_unlocks_*`).
#[cfg(not(debug_assertions))]
#[test]
fn ticket_unlock_by_the_wrong_cpu_after_release_is_caught_by_the_next_acquisition() {
    // A ticket lock keeps no owner, so an unlock naming the wrong CPU while the lock is held
    // cannot be told apart from the holder's; but once the holder released, any further unlock
    // (by whichever CPU) is a stray one: instead of wedging the lock (every later ticket
    // waiting for a turn that never comes) it is caught by the next acquisition, of any kind.
    let lock = TicketLock::with_cpus(2);
    lock.lock(0);
    // SAFETY: CPU 0 holds it.
    unsafe { lock.unlock(0) };
    // SAFETY: deliberately wrong: nobody holds the lock.
    unsafe { lock.unlock(1) };
    assert_panics_here("TicketLock: serving counter ahead", || {
        let _ = lock.try_lock(1);
    });
    // try_lock changed nothing; a second stray unlock puts `serving` two ahead.
    // SAFETY: deliberately wrong again.
    unsafe { lock.unlock(0) };
    assert_panics_here("TicketLock: serving counter ahead", || lock.lock(1));
    // That acquisition absorbed one stray increment; the next absorbs the other.
    assert_panics_here("TicketLock: serving counter ahead", || lock.lock(0));
    assert!(!lock.is_locked() && lock.queue_len() == 0);
    assert!(lock.try_lock(1), "the lock is not usable again");
    // SAFETY: CPU 1 holds it.
    unsafe { lock.unlock(1) };
    lock.lock(0);
    // SAFETY: CPU 0 holds it.
    unsafe { lock.unlock(0) };
    assert_eq!(lock.queue_len(), 0);
}

// Release builds: debug builds catch these at the unlock (`debug_ticket_unlocks_*`).
#[cfg(not(debug_assertions))]
#[test]
fn ticket_several_stray_unlocks_are_each_caught_by_one_acquisition() {
    // Three stray unlocks put `serving` three ahead of `next`: each acquisition takes a ticket
    // behind `serving`, panics from the polling loop and absorbs one increment, so the fourth
    // acquisition finds the lock whole.
    let lock = TicketLock::with_cpus(4);
    for _ in 0..3 {
        lock.lock(0);
        // SAFETY: CPU 0 holds it.
        unsafe { lock.unlock(0) };
    }
    // SAFETY: deliberately wrong: nobody holds the lock (three times: `serving` 3 ahead).
    unsafe {
        lock.unlock(2);
        lock.unlock(2);
        lock.unlock(2);
    }
    for _ in 0..3 {
        assert_panics_here("TicketLock: serving counter ahead", || lock.lock(3));
    }
    lock.lock(3);
    assert_eq!(lock.queue_len(), 1);
    // SAFETY: CPU 3 holds it.
    unsafe { lock.unlock(3) };
}

#[test]
fn clh_unlock_by_a_cpu_other_than_the_holder_is_caught_and_harmless() {
    let lock = ClhLock::<4>::new();
    lock.lock(2);
    let wrong = panic::catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: deliberately wrong: CPU 2 holds the lock, not CPU 3.
        unsafe { lock.unlock(3) }
    }));
    assert!(wrong.is_err(), "unlock by a non-holder not detected");
    assert!(
        lock.is_locked(),
        "the wrong unlock released the holder's lock"
    );
    // SAFETY: CPU 2 holds it.
    unsafe { lock.unlock(2) };
    assert!(!lock.is_locked());
}

#[test]
fn brlock_double_read_lock_and_foreign_read_unlock_are_caught() {
    let lock = BrLock::<4>::new();
    lock.read_lock(1);
    assert!(panic::catch_unwind(AssertUnwindSafe(|| lock.read_lock(1))).is_err());
    assert!(panic::catch_unwind(AssertUnwindSafe(|| lock.lock(1))).is_err());
    let foreign = panic::catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: deliberately wrong: CPU 2 holds nothing.
        unsafe { lock.read_unlock(2) }
    }));
    assert!(foreign.is_err());
    // CPU 1's hold is intact: a writer cannot get in beside it.
    assert!(
        !lock.try_lock(0),
        "a writer got in beside a reader after misuse"
    );
    // SAFETY: CPU 1 holds it shared.
    unsafe { lock.read_unlock(1) };
    assert!(lock.try_lock(0));
    let foreign = panic::catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: deliberately wrong: CPU 0 holds the write side, not CPU 3.
        unsafe { lock.unlock(3) }
    }));
    assert!(foreign.is_err());
    assert!(
        lock.is_write_locked(),
        "a foreign unlock released the writer"
    );
    // SAFETY: CPU 0 holds it.
    unsafe { lock.unlock(0) };
}

#[test]
#[should_panic(expected = "TicketLock: a lock for 0 CPUs")]
fn ticket_lock_for_no_cpus_panics() {
    let _ = TicketLock::with_cpus(0);
}

#[test]
fn nolock_checks_nothing_by_design() {
    // SAFETY: single-threaded, nothing to exclude.
    let lock = unsafe { NoLock::new() };
    lock.lock(usize::MAX);
    // SAFETY: NoLock's unlock does nothing.
    unsafe { lock.unlock(7) };
    assert!(!lock.is_locked());
}

/// Debug builds: a CPU that locks a lock it holds panics, naming the caller, in every lock and
/// through every entry point (raw `lock`, `lock_unchecked`, `lock_all`, the wrappers), instead
/// of waiting for itself forever.
#[cfg(debug_assertions)]
#[test]
fn debug_relocking_panics_in_every_lock() {
    let clh = ClhLock::<2>::new();
    let mcs = McsLock::<2>::new();
    qspin_node_pool!(QSpinNodes, 2);
    let qspin = QSpinLock::<QSpinNodes>::new();
    let ticket = TicketLock::with_cpus(2);
    let br = BrLock::<2>::new();
    let rtm = RtmLock::<_, 2>::new(ClhLock::<2>::new());
    let mutex = Mutex::new(ClhLock::<2>::new(), 0u8);
    let ticket_mutex = Mutex::new(TicketLock::new(), 0u8);
    let rw = RwLock::new(BrLock::<2>::new(), 0u8);
    // Each case: the expected panic, the acquisition (made once, then again), and the release
    // of the first acquisition by CPU 1, which holds the lock then.
    type Case<'a> = (&'a str, Box<dyn Fn() + 'a>, Box<dyn Fn() + 'a>);
    let held = "ClhLock: CPU 1 locks a lock it already holds";
    let cases: Vec<Case> = vec![
        (
            held,
            Box::new(|| clh.lock(1)),
            Box::new(|| {
                // SAFETY: CPU 1 holds the lock.
                unsafe { clh.unlock(1) }
            }),
        ),
        (
            held,
            Box::new(|| {
                // SAFETY: CPU 1 is in range.
                unsafe { clh.lock_unchecked(1) }
            }),
            Box::new(|| {
                // SAFETY: CPU 1 holds the lock.
                unsafe { clh.unlock(1) }
            }),
        ),
        (
            "McsLock: CPU 1 locks a lock it already holds",
            Box::new(|| mcs.lock(1)),
            Box::new(|| {
                // SAFETY: CPU 1 holds the lock.
                unsafe { mcs.unlock(1) }
            }),
        ),
        (
            "QSpinLock: CPU 1 locks a lock it already holds",
            Box::new(|| qspin.lock(1)),
            Box::new(|| {
                // SAFETY: CPU 1 holds the lock.
                unsafe { qspin.unlock(1) }
            }),
        ),
        (
            "QSpinLock: CPU 1 locks a lock it already holds",
            Box::new(|| {
                // SAFETY: CPU 1 is in range.
                unsafe { qspin.lock_unchecked(1) }
            }),
            Box::new(|| {
                // SAFETY: CPU 1 holds the lock.
                unsafe { qspin.unlock(1) }
            }),
        ),
        (
            "TicketLock: CPU 1 locks a lock it already holds",
            Box::new(|| ticket.lock(1)),
            Box::new(|| {
                // SAFETY: CPU 1 holds the lock.
                unsafe { ticket.unlock(1) }
            }),
        ),
        (
            "TicketLock: CPU 1 locks",
            Box::new(|| TicketLock::lock_all([&ticket], 1)),
            Box::new(|| {
                // SAFETY: CPU 1 holds the lock.
                unsafe { ticket.unlock(1) }
            }),
        ),
        (
            "BrLock: CPU 1 write-locked a lock it already holds for writing",
            Box::new(|| br.lock(1)),
            Box::new(|| {
                // SAFETY: CPU 1 holds the write side.
                unsafe { br.unlock(1) }
            }),
        ),
        (
            "rtm",
            Box::new(|| rtm.lock(1)),
            Box::new(|| {
                // SAFETY: CPU 1 holds the lock.
                unsafe { rtm.unlock(1) }
            }),
        ),
    ];
    for (expected, take, give) in &cases {
        take();
        assert_panics_here(expected, take);
        give();
    }
    // The wrappers reach the same checks.
    let held = mutex.lock(0);
    assert_panics_here("ClhLock: CPU 0 locks a lock it already holds", || {
        let _ = mutex.lock(0);
    });
    drop(held);
    let held = ticket_mutex.lock(0);
    assert_panics_here("TicketLock: CPU 0 locks a lock it already holds", || {
        let _ = ticket_mutex.lock(0);
    });
    drop(held);
    let held = rw.write(1);
    assert_panics_here("BrLock: CPU 1", || {
        let _ = rw.read(1);
    });
    drop(held);
    assert!(!mutex.is_locked() && !ticket_mutex.is_locked() && !rw.is_locked());
}

/// Debug builds: the ticket lock records its holder, so an unlock by another CPU than the
/// holder, and a stray or double unlock, panic at the unlock itself, before any damage.
#[cfg(debug_assertions)]
#[test]
fn debug_ticket_unlocks_by_a_non_holder_panic_at_the_unlock() {
    let lock = TicketLock::with_cpus(2);
    lock.lock(0);
    assert_panics_here(
        "TicketLock: unlock by CPU 1, but CPU 0 holds the lock",
        || {
            // SAFETY: deliberately wrong: CPU 0 holds the lock.
            unsafe { lock.unlock(1) }
        },
    );
    assert!(
        lock.is_locked(),
        "the wrong unlock released the holder's lock"
    );
    // SAFETY: CPU 0 holds it.
    unsafe { lock.unlock(0) };
    assert_panics_here(
        "TicketLock: unlock by CPU 0, which does not hold the lock",
        || {
            // SAFETY: deliberately wrong: a double unlock.
            unsafe { lock.unlock(0) }
        },
    );
    let other = TicketLock::with_cpus(2);
    TicketLock::lock_all([&lock], 1);
    assert_panics_here(
        "TicketLock: unlock by CPU 1, which does not hold the lock",
        || {
            // SAFETY: deliberately wrong: `other` is free.
            unsafe { TicketLock::unlock_all([&lock, &other], 1) }
        },
    );
    // The check runs before any release: `lock` is still held, and whole.
    assert!(lock.is_locked() && !other.is_locked());
    // SAFETY: CPU 1 holds `lock`.
    unsafe { lock.unlock(1) };
    assert!(lock.try_lock(0) && !lock.try_lock(1));
    // SAFETY: CPU 0 holds it (through try_lock).
    unsafe { lock.unlock(0) };
    assert_eq!(lock.queue_len(), 0);
}

/// Every build: a CPU that holds the big-reader lock's write side and locks it again (either
/// side) panics instead of waiting for itself; the check sits on the contended path only.
#[test]
fn brlock_write_then_lock_panics_in_every_build() {
    let br = BrLock::<2>::new();
    br.lock(1);
    assert_panics_here(
        "BrLock: CPU 1 read-locked a lock it already holds for writing",
        || br.read_lock_unnested(1),
    );
    assert_panics_here(
        "BrLock: CPU 1 write-locked a lock it already holds for writing",
        || br.lock(1),
    );
    // Neither attempt left a trace: CPU 1 still holds the write side, alone.
    assert!(br.is_write_locked() && !br.try_read_lock(0));
    // SAFETY: CPU 1 holds the write side.
    unsafe { br.unlock(1) };
    assert!(!br.is_locked());
}

/// The queued spinlock's word keeps no owner: debug builds keep a per-CPU list of the locks each
/// CPU holds and catch an unlock by another CPU at the unlock, before any damage; release builds
/// do not, and such an unlock releases the holder's lock (the module documentation's table).
#[test]
fn qspin_unlock_by_a_non_holder() {
    qspin_node_pool!(QSpinNodes, 2);
    let lock = QSpinLock::<QSpinNodes>::new();
    lock.lock(0);
    #[cfg(debug_assertions)]
    {
        assert_panics_here("QSpinLock: unlock by CPU 1, which does not hold", || {
            // SAFETY: deliberately wrong: CPU 0 holds the lock.
            unsafe { lock.unlock(1) }
        });
        assert!(
            lock.is_locked() && !lock.try_lock(1),
            "the holder lost the lock"
        );
        // SAFETY: CPU 0 holds it.
        unsafe { lock.unlock(0) };
    }
    #[cfg(not(debug_assertions))]
    {
        // SAFETY: deliberately wrong: CPU 0 holds the lock; release builds cannot tell.
        unsafe { lock.unlock(1) };
    }
    assert!(!lock.is_locked());
}
