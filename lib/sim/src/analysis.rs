//! What a trace says by itself, before any simulation: per core and in total, how often the
//! kernel is entered, how much of the time is spent in it and in its lock, how often the lock was
//! already held, and what each call costs.
//!
//! Why these numbers: the thesis's conclusion is that a big lock's scalability is set by the
//! total system-call rate and the time in the lock (a lock held a fraction `f` of the time by
//! each of `n` cores saturates near `n·f = 1`), so these are the first things to read off a
//! trace; the simulator then answers what a different core count or strategy would do. The
//! lock-exit latency (release to kernel exit) is a histogram because the thesis found it bimodal
//! under contention, and its measured distribution feeds the simulator's configuration.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::trace::{EntryKind, Record, Trace};

/// Statistics of a set of kernel entries (one core's, or all of them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Kernel entries (system calls, interrupts and faults).
    pub entries: u64,
    /// Of which system calls.
    pub syscalls: u64,
    /// Cycles covered: first entry to last exit (for the total, times the core count).
    pub span_cycles: u64,
    /// System calls per second of span.
    pub syscall_rate_per_s: f64,
    /// Cycles between entry and exit, summed.
    pub kernel_cycles: u64,
    /// `kernel_cycles / span_cycles`.
    pub kernel_fraction: f64,
    /// Cycles the lock was held (acquired to just before release), summed.
    pub lock_held_cycles: u64,
    /// `lock_held_cycles / span_cycles`.
    pub lock_fraction: f64,
    /// Cycles from lock request to acquisition (entry latency and waiting), summed.
    pub lock_wait_cycles: u64,
    /// Fraction of entries that found the lock held at their first attempt.
    pub contention_probability: f64,
    /// Object locks recorded (fine-grained kernels: each distinct object once per entry).
    pub object_locks: u64,
    /// Cycles from an object lock's request to its acquisition, summed.
    pub object_lock_wait_cycles: u64,
    /// Entries that took more distinct object locks than a record holds.
    pub objects_truncated: u64,
    /// RTM kernels: entries whose transaction committed.
    pub rtm_committed: u64,
    /// RTM kernels: entries that ran under the fallback lock.
    pub rtm_fell_back: u64,
    /// RTM kernels: aborted attempts, summed.
    pub rtm_retries: u64,
}

/// Count and mean duration of one system call, interrupt or fault number.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallStats {
    /// `syscall`, `irq` or `fault`.
    pub kind: String,
    /// The call number, interrupt line or vector.
    pub number: u16,
    /// How many entries.
    pub count: u64,
    /// Mean cycles from entry to exit.
    pub mean_cycles: f64,
}

/// One histogram bucket: values in `[lower, upper)` cycles.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramBucket {
    /// Inclusive lower bound in cycles.
    pub lower: u64,
    /// Exclusive upper bound in cycles.
    pub upper: u64,
    /// Entries in the bucket.
    pub count: u64,
}

/// A trace's analysis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Timestamp frequency of the trace.
    pub frequency_hz: u64,
    /// Recorded cores.
    pub cores: u16,
    /// Per recorded core, in core order.
    pub per_core: Vec<Stats>,
    /// All cores together.
    pub total: Stats,
    /// Per call, ordered by kind then number.
    pub per_call: Vec<CallStats>,
    /// Lock-exit latency (release to kernel exit), in power-of-two buckets from the smallest to
    /// the largest non-empty one.
    pub lock_exit_latency: Vec<HistogramBucket>,
}

impl Report {
    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a Report always serialises")
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a / b
    }
}

