//! The compact NUMA-aware lock on real threads: exact totals through every path, with a
//! uniform map and a simulated two-node machine, over several locks sharing one node pool; the
//! hand-off order the module documentation gives, on queues built one waiter at a time (a
//! waiter passed over to the secondary queue, the secondary queue spliced back at the main
//! queue's end and in front of it, appended to, and flushed when the fairness bound is
//! reached); nested waits through the four contexts; and every row of the misuse table.
//!
//! Every test declares a node pool and a map of its own: a pool's nodes are per CPU, and the
//! tests of this binary run at once, each with its own threads as CPUs 0.., so two tests
//! sharing a pool would be two threads acting as one CPU.
#![cfg(not(kernel_locks_loom))]

mod common;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex as StdMutex;

use kernel_locks::cna::{NumaTable, DEFAULT_LOCAL_LIMIT};
use kernel_locks::{
    cna_node_pool, numa_map, Backoff, CnaLock, ConstInit, CpuId, KernelLock, MaxCpus, Relax, Spin,
    Uniform, Wfe,
};

/// Puts CPU `i` on node `nodes[i]`.
fn place<const CPUS: usize>(table: &NumaTable<CPUS>, nodes: &[u32]) {
    for (cpu, &node) in nodes.iter().enumerate() {
        table.set(cpu, node);
    }
}

/// The simulated two-node machine of the stress tests: CPUs 0 and 1 on node 0, 2 and 3 on
/// node 1, 4 and 5 on node 0, and so on.
fn two_nodes<const CPUS: usize>(table: &NumaTable<CPUS>) {
    for cpu in 0..CPUS {
        table.set(cpu, (cpu / 2 % 2) as u32);
    }
}

#[test]
fn the_lock_is_one_word_and_constructs_everywhere() {
    cna_node_pool!(Pool, 4);
    assert_eq!(std::mem::size_of::<CnaLock<Pool, Uniform>>(), 4);
    assert_eq!(<CnaLock<Pool, Uniform> as MaxCpus>::MAX_CPUS, 4);
    static IN_STATIC: CnaLock<Pool, Uniform> = CnaLock::new();
    static FROM_INIT: CnaLock<Pool, Uniform, Backoff, 8> = ConstInit::INIT;
    let lock: CnaLock<Pool, Uniform> = CnaLock::default();
    for lock in [&IN_STATIC, &lock] {
        assert_eq!((lock.name(), lock.max_cpus()), ("cna", 4));
        assert!(!lock.is_locked());
        assert!(lock.try_lock(3));
        assert!(lock.is_locked() && !lock.try_lock(0));
        assert_eq!(format!("{lock:?}"), "CnaLock { word: 0x00000001 }");
        // SAFETY: CPU 3 holds the lock.
        unsafe { lock.unlock(3) };
        assert!(!lock.is_locked());
    }
    FROM_INIT.lock(1);
    // SAFETY: CPU 1 holds the lock.
    unsafe { FROM_INIT.unlock(1) };
    assert_eq!(DEFAULT_LOCAL_LIMIT, 1 << 16);
}

#[test]
fn the_numa_table_starts_on_node_0_and_keeps_what_it_is_told() {
    numa_map!(Map, 4);
    let table = Map::table();
    assert_eq!(format!("{table:?}"), "[0, 0, 0, 0]");
    place(table, &[0, 1, 7, 1]);
    assert_eq!((table.get(2), table.get(3)), (7, 1));
    assert_eq!(table.get(4), 0, "a CPU beyond the table is on node 0");
    assert_eq!(<Map as kernel_locks::NumaMap>::node_of(2), 7);
    assert_eq!(<Uniform as kernel_locks::NumaMap>::node_of(3), 0);
    let own = NumaTable::<2>::default();
    own.set(1, 5);
    assert_eq!(format!("{own:?}"), "[0, 5]");
}

#[test]
fn exact_totals_under_contention_on_a_uniform_machine() {
    cna_node_pool!(Pool, 16);
    let threads = common::stress_threads().min(16);
    let lock = CnaLock::<Pool, Uniform, common::Yield>::new();
    common::hammer(&lock, threads, 20_000);
    common::hammer_try(&lock, threads, 5_000);
    common::hammer_mixed(&lock, threads, 5_000);
    assert!(!lock.is_locked());
}

