//! `report.md`: our figures next to the seed papers', the targets judged from the data, every
//! record, and the machine and method.

use std::fmt::Write as _;

use super::guest::KernelTrace;
use super::plan::lock_rank;
use super::records::Record;
use serde_json::Value;

/// Whether a target was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The data meets it.
    Met,
    /// The data misses it.
    NotMet,
    /// No data to judge it.
    NotMeasured,
}

impl Verdict {
    /// The word in the report.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::NotMet => "not met",
            Verdict::NotMeasured => "not measured",
        }
    }

    fn of(ok: bool) -> Verdict {
        if ok {
            Verdict::Met
        } else {
            Verdict::NotMet
        }
    }
}

/// One judged target.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetLine {
    /// The target as the benchmark protocol states it.
    pub target: String,
    /// Where it was judged (platform and board).
    pub place: String,
    /// Our value, or why there is none.
    pub value: String,
    /// The verdict.
    pub verdict: Verdict,
}

/// The round-trip benchmark the overheads come from.
const ROUNDTRIP: &str = "ipc-roundtrip";
/// The multicore benchmark the scaling comes from.
const MULTICORE: &str = "multicore-pingpong";
/// The bench name of the barrier count (`cargo xtask trace exec`).
const BARRIERS: &str = "ipc-barriers";

/// The record of `bench` on `platform`/`board` with `lock` on `cores` cores, preferring the
/// `cross-as` variant, then the unnamed one, then any.
pub fn find<'a>(
    records: &'a [Record],
    bench: &str,
    platform: &str,
    board: &str,
    lock: &str,
    cores: u32,
) -> Option<&'a Record> {
    let mut matching: Vec<&Record> = records
        .iter()
        .filter(|r| r.is(bench, platform, board, lock, cores) && r.clients == 0)
        .collect();
    matching.sort_by_key(|r| match r.variant.as_str() {
        "cross-as" => 0,
        "" => 1,
        _ => 2,
    });
    matching.first().copied()
}

/// Overhead of `lock` over `none` in the round trip: (absolute, fraction, unit), or why not.
pub fn overhead(
    records: &[Record],
    platform: &str,
    board: &str,
    lock: &str,
) -> Result<(f64, f64, String), String> {
    let missing = |l: &str| format!("no {platform} {board} {ROUNDTRIP} record for lock {l}");
    let r = find(records, ROUNDTRIP, platform, board, lock, 1).ok_or_else(|| missing(lock))?;
    let base = records
        .iter()
        .find(|b| {
            b.bench == ROUNDTRIP
                && b.platform == platform
                && b.board == board
                && b.lock == "none"
                && b.cores == 1
                && b.variant == r.variant
        })
        .ok_or_else(|| missing("none"))?;
    if base.mean <= 0.0 {
        return Err(format!(
            "{platform} {board}: the baseline's mean is not positive"
        ));
    }
    let abs = r.mean - base.mean;
    Ok((abs, abs / base.mean, r.unit.clone()))
}

/// `+65 cycles (+10%)`.
fn fmt_overhead(abs: f64, frac: f64, unit: &str) -> String {
    // Adding 0.0 turns a rounded -0 into +0.
    let (abs, pct) = (abs.round() + 0.0, (frac * 100.0).round() + 0.0);
    format!("{abs:+.0} {unit} ({pct:+.0}%)")
}

/// A number with a precision that suits its size (SI suffix from a million on).
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The (platform, board) pairs the single-core IPC targets are judged on, per architecture.
const IPC_PLACES: [(&str, &str, &str); 4] = [
    ("x86_64", "hosted", "host"),
    ("x86_64", "qemu-icount", "microvm"),
    ("armv7", "qemu-icount", "sabrelite"),
    ("armv7", "qemu-icount", "virt"),
];

