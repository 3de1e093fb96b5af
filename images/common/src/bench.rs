//! The image side of the kernel IPC benchmarks (`mode=bench bench=<kind>`): the command-line
//! words, the collector of the samples user programs report, and the records the image prints
//! (`docs/bench-protocol.md`).
//!
//! # Why the image prints the records
//! A user program's console line goes through the `PUT` debug call and comes out prefixed with
//! its core and thread, and a throughput benchmark has one client per core whose counts must be
//! summed per repetition. So the bench programs only report numbers (debug call `BENCH`: record,
//! sample index or parameter, value), which [`Collector`] adds up without taking the kernel
//! lock, and once every program reported DONE the image prints each [`Record`] as one JSON
//! line between `BENCH-JSON-BEGIN` and `BENCH-JSON-END`. The formatting is `core::fmt` only (no
//! allocation) and is unit-tested on the host.

use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use kernel::{Error, Regs};
use protocol::record::{RecordHead, RecordLine};
use servers::image::bench::{
    param, record, BATCH, DEFAULT_RUNS, LOCK_BATCH, MAX_RUNS, OVERHEAD_TRIES, WARMUP,
    WARMUP_BATCHES, WARMUP_INTERVALS,
};
use servers::image::memory::{self, Spec};

/// The benchmark kinds `bench=` accepts, for messages.
pub const KINDS: &str = "ipc, multicore, clientserver, memory";
/// Client counts `clients=` accepts.
pub const MAX_CLIENTS: usize = 8;

/// Whether client-server clients share one server or each has its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// All clients call one server on core 0.
    Shared,
    /// Client `i` calls its own server on its own core.
    Dedicated,
}

impl Variant {
    /// The record's `variant`.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Shared => "shared",
            Variant::Dedicated => "dedicated",
        }
    }
}

/// What `mode=bench` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One-way and round-trip IPC on core 0, same and cross address space.
    Ipc,
    /// One ping-pong pair per core, round trips per interval.
    Multicore,
    /// `clients` clients (client `i` on core `i % cores`) calling one shared server or each
    /// its own.
    ClientServer {
        /// Client threads.
        clients: usize,
        /// Shared or dedicated servers.
        variant: Variant,
    },
    /// The memory system (`servers::memory`): per-core or global pagers, `pages` per task.
    /// Its `lock` is the kernel's (`lock=`), filled in by the command-line parser.
    Memory(Spec),
}

/// A bad benchmark word on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecError<'a> {
    /// `mode=bench` without `bench=`.
    Missing,
    /// An unknown `bench=` value.
    Unknown(&'a str),
    /// A `clients=` value that is not 1..=8.
    Clients(&'a str),
    /// A `variant=` value that is not `shared` or `dedicated`.
    Variant(&'a str),
    /// A `runs=` value that is not 1..=64.
    Runs(&'a str),
    /// A `pager=` value that is not `percore` or `global`.
    Pager(&'a str),
    /// An `alloc=` value that is not `avl` or `buddy`.
    Alloc(&'a str),
    /// A `nodes=` value that is not 1..=4.
    Nodes(&'a str),
    /// A `pages=` value that is not 1..=1024.
    Pages(&'a str),
}

impl fmt::Display for SpecError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::Missing => write!(f, "mode=bench needs bench=<kind>, one of {KINDS}"),
            SpecError::Unknown(v) => {
                write!(f, "unknown benchmark bench=\"{v}\"; valid ones: {KINDS}")
            }
            SpecError::Clients(v) => write!(
                f,
                "clients=\"{v}\" is not a client count from 1 to {MAX_CLIENTS}"
            ),
            SpecError::Variant(v) => write!(
                f,
                "variant=\"{v}\" is not a client-server variant; valid ones: shared, dedicated"
            ),
            SpecError::Runs(v) => {
                write!(f, "runs=\"{v}\" is not a sample count from 1 to {MAX_RUNS}")
            }
            SpecError::Pager(v) => write!(
                f,
                "pager=\"{v}\" is not a pager mode; valid ones: percore, global"
            ),
            SpecError::Alloc(v) => write!(
                f,
                "alloc=\"{v}\" is not an allocator; valid ones: avl, buddy"
            ),
            SpecError::Nodes(v) => write!(
                f,
                "nodes=\"{v}\" is not a memory-node count from 1 to {}",
                memory::MAX_NODES
            ),
            SpecError::Pages(v) => write!(
                f,
                "pages=\"{v}\" is not a page count from 1 to {}",
                memory::MAX_PAGES
            ),
        }
    }
}

/// Parses `runs=` (samples per record, default 16) through `value`, which looks a
/// command-line key up.
pub fn parse_runs<'a>(value: impl Fn(&str) -> Option<&'a str>) -> Result<usize, SpecError<'a>> {
    match value("runs") {
        None => Ok(DEFAULT_RUNS),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_RUNS).contains(&n) => Ok(n),
            _ => Err(SpecError::Runs(v)),
        },
    }
}

