//! The trace-replay discrete-event simulator (the thesis's model, plus a cache model).
//!
//! Why replay rather than a synthetic load: the recorded trace already holds what a workload
//! does between and inside kernel entries on real hardware; what we cannot record is how it would
//! behave on more cores than we have. So every recorded entry becomes a chain of events on a
//! simulated core:
//!
//! | event | duration |
//! |---|---|
//! | user | recorded time since the previous exit (for the first entry, since the trace's start) |
//! | mode switch | configured extra cost (0 replays the recorded kernel) |
//! | shared lines | the cache model's kernel-entry cost before the lock (0 without it) |
//! | kernel (before the lock) | recorded `lock_requested` |
//! | lock entry | configured entry latency (+ the cache model's hand-off cost); waits while the lock is held; without a lock, the recorded entry up to that latency |
//! | shared lines | the cache model's kernel-entry cost in the critical section (0 without it) |
//! | critical section | recorded `lock_released - lock_acquired` (less recorded object waits) |
//! | lock exit | configured exit latency; releases the lock at its end |
//! | kernel (after the lock) | recorded `exit - lock_released`, less the exit latency |
//! | mode switch | configured extra cost |
//!
//! Our trace, unlike the thesis's, has entry and exit timestamps, so the recorded gap between an
//! exit and the next entry already contains the hardware's mode switches; the configured
//! mode-switch cost is therefore an extra cost on top of them (a what-if: a slower trap path),
//! charged twice per entry, and 0 replays the recorded kernel. Recorded lock waits are dropped: waiting is what the simulation recomputes. Under
//! fine-grained locking the critical section is split at each object lock's request, and each
//! object lock is a lock of its own; all are released together at the end (two-phase, as seL4's
//! fine-grained kernel does). Held to the end, locks taken in the recorded order could deadlock
//! (a recording kernel that releases between phases may take A then B in one entry and B then A
//! in another), so the replay takes an entry's object locks in increasing id order at its
//! recorded request times (the k-th smallest id at the k-th request): one total order for every
//! core, hence no deadlock; a kernel whose ids follow its lock order (ours: see
//! `kernel::strategy::LockId::trace_id`) keeps its own order. Under no lock the chain has no lock events. The cache model's
//! kernel-entry cost comes in two parts: the lines moved before the lock right after the mode
//! switch in, those of the critical section right after the big lock's acquisition, after the
//! first object lock's, or (no lock) where the lock would be requested; see [`CacheModel`].
//!
//! Simulated core `s` replays the rows of recorded core `s mod recorded cores` (object locks only
//! that recorded core took become a copy per replaying core, see `Sim::lock_index`), every core starts
//! at the trace's first entry, and stepping always advances the shortest runnable event: all
//! running events progress by that much, blocked lock entries wait in FIFO order (a CLH or
//! ticket lock's order). Ties resolve by core number and nothing depends on hash order or
//! wall-clock time, so the output is a pure function of trace and configuration.
//!
//! Because the configured entry latency replaces the recorded one, replaying an uncontended trace on its recorded core count, with the entry
//! latency it was recorded with, reproduces its run time exactly (tested).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::config::{Bucket, CacheModel, Config, LockLatency, LockStrategy};
use crate::trace::{Record, Trace};

/// Why a simulation could not run.
#[derive(Debug, PartialEq, Eq)]
pub enum SimError {
    /// The configuration is invalid.
    Config(String),
    /// The trace has no records.
    EmptyTrace,
    /// Every unfinished core waits for a lock another waiting core holds (fine-grained locks
    /// taken in inconsistent orders in the trace).
    Deadlock {
        /// Simulated time of the deadlock, in cycles.
        at: u64,
        /// The cores that wait.
        cores: Vec<usize>,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Config(why) => write!(f, "{why}"),
            SimError::EmptyTrace => write!(f, "the trace has no records"),
            SimError::Deadlock { at, cores } => {
                write!(
                    f,
                    "deadlock at cycle {at}: cores {cores:?} wait for each other's locks"
                )
            }
        }
    }
}

