//! `--check`: reads every output file back and checks that it is what the run meant to write.

use std::fs;
use std::path::Path;

use serde_json::Value;

use super::records::Record;

/// What a run of one suite writes: the figures' stems and the report's sections.
#[derive(Clone, Copy, Debug)]
pub struct Outputs {
    /// The figures, each written as `.svg` and `.png`.
    pub stems: &'static [&'static str],
    /// Sections the report must have.
    pub sections: &'static [&'static str],
    /// Records that come together from one guest boot: where a guest point (platform other
    /// than hosted, arch, board, lock, cores) has a record of the first bench, it must have one
    /// of the second.
    pub together: &'static [(&'static str, &'static str)],
}

/// The IPC suite's records that one guest boot makes together: `bench=ipc` times the null
/// system call after the round trips, and the image times its lock pairs at boot, plainly and
/// interrupt-safely.
const IPC_TOGETHER: [(&str, &str); 4] = [
    ("ipc-roundtrip", "null-syscall"),
    ("ipc-roundtrip", "lock-pair"),
    ("lock-pair", "lock-pair-irqsave"),
    ("lock-pair", "lock-pair-irqsave-masked"),
];

/// The report sections every suite writes.
const SECTIONS: [&str; 3] = [
    "## Our figures next to the papers'",
    "## Targets",
    "## Machine and method",
];

impl Outputs {
    /// The outputs of the IPC suite, or of the memory suite when `memory` is set.
    pub fn of(memory: bool) -> Outputs {
        Outputs {
            stems: if memory {
                &super::memory::STEMS
            } else {
                &super::plot::STEMS
            },
            sections: &SECTIONS,
            together: if memory { &[] } else { &IPC_TOGETHER },
        }
    }

    /// Every file the run writes (removed first, so a stale one cannot pass).
    pub fn files(&self) -> Vec<String> {
        [super::RESULTS_JSON, super::RESULTS_CSV, super::REPORT_MD]
            .into_iter()
            .map(String::from)
            .chain(
                self.stems
                    .iter()
                    .flat_map(|s| [format!("{s}.svg"), format!("{s}.png")]),
            )
            .collect()
    }

    /// Checks the files in `dir` for `records` records; returns a one-line summary.
    pub fn check(&self, dir: &Path, records: usize) -> Result<String, String> {
        outputs(dir, records, self)
    }
}

/// Checks the files in `dir` for `records` records written as `expected` says.
fn outputs(dir: &Path, records: usize, expected: &Outputs) -> Result<String, String> {
    let read = |name: &str| fs::read(dir.join(name)).map_err(|e| format!("{name}: {e}"));
    let text = |name: &str| {
        read(name).and_then(|b| String::from_utf8(b).map_err(|e| format!("{name}: {e}")))
    };

    let json: Value = serde_json::from_str(&text(super::RESULTS_JSON)?)
        .map_err(|e| format!("{}: {e}", super::RESULTS_JSON))?;
    let parsed: Vec<Record> = serde_json::from_value(json["records"].clone())
        .map_err(|e| format!("{}: records: {e}", super::RESULTS_JSON))?;
    if parsed.len() != records {
        return Err(format!(
            "{}: {} records, the run made {records}",
            super::RESULTS_JSON,
            parsed.len()
        ));
    }
    for r in &parsed {
        if r.samples.len() != r.runs || r.machine.cpu.is_empty() || r.method.is_empty() {
            return Err(format!(
                "{}: record {} {} {} is incomplete",
                super::RESULTS_JSON,
                r.platform,
                r.bench,
                r.lock
            ));
        }
    }

    together(&parsed, expected.together)?;

    let rows = super::csv::parse(&text(super::RESULTS_CSV)?)
        .map_err(|e| format!("{}: {e}", super::RESULTS_CSV))?;
    if rows.first().map(Vec::as_slice) != Some(&super::csv::HEADER.map(String::from)[..]) {
        return Err(format!("{}: wrong header", super::RESULTS_CSV));
    }
    if rows.len() != records + 1 || rows.iter().any(|r| r.len() != super::csv::HEADER.len()) {
        return Err(format!(
            "{}: {} rows for {records} records, or a row of the wrong width",
            super::RESULTS_CSV,
            rows.len()
        ));
    }

    let report = text(super::REPORT_MD)?;
    for &needle in expected.sections {
        if !report.contains(needle) {
            return Err(format!("{}: no `{needle}` section", super::REPORT_MD));
        }
    }

    for stem in expected.stems {
        let svg = text(&format!("{stem}.svg"))?;
        if !svg.starts_with("<svg") || !svg.trim_end().ends_with("</svg>") {
            return Err(format!("{stem}.svg is not an SVG document"));
        }
        let png = read(&format!("{stem}.png"))?;
        if png.len() < 1000 || !png.starts_with(b"\x89PNG\r\n\x1a\n") {
            return Err(format!("{stem}.png is not a PNG image"));
        }
    }
    Ok(format!(
        "{records} records in {} and {}, report and the {} figures (SVG, PNG) read back",
        super::RESULTS_JSON,
        super::RESULTS_CSV,
        expected.stems.len()
    ))
}

