//! Raw records (what producers emit, docs/bench-protocol.md) and the records xtask writes: unit
//! conversion, statistics, and where and how each point was measured.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plan::{strategy_of, Platform};
use super::stats::{stats, Stats};

/// One measured point as a producer emits it (guest console line or hosted JSON array entry).
pub use protocol::record::RawRecord;

/// The machine the benchmarks ran on.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Machine {
    /// CPU model (`/proc/cpuinfo` model name).
    pub cpu: String,
    /// Logical CPUs of the host.
    pub host_cores: usize,
    /// `qemu-system-x86_64 --version`, first line (`none` if QEMU is absent).
    pub qemu: String,
    /// `rustc --version`.
    pub rustc: String,
}

/// One record of `results.json`: a raw record converted, summarised and placed.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Record {
    /// Benchmark name.
    pub bench: String,
    /// Benchmark variant (may be empty).
    pub variant: String,
    /// `x86_64` or `armv7`.
    pub arch: String,
    /// `hosted`, `qemu-icount` or `qemu`.
    pub platform: String,
    /// `host`, `microvm`, `sabrelite` or `virt`.
    pub board: String,
    /// `none`, `big-lock`, `fine` or `rtm`.
    pub strategy: String,
    /// The kernel's lock as booted (`clh`, `ticket`, `fine`, `rtm`, `none`).
    pub lock: String,
    /// Cores taking part.
    pub cores: u32,
    /// Client threads (client-server), else 0.
    pub clients: u32,
    /// Pages per task (the memory benchmark's records; for `memory-ipc` the tasks' that ran
    /// before the Calls), else 0 (and then left out of `results.json`, as in runs made before
    /// the memory suite).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pages: u32,
    /// Number of samples.
    pub runs: usize,
    /// Unit of `samples` and the statistics after conversion.
    pub unit: String,
    /// Mean of the samples.
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// Smallest sample.
    pub min: f64,
    /// Median sample.
    pub median: f64,
    /// The converted samples.
    pub samples: Vec<f64>,
    /// The producer's unit before conversion.
    pub raw_unit: String,
    /// The counter the producer read.
    pub counter: String,
    /// The counter frequency used for the conversion (Hz; 0: none needed).
    pub counter_hz: f64,
    /// The counter-read overhead the producer subtracted, in `raw_unit`.
    pub overhead: f64,
    /// How the point was measured, in one sentence.
    pub method: String,
    /// The machine.
    pub machine: Machine,
    /// Malformed guest runs retried before this one was accepted.
    pub retries: u32,
    /// The producer's bench-specific details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
    /// Kernel lock tracing in the image (`--kernel-trace`): `off` (built without the `trace`
    /// feature; also every hosted record, and records of runs made before the option),
    /// `built` (with the feature, `trace=0`) or `on` (`trace=1`). Not part of the key `bench
    /// compare` matches records on, so an `off` run and an `on` run line up point by point.
    #[serde(default = "trace_off")]
    pub kernel_trace: String,
}

impl Record {
    /// Whether this is a record of `bench` on `platform`/`board` with `lock` on `cores` cores.
    pub fn is(&self, bench: &str, platform: &str, board: &str, lock: &str, cores: u32) -> bool {
        self.bench == bench
            && self.platform == platform
            && self.board == board
            && self.lock == lock
            && self.cores == cores
    }
}

/// `kernel_trace` of a record that does not say (see [`Record::kernel_trace`]).
fn trace_off() -> String {
    super::guest::KernelTrace::Off.name().to_owned()
}

