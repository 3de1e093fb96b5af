//! The raw benchmark record: one measured point as a producer emits it.
//!
//! A guest prints each record as one JSON line between [`BENCH_BEGIN`](crate::console::BENCH_BEGIN)
//! and [`BENCH_END`](crate::console::BENCH_END); a hosted benchmark writes a JSON array of the
//! same objects to a file. [`RecordLine`] (a [`RecordHead`] and the samples) writes one with
//! `core::fmt` only (the images have no allocator on that path); behind `std`, [`RawRecord`] reads it back. [`FIELDS`] and
//! [`BENCHES`] describe the fields and the benchmark names for the generated document, and
//! the tests check that the writer, the reader and the tables agree.

use core::fmt::{self, Display, Formatter, Write};

/// A record field as the document describes it.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// The JSON key.
    pub name: &'static str,
    /// Its JSON type (and whether it may be absent).
    pub ty: &'static str,
    /// What it means.
    pub meaning: &'static str,
}

/// The fields of a raw record, in the order [`RecordLine`] writes them.
pub const FIELDS: &[Field] = &[
    Field { name: "bench", ty: "string", meaning: "benchmark name, from the table of benchmarks" },
    Field { name: "variant", ty: "string", meaning: "`same-as` / `cross-as` (IPC), `pairs` (multicore), `shared` / `dedicated` (client-server), `percore` / `global` (`memory-alloc`, `memory-free`), `same-core` / `cross-core` (`memory-ipc`), the lock measured (`lock-pair`, ...), `\"\"` otherwise" },
    Field { name: "lock", ty: "string", meaning: "the kernel's lock as booted: `clh`, `ticket`, `fine`, `rtm`, `none`" },
    Field { name: "cores", ty: "int", meaning: "cores taking part" },
    Field { name: "clients", ty: "int", meaning: "client threads (client-server), workers (`memory-alloc`, `memory-free`: one per core), else 0" },
    Field { name: "pages", ty: "int, optional", meaning: "pages per task of the memory benchmark's records (for `memory-ipc`: the tasks' that ran before the Calls); written by the hosted memory benchmark, and set by `cargo xtask bench` from a guest's `pages=`; absent (0) otherwise" },
    Field { name: "unit", ty: "string", meaning: "`ticks` (guest counter ticks), `cycles` (host TSC), `round trips` (count per interval), `round trips/s`, `barriers`" },
    Field { name: "counter", ty: "string", meaning: "guests: `tsc`, `pmccntr`, `a9-global-timer`, `cntvct`, `debugcall` (kernel-read counter, batch timing only)" },
    Field { name: "counter_hz", ty: "int", meaning: "the counter's frequency as the producer believes it (0: unknown)" },
    Field { name: "overhead", ty: "int", meaning: "cost of reading the counter, in `unit`, already subtracted from `samples` (0: none)" },
    Field { name: "interval_ticks", ty: "int, optional", meaning: "throughput benches: length of one sampling interval in counter ticks" },
    Field { name: "samples", ty: "array of numbers", meaning: "one number per repetition (after warm-up), 16 by default" },
    Field { name: "extra", ty: "object, optional", meaning: "bench-specific details (RTM abort counts, barrier kinds, ...)" },
];

/// A benchmark name and what one of its samples is.
#[derive(Clone, Copy, Debug)]
pub struct Bench {
    /// The record's `bench`.
    pub name: &'static str,
    /// What one sample measures.
    pub sample: &'static str,
}

