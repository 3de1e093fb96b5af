//! The hosted kernel IPC benchmarks (platform `hosted`): the kernel core runs on host
//! threads, entered through [`Kernel::syscall`] exactly as a HAL enters it after saving the user
//! context (no trap, no register switch: the kernel path's own cost), with a HAL whose hardware
//! actions are no-ops except IPIs ([`BenchHal`]). `benches/ipc_hosted.rs` is the command line;
//! this module does the measuring and produces raw records ([`record`], `docs/bench-protocol.md`).
//!
//! # Method
//! * **Counter.** `lfence; rdtsc` ([`cycles`]); its cost is measured as the median of 10,000
//!   back-to-back read pairs ([`tsc_overhead`]); its frequency is calibrated against the
//!   monotonic clock ([`tsc_hz`]) and written as `counter_hz`.
//! * **Strategies** (`lock`): `none` ([`NoLock`]), `clh` ([`BigLock`] over a CLH lock),
//!   `ticket` (big lock over a ticket lock), `fine` ([`FineGrained`]: big-reader lock plus ticket
//!   locks per object), `rtm` ([`Rtm`] elision over a CLH fallback lock; without RTM in the CPU
//!   every acquisition falls back, which `extra.rtm` says).
//! * **`ipc-roundtrip`**, **`ipc-call`**, **`ipc-replyrecv`** (1 core, variants `same-as`: client
//!   and server in one address space; `cross-as`: two address spaces, so every IPC also records
//!   an address-space switch): a client Calls an endpoint, its server answers with ReplyRecv;
//!   the core switches between them. A round-trip sample is the mean TSC cycles per round trip
//!   over a batch (counter overhead not subtracted: two reads per batch). The one-way samples
//!   follow sel4bench: the counter is read just before the sending system call enters the kernel
//!   and just after the receiver's system call returns (on one core that is the same host call:
//!   the kernel returns into the receiver), minus the counter overhead (`overhead`); a sample is
//!   the mean of a batch of such one-way measurements. Warm-up first; then the samples of all
//!   strategies and variants are taken interleaved (sample 1 of every case, then sample 2, ...)
//!   so that machine noise hits them alike.
//! * **`multicore-pingpong`** (variant `pairs`): one kernel with N cores, one client/server pair
//!   per core, each pair with its own endpoint and address space (disjoint objects, which is
//!   what makes `none` sound here: no two cores ever touch the same object), each kernel core
//!   driven by a host thread pinned to its own CPU. After a warm-up, the sample is the total
//!   round trips per second of all pairs during one sampling interval, the interval timed with
//!   the TSC (`interval_ticks`).
//! * **`smp-pingpong`** (variants `delay-0`, `delay-500`, `delay-32000`: sel4bench's `smp`
//!   benchmark): the pairs of `multicore-pingpong`, but each client spins a busy delay of that
//!   many TSC cycles in "user space" (its host thread, outside the kernel) before every Call,
//!   as sel4bench's ping thread does between its IPCs. The delay is a calibrated loop, not a
//!   counter read ([`SpinDelay`]): its iterations per cycle are measured once per run and
//!   written to `extra` (`spin_iterations`, `spin_iterations_per_cycle`). A sample is the
//!   round trips per second of all pairs together, as for `multicore-pingpong`.
//! * **`client-server`** (variants `shared`: every client Calls one server; `dedicated`: each
//!   client Calls its own server, on its own endpoint): the server thread(s) run on kernel core
//!   0, the clients on cores 1.. (round-robin if there are more clients than the kernel's other
//!   cores, which `extra` says); every kernel core is a host thread. A Call from core `c` wakes
//!   the server on core 0 by the kernel's Reschedule IPI, which [`BenchHal`] delivers as a
//!   pending bit that core 0's host thread polls while idle and turns into [`Kernel::ipi`]; the
//!   reply wakes the client's core the same way. Host threads are pinned one per CPU when there
//!   are at least as many CPUs as kernel cores, else unpinned (and then they yield while idle).
//!   `none` is not run: cores share the server's objects.
//! * Multi-threaded runs wait in locks with [`HostRelax`] (spin, yield every 64 rounds) so that
//!   oversubscribed runs make progress.
//! * **`rtm-aborts`**: the [`RtmLock`](kernel_locks::RtmLock) statistics of every `rtm` kernel above,
//!   summed, in `extra`; no samples.

pub mod cli;
pub mod memory;
pub mod record;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::*};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use kernel::config::MAX_CPUS;
use kernel::hosted::PageTables;
use kernel::strategy::{LockId, Side};
use kernel::{
    BigLock, CapSlot, CpuId, FineGrained, Hal, IpiKind, IrqId, Kernel, Leaf, MapPrepError, MapTag,
    NoLock, ObjRef, PageAttrs, PhysAddr, Regs, Rights, Rtm, Strategy, SweepAction, Syscall,
    ThreadId,
};
use kernel_locks::{
    cna_node_pool, qspin_node_pool, CachePadded, ClhLock, CnaLock, KernelLock, McsLock, QSpinLock,
    Relax, RtmStats, Spin, TicketLock, Uniform,
};

pub use crate::harness::{host_cpus, pin};
pub use record::{stats, to_json_array, Json, Record};

use crate::harness::HostRelax;

// -------------------------------------------------------------------------------------------
// Counter.
// -------------------------------------------------------------------------------------------

/// Reads the time-stamp counter, after earlier instructions completed (`lfence; rdtsc`).
/// Elsewhere than x86_64: nanoseconds of the monotonic clock.
#[inline(always)]
pub fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence and rdtsc only read the time-stamp counter; lfence keeps earlier
    // instructions from being counted after the read.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// [`cycles`] without the fence (`rdtsc` alone): cheaper, for the kernel's trace timestamps.
#[inline(always)]
pub fn cycles_unfenced() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc only reads the time-stamp counter.
    unsafe {
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        cycles()
    }
}

/// The cost of one counter read, in counter ticks: the median difference of 10,000
/// back-to-back read pairs.
pub fn tsc_overhead() -> u64 {
    let mut d: Vec<u64> = (0..10_000)
        .map(|_| {
            let a = cycles();
            let b = cycles();
            b.wrapping_sub(a)
        })
        .collect();
    d.sort_unstable();
    d[d.len() / 2]
}

/// The counter frequency in Hz, calibrated against the monotonic clock over `span`.
pub fn tsc_hz(span: Duration) -> u64 {
    let (t0, c0) = (Instant::now(), cycles());
    while t0.elapsed() < span {
        std::hint::spin_loop();
    }
    let (c1, ns) = (cycles(), t0.elapsed().as_nanos());
    ((c1 - c0) as u128 * 1_000_000_000 / ns.max(1)) as u64
}

/// The CPU model from `/proc/cpuinfo` ("unknown" elsewhere).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

// -------------------------------------------------------------------------------------------
// The HAL.
// -------------------------------------------------------------------------------------------

/// A HAL whose hardware actions are no-ops, except IPIs: a pending-bit word per core (on its own
/// cache line) that the target core's host thread polls ([`BenchHal::take_ipis`]). Unlike
/// [`FakeHal`](crate::harness::FakeHal) it records nothing, so it adds no shared state of its own.
///
/// The memory benchmark ([`memory`]) needs mappings that exist: [`BenchHal::with_page_tables`]
/// gives the HAL the kernel's software page tables ([`PageTables`], behind one host mutex, taken
/// only by the kernel's map, unmap and lookup, which run in exclusive sections), and
/// [`BenchHal::yielding`] makes the kernel's wait for TLB shoot-down acknowledgements yield the
/// host CPU (for runs with more kernel cores than host CPUs). The IPC benchmarks use neither.
pub struct BenchHal {
    cores: usize,
    pending: [CachePadded<AtomicU8>; MAX_CPUS],
    /// The page tables (`None`: mapping operations are no-ops and nothing is ever mapped).
    pt: Option<PageTables>,
    /// Whether [`Hal::relax`] yields the host CPU (else it spins).
    yields: bool,
}

