//! `cargo xtask bench compare A B`: two runs' results side by side.
//!
//! Each side is read as JSON with a `records` array (`results.json`, docs/bench-protocol.md).
//! Records are matched on [`KEY_FIELDS`]; nothing else about a record is assumed but its
//! `unit` and `samples`, so the records of any suite compare the same way (a field absent from
//! a record counts as empty). For each pair the change of the mean is given in percent with a
//! verdict ([`Verdict`]): on a deterministic platform ([`DETERMINISTIC_PLATFORMS`]) the samples
//! are identical or not; elsewhere the difference of the means is weighed against its standard
//! error (Welch's t, two-sided 95%).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::layout;
use super::report::fmt_num;
use super::stats::stats;

/// Options of `cargo xtask bench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The earlier results: a run's folder, a results.json, or a bench root (its `latest`).
    #[arg(value_name = "A")]
    a: PathBuf,

    /// The later results, given the same way.
    #[arg(value_name = "B")]
    b: PathBuf,

    /// List only the records that changed (deterministic) or moved beyond the noise, and those
    /// on one side only.
    #[arg(long)]
    changed: bool,
}

/// The fields that identify a record: two records with the same values are the same point.
pub const KEY_FIELDS: [&str; 9] = [
    "platform", "arch", "board", "bench", "variant", "lock", "cores", "clients", "pages",
];

/// Platforms whose samples are deterministic (guest instruction counts under `-icount`): any
/// difference is a real change.
pub const DETERMINISTIC_PLATFORMS: [&str; 1] = ["qemu-icount"];

/// One record of a side, as far as the comparison needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The values of [`KEY_FIELDS`], in order.
    pub key: Vec<String>,
    /// The unit of the samples.
    pub unit: String,
    /// The samples.
    pub samples: Vec<f64>,
}

impl Entry {
    /// The mean of the samples, if there are any.
    fn mean(&self) -> Option<f64> {
        stats(&self.samples).map(|s| s.mean)
    }

    /// Whether the samples are deterministic (by platform).
    fn deterministic(&self) -> bool {
        DETERMINISTIC_PLATFORMS.contains(&self.key[0].as_str())
    }
}

/// One side of the comparison.
#[derive(Clone, Debug)]
pub struct Side {
    /// The file read.
    pub file: PathBuf,
    /// Where and when the results were made (from `generated_by`), one line.
    pub about: String,
    /// The records, in file order (a key seen twice is kept once, the first).
    pub entries: Vec<Entry>,
    /// Keys that appeared more than once.
    pub duplicates: Vec<Vec<String>>,
}

/// A field's value as text: strings as they are, numbers as JSON writes them, absent or null
/// as empty.
fn text_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Parses a results document (`{"records": [...]}`); `what` names it in errors and becomes the
/// side's `file`.
pub fn parse(text: &str, what: &str) -> Result<Side, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("{what}: not JSON ({e})"))?;
    let records = doc
        .get("records")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{what}: not a results file (no `records` array)"))?;
    let mut entries: Vec<Entry> = Vec::new();
    let mut duplicates = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let obj = r
            .as_object()
            .ok_or_else(|| format!("{what}: record {} is not an object", i + 1))?;
        let key: Vec<String> = KEY_FIELDS.iter().map(|f| text_of(obj.get(*f))).collect();
        let samples = match obj.get("samples") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|s| {
                    s.as_f64().ok_or_else(|| {
                        format!(
                            "{what}: record {} ({}): a sample is not a number: {s}",
                            i + 1,
                            key_text(&key)
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(format!(
                    "{what}: record {} ({}): `samples` is not an array: {other}",
                    i + 1,
                    key_text(&key)
                ))
            }
        };
        if entries.iter().any(|e| e.key == key) {
            duplicates.push(key);
            continue;
        }
        entries.push(Entry {
            key,
            unit: text_of(obj.get("unit")),
            samples,
        });
    }
    let generated = doc.get("generated_by");
    let field = |name: &str| text_of(generated.and_then(|g| g.get(name)));
    let mut about = Vec::new();
    for (label, name) in [("", "utc"), ("revision ", "revision"), ("", "command")] {
        let v = field(name);
        if !v.is_empty() {
            about.push(if name == "command" {
                format!("`{v}`")
            } else {
                format!("{label}{v}")
            });
        }
    }
    // Which kernel the images ran (`--kernel-trace`); not a key field: an untraced and a
    // traced run compare point by point.
    let trace = text_of(doc.get("plan").and_then(|p| p.get("kernel_trace")));
    if !trace.is_empty() {
        about.push(format!("kernel trace {trace}"));
    }
    about.push(format!("{} records", records.len()));
    Ok(Side {
        file: PathBuf::from(what),
        about: about.join(", "),
        entries,
        duplicates,
    })
}

