//! What the lock benchmarks measure, shared by `locks.rs` (criterion) and `host_table.rs` (the
//! table behind `cargo xtask bench locks`): every lock of this crate, the peer implementations
//! it is compared with, and reference points, all behind one [`Subject`] trait.
//!
//! A [`Visitor`] is handed every subject in turn by [`visit_subjects`], which also picks how many
//! CPUs the per-CPU locks are built for.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::lock_api::RawMutex;

use kernel_locks::{
    cna_node_pool, numa_map, qspin_node_pool, BrLock, ClhLock, CnaLock, KernelLock, KernelRwLock,
    McsLock, NoLock, QSpinLock, Rtm, RtmLock, TicketLock, TxEngine, Uniform,
};

// The queued spinlock's nodes, for every thread count the benchmarks run (the largest of
// `LOCK_CPUS`): a pool is per kernel, not per lock, and its size does not enter the lock's paths.
// The benchmarks run one subject at a time, so the threads of one run are its only users.
qspin_node_pool!(QSpinNodes, 256);

// The CNA lock's queue nodes, likewise, and the simulated two-node map, which puts CPUs 0 and 1
// on node 0, 2 and 3 on node 1, and so on.
cna_node_pool!(CnaNodes, 256);
numa_map!(TwoNodes, 256);

/// A CNA lock over the simulated two-node map (its table filled, the same on every call).
fn cna_two_nodes() -> CnaLock<CnaNodes, TwoNodes> {
    for cpu in 0..256 {
        TwoNodes::table().set(cpu, (cpu / 2 % 2) as u32);
    }
    CnaLock::new()
}

/// Something whose acquire+release is measured.
pub trait Subject: Sync {
    /// Per-thread state: a queue node for node-based locks, the CPU id for ours.
    type Local;

    /// The state of the thread that acts as CPU `cpu`.
    fn local(&self, cpu: usize) -> Self::Local;

    /// Acquires, runs `f`, releases.
    fn critical<T>(&self, local: &mut Self::Local, f: impl FnOnce() -> T) -> T;
}

/// Where a subject comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A lock of this crate.
    Ours,
    /// Another implementation, for comparison.
    Peer,
    /// Not a lock: the cost of one primitive, for scale.
    Reference,
}

impl Origin {
    /// The word used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Ours => "kernel-locks",
            Origin::Peer => "peer",
            Origin::Reference => "reference",
        }
    }
}

/// Facts about a subject.
#[derive(Clone, Copy, Debug)]
pub struct Info {
    /// Short name, also the criterion benchmark id.
    pub name: &'static str,
    /// Where it comes from.
    pub origin: Origin,
    /// One line on what exactly runs.
    pub about: &'static str,
    /// Whether critical sections exclude each other, so that the shared counter incremented in
    /// them must come out exact (checked by the contended runs).
    pub exclusive: bool,
    /// Whether to run it with several threads (reference points are measured uncontended only).
    pub contended: bool,
}

/// Receives every subject.
pub trait Visitor {
    /// Called once per subject; `make` builds a fresh, unlocked instance.
    fn visit<S: Subject>(&mut self, info: Info, make: &(dyn Fn() -> S + Sync));
}

/// The supported numbers of CPUs for our per-CPU locks (CLH nodes, big-reader slots): the
/// smallest one that fits the largest thread count is used, since the big-reader writer scans
/// every slot and so costs more with a larger `N`.
pub const LOCK_CPUS: [usize; 4] = [4, 16, 64, 256];

/// Visits every subject with per-CPU locks built for the smallest of [`LOCK_CPUS`] that is at
/// least `cpus`, and returns that number. Panics if `cpus` exceeds the largest.
pub fn visit_subjects(cpus: usize, v: &mut impl Visitor) -> usize {
    match cpus {
        0..=4 => subjects::<4>(v),
        5..=16 => subjects::<16>(v),
        17..=64 => subjects::<64>(v),
        65..=256 => subjects::<256>(v),
        _ => panic!("at most 256 threads are supported, not {cpus}"),
    }
    LOCK_CPUS
        .into_iter()
        .find(|&n| n >= cpus)
        .unwrap_or(usize::MAX)
}