impl Kind {
    /// Parses `bench=`, `clients=` and `variant=` (the latter two for `clientserver` only;
    /// defaults: 1 client, shared) through `value`, which looks a command-line key up.
    pub fn parse<'a>(value: impl Fn(&str) -> Option<&'a str>) -> Result<Kind, SpecError<'a>> {
        match value("bench") {
            None => Err(SpecError::Missing),
            Some("ipc") => Ok(Kind::Ipc),
            Some("multicore") => Ok(Kind::Multicore),
            Some("clientserver") => {
                let clients = match value("clients") {
                    None => 1,
                    Some(v) => match v.parse::<usize>() {
                        Ok(n) if (1..=MAX_CLIENTS).contains(&n) => n,
                        _ => return Err(SpecError::Clients(v)),
                    },
                };
                let variant = match value("variant") {
                    None | Some("shared") => Variant::Shared,
                    Some("dedicated") => Variant::Dedicated,
                    Some(v) => return Err(SpecError::Variant(v)),
                };
                Ok(Kind::ClientServer { clients, variant })
            }
            Some("memory") => {
                let number = |key: &str, max: usize, err: fn(&'a str) -> SpecError<'a>, default| {
                    match value(key) {
                        None => Ok(default),
                        Some(v) => match v.parse::<usize>() {
                            Ok(n) if (1..=max).contains(&n) => Ok(n),
                            _ => Err(err(v)),
                        },
                    }
                };
                let global = match value("pager") {
                    None | Some("percore") => false,
                    Some("global") => true,
                    Some(v) => return Err(SpecError::Pager(v)),
                };
                let buddy = match value("alloc") {
                    None | Some("avl") => false,
                    Some("buddy") => true,
                    Some(v) => return Err(SpecError::Alloc(v)),
                };
                Ok(Kind::Memory(Spec {
                    global,
                    buddy,
                    nodes: number("nodes", memory::MAX_NODES, SpecError::Nodes, 1)?,
                    pages: number(
                        "pages",
                        memory::MAX_PAGES,
                        SpecError::Pages,
                        memory::DEFAULT_PAGES,
                    )?,
                    lock: 0,
                }))
            }
            Some(other) => Err(SpecError::Unknown(other)),
        }
    }

    /// The kind as one word (0 stands for "no benchmark"), for a static an image shares
    /// between cores; [`Kind::from_word`] reverses it.
    pub fn to_word(kind: Option<Kind>) -> usize {
        match kind {
            None => 0,
            Some(Kind::Ipc) => 1,
            Some(Kind::Multicore) => 2,
            Some(Kind::ClientServer { clients, variant }) => {
                16 + 2 * clients + usize::from(variant == Variant::Dedicated)
            }
            Some(Kind::Memory(spec)) => MEMORY_WORD + spec.to_word(),
        }
    }

    /// The kind [`Kind::to_word`] made `w` from.
    pub fn from_word(w: usize) -> Option<Kind> {
        match w {
            1 => Some(Kind::Ipc),
            2 => Some(Kind::Multicore),
            w if w >= MEMORY_WORD => Spec::from_word(w - MEMORY_WORD).map(Kind::Memory),
            w if w >= 16 => Some(Kind::ClientServer {
                clients: (w - 16) / 2,
                variant: if w % 2 == 1 {
                    Variant::Dedicated
                } else {
                    Variant::Shared
                },
            }),
            _ => None,
        }
    }

    /// Whether every core takes part (the root task releases the other cores); the IPC
    /// benchmark keeps them asleep, so nothing but core 0 runs.
    pub fn uses_all_cores(self) -> bool {
        !matches!(self, Kind::Ipc)
    }

    /// Whether threads of different cores share a kernel object on `cores` cores (the shared
    /// server's endpoint; the memory system's address space, which pagers on every core map
    /// into), which the `none` strategy's contract forbids.
    pub fn shares_objects_across_cores(self, cores: usize) -> bool {
        cores > 1
            && matches!(
                self,
                Kind::ClientServer {
                    clients: 2..,
                    variant: Variant::Shared
                } | Kind::Memory(_)
            )
    }
}

/// [`Kind::to_word`] of the memory benchmark: this plus the spec's word (above every other
/// kind's word, and within 32 bits: the spec's word is below 2^24).
const MEMORY_WORD: usize = 1 << 24;

/// What the image tells the records about the run.
#[derive(Clone, Copy, Debug)]
pub struct RunInfo {
    /// The kernel's lock as booted (`clh`, `ticket`, `fine`, `rtm`, `none`).
    pub lock: &'static str,
    /// Cores the kernel runs on.
    pub cores: usize,
    /// The counter user programs read (`tsc`, `pmccntr`, `debugcall`).
    pub counter: &'static str,
    /// Its frequency in Hz (0: unknown).
    pub counter_hz: u64,
    /// Throughput benchmarks: the sampling interval in counter ticks.
    pub interval_ticks: u64,
    /// Samples per record (`runs=`).
    pub runs: usize,
}

/// The benchmark samples and parameters user programs report, per record.
pub struct Collector {
    samples: [[AtomicU64; MAX_RUNS]; record::COUNT],
    /// Sample reports received per record (all clients together).
    reports: [AtomicU32; record::COUNT],
    overhead: [AtomicU64; record::COUNT],
    read_cost: [AtomicU64; record::COUNT],
    extra: [[AtomicU64; param::EXTRAS]; record::COUNT],
}

impl Collector {
    /// An empty collector.
    pub const fn new() -> Self {
        Self {
            samples: [const { [const { AtomicU64::new(0) }; MAX_RUNS] }; record::COUNT],
            reports: [const { AtomicU32::new(0) }; record::COUNT],
            overhead: [const { AtomicU64::new(0) }; record::COUNT],
            read_cost: [const { AtomicU64::new(0) }; record::COUNT],
            extra: [const { [const { AtomicU64::new(0) }; param::EXTRAS] }; record::COUNT],
        }
    }