impl BenchHal {
    /// A HAL for `cores` cores, without page tables.
    pub fn new(cores: usize) -> Self {
        Self {
            cores,
            pending: core::array::from_fn(|_| CachePadded::new(AtomicU8::new(0))),
            pt: None,
            yields: false,
        }
    }

    /// A HAL for `cores` cores whose mappings are kept in page tables with a pool of `frames`
    /// table frames.
    pub fn with_page_tables(cores: usize, frames: usize) -> Self {
        Self {
            pt: Some(PageTables::new(frames)),
            ..Self::new(cores)
        }
    }

    /// Makes the kernel's wait loops (TLB shoot-down acknowledgements) yield the host CPU
    /// (`true`) or spin (`false`, the default).
    pub fn yielding(mut self, yields: bool) -> Self {
        self.yields = yields;
        self
    }

    /// The page tables, if the HAL keeps them.
    pub fn page_tables(&self) -> Option<&PageTables> {
        self.pt.as_ref()
    }

    /// Takes the pending IPI kinds of `cpu` (bits of [`IpiKind::bit`]).
    #[inline]
    pub fn take_ipis(&self, cpu: CpuId) -> u8 {
        if self.pending[cpu].load(Relaxed) == 0 {
            return 0;
        }
        // Acquire: pairs with the sender's release, like an interrupt after the sender's
        // section (the kernel's own locks order the state anyway).
        self.pending[cpu].swap(0, Acquire)
    }
}

impl Hal for BenchHal {
    fn cpu_id(&self) -> CpuId {
        0
    }
    fn cpu_count(&self) -> usize {
        self.cores
    }
    fn send_ipi(&self, _cpu: CpuId, target: CpuId, kind: IpiKind) {
        self.pending[target].fetch_or(kind.bit(), Release);
    }
    unsafe fn switch_address_space(&self, _cpu: CpuId, _root: PhysAddr) {}
    fn flush_tlb(&self, _cpu: CpuId, _root: PhysAddr, _vaddr: Option<usize>) {}
    // The IPC benchmarks map nothing (no page tables): these are no-ops there.
    fn prepare_map(&self, root: PhysAddr, vaddr: usize) -> Result<(), MapPrepError> {
        self.pt
            .as_ref()
            .map_or(Ok(()), |pt| pt.prepare_map(root, vaddr))
    }
    fn map_page(&self, root: PhysAddr, vaddr: usize, frame: PhysAddr, a: PageAttrs, tag: MapTag) {
        if let Some(pt) = &self.pt {
            pt.map_page(root, vaddr, frame, a, tag);
        }
    }
    fn lookup(&self, root: PhysAddr, vaddr: usize) -> Option<Leaf> {
        self.pt.as_ref()?.lookup(root, vaddr)
    }
    fn unmap_page(&self, cpu: CpuId, root: PhysAddr, vaddr: usize) {
        if let Some(pt) = &self.pt {
            pt.unmap_page(cpu, root, vaddr);
        }
    }
    fn sweep(&self, cpu: CpuId, root: PhysAddr, f: &mut dyn FnMut(&Leaf) -> SweepAction) -> usize {
        self.pt.as_ref().map_or(0, |pt| pt.sweep(cpu, root, f))
    }
    fn reclaim_tables(&self, cpu: CpuId) {
        if let Some(pt) = &self.pt {
            pt.reclaim_tables(cpu);
        }
    }
    fn table_frames(&self) -> (usize, usize) {
        self.pt.as_ref().map_or((0, 0), PageTables::table_frames)
    }
    fn relax(&self, _cpu: CpuId) {
        if self.yields {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
    fn mask_irq(&self, _cpu: CpuId, _irq: IrqId) {}
    fn unmask_irq(&self, _cpu: CpuId, _irq: IrqId) {}
    fn cycles(&self) -> u64 {
        cycles()
    }
    fn trace_cycles(&self) -> u64 {
        cycles_unfenced()
    }
    fn console_write(&self, s: &str) {
        eprint!("{s}");
    }
}

// -------------------------------------------------------------------------------------------
// Strategies.
// -------------------------------------------------------------------------------------------

/// The strategies under test, by their record name: the registry's (`lock-registry`).
pub use lock_registry::Lock;

/// Every strategy, in report order (the baseline first).
pub const ALL_LOCKS: [Lock; lock_registry::COUNT] = lock_registry::REPORT_ORDER;

/// The strategy type of `lock` on the hosted kernel, for `extra`.
pub fn type_name(lock: Lock) -> &'static str {
    match lock {
        Lock::None => "NoLock",
        Lock::Clh => "BigLock<ClhLock>",
        Lock::Ticket => "BigLock<TicketLock>",
        Lock::Mcs => "BigLock<McsLock>",
        Lock::Qspin => "BigLock<QSpinLock>",
        Lock::Cna => "BigLock<CnaLock> (uniform map)",
        Lock::Fine => "FineGrained (BrLock read side + TicketLock per object)",
        Lock::Rtm => "Rtm<ClhLock> (RtmLock elision, CLH fallback)",
    }
}

/// A strategy the benchmarks can ask for RTM statistics.
pub trait BenchStrategy: Strategy + Send + 'static {
    /// The elision statistics, for RTM strategies.
    fn rtm_stats(&self) -> Option<RtmStats> {
        None
    }
}

impl BenchStrategy for NoLock {}
impl<L: KernelLock + Send + 'static> BenchStrategy for BigLock<L> {}
impl<R: Relax + 'static> BenchStrategy for FineGrained<R> {}
impl<L: KernelLock + Send + 'static, R: Relax + 'static> BenchStrategy
    for Rtm<L, kernel_locks::Rtm, R>
{
    fn rtm_stats(&self) -> Option<RtmStats> {
        Some(self.inner().stats())
    }
}

/// Adds `b` to `a`, field by field.
pub fn add_rtm_stats(a: &mut RtmStats, b: &RtmStats) {
    a.rtm_available |= b.rtm_available;
    a.direct += b.direct;
    a.retry1 += b.retry1;
    a.retry2 += b.retry2;
    a.retry_more += b.retry_more;
    a.fallback += b.fallback;
    a.skipped += b.skipped;
    a.aborts_busy += b.aborts_busy;
    a.aborts_conflict += b.aborts_conflict;
    a.aborts_capacity += b.aborts_capacity;
    a.aborts_retry += b.aborts_retry;
    a.aborts_debug_nested += b.aborts_debug_nested;
    a.aborts_other += b.aborts_other;
}

/// A strategy that counts its entries and object-lock acquisitions (for an untimed pass that
/// says how many locks a round trip takes).
pub struct Counting<S> {
    inner: S,
    /// Kernel entries.
    pub entries: AtomicU64,
    /// Object-lock acquisitions ([`Strategy::lock`]).
    pub locks: AtomicU64,
}

impl<S> Counting<S> {
    /// Counts for `inner`.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            entries: AtomicU64::new(0),
            locks: AtomicU64::new(0),
        }
    }
}

