//! `cargo xtask sim`: replays a kernel lock trace on 1..N simulated cores (the `sim` crate's
//! discrete-event simulator, issue 12) and writes what it predicts, with the trace's analysis:
//! `analysis.json`, `sweep.json` and `sweep.svg` (throughput against simulated cores, one line
//! per lock strategy, the recorded run as a point) in `--out`.
//!
//! The lock's own latency is measured from the trace (the median uncontended request-to-acquire
//! time) unless `--config` gives a configuration (JSON, `sim::config::Config`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use plotters::prelude::*;
use sim::config::{Config, LockLatency, LockStrategy};
use sim::trace::Trace;

/// Options of `cargo xtask sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// The trace file (`cargo xtask trace --hosted` writes one; format: `sim::trace`).
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,

    /// A simulator configuration (JSON: simulated_cores, strategy, lock_latency,
    /// mode_switch_cost, cache); its strategy and core count are replaced by the sweep's.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// The largest simulated core count of the sweep (1..=64).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub max_cores: u16,

    /// Where to write analysis.json, sweep.json, sweep.svg and sweep.png [default: target/sim].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Runs `cargo xtask sim`.
pub fn run(root: &Path, args: &SimArgs) -> ExitCode {
    match run_inner(root, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sim: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Reads, analyses and sweeps a trace; writes the three files into `out`.
pub fn analyse_and_sweep(
    trace_file: &Path,
    config: Option<&Path>,
    max: u16,
    out: &Path,
) -> Result<(), String> {
    let bytes = std::fs::read(trace_file).map_err(|e| format!("{}: {e}", trace_file.display()))?;
    let trace =
        Trace::from_bytes(&bytes).map_err(|e| format!("{}: {e:?}", trace_file.display()))?;
    let base = match config {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            Config::from_json(&text).map_err(|e| format!("{}: {e}", p.display()))?
        }
        None => Config {
            lock_latency: LockLatency::measured(&trace),
            ..Config::new(1, LockStrategy::BigLock)
        },
    };
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
    let strategies = [LockStrategy::BigLock, LockStrategy::NoLock];
    let sweep = sim::simulate::sweep(&trace, &base, 1..=usize::from(max), &strategies)
        .map_err(|e| format!("sweep: {e:?}"))?;
    write(&out.join("sweep.json"), &sweep.to_json())?;
    for s in strategies {
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
        .unwrap_or_else(|| crate::target_dir(root).join("sim"));
    analyse_and_sweep(&args.trace, args.config.as_deref(), args.max_cores, &out)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Throughput against simulated cores, one line per strategy, and the recorded run: `path`
/// as SVG and beside it as PNG.
fn plot(path: &Path, sweep: &sim::simulate::Sweep, recorded: (usize, f64)) -> Result<(), String> {
    crate::bench::plot::register_font()?;
    draw(
        SVGBackend::new(path, (900, 560)).into_drawing_area(),
        path,
        sweep,
        recorded,
    )?;
    let png = path.with_extension("png");
    draw(
        BitMapBackend::new(&png, (900, 560)).into_drawing_area(),
        &png,
        sweep,
        recorded,
    )
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
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Predicted kernel entries per second vs simulated cores",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
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
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}
