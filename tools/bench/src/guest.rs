//! Guest benchmark runs: boot an image in `mode=bench`, judge the run, extract the raw records
//! printed between `BENCH-JSON-BEGIN` and `BENCH-JSON-END`, and retry malformed runs.

use std::path::Path;
use std::time::Duration;

use super::records::RawRecord;
use host_env::proc::Cmd;
use qemu_runner::qemu::{self, Arch, Guest, Lock, Machine};

/// The lines that open and close a block of raw records.
pub use protocol::console::{BENCH_BEGIN as BEGIN, BENCH_END as END};
/// Retries of a malformed run before it is an error.
pub const RETRIES: u32 = 2;

/// Kernel lock tracing in the benchmarked images (`--kernel-trace`): what the images
/// are built with and what their command line says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelTrace {
    /// The images as always: built without their `trace` feature.
    #[default]
    Off,
    /// Built with their `trace` feature (in `<target>/features-trace`), booted with `trace=0`:
    /// what the feature costs with no tracer set.
    Built,
    /// Built with the feature and booted with `trace=1`: every kernel entry writes a trace
    /// record into its core's ring; the image prints the rings after the records
    /// (`TRACE-BEGIN` .. `TRACE-END`, outside the record markers, so ignored here).
    On,
}

impl KernelTrace {
    /// The value as `--kernel-trace` takes it and records carry it (`kernel_trace`).
    pub fn name(self) -> &'static str {
        match self {
            KernelTrace::Off => "off",
            KernelTrace::Built => "built",
            KernelTrace::On => "on",
        }
    }

    /// The image's cargo features.
    pub fn features(self) -> &'static [&'static str] {
        match self {
            KernelTrace::Off => &[],
            KernelTrace::Built | KernelTrace::On => &["trace"],
        }
    }

    /// The kernel command-line word (none for `off`: the command line stays as it always was).
    pub fn word(self) -> Option<&'static str> {
        match self {
            KernelTrace::Off => None,
            KernelTrace::Built => Some("trace=0"),
            KernelTrace::On => Some("trace=1"),
        }
    }

    /// One clause for a record's method sentence and the report.
    pub fn describe(self) -> &'static str {
        match self {
            KernelTrace::Off => "kernel built without its `trace` feature",
            KernelTrace::Built => {
                "kernel built with its `trace` feature but booted with trace=0 (no tracer set)"
            }
            KernelTrace::On => {
                "kernel built with its `trace` feature and booted with trace=1 (every kernel \
                 entry writes a 112-byte record into its core's trace ring)"
            }
        }
    }
}

/// What one guest run produced.
#[derive(Debug, PartialEq)]
pub enum Attempt {
    /// Well-formed records.
    Records(Vec<RawRecord>),
    /// Records were started but are truncated or unparsable: worth a retry.
    Malformed(String),
    /// The run failed (bad exit status, hang, no records at all): an error, not retried.
    Failed(String),
}

/// Extracts the raw records of a console. Every line between the markers must be one JSON
/// record (blank lines aside); several blocks are allowed. A console without any
/// `BENCH-JSON-BEGIN` is a failure (the guest does not benchmark), a block without its end or
/// with a line that does not parse is malformed.
pub fn parse_console(lines: &[String]) -> Attempt {
    let mut records = Vec::new();
    let mut inside = false;
    let mut blocks = 0;
    for (n, line) in lines.iter().enumerate() {
        let line = line.trim();
        if line == BEGIN {
            if inside {
                return Attempt::Malformed(format!(
                    "console line {}: {BEGIN} inside an open block",
                    n + 1
                ));
            }
            inside = true;
            blocks += 1;
        } else if line == END {
            if !inside {
                return Attempt::Malformed(format!(
                    "console line {}: {END} without {BEGIN}",
                    n + 1
                ));
            }
            inside = false;
        } else if inside && !line.is_empty() {
            match RawRecord::parse(line) {
                Ok(r) => records.push(r),
                Err(e) => {
                    let shown: String = line.chars().take(120).collect();
                    return Attempt::Malformed(format!(
                        "console line {}: not a raw record ({e}): `{shown}`",
                        n + 1
                    ));
                }
            }
        }
    }
    if blocks == 0 {
        return Attempt::Failed(format!(
            "the guest printed no {BEGIN} line: its image does not run `mode=bench` \
             (are the guest benchmarks missing from this image?)"
        ));
    }
    if inside {
        return Attempt::Malformed(format!("{BEGIN} without {END}: the output is truncated"));
    }
    if records.is_empty() {
        return Attempt::Malformed("the record blocks are empty".into());
    }
    Attempt::Records(records)
}

