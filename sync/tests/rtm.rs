//! RTM lock elision: every abort path driven by a scripted engine (exact statistics), the lock
//! word in the read set, deferred work, misuse, stress on real threads with the real engine (the
//! fallback path where RTM is absent) and with the simulated HTM, and real-RTM tests that skip
//! themselves on CPUs without RTM.
#![cfg(not(kernel_locks_loom))]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use kernel_locks::rtm::testing::{
    self, HtmModel, ScriptedEngine, Step, CAPACITY, CONFLICT, RETRY, UNNAMED,
};
use kernel_locks::rtm::DEFER_CAPACITY;
use kernel_locks::{
    AbortCause, AbortStatus, ClhLock, DeferFull, KernelLock, MaxCpus, Rtm, RtmLock, RtmPolicy,
    RtmStats, TicketLock, TxEngine,
};

use common::Yield;

/// The lock under scripted tests: 4 CPUs over a ticket lock.
type Scripted = RtmLock<TicketLock, 4, kernel_locks::Spin, ScriptedEngine<'static>>;

const COMMIT: Step = Ok(());

/// A lock whose engine follows `script`, then starts transactions forever.
fn scripted(script: &'static [Step], policy: RtmPolicy) -> Scripted {
    // SAFETY: the scripted tests run every critical section on the test's own thread, one at a
    // time (the one two-thread test is `elision_waits_for_a_fallback_holder`, which documents
    // why it is fine there).
    let engine = unsafe { ScriptedEngine::new(script, COMMIT) };
    RtmLock::with_engine_and_policy(TicketLock::new(), engine, policy)
}

/// One lock/unlock on `cpu`; asserts the expected elision state inside the section.
fn acquire_release<L: KernelLock>(lock: &L, cpu: usize) {
    lock.lock(cpu);
    // SAFETY: `cpu` holds the lock.
    unsafe { lock.unlock(cpu) };
}

fn elided_section(lock: &Scripted, cpu: usize, elided: bool) {
    lock.lock(cpu);
    assert_eq!(lock.is_elided(cpu), elided, "is_elided on CPU {cpu}");
    // An elided section does not write the lock: invisible to is_locked (documented).
    assert_eq!(lock.is_locked(), !elided);
    assert_eq!(lock.engine().in_transaction(), elided);
    // SAFETY: `cpu` holds the lock.
    unsafe { lock.unlock(cpu) };
    assert!(!lock.is_locked());
    assert!(!lock.is_elided(cpu));
}

