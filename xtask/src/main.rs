//! Project automation, run as `cargo xtask <command>` from anywhere in the workspace.
//!
//! * `cargo xtask test`: every check of the project (formatting, clippy on the host and the
//!   bare-metal targets, bare-metal builds, unit and integration tests, loom models, examples),
//!   closing with one line `test: N passed, M failed`.
//! * `cargo xtask bench ipc|memory|redis|locks`: the benchmark suites (hosted, QEMU
//!   `-icount`, QEMU multi-threaded), written as JSON, CSV, plots and a report into a folder
//!   per run; `bench compare A B`: two runs side by side; `bench report DIR`: a run's report
//!   rendered again from its results.
//! * `cargo xtask qemu`: build the x86_64 image and boot it under QEMU (demo or `--tests`),
//!   streaming the console; QEMU's exit status decides success (see [`qemu`]).
//! * `cargo xtask book`: the documentation book checked (pages, links, the README's figures
//!   against the committed runs) and built with mdBook.
//! * `cargo xtask fuzz`: the libFuzzer targets under fuzz/ (cargo-fuzz, the pinned nightly),
//!   each replaying its committed corpus and then fuzzing for a bounded time.
//!
//! The commands only drive `cargo`, `rustc` and `rustup`; nothing is downloaded by hand.
//!
//! # Layout
//! This crate is the command line: argument parsing, dispatch, help, and the orchestration of
//! `cargo xtask test` ([`test`], its QEMU runs typed in [`guestrun`], libtest output read by
//! [`libtest`]). The work is done by the library crates in `tools/`, one job each:
//! `host-env` (processes, progress lines, Debian packages, the toolchain, the workspace
//! layout), `qemu-runner` (images, guests, consoles, the network server, executed-instruction
//! traces), `bench` (the benchmarks), `trace-tools` (`trace` and `sim`) and `boot-media`
//! (`flash`), `book` (the documentation book's checks and build), `fuzz-runner` (`fuzz`). Each command's clap options (`QemuArgs`, `BenchArgs`, `TraceArgs`, `SimArgs`,
//! `FlashArgs`) stay beside the code they configure in those crates, so that an option and
//! its use change together and other commands can reuse them (the benchmarks boot guests with
//! `QemuArgs`); this crate flattens them into its subcommands, so `--help` shows their docs.

mod guestrun;
mod libtest;
mod test;

use std::process::ExitCode;

use boot_media as flash;
use qemu_runner::qemu;
use trace_tools::{sim, trace};

