//! Hosted memory benchmark, per-core against global user-level pagers (the `hosted` platform
//! of `cargo xtask bench memory`): the command line around [`tests::bench::memory`], whose module documentation
//! gives the method.
//!
//! ```text
//! cargo bench -p tests --bench memory_hosted -- [--records PATH]
//!     [--locks none,clh,ticket,fine,rtm] [--cores 1,2,...] [--pages 50,100,...]
//!     [--pagers percore,global] [--runs N] [--buddy] [--quick]
//! ```
//!
//! * `--records PATH`: the raw records of `docs/bench-protocol.md` (a JSON array, one record
//!   per line): `memory-alloc` and `memory-free` per pager mode, core count, page count and
//!   strategy (`none` on 1 core only), and `memory-ipc` (same-core, cross-core) for `percore`
//!   with at least 2 cores.
//! * `--cores`: kernel cores = workers (default 1..=the CPUs this process may use, at most the
//!   kernel's `MAX_CPUS`; more cores than CPUs run unpinned); `--pages`: pages each task
//!   touches and frees (default 64, at most 4096); `--runs`: samples (timed tasks) per record
//!   (default 16); `--buddy`: the pagers allocate with the buddy allocator instead of the AVL
//!   tree; `--quick`: shorter calibration, warm-up and IPC batches.
//!
//! A line per measured point goes to standard output as it is measured; the records are written
//! at the end. Every point is also checked (faults served once each, frames conserved, ...):
//! a failed check is printed and makes the exit status 1.

use tests::bench::cli::Args;
use tests::bench::memory::{run, Mode, Options};

const USAGE: &str = "[--records PATH] [--locks none,clh,ticket,fine,rtm] [--cores 1,2,..] \
                     [--pages 50,100,..] [--pagers percore,global] [--runs N] [--buddy] [--quick]";

fn main() {
    let mut args = Args::from_env("memory_hosted", USAGE);
    let mut opts = Options::new(args.has("--quick"));
    let mut records = None;
    while let Some(flag) = args.flag() {
        match flag.as_str() {
            "--records" => records = Some(args.value(&flag)),
            "--locks" => opts.locks = args.locks(&flag),
            "--cores" => opts.cores = args.numbers(&flag),
            "--pages" => opts.pages = args.numbers(&flag),
            "--pagers" => opts.modes = args.items(&flag, Mode::parse),
            "--runs" => opts.runs = args.positive(&flag),
            "--buddy" => opts.algorithm = pager::Algorithm::Buddy,
            "--quick" => {}
            other => args.fail(&format!("unknown argument {other}")),
        }
    }
    let started = std::time::Instant::now();
    println!(
        "hosted memory benchmark (Kernel::page_fault / Kernel::syscall on host threads, no trap): \
         cycles per page"
    );
    let report = run(&opts, &mut |line| println!("{line}"));
    println!("done in {:.2} s", started.elapsed().as_secs_f64());
    if let Some(path) = records {
        std::fs::write(&path, tests::bench::to_json_array(&report.records))
            .unwrap_or_else(|e| args.fail(&format!("cannot write {path}: {e}")));
        println!("records written: {path} ({} records)", report.records.len());
    }
    if !report.problems.is_empty() {
        eprintln!("memory_hosted: {} checks failed:", report.problems.len());
        for p in &report.problems {
            eprintln!("  {p}");
        }
        std::process::exit(1);
    }
}