/// Judges every IPC benchmark target against `records`.
pub fn targets(records: &[Record]) -> Vec<TargetLine> {
    let mut lines = Vec::new();
    // Big-lock overhead.
    for (arch, platform, board) in IPC_PLACES {
        let limit = if arch == "x86_64" { 0.10 } else { 0.20 };
        let target = format!(
            "big-lock (CLH) round-trip overhead over none <= {:.0}% ({arch})",
            limit * 100.0
        );
        lines.push(match overhead(records, platform, board, "clh") {
            Ok((abs, frac, unit)) => TargetLine {
                target,
                place: format!("{platform} {board}"),
                value: fmt_overhead(abs, frac, &unit),
                verdict: Verdict::of(frac <= limit),
            },
            Err(why) => not_measured(target, platform, board, why),
        });
    }
    // Fine and RTM against the big lock.
    for lock in ["fine", "rtm"] {
        for (arch, platform, board) in IPC_PLACES {
            let target = format!("{lock} overhead <= 2x the big lock's ({arch})");
            let both = overhead(records, platform, board, lock)
                .and_then(|o| overhead(records, platform, board, "clh").map(|b| (o, b)));
            lines.push(match both {
                Ok(((abs, frac, unit), (babs, bfrac, _))) => TargetLine {
                    target,
                    place: format!("{platform} {board}"),
                    value: format!(
                        "{} vs big lock {} = {}",
                        fmt_overhead(abs, frac, &unit),
                        fmt_overhead(babs, bfrac, &unit),
                        if babs > 0.0 {
                            format!("{:.2}x", abs / babs)
                        } else {
                            "big lock costs nothing".into()
                        }
                    ),
                    verdict: Verdict::of(abs <= 2.0 * babs.max(0.0)),
                },
                Err(why) => not_measured(target, platform, board, why),
            });
        }
    }
    // Multicore scaling on the host.
    for lock in ["none", "fine", "rtm"] {
        lines.push(scaling(records, lock));
    }
    // Absolute instruction counts under icount: seL4's, then the project's goals.
    for (lock, limit, whose) in [
        ("none", 421.0, " (seL4 uniprocessor)"),
        ("clh", 566.0, " (seL4 SMP, big lock)"),
        ("none", 300.0, ""),
        ("clh", 340.0, ""),
    ] {
        let target = format!(
            "x86_64 round trip <= {limit:.0} instructions with {}{whose}",
            if lock == "none" { "no lock" } else { "CLH" }
        );
        lines.push(
            match find(records, ROUNDTRIP, "qemu-icount", "microvm", lock, 1) {
                Some(r) => TargetLine {
                    target,
                    place: "qemu-icount microvm".into(),
                    value: format!("{} {}", fmt_num(r.mean), r.unit),
                    verdict: Verdict::of(r.mean <= limit),
                },
                None => not_measured(
                    target,
                    "qemu-icount",
                    "microvm",
                    format!("no qemu-icount microvm {ROUNDTRIP} record for lock {lock}"),
                ),
            },
        );
    }
    lines.extend(arm_against_x86(records));
    lines.extend(arm_barriers(records));
    lines
}

/// Target: each lock's ARMv7 round trip under `-icount` at most x86_64's plus 10%, for the
/// locks that ran on an ARMv7 board (not measured when x86_64's figure is missing).
fn arm_against_x86(records: &[Record]) -> Vec<TargetLine> {
    let mut lines = Vec::new();
    for (_, platform, board) in IPC_PLACES.iter().filter(|p| p.0 == "armv7") {
        for lock in ["none", "clh", "ticket", "fine", "rtm"] {
            let Some(arm) = find(records, ROUNDTRIP, platform, board, lock, 1) else {
                continue;
            };
            let target = format!("ARMv7 round trip <= x86_64's + 10% ({lock})");
            lines.push(
                match find(records, ROUNDTRIP, "qemu-icount", "microvm", lock, 1) {
                    Some(x86) if x86.mean > 0.0 => TargetLine {
                        target,
                        place: format!("{platform} {board}"),
                        value: format!(
                            "{} against x86_64's {} {} ({:+.1}%)",
                            fmt_num(arm.mean),
                            fmt_num(x86.mean),
                            arm.unit,
                            (arm.mean / x86.mean - 1.0) * 100.0
                        ),
                        verdict: Verdict::of(arm.mean <= 1.1 * x86.mean),
                    },
                    _ => not_measured(
                        target,
                        platform,
                        board,
                        format!("no qemu-icount microvm {ROUNDTRIP} record for lock {lock}"),
                    ),
                },
            );
        }
    }
    lines
}

/// Target: ARMv7 barriers per round trip beyond the no-lock kernel's (sabrelite,
/// `cargo xtask trace exec`): at most 6 for the big locks, 16 fine-grained, for the locks traced.
fn arm_barriers(records: &[Record]) -> Vec<TargetLine> {
    let Some(none) = find(records, BARRIERS, "qemu-icount", "sabrelite", "none", 1) else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    for (lock, limit) in [("clh", 6.0), ("ticket", 6.0), ("rtm", 6.0), ("fine", 16.0)] {
        let Some(r) = find(records, BARRIERS, "qemu-icount", "sabrelite", lock, 1) else {
            continue;
        };
        let beyond = r.mean - none.mean;
        lines.push(TargetLine {
            target: format!("ARMv7 barriers per round trip beyond no lock <= {limit:.0} ({lock})"),
            place: "qemu-icount sabrelite".into(),
            value: format!(
                "{} ({beyond:+.0} over no lock's {})",
                fmt_num(r.mean),
                fmt_num(none.mean)
            ),
            verdict: Verdict::of(beyond <= limit),
        });
    }
    lines
}

fn not_measured(target: String, platform: &str, board: &str, why: String) -> TargetLine {
    TargetLine {
        target,
        place: format!("{platform} {board}"),
        value: why,
        verdict: Verdict::NotMeasured,
    }
}