use host_env::{crate_dir, deps, proc, progress, target_dir, toolchain, workspace_root};

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Project automation for the locked-in microkernel workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run every check of the project and end with `test: N passed, M failed`.
    ///
    /// `--help` lists the step groups and their step counts, taken from the step list.
    Test(test::TestArgs),

    /// Run a benchmark suite and write its results, figures and report; compare runs.
    ///
    /// `bench ipc`: the kernel's IPC cost per locking strategy on three platforms (`hosted`: the
    /// kernel on host threads, TSC cycles; `qemu-icount`: the images under QEMU -icount
    /// shift=0, deterministic instruction counts; `qemu`: multi-threaded TCG, noisy
    /// throughput). `bench memory`: per-core against global pagers. `bench redis`: the network
    /// server under redis-benchmark and YCSB beside Linux + Redis. `bench locks`: the lock
    /// crate's micro-benchmarks. Each writes results.json, results.csv, figures and report.md
    /// into a new folder per run (target/bench/runs/<UTC time>-<git revision>/, with
    /// target/bench/latest naming it) or --out DIR. `bench compare A B` compares two runs
    /// record by record; `bench report DIR` renders a run's report again from its results.
    /// `cargo xtask bench ipc --lock=clh` measures CLH against no lock everywhere in a few
    /// minutes. The old spellings (`--suite S`, `--host`, no suite) work for one release.
    Bench(Box<bench::BenchArgs>),

    /// Build the x86_64 or ARMv7 image and boot it under QEMU with the chosen cores and lock.
    ///
    /// x86_64 (default): runs qemu-system-x86_64 (-M microvm by default) with the image as
    /// `-kernel` (PVH boot), streams the console, and exits with 0 only when the kernel shut down
    /// with success (isa-debug-exit status 33); a triple fault (status 0), a reported failure
    /// (35) or a hang (--timeout) fail with the last console lines. `--arch armv7`: runs
    /// qemu-system-arm (-M sabrelite by default, or virt) with semihosting; status 0 is success
    /// only together with the kernel's `shutting down: success`, `cpus online: N` and
    /// `lock: NAME` lines. The demo runs an IPC ping-pong pair on every
    /// core; --tests runs the in-kernel and user-level test suite instead. QEMU is installed with
    /// apt-get when missing and running as root.
    Qemu(qemu::QemuArgs),

    /// Trace the kernel: what one IPC round trip executes (`trace exec`), or a kernel lock
    /// trace for the simulator (`trace locks --hosted|--image`).
    ///
    /// `trace exec`: for each architecture and lock, runs the one-core demo twice under QEMU
    /// with `-icount shift=0 -singlestep -d exec,nochain` (every executed instruction logged
    /// with its address), with `rounds=N` and `rounds=2N`, and divides the difference by N: the
    /// instructions of one Call/ReplyRecv round trip (client and server in two address spaces,
    /// trap paths included), the functions they are in, and the barriers among them (ARMv7:
    /// dmb, dsb, isb; x86_64: fences and locked read-modify-writes), found in the kernel and
    /// user ELF files. Prints a table and writes <out>/trace.json. Each lock and machine takes
    /// 40-70 s on an idle 2-vCPU machine, up to about 3 minutes beside other work, with a
    /// progress line before each run (the traces, 0.1-1 GB each, are written under
    /// target/trace and deleted after counting; XTASK_KEEP_TRACE=1 keeps them). `trace locks
    /// --hosted` records a kernel lock trace on host threads, `--image` inside the QEMU images,
    /// and both replay it with the simulator. The old spelling (`trace` with `--hosted`,
    /// `--image` or neither) works for one release.
    Trace(trace::TraceArgs),

    /// Replay a kernel lock trace on 1..64 simulated cores (the discrete-event simulator).
    ///
    /// Reads a trace file (--trace; `cargo xtask trace locks --hosted` records one in the hosted
    /// harness), or without one records a trace first in the hosted harness (the IPC ping-pong
    /// on 2 host threads, --lock clh unless given), then prints its analysis (system-call rate, time in the kernel and in the lock, contention),
    /// replays it on the core count it was recorded on (the simulator's check: it should
    /// reproduce the run) and sweeps 1..--max-cores simulated cores for the big lock and no
    /// lock. Writes analysis.json, sweep.json and sweep.svg into --out (default target/sim).
    /// --calibration FILE --lock L turns the cache model on with measured parameters;
    /// --calibrate measures them on this machine first; --validate compares the predictions
    /// with measured runs and predicts Figure 2.
    Sim(sim::SimArgs),

    /// Check this machine for every tool and Debian package the commands and test steps use.
    ///
    /// Lists each tool by who needs it (the QEMU steps, the ARMv7 Linux run of the lock crate's
    /// tests, the network server and its clients, the boot-media tools), as `ok`, `MISSING`
    /// (with its package) or `WRONG` (present, but from another Debian package than the one the
    /// installer installs, so a fresh machine would lack it), and then builds, links and runs a
    /// C program with the ARM cross tools. `--install` installs what is missing first (apt-get,
    /// as root or through `sudo -n`). `cargo xtask test` does the same for the steps it runs
    /// before the first one. The exit status is non-zero when anything is missing or wrong.
    Doctor {
        /// Install the missing packages first.
        #[arg(long)]
        install: bool,
    },

    /// Make a board's boot medium and write it to a disk or a file, safely.
    ///
    /// `--board pc`: a disk image (GRUB, BIOS and UEFI) that starts the x86_64 kernel through
    /// its multiboot2 entry, kernel console on COM1 (115200 8N1). `--board sabrelite`: an SD
    /// card image (MBR, FAT32 boot partition) with the ARMv7 kernel as a U-Boot image and a
    /// boot script for the board's stock U-Boot. The kernel command line gets `--lock`,
    /// `--mode` and `cpus=` from `--smp` (default: the board file's cores).
    ///
    /// The target is either `--device /dev/sdX` (a whole disk: refused if it or a partition
    /// of it is mounted or swapping, if it holds `/`, if it is a partition, or if it is not a
    /// block device) or `--image FILE`. Its model and size are shown and `yes` must be typed
    /// unless `--yes`; `--dry-run` prints every step and writes nothing. The medium is written
    /// with progress output, synced, read back and compared by SHA-256. A missing tool is
    /// named with its Debian package (grub-common, grub-pc-bin, grub-efi-amd64-bin, xorriso,
    /// mtools, fdisk, u-boot-tools). `--check` verifies the written medium: the pc image is
    /// booted from it in QEMU under SeaBIOS and UEFI, the SD image read back and (with
    /// `--firmware uboot-virt`) booted through U-Boot on QEMU virt. Example: `cargo xtask flash --board pc --lock ticket
    /// --smp 2 --device /dev/sdb`. See docs/hardware.md.
    Flash(flash::FlashArgs),

    /// Check the documentation book and the README, then build the book into target/book.
    ///
    /// The book is docs/ (its table of contents docs/SUMMARY.md, built by mdBook, which is
    /// installed into target/tools when missing). First every chapter must exist, every page
    /// under docs/ must be a chapter, every relative link and image of the book must resolve
    /// inside it (anchors included), every link of the README must resolve in the repository,
    /// and the README's headline table must be what the committed runs under docs/bench give
    /// (`--update` rewrites it). Then `mdbook build docs`; a warning fails it. External links
    /// are counted, not fetched.
    Book(book::command::BookArgs),

    /// Run the libFuzzer targets under fuzz/ (cargo-fuzz with the pinned nightly).
    ///
    /// For each target (every one in turn, or `--target T`), replays its committed corpus
    /// fuzz/corpus/T/ (a crash there fails at once), then fuzzes for `--time` seconds (default
    /// 60) with `--jobs` processes, printing libFuzzer's status lines (`cov:` edges, `ft:`
    /// features) and a summary per target. New inputs go to target/fuzz/corpus/T/; a crash's
    /// input to fuzz/artifacts/T/, with the command that replays it. `--cmin` merges the found
    /// inputs and the seeds of fuzz/seeds.py into the committed corpus, minimised with
    /// `cargo fuzz cmin`. `--list` names the targets and what each checks. The nightly
    /// toolchain (rustup) and cargo-fuzz (into target/tools) are installed when missing. Example:
    /// `cargo xtask fuzz --target kv_resp --time 300 --jobs 2`. See docs/fuzzing.md.
    Fuzz(fuzz_runner::FuzzArgs),
}

