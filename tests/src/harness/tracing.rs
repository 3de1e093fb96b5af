//! Recording kernel lock traces in the hosted harness (the `trace` feature): the IPC workload
//! (one private caller/server pair per kernel core, [`workload::ipc`]) on a kernel with tracing
//! on, every entry recorded on its core, returned as a [`sim::trace::Trace`].
//! [`record_client_server`] records the client-server workload instead (a client on every core
//! Calling one server on core 0, [`workload::client_server`]): the same checks, but the cores
//! share the endpoint and the server's TCB, which is what the fine-grained kernel's object locks
//! in the trace show and what the simulator's per-object locks replay.
//!
//! `examples/trace_hosted.rs` writes such a trace to a file, and `examples/calibrate.rs` records
//! the same workload with the cores taking turns ([`RunConfig::alternate`]) to measure what a
//! kernel entry costs right after another core's. [`record_memory`] records the memory
//! benchmark's workload instead (per-core or global user-level pagers serving page faults,
//! [`crate::bench::memory`]): the pager workload the simulator predicts for more cores.
//!
//! The cores' host threads are pinned one per host CPU when there are enough CPUs and start
//! together ([`RunConfig::start_together`]): without that, a run of a few milliseconds could end
//! on the first core before the host started the second, and a "2-core" trace would be two
//! 1-core runs one after the other.

use std::sync::Mutex;
use std::time::Duration;

use kernel::trace::{Record, Tracer};
use kernel::{BigLock, FineGrained, Kernel, NoLock, Strategy};
use kernel_locks::{ClhLock, TicketLock};
use sim::trace::Trace;

use super::{run, workload, FakeHal, HostRelax, Programs, RunConfig};

/// Records per core the rings keep: enough for 30,000 messages per core (about two entries per
/// message).
pub const RING: usize = 1 << 16;

static TRACER: Tracer<RING> = Tracer::new();
/// One recording at a time: they share [`TRACER`].
static BUSY: Mutex<()> = Mutex::new(());

pub use sim::config::KernelLock;

/// What to record.
#[derive(Clone, Copy, Debug)]
pub struct Recording {
    /// Kernel cores (host threads), `1..=MAX_CPUS`.
    pub cores: usize,
    /// The kernel's lock.
    pub lock: KernelLock,
    /// Messages each caller sends.
    pub per: usize,
    /// Whether the cores take turns ([`RunConfig::alternate`]).
    pub alternate: bool,
    /// The trace's timestamp frequency in Hz (the host TSC's, [`crate::bench::tsc_hz`]).
    pub frequency_hz: u64,
}

/// Which IPC workload [`record_with`] builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// [`workload::ipc`]: one private caller/server pair per core.
    Pairs,
    /// [`workload::client_server`]: a client per core, one server on core 0.
    ClientServer,
}