/// Runs `attempt` (given the attempt number, from 0) until it gives records, at most
/// [`RETRIES`] retries of a malformed run; `log` hears of each retry. Returns the records and
/// the number of retries, or why it failed.
pub fn with_retries(
    mut attempt: impl FnMut(u32) -> Attempt,
    mut log: impl FnMut(&str),
) -> Result<(Vec<RawRecord>, u32), String> {
    let mut last = String::new();
    for n in 0..=RETRIES {
        match attempt(n) {
            Attempt::Records(r) => return Ok((r, n)),
            Attempt::Failed(why) => return Err(why),
            Attempt::Malformed(why) => {
                if n < RETRIES {
                    log(&format!(
                        "malformed output ({why}); retrying ({} of {RETRIES})",
                        n + 1
                    ));
                }
                last = why;
            }
        }
    }
    Err(format!(
        "malformed output in {} runs in a row, the last: {last}",
        RETRIES + 1
    ))
}

/// One guest benchmark boot.
#[derive(Clone, Debug)]
pub struct GuestRun {
    /// Architecture.
    pub arch: Arch,
    /// Machine.
    pub machine: Machine,
    /// Cores.
    pub smp: u32,
    /// The kernel's lock.
    pub lock: Lock,
    /// `ipc`, `multicore` or `clientserver`.
    pub bench: &'static str,
    /// Client threads (client-server).
    pub clients: Option<u32>,
    /// Client-server variant: `shared` (one server) or `dedicated` (a server per client).
    pub variant: Option<&'static str>,
    /// Memory benchmark: `percore` (a pager per core) or `global` (one pager) (`pager=`).
    pub pager: Option<&'static str>,
    /// Memory benchmark: pages per task (`pages=`).
    pub pages: Option<u32>,
    /// Samples per record (`runs=`).
    pub runs: u32,
    /// `-icount shift=0`.
    pub icount: bool,
    /// Seconds before the run counts as a hang.
    pub timeout: u64,
    /// Kernel lock tracing (`trace=` on the command line unless `off`).
    pub kernel_trace: KernelTrace,
}

impl GuestRun {
    /// A 1-core boot of `bench` on `machine` with `lock`, `runs` samples, `-icount` or not,
    /// `timeout` seconds; no clients, variant, pager or page count.
    pub fn one_core(
        arch: Arch,
        machine: Machine,
        lock: Lock,
        bench: &'static str,
        (runs, icount, timeout): (u32, bool, u64),
    ) -> GuestRun {
        GuestRun {
            arch,
            machine,
            smp: 1,
            lock,
            bench,
            clients: None,
            variant: None,
            pager: None,
            pages: None,
            runs,
            icount,
            timeout,
            kernel_trace: KernelTrace::Off,
        }
    }

    /// The kernel command line.
    pub fn append(&self) -> String {
        let mut s = format!(
            "lock={} mode=bench bench={} runs={}",
            self.lock.name(),
            self.bench,
            self.runs
        );
        if let Some(c) = self.clients {
            s.push_str(&format!(" clients={c}"));
        }
        if let Some(v) = self.variant {
            s.push_str(&format!(" variant={v}"));
        }
        if let Some(p) = self.pager {
            s.push_str(&format!(" pager={p}"));
        }
        if let Some(p) = self.pages {
            s.push_str(&format!(" pages={p}"));
        }
        if let Some(w) = self.kernel_trace.word() {
            s.push_str(&format!(" {w}"));
        }
        s
    }