#[test]
fn exact_totals_under_contention_on_two_nodes() {
    cna_node_pool!(Pool, 16);
    numa_map!(Map, 16);
    two_nodes(Map::table());
    let threads = common::stress_threads().min(16);
    let lock = CnaLock::<Pool, Map, common::Yield>::new();
    common::hammer(&lock, threads, 20_000);
    common::hammer_mixed(&lock, threads, 5_000);
    // Tight fairness bounds, so that the flush of the secondary queue runs often.
    common::hammer(
        &CnaLock::<Pool, Map, common::Yield, 1>::new(),
        threads,
        10_000,
    );
    common::hammer(
        &CnaLock::<Pool, Map, common::Yield, 0>::new(),
        threads,
        5_000,
    );
}

#[test]
fn exact_totals_with_the_other_wait_strategies() {
    // Pure spinning strategies, not oversubscribed (one thread per host core) to stay fast.
    cna_node_pool!(Pool, 8);
    numa_map!(Map, 8);
    two_nodes(Map::table());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    common::hammer(&CnaLock::<Pool, Map, Spin>::new(), threads, 5_000);
    common::hammer(&CnaLock::<Pool, Map, Backoff>::new(), threads, 5_000);
    common::hammer(&CnaLock::<Pool, Map, Wfe>::new(), threads, 5_000);
}

#[test]
fn several_locks_over_one_pool_keep_exact_totals_alone_and_nested() {
    // Each CPU takes the four locks in turn, and every fourth round two of them nested (the
    // lower first, so no two CPUs wait for each other's). One pool serves all four locks.
    cna_node_pool!(Pool, 16);
    numa_map!(Map, 16);
    two_nodes(Map::table());
    let locks: [CnaLock<Pool, Map, common::Yield, 4>; 4] = Default::default();
    let counters = [const { common::RacyCounter::new() }; 4];
    let threads = common::stress_threads().min(16);
    let rounds = AtomicUsize::new(0);
    const ITERS: usize = 8_000;
    let pairs = |round: usize| (round % 4, (round / 4 + 1) % 4);
    common::on_cpus(threads, ITERS, |cpu| {
        let round = rounds.fetch_add(1, Ordering::Relaxed);
        let (a, b) = pairs(round);
        if round % 4 == 0 && a != b {
            let (low, high) = (a.min(b), a.max(b));
            locks[low].lock(cpu);
            locks[high].lock(cpu);
            counters[low].increment();
            counters[high].increment();
            // SAFETY: `cpu` holds both.
            unsafe {
                locks[high].unlock(cpu);
                locks[low].unlock(cpu);
            }
        } else {
            locks[a].lock(cpu);
            counters[a].increment();
            // SAFETY: `cpu` holds it.
            unsafe { locks[a].unlock(cpu) };
        }
    });
    let mut expected = [0u64; 4];
    for round in 0..threads * ITERS {
        let (a, b) = pairs(round);
        expected[a] += 1;
        if round % 4 == 0 && a != b {
            expected[b] += 1;
        }
    }
    let totals: Vec<u64> = counters.iter().map(common::RacyCounter::get).collect();
    assert_eq!(totals, expected, "lost updates on some lock");
    assert!(locks.iter().all(|l| !l.is_locked()));
}

/// Flags "CPU `cpu` has polled at least once", a row for each ordering test: set by
/// [`Announce`].
static POLLED: [[AtomicBool; 16]; 6] = [const { [const { AtomicBool::new(false) }; 16] }; 6];

/// A wait strategy that marks, in row `ROW` of [`POLLED`], each CPU that calls it. The lock calls
/// it only from its wait loops: the pending waiter's, the queue head's (on the word) and a
/// queued waiter's, which it enters once it has linked itself. A set flag means the CPU waits
/// where it will wait until the holder leaves, with no sleep or timing.
#[derive(Default)]
struct Announce<const ROW: usize>;

impl<const ROW: usize> Relax for Announce<ROW> {
    fn relax(&mut self, cpu: CpuId) {
        POLLED[ROW][cpu].store(true, Ordering::SeqCst);
        std::thread::yield_now();
    }
}

