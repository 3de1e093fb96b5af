//! `cargo xtask bench ipc|memory|redis|locks|compare|report`: the benchmark suites (the kernel's
//! IPC, its memory system, its network server, the lock crate's micro-benchmarks) and what is
//! done with their runs.
//!
//! The driver runs the producers of docs/bench-protocol.md (guest images booted in
//! `mode=bench` under QEMU, and the hosted benchmark `tests/benches/ipc_hosted.rs`), turns their
//! raw records into records ([`records`]), and writes `results.json`, `results.csv`, the two
//! figures ([`plot`]) and `report.md` ([`report`]) into the output directory.
//!
//! Modules: [`plan`] (what to measure), [`guest`] (QEMU runs, console parsing, retries),
//! [`hosted`], [`records`] (conversion), [`stats`], [`csv`], [`plot`], [`report`],
//! [`machine`], [`check`] (reading the outputs back), [`host_locks`] (`bench locks`), [`rerender`]
//! (`bench report`).

// Their readers are the tools' maintainers (`cargo doc --document-private-items`): the docs
// link to private items on purpose.
#![allow(rustdoc::private_intra_doc_links)]

mod check;
mod compare;
mod csv;
mod guest;
mod host_locks;
mod hosted;
mod layout;
mod linux;
mod machine;
mod memory;
mod paper;
mod plan;
pub mod plot;
pub mod records;
mod redis;
mod report;
pub mod rerender;
mod soak;
mod stats;
mod steps;

#[cfg(test)]
mod fixtures;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use clap::{Args, Subcommand};
use serde_json::json;

use guest::KernelTrace;
use layout::Destination;
use plan::{ArchArg, LockArg, Plan, Platform, PlatformArg};
use protocol::results::{GeneratedBy, Results};
use qemu_runner::qemu;
use records::Record;

/// The long help's closing part: what each platform measures, units, files and times.
const AFTER_HELP: &str = "\
PLATFORMS (what each measures, in which unit)
  hosted       The kernel on host threads (tests/benches/ipc_hosted.rs): entered through
               Kernel::syscall as a HAL does, no trap, HAL actions no-ops. The kernel path and
               its locking only, in host TSC cycles; multicore throughput in round trips/s.
               x86_64 host only.
  qemu-icount  The x86_64 / ARMv7 image under QEMU with -icount shift=0,sleep=off, one core,
               bench=ipc: one-way Call, one-way ReplyRecv and round trip. Deterministic: guest
               counter ticks are converted to guest instructions (one instruction = 1 ns of
               virtual time) with the counter's true frequency under QEMU 7.2 (tsc, pmccntr
               1 GHz; A9 global timer 100 MHz; cntvct 62.5 MHz). Boards: microvm (x86_64),
               sabrelite and virt (armv7). Also (not with --quick), for armv7 on sabrelite:
               the barriers (dmb, dsb, isb) one round trip executes, per lock, counted from
               QEMU exec traces as `cargo xtask trace exec` does (bench ipc-barriers, 1-3 minutes a lock).
  qemu         The images under multi-threaded TCG, bench=multicore (one client/server pair per
               core) and bench=clientserver, for each --cores count: throughput in round
               trips/s of virtual (= host) time. NOISY: bounded by the host's cores and load;
               the shape of the scaling, not absolute figures.

OVERHEADS are relative to lock `none` on the same platform and board; when --lock does not
include `none` it is measured too, as the baseline (and the report says so). `brlock` and
`fine` are the same kernel strategy: fine-grained locking built on the big-reader lock (plus
per-object ticket locks); it is measured once, as `fine`.