/// Scaling of `lock` on the host: throughput at n cores over throughput at 1, each >= 0.95 n.
fn scaling(records: &[Record], lock: &str) -> TargetLine {
    let target = format!("multicore scaling >= 0.95 x cores for {lock}");
    let Some(one) = find(records, MULTICORE, "hosted", "host", lock, 1) else {
        return not_measured(
            target,
            "hosted",
            "host",
            format!("no hosted {MULTICORE} record for {lock} on 1 core"),
        );
    };
    let mut more: Vec<&Record> = records
        .iter()
        .filter(|r| r.bench == MULTICORE && r.platform == "hosted" && r.lock == lock && r.cores > 1)
        .collect();
    more.sort_by_key(|r| r.cores);
    more.dedup_by_key(|r| r.cores);
    if more.is_empty() {
        return not_measured(
            target,
            "hosted",
            "host",
            format!("no hosted {MULTICORE} record for {lock} on more than 1 core"),
        );
    }
    if one.mean <= 0.0 {
        return not_measured(
            target,
            "hosted",
            "host",
            format!(
                "the 1-core throughput of {lock} is {} (no baseline)",
                one.mean
            ),
        );
    }
    // Points with more cores than the host has are oversubscribed: shown, not judged.
    let host_cores = one.machine.host_cores as u32;
    let mut ok = true;
    let mut judged = 0;
    let parts: Vec<String> = more
        .iter()
        .map(|r| {
            let ratio = r.mean / one.mean;
            if r.cores > host_cores {
                return format!("{} cores {ratio:.2}x (oversubscribed, not judged)", r.cores);
            }
            judged += 1;
            ok &= ratio >= 0.95 * f64::from(r.cores);
            format!("{} cores {ratio:.2}x", r.cores)
        })
        .collect();
    if judged == 0 {
        return not_measured(
            target,
            "hosted",
            "host",
            format!("{} (the host has {host_cores} cores)", parts.join(", ")),
        );
    }
    TargetLine {
        target,
        place: "hosted host".into(),
        value: parts.join(", "),
        verdict: Verdict::of(ok),
    }
}

/// One row of the comparison with the papers: what, the paper's figure, where the paper
/// measured it, and ours.
fn paper_rows(records: &[Record]) -> Vec<[String; 4]> {
    let mut rows = Vec::new();
    let over = |platform: &str, board: &str, lock: &str| {
        overhead(records, platform, board, lock)
            .map(|(a, f, u)| format!("{} ({platform} {board})", fmt_overhead(a, f, &u)))
            .unwrap_or_else(|_| format!("not measured ({platform} {board})"))
    };
    let x86 = [("hosted", "host"), ("qemu-icount", "microvm")];
    let arm = [("qemu-icount", "sabrelite"), ("qemu-icount", "virt")];
    for paper in super::paper::OVERHEADS {
        let places: &[(&str, &str)] = if paper.arch == "x86_64" { &x86 } else { &arm };
        let (what, text, lock) = (paper.what, paper.text, paper.lock);
        let ours: Vec<String> = places.iter().map(|(p, b)| over(p, b, lock)).collect();
        rows.push(paper_row(what, text, super::paper::SOURCE, ours.join("; ")));
    }
    // The paper counts the barriers its locking executes; ours are every executed barrier,
    // so the lock's share is the difference to `none`.
    let count =
        |lock: &str| find(records, BARRIERS, "qemu-icount", "sabrelite", lock, 1).map(|r| r.mean);
    let barriers: Vec<String> = ["none", "clh", "ticket", "fine", "rtm"]
        .iter()
        .filter_map(|lock| {
            let n = count(lock)?;
            Some(match count("none") {
                Some(base) if *lock != "none" => {
                    format!("{lock} {} (+{})", fmt_num(n), fmt_num(n - base))
                }
                _ => format!("{lock} {}", fmt_num(n)),
            })
        })
        .collect();
    rows.push(paper_row(
        "ARM barriers per IPC round trip (locking's share)",
        "6 with the big lock, 16 fine-grained",
        "big-lock-is-fine, Sec. 4, i.MX6Q",
        if barriers.is_empty() {
            "not measured (qemu-icount sabrelite)".to_owned()
        } else {
            format!(
                "{} (dmb+dsb+isb executed, qemu-icount sabrelite, `cargo xtask trace exec`)",
                barriers.join(", ")
            )
        },
    ));
    let icount = |bench: &str, lock: &str| {
        find(records, bench, "qemu-icount", "microvm", lock, 1)
            .map(|r| format!("{} {} (lock {lock})", fmt_num(r.mean), r.unit))
            .unwrap_or_else(|| format!("not measured (lock {lock})"))
    };
    let sel4 = "seL4 release fastpath, QEMU 7.2 x86_64 -icount shift=0";
    for (what, paper, bench, locks) in [
        (
            "one-way Call",
            "197 instructions",
            "ipc-call",
            &["none", "clh"][..],
        ),
        (
            "one-way ReplyRecv",
            "224 instructions",
            "ipc-replyrecv",
            &["none", "clh"][..],
        ),
        (
            "round trip, uniprocessor",
            "421 instructions",
            ROUNDTRIP,
            &["none"][..],
        ),
        (
            "round trip, SMP build, big lock, 1 core",
            "566 instructions",
            ROUNDTRIP,
            &["clh"][..],
        ),
    ] {
        let ours: Vec<String> = locks.iter().map(|l| icount(bench, l)).collect();
        rows.push(paper_row(
            &format!("x86 {what}"),
            paper,
            sel4,
            ours.join("; "),
        ));
    }
    let mut scal = Vec::new();
    for platform in ["hosted", "qemu"] {
        let mut boards: Vec<&str> = records
            .iter()
            .filter(|r| r.platform == platform && r.bench == MULTICORE)
            .map(|r| r.board.as_str())
            .collect();
        boards.sort_unstable();
        boards.dedup();
        for board in boards {
            let mut locks: Vec<&str> = records
                .iter()
                .filter(|r| r.platform == platform && r.board == board && r.bench == MULTICORE)
                .map(|r| r.lock.as_str())
                .collect();
            locks.sort_by_key(|l| lock_rank(l));
            locks.dedup();
            for lock in locks {
                let Some(one) = find(records, MULTICORE, platform, board, lock, 1) else {
                    continue;
                };
                let Some(top) = records
                    .iter()
                    .filter(|r| {
                        r.platform == platform
                            && r.board == board
                            && r.bench == MULTICORE
                            && r.lock == lock
                    })
                    .max_by_key(|r| r.cores)
                    .filter(|r| r.cores > 1 && one.mean > 0.0)
                else {
                    continue;
                };
                scal.push(format!(
                    "{lock} {:.2}x on {} cores ({platform} {board})",
                    top.mean / one.mean,
                    top.cores
                ));
            }
        }
    }
    rows.push(paper_row(
        "multicore ping-pong scaling",
        "none/fine/RTM linear; big lock plateaus after 3 cores",
        "big-lock-is-fine, Fig. 2 (i7-4770, 8 threads)",
        if scal.is_empty() {
            "not measured".to_owned()
        } else {
            scal.join("; ")
        },
    ));
    rows
}

