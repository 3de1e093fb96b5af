//! The images' debug calls (numbers from `0x100`, see `servers::image::debug_nr`), test
//! reporting, and the shutdown once every program reported, for any architecture implementing
//! [`DebugArch`].
//!
//! These are deliberately outside the kernel core and its capabilities, like seL4's debug
//! calls: console output for user programs, "done" reports, and the root task's shutdown and
//! core release. The HAL calls the image's handler ([`handle`]) on the core of the calling
//! thread, without entering the kernel, and resumes the thread with the returned registers.
//!
//! # Why here
//! Both images serve the same calls with the same console lines, test counts and exit status;
//! only a handful of things differ by architecture (the cycle counter, the counter user
//! programs read, how to exit QEMU and wake the other cores, the fault records and their
//! vectors). Those are [`DebugArch`]; everything else is written once, here, and the state is a
//! [`DebugCalls`] value so that host unit tests can run it against a fake architecture. The
//! image uses the one instance [`DEBUG_CALLS`] through the free functions ([`handle`],
//! [`init`], [`report`], ...).
//!
//! # Test lines
//! Every test, in-kernel or user, prints one line `TEST <name> ... ok|FAILED|skipped (detail)`
//! (a skipped test, e.g. one a lock strategy cannot run, is neither passed nor failed);
//! `TESTS PLANNED n` comes first and `ALL TESTS RAN n` last, so a runner can tell a missing test
//! from a passing run. User programs print their `TEST` lines through `PUT`; the image counts
//! them here.

use core::cell::UnsafeCell;
use core::fmt::{Arguments, Debug, Write as _};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use hal_common::ArchHal;
use kernel::config::{MAX_CPUS, MAX_THREADS};
use kernel::{Error, Regs, ThreadId};
use servers::image::{debug_nr, info};

use protocol::console::{
    AllTestsRan, Done, Line as ConsoleLine, Outcome, Plan as PlanLine, Shutdown, TestLine,
    TestsPlanned, TEST,
};

use crate::bench::{self, Collector, Kind, RunInfo};
use crate::Plan;

/// How many faulting programs the test system runs (`servers::image::fault::ALL`).
pub const FAULTERS: usize = servers::image::fault::ALL.len();

/// Checks made at the end, after every program reported (see [`DebugCalls::handle`]'s `DONE`):
/// one fault report per faulting program, the containment of the faulting core, no user
/// panics.
pub const FINAL_TESTS: usize = FAULTERS + 2;

/// The counter user programs time with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    /// Its `servers::image::counter` kind.
    pub kind: usize,
    /// Its name in the benchmark records.
    pub name: &'static str,
    /// Its frequency in Hz.
    pub hz: u64,
}

/// What the fault-containment checks read from a HAL's fault record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultFacts {
    /// The exception vector.
    pub vector: u64,
    /// The faulting address (page faults, aborts), 0 if none.
    pub addr: u64,
    /// User exceptions of the thread so far.
    pub count: u64,
    /// Whether the thread ran again after the fault.
    pub resumed: bool,
    /// The cycle counter at the fault.
    pub tsc: u64,
}

impl From<&hal_common::usermode::FaultInfo> for FaultFacts {
    fn from(f: &hal_common::usermode::FaultInfo) -> Self {
        Self {
            vector: f.fault.vector as u64,
            addr: f.fault.addr as u64,
            count: f.count,
            resumed: f.resumed,
            tsc: f.cycles,
        }
    }
}

/// What the debug calls need from the architecture: associated functions only, because the HAL
/// calls the handler as a plain function pointer. The image states its facts ([`ArchFacts`]);
/// the machine side ([`DebugMachine`]) follows from its HAL for every [`Arch`](crate::Arch).
pub trait DebugArch: ArchFacts + DebugMachine {}

impl<T: ArchFacts + DebugMachine> DebugArch for T {}

/// What only the image knows for the debug calls: the fault vectors and the counters.
pub trait ArchFacts {
    /// The vectors the faulting programs (`servers::image::fault::ALL`, in that order) must be
    /// stopped with: bad pointer, invalid opcode, division by zero (or what stands for it),
    /// write to a read-only page, execution of a data page, a jump into kernel memory.
    const FAULT_VECTORS: [u64; FAULTERS];

    /// The counter user programs read.
    fn counter() -> Counter;
    /// The kernel's cycle counter ([`DebugMachine::cycles`], which the kernel's trace
    /// timestamps read): its name as the benchmark records know it (`tsc`, or `debugcall` for
    /// the timer the ARMv7 COUNTER debug call reads) and its frequency.
    fn kernel_counter() -> Counter;
    /// Reads, in kernel mode, the counter [`counter`](Self::counter) names (for the
    /// `debugcall` counter, the kernel's counter that the COUNTER call reads), truncated to the
    /// word size: differences taken modulo the word size are exact below 2^32 ticks, as the
    /// bench programs' (`servers::programs::bench`). For the measurements the image makes
    /// itself (`crate::lockcost`).
    fn read_counter() -> usize;
}

/// An image's facts are its machine's.
impl<M: crate::Machine + ArchFacts> ArchFacts for crate::System<M> {
    const FAULT_VECTORS: [u64; FAULTERS] = M::FAULT_VECTORS;

    fn counter() -> Counter {
        M::counter()
    }
    fn kernel_counter() -> Counter {
        M::kernel_counter()
    }
    #[inline(always)]
    fn read_counter() -> usize {
        M::read_counter()
    }
}

/// What the debug calls need of the machine: console, clocks, exit, the other cores and the
/// fault records.
pub trait DebugMachine {
    /// The HAL's record of a thread's last user exception (printed with `{:?}` in the test
    /// lines).
    type Fault: Debug;

    /// Prints one line on the console.
    fn println(args: Arguments<'_>);
    /// The kernel's cycle counter.
    fn cycles() -> u64;
    /// Converts a difference of [`cycles`](Self::cycles) to nanoseconds.
    fn cycles_to_ns(delta: u64) -> u64;
    /// Nanoseconds since boot.
    fn since_boot_ns() -> u64;
    /// Stops the machine with the success or failure status.
    fn exit(success: bool) -> !;
    /// Stops this core for good.
    fn halt_forever() -> !;
    /// Lets cores `1..cores` enter the scheduler and wakes them (debug call `RELEASE`).
    fn release_cores(cores: usize);
    /// The last user exception of `t`, if any.
    fn fault_record(t: ThreadId) -> Option<Self::Fault>;
    /// What the checks need of a fault record.
    fn fault_facts(f: &Self::Fault) -> FaultFacts;
}

/// An image's machine is its HAL's.
impl<T: crate::Arch> DebugMachine for T {
    type Fault = hal_common::usermode::FaultInfo;

