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
}

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

#[cfg(test)]
mod tests {
    use super::super::fixtures::record;
    use super::*;

    #[test]
    fn what_a_run_writes_passes_and_a_missing_figure_fails() {
        let dir = std::env::temp_dir().join(format!("xtask-check-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let records = vec![
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
        ];
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
        let summary = ipc.check(&dir, 2).unwrap();
        assert!(summary.contains("the 3 figures"), "{summary}");
        assert!(ipc.check(&dir, 3).unwrap_err().contains("2 records"));
        // The memory suite's figures are not there.
        assert!(Outputs::of(true)
            .check(&dir, 2)
            .unwrap_err()
            .contains("fig4-memory-cores.svg"));
        fs::remove_file(dir.join("fig3-clientserver.png")).unwrap();
        assert!(ipc
            .check(&dir, 2)
            .unwrap_err()
            .contains("fig3-clientserver.png"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
