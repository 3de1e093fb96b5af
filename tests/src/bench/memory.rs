//! The hosted memory benchmark (platform `hosted`, after the per-core-pager seed
//! paper): per-core against global user-level pagers, with the kernel core on host threads as
//! in the hosted IPC benchmarks ([`super`]). `benches/memory_hosted.rs` is the command line;
//! this module builds the system, runs the workload, checks it and produces raw records
//! (`docs/bench-protocol.md`). The guest version of the same system is `servers::memory`
//! (records by `image-common`'s `bench.rs`); this one is built from the `kernel`,
//! `kernel-locks` and `pager` crates on the host.
//!
//! # The system
//! * **Kernel.** One [`Kernel`] with `cores` cores, entered as a HAL enters it: page faults
//!   through [`Kernel::page_fault`], system calls through [`Kernel::syscall`], IPIs through
//!   [`Kernel::ipi`] (no trap, no register switch). The HAL is [`BenchHal`] with the kernel's
//!   software page tables ([`BenchHal::with_page_tables`]): every mapping the pagers make really
//!   exists, so the kernel checks and the end checks see them.
//! * **Workers** (priority 10): one per kernel core, each in an address space of its own (the
//!   paper's one process per core), its page faults bound to its pager with `BindPager`. A task
//!   touches `pages` fresh pages of its window (a page fault each, which the kernel turns into
//!   a Call of the pager), then frees them one by one (an explicit `FreePages` request, a Call
//!   of the pager).
//! * **Pagers** (priority 20, above their workers, as the guest's loader makes them): user
//!   threads in one shared address space that receive the fault IPC, take a frame from their
//!   allocator (the `pager` crate: AVL tree or buddy, behind a `kernel-locks` lock of the
//!   kernel's algorithm: CLH for `clh` and `rtm` (RTM elision over CLH for `rtm`), ticket,
//!   the big-reader lock's write side for `fine`, none for `none`), map it with `MapPage`
//!   through their capability to the pool's memory region, and reply; a free unmaps with
//!   `UnmapPage` and gives the frame back. Mode **`percore`**: one pager per kernel core, on
//!   that core, owning an equal partition of the pool; a fault never leaves its core (the
//!   single-core round trip, plus the address-space switch). Mode **`global`**: one pager on
//!   core 0 owning the whole pool and serving every worker (like Fiasco.OC's sigma0); a fault
//!   of core `c > 0` wakes the pager by the kernel's Reschedule IPI, and the reply wakes the
//!   worker's core the same way (the `client-server` benchmark's machinery), and the pager's
//!   unmaps in a space that core `c` runs send it a TLB shoot-down that the unmap waits for.
//!   Partitions hold a task's pages, so no pager borrows (the guest's balancing is not needed
//!   here); a pager's allocator has the guest's 256 bookkeeping nodes when it serves one
//!   worker, and one per pool frame when it serves several (the guest's 256 can be too few for
//!   a global pager whose workers free their pages interleaved: see `NODES_SHARED`).
//!
//! # What is timed
//! * **`memory-alloc`**: the counter (`lfence; rdtsc`, [`cycles`]) is read by the worker just
//!   before its first fault of a task and just after it resumes from its last one: the task's
//!   faults, each a kernel entry, the pager's receive, allocation, `MapPage` and reply, and
//!   the switches between them, divided by `pages`. **`memory-free`**: likewise around the
//!   task's `pages` free requests. One sample per task round: the mean over the workers of
//!   their cycles per page in that round. Two counter reads per task, not subtracted
//!   (`overhead` 0). One untimed warm-up task first (two without `--quick`).
//! * Between the two timed phases of a task, and after it, the worker checks its pages in the
//!   page tables (untimed): after the faults every page is mapped to a distinct frame of the
//!   pool, after the frees none is.
//! * **`memory-ipc`** (`percore` with at least 2 cores, as in the guest): once every worker
//!   finished its tasks, worker 0 sends null requests (statistics) to the pager of its own
//!   core (`same-core`) and to core 1's (`cross-core`); a sample is the mean cycles per Call
//!   over a batch, after a warm-up batch.
//!
//! # Cores, pinning, waiting
//! Every kernel core is a host thread that runs the user threads the kernel gives it (the
//! worker's and pager's programs are state machines stepped with their result registers) and
//! polls its IPI word in between. Host threads are pinned one per CPU when there are at least
//! as many CPUs as kernel cores; otherwise they are unpinned, idle cores yield every 64 rounds
//! (`Idle`), kernel locks wait with [`HostRelax`] and the kernel's wait for shoot-down
//! acknowledgements yields ([`BenchHal::yielding`]): oversubscribed runs are correct, not
//! meaningful timings (`extra.unpinned` says so). Released by a barrier, the host threads
//! also meet at a spinning start line, so that even short runs of several cores overlap (a
//! barrier's wake-ups can take longer than a whole run). The page tables sit behind one host
//! mutex, which the kernel takes only in its exclusive sections (map, unmap) and the workers'
//! untimed checks take between their timed phases.
//!
//! # Checks ([`Outcome::problems`])
//! Every fault a worker took was served exactly once, by its pager (`faults_issued` =
//! `faults_served` = tasks x pages per worker); no failed request; `percore` has no
//! cross-core fault and `global` on `c` cores has `(c - 1) / c` of them; at the end every
//! frame is back in its allocator (free = owned = partition, allocator invariants hold), no
//! page is mapped in any worker's space, every page-table frame is back in the pool, and the
//! kernel's invariants hold.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Barrier, Mutex as HostMutex};
use std::time::{Duration, Instant};

use kernel::config::{MAX_CPUS, PAGE_SIZE};
use kernel::syscall::result;
use kernel::{
    AsId, CapSlot, EndpointId, Exit, Kernel, MemKind, NoLock, ObjRef, PageAttrs, PhysAddr, Regs,
    Rights, Strategy, Syscall, ThreadId,
};
/// The lock that does not lock (`kernel::NoLock` is the kernel strategy of that name).
use kernel_locks::NoLock as NoPagerLock;
use kernel_locks::{
    BrLock, ClhLock, CnaLock, McsLock, Mutex, QSpinLock, RtmLock, RtmStats, TicketLock, Uniform,
};
use pager::protocol::{PagerError, Reply, Request, Stats};
use pager::{Algorithm, Allocator, FrameAllocator, FrameRange, PagerLock};

use super::{
    cycles, pinned_for, rtm_note, spawn_cores, stats, take_ipi, with_strategy, BenchHal,
    BenchStrategy, Idle, Lock, Machine, Record, StrategyFn,
};
use crate::harness::HostRelax;

// -------------------------------------------------------------------------------------------
// Layout.
// -------------------------------------------------------------------------------------------

/// Priority of the pagers: above their workers, so a worker never delays its pager.
const PAGER_PRIO: usize = 20;
/// Priority of the workers.
const WORKER_PRIO: usize = 10;

/// Pager slot: its endpoint (READ).
const P_EP: usize = 1;
/// Pager slots from here: worker `w`'s address space (WRITE), for every worker it serves.
const P_ASPACE: usize = 2;
/// Pager slot: the pool's region (READ | WRITE).
const P_POOL: usize = P_ASPACE + MAX_CPUS;
/// Worker slots from here: pager `p`'s endpoint (WRITE, badge `w + 1`), for every pager.
const W_EP: usize = 1;
/// Worker slot: its own thread (MANAGE), to bind its pager.
const W_SELF: usize = W_EP + MAX_CPUS;