/// A row of the papers section: what is compared, the paper's figure, where the paper says so,
/// and ours.
fn paper_row(what: &str, paper: &str, source: &str, ours: String) -> [String; 4] {
    [what.to_owned(), paper.to_owned(), source.to_owned(), ours]
}

/// The RTM abort statistics (the transactional-IPC paper's Table I): one row per `rtm-aborts`
/// record, with its counts from `extra` and the abort causes.
fn rtm_table(records: &[&Record]) -> String {
    const COUNTS: [(&str, &str); 6] = [
        ("total", "total"),
        ("direct", "direct commit"),
        ("retry1", "1 retry"),
        ("retry2", "2 retries"),
        ("more", "more"),
        ("fallback", "fallback"),
    ];
    let mut s = String::from("| where |");
    for (_, title) in COUNTS {
        let _ = write!(s, " {title} |");
    }
    s.push_str(" abort causes | note |\n|---|");
    s.push_str(&"---:|".repeat(COUNTS.len()));
    s.push_str("---|---|\n");
    for r in records {
        let extra = r.extra.clone().unwrap_or(Value::Null);
        let count = |key: &str| extra.get(key).and_then(Value::as_u64).unwrap_or(0);
        let total = count("total");
        let _ = write!(s, "| {} {} |", r.platform, r.board);
        for (key, _) in COUNTS {
            let n = count(key);
            if key == "total" || total == 0 {
                let _ = write!(s, " {n} |");
            } else {
                let _ = write!(s, " {n} ({:.1}%) |", 100.0 * n as f64 / total as f64);
            }
        }
        let causes: Vec<String> = extra
            .get("causes")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some(format!("{k} {}", v.as_u64()?)))
                    .collect()
            })
            .unwrap_or_default();
        let note = extra.get("rtm").and_then(Value::as_str).unwrap_or("");
        let _ = writeln!(s, " {} | {note} |", causes.join(", "));
    }
    s
}

/// The lock-cost records of the IPC suite (measured by the image in kernel mode at boot):
/// `lock` + `unlock`, and `lock_irqsave` + `unlock_irqrestore` entered with interrupts enabled
/// and masked.
const LOCK_PAIR: [&str; 3] = ["lock-pair", "lock-pair-irqsave", "lock-pair-irqsave-masked"];

/// What the interrupt-safe guard costs: a row per `lock-pair` record (place, boot lock, lock
/// measured) with its interrupt-safe records beside it and what each adds. Empty without
/// `lock-pair` records.
pub fn irqsave_table(records: &[Record]) -> String {
    let mut s = String::new();
    let plain: Vec<&Record> = records
        .iter()
        .filter(|r| r.bench == LOCK_PAIR[0] && r.runs > 0)
        .collect();
    if plain.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "| platform | arch | board | boot lock | lock | lock + unlock | irqsave pair, \
         interrupts enabled | added | irqsave pair, interrupts masked | added | unit |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---:|---:|---:|---:|---:|---|");
    for r in plain {
        let beside = |bench: &str| {
            records.iter().find(|o| {
                o.bench == bench
                    && o.platform == r.platform
                    && o.arch == r.arch
                    && o.board == r.board
                    && o.lock == r.lock
                    && o.cores == r.cores
                    && o.variant == r.variant
            })
        };
        let cells = |bench: &str| match beside(bench) {
            Some(o) => format!("{} | {:+.1}", fmt_num(o.mean), o.mean - r.mean),
            None => "- | -".to_owned(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.platform,
            r.arch,
            r.board,
            r.lock,
            r.variant,
            fmt_num(r.mean),
            cells(LOCK_PAIR[1]),
            cells(LOCK_PAIR[2]),
            r.unit
        );
    }
    s
}

/// What the report says besides the records: the command, notes, machine and method.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The command line that produced the results.
    pub command: String,
    /// When (UTC, `YYYY-MM-DD HH:MM`).
    pub when: String,
    /// Notes: baseline added, producers missing, retries, noise.
    pub notes: Vec<String>,
    /// The machine, one line.
    pub machine: String,
    /// Wall-clock time of the whole command, in seconds.
    pub seconds: f64,
    /// Kernel lock tracing in the images (`--kernel-trace`).
    pub kernel_trace: KernelTrace,
}

