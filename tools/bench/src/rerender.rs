//! `cargo xtask bench report DIR`: a run's `report.md` and figures rendered again from its
//! `results.json`.
//!
//! A report is generated from the records, so it can always be made again from them; that is
//! what keeps the committed results pages (`docs/bench/kernel-ipc/`, `icount-clh/`, `memory/`)
//! honest: [`rerender`] renders the report a run's results give with today's code, `--check`
//! fails when the committed `report.md` differs, and a unit test does the same for every
//! committed run of the IPC and memory suites. The context a report prints (the command, when,
//! how long, the machine, the notes, kernel tracing) comes from the results file's
//! `generated_by`, `machine`, `notes` and `plan`, as the run wrote them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use protocol::results::Results;

use super::records::Record;
use super::report::Context;
use super::{memory, plot, report, REPORT_MD, RESULTS_JSON};
use crate::guest::KernelTrace;

/// Options of `cargo xtask bench report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run's folder (it holds results.json).
    pub dir: PathBuf,

    /// Do not write anything: fail when the folder's report.md is not what its results give.
    #[arg(long)]
    pub check: bool,
}

/// Which suite wrote a results file, by its plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// The IPC suite: [`report::render`], [`plot::write_all`].
    Ipc,
    /// The memory suite: [`memory::render`], [`memory::write_figures`].
    Memory,
}

/// A run read back: its records and the context its report prints.
pub struct Run {
    /// The suite that wrote it.
    pub suite: Suite,
    /// Its records.
    pub records: Vec<Record>,
    /// What its report says about the run.
    pub ctx: Context,
}

/// Reads `dir/results.json` of an IPC or memory run.
pub fn read(dir: &Path) -> Result<Run, String> {
    let path = dir.join(RESULTS_JSON);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: Results<Record> =
        Results::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let suite = match doc.plan["suite"].as_str() {
        Some("ipc") | None => Suite::Ipc,
        Some("memory") => Suite::Memory,
        Some(other) => {
            return Err(format!(
                "{}: a `{other}` run; `bench report` renders the ipc and memory suites' reports",
                path.display()
            ))
        }
    };
    let kernel_trace = match doc.plan["kernel_trace"].as_str() {
        None | Some("off") => KernelTrace::Off,
        Some("built") => KernelTrace::Built,
        Some("on") => KernelTrace::On,
        Some(other) => {
            return Err(format!(
                "{}: unknown kernel_trace `{other}`",
                path.display()
            ))
        }
    };
    let m = &doc.machine;
    let text_of = |key: &str| m[key].as_str().unwrap_or_default().to_string();
    let ctx = Context {
        command: doc.generated_by.command.clone(),
        when: doc.generated_by.utc.clone(),
        notes: doc.notes.clone(),
        machine: format!(
            "{}, {} host cores, {}, {}",
            text_of("cpu"),
            m["host_cores"].as_u64().unwrap_or_default(),
            text_of("qemu"),
            text_of("rustc")
        ),
        seconds: doc.generated_by.seconds,
        kernel_trace,
    };
    Ok(Run {
        suite,
        records: doc.records,
        ctx,
    })
}

/// The report `run` gives with today's code.
pub fn render(run: &Run) -> String {
    match run.suite {
        Suite::Ipc => report::render(&run.records, &run.ctx),
        Suite::Memory => memory::render(&run.records, &run.ctx),
    }
}

/// Renders `dir`'s report and figures again from its results, writing them unless `check`;
/// with `check`, `Err` when the folder's report differs.
pub fn rerender(dir: &Path, check: bool) -> Result<String, String> {
    let run = read(dir)?;
    let text = render(&run);
    let path = dir.join(REPORT_MD);
    if check {
        let held = std::fs::read_to_string(&path).unwrap_or_default();
        return if held == text {
            Ok(format!("{} is what {RESULTS_JSON} gives", path.display()))
        } else {
            Err(format!(
                "{} is not what {RESULTS_JSON} gives with today's code: `cargo xtask bench report {}` renders it again",
                path.display(),
                dir.display()
            ))
        };
    }
    std::fs::write(&path, &text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let figures = match run.suite {
        Suite::Ipc => plot::write_all(dir, &run.records)?,
        Suite::Memory => memory::write_figures(dir, &run.records)?,
    };
    Ok(format!(
        "wrote {} and {} figure files from {RESULTS_JSON}",
        path.display(),
        figures.len()
    ))
}

/// Runs `cargo xtask bench report`.
pub fn run(args: &ReportArgs) -> ExitCode {
    match rerender(&args.dir, args.check) {
        Ok(what) => {
            println!("bench report: {what}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench report: error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every committed run of the IPC and memory suites.
    const COMMITTED: [&str; 3] = [
        "docs/bench/kernel-ipc",
        "docs/bench/icount-clh",
        "docs/bench/memory",
    ];

    #[test]
    fn the_committed_reports_are_what_their_results_give() {
        let root = host_env::workspace_root();
        for dir in COMMITTED {
            if let Err(e) = rerender(&root.join(dir), true) {
                panic!("{e}");
            }
        }
    }

    #[test]
    fn a_folder_without_results_is_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("bench-report-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = rerender(&dir, true).unwrap_err();
        assert!(err.contains("results.json"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
