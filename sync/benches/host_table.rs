//! The numbers behind `cargo xtask bench locks`: every lock of this crate beside peer
//! implementations and reference points, measured on the host, written as JSON.
//!
//! Run it through `cargo xtask bench locks`, which prints the table and writes
//! `target/bench/host-locks.json`. Directly: `cargo bench -p kernel-locks --bench host_table -- [--json
//! FILE] [--threads 1,2,4] [--quick]` (JSON on stdout without `--json`; progress on stderr).
//!
//! Method:
//! * Uncontended: one thread (pinned to the first CPU when possible) runs batches of
//!   [`BATCH_OPS`] acquire+release pairs with an empty critical section; each batch is timed with
//!   the TSC (x86_64 `rdtsc`, each read fenced by `lfence` on both sides so it neither runs early
//!   nor lets later work start before it) and with `Instant`. Every call reaches the lock through
//!   `black_box`, so the compiler cannot hoist work out of the loop as it may for a lock it sees
//!   whole (the 1-thread contended loop can therefore be faster per operation). Reported: per-operation median, min
//!   and max over the batches, in ns and TSC ticks. Nothing is subtracted (the loop overhead is
//!   part of every number; the `none` row shows it).
//! * Contended: T threads, thread i acting as CPU i (pinned to CPU i when T does not exceed the
//!   CPUs), start together and for a fixed time acquire, increment a shared counter (relaxed load
//!   and store), release. Reported: total operations per second, median, min and max of
//!   the runs (one per round). For exclusive locks the counter must equal the operation count; a
//!   difference means broken mutual exclusion and the benchmark panics.
//! * Rounds: the whole table is measured `--rounds` times (default [`ROUNDS`]), every lock once
//!   per round, so that a lock and its peer are measured alternately, under the same background
//!   load, rather than one after the other. Uncontended figures pool the batches of all rounds;
//!   each contended run is one round's.
//! * Parity ([`PARITY`]): each of our locks beside the best peer of its kind, from the same rounds:
//!   uncontended ticks (median of the per-round medians, and in how many rounds ours was at or
//!   below the peer) beside the peers of its own algorithm (the queued spinlock beside the ticket
//!   locks, ours included), and contended ops/s per thread count
//!   beside the best FIFO peer at that count. Code and data placement move a lock of
//!   this size by a tick or two between binaries (documented in docs/bench/host-locks-safety-cost.md),
//!   so only a comparison inside one run means anything.

// The peers and criterion are host-only dev-dependencies (see Cargo.toml).
#[cfg(target_arch = "arm")]
compile_error!("the lock benchmarks measure on the host (x86_64, AArch64): their dev-dependencies are not built for 32-bit ARM");

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use common::{Info, Subject, Visitor};
use kernel_locks::CachePadded;
use serde_json::{json, Value};

/// Acquire+release pairs per timed batch.
const BATCH_OPS: usize = 1000;
/// Timed batches per lock (after a warm-up).
const BATCHES: usize = 301;
/// Timed batches per lock with `--quick`.
const QUICK_BATCHES: usize = 61;
/// Length of one contended run.
const DURATION: Duration = Duration::from_millis(200);
/// Length of one contended run with `--quick`.
const QUICK_DURATION: Duration = Duration::from_millis(50);
/// Rounds over the whole table (each gives every lock one contended run per thread count).
const ROUNDS: usize = 5;
/// Rounds with `--quick`.
const QUICK_ROUNDS: usize = 3;
/// Peer ticket locks.
const TICKET_PEERS: &[&str] = &["spin-ticket", "hermit-ticket"];
/// The ticket locks, ours and the peers: the uncontended parity of the queued spinlock, whose
/// fast path is one atomic read-modify-write each way, as a ticket lock's (Linux's `qspinlock`
/// replaced its ticket spinlock on these grounds).
const TICKET_LOCKS: &[&str] = &["ticket", "spin-ticket", "hermit-ticket"];
/// Every FIFO peer (contended parity of the queue locks: a queue lock must hand over at least as
/// fast as the best first-come-first-served lock of any design).
const FIFO_PEERS: &[&str] = &["clhlock", "mcslock", "spin-ticket", "hermit-ticket"];

