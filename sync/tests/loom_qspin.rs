//! loom models of the queued spinlock: every interleaving (and the weak-memory behaviours loom
//! models) of two CPUs, bounded runs of two CPUs twice and of three CPUs, and forced models of
//! each path: the pending bit, the queue with a head and a successor (the hand-off), a
//! successor that swaps itself in while the head claims the lock, and two nested contexts of
//! one CPU queued on two locks with two nodes. Run with `RUSTFLAGS="--cfg kernel_locks_loom"
//! cargo test -p kernel-locks --release --features testing --test loom_qspin` (about a minute
//! on two cores; `LOOM_MAX_PREEMPTIONS` overrides every model's bound).
//!
//! The node pool is declared with `qspin_node_pool!` as in a kernel: under
//! `--cfg kernel_locks_loom` the macro builds its nodes in a `loom::lazy_static!` (loom atomics
//! cannot be built in a `static` initialiser), which loom makes afresh for every execution, so
//! each execution starts with unused nodes and loom tracks every access to them. The state the
//! forced models share with their wait strategy (the locks, cells, gates and flags) is a lazy
//! static for the same reason.
//!
//! The models have teeth: `qspin_weakened_release_is_caught` runs the pending and the queue
//! model with the release weakened from `Release` to `Relaxed` (a knob that exists only in loom
//! builds) and asserts that loom reports the unsynchronised critical sections. Weakening any
//! other ordering of the lock, one at a time, also fails a model here (checked by hand, not
//! kept as tests, since each needs its own build): the fast path's Acquire (the two- and
//! three-CPU models: a data race), the pending waiter's fence (every model), the fence after a
//! queued CPU's `head` polls and the one after the head's word polls (the queue model), the
//! tail exchange's Release (two CPUs twice, the queue model: a CPU waits for ever), the linking
//! fence (the queue model, without it or without its acquire half: the predecessor's reset of
//! its `next` overwrites the link) and the hand-off fence (without its release half the queue
//! model finds a data race, without its acquire half the late-successor model finds the
//! successor's reset overwriting the hand-off). One half is argued only: the linking fence's
//! release half orders the successor's `head` reset before its link for a head whose claim
//! read no value of the successor's tail exchange, which happens when a CPU's transient
//! pending bit failed the claim and that CPU queues after it; the models here have no CPU that
//! reads the word before a pending waiter arrives and sets its bit after a queue formed.
#![cfg(kernel_locks_loom)]

mod common;
#[path = "common/loom_model.rs"]
mod loom_model;

use kernel_locks::{qspin_node_pool, CpuId, KernelLock, QSpinLock, Relax};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Notify;
use loom_model::bounded;

qspin_node_pool!(Pool, 4);

/// The documented word layout: locked byte, pending bit 8, tail (CPU + 1, node index) above.
const LOCKED: u32 = 1;
const PENDING: u32 = 1 << 8;
const fn tail(cpu: CpuId, idx: usize) -> u32 {
    ((((cpu as u32) + 1) << 2) | idx as u32) << 16
}

/// The lock's word, read through its `Debug` form (`QSpinLock { word: 0x00000101 }`): a
/// `Relaxed` load, made by a waiter at its first poll (it reads its own read-modify-write of
/// the word or a later value, and the models start nobody who could write one) or after every
/// thread was joined.
fn word<L: std::fmt::Debug>(lock: &L) -> u32 {
    let text = format!("{lock:?}");
    let hex = text.split("0x").nth(1).and_then(|rest| rest.get(..8));
    u32::from_str_radix(hex.expect("a word in the Debug form"), 16).unwrap()
}

#[test]
fn qspin_two_cpus_lock() {
    loom_model::mutual_exclusion(QSpinLock::<Pool>::new, 2, false);
}

#[test]
fn qspin_two_cpus_try_lock() {
    loom_model::mutual_exclusion(QSpinLock::<Pool>::new, 2, true);
}