// SAFETY: forwards every operation to `inner`, which provides the guarantees; the counters are
// atomics that order nothing.
unsafe impl<S: Strategy> Strategy for Counting<S> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn enter(&self, cpu: CpuId, side: Side) -> bool {
        self.entries.fetch_add(1, Relaxed);
        self.inner.enter(cpu, side)
    }
    unsafe fn exit(&self, cpu: CpuId, side: Side) {
        // SAFETY: forwarded contract.
        unsafe { self.inner.exit(cpu, side) }
    }
    unsafe fn exit_releasing(&self, cpu: CpuId, side: Side, held: LockId) {
        // SAFETY: forwarded contract.
        unsafe { self.inner.exit_releasing(cpu, side, held) }
    }
    fn lock(&self, cpu: CpuId, id: LockId) {
        self.locks.fetch_add(1, Relaxed);
        self.inner.lock(cpu, id)
    }
    unsafe fn unlock(&self, cpu: CpuId, id: LockId) {
        // SAFETY: forwarded contract.
        unsafe { self.inner.unlock(cpu, id) }
    }
    fn may_be_in_section(&self, cpu: CpuId) -> bool {
        self.inner.may_be_in_section(cpu)
    }
    fn is_held(&self, id: LockId) -> bool {
        self.inner.is_held(id)
    }
    fn serialises(&self) -> bool {
        self.inner.serialises()
    }
}

impl<S: BenchStrategy> BenchStrategy for Counting<S> {}

// -------------------------------------------------------------------------------------------
// Options.
// -------------------------------------------------------------------------------------------

/// Which benchmarks to run and how long.
#[derive(Clone, Debug)]
pub struct Options {
    /// Strategies.
    pub locks: Vec<Lock>,
    /// Core counts of `multicore-pingpong` (default `1..=host CPUs`, at most `MAX_CPUS`).
    pub cores: Vec<usize>,
    /// Client counts of `client-server`.
    pub clients: Vec<usize>,
    /// Samples per record.
    pub runs: usize,
    /// Short batches and intervals (a few seconds in all), for tests.
    pub quick: bool,
    /// Run the single-core IPC benches.
    pub ipc: bool,
    /// Run `multicore-pingpong`.
    pub multicore: bool,
    /// Run `smp-pingpong` (sel4bench's `smp`) at each of [`Options::delays`] (off unless
    /// asked for: `--only smp`).
    pub smp: bool,
    /// Busy delays of `smp-pingpong`, in TSC cycles (default 0, 500 and 32,000: sel4bench's).
    pub delays: Vec<u64>,
    /// Run `client-server`.
    pub client_server: bool,
}

impl Options {
    /// Every bench and strategy, cores `1..=host CPUs`, 16 samples.
    pub fn new(quick: bool) -> Self {
        Self {
            locks: ALL_LOCKS.to_vec(),
            cores: (1..=host_cpus().min(MAX_CPUS)).collect(),
            clients: vec![1, 2, 4, 8],
            runs: 16,
            quick,
            ipc: true,
            multicore: true,
            smp: false,
            delays: SMP_DELAYS.to_vec(),
            client_server: true,
        }
    }

    fn params(&self) -> Params {
        if self.quick {
            Params {
                batch: 1_000,
                oneway: 250,
                interval: Duration::from_millis(2),
                warmup: Duration::from_millis(5),
                calibrate: Duration::from_millis(10),
            }
        } else {
            Params {
                batch: 20_000,
                oneway: 5_000,
                interval: Duration::from_millis(100),
                warmup: Duration::from_millis(200),
                calibrate: Duration::from_millis(100),
            }
        }
    }
}

/// Sizes derived from [`Options::quick`].
#[derive(Clone, Copy, Debug)]
struct Params {
    /// Round trips per `ipc-roundtrip` sample.
    batch: u32,
    /// One-way measurements per `ipc-call` / `ipc-replyrecv` sample.
    oneway: u32,
    /// Throughput sampling interval.
    interval: Duration,
    /// Warm-up before throughput sampling.
    warmup: Duration,
    /// TSC calibration span.
    calibrate: Duration,
}

/// What the host looks like, for `extra`.
#[derive(Clone, Debug)]
pub(crate) struct Machine {
    /// CPU model.
    pub(crate) cpu: String,
    /// Host CPUs this process may use.
    pub(crate) cpus: usize,
    /// Calibrated counter frequency.
    pub(crate) hz: u64,
    /// Cost of one counter read.
    pub(crate) overhead: u64,
    /// Whether the CPU has RTM.
    pub(crate) rtm: bool,
}

impl Machine {
    /// Looks at the host: the counter calibrated over `calibrate`.
    pub(crate) fn measure(calibrate: Duration) -> Self {
        Machine {
            cpu: cpu_model(),
            cpus: host_cpus(),
            hz: tsc_hz(calibrate),
            overhead: tsc_overhead(),
            rtm: kernel_locks::Rtm::supported(),
        }
    }

    /// One line describing the machine, for the log.
    pub(crate) fn describe(&self) -> String {
        format!(
            "machine: {}, {} CPUs, TSC {:.3} GHz, counter read {} cycles, RTM {}",
            self.cpu,
            self.cpus,
            self.hz as f64 / 1e9,
            self.overhead,
            if self.rtm { "available" } else { "absent" }
        )
    }

    /// Sets `counter_hz` and adds the machine's `extra` fields.
    pub(crate) fn extra(&self, r: &mut Record) {
        r.counter_hz = self.hz;
        r.extra("cpu", self.cpu.as_str())
            .extra("host_cpus", self.cpus)
            .extra(
                "method",
                "hosted: kernel core on host threads, Kernel::syscall without trap",
            );
    }
}

// -------------------------------------------------------------------------------------------
// Single core: round trip and one-way.
// -------------------------------------------------------------------------------------------

const EP: CapSlot = match CapSlot::new(1) {
    Some(s) => s,
    None => panic!("slot 1 exists"),
};

fn call_regs() -> Regs {
    Syscall::Call {
        ep: EP,
        msg: [1, 2, 3, 4],
    }
    .encode()
}

fn reply_recv_regs() -> Regs {
    Syscall::ReplyRecv {
        ep: EP,
        msg: [5, 6, 7, 8],
    }
    .encode()
}

/// Creates a client/server pair on `core` sharing a new endpoint (slot [`EP`]), in one new
/// address space (`cross_as`: two), and starts them; returns (client, server).
fn make_pair<S: Strategy>(
    k: &mut Kernel<S, BenchHal>,
    core: CpuId,
    cross_as: bool,
) -> (ThreadId, ThreadId) {
    let base = 0x10_0000 * (2 * core as u64 + 1);
    let a = k.create_address_space(base).expect("address space");
    let b = if cross_as {
        k.create_address_space(base + 0x1000)
            .expect("address space")
    } else {
        a
    };
    let ep = k.create_endpoint().expect("endpoint");
    let server = k.create_thread(10, core, Some(a)).expect("server");
    let client = k.create_thread(10, core, Some(b)).expect("client");
    k.install_cap(server, EP, ObjRef::Endpoint(ep), Rights::READ, 0)
        .expect("cap");
    k.install_cap(
        client,
        EP,
        ObjRef::Endpoint(ep),
        Rights::WRITE | Rights::GRANT,
        7,
    )
    .expect("cap");
    k.start(server).expect("start");
    k.start(client).expect("start");
    (client, server)
}