    /// Takes one report: sample `slot` of record `rec` grows by `value`, or parameter `slot`
    /// becomes (at least) `value`.
    pub fn report(&self, rec: usize, slot: usize, value: u64) -> Result<(), Error> {
        if rec >= record::COUNT {
            return Err(Error::InvalidArgument);
        }
        match slot {
            s if s < MAX_RUNS => {
                self.samples[rec][s].fetch_add(value, Ordering::Relaxed);
                self.reports[rec].fetch_add(1, Ordering::AcqRel);
            }
            param::OVERHEAD => {
                self.overhead[rec].fetch_max(value, Ordering::Relaxed);
            }
            param::READ_COST => {
                self.read_cost[rec].fetch_max(value, Ordering::Relaxed);
            }
            s if (param::EXTRA..param::EXTRA + param::EXTRAS).contains(&s) => {
                self.extra[rec][s - param::EXTRA].fetch_add(value, Ordering::Relaxed);
            }
            _ => return Err(Error::InvalidArgument),
        }
        Ok(())
    }

    /// Serves a `BENCH` debug call: `regs` = [nr, record, slot, value low, value high, 0].
    pub fn handle(&self, regs: &Regs) -> Regs {
        let value = (regs[3] as u64 & 0xFFFF_FFFF) | ((regs[4] as u64 & 0xFFFF_FFFF) << 32);
        match self.report(regs[1], regs[2], value) {
            Ok(()) => [0; 6],
            Err(e) => [e.code(), 0, 0, 0, 0, 0],
        }
    }

    fn samples(&self, rec: usize) -> [u64; MAX_RUNS] {
        core::array::from_fn(|i| self.samples[rec][i].load(Ordering::Acquire))
    }
}

impl Default for Collector {
    fn default() -> Self {
        Self::new()
    }
}

/// One named number of a record's `extra` object.
pub type ExtraField = (&'static str, u64);

/// One record as printed (see `docs/bench-protocol.md` for the fields): what was measured,
/// and its samples in the collector's fixed-size storage.
#[derive(Clone, Copy, Debug)]
pub struct Record {
    /// `bench`, `variant`, `lock`, ... (`pages` is 0: the guest leaves it to the host).
    pub head: RecordHead<'static>,
    /// Sums as reported; each printed sample is its sum divided by `divisor`. The first
    /// `runs` are printed.
    pub samples: [u64; MAX_RUNS],
    /// Samples in the record.
    pub runs: usize,
    /// 1, or the batch size of `ipc-roundtrip` (samples are means, printed with 2 decimals).
    pub divisor: u64,
    /// `extra`: up to four named numbers (`None` ends the list).
    pub extra: [Option<ExtraField>; 4],
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut extra = [("", 0); 4];
        let mut n = 0;
        for &(k, v) in self.extra.iter().flatten() {
            extra[n] = (k, v);
            n += 1;
        }
        RecordLine {
            head: self.head,
            samples: &self.samples[..self.runs.min(MAX_RUNS)],
            divisor: self.divisor,
            extra: &extra[..n],
        }
        .fmt(f)
    }
}

/// A record that did not receive all its samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Incomplete {
    /// Its `bench`.
    pub bench: &'static str,
    /// Its `variant`.
    pub variant: &'static str,
    /// Sample reports received.
    pub got: u32,
    /// Sample reports expected (clients times samples).
    pub want: u32,
}

/// One planned record: its number, the record, the programs reporting its samples, and
/// whether its `extra` values are the collector's [`param::EXTRA`] counters (in order).
type Planned = (usize, Record, u32, bool);

/// The most records one benchmark kind prints (`ipc`: three per variant, `null-syscall`, and
/// the three lock-cost records of each of two locks).
const MAX_PLANNED: usize = 7 + 2 * record::PAIR_MODES;

/// The lock-cost records' names, by mode ([`record::PAIR_PLAIN`], ...; see
/// [`crate::lockcost`]).
pub const LOCK_PAIR_BENCHES: [&str; record::PAIR_MODES] = {
    let mut names = [""; record::PAIR_MODES];
    names[record::PAIR_PLAIN] = "lock-pair";
    names[record::PAIR_IRQSAVE] = "lock-pair-irqsave";
    names[record::PAIR_IRQSAVE_MASKED] = "lock-pair-irqsave-masked";
    names
};

/// Whether a boot with `lock` (its `lock=` name) measures the kernel's own lock
/// ([`crate::lockcost`], variant `lock`): every strategy with one kernel lock but the ticket
/// lock, which the `ticket` variant measures already; not the fine-grained strategy, which has
/// no one lock.
pub fn measures_kernel_lock(lock: &str) -> bool {
    use lock_registry::{Kind, Lock};
    Lock::parse(lock).is_some_and(|l| l != Lock::Ticket && l.entry().kind != Kind::FineGrained)
}

/// The extra values of a batch-timed record (`ipc-roundtrip`, `null-syscall`): the batch size,
/// the warm-up batches, and the counter-read cost subtracted from each batch before dividing
/// (filled from the collector).
const BATCH_EXTRA: [Option<(&str, u64)>; 4] = [
    Some(("batch", BATCH as u64)),
    Some(("warmup_batches", WARMUP_BATCHES as u64)),
    Some(("overhead_per_batch", 0)),
    None,
];