/// One CPU waits in `lock` while the other polls with `try_lock`.
#[test]
fn qspin_lock_against_try_lock() {
    loom_model::lock_against_try_lock(QSpinLock::<Pool>::new);
}

/// Two acquisitions per CPU: the pending bit is set, turned into the lock and set again (and a
/// CPU that reads a stale pending bit queues). Bounded: unbounded it runs for 100 s.
#[test]
fn qspin_two_cpus_twice() {
    loom_model::exclusion(bounded(6), QSpinLock::<Pool>::new, 2, 2, |_| false);
}

/// Three CPUs, each once: whichever comes last while the lock is held and pending queues.
/// With two preemptions loom gives up at its branch limit: the pending waiter and the queue's
/// head both spin on the word, and loom can let them yield to each other for ever while the
/// holder waits for the processor (as for the ticket lock). The forced models below run the
/// same paths with gates instead.
#[test]
fn qspin_three_cpus_lock() {
    loom_model::mutual_exclusion_in(bounded(1), QSpinLock::<Pool>::new, 3, false);
}

// The forced models. Two CPUs that spin at once while both wait for a third that is not
// spinning (a pending waiter and a queue head waiting for the holder, say) can yield to each
// other for ever in loom while it keeps the third off the processor: loom then gives up at its
// branch limit. So in these models a waiter, at its first poll, checks the word, announces that
// it waits and blocks at a gate of its own; the gates open so that at most one CPU spins for a
// CPU that is not spinning: the first waiter's when CPU 0, the holder, is about to write its
// cell and release, the next one's as the CPU ahead of it enters its critical section, and a
// further one's once that CPU released. loom then explores every interleaving of the releases,
// claims, hand-overs and critical sections with one preemption (two take four minutes or more
// per model). The gates never order what the models check: a gate opens before the opener writes
// its cell and releases, so every waiter's entry must still be ordered by the lock (the weakened
// release is caught); and the announcements are `Relaxed`, so that CPU 0 learns nothing through
// them of what the waiters did: how the CPUs link into the queue and hand it on is ordered by the
// lock's own fences alone.

/// What a forced model does: CPU 0 takes `held`, starts `waiters` one after the other (each
/// once the one before waits), opens `main_opens`, then writes each held lock's cell and
/// releases it, in order.
struct Plan {
    /// The locks CPU 0 holds at the start, in the order it releases them.
    held: &'static [usize],
    /// The CPUs started, in order, and the lock each takes.
    waiters: &'static [(CpuId, usize)],
    /// `(cpu, n, lock, mask, word)`: at its `n`th gated wait, `cpu` finds `lock`'s word with
    /// `word` in the bits `mask`.
    checks: &'static [(CpuId, usize, usize, u32, u32)],
    /// `(lock, gate)`: CPU 0 opens the gate `(cpu, n)` before its critical section of `lock`.
    main_opens: &'static [(usize, (CpuId, usize))],
    /// `(cpu, lock, gate, when)`: `cpu` opens `gate` as it enters `lock` or once it released it.
    opens: &'static [(CpuId, usize, (CpuId, usize), When)],
    /// `(cpu, lock, count)`: `cpu` enters `lock` after `count` others (FIFO order).
    entries: &'static [(CpuId, usize, usize)],
    /// Whether CPU [`NESTER`]'s first wait is interrupted by a context that takes lock B.
    nest: bool,
    /// `(cpu, lock)`: CPUs started at once, which wait at their gate 0 before they take
    /// `lock` (and at no gate after): late arrivals, whose attempts race with the others'.
    late: &'static [(CpuId, usize)],
}

/// When a CPU opens a gate: as it enters its critical section, or once it released the lock.
/// A gate opens at the entry only for a CPU that then spins alone, waiting for the opener;
/// two CPUs spinning at once each need nothing but their own progress (see above).
#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    Entry,
    Released,
}

/// The CPU whose wait is interrupted in the nesting model.
const NESTER: CpuId = 3;
/// Lock A, lock B, and a lock A' whose release is weakened (loom-only knob).
const A: usize = 0;
const B: usize = 1;
const WEAK_A: usize = 2;
/// Every bit of the word.
const ALL: u32 = !0;
/// The tail.
const TAIL: u32 = !0 << 16;