/// The default thread counts: 1, 2, 4, ... up to `cpus` (and `cpus` itself), at least `[1, 2]`.
pub fn default_threads(cpus: usize) -> Vec<usize> {
    let max = cpus.max(2);
    let mut threads: Vec<usize> = std::iter::successors(Some(1usize), |t| t.checked_mul(2))
        .take_while(|&t| t <= max)
        .collect();
    if threads.last() != Some(&max) {
        threads.push(max);
    }
    threads
}

fn subjects<const N: usize>(v: &mut impl Visitor) {
    let ours = |name, about, exclusive| Info {
        name,
        origin: Origin::Ours,
        about,
        exclusive,
        contended: true,
    };
    let peer = |name, about| Info {
        name,
        origin: Origin::Peer,
        about,
        exclusive: true,
        contended: true,
    };
    let reference = |name, about| Info {
        name,
        origin: Origin::Reference,
        about,
        exclusive: false,
        contended: false,
    };

    v.visit(
        ours(
            "clh",
            "kernel_locks::ClhLock<N> (CLH queue lock, seL4's BKL)",
            true,
        ),
        &|| Exclusive(ClhLock::<N>::new()),
    );
    v.visit(
        ours(
            "mcs",
            "kernel_locks::McsLock<N> (MCS queue lock, nodes in the lock)",
            true,
        ),
        &|| Exclusive(McsLock::<N>::new()),
    );
    v.visit(
        ours(
            "qspin",
            "kernel_locks::QSpinLock (queued spinlock in one word, nodes in a per-kernel pool)",
            true,
        ),
        &|| Exclusive(QSpinLock::<QSpinNodes>::new()),
    );
    v.visit(
        ours(
            "cna",
            "kernel_locks::CnaLock (compact NUMA-aware lock; every CPU on node 0)",
            true,
        ),
        &|| Exclusive(CnaLock::<CnaNodes, Uniform>::new()),
    );
    v.visit(
        ours(
            "cna-2node",
            "kernel_locks::CnaLock over a simulated two-node map (CPUs 0-1 node 0, 2-3 node 1, ...)",
            true,
        ),
        &|| Exclusive(cna_two_nodes()),
    );
    v.visit(ours("ticket", "kernel_locks::TicketLock", true), &|| {
        Exclusive(TicketLock::new())
    });
    v.visit(
        ours(
            "ticket-backoff",
            "kernel_locks::TicketBackoffLock (proportional back-off)",
            true,
        ),
        &|| Exclusive(TicketLock::with_backoff()),
    );
    v.visit(
        ours("brlock-read", "kernel_locks::BrLock<N> read side", false),
        &|| Shared(BrLock::<N>::new()),
    );
    v.visit(
        ours("brlock-write", "kernel_locks::BrLock<N> write side", true),
        &|| Exclusive(BrLock::<N>::new()),
    );
    rtm_subjects::<N>(v, &ours, &reference);
    v.visit(
        ours(
            "none",
            "kernel_locks::NoLock (no exclusion: the baseline; the counter loses updates)",
            false,
        ),
        // SAFETY: the only thing the benchmarks do under a lock is a relaxed load and store of an
        // atomic counter, which is no data race without exclusion (updates are lost, and
        // `exclusive: false` says not to check them); no thread relies on the lock for ordering.
        &|| Exclusive(unsafe { NoLock::new() }),
    );

    v.visit(
        peer(
            "clhlock",
            "clhlock::raw::spins::Mutex (CLH, heap nodes, node reused)",
        ),
        &|| ClhCrate(clhlock::raw::spins::Mutex::new(())),
    );
    v.visit(
        peer(
            "mcslock",
            "mcslock::raw::spins::Mutex (MCS, node on the stack)",
        ),
        &|| McsCrate(mcslock::raw::spins::Mutex::new(())),
    );
    v.visit(peer("spin-ticket", "spin::mutex::TicketMutex"), &|| {
        SpinTicket(spin::mutex::TicketMutex::<()>::new(()))
    });
    v.visit(
        peer(
            "hermit-ticket",
            "hermit_sync::RawTicketMutex via lock_api::RawMutex (ticket lock)",
        ),
        &RawMutexPeer::<hermit_sync::RawTicketMutex>::new,
    );
    v.visit(
        peer(
            "spinning_top",
            "spinning_top::RawSpinlock via lock_api::RawMutex (test-and-set, spin hint)",
        ),
        &RawMutexPeer::<spinning_top::RawSpinlock>::new,
    );
    v.visit(
        peer(
            "hermit-spin",
            "hermit_sync::RawSpinMutex via lock_api::RawMutex (spinning_top with back-off)",
        ),
        &RawMutexPeer::<hermit_sync::RawSpinMutex>::new,
    );
    v.visit(
        peer(
            "parking_lot",
            "parking_lot::RawMutex via lock_api::RawMutex (spins, then parks)",
        ),
        &RawMutexPeer::<parking_lot::RawMutex>::new,
    );
    v.visit(
        peer("tatas", "test-and-test-and-set (swap, then spin on a load)"),
        &Tatas::default,
    );

    v.visit(
        reference("xchg", "one uncontended AtomicUsize::swap (x86 XCHG)"),
        &|| Xchg(AtomicUsize::new(0)),
    );
}