/// The report's notes section (nothing when there are no notes).
pub fn notes_section(notes: &[String]) -> String {
    let mut s = String::new();
    if !notes.is_empty() {
        let _ = writeln!(s, "\n## Notes\n");
        for n in notes {
            let _ = writeln!(s, "* {n}");
        }
    }
    s
}

/// The report's section of our figures beside the papers': rows of (figure, paper, paper's
/// setting, ours).
pub fn papers_section(rows: &[[String; 4]]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## Our figures next to the papers'\n");
    let _ = writeln!(s, "| figure | paper | paper's setting | ours |");
    let _ = writeln!(s, "|---|---|---|---|");
    for row in rows {
        let _ = writeln!(s, "| {} | {} | {} | {} |", row[0], row[1], row[2], row[3]);
    }
    s
}

/// A column of a table of records: its name and a record's cell.
pub type Column<'a> = (&'a str, &'a dyn Fn(&Record) -> String);

/// The "every record" table of a report: a row per record with samples, with `count` (the
/// suite's column after the cores: its name and value) and, where given, `extra` (a last
/// column: its name and cell).
pub fn every_record_table(
    records: &[Record],
    count: (&str, fn(&Record) -> u32),
    extra: Option<Column<'_>>,
) -> String {
    let (count_name, count_of) = count;
    let mut s = format!(
        "| bench | variant | platform | board | lock | cores | {count_name} | runs | mean | std dev | median | min | unit |"
    );
    let mut rule = String::from("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
    if let Some((name, _)) = extra {
        let _ = write!(s, " {name} |");
        rule.push_str("---:|");
    }
    let _ = writeln!(s, "\n{rule}");
    for r in records.iter().filter(|r| r.runs > 0) {
        let _ = write!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.bench,
            r.variant,
            r.platform,
            r.board,
            r.lock,
            r.cores,
            count_of(r),
            r.runs,
            fmt_num(r.mean),
            fmt_num(r.stddev),
            fmt_num(r.median),
            fmt_num(r.min),
            r.unit
        );
        if let Some((_, cell)) = extra {
            let _ = write!(s, " {} |", cell(r));
        }
        s.push('\n');
    }
    s
}

/// The report's targets section.
pub fn targets_section(targets: &[TargetLine]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n## Targets (recorded, not asserted)\n");
    let _ = writeln!(s, "| target | where | ours | verdict |");
    let _ = writeln!(s, "|---|---|---|---|");
    for t in targets {
        let _ = writeln!(
            s,
            "| {} | {} | {} | **{}** |",
            t.target,
            t.place,
            t.value,
            t.verdict.word()
        );
    }
    s
}