/// CPU 0 takes `lock`; the CPUs of `waiters` then come one at a time, each only once the one
/// before waits (the first on the pending bit, the second as the queue's head, the rest in the
/// queue); then CPU 0 releases. Returns the order in which the CPUs held the lock, CPU 0 first.
fn order_of_entry<L: KernelLock, const ROW: usize>(lock: &L, waiters: &[CpuId]) -> Vec<CpuId> {
    let order = StdMutex::new(vec![0]);
    lock.lock(0);
    std::thread::scope(|s| {
        for &cpu in waiters {
            let order = &order;
            s.spawn(move || {
                lock.lock(cpu);
                order.lock().unwrap().push(cpu);
                // SAFETY: `cpu` holds the lock.
                unsafe { lock.unlock(cpu) };
            });
            while !POLLED[ROW][cpu].load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        }
        assert_eq!(order.lock().unwrap().len(), 1, "a waiter entered early");
        // SAFETY: CPU 0 holds the lock.
        unsafe { lock.unlock(0) };
    });
    assert!(!lock.is_locked());
    order.into_inner().unwrap()
}

#[test]
fn a_uniform_machine_hands_over_in_fifo_order() {
    cna_node_pool!(Pool, 8);
    let lock = CnaLock::<Pool, Uniform, Announce<0>>::new();
    assert_eq!(
        order_of_entry::<_, 0>(&lock, &[3, 1, 6, 2, 7, 5]),
        [0, 3, 1, 6, 2, 7, 5]
    );
}

#[test]
fn a_waiter_of_another_node_is_passed_over_and_spliced_back_at_the_queues_end() {
    // CPU 2 leads the queue on node 0; CPU 3 (node 1) is passed over for 4, 5 and 6 (node 0);
    // CPU 6, the last in the main queue, makes the secondary queue the queue.
    cna_node_pool!(Pool, 8);
    numa_map!(Map, 8);
    place(Map::table(), &[0, 0, 0, 1, 0, 0, 0]);
    let lock = CnaLock::<Pool, Map, Announce<1>>::new();
    assert_eq!(
        order_of_entry::<_, 1>(&lock, &[1, 2, 3, 4, 5, 6]),
        [0, 1, 2, 4, 5, 6, 3]
    );
}

#[test]
fn with_no_local_waiter_left_the_secondary_queue_is_spliced_back_in_front() {
    // CPU 2 (node 0) passes 3 (node 1) over for 4 (node 0); 4 finds only node-1 waiters (5, 6)
    // and hands over to the secondary queue's 3, which links to 5: then 5 and 6.
    cna_node_pool!(Pool, 8);
    numa_map!(Map, 8);
    place(Map::table(), &[0, 0, 0, 1, 0, 1, 1]);
    let lock = CnaLock::<Pool, Map, Announce<2>>::new();
    assert_eq!(
        order_of_entry::<_, 2>(&lock, &[1, 2, 3, 4, 5, 6]),
        [0, 1, 2, 4, 3, 5, 6]
    );
}

#[test]
fn waiters_passed_over_later_join_the_secondary_queues_end() {
    // 2 passes 3 over for 4, 4 passes 5 over for 6, 6 hands to 7; 7 is the last: the secondary
    // queue (3, then 5) becomes the queue.
    cna_node_pool!(Pool, 8);
    numa_map!(Map, 8);
    place(Map::table(), &[0, 0, 0, 1, 0, 1, 0, 0]);
    let lock = CnaLock::<Pool, Map, Announce<3>>::new();
    assert_eq!(
        order_of_entry::<_, 3>(&lock, &[1, 2, 3, 4, 5, 6, 7]),
        [0, 1, 2, 4, 6, 7, 3, 5]
    );
}