WHERE RESULTS GO: every run writes into a folder of its own,
  target/bench/runs/<YYYY-MM-DDTHH-MM-SS>-<git revision>/ (UTC; `-dirty` when tracked files
  differ from the commit; under $CARGO_TARGET_DIR/bench/ if set), and target/bench/latest (a
  symbolic link, or a file naming the folder where links cannot be made) is switched to it once
  the run has produced records: a failed or empty run never hides the previous results.
  --out DIR writes into DIR instead (a run without records leaves DIR's earlier files alone).
  `cargo xtask bench compare A B` compares two runs (see `cargo xtask bench compare --help`).

FILES (in the run's folder)
  results.json     every record: bench, variant, arch, platform, board, strategy, lock, cores,
                   clients, runs, unit, mean, stddev (sample), min, median, samples, method,
                   machine {cpu, host_cores, qemu, rustc}; generated_by {command, revision, ...}
  results.csv      the same, one row per record
  ipc-roundtrip.svg/.png    round-trip cost per strategy and architecture, error bars = std dev,
                   each bar labelled with its overhead over none; below, the overheads
                   beside the paper's (big-lock-is-fine, Fig. 1)
  multicore-throughput.svg/.png   multicore throughput vs cores, per platform and board; hollow
                   markers: oversubscribed (more cores than the host has), triangles:
                   emulated (QEMU TCG); the ideal line is cut at the data's range
  clientserver-throughput.svg/.png client-server throughput vs clients, per platform, board and
                   variant (shared server / dedicated servers), marked the same way
  report.md        our figures next to the seed papers', the targets judged from the data
                   (met / not met / not measured), every record, the machine and the method

RUNS: a guest prints its raw records between BENCH-JSON-BEGIN and BENCH-JSON-END; a run whose
output is malformed (truncated, unparsable) is retried up to 2 times, and the report says so; a
run that fails (bad exit status, hang past --timeout) is an error, shown with its console tail.
A producer that is missing (an image without mode=bench, a hosted benchmark without --records)
is named, the rest is still measured and written, and the exit status is non-zero.

TIME (2-vCPU VM, measured): `cargo xtask bench ipc --lock=clh` boots about 55 short guests (under
a second each), runs the hosted benchmark and two ARMv7 barrier traces (clh and the none
baseline, about 70 s each): 4 minutes with nothing else running once the images and the hosted
benchmark are built, about 8 reported beside another job, a few more for a first build. Every lock (the
default) adds a barrier trace (1-3 minutes) and about 25 boots per lock. --quick with --cores 1
takes well under a minute once built (`cargo xtask test --only bench:tiny`). Every step's
progress line says how long the run has taken and about how long is left.

REDIS SUITE: `cargo xtask bench redis [--lock ...] [--arch ...] [--cores 1,2] [--quick]`
boots the network image (mode=net: a virtio-net driver on core 0 feeding a smoltcp
stack and Redis-protocol server on every core, core k's on guest port 6379+k) under QEMU TCG
for every arch (x86_64 microvm, ARMv7 virt), lock and core count (default 1 and 2; lock=none
on 1 core only), and drives every core's server at once over passt (the default network of
`cargo xtask qemu --net`; QEMU's user network only as a fallback, which the report names) with
redis-benchmark (SET and GET, its default 50 connections, unpipelined and -P 16) and YCSB
0.17.0 workload A (bench/ycsb-redis: load 32000 records, run 20000 operations, 4 threads;
--quick: 1000 and 2000), each client 3 times per boot (--quick: once; the median run is kept),
throughputs summed over the cores. Utilisation per core comes from the server's INFO `# CPU`
section (the kernel's idle accounting) sampled every 500 ms while a client runs; Xput =
throughput / average utilisation. The Linux + Redis baseline (Debian's kernel and the real
redis-server, one per core, on the same QEMU machine and network, built from Debian packages at
bench time; --no-linux leaves it out) runs the same clients. Files, in a folder per run under
<target>/bench/redis/runs/ (latest: <target>/bench/redis/latest) or --out: results.json,
results.csv, report.md, redis-throughput and redis-xput (SVG and PNG). Needs
redis-tools, redis-server, passt, Java and Maven (the binding is built on first use).
`--soak [--soak-time SECONDS]` soaks the server instead: see --soak below. TIME (2-vCPU VM,
measured): every lock, both arches and 1-2 cores 27 minutes with nothing else running (the
first run also downloads the baselines' Debian packages), longer beside other work; --quick
2-3 minutes; --soak its --soak-time per architecture plus under a minute of boots and
read-back. Every point's progress line says how long is left.

MEMORY SUITE: `cargo xtask bench memory` measures the per-core-pager paper's workload
(per-core-pager-fiasco; servers::memory in the guest, docs/memory.md): one worker per core
runs --runs tasks, each touching N fresh pages (a page fault each, served by a user-level
pager) and then freeing them one by one. Records memory-alloc and memory-free (time per page,
`pages` = N, variant percore or global) and memory-ipc (a null request to the pager on the
same core vs another core). Runs: hosted (tests/benches/memory_hosted.rs, real cores) every
combination of --cores, --pager and --pages; qemu (MTTCG) every --cores count with each pager
at 100 pages (or the smallest --pages); qemu-icount 1 core at every --pages value (not with
--quick: 100 only) plus a 2-core boot for memory-ipc only. Under -icount the guest cores take
turns on one host thread with one virtual clock: multicore times there would count the
other cores' instructions, so they are not measured.
Lock: clh unless --lock says otherwise (none only on 1 core). Files: results.json,
results.csv, memory-cores (time per page vs cores, normalised to 1 core, the paper's
Fig. 9/10), memory-pages (vs outstanding pages, Fig. 11), report.md (ours beside the
paper's figures; the targets: per-core loses at most 5% up to the largest real core
count, the global pager's loss visible there; judged on hosted and qemu). Under qemu-icount
about 33 boots of about a second each for one lock on the three boards.

KERNEL TRACING: `--kernel-trace built|on` measures what kernel lock tracing costs.
The images are built with their `trace` feature (into <target>/features-trace, beside the
untraced ones) and booted with trace=0 (built: the feature's cost with no tracer) or trace=1
(on: every kernel entry writes a 112-byte record into its core's ring; the image prints the
rings after its records, between TRACE-BEGIN and TRACE-END, which the record parser skips).
Every guest record says which (`kernel_trace`, also in results.csv, the method and the report).
Compare two runs: e.g.
  cargo xtask bench ipc --platform qemu-icount --lock clh --cores 1 --quick --out target/t-off
  cargo xtask bench ipc ... --kernel-trace on --out target/t-on
  cargo xtask bench compare target/t-off target/t-on
null-syscall (one trap, kernel entry and exit) is one kernel entry, ipc-roundtrip two.

HOST LOCKS: `cargo xtask bench locks [--threads 1,2] [--quick] [--out DIR]` runs the lock
micro-benchmarks of the kernel-locks crate (sync/benches/host_table.rs): uncontended ns and TSC
ticks per acquire+release, contended ops/s per thread count; writes DIR/host-locks.json.";

/// `cargo xtask bench`: a run of the benchmarks (no subcommand) or one of the subcommands.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, after_long_help = AFTER_HELP)]
pub struct BenchArgs {
    /// The suite to run, or what to do instead of a run.
    #[command(subcommand)]
    command: Option<BenchCommand>,

    /// A run in the old spelling (`--suite`, `--host`), kept for one release.
    #[command(flatten)]
    run: OldSpelling,
}

impl BenchArgs {
    /// The run these options ask for, whichever way it is spelt (`None` for a subcommand that
    /// is not a run); `Err` for options the suite does not take.
    fn run_args(&self) -> Option<Result<RunArgs, String>> {
        let none = (
            MemoryOpts::default(),
            RedisOpts::default(),
            LocksOpts::default(),
        );
        Some(Ok(match &self.command {
            None => return Some(self.run.clone().into_run()),
            Some(BenchCommand::Compare(_) | BenchCommand::Report(_)) => return None,
            Some(BenchCommand::Ipc(a)) => RunArgs::of(
                Suite::Ipc,
                false,
                a.guests.clone(),
                a.samples.clone(),
                a.output.clone(),
                none.0,
                none.1,
                none.2,
            ),
            Some(BenchCommand::Memory(a)) => RunArgs::of(
                Suite::Memory,
                false,
                a.run.guests.clone(),
                a.run.samples.clone(),
                a.run.output.clone(),
                a.memory.clone(),
                none.1,
                none.2,
            ),
            Some(BenchCommand::Redis(a)) => RunArgs::of(
                Suite::Redis,
                false,
                a.guests.clone(),
                SampleOpts::default(),
                a.output.clone(),
                none.0,
                a.redis.clone(),
                none.2,
            ),
            Some(BenchCommand::Locks(a)) => RunArgs::of(
                Suite::Ipc,
                true,
                GuestOpts::default(),
                SampleOpts::default(),
                a.output.clone(),
                none.0,
                none.1,
                a.locks.clone(),
            ),
        }))
    }

    /// Whether this is a run that builds the images, not the lock micro-benchmarks or a
    /// subcommand such as `compare`.
    pub fn builds(&self) -> bool {
        match &self.command {
            None => !self.run.host,
            Some(c) => matches!(
                c,
                BenchCommand::Ipc(_) | BenchCommand::Memory(_) | BenchCommand::Redis(_)
            ),
        }
    }
}

/// The subcommands of `cargo xtask bench`: a suite to run, or what to do with runs.
#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// The kernel IPC benchmarks: round trips, multicore ping-pong, client-server (the big-lock
    /// paper's Figures 1-3).
    ///
    /// Measures the kernel's IPC cost per locking strategy on three platforms: `hosted` (the
    /// kernel on host threads, TSC cycles), `qemu-icount` (the images under QEMU -icount
    /// shift=0: deterministic guest instruction counts) and `qemu` (multi-threaded TCG:
    /// multicore throughput, noisy). `cargo xtask bench ipc --lock=clh` measures CLH against
    /// the `none` baseline everywhere in a few minutes.
    Ipc(IpcArgs),

    /// The memory benchmark: per-core against global user-level pagers (the per-core pager
    /// paper's workload; Figures 4-5).
    ///
    /// Every core's worker allocates pages by touching them (a page fault served by IPC to a
    /// pager) and frees them; time per page against cores and against outstanding pages, and
    /// same-core against cross-core pager IPC. Its default lock is clh; `none` runs on 1 core
    /// only.
    Memory(MemoryArgs),

    /// The network macro-benchmark: the kernel's Redis-protocol server under QEMU, driven by
    /// redis-benchmark and YCSB workload A, beside Linux + Redis (the big-lock paper's Figures
    /// 3-4).
    ///
    /// Throughput, utilisation (the kernel's idle accounting) and Xput per lock, architecture
    /// and core count; `--soak` runs the soak instead. Results go to <target>/bench/redis/.
    Redis(RedisArgs),

    /// The lock micro-benchmarks of the kernel-locks crate beside peer crates' locks
    /// (DIR/host-locks.json).
    ///
    /// Uncontended ns and TSC ticks per acquire+release, contended acquisitions per second per
    /// thread count, each lock once per round, and a parity verdict per pair
    /// (sync/benches/host_table.rs).
    Locks(LocksArgs),

    /// Compare two runs' results record by record: change in percent and whether it is beyond
    /// the noise.
    ///
    /// A and B are results folders (target/bench/runs/<run>, an --out DIR), results.json files,
    /// or a bench root such as target/bench, meaning the run its `latest` names. Records are
    /// matched on platform, arch, board, bench, variant, lock, cores, clients and pages, and shown side
    /// by side (mean ± std dev) with the change of the mean in percent. For qemu-icount
    /// (deterministic instruction counts) a pair is `identical` (bit for bit) or `CHANGED`;
    /// elsewhere the difference of the means is weighed against its standard error (Welch's t):
    /// `BEYOND NOISE` when |t| exceeds the two-sided 95% threshold for its degrees of freedom,
    /// `within noise` otherwise (a side with fewer than 2 samples is not judged). Records found
    /// on one side only are listed. Exit status 0 once both sides are read, 2 when one cannot
    /// be (the error says which and why).
    Compare(compare::CompareArgs),

    /// Render a run's report.md and figures again from its results.json (the IPC and memory
    /// suites).
    ///
    /// Reports are generated from the records, so a results folder can always be rendered
    /// again with today's code: after a change to the report, or for a committed run under
    /// docs/bench. `--check` writes nothing and fails when the folder's report.md is not what
    /// its results.json gives (a unit test does that for every committed run).
    Report(rerender::ReportArgs),
}

/// `--timeout`'s default, in seconds.
const DEFAULT_TIMEOUT: u64 = 300;
/// `--runs`' default.
const DEFAULT_RUNS: u32 = 16;
/// `--soak-time`'s default, in seconds.
const DEFAULT_SOAK_TIME: u64 = 600;

/// Guest runs: which kernels, on which cores, and how a run is watched (every suite that boots
/// the images: `ipc`, `memory`, `redis`).
#[derive(Debug, Args, Clone)]
pub struct GuestOpts {
    /// Kernel locks, comma-separated: any of the values below, `brlock` (= fine: the
    /// fine-grained strategy, built on the big-reader lock) or all [default: all]. `none` is
    /// always measured too: it is the baseline of every overhead.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "LOCK,...")]
    lock: Vec<LockArg>,

    /// Architectures: x86_64 (QEMU microvm; the host for `hosted`), armv7 (QEMU sabrelite and
    /// virt), all [default: all].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "ARCH,...")]
    arch: Vec<ArchArg>,

    /// Core counts of the multicore and client-server runs (qemu; hosted too) [default:
    /// 1,2,4]. Under qemu each must fit the boards measured (boards/*.toml: 4 cores each).
    #[arg(
        long,
        visible_alias = "smp",
        value_delimiter = ',',
        value_name = "N,..."
    )]
    cores: Vec<u32>,

    /// Seconds one guest run may take before it is killed as a hang.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT, value_name = "S",
          value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,

    /// Show QEMU command lines and consoles, and the hosted benchmark's output.
    #[arg(short, long)]
    verbose: bool,
}

/// Sampled measurements: where, how often, and with which kernel build (`ipc`, `memory`).
#[derive(Debug, Args, Clone)]
pub struct SampleOpts {
    /// Platforms: hosted (host TSC cycles), qemu-icount (deterministic guest instructions), qemu
    /// (multi-threaded TCG throughput, noisy), all [default: all]. See below.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PLATFORM,...")]
    platform: Vec<PlatformArg>,

    /// Samples per measured point (each after warm-up), 1 to 64 (the most a guest's `runs=`
    /// takes): the hosted benchmark's --runs and the guests' `runs=`.
    #[arg(long, default_value_t = DEFAULT_RUNS, value_name = "N", value_parser = parse_runs)]
    runs: u32,

    /// Self-check (used by `cargo xtask test`): boot every qemu-icount point twice and require
    /// identical samples, then read every output file back and check it.
    #[arg(long)]
    check: bool,

    /// Kernel lock tracing in the images: off (as always), built (the images built
    /// with their `trace` feature into <target>/features-trace, booted with trace=0: the cost of
    /// the feature alone) or on (the same images booted with trace=1: every kernel entry writes
    /// a trace record). Every guest record carries it (`kernel_trace`); `bench compare` of an
    /// off run with an on run lines the same points up. Guest platforms only: hosted records
    /// stay untraced (`off`); no ARMv7 barrier traces unless off.
    #[arg(long, value_enum, default_value_t = KernelTrace::Off, value_name = "MODE")]
    kernel_trace: KernelTrace,
}

/// Where results go and how long runs are (every suite).
#[derive(Debug, Args, Clone, Default)]
pub struct OutOpts {
    /// Output directory. Default: a new folder per run, target/bench/runs/<UTC time>-<git
    /// revision>/, with target/bench/latest naming the newest run that produced records.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// Shorter runs: the hosted benchmark's --quick, no client-server runs under qemu (and,
    /// for the lock micro-benchmarks, shorter lock runs).
    #[arg(long)]
    quick: bool,
}

/// The memory suite's own options.
#[derive(Debug, Args, Clone, Default)]
pub struct MemoryOpts {
    /// Pager modes, comma-separated: percore (a pager per core), global (one pager on core 0
    /// for all), all [default: all].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PAGER,...")]
    pager: Vec<memory::PagerArg>,

    /// Pages per task of the outstanding-page sweep (1 to 1024): on 1 core under qemu-icount,
    /// with every core count on hosted [default: 50,100,200,500,1000]. The core sweep runs at
    /// 100 pages if listed, else at the smallest.
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = memory::parse_pages)]
    pages: Vec<u32>,
}

/// The redis suite's own options.
#[derive(Debug, Args, Clone)]
pub struct RedisOpts {
    /// Leave out the Linux + Redis baseline (built from Debian packages at bench time:
    /// apt-get download of the kernel and busybox-static; on x86_64 the host's redis-server, on
    /// ARMv7 the armhf redis-tools and its libraries, from a private apt state under
    /// <target>/linux-baseline/armv7/apt that leaves the host's apt configuration alone).
    #[arg(long)]
    no_linux: bool,

    /// Instead of the throughput points, soak the server: on each --arch, the network image
    /// with 2 cores and the first --lock (default clh) under three clients at once on every
    /// core's server for --soak-time (redis-benchmark -c 50 unpipelined, redis-benchmark -c 8
    /// -P 32, and a client that reconnects for every write), then every acknowledged write read
    /// back; results.json and report.md in a folder of its own under
    /// <target>/bench/redis-soak/runs/ (or --out). Takes --soak-time per architecture.
    #[arg(long)]
    soak: bool,

    /// With --soak: how long the clients run on each architecture, in seconds.
    #[arg(long, default_value_t = DEFAULT_SOAK_TIME, value_name = "SECONDS", requires = "soak",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    soak_time: u64,
}

/// The lock micro-benchmarks' own options.
#[derive(Debug, Args, Clone, Default)]
pub struct LocksOpts {
    /// Thread counts of the contended runs [default: 1, 2, 4, ... up to the CPUs].
    #[arg(long, value_name = "N,...", value_delimiter = ',')]
    threads: Vec<usize>,
}

/// `cargo xtask bench ipc`, and the options the memory suite and the old spelling share with it.
#[derive(Debug, Args, Clone)]
pub struct IpcArgs {
    #[command(flatten)]
    guests: GuestOpts,
    #[command(flatten)]
    samples: SampleOpts,
    #[command(flatten)]
    output: OutOpts,
}

/// `cargo xtask bench memory`.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    #[command(flatten)]
    run: IpcArgs,
    #[command(flatten)]
    memory: MemoryOpts,
}

/// `cargo xtask bench redis`.
#[derive(Debug, Args)]
pub struct RedisArgs {
    #[command(flatten)]
    guests: GuestOpts,
    #[command(flatten)]
    output: OutOpts,
    #[command(flatten)]
    redis: RedisOpts,
}

/// `cargo xtask bench locks`.
#[derive(Debug, Args)]
pub struct LocksArgs {
    #[command(flatten)]
    output: OutOpts,
    #[command(flatten)]
    locks: LocksOpts,
}

/// The spelling of a run before the suites were subcommands: `cargo xtask bench [--suite S]
/// [--host] ...`, every option of every suite at once. It keeps working for one release; the
/// run says how to spell it now.
#[derive(Debug, Args, Clone)]
#[command(
    next_help_heading = "Old spelling, for one release: cargo xtask bench [--suite S | --host] [OPTIONS]"
)]
pub struct OldSpelling {
    /// Old spelling of `cargo xtask bench locks`.
    #[arg(long)]
    host: bool,