    /// A short name for messages.
    pub fn label(&self) -> String {
        format!(
            "{} {} smp{} lock={} bench={}{}{}",
            qemu::arch_name(self.arch),
            self.machine.name(),
            self.smp,
            self.lock.name(),
            self.bench,
            self.clients
                .map(|c| format!(" clients={c}"))
                .unwrap_or_default()
                + &self.variant.map(|v| format!(" {v}")).unwrap_or_default()
                + &self
                    .pager
                    .map(|p| format!(" pager={p}"))
                    .unwrap_or_default()
                + &self
                    .pages
                    .map(|p| format!(" pages={p}"))
                    .unwrap_or_default()
                + &self
                    .kernel_trace
                    .word()
                    .map(|w| format!(" {w}"))
                    .unwrap_or_default(),
            if self.icount { " (icount)" } else { "" }
        )
    }

    /// The QEMU command for `elf`.
    pub fn cmd(&self, elf: &Path) -> Cmd {
        let extra = if self.icount {
            // sleep=off: idle time does not follow the host clock, so timer interrupts land at
            // the same instruction in every run.
            vec!["-icount".to_owned(), "shift=0,sleep=off".to_owned()]
        } else {
            vec!["-accel".to_owned(), "tcg,thread=multi".to_owned()]
        };
        qemu::guest_cmd(&Guest {
            arch: self.arch,
            machine: self.machine,
            smp: self.smp,
            elf,
            append: self.append(),
            extra,
            console_port: 0,
            semihosting: true,
        })
    }

    /// Boots once and judges the run.
    pub fn attempt(&self, root: &Path, elf: &Path, verbose: bool) -> Attempt {
        let cmd = self.cmd(elf);
        if verbose {
            eprintln!("bench: {}", cmd.display());
        }
        let out = match cmd.run_captured(root, verbose, Duration::from_secs(self.timeout)) {
            Ok(out) => out,
            Err(e) => {
                return Attempt::Failed(format!(
                    "could not run {}: {e}",
                    qemu::qemu_binary(self.arch)
                ))
            }
        };
        judge(
            self,
            out.status.code(),
            out.timed_out,
            &out.lines,
            &cmd.display(),
        )
    }
}

