//! `cargo xtask fuzz`: the coverage-guided fuzz targets under fuzz/ (libFuzzer through
//! cargo-fuzz), run for a bounded time each, after their committed corpus replays.
//!
//! The targets live in their own cargo project, fuzz/, outside the workspace: cargo-fuzz
//! builds them with the pinned nightly ([`host_env::nightly`]), AddressSanitizer, overflow
//! checks and libFuzzer's coverage instrumentation, into fuzz/target. [`TARGETS`] lists them
//! with what each checks (a unit test keeps it equal to fuzz/Cargo.toml's binaries).
//!
//! For each target, [`run`] first replays the committed corpus, fuzz/corpus/<target>/
//! (`-runs=0`: every input once, which fails on any input that crashes again), then fuzzes
//! for `--time` seconds starting from it. Inputs a run finds go to
//! `<target dir>/fuzz/corpus/<target>/`, never into the committed corpus; `--cmin` merges
//! them, and the hand-written seeds of `fuzz/seeds.py`, into it with `cargo fuzz cmin`
//! (only inputs that reach an edge no other one does stay). A crash leaves its input under
//! fuzz/artifacts/<target>/ and the command prints how to replay it.
//!
//! cargo-fuzz is pinned and installed into the target directory like mdBook
//! ([`host_env::cargo_tools::CARGO_FUZZ`]); the nightly is installed with rustup when
//! missing. `XTASK_NO_INSTALL=1` turns both installs off and prints the commands instead.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use host_env::cargo_tools::{self, CARGO_FUZZ};
use host_env::proc::Cmd;
use host_env::progress::{human, Progress};

/// One fuzz target: a binary of fuzz/Cargo.toml.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// The binary's name (`cargo fuzz run <name>`).
    pub name: &'static str,
    /// What it feeds and what it checks, one line.
    pub checks: &'static str,
}

/// Every fuzz target, in the order `cargo xtask fuzz` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "kv_resp",
        checks: "RESP parsing and command execution (kv-resp): no panic, well-formed replies, \
                 memory and slots within the arena and slot table",
    },
    Target {
        name: "abi_syscall",
        checks: "the system-call decoder (abi): no panic, every decoded call encodes back to \
                 its registers, decode_ipc agrees with decode",
    },
    Target {
        name: "multiboot2",
        checks: "the multiboot2 boot-information reader (hal-x86): no panic, results inside \
                 the MBI",
    },
    Target {
        name: "acpi",
        checks: "the ACPI reader (hal-x86: RSDP, RSDT/XSDT, MADT, FADT, HPET, SRAT): no \
                 panic, counts within the fixed arrays",
    },
    Target {
        name: "bootargs",
        checks: "the ARMv7 device-tree command-line reader (hal-armv7, through the fdt \
                 crate): no panic, the copy fits and is a prefix cut at a character boundary",
    },
    Target {
        name: "elf",
        checks: "the user-ELF reader of the images (image-common): no panic, accepted \
                 segments aligned, in the user half and inside the file",
    },
    Target {
        name: "trace",
        checks: "the lock-trace decoder (trace-format) and the simulator's analysis (sim): \
                 no panic, decoded traces round-trip byte for byte",
    },
    Target {
        name: "frame_ring",
        checks: "the SPSC frame ring (frame-ring) against a model queue: frames in order, \
                 whole or cut to the slot, counts consistent",
    },
];

/// Options of `cargo xtask fuzz`.
#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// Run only this target (`--list` names them); without it, every target in turn.
    #[arg(long, value_name = "T")]
    pub target: Option<String>,

    /// Seconds of fuzzing per target, after its corpus replays.
    #[arg(long, value_name = "S", default_value_t = 60)]
    pub time: u64,

    /// Parallel fuzzing processes per target (libFuzzer's fork mode when above 1).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: u32,

    /// List the targets and what each checks, and exit.
    #[arg(long)]
    pub list: bool,

    /// Merge what earlier runs found (and the hand-written seeds of fuzz/seeds.py, when
    /// written) into the committed corpus, minimised with `cargo fuzz cmin`, instead of
    /// fuzzing.
    #[arg(long)]
    pub cmin: bool,
}

