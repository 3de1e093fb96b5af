//! The image's debug calls (numbers from `0x100`, see `servers::abi::debug_nr`), test
//! reporting, and the shutdown once every program reported.
//!
//! These are deliberately outside the kernel core and its capabilities, like seL4's debug
//! calls: console output for user programs, "done" reports, and the root task's shutdown and
//! core release. The HAL calls [`handle`] on the core of the calling thread, without entering
//! the kernel, and resumes the thread with the returned registers.
//!
//! # Test lines
//! Every test, in-kernel or user, prints one line `TEST <name> ... ok|FAILED|skipped (detail)`
//! (a skipped test, e.g. one a lock strategy cannot run, is neither passed nor failed);
//! `TESTS PLANNED n` comes first and `ALL TESTS RAN n` last, so a runner can tell a missing test
//! from a passing run. User programs print their `TEST` lines through `PUT`; the image counts
//! them here.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use hal_armv7::exit::ExitCode;
use hal_armv7::gic::IpiKind;
use hal_armv7::percpu::CpuIndex;
use hal_armv7::{println, usermode, ArmHal};
use image_common::bench::{self, Collector, Kind, RunInfo};
use kernel::config::{MAX_CPUS, MAX_THREADS};
use kernel::{Error, Regs, ThreadId};
use servers::abi::{counter as ctr, debug_nr, info};

use crate::boot::{Config, RELEASED};

pub use image_common::Plan;

/// Checks made at the end, after every program reported (see [`finish`]).
pub const FINAL_TESTS: usize = 5;

const LINE: usize = 200;

struct Line {
    buf: [u8; LINE],
    len: usize,
}

struct Lines([UnsafeCell<Line>; MAX_THREADS]);

// SAFETY: a thread's line buffer is only touched in `handle` on the core that runs the thread,
// which is one core at a time (as for the HAL's saved contexts).
unsafe impl Sync for Lines {}

static LINES: Lines = Lines(
    [const {
        UnsafeCell::new(Line {
            buf: [0; LINE],
            len: 0,
        })
    }; MAX_THREADS],
);

static TEST_MODE: AtomicBool = AtomicBool::new(false);
static CORES: AtomicUsize = AtomicUsize::new(1);
static ROOT: AtomicUsize = AtomicUsize::new(usize::MAX);
static EXPECTED_DONE: AtomicUsize = AtomicUsize::new(usize::MAX);
static DONE: AtomicUsize = AtomicUsize::new(0);
static DONE_TSC: [AtomicU64; MAX_THREADS] = [const { AtomicU64::new(0) }; MAX_THREADS];
static PANICS: AtomicUsize = AtomicUsize::new(0);
static TESTS_OK: AtomicUsize = AtomicUsize::new(0);
static TESTS_FAILED: AtomicUsize = AtomicUsize::new(0);
static TESTS_SKIPPED: AtomicUsize = AtomicUsize::new(0);
static CLIENTS: [AtomicUsize; MAX_CPUS] = [const { AtomicUsize::new(usize::MAX) }; MAX_CPUS];
static FAULT_CORE: AtomicUsize = AtomicUsize::new(0);
static FAULTERS: [AtomicUsize; 3] = [const { AtomicUsize::new(usize::MAX) }; 3];
static START_TSC: AtomicU64 = AtomicU64::new(0);
static FINISHING: AtomicBool = AtomicBool::new(false);
/// The benchmark (`Kind::to_word`), 0 outside benchmark mode.
static BENCH: AtomicUsize = AtomicUsize::new(0);
/// Throughput benchmarks: the sampling interval in counter ticks.
static INTERVAL: AtomicU64 = AtomicU64::new(0);
/// Samples per benchmark record (`runs=`).
static RUNS: AtomicUsize = AtomicUsize::new(0);
/// The lock's name, as an index into `LOCKS`.
static LOCK: AtomicUsize = AtomicUsize::new(0);
const LOCKS: [&str; 5] = ["clh", "ticket", "fine", "rtm", "none"];
/// The benchmark samples the user programs report.
static COLLECTOR: Collector = Collector::new();

/// The counter user programs read: its [`ctr`] kind, record name and frequency in Hz.
/// PMCCNTR where the HAL enabled it for user mode (benchmark mode on the Cortex-A15, `-M
/// virt`), else the kernel's counter through the COUNTER debug call (the A9 global timer on
/// `-M sabrelite`, the generic timer's CNTVCT on `-M virt` outside benchmark mode).
pub fn counter() -> (usize, &'static str, u64) {
    if hal_armv7::pmu::user_counter() {
        (ctr::PMCCNTR, "pmccntr", hal_armv7::pmu::hz())
    } else {
        (ctr::DEBUGCALL, "debugcall", hal_armv7::timer::cycles_hz())
    }
}