impl std::error::Error for SimError {}

/// One simulated core's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoreResult {
    /// The recorded core whose rows it replayed.
    pub recorded_core: u16,
    /// Kernel entries it replayed.
    pub entries: u64,
    /// When it finished its last event, in cycles from the start.
    pub finish_cycles: u64,
    /// Cycles it waited for locks held by other cores.
    pub lock_wait_cycles: u64,
    /// Cycles the cache model added to its lock entries.
    pub cache_cycles: u64,
}

/// A simulation's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimResult {
    /// The strategy simulated.
    pub strategy: LockStrategy,
    /// Cores simulated.
    pub simulated_cores: usize,
    /// Whether the cache model was on.
    pub cache_model: bool,
    /// Cycles until the last core finished.
    pub run_cycles: u64,
    /// Kernel entries replayed on all cores.
    pub entries: u64,
    /// Entries per second at the trace's timestamp frequency.
    pub throughput_per_s: f64,
    /// Cycles all cores waited for locks.
    pub lock_wait_cycles: u64,
    /// Cycles the cache model added on all cores.
    pub cache_cycles: u64,
    /// Per simulated core.
    pub per_core: Vec<CoreResult>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Runs for the given cycles.
    Work(u64),
    /// Acquires lock `lock` (an index), then runs for the entry latency plus cache cost.
    Acquire(usize),
    /// Runs for the exit latency, then releases every lock the core holds.
    Release(u64),
    /// Runs for the cache model's kernel-entry cost before the lock (and counts the entry);
    /// leaves the cost of the critical section's lines for [`Step::Shared`].
    SharedPre,
    /// Runs for the cache model's kernel-entry cost in the critical section.
    Shared,
}

/// Entries per second of `entries` entries in `cycles` cycles at `hz`.
fn throughput(entries: u64, cycles: u64, hz: u64) -> f64 {
    if cycles == 0 {
        return 0.0;
    }
    entries as f64 * hz as f64 / cycles as f64
}

/// A recorded run's throughput: entries per second over first entry to last exit.
pub fn recorded_throughput(trace: &Trace) -> f64 {
    throughput(
        trace.records.len() as u64,
        trace.end() - trace.start(),
        trace.frequency_hz,
    )
}

/// xorshift64*: a small deterministic generator for latency draws.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, stream: u64) -> Rng {
        // splitmix64 of the seed and stream, never zero.
        let mut z = seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick(&mut self, buckets: &[Bucket]) -> u64 {
        let total: u64 = buckets.iter().map(|b| b.weight).sum();
        let mut x = self.next() % total;
        for b in buckets {
            if x < b.weight {
                return b.cycles;
            }
            x -= b.weight;
        }
        unreachable!("x < total")
    }
}

enum State {
    Running,
    Waiting { since: u64 },
    Done,
}

struct Core<'t> {
    rows: &'t [Record],
    next_row: usize,
    prev_end: u64,
    steps: VecDeque<Step>,
    remaining: u64,
    /// Whether the step in `remaining` is a `Release` (locks go at its end).
    releasing: bool,
    /// The cache model's cost of this entry's critical-section lines, due at its
    /// [`Step::Shared`].
    shared_due: u64,
    state: State,
    held: Vec<usize>,
    rng: Rng,
    result: CoreResult,
}

struct Lock {
    owner: Option<usize>,
    queue: VecDeque<usize>,
    /// Acquisitions so far; `last_taken[c]` is the value when core `c` last took it.
    taken: u64,
    last_taken: Vec<u64>,
}

struct Sim<'t> {
    cfg: &'t Config,
    locks: Vec<Lock>,
    /// Lock of each (object id, replica); see [`Sim::lock_index`].
    objects: BTreeMap<(u32, usize), usize>,
    /// Objects that only one recorded core locked (that core's own).
    private: BTreeSet<u32>,
    /// Recorded cores.
    recorded_cores: usize,
    now: u64,
    /// Kernel entries that reached their [`Step::Shared`] so far; `last_entered[c]` is the
    /// value when core `c` last did.
    entered: u64,
    last_entered: Vec<u64>,
    /// When each running core's current step ends, earliest first (one entry per running
    /// core: a running step is never interrupted).
    agenda: BinaryHeap<Reverse<(u64, usize)>>,
}