/// Page-table root of the pagers' address space.
const PAGER_ROOT: PhysAddr = 0x10_0000;
/// Page-table root of worker 0's address space (worker `w`: `+ w * 0x1000`).
const WORKER_ROOT: PhysAddr = 0x20_0000;
/// Physical address of the pool the pagers hand out.
const POOL_BASE: PhysAddr = 0x4000_0000;
/// Worker `w` touches pages from `WINDOWS_VA + w * WINDOW_PAGES * PAGE_SIZE` on (as in the
/// guest, though here every worker has its own space anyway).
const WINDOWS_VA: usize = 0x2000_0000;
/// Pages of one worker's window: the most pages a task can touch.
pub const MAX_PAGES: usize = 4096;
/// Pool pages per core (the guest's partition), or a task's pages if more.
const PARTITION_PAGES: usize = 2048;
const _: () = assert!(
    PARTITION_PAGES <= MAX_PAGES,
    "a pool fits the shared allocator's nodes"
);
/// Page-table frames of the HAL's pool (one per 2 MiB of a window mapped).
const TABLE_FRAMES: usize = 4096;
/// The lock id of the end checks (pagers use their index).
const CHECK_ID: usize = MAX_CPUS;
/// Lock ids: one per pager, and the checks'.
pub(super) const LOCK_IDS: usize = MAX_CPUS + 1;
/// A run that takes longer than this is stopped and reported (a kernel or harness bug).
const DEADLINE: Duration = Duration::from_secs(300);

/// Bookkeeping nodes of the allocator of a pager that serves one worker: the guest's 256. One
/// worker frees its pages in the order it faulted them in, so its pager's free frames stay in
/// two extents (a few buddy blocks).
const NODES: usize = 256;
/// Bookkeeping nodes of the allocator of a pager that serves several workers (the global one
/// on more than one core): one per frame of the largest pool, so that no fragmentation can
/// exhaust them. The guest's 256 can be too few there: workers free their pages interleaved,
/// and every freed frame between two other workers' frames is an extent of its own (3 cores
/// of 600 pages exhaust 256). The capacity is not on the timed path (the tree's depth is),
/// but megabytes of it move the later points of a run by up to 20% (the host heap then
/// places them elsewhere), hence the small size where it suffices.
const NODES_SHARED: usize = MAX_CPUS * MAX_PAGES;
/// Buddy blocks up to 2^12 pages (the guest's largest order).
const MAX_ORDER: usize = 12;
/// A pager's allocator (either size).
type PagerAlloc = Box<dyn FrameAllocator + Send>;
/// Stack of the thread that builds the system: the allocators are built on it before they
/// are boxed (megabytes for [`NODES_SHARED`] in a debug build).
const SETUP_STACK: usize = 256 << 20;

/// An allocator running `algorithm` over `range`, for a pager serving `workers` workers.
fn allocator(algorithm: Algorithm, workers: usize, range: FrameRange) -> PagerAlloc {
    let mut a: PagerAlloc = if workers > 1 {
        Box::new(Allocator::<NODES_SHARED, MAX_ORDER>::new(algorithm))
    } else {
        Box::new(Allocator::<NODES, MAX_ORDER>::new(algorithm))
    };
    a.add_range(range).expect("partition");
    a
}

fn slot(i: usize) -> CapSlot {
    CapSlot::new(i).expect("slot in range")
}

fn window(w: usize) -> usize {
    WINDOWS_VA + w * MAX_PAGES * PAGE_SIZE
}

fn worker_root(w: usize) -> PhysAddr {
    WORKER_ROOT + 0x1000 * w as PhysAddr
}

const POOL_FRAME: usize = POOL_BASE as usize / PAGE_SIZE;

// -------------------------------------------------------------------------------------------
// Modes and options.
// -------------------------------------------------------------------------------------------

/// Where the pagers run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// One pager per kernel core, on that core.
    PerCore,
    /// One pager on core 0 for every core.
    Global,
}

impl Mode {
    /// Both, in report order.
    pub const ALL: [Mode; 2] = [Mode::PerCore, Mode::Global];

    /// The record's `variant`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::PerCore => "percore",
            Mode::Global => "global",
        }
    }

    /// Parses a `variant` name.
    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
    }

    /// Pagers on `cores` cores.
    pub fn pagers(self, cores: usize) -> usize {
        match self {
            Mode::PerCore => cores,
            Mode::Global => 1,
        }
    }

    /// The pager serving worker `w`.
    pub fn pager_of(self, w: usize) -> usize {
        match self {
            Mode::PerCore => w,
            Mode::Global => 0,
        }
    }

    /// The core pager `p` runs on.
    pub fn pager_core(self, p: usize) -> usize {
        match self {
            Mode::PerCore => p,
            Mode::Global => 0,
        }
    }
}

/// One run of the workload.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// Where the pagers run.
    pub mode: Mode,
    /// Kernel cores (= workers), `1..=MAX_CPUS`.
    pub cores: usize,
    /// Pages per task, `1..=`[`MAX_PAGES`].
    pub pages: usize,
    /// Timed tasks per worker (samples).
    pub tasks: usize,
    /// Untimed tasks per worker before them.
    pub warmup: usize,
    /// Calls per `memory-ipc` sample (0: no `memory-ipc`; it runs only in `percore` mode with
    /// at least 2 cores).
    pub ipc_batch: usize,
    /// The pagers' allocation algorithm.
    pub algorithm: Algorithm,
}

impl Workload {
    /// Whether this workload measures `memory-ipc`.
    pub fn has_ipc(&self) -> bool {
        self.ipc_batch > 0 && self.mode == Mode::PerCore && self.cores > 1
    }

    /// Pool pages per core.
    pub fn partition(&self) -> usize {
        PARTITION_PAGES.max(self.pages)
    }
}

/// What the command line chooses.
#[derive(Clone, Debug)]
pub struct Options {
    /// Kernel strategies (`none` runs on 1 core only).
    pub locks: Vec<Lock>,
    /// Kernel core counts (default `1..=host CPUs`, at most `MAX_CPUS`).
    pub cores: Vec<usize>,
    /// Pages per task.
    pub pages: Vec<usize>,
    /// Pager modes.
    pub modes: Vec<Mode>,
    /// Samples (timed tasks) per record.
    pub runs: usize,
    /// Shorter calibration, warm-up and IPC batches.
    pub quick: bool,
    /// The pagers' allocation algorithm.
    pub algorithm: Algorithm,
}

impl Options {
    /// Every strategy and mode, cores `1..=host CPUs`, 64 pages per task (the guest's
    /// default), 16 samples, AVL allocator.
    pub fn new(quick: bool) -> Self {
        Self {
            locks: super::ALL_LOCKS.to_vec(),
            cores: (1..=super::host_cpus().min(MAX_CPUS)).collect(),
            pages: vec![64],
            modes: Mode::ALL.to_vec(),
            runs: 16,
            quick,
            algorithm: Algorithm::Avl,
        }
    }