/// Writes `bytes` to `path`, making its folder first: the output of the examples that record
/// (`examples/trace_hosted.rs`, `examples/calibrate.rs`). The error names the path.
pub fn write_output(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Records the IPC workload as `what` says.
pub fn record(what: &Recording) -> Result<Trace, String> {
    record_layout(what, Layout::Pairs)
}

/// Records the client-server workload ([`workload::client_server`]): one server on core 0,
/// a client on every core making `what.per` Calls. Refuses lock `none`: the cores share the
/// server's endpoint, TCB and run queue, so a kernel without a lock would race on them.
pub fn record_client_server(what: &Recording) -> Result<Trace, String> {
    record_layout(what, Layout::ClientServer)
}

fn record_layout(what: &Recording, layout: Layout) -> Result<Trace, String> {
    if !(1..=kernel::config::MAX_CPUS).contains(&what.cores) {
        return Err(format!(
            "{} cores: the kernel supports 1..={}",
            what.cores,
            kernel::config::MAX_CPUS
        ));
    }
    let _one = BUSY.lock().unwrap_or_else(|e| e.into_inner());
    let n = what.cores;
    match what.lock {
        KernelLock::Clh => record_with(
            BigLock::new(ClhLock::<{ kernel::config::MAX_CPUS }, HostRelax>::new()),
            what,
            layout,
        ),
        KernelLock::Ticket => record_with(
            BigLock::new(TicketLock::<HostRelax>::with_relax_and_cpus(n)),
            what,
            layout,
        ),
        KernelLock::Fine => record_with(FineGrained::<HostRelax>::new(), what, layout),
        KernelLock::None if layout == Layout::ClientServer => Err(
            "lock none cannot run the client-server workload: every core's client Calls the \
             one server, so the cores share its endpoint, TCB and run queue; record clh, \
             ticket or fine"
                .into(),
        ),
        KernelLock::None => record_with(
            // SAFETY: `workload::ipc` without its shared part gives each core one caller and one
            // server of its own, on their own endpoint and park notifications, all set up
            // before the run; during the run each core runs only its own threads, which make
            // only IPC and wait calls on those objects (no management call), and the harness
            // enters the kernel only for them, timer ticks and IPIs (none sent by IPC between
            // threads of one core).
            unsafe { NoLock::new() },
            what,
            layout,
        ),
    }
}

fn record_with<S: Strategy>(strategy: S, a: &Recording, layout: Layout) -> Result<Trace, String> {
    // The rings are written only by the cores' threads of a run, and none runs now.
    for cpu in 0..kernel::config::MAX_CPUS {
        TRACER.ring(cpu).reset();
    }
    let mut k = Box::new(Kernel::new(strategy, FakeHal::new(a.cores), a.cores));
    k.set_tracer(&TRACER);
    let programs = Programs::new();
    let w = match layout {
        Layout::Pairs => workload::ipc(&mut k, &programs, a.per, false, 1),
        Layout::ClientServer => workload::client_server(&mut k, &programs, a.per),
    };
    let cfg = RunConfig {
        timeout: Duration::from_secs(120),
        start_together: true,
        pin: true,
        alternate: a.alternate,
        ..RunConfig::default()
    };
    let stats = run(&k, &programs, cfg, || w.ledger.complete())?;
    w.verify()?;
    let mut records = Vec::new();
    for cpu in 0..a.cores {
        let mut out = vec![Record::EMPTY; RING];
        let snap = TRACER.ring(cpu).snapshot(&mut out);
        if snap.lost > 0 {
            return Err(format!(
                "cpu {cpu}: {} records did not fit the ring of {RING}: fewer messages",
                snap.lost
            ));
        }
        records.extend_from_slice(&out[..snap.copied]);
    }
    if records.len() as u64 != stats.entries {
        return Err(format!(
            "{} records for {} kernel entries",
            records.len(),
            stats.entries
        ));
    }
    Ok(Trace {
        cores: a.cores as u16,
        strategy: a.lock.recorded_as(),
        frequency_hz: a.frequency_hz,
        records,
    })
}

/// What to record of the memory benchmark's workload ([`crate::bench::memory`]).
#[derive(Clone, Copy, Debug)]
pub struct MemoryRecording {
    /// Kernel cores (= workers), `1..=MAX_CPUS`.
    pub cores: usize,
    /// The kernel's lock: a big lock (`clh`, `ticket`); `none` on 1 core only. Not `fine`:
    /// the pagers' mapping calls take its exclusive side (the writer of the big-reader lock),
    /// which none of the simulator's strategies stands for.
    pub lock: KernelLock,
    /// Pages per task.
    pub pages: usize,
    /// One pager on core 0 for all cores instead of one per core.
    pub global: bool,
    /// Tasks per worker (after one untimed warm-up task).
    pub tasks: usize,
    /// The trace's timestamp frequency in Hz.
    pub frequency_hz: u64,
}

/// Records the memory workload as `what` says: every kernel entry of the run (page faults,
/// the pagers' replies and mapping calls, the workers' free requests).
pub fn record_memory(what: &MemoryRecording) -> Result<Trace, String> {
    use crate::bench::memory::{run_point_traced, Mode, Workload, MAX_PAGES};
    use crate::bench::Lock;
    if !(1..=kernel::config::MAX_CPUS).contains(&what.cores) {
        return Err(format!(
            "{} cores: the kernel supports 1..={}",
            what.cores,
            kernel::config::MAX_CPUS
        ));
    }
    if !(1..=MAX_PAGES).contains(&what.pages) {
        return Err(format!("{} pages: 1..={MAX_PAGES} per task", what.pages));
    }
    let lock = match what.lock {
        KernelLock::Clh => Lock::Clh,
        KernelLock::Ticket => Lock::Ticket,
        KernelLock::None if what.cores == 1 => Lock::None,
        KernelLock::None => {
            return Err("lock none runs the memory workload on 1 core only".into());
        }
        KernelLock::Fine => {
            return Err(
                "lock fine: the pagers' mapping calls take its exclusive side, which the \
                 simulator does not model; record clh or ticket"
                    .into(),
            );
        }
    };
    let _one = BUSY.lock().unwrap_or_else(|e| e.into_inner());
    // The rings are written only by the cores' threads of a run, and none runs now.
    for cpu in 0..kernel::config::MAX_CPUS {
        TRACER.ring(cpu).reset();
    }
    let w = Workload {
        mode: if what.global {
            Mode::Global
        } else {
            Mode::PerCore
        },
        cores: what.cores,
        pages: what.pages,
        tasks: what.tasks.max(1),
        warmup: 1,
        ipc_batch: 0,
        algorithm: pager::Algorithm::Avl,
    };
    let outcome = run_point_traced(lock, w, &TRACER)
        .ok_or_else(|| format!("lock {lock:?} cannot run {} cores", what.cores))?;
    let problems = outcome.problems();
    if !problems.is_empty() {
        return Err(format!(
            "the workload's checks failed: {}",
            problems.join("; ")
        ));
    }
    let mut records = Vec::new();
    for cpu in 0..what.cores {
        let mut out = vec![Record::EMPTY; RING];
        let snap = TRACER.ring(cpu).snapshot(&mut out);
        if snap.lost > 0 {
            return Err(format!(
                "cpu {cpu}: {} records did not fit the ring of {RING}: fewer pages or tasks",
                snap.lost
            ));
        }
        records.extend_from_slice(&out[..snap.copied]);
    }
    if records.is_empty() {
        return Err("the run recorded no kernel entry".into());
    }
    Ok(Trace {
        cores: what.cores as u16,
        strategy: what.lock.recorded_as(),
        frequency_hz: what.frequency_hz,
        records,
    })
}