/// Runs core `cpu` until its client runs with its server blocked in Recv (call from one thread
/// per core, before the measurement).
fn settle<S: Strategy>(k: &Kernel<S, BenchHal>, cpu: CpuId, client: ThreadId) {
    let recv = Syscall::Recv { ep: EP }.encode();
    let mut exit = k.timer_tick(cpu);
    for _ in 0..4 {
        match exit.thread {
            Some(t) if t == client => break,
            Some(_) => exit = k.syscall(cpu, recv),
            None => exit = k.timer_tick(cpu),
        }
    }
    assert_eq!(exit.thread, Some(client), "set-up: the client should run");
}

/// One round trip on `cpu` (the client runs; afterwards it runs again).
#[inline(always)]
fn round_trip<S: Strategy>(k: &Kernel<S, BenchHal>, cpu: CpuId, call: Regs, rr: Regs, c: ThreadId) {
    let exit = k.syscall(cpu, call);
    debug_assert!(exit.thread.is_some_and(|t| t != c));
    let exit = k.syscall(cpu, rr);
    assert_eq!(
        exit.thread,
        Some(c),
        "the reply should return to the client"
    );
    std::hint::black_box(exit.regs);
}

/// A one-core kernel with a client and its server.
struct PingPong<S: Strategy> {
    kernel: Box<Kernel<S, BenchHal>>,
    client: ThreadId,
    call: Regs,
    reply_recv: Regs,
}

impl<S: Strategy> PingPong<S> {
    fn new(strategy: S, cross_as: bool) -> Self {
        let mut k = Box::new(Kernel::new(strategy, BenchHal::new(1), 1));
        let (client, _) = make_pair(&mut k, 0, cross_as);
        settle(&k, 0, client);
        Self {
            kernel: k,
            client,
            call: call_regs(),
            reply_recv: reply_recv_regs(),
        }
    }

    /// `n` round trips; TSC ticks taken.
    fn round_trips(&self, n: u32) -> u64 {
        let start = cycles();
        for _ in 0..n {
            round_trip(&self.kernel, 0, self.call, self.reply_recv, self.client);
        }
        cycles() - start
    }

    /// `n` round trips, each half timed alone; mean ticks of (Call, ReplyRecv), less `ovh`.
    fn one_way(&self, n: u32, ovh: u64) -> (f64, f64) {
        let (mut call, mut rr) = (0u64, 0u64);
        for _ in 0..n {
            let t0 = cycles();
            let exit = self.kernel.syscall(0, self.call);
            let t1 = cycles();
            debug_assert!(exit.thread.is_some_and(|t| t != self.client));
            let t2 = cycles();
            let exit = self.kernel.syscall(0, self.reply_recv);
            let t3 = cycles();
            assert_eq!(exit.thread, Some(self.client), "the reply returns");
            std::hint::black_box(exit.regs);
            call += t1 - t0;
            rr += t3 - t2;
        }
        let n = f64::from(n);
        (call as f64 / n - ovh as f64, rr as f64 / n - ovh as f64)
    }
}

/// A one-core ping-pong (client and server, set up as for `ipc-roundtrip`) under `strategy`,
/// for ad-hoc experiments with strategies of one's own: the closure runs `n` round trips and
/// returns the TSC ticks they took.
pub fn round_trip_timer<S: Strategy>(strategy: S, cross_as: bool) -> impl Fn(u32) -> u64 {
    let p = PingPong::new(strategy, cross_as);
    move |n| p.round_trips(n)
}

/// [`round_trip_timer`] with the kernel's entries traced into `sink` (the `trace` feature), for
/// the tracing overhead (`examples/trace_overhead.rs`).
#[cfg(feature = "trace")]
pub fn traced_round_trip_timer<S: Strategy>(
    strategy: S,
    cross_as: bool,
    sink: &'static dyn kernel::trace::TraceSink,
) -> impl Fn(u32) -> u64 {
    let mut p = PingPong::new(strategy, cross_as);
    p.kernel.set_tracer(sink);
    move |n| p.round_trips(n)
}

impl<S: Strategy> PingPong<S> {
    /// `n` null system calls of the client (the benchmark call `Null`, which leaves it
    /// running); TSC ticks taken.
    fn nulls(&self, n: u32) -> u64 {
        let null = kernel::Syscall::Null.encode();
        let start = cycles();
        for _ in 0..n {
            let exit = self.kernel.syscall(0, null);
            debug_assert_eq!(exit.thread, Some(self.client));
            std::hint::black_box(exit.regs);
        }
        cycles() - start
    }
}

/// The thesis's null system call (`Syscall::Null`) on one core under `strategy`, the client of
/// the [`round_trip_timer`] set-up calling it: the closure makes `n` calls and returns the TSC
/// ticks they took.
pub fn null_syscall_timer<S: Strategy>(strategy: S) -> impl Fn(u32) -> u64 {
    let p = PingPong::new(strategy, true);
    move |n| p.nulls(n)
}

/// [`null_syscall_timer`] with the kernel's entries traced into `sink` (the `trace` feature),
/// for the tracing overhead (`examples/trace_overhead.rs`).
#[cfg(feature = "trace")]
pub fn traced_null_syscall_timer<S: Strategy>(
    strategy: S,
    sink: &'static dyn kernel::trace::TraceSink,
) -> impl Fn(u32) -> u64 {
    let mut p = PingPong::new(strategy, true);
    p.kernel.set_tracer(sink);
    move |n| p.nulls(n)
}

/// Type-erased single-core case, for the interleaved loop.
trait Case {
    fn round_trips(&self, n: u32) -> u64;
    fn one_way(&self, n: u32, ovh: u64) -> (f64, f64);
    fn rtm_stats(&self) -> Option<RtmStats>;
}

impl<S: BenchStrategy> Case for PingPong<S> {
    fn round_trips(&self, n: u32) -> u64 {
        PingPong::round_trips(self, n)
    }
    fn one_way(&self, n: u32, ovh: u64) -> (f64, f64) {
        PingPong::one_way(self, n, ovh)
    }
    fn rtm_stats(&self) -> Option<RtmStats> {
        self.kernel.strategy().rtm_stats()
    }
}

/// Object locks (and entries) per round trip of strategy `s`, counted over 100 untimed round
/// trips.
fn locks_per_round_trip<S: BenchStrategy>(s: S, cross_as: bool) -> (f64, f64) {
    let p = PingPong::new(Counting::new(s), cross_as);
    let st = p.kernel.strategy();
    let (l0, e0) = (st.locks.load(Relaxed), st.entries.load(Relaxed));
    p.round_trips(100);
    let (l1, e1) = (st.locks.load(Relaxed), st.entries.load(Relaxed));
    ((l1 - l0) as f64 / 100.0, (e1 - e0) as f64 / 100.0)
}

