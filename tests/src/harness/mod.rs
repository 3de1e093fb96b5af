//! The hosted harness: the kernel core on host threads, for the integration tests.
//!
//! * [`FakeHal`] implements [`kernel::Hal`]: it records IPIs, address-space switches, TLB
//!   flushes, page-table writes, address-space releases and IRQ mask/unmask in per-core logs
//!   and in one global log in the order they happened ([`FakeHal::order`], for
//!   happens-before checks), and delivers IPIs by setting a per-core pending-bit word that the
//!   target core polls.
//! * [`run`] starts one host thread per kernel core. Each loops: deliver pending IPIs
//!   ([`Kernel::ipi`]), now and then a timer tick ([`Kernel::timer_tick`]) or a device
//!   interrupt, otherwise take the core's current user thread, ask its [`Program`] for the next
//!   system call (the program receives the result registers of its previous one) and call
//!   [`Kernel::syscall`], the same entry the HALs call. An idle core only waits for IPIs.
//!   When the run ends, every core keeps taking IPIs until all cores stopped, so that a core
//!   waiting in a system call for a TLB shoot-down acknowledgement can finish.
//! * [`Programs`] holds each user thread's program behind a `try_lock`: a thread that two cores
//!   run at once is detected as a kernel bug.
//! * [`HostRelax`] is a lock wait strategy that yields the host CPU while spinning, so that
//!   more simulated cores than host CPUs still make progress.
//! * [`host_cpus`] and [`pin`] place the cores' host threads on host CPUs (the hosted
//!   benchmarks use them too).

#[cfg(feature = "trace")]
pub mod tracing;
pub mod workload;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kernel::config::{MAX_CPUS, MAX_THREADS};
use kernel::hal::{Hal, IpiKind, Leaf, MapPrepError, MapTag, PageAttrs, PhysAddr, SweepAction};
use kernel::hosted::PageTables;
use kernel::{CpuId, Exit, IrqId, Kernel, Regs, Strategy, Syscall, ThreadId};

