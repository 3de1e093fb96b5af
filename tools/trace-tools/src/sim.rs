//! `cargo xtask sim`: replays a kernel lock trace on 1..N simulated cores (the `sim` crate's
//! discrete-event simulator) and writes what it predicts, with the trace's analysis:
//! `analysis.json`, `sweep.json` and `sweep.svg` (throughput against simulated cores, one line
//! per lock strategy, the recorded run as a point) in `--out`.
//!
//! The lock's own latency is measured from the trace (the median uncontended request-to-acquire
//! time) unless `--config` gives a configuration (JSON, `sim::config::Config`). The cache model
//! is on with measured parameters when `--calibration` gives a calibration file
//! (`sim::config::Calibration`); `--calibrate` measures one on this machine first (the `tests`
//! crate's `calibrate` example), and `--validate` checks the simulator's predictions against
//! measured runs ([`crate::simval`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bench::plot::{svg_and_png, Drawing};
use clap::Args;
use plotters::prelude::*;
use sim::config::{CacheModel, Calibration, Config, KernelLock, LockLatency, LockStrategy};
use sim::trace::{Strategy as TraceStrategy, Trace};

use host_env::proc::Cmd;

/// Options of `cargo xtask sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// The trace file (`cargo xtask trace locks --hosted` writes one; format: `sim::trace`).
    /// Without it (and without --calibrate or --validate), a trace is recorded first, as
    /// `cargo xtask trace locks --hosted` does: the IPC ping-pong on 2 host threads in the hosted
    /// harness with --lock (clh, ticket or fine; default clh), written to
    /// <out>/hosted-<lock>-2cores.trace (a release build of the `tests` crate first, about a
    /// minute the first time; the recording itself takes a few seconds).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// A simulator configuration (JSON: simulated_cores, strategy, lock_latency,
    /// mode_switch_cost, cache); its strategy and core count are replaced by the sweep's.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Turn the cache model on with measured parameters: a calibration file (JSON,
    /// `sim::config::Calibration`; --calibrate writes one). The model of --lock replaces the
    /// configuration's cache model. With --calibrate: where to write it.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,

    /// The kernel lock the trace was recorded with: picks the calibration's model [default:
    /// from the trace's header for fine and none; a big-lock trace needs clh or ticket].
    #[arg(long, value_parser = parse_lock)]
    pub lock: Option<KernelLock>,

    /// First measure the cache model's parameters on this machine (line and lock hand-off
    /// between CPUs 0 and 1, kernel entries after another core's: `cargo run --release -p
    /// tests --features trace --example calibrate`, about a second after the build) and write
    /// them to --calibration [default: <out>/calibration.json].
    #[arg(long)]
    pub calibrate: bool,

    /// With --calibrate: the short calibration (fewer samples, one kernel run; for tests).
    #[arg(long, requires = "calibrate")]
    pub quick: bool,

    /// Validate the simulator: record the hosted IPC workload on 1 and 2 cores (--runs times,
    /// each kernel lock), predict 2 cores from each 1-core trace with and without the cache
    /// model, compare with the measured 2-core runs, and predict Figure 2 (1..--max-cores):
    /// validation.json, sim-predicted-throughput.json and sim-predicted-throughput.svg in --out. Needs
    /// --calibration or --calibrate.
    #[arg(long)]
    pub validate: bool,

    /// With --validate: runs per kernel lock and core count.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..=20))]
    pub runs: u16,

    /// With --validate: messages each caller sends per run (the trace rings hold 30000).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(100..=30_000))]
    pub per: u32,

    /// The largest simulated core count of the sweep (1..=64).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub max_cores: u16,

    /// Where to write analysis.json, sweep.json, sweep.svg and sweep.png [default: target/sim].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// The lock a trace's header implies, if it does (a big-lock trace does not say which).
pub fn lock_of_trace(t: &Trace) -> Option<KernelLock> {
    match t.strategy {
        TraceStrategy::FineGrained => Some(KernelLock::Fine),
        TraceStrategy::None => Some(KernelLock::None),
        TraceStrategy::BigLock | TraceStrategy::Rtm => None,
    }
}