fn stats(rtm_available: bool) -> RtmStats {
    RtmStats {
        rtm_available,
        ..RtmStats::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Every abort path, with exact statistics.

#[test]
fn direct_commit() {
    let lock = scripted(&[], RtmPolicy::DEFAULT);
    for _ in 0..3 {
        elided_section(&lock, 0, true);
    }
    elided_section(&lock, 3, true);
    assert_eq!(
        lock.stats(),
        RtmStats {
            direct: 4,
            ..stats(true)
        }
    );
    assert_eq!(lock.stats().total(), 4);
    assert_eq!((lock.engine().begins(), lock.engine().commits()), (4, 4));
    assert_eq!(lock.name(), "rtm");
    assert_eq!(lock.max_cpus(), 4);
}

#[test]
fn conflict_then_commit_is_one_retry() {
    let lock = scripted(&[Err(CONFLICT), COMMIT], RtmPolicy::DEFAULT);
    elided_section(&lock, 1, true);
    assert_eq!(
        lock.stats(),
        RtmStats {
            retry1: 1,
            aborts_conflict: 1,
            ..stats(true)
        }
    );
    assert_eq!(lock.skip_count(), 0);
}

/// `cpu_stats` counts one CPU only: the sum over the CPUs is `stats`.
#[test]
fn per_cpu_stats_split_the_totals() {
    let lock = scripted(&[Err(CONFLICT), COMMIT], RtmPolicy::DEFAULT);
    elided_section(&lock, 1, true);
    elided_section(&lock, 2, true);
    elided_section(&lock, 2, true);
    assert_eq!(lock.cpu_stats(0), stats(true));
    assert_eq!(
        lock.cpu_stats(1),
        RtmStats {
            retry1: 1,
            aborts_conflict: 1,
            ..stats(true)
        }
    );
    assert_eq!(
        lock.cpu_stats(2),
        RtmStats {
            direct: 2,
            ..stats(true)
        }
    );
    assert_eq!(lock.stats().total(), 3);
}

#[test]
fn two_retries() {
    let lock = scripted(&[Err(CONFLICT), Err(RETRY), COMMIT], RtmPolicy::DEFAULT);
    elided_section(&lock, 0, true);
    assert_eq!(
        lock.stats(),
        RtmStats {
            retry2: 1,
            aborts_conflict: 1,
            aborts_retry: 1,
            ..stats(true)
        }
    );
}

#[test]
fn more_than_two_retries() {
    let policy = RtmPolicy::DEFAULT.with_max_attempts(5);
    let lock = scripted(
        &[
            Err(CONFLICT),
            Err(RETRY),
            Err(CONFLICT),
            Err(CONFLICT),
            COMMIT,
        ],
        policy,
    );
    elided_section(&lock, 0, true);
    assert_eq!(
        lock.stats(),
        RtmStats {
            retry_more: 1,
            aborts_conflict: 3,
            aborts_retry: 1,
            ..stats(true)
        }
    );
    assert_eq!(lock.engine().begins(), 5);
}

#[test]
fn busy_abort_waits_and_retries() {
    // Explicit 0xff as the hardware reports it after XABORT (resumed in XBEGIN).
    let lock = scripted(&[Err(AbortStatus::BUSY), COMMIT], RtmPolicy::DEFAULT);
    elided_section(&lock, 0, true);
    assert_eq!(
        lock.stats(),
        RtmStats {
            retry1: 1,
            aborts_busy: 1,
            ..stats(true)
        }
    );
    // A busy abort followed by a successful retry does not skip later elisions.
    assert_eq!(lock.skip_count(), 0);
}

#[test]
fn busy_aborts_exhausting_the_attempts_fall_back_and_skip() {
    const BUSY: Step = Err(AbortStatus::BUSY);
    let lock = scripted(&[BUSY, BUSY, BUSY], RtmPolicy::DEFAULT);
    elided_section(&lock, 0, false);
    assert_eq!(
        lock.stats(),
        RtmStats {
            fallback: 1,
            aborts_busy: 3,
            ..stats(true)
        }
    );
    assert_eq!(lock.skip_count(), RtmPolicy::DEFAULT.busy_skip);
    // The next `busy_skip` acquisitions take the fallback without starting a transaction.
    for _ in 0..RtmPolicy::DEFAULT.busy_skip {
        elided_section(&lock, 2, false);
    }
    assert_eq!(lock.engine().begins(), 3);
    elided_section(&lock, 2, true);
    assert_eq!(
        lock.stats(),
        RtmStats {
            direct: 1,
            fallback: 4,
            skipped: 3,
            aborts_busy: 3,
            ..stats(true)
        }
    );
}

#[test]
fn capacity_abort_falls_back_then_skips_the_configured_number_of_times() {
    for skip in [0, 1, 5] {
        let policy = RtmPolicy::DEFAULT.with_skips(3, skip);
        let lock = scripted(&[Err(CAPACITY)], policy);
        elided_section(&lock, 0, false); // no retry after a capacity abort
        assert_eq!(lock.engine().begins(), 1);
        assert_eq!(lock.skip_count(), skip);
        for _ in 0..skip {
            elided_section(&lock, 1, false);
        }
        assert_eq!(
            lock.engine().begins(),
            1,
            "skipped acquisitions start no transaction"
        );
        elided_section(&lock, 1, true);
        let expected = RtmStats {
            direct: 1,
            fallback: 1 + u64::from(skip),
            skipped: u64::from(skip),
            aborts_capacity: 1,
            ..stats(true)
        };
        assert_eq!(lock.stats(), expected, "abort_skip = {skip}");
    }
}

#[test]
fn retry_exhaustion_falls_back_without_skipping() {
    let lock = scripted(
        &[Err(CONFLICT), Err(CONFLICT), Err(RETRY)],
        RtmPolicy::DEFAULT,
    );
    elided_section(&lock, 0, false);
    assert_eq!(
        lock.stats(),
        RtmStats {
            fallback: 1,
            aborts_conflict: 2,
            aborts_retry: 1,
            ..stats(true)
        }
    );
    assert_eq!(lock.skip_count(), 0);
    elided_section(&lock, 0, true);
    assert_eq!(lock.stats().direct, 1);
}

#[test]
fn unnamed_debug_and_nested_aborts_fall_back_and_skip() {
    const NESTED: Step = Err(AbortStatus::from_bits(
        AbortStatus::NESTED | AbortStatus::RETRY,
    ));
    const DEBUG: Step = Err(AbortStatus::from_bits(AbortStatus::DEBUG));
    const OTHER_CODE: Step = Err(AbortStatus::explicit_code(0x42));
    let lock = scripted(
        &[Err(UNNAMED), NESTED, DEBUG, OTHER_CODE],
        RtmPolicy::DEFAULT.with_skips(3, 0),
    );
    for _ in 0..4 {
        elided_section(&lock, 0, false);
    }
    assert_eq!(
        lock.stats(),
        RtmStats {
            fallback: 4,
            aborts_other: 2,
            aborts_debug_nested: 2,
            ..stats(true)
        }
    );
    let lock = scripted(&[Err(UNNAMED)], RtmPolicy::DEFAULT);
    elided_section(&lock, 0, false);
    assert_eq!(lock.skip_count(), RtmPolicy::DEFAULT.abort_skip);
}

#[test]
fn rtm_unavailable_always_falls_back_and_stats_say_so() {
    let lock: RtmLock<TicketLock, 4, kernel_locks::Spin, ScriptedEngine> =
        RtmLock::with_engine(TicketLock::new(), ScriptedEngine::unavailable());
    for cpu in 0..4 {
        assert!(lock.try_lock(cpu));
        assert!(!lock.try_lock((cpu + 1) % 4));
        // SAFETY: `cpu` holds the lock.
        unsafe { lock.unlock(cpu) };
        acquire_release(&lock, cpu);
    }
    assert_eq!(lock.engine().begins(), 0);
    let s = lock.stats();
    assert_eq!(
        s,
        RtmStats {
            fallback: 8,
            ..stats(false)
        }
    );
    assert!(s.to_string().contains("RTM available: no"), "{s}");
}

#[test]
fn real_engine_without_rtm_is_the_fallback_lock() {
    let lock: RtmLock<TicketLock, 2> = RtmLock::new(TicketLock::new());
    for _ in 0..10 {
        acquire_release(&lock, 1);
    }
    let s = lock.stats();
    assert_eq!(s.rtm_available, Rtm.available());
    assert_eq!(s.total(), 10);
    if !Rtm.available() {
        println!("RTM not available on this CPU: every acquisition took the fallback");
        assert_eq!(
            s,
            RtmStats {
                fallback: 10,
                ..stats(false)
            }
        );
    }
}

#[test]
fn zero_attempts_disable_elision() {
    let lock = scripted(&[], RtmPolicy::DEFAULT.with_max_attempts(0));
    elided_section(&lock, 0, false);
    assert_eq!(lock.engine().begins(), 0);
    assert_eq!(
        lock.stats(),
        RtmStats {
            fallback: 1,
            ..stats(true)
        }
    );
}

#[test]
fn try_lock_makes_one_attempt() {
    // Free: elides.
    let lock = scripted(&[], RtmPolicy::DEFAULT);
    assert!(lock.try_lock(0));
    assert!(lock.is_elided(0));
    // SAFETY: CPU 0 holds the lock.
    unsafe { lock.unlock(0) };
    // Fallback held by CPU 1: one busy abort, no retry, the fallback's try_lock fails.
    lock.fallback().lock(1);
    assert!(!lock.try_lock(0));
    assert_eq!(lock.engine().busy_aborts(), 1);
    assert_eq!(lock.skip_count(), RtmPolicy::DEFAULT.busy_skip);
    // SAFETY: CPU 1 took the fallback just above.
    unsafe { lock.fallback().unlock(1) };
    // Skipping: straight to the fallback's try_lock.
    assert!(lock.try_lock(0));
    assert!(!lock.is_elided(0) && lock.is_locked());
    // SAFETY: CPU 0 holds the lock.
    unsafe { lock.unlock(0) };
    assert_eq!(
        lock.stats(),
        RtmStats {
            direct: 1,
            fallback: 1,
            skipped: 1,
            aborts_busy: 1,
            ..stats(true)
        }
    );
    // A conflict in try_lock: no retry, falls back to the fallback's try_lock.
    let lock = scripted(&[Err(CONFLICT)], RtmPolicy::DEFAULT);
    assert!(lock.try_lock(2));
    assert!(!lock.is_elided(2));
    // SAFETY: CPU 2 holds the lock.
    unsafe { lock.unlock(2) };
    assert_eq!(
        lock.stats(),
        RtmStats {
            fallback: 1,
            aborts_conflict: 1,
            ..stats(true)
        }
    );
    assert_eq!(lock.engine().begins(), 1);
}

#[test]
fn stats_display_and_reset() {
    let lock = scripted(&[Err(CONFLICT), COMMIT, Err(CAPACITY)], RtmPolicy::DEFAULT);
    elided_section(&lock, 0, true);
    elided_section(&lock, 0, false);
    let s = lock.stats();
    assert_eq!(s.total(), 2);
    assert_eq!(s.elided(), 1);
    assert_eq!(s.aborts(), 2);
    assert_eq!(s.aborts_of(AbortCause::Capacity), 1);
    let text = s.to_string();
    println!("{text}");
    assert!(text.contains("RTM available: yes"), "{text}");
    assert!(
        text.contains("total") && text.contains("direct") && text.contains("fallback"),
        "{text}"
    );
    let row = text.lines().nth(2).unwrap();
    let numbers: Vec<u64> = row.split_whitespace().map(|n| n.parse().unwrap()).collect();
    assert_eq!(numbers, [2, 0, 1, 0, 0, 1]);
    assert!(text.contains("conflict 1, capacity 1"), "{text}");
    lock.reset_stats();
    assert_eq!(lock.stats(), stats(true));
    assert_eq!(
        lock.skip_count(),
        RtmPolicy::DEFAULT.abort_skip,
        "reset_stats keeps the skip counter"
    );
}

// ---------------------------------------------------------------------------------------------
// The lock word must be in the read set.

/// CPU 1 holds the fallback lock (it took it through the RtmLock after a capacity abort); CPU 0
/// calls `lock()` with an engine that always starts transactions. CPU 0 must not enter until CPU 1
/// released, and its first attempt must be counted as a busy abort.
///
/// Verified to fail without the check: with the `if self.fallback.is_locked() { abort_busy }`
/// lines removed from `RtmLock::try_elide`, CPU 0 entered at once (`entered` while `released` was
/// false, and no busy abort) and this test failed; the check was then restored.
///
/// The scripted engine gives no isolation, which is fine here: CPU 0's section touches nothing
/// shared, and only the broken implementation would run it concurrently with CPU 1's.
#[test]
fn elision_waits_for_a_fallback_holder() {
    // CPU 1: capacity abort -> fallback (no skip so CPU 0 tries to elide). CPU 0: always Ok.
    let lock = scripted(&[Err(CAPACITY)], RtmPolicy::DEFAULT.with_skips(3, 0));
    let released = AtomicBool::new(false);
    let entered = AtomicBool::new(false);
    lock.lock(1);
    assert!(!lock.is_elided(1) && lock.is_locked());
    std::thread::scope(|s| {
        let cpu0 = s.spawn(|| {
            lock.lock(0);
            let released_before_entry = released.load(SeqCst);
            entered.store(true, SeqCst);
            let elided = lock.is_elided(0);
            // SAFETY: CPU 0 holds the lock.
            unsafe { lock.unlock(0) };
            (released_before_entry, elided)
        });
        // Wait until CPU 0 found the lock held inside its transaction (or, if the check were
        // missing, entered at once).
        let deadline = Instant::now() + Duration::from_secs(10);
        while lock.engine().busy_aborts() == 0 && !entered.load(SeqCst) {
            assert!(
                Instant::now() < deadline,
                "CPU 0 neither aborted nor entered"
            );
            std::thread::yield_now();
        }
        // Give a broken implementation time to let CPU 0 in.
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !entered.load(SeqCst),
            "CPU 0 entered the critical section while CPU 1 held it"
        );
        released.store(true, SeqCst);
        // SAFETY: CPU 1 holds the lock.
        unsafe { lock.unlock(1) };
        let (released_before_entry, elided) = cpu0.join().unwrap();
        assert!(released_before_entry, "CPU 0 entered before CPU 1 released");
        assert!(elided, "CPU 0 retried and elided once the lock was free");
    });
    // CPU 1: capacity abort, fallback. CPU 0: one busy abort, waited, committed on the retry.
    assert_eq!(
        lock.stats(),
        RtmStats {
            retry1: 1,
            fallback: 1,
            aborts_busy: 1,
            aborts_capacity: 1,
            ..stats(true)
        }
    );
}

// ---------------------------------------------------------------------------------------------
// Deferred work.

/// Records `(arg, in_transaction, fallback_locked)` when a deferred call runs.
struct Recorder {
    lock: OnceLock<Scripted>,
    log: Mutex<Vec<(usize, bool, bool)>>,
}

impl Recorder {
    const fn new() -> Self {
        Self {
            lock: OnceLock::new(),
            log: Mutex::new(Vec::new()),
        }
    }

    fn record(&self, arg: usize) {
        let lock = self.lock.get().unwrap();
        let entry = (
            arg,
            lock.engine().in_transaction(),
            lock.fallback().is_locked(),
        );
        self.log.lock().unwrap().push(entry);
    }

    fn take(&self) -> Vec<(usize, bool, bool)> {
        std::mem::take(&mut self.log.lock().unwrap())
    }
}

#[test]
fn deferred_calls_run_after_commit_in_fifo_order() {
    static REC: Recorder = Recorder::new();
    fn op(arg: usize) {
        REC.record(arg);
    }
    let lock = REC.lock.get_or_init(|| scripted(&[], RtmPolicy::DEFAULT));
    lock.lock(0);
    assert!(lock.is_elided(0));
    for arg in [3, 1, 2] {
        lock.defer(0, op, arg).unwrap();
    }
    assert!(lock.is_elided(0), "deferring leaves the section elided");
    assert!(
        REC.take().is_empty(),
        "nothing runs inside the critical section"
    );
    // SAFETY: CPU 0 holds the lock.
    unsafe { lock.unlock(0) };
    // In order, after the commit (no transaction open any more).
    assert_eq!(
        REC.take(),
        [(3, false, false), (1, false, false), (2, false, false)]
    );
    assert_eq!(lock.engine().commits(), 1);
    assert_eq!(lock.stats().direct, 1, "counted as a direct commit");
    // Ran once: the next section starts with an empty queue.
    acquire_release(lock, 0);
    assert!(REC.take().is_empty());
}

#[test]
fn deferred_calls_run_after_the_fallback_is_released() {
    static REC: Recorder = Recorder::new();
    fn op(arg: usize) {
        REC.record(arg);
    }
    let lock = REC
        .lock
        .get_or_init(|| scripted(&[Err(CAPACITY)], RtmPolicy::DEFAULT));
    lock.lock(2);
    assert!(!lock.is_elided(2) && lock.is_locked());
    lock.defer(2, op, 10).unwrap();
    lock.defer(2, op, 20).unwrap();
    assert!(
        !lock.is_elided(2),
        "deferring does not make a fallback section elided"
    );
    // SAFETY: CPU 2 holds the lock.
    unsafe { lock.unlock(2) };
    assert!(!lock.is_locked());
    assert_eq!(REC.take(), [(10, false, false), (20, false, false)]);
    let stats = lock.stats();
    assert_eq!((stats.fallback, stats.skipped), (1, 0), "{stats:?}");
    // The release cleared the deferred flag with the mode: the next section (skipped by the
    // capacity abort's skip counter) runs nothing and is counted by its own mode.
    lock.lock(2);
    // SAFETY: CPU 2 holds the lock.
    unsafe { lock.unlock(2) };
    assert!(REC.take().is_empty());
    let stats = lock.stats();
    assert_eq!((stats.fallback, stats.skipped), (2, 1), "{stats:?}");
}

#[test]
fn deferred_queue_full_is_an_error() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    fn op(arg: usize) {
        assert_eq!(RUNS.fetch_add(1, SeqCst), arg, "FIFO order");
    }
    for script in [&[][..], &[Err(CAPACITY)][..]] {
        let lock = scripted(script, RtmPolicy::DEFAULT);
        RUNS.store(0, SeqCst);
        lock.lock(1);
        for i in 0..DEFER_CAPACITY {
            assert_eq!(lock.defer(1, op, i), Ok(()));
        }
        assert_eq!(lock.defer(1, op, 99), Err(DeferFull));
        assert_eq!(lock.defer(1, op, 99), Err(DeferFull));
        assert!(DeferFull.to_string().contains("full"));
        // SAFETY: CPU 1 holds the lock.
        unsafe { lock.unlock(1) };
        assert_eq!(RUNS.load(SeqCst), DEFER_CAPACITY);
        // The queue is empty again.
        lock.lock(1);
        for i in 0..DEFER_CAPACITY {
            lock.defer(1, op, DEFER_CAPACITY + i).unwrap();
        }
        // SAFETY: CPU 1 holds the lock.
        unsafe { lock.unlock(1) };
        assert_eq!(RUNS.load(SeqCst), 2 * DEFER_CAPACITY);
    }
}