    /// Old spelling of `cargo xtask bench <SUITE>`.
    #[arg(long, value_enum)]
    suite: Option<Suite>,

    #[command(flatten)]
    run: IpcArgs,
    #[command(flatten)]
    memory: MemoryOpts,
    #[command(flatten)]
    redis: RedisOpts,
    #[command(flatten)]
    locks: LocksOpts,
}

/// A run, whichever way it was spelt: the options every suite's code reads.
#[derive(Debug, Clone)]
pub struct RunArgs {
    host: bool,
    suite: Suite,
    lock: Vec<LockArg>,
    arch: Vec<ArchArg>,
    cores: Vec<u32>,
    timeout: u64,
    verbose: bool,
    platform: Vec<PlatformArg>,
    runs: u32,
    check: bool,
    kernel_trace: KernelTrace,
    out: Option<PathBuf>,
    quick: bool,
    pager: Vec<memory::PagerArg>,
    pages: Vec<u32>,
    no_linux: bool,
    soak: bool,
    soak_time: u64,
    threads: Vec<usize>,
}

impl Default for GuestOpts {
    fn default() -> Self {
        Self {
            lock: Vec::new(),
            arch: Vec::new(),
            cores: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            verbose: false,
        }
    }
}

impl Default for SampleOpts {
    fn default() -> Self {
        Self {
            platform: Vec::new(),
            runs: DEFAULT_RUNS,
            check: false,
            kernel_trace: KernelTrace::Off,
        }
    }
}

