//! What kernel lock tracing costs (the thesis measured about 21% on a null system call
//! and under 1% on real workloads), on two hosted single-core paths with the CLH big lock:
//! * the null system call (`Syscall::Null`: entry, lock, nothing, unlock, exit), the thesis's
//!   own comparison (its Table 6.5: 328 cycles untraced, 399 traced on an ARM11 MPCore);
//! * the IPC round trip (Call + ReplyRecv, client and server in two address spaces).
//!
//! Each with and without a tracer on the same kernel build, timed alternately in rounds so that
//! machine noise hits both alike.
//!
//! ```text
//! cargo run --release -p tests --features trace --example trace_overhead -- [ROUNDS]
//! ```
//!
//! Prints the median TSC ticks per call or round trip of each, and the overhead. Both kernels
//! are built with the `trace` feature; the untraced one has no tracer set, so it pays one
//! predicted branch per entry over a kernel built without the feature. The hosted harness calls
//! the kernel as a function: there is no trap, so the ticks are the kernel's path alone (the
//! thesis's figures include the mode switches).

use kernel::trace::Tracer;
use kernel::BigLock;
use kernel_locks::ClhLock;
use tests::bench::{
    null_syscall_timer, round_trip_timer, traced_null_syscall_timer, traced_round_trip_timer,
};
use tests::HostRelax;

static TRACER: Tracer<{ 1 << 12 }> = Tracer::new();
static NULL_TRACER: Tracer<{ 1 << 12 }> = Tracer::new();

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median ticks per operation of `plain` and `traced`, each run `rounds` times `n` operations,
/// alternately, after one warm-up run each.
fn compare(
    rounds: usize,
    n: u32,
    plain: impl Fn(u32) -> u64,
    traced: impl Fn(u32) -> u64,
) -> (f64, f64) {
    plain(n);
    traced(n);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        a.push(plain(n) as f64 / f64::from(n));
        b.push(traced(n) as f64 / f64::from(n));
    }
    (median(&mut a), median(&mut b))
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(41);
    tests::bench::pin(0);

    // The thesis's experiment: 10,000 null calls per run.
    const NULLS: u32 = 10_000;
    let (p, t) = compare(
        rounds,
        NULLS,
        null_syscall_timer(BigLock::new(ClhLock::<1, HostRelax>::new())),
        traced_null_syscall_timer(BigLock::new(ClhLock::<1, HostRelax>::new()), &NULL_TRACER),
    );
    println!(
        "trace_overhead: null syscall: {rounds} rounds of {NULLS} calls, CLH big lock, one core: \
         untraced {p:.1} ticks, traced {t:.1} ticks per call: {:+.1}% ({:.1} ticks per entry; \
         thesis: 328 cycles untraced, 399 traced, +21%); {} records written",
        (t / p - 1.0) * 100.0,
        t - p,
        NULL_TRACER.ring(0).written()
    );

    const N: u32 = 2000;
    let (p, t) = compare(
        rounds,
        N,
        round_trip_timer(BigLock::new(ClhLock::<1, HostRelax>::new()), true),
        traced_round_trip_timer(BigLock::new(ClhLock::<1, HostRelax>::new()), true, &TRACER),
    );
    println!(
        "trace_overhead: IPC round trip: {rounds} rounds of {N} round trips (2 entries each), \
         CLH big lock, one core: untraced {p:.0} ticks, traced {t:.0} ticks per round trip: \
         {:+.1}% ({:.0} ticks per entry); {} records written",
        (t / p - 1.0) * 100.0,
        (t - p) / 2.0,
        TRACER.ring(0).written()
    );
}