#[test]
fn deferred_call_may_take_the_lock_again() {
    static LOCK: OnceLock<Scripted> = OnceLock::new();
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    fn inner(_: usize) {
        RUNS.fetch_add(1, SeqCst);
    }
    fn outer(cpu: usize) {
        let lock = LOCK.get().unwrap();
        lock.lock(cpu);
        lock.defer(cpu, inner, 0).unwrap();
        // SAFETY: `cpu` holds the lock.
        unsafe { lock.unlock(cpu) };
        RUNS.fetch_add(1, SeqCst);
    }
    let lock = LOCK.get_or_init(|| scripted(&[], RtmPolicy::DEFAULT));
    lock.lock(3);
    lock.defer(3, outer, 3).unwrap();
    lock.defer(3, inner, 0).unwrap();
    // SAFETY: CPU 3 holds the lock.
    unsafe { lock.unlock(3) };
    assert_eq!(RUNS.load(SeqCst), 3);
    assert_eq!(lock.stats().direct, 2);
}

// ---------------------------------------------------------------------------------------------
// Misuse.

/// Releases by a CPU that does not hold the lock, a second acquisition by its holder, a
/// deferred call without the lock, and CPU ids beyond the lock's range or its fallback's.
#[test]
fn misuse_panics() {
    common::assert_each_panics(&[
        (
            "rtm: unlock by CPU 2, which does not hold the lock",
            &|| {
                let lock = scripted(&[], RtmPolicy::DEFAULT);
                // SAFETY: deliberately wrong; the debug check panics before anything is touched.
                unsafe { lock.unlock(2) };
            },
        ),
        (
            "rtm: unlock by CPU 1, which does not hold the lock",
            &|| {
                let lock = scripted(&[], RtmPolicy::DEFAULT);
                lock.lock(0);
                // SAFETY: deliberately wrong; the debug check panics before anything is touched.
                unsafe { lock.unlock(1) };
            },
        ),
        ("rtm: CPU 0 locks a lock it already holds", &|| {
            let lock = scripted(&[], RtmPolicy::DEFAULT);
            lock.lock(0);
            lock.lock(0);
        }),
        ("rtm: defer by CPU 0, which does not hold the lock", &|| {
            fn op(_: usize) {}
            let lock = scripted(&[], RtmPolicy::DEFAULT);
            let _ = lock.defer(0, op, 0);
        }),
        (
            "rtm: CPU id 4 out of range (this lock supports CPUs 0..4)",
            &|| {
                let lock = scripted(&[], RtmPolicy::DEFAULT);
                lock.lock(4);
            },
        ),
        // The fallback's range limits the lock's.
        ("out of range (this lock supports CPUs 0..2)", &|| {
            let lock: RtmLock<TicketLock, 4> = RtmLock::new(TicketLock::with_cpus(2));
            assert_eq!(lock.max_cpus(), 2);
            lock.lock(3);
        }),
    ]);
}