/// The whole report.
pub fn render(records: &[Record], ctx: &Context) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Kernel IPC benchmarks\n");
    let _ = writeln!(
        s,
        "Generated by `{}` on {} in {:.0} s. Files beside this one: `results.json` (every \
         record with its samples), `results.csv`, `ipc-roundtrip.{{svg,png}}`, \
         `multicore-throughput.{{svg,png}}`, `clientserver-throughput.{{svg,png}}`.\n",
        ctx.command, ctx.when, ctx.seconds
    );
    let _ = writeln!(s, "## Machine and method\n");
    let _ = writeln!(s, "* Machine: {}", ctx.machine);
    let _ = writeln!(
        s,
        "* `hosted`: the kernel on host threads, entered through `Kernel::syscall` as a HAL \
         does, with no trap and the HAL's hardware actions no-ops: the kernel path and its \
         locking only, in host TSC cycles."
    );
    let _ = writeln!(
        s,
        "* `qemu-icount`: the x86_64 / ARMv7 image under QEMU with `-icount shift=0,sleep=off`: \
         one guest instruction is 1 ns of virtual time, so guest counter ticks are converted to \
         instructions with the counter's true frequency under QEMU 7.2 (tsc and pmccntr 1 GHz, \
         A9 global timer 100 MHz, cntvct 62.5 MHz). Deterministic: the same image gives the \
         same samples. Instructions, not cycles: no cache or pipeline effects."
    );
    let _ = writeln!(
        s,
        "* `qemu`: the images under multi-threaded TCG, wall-clock (virtual time = host time) \
         throughput. **Noisy**: bounded by the host's cores and load; use for the shape of \
         scaling only, not for absolute figures."
    );
    let _ = writeln!(
        s,
        "* Every figure is the mean of the samples, with the sample standard deviation; the \
         per-record method sentence is in `results.json`. Overheads are relative to `none` \
         (no lock) on the same platform, board and variant; the tables and Figure 1 use the \
         cross-address-space variant (client and server in two address spaces, as the \
         paper's ping-pong) where it was measured."
    );
    let _ = writeln!(
        s,
        "* `null-syscall`: the mean cost of one `Null` system call (the trap, kernel entry and \
         exit, no work: one kernel entry), over a batch of calls timed as a whole less one \
         counter read, like `ipc-roundtrip` (two entries: Call and ReplyRecv). The thesis's \
         measure of what kernel tracing adds to an entry."
    );
    if records.iter().any(|r| r.bench == LOCK_PAIR[0]) {
        let _ = writeln!(
            s,
            "* `lock-pair`, `lock-pair-irqsave`, `lock-pair-irqsave-masked`: the image times \
             batches of 1000 `lock` + `unlock` pairs, and of `lock_irqsave` + \
             `unlock_irqrestore` pairs entered with interrupts enabled and masked, in kernel mode \
             on the boot core before the root task runs, each batch less the same loop with an \
             empty body: the instructions of one pair under `qemu-icount`. Variant: the lock \
             measured (`ticket`, or the kernel's own lock as booted)."
        );
    }
    let _ = writeln!(
        s,
        "* `ipc-barriers` comes from `cargo xtask trace exec` (QEMU exec traces of the one-core demo, \
         `mode=demo`), not from the benchmark programs. Its instructions per round trip \
         (`extra.instructions_per_round_trip`) are higher than `ipc-roundtrip`'s: the demo's \
         client checks every reply (a `memcmp`) and runs a typed library loop, about 200 \
         instructions of user code per round trip that the benchmark's raw `Call` loop does \
         not have; the kernel and trap paths are the same in both."
    );
    let _ = writeln!(
        s,
        "* Kernel tracing (`--kernel-trace {}`): guest records measured with the {}.",
        ctx.kernel_trace.name(),
        ctx.kernel_trace.describe()
    );
    s.push_str(&notes_section(&ctx.notes));
    s.push_str(&papers_section(&paper_rows(records)));
    s.push_str(&targets_section(&targets(records)));

    let irqsave = irqsave_table(records);
    if !irqsave.is_empty() {
        let _ = writeln!(s, "\n## Interrupt-safe locking\n");
        let _ = writeln!(
            s,
            "What `lock_irqsave` + `unlock_irqrestore` (`kernel_locks::irq`) add to `lock` + \
             `unlock` of an uncontended lock: `lock-pair` records, timed by the image itself in \
             kernel mode at boot (`bench=ipc`), per pair, the empty loop subtracted. `lock`: the \
             lock measured, a ticket lock of the image's own or the kernel's lock as booted.\n"
        );
        s.push_str(&irqsave);
    }

    let rtm: Vec<&Record> = records.iter().filter(|r| r.bench == "rtm-aborts").collect();
    if !rtm.is_empty() {
        let _ = writeln!(s, "\n## RTM statistics\n");
        s.push_str(&rtm_table(&rtm));
    }

    let _ = writeln!(s, "\n## Every record\n");
    if records.is_empty() {
        let _ = writeln!(s, "No records: nothing could be measured (see the notes).");
    } else {
        let over = |r: &Record| {
            if r.bench == ROUNDTRIP && r.cores == 1 && r.lock != "none" {
                overhead(records, &r.platform, &r.board, &r.lock)
                    .map(|(a, f, _)| format!("{a:+.0} ({:+.0}%)", f * 100.0))
                    .unwrap_or_else(|_| "-".into())
            } else {
                "-".into()
            }
        };
        s.push_str(&every_record_table(
            records,
            ("clients", |r| r.clients),
            Some(("over none", &over)),
        ));
    }
    let _ = writeln!(
        s,
        "\n## Figures\n\n![Round-trip cost per strategy](ipc-roundtrip.svg)\n\n\
         ![Throughput vs cores](multicore-throughput.svg)\n\n\
         ![Client-server throughput vs clients](clientserver-throughput.svg)"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::record;
    use super::*;

    fn sample_records() -> Vec<Record> {
        vec![
            record(
                "ipc-roundtrip",
                "x86_64",
                "qemu-icount",
                "none",
                1,
                &[280.0, 280.0],
            ),
            record(
                "ipc-roundtrip",
                "x86_64",
                "qemu-icount",
                "clh",
                1,
                &[330.0, 330.0],
            ),
            record(
                "ipc-roundtrip",
                "x86_64",
                "qemu-icount",
                "fine",
                1,
                &[500.0, 500.0],
            ),
            record(
                "ipc-roundtrip",
                "x86_64",
                "hosted",
                "none",
                1,
                &[400.0, 420.0],
            ),
            record(
                "ipc-roundtrip",
                "x86_64",
                "hosted",
                "clh",
                1,
                &[430.0, 450.0],
            ),
            record(
                "multicore-pingpong",
                "x86_64",
                "hosted",
                "none",
                1,
                &[1e6, 1e6],
            ),
            record(
                "multicore-pingpong",
                "x86_64",
                "hosted",
                "none",
                2,
                &[1.98e6, 1.96e6],
            ),
            record("multicore-pingpong", "x86_64", "hosted", "fine", 1, &[1e6]),
            record(
                "multicore-pingpong",
                "x86_64",
                "hosted",
                "fine",
                2,
                &[1.5e6],
            ),
        ]
    }

    fn line<'a>(lines: &'a [TargetLine], target: &str, place: &str) -> &'a TargetLine {
        lines
            .iter()
            .find(|l| l.target.contains(target) && l.place == place)
            .unwrap_or_else(|| panic!("{target} at {place} missing from {lines:#?}"))
    }

    #[test]
    fn every_record_table_has_the_suites_columns() {
        let mut r = record(
            "memory-alloc",
            "x86_64",
            "qemu-icount",
            "clh",
            2,
            &[330.0, 330.0],
        );
        r.pages = 50;
        r.clients = 3;
        let mut empty = r.clone();
        empty.runs = 0;
        let rows = [r, empty];
        assert_eq!(
            every_record_table(&rows, ("pages", |r| r.pages), None),
            "| bench | variant | platform | board | lock | cores | pages | runs | mean | std dev | median | min | unit |\n\
             |---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n\
             | memory-alloc | cross-as | qemu-icount | microvm | clh | 2 | 50 | 2 | 330 | 0.0 | 330 | 330 | instructions |\n"
        );
        let over = |r: &Record| format!("{}!", r.cores);
        assert_eq!(
            every_record_table(&rows, ("clients", |r| r.clients), Some(("over none", &over))),
            "| bench | variant | platform | board | lock | cores | clients | runs | mean | std dev | median | min | unit | over none |\n\
             |---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n\
             | memory-alloc | cross-as | qemu-icount | microvm | clh | 2 | 3 | 2 | 330 | 0.0 | 330 | 330 | instructions | 2! |\n"
        );
    }

    #[test]
    fn targets_are_judged_from_the_data() {
        let lines = targets(&sample_records());
        // 330 over 280: +17.9% > 10%.
        let bkl = line(
            &lines,
            "big-lock (CLH) round-trip overhead over none <= 10% (x86_64)",
            "qemu-icount microvm",
        );
        assert_eq!(bkl.verdict, Verdict::NotMet, "{bkl:?}");
        assert!(bkl.value.contains("+50 instructions (+18%)"), "{bkl:?}");
        // 440 over 410: +7.3%.
        let host = line(&lines, "<= 10% (x86_64)", "hosted host");
        assert_eq!(host.verdict, Verdict::Met, "{host:?}");
        // Fine +220 vs big lock +50: 4.4x > 2x.
        let fine = line(&lines, "fine overhead <= 2x", "qemu-icount microvm");
        assert_eq!(fine.verdict, Verdict::NotMet, "{fine:?}");
        assert!(fine.value.contains("4.40x"), "{fine:?}");
        // No ARM data at all.
        let arm = line(&lines, "<= 20% (armv7)", "qemu-icount sabrelite");
        assert_eq!(arm.verdict, Verdict::NotMeasured);
        assert!(arm.value.contains("no qemu-icount sabrelite"), "{arm:?}");
        // Scaling: none 1.97x on 2 cores >= 1.9; fine 1.5x < 1.9; rtm unmeasured. Absolute
        // counts: 280 <= 421 and 300, 330 <= 566 and 340.
        use Verdict::{Met, NotMeasured, NotMet};
        for (target, place, verdict) in [
            ("rtm overhead", "hosted host", NotMeasured),
            ("x cores for none", "hosted host", Met),
            ("x cores for fine", "hosted host", NotMet),
            ("x cores for rtm", "hosted host", NotMeasured),
            ("<= 300 instructions", "qemu-icount microvm", Met),
            ("<= 340 instructions", "qemu-icount microvm", Met),
            (
                "<= 421 instructions with no lock (seL4",
                "qemu-icount microvm",
                Met,
            ),
            (
                "<= 566 instructions with CLH (seL4",
                "qemu-icount microvm",
                Met,
            ),
        ] {
            let l = line(&lines, target, place);
            assert_eq!(l.verdict, verdict, "{target} at {place}: {l:?}");
        }
    }

    #[test]
    fn arm_targets_only_for_the_locks_that_ran() {
        let mut records = sample_records();
        // ARMv7 none 300 against 280 (+7.1%), fine 560 against 500 (+12%); CLH, ticket and
        // RTM did not run on ARMv7, ticket not on x86_64 either.
        records.push(record(
            "ipc-roundtrip",
            "armv7",
            "qemu-icount",
            "none",
            1,
            &[300.0],
        ));
        records.push(record(
            "ipc-roundtrip",
            "armv7",
            "qemu-icount",
            "fine",
            1,
            &[560.0],
        ));
        records.push(record(
            "ipc-roundtrip",
            "armv7",
            "qemu-icount",
            "ticket",
            1,
            &[400.0],
        ));
        // Barriers: none 4, CLH 11 (+7 > 6), fine 14 (+10 <= 16).
        for (lock, n) in [("none", 4.0), ("clh", 11.0), ("fine", 14.0)] {
            records.push(record(
                "ipc-barriers",
                "armv7",
                "qemu-icount",
                lock,
                1,
                &[n],
            ));
        }
        let lines = targets(&records);
        use Verdict::{Met, NotMeasured, NotMet};
        for (target, verdict) in [
            ("+ 10% (none)", Met),
            ("+ 10% (fine)", NotMet),
            ("+ 10% (ticket)", NotMeasured),
            ("beyond no lock <= 6 (clh)", NotMet),
            ("beyond no lock <= 16 (fine)", Met),
        ] {
            let l = line(&lines, target, "qemu-icount sabrelite");
            assert_eq!(l.verdict, verdict, "{target}: {l:?}");
        }
        assert!(line(&lines, "+ 10% (none)", "qemu-icount sabrelite")
            .value
            .contains("(+7.1%)"));
        for absent in ["+ 10% (clh)", "+ 10% (rtm)", "<= 6 (ticket)", "<= 6 (rtm)"] {
            assert!(
                !lines.iter().any(|l| l.target.contains(absent)),
                "{absent} listed for a lock that did not run"
            );
        }
    }

    #[test]
    fn nothing_measured_means_every_target_unmeasured() {
        let lines = targets(&[]);
        assert!(!lines.is_empty());
        assert!(lines.iter().all(|l| l.verdict == Verdict::NotMeasured));
    }

    #[test]
    fn report_has_the_tables() {
        let ctx = Context {
            command: "cargo xtask bench".into(),
            when: "2026-11-22 05:00".into(),
            notes: vec!["the baseline none was added".into()],
            machine: "Test CPU".into(),
            seconds: 12.0,
            ..Default::default()
        };
        let text = render(&sample_records(), &ctx);
        for needle in [
            "## Our figures next to the papers'",
            "+65 cycles (+10%)",
            "421 instructions",
            "| x86 round trip, uniprocessor | 421 instructions |",
            "280 instructions (lock none)",
            "## Targets",
            "**not met**",
            "**not measured**",
            "the baseline none was added",
            "**Noisy**",
            "* `null-syscall`: the mean cost of one `Null` system call",
            "Kernel tracing (`--kernel-trace off`): guest records measured with the kernel \
             built without its `trace` feature.",
        ] {
            assert!(text.contains(needle), "{needle} missing:\n{text}");
        }
        assert!(render(&[], &ctx).contains("No records"));
    }

    #[test]
    fn the_interrupt_safe_guard_is_tabled_beside_the_plain_pair() {
        let mut records = sample_records();
        assert!(irqsave_table(&records).is_empty());
        let ctx = Context::default();
        let without = render(&records, &ctx);
        assert!(!without.contains("## Interrupt-safe locking") && !without.contains("`lock-pair`"));
        for (bench, arch, variant, n) in [
            ("lock-pair", "x86_64", "ticket", 9.0),
            ("lock-pair-irqsave", "x86_64", "ticket", 17.0),
            ("lock-pair-irqsave-masked", "x86_64", "ticket", 14.0),
            ("lock-pair", "armv7", "clh", 30.0),
            ("lock-pair-irqsave", "armv7", "clh", 33.0),
        ] {
            let mut r = record(bench, arch, "qemu-icount", "clh", 1, &[n, n]);
            r.variant = variant.into();
            records.push(r);
        }
        let table = irqsave_table(&records);
        let rows: Vec<&str> = table.lines().skip(2).collect();
        assert_eq!(
            rows,
            [
                "| qemu-icount | x86_64 | microvm | clh | ticket | 9.0 | 17.0 | +8.0 | 14.0 | \
                 +5.0 | instructions |",
                // A record that is missing leaves its cells empty.
                "| qemu-icount | armv7 | sabrelite | clh | clh | 30.0 | 33.0 | +3.0 | - | - | \
                 instructions |",
            ]
        );
        let text = render(&records, &ctx);
        assert!(text.contains("## Interrupt-safe locking"), "{text}");
        assert!(text.contains(&table));
        assert!(text.contains("* `lock-pair`, `lock-pair-irqsave`, `lock-pair-irqsave-masked`: "));
    }

    #[test]
    fn barrier_counts_beside_the_papers() {
        let mut records = Vec::new();
        for (lock, n) in [("none", 29.0), ("clh", 37.0), ("fine", 71.0)] {
            let mut r = record(BARRIERS, "armv7", "qemu-icount", lock, 1, &[n]);
            r.unit = "barriers".into();
            records.push(r);
        }
        let rows = paper_rows(&records);
        let row = rows
            .iter()
            .find(|r| r[0].starts_with("ARM barriers"))
            .expect("barrier row");
        assert_eq!(row[1], "6 with the big lock, 16 fine-grained");
        assert!(
            row[3].starts_with("none 29.0, clh 37.0 (+8.0), fine 71.0 (+42.0)"),
            "{row:?}"
        );
        let none = paper_rows(&[]);
        let row = none
            .iter()
            .find(|r| r[0].starts_with("ARM barriers"))
            .unwrap();
        assert!(row[3].starts_with("not measured"), "{row:?}");
    }

    #[test]
    fn rtm_table_has_the_papers_columns() {
        let mut r = record("rtm-aborts", "x86_64", "hosted", "rtm", 1, &[0.0]);
        r.extra = Some(serde_json::json!({
            "total": 200, "direct": 150, "retry1": 20, "retry2": 10, "more": 0,
            "fallback": 20, "causes": {"conflict": 30, "capacity": 2}, "rtm": "present"
        }));
        let t = rtm_table(&[&r]);
        assert!(
            t.contains("| direct commit | 1 retry | 2 retries | more | fallback |"),
            "{t}"
        );
        assert!(
            t.contains("| hosted host | 200 | 150 (75.0%) | 20 (10.0%) | 10 (5.0%) | 0 (0.0%) | 20 (10.0%) | capacity 2, conflict 30 | present |"),
            "{t}"
        );
    }

    #[test]
    fn overhead_format() {
        assert_eq!(fmt_overhead(65.2, 0.1, "cycles"), "+65 cycles (+10%)");
        assert_eq!(fmt_overhead(-0.3, -0.001, "cycles"), "+0 cycles (+0%)");
        assert_eq!(fmt_overhead(-12.0, -0.05, "cycles"), "-12 cycles (-5%)");
    }

    #[test]
    fn number_format() {
        assert_eq!(fmt_num(421.0), "421");
        assert_eq!(fmt_num(12.34), "12.3");
        assert_eq!(fmt_num(2_500_000.0), "2.50M");
    }
}