/// How long building the targets may take (the first build compiles every crate they use,
/// with the sanitizer).
const BUILD_ALLOWANCE: Duration = Duration::from_secs(20 * 60);

/// Runs `cargo xtask fuzz`.
pub fn run(root: &Path, args: &FuzzArgs) -> ExitCode {
    if args.list {
        for t in TARGETS {
            println!("{:<12} {}", t.name, t.checks);
        }
        return ExitCode::SUCCESS;
    }
    host_env::exit_code("fuzz", fuzz(root, args))
}

/// The targets `--target` selects.
fn selected(target: Option<&str>) -> Result<Vec<&'static Target>, String> {
    match target {
        None => Ok(TARGETS.iter().collect()),
        Some(name) => TARGETS
            .iter()
            .find(|t| t.name == name)
            .map(|t| vec![t])
            .ok_or_else(|| {
                let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
                format!(
                    "no fuzz target `{name}`; the targets are: {}",
                    names.join(", ")
                )
            }),
    }
}

/// The tools a run needs: the nightly's rustup name and the pinned cargo-fuzz.
struct Tools {
    nightly: String,
    cargo_fuzz: PathBuf,
}

impl Tools {
    fn ensure(root: &Path) -> Result<Tools, String> {
        let nightly = host_env::nightly::ensure("cargo xtask fuzz")?;
        let cargo_fuzz = cargo_tools::ensure("cargo xtask fuzz", root, &CARGO_FUZZ)?;
        Ok(Tools {
            nightly,
            cargo_fuzz,
        })
    }

    /// `rustup run <nightly> <cargo-fuzz> fuzz <args>`: the pinned cargo-fuzz, called as cargo
    /// calls a subcommand, with the nightly's cargo and rustc first on `PATH` (rustup puts them
    /// there), which cargo-fuzz builds with.
    fn cargo_fuzz<I, S>(&self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        Cmd::new("rustup")
            .arg("run")
            .arg(&self.nightly)
            .arg(&self.cargo_fuzz)
            .arg("fuzz")
            .args(args)
    }
}

/// The committed corpus of `target`.
pub fn corpus_dir(root: &Path, target: &str) -> PathBuf {
    root.join("fuzz").join("corpus").join(target)
}

/// Where runs put the inputs they find (not committed).
pub fn found_dir(root: &Path, target: &str) -> PathBuf {
    host_env::target_dir(root)
        .join("fuzz")
        .join("corpus")
        .join(target)
}

/// The hand-written seeds of `target` (`python3 fuzz/seeds.py` writes them; not committed).
pub fn seeds_dir(root: &Path, target: &str) -> PathBuf {
    root.join("fuzz").join("seeds").join(target)
}

fn fuzz(root: &Path, args: &FuzzArgs) -> Result<(), String> {
    let targets = selected(args.target.as_deref())?;
    if args.jobs == 0 {
        return Err("--jobs must be at least 1".into());
    }
    let tools = Tools::ensure(root)?;
    let mut progress = Progress::new("fuzz", targets.len());
    let mut failed = Vec::new();
    for t in &targets {
        let what = if args.cmin {
            format!("{}: merging found inputs and seeds into the corpus", t.name)
        } else {
            format!("{}: corpus replay, then {} s of fuzzing", t.name, args.time)
        };
        println!("{}", progress.next(&what));
        let outcome = if args.cmin {
            cmin(root, &tools, t)
        } else {
            fuzz_one(root, &tools, t, args)
        };
        if let Err(why) = outcome {
            eprintln!("fuzz: {}: {why}", t.name);
            failed.push(t.name);
        }
    }
    println!(
        "fuzz: {} of {} targets passed in {}",
        targets.len() - failed.len(),
        targets.len(),
        human(progress.elapsed())
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("failed: {}", failed.join(", ")))
    }
}