/// Our RTM lock over a ticket lock, and the empty transaction reference point (only where RTM
/// runs: executing `XBEGIN` elsewhere raises #UD).
fn rtm_subjects<const N: usize>(
    v: &mut impl Visitor,
    ours: &impl Fn(&'static str, &'static str, bool) -> Info,
    reference: &impl Fn(&'static str, &'static str) -> Info,
) {
    v.visit(
        ours(
            "rtm-ticket",
            "kernel_locks::RtmLock<TicketLock, N> (RTM elision; without RTM always the fallback)",
            true,
        ),
        &|| Exclusive(RtmLock::<TicketLock, N>::new(TicketLock::new())),
    );
    if rtm_usable() {
        v.visit(
            reference(
                "xbegin-xend",
                "an empty RTM transaction (XBEGIN; XEND) via kernel_locks::Rtm",
            ),
            &|| EmptyTransaction(Rtm),
        );
    }
}

/// Whether this CPU runs RTM transactions (CPUID advertises RTM and TSX is not disabled).
pub fn rtm_usable() -> bool {
    Rtm::supported()
}

/// Reference point: an empty transaction.
pub struct EmptyTransaction(Rtm);

impl Subject for EmptyTransaction {
    type Local = ();

    fn local(&self, _cpu: usize) {}

    #[inline]
    fn critical<T>(&self, _: &mut (), f: impl FnOnce() -> T) -> T {
        // On an abort the hardware rolls back to `begin`, which then returns `Err`: `f` runs
        // once either way (it is empty in the uncontended measurement).
        match self.0.begin() {
            Ok(()) => {
                let t = f();
                // SAFETY: this is the code that started the transaction (`begin` just above), and
                // the section it brackets (`f`) has finished.
                unsafe { self.0.commit() };
                t
            }
            Err(_) => f(),
        }
    }
}

/// One of our locks, exclusive side.
pub struct Exclusive<L>(pub L);

impl<L: KernelLock> Subject for Exclusive<L> {
    type Local = usize;

    fn local(&self, cpu: usize) -> usize {
        cpu
    }

    #[inline]
    fn critical<T>(&self, cpu: &mut usize, f: impl FnOnce() -> T) -> T {
        self.0.lock(*cpu);
        let t = f();
        // SAFETY: this CPU locked it just above.
        unsafe { self.0.unlock(*cpu) };
        t
    }
}

/// One of our reader-writer locks, shared (read) side.
pub struct Shared<L>(pub L);

impl<L: KernelRwLock> Subject for Shared<L> {
    type Local = usize;

    fn local(&self, cpu: usize) -> usize {
        cpu
    }