fn single_case(lock: Lock, cross_as: bool) -> (Box<dyn Case>, (f64, f64)) {
    match lock {
        Lock::None => {
            // SAFETY: one core, so no two kernel sections ever overlap.
            let s = || unsafe { NoLock::new() };
            (
                Box::new(PingPong::new(s(), cross_as)),
                locks_per_round_trip(s(), cross_as),
            )
        }
        Lock::Clh => {
            let s = || BigLock::new(ClhLock::<1, Spin>::new());
            (
                Box::new(PingPong::new(s(), cross_as)),
                locks_per_round_trip(s(), cross_as),
            )
        }
        Lock::Ticket => {
            let s = || BigLock::new(TicketLock::new());
            (
                Box::new(PingPong::new(s(), cross_as)),
                locks_per_round_trip(s(), cross_as),
            )
        }
        Lock::Mcs => {
            let s = || BigLock::new(McsLock::<1, Spin>::new());
            (
                Box::new(PingPong::new(s(), cross_as)),
                locks_per_round_trip(s(), cross_as),
            )
        }
        Lock::Qspin => {
            // The caller holds the pools' turn (`single_core`).
            let s = || BigLock::new(QSpinLock::<HostQNodes, Spin>::new());
            (
                Box::new(PingPong::new(s(), cross_as)),
                locks_per_round_trip(s(), cross_as),
            )
        }
        Lock::Cna => {
            // The caller holds the pools' turn (`single_core`).
            let s = || BigLock::new(CnaLock::<HostCnaNodes, Uniform, Spin>::new());
            (
                Box::new(PingPong::new(s(), cross_as)),
                locks_per_round_trip(s(), cross_as),
            )
        }
        Lock::Fine => {
            let s = FineGrained::<Spin>::new;
            (
                Box::new(PingPong::new(s(), cross_as)),
                locks_per_round_trip(s(), cross_as),
            )
        }
        Lock::Rtm => {
            // The kernel's `Rtm` has a slot per possible core, and its fallback the same count (a
            // compile-time check); one core in use.
            let s =
                || Rtm::<_, kernel_locks::Rtm, Spin>::new(ClhLock::<MAX_CPUS, Spin>::with_cpus(1));
            (
                Box::new(PingPong::new(s(), cross_as)),
                locks_per_round_trip(s(), cross_as),
            )
        }
    }
}

/// Says in `r`'s `extra` how `rtm` ran on this machine (nothing for other locks).
pub(crate) fn rtm_note(lock: Lock, m: &Machine, r: &mut Record) {
    if lock == Lock::Rtm {
        r.extra(
            "rtm",
            if m.rtm {
                "available: sections run as RTM transactions, CLH lock as fallback"
            } else {
                "absent on this CPU: every acquisition falls back to the CLH lock"
            },
        );
    }
}

fn single_core(opts: &Options, p: Params, m: &Machine, rtm: &mut RtmStats) -> Vec<Record> {
    struct Entry {
        lock: Lock,
        variant: &'static str,
        case: Box<dyn Case>,
        locks: (f64, f64),
        rt: Vec<f64>,
        call: Vec<f64>,
        rr: Vec<f64>,
    }
    // Every case lives until the end: those over a node pool take the pools' turn for as long.
    let _pool = opts
        .locks
        .iter()
        .any(|&l| over_node_pool(l))
        .then(pool_turn);
    let mut cases: Vec<Entry> = Vec::new();
    for &lock in &opts.locks {
        for (variant, cross) in [("same-as", false), ("cross-as", true)] {
            let (case, locks) = single_case(lock, cross);
            cases.push(Entry {
                lock,
                variant,
                case,
                locks,
                rt: vec![],
                call: vec![],
                rr: vec![],
            });
        }
    }
    for c in &cases {
        c.case.round_trips(p.batch); // warm-up
        c.case.one_way(p.oneway, m.overhead);
    }
    for _ in 0..opts.runs {
        for c in &mut cases {
            let t = c.case.round_trips(p.batch);
            c.rt.push(t as f64 / f64::from(p.batch));
            let (call, rr) = c.case.one_way(p.oneway, m.overhead);
            c.call.push(call);
            c.rr.push(rr);
        }
    }
    let mut out = Vec::new();
    for c in cases {
        if let Some(s) = c.case.rtm_stats() {
            add_rtm_stats(rtm, &s);
        }
        for (bench, samples) in [
            ("ipc-roundtrip", c.rt),
            ("ipc-call", c.call),
            ("ipc-replyrecv", c.rr),
        ] {
            let mut r = Record::new(bench, c.variant, c.lock.name(), "cycles");
            r.samples = samples;
            m.extra(&mut r);
            r.extra("strategy", type_name(c.lock));
            if bench == "ipc-roundtrip" {
                r.extra(
                    "sample",
                    format!(
                        "mean cycles per round trip over {} round trips (2 counter reads per batch, not subtracted)",
                        p.batch
                    ),
                );
            } else {
                r.overhead = m.overhead;
                r.extra(
                    "sample",
                    format!(
                        "mean of {} one-way measurements, counter overhead subtracted from each",
                        p.oneway
                    ),
                );
            }
            r.extra("object_locks_per_round_trip", c.locks.0)
                .extra("kernel_entries_per_round_trip", c.locks.1);
            rtm_note(c.lock, m, &mut r);
            out.push(r);
        }
    }
    out
}

// -------------------------------------------------------------------------------------------
// Throughput on several cores.
// -------------------------------------------------------------------------------------------

/// sel4bench's `smp` delays between a ping thread's IPCs, in cycles.
pub const SMP_DELAYS: [u64; 3] = [0, 500, 32_000];

/// A calibrated busy loop: a delay of a given number of TSC cycles spent in plain loop
/// iterations (no counter read inside the delay), as sel4bench's `smp` benchmark delays its
/// ping thread in user space.
#[derive(Clone, Copy, Debug)]
pub struct SpinDelay {
    /// Loop iterations per TSC cycle, measured by [`SpinDelay::calibrate`].
    pub per_cycle: f64,
}

impl SpinDelay {
    /// Iterations of the calibration run.
    const CALIBRATION: u64 = 4_000_000;

    /// Measures the loop's iterations per TSC cycle: the fastest of five timed runs of
    /// [`Self::CALIBRATION`] iterations.
    pub fn calibrate() -> Self {
        let best = (0..5)
            .map(|_| {
                let t = cycles();
                spin(Self::CALIBRATION);
                (cycles() - t).max(1)
            })
            .min()
            .unwrap_or(1);
        SpinDelay {
            per_cycle: Self::CALIBRATION as f64 / best as f64,
        }
    }

    /// The loop iterations of a delay of `cycles` TSC cycles.
    pub fn iterations(&self, cycles: u64) -> u64 {
        (cycles as f64 * self.per_cycle).round() as u64
    }
}

/// `n` iterations of an empty loop the compiler cannot remove.
#[inline(never)]
pub fn spin(n: u64) {
    let mut i = 0u64;
    while std::hint::black_box(i) < n {
        i += 1;
    }
}

/// Samples a throughput counter: after `warmup`, `runs` intervals of `interval`, each giving the
/// increase of `total()` per second (TSC-timed). Returns the samples and the mean interval in
/// ticks.
fn sample_rate(total: impl Fn() -> u64, p: Params, runs: usize, hz: u64) -> (Vec<f64>, u64) {
    std::thread::sleep(p.warmup);
    let mut samples = Vec::with_capacity(runs);
    let mut ticks = 0;
    for _ in 0..runs {
        let (c0, n0) = (cycles(), total());
        std::thread::sleep(p.interval);
        let (c1, n1) = (cycles(), total());
        let dt = (c1 - c0).max(1);
        ticks += dt;
        samples.push((n1 - n0) as f64 * hz as f64 / dt as f64);
    }
    (samples, ticks / runs.max(1) as u64)
}

/// Per-core round-trip counters, each on its own line.
fn counters(n: usize) -> Vec<CachePadded<AtomicU64>> {
    (0..n)
        .map(|_| CachePadded::new(AtomicU64::new(0)))
        .collect()
}