/// The extra values of a lock-cost record (`lock-pair`, ...): the pairs per batch, the warm-up
/// batches, and the empty loop's time per batch subtracted from each (filled from the
/// collector).
const LOCK_PAIR_EXTRA: [Option<(&str, u64)>; 4] = [
    Some(("batch", LOCK_BATCH as u64)),
    Some(("warmup_batches", WARMUP_BATCHES as u64)),
    Some(("overhead_per_batch", 0)),
    None,
];

/// The records of benchmark `kind`, in print order; `None` past the end.
fn plan(kind: Kind, info: &RunInfo) -> [Option<Planned>; MAX_PLANNED] {
    let base = Record {
        head: RecordHead {
            bench: "",
            variant: "",
            lock: info.lock,
            cores: 1,
            clients: 0,
            pages: 0,
            unit: "ticks",
            counter: info.counter,
            counter_hz: info.counter_hz,
            overhead: 0,
            interval_ticks: None,
        },
        samples: [0; MAX_RUNS],
        runs: info.runs,
        divisor: 1,
        extra: [None; 4],
    };
    let mut out = [None; MAX_PLANNED];
    match kind {
        Kind::Ipc => {
            let one_way = info.counter != "debugcall";
            let mut n = 0;
            for (v, variant) in [(0u64, "same-as"), (1, "cross-as")] {
                if one_way {
                    for (r, bench) in [
                        (record::IPC_CALL, "ipc-call"),
                        (record::IPC_REPLYRECV, "ipc-replyrecv"),
                    ] {
                        out[n] = Some((
                            record::ipc(r, v),
                            Record {
                                head: RecordHead {
                                    bench,
                                    variant,
                                    ..base.head
                                },
                                extra: [
                                    Some(("warmup", WARMUP as u64)),
                                    Some(("overhead_tries", OVERHEAD_TRIES as u64)),
                                    None,
                                    None,
                                ],
                                ..base
                            },
                            1,
                            false,
                        ));
                        n += 1;
                    }
                }
                out[n] = Some((
                    record::ipc(record::IPC_ROUNDTRIP, v),
                    Record {
                        head: RecordHead {
                            bench: "ipc-roundtrip",
                            variant,
                            ..base.head
                        },
                        divisor: BATCH as u64,
                        extra: BATCH_EXTRA,
                        ..base
                    },
                    1,
                    false,
                ));
                n += 1;
            }
            // Batch-timed like the round trips, so measured with every counter (the debug call
            // too); the cross-address-space client reports it.
            out[n] = Some((
                record::NULL_SYSCALL,
                Record {
                    head: RecordHead {
                        bench: "null-syscall",
                        ..base.head
                    },
                    divisor: BATCH as u64,
                    extra: BATCH_EXTRA,
                    ..base
                },
                1,
                false,
            ));
            n += 1;
            // Batch-timed too; the image reports them itself, once each, at boot.
            let kernel_lock = measures_kernel_lock(info.lock).then_some(info.lock);
            for (which, variant) in [
                (record::LOCK_TICKET, Some("ticket")),
                (record::LOCK_KERNEL, kernel_lock),
            ] {
                let Some(variant) = variant else { continue };
                for (mode, bench) in LOCK_PAIR_BENCHES.into_iter().enumerate() {
                    out[n] = Some((
                        record::lock_pair(which, mode),
                        Record {
                            head: RecordHead {
                                bench,
                                variant,
                                ..base.head
                            },
                            divisor: LOCK_BATCH as u64,
                            extra: LOCK_PAIR_EXTRA,
                            ..base
                        },
                        1,
                        false,
                    ));
                    n += 1;
                }
            }
        }
        Kind::Multicore => {
            out[0] = Some((
                record::MULTICORE,
                Record {
                    head: RecordHead {
                        bench: "multicore-pingpong",
                        variant: "pairs",
                        cores: info.cores,
                        unit: "round trips",
                        interval_ticks: Some(info.interval_ticks),
                        ..base.head
                    },
                    extra: throughput_extra(info.cores),
                    ..base
                },
                info.cores as u32,
                false,
            ));
        }
        Kind::ClientServer { clients, variant } => {
            let servers = match variant {
                Variant::Shared => 1,
                Variant::Dedicated => clients,
            };
            out[0] = Some((
                record::CLIENT_SERVER,
                Record {
                    head: RecordHead {
                        bench: "client-server",
                        variant: variant.name(),
                        cores: clients.min(info.cores),
                        clients,
                        unit: "round trips",
                        interval_ticks: Some(info.interval_ticks),
                        ..base.head
                    },
                    extra: throughput_extra(servers),
                    ..base
                },
                clients as u32,
                false,
            ));
        }
        Kind::Memory(spec) => {
            let workers = info.cores as u64;
            let per_page = Record {
                head: RecordHead {
                    variant: spec.variant(),
                    cores: info.cores,
                    clients: info.cores,
                    ..base.head
                },
                // Each sample sums every worker's task: the mean per page and core.
                divisor: spec.pages as u64 * workers,
                ..base
            };
            out[0] = Some((
                record::MEM_ALLOC,
                Record {
                    head: RecordHead {
                        bench: "memory-alloc",
                        ..per_page.head
                    },
                    extra: [
                        Some(("faults_same_core", 0)),
                        Some(("faults_cross_core", 0)),
                        Some(("pages_borrowed", 0)),
                        Some(("pages_returned", 0)),
                    ],
                    ..per_page
                },
                info.cores as u32,
                true,
            ));
            out[1] = Some((
                record::MEM_FREE,
                Record {
                    head: RecordHead {
                        bench: "memory-free",
                        ..per_page.head
                    },
                    extra: [
                        Some(("pages_per_task", spec.pages as u64)),
                        Some(("pagers", if spec.global { 1 } else { workers })),
                        Some(("nodes", spec.nodes as u64)),
                        Some(("buddy", u64::from(spec.buddy))),
                    ],
                    ..per_page
                },
                info.cores as u32,
                false,
            ));
            if !spec.global && info.cores > 1 {
                for (n, rec, variant) in [
                    (2, record::MEM_IPC_SAME, "same-core"),
                    (3, record::MEM_IPC_CROSS, "cross-core"),
                ] {
                    out[n] = Some((
                        rec,
                        Record {
                            head: RecordHead {
                                bench: "memory-ipc",
                                variant,
                                cores: info.cores,
                                ..base.head
                            },
                            divisor: BATCH as u64,
                            extra: [Some(("batch", BATCH as u64)), None, None, None],
                            ..base
                        },
                        1,
                        false,
                    ));
                }
            }
        }
    }
    out
}

