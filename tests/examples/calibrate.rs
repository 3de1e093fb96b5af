//! Calibrates the trace-replay simulator's cache model on this machine: measures with
//! real threads, pinned to host CPUs 0 and 1, what moving data between two cores costs, and
//! writes the measurements and the cache model of each kernel lock derived from them as a
//! [`sim::config::Calibration`] (JSON).
//!
//! ```text
//! cargo run --release -p tests --features trace --example calibrate -- \
//!     [--out target/sim/calibration.json] [--runs 3] [--per 10000] [--quick]
//! ```
//!
//! `cargo xtask sim --calibrate` runs it; `cargo xtask sim --trace F --calibration FILE --lock L`
//! replays a trace with lock `L`'s model.
//!
//! # What it measures (timestamp-counter cycles, `lfence; rdtsc`)
//! 1. **Line transfer**: two threads hand one atomic word (alone on its cache line) back and
//!    forth, each waiting for the other's value and writing the next; cycles per one-way hand-off
//!    over batches of 20,000 round trips, the median batch.
//! 2. **Locks** (the kernel's [`ClhLock`] and [`TicketLock`], spinning without yielding):
//!    * uncontended: one thread, lock and unlock in a loop, per pair, median batch;
//!    * cold extra: the two threads take turns at one lock and unlock each (so the lock was last
//!      held by the other core), timed, then a second, warm pair timed the same way; the
//!      difference of the means;
//!    * hand-off: one thread holds the lock while the other waits in `lock`; the holder reads
//!      the counter and releases, the waiter reads the counter when `lock` returns; the
//!      difference (both directions alternately, so that a counter offset between the CPUs
//!      cancels), less one counter read.
//!
//!    Means drop samples over 20 times the median (the host preempting a thread).
//! 3. **Kernel entries**: the hosted IPC workload (a caller and a server per core, their own
//!    objects) with tracing on, on one core, then on two cores taking turns
//!    ([`tests::RunConfig::alternate`]: one entry on core 0, one on core 1, ...): every entry
//!    comes right after the other core's, never two in the kernel at once (no lock waiting).
//!    Mean cycles per entry (entry to exit), per kernel lock, the median of `--runs` runs. The
//!    difference is what the lines the two cores share cost an entry: the lock's, and the
//!    kernel state both cores write. (The whole entry, not a part of it: the trace's timestamps
//!    are `rdtsc` without a fence, and a miss can be counted after the timestamp that follows
//!    it, so how an entry's extra splits between lock and data is not measured.)
//!
//! The models ([`sim::config::Calibration::derive`]): `line_transfer` from 1; `entry_lines`
//! from 3, divided by the line transfer (a line count measured by a run of its own, not fitted
//! to the simulator's validation); for the big locks `lock_handoff` from 2 (what waiting for a
//! release costs more than taking the free lock where the other core left it). How costs grow
//! beyond two cores (`per_sharer`, `per_waiter`) needs a machine with more cores and is left
//! at 0.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::time::Duration;

use kernel_locks::{CachePadded, ClhLock, KernelLock, Spin, TicketLock};
use sim::config::{Calibration, EntryCosts, LockCosts};
use sim::trace::Trace;
use tests::bench::{cpu_model, cycles, host_cpus, pin, tsc_hz, tsc_overhead};
use tests::tracing::{self, record, KernelLock as Kernel, Recording};