/// `multicore-pingpong` (`spin` 0) and `smp-pingpong`: one private client/server pair per
/// core, the client spinning `spin` loop iterations ([`SpinDelay`]) before every Call.
fn pairs<S: BenchStrategy>(
    s: S,
    cores: usize,
    spin_n: u64,
    p: Params,
    runs: usize,
    hz: u64,
) -> Run {
    let mut k = Box::new(Kernel::new(s, BenchHal::new(cores), cores));
    let clients: Vec<ThreadId> = (0..cores).map(|c| make_pair(&mut k, c, false).0).collect();
    for (c, &t) in clients.iter().enumerate() {
        settle(&k, c, t);
    }
    let k = &*k;
    throughput(k, cores, p, runs, hz, |cpu, _, stop, done| {
        let (call, rr) = (call_regs(), reply_recv_regs());
        let client = clients[cpu];
        let mut n = 0;
        while !stop.load(Relaxed) {
            for _ in 0..64 {
                if spin_n > 0 {
                    spin(spin_n);
                }
                round_trip(k, cpu, call, rr, client);
            }
            n += 64;
            done.store(n, Relaxed);
        }
    })
}

/// Runs `work(cpu, pinned, stop, done)` on one host thread per kernel core ([`spawn_cores`]:
/// each pinned to its own CPU when the host has enough, all released together); `work` counts
/// its core's round trips in `done` until `stop` is set. Samples the sum of the counters with [`sample_rate`], then
/// stops the threads.
fn throughput<S: BenchStrategy>(
    k: &Kernel<S, BenchHal>,
    cores: usize,
    p: Params,
    runs: usize,
    hz: u64,
    work: impl Fn(usize, bool, &AtomicBool, &AtomicU64) + Sync,
) -> Run {
    let stop = AtomicBool::new(false);
    let done = counters(cores);
    let pinned = pinned_for(cores);
    let start = Barrier::new(cores + 1);
    let work = |cpu: usize, pinned: bool| work(cpu, pinned, &stop, &done[cpu]);
    let (samples, interval) = std::thread::scope(|scope| {
        spawn_cores(scope, cores, &start, &work);
        start.wait();
        let r = sample_rate(|| done.iter().map(|d| d.load(Relaxed)).sum(), p, runs, hz);
        stop.store(true, Relaxed);
        r
    });
    Run {
        samples,
        interval,
        pinned,
        rtm: k.strategy().rtm_stats(),
    }
}

// -------------------------------------------------------------------------------------------
// Machinery shared by the multi-core benchmarks (throughput and `memory`).
// -------------------------------------------------------------------------------------------

/// Whether `cores` host threads (one per kernel core) are pinned, one per CPU: only when the
/// host has at least as many CPUs as there are kernel cores.
pub(crate) fn pinned_for(cores: usize) -> bool {
    cores <= host_cpus()
}

/// Spawns one host thread per kernel core in `scope`, each pinned to its own CPU when
/// [`pinned_for`] says so, each waiting at `start` (a barrier of `cores + 1`: the caller waits
/// at it too, releasing them all together) and then running `work(cpu, pinned)`. Returns the
/// join handles in core order.
pub(crate) fn spawn_cores<'scope, 'env, T, W>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    cores: usize,
    start: &'env Barrier,
    work: &'env W,
) -> Vec<std::thread::ScopedJoinHandle<'scope, T>>
where
    T: Send + 'scope,
    W: Fn(usize, bool) -> T + Sync,
{
    let pinned = pinned_for(cores);
    (0..cores)
        .map(|cpu| {
            scope.spawn(move || {
                if pinned {
                    pin(cpu);
                }
                start.wait();
                work(cpu, pinned)
            })
        })
        .collect()
}

/// Enters the kernel on `cpu` for the IPIs pending there, as the core's interrupt would, and
/// returns the entry's exit; `None` if nothing was pending. The kernel handles every IPI kind
/// alike (reschedule, acknowledge TLB shoot-downs), so one entry serves all pending kinds.
#[inline]
pub(crate) fn take_ipi<S: Strategy>(k: &Kernel<S, BenchHal>, cpu: CpuId) -> Option<kernel::Exit> {
    (k.hal().take_ipis(cpu) != 0).then(|| k.ipi(cpu, IpiKind::Reschedule))
}

/// How a host thread waits while its kernel core has nothing to run (or its user thread
/// waits in user mode): spins, and when unpinned (more kernel cores than host CPUs) yields the
/// host CPU every 64 rounds, so that the other cores' threads run.
pub(crate) struct Idle {
    pinned: bool,
    rounds: u32,
}

impl Idle {
    /// A waiter for a host thread that is `pinned` or not.
    pub(crate) fn new(pinned: bool) -> Self {
        Self { pinned, rounds: 0 }
    }

