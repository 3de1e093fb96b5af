//! The kernel IPC benchmark programs (`mode=bench`, `docs/bench-protocol.md`).
//!
//! # Why they look like this
//! A sample must time the kernel, not this library: the measured loops trap with pre-built
//! raw registers ([`sys::raw`]) instead of the typed calls, read the counter right next to the
//! trap ([`Counter::read`] is inlined), and keep their samples in local arrays until the
//! measurement is over. Only then are the samples handed to the image through the `BENCH`
//! debug call; the image sums them per record and sample index (several clients of one
//! throughput benchmark add up) and prints the records, whole lines with no console prefix.
//!
//! # One-way IPC (sel4bench's method)
//! The client reads the counter just before `Call` and passes the value in the message; the
//! server reads it just after its receive returns: the difference is one one-way Call. The
//! server then reads the counter just before `ReplyRecv` and passes it in the reply (with the
//! Call sample); the client reads just after `Call` returns: one one-way ReplyRecv. The cost of
//! a counter read (the least of [`OVERHEAD_TRIES`] back-to-back pairs) is subtracted from each.
//! Timestamps travel as machine words and differences are taken modulo the word size, so a
//! 32-bit counter (PMCCNTR) or a 64-bit one truncated to 32 bits gives exact differences below
//! 2^32 ticks.
//!
//! Afterwards a message with [`SWITCH`] in its second word moves the server to a plain loop
//! (no counter reads) for `ipc-roundtrip`: each sample is one batch of [`BATCH`] round trips
//! timed as a whole, minus one counter-read cost. Where the only counter is the debug call
//! (sabrelite), the one-way benchmarks are skipped: a debug call costs about as much as the IPC
//! it would time, so only batch timing means anything there.
//!
//! # The null system call
//! The cross-address-space client, the last of the two to run, then times batches of
//! [`BATCH`] `Null` system calls the same way (`null-syscall`): the bare trap, kernel entry and
//! exit with no work, the thesis's measure of what tracing adds to a kernel entry. It runs after
//! every IPC sample of the boot is taken, in a function of its own, so that the null calls
//! add no code to the IPC loops and leave their instruction counts alone.
//!
//! # Throughput
//! A throughput client counts the round trips it completes in consecutive intervals of
//! `interval` counter ticks, reading the counter after every round trip (that read is part of
//! the loop; its cost is reported, not subtracted). The first [`WARMUP_INTERVALS`] are not
//! recorded.

use abi::syscall::nr;

use crate::debug;
use crate::image::bench::{
    param, record, BATCH, MAX_RUNS, OVERHEAD_TRIES, VARIANT_CROSS_AS, WARMUP, WARMUP_BATCHES,
    WARMUP_INTERVALS,
};
use crate::image::slot;
use crate::sys::{self, raw, Counter};
use crate::uprintln;

/// Second message word of the Call that moves the one-way server to its plain loop.
pub const SWITCH: usize = 0x5717C4;

/// `t1 - t0` for timestamps read from a counter of at least the word size, modulo the word
/// size (see the module docs).
#[inline(always)]
fn elapsed(t0: usize, t1: usize) -> u64 {
    t1.wrapping_sub(t0) as u64
}

/// The cost of one counter read: the least difference of two back-to-back reads.
pub fn read_overhead(c: Counter) -> u64 {
    (0..OVERHEAD_TRIES)
        .map(|_| {
            let a = c.read();
            let b = c.read();
            elapsed(a as usize, b as usize)
        })
        .min()
        .unwrap_or(0)
}

/// Samples per record, as the image says (`runs=` on its command line).
fn runs() -> usize {
    debug::info(crate::image::info::RUNS).clamp(1, MAX_RUNS)
}

/// Hands `samples` (and the parameter `p` = `value`, if any) of `rec` to the image; reports a
/// failure if the image refused any.
fn report(rec: usize, samples: &[u64], p: Option<(usize, u64)>) {
    let mut ok = true;
    if let Some((p, v)) = p {
        ok &= debug::bench_report(rec, p, v);
    }
    for (i, &s) in samples.iter().enumerate() {
        ok &= debug::bench_report(rec, i, s);
    }
    if !ok {
        uprintln!("bench: the image refused the samples of record {rec}");
        debug::panicked();
    }
}