    fn println(args: Arguments<'_>) {
        T::Hal::println(args);
    }
    fn cycles() -> u64 {
        T::Hal::cycles()
    }
    fn cycles_to_ns(delta: u64) -> u64 {
        T::Hal::cycles_to_ns(delta)
    }
    fn since_boot_ns() -> u64 {
        T::Hal::since_boot_ns()
    }
    fn exit(success: bool) -> ! {
        T::Hal::exit(success)
    }
    fn halt_forever() -> ! {
        T::Hal::halt_forever()
    }
    fn release_cores(cores: usize) {
        crate::boot::release_cores::<T::Hal>(cores);
    }
    fn fault_record(t: ThreadId) -> Option<Self::Fault> {
        T::Hal::fault_record(t)
    }
    fn fault_facts(f: &Self::Fault) -> FaultFacts {
        f.into()
    }
}

/// The run the debug calls serve, recorded by [`DebugCalls::init`].
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// Test suite (`mode=test`) or not.
    pub test: bool,
    /// Cores the kernel runs on.
    pub cores: usize,
    /// Benchmark mode: what runs.
    pub bench: Option<Kind>,
    /// Benchmark mode: samples per record.
    pub runs: usize,
    /// The lock's name (`lock: NAME`).
    pub lock: &'static str,
    /// The in-kernel tests that ran before (test mode).
    pub kernel_tests: usize,
    /// `mode=stackoverflow`: the `KERNEL_STACK_OVERFLOW` call is served (refused otherwise).
    pub stack_overflow: bool,
}

const LINE: usize = 200;

/// A user thread's console line being assembled from `PUT` calls (a `heapless::Vec`: fixed
/// capacity, no allocator). A complete line stays readable until the next byte starts a new one.
struct Line {
    buf: heapless::Vec<u8, LINE>,
    complete: bool,
}

impl Line {
    const fn new() -> Self {
        Line {
            buf: heapless::Vec::new(),
            complete: false,
        }
    }

    /// Adds `b`; returns the complete line at a newline or when the buffer is full (the next
    /// byte starts a new line).
    fn push(&mut self, b: u8) -> Option<&str> {
        if core::mem::take(&mut self.complete) {
            self.buf.clear();
        }
        if b != b'\n' {
            // Cannot fail: a full buffer was completed and cleared above.
            let _ = self.buf.push(b);
            if !self.buf.is_full() {
                return None;
            }
        }
        self.complete = true;
        Some(match core::str::from_utf8(&self.buf) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&self.buf[..e.valid_up_to()]).unwrap_or(""),
        })
    }
}

struct Lines([UnsafeCell<Line>; MAX_THREADS]);

// SAFETY: a thread's line buffer is only touched in `handle` on the core that runs the thread,
// which is one core at a time (as for the HAL's saved contexts).
unsafe impl Sync for Lines {}

/// The result of a user program's test line, as the runner judges it (a line that is not a
/// well-formed test line fails).
fn outcome(line: &str) -> Outcome {
    match ConsoleLine::parse(line) {
        ConsoleLine::Test { outcome, .. } => outcome,
        _ => Outcome::Failed,
    }
}

fn ok_regs(word: usize) -> Regs {
    [0, word, 0, 0, 0, 0]
}

fn err(e: Error) -> Regs {
    [e.code(), 0, 0, 0, 0, 0]
}

/// The state of the debug calls: the run, the reports so far, the user threads' console lines
/// and the benchmark samples.
pub struct DebugCalls {
    lines: Lines,
    test_mode: AtomicBool,
    cores: AtomicUsize,
    root: AtomicUsize,
    stack_overflow: AtomicBool,
    expected_done: AtomicUsize,
    done: AtomicUsize,
    /// Per thread: the cycle counter at its first DONE (0: not yet).
    done_tsc: [AtomicU64; MAX_THREADS],
    /// Per thread: the role of its program (0: not made by the image's builder).
    roles: [AtomicU64; MAX_THREADS],
    /// Per thread: its core.
    thread_cores: [AtomicUsize; MAX_THREADS],
    /// Per thread: whether it must report DONE (see [`Plan`]).
    must_report: [AtomicBool; MAX_THREADS],
    /// DONE reports of threads that were not expected to report (a failure).
    unexpected: AtomicUsize,
    panics: AtomicUsize,
    tests_ok: AtomicUsize,
    tests_failed: AtomicUsize,
    tests_skipped: AtomicUsize,
    kernel_tests: AtomicUsize,
    clients: [AtomicUsize; MAX_CPUS],
    fault_core: AtomicUsize,
    faulters: [AtomicUsize; FAULTERS],
    start_cycles: AtomicU64,
    finishing: AtomicBool,
    /// The benchmark (`Kind::to_word`), 0 outside benchmark mode.
    bench: AtomicUsize,
    /// Throughput benchmarks: the sampling interval in counter ticks.
    interval: AtomicU64,
    /// Samples per benchmark record (`runs=`).
    runs: AtomicUsize,
    /// The lock's name, as an index into the registry's list ([`lock_registry::ALL`]).
    lock: AtomicUsize,
    /// The benchmark samples the user programs report.
    collector: Collector,
}

/// A thread as the reports name it: `thread 5 (hello, cpu 2)`.
struct Who {
    thread: usize,
    name: Option<&'static str>,
    core: Option<usize>,
}

impl core::fmt::Display for Who {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "thread {} (", self.thread)?;
        match self.name {
            Some(n) => f.write_str(n)?,
            None => f.write_str("not made by the image's builder")?,
        }
        match self.core {
            Some(c) => write!(f, ", cpu {c})"),
            None => f.write_str(")"),
        }
    }
}

/// The image's debug-call state, used by the free functions of this module.
pub static DEBUG_CALLS: DebugCalls = DebugCalls::new();

impl Default for DebugCalls {
    fn default() -> Self {
        Self::new()
    }
}