/// Every `bench` a producer emits.
pub const BENCHES: &[Bench] = &[
    Bench { name: "ipc-call", sample: "one-way Call: client reads the counter just before `Call`, server just after its receive returns (sel4bench method)" },
    Bench { name: "ipc-replyrecv", sample: "one-way ReplyRecv: server reads just before `ReplyRecv`, client just after its `Call` returns" },
    Bench { name: "ipc-roundtrip", sample: "mean round trip (Call + ReplyRecv) over a batch of round trips" },
    Bench { name: "null-syscall", sample: "mean `Null` system call (trap, kernel entry and exit, no work) over a batch of calls; `bench=ipc`, reported by the cross-address-space client after its IPC samples; variant `\"\"`" },
    Bench { name: "lock-pair", sample: "mean `lock` + `unlock` of an uncontended lock over a batch of pairs, in kernel mode at boot with interrupts masked, less the empty loop's time; `bench=ipc`, measured by the image itself; variant: the lock (`ticket`, or the kernel's own as booted: `clh`, `mcs`, `qspin`, `cna`, `rtm`, `none`)" },
    Bench { name: "lock-pair-irqsave", sample: "the same with `lock_irqsave` + `unlock_irqrestore` (the interrupt-safe guard of `kernel_locks::irq`), entered with interrupts enabled: the restore unmasks them" },
    Bench { name: "lock-pair-irqsave-masked", sample: "the same entered with interrupts masked, as in an interrupt handler: the restore leaves them masked" },
    Bench { name: "multicore-pingpong", sample: "round trips completed by all pairs (one client/server pair per core, disjoint objects) in one sampling interval after warm-up" },
    Bench { name: "client-server", sample: "round trips completed by `clients` clients calling one shared server (`shared`) or each its own server (`dedicated`) in one interval" },
    Bench { name: "memory-alloc", sample: "one task round of the memory system (one worker per core touching `pages` fresh pages, each a page fault its pager serves): the workers' mean counter ticks per page; `extra`: `faults_same_core`, `faults_cross_core`, `pages_per_task`, `pagers`, ..." },
    Bench { name: "memory-free", sample: "the same round's explicit frees (a request to the pager per page, which unmaps it and frees the frame): mean ticks per page" },
    Bench { name: "memory-ipc", sample: "mean ticks per Call of a null request from core 0's worker to the pager of its own core (`same-core`) or of core 1 (`cross-core`), over a batch; per-core pagers, 2 cores or more" },
    Bench { name: "rtm-aborts", sample: "hosted only: `extra` holds the RTM statistics (total, direct, retry1, retry2, more, fallback, causes)" },
    Bench { name: "ipc-barriers", sample: "ARMv7 only: barrier instructions (`dmb`, `dsb`, `isb`) executed per round trip, `extra` splits them by kind" },
];

/// What a raw record measured: every field but its samples and `extra` (the keys of
/// [`FIELDS`] up to `interval_ticks`). A producer keeps these with its own storage of samples
/// ([`RecordLine`] borrows them for printing).
#[derive(Clone, Copy, Debug)]
pub struct RecordHead<'a> {
    /// `bench`.
    pub bench: &'a str,
    /// `variant`.
    pub variant: &'a str,
    /// `lock`.
    pub lock: &'a str,
    /// `cores`.
    pub cores: usize,
    /// `clients`.
    pub clients: usize,
    /// `pages` (0: left out).
    pub pages: usize,
    /// `unit`.
    pub unit: &'a str,
    /// `counter`.
    pub counter: &'a str,
    /// `counter_hz`.
    pub counter_hz: u64,
    /// `overhead`.
    pub overhead: u64,
    /// `interval_ticks` (throughput benchmarks only).
    pub interval_ticks: Option<u64>,
}

/// One raw record to print, borrowing its strings and samples: `Display` writes it as one
/// JSON object on one line (the keys of [`FIELDS`], in that order; `pages`, `interval_ticks`
/// and `extra` only when set).
#[derive(Clone, Copy, Debug)]
pub struct RecordLine<'a> {
    /// What was measured.
    pub head: RecordHead<'a>,
    /// Sums as measured; each printed sample is its sum divided by `divisor`.
    pub samples: &'a [u64],
    /// 1, or the number of operations each sum covers (the sample is then their mean, printed
    /// with two decimals, rounded half up).
    pub divisor: u64,
    /// `extra`: named numbers (empty: left out).
    pub extra: &'a [(&'a str, u64)],
}

/// Writes `s` as a JSON string.
pub fn json_str(w: &mut impl Write, s: &str) -> fmt::Result {
    w.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => w.write_str("\\\"")?,
            '\\' => w.write_str("\\\\")?,
            c if (c as u32) < 0x20 => write!(w, "\\u{:04x}", c as u32)?,
            c => w.write_char(c)?,
        }
    }
    w.write_char('"')
}

