//! The console lines a guest prints and the host reads.
//!
//! Each kind of line is a small type whose `Display` writes the line (without its newline);
//! the guest prints it with `println!("{}", ..)` or its own console writer. [`Line::parse`]
//! reads one console line back into a [`Line`], borrowing from the text; a line that starts
//! like one of the kinds but does not follow its syntax is [`Line::Malformed`], so that a
//! reader can tell a broken report from ordinary console output ([`Line::Other`]).
//!
//! The kinds, in the order a test run prints them:
//!
//! ```text
//! TESTS PLANNED 17
//! plan: thread 1 (hello, cpu 0) reports DONE
//! TEST kernel:ipc_call ... ok (reply 42)
//! TEST user:devices ... skipped (no transports)
//! done: thread 1 (hello, cpu 0)
//! ALL TESTS RAN 17
//! shutting down: success (uptime 812 ms)
//! ```
//!
//! A benchmark run prints its records between [`BENCH_BEGIN`] and [`BENCH_END`] (see
//! [`crate::record`]); a traced image prints its rings between `TRACE-BEGIN` and `TRACE-END`.

use core::fmt::{self, Display, Formatter};

/// The first word of the test plan line.
pub const TESTS_PLANNED: &str = "TESTS PLANNED";
/// The first word of a test line.
pub const TEST: &str = "TEST";
/// What separates a test's name from its result.
pub const RESULT_SEPARATOR: &str = " ... ";
/// The first words of the sentinel after the last test.
pub const ALL_TESTS_RAN: &str = "ALL TESTS RAN";
/// The first word of a line naming a program the image waits for.
pub const PLAN: &str = "plan:";
/// What ends a [`PLAN`] line.
pub const REPORTS_DONE: &str = "reports DONE";
/// The first word of a line naming a program that reported DONE.
pub const DONE: &str = "done:";
/// The first words of the shutdown line.
pub const SHUTTING_DOWN: &str = "shutting down:";
/// How a successful shutdown line starts (the uptime follows).
pub const SHUTDOWN_SUCCESS: &str = "shutting down: success";
/// The line before the benchmark records.
pub const BENCH_BEGIN: &str = "BENCH-JSON-BEGIN";
/// The line after the benchmark records.
pub const BENCH_END: &str = "BENCH-JSON-END";
/// The first word of the trace header.
pub const TRACE_BEGIN: &str = "TRACE-BEGIN";
/// The first word of one trace record.
pub const TRACE_RECORD: &str = "TRACE-RECORD";
/// The first word of one core's trace summary.
pub const TRACE_CORE: &str = "TRACE-CORE";
/// The first word of the trace footer.
pub const TRACE_END: &str = "TRACE-END";

/// A line kind as the document describes it.
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    /// The line's syntax.
    pub syntax: &'static str,
    /// Who prints it, when, and what the host makes of it.
    pub meaning: &'static str,
    /// One line as a guest prints it.
    pub example: &'static str,
}

/// Every line kind, in the order a run prints them (the table of `docs/bench-protocol.md`).
pub const KINDS: &[Kind] = &[
    Kind { syntax: "TESTS PLANNED <n>", meaning: "first line of a test run (`mode=test`): how many distinct tests it reports; the host fails a run whose distinct test lines differ from the plan or whose plan is below the least the run needs", example: "TESTS PLANNED 17" },
    Kind { syntax: "plan: <who> reports DONE", meaning: "a program the image waits for before it shuts down; a hung run is explained by the plans without a `done:`", example: "plan: thread 1 (hello, cpu 0) reports DONE" },
    Kind { syntax: "TEST <name> ... <ok|FAILED|skipped> (<detail>)", meaning: "one test's result: a result starting with `ok` passes, `skipped` is neither passed nor failed, anything else fails; a name reported twice fails", example: "TEST kernel:ipc_call ... ok (reply 42)" },
    Kind { syntax: "done: <who>", meaning: "a planned program reported DONE", example: "done: thread 1 (hello, cpu 0)" },
    Kind { syntax: "ALL TESTS RAN <n>", meaning: "the sentinel after the last test line, with the number of tests reported; a run without it did not finish", example: "ALL TESTS RAN 17" },
    Kind { syntax: "BENCH-JSON-BEGIN", meaning: "a benchmark run (`mode=bench`): the raw records follow, one JSON object a line", example: "BENCH-JSON-BEGIN" },
    Kind { syntax: "BENCH-JSON-END", meaning: "after the last record; a run with a begin marker but no end marker, or a line between them that does not parse, is malformed and retried", example: "BENCH-JSON-END" },
    Kind { syntax: "TRACE-BEGIN cores=<n> lock=<lock> counter=<counter> hz=<hz> ring=<entries>", meaning: "an image booted with `trace=1`: its kernel lock-trace rings follow, after the benchmark records", example: "TRACE-BEGIN cores=2 lock=clh counter=tsc hz=999999823 ring=2048" },
    Kind { syntax: "TRACE-RECORD <hex>", meaning: "one trace record, its encoded bytes in lower-case hex", example: "TRACE-RECORD 0100000000000000e80300000000000001000000" },
    Kind { syntax: "TRACE-CORE <core> records=<n> lost=<n>", meaning: "one core's ring: records printed, records overwritten before the dump", example: "TRACE-CORE 1 records=20 lost=0" },
    Kind { syntax: "TRACE-END records=<n> lost=<n>", meaning: "the totals over all cores", example: "TRACE-END records=40 lost=0" },
    Kind { syntax: "shutting down: <success|FAILURE> (uptime <ms> ms)", meaning: "the image's verdict, its last line: success when every test passed, every planned program reported and nothing panicked; the exit status says the same", example: "shutting down: success (uptime 812 ms)" },
];