/// One parity comparison: our lock, the locks whose best uncontended figure it must match, and
/// the locks whose best contended throughput it must match (empty: not compared contended).
/// "Best" is taken per comparison, from the same run.
struct Parity {
    ours: &'static str,
    uncontended: &'static [&'static str],
    contended: &'static [&'static str],
}

/// Our locks beside the best peer of their kind, compared in the report's parity section:
/// uncontended, each lock beside the peers of its own algorithm (an MCS lock pays two atomic
/// read-modify-writes per acquire and release where a CLH lock pays one, whoever wrote it; the
/// queued spinlock beside the ticket locks, ours included); contended, each queue lock beside
/// every FIFO peer. The CNA lock, which has no peer here, is compared with our MCS lock.
const PARITY: &[Parity] = &[
    Parity {
        ours: "clh",
        uncontended: &["clhlock"],
        contended: FIFO_PEERS,
    },
    Parity {
        ours: "mcs",
        uncontended: &["mcslock"],
        contended: FIFO_PEERS,
    },
    // The compact NUMA-aware lock must cost no more than MCS on a uniform machine, with either
    // map: the map is read only when a waiter queues.
    Parity {
        ours: "cna",
        uncontended: &["mcs"],
        contended: &["mcs"],
    },
    Parity {
        ours: "cna-2node",
        uncontended: &["mcs"],
        contended: &["mcs"],
    },
    Parity {
        ours: "qspin",
        uncontended: TICKET_LOCKS,
        contended: FIFO_PEERS,
    },
    Parity {
        ours: "ticket",
        uncontended: TICKET_PEERS,
        contended: TICKET_PEERS,
    },
];

/// Command-line options (cargo bench adds `--bench`, which is ignored).
struct Options {
    json: Option<std::path::PathBuf>,
    threads: Vec<usize>,
    quick: bool,
    rounds: Option<usize>,
}

fn options() -> Options {
    let mut opts = Options {
        json: None,
        threads: Vec::new(),
        quick: false,
        rounds: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => opts.json = args.next().map(Into::into),
            "--threads" => {
                let list = args.next().unwrap_or_default();
                opts.threads = list
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| {
                        s.trim()
                            .parse()
                            .ok()
                            .filter(|&n: &usize| n > 0)
                            .unwrap_or_else(|| usage(&format!("bad thread count {s:?}")))
                    })
                    .collect();
            }
            "--quick" => opts.quick = true,
            "--rounds" => {
                let text = args.next().unwrap_or_default();
                opts.rounds = Some(
                    text.trim()
                        .parse()
                        .ok()
                        .filter(|n: &usize| (1..=100).contains(n))
                        .unwrap_or_else(|| {
                            usage(&format!("--rounds must be 1..=100, not {text:?}"))
                        }),
                );
            }
            "--bench" => {}
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument {other:?}")),
        }
    }
    opts
}

fn usage(problem: &str) -> ! {
    if !problem.is_empty() {
        eprintln!("host_table: {problem}");
    }
    eprintln!("usage: host_table [--json FILE] [--threads 1,2,4] [--quick] [--rounds R]");
    std::process::exit(if problem.is_empty() { 0 } else { 2 })
}

/// Median, min and max.
fn stats(values: &mut [f64]) -> Value {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return Value::Null;
    }
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    json!({ "median": median, "min": values[0], "max": values[n - 1] })
}