/// Writes `sum / divisor` as a JSON number: an integer for divisor 1, else rounded to two
/// decimals (half up).
pub fn json_mean(w: &mut impl Write, sum: u64, divisor: u64) -> fmt::Result {
    if divisor <= 1 {
        return write!(w, "{sum}");
    }
    let d = u128::from(divisor);
    let hundredths = (u128::from(sum) * 100 + d / 2) / d;
    write!(w, "{}.{:02}", hundredths / 100, hundredths % 100)
}

impl Display for RecordLine<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let h = &self.head;
        f.write_str("{\"bench\":")?;
        json_str(f, h.bench)?;
        f.write_str(",\"variant\":")?;
        json_str(f, h.variant)?;
        f.write_str(",\"lock\":")?;
        json_str(f, h.lock)?;
        write!(f, ",\"cores\":{},\"clients\":{}", h.cores, h.clients)?;
        if h.pages != 0 {
            write!(f, ",\"pages\":{}", h.pages)?;
        }
        f.write_str(",\"unit\":")?;
        json_str(f, h.unit)?;
        f.write_str(",\"counter\":")?;
        json_str(f, h.counter)?;
        write!(
            f,
            ",\"counter_hz\":{},\"overhead\":{}",
            h.counter_hz, h.overhead
        )?;
        if let Some(i) = h.interval_ticks {
            write!(f, ",\"interval_ticks\":{i}")?;
        }
        f.write_str(",\"samples\":[")?;
        for (i, &s) in self.samples.iter().enumerate() {
            if i > 0 {
                f.write_char(',')?;
            }
            json_mean(f, s, self.divisor)?;
        }
        f.write_char(']')?;
        if !self.extra.is_empty() {
            f.write_str(",\"extra\":{")?;
            for (i, (k, v)) in self.extra.iter().enumerate() {
                if i > 0 {
                    f.write_char(',')?;
                }
                json_str(f, k)?;
                write!(f, ":{v}")?;
            }
            f.write_char('}')?;
        }
        f.write_char('}')
    }
}

#[cfg(feature = "std")]
pub use owned::RawRecord;

#[cfg(feature = "std")]
mod owned {
    use serde::{Deserialize, Serialize};
    use serde_json::Value;