/// The state of a forced model, fresh per execution.
struct Forced {
    locks: [QSpinLock<Pool, Gate>; 3],
    /// A counter per lock, incremented under it.
    data: [UnsafeCell<usize>; 3],
    /// "CPU `i` waits at a gate" (`Relaxed`: see above).
    waiting: [AtomicBool; 4],
    /// How many gated waits CPU `i` began (only CPU `i` touches its count).
    waits: [AtomicUsize; 4],
    /// The gates, two per CPU (the nester waits at two).
    gates: [[GateCell; 2]; 4],
    /// Whether the nester's wait has been interrupted (only the nester touches it).
    interrupted: AtomicBool,
    /// This execution's plan, set by CPU 0 before it starts any CPU.
    plan: std::sync::OnceLock<&'static Plan>,
}

loom::lazy_static! {
    static ref FORCED: Forced = Forced {
        locks: [
            QSpinLock::new(),
            QSpinLock::new(),
            QSpinLock::new().with_weakened_release(),
        ],
        data: std::array::from_fn(|_| UnsafeCell::new(0)),
        waiting: std::array::from_fn(|_| AtomicBool::new(false)),
        waits: std::array::from_fn(|_| AtomicUsize::new(0)),
        gates: std::array::from_fn(|_| std::array::from_fn(|_| GateCell::default())),
        interrupted: AtomicBool::new(false),
        plan: std::sync::OnceLock::new(),
    };
}

/// A gate: a flag and a `Notify` to block on (which may wake spuriously, so the flag says
/// whether the gate is open).
#[derive(Default)]
struct GateCell {
    open: AtomicBool,
    notify: Notify,
}

impl GateCell {
    fn open(&self) {
        // Relaxed: a schedule (see above).
        self.open.store(true, Ordering::Relaxed);
        self.notify.notify();
    }

    fn pass(&self) {
        while !self.open.load(Ordering::Relaxed) {
            self.notify.wait();
        }
    }
}

impl Forced {
    fn plan(&self) -> &'static Plan {
        self.plan
            .get()
            .expect("the plan is set before any CPU starts")
    }
}

/// The wait strategy of the forced models: at the first poll of a wait, the nester's
/// interrupt (if planned), then the plan's checks, the announcement and the gate.
#[derive(Default)]
struct Gate {
    gated: bool,
}

impl Relax for Gate {
    fn relax(&mut self, cpu: CpuId) {
        if self.gated {
            return;
        }
        self.gated = true;
        let state = &*FORCED;
        let plan = state.plan();
        if plan.late.iter().any(|&(c, _)| c == cpu) {
            return;
        }
        // Relaxed: only this CPU touches its flag and count.
        if plan.nest && cpu == NESTER && !state.interrupted.load(Ordering::Relaxed) {
            state.interrupted.store(true, Ordering::Relaxed);
            enter(cpu, B);
        }
        let n = state.waits[cpu].load(Ordering::Relaxed);
        state.waits[cpu].store(n + 1, Ordering::Relaxed);
        for &(c, k, lock, mask, expected) in plan.checks {
            if (c, k) == (cpu, n) {
                let found = word(&state.locks[lock]);
                assert_eq!(
                    found & mask,
                    expected,
                    "CPU {cpu} at its wait {n}: word {found:#010x}"
                );
            }
        }
        state.waiting[cpu].store(true, Ordering::Relaxed);
        state.gates[cpu][n].pass();
    }
}

