//! The queued spinlock on real threads: exact totals through every path (fast, pending, queue)
//! and every wait strategy, the word and the order of entry while CPUs take the pending bit and
//! queue, nested waits on one CPU through the four contexts (one at a time and under
//! contention, with exact totals), and its misuse checks. Every test declares a node pool of
//! its own: a pool's nodes are per CPU, and the tests of this binary run at once, each with
//! its own threads as CPUs 0.., so two tests sharing a pool would be two threads acting as one
//! CPU.
#![cfg(not(kernel_locks_loom))]

mod common;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex as StdMutex;

use kernel_locks::{
    qspin_node_pool, Backoff, ConstInit, CpuId, KernelLock, MaxCpus, QSpinLock, Relax, RtmLock,
    Spin, Wfe,
};

/// The lock's word, read through its `Debug` form (`QSpinLock { word: 0x00000101 }`).
fn word<L: std::fmt::Debug>(lock: &L) -> u32 {
    let text = format!("{lock:?}");
    let hex = text
        .split("0x")
        .nth(1)
        .and_then(|rest| rest.get(..8))
        .unwrap_or_else(|| panic!("no word in {text:?}"));
    u32::from_str_radix(hex, 16).unwrap()
}

/// The documented word layout: locked byte, pending bit 8, tail (CPU + 1, node index) above.
const LOCKED: u32 = 1;
const PENDING: u32 = 1 << 8;
const fn tail(cpu: CpuId, idx: usize) -> u32 {
    ((((cpu as u32) + 1) << 2) | idx as u32) << 16
}

/// Flags "CPU `cpu` has polled at least once", a row for each test that uses them: set by
/// [`Announce`] and by [`Nesting`].
static POLLED: [[AtomicBool; 16]; 4] = [const { [const { AtomicBool::new(false) }; 16] }; 4];

/// A wait strategy that marks, in row `ROW` of [`POLLED`], each CPU that calls it. The lock calls
/// it only from its wait loops: a set flag means the CPU is pending (it polls the word), or
/// queued and linked behind its predecessor (it polls its node) or the queue's head (it polls
/// the word), with no sleep or timing.
#[derive(Default)]
struct Announce<const ROW: usize>;

impl<const ROW: usize> Relax for Announce<ROW> {
    fn relax(&mut self, cpu: CpuId) {
        POLLED[ROW][cpu].store(true, Ordering::SeqCst);
        std::thread::yield_now();
    }
}

/// Waits until CPU `cpu` has polled, in row `row`.
fn until_polled(row: usize, cpu: CpuId) {
    while !POLLED[row][cpu].load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
}

#[test]
fn the_lock_is_one_word_and_its_constructors() {
    qspin_node_pool!(Pool, 4);
    static LOCK: QSpinLock<Pool> = QSpinLock::new();
    static FROM_INIT: QSpinLock<Pool, Backoff> = <QSpinLock<Pool, Backoff> as ConstInit>::INIT;
    assert_eq!(std::mem::size_of::<QSpinLock<Pool>>(), 4);
    assert_eq!(std::mem::align_of::<QSpinLock<Pool>>(), 4);
    for lock in [&LOCK, &QSpinLock::default()] {
        assert_eq!((lock.name(), lock.max_cpus()), ("qspin", 4));
        assert!(!lock.is_locked());
        assert!(lock.try_lock(3));
        assert!(lock.is_locked() && !lock.try_lock(0));
        assert!(
            !lock.try_lock(3),
            "try_lock by the holder must fail (and not panic)"
        );
        assert_eq!(format!("{lock:?}"), "QSpinLock { word: 0x00000001 }");
        // SAFETY: CPU 3 holds the lock.
        unsafe { lock.unlock(3) };
        assert_eq!(word(lock), 0);
        // SAFETY: CPU 1 is in range.
        unsafe { lock.lock_unchecked(1) };
        // SAFETY: CPU 1 holds the lock.
        unsafe { lock.unlock(1) };
    }
    assert!(!FROM_INIT.is_locked() && FROM_INIT.max_cpus() == 4);
}