impl Default for RedisOpts {
    fn default() -> Self {
        Self {
            no_linux: false,
            soak: false,
            soak_time: DEFAULT_SOAK_TIME,
        }
    }
}

impl RunArgs {
    /// The options of one suite, the groups it does not take at their defaults.
    #[allow(clippy::too_many_arguments)]
    fn of(
        suite: Suite,
        host: bool,
        g: GuestOpts,
        s: SampleOpts,
        o: OutOpts,
        m: MemoryOpts,
        r: RedisOpts,
        l: LocksOpts,
    ) -> RunArgs {
        RunArgs {
            host,
            suite,
            lock: g.lock,
            arch: g.arch,
            cores: g.cores,
            timeout: g.timeout,
            verbose: g.verbose,
            platform: s.platform,
            runs: s.runs,
            check: s.check,
            kernel_trace: s.kernel_trace,
            out: o.out,
            quick: o.quick,
            pager: m.pager,
            pages: m.pages,
            no_linux: r.no_linux,
            soak: r.soak,
            soak_time: r.soak_time,
            threads: l.threads,
        }
    }
}

impl OldSpelling {
    /// The run, or `Err` when `--host` is given with an option the lock micro-benchmarks do
    /// not take, or `--threads` without `--host`.
    fn into_run(self) -> Result<RunArgs, String> {
        let g = &self.run.guests;
        let s = &self.run.samples;
        let others = !g.lock.is_empty()
            || !g.arch.is_empty()
            || !g.cores.is_empty()
            || !s.platform.is_empty()
            || s.check
            || s.kernel_trace != KernelTrace::Off
            || !self.memory.pager.is_empty()
            || !self.memory.pages.is_empty()
            || self.suite.is_some();
        if self.host && others {
            return Err(
                "--host (`cargo xtask bench locks`) takes only --out, --quick and --threads".into(),
            );
        }
        if !self.host && !self.locks.threads.is_empty() {
            return Err("--threads belongs to the lock micro-benchmarks: `cargo xtask bench locks --threads ...`".into());
        }
        Ok(RunArgs::of(
            self.suite.unwrap_or(Suite::Ipc),
            self.host,
            self.run.guests,
            self.run.samples,
            self.run.output,
            self.memory,
            self.redis,
            self.locks,
        ))
    }

    /// How this run is spelt now, for the note an old spelling prints.
    fn new_spelling(&self) -> &'static str {
        match (self.host, self.suite) {
            (true, _) => "cargo xtask bench locks",
            (false, Some(Suite::Memory)) => "cargo xtask bench memory",
            (false, Some(Suite::Redis)) => "cargo xtask bench redis",
            (false, _) => "cargo xtask bench ipc",
        }
    }
}

/// `--suite` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Suite {
    /// The kernel IPC benchmarks: Figures 1-3.
    Ipc,
    /// The memory benchmark: per-core vs global pagers, Figures 4-5.
    Memory,
    /// The network macro-benchmark: the kernel's Redis-protocol server under QEMU
    /// driven by redis-benchmark and YCSB workload A; throughput, utilisation and Xput per
    /// lock (the big-lock paper's Figures 3-4). Its results go to <target>/bench/redis/.
    Redis,
}