/// Replays `t`'s corpus, then fuzzes it for `args.time` seconds.
fn fuzz_one(root: &Path, tools: &Tools, t: &Target, args: &FuzzArgs) -> Result<(), String> {
    let corpus = corpus_dir(root, t.name);
    if !corpus.is_dir() {
        return Err(format!(
            "no committed corpus at {} (`cargo xtask fuzz --cmin --target {}` makes one)",
            corpus.display(),
            t.name
        ));
    }
    let replay = tools.cargo_fuzz([
        OsString::from("run"),
        t.name.into(),
        corpus.clone().into(),
        "--".into(),
        "-runs=0".into(),
    ]);
    let stats = libfuzzer(root, &replay, BUILD_ALLOWANCE)?;
    println!(
        "fuzz: {}: corpus replayed ({} inputs, cov {} ft {})",
        t.name, stats.runs, stats.cov, stats.ft
    );
    let found = found_dir(root, t.name);
    std::fs::create_dir_all(&found)
        .map_err(|e| format!("cannot create {}: {e}", found.display()))?;
    let run = tools.cargo_fuzz([
        OsString::from("run"),
        t.name.into(),
        "--jobs".into(),
        args.jobs.to_string().into(),
        found.clone().into(),
        corpus.into(),
        "--".into(),
        format!("-max_total_time={}", args.time).into(),
    ]);
    let limit = BUILD_ALLOWANCE + Duration::from_secs(args.time.saturating_mul(2));
    let stats = libfuzzer(root, &run, limit)?;
    println!(
        "fuzz: {}: {} runs in {} s, cov {} ft {}, corpus {} inputs (new ones in {})",
        t.name,
        stats.runs,
        args.time,
        stats.cov,
        stats.ft,
        stats.corpus,
        found.display()
    );
    Ok(())
}

/// Merges the found inputs and the seeds into `t`'s committed corpus and minimises it.
fn cmin(root: &Path, tools: &Tools, t: &Target) -> Result<(), String> {
    let corpus = corpus_dir(root, t.name);
    std::fs::create_dir_all(&corpus)
        .map_err(|e| format!("cannot create {}: {e}", corpus.display()))?;
    for from in [found_dir(root, t.name), seeds_dir(root, t.name)] {
        let Ok(entries) = std::fs::read_dir(&from) else {
            continue;
        };
        for entry in entries.flatten() {
            let to = corpus.join(entry.file_name());
            std::fs::copy(entry.path(), &to)
                .map_err(|e| format!("cannot copy {}: {e}", entry.path().display()))?;
        }
    }
    // Edges only (`-use_counters=0`): an input stays when it reaches code no other one does,
    // not for each new hit count of a loop, which keeps the committed corpus to a few
    // dozen or hundred small files.
    let cmd = tools.cargo_fuzz([
        OsString::from("cmin"),
        t.name.into(),
        corpus.clone().into(),
        "--".into(),
        "-use_counters=0".into(),
    ]);
    libfuzzer(root, &cmd, BUILD_ALLOWANCE)?;
    let count = std::fs::read_dir(&corpus).map_or(0, |d| d.count());
    println!("fuzz: {}: {count} inputs in {}", t.name, corpus.display());
    Ok(())
}

/// What libFuzzer's last status line said.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Inputs run (`#N`).
    pub runs: u64,
    /// Coverage counters hit (`cov:`: edges of the control-flow graph).
    pub cov: u64,
    /// Features (`ft:`: edges and their hit-count buckets, comparisons).
    pub ft: u64,
    /// Inputs in the corpus (`corp:`).
    pub corpus: u64,
}

/// The numbers of a libFuzzer status line (`#4096 pulse cov: 120 ft: 300 corp: 40/1Kb ...`,
/// or fork mode's `#4096: cov: 120 ft: 300 corp: 40 ...`), if it is one.
pub fn parse_status(line: &str) -> Option<Stats> {
    let rest = line.strip_prefix('#')?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let runs = rest[..digits].parse().ok()?;
    let field = |key: &str| -> Option<u64> {
        let after = &rest[rest.find(key)? + key.len()..];
        let value = after.trim_start();
        let end = value
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(value.len());
        value[..end].parse().ok()
    };
    Some(Stats {
        runs,
        cov: field("cov:")?,
        ft: field("ft:")?,
        corpus: field("corp:").unwrap_or(0),
    })
}