    fn workload(&self, mode: Mode, cores: usize, pages: usize) -> Workload {
        Workload {
            mode,
            cores,
            pages,
            tasks: self.runs.max(1),
            warmup: if self.quick { 1 } else { 2 },
            ipc_batch: if self.quick { 100 } else { 1000 },
            algorithm: self.algorithm,
        }
    }
}

// -------------------------------------------------------------------------------------------
// Pager locks.
// -------------------------------------------------------------------------------------------

// The lock of a pager's allocator: the kernel's algorithm, built at run time
// ([`PagerLock`], as in the guest), with the host's wait strategy.
type PagerClh = ClhLock<LOCK_IDS, HostRelax>;
type PagerTicket = TicketLock<HostRelax>;
type PagerMcs = McsLock<LOCK_IDS, HostRelax>;
/// Over the pagers' own node pool (the run holds its turn: `with_strategy`).
type PagerQspin = QSpinLock<super::PagerQNodes, HostRelax>;
/// Over the pagers' own node pool (as `PagerQspin`), every pager on node 0 (as the hosted
/// kernel's lock: `with_strategy`).
type PagerCna = CnaLock<super::PagerCnaNodes, Uniform, HostRelax>;
type PagerBr = BrLock<LOCK_IDS, HostRelax>;
type PagerRtm = RtmLock<PagerClh, LOCK_IDS, HostRelax>;

/// The pager lock of `lock`, for `extra`.
fn pager_lock_name(lock: Lock) -> &'static str {
    match lock {
        Lock::None => "none",
        Lock::Clh => "clh",
        Lock::Ticket => "ticket",
        Lock::Mcs => "mcs",
        Lock::Qspin => "qspin",
        Lock::Cna => "cna",
        Lock::Fine => "brlock (write side)",
        Lock::Rtm => "rtm (RtmLock over clh)",
    }
}

// -------------------------------------------------------------------------------------------
// Outcome.
// -------------------------------------------------------------------------------------------

/// A pager's allocator at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagerEnd {
    /// Free frames.
    pub free: usize,
    /// Frames owned (free or allocated).
    pub owned: usize,
    /// The partition it started with.
    pub partition: usize,
    /// The allocator's own consistency check.
    pub check: Result<(), &'static str>,
}

/// What one run measured and what its checks found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The workload.
    pub workload: Workload,
    /// Per timed task round: the workers' mean cycles per page of their faults.
    pub alloc: Vec<f64>,
    /// Per timed task round: the workers' mean cycles per page of their frees.
    pub free: Vec<f64>,
    /// `memory-ipc` same-core samples: cycles per Call (empty if not measured).
    pub ipc_same: Vec<f64>,
    /// `memory-ipc` cross-core samples.
    pub ipc_cross: Vec<f64>,
    /// Per worker: page faults it took.
    pub faults_issued: Vec<u64>,
    /// Per worker: its faults the pagers served (mapped a frame for).
    pub faults_served: Vec<u64>,
    /// Faults served by a pager on the faulting worker's core.
    pub faults_same_core: u64,
    /// Faults served by a pager on another core.
    pub faults_cross_core: u64,
    /// Pages the pagers unmapped and freed.
    pub pages_freed: u64,
    /// Worker-side failures: a page not mapped (or mapped outside the pool, or to a frame the
    /// task already had) after its fault, still mapped after its free, a refused request.
    pub bad_pages: u64,
    /// Requests or faults a pager could not serve.
    pub pager_errors: u64,
    /// The pagers' allocators at the end.
    pub pagers: Vec<PagerEnd>,
    /// Pages still mapped in the workers' spaces at the end.
    pub mapped_after: usize,
    /// Page-table frames `(free, total)` at the end.
    pub tables: (usize, usize),
    /// The kernel's invariants (objects and memory) at the end.
    pub invariants: Result<(), String>,
    /// Whether host threads were pinned.
    pub pinned: bool,
    /// The kernel's RTM statistics (`rtm`).
    pub rtm: Option<RtmStats>,
    /// Whether the run was stopped at its deadline (or by a panicking core).
    pub aborted: bool,
}

impl Outcome {
    /// Every check that failed, in words (empty: all hold).
    pub fn problems(&self) -> Vec<String> {
        let w = &self.workload;
        let mut p = Vec::new();
        if self.aborted {
            p.push(format!(
                "the run was stopped after {DEADLINE:?} or by a panic"
            ));
        }
        let want = ((w.warmup + w.tasks) * w.pages) as u64;
        for (i, (&issued, &served)) in self
            .faults_issued
            .iter()
            .zip(&self.faults_served)
            .enumerate()
        {
            if issued != want || served != want {
                p.push(format!(
                    "worker {i}: {issued} faults taken, {served} served, want {want} each"
                ));
            }
        }
        let total: u64 = self.faults_served.iter().sum();
        let want_cross = match w.mode {
            Mode::PerCore => 0,
            // Every worker but core 0's.
            Mode::Global => want * (w.cores as u64 - 1),
        };
        if self.faults_cross_core != want_cross || self.faults_same_core + want_cross != total {
            p.push(format!(
                "{} same-core and {} cross-core faults, want {} and {want_cross}",
                self.faults_same_core,
                self.faults_cross_core,
                total - want_cross
            ));
        }
        if self.pages_freed != want * w.cores as u64 {
            p.push(format!(
                "{} pages freed, want {}",
                self.pages_freed,
                want * w.cores as u64
            ));
        }
        if self.bad_pages != 0 || self.pager_errors != 0 {
            p.push(format!(
                "{} bad pages (worker checks), {} pager errors",
                self.bad_pages, self.pager_errors
            ));
        }
        for (i, e) in self.pagers.iter().enumerate() {
            if e.free != e.partition || e.owned != e.partition || e.check.is_err() {
                p.push(format!("pager {i} at the end: {e:?}"));
            }
        }
        if self.mapped_after != 0 {
            p.push(format!("{} pages still mapped", self.mapped_after));
        }
        if self.tables.0 != self.tables.1 {
            p.push(format!(
                "page-table frames: {} of {} free",
                self.tables.0, self.tables.1
            ));
        }
        if let Err(e) = &self.invariants {
            p.push(format!("kernel invariants: {e}"));
        }
        if w.has_ipc() && (self.ipc_same.len() != w.tasks || self.ipc_cross.len() != w.tasks) {
            p.push(format!(
                "memory-ipc: {} and {} samples, want {}",
                self.ipc_same.len(),
                self.ipc_cross.len(),
                w.tasks
            ));
        }
        p
    }
}

// -------------------------------------------------------------------------------------------
// Running one workload.
// -------------------------------------------------------------------------------------------

/// Runs workload `w` on a kernel with strategy `lock`; `None` for `none` on more than one
/// core (the cores share the kernel's memory state and the pagers' management calls).
///
/// # Panics
/// If `w.cores` is not `1..=MAX_CPUS` or `w.pages` not `1..=MAX_PAGES`.
pub fn run_point(lock: Lock, w: Workload) -> Option<Outcome> {
    run_point_into(lock, w, None)
}