/// Takes `lock` on `cpu`, opens the gates the plan says, checks the FIFO order and counts
/// itself in, releases.
fn enter(cpu: CpuId, lock: usize) {
    let state = &*FORCED;
    let plan = state.plan();
    let open = |when| {
        for &(c, l, (gate_cpu, n), w) in plan.opens {
            if (c, l, w) == (cpu, lock, when) {
                state.gates[gate_cpu][n].open();
            }
        }
    };
    state.locks[lock].lock(cpu);
    open(When::Entry);
    let before = plan
        .entries
        .iter()
        .find(|&&(c, l, _)| (c, l) == (cpu, lock))
        .map(|&(_, _, count)| count);
    // SAFETY: loom reports a data race here if the lock does not exclude the other contexts.
    state.data[lock].with_mut(|v| unsafe {
        if let Some(count) = before {
            assert_eq!(*v, count, "CPU {cpu} entered lock {lock} out of order");
        }
        *v += 1;
    });
    // SAFETY: `cpu` holds the lock.
    unsafe { state.locks[lock].unlock(cpu) };
    open(When::Released);
}

/// Runs `plan` under `builder`.
fn forced(builder: loom::model::Builder, plan: &'static Plan) {
    builder.check(move || {
        let state = &*FORCED;
        assert!(state.plan.set(plan).is_ok());
        for &lock in plan.held {
            state.locks[lock].lock(0);
        }
        let mut handles: Vec<_> = plan
            .late
            .iter()
            .map(|&(cpu, lock)| {
                loom::thread::spawn(move || {
                    FORCED.gates[cpu][0].pass();
                    enter(cpu, lock)
                })
            })
            .collect();
        for &(cpu, lock) in plan.waiters {
            handles.push(loom::thread::spawn(move || enter(cpu, lock)));
            // Relaxed: a schedule, not a synchronisation (see above).
            while !state.waiting[cpu].load(Ordering::Relaxed) {
                loom::thread::yield_now();
            }
        }
        for &lock in plan.held {
            for &(l, (cpu, n)) in plan.main_opens {
                if l == lock {
                    state.gates[cpu][n].open();
                }
            }
            // SAFETY: CPU 0 holds the lock; loom reports a race with a waiter that got in.
            state.data[lock].with_mut(|v| unsafe { *v += 1 });
            // SAFETY: CPU 0 holds the lock.
            unsafe { state.locks[lock].unlock(0) };
        }
        for h in handles {
            h.join().unwrap();
        }
        for (lock, data) in state.locks.iter().zip(&state.data) {
            let takers = plan
                .held
                .iter()
                .filter(|&&l| l == lock_index(state, lock))
                .count()
                + plan
                    .entries
                    .iter()
                    .filter(|e| e.1 == lock_index(state, lock))
                    .count();
            // SAFETY: every thread has been joined.
            assert_eq!(data.with(|v| unsafe { *v }), takers);
            assert_eq!(word(lock), 0);
        }
    });
}

/// The index of `lock` in the forced models' state.
fn lock_index(state: &Forced, lock: &QSpinLock<Pool, Gate>) -> usize {
    state
        .locks
        .iter()
        .position(|l| std::ptr::eq(l, lock))
        .unwrap()
}

/// The pending path: CPU 1 waits for CPU 0 with the pending bit.
macro_rules! pending_path {
    ($lock:expr) => {{
        let lock = $lock;
        Plan {
            held: &[lock],
            waiters: &[(1, lock)],
            checks: &[(1, 0, lock, ALL, LOCKED | PENDING)],
            main_opens: &[(lock, (1, 0))],
            opens: &[],
            entries: &[(1, lock, 1)],
            nest: false,
            late: &[],
        }
    }};
}

/// The queue path: CPU 1 pending, CPU 2 the queue's head, CPU 3 queued behind it. CPU 2 takes
/// the lock with a successor (sets `locked`, hands the head on), CPU 3 as the last (the whole
/// word in one compare-exchange).
macro_rules! queue_path {
    ($lock:expr) => {{
        let lock = $lock;
        Plan {
            held: &[lock],
            waiters: &[(1, lock), (2, lock), (3, lock)],
            checks: &[
                (1, 0, lock, ALL, LOCKED | PENDING),
                (2, 0, lock, ALL, tail(2, 0) | LOCKED | PENDING),
                (3, 0, lock, ALL, tail(3, 0) | LOCKED | PENDING),
            ],
            main_opens: &[(lock, (1, 0))],
            opens: &[
                (1, lock, (2, 0), When::Entry),
                (1, lock, (3, 0), When::Released),
            ],
            entries: &[(1, lock, 1), (2, lock, 2), (3, lock, 3)],
            nest: false,
            late: &[],
        }
    }};
}