    #[inline]
    fn critical<T>(&self, cpu: &mut usize, f: impl FnOnce() -> T) -> T {
        self.0.read_lock(*cpu);
        let t = f();
        // SAFETY: this CPU read-locked it just above.
        unsafe { self.0.read_unlock(*cpu) };
        t
    }
}

/// The `clhlock` crate. Its queue nodes live on the heap and move from holder to successor; the
/// thread keeps the node each release hands back, so nothing is allocated per acquisition.
pub struct ClhCrate(clhlock::raw::spins::Mutex<()>);

impl Subject for ClhCrate {
    type Local = Option<clhlock::raw::MutexNode>;

    fn local(&self, _cpu: usize) -> Self::Local {
        Some(clhlock::raw::MutexNode::new())
    }

    #[inline]
    fn critical<T>(&self, node: &mut Self::Local, f: impl FnOnce() -> T) -> T {
        let guard = self.0.lock_with(node.take().unwrap_or_default());
        let t = f();
        *node = Some(guard.unlock());
        t
    }
}

/// The `mcslock` crate, with the thread's queue node reused.
pub struct McsCrate(mcslock::raw::spins::Mutex<()>);

impl Subject for McsCrate {
    type Local = mcslock::raw::MutexNode;

    fn local(&self, _cpu: usize) -> Self::Local {
        mcslock::raw::MutexNode::new()
    }

    #[inline]
    fn critical<T>(&self, node: &mut Self::Local, f: impl FnOnce() -> T) -> T {
        self.0.lock_with_then(node, |_| f())
    }
}

/// `spin::mutex::TicketMutex`.
pub struct SpinTicket(spin::mutex::TicketMutex<()>);

impl Subject for SpinTicket {
    type Local = ();

    fn local(&self, _cpu: usize) {}

    #[inline]
    fn critical<T>(&self, _: &mut (), f: impl FnOnce() -> T) -> T {
        let guard = self.0.lock();
        let t = f();
        drop(guard);
        t
    }
}

/// A peer lock behind `lock_api::RawMutex` (0.4): `parking_lot`, `spinning_top` and
/// `hermit-sync` all implement it, so one subject measures each of them the same way.
pub struct RawMutexPeer<R>(R);

impl<R: RawMutex> RawMutexPeer<R> {
    /// A fresh, unlocked instance.
    pub fn new() -> Self {
        Self(R::INIT)
    }
}

impl<R: RawMutex + Sync> Subject for RawMutexPeer<R> {
    type Local = ();

    fn local(&self, _cpu: usize) {}

    #[inline]
    fn critical<T>(&self, _: &mut (), f: impl FnOnce() -> T) -> T {
        self.0.lock();
        let t = f();
        // SAFETY: this thread locked it just above.
        unsafe { self.0.unlock() };
        t
    }
}

/// A test-and-test-and-set spin lock, the simplest reasonable lock: `swap(true)` to acquire,
/// spinning on plain loads (which hit the local cache) while it is held.
#[derive(Default)]
pub struct Tatas(AtomicBool);

impl Subject for Tatas {
    type Local = ();

    fn local(&self, _cpu: usize) {}

    #[inline]
    fn critical<T>(&self, _: &mut (), f: impl FnOnce() -> T) -> T {
        // Acquire on the successful swap pairs with the Release store of the previous holder.
        while self.0.swap(true, Ordering::Acquire) {
            while self.0.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        }
        let t = f();
        self.0.store(false, Ordering::Release);
        t
    }
}

/// Reference point: one atomic exchange (what acquiring a free test-and-set lock costs).
pub struct Xchg(AtomicUsize);

impl Subject for Xchg {
    type Local = ();

    fn local(&self, _cpu: usize) {}

    #[inline]
    fn critical<T>(&self, _: &mut (), f: impl FnOnce() -> T) -> T {
        black_box(self.0.swap(1, Ordering::AcqRel));
        f()
    }
}

/// The critical section of the contended runs: increment a shared counter with a relaxed load
/// and store (no atomic read-modify-write, so a lock that fails to exclude loses updates).
#[inline]
pub fn bump(counter: &AtomicUsize) {
    counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}