/// A serialised TSC read, or `None` where there is no TSC.
#[inline(always)]
fn ticks() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_lfence, _rdtsc};
        // SAFETY: LFENCE (SSE2, part of the x86_64 baseline) and RDTSC only order instructions
        // and read the time-stamp counter; no memory is touched. The first LFENCE keeps RDTSC
        // from running before earlier instructions complete, the second keeps later ones from
        // starting before it.
        unsafe {
            _mm_lfence();
            let t = _rdtsc();
            _mm_lfence();
            Some(t)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Pins the calling thread to CPU `index` of the affinity list, if there is such a CPU.
fn pin(cores: &[core_affinity::CoreId], index: usize) -> bool {
    cores
        .get(index)
        .is_some_and(|core| core_affinity::set_for_current(*core))
}

/// One lock's measurements, gathered over the rounds.
struct Gathered {
    info: Info,
    /// Per-op ns and ticks of every batch of every round.
    ns: Vec<f64>,
    ticks: Vec<f64>,
    /// Per-round medians of the batches (ticks where there is a TSC, else ns).
    round_medians: Vec<f64>,
    /// Contended ops/s, per thread count (in `Runner::threads` order), one per round.
    contended: Vec<Vec<f64>>,
}

struct Runner {
    threads: Vec<usize>,
    batches: usize,
    duration: Duration,
    cores: Vec<core_affinity::CoreId>,
    locks: Vec<Gathered>,
    /// The round being measured (from 1) and how many there are, for the progress lines.
    round: (usize, usize),
    /// (ticks, ns) summed over all uncontended batches, for the TSC frequency estimate.
    tsc: (f64, f64),
}

impl Runner {
    /// Per-op ns and ticks of each batch (ticks empty without a TSC).
    fn uncontended<S: Subject>(&mut self, make: &(dyn Fn() -> S + Sync)) -> (Vec<f64>, Vec<f64>) {
        let batches = self.batches;
        let cores = &self.cores;
        let (ns, tk) = std::thread::scope(|s| {
            s.spawn(|| {
                pin(cores, 0);
                let lock = make();
                let mut local = lock.local(0);
                for _ in 0..BATCH_OPS * 20 {
                    black_box(&lock).critical(&mut local, || ());
                }
                let mut ns = Vec::with_capacity(batches);
                let mut tk = Vec::with_capacity(batches);
                for _ in 0..batches {
                    let t0 = Instant::now();
                    let c0 = ticks();
                    for _ in 0..BATCH_OPS {
                        black_box(&lock).critical(&mut local, || ());
                    }
                    let c1 = ticks();
                    let elapsed = t0.elapsed();
                    ns.push(elapsed.as_nanos() as f64 / BATCH_OPS as f64);
                    if let (Some(c0), Some(c1)) = (c0, c1) {
                        tk.push(c1.wrapping_sub(c0) as f64 / BATCH_OPS as f64);
                    }
                }
                (ns, tk)
            })
            .join()
            .expect("uncontended run panicked")
        });
        if tk.len() == ns.len() {
            self.tsc.0 += tk.iter().sum::<f64>();
            self.tsc.1 += ns.iter().sum::<f64>();
        }
        (ns, tk)
    }

    /// Total ops/s of `threads` threads hammering one lock for `self.duration`.
    fn contended_once<S: Subject>(
        &self,
        info: &Info,
        make: &(dyn Fn() -> S + Sync),
        threads: usize,
    ) -> f64 {
        let lock = make();
        let counter = CachePadded::new(AtomicUsize::new(0));
        let stop = CachePadded::new(AtomicBool::new(false));
        let barrier = Barrier::new(threads + 1);
        let do_pin = threads <= self.cores.len();
        let (total, elapsed) = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|cpu| {
                    let (lock, counter, stop, barrier) = (&lock, &counter, &stop, &barrier);
                    let cores = &self.cores;
                    s.spawn(move || {
                        if do_pin {
                            pin(cores, cpu);
                        }
                        let mut local = lock.local(cpu);
                        let mut ops = 0usize;
                        barrier.wait();
                        while !stop.load(Ordering::Relaxed) {
                            lock.critical(&mut local, || common::bump(counter));
                            ops += 1;
                        }
                        ops
                    })
                })
                .collect();
            barrier.wait();
            let start = Instant::now();
            std::thread::sleep(self.duration);
            stop.store(true, Ordering::Relaxed);
            let total: usize = handles
                .into_iter()
                .map(|h| h.join().expect("benchmark thread panicked"))
                .sum();
            (total, start.elapsed())
        });
        if info.exclusive {
            let counted = counter.load(Ordering::Relaxed);
            assert_eq!(
                counted, total,
                "{}: the counter says {counted} but {total} critical sections ran: mutual \
                 exclusion is broken",
                info.name
            );
        }
        total as f64 / elapsed.as_secs_f64()
    }
}

