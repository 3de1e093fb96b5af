//! Criterion benchmarks of every lock of this crate beside peer implementations:
//! `cargo bench -p kernel-locks --bench locks [-- FILTER]`.
//!
//! * `uncontended/<lock>`: one acquire+release with an empty critical section, one thread.
//! * `contended/<lock>/<T>`: T threads (1, 2, 4, ... up to the CPUs, at least 2), thread i acting
//!   as CPU i, each acquiring, incrementing a shared counter, releasing; the reported throughput
//!   is total acquisitions per second.
//!
//! The subjects (ours, peers, reference points) are listed in `common/mod.rs`, shared with
//! `host_table.rs`, which produces the table of `cargo xtask bench locks`.

// The peers and criterion are host-only dev-dependencies (see Cargo.toml).
#[cfg(target_arch = "arm")]
compile_error!("the lock benchmarks measure on the host (x86_64, AArch64): their dev-dependencies are not built for 32-bit ARM");

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use common::{Info, Subject, Visitor};
use criterion::{BenchmarkId, Criterion, Throughput};
use kernel_locks::CachePadded;

/// Runs every subject through criterion.
struct Bench<'c> {
    c: &'c mut Criterion,
    threads: Vec<usize>,
}

impl Visitor for Bench<'_> {
    fn visit<S: Subject>(&mut self, info: Info, make: &(dyn Fn() -> S + Sync)) {
        eprintln!("{} ({}): {}", info.name, info.origin.as_str(), info.about);
        {
            let mut group = self.c.benchmark_group("uncontended");
            group.throughput(Throughput::Elements(1));
            let lock = make();
            let mut local = lock.local(0);
            group.bench_function(info.name, |b| {
                b.iter(|| black_box(&lock).critical(&mut local, || ()))
            });
            group.finish();
        }
        if !info.contended {
            return;
        }
        let mut group = self.c.benchmark_group(format!("contended/{}", info.name));
        group.throughput(Throughput::Elements(1));
        for &threads in &self.threads {
            group.bench_with_input(BenchmarkId::from_parameter(threads), &threads, |b, &t| {
                b.iter_custom(|iters| contended(&info, make, t, iters))
            });
        }
        group.finish();
    }
}

/// Time for `iters` acquisitions spread over `threads` threads (each does `iters / threads`,
/// rounded up; the time is scaled back to exactly `iters`).
fn contended<S: Subject>(
    info: &Info,
    make: &(dyn Fn() -> S + Sync),
    threads: usize,
    iters: u64,
) -> Duration {
    let per_thread = iters.div_ceil(threads as u64).max(1);
    let lock = make();
    let counter = CachePadded::new(AtomicUsize::new(0));
    let barrier = Barrier::new(threads + 1);
    let elapsed = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|cpu| {
                let (lock, counter, barrier) = (&lock, &counter, &barrier);
                s.spawn(move || {
                    let mut local = lock.local(cpu);
                    barrier.wait();
                    for _ in 0..per_thread {
                        lock.critical(&mut local, || common::bump(counter));
                    }
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().expect("benchmark thread panicked");
        }
        start.elapsed()
    });
    let done = per_thread * threads as u64;
    if info.exclusive {
        assert_eq!(
            counter.load(Ordering::Relaxed) as u64,
            done,
            "{}: lost updates, mutual exclusion is broken",
            info.name
        );
    }
    elapsed.mul_f64(iters as f64 / done as f64)
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .configure_from_args();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = common::default_threads(cpus);
    let max = threads.iter().copied().max().unwrap_or(2);
    if !common::rtm_usable() {
        eprintln!("note: no RTM on this CPU: the rtm lock always takes its fallback lock");
    }
    let mut bench = Bench { c: &mut c, threads };
    common::visit_subjects(max, &mut bench);
    c.final_summary();
}