/// Whether a line of cargo-fuzz's output is worth showing while it runs: the build's
/// progress, libFuzzer's periodic and final status, and anything about a failure.
fn shown(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("Compiling locked-in-fuzz")
        || t.starts_with("error")
        || t.starts_with("warning: unused")
        || line.contains(" pulse ")
        || line.contains(" DONE ")
        || line.contains("INITED")
        || line.contains("panicked")
        || line.contains("ERROR")
        || line.contains("SUMMARY")
        || line.contains("Test unit written")
        || line.contains("Failing input")
        || line.contains("Reproduce with")
        || line.contains("cargo fuzz run")
}

/// Runs a cargo-fuzz command, showing its progress lines, and returns the last status.
/// A failure says what the output said and how to replay a crash.
fn libfuzzer(root: &Path, cmd: &Cmd, limit: Duration) -> Result<Stats, String> {
    let mut last = Stats::default();
    // From a panic's first line to its backtrace or libFuzzer's report: its message.
    let mut in_panic = false;
    let out = cmd
        .run_streamed(root, limit, &mut |line| {
            if let Some(s) = parse_status(line) {
                last = s;
            }
            in_panic = (in_panic || line.contains("panicked"))
                && !line.starts_with("stack backtrace")
                && !line.contains("ERROR: libFuzzer");
            if in_panic || shown(line) {
                println!("  {line}");
            }
        })
        .map_err(|e| format!("cannot run `{}`: {e}", cmd.display()))?;
    if out.timed_out {
        return Err(format!(
            "`{}` ran past {} and was stopped",
            cmd.display(),
            human(limit)
        ));
    }
    if !out.status.success() {
        let crash = out
            .lines
            .iter()
            .find_map(|l| l.split("Test unit written to ").nth(1))
            .map(|p| format!("; the input is {p}"))
            .unwrap_or_default();
        let tail: Vec<&str> = out
            .lines
            .iter()
            .rev()
            .take(30)
            .rev()
            .map(String::as_str)
            .collect();
        return Err(format!(
            "`{}` failed ({}){crash}; its last lines:\n{}",
            cmd.display(),
            out.status,
            tail.join("\n")
        ));
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_are_read() {
        let done =
            "#185603\tDONE   cov: 2807 ft: 8810 corp: 1188/277Kb lim: 834 exec/s: 8838 rss: 421Mb";
        assert_eq!(
            parse_status(done),
            Some(Stats {
                runs: 185603,
                cov: 2807,
                ft: 8810,
                corpus: 1188
            })
        );
        let fork =
            "#52341: cov: 120 ft: 300 corp: 40 exec/s: 10000 oom/timeout/crash: 0/0/0 time: 5s";
        assert_eq!(
            parse_status(fork).map(|s| (s.runs, s.cov, s.ft)),
            Some((52341, 120, 300))
        );
        assert_eq!(parse_status("INFO: Seed: 1234"), None);
        assert_eq!(parse_status("#12 NEW"), None);
    }

    #[test]
    fn an_unknown_target_is_refused_with_the_list() {
        let err = selected(Some("nope")).unwrap_err();
        assert!(
            err.contains("kv_resp") && err.contains("frame_ring"),
            "{err}"
        );
        assert_eq!(selected(None).unwrap().len(), TARGETS.len());
        assert_eq!(selected(Some("elf")).unwrap()[0].name, "elf");
    }

    /// The list names exactly the binaries of fuzz/Cargo.toml, each with a source file and a
    /// committed corpus.
    #[test]
    fn the_targets_are_the_fuzz_crates_binaries() {
        let root = host_env::workspace_root();
        let manifest = std::fs::read_to_string(root.join("fuzz/Cargo.toml")).unwrap();
        let mut bins: Vec<&str> = manifest
            .split("[[bin]]")
            .skip(1)
            .filter_map(|b| b.lines().find_map(|l| l.strip_prefix("name = ")))
            .map(|n| n.trim_matches('"'))
            .collect();
        let mut listed: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        bins.sort_unstable();
        listed.sort_unstable();
        assert_eq!(bins, listed);
        for t in TARGETS {
            let src = root.join(format!("fuzz/fuzz_targets/{}.rs", t.name));
            assert!(src.is_file(), "{}", src.display());
            let corpus = corpus_dir(&root, t.name);
            let inputs = std::fs::read_dir(&corpus).map_or(0, |d| d.count());
            assert!(inputs > 0, "{} is empty or missing", corpus.display());
        }
    }
}