impl Visitor for Runner {
    fn visit<S: Subject>(&mut self, info: Info, make: &(dyn Fn() -> S + Sync)) {
        eprint!(
            "host_table: round {}/{} {:<14}",
            self.round.0, self.round.1, info.name
        );
        let (ns, ticks) = self.uncontended(make);
        let mut round = if ticks.is_empty() {
            ns.clone()
        } else {
            ticks.clone()
        };
        let round_median = median(&mut round);
        eprint!(
            " {:>7.2} {}",
            round_median,
            if ticks.is_empty() { "ns" } else { "ticks" }
        );
        let mut contended = Vec::new();
        if info.contended {
            for &threads in &self.threads {
                let ops = self.contended_once(&info, make, threads);
                eprint!(" | {threads} thr {:>6.1} Mops/s", ops / 1e6);
                contended.push(ops);
            }
        }
        eprintln!();
        let at = match self.locks.iter().position(|g| g.info.name == info.name) {
            Some(at) => at,
            None => {
                self.locks.push(Gathered {
                    info,
                    ns: Vec::new(),
                    ticks: Vec::new(),
                    round_medians: Vec::new(),
                    contended: vec![Vec::new(); self.threads.len()],
                });
                self.locks.len() - 1
            }
        };
        let g = &mut self.locks[at];
        g.ns.extend(ns);
        g.ticks.extend(ticks);
        g.round_medians.push(round_median);
        for (runs, ops) in g.contended.iter_mut().zip(contended) {
            runs.push(ops);
        }
    }
}

/// The median of `values` (NaN when empty).
fn median(values: &mut [f64]) -> f64 {
    stats(values)["median"].as_f64().unwrap_or(f64::NAN)
}

impl Runner {
    /// The per-lock JSON entries.
    fn locks_json(&self) -> Vec<Value> {
        self.locks
            .iter()
            .map(|g| {
                let contended: Vec<Value> = self
                    .threads
                    .iter()
                    .zip(&g.contended)
                    .filter(|(_, runs)| !runs.is_empty())
                    .map(|(&threads, runs)| {
                        json!({
                            "threads": threads,
                            "pinned": threads <= self.cores.len(),
                            "ops_per_s": stats(&mut runs.clone()),
                            "runs": runs,
                        })
                    })
                    .collect();
                json!({
                    "name": g.info.name,
                    "origin": g.info.origin.as_str(),
                    "about": g.info.about,
                    "exclusive": g.info.exclusive,
                    "uncontended": {
                        "ns_per_op": stats(&mut g.ns.clone()),
                        "ticks_per_op": if g.ticks.is_empty() {
                            Value::Null
                        } else {
                            stats(&mut g.ticks.clone())
                        },
                        "round_medians": g.round_medians,
                        "round_unit": if g.ticks.is_empty() { "ns" } else { "ticks" },
                    },
                    "contended": contended,
                })
            })
            .collect()
    }