impl Sim<'_> {
    /// The simulated lock of `object` as simulated core `sim_core` sees it. An object only one
    /// recorded core locked is that core's own (its private endpoint, its threads, its run
    /// queue): each simulated core replaying that core's rows gets a copy of its own, as a
    /// larger machine running the same workload per core would have. Objects several recorded
    /// cores locked are one lock for every simulated core.
    fn lock_index(&mut self, object: u32, sim_core: usize, cores: usize) -> usize {
        let replica = if self.private.contains(&object) {
            sim_core / self.recorded_cores
        } else {
            0
        };
        let next = self.locks.len();
        let i = *self.objects.entry((object, replica)).or_insert(next);
        if i == next {
            self.locks.push(Lock {
                owner: None,
                queue: VecDeque::new(),
                taken: 0,
                last_taken: vec![0; cores],
            });
        }
        i
    }

    fn exit_latency(&self, rng: &mut Rng) -> u64 {
        match &self.cfg.lock_latency {
            LockLatency::Fixed { exit, .. } => *exit,
            LockLatency::Distribution { exit, .. } => rng.pick(exit),
        }
    }

    fn entry_latency(&self) -> u64 {
        match &self.cfg.lock_latency {
            LockLatency::Fixed { entry, .. } | LockLatency::Distribution { entry, .. } => *entry,
        }
    }

    /// The event chain of one recorded entry (see the module documentation), appended to `v`
    /// (the core's step queue, empty: no allocation per entry).
    fn chain(
        &mut self,
        r: &Record,
        sim_core: usize,
        prev_end: u64,
        rng: &mut Rng,
        cores: usize,
        v: &mut VecDeque<Step>,
    ) {
        let ms = self.cfg.mode_switch_cost;
        let gap = r.entry.saturating_sub(prev_end);
        let object_wait: u64 = r.object_locks().iter().map(|o| u64::from(o.wait)).sum();
        let pre = u64::from(r.lock_requested);
        let held = u64::from(r.lock_held()).saturating_sub(object_wait);
        let exit_lat = if self.cfg.strategy == LockStrategy::NoLock {
            0
        } else {
            self.exit_latency(rng)
        };
        let post = u64::from(r.exit - r.lock_released).saturating_sub(exit_lat);
        // The cache model's kernel-entry costs, at the start of the entry and of the critical
        // section.
        let m = &self.cfg.cache;
        let (shared_pre, shared) = if m.enabled && (m.entry_lines > 0.0 || m.pre_lock_lines > 0.0) {
            (Step::SharedPre, Step::Shared)
        } else {
            (Step::Work(0), Step::Work(0))
        };
        v.extend([Step::Work(gap), Step::Work(ms), shared_pre]);
        let objects = r.object_locks();
        match self.cfg.strategy {
            LockStrategy::BigLock => {
                let big = self.lock_index(u32::MAX, 0, cores);
                v.extend([
                    Step::Work(pre),
                    Step::Acquire(big),
                    shared,
                    Step::Work(held),
                    Step::Release(exit_lat),
                    Step::Work(post),
                ]);
            }
            LockStrategy::FineGrained if !objects.is_empty() => {
                // Recorded offsets, with the big lock's wait (a lock this strategy lacks) and
                // each object lock's wait taken out: the simulation recomputes the waits.
                let big_wait = u64::from(r.lock_wait());
                // Ids in increasing order at the requests in time order (see the module doc).
                let mut ids = [0u32; crate::trace::MAX_OBJECTS];
                let mut requests = [0u64; crate::trace::MAX_OBJECTS];
                for (i, o) in objects.iter().enumerate() {
                    ids[i] = o.id;
                    requests[i] = u64::from(o.acquired - o.wait).saturating_sub(big_wait);
                }
                let n = objects.len();
                ids[..n].sort_unstable();
                requests[..n].sort_unstable();
                let mut t = pre;
                for (i, (&id, &request)) in ids[..n].iter().zip(&requests[..n]).enumerate() {
                    v.push_back(Step::Work(request.saturating_sub(t)));
                    let lock = self.lock_index(id, sim_core, cores);
                    v.push_back(Step::Acquire(lock));
                    if i == 0 {
                        v.push_back(shared);
                    }
                    t = t.max(request);
                }
                let released = u64::from(r.lock_released).saturating_sub(big_wait + object_wait);
                v.extend([
                    Step::Work(released.saturating_sub(t)),
                    Step::Release(exit_lat),
                    Step::Work(post),
                ]);
            }
            LockStrategy::FineGrained | LockStrategy::NoLock => {
                // No lock to wait for, but entering the section still costs what the record
                // shows up to the uncontended entry latency (a lock-free kernel's record has
                // the timestamp reads there; a big-lock record replayed as a what-if keeps its
                // uncontended acquisition, not its waiting).
                let enter = u64::from(r.lock_wait()).min(self.entry_latency());
                v.extend([Step::Work(pre + enter), shared, Step::Work(held + post)]);
            }
        }
        v.push_back(Step::Work(ms));
    }

    /// The cache model's cost for core `c` taking lock `l`, with `waiters` still queued;
    /// `waited`: whether `c` waited for the lock (else it found it free).
    fn cache_cost(&self, c: usize, l: usize, waiters: usize, waited: bool) -> u64 {
        let m: &CacheModel = &self.cfg.cache;
        let lock = &self.locks[l];
        if !m.enabled || lock.taken == 0 || lock.last_taken[c] == lock.taken {
            return 0;
        }
        let sharers = others_since(&lock.last_taken, c);
        let own = if waited { m.lock_handoff } else { m.lock_cold };
        own + m.data_lines * m.line_transfer
            + (1 + m.data_lines) * m.per_sharer * sharers.saturating_sub(1)
            + m.per_waiter * waiters as u64
    }

    /// The cache model's kernel-entry costs for core `c` (see [`CacheModel`]): before the lock
    /// and in the critical section; counts the entry.
    fn entry_cost(&mut self, c: usize) -> (u64, u64) {
        let m: &CacheModel = &self.cfg.cache;
        let sharers = others_since(&self.last_entered, c);
        self.entered += 1;
        self.last_entered[c] = self.entered;
        if !m.enabled || sharers == 0 {
            return (0, 0);
        }
        let per_line = (m.line_transfer + m.per_sharer * (sharers - 1)) as f64;
        let cost = |lines: f64| (lines * per_line).round().max(0.0) as u64;
        (cost(m.pre_lock_lines), cost(m.entry_lines))
    }
}