// ---------------------------------------------------------------------------------------------
// Stress on real threads.

const ITERS: usize = 5_000;

/// Like `common::hammer` without the `is_locked` check (an elided holder is invisible to it);
/// every section also defers one call, which must run exactly once per acquisition.
fn hammer_elided<L: KernelLock, E: TxEngine>(lock: &RtmLock<L, 64, Yield, E>, threads: usize) {
    /// `arg` is the address of the test's `deferred` counter.
    fn op(arg: usize) {
        // SAFETY: `arg` points to `deferred` below, which outlives every critical section
        // (`on_cpus` joins all threads before it returns).
        let deferred = unsafe { &*(arg as *const AtomicUsize) };
        deferred.fetch_add(1, SeqCst);
    }
    let deferred = AtomicUsize::new(0);
    let counter = common::RacyCounter::new();
    common::on_cpus(threads, ITERS, |cpu| {
        if cpu % 3 == 2 {
            while !lock.try_lock(cpu) {
                std::thread::yield_now();
            }
        } else {
            lock.lock(cpu);
        }
        counter.increment();
        lock.defer(cpu, op, &deferred as *const AtomicUsize as usize)
            .unwrap();
        // SAFETY: `cpu` took the lock just above.
        unsafe { lock.unlock(cpu) };
    });
    let n = (threads * ITERS) as u64;
    assert_eq!(
        counter.get(),
        n,
        "lost updates: two CPUs were in the critical section at once"
    );
    assert_eq!(deferred.load(SeqCst), threads * ITERS, "deferred calls");
    assert_eq!(lock.stats().total(), n);
    assert!(!lock.is_locked());
}