struct Args {
    out: std::path::PathBuf,
    runs: usize,
    per: usize,
    quick: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        out: "target/sim/calibration.json".into(),
        runs: 3,
        per: 10_000,
        quick: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--out" => a.out = v()?.into(),
            "--runs" => {
                a.runs = v()?
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or("--runs needs a positive number")?
            }
            "--per" => {
                a.per = v()?
                    .parse()
                    .ok()
                    .filter(|&n| (1..=30_000).contains(&n))
                    .ok_or("--per needs 1..=30000 (the trace rings' size)")?
            }
            "--quick" => a.quick = true,
            "--help" | "-h" => {
                return Err(
                    "usage: calibrate [--out FILE] [--runs N] [--per MESSAGES] [--quick]".into(),
                )
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    Ok(a)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(0.0)
}

/// The mean of the samples at most 20 times the median (larger ones: the host preempted a
/// thread).
fn robust_mean(v: &[f64]) -> f64 {
    let cap = 20.0 * median(v).max(1.0);
    let kept: Vec<f64> = v.iter().copied().filter(|&x| x <= cap).collect();
    kept.iter().sum::<f64>() / kept.len().max(1) as f64
}

/// Runs `a` pinned to CPU 0 and `b` pinned to CPU 1 at the same time.
fn on_two_cpus<A: Send, B: Send>(
    a: impl FnOnce() -> A + Send,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    std::thread::scope(|s| {
        let ha = s.spawn(|| {
            pin(0);
            a()
        });
        let hb = s.spawn(|| {
            pin(1);
            b()
        });
        (
            ha.join().expect("thread on CPU 0"),
            hb.join().expect("thread on CPU 1"),
        )
    })
}

fn wait_for(word: &AtomicU64, value: u64) {
    while word.load(Acquire) != value {
        std::hint::spin_loop();
    }
}

/// 1: cycles per one-way hand-off of one line, per batch.
fn line_transfer(batches: usize, rounds: u64) -> Vec<f64> {
    let line = CachePadded::new(AtomicU64::new(0));
    let total = batches as u64 * rounds;
    let (timed, ()) = on_two_cpus(
        || {
            let mut out = Vec::new();
            for b in 0..batches as u64 {
                let t0 = cycles();
                for i in b * rounds..(b + 1) * rounds {
                    line.store(2 * i + 1, Release);
                    wait_for(&line, 2 * i + 2);
                }
                out.push((cycles() - t0) as f64 / (2 * rounds) as f64);
            }
            out
        },
        || {
            for i in 0..total {
                wait_for(&line, 2 * i + 1);
                line.store(2 * i + 2, Release);
            }
        },
    );
    timed
}

/// 2: a lock's uncontended pair, cold extra and hand-off.
fn lock_costs<L: KernelLock>(lock: &L, samples: usize, overhead: u64) -> LockCosts {
    // Uncontended, one thread.
    let (batches, ()) = on_two_cpus(
        || {
            let mut out = Vec::new();
            for _ in 0..21 {
                let t0 = cycles();
                for _ in 0..10_000 {
                    lock.lock(0);
                    // SAFETY: CPU 0 took the lock just above.
                    unsafe { lock.unlock(0) };
                }
                out.push((cycles() - t0) as f64 / 10_000.0);
            }
            out
        },
        || (),
    );
    let uncontended = median(&batches);

    // Cold: the threads take turns; each times a first (cold) and a second (warm) pair.
    let turn = CachePadded::new(AtomicU64::new(0));
    let take_turns = |me: u64| {
        let cpu = me as usize;
        let (mut cold, mut warm) = (Vec::new(), Vec::new());
        for i in (me..2 * samples as u64).step_by(2) {
            wait_for(&turn, i);
            let t0 = cycles();
            lock.lock(cpu);
            // SAFETY: `cpu` took the lock just above.
            unsafe { lock.unlock(cpu) };
            let t1 = cycles();
            lock.lock(cpu);
            // SAFETY: as above.
            unsafe { lock.unlock(cpu) };
            let t2 = cycles();
            cold.push((t1 - t0) as f64);
            warm.push((t2 - t1) as f64);
            turn.store(i + 1, Release);
        }
        (cold, warm)
    };
    let ((c0, w0), (c1, w1)) = on_two_cpus(|| take_turns(0), || take_turns(1));
    let cold: Vec<f64> = c0.into_iter().chain(c1).collect();
    let warm: Vec<f64> = w0.into_iter().chain(w1).collect();
    let cold_extra = robust_mean(&cold) - robust_mean(&warm);

    // Hand-off: in round i the holder is CPU i % 2. Phases of `seq`: 3i the holder may lock,
    // 3i+1 it holds, 3i+2 the waiter is about to wait, 3i+3 the waiter has finished.
    let seq = CachePadded::new(AtomicU64::new(0));
    let stamp = CachePadded::new(AtomicU64::new(0));
    let play = |me: u64| {
        let cpu = me as usize;
        let mut out = Vec::new();
        for i in 0..samples as u64 {
            if i % 2 == me {
                wait_for(&seq, 3 * i);
                lock.lock(cpu);
                seq.store(3 * i + 1, Release);
                wait_for(&seq, 3 * i + 2);
                // Let the waiter get into `lock` and spin.
                let until = cycles() + 3000;
                while cycles() < until {
                    std::hint::spin_loop();
                }
                let t0 = cycles();
                stamp.store(t0, Relaxed);
                // SAFETY: `cpu` took the lock at the start of this round.
                unsafe { lock.unlock(cpu) };
            } else {
                wait_for(&seq, 3 * i + 1);
                seq.store(3 * i + 2, Release);
                lock.lock(cpu);
                let t1 = cycles();
                let t0 = stamp.load(Relaxed);
                // SAFETY: `cpu` took the lock just above.
                unsafe { lock.unlock(cpu) };
                out.push(t1.saturating_sub(t0) as f64);
                seq.store(3 * i + 3, Release);
            }
        }
        out
    };
    let (h0, h1) = on_two_cpus(|| play(0), || play(1));
    let handoffs: Vec<f64> = h0.into_iter().chain(h1).collect();
    LockCosts {
        uncontended,
        cold_extra,
        handoff: robust_mean(&handoffs) - overhead as f64,
    }
}

/// Mean cycles per entry, entry to exit.
fn entry_mean(t: &Trace) -> f64 {
    let total: Vec<f64> = t.records.iter().map(|r| f64::from(r.exit)).collect();
    robust_mean(&total)
}

/// 3: a kernel's entry costs on one core and on two cores taking turns.
fn entry_costs(lock: Kernel, runs: usize, per: usize, hz: u64) -> Result<EntryCosts, String> {
    let (mut one, mut alt) = (vec![], vec![]);
    for run in 0..runs {
        for (cores, alternate) in [(1, false), (2, true)] {
            let t = record(&Recording {
                cores,
                lock,
                per,
                alternate,
                frequency_hz: hz,
            })?;
            if alternate {
                alt.push(entry_mean(&t));
            } else {
                one.push(entry_mean(&t));
            }
        }
        eprintln!(
            "calibrate:   {} run {}: {:.0} cycles per entry on one core, {:.0} taking turns on two",
            lock.name(),
            run + 1,
            one[run],
            alt[run]
        );
    }
    Ok(EntryCosts {
        one_core: median(&one),
        alternating: median(&alt),
        runs,
    })
}

fn calibrate(a: &Args) -> Result<Calibration, String> {
    if host_cpus() < 2 {
        return Err("needs two host CPUs (this process may use fewer)".into());
    }
    let hz = tsc_hz(Duration::from_millis(200));
    let overhead = tsc_overhead();
    eprintln!(
        "calibrate: {} ({} CPUs), counter {:.3} GHz, {overhead} cycles per read",
        cpu_model(),
        host_cpus(),
        hz as f64 / 1e9
    );
    let (batches, rounds, samples) = if a.quick {
        (7, 2_000, 2_000)
    } else {
        (31, 20_000, 20_000)
    };
    eprintln!("calibrate: 1/3 line ping-pong between CPUs 0 and 1 ({batches} batches of {rounds} round trips)");
    let per_batch = line_transfer(batches, rounds);
    let line = median(&per_batch);
    eprintln!(
        "calibrate:   {line:.1} cycles per one-way hand-off (batches {:.1}..{:.1})",
        per_batch.iter().copied().fold(f64::INFINITY, f64::min),
        per_batch.iter().copied().fold(0.0, f64::max)
    );
    eprintln!("calibrate: 2/3 lock hand-off between CPUs 0 and 1 ({samples} samples each)");
    let mut locks = std::collections::BTreeMap::new();
    let clh = lock_costs(&ClhLock::<2, Spin>::new(), samples, overhead);
    let ticket = lock_costs(&TicketLock::with_cpus(2), samples, overhead);
    for (name, c) in [("clh", clh), ("ticket", ticket)] {
        eprintln!(
            "calibrate:   {name}: uncontended {:.1} cycles per lock+unlock, {:.1} more when the other core held it last, hand-off to a waiting core {:.1}",
            c.uncontended, c.cold_extra, c.handoff
        );
        locks.insert(name.to_string(), c);
    }
    let (runs, per) = if a.quick { (1, 2000) } else { (a.runs, a.per) };
    eprintln!("calibrate: 3/3 kernel entries, one core and two cores taking turns ({runs} runs of {per} messages per core)");
    let mut entries = std::collections::BTreeMap::new();
    let mut models = std::collections::BTreeMap::new();
    for k in Kernel::ALL {
        let e = entry_costs(k, runs, per, hz)?;
        let m = Calibration::derive(line, locks.get(k.name()), &e);
        eprintln!(
            "calibrate:   {}: {:.0} -> {:.0} cycles per entry: {} + {} lines of {} cycles (before \
             the lock + in it); lock hand-off {} cycles",
            k.name(),
            e.one_core,
            e.alternating,
            m.pre_lock_lines,
            m.entry_lines,
            m.line_transfer,
            m.lock_handoff
        );
        entries.insert(k.name().to_string(), e);
        models.insert(k.name().to_string(), m);
    }
    Ok(Calibration {
        machine: format!("{}, {} CPUs", cpu_model(), host_cpus()),
        method: format!(
            "examples/calibrate.rs{}: threads pinned to CPUs 0 and 1, lfence+rdtsc cycles; line: \
             one-way hand-off of one atomic line, median of {batches} batches of {rounds} round \
             trips; locks: uncontended lock+unlock (median batch), cold extra (turns, cold minus \
             warm pair), hand-off (release to waiter's acquisition, both directions, less one \
             counter read), {samples} samples, means without samples over 20x the median; \
             kernel entries: hosted IPC workload traced, 1 core vs 2 cores taking turns, mean \
             cycles per entry, median of {runs} runs of {per} messages per core; per_sharer and \
             per_waiter not measurable with two CPUs (0)",
            if a.quick { " --quick" } else { "" }
        ),
        unix_time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        frequency_hz: hz,
        line_transfer: line,
        locks,
        entries,
        models,
    })
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("calibrate: {e}");
            return ExitCode::FAILURE;
        }
    };
    let c = match calibrate(&a) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("calibrate: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = tracing::write_output(&a.out, c.to_json().as_bytes()) {
        eprintln!("calibrate: {e}");
        return ExitCode::FAILURE;
    }
    eprintln!("calibrate: wrote {}", a.out.display());
    ExitCode::SUCCESS
}