/// `--lock`'s parser.
fn parse_lock(s: &str) -> Result<KernelLock, String> {
    KernelLock::parse(s).ok_or_else(|| {
        let names: Vec<_> = KernelLock::ALL.iter().map(|l| l.name()).collect();
        format!("unknown lock \"{s}\"; valid ones: {}", names.join(", "))
    })
}

/// Runs `cargo xtask sim`.
pub fn run(root: &Path, args: &SimArgs) -> ExitCode {
    host_env::exit_code("sim", run_inner(root, args))
}

/// Reads and checks a calibration file.
pub fn read_calibration(path: &Path) -> Result<Calibration, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Calibration::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The calibration's cache model for the kernel lock `lock`, or the one `trace` implies.
pub fn model_for(
    cal: &Calibration,
    lock: Option<KernelLock>,
    trace: &Trace,
) -> Result<CacheModel, String> {
    let lock = lock.or_else(|| lock_of_trace(trace)).ok_or(
        "a big-lock trace does not say which lock it was recorded with: give --lock clh or \
         --lock ticket",
    )?;
    cal.model(lock.name())
        .map_err(|e| format!("{e}: {}", lock.name()))
}

/// `cargo <verb> --release -q -p tests --features trace --example <example>`: the traced
/// hosted examples (`trace_hosted`, `calibrate`) that `trace --hosted` and `sim` run; `run`
/// gets `--` appended so that the example's own arguments follow.
pub fn traced_example(verb: &str, example: &str) -> Cmd {
    let cmd = Cmd::cargo().args([
        verb,
        "--release",
        "-q",
        "-p",
        "tests",
        "--features",
        "trace",
        "--example",
        example,
    ]);
    if verb == "run" {
        cmd.arg("--")
    } else {
        cmd
    }
}

/// Host threads `cargo xtask sim` records its trace on when given none.
const RECORD_CORES: u16 = 2;

/// Records a kernel lock trace in the hosted harness (the `tests` crate's `trace_hosted`
/// example, release build, its progress on the terminal) on `cores` host threads, with the
/// example's other arguments `args`, into `file`.
pub fn record_hosted(root: &Path, cores: u16, args: &[&str], file: &Path) -> Result<(), String> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let cmd = traced_example("run", "trace_hosted")
        .args(["--cores", &cores.to_string()])
        .args(args.iter().copied())
        .arg("--out")
        .arg(file);
    let status = cmd
        .run_inherited(root)
        .map_err(|e| format!("{}: {e}", cmd.display()))?;
    if !status.success() {
        return Err(format!("recording the hosted trace failed ({status})"));
    }
    Ok(())
}

/// Runs the calibration benchmark (`tests`' `calibrate` example, release build), its progress
/// on the terminal, writing `file`.
pub fn calibrate(root: &Path, file: &Path, quick: bool) -> Result<Calibration, String> {
    eprintln!(
        "sim: calibrating the cache model on this machine (cargo run --release -p tests \
         --features trace --example calibrate -- --out {}{})",
        file.display(),
        if quick { " --quick" } else { "" }
    );
    let mut cmd = traced_example("run", "calibrate").arg("--out").arg(file);
    if quick {
        cmd = cmd.arg("--quick");
    }
    let status = cmd
        .run_inherited(root)
        .map_err(|e| format!("{}: {e}", cmd.display()))?;
    if !status.success() {
        return Err(format!("the calibration failed ({status})"));
    }
    read_calibration(file)
}