impl DebugCalls {
    /// Fresh state: no run recorded yet.
    pub const fn new() -> Self {
        DebugCalls {
            lines: Lines([const { UnsafeCell::new(Line::new()) }; MAX_THREADS]),
            test_mode: AtomicBool::new(false),
            cores: AtomicUsize::new(1),
            root: AtomicUsize::new(usize::MAX),
            stack_overflow: AtomicBool::new(false),
            expected_done: AtomicUsize::new(usize::MAX),
            done: AtomicUsize::new(0),
            done_tsc: [const { AtomicU64::new(0) }; MAX_THREADS],
            roles: [const { AtomicU64::new(0) }; MAX_THREADS],
            thread_cores: [const { AtomicUsize::new(0) }; MAX_THREADS],
            must_report: [const { AtomicBool::new(false) }; MAX_THREADS],
            unexpected: AtomicUsize::new(0),
            panics: AtomicUsize::new(0),
            tests_ok: AtomicUsize::new(0),
            tests_failed: AtomicUsize::new(0),
            tests_skipped: AtomicUsize::new(0),
            kernel_tests: AtomicUsize::new(0),
            clients: [const { AtomicUsize::new(usize::MAX) }; MAX_CPUS],
            fault_core: AtomicUsize::new(0),
            faulters: [const { AtomicUsize::new(usize::MAX) }; FAULTERS],
            start_cycles: AtomicU64::new(0),
            finishing: AtomicBool::new(false),
            bench: AtomicUsize::new(0),
            interval: AtomicU64::new(0),
            runs: AtomicUsize::new(0),
            lock: AtomicUsize::new(0),
            collector: Collector::new(),
        }
    }

    /// Records the client of core `c` (for the containment check).
    pub fn set_client(&self, c: usize, t: ThreadId) {
        self.clients[c].store(t.index(), Ordering::Relaxed);
    }

    /// Records the faulting threads (one per `servers::image::fault::ALL` kind, in order) and
    /// their core.
    pub fn set_faulters(&self, core: usize, threads: [Option<ThreadId>; FAULTERS]) {
        self.fault_core.store(core, Ordering::Relaxed);
        for (slot, t) in self.faulters.iter().zip(threads) {
            slot.store(t.map_or(usize::MAX, |t| t.index()), Ordering::Relaxed);
        }
    }

    /// The benchmark samples, for the measurements the image makes itself
    /// ([`crate::lockcost`]).
    pub fn collector(&self) -> &Collector {
        &self.collector
    }

    /// Records the run and announces the test plan. Before the first user thread runs.
    pub fn init<A: DebugArch>(&self, run: Run, root: ThreadId, plan: Plan) {
        self.test_mode.store(run.test, Ordering::Relaxed);
        self.cores.store(run.cores, Ordering::Relaxed);
        self.root.store(root.index(), Ordering::Relaxed);
        self.stack_overflow
            .store(run.stack_overflow, Ordering::Relaxed);
        for t in 0..MAX_THREADS {
            let (role, core) = plan.thread(t).unwrap_or((0, 0));
            self.roles[t].store(role, Ordering::Relaxed);
            self.thread_cores[t].store(core, Ordering::Relaxed);
            self.must_report[t].store(plan.must_report(t), Ordering::Relaxed);
        }
        self.expected_done.store(plan.finite(), Ordering::Release);
        self.bench
            .store(Kind::to_word(run.bench), Ordering::Relaxed);
        self.runs.store(run.runs, Ordering::Relaxed);
        self.kernel_tests.store(run.kernel_tests, Ordering::Relaxed);
        self.lock.store(
            lock_registry::ALL
                .iter()
                .position(|l| l.name() == run.lock)
                .unwrap_or(0),
            Ordering::Relaxed,
        );
        if let Some(kind) = run.bench {
            let Counter { name, hz, .. } = A::counter();
            let interval = interval_ticks(hz);
            self.interval.store(interval, Ordering::Relaxed);
            A::println(format_args!(
                "bench: counter {name} at {hz} Hz; throughput interval {interval} ticks; {} \
                 samples per record",
                run.runs
            ));
            if kind == Kind::Ipc && name == "debugcall" {
                A::println(format_args!(
                    "bench: one-way IPC benchmarks (ipc-call, ipc-replyrecv) skipped: no \
                     user-readable cycle counter here (QEMU's Cortex-A9 has no PMU cycle \
                     counter, and the A9 global timer shares its page with the GIC CPU \
                     interface, which user space must not map); ipc-roundtrip is timed per \
                     batch with the COUNTER debug call, its cost subtracted"
                ));
            }
        }
        self.start_cycles.store(A::cycles(), Ordering::Relaxed);
        if run.test {
            let planned = run.kernel_tests + plan.user_tests + FINAL_TESTS;
            A::println(format_args!("{}", TestsPlanned(planned)));
            // The in-kernel tests ran before this line; the runner counts lines, not order.
        }
        A::println(format_args!(
            "boot: starting the root task; {} programs will report",
            plan.finite()
        ));
        for t in (0..MAX_THREADS).filter(|&t| plan.must_report(t)) {
            A::println(format_args!("{}", PlanLine(self.who(t))));
        }
    }

