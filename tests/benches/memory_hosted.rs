//! Hosted memory benchmark, per-core against global user-level pagers (the `hosted` platform
//! of issue 13): the command line around [`tests::bench::memory`], whose module documentation
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

use tests::bench::memory::{run, Mode, Options};
use tests::bench::Lock;

fn usage(msg: &str) -> ! {
    eprintln!(
        "memory_hosted: {msg}\nusage: memory_hosted [--records PATH] [--locks none,clh,ticket,fine,rtm] \
         [--cores 1,2,..] [--pages 50,100,..] [--pagers percore,global] [--runs N] [--buddy] [--quick]"
    );
    std::process::exit(2)
}

fn list(v: &str) -> Vec<usize> {
    v.split(',')
        .map(|x| {
            x.trim()
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .unwrap_or_else(|| usage(&format!("not a positive number: {x}")))
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let mut opts = Options::new(quick);
    let mut records = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let mut value = || {
            i += 1;
            args.get(i)
                .cloned()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        match a {
            "--records" => records = Some(value()),
            "--locks" => {
                opts.locks = value()
                    .split(',')
                    .map(|l| {
                        Lock::parse(l.trim()).unwrap_or_else(|| usage(&format!("unknown lock {l}")))
                    })
                    .collect()
            }
            "--cores" => opts.cores = list(&value()),
            "--pages" => opts.pages = list(&value()),
            "--pagers" => {
                opts.modes = value()
                    .split(',')
                    .map(|m| {
                        Mode::parse(m.trim())
                            .unwrap_or_else(|| usage(&format!("unknown pager mode {m}")))
                    })
                    .collect()
            }
            "--runs" => {
                opts.runs = value()
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| usage("--runs needs a positive number"))
            }
            "--buddy" => opts.algorithm = pager::Algorithm::Buddy,
            "--quick" => {}
            // `cargo bench` passes `--bench` to harness-less benches.
            "--bench" => {}
            other => usage(&format!("unknown argument {other}")),
        }
        i += 1;
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
            .unwrap_or_else(|e| usage(&format!("cannot write {path}: {e}")));
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
