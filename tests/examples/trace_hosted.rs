//! Records a kernel lock trace in the hosted harness (the kernel's `trace` feature) and writes
//! it as a `sim` trace file: the kernel on `--cores` host threads running the IPC workload (a
//! caller and a server per core), with `--workload client-server` the client-server workload (a
//! client on every core Calling one server on core 0: the cores share its endpoint and TCB;
//! clh, ticket or fine) or, with `--workload memory`, the memory benchmark's (a
//! worker per core whose page faults and frees user-level pagers serve, per core or one
//! global with `--pager global`), every entry recorded on its core ([`tests::tracing`]: the
//! cores' threads pinned and started together).
//!
//! ```text
//! cargo run --release -p tests --features trace --example trace_hosted -- \
//!     --cores 2 --lock clh --per 2000 --out target/trace/hosted.trace
//! cargo run --release -p tests --features trace --example trace_hosted -- \
//!     --workload client-server --cores 2 --lock fine --per 2000
//! cargo run --release -p tests --features trace --example trace_hosted -- \
//!     --workload memory --cores 2 --lock clh --pages 100 --tasks 16 --pager percore
//! ```
//!
//! `cargo xtask trace locks --hosted` runs it and analyses and replays the file (`cargo xtask sim`).
//! Prints one summary line: entries, the recorded span and the replay of the trace on the
//! recorded cores (the simulator's first validation: it should reproduce the run).

use std::process::ExitCode;
use std::time::Duration;

use sim::config::{Config, LockLatency};
use tests::tracing::{
    self, record, record_client_server, record_memory, KernelLock, MemoryRecording, Recording,
};

/// `--workload` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    Ipc,
    ClientServer,
    Memory,
}

struct Args {
    cores: usize,
    lock: String,
    per: usize,
    alternate: bool,
    out: std::path::PathBuf,
    workload: Workload,
    pages: usize,
    tasks: usize,
    global: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        cores: 2,
        lock: "clh".into(),
        per: 2000,
        alternate: false,
        out: "target/trace/hosted.trace".into(),
        workload: Workload::Ipc,
        pages: 100,
        tasks: 16,
        global: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--cores" => a.cores = v()?.parse().map_err(|e| format!("--cores: {e}"))?,
            "--lock" => a.lock = v()?,
            "--per" => a.per = v()?.parse().map_err(|e| format!("--per: {e}"))?,
            "--out" => a.out = v()?.into(),
            "--alternate" => a.alternate = true,
            "--workload" => {
                a.workload = match v()?.as_str() {
                    "ipc" => Workload::Ipc,
                    "client-server" => Workload::ClientServer,
                    "memory" => Workload::Memory,
                    w => return Err(format!("--workload {w}: ipc, client-server or memory")),
                }
            }
            "--pages" => a.pages = v()?.parse().map_err(|e| format!("--pages: {e}"))?,
            "--tasks" => a.tasks = v()?.parse().map_err(|e| format!("--tasks: {e}"))?,
            "--pager" => match v()?.as_str() {
                "percore" => a.global = false,
                "global" => a.global = true,
                p => return Err(format!("--pager {p}: percore or global")),
            },
            "--help" | "-h" => {
                return Err(
                    "usage: trace_hosted [--cores N (1..=8)] [--lock clh|ticket|fine|none] \
                     [--out FILE] [--workload ipc|client-server|memory]; ipc (a caller and \
                     a server per core) and client-server (a client per core, one server on \
                     core 0; lock clh, ticket or fine): [--per MESSAGES] [--alternate]; \
                     memory (lock clh, ticket, or none on 1 core): [--pages N] [--tasks N] [--pager percore|global]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    if !(1..=kernel::config::MAX_CPUS).contains(&a.cores) {
        return Err(format!(
            "--cores {} is outside 1..={}",
            a.cores,
            kernel::config::MAX_CPUS
        ));
    }
    Ok(a)
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("trace_hosted: {e}");
            return ExitCode::FAILURE;
        }
    };
    let n = a.cores;
    let frequency_hz = tests::bench::tsc_hz(Duration::from_millis(50));
    let trace = match KernelLock::parse(&a.lock) {
        Some(lock) if a.workload == Workload::Memory => record_memory(&MemoryRecording {
            cores: n,
            lock,
            pages: a.pages,
            global: a.global,
            tasks: a.tasks,
            frequency_hz,
        }),
        Some(lock) => {
            let what = Recording {
                cores: n,
                lock,
                per: a.per,
                alternate: a.alternate,
                frequency_hz,
            };
            if a.workload == Workload::ClientServer {
                record_client_server(&what)
            } else {
                record(&what)
            }
        }
        None => Err(format!("--lock {}: clh, ticket, fine or none", a.lock)),
    };
    let trace = match trace {
        Ok(t) => t,
        Err(e) => {
            eprintln!("trace_hosted: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = tracing::write_output(&a.out, &trace.to_bytes()) {
        eprintln!("trace_hosted: {e}");
        return ExitCode::FAILURE;
    }
    let recorded = trace.end() - trace.start();
    // The recording kernel's own strategy (a fine-grained kernel's entries name the object
    // locks they took; its section lock is the big-reader lock's shared side, which never
    // waits here).
    let strategy = trace.strategy.replayed_as();
    let cfg = Config {
        lock_latency: LockLatency::measured(&trace),
        ..Config::new(n, strategy)
    };
    let replay = sim::simulate::simulate(&trace, &cfg);
    match replay {
        Ok(r) => println!(
            "trace_hosted: {} entries on {n} cores, lock {}, {} cycles recorded; replay on {n} \
             cores (lock latency {:?}): {} cycles ({:+.1}%); written to {}",
            trace.records.len(),
            a.lock,
            recorded,
            cfg.lock_latency,
            r.run_cycles,
            (r.run_cycles as f64 / recorded.max(1) as f64 - 1.0) * 100.0,
            a.out.display()
        ),
        Err(e) => {
            eprintln!("trace_hosted: replay: {e:?}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