#[test]
fn the_cpu_bound_is_the_pools_and_rtm_elides_over_it() {
    qspin_node_pool!(Pool, 3);
    assert_eq!(<QSpinLock<Pool> as MaxCpus>::MAX_CPUS, 3);
    assert_eq!(<QSpinLock<Pool, Backoff> as MaxCpus>::MAX_CPUS, 3);
    // `RtmLock<L, N>` compiles only when `N` is the fallback's bound (see tests/ui-rtm).
    static ELIDED: RtmLock<QSpinLock<Pool>, 3> = RtmLock::new(QSpinLock::new());
    assert_eq!(ELIDED.max_cpus(), 3);
    ELIDED.lock(2);
    assert!(ELIDED.is_locked());
    // SAFETY: CPU 2 holds the lock.
    unsafe { ELIDED.unlock(2) };
    assert!(!ELIDED.is_locked());
    assert_eq!(ELIDED.stats().total(), 1);
}

#[test]
fn exact_totals_under_contention() {
    qspin_node_pool!(Pool, 64);
    let threads = common::stress_threads().min(64);
    let lock = QSpinLock::<Pool, common::Yield>::new();
    common::hammer(&lock, threads, 20_000);
    common::hammer_unchecked(&lock, threads, 2_000);
    assert_eq!(word(&lock), 0);
}

#[test]
fn exact_totals_with_try_lock_and_mixed_acquisitions() {
    qspin_node_pool!(Pool, 64);
    let threads = common::stress_threads().min(64);
    let lock = QSpinLock::<Pool, common::Yield>::new();
    common::hammer_try(&lock, threads, 10_000);
    common::hammer_mixed(&lock, threads, 10_000);
    assert_eq!(word(&lock), 0);
}

#[test]
fn exact_totals_with_every_wait_strategy() {
    // Pure spinning strategies, not oversubscribed (one thread per host core) to stay fast.
    qspin_node_pool!(Pool, 64);
    let threads = common::stress_threads().min(64);
    let threads = threads.min(std::thread::available_parallelism().map_or(2, |n| n.get()));
    common::hammer(&QSpinLock::<Pool, Wfe>::new(), threads, 5_000);
    common::hammer(&QSpinLock::<Pool, Spin>::new(), threads, 5_000);
    common::hammer(&QSpinLock::<Pool, Backoff>::new(), threads, 5_000);
}

#[test]
fn waiters_take_the_pending_bit_then_queue_and_enter_in_fifo_order() {
    // CPU 0 holds the lock; CPUs 1, 2, 3 wait in that order (each spawned once the one before
    // polls). CPU 1 sets the pending bit, CPU 2 queues as the head, CPU 3 queues behind it: the
    // word shows each step. They enter in that order, through the pending add, the head's
    // claim with a successor (and the hand-off) and the last head's claim of the whole word.
    qspin_node_pool!(Pool, 4);
    let lock = QSpinLock::<Pool, Announce<0>>::new();
    let order = StdMutex::new(Vec::new());
    lock.lock(0);
    assert_eq!(word(&lock), LOCKED);
    let expected = [
        LOCKED | PENDING,
        tail(2, 0) | LOCKED | PENDING,
        tail(3, 0) | LOCKED | PENDING,
    ];
    std::thread::scope(|s| {
        for (cpu, expected) in (1..4).zip(expected) {
            let (lock, order) = (&lock, &order);
            s.spawn(move || {
                lock.lock(cpu);
                order.lock().unwrap().push(cpu);
                // SAFETY: `cpu` holds the lock.
                unsafe { lock.unlock(cpu) };
            });
            until_polled(0, cpu);
            assert_eq!(word(&lock), expected, "after CPU {cpu} began to wait");
        }
        assert!(
            order.lock().unwrap().is_empty(),
            "a waiter entered while CPU 0 held the lock"
        );
        assert!(!lock.try_lock(2), "try_lock passed the waiters");
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
    });
    assert_eq!(*order.lock().unwrap(), vec![1, 2, 3]);
    assert_eq!(word(&lock), 0);
}