/// The host CPUs this process may run on.
pub fn host_cpus() -> usize {
    core_affinity::get_core_ids()
        .map(|v| v.len())
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// Pins the calling thread to the `i`-th CPU it may run on; returns whether it worked.
pub fn pin(i: usize) -> bool {
    core_affinity::get_core_ids()
        .and_then(|ids| ids.get(i).copied())
        .is_some_and(core_affinity::set_for_current)
}

/// A wait strategy for host threads: spin briefly, then yield the host CPU.
#[derive(Default, Debug)]
pub struct HostRelax(u32);

impl kernel_locks::Relax for HostRelax {
    fn relax(&mut self, _cpu: CpuId) {
        self.0 += 1;
        if self.0 % 64 == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// One recorded hardware operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalEvent {
    /// IPI sent to a core.
    Ipi(CpuId, IpiKind),
    /// Address space loaded.
    Switch(PhysAddr),
    /// TLB flush (`None`: all).
    Flush(PhysAddr, Option<usize>),
    /// Page-table entry written.
    Map(PhysAddr, usize, PhysAddr, PageAttrs),
    /// Page-table entry cleared.
    Unmap(PhysAddr, usize),
    /// IRQ masked.
    Mask(IrqId),
    /// IRQ unmasked.
    Unmask(IrqId),
    /// IRQ routed to a core (and unmasked).
    Route(IrqId, CpuId),
    /// Leaves removed by a sweep (revoke, address-space deletion): root and count.
    Sweep(PhysAddr, usize),
    /// Entry context set: thread index, pc, sp, arg.
    SetEntry(usize, usize, usize, usize),
}

std::thread_local! {
    static CPU: std::cell::Cell<CpuId> = const { std::cell::Cell::new(0) };
}

/// The hosted HAL: per-core logs and IPI flags.
pub struct FakeHal {
    cores: usize,
    pending: [AtomicU8; MAX_CPUS],
    logs: [Mutex<Vec<HalEvent>>; MAX_CPUS],
    ipis_sent: AtomicU64,
    /// Injected `prepare_map` failure: 0 none, 1 out of memory, 2 occupied.
    prep_fail: AtomicU8,
    order: Arc<Mutex<Vec<(CpuId, HalEvent)>>>,
    /// The page tables, with a pool of [`FakeHal::TABLE_FRAMES`] table frames.
    pub pt: PageTables,
}

impl FakeHal {
    /// A HAL for `cores` cores.
    pub fn new(cores: usize) -> Self {
        Self {
            cores,
            pending: Default::default(),
            logs: Default::default(),
            ipis_sent: AtomicU64::new(0),
            prep_fail: AtomicU8::new(0),
            order: Arc::default(),
            pt: PageTables::new(Self::TABLE_FRAMES),
        }
    }

    /// Page-table frames of the hosted pool (one per 2 MiB of address space mapped).
    pub const TABLE_FRAMES: usize = 4096;

    /// Every event of every core, in the order they happened (`(core, event)`); shared, so a
    /// [`Program`] can check what happened before its system call returned.
    pub fn order(&self) -> Arc<Mutex<Vec<(CpuId, HalEvent)>>> {
        self.order.clone()
    }

    /// Makes every later `prepare_map` fail with `fail` (`None`: succeed again), to test that
    /// the kernel turns the failure into a system-call error without changing anything.
    pub fn fail_prepare_map(&self, fail: Option<MapPrepError>) {
        let code = match fail {
            None => 0,
            Some(MapPrepError::OutOfMemory) => 1,
            Some(MapPrepError::Occupied) => 2,
        };
        self.prep_fail.store(code, Relaxed);
    }

    /// Takes the pending IPI kinds of `cpu` (bits of [`IpiKind::bit`]).
    pub fn take_ipis(&self, cpu: CpuId) -> u8 {
        if self.pending[cpu].load(Relaxed) == 0 {
            return 0;
        }
        self.pending[cpu].swap(0, Acquire)
    }

    /// The log of `cpu` (events that core performed; IPIs are logged by the sender).
    pub fn log(&self, cpu: CpuId) -> Vec<HalEvent> {
        self.logs[cpu].lock().unwrap().clone()
    }

    /// IPIs sent so far.
    pub fn ipis_sent(&self) -> u64 {
        self.ipis_sent.load(Relaxed)
    }

    fn push(&self, cpu: CpuId, e: HalEvent) {
        self.logs[cpu % MAX_CPUS].lock().unwrap().push(e);
        self.order.lock().unwrap().push((cpu, e));
    }
}

impl Hal for FakeHal {
    // The ARMv7 HAL's choice, so that the multicore tests on host threads exercise the
    // fastpath that keeps its endpoint lock to the section's end (QEMU's x86_64 suites run
    // the other).
    const MERGE_RELEASES: bool = true;
    fn cpu_id(&self) -> CpuId {
        CPU.with(|c| c.get())
    }
    fn cpu_count(&self) -> usize {
        self.cores
    }
    fn send_ipi(&self, cpu: CpuId, target: CpuId, kind: IpiKind) {
        self.push(cpu, HalEvent::Ipi(target, kind));
        self.ipis_sent.fetch_add(1, Relaxed);
        self.pending[target].fetch_or(kind.bit(), Release);
    }
    unsafe fn switch_address_space(&self, cpu: CpuId, root: PhysAddr) {
        self.push(cpu, HalEvent::Switch(root));
    }
    fn flush_tlb(&self, cpu: CpuId, root: PhysAddr, vaddr: Option<usize>) {
        self.push(cpu, HalEvent::Flush(root, vaddr));
    }
    fn prepare_map(&self, root: PhysAddr, vaddr: usize) -> Result<(), MapPrepError> {
        match self.prep_fail.load(Relaxed) {
            0 => self.pt.prepare_map(root, vaddr),
            1 => Err(MapPrepError::OutOfMemory),
            _ => Err(MapPrepError::Occupied),
        }
    }
    fn map_page(
        &self,
        root: PhysAddr,
        vaddr: usize,
        frame: PhysAddr,
        attrs: PageAttrs,
        tag: MapTag,
    ) {
        self.pt.map_page(root, vaddr, frame, attrs, tag);
        self.push(self.cpu_id(), HalEvent::Map(root, vaddr, frame, attrs));
    }
    fn lookup(&self, root: PhysAddr, vaddr: usize) -> Option<Leaf> {
        self.pt.lookup(root, vaddr)
    }
    fn unmap_page(&self, cpu: CpuId, root: PhysAddr, vaddr: usize) {
        self.pt.unmap_page(cpu, root, vaddr);
        self.push(cpu, HalEvent::Unmap(root, vaddr));
    }
    fn sweep(&self, cpu: CpuId, root: PhysAddr, f: &mut dyn FnMut(&Leaf) -> SweepAction) -> usize {
        let n = self.pt.sweep(cpu, root, f);
        if n > 0 {
            self.push(cpu, HalEvent::Sweep(root, n));
        }
        n
    }
    fn reclaim_tables(&self, cpu: CpuId) {
        self.pt.reclaim_tables(cpu);
    }
    fn table_frames(&self) -> (usize, usize) {
        self.pt.table_frames()
    }
    fn set_entry(&self, thread: ThreadId, pc: usize, sp: usize, arg: usize) {
        self.push(
            self.cpu_id(),
            HalEvent::SetEntry(thread.index(), pc, sp, arg),
        );
    }
    fn relax(&self, _cpu: CpuId) {
        std::thread::yield_now();
    }
    fn mask_irq(&self, cpu: CpuId, irq: IrqId) {
        self.push(cpu, HalEvent::Mask(irq));
    }
    fn unmask_irq(&self, cpu: CpuId, irq: IrqId) {
        self.push(cpu, HalEvent::Unmask(irq));
    }
    fn irq_line_available(&self, irq: IrqId) -> bool {
        // Lines 1.. exist; 0 stands for a line the kernel uses itself.
        irq.index() != 0
    }
    fn route_irq(&self, cpu: CpuId, irq: IrqId, target: CpuId) {
        self.push(cpu, HalEvent::Route(irq, target));
    }
    /// The host's counter (`lfence; rdtsc` on x86_64), so that traced entries have real
    /// timestamps.
    fn cycles(&self) -> u64 {
        crate::bench::cycles()
    }
    fn trace_cycles(&self) -> u64 {
        crate::bench::cycles_unfenced()
    }
    fn console_write(&self, s: &str) {
        eprint!("{s}");
    }
}

/// A user program: a state machine that receives the result registers of its previous system
/// call (zeros at first) and returns its next one.
pub trait Program: Send {
    /// The next system call, or `None` when finished (the thread then repeats its park call,
    /// see [`Programs::set_park`]).
    fn step(&mut self, ret: &Regs) -> Option<Regs>;
}

impl<F: FnMut(&Regs) -> Option<Regs> + Send> Program for F {
    fn step(&mut self, ret: &Regs) -> Option<Regs> {
        self(ret)
    }
}

struct Slot {
    program: Option<Box<dyn Program>>,
    finished: bool,
    park: Regs,
    /// The registers the thread had when an interrupt, tick or IPI took its core (its saved
    /// user frame), until it steps again: a thread resumed then gets these, not the exit's
    /// result registers, as with the real HALs (a trap's frame is restored whole; an exit's
    /// registers only complete a system call).
    frame: Option<Regs>,
}

/// The programs of all user threads, by thread index. Threads without a program yield.
pub struct Programs {
    slots: Vec<Mutex<Slot>>,
    finite: AtomicU64,
    finished: AtomicU64,
}

impl Default for Programs {
    fn default() -> Self {
        Self::new()
    }
}

impl Programs {
    /// No programs.
    pub fn new() -> Self {
        Self {
            slots: (0..MAX_THREADS)
                .map(|_| {
                    Mutex::new(Slot {
                        program: None,
                        finished: false,
                        park: Syscall::Yield.encode(),
                        frame: None,
                    })
                })
                .collect(),
            finite: AtomicU64::new(0),
            finished: AtomicU64::new(0),
        }
    }

    /// Sets `t`'s program. `finite` programs are waited for by [`run`].
    pub fn set(&self, t: ThreadId, finite: bool, p: impl Program + 'static) {
        let mut s = self.slots[t.index()].lock().unwrap();
        s.program = Some(Box::new(p));
        s.finished = !finite;
        s.frame = None;
        if finite {
            self.finite.fetch_add(1, Relaxed);
        }
    }

    /// Sets the system call a thread repeats once its program finished (default: Yield). A
    /// blocking call (Wait on a notification nobody signals) keeps finished threads from
    /// starving lower priorities.
    pub fn set_park(&self, t: ThreadId, park: Regs) {
        self.slots[t.index()].lock().unwrap().park = park;
    }

    /// Whether every finite program has finished.
    pub fn all_finished(&self) -> bool {
        self.finished.load(Acquire) == self.finite.load(Relaxed)
    }

    /// Finite programs still running.
    pub fn unfinished(&self) -> u64 {
        self.finite.load(Relaxed) - self.finished.load(Relaxed)
    }

    /// `t`'s next system call; `ret`: the registers of the exit that resumed it (used unless
    /// a trap interrupted it since its last step, see [`Slot::frame`]).
    fn step(&self, t: ThreadId, ret: &Regs) -> Regs {
        let mut s = self.slots[t.index()]
            .try_lock()
            .unwrap_or_else(|_| panic!("thread {t:?} runs on two cores at once"));
        let ret = s.frame.take().unwrap_or(*ret);
        let next = s.program.as_mut().and_then(|p| p.step(&ret));
        match next {
            Some(regs) => regs,
            None => {
                if !s.finished && s.program.is_some() {
                    s.finished = true;
                    self.finished.fetch_add(1, Release);
                }
                s.program = None;
                s.park
            }
        }
    }

    /// A trap (interrupt, tick, IPI) takes the core from `t`, which last got `regs`: they
    /// become its saved frame, unless it has one it has not stepped with yet.
    fn interrupted(&self, t: ThreadId, regs: &Regs) {
        let mut s = self.slots[t.index()].lock().unwrap();
        s.frame.get_or_insert(*regs);
    }
}

/// Harness knobs.
#[derive(Clone, Copy, Debug)]
pub struct RunConfig {
    /// A timer tick every this many loop iterations of a busy core.
    pub tick_every: u64,
    /// A device interrupt (line `irq`) every this many iterations of core 0 (0 = never).
    pub irq_every: u64,
    /// The line of injected interrupts.
    pub irq: usize,
    /// Give up after this long.
    pub timeout: Duration,
    /// Hold every core's host thread at a start line until all of them have started, so that
    /// the cores run their workload at the same time: without it a short run (a trace of a
    /// few milliseconds) can finish on the first core before the host has started the second
    /// (seen on a 2-vCPU VM: the cores of a 2-core trace ran one after the other).
    pub start_together: bool,
    /// Pin core `i`'s host thread to host CPU `i` when the host has at least as many CPUs as
    /// the kernel has cores (otherwise threads stay unpinned).
    pub pin: bool,
    /// Let the cores take turns: core 0 makes one kernel entry (or one idle pass), then core 1,
    /// and so on, so that no two cores are ever in the kernel at once. Every entry then finds
    /// the shared lines where the previous core left them, without any lock waiting: the
    /// calibration run of `examples/calibrate.rs` (what an entry costs after another core's).
    /// Only for workloads in which no entry waits for another core (the IPC workload; not a
    /// TLB shoot-down, whose acknowledgement needs the other core to run meanwhile).
    pub alternate: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            tick_every: 50,
            irq_every: 0,
            irq: 0,
            timeout: Duration::from_secs(60),
            start_together: false,
            pin: false,
            alternate: false,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// System calls made, per core.
    pub syscalls: Vec<u64>,
    /// All kernel entries (syscalls, IPIs, ticks, interrupts).
    pub entries: u64,
    /// IPIs sent.
    pub ipis: u64,
    /// Wall time.
    pub elapsed: Duration,
}

impl RunStats {
    /// Total system calls.
    pub fn total_syscalls(&self) -> u64 {
        self.syscalls.iter().sum()
    }
}

/// Runs the kernel on one host thread per core until `done()` holds and every finite program
/// has finished, or the timeout passes (an error naming what was still unfinished).
pub fn run<S: Strategy>(
    k: &Kernel<S, FakeHal>,
    programs: &Programs,
    cfg: RunConfig,
    done: impl Fn() -> bool + Sync,
) -> Result<RunStats, String> {
    let stop = AtomicBool::new(false);
    let stopped = AtomicU64::new(0);
    let entries = AtomicU64::new(0);
    let ready = AtomicU64::new(0);
    let turn = AtomicUsize::new(0);
    let start = Instant::now();
    let cores = k.cores();
    let mut syscalls = vec![0; cores];
    let timed_out = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..cores)
            .map(|cpu| {
                let (stop, stopped, entries, ready) = (&stop, &stopped, &entries, &ready);
                let turn = cfg.alternate.then_some(&turn);
                scope.spawn(move || {
                    if cfg.pin && cores <= host_cpus() {
                        pin(cpu);
                    }
                    if cfg.start_together {
                        start_line(ready, cores as u64);
                    }
                    core_loop(k, programs, cfg, cpu, (stop, stopped), entries, turn)
                })
            })
            .collect();
        let mut timed_out = false;
        loop {
            if programs.all_finished() && done() {
                break;
            }
            if start.elapsed() > cfg.timeout || handles.iter().any(|h| h.is_finished()) {
                timed_out = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        stop.store(true, Relaxed);
        for (cpu, h) in handles.into_iter().enumerate() {
            match h.join() {
                Ok(n) => syscalls[cpu] = n,
                Err(e) => std::panic::resume_unwind(e),
            }
        }
        timed_out
    });
    if timed_out {
        return Err(format!(
            "run timed out after {:?}: {} finite programs unfinished, done() = {}",
            start.elapsed(),
            programs.unfinished(),
            done()
        ));
    }
    Ok(RunStats {
        syscalls,
        entries: entries.load(Relaxed),
        ipis: k.hal().ipis_sent(),
        elapsed: start.elapsed(),
    })
}

/// Counts this thread in at `ready` and waits until `cores` threads have: spins, and yields to
/// the host now and then so that more threads than CPUs still all arrive. Unlike a blocking
/// barrier, every thread is running when the last one arrives, so that short workloads of
/// several cores overlap (also the hosted memory benchmark's start).
pub(crate) fn start_line(ready: &AtomicU64, cores: u64) {
    ready.fetch_add(1, AcqRel);
    let mut spins = 0u64;
    while ready.load(Acquire) < cores {
        spins += 1;
        if spins % 64 == 0 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

fn core_loop<S: Strategy>(
    k: &Kernel<S, FakeHal>,
    programs: &Programs,
    cfg: RunConfig,
    cpu: CpuId,
    (stop, stopped): (&AtomicBool, &AtomicU64),
    entries: &AtomicU64,
    turn: Option<&AtomicUsize>,
) -> u64 {
    CPU.with(|c| c.set(cpu));
    let mut exit = k.timer_tick(cpu);
    let mut n_entries = 1u64;
    let mut iter = 0u64;
    let mut calls = 0u64;
    while !stop.load(Relaxed) {
        if let Some(turn) = turn {
            let mut spins = 0u64;
            while turn.load(Acquire) != cpu && !stop.load(Relaxed) {
                spins += 1;
                if spins % 64 == 0 {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        iter += 1;
        'step: {
            // Every entry but a system call is a trap: the thread it interrupts keeps its
            // registers (see `Programs::interrupted`).
            let trap = |exit: &Exit| {
                if let Some(t) = exit.thread {
                    programs.interrupted(t, &exit.regs);
                }
            };
            let pending = k.hal().take_ipis(cpu);
            if pending != 0 {
                for kind in IpiKind::ALL {
                    if pending & kind.bit() != 0 {
                        trap(&exit);
                        exit = k.ipi(cpu, kind);
                        n_entries += 1;
                    }
                }
                break 'step;
            }
            if cfg.irq_every != 0 && cpu == 0 && iter % cfg.irq_every == 0 {
                trap(&exit);
                exit = k.interrupt(cpu, cfg.irq);
                n_entries += 1;
                break 'step;
            }
            let Some(t) = exit.thread else {
                if turn.is_none() {
                    std::thread::yield_now();
                }
                break 'step;
            };
            if iter % cfg.tick_every == 0 {
                trap(&exit);
                exit = k.timer_tick(cpu);
                n_entries += 1;
                break 'step;
            }
            let raw = programs.step(t, &exit.regs);
            exit = k.syscall(cpu, raw);
            calls += 1;
            n_entries += 1;
        }
        if let Some(turn) = turn {
            turn.store((cpu + 1) % k.cores(), Release);
        }
    }
    // Another core may be waiting in a system call for this core's shoot-down acknowledgement:
    // keep taking IPIs (no more system calls) until every core left its loop.
    stopped.fetch_add(1, AcqRel);
    while stopped.load(Acquire) < k.cores() as u64 {
        let pending = k.hal().take_ipis(cpu);
        for kind in IpiKind::ALL {
            if pending & kind.bit() != 0 {
                k.ipi(cpu, kind);
                n_entries += 1;
            }
        }
        std::thread::yield_now();
    }
    entries.fetch_add(n_entries, Relaxed);
    calls
}

/// A seeded xorshift64* generator (no dependencies, reproducible).
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from a non-zero seed (0 is replaced).
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-ish in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