/// Records the client of core `c` (for the containment check).
pub fn set_client(c: usize, t: ThreadId) {
    CLIENTS[c].store(t.index(), Ordering::Relaxed);
}

/// Records the three faulting threads (page fault, invalid opcode, division) and their core.
pub fn set_faulters(core: usize, threads: [Option<ThreadId>; 3]) {
    FAULT_CORE.store(core, Ordering::Relaxed);
    for (slot, t) in FAULTERS.iter().zip(threads) {
        slot.store(t.map_or(usize::MAX, |t| t.index()), Ordering::Relaxed);
    }
}

/// Records the configuration and announces the test plan. Before the first user thread runs.
pub fn init(cfg: Config, root: ThreadId, plan: Plan) {
    TEST_MODE.store(cfg.test, Ordering::Relaxed);
    CORES.store(cfg.cores, Ordering::Relaxed);
    ROOT.store(root.index(), Ordering::Relaxed);
    EXPECTED_DONE.store(plan.finite, Ordering::Release);
    BENCH.store(Kind::to_word(cfg.bench), Ordering::Relaxed);
    RUNS.store(cfg.runs, Ordering::Relaxed);
    LOCK.store(
        LOCKS
            .iter()
            .position(|&l| l == cfg.lock.name())
            .unwrap_or(0),
        Ordering::Relaxed,
    );
    if let Some(kind) = cfg.bench {
        let (_, name, hz) = counter();
        let interval = (hz / servers::abi::bench::INTERVALS_PER_SECOND).max(1);
        INTERVAL.store(interval, Ordering::Relaxed);
        println!(
            "bench: counter {name} at {hz} Hz; throughput interval {interval} ticks; {} samples \
             per record",
            cfg.runs
        );
        if kind == Kind::Ipc && name == "debugcall" {
            println!(
                "bench: one-way IPC benchmarks (ipc-call, ipc-replyrecv) skipped: no \
                 user-readable cycle counter here (QEMU's Cortex-A9 has no PMU cycle counter, \
                 and the A9 global timer shares its page with the GIC CPU interface, which user \
                 space must not map); ipc-roundtrip is timed per batch with the COUNTER debug \
                 call, its cost subtracted"
            );
        }
    }
    START_TSC.store(hal_armv7::timer::cycles(), Ordering::Relaxed);
    if cfg.test {
        let planned = crate::selftest::KERNEL_TESTS + plan.user_tests + FINAL_TESTS;
        println!("TESTS PLANNED {planned}");
        // The in-kernel tests ran before this line; the runner counts lines, not order.
    }
    println!(
        "boot: starting the root task; {} programs will report",
        plan.finite
    );
}

/// Prints one test line and counts it.
pub fn report(name: &str, ok: bool, detail: core::fmt::Arguments<'_>) {
    println!(
        "TEST {name} ... {} ({detail})",
        if ok { "ok" } else { "FAILED" }
    );
    count_test(if ok { Outcome::Ok } else { Outcome::Failed });
}

/// Prints a `TEST <name> ... skipped (reason)` line for a planned test this run cannot do.
pub fn skip(name: &str, reason: core::fmt::Arguments<'_>) {
    println!("TEST {name} ... skipped ({reason})");
    count_test(Outcome::Skipped);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    Failed,
    Skipped,
}

/// The result of a `TEST <name> ... <result>` line (as the runner judges it): `ok...` passes,
/// `skipped...` is a skip, anything else (or no ` ... `) fails.
fn outcome(line: &str) -> Outcome {
    match line.split_once(" ... ") {
        Some((_, r)) if r.starts_with("ok") => Outcome::Ok,
        Some((_, r)) if r.starts_with("skipped") => Outcome::Skipped,
        _ => Outcome::Failed,
    }
}

fn count_test(o: Outcome) {
    let counter = match o {
        Outcome::Ok => &TESTS_OK,
        Outcome::Failed => &TESTS_FAILED,
        Outcome::Skipped => &TESTS_SKIPPED,
    };
    counter.fetch_add(1, Ordering::AcqRel);
}

fn ok_regs(word: usize) -> Regs {
    [0, word, 0, 0, 0, 0]
}

fn err(e: Error) -> Regs {
    [e.code(), 0, 0, 0, 0, 0]
}