    /// Each [`PARITY`] pair from the same rounds: ours at or below the peer uncontended, and at
    /// or above it contended at every pinned thread count (oversubscribed runs measure the
    /// scheduler, not the lock, so they do not count).
    ///
    /// Besides the strict `met`, each comparison has a `verdict`: `met`, `within-noise` (ours
    /// is on the wrong side of the peer by less than the rounds' own spread, half the range of
    /// either lock's per-round figures: this run cannot tell the two apart) or `not-met`. The
    /// pair's verdict is the worst of its comparisons.
    fn parity_json(&self) -> Vec<Value> {
        let find = |name: &str| self.locks.iter().find(|g| g.info.name == name);
        PARITY
            .iter()
            .filter_map(|parity| {
                let o = find(parity.ours)?;
                // The best uncontended peer: the lowest median of per-round medians.
                let p = parity
                    .uncontended
                    .iter()
                    .filter_map(|name| find(name))
                    .min_by(|a, b| {
                        median(&mut a.round_medians.clone())
                            .total_cmp(&median(&mut b.round_medians.clone()))
                    })?;
                let (ours, peer) = (parity.ours, p.info.name);
                let unit = if o.ticks.is_empty() { "ns" } else { "ticks" };
                let (om, pm) = (
                    median(&mut o.round_medians.clone()),
                    median(&mut p.round_medians.clone()),
                );
                let at_or_below = o
                    .round_medians
                    .iter()
                    .zip(&p.round_medians)
                    .filter(|(a, b)| a <= b)
                    .count();
                let mut contended_met = true;
                let mut verdicts = vec![verdict(
                    om <= pm,
                    om - pm,
                    spread(&o.round_medians).max(spread(&p.round_medians)),
                )];
                let contended: Vec<Value> = self
                    .threads
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &threads)| {
                        // The best contended peer at this thread count: the highest median.
                        let p = parity
                            .contended
                            .iter()
                            .filter_map(|name| find(name))
                            .filter(|g| !g.contended[i].is_empty())
                            .max_by(|a, b| {
                                median(&mut a.contended[i].clone())
                                    .total_cmp(&median(&mut b.contended[i].clone()))
                            })?;
                        let ours_ops = median(&mut o.contended[i].clone());
                        let peer_ops = median(&mut p.contended[i].clone());
                        let pinned = threads <= self.cores.len();
                        let met = ours_ops >= peer_ops;
                        let noise = spread(&o.contended[i]).max(spread(&p.contended[i]));
                        let judged = verdict(met, peer_ops - ours_ops, noise);
                        if pinned && threads > 1 {
                            contended_met &= met;
                            verdicts.push(judged);
                        }
                        Some(json!({
                            "threads": threads,
                            "peer": p.info.name,
                            "pinned": pinned,
                            "ours_ops_per_s": ours_ops,
                            "peer_ops_per_s": peer_ops,
                            "ratio": ours_ops / peer_ops,
                            "met": met,
                            "noise_ops_per_s": noise,
                            "verdict": judged,
                        }))
                    })
                    .collect();
                let uncontended_met = om <= pm;
                let uncontended_verdict = verdicts[0];
                let worst = ["not-met", "within-noise"]
                    .into_iter()
                    .find(|w| verdicts.contains(w))
                    .unwrap_or("met");
                Some(json!({
                    "ours": ours,
                    "peer": peer,
                    "uncontended": {
                        "unit": unit,
                        "ours": om,
                        "peer": pm,
                        "ratio": om / pm,
                        "rounds_at_or_below_peer": at_or_below,
                        "rounds": o.round_medians.len().min(p.round_medians.len()),
                        "met": uncontended_met,
                        "noise": spread(&o.round_medians).max(spread(&p.round_medians)),
                        "verdict": uncontended_verdict,
                    },
                    "contended": contended,
                    "met": uncontended_met && contended_met,
                    "verdict": worst,
                }))
            })
            .collect()
    }
}

/// Half the range of `samples` (0 for fewer than two): the spread a difference must exceed to
/// count as one.
fn spread(samples: &[f64]) -> f64 {
    let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
    let max = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if samples.len() < 2 {
        0.0
    } else {
        (max - min) / 2.0
    }
}

/// A comparison's verdict: `met`, else `within-noise` when ours is worse by at most `noise`
/// (`worse_by`: how much ours is on the wrong side, in the samples' unit), else `not-met`.
fn verdict(met: bool, worse_by: f64, noise: f64) -> &'static str {
    if met {
        "met"
    } else if worse_by <= noise {
        "within-noise"
    } else {
        "not-met"
    }
}

/// `model name` from /proc/cpuinfo (Linux), else the architecture.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name") || l.starts_with("Model"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

/// CPUs listed in /proc/cpuinfo (`processor` lines), if readable.
fn online_cpus() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    Some(text.lines().filter(|l| l.starts_with("processor")).count()).filter(|&n| n > 0)
}

fn rtm_info() -> Value {
    #[cfg(target_arch = "x86_64")]
    let cpuid = std::is_x86_feature_detected!("rtm");
    #[cfg(not(target_arch = "x86_64"))]
    let cpuid = false;
    let usable = common::rtm_usable();
    let summary = match (cpuid, usable) {
        (_, true) => "yes",
        (true, false) => "advertised but disabled (RTM_ALWAYS_ABORT)",
        (false, false) => "no",
    };
    json!({ "cpuid_rtm": cpuid, "usable": usable, "summary": summary })
}