/// Reads, analyses and sweeps a trace; writes the three files into `out`. `calibration`: a
/// calibration and the kernel lock whose model replaces the configuration's cache model (see
/// [`model_for`]).
pub fn analyse_and_sweep(
    trace_file: &Path,
    config: Option<&Path>,
    calibration: Option<(&Calibration, Option<KernelLock>)>,
    max: u16,
    out: &Path,
) -> Result<(), String> {
    let bytes = std::fs::read(trace_file).map_err(|e| format!("{}: {e}", trace_file.display()))?;
    let trace =
        Trace::from_bytes(&bytes).map_err(|e| format!("{}: {e:?}", trace_file.display()))?;
    let mut base = match config {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            Config::from_json(&text).map_err(|e| format!("{}: {e}", p.display()))?
        }
        // The recording kernel's own strategy: its replay on the recorded cores is the check.
        None => Config {
            lock_latency: LockLatency::measured(&trace),
            ..Config::new(1, trace.strategy.replayed_as())
        },
    };
    if let Some((cal, lock)) = calibration {
        base.cache = model_for(cal, lock, &trace)?;
        let m = &base.cache;
        eprintln!(
            "sim: cache model on: {} + {} lines of {} cycles per kernel entry after another \
             core's (before the lock + in it), lock hand-off {} cycles",
            m.pre_lock_lines, m.entry_lines, m.line_transfer, m.lock_handoff
        );
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let report = sim::analysis::analyse(&trace);
    write(&out.join("analysis.json"), &report.to_json())?;
    let t = &report.total;
    eprintln!(
        "sim: trace {}: {} entries on {} cores at {} Hz; {:.0} syscalls/s per core, {:.1}% of the time in the kernel, {:.1}% in the lock, contention {:.1}%",
        trace_file.display(),
        t.entries,
        trace.cores,
        trace.frequency_hz,
        t.syscall_rate_per_s,
        t.kernel_fraction * 100.0,
        t.lock_fraction * 100.0,
        t.contention_probability * 100.0
    );
    if t.object_locks > 0 {
        eprintln!(
            "sim: object locks: {:.2} per entry, {:.1} cycles waited per lock{}",
            t.object_locks as f64 / t.entries.max(1) as f64,
            t.object_lock_wait_cycles as f64 / t.object_locks as f64,
            if t.objects_truncated > 0 {
                format!(
                    "; {} entries took more than {} (the first ones kept)",
                    t.objects_truncated,
                    sim::trace::MAX_OBJECTS
                )
            } else {
                String::new()
            }
        );
    }
    if t.rtm_committed + t.rtm_fell_back > 0 {
        eprintln!(
            "sim: RTM: {} sections committed, {} fell back, {} aborted attempts",
            t.rtm_committed, t.rtm_fell_back, t.rtm_retries
        );
    }
    let recorded = sim::simulate::recorded_throughput(&trace);
    let own = sim::simulate::simulate(
        &trace,
        &Config {
            simulated_cores: usize::from(trace.cores),
            ..base.clone()
        },
    )
    .map_err(|e| format!("replay: {e:?}"))?;
    let recorded_cycles = trace.end() - trace.start();
    eprintln!(
        "sim: replay on the recorded {} cores: {} cycles against {} recorded ({:+.1}%)",
        trace.cores,
        own.run_cycles,
        recorded_cycles,
        (own.run_cycles as f64 / recorded_cycles.max(1) as f64 - 1.0) * 100.0
    );
    // Per-object locks only where the trace names them (a fine-grained kernel's trace):
    // without them the strategy would replay as no lock.
    let strategies: &[LockStrategy] = if t.object_locks > 0 {
        &[
            LockStrategy::BigLock,
            LockStrategy::FineGrained,
            LockStrategy::NoLock,
        ]
    } else {
        &[LockStrategy::BigLock, LockStrategy::NoLock]
    };
    let sweep = sim::simulate::sweep(&trace, &base, 1..=usize::from(max), strategies)
        .map_err(|e| format!("sweep: {e:?}"))?;
    write(&out.join("sweep.json"), &sweep.to_json())?;
    for &s in strategies {
        let pts: Vec<_> = sweep.points.iter().filter(|p| p.strategy == s).collect();
        let at = |k: usize| {
            pts.iter()
                .find(|p| p.simulated_cores == k)
                .map(|p| p.throughput_per_s)
        };
        eprintln!(
            "sim: {s:?}: entries/s at 1, 2, 4, 8, 16, 32, 64 cores: {}",
            [1, 2, 4, 8, 16, 32, 64]
                .iter()
                .filter(|&&k| k <= usize::from(max))
                .map(|&k| at(k).map_or("-".into(), |v| format!("{v:.3e}")))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    plot(
        &out.join("sweep.svg"),
        &sweep,
        (usize::from(trace.cores), recorded),
    )?;
    eprintln!(
        "sim: wrote analysis.json, sweep.json, sweep.svg and sweep.png to {}",
        out.display()
    );
    Ok(())
}

fn run_inner(root: &Path, args: &SimArgs) -> Result<(), String> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| host_env::target_dir(root).join("sim"));
    let cal_file = args
        .calibration
        .clone()
        .unwrap_or_else(|| out.join("calibration.json"));
    let cal = if args.calibrate {
        if let Some(dir) = cal_file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        Some(calibrate(root, &cal_file, args.quick)?)
    } else if let Some(p) = &args.calibration {
        Some(read_calibration(p)?)
    } else {
        None
    };
    if args.validate {
        let cal = cal.as_ref().ok_or(
            "--validate compares predictions with and without the cache model: give \
             --calibration FILE or --calibrate",
        )?;
        crate::simval::validate(
            root,
            cal,
            &crate::simval::Plan {
                runs: usize::from(args.runs),
                per: args.per as usize,
                max_cores: usize::from(args.max_cores),
            },
            &out,
        )?;
    }
    let recorded;
    let trace = match &args.trace {
        Some(file) => Some(file),
        None if !args.calibrate && !args.validate => {
            let lock = args.lock.unwrap_or(KernelLock::Clh);
            if lock == KernelLock::None {
                return Err(
                    "sim records its trace with --lock clh, ticket or fine (a kernel without a \
                     lock has no lock to trace); or give --trace FILE"
                        .into(),
                );
            }
            let file = out.join(format!("hosted-{}-{RECORD_CORES}cores.trace", lock.name()));
            eprintln!(
                "sim: no --trace given: recording one in the hosted harness ({} lock, \
                 {RECORD_CORES} cores) into {}",
                lock.name(),
                file.display()
            );
            record_hosted(root, RECORD_CORES, &["--lock", lock.name()], &file)?;
            recorded = file;
            Some(&recorded)
        }
        None => None,
    };
    if let Some(trace) = trace {
        analyse_and_sweep(
            trace,
            args.config.as_deref(),
            cal.as_ref().map(|c| (c, args.lock)),
            args.max_cores,
            &out,
        )?;
    }
    Ok(())
}