/// `extra` of a throughput record (the read cost is filled from the collector).
fn throughput_extra(servers: usize) -> [Option<ExtraField>; 4] {
    [
        Some(("servers", servers as u64)),
        Some(("warmup_intervals", WARMUP_INTERVALS as u64)),
        Some(("counter_reads_per_round_trip", 1)),
        Some(("counter_read_cost", 0)),
    ]
}

/// The records of `kind` filled from `c`, in print order; an incomplete record is an error.
pub fn records(
    kind: Kind,
    info: &RunInfo,
    c: &Collector,
) -> impl Iterator<Item = Result<Record, Incomplete>> {
    let plan = plan(kind, info);
    let rows: [Option<Result<Record, Incomplete>>; MAX_PLANNED] = core::array::from_fn(|i| {
        let (id, mut r, reporters, extras) = plan[i]?;
        let want = reporters * info.runs as u32;
        let got = c.reports[id].load(Ordering::Acquire);
        if got != want {
            return Some(Err(Incomplete {
                bench: r.head.bench,
                variant: r.head.variant,
                got,
                want,
            }));
        }
        r.samples = c.samples(id);
        let overhead = c.overhead[id].load(Ordering::Relaxed);
        let read_cost = c.read_cost[id].load(Ordering::Relaxed);
        if extras {
            for (k, field) in r.extra.iter_mut().enumerate() {
                if let Some((_, v)) = field {
                    *v = c.extra[id][k].load(Ordering::Relaxed);
                }
            }
        }
        for (k, v) in r.extra.iter_mut().flatten() {
            match *k {
                "overhead_per_batch" => *v = overhead,
                "counter_read_cost" => *v = read_cost,
                _ => {}
            }
        }
        // Per sample: the whole overhead for one-way samples, its share of a batch for round
        // trips (rounded; the exact figure is `overhead_per_batch`).
        r.head.overhead = (overhead + r.divisor / 2) / r.divisor.max(1);
        Some(Ok(r))
    });
    rows.into_iter().flatten()
}

pub use protocol::console::{BENCH_BEGIN as BEGIN, BENCH_END as END};