    /// `thread T (program, cpu C)` for the reports.
    /// The run's lock name, from its index into the registry's list.
    fn lock_name(&self) -> &'static str {
        let all = &lock_registry::ALL;
        all[self.lock.load(Ordering::Relaxed) % all.len()].name()
    }

    fn who(&self, t: usize) -> Who {
        let role = self.roles.get(t).map_or(0, |r| r.load(Ordering::Relaxed));
        Who {
            thread: t,
            name: servers::programs::find(role).map(|p| p.name),
            core: (role != 0)
                .then(|| self.thread_cores.get(t).map(|c| c.load(Ordering::Relaxed)))
                .flatten(),
        }
    }

    /// Prints one test line and counts it.
    pub fn report<A: DebugArch>(&self, name: &str, ok: bool, detail: Arguments<'_>) {
        let outcome = if ok { Outcome::Ok } else { Outcome::Failed };
        A::println(format_args!(
            "{}",
            TestLine {
                name,
                outcome,
                detail
            }
        ));
        self.count_test(outcome);
    }

    /// Prints a `TEST <name> ... skipped (reason)` line for a planned test this run cannot do.
    pub fn skip<A: DebugArch>(&self, name: &str, reason: Arguments<'_>) {
        A::println(format_args!(
            "{}",
            TestLine {
                name,
                outcome: Outcome::Skipped,
                detail: reason
            }
        ));
        self.count_test(Outcome::Skipped);
    }

    fn count_test(&self, o: Outcome) {
        let counter = match o {
            Outcome::Ok => &self.tests_ok,
            Outcome::Failed => &self.tests_failed,
            Outcome::Skipped => &self.tests_skipped,
        };
        counter.fetch_add(1, Ordering::AcqRel);
    }

    /// Serves one debug call of thread `t` on core `cpu`: the registers to resume it with.
    pub fn handle<A: DebugArch>(&self, cpu: usize, t: ThreadId, regs: &Regs) -> Regs {
        let is_root = t.index() == self.root.load(Ordering::Relaxed);
        match regs[0] {
            debug_nr::PUT => {
                // Up to four words of bytes, least significant first (see
                // `servers::debug::put_str`).
                const W: usize = core::mem::size_of::<usize>();
                let len = regs[1].min(4 * W);
                for i in 0..len {
                    self.put_byte::<A>(cpu, t, (regs[2 + i / W] >> (8 * (i % W))) as u8);
                }
                ok_regs(0)
            }
            debug_nr::DONE => {
                // Only the threads the plan expects count: a report from another one is a
                // program whose declaration (servers::programs::PROGRAMS) says otherwise.
                if !self.must_report[t.index()].load(Ordering::Relaxed) {
                    self.unexpected.fetch_add(1, Ordering::AcqRel);
                    A::println(format_args!(
                        "!!! {} reported DONE, which the system did not expect: its entry in \
                         servers::programs::PROGRAMS does not say `Reports::Done` (not counted)",
                        self.who(t.index())
                    ));
                    return ok_regs(self.done.load(Ordering::Acquire));
                }
                // Each thread counts once: a repeated DONE must not stand in for a program that
                // has not reported yet.
                let now = A::cycles().max(1);
                if self.done_tsc[t.index()]
                    .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    A::println(format_args!(
                        "thread {} (cpu {cpu}) reported DONE again: ignored",
                        t.index()
                    ));
                    return ok_regs(self.done.load(Ordering::Acquire));
                }
                let n = self.done.fetch_add(1, Ordering::AcqRel) + 1;
                A::println(format_args!("{}", Done(self.who(t.index()))));
                if n == self.expected_done.load(Ordering::Acquire) {
                    self.finish::<A>();
                }
                ok_regs(n)
            }
            debug_nr::EXIT if is_root => {
                let ok = regs[1] == 0;
                A::println(format_args!(
                    "root task asks for shutdown ({})",
                    if ok { "success" } else { "failure" }
                ));
                A::exit(ok)
            }
            debug_nr::RELEASE if is_root => {
                if Kind::from_word(self.bench.load(Ordering::Relaxed))
                    .is_some_and(|k| !k.uses_all_cores())
                {
                    // The IPC benchmark runs on core 0 alone: the others stay asleep.
                    A::println(format_args!(
                        "bench: ipc runs on core 0 alone; the other cores stay asleep"
                    ));
                    return ok_regs(0);
                }
                A::release_cores(self.cores.load(Ordering::Relaxed));
                ok_regs(0)
            }
            debug_nr::EXIT | debug_nr::RELEASE => err(Error::MissingRight),
            debug_nr::PANIC => {
                self.panics.fetch_add(1, Ordering::AcqRel);
                A::println(format_args!(
                    "!!! user program (thread {}, cpu {cpu}) panicked",
                    t.index()
                ));
                ok_regs(0)
            }
            debug_nr::INFO => match regs[1] {
                info::CPU => ok_regs(cpu),
                info::CPUS => ok_regs(self.cores.load(Ordering::Relaxed)),
                info::TEST_MODE => ok_regs(usize::from(self.test_mode.load(Ordering::Relaxed))),
                info::THREAD => ok_regs(t.index()),
                info::COUNTER => ok_regs(A::counter().kind),
                info::COUNTER_HZ => ok_regs(A::counter().hz as usize),
                info::RUNS => ok_regs(self.runs.load(Ordering::Relaxed)),
                info::IRQ_CORE => {
                    let none = self.lock_name() == "none";
                    let cores = self.cores.load(Ordering::Relaxed);
                    ok_regs(if none { 0 } else { cores.saturating_sub(1) })
                }
                _ => err(Error::InvalidArgument),
            },
            debug_nr::COUNTER => {
                let now = A::cycles();
                [
                    0,
                    (now & 0xFFFF_FFFF) as usize,
                    (now >> 32) as usize,
                    0,
                    0,
                    0,
                ]
            }
            debug_nr::BENCH if self.bench.load(Ordering::Relaxed) != 0 => {
                self.collector.handle(regs)
            }
            debug_nr::KERNEL_STACK_OVERFLOW if self.stack_overflow.load(Ordering::Relaxed) => {
                A::println(format_args!(
                    "stackoverflow: thread {} on cpu {cpu}: recursing on the kernel stack until \
                     it hits its guard page",
                    t.index()
                ));
                let depth = overflow_kernel_stack(0);
                // Only reached if the stack had no bottom: the HAL did not catch the overflow.
                A::println(format_args!(
                    "stackoverflow: FAILED: {depth} levels of recursion and no fault"
                ));
                A::exit(false)
            }
            debug_nr::KERNEL_STACK_OVERFLOW => err(Error::MissingRight),
            _ => err(Error::UnknownSyscall),
        }
    }

    fn put_byte<A: DebugArch>(&self, cpu: usize, t: ThreadId, b: u8) {
        // SAFETY: see `Lines`: only the core running `t` gets here for `t`.
        let line = unsafe { &mut *self.lines.0[t.index()].get() };
        let Some(text) = line.push(b) else { return };
        if text
            .strip_prefix(TEST)
            .is_some_and(|rest| rest.starts_with(' '))
        {
            A::println(format_args!("{text}"));
            self.count_test(outcome(text));
        } else {
            A::println(format_args!("  [cpu {cpu} thread {}] {text}", t.index()));
        }
    }

    /// Every program reported: final checks (test mode), summary, shutdown.
    fn finish<A: DebugArch>(&self) -> ! {
        if self.finishing.swap(true, Ordering::AcqRel) {
            A::halt_forever();
        }
        let ms =
            A::cycles_to_ns(A::cycles() - self.start_cycles.load(Ordering::Relaxed)) / 1_000_000;
        let cores = self.cores.load(Ordering::Relaxed);
        let bench = Kind::from_word(self.bench.load(Ordering::Relaxed));
        let done = self.done.load(Ordering::Acquire);
        if bench.is_some() {
            A::println(format_args!(
                "all {done} benchmark clients reported after {ms} ms ({cores} cores)"
            ));
        } else {
            A::println(format_args!(
                "all {done} programs reported after {ms} ms ({cores} cores, every core ran its \
                 ping-pong pair)"
            ));
        }
        // Every core's client must be among the reporters (DONE counts each thread once, so
        // this holds unless an unexpected thread reported).
        let mut missing = 0;
        let demo_clients = if bench.is_some() { 0 } else { cores };
        for (c, client) in self.clients.iter().enumerate().take(demo_clients) {
            let t = client.load(Ordering::Relaxed);
            if self.done_at(t) == 0 {
                A::println(format_args!(
                    "!!! the client of cpu {c} (thread {t}) never reported"
                ));
                missing += 1;
            }
        }
        if self.test_mode.load(Ordering::Relaxed) {
            self.final_checks::<A>();
            let ok = self.tests_ok.load(Ordering::Acquire);
            let failed = self.tests_failed.load(Ordering::Acquire);
            let skipped = self.tests_skipped.load(Ordering::Acquire);
            A::println(format_args!("{}", AllTestsRan(ok + failed + skipped)));
            A::println(format_args!(
                "tests: {ok} passed, {skipped} skipped, {failed} failed"
            ));
        }
        let mut incomplete = 0;
        if let Some(kind) = bench {
            let Counter { name, hz, .. } = A::counter();
            let info = RunInfo {
                lock: self.lock_name(),
                cores,
                counter: name,
                counter_hz: hz,
                interval_ticks: self.interval.load(Ordering::Relaxed),
                runs: self.runs.load(Ordering::Relaxed),
            };
            incomplete = bench::print(kind, &info, &self.collector, |line| {
                A::println(format_args!("{line}"))
            });
        }
        let kc = A::kernel_counter();
        crate::trace::dump(
            &crate::trace::TraceBegin {
                cores,
                lock: self.lock_name(),
                counter: kc.name,
                hz: kc.hz,
                ring: crate::trace::RING,
            },
            |line| A::println(line),
        );
        let panics = self.panics.load(Ordering::Acquire);
        let failed = self.tests_failed.load(Ordering::Acquire)
            + panics
            + missing
            + incomplete
            + self.unexpected.load(Ordering::Acquire);
        A::println(format_args!(
            "{}",
            Shutdown {
                success: failed == 0,
                uptime_ms: A::since_boot_ns() / 1_000_000
            }
        ));
        A::exit(failed == 0)
    }

    /// When thread index `t` first reported DONE (0: never, or no such thread).
    fn done_at(&self, t: usize) -> u64 {
        self.done_tsc
            .get(t)
            .map_or(0, |d| d.load(Ordering::Acquire))
    }

    /// The fault-containment checks: each faulting thread was reported with the right vector
    /// (and, for the jump into kernel memory, at that address) and never ran again, and the
    /// faulting core's ping-pong pair finished after the faults. A faulting program that does
    /// not fault prints a user panic and has no record, so its check fails.
    fn final_checks<A: DebugArch>(&self) {
        let what = [
            "page_fault",
            "invalid_opcode",
            "divide_error",
            "write_read_only_page",
            "execute_data_page",
            "jump_into_kernel",
        ];
        let mut last_fault_tsc = 0;
        for (i, ((slot, vector), what)) in self
            .faulters
            .iter()
            .zip(A::FAULT_VECTORS)
            .zip(what)
            .enumerate()
        {
            let rec = ThreadId::new(slot.load(Ordering::Relaxed)).and_then(A::fault_record);
            let facts = rec.as_ref().map(A::fault_facts);
            let addr_ok = |r: &FaultFacts| {
                servers::image::fault::ALL[i] != servers::image::fault::JUMP_TO_KERNEL
                    || r.addr == servers::image::KERNEL_ADDR
            };
            let ok = facts
                .is_some_and(|r| r.vector == vector && r.count == 1 && !r.resumed && addr_ok(&r));
            if let Some(r) = facts {
                last_fault_tsc = last_fault_tsc.max(r.tsc);
            }
            self.report::<A>(
                &fault_test_name(what),
                ok,
                format_args!("want vector {vector}, record {rec:?}"),
            );
        }
        let fcore = self.fault_core.load(Ordering::Relaxed);
        let done_at = self.done_at(self.clients[fcore].load(Ordering::Relaxed));
        self.report::<A>(
            "user:fault_containment_core_keeps_running",
            last_fault_tsc != 0 && done_at > last_fault_tsc,
            format_args!(
                "cpu {fcore}: faults up to tsc {last_fault_tsc}, its pair finished at tsc \
                 {done_at}"
            ),
        );
        let panics = self.panics.load(Ordering::Acquire);
        self.report::<A>(
            "user:no_user_panics",
            panics == 0,
            format_args!("{panics} user panics"),
        );
    }
}