#[test]
fn a_pending_waiter_blocks_until_the_release_and_try_lock_fails_throughout() {
    qspin_node_pool!(Pool, 3);
    let lock = QSpinLock::<Pool, Announce<1>>::new();
    lock.lock(0);
    common::waiter_blocks_until_release(
        || {
            lock.lock(1);
            // SAFETY: CPU 1 took it just above.
            unsafe { lock.unlock(1) };
        },
        || {
            until_polled(1, 1);
            assert_eq!(word(&lock), LOCKED | PENDING);
            assert!(!lock.try_lock(2), "try_lock passed the pending waiter");
            // SAFETY: CPU 0 holds the lock.
            unsafe { lock.unlock(0) };
        },
        "CPU 0 held the lock",
    );
    assert_eq!(word(&lock), 0);
}

thread_local! {
    /// How deep the simulated interrupts of `Nesting` and `Interrupts` go on this thread.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

qspin_node_pool!(NestPool, 16);
/// The locks of the nesting runs, all over `NestPool`: run `r` uses `NESTED[BASE..]`.
static NESTED: [QSpinLock<NestPool, Nesting>; 12] = [const { QSpinLock::new() }; 12];
/// The run's first lock, the CPU whose waits are interrupted, and how deep.
static BASE: AtomicUsize = AtomicUsize::new(0);
static NESTER: AtomicUsize = AtomicUsize::new(usize::MAX);
static LEVELS: AtomicUsize = AtomicUsize::new(0);
/// The row of [`POLLED`] that the nesting runs use.
const NEST_ROW: usize = 2;

/// A wait strategy that marks each CPU that polls (row [`NEST_ROW`] of [`POLLED`]) and plays
/// interrupts on the CPU `NESTER`: while it waits for lock `d` of the run, it takes lock
/// `d + 1` on the same CPU (a nested context), once per level, up to `LEVELS` deep; at that
/// depth it marks itself polled.
#[derive(Default)]
struct Nesting;

impl Relax for Nesting {
    fn relax(&mut self, cpu: usize) {
        let depth = DEPTH.with(Cell::get);
        if cpu == NESTER.load(Ordering::SeqCst) {
            if depth < LEVELS.load(Ordering::SeqCst) {
                // Not restored after the nested wait: each level is interrupted once.
                DEPTH.with(|d| d.set(depth + 1));
                let lock = &NESTED[BASE.load(Ordering::SeqCst) + depth + 1];
                lock.lock(cpu);
                // SAFETY: `cpu` took it just above.
                unsafe { lock.unlock(cpu) };
            } else {
                POLLED[NEST_ROW][cpu].store(true, Ordering::SeqCst);
            }
        } else {
            POLLED[NEST_ROW][cpu].store(true, Ordering::SeqCst);
        }
        std::thread::yield_now();
    }
}

/// One nesting run: CPU `first` holds locks `base..=base + levels`, CPU `first + 2 + k` waits
/// on lock `base + k` with the pending bit, and then CPU `first + 1`, waiting for lock `base`
/// and "interrupted" in every wait, queues on each with its next node. `check` runs once the
/// nester waits at its deepest level (it is not called if the nester panics first), then CPU
/// `first` releases the locks. Returns the nester's panic message, if it panicked.
fn nesting_run(base: usize, first: usize, levels: usize, check: impl FnOnce()) -> Option<String> {
    let locks = &NESTED[base..=base + levels];
    let nester = first + 1;
    BASE.store(base, Ordering::SeqCst);
    LEVELS.store(levels, Ordering::SeqCst);
    NESTER.store(nester, Ordering::SeqCst);
    for lock in locks {
        lock.lock(first);
    }
    let outcome = std::thread::scope(|s| {
        for (k, lock) in locks.iter().enumerate() {
            s.spawn(move || {
                lock.lock(first + 2 + k);
                // SAFETY: this CPU took it just above.
                unsafe { lock.unlock(first + 2 + k) };
            });
            until_polled(NEST_ROW, first + 2 + k);
        }
        let waits = s.spawn(move || {
            locks[0].lock(nester);
            // SAFETY: this CPU took it just above.
            unsafe { locks[0].unlock(nester) };
        });
        while !POLLED[NEST_ROW][nester].load(Ordering::SeqCst) && !waits.is_finished() {
            std::thread::yield_now();
        }
        if !waits.is_finished() {
            check();
        }
        for lock in locks.iter().rev() {
            // SAFETY: CPU `first` holds every lock of the run.
            unsafe { lock.unlock(first) };
        }
        waits.join()
    });
    NESTER.store(usize::MAX, Ordering::SeqCst);
    outcome.err().map(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default()
    })
}