/// The true frequency (Hz) of a guest counter under QEMU 7.2, whatever the guest believes.
///
/// | counter | board | under `-icount shift=0` | under plain TCG |
/// |---|---|---|---|
/// | `tsc` | microvm | 1 GHz: rdtsc returns the icount clock, 1 ns per instruction | the host's TSC rate: the guest's own calibration (`counter_hz`) is used |
/// | `pmccntr` | ARM | 1 GHz (QEMU's fixed ARM cycle counter rate, from virtual time) | 1 GHz of virtual (= host) time |
/// | `a9-global-timer` | sabrelite | 100 MHz | 100 MHz |
/// | `cntvct` | virt | 62.5 MHz (QEMU 7.2's 16 ns generic-timer tick) | 62.5 MHz |
/// | `debugcall` | sabrelite | the A9 global timer read by the kernel: 100 MHz | 100 MHz |
/// | `debugcall` | virt | the generic timer read by the kernel: 62.5 MHz | 62.5 MHz |
/// | `debugcall` | microvm | the TSC read by the kernel: as `tsc` | as `tsc` |
///
/// Under `-icount shift=0` one guest instruction is 1 ns of virtual time, so a counter running
/// at `hz` counts `hz / 1e9` ticks per instruction. `None`: unknown counter (or the TSC under
/// plain TCG with no guest calibration).
pub fn true_hz(counter: &str, board: &str, icount: bool, guest_hz: f64) -> Option<f64> {
    let tsc = if icount {
        Some(1e9)
    } else {
        (guest_hz > 0.0).then_some(guest_hz)
    };
    match (counter, board) {
        ("tsc", _) => tsc,
        ("pmccntr", _) => Some(1e9),
        ("a9-global-timer", _) => Some(100e6),
        ("cntvct", _) => Some(62.5e6),
        ("debugcall", "sabrelite") => Some(100e6),
        ("debugcall", "virt") => Some(62.5e6),
        ("debugcall", "microvm") => tsc,
        _ => None,
    }
}

/// Where a raw record came from, for [`convert`].
#[derive(Clone, Debug)]
pub struct Origin<'a> {
    /// The platform.
    pub platform: Platform,
    /// `x86_64` or `armv7`.
    pub arch: &'a str,
    /// The board (`host`, `microvm`, `sabrelite`, `virt`).
    pub board: &'a str,
    /// The machine.
    pub machine: &'a Machine,
    /// Malformed runs retried.
    pub retries: u32,
}

/// Converts a raw record: guest ticks to instructions (`qemu-icount`) or nanoseconds (`qemu`),
/// counts per interval to round trips per second, and adds the statistics and the method.
pub fn convert(raw: &RawRecord, origin: &Origin) -> Result<Record, String> {
    let what = format!(
        "{} {} lock {} on {} {}",
        raw.bench,
        raw.variant,
        raw.lock,
        origin.platform.name(),
        origin.board
    );
    let icount = origin.platform == Platform::QemuIcount;
    let hz = || {
        if origin.platform == Platform::Hosted {
            (raw.counter_hz > 0.0).then_some(raw.counter_hz)
        } else {
            true_hz(&raw.counter, origin.board, icount, raw.counter_hz)
        }
        .ok_or_else(|| {
            format!(
                "{what}: unknown frequency of counter `{}` (counter_hz {})",
                raw.counter, raw.counter_hz
            )
        })
    };
    let (unit, factor, used_hz) = match (raw.unit.as_str(), origin.platform) {
        ("ticks", Platform::QemuIcount) => {
            let hz = hz()?;
            ("instructions", 1e9 / hz, hz)
        }
        ("ticks", Platform::Qemu) => {
            let hz = hz()?;
            ("ns", 1e9 / hz, hz)
        }
        // Host ticks are TSC cycles.
        ("ticks", Platform::Hosted) if raw.counter == "tsc" || raw.counter.is_empty() => {
            ("cycles", 1.0, 0.0)
        }
        ("round trips", _) => {
            let interval = raw
                .interval_ticks
                .filter(|t| *t > 0.0)
                .ok_or_else(|| format!("{what}: `round trips` without interval_ticks"))?;
            let hz = hz()?;
            ("round trips/s", hz / interval, hz)
        }
        ("ticks", _) => return Err(format!("{what}: ticks of counter `{}`", raw.counter)),
        // Cycles, round trips/s, barriers, and anything else: no conversion.
        (unit, _) => (unit, 1.0, 0.0),
    };
    // Rounded to a millionth, so that 308.11 ticks x 10 prints as 3081.1.
    let samples: Vec<f64> = raw
        .samples
        .iter()
        .map(|s| (s * factor * 1e6).round() / 1e6)
        .collect();
    // A record without samples (such as `rtm-aborts`, whose figures are in `extra`) has
    // all-zero statistics and `runs` 0.
    let st = if samples.is_empty() {
        Stats {
            mean: 0.0,
            stddev: 0.0,
            min: 0.0,
            median: 0.0,
        }
    } else {
        stats(&samples).ok_or_else(|| format!("{what}: a sample is not a finite number"))?
    };
    Ok(Record {
        bench: raw.bench.clone(),
        variant: raw.variant.clone(),
        arch: origin.arch.to_owned(),
        platform: origin.platform.name().to_owned(),
        board: origin.board.to_owned(),
        strategy: strategy_of(&raw.lock).to_owned(),
        lock: raw.lock.clone(),
        cores: raw.cores,
        clients: raw.clients,
        pages: raw.pages,
        runs: samples.len(),
        unit: unit.to_owned(),
        mean: st.mean,
        stddev: st.stddev,
        min: st.min,
        median: st.median,
        samples,
        raw_unit: raw.unit.clone(),
        counter: raw.counter.clone(),
        counter_hz: used_hz,
        overhead: raw.overhead,
        method: method(raw, origin.platform, used_hz),
        machine: origin.machine.clone(),
        retries: origin.retries,
        extra: raw.extra.clone(),
        kernel_trace: trace_off(),
    })
}