    /// One raw record read back (a guest's console line or an entry of a hosted benchmark's
    /// array); the fields of [`FIELDS`](super::FIELDS).
    #[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
    pub struct RawRecord {
        /// Benchmark name (`ipc-call`, `ipc-replyrecv`, `ipc-roundtrip`, ...).
        pub bench: String,
        /// `same-as` / `cross-as`, `pairs`, `shared` / `dedicated`, or empty.
        #[serde(default)]
        pub variant: String,
        /// The kernel's lock as booted.
        pub lock: String,
        /// Cores taking part.
        pub cores: u32,
        /// Client threads (client-server), else 0.
        #[serde(default)]
        pub clients: u32,
        /// Pages per task (the memory benchmark's records), else 0 (and then not written).
        #[serde(default, skip_serializing_if = "is_zero")]
        pub pages: u32,
        /// `ticks`, `cycles`, `round trips`, `round trips/s`, `barriers`.
        pub unit: String,
        /// The counter read (`tsc`, `pmccntr`, `a9-global-timer`, `cntvct`, `debugcall`).
        #[serde(default)]
        pub counter: String,
        /// The counter frequency as the producer believes it (0: unknown).
        #[serde(default, serialize_with = "number")]
        pub counter_hz: f64,
        /// The counter-read cost already subtracted from the samples, in `unit`.
        #[serde(default, serialize_with = "number")]
        pub overhead: f64,
        /// Throughput benches: the sampling interval in counter ticks.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            serialize_with = "some_number"
        )]
        pub interval_ticks: Option<f64>,
        /// One number per repetition.
        #[serde(serialize_with = "numbers")]
        pub samples: Vec<f64>,
        /// Bench-specific details.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub extra: Option<Value>,
    }

    impl RawRecord {
        /// Reads one record from its JSON text.
        pub fn parse(json: &str) -> Result<RawRecord, serde_json::Error> {
            serde_json::from_str(json)
        }

        /// The record as one line of JSON, the keys in the order of [`FIELDS`](super::FIELDS)
        /// (whole numbers written as integers, as the guests write them).
        pub fn to_json(&self) -> String {
            serde_json::to_string(self).unwrap_or_default()
        }
    }

    fn is_zero(x: &u32) -> bool {
        *x == 0
    }

    /// A whole number as an integer (`20`, not `20.0`), anything else as it is; JSON has no
    /// NaN or infinity, so those are `null`.
    fn number<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() && *x == x.trunc() && x.abs() < 9.0e15 {
            s.serialize_i64(*x as i64)
        } else if x.is_finite() {
            s.serialize_f64(*x)
        } else {
            s.serialize_none()
        }
    }

    fn some_number<S: serde::Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            Some(x) => number(x, s),
            None => s.serialize_none(),
        }
    }

    fn numbers<S: serde::Serializer>(xs: &[f64], s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        struct N(f64);
        impl Serialize for N {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                number(&self.0, s)
            }
        }
        let mut seq = s.serialize_seq(Some(xs.len()))?;
        for &x in xs {
            seq.serialize_element(&N(x))?;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    fn line<'a>(samples: &'a [u64], extra: &'a [(&'a str, u64)]) -> RecordLine<'a> {
        RecordLine {
            head: RecordHead {
                bench: "ipc-roundtrip",
                variant: "cross-as",
                lock: "clh",
                cores: 1,
                clients: 0,
                pages: 0,
                unit: "ticks",
                counter: "tsc",
                counter_hz: 2_400_000_000,
                overhead: 20,
                interval_ticks: None,
            },
            samples,
            divisor: 4,
            extra,
        }
    }

    #[test]
    fn a_record_is_one_json_object_with_means_to_two_decimals() {
        let text = line(&[10, 11, 402], &[]).to_string();
        assert_eq!(
            text,
            "{\"bench\":\"ipc-roundtrip\",\"variant\":\"cross-as\",\"lock\":\"clh\",\"cores\":1,\
             \"clients\":0,\"unit\":\"ticks\",\"counter\":\"tsc\",\"counter_hz\":2400000000,\
             \"overhead\":20,\"samples\":[2.50,2.75,100.50]}"
        );
    }

    #[test]
    fn strings_are_escaped() {
        let mut s = std::string::String::new();
        json_str(&mut s, "a\"b\\c\n").unwrap();
        assert_eq!(s, "\"a\\\"b\\\\c\\u000a\"");
        let mut m = std::string::String::new();
        json_mean(&mut m, 12345, 100).unwrap();
        assert_eq!(m, "123.45");
    }

    #[test]
    fn the_writer_uses_exactly_the_documented_keys_in_order() {
        let mut full = line(&[1], &[("aborts", 3)]);
        full.head.pages = 8;
        full.head.interval_ticks = Some(100);
        let text = full.to_string();
        let mut at = 0;
        for f in FIELDS {
            let key = std::format!("\"{}\":", f.name);
            let pos = text[at..]
                .find(&key)
                .unwrap_or_else(|| panic!("{} missing or out of order in {text}", f.name));
            at += pos + key.len();
        }
    }

    #[cfg(feature = "std")]
    #[test]
    fn the_reader_reads_what_the_writer_wrote() {
        let mut full = line(&[8, 12], &[("aborts", 3)]);
        full.head.pages = 8;
        full.head.interval_ticks = Some(100);
        let r = RawRecord::parse(&full.to_string()).unwrap();
        assert_eq!(r.bench, "ipc-roundtrip");
        assert_eq!(r.pages, 8);
        assert_eq!(r.interval_ticks, Some(100.0));
        assert_eq!(r.samples, [2.0, 3.0]);
        assert_eq!(r.extra.as_ref().unwrap()["aborts"], 3);
        // Written back, a record of whole samples is the guest's line again, byte for byte.
        full.divisor = 1;
        let whole = RawRecord::parse(&full.to_string()).unwrap();
        assert_eq!(whole.to_json(), full.to_string());
        // And every documented field is one the reader knows.
        let json = serde_json::to_value(RawRecord::parse(&full.to_string()).unwrap()).unwrap();
        let keys: std::vec::Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        for f in FIELDS {
            assert!(keys.contains(&f.name), "{} not read", f.name);
        }
        assert_eq!(keys.len(), FIELDS.len());
    }
}