fn stats<'a>(records: impl Iterator<Item = &'a Record>, span: u64, hz: u64) -> Stats {
    let mut s = Stats {
        entries: 0,
        syscalls: 0,
        span_cycles: span,
        syscall_rate_per_s: 0.0,
        kernel_cycles: 0,
        kernel_fraction: 0.0,
        lock_held_cycles: 0,
        lock_fraction: 0.0,
        lock_wait_cycles: 0,
        contention_probability: 0.0,
        object_locks: 0,
        object_lock_wait_cycles: 0,
        objects_truncated: 0,
        rtm_committed: 0,
        rtm_fell_back: 0,
        rtm_retries: 0,
    };
    let mut contended = 0u64;
    for r in records {
        s.entries += 1;
        s.syscalls += u64::from(r.kind == EntryKind::Syscall);
        s.kernel_cycles += u64::from(r.exit);
        s.lock_held_cycles += u64::from(r.lock_held());
        s.lock_wait_cycles += u64::from(r.lock_wait());
        contended += u64::from(r.contended());
        s.object_locks += r.object_locks().len() as u64;
        s.object_lock_wait_cycles += r
            .object_locks()
            .iter()
            .map(|o| u64::from(o.wait))
            .sum::<u64>();
        s.objects_truncated += u64::from(r.flags & crate::trace::FLAG_OBJECTS_TRUNCATED != 0);
        s.rtm_committed += u64::from(r.rtm_outcome == crate::trace::RtmOutcome::Committed);
        s.rtm_fell_back += u64::from(r.rtm_outcome == crate::trace::RtmOutcome::FellBack);
        s.rtm_retries += u64::from(r.rtm_retries);
    }
    let span = span as f64;
    s.syscall_rate_per_s = ratio(s.syscalls as f64 * hz as f64, span);
    s.kernel_fraction = ratio(s.kernel_cycles as f64, span);
    s.lock_fraction = ratio(s.lock_held_cycles as f64, span);
    s.contention_probability = ratio(contended as f64, s.entries as f64);
    s
}

/// The power-of-two bucket index of `v`: 0 holds 0 and 1, `i` holds `[2^i, 2^(i+1))`.
fn bucket(v: u64) -> usize {
    if v < 2 {
        0
    } else {
        63 - v.leading_zeros() as usize
    }
}