/// Reads one side: resolves `path` ([`layout::results_file`]) and parses it.
pub fn read_side(path: &Path) -> Result<Side, String> {
    let file = layout::results_file(path)?;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    Ok(Side {
        file: file.clone(),
        ..parse(&text, &file.display().to_string())?
    })
}

/// A key as one line: the non-empty values, with `cores`/`clients` named.
pub fn key_text(key: &[String]) -> String {
    KEY_FIELDS
        .iter()
        .zip(key)
        .filter(|(_, v)| !v.is_empty() && v.as_str() != "0")
        .map(|(f, v)| match *f {
            "cores" | "clients" | "pages" => format!("{f} {v}"),
            _ => v.clone(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a pair of records says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// Deterministic samples, bit for bit the same.
    Identical,
    /// Deterministic samples that differ: a real change.
    Changed,
    /// The difference of the means is larger than the noise allows (`t`: the difference in
    /// standard errors, `crit`: the 95% threshold for the degrees of freedom).
    BeyondNoise {
        /// Welch's t.
        t: f64,
        /// The two-sided 95% critical value.
        crit: f64,
    },
    /// The difference is within the noise.
    WithinNoise {
        /// Welch's t.
        t: f64,
        /// The two-sided 95% critical value.
        crit: f64,
    },
    /// Fewer than 2 samples on a side: no spread to judge by.
    TooFewSamples,
    /// A side has no samples (a statistics-only record).
    NoSamples,
    /// The units differ: not comparable.
    UnitsDiffer,
}

impl Verdict {
    /// The verdict as shown.
    pub fn text(self) -> String {
        match self {
            Verdict::Identical => "identical".into(),
            Verdict::Changed => "CHANGED (deterministic)".into(),
            Verdict::BeyondNoise { t, crit } => {
                if t.is_finite() {
                    format!("BEYOND NOISE (|t| {:.1} > {crit:.2})", t.abs())
                } else {
                    "BEYOND NOISE (no spread on either side)".into()
                }
            }
            Verdict::WithinNoise { t, crit } => {
                format!("within noise (|t| {:.1} <= {crit:.2})", t.abs())
            }
            Verdict::TooFewSamples => "not judged (< 2 samples)".into(),
            Verdict::NoSamples => "not judged (no samples)".into(),
            Verdict::UnitsDiffer => "not comparable (units differ)".into(),
        }
    }

    /// Whether the pair counts as a change (`--changed`).
    pub fn is_change(self) -> bool {
        matches!(
            self,
            Verdict::Changed | Verdict::BeyondNoise { .. } | Verdict::UnitsDiffer
        )
    }
}

/// The two-sided 95% critical value of Student's t for `df` degrees of freedom, from a table;
/// between entries the smaller `df`'s (larger) value is used, so the test errs towards "within
/// noise".
pub fn t_critical(df: f64) -> f64 {
    const TABLE: [(f64, f64); 19] = [
        (1.0, 12.706),
        (2.0, 4.303),
        (3.0, 3.182),
        (4.0, 2.776),
        (5.0, 2.571),
        (6.0, 2.447),
        (7.0, 2.365),
        (8.0, 2.306),
        (9.0, 2.262),
        (10.0, 2.228),
        (12.0, 2.179),
        (15.0, 2.131),
        (20.0, 2.086),
        (25.0, 2.060),
        (30.0, 2.042),
        (40.0, 2.021),
        (60.0, 2.000),
        (120.0, 1.980),
        (f64::INFINITY, 1.960),
    ];
    TABLE
        .iter()
        .rev()
        .find(|(d, _)| *d <= df)
        .map_or(TABLE[0].1, |(_, t)| *t)
}

/// Welch's t of the difference of the means of `a` and `b` and its degrees of freedom (each
/// needs 2 samples). Infinite t when neither side has any spread but the means differ.
pub fn welch(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (sa, sb) = (stats(a)?, stats(b)?);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (va, vb) = (sa.stddev.powi(2) / na, sb.stddev.powi(2) / nb);
    let diff = sb.mean - sa.mean;
    let se = (va + vb).sqrt();
    if se == 0.0 {
        let t = if diff == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(diff)
        };
        return Some((t, f64::INFINITY));
    }
    let df = (va + vb).powi(2) / (va.powi(2) / (na - 1.0) + vb.powi(2) / (nb - 1.0));
    Some((diff / se, df))
}

/// Whether two sets of deterministic samples are the same: equal bit for bit, or each a run of
/// one repeated value, the same on both sides (different `--runs`).
fn same_deterministic(a: &[f64], b: &[f64]) -> bool {
    let constant = |s: &[f64]| s.iter().all(|x| x.to_bits() == s[0].to_bits());
    (a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()))
        || (constant(a) && constant(b) && a[0].to_bits() == b[0].to_bits())
}

/// Judges one pair.
pub fn judge(a: &Entry, b: &Entry) -> Verdict {
    if a.unit != b.unit {
        return Verdict::UnitsDiffer;
    }
    if a.samples.is_empty() || b.samples.is_empty() {
        return Verdict::NoSamples;
    }
    if a.deterministic() {
        return if same_deterministic(&a.samples, &b.samples) {
            Verdict::Identical
        } else {
            Verdict::Changed
        };
    }
    match welch(&a.samples, &b.samples) {
        None => Verdict::TooFewSamples,
        Some((t, df)) => {
            let crit = t_critical(df);
            if t.abs() > crit {
                Verdict::BeyondNoise { t, crit }
            } else {
                Verdict::WithinNoise { t, crit }
            }
        }
    }
}

/// One matched pair.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The key.
    pub key: Vec<String>,
    /// A's mean ± sd, as shown.
    pub a: String,
    /// B's (with B's unit when it is not A's).
    pub b: String,
    /// A's unit.
    pub unit: String,
    /// Change of the mean in percent (None: no means, or A's is 0).
    pub change: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// The comparison of two sides.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Records on both sides, in A's order.
    pub rows: Vec<Row>,
    /// Keys only in A.
    pub only_a: Vec<Vec<String>>,
    /// Keys only in B.
    pub only_b: Vec<Vec<String>>,
}