#[test]
fn stress_real_engine_over_ticket_lock() {
    let threads = common::stress_threads();
    let lock: RtmLock<TicketLock<Yield>, 64, Yield, Rtm> = RtmLock::new(TicketLock::with_relax());
    if Rtm.available() {
        hammer_elided(&lock, threads);
    } else {
        // Without RTM this is the fallback path, which `common::hammer` checks exactly.
        common::hammer(&lock, threads, ITERS);
        common::hammer_try(&lock, threads, ITERS);
        common::hammer_unchecked(&lock, threads, ITERS);
        let s = lock.stats();
        assert_eq!(
            s,
            RtmStats {
                fallback: (3 * threads * ITERS) as u64,
                ..stats(false)
            }
        );
        println!("RTM not available on this CPU: stress ran the fallback path only");
    }
    println!("{}", lock.stats());
}

#[test]
fn stress_real_engine_over_clh_lock() {
    let threads = common::stress_threads().min(64);
    let lock: RtmLock<ClhLock<64, Yield>, 64, Yield, Rtm> = RtmLock::new(ClhLock::new());
    if Rtm.available() {
        hammer_elided(&lock, threads);
    } else {
        common::hammer(&lock, threads, ITERS);
        assert_eq!(
            lock.stats(),
            RtmStats {
                fallback: (threads * ITERS) as u64,
                ..stats(false)
            }
        );
        println!("RTM not available on this CPU: stress ran the fallback path only");
    }
}