static PENDING_PATH: Plan = pending_path!(A);
static QUEUE_PATH: Plan = queue_path!(A);
static PENDING_PATH_WEAKENED: Plan = pending_path!(WEAK_A);
static QUEUE_PATH_WEAKENED: Plan = queue_path!(WEAK_A);

/// Nested contexts: CPU 0 holds A and B, CPU 1 waits for A and CPU 2 for B with the pending
/// bit; CPU 3 queues on A with its node 0, and the interrupt that arrives while it waits
/// queues on B with node 1 (the tails say so). Then CPU 0 releases B and A; every context gets
/// its lock in order, the interrupt before the CPU's wait for A resumes.
static NESTED: Plan = Plan {
    held: &[B, A],
    waiters: &[(1, A), (2, B), (NESTER, A)],
    checks: &[
        (1, 0, A, ALL, LOCKED | PENDING),
        (2, 0, B, ALL, LOCKED | PENDING),
        (NESTER, 0, B, ALL, tail(NESTER, 1) | LOCKED | PENDING),
        (NESTER, 0, A, ALL, tail(NESTER, 0) | LOCKED | PENDING),
        (NESTER, 1, A, TAIL, tail(NESTER, 0)),
    ],
    main_opens: &[(B, (2, 0)), (A, (1, 0))],
    opens: &[
        (2, B, (NESTER, 0), When::Released),
        (1, A, (NESTER, 1), When::Released),
    ],
    entries: &[(1, A, 1), (2, B, 1), (NESTER, B, 2), (NESTER, A, 2)],
    nest: true,
    late: &[],
};

/// A successor that comes late: CPU 1 pending, CPU 2 the queue's head, and CPU 3 starts its
/// acquisition only once CPU 1 released, racing with CPU 2's claim. It swaps itself into the
/// tail before CPU 2's last poll of the word, or between that poll and CPU 2's
/// compare-exchange (which then fails: the hand-off is ordered by the link and hand-off
/// fences alone), or after it (and takes the pending bit).
static LATE_SUCCESSOR: Plan = Plan {
    held: &[A],
    waiters: &[(1, A), (2, A)],
    checks: &[
        (1, 0, A, ALL, LOCKED | PENDING),
        (2, 0, A, ALL, tail(2, 0) | LOCKED | PENDING),
    ],
    main_opens: &[(A, (1, 0))],
    opens: &[(1, A, (2, 0), When::Entry), (1, A, (3, 0), When::Released)],
    entries: &[(1, A, 1), (2, A, 2), (3, A, 3)],
    nest: false,
    late: &[(3, A)],
};

#[test]
fn qspin_pending_path() {
    forced(loom::model::Builder::new(), &PENDING_PATH);
}

#[test]
fn qspin_queue_path_with_hand_off() {
    forced(bounded(1), &QUEUE_PATH);
}

#[test]
fn qspin_late_successor() {
    forced(bounded(1), &LATE_SUCCESSOR);
}

#[test]
fn qspin_nested_contexts_queue_with_their_own_nodes() {
    forced(bounded(1), &NESTED);
}

/// The forced models over a lock whose release is only `Relaxed`: the next holder's critical
/// section is then not ordered after the releaser's, whether it enters through the pending bit
/// or as the queue's head, and loom must say so (a causality violation on the data cell). If
/// this test fails, the models above could not tell a correct release from a broken one.
#[test]
fn qspin_weakened_release_is_caught() {
    common::assert_each_panics(&[
        ("Causality violation", &|| {
            forced(loom::model::Builder::new(), &PENDING_PATH_WEAKENED)
        }),
        ("Causality violation", &|| {
            forced(bounded(1), &QUEUE_PATH_WEAKENED)
        }),
    ]);
}