#[test]
fn nested_contexts_wait_with_their_own_nodes_and_a_fifth_panics() {
    // Four waits on one CPU at once (task, soft interrupt, interrupt, NMI), each queued with
    // its own node: lock k's tail names node k of CPU 1. They all end, and the locks are free.
    let ended = nesting_run(0, 0, 3, || {
        for (k, lock) in NESTED[..4].iter().enumerate() {
            assert_eq!(word(lock), tail(1, k) | LOCKED | PENDING, "lock {k}");
        }
    });
    assert_eq!(ended, None, "four nested waits did not all end");
    assert!(NESTED[..4].iter().all(|l| word(l) == 0));
    // A fifth nested wait has no node: it panics (on other CPUs and locks, since the
    // panicking CPU's nodes are left queued).
    let panic = nesting_run(4, 8, 4, || panic!("the fifth nested wait got a node"));
    assert!(
        panic.is_some_and(|m| m.contains("QSpinLock: CPU 9 waits in a fifth nested context")),
        "a fifth nested wait did not panic"
    );
}

qspin_node_pool!(StormPool, 64);
/// The locks of the interrupt storm: contexts of depth `d` take `STORM[d]`.
static STORM: [QSpinLock<StormPool, Interrupts>; 4] = [const { QSpinLock::new() }; 4];
/// Acquisitions per lock of the storm, counted atomically (beside the racy counters).
static TAKEN: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];
/// A racy counter per lock of the storm, incremented under it.
static COUNTS: [common::RacyCounter; 4] = [const { common::RacyCounter::new() }; 4];

/// A wait strategy that plays interrupts on every CPU: every wait for `STORM[d]` (`d < 3`)
/// that polls a second time is interrupted once by a context that takes `STORM[d + 1]` and
/// increments its counter, and may be interrupted in its turn. The contexts that hold a lock
/// never wait, so nothing deadlocks; the CPUs' waits nest up to four deep, each queued wait
/// with its own node, while other CPUs' contexts contend for the same locks.
#[derive(Default)]
struct Interrupts {
    polls: u32,
}

