//! The README's headline table, generated from the committed runs under `docs/bench/`.
//!
//! Each row puts one of our figures beside the seed papers' (or seL4's) and links the page
//! that explains it. Our figures are computed here from the runs' `results.json` files (the
//! IPC, memory and network suites) and the simulator's `validation.json`, so the README cannot
//! drift from the data: it is a generated block ([`crate::generated`]), which `cargo xtask book
//! --update` rewrites and the checks hold to the data.
//! The papers' column is fixed text: their figures come from their hardware.

use std::path::Path;

use serde_json::Value;

/// The committed runs the table reads, relative to the repository.
pub const SOURCES: [&str; 4] = [
    "docs/bench/kernel-ipc/results.json",
    "docs/bench/memory/results.json",
    "docs/bench/redis/results.json",
    "docs/bench/sim/validation.json",
];

/// Reads a JSON file of the repository.
pub(crate) fn read(repo: &Path, rel: &str) -> Result<Value, String> {
    let text = std::fs::read_to_string(repo.join(rel)).map_err(|e| format!("{rel}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{rel}: {e}"))
}

/// The records of a results file.
pub(crate) fn records<'a>(results: &'a Value, rel: &str) -> Result<&'a [Value], String> {
    results["records"]
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| format!("{rel}: no `records` array"))
}

/// Whether a record has every `(field, value)` of `want` (strings or numbers).
pub(crate) fn matches(record: &Value, want: &[(&str, &str)]) -> bool {
    want.iter().all(|(field, value)| match &record[*field] {
        Value::String(s) => s == value,
        Value::Number(n) => n.to_string() == *value,
        _ => false,
    })
}

/// The mean of the one record that matches `want`.
pub(crate) fn mean(records: &[Value], rel: &str, want: &[(&str, &str)]) -> Result<f64, String> {
    let found: Vec<&Value> = records.iter().filter(|r| matches(r, want)).collect();
    match found.as_slice() {
        [one] => one["mean"]
            .as_f64()
            .ok_or_else(|| format!("{rel}: a record {want:?} without a mean")),
        [] => Err(format!("{rel}: no record {want:?}")),
        more => Err(format!(
            "{rel}: {} records {want:?}, expected one",
            more.len()
        )),
    }
}

/// `100 * (a - b) / b`.
pub(crate) fn percent(a: f64, b: f64) -> f64 {
    100.0 * (a - b) / b
}