/// Whether `n` is 0 (for `skip_serializing_if`).
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One sentence on how a point was measured.
pub fn method(raw: &RawRecord, platform: Platform, hz: f64) -> String {
    let what = match raw.bench.as_str() {
        "ipc-call" => "one-way Call, counter read by the client before Call and by the server after its receive returns",
        "ipc-replyrecv" => "one-way ReplyRecv, counter read by the server before ReplyRecv and by the client after Call returns",
        "ipc-roundtrip" => "mean Call + ReplyRecv round trip over a batch",
        "null-syscall" => "mean Null system call (trap, kernel entry and exit, no work) over a batch",
        "lock-pair" => "mean lock + unlock of an uncontended lock over a batch, timed by the image in kernel mode at boot with interrupts masked, less the empty loop",
        "lock-pair-irqsave" => "mean lock_irqsave + unlock_irqrestore of an uncontended lock over a batch, entered with interrupts enabled, timed by the image in kernel mode at boot, less the empty loop",
        "lock-pair-irqsave-masked" => "mean lock_irqsave + unlock_irqrestore of an uncontended lock over a batch, entered with interrupts masked, timed by the image in kernel mode at boot, less the empty loop",
        "multicore-pingpong" => "round trips of all pairs (one client/server pair per core, disjoint objects) per sampling interval",
        "client-server" => "round trips of the clients calling their server(s) per sampling interval",
        "rtm-aborts" => "RTM statistics",
        "ipc-barriers" => "barrier instructions per round trip",
        "memory-alloc" => "per page of a task that touches fresh pages of its own address space (one page fault each, served by a user-level pager that maps a frame), mean over the workers (one per core)",
        "memory-free" => "per page of a task that frees its pages one by one (a free request to the pager, which unmaps the page), mean over the workers (one per core)",
        "memory-ipc" => "one null request (Call) to a pager, on the caller's core or another, mean over a batch",
        _ => "producer-defined",
    };
    let how = match platform {
        Platform::Hosted => "kernel on host threads entered through Kernel::syscall (no trap, HAL actions no-ops), host TSC".to_owned(),
        Platform::QemuIcount => format!(
            "QEMU TCG -icount shift=0 (deterministic; one instruction = 1 ns of virtual time), counter `{}` at {} Hz under icount, instructions = ticks x 1e9 / Hz",
            raw.counter, hz
        ),
        Platform::Qemu => format!(
            "QEMU multi-threaded TCG, virtual time = host time, counter `{}` at {} Hz: NOISY (host load, host cores)",
            raw.counter, hz
        ),
    };
    format!(
        "{what}; {how}; {} samples, counter overhead {} {} subtracted by the producer",
        raw.samples.len(),
        raw.overhead,
        raw.unit
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw record of `bench` with `samples` in `unit` from `counter`.
    pub fn raw(bench: &str, lock: &str, unit: &str, counter: &str, samples: &[f64]) -> RawRecord {
        RawRecord {
            bench: bench.into(),
            variant: "cross-as".into(),
            lock: lock.into(),
            cores: 1,
            clients: 0,
            pages: 0,
            unit: unit.into(),
            counter: counter.into(),
            counter_hz: 0.0,
            overhead: 0.0,
            interval_ticks: None,
            samples: samples.to_vec(),
            extra: None,
        }
    }

    fn machine() -> Machine {
        Machine {
            cpu: "test cpu".into(),
            host_cores: 2,
            qemu: "QEMU emulator version 7.2.0".into(),
            rustc: "rustc 1.95.0".into(),
        }
    }

    /// Converts `raw` as measured on `board` under `platform` (on [`machine`]).
    fn convert_on(raw: &RawRecord, platform: Platform, board: &str) -> Result<Record, String> {
        let m = machine();
        let origin = Origin {
            platform,
            arch: if board == "microvm" || board == "host" {
                "x86_64"
            } else {
                "armv7"
            },
            board,
            machine: &m,
            retries: 0,
        };
        convert(raw, &origin)
    }

    #[test]
    fn icount_ticks_become_instructions() {
        let r = convert_on(
            &raw("ipc-roundtrip", "clh", "ticks", "tsc", &[421.0, 421.0]),
            Platform::QemuIcount,
            "microvm",
        )
        .unwrap();
        assert_eq!(
            (r.unit.as_str(), r.mean, r.stddev),
            ("instructions", 421.0, 0.0)
        );
        assert_eq!(r.strategy, "big-lock");
        // The 100 MHz global timer ticks once per 10 instructions, cntvct once per 16.
        let r = convert_on(
            &raw("ipc-call", "none", "ticks", "a9-global-timer", &[20.0]),
            Platform::QemuIcount,
            "sabrelite",
        )
        .unwrap();
        assert_eq!(r.samples, vec![200.0]);
        let r = convert_on(
            &raw("ipc-call", "none", "ticks", "debugcall", &[10.0]),
            Platform::QemuIcount,
            "virt",
        )
        .unwrap();
        assert_eq!((r.samples[0], r.counter_hz), (160.0, 62.5e6));
    }

    #[test]
    fn throughput_becomes_per_second() {
        let mut r = raw(
            "multicore-pingpong",
            "fine",
            "round trips",
            "cntvct",
            &[1000.0],
        );
        r.interval_ticks = Some(62.5e6 / 10.0); // 100 ms
        let c = convert_on(&r, Platform::Qemu, "virt").unwrap();
        assert_eq!(c.unit, "round trips/s");
        assert!((c.mean - 10_000.0).abs() < 1e-6, "{}", c.mean);
        r.interval_ticks = None;
        assert!(convert_on(&r, Platform::Qemu, "virt").is_err());
    }

    #[test]
    fn tsc_under_plain_tcg_needs_the_guest_calibration() {
        let mut r = raw("ipc-roundtrip", "clh", "ticks", "tsc", &[2400.0]);
        assert!(convert_on(&r, Platform::Qemu, "microvm").is_err());
        r.counter_hz = 2.4e9;
        let c = convert_on(&r, Platform::Qemu, "microvm").unwrap();
        assert_eq!((c.unit.as_str(), c.mean), ("ns", 1000.0));
    }

    #[test]
    fn host_cycles_and_bad_units() {
        let c = convert_on(
            &raw("ipc-roundtrip", "rtm", "cycles", "tsc", &[400.0, 500.0]),
            Platform::Hosted,
            "host",
        )
        .unwrap();
        assert_eq!((c.unit.as_str(), c.mean, c.runs), ("cycles", 450.0, 2));
        // Units that need no conversion pass through.
        let a = convert_on(
            &raw("ipc-barriers", "clh", "barriers", "", &[6.0]),
            Platform::QemuIcount,
            "sabrelite",
        )
        .unwrap();
        assert_eq!((a.unit.as_str(), a.mean), ("barriers", 6.0));
        assert!(convert_on(
            &raw("ipc-roundtrip", "rtm", "ticks", "sundial", &[1.0]),
            Platform::QemuIcount,
            "microvm"
        )
        .is_err());
        // Statistics-only records (rtm-aborts) have no samples.
        let info = convert_on(
            &raw("rtm-aborts", "rtm", "acquisitions", "", &[]),
            Platform::Hosted,
            "host",
        )
        .unwrap();
        assert_eq!((info.runs, info.mean), (0, 0.0));
    }

    #[test]
    fn null_syscall_has_a_method_and_records_default_to_untraced() {
        let r = convert_on(
            &raw("null-syscall", "clh", "ticks", "tsc", &[300.0]),
            Platform::QemuIcount,
            "microvm",
        )
        .unwrap();
        assert!(
            r.method.starts_with("mean Null system call"),
            "{}",
            r.method
        );
        assert_eq!(r.kernel_trace, "off");
        // results.json of runs made before `kernel_trace` existed read as untraced.
        let mut v = serde_json::to_value(&r).unwrap();
        v.as_object_mut().unwrap().remove("kernel_trace");
        let back: Record = serde_json::from_value(v).unwrap();
        assert_eq!(back.kernel_trace, "off");
    }

    #[test]
    fn lock_pair_records_become_instructions_per_pair_with_their_method() {
        // What an x86_64 guest prints: ticks per pair (the batch's mean), the empty loop's
        // share subtracted; sabrelite's debug-call counter ticks once per 10 instructions.
        let r: RawRecord = serde_json::from_str(
            r#"{"bench":"lock-pair-irqsave","variant":"ticket","lock":"clh","cores":1,"clients":0,"unit":"ticks","counter":"tsc","counter_hz":1000000000,"overhead":3,"samples":[17.00,17.00],"extra":{"batch":1000,"warmup_batches":2,"overhead_per_batch":3002}}"#,
        )
        .unwrap();
        let c = convert_on(&r, Platform::QemuIcount, "microvm").unwrap();
        assert_eq!(
            (c.unit.as_str(), c.mean, c.variant.as_str()),
            ("instructions", 17.0, "ticket")
        );
        assert!(
            c.method
                .starts_with("mean lock_irqsave + unlock_irqrestore of an uncontended lock")
                && c.method.contains("entered with interrupts enabled"),
            "{}",
            c.method
        );
        assert_eq!(c.extra.as_ref().unwrap()["overhead_per_batch"], 3002);
        let mut a9 = raw(
            "lock-pair-irqsave-masked",
            "none",
            "ticks",
            "debugcall",
            &[1.84],
        );
        a9.variant = "none".into();
        let c = convert_on(&a9, Platform::QemuIcount, "sabrelite").unwrap();
        assert_eq!((c.samples[0], c.counter_hz), (18.4, 100e6));
        assert!(
            c.method.contains("entered with interrupts masked"),
            "{}",
            c.method
        );
        let plain = convert_on(
            &raw("lock-pair", "clh", "ticks", "pmccntr", &[30.0]),
            Platform::QemuIcount,
            "virt",
        )
        .unwrap();
        assert!(
            plain.method.starts_with("mean lock + unlock"),
            "{}",
            plain.method
        );
    }

    #[test]
    fn raw_records_parse_with_defaults() {
        let r: RawRecord = serde_json::from_str(
            r#"{"bench":"ipc-call","lock":"clh","cores":1,"unit":"ticks","counter":"tsc","counter_hz":2400000000,"samples":[1,2.5]}"#,
        )
        .unwrap();
        assert_eq!((r.variant.as_str(), r.clients, r.overhead), ("", 0, 0.0));
        assert_eq!(r.samples, vec![1.0, 2.5]);
    }
}