/// The most samples per point a guest takes (its `runs=`: `servers::image::bench::MAX_RUNS`).
pub const GUEST_MAX_RUNS: u32 = 64;

/// Parses `--runs`: 1 to [`GUEST_MAX_RUNS`].
fn parse_runs(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=GUEST_MAX_RUNS).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}` is not a sample count from 1 to {GUEST_MAX_RUNS} (a guest's `runs=` takes \
             at most {GUEST_MAX_RUNS}: servers::image::bench::MAX_RUNS)"
        )),
    }
}

/// The files written, by name.
pub const RESULTS_JSON: &str = "results.json";
/// The CSV file.
pub const RESULTS_CSV: &str = "results.csv";
/// The report.
pub const REPORT_MD: &str = "report.md";

/// The options of the tiny end-to-end configuration that `cargo xtask test` runs as
/// `bench:tiny`: lock `none` on both architectures, the `qemu-icount` and `hosted` platforms,
/// 1 core, 2 runs, the hosted benchmark's `--quick`, and `--check`.
pub const TINY: [&str; 13] = [
    "ipc",
    "--lock",
    "none",
    "--arch",
    "all",
    "--platform",
    "qemu-icount,hosted",
    "--cores",
    "1",
    "--runs",
    "2",
    "--quick",
    "--check",
];

/// The options of the memory suite's tiny end-to-end configuration that `cargo xtask test`
/// runs as `bench:memory-tiny`: lock `clh`; under `-icount` both architectures, 50 and 100
/// pages on 1 core and the 2-core IPC boot; hosted 1 and 2 cores at 50 and 100 pages; 2 runs,
/// and `--check`.
pub const MEMORY_TINY: [&str; 14] = [
    "memory",
    "--lock",
    "clh",
    "--arch",
    "all",
    "--platform",
    "qemu-icount,hosted",
    "--cores",
    "1,2",
    "--pages",
    "50,100",
    "--runs",
    "2",
    "--check",
];

/// The options of the redis suite's tiny end-to-end configuration that `cargo xtask test` runs
/// as `bench:redis-tiny`: locks none (1 core) and clh (1 and 2 cores) on both architectures,
/// and the Linux baseline, `--quick`.
pub const REDIS_TINY: [&str; 8] = [
    "redis", "--lock", "clh", "--arch", "all", "--cores", "1,2", "--quick",
];

/// The core counts `lock` runs on in the suites whose cores share kernel objects (the memory
/// suite's pagers, the redis suite's driver and per-core stacks): all of `cores`, but `none`
/// only on 1 core (no lock cannot protect what cores share; the guest refuses it).
pub fn cores_for(lock: &str, cores: &[u32]) -> Vec<u32> {
    cores
        .iter()
        .copied()
        .filter(|&c| lock != "none" || c == 1)
        .collect()
}

/// Runs `cargo xtask bench` (a run, or the subcommand given).
pub fn run(root: &Path, args: &BenchArgs) -> ExitCode {
    match &args.command {
        Some(BenchCommand::Compare(c)) => compare::run(c),
        Some(BenchCommand::Report(r)) => rerender::run(r),
        _ => {
            if args.command.is_none() {
                eprintln!(
                    "note: this run is spelt `{}` now; `cargo xtask bench` with --suite, --host or \
                     no suite keeps working for one release",
                    args.run.new_spelling()
                );
            }
            match args.run_args() {
                Some(Ok(run)) => run_benchmarks(root, &run),
                Some(Err(e)) => {
                    eprintln!("cargo xtask bench: {e}");
                    ExitCode::from(2)
                }
                None => ExitCode::SUCCESS,
            }
        }
    }
}

/// `--out DIR` made absolute (relative to the current directory).
pub fn absolute(dir: &Path) -> PathBuf {
    if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(dir))
            .unwrap_or_else(|_| dir.to_path_buf())
    }
}

/// The bench root: `<target>/bench`.
pub fn bench_root(root: &Path) -> PathBuf {
    host_env::target_dir(root).join("bench")
}

/// Where this run writes: `--out DIR` (created, and checked writable), or a new folder under
/// `<target>/bench/runs/` named after `unix` and `revision`.
fn destination(
    root: &Path,
    out: Option<&Path>,
    unix: u64,
    revision: &str,
) -> Result<Destination, String> {
    match out {
        Some(dir) => {
            let dir = absolute(dir);
            layout::ensure_writable(&dir).map_err(|e| format!("--out: {e}"))?;
            Ok(Destination::Explicit(dir))
        }
        None => {
            let root = bench_root(root);
            let dir = layout::create_run_dir(&root, &layout::run_name(unix, revision))?;
            Ok(Destination::Run { root, dir })
        }
    }
}

/// A run: the host lock benchmarks (`--host`) or the kernel benchmarks. Every option is checked
/// before anything is built.
fn run_benchmarks(root: &Path, args: &RunArgs) -> ExitCode {
    if args.host {
        let out_dir = args
            .out
            .as_deref()
            .map(absolute)
            .unwrap_or_else(|| bench_root(root));
        if let Err(e) = layout::ensure_writable(&out_dir) {
            eprintln!("cargo xtask bench: --out: {e}");
            return ExitCode::from(2);
        }
        return host_locks::run(root, &out_dir, &args.threads, args.quick);
    }
    let mut plan = match Plan::new(&args.lock, &args.arch, &args.platform, &args.cores) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cargo xtask bench: {e}");
            return ExitCode::from(2);
        }
    };
    if args.soak && args.suite != Suite::Redis {
        eprintln!("cargo xtask bench: --soak belongs to the redis suite: `cargo xtask bench redis --soak`");
        return ExitCode::from(2);
    }
    let sweep = match args.suite {
        Suite::Redis => {
            if !args.pager.is_empty() || !args.pages.is_empty() {
                eprintln!(
                    "cargo xtask bench: --pager and --pages belong to the memory suite, not redis"
                );
                return ExitCode::from(2);
            }
            if args.kernel_trace != KernelTrace::Off {
                eprintln!("cargo xtask bench: --kernel-trace is not supported by the redis suite");
                return ExitCode::from(2);
            }
            return redis::run(root, args, &plan);
        }
        Suite::Memory => {
            plan.locks = memory::locks(&plan, !args.lock.is_empty());
            plan.baseline_added = false;
            Some(memory::Sweep::new(&args.pager, &args.pages))
        }
        Suite::Ipc if !args.pager.is_empty() || !args.pages.is_empty() => {
            eprintln!(
                "cargo xtask bench: --pager and --pages belong to the memory suite: `cargo xtask \
                 bench memory`"
            );
            return ExitCode::from(2);
        }
        Suite::Ipc => None,
    };
    if args.kernel_trace != KernelTrace::Off
        && plan.platforms.iter().all(|p| *p == Platform::Hosted)
    {
        eprintln!(
            "cargo xtask bench: --kernel-trace {} traces the kernel in the QEMU images, and \
             --platform hosted boots none: add qemu-icount or qemu",
            args.kernel_trace.name()
        );
        return ExitCode::from(2);
    }
    if let Err(e) = plan.check_boards(|m| {
        qemu_runner::board::for_qemu_machine(m.name()).map(|b| (b.name.clone(), b.cores))
    }) {
        eprintln!("cargo xtask bench: {e}");
        return ExitCode::from(2);
    }
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let revision = layout::git_revision(root);
    let dest = match destination(root, args.out.as_deref(), unix, &revision) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("cargo xtask bench: {e}");
            return ExitCode::from(2);
        }
    };
    match kernel_benchmarks(root, args, &plan, sweep.as_ref(), &dest, &revision) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("cargo xtask bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What a whole run collected.
#[derive(Debug, Default)]
struct Collected {
    /// Converted records.
    records: Vec<Record>,
    /// Notes for the report.
    notes: Vec<String>,
    /// Producers or tools that are missing: nothing could be measured there.
    missing: Vec<String>,
    /// Errors: failed runs, bad records.
    errors: Vec<String>,
}

/// Measures, writes every file and prints the summary. `Ok(false)`: something failed or was
/// missing (the files are still written).
fn kernel_benchmarks(
    root: &Path,
    args: &RunArgs,
    plan: &Plan,
    sweep: Option<&memory::Sweep>,
    dest: &Destination,
    revision: &str,
) -> Result<bool, String> {
    let start = Instant::now();
    let out_dir = dest.dir();
    println!("bench: results go to {}", out_dir.display());
    if let Some(sw) = sweep {
        println!(
            "bench: memory suite: pagers {}; core sweep at {} pages per task; page sweep {} \
             (qemu-icount{}, hosted)",
            sw.pagers.join(","),
            sw.core_pages,
            sw.pages
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            if args.quick { ": not with --quick" } else { "" }
        );
    }
    let locks: Vec<&str> = plan.locks.iter().map(|l| l.name()).collect();
    println!(
        "bench: locks {}{}; arch {}; platforms {}; cores {}; {} runs per point{}",
        locks.join(","),
        if plan.baseline_added {
            " (none added: it is the baseline of the overheads)"
        } else {
            ""
        },
        plan.archs
            .iter()
            .map(|a| qemu::arch_name(*a))
            .collect::<Vec<_>>()
            .join(","),
        plan.platforms
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(","),
        plan.cores
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(","),
        args.runs,
        if args.quick { ", quick" } else { "" }
    );
    if args.kernel_trace != KernelTrace::Off {
        println!(
            "bench: kernel tracing {}: {}",
            args.kernel_trace.name(),
            args.kernel_trace.describe()
        );
    }
    let machine = machine::detect(root);
    println!(
        "bench: machine: {} ({} host cores), {}, {}",
        machine.cpu, machine.host_cores, machine.qemu, machine.rustc
    );
    let load_start = load_average();
    let mut c = Collected::default();
    if plan.baseline_added {
        c.notes.push(
            "`none` was not asked for; it was measured as the baseline of the overheads.".into(),
        );
    }
    // The memory suite's qemu boots stop at the host's cores (memory::Sweep::qemu_max_cores).
    let sweep = sweep.map(|s| memory::Sweep {
        qemu_max_cores: machine.host_cores.max(1) as u32,
        ..s.clone()
    });
    let sweep = sweep.as_ref();
    if let Some(s) = sweep {
        let left_out: Vec<String> = plan
            .cores
            .iter()
            .filter(|&&n| n > s.qemu_max_cores)
            .map(u32::to_string)
            .collect();
        if plan.platforms.contains(&Platform::Qemu) && !left_out.is_empty() {
            c.notes.push(format!(
                "qemu: {} cores not booted: more than this host's {} (an oversubscribed \
                 multi-threaded TCG guest's times measure the host's scheduler).",
                left_out.join(", "),
                s.qemu_max_cores
            ));
        }
    }
    let hosted = steps::hosted_ready(root, plan, sweep.is_some(), &mut c);
    let archs = steps::guest_archs(root, plan, &mut c);
    let steps = steps::plan_steps(plan, args, sweep, hosted, &archs);
    // The last step writes the files.
    let mut progress = host_env::progress::Progress::new("bench", steps.len() + 1);
    steps::execute(
        root,
        args,
        plan,
        &steps,
        &machine,
        sweep,
        out_dir,
        &mut progress,
        &mut c,
    );
    if args.kernel_trace != KernelTrace::Off {
        let mut note = format!(
            "Kernel tracing `{}`: every guest record's {}.",
            args.kernel_trace.name(),
            args.kernel_trace.describe()
        );
        if plan.platforms.contains(&Platform::Hosted) {
            note.push_str(" Hosted records are not traced (`kernel_trace` off).");
        }
        if sweep.is_none()
            && !args.quick
            && plan.platforms.contains(&Platform::QemuIcount)
            && archs.contains(&qemu::Arch::Armv7)
        {
            note.push_str(
                " The ARMv7 barrier traces are left out (they count the untraced kernel's \
                 barriers: run without --kernel-trace).",
            );
        }
        c.notes.push(note);
    }
    if plan.platforms.contains(&Platform::Qemu) {
        c.notes.push(
            "`qemu` figures are wall-clock throughput under multi-threaded TCG on a shared \
             machine: noisy, and bounded by the host's cores."
                .into(),
        );
    }
    c.records.sort_by(|a, b| {
        let key = |r: &Record| {
            (
                Platform::ALL.iter().position(|p| p.name() == r.platform),
                r.arch.clone(),
                r.board.clone(),
                r.bench.clone(),
                r.variant.clone(),
                plan::lock_rank(&r.lock),
                r.cores,
                r.clients,
                r.pages,
            )
        };
        key(a).cmp(&key(b))
    });
    let mut other_runs: Vec<String> = c
        .records
        .iter()
        .filter(|r| r.runs > 0 && r.runs != args.runs as usize)
        .map(|r| format!("{} {} ({} samples)", r.platform, r.board, r.runs))
        .collect();
    other_runs.dedup();
    if !other_runs.is_empty() {
        c.notes.push(format!(
            "--runs {} asked for; some producers take their own number of samples: {}.",
            args.runs,
            other_runs.join(", ")
        ));
    }
    let retried: u32 = c.records.iter().map(|r| r.retries).sum();
    if retried > 0 {
        c.notes.push(format!(
            "{retried} malformed guest run(s) were retried (the `retries` field of each record)."
        ));
    }
    for m in &c.missing {
        c.notes.push(format!("NOT MEASURED: {m}"));
    }
    for e in &c.errors {
        c.notes
            .push(format!("ERROR: {}", e.lines().next().unwrap_or("")));
    }

    c.notes.push(format!(
        "Host load average (1 min) {load_start} at the start, {} at the end: other work on the \
         host disturbs the hosted and qemu figures (not the qemu-icount ones).",
        load_average()
    ));
    let seconds = start.elapsed().as_secs_f64();
    let command = format!(
        "cargo xtask bench {}",
        std::env::args().skip(2).collect::<Vec<_>>().join(" ")
    );
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let ctx = report::Context {
        command: command.trim_end().to_owned(),
        when: utc(unix),
        notes: c.notes.clone(),
        machine: format!(
            "{}, {} host cores, {}, {}",
            machine.cpu, machine.host_cores, machine.qemu, machine.rustc
        ),
        seconds,
        kernel_trace: args.kernel_trace,
    };
    let doc = Results {
        generated_by: generated_by(unix, seconds, revision),
        machine: json!(machine),
        plan: json!({
            "suite": if sweep.is_some() { "memory" } else { "ipc" },
            "pagers": sweep.map(|s| s.pagers.clone()),
            "pages": sweep.map(|s| s.pages.clone()),
            "locks": locks,
            "baseline_added": plan.baseline_added,
            "arch": plan.archs.iter().map(|a| qemu::arch_name(*a)).collect::<Vec<_>>(),
            "platforms": plan.platforms.iter().map(|p| p.name()).collect::<Vec<_>>(),
            "cores": plan.cores,
            "runs": args.runs,
            "quick": args.quick,
            "kernel_trace": args.kernel_trace.name(),
        }),
        method: serde_json::Value::Null,
        notes: c.notes.clone(),
        missing: c.missing.iter().map(|m| json!(m)).collect(),
        errors: c.errors.iter().map(|e| json!(e)).collect(),
        records: c.records.clone(),
        summary: Vec::new(),
    };
    let targets = match sweep {
        Some(_) => memory::targets(&c.records),
        None => report::targets(&c.records),
    };
    if dest.keeps_previous(c.records.len()) {
        print_summary(&c, &targets, out_dir, &[]);
        println!(
            "\nbench: no records were measured: {} keeps the results of the earlier run \
             (nothing written)",
            out_dir.display()
        );
        return Ok(false);
    }
    println!(
        "{}",
        progress.next(&format!(
            "writing {RESULTS_JSON}, {RESULTS_CSV}, the figures and {REPORT_MD}"
        ))
    );
    let outputs = check::Outputs::of(sweep.is_some());
    for name in outputs.files() {
        let _ = fs::remove_file(out_dir.join(name));
    }
    let write = |name: &str, text: String| {
        let path = out_dir.join(name);
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write(RESULTS_JSON, doc.to_json())?;
    write(RESULTS_CSV, csv::write(&c.records))?;
    let (figures, report) = match sweep {
        Some(_) => (
            memory::write_figures(out_dir, &c.records)?,
            memory::render(&c.records, &ctx),
        ),
        None => (
            plot::write_all(out_dir, &c.records)?,
            report::render(&c.records, &ctx),
        ),
    };
    write(REPORT_MD, report)?;

    print_summary(&c, &targets, out_dir, &figures);
    let mut ok = c.errors.is_empty() && c.missing.is_empty();
    if let Destination::Run { root, dir } = dest {
        if let Err(e) = publish(root, dir, c.records.len()) {
            println!("bench: ERROR: {e}");
            ok = false;
        }
    }
    if args.check {
        match outputs.check(out_dir, c.records.len()) {
            Ok(summary) => println!("bench: check: {summary}"),
            Err(e) => {
                println!("bench: check FAILED: {e}");
                ok = false;
            }
        }
    }
    println!(
        "bench: {} records in {:.0} s{}",
        c.records.len(),
        start.elapsed().as_secs_f64(),
        if ok {
            ""
        } else {
            " (with errors or missing parts, listed above)"
        }
    );
    Ok(ok)
}

/// Switches `root/latest` to the run's folder `dir` if the run produced records, and says what
/// `latest` names now.
pub fn publish(root: &Path, dir: &Path, records: usize) -> Result<(), String> {
    let latest = root.join(layout::LATEST);
    if records == 0 {
        match layout::read_latest(root) {
            Some(prev) => println!(
                "bench: no records: {} still names {} (this run's folder: {})",
                latest.display(),
                prev.display(),
                dir.display()
            ),
            None => println!(
                "bench: no records: {} not made (this run's folder: {})",
                latest.display(),
                dir.display()
            ),
        }
        return Ok(());
    }
    let kind = layout::switch_latest(root, dir)?;
    println!(
        "bench: {} -> {}{}",
        latest.display(),
        dir.strip_prefix(root).unwrap_or(dir).display(),
        match kind {
            layout::LatestKind::Symlink => "",
            layout::LatestKind::File => " (a file naming the run: no symbolic links here)",
        }
    );
    Ok(())
}

/// Prints what was measured, the targets, the files and what went wrong.
fn print_summary(
    c: &Collected,
    targets: &[report::TargetLine],
    out_dir: &Path,
    figures: &[PathBuf],
) {
    println!("\nbench: results (mean ± std dev):");
    for r in &c.records {
        println!(
            "  {:<11} {:<6} {:<9} {:<24} {:<9} {:<6} cores {} {}{:>10} ± {:<8} {}",
            r.platform,
            r.arch,
            r.board,
            r.bench,
            r.variant,
            r.lock,
            r.cores,
            if r.pages > 0 {
                format!("pages {} ", r.pages)
            } else if r.clients > 0 {
                format!("clients {} ", r.clients)
            } else {
                String::new()
            },
            report::fmt_num(r.mean),
            report::fmt_num(r.stddev),
            r.unit
        );
    }
    println!("\nbench: targets (recorded, not asserted):");
    for t in targets {
        println!(
            "  [{}] {} ({}): {}",
            t.verdict.word(),
            t.target,
            t.place,
            t.value
        );
    }
    if !figures.is_empty() {
        println!("\nbench: written:");
        for name in [RESULTS_JSON, RESULTS_CSV, REPORT_MD] {
            println!("  {}", out_dir.join(name).display());
        }
        for f in figures {
            println!("  {}", f.display());
        }
    }
    for m in &c.missing {
        println!("\nbench: MISSING: {m}");
    }
    for e in &c.errors {
        println!("\nbench: ERROR: {e}");
    }
}

/// The 1-minute load average (`/proc/loadavg`), or `unknown`.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// `YYYY-MM-DD HH:MM UTC` of a Unix time.
/// Where and when a results file is made: by this command line, at `unix`, in `seconds`, at
/// the checkout's `revision`.
pub(crate) fn generated_by(unix: u64, seconds: f64, revision: &str) -> GeneratedBy {
    GeneratedBy {
        command: format!(
            "cargo xtask bench {}",
            std::env::args().skip(2).collect::<Vec<_>>().join(" ")
        ),
        unix_time: unix,
        utc: utc(unix),
        seconds: seconds.round(),
        revision: revision.to_owned(),
    }
}

pub(crate) fn utc(secs: u64) -> String {
    let (year, month, day, hour, minute, _) = layout::civil(secs);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} UTC")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(subcommand)]
        command: Top,
    }

    #[derive(Debug, Subcommand)]
    enum Top {
        Bench(BenchArgs),
    }

    /// `cargo xtask bench ARGS...` parsed.
    fn parse<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<BenchArgs, clap::Error> {
        let Top::Bench(b) =
            Cli::try_parse_from(["xtask", "bench"].into_iter().chain(args))?.command;
        Ok(b)
    }

    #[test]
    fn dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_795_323_600), "2026-11-22 05:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
    }

    /// The run `words` ask for.
    fn run_of<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<RunArgs, String> {
        parse(words)
            .map_err(|e| e.to_string())?
            .run_args()
            .expect("a run")
    }

    #[test]
    fn options_parse() {
        let args = run_of(["ipc", "--lock=clh"]).unwrap();
        assert_eq!((args.suite, args.host), (Suite::Ipc, false));
        assert_eq!(args.lock, vec![LockArg::Lock(qemu_runner::qemu::Lock::Clh)]);
        assert_eq!((args.runs, args.timeout), (16, 300));
        // bench:tiny's options.
        let args = run_of(TINY).unwrap();
        assert_eq!(
            args.lock,
            vec![LockArg::Lock(qemu_runner::qemu::Lock::None)]
        );
        assert_eq!(
            args.platform,
            vec![PlatformArg::QemuIcount, PlatformArg::Hosted]
        );
        assert_eq!((args.runs, args.quick, args.check), (2, true, true));
        assert!(run_of(["ipc", "--lock", "bogus"]).is_err());
        // --smp is --cores.
        assert_eq!(run_of(["ipc", "--smp", "1,2"]).unwrap().cores, vec![1, 2]);
        // Each suite takes its own options only.
        assert!(run_of(["ipc", "--pages", "50"]).is_err());
        assert!(run_of(["ipc", "--threads", "2"]).is_err());
        assert!(run_of(["locks", "--lock", "clh"]).is_err());
        assert!(run_of(["redis", "--kernel-trace", "on"]).is_err());
        assert!(run_of(["redis", "--pager", "global"]).is_err());
        let locks = run_of(["locks", "--threads", "1,2", "--quick"]).unwrap();
        assert!(locks.host && locks.quick);
        assert_eq!(locks.threads, vec![1, 2]);
        let soak = run_of(["redis", "--soak", "--soak-time", "15"]).unwrap();
        assert_eq!(
            (soak.suite, soak.soak, soak.soak_time),
            (Suite::Redis, true, 15)
        );
        assert!(
            run_of(["redis", "--soak-time", "15"]).is_err(),
            "--soak-time needs --soak"
        );
    }

    #[test]
    fn the_old_spelling_keeps_working() {
        let args = parse(["--lock=clh"]).unwrap();
        assert!(args.command.is_none());
        assert_eq!(args.run.new_spelling(), "cargo xtask bench ipc");
        assert_eq!(
            run_of(["--lock=clh"]).unwrap().lock,
            vec![LockArg::Lock(qemu_runner::qemu::Lock::Clh)]
        );
        let memory = run_of(["--suite", "memory", "--pager", "global"]).unwrap();
        assert_eq!(
            (memory.suite, memory.pager.clone()),
            (Suite::Memory, vec![memory::PagerArg::Global])
        );
        assert_eq!(
            parse(["--suite", "redis"]).unwrap().run.new_spelling(),
            "cargo xtask bench redis"
        );
        assert_eq!(
            parse(["--host"]).unwrap().run.new_spelling(),
            "cargo xtask bench locks"
        );
        assert!(run_of(["--host", "--threads", "1,2"]).unwrap().host);
        assert!(run_of(["--host", "--lock", "clh"])
            .unwrap_err()
            .contains("--host"));
        assert!(run_of(["--host", "--pages", "50"]).is_err());
        assert!(run_of(["--threads", "2"])
            .unwrap_err()
            .contains("bench locks"));
        assert!(parse(["--suite", "bogus"]).is_err());
        // The IPC suite is the default.
        assert_eq!(run_of([]).unwrap().suite, Suite::Ipc);
    }

    #[test]
    fn kernel_trace_option() {
        assert_eq!(run_of(["ipc"]).unwrap().kernel_trace, KernelTrace::Off);
        for (word, t) in [
            ("off", KernelTrace::Off),
            ("built", KernelTrace::Built),
            ("on", KernelTrace::On),
        ] {
            assert_eq!(
                run_of(["ipc", "--kernel-trace", word])
                    .unwrap()
                    .kernel_trace,
                t
            );
            assert_eq!(t.name(), word);
        }
        assert!(run_of(["ipc", "--kernel-trace", "yes"]).is_err());
        // Checked before anything is built: hosted alone boots no image to trace.
        let root = host_env::workspace_root();
        let args = parse(["ipc", "--kernel-trace", "on", "--platform", "hosted"]).unwrap();
        assert_eq!(run(&root, &args), ExitCode::from(2));
    }

    #[test]
    fn memory_suite_options() {
        let args = run_of(MEMORY_TINY).unwrap();
        assert_eq!(args.suite, Suite::Memory);
        assert_eq!(args.pages, vec![50, 100]);
        assert!(args.check);
        let args = run_of(["memory", "--pager", "global"]).unwrap();
        assert_eq!(args.pager, vec![memory::PagerArg::Global]);
        assert!(run_of(["memory", "--pages", "2000"])
            .unwrap_err()
            .contains("1 to 1024"));
    }

    #[test]
    fn compare_is_a_subcommand_and_runs_need_none() {
        let args = parse(["compare", "a", "target/bench"]).unwrap();
        assert!(matches!(args.command, Some(BenchCommand::Compare(_))));
        let args = parse(["compare", "a", "b", "--changed"]).unwrap();
        assert!(matches!(args.command, Some(BenchCommand::Compare(_))));
        assert!(parse(["compare", "a"]).is_err(), "two sides are needed");
        assert!(
            parse(["--lock", "clh", "compare", "a", "b"]).is_err(),
            "run options do not go with compare"
        );
    }

    #[test]
    fn runs_are_checked_against_the_guests_limit() {
        assert_eq!(run_of(["ipc", "--runs", "64"]).unwrap().runs, 64);
        assert_eq!(run_of(["memory", "--runs", "1"]).unwrap().runs, 1);
        for bad in ["0", "65", "1000", "x"] {
            let err = run_of(["ipc", "--runs", bad]).unwrap_err();
            assert!(err.contains("1 to 64"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_runs_limit_is_the_guests() {
        // The guests' limit is servers::image::bench::MAX_RUNS (not a dependency of xtask: read
        // from its source).
        let root = host_env::workspace_root();
        let abi = fs::read_to_string(root.join("servers/src/image.rs")).unwrap();
        let value = |name: &str| -> u32 {
            let line = abi
                .lines()
                .find(|l| {
                    l.trim_start()
                        .starts_with(&format!("pub const {name}: usize ="))
                })
                .unwrap_or_else(|| panic!("no {name} in servers/src/image.rs"));
            line.split('=')
                .nth(1)
                .unwrap()
                .trim()
                .trim_end_matches(';')
                .parse()
                .unwrap()
        };
        assert_eq!(GUEST_MAX_RUNS, value("MAX_RUNS"));
        assert_eq!(run_of([]).unwrap().runs, value("DEFAULT_RUNS"));
    }
}