/// Where a traced run records its kernel entries (the `trace` feature).
#[cfg(feature = "trace")]
type Sink = Option<&'static dyn kernel::trace::TraceSink>;
/// Without the `trace` feature nothing is recorded.
#[cfg(not(feature = "trace"))]
type Sink = Option<core::convert::Infallible>;

/// [`run_point`] with every kernel entry of the run (set-up calls aside, which are not
/// entries) recorded into `sink` (`tests::tracing::record_memory`).
#[cfg(feature = "trace")]
pub fn run_point_traced(
    lock: Lock,
    w: Workload,
    sink: &'static dyn kernel::trace::TraceSink,
) -> Option<Outcome> {
    run_point_into(lock, w, Some(sink))
}

fn run_point_into(lock: Lock, w: Workload, sink: Sink) -> Option<Outcome> {
    assert!((1..=MAX_CPUS).contains(&w.cores), "cores: {}", w.cores);
    assert!((1..=MAX_PAGES).contains(&w.pages), "pages: {}", w.pages);
    struct Go(Lock, Workload, Sink);
    impl StrategyFn for Go {
        type Out = Outcome;
        fn call<S: BenchStrategy>(self, s: S) -> Outcome {
            match self.0 {
                Lock::None => measure::<S, NoPagerLock>(s, self.1, self.2),
                Lock::Clh => measure::<S, PagerClh>(s, self.1, self.2),
                Lock::Ticket => measure::<S, PagerTicket>(s, self.1, self.2),
                Lock::Mcs => measure::<S, PagerMcs>(s, self.1, self.2),
                Lock::Qspin => measure::<S, PagerQspin>(s, self.1, self.2),
                Lock::Cna => measure::<S, PagerCna>(s, self.1, self.2),
                Lock::Fine => measure::<S, PagerBr>(s, self.1, self.2),
                Lock::Rtm => measure::<S, PagerRtm>(s, self.1, self.2),
            }
        }
    }
    let none = (w.cores == 1).then(|| {
        // SAFETY: one kernel core: the set-up thread below (`measure` before it spawns the
        // cores) and then the single core's host thread (the spawn orders the hand-over, the
        // join the end checks) are the only ones to enter the kernel, one entry at a time, so
        // no two kernel sections ever overlap.
        unsafe { NoLock::new() }
    });
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("memory-bench".into())
            .stack_size(SETUP_STACK)
            .spawn_scoped(scope, || with_strategy(lock, none, Go(lock, w, sink)))
            .expect("spawn the set-up thread")
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

/// State the cores' host threads share.
struct Shared<L: PagerLock> {
    /// Per pager: its allocator.
    allocs: Vec<Mutex<L, PagerAlloc>>,
    /// Workers that finished their tasks.
    tasks_done: AtomicUsize,
    /// Workers that finished everything (tasks and `memory-ipc`).
    finished: AtomicUsize,
    /// Cores at the start line ([`crate::harness::start_line`]).
    ready: AtomicU64,
    /// Cores that left their loop.
    stopped: AtomicUsize,
    /// Set when a core panicked or the deadline passed: every core stops.
    abort: AtomicBool,
    /// When to give up.
    deadline: Instant,
    /// Kernel cores.
    cores: usize,
}

/// Tells the other cores to stop if its core's host thread panics (otherwise they would wait
/// for it forever).
struct AbortOnPanic<'a>(&'a AtomicBool, &'a AtomicUsize);

impl Drop for AbortOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Relaxed);
            self.1.fetch_add(1, AcqRel);
        }
    }
}

/// The user threads of one core and where the core stands.
struct CoreProgs {
    worker: WorkerProg,
    pager: Option<PagerProg>,
    exit: Exit,
    /// Saved registers of this core's threads that a trap interrupted (see [`Frames`]).
    frames: Frames,
}

/// The registers of the threads a trap (IPI, page fault) interrupted, as the real HALs keep
/// them in the thread's saved frame: a thread resumed after a trap gets these back, not the
/// exit's result registers, which only complete a system call (the kernel leaves them stale
/// for a thread it did not just answer).
#[derive(Default)]
struct Frames(Vec<(ThreadId, Regs)>);

impl Frames {
    /// The exit of a trap `then`, taken while `before` was the core's exit (its thread, if
    /// any, had those registers): saves them, then resumes `then`'s thread.
    fn trap(&mut self, before: &Exit, then: Exit) -> Exit {
        if let Some(t) = before.thread {
            if !self.0.iter().any(|&(u, _)| u == t) {
                self.0.push((t, before.regs));
            }
        }
        self.resume(then)
    }

    /// `exit`, with its thread's saved registers if a trap interrupted it.
    fn resume(&mut self, mut exit: Exit) -> Exit {
        if let Some(t) = exit.thread {
            if let Some(i) = self.0.iter().position(|&(u, _)| u == t) {
                exit.regs = self.0.swap_remove(i).1;
            }
        }
        exit
    }
}