/// How many cores other than `c` have a mark above `c`'s in `last` (touched the line since
/// `c` last did).
fn others_since(last: &[u64], c: usize) -> u64 {
    let mine = last[c];
    last.iter()
        .enumerate()
        .filter(|&(d, &t)| d != c && t > mine)
        .count() as u64
}

/// The object locks only one recorded core took.
fn private_objects(trace: &Trace) -> BTreeSet<u32> {
    let mut first: BTreeMap<u32, Option<u16>> = BTreeMap::new();
    for r in &trace.records {
        for o in r.object_locks() {
            let e = first.entry(o.id).or_insert(Some(r.core));
            if *e != Some(r.core) {
                *e = None;
            }
        }
    }
    first
        .into_iter()
        .filter_map(|(id, core)| core.map(|_| id))
        .collect()
}

/// Replays `trace` under `cfg`.
pub fn simulate(trace: &Trace, cfg: &Config) -> Result<SimResult, SimError> {
    cfg.validate()
        .map_err(|e| SimError::Config(e.to_string()))?;
    if trace.records.is_empty() {
        return Err(SimError::EmptyTrace);
    }
    let k = cfg.simulated_cores;
    let recorded: Vec<Vec<Record>> = (0..trace.cores).map(|c| trace.core_records(c)).collect();
    let start = trace.start();
    let seed = match &cfg.lock_latency {
        LockLatency::Distribution { seed, .. } => *seed,
        LockLatency::Fixed { .. } => 0,
    };
    let mut cores: Vec<Core> = (0..k)
        .map(|s| {
            let rc = (s % usize::from(trace.cores)) as u16;
            Core {
                rows: &recorded[usize::from(rc)],
                next_row: 0,
                prev_end: start,
                steps: VecDeque::new(),
                remaining: 0,
                releasing: false,
                shared_due: 0,
                state: State::Running,
                held: Vec::new(),
                rng: Rng::new(seed, s as u64),
                result: CoreResult {
                    recorded_core: rc,
                    entries: 0,
                    finish_cycles: 0,
                    lock_wait_cycles: 0,
                    cache_cycles: 0,
                },
            }
        })
        .collect();
    let mut sim = Sim {
        cfg,
        locks: Vec::new(),
        objects: BTreeMap::new(),
        private: private_objects(trace),
        recorded_cores: usize::from(trace.cores),
        now: 0,
        entered: 0,
        last_entered: vec![0; k],
        agenda: BinaryHeap::with_capacity(k),
    };
    for c in 0..k {
        advance(&mut sim, &mut cores, c);
    }
    let mut due = Vec::with_capacity(k);
    loop {
        // Hand free locks to the first core in their queue.
        for l in 0..sim.locks.len() {
            if sim.locks[l].owner.is_some() {
                continue;
            }
            let Some(c) = sim.locks[l].queue.pop_front() else {
                continue;
            };
            let waiters = sim.locks[l].queue.len();
            let waited = matches!(cores[c].state, State::Waiting { since } if since < sim.now);
            let cost = sim.cache_cost(c, l, waiters, waited);
            let lock = &mut sim.locks[l];
            lock.owner = Some(c);
            lock.taken += 1;
            lock.last_taken[c] = lock.taken;
            let core = &mut cores[c];
            if let State::Waiting { since, .. } = core.state {
                core.result.lock_wait_cycles += sim.now - since;
            }
            core.held.push(l);
            core.result.cache_cycles += cost;
            core.remaining = sim.entry_latency() + cost;
            core.state = State::Running;
            sim.agenda.push(Reverse((sim.now + core.remaining, c)));
        }
        // The running steps that end first, all of those that end then, in core order (ties
        // resolve by core number).
        let Some(&Reverse((at, _))) = sim.agenda.peek() else {
            let waiting: Vec<usize> = (0..k)
                .filter(|&c| matches!(cores[c].state, State::Waiting { .. }))
                .collect();
            if waiting.is_empty() {
                break;
            }
            return Err(SimError::Deadlock {
                at: sim.now,
                cores: waiting,
            });
        };
        sim.now = at;
        due.clear();
        while let Some(&Reverse((t, c))) = sim.agenda.peek() {
            if t != at {
                break;
            }
            sim.agenda.pop();
            due.push(c);
        }
        due.sort_unstable();
        for &c in &due {
            cores[c].remaining = 0;
            if cores[c].releasing {
                for l in std::mem::take(&mut cores[c].held) {
                    sim.locks[l].owner = None;
                }
            }
            advance(&mut sim, &mut cores, c);
        }
    }
    let per_core: Vec<CoreResult> = cores.into_iter().map(|c| c.result).collect();
    let run_cycles = per_core.iter().map(|c| c.finish_cycles).max().unwrap_or(0);
    let entries = per_core.iter().map(|c| c.entries).sum();
    Ok(SimResult {
        strategy: cfg.strategy,
        simulated_cores: k,
        cache_model: cfg.cache.enabled,
        run_cycles,
        entries,
        throughput_per_s: throughput(entries, run_cycles, trace.frequency_hz),
        lock_wait_cycles: per_core.iter().map(|c| c.lock_wait_cycles).sum(),
        cache_cycles: per_core.iter().map(|c| c.cache_cycles).sum(),
        per_core,
    })
}