/// Writes `text` to `path`; the error names the file.
pub(crate) fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Clears `root` to white and starts a chart on it: `caption` on top, `margin` pixels around,
/// label areas of `labels` (x, y) pixels. The error names `path`, the file `root` writes.
pub(crate) fn chart_frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    margin: i32,
    labels: (i32, i32),
    path: &Path,
) -> Result<ChartBuilder<'a, 'b, DB>, String> {
    root.fill(&WHITE)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(caption, ("sans-serif", 20))
        .margin(margin)
        .x_label_area_size(labels.0)
        .y_label_area_size(labels.1);
    Ok(builder)
}

/// Draws the series labels of `chart` at `position`, bordered, on white of `opacity`, then
/// writes `root` out to `path` (which the errors name).
pub(crate) fn legend_and_present<
    'a,
    DB: DrawingBackend + 'a,
    CT: plotters::coord::CoordTranslate,
>(
    mut chart: ChartContext<'a, DB, CT>,
    root: &DrawingArea<DB, plotters::coord::Shift>,
    position: SeriesLabelPosition,
    opacity: f64,
    path: &Path,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(opacity))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

/// Throughput against simulated cores, one line per strategy, and the recorded run: `path`
/// as SVG and beside it as PNG.
fn plot(path: &Path, sweep: &sim::simulate::Sweep, recorded: (usize, f64)) -> Result<(), String> {
    svg_and_png(path, (900, 560), &SweepChart { sweep, recorded }).map(|_| ())
}

/// The chart [`plot`] draws: a sweep and the recorded run (cores, entries per second).
struct SweepChart<'a> {
    sweep: &'a sim::simulate::Sweep,
    recorded: (usize, f64),
}