/// The one-way and round-trip IPC client (`variant`: same or cross address space).
pub fn ipc_client(variant: u64) -> ! {
    let c = Counter::detect();
    let ep = slot::EP;
    let overhead = read_overhead(c);
    let runs = runs();
    let mut bad = 0usize;
    if c != Counter::DebugCall && c != Counter::None {
        let mut call = [0u64; MAX_RUNS];
        let mut replyrecv = [0u64; MAX_RUNS];
        for i in 0..WARMUP + runs {
            let t0 = c.read();
            let r = raw([nr::CALL, ep, t0 as usize, 0, 0, 0]);
            let t3 = c.read();
            bad += usize::from(r[0] != 0);
            if i >= WARMUP {
                // r[2]: the server's timestamp before ReplyRecv; r[3]: its Call sample.
                call[i - WARMUP] = (r[3] as u64).saturating_sub(overhead);
                replyrecv[i - WARMUP] = elapsed(r[2], t3 as usize).saturating_sub(overhead);
            }
        }
        report(
            record::ipc(record::IPC_CALL, variant),
            &call[..runs],
            Some((param::OVERHEAD, overhead)),
        );
        report(
            record::ipc(record::IPC_REPLYRECV, variant),
            &replyrecv[..runs],
            Some((param::OVERHEAD, overhead)),
        );
    }
    // The server leaves its timed loop.
    bad += usize::from(raw([nr::CALL, ep, 0, SWITCH, 0, 0])[0] != 0);
    let mut batches = [0u64; MAX_RUNS];
    for b in 0..WARMUP_BATCHES + runs {
        let t0 = c.read();
        for _ in 0..BATCH {
            bad += usize::from(raw([nr::CALL, ep, 0, 0, 0, 0])[0] != 0);
        }
        let t1 = c.read();
        if b >= WARMUP_BATCHES {
            batches[b - WARMUP_BATCHES] =
                elapsed(t0 as usize, t1 as usize).saturating_sub(overhead);
        }
    }
    report(
        record::ipc(record::IPC_ROUNDTRIP, variant),
        &batches[..runs],
        Some((param::OVERHEAD, overhead)),
    );
    after_ipc(variant, c, overhead, runs, bad)
}

/// The end of [`ipc_client`]: the null system calls (cross-address-space client only), then
/// [`finish`]. Not inlined: the client's IPC loops hold none of its code.
#[inline(never)]
fn after_ipc(variant: u64, c: Counter, overhead: u64, runs: usize, mut bad: usize) -> ! {
    if variant == VARIANT_CROSS_AS {
        bad += null_batches(c, overhead, runs);
    }
    finish("ipc client", bad)
}

/// Times `runs` batches of [`BATCH`] `Null` system calls (after [`WARMUP_BATCHES`]), each
/// minus one counter-read cost, and reports them as `null-syscall`; returns the calls that
/// failed.
fn null_batches(c: Counter, overhead: u64, runs: usize) -> usize {
    let mut bad = 0usize;
    let mut batches = [0u64; MAX_RUNS];
    for b in 0..WARMUP_BATCHES + runs {
        let t0 = c.read();
        for _ in 0..BATCH {
            bad += usize::from(raw([nr::NULL, 0, 0, 0, 0, 0])[0] != 0);
        }
        let t1 = c.read();
        if b >= WARMUP_BATCHES {
            batches[b - WARMUP_BATCHES] =
                elapsed(t0 as usize, t1 as usize).saturating_sub(overhead);
        }
    }
    report(
        record::NULL_SYSCALL,
        &batches[..runs],
        Some((param::OVERHEAD, overhead)),
    );
    bad
}

/// The one-way IPC server: timestamps every receive and reply until the [`SWITCH`] message,
/// then answers plainly.
pub fn ipc_server() -> ! {
    let c = Counter::detect();
    let ep = slot::EP;
    let mut r = raw([nr::RECV, ep, 0, 0, 0, 0]);
    loop {
        let t1 = c.read();
        if r[3] == SWITCH || r[0] != 0 {
            break;
        }
        let call = elapsed(r[2], t1 as usize) as usize;
        let t2 = c.read();
        r = raw([nr::REPLY_RECV, ep, t2 as usize, call, 0, 0]);
    }
    if r[0] != 0 {
        uprintln!("bench server: receive failed with error {}", r[0]);
        debug::panicked();
    }
    serve(ep)
}

/// Answers every Call on `ep` with an empty message (the caller's Call was just received).
fn serve(ep: usize) -> ! {
    loop {
        let r = raw([nr::REPLY_RECV, ep, 0, 0, 0, 0]);
        if r[0] != 0 {
            uprintln!("bench server: receive failed with error {}", r[0]);
            debug::panicked();
            sys::park()
        }
    }
}

/// The throughput server: receives, then answers every Call.
pub fn tp_server() -> ! {
    let ep = slot::EP;
    let r = raw([nr::RECV, ep, 0, 0, 0, 0]);
    if r[0] != 0 {
        uprintln!("bench server: receive failed with error {}", r[0]);
        debug::panicked();
        sys::park()
    }
    serve(ep)
}

/// The throughput client of record `rec`: round trips per `interval` counter ticks.
pub fn tp_client(rec: usize, interval: u64) -> ! {
    let c = Counter::detect();
    let ep = slot::EP;
    let read_cost = read_overhead(c);
    let runs = runs();
    let mut counts = [0u64; MAX_RUNS];
    let mut bad = 0usize;
    let mut t0 = c.read() as usize;
    for i in 0..WARMUP_INTERVALS + runs {
        let mut n = 0u64;
        let t = loop {
            bad += usize::from(raw([nr::CALL, ep, 0, 0, 0, 0])[0] != 0);
            n += 1;
            let t = c.read() as usize;
            if elapsed(t0, t) >= interval {
                break t;
            }
        };
        if i >= WARMUP_INTERVALS {
            counts[i - WARMUP_INTERVALS] = n;
        }
        t0 = t;
    }
    report(rec, &counts[..runs], Some((param::READ_COST, read_cost)));
    finish("throughput client", bad)
}

/// Reports failed calls (as a panic, which fails the run), then DONE, then parks.
fn finish(who: &str, bad: usize) -> ! {
    if bad != 0 {
        uprintln!("{who}: {bad} calls failed");
        debug::panicked();
    }
    debug::done();
    sys::park()
}
