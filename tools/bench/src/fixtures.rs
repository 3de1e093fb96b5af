//! Synthetic records for the unit tests.

use super::plan::strategy_of;
use super::records::{Machine, Record};
use super::stats::stats;
use super::RunArgs;

/// A test machine.
pub fn machine() -> Machine {
    Machine {
        cpu: "Test CPU".into(),
        host_cores: 2,
        qemu: "QEMU emulator version 7.2.0".into(),
        rustc: "rustc 1.95.0".into(),
    }
}

/// A converted record with the given samples; the unit follows the platform and bench.
pub fn record(
    bench: &str,
    arch: &str,
    platform: &str,
    lock: &str,
    cores: u32,
    samples: &[f64],
) -> Record {
    let st = stats(samples).expect("samples");
    let unit = match (bench, platform) {
        ("multicore-pingpong" | "client-server", _) => "round trips/s",
        (_, "qemu-icount") => "instructions",
        (_, "hosted") => "cycles",
        _ => "ns",
    };
    let board = match (arch, platform) {
        (_, "hosted") => "host",
        ("x86_64", _) => "microvm",
        _ => "sabrelite",
    };
    Record {
        bench: bench.into(),
        variant: "cross-as".into(),
        arch: arch.into(),
        platform: platform.into(),
        board: board.into(),
        strategy: strategy_of(lock).into(),
        lock: lock.into(),
        cores,
        clients: 0,
        pages: 0,
        runs: samples.len(),
        unit: unit.into(),
        mean: st.mean,
        stddev: st.stddev,
        min: st.min,
        median: st.median,
        samples: samples.to_vec(),
        raw_unit: "ticks".into(),
        counter: "tsc".into(),
        counter_hz: 1e9,
        overhead: 0.0,
        method: "synthetic".into(),
        machine: machine(),
        retries: 0,
        extra: None,
        kernel_trace: "off".into(),
    }
}

/// The run options of `cargo xtask bench ARGS...`.
pub fn run_args(extra: &[&str]) -> RunArgs {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        bench: super::BenchArgs,
    }
    Cli::try_parse_from(["bench"].iter().chain(extra))
        .unwrap()
        .bench
        .run_args()
        .expect("a run")
        .unwrap()
}