/// Recurses without bound on the current (kernel) stack, 512 bytes and more per level, until
/// the stack runs into its guard page and the HAL reports the overflow. The frame is kept
/// alive across the call and the result used after it, so the compiler can neither drop the
/// frames nor turn the recursion into a loop; on x86_64 the compiler's stack probes touch every
/// page of a frame in order, so no frame can jump over the guard page.
#[inline(never)]
#[allow(unconditional_recursion)] // the point: only the guard page ends it
fn overflow_kernel_stack(depth: usize) -> usize {
    let frame = core::hint::black_box([depth; 512 / core::mem::size_of::<usize>()]);
    let below = overflow_kernel_stack(core::hint::black_box(depth + 1));
    core::hint::black_box(frame)[depth % frame.len()].wrapping_add(below)
}

/// The throughput sampling interval for a counter of `hz`, in its ticks (at least one).
pub fn interval_ticks(hz: u64) -> u64 {
    (hz / servers::image::bench::INTERVALS_PER_SECOND).max(1)
}

/// [`DebugCalls::handle`] on [`DEBUG_CALLS`]: the handler an image gives its HAL.
pub fn handle<A: DebugArch>(cpu: usize, t: ThreadId, regs: &Regs) -> Regs {
    DEBUG_CALLS.handle::<A>(cpu, t, regs)
}