#[test]
fn stress_simulated_htm() {
    let threads = common::stress_threads();
    for policy in [RtmPolicy::DEFAULT, RtmPolicy::DEFAULT.with_max_attempts(1)] {
        let model = HtmModel::new();
        let lock = testing::model_lock::<_, 64, Yield>(&model, policy);
        hammer_elided(&lock, threads);
        let s = lock.stats();
        println!("{policy:?}\n{s}");
        assert!(s.elided() > 0, "the model never elided");
    }
}

#[test]
fn stress_scripted_aborts_over_ticket_lock() {
    // Every attempt aborts (no transaction ever starts), so all paths end on the fallback while
    // CPUs race on the skip counter and the wait-before-retry loop.
    let engine = ScriptedEngine::aborting(&[Err(CONFLICT), Err(CAPACITY)], CONFLICT);
    let lock: RtmLock<TicketLock<Yield>, 64, Yield, ScriptedEngine> =
        RtmLock::with_engine(TicketLock::with_relax(), engine);
    let threads = common::stress_threads();
    hammer_elided(&lock, threads);
    let s = lock.stats();
    assert_eq!(s.fallback, (threads * ITERS) as u64);
    assert_eq!(s.elided(), 0);
    assert_eq!(s.aborts(), lock.engine().begins() as u64);
}