/// `lo..hi` of an iterator of values, or an error naming what was empty.
pub(crate) fn range(values: impl Iterator<Item = f64>, what: &str) -> Result<(f64, f64), String> {
    values
        .fold(None, |acc: Option<(f64, f64)>, v| {
            Some(acc.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
        })
        .ok_or_else(|| format!("no data for {what}"))
}

/// One row: the question, the papers' figure, ours, and the link to the explanation.
struct Row {
    question: &'static str,
    papers: &'static str,
    ours: String,
    details: &'static str,
}

/// The IPC rows, from the IPC suite's run (QEMU `-icount` instruction counts).
fn ipc_rows(repo: &Path) -> Result<Vec<Row>, String> {
    let rel = SOURCES[0];
    let results = read(repo, rel)?;
    let recs = records(&results, rel)?;
    let round_trip = |board: &str, lock: &str| {
        mean(
            recs,
            rel,
            &[
                ("platform", "qemu-icount"),
                ("board", board),
                ("bench", "ipc-roundtrip"),
                ("variant", "cross-as"),
                ("lock", lock),
                ("cores", "1"),
            ],
        )
    };
    let barriers = |lock: &str| {
        mean(
            recs,
            rel,
            &[
                ("platform", "qemu-icount"),
                ("board", "sabrelite"),
                ("bench", "ipc-barriers"),
                ("lock", lock),
            ],
        )
    };
    let overhead = |board: &str, lock: &str| -> Result<String, String> {
        let (with, none) = (round_trip(board, lock)?, round_trip(board, "none")?);
        Ok(format!(
            "{:+.0}% ({:+.0} instructions)",
            percent(with, none),
            with - none
        ))
    };
    let (b_none, b_clh, b_fine) = (barriers("none")?, barriers("clh")?, barriers("fine")?);
    Ok(vec![
        Row {
            question: "IPC round trip, x86_64, no lock",
            papers: "seL4 fastpath, same QEMU: 421 instructions",
            ours: format!("{:.0} instructions", round_trip("microvm", "none")?),
            details: "[IPC](docs/results.md#kernel-ipc)",
        },
        Row {
            question: "IPC round trip, x86_64, CLH big lock",
            papers: "seL4 SMP build: 566 instructions",
            ours: format!("{:.0} instructions", round_trip("microvm", "clh")?),
            details: "[IPC](docs/results.md#kernel-ipc)",
        },
        Row {
            question: "big lock's overhead, ARM Cortex-A9",
            papers: "+20% (+124 cycles)",
            ours: overhead("sabrelite", "clh")?,
            details: "[report](docs/bench/kernel-ipc/report.md)",
        },
        Row {
            question: "fine-grained overhead, x86_64",
            papers: "about +30%",
            ours: overhead("microvm", "fine")?,
            details: "[report](docs/bench/kernel-ipc/report.md)",
        },
        Row {
            question: "ARM barriers per round trip, big lock / fine",
            papers: "6 / 16",
            ours: format!(
                "{:.0} / {:.0} beyond no lock's {:.0}",
                b_clh - b_none,
                b_fine - b_none,
                b_none
            ),
            details: "[fastpath](docs/bench/ipc-fastpath.md)",
        },
    ])
}

/// The pager row, from the memory suite's run (multi-threaded QEMU, x86_64).
fn memory_row(repo: &Path) -> Result<Row, String> {
    let rel = SOURCES[1];
    let results = read(repo, rel)?;
    let recs = records(&results, rel)?;
    let change = |variant: &str| -> Result<f64, String> {
        let at = |cores: &str| {
            mean(
                recs,
                rel,
                &[
                    ("platform", "qemu"),
                    ("arch", "x86_64"),
                    ("bench", "memory-alloc"),
                    ("variant", variant),
                    ("pages", "100"),
                    ("cores", cores),
                ],
            )
        };
        Ok(percent(at("2")?, at("1")?))
    };
    Ok(Row {
        question: "time per page, 1 to 2 cores, per-core / global pager",
        papers: "48 cores: +4% / +2500%",
        ours: format!(
            "{:+.0}% / {:+.0}% (x86_64, TCG)",
            change("percore")?,
            change("global")?
        ),
        details: "[pagers](docs/results.md#per-core-pagers)",
    })
}

/// The network rows, from the redis suite's run: the strategies' spread at 2 cores and Xput
/// against Linux + Redis.
fn network_rows(repo: &Path) -> Result<Vec<Row>, String> {
    let rel = SOURCES[2];
    let results = read(repo, rel)?;
    let recs = records(&results, rel)?;
    let key = |r: &Value| {
        (
            r["arch"].as_str().unwrap_or_default().to_string(),
            r["cores"].as_u64().unwrap_or_default(),
            r["client"].as_str().unwrap_or_default().to_string(),
            r["workload"].as_str().unwrap_or_default().to_string(),
        )
    };
    let mut points: Vec<_> = recs.iter().map(key).collect();
    points.sort();
    points.dedup();
    let mut ratios = Vec::new();
    let mut spreads = Vec::new();
    for point in &points {
        let here: Vec<&Value> = recs.iter().filter(|r| key(r) == *point).collect();
        let linux = here
            .iter()
            .find(|r| r["lock"] == "linux")
            .and_then(|r| r["xput"].as_f64());
        let ours: Vec<&&Value> = here.iter().filter(|r| r["lock"] != "linux").collect();
        if let Some(linux) = linux {
            ratios.extend(
                ours.iter()
                    .filter_map(|r| r["xput"].as_f64())
                    .map(|x| x / linux),
            );
        }
        if point.1 == 2 && ours.len() > 1 {
            let (lo, hi) = range(
                ours.iter().filter_map(|r| r["ops_per_s"].as_f64()),
                "a spread",
            )?;
            spreads.push(100.0 * (hi - lo) / hi);
        }
    }
    let (r_lo, r_hi) = range(ratios.into_iter(), "Xput against Linux")?;
    let (s_lo, s_hi) = range(spreads.into_iter(), "the spread at 2 cores")?;
    Ok(vec![
        Row {
            question: "Redis throughput across lock strategies",
            papers: "\"independent of the kernel variant\"",
            ours: format!("{s_lo:.0}..{s_hi:.0}% apart at 2 cores"),
            details: "[network](docs/results.md#network-macro-benchmark)",
        },
        Row {
            question: "Xput (throughput / utilisation) against Linux + Redis",
            papers: "-",
            ours: format!("{r_lo:.1}..{r_hi:.1}x Linux's"),
            details: "[network](docs/results.md#network-macro-benchmark)",
        },
    ])
}

/// The simulator row: the largest error of a one-core replay, over every lock and run.
fn simulator_row(repo: &Path) -> Result<Row, String> {
    let rel = SOURCES[3];
    let validation = read(repo, rel)?;
    let locks = validation["locks"]
        .as_array()
        .ok_or_else(|| format!("{rel}: no `locks` array"))?;
    let worst = |lock: Option<&str>| {
        range(
            locks
                .iter()
                .filter(|l| lock.is_none_or(|want| l["lock"] == want))
                .flat_map(|l| l["runs"].as_array().into_iter().flatten())
                .filter_map(|run| run["replay_one_core_error"].as_f64())
                .map(|e| 100.0 * e.abs()),
            "one-core replays",
        )
        .map(|(_, hi)| hi)
    };
    Ok(Row {
        question: "trace replay on the recorded core",
        papers: "within 1..6%",
        ours: format!(
            "within {:.1}% (CLH within {:.1}%)",
            worst(None)?,
            worst(Some("clh"))?
        ),
        details: "[simulator](docs/results.md#simulator-validation)",
    })
}

/// The table, as Markdown lines.
pub fn render(repo: &Path) -> Result<String, String> {
    let mut rows = ipc_rows(repo)?;
    rows.push(memory_row(repo)?);
    rows.extend(network_rows(repo)?);
    rows.push(simulator_row(repo)?);
    let mut out =
        String::from("| question | the papers (or seL4) | ours | details |\n|---|---|---|---|\n");
    for row in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            row.question, row.papers, row.ours, row.details
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_found_by_their_fields() {
        let recs: Vec<Value> = serde_json::from_str(
            r#"[{"lock":"clh","cores":1,"mean":10.0},{"lock":"none","cores":1,"mean":8.0},{"lock":"none","cores":2,"mean":4.0}]"#,
        )
        .unwrap();
        assert_eq!(
            mean(&recs, "t", &[("lock", "none"), ("cores", "1")]),
            Ok(8.0)
        );
        assert!(mean(&recs, "t", &[("lock", "none")])
            .unwrap_err()
            .contains("2 records"));
        assert!(mean(&recs, "t", &[("lock", "rtm")])
            .unwrap_err()
            .contains("no record"));
    }
}