fn main() {
    let opts = options();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if opts.threads.is_empty() {
        common::default_threads(cpus)
    } else {
        opts.threads.clone()
    };
    let cores = core_affinity::get_core_ids().unwrap_or_default();
    let rounds = opts
        .rounds
        .unwrap_or(if opts.quick { QUICK_ROUNDS } else { ROUNDS });
    let mut runner = Runner {
        threads: threads.clone(),
        batches: if opts.quick { QUICK_BATCHES } else { BATCHES },
        duration: if opts.quick { QUICK_DURATION } else { DURATION },
        cores,
        locks: Vec::new(),
        round: (0, rounds),
        tsc: (0.0, 0.0),
    };
    let max_threads = threads.iter().copied().max().unwrap_or(1).max(2);
    let mut lock_cpus = 0;
    for round in 1..=rounds {
        runner.round.0 = round;
        lock_cpus = common::visit_subjects(max_threads, &mut runner);
    }

    let mut notes = Vec::new();
    if threads.iter().any(|&t| t > cpus) {
        notes.push(format!(
            "thread counts above {cpus} (the CPUs available) oversubscribe the machine: those \
             runs are not pinned, and spinning FIFO locks (clh, mcs, qspin, ticket, mcslock, clhlock, spin-ticket, hermit-ticket) stall \
             whenever the next owner in the queue is preempted."
        ));
    }
    if !common::rtm_usable() {
        notes.push(
            "no RTM on this CPU: the rtm lock always takes its fallback ticket lock, and the \
             empty-transaction reference point is not measured."
                .to_owned(),
        );
    }
    let tsc_ghz = (runner.tsc.1 > 0.0 && ticks().is_some()).then(|| runner.tsc.0 / runner.tsc.1);

    let report = json!({
        "schema": "locked-in/host-locks/1",
        "machine": {
            "cpu_model": cpu_model(),
            "logical_cpus": cpus,
            "online_cpus": online_cpus(),
            "arch": std::env::consts::ARCH,
            "os": std::env::consts::OS,
            "rtm": rtm_info(),
            "tsc_ghz": tsc_ghz,
        },
        "method": {
            "uncontended": format!(
                "1 thread, empty critical section, lock reached through black_box on every call \
                 (no hoisting across calls), {} batches of {BATCH_OPS} acquire+release per \
                 round timed with lfence;rdtsc;lfence and Instant, {rounds} rounds, per-op \
                 median of all batches",
                runner.batches
            ),
            "contended": format!(
                "T threads (pinned when T <= CPUs) acquire, increment a shared counter, release \
                 for {} ms; total ops/s, one run per round, {rounds} rounds",
                runner.duration.as_millis()
            ),
            "rounds": rounds,
            "parity": "ours beside the best peer of its kind, from the same rounds: \
                 uncontended, median of the per-round medians beside the best peer of the same \
                 algorithm (qspin: beside the best ticket lock, ours included) (met: ours <= \
                 peer); contended, median ops/s beside the best FIFO \
                 peer at each thread count (met: ours >= peer at every pinned thread count \
                 above 1); \
                 verdict within-noise: ours worse by less than half the range of either \
                 lock's per-round figures",
            "batch_ops": BATCH_OPS,
            "batches": runner.batches,
            "duration_ms": runner.duration.as_millis() as u64,
            "repeats": rounds,
            "threads": threads,
            "lock_cpus": lock_cpus,
            "quick": opts.quick,
            "profile": "bench (release with debug info)",
        },
        "locks": runner.locks_json(),
        "parity": runner.parity_json(),
        "notes": notes,
    });
    let text = serde_json::to_string_pretty(&report).expect("JSON serialisation") + "\n";
    match &opts.json {
        Some(path) => {
            if let Err(err) = std::fs::write(path, text) {
                eprintln!("host_table: cannot write {}: {err}", path.display());
                std::process::exit(1);
            }
        }
        None => print!("{text}"),
    }
}
