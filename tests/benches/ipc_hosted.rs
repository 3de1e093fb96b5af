//! Hosted kernel IPC benchmarks per locking strategy (the `hosted` platform of `cargo xtask bench`): the
//! command line around [`tests::bench`], whose module documentation gives the method.
//!
//! ```text
//! cargo bench -p tests --bench ipc_hosted -- [--records PATH] [--json PATH]
//!     [--locks none,clh,ticket,fine,rtm] [--cores 1,2,...] [--clients 1,2,4,8] [--runs N]
//!     [--delays 0,500,32000] [--only ipc,multicore,smp,client-server] [--quick]
//! ```
//!
//! * `--records PATH`: the raw records of `docs/bench-protocol.md` (a JSON array, one record per
//!   line): `ipc-roundtrip`, `ipc-call`, `ipc-replyrecv` (same-as and cross-as, per strategy),
//!   `multicore-pingpong` (per core count and strategy), `client-server` (shared and dedicated,
//!   per client count and strategy except `none`), `smp-pingpong` (sel4bench's `smp`: per
//!   delay of `--delays`, in TSC cycles, core count and strategy; only with `--only smp`) and, if `rtm` ran, `rtm-aborts`.
//! * `--json PATH`: the single-core round-trip summary (`ipc-pingpong-1core`, same-as, with
//!   min/median/mean/stddev), the format of `docs/bench/ipc-hosted.json`.
//! * `--cores`: core counts of `multicore-pingpong` (default 1..=the CPUs this process may use,
//!   at most the kernel's `MAX_CPUS`); `--runs`: samples per record (default 16); `--quick`:
//!   short batches and intervals (a few seconds in all).
//!
//! A table goes to standard output; the files are written at the end.

use tests::bench::cli::Args;
use tests::bench::{run, stats, Lock, Options, Record};

const USAGE: &str = "[--records PATH] [--json PATH] [--locks none,clh,ticket,fine,rtm] \
                     [--cores 1,2,..] [--clients 1,2,4,8] [--runs N] \
                     [--delays 0,500,32000] [--only ipc,multicore,smp,client-server] [--quick]";

/// The benchmark groups of `--only`.
const GROUPS: [&str; 4] = ["ipc", "multicore", "smp", "client-server"];

fn main() {
    let mut args = Args::from_env("ipc_hosted", USAGE);
    let mut opts = Options::new(args.has("--quick"));
    let (mut records, mut json) = (None, None);
    while let Some(flag) = args.flag() {
        match flag.as_str() {
            "--records" => records = Some(args.value(&flag)),
            "--json" => json = Some(args.value(&flag)),
            "--locks" => opts.locks = args.locks(&flag),
            "--cores" => opts.cores = args.numbers(&flag),
            "--clients" => opts.clients = args.numbers(&flag),
            "--runs" => opts.runs = args.positive(&flag),
            "--delays" => opts.delays = args.delays(&flag),
            "--only" => {
                let set = args.items(&flag, |g| GROUPS.iter().find(|x| **x == g).copied());
                opts.ipc = set.contains(&"ipc");
                opts.multicore = set.contains(&"multicore");
                opts.smp = set.contains(&"smp");
                opts.client_server = set.contains(&"client-server");
            }
            "--quick" => {}
            other => args.fail(&format!("unknown argument {other}")),
        }
    }
    if json.is_some() && !(opts.ipc && opts.locks.contains(&Lock::None)) {
        args.fail("--json needs the ipc group and the `none` lock (its overhead baseline)");
    }
    let started = std::time::Instant::now();
    println!("hosted kernel IPC benchmarks (Kernel::syscall on host threads, no trap)");
    let recs = run(&opts, &mut |line| println!("{line}"));
    println!("done in {:.1} s", started.elapsed().as_secs_f64());
    if let Some(path) = records {
        std::fs::write(&path, tests::bench::to_json_array(&recs))
            .unwrap_or_else(|e| args.fail(&format!("cannot write {path}: {e}")));
        println!("records written: {path} ({} records)", recs.len());
    }
    if let Some(path) = json {
        std::fs::write(&path, summary(&recs))
            .unwrap_or_else(|e| args.fail(&format!("cannot write {path}: {e}")));
        println!("summary written: {path}");
    }
}

/// The single-core same-as round-trip summary, in the format of `docs/bench/ipc-hosted.json`.
fn summary(recs: &[Record]) -> String {
    let rt: Vec<&Record> = recs
        .iter()
        .filter(|r| r.bench == "ipc-roundtrip" && r.variant == "same-as")
        .collect();
    let cpu = tests::bench::cpu_model().replace('"', "'");
    let rtm = kernel_locks::Rtm::supported();
    let base = rt
        .iter()
        .find(|r| r.lock == "none")
        .map(|r| stats(&r.samples).2)
        .unwrap_or(0.0);
    println!(
        "{:<10} {:<14} {:>8} {:>8} {:>8} {:>8} {:>10}",
        "strategy", "lock", "min", "median", "mean", "stddev", "overhead"
    );
    let lines: Vec<String> = rt
        .iter()
        .map(|r| {
            let (strategy, lock) = match r.lock.as_str() {
                "none" => ("none", "none"),
                "clh" => ("big lock", "clh"),
                "ticket" => ("big lock", "ticket"),
                "fine" => ("fine", "brlock+ticket"),
                _ => ("rtm", "rtm(clh)"),
            };
            let (min, median, mean, sd) = stats(&r.samples);
            let over = mean - base;
            println!(
                "{strategy:<10} {lock:<14} {min:>8.1} {median:>8.1} {mean:>8.1} {sd:>8.1} {over:>+6.1} ({:+.0}%)",
                100.0 * over / base
            );
            format!(
                "{{\"bench\":\"ipc-pingpong-1core\",\"arch\":\"{}\",\"platform\":\"hosted\",\"strategy\":\"{strategy}\",\"lock\":\"{lock}\",\"cores\":1,\"runs\":{},\"unit\":\"cycles/round-trip\",\"min\":{min:.2},\"median\":{median:.2},\"mean\":{mean:.2},\"stddev\":{sd:.2},\"samples\":{:?},\"machine\":{{\"cpu\":\"{cpu}\",\"rtm\":{rtm}}}}}",
                std::env::consts::ARCH,
                r.samples.len(),
                r.samples
            )
        })
        .collect();
    format!("[\n{}\n]\n", lines.join(",\n"))
}