/// Builds the system of `w` on a kernel with strategy `s` and pager locks `L`, runs it on one
/// host thread per core, and gathers and checks what it did.
fn measure<S: BenchStrategy, L: PagerLock>(s: S, w: Workload, sink: Sink) -> Outcome {
    let cores = w.cores;
    let npagers = w.mode.pagers(cores);
    let pinned = pinned_for(cores);
    let part = w.partition();
    let pool_pages = part * cores;
    let hal = BenchHal::with_page_tables(cores, TABLE_FRAMES).yielding(!pinned);
    let mut k = Box::new(Kernel::new(s, hal, cores));
    #[cfg(feature = "trace")]
    if let Some(sink) = sink {
        k.set_tracer(sink);
    }
    #[cfg(not(feature = "trace"))]
    let _ = sink;

    // Objects, as the guest's loader makes them.
    let pager_as = k.create_address_space(PAGER_ROOT).expect("address space");
    let spaces: Vec<AsId> = (0..cores)
        .map(|i| {
            k.create_address_space(worker_root(i))
                .expect("address space")
        })
        .collect();
    let pool = k
        .create_memory(POOL_BASE, pool_pages, MemKind::Ram)
        .expect("pool region");
    let eps: Vec<EndpointId> = (0..npagers)
        .map(|_| k.create_endpoint().expect("endpoint"))
        .collect();
    let mut pagers = Vec::new();
    for (p, &ep) in eps.iter().enumerate() {
        let core = w.mode.pager_core(p);
        let t = k
            .create_thread(PAGER_PRIO, core, Some(pager_as))
            .expect("pager");
        k.install_cap(t, slot(P_EP), ObjRef::Endpoint(ep), Rights::READ, 0)
            .expect("cap");
        let served: Vec<usize> = (0..cores).filter(|&c| w.mode.pager_of(c) == p).collect();
        for &c in &served {
            let a = ObjRef::AddressSpace(spaces[c]);
            k.install_cap(t, slot(P_ASPACE + c), a, Rights::WRITE, 0)
                .expect("cap");
        }
        let rw = Rights::READ | Rights::WRITE;
        k.install_cap(t, slot(P_POOL), ObjRef::Memory(pool), rw, 0)
            .expect("cap");
        k.start(t).expect("start");
        pagers.push(PagerProg::new(p, t, core, &served, &w));
    }
    let mut workers = Vec::new();
    for (c, &space) in spaces.iter().enumerate() {
        let t = k
            .create_thread(WORKER_PRIO, c, Some(space))
            .expect("worker");
        for (p, &ep) in eps.iter().enumerate() {
            k.install_cap(
                t,
                slot(W_EP + p),
                ObjRef::Endpoint(ep),
                Rights::WRITE,
                c + 1,
            )
            .expect("cap");
        }
        k.install_cap(t, slot(W_SELF), ObjRef::Thread(t), Rights::MANAGE, 0)
            .expect("cap");
        k.start(t).expect("start");
        workers.push(WorkerProg::new(c, t, &w));
    }
    let allocs = (0..npagers)
        .map(|p| {
            let (range, workers) = match w.mode {
                Mode::PerCore => (FrameRange::new(POOL_FRAME + p * part, part), 1),
                Mode::Global => (FrameRange::new(POOL_FRAME, pool_pages), cores),
            };
            // SAFETY: `run_point` runs `none` on one core only: one pager, whose allocator
            // only that core's host thread uses while the workload runs, and the end checks
            // read it after that thread was joined (which orders its accesses before theirs).
            // No two critical sections ever overlap.
            let lock = unsafe { L::make() };
            Mutex::new(lock, allocator(w.algorithm, workers, range))
        })
        .collect();

    // Each core: its pager (if any) blocks in Recv, its worker binds its pager and is then the
    // core's current thread, about to start its first task.
    let mut progs: Vec<HostMutex<Option<CoreProgs>>> = Vec::new();
    for (c, worker) in workers.into_iter().enumerate() {
        let pager = pagers
            .iter()
            .position(|p| p.core == c)
            .map(|i| pagers.remove(i));
        let mut exit = k.timer_tick(c);
        let mut bound = false;
        loop {
            match exit.thread {
                Some(t) if pager.as_ref().is_some_and(|p| p.thread == t) => {
                    exit = k.syscall(c, Syscall::Recv { ep: slot(P_EP) }.encode());
                }
                Some(t) if t == worker.thread && !bound => {
                    let bind = Syscall::BindPager {
                        thread: slot(W_SELF),
                        ep: slot(W_EP + w.mode.pager_of(c)),
                    };
                    exit = k.syscall(c, bind.encode());
                    result(&exit.regs).expect("BindPager");
                    bound = true;
                }
                Some(t) if t == worker.thread => break,
                other => panic!("set-up of core {c}: unexpected current thread {other:?}"),
            }
        }
        progs.push(HostMutex::new(Some(CoreProgs {
            worker,
            pager,
            exit,
            frames: Frames::default(),
        })));
    }
    assert!(pagers.is_empty(), "every pager has its core");

    let sh = Shared::<L> {
        allocs,
        tasks_done: AtomicUsize::new(0),
        finished: AtomicUsize::new(0),
        ready: AtomicU64::new(0),
        stopped: AtomicUsize::new(0),
        abort: AtomicBool::new(false),
        deadline: Instant::now() + DEADLINE,
        cores,
    };
    let start = Barrier::new(cores + 1);
    let kr = &*k;
    let work = |cpu: usize, pinned: bool| {
        let me = progs[cpu]
            .lock()
            .expect("programs")
            .take()
            .expect("taken once");
        core_loop(kr, cpu, pinned, &sh, me)
    };
    let ends: Vec<CoreProgs> = std::thread::scope(|scope| {
        let handles = spawn_cores(scope, cores, &start, &work);
        start.wait();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let aborted = sh.abort.load(Relaxed);

    // Gather and check.
    let mut out = Outcome {
        workload: w,
        alloc: per_round(&ends, w, false),
        free: per_round(&ends, w, true),
        ipc_same: Vec::new(),
        ipc_cross: Vec::new(),
        faults_issued: ends.iter().map(|e| e.worker.faults).collect(),
        faults_served: vec![0; cores],
        faults_same_core: 0,
        faults_cross_core: 0,
        pages_freed: 0,
        bad_pages: ends.iter().map(|e| e.worker.bad).sum(),
        pager_errors: 0,
        pagers: Vec::new(),
        mapped_after: 0,
        tables: (0, 0),
        invariants: Ok(()),
        pinned,
        rtm: k.strategy().rtm_stats(),
        aborted,
    };
    if let Some(e) = ends
        .iter()
        .find(|e| e.worker.ipc[0].len() + e.worker.ipc[1].len() > 0)
    {
        out.ipc_same = e.worker.ipc[0].clone();
        out.ipc_cross = e.worker.ipc[1].clone();
    }
    let mut pager_ends: Vec<&PagerProg> = ends.iter().filter_map(|e| e.pager.as_ref()).collect();
    pager_ends.sort_by_key(|p| p.p);
    for p in pager_ends {
        for (c, n) in p.served.iter().enumerate() {
            out.faults_served[c] += n;
        }
        out.faults_same_core += p.faults_same;
        out.faults_cross_core += p.faults_cross;
        out.pages_freed += p.frees;
        out.pager_errors += p.errors;
        let g = sh.allocs[p.p].lock(CHECK_ID);
        out.pagers.push(PagerEnd {
            free: g.free_count(),
            owned: g.owned_count(),
            partition: match w.mode {
                Mode::PerCore => part,
                Mode::Global => pool_pages,
            },
            check: g.check(),
        });
    }
    let pt = k.hal().page_tables().expect("page tables");
    out.mapped_after = (0..cores).map(|c| pt.leaves(worker_root(c)).len()).sum();
    out.tables = pt.table_frames();
    if !aborted {
        out.invariants = k
            .check_invariants()
            .and_then(|_| k.check_memory())
            .map(|_| ())
            .map_err(|v| format!("{v:?}"));
    }
    out
}

/// Per timed round: the mean over the workers of their cycles per page, of their faults or
/// (`free`) of their frees.
fn per_round(ends: &[CoreProgs], w: Workload, free: bool) -> Vec<f64> {
    let field = |wk: &WorkerProg| {
        if free {
            wk.free.clone()
        } else {
            wk.alloc.clone()
        }
    };
    let per_worker: Vec<Vec<u64>> = ends.iter().map(|e| field(&e.worker)).collect();
    let rounds = per_worker.iter().map(Vec::len).min().unwrap_or(0);
    (0..rounds)
        .map(|t| {
            let sum: f64 = per_worker
                .iter()
                .map(|v| v[t] as f64 / w.pages as f64)
                .sum();
            sum / ends.len() as f64
        })
        .collect()
}

/// One kernel core's host thread: runs the user thread the kernel makes current, takes IPIs
/// in between, waits while idle; stops once every worker finished.
fn core_loop<S: Strategy, L: PagerLock>(
    k: &Kernel<S, BenchHal>,
    cpu: usize,
    pinned: bool,
    sh: &Shared<L>,
    mut me: CoreProgs,
) -> CoreProgs {
    let _guard = AbortOnPanic(&sh.abort, &sh.stopped);
    // Released by the barrier, whose wake-ups take a while: the cores start their tasks only
    // once every one of them runs, so that their workloads overlap.
    crate::harness::start_line(&sh.ready, sh.cores as u64);
    let mut exit = me.exit;
    let mut idle = Idle::new(pinned);
    let mut rounds = 0u32;
    loop {
        if let Some(e) = take_ipi(k, cpu) {
            exit = me.frames.trap(&exit, e);
            continue;
        }
        match exit.thread {
            Some(t) if t == me.worker.thread => match me.worker.step(&exit.regs, sh, k.hal()) {
                Act::Fault(va) => {
                    exit = me.frames.trap(&exit, k.page_fault(cpu, va, true));
                    continue;
                }
                Act::Call(regs) => {
                    exit = me.frames.resume(k.syscall(cpu, regs));
                    continue;
                }
                // Waits in user mode.
                Act::Wait => {}
            },
            Some(t) => {
                let p = me
                    .pager
                    .as_mut()
                    .filter(|p| p.thread == t)
                    .unwrap_or_else(|| panic!("core {cpu} runs thread {t:?}, not its own"));
                let regs = p.step(&exit.regs, sh);
                exit = me.frames.resume(k.syscall(cpu, regs));
                continue;
            }
            None => {}
        }
        // Idle, or the worker waits.
        if sh.finished.load(Relaxed) == sh.cores || sh.abort.load(Relaxed) {
            break;
        }
        rounds = rounds.wrapping_add(1);
        if rounds % 65_536 == 0 && Instant::now() > sh.deadline {
            sh.abort.store(true, Relaxed);
        }
        idle.wait();
    }
    // Another core may be waiting in a system call for this core's shoot-down
    // acknowledgement: keep taking IPIs until every core left its loop.
    sh.stopped.fetch_add(1, AcqRel);
    while sh.stopped.load(Acquire) < sh.cores {
        if let Some(e) = take_ipi(k, cpu) {
            exit = e;
        }
        idle.wait();
    }
    me.exit = exit;
    me
}

// -------------------------------------------------------------------------------------------
// The worker.
// -------------------------------------------------------------------------------------------

/// What a user thread does next.
enum Act {
    /// Touches an unmapped page: a page fault at this address.
    Fault(usize),
    /// A system call.
    Call(Regs),
    /// Nothing for now (spins in user mode).
    Wait,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// Before the first task.
    Start,
    /// Faulting page `i` in.
    Alloc,
    /// Freeing page `i`.
    Free,
    /// Waiting for every worker's tasks to end before `memory-ipc`.
    IpcWait,
    /// `memory-ipc`: Call `i` of batch `sample` (0: warm-up) to pager `which`.
    Ipc,
    /// Finished.
    Done,
}

/// A worker's program (see the module docs): a state machine stepped each time its thread
/// runs, with the result registers of its last system call.
struct WorkerProg {
    w: usize,
    thread: ThreadId,
    base: usize,
    pages: usize,
    /// One past the pool's last byte.
    pool_end: PhysAddr,
    tasks: usize,
    warmup: usize,
    /// Its pager's endpoint.
    ep: CapSlot,
    /// `memory-ipc`: Calls per sample, and the endpoints of the same-core and a cross-core
    /// pager.
    ipc_to: Option<(usize, [CapSlot; 2])>,
    phase: Phase,
    task: usize,
    i: usize,
    which: usize,
    sample: usize,
    t0: u64,
    /// Timed tasks: cycles of the faults, of the frees.
    alloc: Vec<u64>,
    free: Vec<u64>,
    /// `memory-ipc` samples, same-core and cross-core.
    ipc: [Vec<f64>; 2],
    faults: u64,
    bad: u64,
    /// Scratch: the frames of a task's pages, to check they are distinct.
    frames: Vec<PhysAddr>,
}

impl WorkerProg {
    fn new(w: usize, thread: ThreadId, wl: &Workload) -> Self {
        let ipc_to = (w == 0 && wl.has_ipc()).then(|| (wl.ipc_batch, [slot(W_EP), slot(W_EP + 1)]));
        Self {
            w,
            thread,
            base: window(w),
            pages: wl.pages,
            pool_end: POOL_BASE + (wl.partition() * wl.cores * PAGE_SIZE) as PhysAddr,
            tasks: wl.warmup + wl.tasks,
            warmup: wl.warmup,
            ep: slot(W_EP + wl.mode.pager_of(w)),
            ipc_to,
            phase: Phase::Start,
            task: 0,
            i: 0,
            which: 0,
            sample: 0,
            t0: 0,
            alloc: Vec::with_capacity(wl.tasks),
            free: Vec::with_capacity(wl.tasks),
            ipc: [Vec::new(), Vec::new()],
            faults: 0,
            bad: 0,
            frames: Vec::with_capacity(wl.pages),
        }
    }

    fn va(&self, i: usize) -> usize {
        self.base + i * PAGE_SIZE
    }

    fn free_call(&self, i: usize) -> Act {
        let msg = Request::FreePages {
            addr: self.va(i),
            pages: 1,
        }
        .encode();
        Act::Call(Syscall::Call { ep: self.ep, msg }.encode())
    }

    fn stats_call(&self, ep: CapSlot) -> Act {
        let msg = Request::Stats.encode();
        Act::Call(Syscall::Call { ep, msg }.encode())
    }

    /// Starts task `self.task`: its first fault.
    fn begin_task(&mut self) -> Act {
        self.phase = Phase::Alloc;
        self.i = 0;
        self.t0 = cycles();
        Act::Fault(self.va(0))
    }

    /// The next thing to do; `ret`: the result registers of the last system call (or, after a
    /// fault, the thread's untouched ones).
    fn step<L: PagerLock>(&mut self, ret: &Regs, sh: &Shared<L>, hal: &BenchHal) -> Act {
        loop {
            match self.phase {
                Phase::Start => return self.begin_task(),
                Phase::Alloc => {
                    // The kernel resumed the thread: the fault of page `i` was served.
                    self.faults += 1;
                    self.i += 1;
                    if self.i < self.pages {
                        return Act::Fault(self.va(self.i));
                    }
                    let t1 = cycles();
                    if self.task >= self.warmup {
                        self.alloc.push(t1 - self.t0);
                    }
                    self.check_mapped(hal);
                    self.phase = Phase::Free;
                    self.i = 0;
                    self.t0 = cycles();
                    return self.free_call(0);
                }
                Phase::Free => {
                    let ok = result(ret).is_ok_and(|(_, m)| Reply::decode(&m) == Ok(Reply::Ok));
                    self.bad += u64::from(!ok);
                    self.i += 1;
                    if self.i < self.pages {
                        return self.free_call(self.i);
                    }
                    let t2 = cycles();
                    if self.task >= self.warmup {
                        self.free.push(t2 - self.t0);
                    }
                    self.check_unmapped(hal);
                    self.task += 1;
                    if self.task < self.tasks {
                        return self.begin_task();
                    }
                    sh.tasks_done.fetch_add(1, Release);
                    if self.ipc_to.is_some() {
                        self.phase = Phase::IpcWait;
                    } else {
                        sh.finished.fetch_add(1, Release);
                        self.phase = Phase::Done;
                    }
                }
                Phase::IpcWait => {
                    if sh.tasks_done.load(Acquire) < sh.cores {
                        return Act::Wait;
                    }
                    let (_, eps) = self.ipc_to.expect("memory-ipc");
                    self.phase = Phase::Ipc;
                    (self.which, self.sample, self.i) = (0, 0, 0);
                    self.t0 = cycles();
                    return self.stats_call(eps[0]);
                }
                Phase::Ipc => {
                    let (batch, eps) = self.ipc_to.expect("memory-ipc");
                    let ok = result(ret)
                        .is_ok_and(|(_, m)| matches!(Reply::decode(&m), Ok(Reply::Stats(_))));
                    self.bad += u64::from(!ok);
                    self.i += 1;
                    if self.i < batch {
                        return self.stats_call(eps[self.which]);
                    }
                    let t1 = cycles();
                    if self.sample > 0 {
                        self.ipc[self.which].push((t1 - self.t0) as f64 / batch as f64);
                    }
                    self.sample += 1;
                    if self.sample > self.tasks - self.warmup {
                        self.which += 1;
                        self.sample = 0;
                    }
                    if self.which < 2 {
                        self.i = 0;
                        self.t0 = cycles();
                        return self.stats_call(eps[self.which]);
                    }
                    sh.finished.fetch_add(1, Release);
                    self.phase = Phase::Done;
                }
                Phase::Done => return Act::Wait,
            }
        }
    }

    /// After the faults (untimed): every page is mapped, to distinct frames of the pool.
    fn check_mapped(&mut self, hal: &BenchHal) {
        let pt = hal.page_tables().expect("page tables");
        let root = worker_root(self.w);
        let pool = POOL_BASE..self.pool_end;
        self.frames.clear();
        for i in 0..self.pages {
            match pt.lookup(root, self.va(i)) {
                Some(leaf) if pool.contains(&leaf.phys) => self.frames.push(leaf.phys),
                _ => self.bad += 1,
            }
        }
        let n = self.frames.len();
        self.frames.sort_unstable();
        self.frames.dedup();
        self.bad += (n - self.frames.len()) as u64;
    }

    /// After the frees (untimed): no page is mapped.
    fn check_unmapped(&mut self, hal: &BenchHal) {
        let pt = hal.page_tables().expect("page tables");
        let root = worker_root(self.w);
        let mapped = (0..self.pages)
            .filter(|&i| pt.lookup(root, self.va(i)).is_some())
            .count();
        self.bad += mapped as u64;
    }
}

// -------------------------------------------------------------------------------------------
// The pager.
// -------------------------------------------------------------------------------------------

/// What a pager is in the middle of.
#[derive(Clone, Copy, Debug)]
enum PState {
    /// Blocked in (Reply)Recv: the next step brings a message.
    Recv,
    /// `MapPage` of `frame` at page `page` of worker `w` issued.
    Map { w: usize, page: usize, frame: usize },
    /// `UnmapPage` of page `first + k` of worker `w` issued (of `n` to free).
    Unmap {
        w: usize,
        first: usize,
        n: usize,
        k: usize,
    },
}

/// A pager's program: a state machine stepped each time its thread runs.
struct PagerProg {
    p: usize,
    thread: ThreadId,
    core: usize,
    pages: usize,
    /// Per worker it serves: the frame mapped at each page of its window, plus one (0:
    /// nothing); empty for workers it does not serve.
    frames: Vec<Vec<u32>>,
    algorithm: Algorithm,
    state: PState,
    /// Per worker: faults served.
    served: Vec<u64>,
    faults_same: u64,
    faults_cross: u64,
    frees: u64,
    errors: u64,
}

impl PagerProg {
    fn new(p: usize, thread: ThreadId, core: usize, served: &[usize], wl: &Workload) -> Self {
        let frames = (0..wl.cores)
            .map(|c| {
                if served.contains(&c) {
                    vec![0; wl.pages]
                } else {
                    Vec::new()
                }
            })
            .collect();
        Self {
            p,
            thread,
            core,
            pages: wl.pages,
            frames,
            algorithm: wl.algorithm,
            state: PState::Recv,
            served: vec![0; wl.cores],
            faults_same: 0,
            faults_cross: 0,
            frees: 0,
            errors: 0,
        }
    }

    fn reply(&mut self, msg: kernel::Msg) -> Regs {
        self.state = PState::Recv;
        Syscall::ReplyRecv {
            ep: slot(P_EP),
            msg,
        }
        .encode()
    }

    fn error(&mut self, e: PagerError) -> Regs {
        self.errors += 1;
        self.reply(Reply::Error(e).encode())
    }

    /// Which worker, and which page of its window, `addr` is, if this pager serves it.
    fn page_of(&self, badge: usize, addr: usize) -> Option<(usize, usize)> {
        let w = badge.checked_sub(1)?;
        let page = addr.checked_sub(window(w))? / PAGE_SIZE;
        (self.frames.get(w)?.len() > page).then_some((w, page))
    }

    /// The next system call; `ret`: the result registers of the last one.
    fn step<L: PagerLock>(&mut self, ret: &Regs, sh: &Shared<L>) -> Regs {
        match self.state {
            PState::Recv => match result(ret) {
                Ok((badge, msg)) => self.serve(badge, &msg, sh),
                Err(_) => self.error(PagerError::Unexpected),
            },
            PState::Map { w, page, frame } => {
                if result(ret).is_ok() {
                    self.frames[w][page] = frame as u32 + 1;
                    self.served[w] += 1;
                    if w == self.core {
                        self.faults_same += 1;
                    } else {
                        self.faults_cross += 1;
                    }
                } else {
                    self.errors += 1;
                    self.give_back(frame, sh);
                }
                // Any reply resumes the faulting thread; a failure shows in its checks.
                self.reply([0; 4])
            }
            PState::Unmap { w, first, n, k } => {
                if result(ret).is_err() {
                    // Keep the frame allocated rather than hand out a page that may be mapped.
                    return self.error(PagerError::Unexpected);
                }
                let frame = core::mem::take(&mut self.frames[w][first + k]) as usize - 1;
                self.give_back(frame, sh);
                self.frees += 1;
                if k + 1 < n {
                    self.state = PState::Unmap {
                        w,
                        first,
                        n,
                        k: k + 1,
                    };
                    return self.unmap(w, first + k + 1);
                }
                self.reply(Reply::Ok.encode())
            }
        }
    }

    fn unmap(&self, w: usize, page: usize) -> Regs {
        Syscall::UnmapPage {
            aspace: slot(P_ASPACE + w),
            vaddr: window(w) + page * PAGE_SIZE,
        }
        .encode()
    }

    fn give_back<L: PagerLock>(&mut self, frame: usize, sh: &Shared<L>) {
        let freed = sh.allocs[self.p]
            .lock(self.p)
            .free_range(FrameRange::new(frame, 1));
        self.errors += u64::from(freed.is_err());
    }

    /// Serves a message from the client with `badge` (worker `badge - 1`).
    fn serve<L: PagerLock>(&mut self, badge: usize, msg: &kernel::Msg, sh: &Shared<L>) -> Regs {
        match Request::decode(msg) {
            Ok(Request::PageFault { addr, .. }) => {
                let Some((w, page)) = self.page_of(badge, addr) else {
                    return self.error(PagerError::NotOwned);
                };
                if self.frames[w][page] != 0 {
                    // Mapped already: not a missing page.
                    return self.error(PagerError::Unexpected);
                }
                let frame = sh.allocs[self.p].lock(self.p).alloc();
                let Ok(frame) = frame else {
                    return self.error(PagerError::OutOfMemory);
                };
                self.state = PState::Map { w, page, frame };
                Syscall::MapPage {
                    aspace: slot(P_ASPACE + w),
                    mem: slot(P_POOL),
                    vaddr: window(w) + page * PAGE_SIZE,
                    attrs: PageAttrs::WRITE,
                    offset: frame - POOL_FRAME,
                }
                .encode()
            }
            Ok(Request::FreePages { addr, pages }) => {
                let mine = self.page_of(badge, addr).filter(|&(w, first)| {
                    first + pages <= self.pages
                        && self.frames[w][first..first + pages].iter().all(|&f| f != 0)
                });
                let Some((w, first)) = mine else {
                    return self.error(PagerError::NotOwned);
                };
                self.state = PState::Unmap {
                    w,
                    first,
                    n: pages,
                    k: 0,
                };
                self.unmap(w, first)
            }
            Ok(Request::Stats) => {
                let st = {
                    let g = sh.allocs[self.p].lock(self.p);
                    Stats {
                        free: g.free_count(),
                        owned: g.owned_count(),
                        faults: self.served.iter().sum::<u64>() as usize,
                        algorithm: self.algorithm,
                    }
                };
                self.reply(Reply::Stats(st).encode())
            }
            Ok(_) => self.error(PagerError::Unexpected),
            Err(_) => self.error(PagerError::Malformed),
        }
    }
}

// -------------------------------------------------------------------------------------------
// Records.
// -------------------------------------------------------------------------------------------

/// The raw records of one run: `memory-alloc`, `memory-free`, and `memory-ipc` same-core and
/// cross-core where measured.
pub(crate) fn records(lock: Lock, o: &Outcome, m: &Machine) -> Vec<Record> {
    let w = &o.workload;
    let mut out = Vec::new();
    let common = |r: &mut Record| {
        m.extra(r);
        r.extra(
            "entry",
            "faults through Kernel::page_fault, requests through Kernel::syscall",
        )
        .extra("strategy", super::type_name(lock))
        .extra("pager_lock", pager_lock_name(lock))
        .extra("pinned", o.pinned);
        if !o.pinned {
            r.extra(
                "unpinned",
                format!(
                    "{} host threads (one per kernel core) on {} CPUs: threads not pinned, idle cores yield",
                    w.cores, m.cpus
                ),
            );
        }
        rtm_note(lock, m, r);
    };
    for (bench, samples, what) in [
        ("memory-alloc", &o.alloc, "faults"),
        ("memory-free", &o.free, "free requests"),
    ] {
        let mut r = Record::new(bench, w.mode.name(), lock.name(), "cycles");
        r.cores = w.cores;
        r.clients = w.cores;
        r.pages = w.pages as u32;
        r.samples = samples.clone();
        r.extra("faults_same_core", o.faults_same_core)
            .extra("faults_cross_core", o.faults_cross_core)
            .extra("pages_per_task", w.pages)
            .extra("pagers", w.mode.pagers(w.cores))
            .extra(
                "allocator",
                match w.algorithm {
                    Algorithm::Avl => "avl",
                    Algorithm::Buddy => "buddy",
                },
            )
            .extra("warmup_tasks", w.warmup)
            .extra(
                "sample",
                format!(
                    "one task round: the {} workers' mean cycles per page over a task's {} {what} \
                     (2 counter reads per task, not subtracted); faults_* count the whole run, \
                     warm-up included",
                    w.cores, w.pages
                ),
            );
        common(&mut r);
        out.push(r);
    }
    for (variant, samples) in [("same-core", &o.ipc_same), ("cross-core", &o.ipc_cross)] {
        if samples.is_empty() {
            continue;
        }
        let mut r = Record::new("memory-ipc", variant, lock.name(), "cycles");
        r.cores = w.cores;
        // The tasks' page count: it names the point the Calls were measured after.
        r.pages = w.pages as u32;
        r.samples = samples.clone();
        r.extra("batch", w.ipc_batch)
            .extra(
                "sample",
                format!(
                    "mean cycles per Call of a null request (statistics) from worker 0 to the pager \
                     of core {} over a batch of {}",
                    if variant == "same-core" { 0 } else { 1 },
                    w.ipc_batch
                ),
            )
            .extra("pagers", w.mode.pagers(w.cores));
        common(&mut r);
        out.push(r);
    }
    out
}

/// What [`run`] did: the records, what each point measured and checked, and the checks that
/// failed (empty: all held).
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Raw records.
    pub records: Vec<Record>,
    /// Every point run, with its strategy.
    pub outcomes: Vec<(Lock, Outcome)>,
    /// Failed checks, each naming its point.
    pub problems: Vec<String>,
}

/// Runs every point of `opts` (cores x pages x mode x lock); `log` receives one line per
/// measured point.
pub fn run(opts: &Options, log: &mut dyn FnMut(&str)) -> Report {
    let m = Machine::measure(Duration::from_millis(if opts.quick { 10 } else { 100 }));
    log(&m.describe());
    let mut rep = Report::default();
    for &asked in &opts.cores {
        let cores = asked.clamp(1, MAX_CPUS);
        if cores != asked {
            log(&format!(
                "memory: {asked} cores asked, the kernel supports 1..={MAX_CPUS}: running {cores}"
            ));
        }
        for &pages in &opts.pages {
            let pages = pages.clamp(1, MAX_PAGES);
            for &mode in &opts.modes {
                let w = opts.workload(mode, cores, pages);
                for &lock in &opts.locks {
                    let Some(o) = run_point(lock, w) else {
                        log(&format!(
                            "memory {} {} {cores} cores: `none` skipped (cores share the kernel's memory state)",
                            mode.name(),
                            lock.name()
                        ));
                        continue;
                    };
                    let point = format!(
                        "memory {:<7} {:<6} {cores} cores {pages:>4} pages",
                        mode.name(),
                        lock.name()
                    );
                    let (_, a_med, a_mean, a_sd) = stats(&o.alloc);
                    let (_, f_med, f_mean, f_sd) = stats(&o.free);
                    log(&format!(
                        "{point}: alloc median {a_med:>8.0} mean {a_mean:>8.0} sd {a_sd:>6.0} | free median {f_med:>8.0} mean {f_mean:>8.0} sd {f_sd:>6.0} cycles/page | faults {} same-core, {} cross-core{}",
                        o.faults_same_core,
                        o.faults_cross_core,
                        if o.pinned { "" } else { " (unpinned)" }
                    ));
                    if !o.ipc_same.is_empty() {
                        let (_, s, ..) = stats(&o.ipc_same);
                        let (_, c, ..) = stats(&o.ipc_cross);
                        log(&format!(
                            "{point}: memory-ipc median same-core {s:.0}, cross-core {c:.0} cycles/Call"
                        ));
                    }
                    for p in o.problems() {
                        log(&format!("{point}: CHECK FAILED: {p}"));
                        rep.problems.push(format!("{point}: {p}"));
                    }
                    rep.records.extend(records(lock, &o, &m));
                    rep.outcomes.push((lock, o));
                }
            }
        }
    }
    rep
}
