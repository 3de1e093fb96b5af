//! The hosted platform: `cargo bench -p tests --bench ipc_hosted -- --records PATH ...` (the IPC
//! suite) or `--bench memory_hosted` (the memory suite), the kernel on host threads, which
//! writes a JSON array of raw records.

use std::fs;
use std::path::Path;
use std::time::Duration;

use super::records::RawRecord;
use host_env::proc::Cmd;

/// The hosted IPC benchmark's source, relative to the workspace root.
pub const SOURCE: &str = "tests/benches/ipc_hosted.rs";
/// The hosted memory benchmark's source.
pub const MEMORY_SOURCE: &str = "tests/benches/memory_hosted.rs";

/// The source of the hosted benchmark of the memory suite (`memory`) or the IPC suite.
pub fn source(memory: bool) -> &'static str {
    if memory {
        MEMORY_SOURCE
    } else {
        SOURCE
    }
}

/// A hosted run may take this long before it is killed.
const TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Whether the hosted benchmark at `source` can write raw records (`--records`); `Err` says
/// what is missing.
pub fn available(root: &Path, source: &str) -> Result<(), String> {
    let path = root.join(source);
    let text = fs::read_to_string(&path)
        .map_err(|e| format!("the hosted benchmark {source} cannot be read: {e}"))?;
    if text.contains("--records") {
        Ok(())
    } else {
        Err(format!(
            "the hosted benchmark ({source}) does not support `--records PATH` yet: its raw \
             records (docs/bench-protocol.md) have not landed"
        ))
    }
}

/// `cargo bench -p tests --bench <bench> -- --records <records>`, then each of `options` (a flag
/// and its value), `--runs <runs>` and, where `quick`, `--quick`.
fn bench_cmd(
    bench: &str,
    records: &Path,
    options: &[(&str, String)],
    runs: u32,
    quick: bool,
) -> Cmd {
    let mut cmd = Cmd::cargo()
        .args(["bench", "-p", "tests", "--bench", bench, "--", "--records"])
        .arg(records);
    for (flag, value) in options {
        cmd = cmd.args([flag, value.as_str()]);
    }
    cmd = cmd.args(["--runs", &runs.to_string()]);
    if quick {
        cmd = cmd.arg("--quick");
    }
    cmd
}

/// A list of numbers as one option value (`1,2,4`).
fn list(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// The command that runs the hosted benchmark for `locks` and `cores` (also the client counts of
/// its client-server benchmark).
pub fn command(records: &Path, locks: &[&str], cores: &[u32], runs: u32, quick: bool) -> Cmd {
    let options = [
        ("--locks", locks.join(",")),
        ("--cores", list(cores)),
        ("--clients", list(cores)),
    ];
    bench_cmd("ipc_hosted", records, &options, runs, quick)
}

/// The command that runs the hosted memory benchmark for `locks`, `cores`, `pagers` and
/// `pages` (every combination; `none` on 1 core only).
pub fn memory_command(
    records: &Path,
    locks: &[&str],
    cores: &[u32],
    pagers: &[&str],
    pages: &[u32],
    runs: u32,
    quick: bool,
) -> Cmd {
    let options = [
        ("--locks", locks.join(",")),
        ("--cores", list(cores)),
        ("--pagers", pagers.join(",")),
        ("--pages", list(pages)),
    ];
    bench_cmd("memory_hosted", records, &options, runs, quick)
}

/// Runs the hosted benchmark and returns its raw records. Each line of its output (cargo's
/// build, then one line per measured point) goes to `progress` as it arrives, and is kept for the
/// error message.
pub fn run(
    root: &Path,
    cmd: &Cmd,
    records: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<RawRecord>, String> {
    let _ = fs::remove_file(records);
    let out = cmd
        .run_streamed(root, TIMEOUT, progress)
        .map_err(|e| format!("cannot run `{}`: {e}", cmd.display()))?;
    let tail = || {
        let start = out.lines.len().saturating_sub(30);
        let mut s = format!("\n  command: {}", cmd.display());
        for l in &out.lines[start..] {
            s.push_str("\n  | ");
            s.push_str(l);
        }
        s
    };
    if out.timed_out {
        return Err(format!(
            "the hosted benchmark ran past {} s and was killed{}",
            TIMEOUT.as_secs(),
            tail()
        ));
    }
    if !out.status.success() {
        return Err(format!(
            "the hosted benchmark failed ({}){}",
            out.status,
            tail()
        ));
    }
    let text = fs::read_to_string(records).map_err(|e| {
        format!(
            "the hosted benchmark wrote no records to {} ({e}): does it support --records?{}",
            records.display(),
            tail()
        )
    })?;
    let _ = fs::remove_file(records);
    parse(&text)
}

/// Parses the hosted benchmark's JSON array of raw records.
pub fn parse(text: &str) -> Result<Vec<RawRecord>, String> {
    let records: Vec<RawRecord> = serde_json::from_str(text)
        .map_err(|e| format!("the hosted benchmark's records do not parse: {e}"))?;
    if records.is_empty() {
        return Err("the hosted benchmark wrote an empty array of records".into());
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_an_array_of_raw_records() {
        let r = parse(
            r#"[{"bench":"ipc-roundtrip","variant":"same-as","lock":"none","cores":1,"unit":"cycles","counter":"tsc","counter_hz":2400000000,"samples":[411,412]},
               {"bench":"multicore-pingpong","variant":"pairs","lock":"clh","cores":2,"unit":"round trips","counter":"tsc","counter_hz":2400000000,"interval_ticks":240000000,"samples":[1e6]}]"#,
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[1].interval_ticks, Some(240_000_000.0));
        assert!(parse("[]").is_err());
        assert!(parse("{").is_err());
    }

    #[test]
    fn a_benchmark_without_records_is_named_as_missing() {
        let root = std::env::temp_dir().join(format!("xtask-hosted-test-{}", std::process::id()));
        let bench = root.join(SOURCE);
        std::fs::create_dir_all(bench.parent().unwrap()).unwrap();
        std::fs::write(&bench, "fn main() { /* --json only */ }").unwrap();
        let err = available(&root, SOURCE).unwrap_err();
        assert!(err.contains("does not support `--records PATH`"), "{err}");
        std::fs::write(&bench, "// --records PATH").unwrap();
        assert!(available(&root, SOURCE).is_ok());
        std::fs::remove_dir_all(&root).unwrap();
        assert!(available(&root, SOURCE)
            .unwrap_err()
            .contains("cannot be read"));
        // The real ones have landed.
        for memory in [false, true] {
            assert!(available(&host_env::workspace_root(), source(memory)).is_ok());
        }
    }

    #[test]
    fn command_line() {
        let c = command(Path::new("/t/r.json"), &["none", "clh"], &[1, 2], 4, true);
        assert_eq!(
            c.display(),
            "cargo bench -p tests --bench ipc_hosted -- --records /t/r.json --locks none,clh \
             --cores 1,2 --clients 1,2 --runs 4 --quick"
        );
        let m = memory_command(
            Path::new("/t/m.json"),
            &["clh"],
            &[1, 2],
            &["percore", "global"],
            &[50, 100],
            8,
            false,
        );
        assert_eq!(
            m.display(),
            "cargo bench -p tests --bench memory_hosted -- --records /t/m.json --locks clh \
             --cores 1,2 --pagers percore,global --pages 50,100 --runs 8"
        );
    }
}