/// `mean ± sd` of an entry (`-` without samples).
fn shown(e: &Entry) -> String {
    match stats(&e.samples) {
        Some(s) if e.samples.len() > 1 && s.stddev > 0.0 => {
            format!("{} ± {}", fmt_num(s.mean), fmt_num(s.stddev))
        }
        Some(s) => fmt_num(s.mean),
        None => "-".into(),
    }
}

/// Matches the entries of `a` and `b` and judges every pair.
pub fn compare(a: &[Entry], b: &[Entry]) -> Comparison {
    let mut rows = Vec::new();
    let mut only_a = Vec::new();
    for ea in a {
        let Some(eb) = b.iter().find(|e| e.key == ea.key) else {
            only_a.push(ea.key.clone());
            continue;
        };
        let change = match (ea.mean(), eb.mean()) {
            (Some(ma), Some(mb)) if ma != 0.0 && ea.unit == eb.unit => {
                Some((mb - ma) / ma.abs() * 100.0)
            }
            _ => None,
        };
        let units_differ = ea.unit != eb.unit;
        rows.push(Row {
            key: ea.key.clone(),
            a: shown(ea),
            b: if units_differ {
                format!("{} {}", shown(eb), eb.unit)
            } else {
                shown(eb)
            },
            unit: ea.unit.clone(),
            change,
            verdict: judge(ea, eb),
        });
    }
    let only_b = b
        .iter()
        .filter(|eb| !a.iter().any(|ea| ea.key == eb.key))
        .map(|e| e.key.clone())
        .collect();
    Comparison {
        rows,
        only_a,
        only_b,
    }
}