/// Prints the markers and the records of `kind` through `println` (one line each); returns
/// the incomplete records (reported on their own lines, outside the markers, after `END`).
pub fn print(
    kind: Kind,
    info: &RunInfo,
    c: &Collector,
    mut println: impl FnMut(fmt::Arguments<'_>),
) -> usize {
    println(format_args!("{BEGIN}"));
    let mut bad = [None; MAX_PLANNED];
    let mut n = 0;
    for r in records(kind, info, c) {
        match r {
            Ok(r) => println(format_args!("{r}")),
            Err(e) => {
                bad[n] = Some(e);
                n += 1;
            }
        }
    }
    println(format_args!("{END}"));
    for e in bad.iter().flatten() {
        println(format_args!(
            "bench: FAILED: record {} {} got {} sample reports of {}",
            e.bench, e.variant, e.got, e.want
        ));
    }
    n
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::String;
    use std::vec::Vec;

    use super::*;

    fn info(counter: &'static str) -> RunInfo {
        RunInfo {
            lock: "clh",
            cores: 4,
            counter,
            counter_hz: 1_000_000_000,
            interval_ticks: 2_500_000,
            runs: 16,
        }
    }

    fn lines(kind: Kind, info: &RunInfo, c: &Collector) -> (Vec<String>, usize) {
        let mut out = Vec::new();
        let bad = print(kind, info, c, |a| out.push(std::format!("{a}")));
        (out, bad)
    }

    /// Reports what `crate::lockcost` reports for `locks` locks (the ticket lock, then the
    /// kernel's): per batch an empty loop of 3000 ticks subtracted, and `9000 + 1000 * mode +
    /// 100 * lock + sample` ticks left.
    fn lock_pairs(c: &Collector, runs: usize, locks: usize) {
        for which in 0..locks {
            for mode in 0..record::PAIR_MODES {
                let rec = record::lock_pair(which, mode);
                c.report(rec, param::OVERHEAD, 3000).unwrap();
                for i in 0..runs {
                    let t = 9000 + 1000 * mode + 100 * which + i;
                    c.report(rec, i, t as u64).unwrap();
                }
            }
        }
    }

    #[test]
    fn memory_records_average_per_page_and_core_and_carry_the_pager_counters() {
        let spec = Spec {
            global: false,
            buddy: false,
            nodes: 1,
            pages: 10,
            lock: 0,
        };
        let info = RunInfo {
            cores: 2,
            runs: 2,
            ..info("tsc")
        };
        let c = Collector::new();
        for _worker in 0..2 {
            for t in 0..2 {
                c.report(record::MEM_ALLOC, t, 1000 * (t as u64 + 1))
                    .unwrap();
                c.report(record::MEM_FREE, t, 500).unwrap();
            }
        }
        for t in 0..2 {
            c.report(record::MEM_IPC_SAME, t, 300 * BATCH as u64)
                .unwrap();
            c.report(record::MEM_IPC_CROSS, t, 900 * BATCH as u64)
                .unwrap();
        }
        c.report(record::MEM_ALLOC, param::EXTRA, 40).unwrap();
        c.report(record::MEM_ALLOC, param::EXTRA + 2, 7).unwrap();
        let (out, bad) = lines(Kind::Memory(spec), &info, &c);
        assert_eq!(bad, 0, "{out:?}");
        // Two workers' 1000 and 2000 ticks for 10 pages each: 100 and 200 per page and core.
        assert!(out[1].starts_with("{\"bench\":\"memory-alloc\",\"variant\":\"percore\""));
        assert!(out[1].contains("\"samples\":[100.00,200.00]"), "{}", out[1]);
        assert!(out[1].contains(
            "\"extra\":{\"faults_same_core\":40,\"faults_cross_core\":0,\"pages_borrowed\":7,\
             \"pages_returned\":0}"
        ));
        assert!(out[2].contains("\"samples\":[50.00,50.00]"), "{}", out[2]);
        assert!(out[3].contains("same-core") && out[3].contains("[300.00,300.00]"));
        assert!(out[4].contains("cross-core") && out[4].contains("[900.00,900.00]"));
        // The global pager has no same/cross comparison; a missing worker is an error.
        let global = Kind::Memory(Spec {
            global: true,
            ..spec
        });
        let c = Collector::new();
        c.report(record::MEM_ALLOC, 0, 1).unwrap();
        let (out, bad) = lines(global, &info, &c);
        assert_eq!(bad, 2, "{out:?}");
        assert!(!out.iter().any(|l| l.contains("memory-ipc")));
    }

    #[test]
    fn parses_the_command_line_words() {
        let words = |list: &'static [(&'static str, &'static str)]| {
            move |k: &str| list.iter().find(|(key, _)| *key == k).map(|(_, v)| *v)
        };
        assert_eq!(Kind::parse(words(&[("bench", "ipc")])), Ok(Kind::Ipc));
        assert_eq!(Kind::parse(words(&[])), Err(SpecError::Missing));
        assert_eq!(
            Kind::parse(words(&[("bench", "pingpong")])),
            Err(SpecError::Unknown("pingpong"))
        );
        assert_eq!(
            Kind::parse(words(&[
                ("bench", "clientserver"),
                ("clients", "4"),
                ("variant", "dedicated")
            ])),
            Ok(Kind::ClientServer {
                clients: 4,
                variant: Variant::Dedicated
            })
        );
        assert_eq!(
            Kind::parse(words(&[("bench", "clientserver"), ("clients", "9")])),
            Err(SpecError::Clients("9"))
        );
        for k in [
            None,
            Some(Kind::Ipc),
            Some(Kind::Multicore),
            Some(Kind::ClientServer {
                clients: 8,
                variant: Variant::Dedicated,
            }),
            Some(Kind::ClientServer {
                clients: 1,
                variant: Variant::Shared,
            }),
        ] {
            assert_eq!(Kind::from_word(Kind::to_word(k)), k);
        }
        let shared = |clients| Kind::ClientServer {
            clients,
            variant: Variant::Shared,
        };
        assert!(shared(2).shares_objects_across_cores(4));
        assert!(!shared(2).shares_objects_across_cores(1));
        assert!(!shared(1).shares_objects_across_cores(4));
        assert!(!Kind::Multicore.shares_objects_across_cores(4));
        assert!(Kind::Multicore.uses_all_cores() && !Kind::Ipc.uses_all_cores());
        assert_eq!(parse_runs(words(&[])), Ok(16));
        assert_eq!(parse_runs(words(&[("runs", "2")])), Ok(2));
        assert_eq!(
            parse_runs(words(&[("runs", "0")])),
            Err(SpecError::Runs("0"))
        );
        assert_eq!(
            parse_runs(words(&[("runs", "65")])),
            Err(SpecError::Runs("65"))
        );
        let msg = std::format!("{}", SpecError::Unknown("x"));
        assert!(msg.contains("ipc, multicore, clientserver"), "{msg}");
    }

    #[test]
    fn ipc_records_are_json_lines_with_overhead_subtracted_by_the_client() {
        let c = Collector::new();
        for v in 0..2u64 {
            for r in [record::IPC_CALL, record::IPC_REPLYRECV] {
                let id = record::ipc(r, v);
                c.report(id, param::OVERHEAD, 20).unwrap();
                for i in 0..16 {
                    c.report(id, i, 1000 + i as u64).unwrap();
                }
            }
            let id = record::ipc(record::IPC_ROUNDTRIP, v);
            c.report(id, param::OVERHEAD, 60).unwrap();
            for i in 0..16 {
                c.report(id, i, 200_001).unwrap();
            }
        }
        lock_pairs(&c, 16, 2);
        // Without the null calls' samples the run is incomplete.
        let (out, bad) = lines(Kind::Ipc, &info("tsc"), &c);
        assert_eq!(bad, 1);
        assert!(out[14].contains("record null-syscall  got 0 sample reports of 16"));
        c.report(record::NULL_SYSCALL, param::OVERHEAD, 60).unwrap();
        for i in 0..16 {
            c.report(record::NULL_SYSCALL, i, 30_050).unwrap();
        }
        let (out, bad) = lines(Kind::Ipc, &info("tsc"), &c);
        assert_eq!(bad, 0);
        assert_eq!(out.len(), 15);
        assert_eq!(out[0], BEGIN);
        assert_eq!(
            out[7],
            "{\"bench\":\"null-syscall\",\"variant\":\"\",\"lock\":\"clh\",\"cores\":1,\
             \"clients\":0,\"unit\":\"ticks\",\"counter\":\"tsc\",\"counter_hz\":1000000000,\
             \"overhead\":1,\"samples\":[300.50,300.50,300.50,300.50,300.50,300.50,300.50,\
             300.50,300.50,300.50,300.50,300.50,300.50,300.50,300.50,300.50],\"extra\":{\"batch\":\
             100,\"warmup_batches\":2,\"overhead_per_batch\":60}}"
        );
        // The lock-cost records follow: the ticket lock's three, then the kernel's (clh).
        assert!(out[8].starts_with("{\"bench\":\"lock-pair\",\"variant\":\"ticket\","));
        assert!(out[11].starts_with("{\"bench\":\"lock-pair\",\"variant\":\"clh\","));
        assert!(out[13].starts_with("{\"bench\":\"lock-pair-irqsave-masked\",\"variant\":\"clh\","));
        assert_eq!(out[14], END);
        assert_eq!(
            out[1],
            "{\"bench\":\"ipc-call\",\"variant\":\"same-as\",\"lock\":\"clh\",\"cores\":1,\
             \"clients\":0,\"unit\":\"ticks\",\"counter\":\"tsc\",\"counter_hz\":1000000000,\
             \"overhead\":20,\"samples\":[1000,1001,1002,1003,1004,1005,1006,1007,1008,1009,\
             1010,1011,1012,1013,1014,1015],\"extra\":{\"warmup\":16,\"overhead_tries\":64}}"
        );
        assert!(out[3].starts_with(
            "{\"bench\":\"ipc-roundtrip\",\"variant\":\"same-as\",\"lock\":\"clh\",\"cores\":1,"
        ));
        assert!(out[3].contains("\"overhead\":1,\"samples\":[2000.01,2000.01,"));
        assert!(out[3].ends_with(
            "\"extra\":{\"batch\":100,\"warmup_batches\":2,\"overhead_per_batch\":60}}"
        ));
        assert!(out[4].contains("\"bench\":\"ipc-call\",\"variant\":\"cross-as\""));
    }

    #[test]
    fn lock_pair_records_name_the_lock_and_the_mode_and_average_per_pair() {
        // A complete IPC run but for the lock-cost records.
        let ipc = |c: &Collector| {
            for v in 0..2u64 {
                for r in [
                    record::IPC_CALL,
                    record::IPC_REPLYRECV,
                    record::IPC_ROUNDTRIP,
                ] {
                    for i in 0..2 {
                        c.report(record::ipc(r, v), i, 1).unwrap();
                    }
                }
            }
            for i in 0..2 {
                c.report(record::NULL_SYSCALL, i, 1).unwrap();
            }
        };
        let info = |lock| RunInfo {
            lock,
            runs: 2,
            ..info("tsc")
        };
        let c = Collector::new();
        ipc(&c);
        lock_pairs(&c, 2, 2);
        let (out, bad) = lines(Kind::Ipc, &info("clh"), &c);
        assert_eq!(bad, 0, "{out:?}");
        let pairs: Vec<&String> = out.iter().filter(|l| l.contains("\"lock-pair")).collect();
        assert_eq!(pairs.len(), 6);
        // Ticks per batch of 1000 pairs less the empty loop's 3000: per pair, two decimals.
        assert_eq!(
            *pairs[0],
            "{\"bench\":\"lock-pair\",\"variant\":\"ticket\",\"lock\":\"clh\",\"cores\":1,\
             \"clients\":0,\"unit\":\"ticks\",\"counter\":\"tsc\",\"counter_hz\":1000000000,\
             \"overhead\":3,\"samples\":[9.00,9.00],\"extra\":{\"batch\":1000,\
             \"warmup_batches\":2,\"overhead_per_batch\":3000}}"
        );
        for (line, (bench, variant, first)) in pairs.iter().zip([
            ("lock-pair", "ticket", "9.00"),
            ("lock-pair-irqsave", "ticket", "10.00"),
            ("lock-pair-irqsave-masked", "ticket", "11.00"),
            ("lock-pair", "clh", "9.10"),
            ("lock-pair-irqsave", "clh", "10.10"),
            ("lock-pair-irqsave-masked", "clh", "11.10"),
        ]) {
            let head = std::format!("{{\"bench\":\"{bench}\",\"variant\":\"{variant}\",");
            assert!(line.starts_with(&head), "{line}");
            assert!(
                line.contains(&std::format!("\"samples\":[{first},")),
                "{line}"
            );
        }
        // The kernel's own lock is left out where the ticket variant measures it already, or
        // where the strategy has no one lock; a missing record of a boot that measures it is
        // an error.
        for (lock, records) in [
            ("ticket", 3),
            ("fine", 3),
            ("none", 6),
            ("rtm", 6),
            ("mcs", 6),
            ("qspin", 6),
            ("cna", 6),
        ] {
            let c = Collector::new();
            ipc(&c);
            lock_pairs(&c, 2, 1);
            let (out, bad) = lines(Kind::Ipc, &info(lock), &c);
            let pairs = out
                .iter()
                .filter(|l| l.starts_with("{\"bench\":\"lock-pair"))
                .count();
            assert_eq!((pairs, bad), (3, records - 3), "{lock}: {out:?}");
            if bad > 0 {
                let missing =
                    std::format!("record lock-pair-irqsave {lock} got 0 sample reports of 2");
                assert!(out.iter().any(|l| l.contains(&missing)), "{out:?}");
            }
        }
        assert!(measures_kernel_lock("clh") && measures_kernel_lock("none"));
        assert!(!measures_kernel_lock("ticket") && !measures_kernel_lock("brlock"));
        assert!(!measures_kernel_lock("spin"));
    }

    #[test]
    fn debugcall_counter_has_round_trips_only() {
        let c = Collector::new();
        for v in 0..2u64 {
            for i in 0..16 {
                c.report(record::ipc(record::IPC_ROUNDTRIP, v), i, 5)
                    .unwrap();
            }
        }
        for i in 0..16 {
            c.report(record::NULL_SYSCALL, i, 2).unwrap();
        }
        lock_pairs(&c, 16, 2);
        let (out, bad) = lines(Kind::Ipc, &info("debugcall"), &c);
        assert_eq!(bad, 0);
        assert_eq!(out.len(), 11);
        // The lock-cost records are batch-timed too: they stay.
        assert!(out[4].contains("\"bench\":\"lock-pair\",\"variant\":\"ticket\""));
        assert!(out[9].contains("\"bench\":\"lock-pair-irqsave-masked\",\"variant\":\"clh\""));
        assert!(out[1].contains("\"samples\":[0.05,"));
        assert!(out[2].contains("\"variant\":\"cross-as\""));
        assert!(out[3].contains("\"bench\":\"null-syscall\"") && out[3].contains("[0.02,"));
    }

    #[test]
    fn throughput_sums_clients_per_repetition_and_checks_completeness() {
        let c = Collector::new();
        let kind = Kind::Multicore;
        for core in 0..4u64 {
            c.report(record::MULTICORE, param::READ_COST, 30 + core)
                .unwrap();
            for i in 0..16 {
                c.report(record::MULTICORE, i, 10 * core + i as u64)
                    .unwrap();
            }
        }
        let (out, bad) = lines(kind, &info("pmccntr"), &c);
        assert_eq!(bad, 0);
        assert!(out[1].contains(
            "\"bench\":\"multicore-pingpong\",\"variant\":\"pairs\",\"lock\":\"clh\",\
             \"cores\":4,\"clients\":0,\"unit\":\"round trips\""
        ));
        assert!(out[1].contains("\"interval_ticks\":2500000,\"samples\":[60,64,68,"));
        assert!(out[1].contains("\"counter_read_cost\":33}"));

        // A client short: the record is reported incomplete, not printed.
        let c = Collector::new();
        for i in 0..16 {
            c.report(record::CLIENT_SERVER, i, 1).unwrap();
        }
        let kind = Kind::ClientServer {
            clients: 2,
            variant: Variant::Shared,
        };
        let (out, bad) = lines(kind, &info("tsc"), &c);
        assert_eq!(bad, 1);
        assert_eq!(out[..2], [BEGIN, END]);
        assert!(out[2].contains("got 16 sample reports of 32"), "{}", out[2]);
    }

    #[test]
    fn runs_sets_the_sample_count() {
        let c = Collector::new();
        let mut i2 = info("tsc");
        i2.runs = 2;
        for core in 0..4 {
            for i in 0..2 {
                c.report(record::MULTICORE, i, 5 + core).unwrap();
            }
        }
        let (out, bad) = lines(Kind::Multicore, &i2, &c);
        assert_eq!(bad, 0);
        assert!(out[1].contains("\"samples\":[26,26],"), "{}", out[1]);
    }

    #[test]
    fn bad_reports_are_refused() {
        let c = Collector::new();
        assert_eq!(c.report(record::COUNT, 0, 1), Err(Error::InvalidArgument));
        assert_eq!(c.report(0, MAX_RUNS, 1), Err(Error::InvalidArgument));
        let r = c.handle(&[0x107, 0, 3, 0xFFFF_FFFF, 1, 0]);
        assert_eq!(r[0], 0);
        assert_eq!(c.samples(0)[3], 0x1_FFFF_FFFF);
    }
}