/// The command line, with the long help of `test` filled in when it is asked for: it comes from
/// the step list ([`test::long_help`]), which is built only for that.
fn command(args: &[String]) -> clap::Command {
    let cmd = Cli::command();
    let words: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let asks = matches!(words.as_slice(), ["help", "test", ..])
        || (words.first() == Some(&"test") && words.contains(&"--help"));
    if asks {
        cmd.mut_subcommand("test", |c| c.long_about(test::long_help()))
    } else {
        cmd
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let cli = match Cli::from_arg_matches(&command(&args).get_matches_from(&args)) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let root = workspace_root();
    // Every command that builds for the bare-metal targets first checks that rustup has them.
    let who = match &cli.command {
        Command::Test(a) if a.builds() => Some("cargo xtask test"),
        Command::Bench(a) if a.builds() => Some("cargo xtask bench"),
        Command::Qemu(_) => Some("cargo xtask qemu"),
        Command::Trace(_) => Some("cargo xtask trace"),
        Command::Flash(_) => Some("cargo xtask flash"),
        Command::Test(_)
        | Command::Bench(_)
        | Command::Sim(_)
        | Command::Doctor { .. }
        | Command::Book(_)
        | Command::Fuzz(_) => None,
    };
    if let Some(who) = who {
        if let Err(why) = toolchain::ensure(who, &root) {
            eprintln!("{why}");
            if matches!(cli.command, Command::Test(_)) {
                // The test command's last line is always its summary.
                println!("test: 0 passed, 1 failed");
            }
            return ExitCode::FAILURE;
        }
    }
    match cli.command {
        Command::Test(args) => test::run(&root, &args),
        Command::Bench(args) => bench::run(&root, &args),
        Command::Qemu(args) => qemu::run(&root, &args),
        Command::Trace(args) => trace::run(&root, &args),
        Command::Sim(args) => sim::run(&root, &args),
        Command::Flash(args) => flash::run(&root, &args),
        Command::Book(args) => book::command::run(&root, &args),
        Command::Fuzz(args) => fuzz_runner::run(&root, &args),
        Command::Doctor { install } => {
            if deps::doctor(install) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// The `cargo xtask ...` command lines a help text shows (in backticks, or on a line of
    /// their own), without those with placeholders or alternatives (`...`, `[`, `|`, `<`).
    fn quoted_commands(text: &str) -> Vec<String> {
        let mut found: Vec<String> = text
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .chain(text.lines().map(|l| l.trim().to_string()))
            .filter(|s| s.starts_with("cargo xtask "))
            .collect();
        found.retain(|s| {
            !["...", "[", "|", "<", "\u{2026}"]
                .iter()
                .any(|p| s.contains(p))
        });
        found
    }

    /// Every command's long help, and its subcommands', with the test step list's.
    fn every_long_help(cmd: &mut clap::Command, out: &mut Vec<(String, String)>) {
        out.push((
            cmd.get_name().to_string(),
            cmd.render_long_help().to_string(),
        ));
        for sub in cmd.get_subcommands_mut() {
            every_long_help(sub, out);
        }
    }

    #[test]
    fn every_command_line_a_help_text_shows_parses() {
        let argv: Vec<String> = ["xtask", "help", "test"].map(String::from).into();
        let mut cmd = command(&argv);
        cmd.build();
        let mut helps = Vec::new();
        every_long_help(&mut cmd, &mut helps);
        let mut checked = 0;
        for (name, help) in &helps {
            for line in quoted_commands(help) {
                let words: Vec<&str> = std::iter::once("xtask")
                    .chain(line.split_whitespace().skip(2))
                    .collect();
                match Cli::try_parse_from(&words) {
                    Ok(_) => checked += 1,
                    Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => checked += 1,
                    Err(e) => {
                        panic!("the help of `{name}` shows `{line}`, which does not parse:\n{e}")
                    }
                }
            }
        }
        assert!(
            checked > 10,
            "only {checked} command lines found in the help texts"
        );
    }

    #[test]
    fn the_test_help_is_built_only_when_asked_for() {
        let argv = |words: &[&str]| -> Vec<String> {
            std::iter::once("xtask")
                .chain(words.iter().copied())
                .map(String::from)
                .collect()
        };
        let about = |words: &[&str]| {
            let mut cmd = command(&argv(words));
            cmd.find_subcommand_mut("test")
                .and_then(|t| t.get_long_about().map(|a| a.to_string()))
                .unwrap_or_default()
        };
        for asks in [&["test", "--help"][..], &["help", "test"]] {
            assert!(
                about(asks).contains("Steps, in order, by group"),
                "{asks:?}"
            );
        }
        for other in [
            &["test", "--list"][..],
            &["qemu", "--help"],
            &["test", "-h"],
        ] {
            assert!(!about(other).contains("Steps, in order"), "{other:?}");
        }
    }

    #[test]
    fn the_cargo_alias_shows_the_first_build() {
        // A quiet alias hides the minute that xtask's own first build takes.
        let config = std::fs::read_to_string(workspace_root().join(".cargo/config.toml")).unwrap();
        let alias = config
            .lines()
            .find(|l| l.trim_start().starts_with("xtask ="))
            .expect("an xtask alias in .cargo/config.toml");
        assert!(alias.contains("run --package xtask"), "{alias}");
        for quiet in ["--quiet", " -q "] {
            assert!(!alias.contains(quiet), "{alias}");
        }
    }
}