/// Analyses a trace.
pub fn analyse(trace: &Trace) -> Report {
    let hz = trace.frequency_hz;
    let per_core: Vec<Stats> = (0..trace.cores)
        .map(|c| {
            let rows = trace.core_records(c);
            let span = match (rows.first(), rows.iter().map(Record::exit_at).max()) {
                (Some(first), Some(end)) => end - first.entry,
                _ => 0,
            };
            stats(rows.iter(), span, hz)
        })
        .collect();
    // Core time: the trace's span on every core. Timestamps are 64-bit cycle counts, so a
    // trace whose span is most of that range saturates here rather than overflows.
    let total = stats(
        trace.records.iter(),
        (trace.end() - trace.start()).saturating_mul(u64::from(trace.cores)),
        hz,
    );
    // The total rate is per second of wall time, not of core time.
    let total = Stats {
        syscall_rate_per_s: total.syscall_rate_per_s * f64::from(trace.cores),
        ..total
    };

    let mut calls: BTreeMap<(EntryKind, u16), (u64, u64)> = BTreeMap::new();
    let mut histogram = [0u64; 64];
    for r in &trace.records {
        let e = calls.entry((r.kind, r.number)).or_default();
        e.0 += 1;
        e.1 += u64::from(r.exit);
        histogram[bucket(u64::from(r.exit - r.lock_released))] += 1;
    }
    let per_call = calls
        .into_iter()
        .map(|((kind, number), (count, cycles))| CallStats {
            kind: kind.name().to_string(),
            number,
            count,
            mean_cycles: cycles as f64 / count as f64,
        })
        .collect();
    let lock_exit_latency = match (
        histogram.iter().position(|&n| n > 0),
        histogram.iter().rposition(|&n| n > 0),
    ) {
        (Some(lo), Some(hi)) => (lo..=hi)
            .map(|i| HistogramBucket {
                lower: if i == 0 { 0 } else { 1 << i },
                upper: if i == 63 { u64::MAX } else { 2 << i },
                count: histogram[i],
            })
            .collect(),
        _ => Vec::new(),
    };
    Report {
        frequency_hz: hz,
        cores: trace.cores,
        per_core,
        total,
        per_call,
        lock_exit_latency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Strategy, FLAG_CONTENDED};

    fn rec(core: u16, entry: u64, kind: EntryKind, number: u16, contended: bool) -> Record {
        // 10 before the lock, 20 to acquire, 100 held, 30 after (release to exit).
        Record {
            entry,
            lock_requested: 10,
            lock_acquired: 30,
            lock_released: 130,
            exit: 160,
            core,
            kind,
            number,
            flags: if contended { FLAG_CONTENDED } else { 0 },
            ..Record::EMPTY
        }
    }

    /// Found by the `trace` fuzz target: a trace whose span times its core count exceeds
    /// 64 bits overflowed the total core time.
    #[test]
    fn a_span_times_the_cores_past_64_bits_saturates() {
        let t = Trace {
            cores: 4,
            strategy: Strategy::BigLock,
            frequency_hz: 1_000_000,
            records: vec![
                rec(0, 0, EntryKind::Syscall, 1, false),
                rec(1, u64::MAX / 2, EntryKind::Syscall, 1, false),
            ],
        };
        let r = analyse(&t);
        assert_eq!(r.total.span_cycles, u64::MAX);
        assert_eq!(r.total.entries, 2);
    }

    #[test]
    fn known_numbers() {
        // Core 0: four syscalls 1000 cycles apart, one contended; core 1: two interrupts.
        let mut records: Vec<Record> = (0..4)
            .map(|i| rec(0, i * 1000, EntryKind::Syscall, 3, i == 2))
            .collect();
        records.push(rec(1, 500, EntryKind::Interrupt, 27, false));
        let mut last = rec(1, 2500, EntryKind::Interrupt, 27, false);
        last.lock_released = 40; // exit latency 120: another bucket
        records.push(last);
        let t = Trace {
            cores: 2,
            strategy: Strategy::BigLock,
            frequency_hz: 1_000_000,
            records,
        };
        let r = analyse(&t);
        let c0 = &r.per_core[0];
        assert_eq!((c0.entries, c0.syscalls, c0.span_cycles), (4, 4, 3160));
        assert_eq!(c0.kernel_cycles, 640);
        assert_eq!(c0.lock_held_cycles, 400);
        assert_eq!(c0.lock_wait_cycles, 80);
        assert_eq!(c0.contention_probability, 0.25);
        assert!((c0.syscall_rate_per_s - 4.0 * 1e6 / 3160.0).abs() < 1e-6);
        assert!((c0.lock_fraction - 400.0 / 3160.0).abs() < 1e-12);
        let c1 = &r.per_core[1];
        assert_eq!((c1.entries, c1.syscalls, c1.span_cycles), (2, 0, 2160));
        assert_eq!(c1.syscall_rate_per_s, 0.0);
        assert_eq!(c1.lock_held_cycles, 100 + 10);
        assert_eq!(r.total.entries, 6);
        assert_eq!(r.total.span_cycles, 3160 * 2);
        assert!((r.total.syscall_rate_per_s - 4.0 * 1e6 / 3160.0).abs() < 1e-6);
        assert!((r.total.contention_probability - 1.0 / 6.0).abs() < 1e-12);
        assert_eq!(
            r.per_call,
            vec![
                CallStats {
                    kind: "syscall".into(),
                    number: 3,
                    count: 4,
                    mean_cycles: 160.0
                },
                CallStats {
                    kind: "irq".into(),
                    number: 27,
                    count: 2,
                    mean_cycles: 160.0
                },
            ]
        );
        // Exit latencies: five of 30 (bucket [16, 32)), one of 120 (bucket [64, 128)).
        assert_eq!(
            r.lock_exit_latency,
            vec![
                HistogramBucket {
                    lower: 16,
                    upper: 32,
                    count: 5
                },
                HistogramBucket {
                    lower: 32,
                    upper: 64,
                    count: 0
                },
                HistogramBucket {
                    lower: 64,
                    upper: 128,
                    count: 1
                },
            ]
        );
        let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(json["per_call"][1]["kind"], "irq");
        assert_eq!(json["total"]["entries"], 6);
    }

    #[test]
    fn buckets() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 0);
        assert_eq!(bucket(2), 1);
        assert_eq!(bucket(3), 1);
        assert_eq!(bucket(4), 2);
        assert_eq!(bucket(u64::MAX), 63);
    }
}