/// The most acquisitions, in `order`, by CPUs that queued after `cpu` (later in `queued`)
/// while `cpu` waited, in a row.
fn longest_run_past(order: &[CpuId], queued: &[CpuId], cpu: CpuId) -> usize {
    let behind = &queued[queued.iter().position(|&c| c == cpu).unwrap() + 1..];
    let entered = order.iter().position(|&c| c == cpu).unwrap();
    let mut longest = 0;
    let mut run = 0;
    for c in &order[..entered] {
        run = if behind.contains(c) { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

#[test]
fn the_fairness_bound_limits_the_hand_offs_past_a_waiter() {
    // CPU 3 (node 1) among node-0 waiters. With a bound of 2 it is passed over by 4 and 5,
    // then the secondary queue is flushed to the front: 3 goes next, and with nobody else on
    // node 1 the hand-off returns to the main queue in FIFO order.
    cna_node_pool!(Pool, 10);
    numa_map!(Map, 10);
    place(Map::table(), &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    let queued = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    let bounded = CnaLock::<Pool, Map, Announce<4>, 2>::new();
    let order = order_of_entry::<_, 4>(&bounded, &queued);
    assert_eq!(order, [0, 1, 2, 4, 5, 3, 6, 7, 8, 9]);
    assert_eq!(longest_run_past(&order, &queued, 3), 2);
    // Without the bound in reach, it waits for every node-0 waiter queued when it was passed
    // over; with a bound of 0 nobody is passed over.
    POLLED[4]
        .iter()
        .for_each(|p| p.store(false, Ordering::SeqCst));
    let unbounded = CnaLock::<Pool, Map, Announce<4>>::new();
    let order = order_of_entry::<_, 4>(&unbounded, &queued);
    assert_eq!(order, [0, 1, 2, 4, 5, 6, 7, 8, 9, 3]);
    assert_eq!(longest_run_past(&order, &queued, 3), 6);
    POLLED[4]
        .iter()
        .for_each(|p| p.store(false, Ordering::SeqCst));
    let fifo = CnaLock::<Pool, Map, Announce<4>, 0>::new();
    let order = order_of_entry::<_, 4>(&fifo, &queued);
    assert_eq!(order, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
}

thread_local! {
    /// How deep the simulated interrupts of `Nesting` go on this thread.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

cna_node_pool!(NestPool, 16);
/// The locks of the nesting runs, all over `NestPool`: run `r` uses `NESTED[BASE..]`.
static NESTED: [CnaLock<NestPool, Uniform, Nesting>; 9] = [const { CnaLock::new() }; 9];
/// The run's first lock, the CPU whose waits are interrupted, how deep, and whether it reached
/// its innermost wait.
static BASE: AtomicUsize = AtomicUsize::new(0);
static NESTER: AtomicUsize = AtomicUsize::new(usize::MAX);
static LEVELS: AtomicUsize = AtomicUsize::new(0);
static INNERMOST: AtomicBool = AtomicBool::new(false);
/// The CPUs that waited (called the strategy) in the current run.
static WAITED: [AtomicBool; 16] = [const { AtomicBool::new(false) }; 16];

/// A wait strategy that plays interrupts on the CPU `NESTER`: while it waits for lock `d` of
/// the run, it takes lock `d + 1` on the same CPU (a nested context), up to `LEVELS` deep.
#[derive(Default)]
struct Nesting;

impl Relax for Nesting {
    fn relax(&mut self, cpu: CpuId) {
        WAITED[cpu].store(true, Ordering::SeqCst);
        let depth = DEPTH.with(Cell::get);
        if cpu == NESTER.load(Ordering::SeqCst) {
            if depth < LEVELS.load(Ordering::SeqCst) {
                DEPTH.with(|d| d.set(depth + 1));
                let lock = &NESTED[BASE.load(Ordering::SeqCst) + depth + 1];
                lock.lock(cpu);
                // SAFETY: `cpu` took it just above.
                unsafe { lock.unlock(cpu) };
            } else {
                INNERMOST.store(true, Ordering::SeqCst);
            }
        }
        std::thread::yield_now();
    }
}

/// One nesting run: CPU `first` holds locks `base..=base + levels`, CPUs `first + 2..` wait
/// on them with the pending bit (one each), so that CPU `first + 1`, waiting for lock `base`
/// and, "interrupted" in every wait, for the next one, queues on each with its next node.
/// Returns whether CPU `first + 1` ran to its end.
fn nesting_run(base: usize, first: CpuId, levels: usize) -> bool {
    let locks = &NESTED[base..=base + levels];
    BASE.store(base, Ordering::SeqCst);
    LEVELS.store(levels, Ordering::SeqCst);
    INNERMOST.store(false, Ordering::SeqCst);
    NESTER.store(first + 1, Ordering::SeqCst);
    for lock in locks {
        lock.lock(first);
    }
    let ended = std::thread::scope(|s| {
        for (k, lock) in locks.iter().enumerate() {
            let cpu = first + 2 + k;
            s.spawn(move || {
                lock.lock(cpu);
                // SAFETY: this CPU took it just above.
                unsafe { lock.unlock(cpu) };
            });
            while !WAITED[cpu].load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
        }
        let nester = s.spawn(move || {
            locks[0].lock(first + 1);
            // SAFETY: this CPU took it just above.
            unsafe { locks[0].unlock(first + 1) };
        });
        // Until the nester waits in its innermost context, or has panicked out of its waits.
        while !INNERMOST.load(Ordering::SeqCst) && !nester.is_finished() {
            std::thread::yield_now();
        }
        for lock in locks.iter().rev() {
            // SAFETY: CPU `first` holds every lock of the run.
            unsafe { lock.unlock(first) };
        }
        nester.join().is_ok()
    });
    NESTER.store(usize::MAX, Ordering::SeqCst);
    ended
}

#[test]
fn nested_contexts_wait_with_their_own_nodes_and_a_fifth_panics() {
    // Four waits on one CPU at once (task, soft interrupt, interrupt, NMI), each queued with
    // its own node: they all end, and the locks are free after.
    assert!(nesting_run(0, 0, 3), "four nested waits did not all end");
    assert!(NESTED[..4].iter().all(|l| !l.is_locked()));
    // A fifth nested wait has no node: it panics (on other CPUs and locks, since the
    // panicking CPU's nodes are left queued).
    assert!(!nesting_run(4, 8, 4), "a fifth nested wait did not panic");
}

#[test]
fn misuse_out_of_range_cpus_and_unlocks_of_a_free_lock_panic_in_every_build() {
    cna_node_pool!(Pool, 2);
    numa_map!(Map, 2);
    let lock = CnaLock::<Pool, Map>::new();
    common::assert_each_panics(&[
        (
            "CnaLock: CPU id 2 out of range (this lock supports CPUs 0..2)",
            &|| lock.lock(2),
        ),
        ("CnaLock: CPU id 5 out of range", &|| {
            let _ = lock.try_lock(5);
        }),
        ("CnaLock: CPU id 3 out of range", &|| {
            // SAFETY: deliberately wrong: CPU 3 does not exist.
            unsafe { lock.unlock(3) }
        }),
        (
            "CnaLock: unlock by CPU 0, which does not hold the lock",
            &|| {
                // SAFETY: deliberately wrong: nothing is held.
                unsafe { lock.unlock(0) }
            },
        ),
        ("NumaTable: CPU id 2 out of range", &|| {
            Map::table().set(2, 1)
        }),
    ]);
    assert!(!lock.is_locked(), "a misuse changed the word");
    // A double unlock: the second one finds the lock free.
    lock.lock(1);
    // SAFETY: CPU 1 holds it.
    unsafe { lock.unlock(1) };
    common::assert_each_panics(&[("CnaLock: unlock by CPU 1, which does not hold", &|| {
        // SAFETY: deliberately wrong: released already.
        unsafe { lock.unlock(1) }
    })]);
    assert!(!lock.is_locked());
    common::hammer(&lock, 2, 100);
}

#[test]
#[cfg(debug_assertions)]
fn misuse_relocking_and_unlocks_by_a_non_holder_panic_in_debug_builds() {
    cna_node_pool!(Pool, 2);
    let lock = CnaLock::<Pool, Uniform>::new();
    lock.lock(1);
    common::assert_each_panics(&[
        (
            "CnaLock: CPU 1 locks a lock it already holds (re-locking deadlocks",
            &|| lock.lock(1),
        ),
        (
            "CnaLock: unlock by CPU 0, which does not hold the lock",
            &|| {
                // SAFETY: deliberately wrong: CPU 1 holds the lock.
                unsafe { lock.unlock(0) }
            },
        ),
    ]);
    assert!(lock.is_locked() && !lock.try_lock(0), "the hold is intact");
    // SAFETY: CPU 1 holds it.
    unsafe { lock.unlock(1) };
    // A hold taken with try_lock is checked the same way.
    assert!(lock.try_lock(0));
    common::assert_each_panics(&[("CnaLock: CPU 0 locks a lock it already holds", &|| {
        lock.lock(0)
    })]);
    // SAFETY: CPU 0 holds it.
    unsafe { lock.unlock(0) };
    assert!(!lock.is_locked());
}

#[test]
#[cfg(not(debug_assertions))]
fn misuse_an_unlock_by_a_non_holder_is_not_caught_in_release_builds() {
    // The word keeps no owner: CPU 0's unlock releases CPU 1's hold.
    cna_node_pool!(Pool, 2);
    let lock = CnaLock::<Pool, Uniform>::new();
    lock.lock(1);
    // SAFETY: deliberately wrong: CPU 1 holds the lock (the documented release behaviour).
    unsafe { lock.unlock(0) };
    assert!(!lock.is_locked());
}