/// Moves core `c` to its next step (building the next row's chain when its queue is empty).
fn advance(sim: &mut Sim<'_>, cores: &mut [Core<'_>], c: usize) {
    let k = cores.len();
    let core = &mut cores[c];
    core.releasing = false;
    loop {
        match core.steps.pop_front() {
            Some(Step::Work(n)) => {
                core.remaining = n;
                core.state = State::Running;
            }
            Some(Step::SharedPre) => {
                let (pre, inside) = sim.entry_cost(c);
                core.result.cache_cycles += pre + inside;
                core.shared_due = inside;
                core.remaining = pre;
                core.state = State::Running;
            }
            Some(Step::Shared) => {
                core.remaining = std::mem::take(&mut core.shared_due);
                core.state = State::Running;
            }
            Some(Step::Release(n)) => {
                core.remaining = n;
                core.releasing = true;
                core.state = State::Running;
            }
            Some(Step::Acquire(l)) => {
                if core.held.contains(&l) {
                    // The same object twice in one entry: already ours.
                    core.remaining = sim.entry_latency();
                    core.state = State::Running;
                } else {
                    sim.locks[l].queue.push_back(c);
                    core.state = State::Waiting { since: sim.now };
                }
            }
            None => {
                if core.next_row == core.rows.len() {
                    core.state = State::Done;
                    core.result.finish_cycles = sim.now;
                    return;
                }
                let r = core.rows[core.next_row];
                core.next_row += 1;
                core.result.entries += 1;
                sim.chain(&r, c, core.prev_end, &mut core.rng, k, &mut core.steps);
                core.prev_end = r.exit_at();
                continue;
            }
        }
        if matches!(core.state, State::Running) {
            sim.agenda.push(Reverse((sim.now + core.remaining, c)));
        }
        return;
    }
}