/// [`DebugCalls::init`] on [`DEBUG_CALLS`].
pub fn init<A: DebugArch>(run: Run, root: ThreadId, plan: Plan) {
    DEBUG_CALLS.init::<A>(run, root, plan);
}

/// Reports the pager test as skipped when `cfg` runs the test suite without it (lock `none`:
/// see [`Config::pager_test`](crate::cmdline::Config::pager_test)).
pub fn skip_pager_test_if_left_out<A: DebugArch>(cfg: &crate::cmdline::Config) {
    if cfg.cmdline.test && !cfg.pager_test() {
        skip::<A>(
            "user:pager_resolves_page_fault",
            format_args!(
                "lock none: the pager's MapFrame is a management call made while other cores \
                 run, which NoLock's contract forbids"
            ),
        );
    }
}

/// [`DebugCalls::report`] on [`DEBUG_CALLS`].
pub fn report<A: DebugArch>(name: &str, ok: bool, detail: Arguments<'_>) {
    DEBUG_CALLS.report::<A>(name, ok, detail);
}

/// [`DebugCalls::skip`] on [`DEBUG_CALLS`].
pub fn skip<A: DebugArch>(name: &str, reason: Arguments<'_>) {
    DEBUG_CALLS.skip::<A>(name, reason);
}

