//! `cargo xtask bench locks`: the host lock benchmarks.
//!
//! Runs `sync/benches/host_table.rs` (`cargo bench -p kernel-locks --bench host_table`), which measures
//! and writes raw JSON; this command adds what only the build side knows (the rustc version),
//! writes `<out>/host-locks.json` and prints the table.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use host_env::proc::Cmd;
use protocol::results::{GeneratedBy, Results};

/// The file name written in the output directory.
const FILE_NAME: &str = "host-locks.json";

/// Runs the host lock benchmarks into `out_dir` (which exists): `threads` are the thread counts
/// of the contended runs (empty: the benchmark's default), `quick` shortens the runs.
pub fn run(root: &Path, out_dir: &Path, threads: &[usize], quick: bool) -> ExitCode {
    if threads.contains(&0) {
        eprintln!("cargo xtask bench: --threads: thread counts must be at least 1");
        return ExitCode::from(2);
    }
    let raw_path = out_dir.join(".host-locks.raw.json");
    let _ = fs::remove_file(&raw_path);

    let mut cmd = Cmd::cargo()
        .args([
            "bench",
            "-p",
            "kernel-locks",
            "--bench",
            "host_table",
            "--",
            "--json",
        ])
        .arg(&raw_path);
    if !threads.is_empty() {
        let list: Vec<String> = threads.iter().map(usize::to_string).collect();
        cmd = cmd.args(["--threads", &list.join(",")]);
    }
    if quick {
        cmd = cmd.arg("--quick");
    }
    println!("running: {}", cmd.display());
    match cmd.run_inherited(root) {
        Ok(status) if status.success() => {}
        Ok(status) => {
            eprintln!("cargo xtask bench: the benchmark failed ({status})");
            return ExitCode::FAILURE;
        }
        Err(err) => {
            eprintln!("cargo xtask bench: cannot run `{}`: {err}", cmd.display());
            return ExitCode::FAILURE;
        }
    }

    let mut report: Value = match fs::read_to_string(&raw_path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(report) => report,
        Err(err) => {
            eprintln!(
                "cargo xtask bench: cannot read the benchmark's results {}: {err}",
                raw_path.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let _ = fs::remove_file(&raw_path);

    let rustc = Cmd::new("rustc")
        .arg("--version")
        .read_stdout(root)
        .unwrap_or_else(|| "unknown".into());
    let generated = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    if let Some(machine) = report.get_mut("machine").and_then(Value::as_object_mut) {
        machine.insert("rustc".into(), json!(rustc));
    }
    let results = results(
        report,
        super::generated_by(generated, 0.0, &super::layout::git_revision(root)),
    );
    let report = json!(results);

    let path = out_dir.join(FILE_NAME);
    if let Err(err) = fs::write(&path, results.to_json()) {
        eprintln!("cargo xtask bench: cannot write {}: {err}", path.display());
        return ExitCode::FAILURE;
    }

    print!("{}", render(&report));
    println!("written: {}", path.display());
    ExitCode::SUCCESS
}

/// The lock crate's benchmark report (`locks`, `parity`, `machine`, `method`, `notes`) in the
/// results schema every suite writes: the locks are the records, the parity table the summary.
fn results(mut report: Value, generated_by: GeneratedBy) -> Results<Value> {
    let mut take = |key: &str| report.get_mut(key).map(Value::take).unwrap_or(Value::Null);
    let list = |v: Value| match v {
        Value::Array(a) => a,
        _ => Vec::new(),
    };
    let machine = take("machine");
    let method = take("method");
    let notes = list(take("notes"))
        .into_iter()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect();
    let records = list(take("locks"));
    let summary = list(take("parity"));
    Results {
        generated_by,
        machine,
        plan: json!({ "suite": "host-locks" }),
        method,
        notes,
        missing: Vec::new(),
        errors: Vec::new(),
        records,
        summary,
    }
}

/// A statistic `{median, min, max}` as a number triple.
fn stat(v: &Value) -> Option<(f64, f64, f64)> {
    Some((
        v.get("median")?.as_f64()?,
        v.get("min")?.as_f64()?,
        v.get("max")?.as_f64()?,
    ))
}

/// `12_300_000.0` as `12.3M`.
fn si(v: f64) -> String {
    let (scaled, unit) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    if scaled >= 100.0 {
        format!("{scaled:.0}{unit}")
    } else {
        format!("{scaled:.1}{unit}")
    }
}

/// The report as a text table, with the machine and method above it.
fn render(report: &Value) -> String {
    let mut s = String::new();
    let m = &report["machine"];
    let method = &report["method"];
    let _ = writeln!(
        s,
        "\nmachine: {} | {} CPUs | RTM: {} | {}",
        m["cpu_model"].as_str().unwrap_or("?"),
        m["logical_cpus"].as_u64().unwrap_or(0),
        m["rtm"]["summary"].as_str().unwrap_or("?"),
        m["rustc"].as_str().unwrap_or("rustc ?"),
    );
    if let Some(ghz) = m["tsc_ghz"].as_f64() {
        let _ = writeln!(s, "TSC: {ghz:.2} GHz (estimated from the uncontended runs)");
    }
    let _ = writeln!(
        s,
        "uncontended: {}\ncontended:   {}",
        method["uncontended"].as_str().unwrap_or("?"),
        method["contended"].as_str().unwrap_or("?"),
    );

    let threads: Vec<u64> = method["threads"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let cpus = m["logical_cpus"].as_u64().unwrap_or(u64::MAX);

    let mut header = vec![
        "lock".to_owned(),
        "uncontended ns".to_owned(),
        "uncontended ticks".to_owned(),
    ];
    for t in &threads {
        let mark = if *t > cpus { "*" } else { "" };
        header.push(format!("{t} thr ops/s{mark}"));
    }
    let mut rows = vec![header];
    for lock in report["records"].as_array().into_iter().flatten() {
        let name = lock["name"].as_str().unwrap_or("?");
        let origin = lock["origin"].as_str().unwrap_or("");
        let mut row = vec![match origin {
            "kernel-locks" => name.to_owned(),
            other => format!("{name} ({other})"),
        }];
        let un = &lock["uncontended"];
        row.push(
            stat(&un["ns_per_op"])
                .map(|(med, _, _)| format!("{med:.2}"))
                .unwrap_or_else(|| "-".into()),
        );
        row.push(
            stat(&un["ticks_per_op"])
                .map(|(med, _, _)| format!("{med:.1}"))
                .unwrap_or_else(|| "-".into()),
        );
        for t in &threads {
            let cell = lock["contended"]
                .as_array()
                .and_then(|runs| runs.iter().find(|r| r["threads"].as_u64() == Some(*t)))
                .and_then(|r| stat(&r["ops_per_s"]))
                .map(|(med, lo, hi)| format!("{} ({}-{})", si(med), si(lo), si(hi)))
                .unwrap_or_else(|| "-".into());
            row.push(cell);
        }
        rows.push(row);
    }

    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    s.push('\n');
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c == 0 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        let _ = writeln!(s, "{}", cells.join(" | "));
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(s, "{}", rule.join("-|-"));
        }
    }
    let _ = writeln!(
        s,
        "\nops/s: median of {} runs (min-max), one per round; ns and ticks: median per \
         acquire+release over the batches of every round.",
        method["repeats"].as_u64().unwrap_or(0)
    );
    s.push_str(&render_parity(report));
    if threads.iter().any(|t| *t > cpus) {
        let _ = writeln!(
            s,
            "* more threads than CPUs: threads are preempted while holding or queued for a lock."
        );
    }
    for note in report["notes"].as_array().into_iter().flatten() {
        if let Some(note) = note.as_str() {
            let _ = writeln!(s, "note: {note}");
        }
    }
    s
}

/// The parity section: each of our locks beside the best peer of its kind (the crate's parity target),
/// from the same rounds.
fn render_parity(report: &Value) -> String {
    let mut s = String::new();
    let Some(pairs) = report["summary"].as_array().filter(|p| !p.is_empty()) else {
        return s;
    };
    let _ = writeln!(
        s,
        "\nparity with the best peer of each kind (same run, locks measured alternately):"
    );
    for pair in pairs {
        let un = &pair["uncontended"];
        let unit = un["unit"].as_str().unwrap_or("?");
        let mut line = format!(
            "  {} vs {}: uncontended {:.2} vs {:.2} {unit} ({:+.1}%, ours at or below in {} of {} \
             rounds)",
            pair["ours"].as_str().unwrap_or("?"),
            pair["peer"].as_str().unwrap_or("?"),
            un["ours"].as_f64().unwrap_or(f64::NAN),
            un["peer"].as_f64().unwrap_or(f64::NAN),
            (un["ratio"].as_f64().unwrap_or(f64::NAN) - 1.0) * 100.0,
            un["rounds_at_or_below_peer"].as_u64().unwrap_or(0),
            un["rounds"].as_u64().unwrap_or(0),
        );
        for c in pair["contended"].as_array().into_iter().flatten() {
            let threads = c["threads"].as_u64().unwrap_or(0);
            if threads < 2 {
                continue;
            }
            // The best contended peer is chosen per thread count; name it where it is not the
            // uncontended one.
            let peer = c["peer"]
                .as_str()
                .filter(|&p| Some(p) != pair["peer"].as_str())
                .map(|p| format!(" {p}"))
                .unwrap_or_default();
            let _ = write!(
                line,
                "; {threads} thr {} vs{peer} {} ops/s ({:+.1}%){}",
                si(c["ours_ops_per_s"].as_f64().unwrap_or(f64::NAN)),
                si(c["peer_ops_per_s"].as_f64().unwrap_or(f64::NAN)),
                (c["ratio"].as_f64().unwrap_or(f64::NAN) - 1.0) * 100.0,
                if c["pinned"].as_bool() == Some(false) {
                    " (oversubscribed, not judged)"
                } else {
                    ""
                },
            );
        }
        let verdict = match pair["verdict"].as_str() {
            Some("met") => "met",
            Some("within-noise") => {
                "within noise (ours behind by less than the rounds' own spread: this run cannot \
                 tell the two apart)"
            }
            Some(_) => "NOT met",
            // Results of a benchmark from before the noise verdict.
            None if pair["met"].as_bool() == Some(true) => "met",
            None => "NOT met",
        };
        let _ = writeln!(s, "{line}: {verdict}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn si_scales() {
        assert_eq!(si(12_345_678.0), "12.3M");
        assert_eq!(si(950.0), "950");
        assert_eq!(si(2.5e9), "2.5G");
        assert_eq!(si(123_456.0), "123k");
    }

    #[test]
    fn render_shows_every_lock_and_thread_count() {
        let report = json!({
            "machine": {"cpu_model": "Test CPU", "logical_cpus": 2, "rtm": {"summary": "no"}},
            "method": {"uncontended": "u", "contended": "c", "threads": [1, 4], "repeats": 3},
            "locks": [
                {"name": "clh", "origin": "kernel-locks",
                 "uncontended": {"ns_per_op": {"median": 5.0, "min": 4.0, "max": 6.0},
                                 "ticks_per_op": {"median": 15.0, "min": 14.0, "max": 16.0}},
                 "contended": [{"threads": 1, "ops_per_s": {"median": 1e8, "min": 9e7, "max": 1.1e8}}]},
                {"name": "xchg", "origin": "reference", "uncontended": null, "contended": []}
            ],
        });
        let report = json!(results(report, GeneratedBy::default()));
        let text = render(&report);
        assert!(text.contains("clh"), "{text}");
        assert!(text.contains("xchg (reference)"), "{text}");
        assert!(text.contains("100M (90.0M-110M)"), "{text}");
        assert!(text.contains("4 thr ops/s*"), "{text}");
        assert!(
            !text.contains("parity"),
            "no parity section without pairs: {text}"
        );
    }

    #[test]
    fn render_parity_gives_figures_and_verdicts() {
        let report = json!({
            "parity": [
                {"ours": "clh", "peer": "clhlock", "met": true,
                 "uncontended": {"unit": "ticks", "ours": 9.0, "peer": 10.0, "ratio": 0.9,
                                 "rounds_at_or_below_peer": 4, "rounds": 5, "met": true},
                 "contended": [
                    {"threads": 1, "ours_ops_per_s": 1e8, "peer_ops_per_s": 1e8, "ratio": 1.0,
                     "pinned": true},
                    {"threads": 2, "ours_ops_per_s": 2e7, "peer_ops_per_s": 1e7, "ratio": 2.0,
                     "pinned": true, "peer": "clhlock"},
                    {"threads": 3, "ours_ops_per_s": 2e7, "peer_ops_per_s": 1e7, "ratio": 2.0,
                     "pinned": true, "peer": "spin-ticket"}]},
                {"ours": "ticket", "peer": "spin-ticket", "met": false,
                 "uncontended": {"unit": "ticks", "ours": 6.0, "peer": 5.0, "ratio": 1.2,
                                 "rounds_at_or_below_peer": 0, "rounds": 5, "met": false},
                 "contended": [
                    {"threads": 4, "ours_ops_per_s": 1e6, "peer_ops_per_s": 2e6, "ratio": 0.5,
                     "pinned": false}]}
            ],
        });
        let report = json!(results(report, GeneratedBy::default()));
        assert_eq!(report["plan"]["suite"], "host-locks");
        let text = render_parity(&report);
        assert!(
            text.contains("clh vs clhlock: uncontended 9.00 vs 10.00 ticks (-10.0%, ours at or below in 4 of 5 rounds); 2 thr 20.0M vs 10.0M ops/s (+100.0%); 3 thr 20.0M vs spin-ticket 10.0M ops/s (+100.0%): met"),
            "{text}"
        );
        assert!(text.contains("ticket vs spin-ticket"), "{text}");
        let mut noisy = report.clone();
        noisy["summary"][1]["verdict"] = json!("within-noise");
        assert!(
            render_parity(&noisy).contains("not judged): within noise (ours behind"),
            "{}",
            render_parity(&noisy)
        );
        noisy["summary"][1]["verdict"] = json!("not-met");
        assert!(render_parity(&noisy).contains("not judged): NOT met"));
        assert!(
            text.contains("(oversubscribed, not judged): NOT met"),
            "{text}"
        );
        assert!(!text.contains("1 thr"), "{text}");
    }
}