/// One point of a throughput-vs-cores prediction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The strategy simulated.
    pub strategy: LockStrategy,
    /// Cores simulated.
    pub simulated_cores: usize,
    /// Cycles until the last core finished.
    pub run_cycles: u64,
    /// Predicted kernel entries per second.
    pub throughput_per_s: f64,
    /// Fraction of all cores' time spent waiting for locks.
    pub lock_wait_fraction: f64,
}

/// Predicted throughput against simulated cores, per strategy: the output of `cargo xtask sim`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// Cores the trace was recorded on.
    pub recorded_cores: u16,
    /// Timestamp frequency of the trace.
    pub frequency_hz: u64,
    /// The recorded run's throughput (entries per second).
    pub recorded_throughput_per_s: f64,
    /// Whether the cache model was on.
    pub cache_model: bool,
    /// One point per strategy and core count, strategies in [`LockStrategy::ALL`] order.
    pub points: Vec<SweepPoint>,
}

impl Sweep {
    /// The sweep as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Sweep always serialises")
    }
}

/// Simulates `trace` on each of `cores` simulated cores under each of `strategies`, with the
/// rest of the configuration from `base` (its `simulated_cores` and `strategy` are ignored).
pub fn sweep(
    trace: &Trace,
    base: &Config,
    cores: impl IntoIterator<Item = usize> + Clone,
    strategies: &[LockStrategy],
) -> Result<Sweep, SimError> {
    let mut points = Vec::new();
    for &strategy in strategies {
        for k in cores.clone() {
            let cfg = Config {
                simulated_cores: k,
                strategy,
                ..base.clone()
            };
            let r = simulate(trace, &cfg)?;
            let busy = (r.run_cycles as f64) * k as f64;
            points.push(SweepPoint {
                strategy,
                simulated_cores: k,
                run_cycles: r.run_cycles,
                throughput_per_s: r.throughput_per_s,
                lock_wait_fraction: if busy > 0.0 {
                    r.lock_wait_cycles as f64 / busy
                } else {
                    0.0
                },
            });
        }
    }
    Ok(Sweep {
        recorded_cores: trace.cores,
        frequency_hz: trace.frequency_hz,
        recorded_throughput_per_s: recorded_throughput(trace),
        cache_model: base.cache.enabled,
        points,
    })
}