/// The `TEST` name of fault program `what` (built in place: the names are short, static words
/// that fit).
fn fault_test_name(what: &str) -> heapless::String<64> {
    let mut n = heapless::String::new();
    let _ = write!(n, "user:fault_{what}_reported_and_stopped");
    n
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::cell::RefCell;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::string::{String, ToString};
    use std::vec;
    use std::vec::Vec;

    use super::*;

    std::thread_local! {
        /// The console lines of this test's fake machine.
        static OUT: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
        static NOW: RefCell<u64> = const { RefCell::new(1_000) };
        static RELEASED: RefCell<Option<usize>> = const { RefCell::new(None) };
        static FAULTS: RefCell<Vec<(usize, Fault)>> = const { RefCell::new(Vec::new()) };
    }

    #[derive(Clone, Copy, Debug)]
    struct Fault {
        vector: u64,
        addr: u64,
        count: u64,
        tsc: u64,
    }

    /// An architecture whose console is a vector and whose exit unwinds with its status.
    struct Fake;

    /// How the fake machine stopped.
    #[derive(Debug, PartialEq, Eq)]
    enum Stop {
        Exit(bool),
        Halt,
    }

    impl ArchFacts for Fake {
        const FAULT_VECTORS: [u64; FAULTERS] = [14, 6, 0, 14, 14, 14];

        fn counter() -> Counter {
            Counter {
                kind: servers::image::counter::TSC,
                name: "tsc",
                hz: 1_000_000_000,
            }
        }
        fn kernel_counter() -> Counter {
            Self::counter()
        }
        fn read_counter() -> usize {
            Self::cycles() as usize
        }
    }

    impl DebugMachine for Fake {
        type Fault = Fault;

        fn println(args: Arguments<'_>) {
            OUT.with(|o| o.borrow_mut().push(args.to_string()));
        }
        fn cycles() -> u64 {
            NOW.with(|n| *n.borrow())
        }
        fn cycles_to_ns(delta: u64) -> u64 {
            delta * 1_000
        }
        fn since_boot_ns() -> u64 {
            7_000_000
        }
        fn exit(success: bool) -> ! {
            std::panic::panic_any(Stop::Exit(success))
        }
        fn halt_forever() -> ! {
            std::panic::panic_any(Stop::Halt)
        }
        fn release_cores(cores: usize) {
            RELEASED.with(|r| *r.borrow_mut() = Some(cores));
        }
        fn fault_record(t: ThreadId) -> Option<Fault> {
            FAULTS.with(|f| {
                f.borrow()
                    .iter()
                    .find(|(i, _)| *i == t.index())
                    .map(|(_, f)| *f)
            })
        }
        fn fault_facts(f: &Fault) -> FaultFacts {
            FaultFacts {
                vector: f.vector,
                addr: f.addr,
                count: f.count,
                resumed: false,
                tsc: f.tsc,
            }
        }
    }

    fn tid(i: usize) -> ThreadId {
        ThreadId::new(i).unwrap()
    }

    fn take_out() -> Vec<String> {
        OUT.with(|o| core::mem::take(&mut *o.borrow_mut()))
    }

    fn run(test: bool, cores: usize) -> Run {
        Run {
            test,
            cores,
            bench: None,
            runs: 16,
            lock: "ticket",
            kernel_tests: 9,
            stack_overflow: false,
        }
    }

    /// `s` packed into PUT's registers, as `servers::debug::put_str` does.
    fn put(s: &str) -> Regs {
        const W: usize = core::mem::size_of::<usize>();
        let mut regs = [debug_nr::PUT, s.len(), 0, 0, 0, 0];
        for (i, b) in s.bytes().enumerate() {
            regs[2 + i / W] |= (b as usize) << (8 * (i % W));
        }
        regs
    }

    /// Calls the handler and returns how the machine stopped, if it did.
    fn call(d: &DebugCalls, cpu: usize, t: usize, regs: Regs) -> Result<Regs, Stop> {
        catch_unwind(AssertUnwindSafe(|| d.handle::<Fake>(cpu, tid(t), &regs)))
            .map_err(|e| *e.downcast::<Stop>().expect("a Stop"))
    }

    fn put_line(d: &DebugCalls, cpu: usize, t: usize, text: &str) {
        for chunk in text.as_bytes().chunks(4 * core::mem::size_of::<usize>()) {
            let chunk = core::str::from_utf8(chunk).unwrap();
            assert_eq!(call(d, cpu, t, put(chunk)), Ok(ok_regs(0)));
        }
    }

    #[test]
    fn judges_test_lines_as_the_runner_does() {
        assert_eq!(outcome("TEST a ... ok (x)"), Outcome::Ok);
        assert_eq!(outcome("TEST a ... skipped (x)"), Outcome::Skipped);
        assert_eq!(outcome("TEST a ... FAILED (x)"), Outcome::Failed);
        assert_eq!(outcome("TEST a ok"), Outcome::Failed);
    }

    #[test]
    fn a_line_ends_at_a_newline_or_when_full() {
        let mut l = Line::new();
        assert_eq!(l.push(b'h'), None);
        assert_eq!(l.push(b'i'), None);
        assert_eq!(l.push(b'\n'), Some("hi"));
        assert_eq!(l.push(b'\n'), Some(""));
        for _ in 0..LINE - 1 {
            assert_eq!(l.push(b'x'), None);
        }
        assert_eq!(l.push(b'y').map(str::len), Some(LINE));
        assert_eq!(l.push(b'z'), None);
        // Invalid UTF-8 keeps its valid prefix.
        assert_eq!(l.push(0xFF), None);
        assert_eq!(l.push(b'\n'), Some("z"));
    }

    #[test]
    fn fault_test_names_are_built_in_place() {
        assert_eq!(
            fault_test_name("page_fault").as_str(),
            "user:fault_page_fault_reported_and_stopped"
        );
    }

    #[test]
    fn prints_user_lines_with_their_core_and_thread_and_counts_test_lines() {
        let d = DebugCalls::new();
        d.init::<Fake>(run(true, 2), tid(0), Plan::default());
        assert_eq!(
            take_out(),
            [
                "TESTS PLANNED 17",
                "boot: starting the root task; 0 programs will report"
            ]
        );
        put_line(&d, 1, 3, "hello from a user program\n");
        put_line(
            &d,
            0,
            4,
            "TEST user:a ... ok (fine)\nTEST user:b ... skipped (no)\n",
        );
        put_line(&d, 0, 5, "TEST user:c ... FAILED (bad)\n");
        assert_eq!(
            take_out(),
            [
                "  [cpu 1 thread 3] hello from a user program",
                "TEST user:a ... ok (fine)",
                "TEST user:b ... skipped (no)",
                "TEST user:c ... FAILED (bad)",
            ]
        );
        d.report::<Fake>("kernel:x", true, format_args!("detail"));
        d.skip::<Fake>("kernel:y", format_args!("reason"));
        assert_eq!(
            take_out(),
            [
                "TEST kernel:x ... ok (detail)",
                "TEST kernel:y ... skipped (reason)"
            ]
        );
        assert_eq!(d.tests_ok.load(Ordering::Relaxed), 2);
        assert_eq!(d.tests_skipped.load(Ordering::Relaxed), 2);
        assert_eq!(d.tests_failed.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn answers_info_counter_and_refuses_what_it_must() {
        let d = DebugCalls::new();
        d.init::<Fake>(run(true, 4), tid(0), Plan::default());
        let info = |what| [debug_nr::INFO, what, 0, 0, 0, 0];
        assert_eq!(call(&d, 2, 7, info(info::CPU)), Ok(ok_regs(2)));
        assert_eq!(call(&d, 2, 7, info(info::CPUS)), Ok(ok_regs(4)));
        assert_eq!(call(&d, 2, 7, info(info::TEST_MODE)), Ok(ok_regs(1)));
        assert_eq!(call(&d, 2, 7, info(info::THREAD)), Ok(ok_regs(7)));
        assert_eq!(
            call(&d, 2, 7, info(info::COUNTER)),
            Ok(ok_regs(servers::image::counter::TSC))
        );
        assert_eq!(call(&d, 2, 7, info(info::RUNS)), Ok(ok_regs(16)));
        assert_eq!(call(&d, 2, 7, info(99)), Ok(err(Error::InvalidArgument)));
        NOW.with(|n| *n.borrow_mut() = 0x1_2345_6789);
        assert_eq!(
            call(&d, 0, 7, [debug_nr::COUNTER, 0, 0, 0, 0, 0]),
            Ok([0, 0x2345_6789, 1, 0, 0, 0])
        );
        // Only the root task may shut down or release the cores.
        let exit = [debug_nr::EXIT, 0, 0, 0, 0, 0];
        let release = [debug_nr::RELEASE, 0, 0, 0, 0, 0];
        assert_eq!(call(&d, 0, 7, exit), Ok(err(Error::MissingRight)));
        assert_eq!(call(&d, 0, 7, release), Ok(err(Error::MissingRight)));
        // The stack-overflow call is refused outside `mode=stackoverflow`.
        let overflow = [debug_nr::KERNEL_STACK_OVERFLOW, 0, 0, 0, 0, 0];
        assert_eq!(call(&d, 0, 0, overflow), Ok(err(Error::MissingRight)));
        // Outside benchmark mode BENCH is unknown.
        let bench = [debug_nr::BENCH, 0, 0, 0, 0, 0];
        assert_eq!(call(&d, 0, 7, bench), Ok(err(Error::UnknownSyscall)));
        assert_eq!(RELEASED.with(|r| *r.borrow()), None);
        assert_eq!(call(&d, 0, 0, release), Ok(ok_regs(0)));
        assert_eq!(RELEASED.with(|r| *r.borrow()), Some(4));
        take_out();
        assert_eq!(
            call(&d, 0, 0, [debug_nr::EXIT, 1, 0, 0, 0, 0]),
            Err(Stop::Exit(false))
        );
        assert_eq!(take_out(), ["root task asks for shutdown (failure)"]);
    }

    #[test]
    fn the_ipc_benchmark_keeps_the_other_cores_asleep() {
        let d = DebugCalls::new();
        let r = Run {
            bench: Some(Kind::Ipc),
            ..run(false, 4)
        };
        d.init::<Fake>(r, tid(0), Plan::default());
        assert_eq!(
            take_out()[0],
            "bench: counter tsc at 1000000000 Hz; throughput interval 2500000 ticks; 16 samples \
             per record"
        );
        let release = [debug_nr::RELEASE, 0, 0, 0, 0, 0];
        assert_eq!(call(&d, 0, 0, release), Ok(ok_regs(0)));
        assert_eq!(RELEASED.with(|r| *r.borrow()), None);
    }

    #[test]
    fn a_demo_run_shuts_down_with_success_once_every_program_reported() {
        let d = DebugCalls::new();
        let mut plan = Plan::default();
        plan.add(tid(1), 0, servers::image::role::CLIENT, true);
        plan.add(tid(3), 1, servers::image::role::CLIENT, true);
        plan.add(tid(4), 1, servers::image::role::SERVER, false);
        d.init::<Fake>(run(false, 2), tid(0), plan);
        d.set_client(0, tid(1));
        d.set_client(1, tid(3));
        take_out();
        let done = [debug_nr::DONE, 0, 0, 0, 0, 0];
        assert_eq!(call(&d, 0, 1, done), Ok(ok_regs(1)));
        // A second DONE of the same thread does not count.
        assert_eq!(call(&d, 0, 1, done), Ok(ok_regs(1)));
        NOW.with(|n| *n.borrow_mut() = 5_001_000);
        assert_eq!(call(&d, 1, 3, done), Err(Stop::Exit(true)));
        assert_eq!(
            take_out(),
            [
                "done: thread 1 (ping-pong client, cpu 0)",
                "thread 1 (cpu 0) reported DONE again: ignored",
                "done: thread 3 (ping-pong client, cpu 1)",
                "all 2 programs reported after 5000 ms (2 cores, every core ran its ping-pong \
                 pair)",
                "shutting down: success (uptime 7 ms)",
            ]
        );
        // A finish that is already under way (another core's) halts this core.
        d.expected_done.store(3, Ordering::Relaxed);
        d.must_report[2].store(true, Ordering::Relaxed);
        assert_eq!(call(&d, 0, 2, done), Err(Stop::Halt));
    }

    #[test]
    fn a_test_run_checks_fault_containment_and_fails_on_a_missing_client() {
        let d = DebugCalls::new();
        // A plan that forgot the client of cpu 1 (the builder cannot make one now; the check
        // of every core's client stays as a second line of defence).
        let mut plan = Plan::default();
        plan.add(tid(1), 0, servers::image::role::CLIENT, true);
        plan.user_tests = 1;
        d.init::<Fake>(run(true, 2), tid(0), plan);
        d.set_client(0, tid(1));
        d.set_client(1, tid(2));
        d.set_faulters(1, [5, 6, 7, 8, 9, 10].map(|i| Some(tid(i))));
        let fault = |vector, addr, tsc| Fault {
            vector,
            addr,
            count: 1,
            tsc,
        };
        let kernel = servers::image::KERNEL_ADDR;
        FAULTS.with(|f| {
            *f.borrow_mut() = vec![
                (5, fault(14, 0xdead_0000, 10)),
                (6, fault(6, 0, 20)),
                // The wrong vector.
                (7, fault(13, 0, 30)),
                (8, fault(14, 0x40_1000, 40)),
                // Thread 9 (execute a data page) never faulted.
                // A fault, but not at the kernel address.
                (10, fault(14, kernel + 0x1000, 50)),
            ]
        });
        take_out();
        NOW.with(|n| *n.borrow_mut() = 2_000);
        let done = [debug_nr::DONE, 0, 0, 0, 0, 0];
        assert_eq!(call(&d, 0, 1, done), Err(Stop::Exit(false)));
        let out = take_out();
        let want = [
            "!!! the client of cpu 1 (thread 2) never reported".to_string(),
            "TEST user:fault_page_fault_reported_and_stopped ... ok (want vector 14, record Some(Fault { vector: 14, addr: 3735879680, count: 1, tsc: 10 }))".to_string(),
            "TEST user:fault_invalid_opcode_reported_and_stopped ... ok (want vector 6, record Some(Fault { vector: 6, addr: 0, count: 1, tsc: 20 }))".to_string(),
            "TEST user:fault_divide_error_reported_and_stopped ... FAILED (want vector 0, record Some(Fault { vector: 13, addr: 0, count: 1, tsc: 30 }))".to_string(),
            "TEST user:fault_write_read_only_page_reported_and_stopped ... ok (want vector 14, record Some(Fault { vector: 14, addr: 4198400, count: 1, tsc: 40 }))".to_string(),
            "TEST user:fault_execute_data_page_reported_and_stopped ... FAILED (want vector 14, record None)".to_string(),
            std::format!(
                "TEST user:fault_jump_into_kernel_reported_and_stopped ... FAILED (want vector \
                 14, record Some(Fault {{ vector: 14, addr: {}, count: 1, tsc: 50 }}))",
                kernel + 0x1000
            ),
            "TEST user:fault_containment_core_keeps_running ... FAILED (cpu 1: faults up to tsc 50, its pair finished at tsc 0)".to_string(),
            "TEST user:no_user_panics ... ok (0 user panics)".to_string(),
            "ALL TESTS RAN 8".to_string(),
            "tests: 4 passed, 0 skipped, 4 failed".to_string(),
            "shutting down: FAILURE (uptime 7 ms)".to_string(),
        ];
        assert_eq!(out[2..], want);
    }

    #[test]
    fn the_plan_names_its_programs_and_an_unexpected_done_fails_the_run() {
        let d = DebugCalls::new();
        let mut plan = Plan::default();
        plan.add(tid(1), 0, servers::image::role::HELLO, true);
        plan.add(tid(2), 1, servers::image::role::SERVER, false);
        d.init::<Fake>(run(false, 2), tid(0), plan);
        d.set_client(0, tid(1));
        d.set_client(1, tid(1));
        let out = take_out();
        assert!(out.contains(&"plan: thread 1 (hello, cpu 0) reports DONE".to_string()));
        assert!(
            !out.iter().any(|l| l.contains("thread 2")),
            "servers are not planned"
        );
        let done = [debug_nr::DONE, 0, 0, 0, 0, 0];
        // A server that reports, and a thread the builder never made: named, not counted.
        assert_eq!(call(&d, 1, 2, done), Ok(ok_regs(0)));
        assert_eq!(call(&d, 1, 9, done), Ok(ok_regs(0)));
        assert_eq!(call(&d, 0, 1, done), Err(Stop::Exit(false)));
        let out = take_out();
        assert_eq!(
            out[..3],
            [
                "!!! thread 2 (ping-pong server, cpu 1) reported DONE, which the system did not \
                 expect: its entry in servers::programs::PROGRAMS does not say `Reports::Done` \
                 (not counted)",
                "!!! thread 9 (not made by the image's builder) reported DONE, which the system \
                 did not expect: its entry in servers::programs::PROGRAMS does not say \
                 `Reports::Done` (not counted)",
                "done: thread 1 (hello, cpu 0)",
            ]
        );
        assert_eq!(out.last().unwrap(), "shutting down: FAILURE (uptime 7 ms)");
    }
}