#[test]
fn rtm_lock_builds_in_a_static() {
    static LOCK: RtmLock<TicketLock, 8> = RtmLock::new(TicketLock::new());
    static TUNED: RtmLock<TicketLock, 8> =
        RtmLock::with_policy(TicketLock::new(), RtmPolicy::DEFAULT.with_max_attempts(5));
    acquire_release(&LOCK, 7);
    assert_eq!(LOCK.stats().total(), 1);
    assert_eq!(TUNED.policy().max_attempts, 5);
    let _ = format!("{LOCK:?}");
}

// ---------------------------------------------------------------------------------------------
// Real RTM (skipped where the CPU has none).

fn rtm_or_skip() -> bool {
    if Rtm.available() {
        true
    } else {
        println!("RTM not available on this CPU: skipped");
        false
    }
}

#[test]
fn real_rtm_elides_and_commits() {
    if !rtm_or_skip() {
        return;
    }
    let lock: RtmLock<TicketLock, 2> = RtmLock::new(TicketLock::new());
    for _ in 0..1000 {
        lock.lock(0);
        let elided = lock.is_elided(0);
        assert_eq!(elided, Rtm.in_transaction());
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
        assert!(!Rtm.in_transaction());
    }
    let s = lock.stats();
    println!("{s}");
    assert_eq!(s.total(), 1000);
    assert!(
        s.elided() > 0,
        "no transaction ever committed on an RTM CPU"
    );
}