/// The verdict on one run: a hang or a bad exit is a failure with the console's tail, else the
/// console's records decide ([`parse_console`]).
pub fn judge(
    run: &GuestRun,
    code: Option<i32>,
    timed_out: bool,
    lines: &[String],
    cmd: &str,
) -> Attempt {
    let tail = || {
        let start = lines.len().saturating_sub(qemu::TAIL);
        let mut s = format!(
            "\n  command: {cmd}\n  ---- last {} console lines ----",
            lines.len() - start
        );
        for l in &lines[start..] {
            s.push_str("\n  | ");
            s.push_str(l);
        }
        s
    };
    if timed_out {
        return Attempt::Failed(format!(
            "HANG: no exit after {} s, QEMU killed{}",
            run.timeout,
            tail()
        ));
    }
    let (ok, what) = match run.arch {
        Arch::X86_64 => qemu::explain_status(code),
        Arch::Armv7 => qemu::explain_armv7(code, lines, run.smp, run.lock),
    };
    if !ok {
        let hint = if lines
            .iter()
            .any(|l| l.contains("mode=bench") || l.contains("bench="))
        {
            "\n  (the kernel may not know `mode=bench` or one of its options yet: the guest \
             benchmarks are missing or incomplete)"
        } else {
            ""
        };
        return Attempt::Failed(format!("the run failed: {what}{hint}{}", tail()));
    }
    match parse_console(lines) {
        Attempt::Failed(why) => Attempt::Failed(format!("{why}{}", tail())),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    const REC: &str = r#"{"bench":"ipc-call","variant":"cross-as","lock":"clh","cores":1,"clients":0,"unit":"ticks","counter":"tsc","counter_hz":1000000000,"overhead":20,"samples":[197,197]}"#;

    fn good() -> Vec<String> {
        lines(&format!(
            "boot: ok\nlock: clh (big)\n{BEGIN}\n{REC}\n\n{REC}\n{END}\nshutting down: success\n"
        ))
    }

    #[test]
    fn good_console_gives_its_records() {
        match parse_console(&good()) {
            Attempt::Records(r) => {
                assert_eq!(r.len(), 2);
                assert_eq!(r[0].samples, vec![197.0, 197.0]);
                assert_eq!(r[0].overhead, 20.0);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn truncated_or_garbage_is_malformed() {
        let mut truncated = good();
        truncated.truncate(4);
        assert!(
            matches!(parse_console(&truncated), Attempt::Malformed(w) if w.contains("truncated"))
        );
        let garbage = lines(&format!(
            "{BEGIN}\n{REC}\n{{\"bench\": \"ipc-c\x00ll\n{END}\n"
        ));
        assert!(matches!(parse_console(&garbage), Attempt::Malformed(w) if w.contains("line 3")));
        // A line cut in the middle of a record.
        let cut = lines(&format!("{BEGIN}\n{}\n{END}\n", &REC[..40]));
        assert!(matches!(parse_console(&cut), Attempt::Malformed(_)));
        // Interleaved kernel output inside the block.
        let noisy = lines(&format!("{BEGIN}\n[cpu 1] hello\n{REC}\n{END}\n"));
        assert!(matches!(parse_console(&noisy), Attempt::Malformed(_)));
        let empty = lines(&format!("{BEGIN}\n{END}\n"));
        assert!(matches!(parse_console(&empty), Attempt::Malformed(_)));
        let nested = lines(&format!("{BEGIN}\n{BEGIN}\n{REC}\n{END}\n"));
        assert!(matches!(parse_console(&nested), Attempt::Malformed(_)));
    }

    #[test]
    fn no_block_at_all_is_a_failure_not_a_retry() {
        assert!(matches!(
            parse_console(&lines("boot: ok\nshutting down: success\n")),
            Attempt::Failed(w) if w.contains("mode=bench")
        ));
    }

    #[test]
    fn malformed_runs_are_retried_twice() {
        let mut calls = 0;
        let mut logged = Vec::new();
        let got = with_retries(
            |n| {
                calls += 1;
                if n < 2 {
                    Attempt::Malformed("cut".into())
                } else {
                    parse_console(&good())
                }
            },
            |m| logged.push(m.to_owned()),
        )
        .unwrap();
        assert_eq!((calls, got.1, got.0.len()), (3, 2, 2));
        assert_eq!(logged.len(), 2);
        assert!(logged[0].contains("retrying (1 of 2)"), "{logged:?}");

        let (calls, err) = always(|| Attempt::Malformed("cut".into()));
        assert_eq!(calls, 3);
        assert!(err.contains("3 runs"), "{err}");
    }

    /// [`with_retries`] on runs that all end as `attempt()`: the runs made and the error.
    fn always(attempt: impl Fn() -> Attempt) -> (u32, String) {
        let mut calls = 0;
        let err = with_retries(
            |_| {
                calls += 1;
                attempt()
            },
            |_| {},
        )
        .unwrap_err();
        (calls, err)
    }

    #[test]
    fn failures_are_not_retried() {
        let (calls, err) = always(|| Attempt::Failed("HANG".into()));
        assert_eq!((calls, err.as_str()), (1, "HANG"));
    }

    fn run(arch: Arch) -> GuestRun {
        GuestRun {
            arch,
            machine: arch.default_machine(),
            smp: 1,
            lock: Lock::Clh,
            bench: "ipc",
            clients: None,
            variant: None,
            pager: None,
            pages: None,
            runs: 16,
            icount: true,
            timeout: 60,
            kernel_trace: KernelTrace::Off,
        }
    }

    #[test]
    fn bad_exit_or_hang_fails_with_the_tail() {
        let r = run(Arch::X86_64);
        let ok = judge(&r, Some(33), false, &good(), "qemu");
        assert!(matches!(ok, Attempt::Records(_)));
        let bad = judge(&r, Some(35), false, &good(), "qemu");
        assert!(
            matches!(&bad, Attempt::Failed(w) if w.contains("status 35") && w.contains("| lock: clh")),
            "{bad:?}"
        );
        let hang = judge(&r, None, true, &lines("boot: ok"), "qemu");
        assert!(
            matches!(&hang, Attempt::Failed(w) if w.contains("HANG") && w.contains("| boot: ok")),
            "{hang:?}"
        );
        // A malformed console with a good exit is retried.
        let mut cut = good();
        cut.truncate(4);
        assert!(matches!(
            judge(&r, Some(33), false, &cut, "qemu"),
            Attempt::Malformed(_)
        ));
        // ARM: status 0 needs the kernel's success lines.
        let arm = run(Arch::Armv7);
        let mut console = lines("cpus online: 1\n");
        console.extend(good());
        assert!(matches!(
            judge(&arm, Some(0), false, &console, "qemu"),
            Attempt::Records(_)
        ));
        assert!(matches!(
            judge(&arm, Some(0), false, &good(), "qemu"),
            Attempt::Failed(_)
        ));
    }

    #[test]
    fn command_lines() {
        let mut r = run(Arch::X86_64);
        assert_eq!(r.append(), "lock=clh mode=bench bench=ipc runs=16");
        let shown = r.cmd(Path::new("/img")).display();
        assert!(shown.contains("-icount shift=0,sleep=off"), "{shown}");
        r.icount = false;
        r.bench = "clientserver";
        r.clients = Some(3);
        r.variant = Some("dedicated");
        assert!(r
            .append()
            .ends_with("bench=clientserver runs=16 clients=3 variant=dedicated"));
        let shown = r.cmd(Path::new("/img")).display();
        assert!(
            shown.contains("thread=multi") && !shown.contains("icount"),
            "{shown}"
        );
        let memory = GuestRun {
            bench: "memory",
            pager: Some("global"),
            pages: Some(500),
            smp: 4,
            ..run(Arch::X86_64)
        };
        assert_eq!(
            memory.append(),
            "lock=clh mode=bench bench=memory runs=16 pager=global pages=500"
        );
        assert_eq!(
            memory.label(),
            "x86_64 microvm smp4 lock=clh bench=memory pager=global pages=500 (icount)"
        );
    }

    #[test]
    fn kernel_trace_adds_its_word_and_off_changes_nothing() {
        let off = run(Arch::X86_64);
        assert_eq!(off.append(), "lock=clh mode=bench bench=ipc runs=16");
        for (t, word) in [
            (KernelTrace::Built, "trace=0"),
            (KernelTrace::On, "trace=1"),
        ] {
            let r = GuestRun {
                kernel_trace: t,
                ..run(Arch::X86_64)
            };
            assert_eq!(
                r.append(),
                format!("lock=clh mode=bench bench=ipc runs=16 {word}")
            );
            assert!(r.label().contains(word), "{}", r.label());
            assert_eq!(t.features(), ["trace"]);
        }
        assert!(KernelTrace::Off.features().is_empty());
    }

    #[test]
    fn a_trace_dump_after_the_records_is_ignored() {
        // What an image booted with trace=1 prints after its records (image_common::trace).
        let mut console = good();
        let at = console.len() - 1;
        console.splice(
            at..at,
            lines(
                "TRACE-BEGIN cores=1 lock=clh counter=tsc hz=1000000000 ring=2048\n\
                 TRACE-RECORD 00ff\nTRACE-CORE 0 records=1 lost=0\nTRACE-END records=1 lost=0",
            ),
        );
        match parse_console(&console) {
            Attempt::Records(r) => assert_eq!(r.len(), 2),
            other => panic!("{other:?}"),
        }
    }
}