/// A test's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The test passed.
    Ok,
    /// The test failed.
    Failed,
    /// The test did not run here (a missing device, a single core); neither passed nor failed.
    Skipped,
}

impl Outcome {
    /// The word the test line carries.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "FAILED",
            Outcome::Skipped => "skipped",
        }
    }

    /// The outcome a test line's result text means: `ok...` passes, `skipped...` is a skip,
    /// anything else fails (a garbled result is a failure, never a pass).
    pub fn of_result(result: &str) -> Outcome {
        if result.starts_with("ok") {
            Outcome::Ok
        } else if result.starts_with("skipped") {
            Outcome::Skipped
        } else {
            Outcome::Failed
        }
    }
}

/// `TESTS PLANNED <n>`: how many distinct tests the run reports. Printed once, first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestsPlanned(pub usize);

impl Display for TestsPlanned {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{TESTS_PLANNED} {}", self.0)
    }
}

/// `TEST <name> ... <ok|FAILED|skipped> (<detail>)`: one test's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestLine<N, D> {
    /// `<part>:<test>`, e.g. `kernel:ipc_call`; no ` ... ` inside.
    pub name: N,
    /// The result.
    pub outcome: Outcome,
    /// What was seen (for a failure: what was wanted and what came), or why it was skipped.
    pub detail: D,
}

impl<N: Display, D: Display> Display for TestLine<N, D> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TEST} {}{RESULT_SEPARATOR}{} ({})",
            self.name,
            self.outcome.word(),
            self.detail
        )
    }
}

/// `ALL TESTS RAN <n>`: the sentinel after the last test line, with the number of tests
/// reported. A run without it did not finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllTestsRan(pub usize);

impl Display for AllTestsRan {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{ALL_TESTS_RAN} {}", self.0)
    }
}

/// `plan: <who> reports DONE`: a program the image waits for before it shuts down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan<W>(pub W);

impl<W: Display> Display for Plan<W> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{PLAN} {} {REPORTS_DONE}", self.0)
    }
}

/// `done: <who>`: a planned program reported DONE (`who` as in its [`Plan`] line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done<W>(pub W);

impl<W: Display> Display for Done<W> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{DONE} {}", self.0)
    }
}

/// `shutting down: <success|FAILURE> (uptime <ms> ms)`: the image's verdict, its last line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shutdown {
    /// Every test passed, every planned program reported, nothing panicked.
    pub success: bool,
    /// Milliseconds since boot.
    pub uptime_ms: u64,
}

impl Shutdown {
    /// The verdict word.
    pub fn word(success: bool) -> &'static str {
        if success {
            "success"
        } else {
            "FAILURE"
        }
    }
}

impl Display for Shutdown {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{SHUTTING_DOWN} {} (uptime {} ms)",
            Shutdown::word(self.success),
            self.uptime_ms
        )
    }
}

/// `TRACE-BEGIN cores=<n> lock=<lock> counter=<counter> hz=<hz> ring=<entries>`: the header
/// of a traced image's dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceBegin<'a> {
    /// Cores whose rings follow.
    pub cores: usize,
    /// The kernel's lock as booted.
    pub lock: &'a str,
    /// The counter the timestamps come from.
    pub counter: &'a str,
    /// The counter's frequency as the guest believes it.
    pub hz: u64,
    /// Entries per core ring.
    pub ring: usize,
}

impl Display for TraceBegin<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TRACE_BEGIN} cores={} lock={} counter={} hz={} ring={}",
            self.cores, self.lock, self.counter, self.hz, self.ring
        )
    }
}