    /// One round of waiting.
    #[inline]
    pub(crate) fn wait(&mut self) {
        self.rounds = self.rounds.wrapping_add(1);
        if !self.pinned && self.rounds % 64 == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

// The queue nodes of the hosted kernels' queued spinlock (`lock=qspin`) and CNA lock
// (`lock=cna`), and those of the memory benchmark's pager locks (`memory`): host threads act as
// cores `0..` (and pagers as lock ids `0..`), and a pool's nodes are per core across every lock
// over it, so two kernels over one pool at once would be two threads acting as one core. Their
// runs take turns instead ([`pool_turn`]).
qspin_node_pool!(pub(crate) HostQNodes, MAX_CPUS);
qspin_node_pool!(pub(crate) PagerQNodes, memory::LOCK_IDS);
cna_node_pool!(pub(crate) HostCnaNodes, MAX_CPUS);
cna_node_pool!(pub(crate) PagerCnaNodes, memory::LOCK_IDS);

/// Whether the kernel (and the pager locks) of `lock` queue over the node pools above.
fn over_node_pool(lock: Lock) -> bool {
    matches!(lock, Lock::Qspin | Lock::Cna)
}

/// The turn of a run over the node pools above: held while its kernel (and its pager locks)
/// exist, so that runs of the queued spinlock and of the CNA lock in parallel threads (tests of
/// one process) wait for each other. Taken outside every timed region.
fn pool_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Work generic over the kernel's strategy, which [`with_strategy`] runs with the strategy a
/// [`Lock`] names.
pub(crate) trait StrategyFn {
    /// What the work gives.
    type Out;
    /// Runs the work with strategy `s`.
    fn call<S: BenchStrategy>(self, s: S) -> Self::Out;
}

/// Runs `f` with the multi-core kernel strategy `lock` names (its locks wait with
/// [`HostRelax`], for oversubscribed runs). `none` is the [`NoLock`] for `Lock::None`, built by
/// the caller where it can argue that no two cores' kernel sections conflict; without it `none`
/// does not run and the answer is `None`.
pub(crate) fn with_strategy<F: StrategyFn>(
    lock: Lock,
    none: Option<NoLock>,
    f: F,
) -> Option<F::Out> {
    Some(match lock {
        Lock::None => f.call(none?),
        Lock::Clh => f.call(BigLock::new(ClhLock::<MAX_CPUS, HostRelax>::new())),
        Lock::Ticket => f.call(BigLock::new(TicketLock::<HostRelax>::with_relax_and_cpus(
            MAX_CPUS,
        ))),
        Lock::Mcs => f.call(BigLock::new(McsLock::<MAX_CPUS, HostRelax>::new())),
        Lock::Qspin => {
            let _pool = pool_turn();
            f.call(BigLock::new(QSpinLock::<HostQNodes, HostRelax>::new()))
        }
        // Every host thread on node 0, as the kernel's map is where the firmware describes no
        // NUMA nodes: the host's threads are not placed on its nodes, so the lock hands over in
        // FIFO order, as the queued spinlock does, and its runs measure CNA's own cost.
        Lock::Cna => {
            let _pool = pool_turn();
            f.call(BigLock::new(
                CnaLock::<HostCnaNodes, Uniform, HostRelax>::new(),
            ))
        }
        Lock::Fine => f.call(FineGrained::<HostRelax>::new()),
        Lock::Rtm => f.call(Rtm::<_, kernel_locks::Rtm, HostRelax>::new(ClhLock::<
            MAX_CPUS,
            HostRelax,
        >::new(
        ))),
    })
}

/// What one throughput run measured.
struct Run {
    samples: Vec<f64>,
    interval: u64,
    pinned: bool,
    rtm: Option<RtmStats>,
}

/// `client-server`: servers on core 0, clients on cores 1.. (round-robin); `dedicated` gives
/// each client its own server.
fn client_server<S: BenchStrategy>(
    s: S,
    clients: usize,
    dedicated: bool,
    p: Params,
    runs: usize,
    hz: u64,
) -> Run {
    let cores = (clients + 1).min(MAX_CPUS);
    let mut k = Box::new(Kernel::new(s, BenchHal::new(cores), cores));
    let a = k.create_address_space(0x10_0000).expect("address space");
    let mut server_ep = None;
    let mut client_core = Vec::new();
    for i in 0..clients {
        let ep = match server_ep {
            Some(ep) if !dedicated => ep,
            _ => {
                let ep = k.create_endpoint().expect("endpoint");
                let server = k.create_thread(10, 0, Some(a)).expect("server");
                k.install_cap(server, EP, ObjRef::Endpoint(ep), Rights::READ, 0)
                    .expect("cap");
                k.start(server).expect("start");
                server_ep = Some(ep);
                ep
            }
        };
        let core = 1 + i % (cores - 1);
        let b = k
            .create_address_space(0x20_0000 + 0x1000 * i as u64)
            .expect("address space");
        let c = k.create_thread(10, core, Some(b)).expect("client");
        k.install_cap(
            c,
            EP,
            ObjRef::Endpoint(ep),
            Rights::WRITE | Rights::GRANT,
            i + 1,
        )
        .expect("cap");
        k.start(c).expect("start");
        client_core.push(core);
    }
    // Core 0: every server blocks in Recv.
    let recv = Syscall::Recv { ep: EP }.encode();
    let mut exit = k.timer_tick(0);
    while exit.thread.is_some() {
        exit = k.syscall(0, recv);
    }
    let k = &*k;
    throughput(k, cores, p, runs, hz, |cpu, pinned, stop, done| {
        let regs = if cpu == 0 {
            reply_recv_regs()
        } else {
            call_regs()
        };
        let mut exit = if cpu == 0 {
            kernel::Exit {
                thread: None,
                regs: [0; 6],
            }
        } else {
            k.timer_tick(cpu)
        };
        let (mut n, mut idle) = (0u64, Idle::new(pinned));
        while !stop.load(Relaxed) {
            if let Some(e) = take_ipi(k, cpu) {
                exit = e;
                continue;
            }
            if exit.thread.is_none() {
                idle.wait();
                continue;
            }
            // A client runs again: its previous Call returned.
            exit = k.syscall(cpu, regs);
            if cpu != 0 {
                n += 1;
                if n % 16 == 0 {
                    done.store(n, Relaxed);
                }
            }
        }
    })
}

/// A throughput workload.
#[derive(Clone, Copy, Debug)]
enum Load {
    /// `multicore-pingpong` and `smp-pingpong`: one private client/server pair per core.
    Pairs {
        /// Cores.
        cores: usize,
        /// Busy-loop iterations before every Call ([`SpinDelay`]; 0: none).
        spin: u64,
    },
    /// `client-server`: `clients` clients calling one shared server or each its own.
    ClientServer {
        /// Client threads.
        clients: usize,
        /// Each client has its own server.
        dedicated: bool,
    },
}

/// Runs `load` on the kernel with strategy `s`.
fn run_load<S: BenchStrategy>(s: S, load: Load, p: Params, runs: usize, hz: u64) -> Run {
    match load {
        Load::Pairs { cores, spin } => pairs(s, cores, spin, p, runs, hz),
        Load::ClientServer { clients, dedicated } => {
            client_server(s, clients, dedicated, p, runs, hz)
        }
    }
}

/// Runs `load` under `lock`; `None` where the lock cannot run it.
fn run_load_for(lock: Lock, load: Load, p: Params, runs: usize, hz: u64) -> Option<Run> {
    struct Go(Load, Params, usize, u64);
    impl StrategyFn for Go {
        type Out = Run;
        fn call<S: BenchStrategy>(self, s: S) -> Run {
            run_load(s, self.0, self.1, self.2, self.3)
        }
    }
    let none = match load {
        // SAFETY: every core runs only its own pair, with its own endpoint and address space,
        // and no management call is made: no two cores touch the same object (`none` in the
        // multicore stress test rests on the same argument).
        Load::Pairs { .. } => Some(unsafe { NoLock::new() }),
        // Cores share the server's endpoint and run queue: no lock would be a data race.
        Load::ClientServer { .. } => None,
    };
    with_strategy(lock, none, Go(load, p, runs, hz))
}

fn throughput_record(
    bench: &str,
    variant: &str,
    lock: Lock,
    cores: usize,
    m: &Machine,
    run: &Run,
) -> Record {
    let mut r = Record::new(bench, variant, lock.name(), "round trips/s");
    r.cores = cores;
    r.samples = run.samples.clone();
    r.interval_ticks = Some(run.interval);
    m.extra(&mut r);
    r.extra("strategy", type_name(lock))
        .extra("pinned", run.pinned)
        .extra(
            "lock_wait",
            "HostRelax: spin, yield to the host every 64 rounds",
        );
    if !run.pinned {
        r.extra(
            "unpinned",
            format!(
                "{cores} host threads (one per kernel core) on {} CPUs: threads not pinned, idle cores yield",
                m.cpus
            ),
        );
    }
    rtm_note(lock, m, &mut r);
    r
}

/// `smp-pingpong`: every delay, core count and lock of `opts` (sel4bench's `smp`).
fn smp_pingpong(
    opts: &Options,
    p: Params,
    m: &Machine,
    rtm: &mut RtmStats,
    rtm_runs: &mut Vec<String>,
    log: &mut dyn FnMut(&str),
) -> Vec<Record> {
    let delay = SpinDelay::calibrate();
    log(&format!(
        "smp-pingpong: busy loop calibrated at {:.3} iterations per TSC cycle",
        delay.per_cycle
    ));
    let mut out = Vec::new();
    for &cycles in &opts.delays {
        let spin = delay.iterations(cycles);
        for &asked in &opts.cores {
            let cores = asked.clamp(1, MAX_CPUS);
            for &lock in &opts.locks {
                let run = run_load_for(lock, Load::Pairs { cores, spin }, p, opts.runs, m.hz)
                    .expect("every lock runs pairs");
                if let Some(s) = &run.rtm {
                    add_rtm_stats(rtm, s);
                    rtm_runs.push(format!("smp-pingpong {cores} cores delay {cycles}"));
                }
                let variant = format!("delay-{cycles}");
                let mut r = throughput_record("smp-pingpong", &variant, lock, cores, m, &run);
                r.extra("delay_cycles", cycles)
                    .extra("spin_iterations", spin)
                    .extra("spin_iterations_per_cycle", delay.per_cycle);
                let (_, med, ..) = stats(&r.samples);
                log(&format!(
                    "smp-pingpong {variant} {} {cores} cores: median {med:.0} round trips/s",
                    lock.name()
                ));
                out.push(r);
            }
        }
    }
    out
}

/// Runs the selected benchmarks; `log` receives one progress line per finished point.
pub fn run(opts: &Options, log: &mut dyn FnMut(&str)) -> Vec<Record> {
    let p = opts.params();
    let m = Machine::measure(p.calibrate);
    log(&m.describe());
    let mut rtm = RtmStats::default();
    let mut rtm_runs = Vec::new();
    let mut out = Vec::new();
    if opts.ipc {
        let recs = single_core(opts, p, &m, &mut rtm);
        for r in &recs {
            let (_, med, mean, sd) = stats(&r.samples);
            log(&format!(
                "{:<14} {:<9} {:<7} median {med:>8.1} mean {mean:>8.1} sd {sd:>6.1} cycles",
                r.bench, r.variant, r.lock
            ));
        }
        if opts.locks.contains(&Lock::Rtm) {
            rtm_runs.push("ipc-* (1 core)".to_owned());
        }
        out.extend(recs);
    }
    if opts.multicore {
        for &asked in &opts.cores {
            let cores = asked.clamp(1, MAX_CPUS);
            if cores != asked {
                log(&format!(
                    "multicore-pingpong: {asked} cores asked, the kernel supports 1..={MAX_CPUS}: running {cores}"
                ));
            }
            for &lock in &opts.locks {
                let load = Load::Pairs { cores, spin: 0 };
                let run =
                    run_load_for(lock, load, p, opts.runs, m.hz).expect("every lock runs pairs");
                if let Some(s) = &run.rtm {
                    add_rtm_stats(&mut rtm, s);
                    rtm_runs.push(format!("multicore-pingpong {cores} cores"));
                }
                let r = throughput_record("multicore-pingpong", "pairs", lock, cores, &m, &run);
                let (_, med, ..) = stats(&r.samples);
                log(&format!(
                    "multicore-pingpong pairs {} {cores} cores: median {med:.0} round trips/s",
                    lock.name()
                ));
                out.push(r);
            }
        }
    }
    if opts.smp {
        out.extend(smp_pingpong(opts, p, &m, &mut rtm, &mut rtm_runs, log));
    }
    if opts.client_server {
        for dedicated in [false, true] {
            let variant = if dedicated { "dedicated" } else { "shared" };
            for &clients in &opts.clients {
                let clients = clients.max(1);
                for &lock in &opts.locks {
                    let load = Load::ClientServer { clients, dedicated };
                    let Some(run) = run_load_for(lock, load, p, opts.runs, m.hz) else {
                        log(&format!(
                            "client-server {variant} {clients}: `none` skipped (cores share objects)"
                        ));
                        continue;
                    };
                    if let Some(s) = &run.rtm {
                        add_rtm_stats(&mut rtm, s);
                        rtm_runs.push(format!("client-server {variant} {clients} clients"));
                    }
                    let cores = (clients + 1).min(MAX_CPUS);
                    let mut r = throughput_record("client-server", variant, lock, cores, &m, &run);
                    r.clients = clients;
                    r.extra(
                        "layout",
                        format!(
                            "{} on kernel core 0, {clients} clients on cores 1 to {}{}",
                            if dedicated {
                                format!("{clients} servers (one endpoint each)")
                            } else {
                                "1 server".to_owned()
                            },
                            cores - 1,
                            if clients > cores - 1 {
                                " (round-robin: some cores run several clients)"
                            } else {
                                ""
                            }
                        ),
                    );
                    let (_, med, ..) = stats(&r.samples);
                    log(&format!(
                        "client-server {variant} {} {clients} clients: median {med:.0} round trips/s", lock.name()
                    ));
                    out.push(r);
                }
            }
        }
    }
    if !rtm_runs.is_empty() {
        let mut r = Record::new("rtm-aborts", "", "rtm", "acquisitions");
        r.cores = opts
            .cores
            .iter()
            .copied()
            .chain(opts.clients.iter().map(|c| c + 1))
            .max()
            .unwrap_or(1)
            .min(MAX_CPUS);
        m.extra(&mut r);
        let causes = serde_json::json!({
            "busy": rtm.aborts_busy,
            "conflict": rtm.aborts_conflict,
            "capacity": rtm.aborts_capacity,
            "retry": rtm.aborts_retry,
            "debug_nested": rtm.aborts_debug_nested,
            "other": rtm.aborts_other,
        });
        r.extra("rtm_available", rtm.rtm_available)
            .extra("total", rtm.total())
            .extra("direct", rtm.direct)
            .extra("retry1", rtm.retry1)
            .extra("retry2", rtm.retry2)
            .extra("more", rtm.retry_more)
            .extra("fallback", rtm.fallback)
            .extra("skipped", rtm.skipped)
            .extra("causes", causes)
            .extra("summed_over", rtm_runs.join("; "));
        rtm_note(Lock::Rtm, &m, &mut r);
        log(&format!("rtm-aborts: {rtm}").replace('\n', "; "));
        out.push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short throughput runs, long enough for a busy host to schedule every thread.
    fn params() -> Params {
        Params {
            batch: 10,
            oneway: 10,
            interval: Duration::from_millis(200),
            warmup: Duration::from_millis(5),
            calibrate: Duration::from_millis(1),
        }
    }

    #[test]
    fn throughput_loads_count_round_trips() {
        let hz = 1_000_000_000;
        let shared = Load::ClientServer {
            clients: 2,
            dedicated: false,
        };
        for (lock, load) in [
            (Lock::None, Load::Pairs { cores: 2, spin: 0 }),
            (Lock::Clh, Load::Pairs { cores: 1, spin: 0 }),
            (
                Lock::Mcs,
                Load::Pairs {
                    cores: 2,
                    spin: 500,
                },
            ),
            (Lock::Fine, shared),
            (
                Lock::Ticket,
                Load::ClientServer {
                    clients: 1,
                    dedicated: true,
                },
            ),
        ] {
            let run = run_load_for(lock, load, params(), 2, hz).unwrap();
            assert_eq!(run.samples.len(), 2, "{lock:?} {load:?}");
            assert!(run.interval > 0, "{lock:?} {load:?}");
            assert!(
                run.samples.iter().all(|&s| s >= 0.0) && run.samples.iter().sum::<f64>() > 0.0,
                "{lock:?} {load:?}: {:?}",
                run.samples
            );
            assert!(run.rtm.is_none(), "{lock:?} {load:?}");
        }
        // No lock cannot share a server.
        assert!(run_load_for(Lock::None, shared, params(), 1, hz).is_none());
    }

    #[test]
    fn the_busy_delay_is_calibrated_and_slows_the_pairs() {
        let d = SpinDelay::calibrate();
        assert!(d.per_cycle > 0.0 && d.per_cycle.is_finite(), "{d:?}");
        assert_eq!(d.iterations(0), 0);
        assert!(d.iterations(32_000) > d.iterations(500));
        // A delay far longer than a round trip bounds the rate: at most one round trip per
        // delay per core.
        let hz = tsc_hz(Duration::from_millis(20));
        let spin = d.iterations(1_000_000);
        let run = run_load_for(Lock::Clh, Load::Pairs { cores: 1, spin }, params(), 2, hz).unwrap();
        let bound = hz as f64 / 1_000_000.0 * 1.5;
        assert!(
            run.samples.iter().all(|&s| s > 0.0 && s < bound),
            "{:?} (bound {bound})",
            run.samples
        );
    }
}