impl Relax for Interrupts {
    fn relax(&mut self, cpu: usize) {
        self.polls += 1;
        let depth = DEPTH.with(Cell::get);
        if self.polls == 2 && depth + 1 < STORM.len() {
            DEPTH.with(|d| d.set(depth + 1));
            critical(depth + 1, cpu);
            DEPTH.with(|d| d.set(depth));
        }
        if self.polls % 16 == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Takes `STORM[level]` on `cpu` and counts the entry. Every 32nd holder of each lock yields its
/// thread while it holds the lock (a preempted holder, on a host), so that the other threads
/// wait, and their waits nest, even when the machine runs fewer of them at once than there are.
fn critical(level: usize, cpu: CpuId) {
    STORM[level].lock(cpu);
    COUNTS[level].increment();
    if TAKEN[level].fetch_add(1, Ordering::Relaxed) % 32 == 0 {
        std::thread::yield_now();
    }
    // SAFETY: `cpu` took it just above.
    unsafe { STORM[level].unlock(cpu) };
}

#[test]
fn exact_totals_while_every_cpu_nests_waits_on_other_locks() {
    let threads = common::stress_threads().min(64);
    let iters = 5_000;
    common::on_cpus(threads, iters, |cpu| critical(0, cpu));
    assert_eq!(TAKEN[0].load(Ordering::Relaxed), threads * iters);
    for (level, taken) in TAKEN.iter().enumerate() {
        assert!(
            taken.load(Ordering::Relaxed) > 0,
            "no context of depth {level} ran: the waits did not nest that deep"
        );
    }
    for level in 0..STORM.len() {
        assert_eq!(
            COUNTS[level].get(),
            TAKEN[level].load(Ordering::Relaxed) as u64,
            "lost updates under lock {level}: two contexts were inside at once"
        );
        assert_eq!(word(&STORM[level]), 0, "lock {level} not free");
    }
}

#[test]
fn misuse_is_caught() {
    qspin_node_pool!(Pool, 2);
    let lock = QSpinLock::<Pool, Spin>::new();
    common::assert_each_panics(&[
        (
            "QSpinLock: CPU id 2 out of range (this lock supports CPUs 0..2)",
            &|| lock.lock(2),
        ),
        ("QSpinLock: CPU id 5 out of range", &|| {
            let _ = lock.try_lock(5);
        }),
        ("QSpinLock: CPU id 2 out of range", &|| {
            // SAFETY: deliberately wrong: CPU 2 does not exist.
            unsafe { lock.unlock(2) }
        }),
        (
            "QSpinLock: unlock by CPU 0, which does not hold the lock",
            &|| {
                // SAFETY: deliberately wrong: nothing is held.
                unsafe { lock.unlock(0) }
            },
        ),
    ]);
    assert_eq!(word(&lock), 0, "a misuse changed the word");
    // A double unlock: the second finds the bit clear, panics and leaves the word alone.
    lock.lock(1);
    // SAFETY: CPU 1 holds it.
    unsafe { lock.unlock(1) };
    common::assert_each_panics(&[("QSpinLock: unlock by CPU 1, which does not hold", &|| {
        // SAFETY: deliberately wrong: a double unlock.
        unsafe { lock.unlock(1) }
    })]);
    assert_eq!(word(&lock), 0);
    #[cfg(debug_assertions)]
    {
        lock.lock(1);
        common::assert_each_panics(&[
            ("QSpinLock: CPU 1 locks a lock it already holds", &|| {
                lock.lock(1)
            }),
            ("QSpinLock: CPU 1 locks a lock it already holds", &|| {
                // SAFETY: CPU 1 is in range.
                unsafe { lock.lock_unchecked(1) }
            }),
            ("QSpinLock: unlock by CPU 0", &|| {
                // SAFETY: deliberately wrong: CPU 1 holds the lock.
                unsafe { lock.unlock(0) }
            }),
        ]);
        // The holder's lock is intact.
        assert_eq!(word(&lock), LOCKED);
        // SAFETY: CPU 1 holds it.
        unsafe { lock.unlock(1) };
    }
    // In release builds an unlock by a CPU that does not hold the lock releases it (the word
    // keeps no owner: module docs).
    #[cfg(not(debug_assertions))]
    {
        lock.lock(1);
        // SAFETY: deliberately wrong: CPU 1 holds the lock.
        unsafe { lock.unlock(0) };
        assert_eq!(word(&lock), 0);
    }
    common::hammer(&lock, 2, 100);
}

#[test]
#[cfg(debug_assertions)]
fn the_debug_held_list_follows_many_locks_per_cpu() {
    // A CPU holds ten locks of one pool at once (more than the list's eight): every release
    // is accepted, the re-lock of a recorded one panics, and the list is empty after.
    qspin_node_pool!(Pool, 1);
    let locks: Vec<QSpinLock<Pool>> = (0..10).map(|_| QSpinLock::new()).collect();
    for lock in &locks {
        lock.lock(0);
    }
    common::assert_each_panics(&[("QSpinLock: CPU 0 locks a lock it already holds", &|| {
        locks[3].lock(0)
    })]);
    for lock in locks.iter().rev() {
        // SAFETY: CPU 0 holds every lock.
        unsafe { lock.unlock(0) };
    }
    let other = QSpinLock::<Pool>::new();
    common::assert_each_panics(&[("QSpinLock: unlock by CPU 0, which does not hold", &|| {
        // SAFETY: deliberately wrong: nothing is held.
        unsafe { other.unlock(0) }
    })]);
    assert!(locks.iter().all(|l| !l.is_locked()));
}