/// `TRACE-RECORD <hex>`: one trace record, its encoded bytes in lower-case hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord<'a>(pub &'a [u8]);

impl Display for TraceRecord<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{TRACE_RECORD} ")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// `TRACE-CORE <core> records=<n> lost=<n>`: one core's ring, after its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceCore {
    /// The core.
    pub core: usize,
    /// Records printed for it.
    pub records: usize,
    /// Records its ring overwrote before the dump.
    pub lost: usize,
}

impl Display for TraceCore {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TRACE_CORE} {} records={} lost={}",
            self.core, self.records, self.lost
        )
    }
}

/// `TRACE-END records=<n> lost=<n>`: the footer, with the totals over all cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEnd {
    /// Records printed.
    pub records: usize,
    /// Records lost.
    pub lost: usize,
}

impl Display for TraceEnd {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{TRACE_END} records={} lost={}", self.records, self.lost)
    }
}

/// One console line, read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// [`TestsPlanned`].
    TestsPlanned(usize),
    /// [`TestLine`]: the name, the outcome its result means, and the whole result text after
    /// ` ... ` (e.g. `FAILED (want 1, got 2)`).
    Test {
        /// The test's name.
        name: &'a str,
        /// What the result means ([`Outcome::of_result`]).
        outcome: Outcome,
        /// The result text.
        result: &'a str,
    },
    /// [`AllTestsRan`].
    AllTestsRan(usize),
    /// [`Plan`]: who the image waits for.
    Plan(&'a str),
    /// [`Done`]: who reported DONE.
    Done(&'a str),
    /// [`Shutdown`]; `uptime_ms` is `None` where the line has no uptime.
    Shutdown {
        /// The verdict.
        success: bool,
        /// Milliseconds since boot, if given.
        uptime_ms: Option<u64>,
    },
    /// [`BENCH_BEGIN`].
    BenchBegin,
    /// [`BENCH_END`].
    BenchEnd,
    /// [`TraceBegin`].
    TraceBegin(TraceBegin<'a>),
    /// [`TraceRecord`]: the hex text (decoded by the reader, which knows the record size).
    TraceRecord(&'a str),
    /// [`TraceCore`].
    TraceCore(TraceCore),
    /// [`TraceEnd`].
    TraceEnd(TraceEnd),
    /// A line that starts as one of the kinds above but does not follow its syntax.
    Malformed {
        /// The kind it starts as (its first words, e.g. `TESTS PLANNED`).
        kind: &'static str,
        /// What is wrong, for a message.
        problem: &'static str,
    },
    /// Any other console output.
    Other,
}

/// `key=value` of the word `word`, or `None`.
fn field<'a>(word: Option<&'a str>, key: &str) -> Option<&'a str> {
    word?.strip_prefix(key)?.strip_prefix('=')
}

/// The `key=<number>` word, parsed.
fn number<T: core::str::FromStr>(word: Option<&str>, key: &str) -> Option<T> {
    field(word, key)?.parse().ok()
}

impl<'a> Line<'a> {
    /// Reads one console line (surrounding white space and a `\r` are ignored).
    pub fn parse(line: &'a str) -> Line<'a> {
        let line = line.trim();
        let malformed = |kind, problem| Line::Malformed { kind, problem };
        if let Some(n) = after(line, TESTS_PLANNED) {
            return match n.parse() {
                Ok(n) => Line::TestsPlanned(n),
                Err(_) => malformed(TESTS_PLANNED, "the plan is not a number"),
            };
        }
        if let Some(n) = after(line, ALL_TESTS_RAN) {
            return match n.parse() {
                Ok(n) => Line::AllTestsRan(n),
                Err(_) => malformed(ALL_TESTS_RAN, "the count is not a number"),
            };
        }
        if let Some(rest) = after(line, TEST) {
            return match rest.split_once(RESULT_SEPARATOR) {
                Some((name, result)) => Line::Test {
                    name,
                    outcome: Outcome::of_result(result),
                    result,
                },
                None => malformed(TEST, "no ` ... ` between the name and the result"),
            };
        }
        if let Some(rest) = after(line, PLAN) {
            return match rest.strip_suffix(REPORTS_DONE) {
                Some(who) => Line::Plan(who.trim_end()),
                None => malformed(PLAN, "it does not end in `reports DONE`"),
            };
        }
        if let Some(who) = after(line, DONE) {
            return Line::Done(who);
        }
        if let Some(rest) = after(line, SHUTTING_DOWN) {
            let (word, uptime) = match rest.split_once(' ') {
                Some((w, u)) => (w, Some(u)),
                None => (rest, None),
            };
            let success = match word {
                "success" => true,
                "FAILURE" => false,
                _ => return malformed(SHUTTING_DOWN, "the verdict is not success or FAILURE"),
            };
            let uptime_ms = uptime
                .and_then(|u| u.strip_prefix("(uptime "))
                .and_then(|u| u.strip_suffix(" ms)"))
                .and_then(|u| u.parse().ok());
            return Line::Shutdown { success, uptime_ms };
        }
        if line == BENCH_BEGIN {
            return Line::BenchBegin;
        }
        if line == BENCH_END {
            return Line::BenchEnd;
        }
        if let Some(rest) = after(line, TRACE_BEGIN) {
            let mut w = rest.split(' ');
            let cores = number(w.next(), "cores");
            let lock = field(w.next(), "lock");
            let counter = field(w.next(), "counter");
            let hz = number(w.next(), "hz");
            let ring = number(w.next(), "ring");
            return match (cores, lock, counter, hz, ring, w.next()) {
                (Some(cores), Some(lock), Some(counter), Some(hz), Some(ring), None) => {
                    Line::TraceBegin(TraceBegin {
                        cores,
                        lock,
                        counter,
                        hz,
                        ring,
                    })
                }
                _ => malformed(
                    TRACE_BEGIN,
                    "want `cores=<n> lock=<lock> counter=<counter> hz=<n> ring=<n>`",
                ),
            };
        }
        if let Some(hex) = after(line, TRACE_RECORD) {
            return if !hex.is_empty() && hex.len() % 2 == 0 && hex.bytes().all(is_lower_hex) {
                Line::TraceRecord(hex)
            } else {
                malformed(TRACE_RECORD, "the record is not lower-case hex bytes")
            };
        }
        if let Some(rest) = after(line, TRACE_CORE) {
            let mut w = rest.split(' ');
            let core = w.next().and_then(|c| c.parse().ok());
            let records = number(w.next(), "records");
            let lost = number(w.next(), "lost");
            return match (core, records, lost, w.next()) {
                (Some(core), Some(records), Some(lost), None) => Line::TraceCore(TraceCore {
                    core,
                    records,
                    lost,
                }),
                _ => malformed(TRACE_CORE, "want `<core> records=<n> lost=<n>`"),
            };
        }
        if let Some(rest) = after(line, TRACE_END) {
            let mut w = rest.split(' ');
            let records = number(w.next(), "records");
            let lost = number(w.next(), "lost");
            return match (records, lost, w.next()) {
                (Some(records), Some(lost), None) => Line::TraceEnd(TraceEnd { records, lost }),
                _ => malformed(TRACE_END, "want `records=<n> lost=<n>`"),
            };
        }
        Line::Other
    }
}

fn is_lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// What follows `head` and one space at the start of `line`.
fn after<'a>(line: &'a str, head: &str) -> Option<&'a str> {
    line.strip_prefix(head)?.strip_prefix(' ')
}