/// The HAL's debug-call handler.
pub fn handle(cpu: CpuIndex, t: ThreadId, regs: &Regs) -> Regs {
    let is_root = t.index() == ROOT.load(Ordering::Relaxed);
    match regs[0] {
        debug_nr::PUT => {
            // Four words of 4 bytes each on ARMv7 (see `servers::debug::put_str`).
            const W: usize = core::mem::size_of::<usize>();
            let len = regs[1].min(4 * W);
            for i in 0..len {
                put_byte(cpu, t, (regs[2 + i / W] >> (8 * (i % W))) as u8);
            }
            ok_regs(0)
        }
        debug_nr::DONE => {
            // Each thread counts once: a repeated DONE must not stand in for a program that has
            // not reported yet.
            let now = hal_armv7::timer::cycles().max(1);
            if DONE_TSC[t.index()]
                .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                println!(
                    "thread {} (cpu {cpu}) reported DONE again: ignored",
                    t.index()
                );
                return ok_regs(DONE.load(Ordering::Acquire));
            }
            let n = DONE.fetch_add(1, Ordering::AcqRel) + 1;
            if n == EXPECTED_DONE.load(Ordering::Acquire) {
                finish();
            }
            ok_regs(n)
        }
        debug_nr::EXIT if is_root => {
            let ok = regs[1] == 0;
            println!(
                "root task asks for shutdown ({})",
                if ok { "success" } else { "failure" }
            );
            ArmHal::exit(if ok {
                ExitCode::Success
            } else {
                ExitCode::Failure
            })
        }
        debug_nr::RELEASE if is_root => {
            if Kind::from_word(BENCH.load(Ordering::Relaxed)).is_some_and(|k| !k.uses_all_cores()) {
                // The IPC benchmark runs on core 0 alone: the others stay asleep.
                println!("bench: ipc runs on core 0 alone; the other cores stay asleep");
                return ok_regs(0);
            }
            RELEASED.store(true, Ordering::Release);
            for c in 1..CORES.load(Ordering::Relaxed) {
                ArmHal::send_ipi(c, IpiKind::Test);
            }
            ok_regs(0)
        }
        debug_nr::EXIT | debug_nr::RELEASE => err(Error::MissingRight),
        debug_nr::PANIC => {
            PANICS.fetch_add(1, Ordering::AcqRel);
            println!(
                "!!! user program (thread {}, cpu {cpu}) panicked",
                t.index()
            );
            ok_regs(0)
        }
        debug_nr::INFO => match regs[1] {
            info::CPU => ok_regs(cpu),
            info::CPUS => ok_regs(CORES.load(Ordering::Relaxed)),
            info::TEST_MODE => ok_regs(usize::from(TEST_MODE.load(Ordering::Relaxed))),
            info::THREAD => ok_regs(t.index()),
            info::COUNTER => ok_regs(counter().0),
            info::COUNTER_HZ => ok_regs(counter().2 as usize),
            info::RUNS => ok_regs(RUNS.load(Ordering::Relaxed)),
            _ => err(Error::InvalidArgument),
        },
        debug_nr::COUNTER => {
            let now = hal_armv7::timer::cycles();
            [
                0,
                (now & 0xFFFF_FFFF) as usize,
                (now >> 32) as usize,
                0,
                0,
                0,
            ]
        }
        debug_nr::BENCH if BENCH.load(Ordering::Relaxed) != 0 => COLLECTOR.handle(regs),
        _ => err(Error::UnknownSyscall),
    }
}

fn put_byte(cpu: CpuIndex, t: ThreadId, b: u8) {
    // SAFETY: see `Lines`: only the core running `t` gets here for `t`.
    let line = unsafe { &mut *LINES.0[t.index()].get() };
    if b != b'\n' {
        if line.len < LINE {
            line.buf[line.len] = b;
            line.len += 1;
        }
        if line.len < LINE {
            return;
        }
    }
    let text = match core::str::from_utf8(&line.buf[..line.len]) {
        Ok(s) => s,
        Err(e) => core::str::from_utf8(&line.buf[..e.valid_up_to()]).unwrap_or(""),
    };
    if text.starts_with("TEST ") {
        println!("{text}");
        count_test(outcome(text));
    } else {
        println!("  [cpu {cpu} thread {}] {text}", t.index());
    }
    line.len = 0;
}