impl Drawing for SweepChart<'_> {
    fn draw<DB: DrawingBackend>(
        &self,
        root: DrawingArea<DB, plotters::coord::Shift>,
        path: &Path,
    ) -> Result<(), String> {
        draw(root, path, self.sweep, self.recorded)
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    path: &Path,
    sweep: &sim::simulate::Sweep,
    recorded: (usize, f64),
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let max_k = sweep
        .points
        .iter()
        .map(|p| p.simulated_cores)
        .max()
        .unwrap_or(1) as f64;
    let max_y = sweep
        .points
        .iter()
        .map(|p| p.throughput_per_s)
        .fold(recorded.1, f64::max)
        * 1.1;
    let mut chart = chart_frame(
        &root,
        "Predicted kernel entries per second vs simulated cores",
        12,
        (40, 80),
        path,
    )?
    .build_cartesian_2d(1f64..max_k.max(2.0), 0f64..max_y.max(1.0))
    .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.1e}"))
        .x_desc("simulated cores")
        .y_desc("entries / s")
        .draw()
        .map_err(|e| err(&e))?;
    for (i, s) in [
        LockStrategy::BigLock,
        LockStrategy::FineGrained,
        LockStrategy::NoLock,
    ]
    .into_iter()
    .enumerate()
    {
        let pts: Vec<(f64, f64)> = sweep
            .points
            .iter()
            .filter(|p| p.strategy == s)
            .map(|p| (p.simulated_cores as f64, p.throughput_per_s))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let c = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(format!("{s:?}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
    }
    chart
        .draw_series(std::iter::once(Circle::new(
            (recorded.0 as f64, recorded.1),
            5,
            BLACK.filled(),
        )))
        .map_err(|e| err(&e))?
        .label("recorded")
        .legend(|(x, y)| Circle::new((x + 10, y), 4, BLACK.filled()));
    // The position plotters places series labels at by default.
    legend_and_present(chart, &root, SeriesLabelPosition::MiddleRight, 0.8, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use sim::config::{EntryCosts, LockCosts};
    use sim::trace::Record;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn parse(args: &[&str]) -> Result<SimArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("sim").chain(args.iter().copied())).map(|c| c.sim)
    }

    #[test]
    fn options_take_a_trace_or_record_one() {
        // No --trace: a hosted trace is recorded first (with --lock, default clh).
        let a = parse(&[]).unwrap();
        assert!(a.trace.is_none() && !a.calibrate && !a.validate);
        assert_eq!(
            parse(&["--lock", "fine"]).unwrap().lock,
            Some(KernelLock::Fine)
        );
        assert!(parse(&["--trace", "t"]).is_ok());
        let a = parse(&["--calibrate", "--quick"]).unwrap();
        assert!(a.calibrate && a.quick && a.trace.is_none());
        assert!(
            parse(&["--trace", "t", "--quick"]).is_err(),
            "--quick without --calibrate"
        );
        let a = parse(&["--validate", "--calibration", "c.json"]).unwrap();
        assert_eq!((a.runs, a.per, a.max_cores), (3, 10_000, 64));
        assert!(parse(&["--validate", "--per", "40000"]).is_err());
        let a = parse(&["--trace", "t", "--calibration", "c", "--lock", "ticket"]).unwrap();
        assert_eq!(a.lock, Some(KernelLock::Ticket));
        assert!(parse(&["--trace", "t", "--lock", "rtm"]).is_err());
    }

    fn calibration() -> Calibration {
        let entry = |alt| EntryCosts {
            one_core: 200.0,
            alternating: alt,
            runs: 1,
        };
        let lock = LockCosts {
            uncontended: 6.0,
            cold_extra: 50.0,
            handoff: 150.0,
        };
        let models = [
            ("clh", Calibration::derive(90.0, Some(&lock), &entry(380.0))),
            (
                "ticket",
                Calibration::derive(90.0, Some(&lock), &entry(335.0)),
            ),
            ("fine", Calibration::derive(90.0, None, &entry(290.0))),
            ("none", Calibration::derive(90.0, None, &entry(245.0))),
        ];
        Calibration {
            machine: "test".into(),
            method: "by hand".into(),
            unix_time: 0,
            frequency_hz: 1_000_000_000,
            line_transfer: 90.0,
            locks: [
                ("clh".to_string(), lock.clone()),
                ("ticket".to_string(), lock),
            ]
            .into(),
            entries: models
                .iter()
                .map(|(k, _)| (k.to_string(), entry(300.0)))
                .collect(),
            models: models.iter().map(|(k, m)| (k.to_string(), *m)).collect(),
        }
    }

    fn trace(strategy: TraceStrategy) -> Trace {
        Trace {
            cores: 1,
            strategy,
            frequency_hz: 1_000_000_000,
            records: vec![Record {
                entry: 1000,
                exit: 100,
                lock_acquired: 10,
                lock_released: 90,
                ..Record::EMPTY
            }],
        }
    }

    #[test]
    fn the_calibrations_model_follows_the_lock() {
        let cal = calibration();
        let big = trace(TraceStrategy::BigLock);
        // A big-lock trace does not say which lock: --lock must.
        let e = model_for(&cal, None, &big).unwrap_err();
        assert!(e.contains("--lock"), "{e}");
        let clh = model_for(&cal, Some(KernelLock::Clh), &big).unwrap();
        let ticket = model_for(&cal, Some(KernelLock::Ticket), &big).unwrap();
        // 180 and 135 cycles more per entry: 2 and 1.5 lines of 90, one of them before the lock.
        assert_eq!((clh.pre_lock_lines, clh.entry_lines), (1.0, 1.0));
        assert_eq!((ticket.pre_lock_lines, ticket.entry_lines), (1.0, 0.5));
        assert_eq!(clh.lock_handoff, 97);
        // Fine-grained and lock-free traces say so themselves; --lock still wins.
        let fine = model_for(&cal, None, &trace(TraceStrategy::FineGrained)).unwrap();
        assert_eq!((fine.entry_lines, fine.lock_handoff), (0.0, 0));
        assert_eq!(fine.pre_lock_lines, 1.0);
        let none = model_for(&cal, None, &trace(TraceStrategy::None)).unwrap();
        assert_eq!((none.pre_lock_lines, none.entry_lines), (0.5, 0.0));
        assert_eq!(
            model_for(&cal, Some(KernelLock::Clh), &trace(TraceStrategy::None)).unwrap(),
            clh
        );
        // A calibration without the lock's model is an error, not a silent default.
        let mut partial = cal.clone();
        partial.models.remove("ticket");
        assert!(model_for(&partial, Some(KernelLock::Ticket), &big).is_err());
    }

    #[test]
    fn a_calibration_file_turns_the_model_on_in_the_sweep() {
        let dir = std::env::temp_dir().join(format!("xtask-sim-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cal_file = dir.join("calibration.json");
        std::fs::write(&cal_file, calibration().to_json()).unwrap();
        let cal = read_calibration(&cal_file).unwrap();
        assert_eq!(cal, calibration());
        // Two cores, each entering every 1000 cycles for 300 cycles in the lock.
        let records = (0..200u64)
            .flat_map(|i| {
                [0u16, 1].map(|c| Record {
                    entry: i * 1000 + u64::from(c) * 500,
                    lock_acquired: 10,
                    lock_released: 300,
                    exit: 320,
                    core: c,
                    ..Record::EMPTY
                })
            })
            .collect();
        let t = Trace {
            cores: 2,
            strategy: TraceStrategy::FineGrained,
            frequency_hz: 1_000_000_000,
            records,
        };
        let trace_file = dir.join("t.trace");
        std::fs::write(&trace_file, t.to_bytes()).unwrap();
        let sweep_of = |with: bool| {
            let out = dir.join(if with { "on" } else { "off" });
            let calibration = with.then_some((&cal, None));
            analyse_and_sweep(&trace_file, None, calibration, 4, &out).unwrap();
            let s: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap())
                    .unwrap();
            s
        };
        let (off, on) = (sweep_of(false), sweep_of(true));
        assert_eq!(off["cache_model"], false);
        assert_eq!(on["cache_model"], true);
        let at = |s: &serde_json::Value, k: u64| {
            s["points"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["strategy"] == "no_lock" && p["simulated_cores"] == k)
                .unwrap()["throughput_per_s"]
                .as_f64()
                .unwrap()
        };
        // One core never pays; more cores do.
        assert_eq!(at(&off, 1), at(&on, 1));
        assert!(at(&on, 2) < at(&off, 2));
        assert!(at(&on, 4) < at(&off, 4));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