/// Decodes the hex of a [`Line::TraceRecord`] into `out`; `None` when the lengths differ or a
/// digit is not hex.
pub fn decode_hex(hex: &str, out: &mut [u8]) -> Option<()> {
    if hex.len() != 2 * out.len() {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::{String, ToString};

    fn round_trip(printed: String, want: Line<'_>) {
        assert_eq!(Line::parse(&printed), want, "{printed}");
        assert_eq!(
            Line::parse(&(printed.clone() + "\r")),
            want,
            "{printed} with CR"
        );
    }

    #[test]
    fn every_line_the_guest_prints_reads_back_as_its_kind() {
        round_trip(TestsPlanned(17).to_string(), Line::TestsPlanned(17));
        round_trip(AllTestsRan(3).to_string(), Line::AllTestsRan(3));
        for outcome in [Outcome::Ok, Outcome::Failed, Outcome::Skipped] {
            let printed = TestLine {
                name: "kernel:ipc_call",
                outcome,
                detail: format_args!("want {}, got {}", 1, 2),
            }
            .to_string();
            let result = printed.split_once(" ... ").unwrap().1;
            round_trip(
                printed.clone(),
                Line::Test {
                    name: "kernel:ipc_call",
                    outcome,
                    result,
                },
            );
        }
        round_trip(
            Plan("thread 1 (hello, cpu 0)").to_string(),
            Line::Plan("thread 1 (hello, cpu 0)"),
        );
        round_trip(
            Done("thread 1 (hello, cpu 0)").to_string(),
            Line::Done("thread 1 (hello, cpu 0)"),
        );
        for success in [true, false] {
            round_trip(
                Shutdown {
                    success,
                    uptime_ms: 7,
                }
                .to_string(),
                Line::Shutdown {
                    success,
                    uptime_ms: Some(7),
                },
            );
        }
        round_trip(BENCH_BEGIN.to_string(), Line::BenchBegin);
        round_trip(BENCH_END.to_string(), Line::BenchEnd);
        let begin = TraceBegin {
            cores: 2,
            lock: "clh",
            counter: "tsc",
            hz: 999_999_823,
            ring: 2048,
        };
        round_trip(begin.to_string(), Line::TraceBegin(begin));
        round_trip(
            TraceRecord(&[0x00, 0xab, 0x10]).to_string(),
            Line::TraceRecord("00ab10"),
        );
        let core = TraceCore {
            core: 1,
            records: 20,
            lost: 3,
        };
        round_trip(core.to_string(), Line::TraceCore(core));
        let end = TraceEnd {
            records: 40,
            lost: 3,
        };
        round_trip(end.to_string(), Line::TraceEnd(end));
    }

    #[test]
    fn lines_print_as_the_host_has_always_read_them() {
        assert_eq!(
            TestLine {
                name: "user:a",
                outcome: Outcome::Skipped,
                detail: "no"
            }
            .to_string(),
            "TEST user:a ... skipped (no)"
        );
        assert_eq!(
            Shutdown {
                success: true,
                uptime_ms: 450
            }
            .to_string(),
            "shutting down: success (uptime 450 ms)"
        );
        assert_eq!(
            Plan("thread 3 (ping-pong client, cpu 1)").to_string(),
            "plan: thread 3 (ping-pong client, cpu 1) reports DONE"
        );
    }

    #[test]
    fn a_garbled_result_fails_and_a_broken_report_is_malformed() {
        assert_eq!(
            Line::parse("TEST a ... okay-ish").clone(),
            Line::Test {
                name: "a",
                outcome: Outcome::Ok,
                result: "okay-ish"
            }
        );
        assert!(matches!(
            Line::parse("TEST a ... maybe"),
            Line::Test {
                outcome: Outcome::Failed,
                ..
            }
        ));
        for bad in [
            "TEST a ok",
            "TESTS PLANNED many",
            "ALL TESTS RAN -1",
            "plan: thread 1 waits",
            "shutting down: perhaps",
            "TRACE-BEGIN cores=2 lock=spin counter=tsc hz=1",
            "TRACE-RECORD 00zz",
            "TRACE-RECORD 0AB",
            "TRACE-CORE x records=1 lost=0",
            "TRACE-END records=7",
        ] {
            assert!(
                matches!(Line::parse(bad), Line::Malformed { .. }),
                "{bad}: {:?}",
                Line::parse(bad)
            );
        }
    }

    #[test]
    fn every_documented_example_reads_as_its_kind() {
        for k in KINDS {
            let parsed = Line::parse(k.example);
            assert!(
                !matches!(parsed, Line::Other | Line::Malformed { .. }),
                "{}: {parsed:?}",
                k.example
            );
            let head = k.syntax.split(['<', ' ']).next().unwrap();
            assert!(k.example.starts_with(head), "{} ~ {}", k.example, k.syntax);
        }
    }

    #[test]
    fn other_output_is_other() {
        for line in [
            "",
            "boot: ok",
            "TESTS",
            "TESTING 1 2 3",
            "BENCH-JSON-BEGIN extra",
            "shutting down",
            "[cpu 0 t1] hello",
        ] {
            assert_eq!(Line::parse(line), Line::Other, "{line}");
        }
    }

    #[test]
    fn a_successful_shutdown_line_starts_with_the_success_prefix() {
        let ok = Shutdown {
            success: true,
            uptime_ms: 1,
        };
        assert!(ok.to_string().starts_with(SHUTDOWN_SUCCESS));
        let failed = Shutdown {
            success: false,
            uptime_ms: 1,
        };
        assert!(!failed.to_string().starts_with(SHUTDOWN_SUCCESS));
    }

    #[test]
    fn a_shutdown_line_without_uptime_still_reads() {
        assert_eq!(
            Line::parse("shutting down: success"),
            Line::Shutdown {
                success: true,
                uptime_ms: None
            }
        );
    }

    #[test]
    fn hex_decodes_only_at_the_right_length() {
        let mut out = [0u8; 3];
        assert_eq!(decode_hex("00ab10", &mut out), Some(()));
        assert_eq!(out, [0x00, 0xab, 0x10]);
        assert_eq!(decode_hex("00ab", &mut out), None);
        assert_eq!(decode_hex("00abzz", &mut out), None);
    }
}