/// Every program reported: final checks (test mode), summary, shutdown.
fn finish() -> ! {
    if FINISHING.swap(true, Ordering::AcqRel) {
        hal_armv7::cpu::halt_forever();
    }
    let ms = hal_armv7::timer::cycles_to_ns(
        hal_armv7::timer::cycles() - START_TSC.load(Ordering::Relaxed),
    ) / 1_000_000;
    let cores = CORES.load(Ordering::Relaxed);
    let bench = Kind::from_word(BENCH.load(Ordering::Relaxed));
    if bench.is_some() {
        println!(
            "all {} benchmark clients reported after {ms} ms ({cores} cores)",
            DONE.load(Ordering::Acquire)
        );
    } else {
        println!(
            "all {} programs reported after {ms} ms ({cores} cores, every core ran its ping-pong \
             pair)",
            DONE.load(Ordering::Acquire)
        );
    }
    // Every core's client must be among the reporters (DONE counts each thread once, so this
    // holds unless an unexpected thread reported).
    let mut missing = 0;
    let demo_clients = if bench.is_some() { 0 } else { cores };
    for (c, client) in CLIENTS.iter().enumerate().take(demo_clients) {
        let t = client.load(Ordering::Relaxed);
        if DONE_TSC
            .get(t)
            .is_none_or(|d| d.load(Ordering::Acquire) == 0)
        {
            println!("!!! the client of cpu {c} (thread {t}) never reported");
            missing += 1;
        }
    }
    if TEST_MODE.load(Ordering::Relaxed) {
        final_checks();
        let ok = TESTS_OK.load(Ordering::Acquire);
        let failed = TESTS_FAILED.load(Ordering::Acquire);
        let skipped = TESTS_SKIPPED.load(Ordering::Acquire);
        println!("ALL TESTS RAN {}", ok + failed + skipped);
        println!("tests: {ok} passed, {skipped} skipped, {failed} failed");
    }
    let mut incomplete = 0;
    if let Some(kind) = bench {
        let (_, counter, counter_hz) = counter();
        let info = RunInfo {
            lock: LOCKS[LOCK.load(Ordering::Relaxed) % LOCKS.len()],
            cores,
            counter,
            counter_hz,
            interval_ticks: INTERVAL.load(Ordering::Relaxed),
            runs: RUNS.load(Ordering::Relaxed),
        };
        incomplete = bench::print(kind, &info, &COLLECTOR, |line| println!("{line}"));
    }
    let panics = PANICS.load(Ordering::Acquire);
    let failed = TESTS_FAILED.load(Ordering::Acquire) + panics + missing + incomplete;
    println!(
        "shutting down: {} (uptime {} ms)",
        if failed == 0 { "success" } else { "FAILURE" },
        hal_armv7::timer::since_boot_ns() / 1_000_000
    );
    ArmHal::exit(if failed == 0 {
        ExitCode::Success
    } else {
        ExitCode::Failure
    })
}

/// The fault-containment checks: each faulting thread was reported with the right vector and
/// never ran again, and the faulting core's ping-pong pair finished after the faults.
fn final_checks() {
    // ARM vectors: data abort, undefined instruction, prefetch abort (`bkpt`: ARMv7-A has no
    // division trap, see `servers::programs::trigger`).
    let expect = [
        (usermode::vector::DATA_ABORT, "page_fault"),
        (usermode::vector::UNDEFINED, "invalid_opcode"),
        (usermode::vector::PREFETCH_ABORT, "divide_error"),
    ];
    let mut last_fault_tsc = 0;
    for (slot, (vector, what)) in FAULTERS.iter().zip(expect) {
        let rec = ThreadId::new(slot.load(Ordering::Relaxed)).and_then(usermode::fault_record);
        let ok = rec.is_some_and(|r| r.vector == vector && r.count == 1 && !r.resumed);
        if let Some(r) = rec {
            last_fault_tsc = last_fault_tsc.max(r.tsc);
        }
        let mut name = Name::new("user:fault_");
        name.push(what);
        name.push("_reported_and_stopped");
        report(
            name.as_str(),
            ok,
            format_args!("want vector {vector}, record {rec:?}"),
        );
    }
    let fcore = FAULT_CORE.load(Ordering::Relaxed);
    let client = CLIENTS[fcore].load(Ordering::Relaxed);
    let done_at = DONE_TSC
        .get(client)
        .map_or(0, |d| d.load(Ordering::Acquire));
    report(
        "user:fault_containment_core_keeps_running",
        last_fault_tsc != 0 && done_at > last_fault_tsc,
        format_args!(
            "cpu {fcore}: faults up to tsc {last_fault_tsc}, its pair finished at tsc {done_at}"
        ),
    );
    let panics = PANICS.load(Ordering::Acquire);
    report(
        "user:no_user_panics",
        panics == 0,
        format_args!("{panics} user panics"),
    );
}

/// A short string built in place.
struct Name {
    buf: [u8; 64],
    len: usize,
}

impl Name {
    fn new(s: &str) -> Self {
        let mut n = Self {
            buf: [0; 64],
            len: 0,
        };
        n.push(s);
        n
    }
    fn push(&mut self, s: &str) {
        let k = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + k].copy_from_slice(&s.as_bytes()[..k]);
        self.len += k;
    }
    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("?")
    }
}