#[test]
fn real_rtm_drops_deferred_calls_of_an_aborted_attempt() {
    if !rtm_or_skip() {
        return;
    }
    static RAN: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    fn op(arg: usize) {
        RAN.lock().unwrap().push(arg);
    }
    let lock: RtmLock<TicketLock, 2> = RtmLock::new(TicketLock::new());
    // Retry until one attempt aborts by itself after deferring (the hardware may also abort for
    // other reasons, e.g. an interrupt, and then fall back; try a few times).
    for _ in 0..100 {
        lock.reset_stats();
        lock.lock(0);
        if lock.is_elided(0) && lock.stats().aborts_busy == 0 {
            lock.defer(0, op, 1).unwrap();
            // Rolls back to XBEGIN: the deferred call 1 is undone; the retry comes back here with
            // one busy abort counted.
            // SAFETY: on real RTM an abort rolls the whole transaction back; nothing survives it.
            unsafe { Rtm.abort_busy() };
            unreachable!("XABORT returned inside a transaction");
        }
        lock.defer(0, op, 2).unwrap();
        let retried = lock.stats().aborts_busy == 1;
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
        if retried {
            assert_eq!(
                *RAN.lock().unwrap(),
                [2],
                "the aborted attempt's deferred call ran"
            );
            return;
        }
        RAN.lock().unwrap().clear();
    }
    panic!("never observed an elided attempt abort and retry");
}

/// Every lock's compile-time CPU bound (`MaxCpus`), which `RtmLock` compares with its `N`: the
/// per-CPU array length, or none for the locks without per-CPU state; and each instance's
/// `max_cpus` within it.
#[test]
fn every_lock_states_its_cpu_bound() {
    use kernel_locks::{BrLock, McsLock, NoLock, TicketBackoffLock};
    fn bound<L: MaxCpus + KernelLock>(lock: &L) -> usize {
        assert!(
            lock.max_cpus() <= L::MAX_CPUS,
            "{}: max_cpus above its bound",
            lock.name()
        );
        L::MAX_CPUS
    }
    assert_eq!(bound(&ClhLock::<3>::with_cpus(2)), 3);
    assert_eq!(bound(&McsLock::<5>::new()), 5);
    assert_eq!(bound(&BrLock::<6>::new()), 6);
    assert_eq!(bound(&TicketLock::with_cpus(2)), usize::MAX);
    assert_eq!(bound(&TicketBackoffLock::<Yield>::with_relax()), usize::MAX);
    // SAFETY: nothing runs under this lock.
    assert_eq!(bound(&unsafe { NoLock::new() }), usize::MAX);
    let elided: RtmLock<McsLock<7>, 7> = RtmLock::new(McsLock::new());
    assert_eq!(bound(&elided), 7);
    let over_ticket: RtmLock<TicketLock, 3> = RtmLock::new(TicketLock::with_cpus(2));
    assert_eq!((bound(&over_ticket), over_ticket.max_cpus()), (3, 2));
}

/// `RtmLock<L, N>` does not compile when `L` has a CPU bound of its own (`MaxCpus`) other than
/// `N`, in a `static` or a `let`; matching counts and unbounded fallbacks compile and run
/// (tests/ui-rtm; the pass case makes trybuild build, not only check, so that the error of the
/// `let`, raised when the constructor is instantiated, is seen).
#[test]
fn fallback_with_another_cpu_count_does_not_compile() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui-rtm/cpus_match.rs");
    t.compile_fail("tests/ui-rtm/cpus_mismatch_*.rs");
}
