//! What kernel lock tracing costs (issue 12; the thesis measured about 21% on a null system call
//! and under 1% on real workloads): the hosted single-core IPC round trip (Call + ReplyRecv,
//! client and server in two address spaces, the CLH big lock) with and without a tracer on the
//! same kernel build, timed alternately in rounds so that machine noise hits both alike.
//!
//! ```text
//! cargo run --release -p tests --features trace --example trace_overhead -- [ROUNDS]
//! ```
//!
//! Prints the median TSC ticks per round trip of each, and the overhead. Both kernels are built
//! with the `trace` feature; the untraced one has no tracer set, so it pays one predicted
//! branch per entry over a kernel built without the feature.

use kernel::trace::Tracer;
use kernel::BigLock;
use kernel_locks::ClhLock;
use tests::bench::{round_trip_timer, traced_round_trip_timer};
use tests::HostRelax;

static TRACER: Tracer<{ 1 << 12 }> = Tracer::new();

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(41);
    tests::bench::pin(0);
    let plain = round_trip_timer(BigLock::new(ClhLock::<1, HostRelax>::new()), true);
    let traced =
        traced_round_trip_timer(BigLock::new(ClhLock::<1, HostRelax>::new()), true, &TRACER);
    const N: u32 = 2000;
    // Warm-up.
    plain(N);
    traced(N);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(plain(N) as f64 / f64::from(N));
        b.push(traced(N) as f64 / f64::from(N));
    }
    let (p, t) = (median(&mut a), median(&mut b));
    println!(
        "trace_overhead: {rounds} rounds of {N} round trips (2 entries each), CLH big lock, one \
         core: untraced {p:.0} ticks, traced {t:.0} ticks per round trip: {:+.1}% ({:.0} ticks \
         per entry); {} records written",
        (t / p - 1.0) * 100.0,
        (t - p) / 2.0,
        TRACER.ring(0).written()
    );
}