/// The comparison as text: a table of the pairs (all, or only the changes), the keys on one
/// side only, and a summary line.
pub fn render(c: &Comparison, only_changes: bool) -> String {
    let mut s = String::new();
    let rows: Vec<&Row> = c
        .rows
        .iter()
        .filter(|r| !only_changes || r.verdict.is_change())
        .collect();
    // Key columns where some row has a value, then the figures.
    let keys: Vec<usize> = (0..KEY_FIELDS.len())
        .filter(|&i| rows.iter().any(|r| !r.key[i].is_empty() && r.key[i] != "0"))
        .collect();
    let header: Vec<&str> = keys
        .iter()
        .map(|&i| KEY_FIELDS[i])
        .chain(["A", "B", "unit", "change", "verdict"])
        .collect();
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            keys.iter()
                .map(|&i| r.key[i].clone())
                .chain([
                    r.a.clone(),
                    r.b.clone(),
                    r.unit.clone(),
                    r.change
                        .map(|p| format!("{:+.1}%", p + 0.0))
                        .unwrap_or_else(|| "-".into()),
                    r.verdict.text(),
                ])
                .collect()
        })
        .collect();
    if !lines.is_empty() {
        let widths: Vec<usize> = (0..header.len())
            .map(|i| {
                lines
                    .iter()
                    .map(|l| l[i].chars().count())
                    .chain([header[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        // Numbers right-aligned.
        let right = |i: usize| {
            matches!(
                header[i],
                "cores" | "clients" | "pages" | "A" | "B" | "change"
            )
        };
        let header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
        for line in std::iter::once(&header).chain(&lines) {
            let cells: Vec<String> = line
                .iter()
                .enumerate()
                .map(|(i, cell)| {
                    let pad = widths[i].saturating_sub(cell.chars().count());
                    if i + 1 == line.len() {
                        cell.clone()
                    } else if right(i) {
                        format!("{}{cell}", " ".repeat(pad))
                    } else {
                        format!("{cell}{}", " ".repeat(pad))
                    }
                })
                .collect();
            let _ = writeln!(s, "  {}", cells.join("  ").trim_end());
        }
    } else if only_changes {
        let _ = writeln!(s, "  no record changed beyond the noise");
    }
    for (side, keys) in [("A", &c.only_a), ("B", &c.only_b)] {
        if !keys.is_empty() {
            let _ = writeln!(s, "\nonly in {side} ({}):", keys.len());
            for k in keys.iter() {
                let _ = writeln!(s, "  {}", key_text(k));
            }
        }
    }
    let count = |f: fn(&Verdict) -> bool| c.rows.iter().filter(|r| f(&r.verdict)).count();
    let _ = writeln!(
        s,
        "\ncompare: {} matched: {} identical, {} changed (deterministic), {} beyond noise, {} \
         within noise, {} not judged; {} only in A, {} only in B",
        c.rows.len(),
        count(|v| *v == Verdict::Identical),
        count(|v| *v == Verdict::Changed),
        count(|v| matches!(v, Verdict::BeyondNoise { .. })),
        count(|v| matches!(v, Verdict::WithinNoise { .. })),
        count(|v| {
            matches!(
                v,
                Verdict::TooFewSamples | Verdict::NoSamples | Verdict::UnitsDiffer
            )
        }),
        c.only_a.len(),
        c.only_b.len()
    );
    s
}

/// Runs `cargo xtask bench compare`: exit status 0 once both sides were read (whatever they
/// say), 2 when one cannot be.
pub fn run(args: &CompareArgs) -> ExitCode {
    let mut sides = Vec::new();
    for (name, path) in [("A", &args.a), ("B", &args.b)] {
        match read_side(path) {
            Ok(side) => sides.push(side),
            Err(e) => {
                eprintln!("cargo xtask bench compare: {name}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let (a, b) = (&sides[0], &sides[1]);
    for (name, side) in [("A", a), ("B", b)] {
        println!("{name}: {} ({})", side.file.display(), side.about);
        for k in &side.duplicates {
            println!(
                "{name}: the record {} appears more than once; the first is compared",
                key_text(k)
            );
        }
    }
    println!(
        "change = (B - A) / A of the means. {}: samples identical or not; elsewhere Welch's t \
         of the difference against the two-sided 95% threshold.\n",
        DETERMINISTIC_PLATFORMS.join(", ")
    );
    print!("{}", render(&compare(&a.entries, &b.entries), args.changed));
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::record;
    use super::*;
    use serde_json::json;

    /// A results document of `records` (as `cargo xtask bench` writes them).
    fn doc(records: &[super::super::records::Record], revision: &str) -> String {
        json!({
            "generated_by": {"command": "cargo xtask bench", "utc": "2026-11-23 10:00 UTC", "revision": revision},
            "records": records,
        })
        .to_string()
    }

    fn entries(text: &str) -> Vec<Entry> {
        parse(text, "test").unwrap().entries
    }

    fn before() -> Vec<super::super::records::Record> {
        vec![
            record(
                "ipc-roundtrip",
                "x86_64",
                "qemu-icount",
                "clh",
                1,
                &[1850.0; 4],
            ),
            record(
                "ipc-roundtrip",
                "x86_64",
                "qemu-icount",
                "none",
                1,
                &[1750.0; 4],
            ),
            record(
                "ipc-roundtrip",
                "x86_64",
                "hosted",
                "clh",
                1,
                &[360.0, 370.0, 365.0, 372.0, 368.0, 361.0],
            ),
            record(
                "ipc-roundtrip",
                "x86_64",
                "hosted",
                "none",
                1,
                &[340.0, 345.0, 338.0, 342.0, 344.0, 341.0],
            ),
            record(
                "multicore-pingpong",
                "x86_64",
                "hosted",
                "clh",
                2,
                &[1e6, 1.1e6],
            ),
        ]
    }

    fn after() -> Vec<super::super::records::Record> {
        let mut v = before();
        // A deterministic change of one instruction.
        v[0].samples = vec![1851.0; 4];
        // Hosted clh: clearly slower (well beyond the spread); none: same spread, about the
        // same mean.
        v[2].samples = vec![400.0, 410.0, 405.0, 398.0, 402.0, 407.0];
        v[3].samples = vec![341.0, 344.0, 339.0, 343.0, 340.0, 342.0];
        // The multicore point is gone, a new one appears.
        v.remove(4);
        v.push(record(
            "multicore-pingpong",
            "x86_64",
            "hosted",
            "clh",
            4,
            &[2e6, 2.1e6],
        ));
        v
    }

    #[test]
    fn records_are_matched_and_judged() {
        let a = entries(&doc(&before(), "aaaaaaa"));
        let b = entries(&doc(&after(), "bbbbbbb"));
        let c = compare(&a, &b);
        assert_eq!(c.rows.len(), 4);
        let verdict = |platform: &str, lock: &str| {
            c.rows
                .iter()
                .find(|r| r.key[0] == platform && r.key[5] == lock)
                .unwrap()
                .clone()
        };
        let icount_clh = verdict("qemu-icount", "clh");
        assert_eq!(icount_clh.verdict, Verdict::Changed);
        let pct = icount_clh.change.unwrap();
        assert!((pct - 100.0 / 1850.0).abs() < 1e-9, "{pct}");
        assert_eq!(verdict("qemu-icount", "none").verdict, Verdict::Identical);
        assert!(matches!(
            verdict("hosted", "clh").verdict,
            Verdict::BeyondNoise { .. }
        ));
        assert!(matches!(
            verdict("hosted", "none").verdict,
            Verdict::WithinNoise { .. }
        ));
        assert_eq!(c.only_a.len(), 1);
        assert_eq!(c.only_b.len(), 1);
        assert_eq!(
            key_text(&c.only_a[0]),
            "hosted x86_64 host multicore-pingpong cross-as clh cores 2"
        );
        assert_eq!(c.only_b[0][6], "4");
    }

    #[test]
    fn rendered_table_and_summary() {
        let a = entries(&doc(&before(), "a"));
        let b = entries(&doc(&after(), "b"));
        let text = render(&compare(&a, &b), false);
        assert!(text.contains("CHANGED (deterministic)"), "{text}");
        assert!(text.contains("+0.1%"), "{text}");
        assert!(text.contains("identical"), "{text}");
        assert!(text.contains("only in A (1):"), "{text}");
        assert!(text.contains("only in B (1):"), "{text}");
        assert!(
            text.contains(
                "compare: 4 matched: 1 identical, 1 changed (deterministic), 1 beyond noise, \
                 1 within noise, 0 not judged; 1 only in A, 1 only in B"
            ),
            "{text}"
        );
        // --changed: the two changes only.
        let changed = render(&compare(&a, &b), true);
        assert!(!changed.contains("identical  "), "{changed}");
        assert_eq!(
            changed.matches("CHANGED").count() + changed.matches("BEYOND").count(),
            2
        );
    }

    #[test]
    fn a_side_against_itself_changes_nothing() {
        let a = entries(&doc(&before(), "a"));
        let c = compare(&a, &a);
        assert!(c.only_a.is_empty() && c.only_b.is_empty());
        assert!(c.rows.iter().all(|r| !r.verdict.is_change()), "{c:?}");
        assert!(c.rows.iter().all(|r| r.change == Some(0.0)));
    }

    #[test]
    fn deterministic_runs_of_different_lengths() {
        assert!(same_deterministic(&[5.0, 5.0], &[5.0; 16]));
        assert!(!same_deterministic(&[5.0, 6.0], &[5.0, 6.0, 5.0]));
        assert!(same_deterministic(&[5.0, 6.0], &[5.0, 6.0]));
        assert!(!same_deterministic(&[5.0], &[5.000_000_1]));
    }

    #[test]
    fn noise_needs_spread_and_enough_samples() {
        let e = |platform: &str, samples: &[f64]| Entry {
            key: vec![platform.into(); KEY_FIELDS.len()],
            unit: "cycles".into(),
            samples: samples.to_vec(),
        };
        // One sample a side: nothing to judge the spread by.
        assert_eq!(
            judge(&e("hosted", &[1.0]), &e("hosted", &[2.0])),
            Verdict::TooFewSamples
        );
        // No spread at all but different means: beyond noise.
        assert!(matches!(
            judge(&e("hosted", &[1.0, 1.0]), &e("hosted", &[2.0, 2.0])),
            Verdict::BeyondNoise { .. }
        ));
        // Two samples each: t must beat 12.7 at one degree of freedom.
        let v = judge(&e("hosted", &[100.0, 110.0]), &e("hosted", &[112.0, 122.0]));
        assert!(matches!(v, Verdict::WithinNoise { .. }), "{v:?}");
        assert_eq!(
            judge(&e("hosted", &[]), &e("hosted", &[1.0])),
            Verdict::NoSamples
        );
        let mut other = e("hosted", &[1.0, 2.0]);
        other.unit = "ns".into();
        assert_eq!(
            judge(&e("hosted", &[1.0, 2.0]), &other),
            Verdict::UnitsDiffer
        );
    }

    #[test]
    fn welch_and_the_t_table() {
        // Equal variances and sizes: t = diff / sqrt(2 s^2 / n), df = 2n - 2.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [3.0, 4.0, 5.0, 6.0, 7.0];
        let (t, df) = welch(&a, &b).unwrap();
        assert!((t - 2.0).abs() < 1e-12, "{t}");
        assert!((df - 8.0).abs() < 1e-12, "{df}");
        assert_eq!(t_critical(8.0), 2.306);
        assert_eq!(t_critical(8.9), 2.306);
        assert_eq!(t_critical(11.0), 2.228);
        assert_eq!(t_critical(0.5), 12.706);
        assert_eq!(t_critical(1e6), 1.980);
        assert_eq!(t_critical(f64::INFINITY), 1.960);
    }

    #[test]
    fn records_of_another_suite_compare_by_the_same_key() {
        // No lock, no variant, another unit: absent fields are empty, nothing is assumed.
        let a = r#"{"records":[{"bench":"pager-alloc","platform":"hosted","cores":4,"unit":"ns","samples":[10,11,10]}]}"#;
        let b = r#"{"records":[{"bench":"pager-alloc","platform":"hosted","cores":4,"unit":"ns","samples":[30,31,30]}]}"#;
        let c = compare(&entries(a), &entries(b));
        assert_eq!(c.rows.len(), 1);
        assert_eq!(key_text(&c.rows[0].key), "hosted pager-alloc cores 4");
        assert!(matches!(c.rows[0].verdict, Verdict::BeyondNoise { .. }));
    }

    #[test]
    fn an_untraced_and_a_traced_run_line_up() {
        let off = before();
        let mut on = before();
        for r in &mut on {
            r.kernel_trace = "on".into();
            r.samples = r.samples.iter().map(|s| s + 600.0).collect();
        }
        let with_plan = |records: &[super::super::records::Record], trace: &str| {
            json!({"plan": {"kernel_trace": trace}, "records": records}).to_string()
        };
        let a = parse(&with_plan(&off, "off"), "off").unwrap();
        let b = parse(&with_plan(&on, "on"), "on").unwrap();
        assert!(b.about.contains("kernel trace on"), "{}", b.about);
        let c = compare(&a.entries, &b.entries);
        assert!(c.only_a.is_empty() && c.only_b.is_empty());
        assert_eq!(c.rows.len(), off.len());
        assert!(c
            .rows
            .iter()
            .any(|r| r.verdict == Verdict::Changed && key_text(&r.key).contains("qemu-icount")));
    }

    #[test]
    fn unreadable_input_is_an_error_that_names_it() {
        assert!(parse("{", "x.json")
            .unwrap_err()
            .starts_with("x.json: not JSON"));
        assert!(parse("[]", "x").unwrap_err().contains("no `records` array"));
        assert!(parse(r#"{"records":[1]}"#, "x")
            .unwrap_err()
            .contains("record 1 is not an object"));
        let err = parse(r#"{"records":[{"bench":"b","samples":["a"]}]}"#, "x").unwrap_err();
        assert!(err.contains("a sample is not a number"), "{err}");
        let side = parse(r#"{"records":[{"bench":"b"},{"bench":"b"}]}"#, "x").unwrap();
        assert_eq!((side.entries.len(), side.duplicates.len()), (1, 1));
    }

    #[test]
    fn sides_are_read_from_folders_and_files() {
        let dir = std::env::temp_dir().join(format!("xtask-compare-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("results.json"), doc(&before(), "abc1234")).unwrap();
        let side = read_side(&dir).unwrap();
        assert_eq!(side.entries.len(), 5);
        assert!(side.about.contains("revision abc1234"), "{}", side.about);
        assert!(side.about.contains("5 records"), "{}", side.about);
        assert_eq!(
            read_side(&dir.join("results.json")).unwrap().entries.len(),
            5
        );
        std::fs::write(dir.join("broken.json"), "{\"records\": ").unwrap();
        let err = read_side(&dir.join("broken.json")).unwrap_err();
        assert!(err.contains("broken.json: not JSON"), "{err}");
        let err = read_side(&dir.join("missing")).unwrap_err();
        assert!(err.contains("no such file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