/// Checks that every guest point with a record of the first bench of a pair in `pairs` has
/// one of the second ([`Outputs::together`]).
fn together(records: &[Record], pairs: &[(&str, &str)]) -> Result<(), String> {
    let point = |r: &Record| {
        (
            r.platform.clone(),
            r.arch.clone(),
            r.board.clone(),
            r.lock.clone(),
            r.cores,
        )
    };
    for &(have, need) in pairs {
        for r in records
            .iter()
            .filter(|r| r.bench == have && r.platform != "hosted")
        {
            if !records
                .iter()
                .any(|o| o.bench == need && point(o) == point(r))
            {
                return Err(format!(
                    "{}: {} {} {} lock {} cores {} has `{have}` but no `{need}` record (the \
                     guest's bench=ipc times both)",
                    super::RESULTS_JSON,
                    r.platform,
                    r.arch,
                    r.board,
                    r.lock,
                    r.cores
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::record;
    use super::*;

    #[test]
    fn what_a_run_writes_passes_and_a_missing_figure_fails() {
        let dir = std::env::temp_dir().join(format!("xtask-check-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let mut records = vec![
            record(
                "ipc-roundtrip",
                "x86_64",
                "qemu-icount",
                "none",
                1,
                &[1750.0; 2],
            ),
            record(
                "ipc-roundtrip",
                "x86_64",
                "qemu-icount",
                "clh",
                1,
                &[1850.0; 2],
            ),
            record(
                "null-syscall",
                "x86_64",
                "qemu-icount",
                "none",
                1,
                &[300.0; 2],
            ),
            record(
                "null-syscall",
                "x86_64",
                "qemu-icount",
                "clh",
                1,
                &[320.0; 2],
            ),
            // The hosted benchmark has no null-syscall record.
            record("ipc-roundtrip", "x86_64", "hosted", "clh", 1, &[250.0; 2]),
        ];
        for r in &mut records[2..4] {
            r.variant = String::new();
        }
        // The image's lock pairs, timed at each boot.
        for lock in ["none", "clh"] {
            for (bench, n) in [
                ("lock-pair", 9.0),
                ("lock-pair-irqsave", 17.0),
                ("lock-pair-irqsave-masked", 14.0),
            ] {
                let mut r = record(bench, "x86_64", "qemu-icount", lock, 1, &[n; 2]);
                r.variant = "ticket".into();
                records.push(r);
            }
        }
        let doc = serde_json::json!({ "records": records });
        fs::write(dir.join(super::super::RESULTS_JSON), doc.to_string()).unwrap();
        fs::write(
            dir.join(super::super::RESULTS_CSV),
            super::super::csv::write(&records),
        )
        .unwrap();
        fs::write(
            dir.join(super::super::REPORT_MD),
            super::super::report::render(&records, &Default::default()),
        )
        .unwrap();
        let figures = super::super::plot::write_all(&dir, &records).unwrap();
        // Every figure is an output the run removes first.
        let ipc = Outputs::of(false);
        for f in &figures {
            let name = f.file_name().unwrap().to_str().unwrap().to_owned();
            assert!(ipc.files().contains(&name), "{name}");
        }
        let summary = ipc.check(&dir, 11).unwrap();
        assert!(summary.contains("the 3 figures"), "{summary}");
        assert!(ipc.check(&dir, 3).unwrap_err().contains("11 records"));
        // The memory suite's figures are not there.
        assert!(Outputs::of(true)
            .check(&dir, 11)
            .unwrap_err()
            .contains("memory-cores.svg"));
        // A guest boot's round trips without its null system call, or its lock pairs without
        // one of their interrupt-safe records, fail the check.
        for (bench, lock, err_text) in [
            (
                "null-syscall",
                "clh",
                "qemu-icount x86_64 microvm lock clh cores 1 has `ipc-roundtrip` but no \
                 `null-syscall`",
            ),
            (
                "lock-pair",
                "none",
                "qemu-icount x86_64 microvm lock none cores 1 has `ipc-roundtrip` but no \
                 `lock-pair`",
            ),
            (
                "lock-pair-irqsave-masked",
                "clh",
                "qemu-icount x86_64 microvm lock clh cores 1 has `lock-pair` but no \
                 `lock-pair-irqsave-masked`",
            ),
        ] {
            let without: Vec<_> = records
                .iter()
                .filter(|r| !(r.bench == bench && r.lock == lock))
                .cloned()
                .collect();
            let doc = serde_json::json!({ "records": without });
            fs::write(dir.join(super::super::RESULTS_JSON), doc.to_string()).unwrap();
            let err = ipc.check(&dir, without.len()).unwrap_err();
            assert!(err.contains(err_text), "{err}");
        }
        let doc = serde_json::json!({ "records": records });
        fs::write(dir.join(super::super::RESULTS_JSON), doc.to_string()).unwrap();
        fs::remove_file(dir.join("clientserver-throughput.png")).unwrap();
        assert!(ipc
            .check(&dir, 11)
            .unwrap_err()
            .contains("clientserver-throughput.png"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
