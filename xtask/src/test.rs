//! `cargo xtask test`: every check of the project, as a list of named steps.
//!
//! A step is either a plain command (one check: passed if it exits with status 0) or a libtest
//! command (`cargo test`), where every individual test counts as one check. Steps whose
//! precondition fails (a missing rustup component or target, missing loom tests) count as one
//! failed check with a message saying how to fix it. The last line printed is always
//! `test: N passed, M failed`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use crate::guestrun::{QemuRun, Variant, Workload};
use crate::libtest;
use crate::proc::{Captured, Cmd};
use crate::qemu::{self, Arch, Lock, Machine};

/// The x86_64 bare-metal target.
const X86: &str = "x86_64-unknown-none";
/// The ARMv7-A bare-metal target.
const ARM: &str = "armv7a-none-eabi";
/// The AArch64 bare-metal target: the lock crate (its AArch64 interrupt guards and barriers)
/// and the crates it stands on; no kernel or image runs on it.
const AARCH64: &str = "aarch64-unknown-none";
/// The bare-metal targets, in the order their steps run.
const BARE_METAL_TARGETS: [&str; 3] = [X86, ARM, AARCH64];

/// The `no_std` crates and the bare-metal targets each must build (and be clippy-clean) for.
/// A crate whose directory does not exist is left out; a new bare-metal crate or target adds
/// a row here.
const BARE_METAL: &[(&str, &[&str])] = &[
    // crate        targets
    ("abi", &[X86, ARM]),
    ("kernel-locks", &[X86, ARM, AARCH64]),
    ("kernel", &[X86, ARM]),
    ("hal-common", &[X86, ARM]),
    ("hal-x86", &[X86]),
    ("hal-armv7", &[ARM]),
    ("pager", &[X86, ARM]),
    ("servers", &[X86, ARM]),
    ("image-common", &[X86, ARM]),
    ("image-x86", &[X86]),
    ("image-armv7", &[ARM]),
    ("kv-resp", &[X86, ARM]),
];

/// Core counts the QEMU test suite runs with (each with every lock).
const QEMU_SMP: &[u32] = &[1, 4];

/// Seconds one QEMU suite run may take before it is killed and reported as a hang.
const QEMU_TIMEOUT_SECS: u32 = 60;

/// Seconds one `--fuzz` run may take (10^5 calls per core on 4 cores take about 60 s on
/// x86_64 microvm and 80 s on ARMv7 sabrelite under multi-threaded TCG on the 2-vCPU
/// development VM, a few seconds with the cores on one host thread).
const FUZZ_TIMEOUT_SECS: u32 = 420;

/// Cores of the fuzz runs.
const FUZZ_SMP: u32 = 4;

/// Seconds a stack-overflow run may take: the report comes within a second or two of boot, so a
/// run still going after this has hung (the overflow went unnoticed).
const STACK_OVERFLOW_TIMEOUT_SECS: u32 = 20;

/// Seconds the network server's RESP session may take, boot included (the server is up in
/// about a second and the session takes well under one on the 2-vCPU development VM).
const NET_TIMEOUT_SECS: u32 = 60;

/// The lock crate: publishable on its own, checked with its MSRV, embedded by an outside crate.
const LOCK_CRATE: &str = "kernel-locks";

/// The lock crate's own cfg for its loom build (a kernel's `--cfg loom` leaves the crate alone).
const LOOM_CFG: &str = "kernel_locks_loom";

/// The lock crate's minimum supported Rust version (`rust-version` in its manifest).
const LOCK_CRATE_MSRV: &str = "1.85";

/// The lock crate's features that need a newer Rust than [`LOCK_CRATE_MSRV`] (as its manifest
/// and README say): `lock-crate:msrv` checks every other feature. The other steps build them
/// with the pinned toolchain (`rust-toolchain.toml`), at least the Rust they need.
/// `lock_api_05`: `lock_api` 0.5, `rust-version` 1.95.
const LOCK_CRATE_NEWER_RUST_FEATURES: &[&str] = &["lock_api_05"];

/// The examples that must run (example name, package, features).
const EXAMPLES: &[(&str, &str, &str)] = &[("embed", "kernel-locks", "lock_api")];

/// How many lines of a failing step's output are shown.
const TAIL_LINES: usize = 60;

/// A step still running after this long is killed (with its child processes) and fails: a hung
/// lock test or example must not hold CI until its own limit.
const STEP_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// The step groups, in the order their first steps run, and what each checks: the text of
/// `cargo xtask test --help`, whose list of groups and step counts comes from [`steps`] (a unit
/// test keeps the two equal).
const GROUPS: &[(&str, &str)] = &[
    (
        "doctor",
        "the doctor's check of every tool and Debian package the steps use",
    ),
    ("fmt", "formatting (`cargo fmt --all --check`)"),
    (
        "clippy",
        "clippy with -D warnings: on the host for the whole workspace, all targets and \
         features, and for the bare-metal crates of each bare-metal target",
    ),
    (
        "build",
        "the bare-metal crates built for each bare-metal target, and the simulator's trace \
         format without std",
    ),
    (
        "test",
        "`cargo test --workspace --all-features --no-fail-fast`",
    ),
    (
        "lockdep",
        "the hosted stress and adversarial suites with the lock-order checker over the \
         fine-grained strategy's locks (`--features lockdep`)",
    ),
    (
        "book",
        "the documentation book (docs/, mdBook): every page a chapter, every link and anchor \
         resolved, the README's headline table equal to the committed runs, then built",
    ),
    (
        "libfuzzer",
        "each libFuzzer target under fuzz/ (`cargo xtask fuzz`): its committed corpus replayed, \
         then a few seconds of fuzzing, built with the pinned nightly and cargo-fuzz",
    ),
    (
        "loom",
        "the loom models (<crate>/tests/loom_*.rs) under each crate's own loom cfg in release \
         mode, built in target/loom so the main build is kept; --quick leaves them out",
    ),
    (
        "lock-crate",
        "the lock crate on its own: its minimum Rust version, `cargo publish --dry-run`, its \
         tests as ARMv7 Linux code under qemu-arm",
    ),
    (
        "embed",
        "the lock crate embedded by an outside crate (sync/embed-check), for the x86_64, ARMv7 \
         and AArch64 bare-metal targets, clippy, and its host tests with and without a global `--cfg loom`",
    ),
    (
        "qemu",
        "the QEMU demo and test suite on x86_64 and each ARMv7 machine with 1 and 4 cores and \
         every lock, debug and no-fastpath images, stack-overflow reports, the HALs' boot \
         demos",
    ),
    (
        "net",
        "the network server under QEMU: scripted RESP sessions, the standard client load, YCSB",
    ),
    ("fuzz", "the in-guest system-call fuzzer with every lock"),
    (
        "memory",
        "the memory system's checks: per-core and global pagers, memory nodes",
    ),
    (
        "bench",
        "the benchmark driver end to end on tiny configurations, with its -icount \
         determinism and output checks",
    ),
    (
        "trace",
        "kernel lock traces from the hosted harness and from the images, end to end",
    ),
    (
        "sim",
        "the simulator's calibration and a recorded trace's replay, end to end",
    ),
    (
        "flash",
        "the boot media written to files and checked, booted under QEMU where they can be",
    ),
    ("example", "the examples"),
];

/// The long help of `cargo xtask test`: the groups of [`GROUPS`] with their step counts.
pub fn long_help() -> String {
    let all = steps(&crate::workspace_root(), false);
    let mut text = String::from(
        "Before the first step it installs the Debian packages and rustup targets the selected \
         steps use (see `cargo xtask doctor`).\n\nSteps, in order, by group (`--only GROUP` runs \
         a group, `--only NAME` one step; `--list` names every step and its command):\n",
    );
    for (group, what) in GROUPS {
        let names: Vec<&str> = all
            .iter()
            .filter(|s| s.group() == *group)
            .map(|s| s.name.as_str())
            .collect();
        let shown = match names.as_slice() {
            [only] if only == group => String::new(),
            few if few.len() <= 5 => format!(" [{}]", few.join(", ")),
            [first, second, ..] => format!(" [{first}, {second}, ...]"),
            _ => unreachable!("a longer list has two names"),
        };
        let count = names.len();
        let steps = if count == 1 { "step" } else { "steps" };
        text.push_str(&format!(
            "  {group:<11} {count:>3} {steps:<6} {what}{shown}\n"
        ));
    }
    text.push_str(
        "\nA libtest step counts each test as one check; a QEMU suite each `TEST` line of the \
         guest (a missing test, sentinel, panic, triple fault or hang is a failed check); every \
         other step counts as one check.\n\nThe exit status is non-zero when a check failed or \
         a step could not run.",
    );
    text
}

/// Options of `cargo xtask test`.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Skip the loom model checking step (the slowest one).
    #[arg(long)]
    quick: bool,

    /// Run only this step, or every step of this group (the part before ':', such as `clippy`).
    /// May be repeated. `--list` shows the names.
    #[arg(long, value_name = "STEP")]
    only: Vec<String>,

    /// List the steps (with the commands they run) and exit.
    #[arg(long)]
    list: bool,

    /// Show every step's output as it runs, not only the tail of failing steps.
    #[arg(short, long)]
    verbose: bool,
}

impl TestArgs {
    /// Whether the run builds anything (`--list` only prints).
    pub fn builds(&self) -> bool {
        !self.list
    }
}

/// How a step's output is judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Judge {
    /// One check: passed if the command exits with status 0.
    ExitStatus,
    /// libtest output: one check per test (and one failed check if the command failed without
    /// any failing test, as on a compile error or a crashed test binary).
    Libtest,
    /// A QEMU test-suite run (`cargo xtask qemu --tests`): one check per `TEST` line of the
    /// guest, plus one failed check for a missing plan, sentinel or test, or a bad exit.
    QemuSuite {
        /// The least plan the guest must announce ([`crate::qemu::min_plan`]).
        min_plan: usize,
    },
    /// One check: passed if the command exits with status 0 and its output holds every line
    /// of the excerpts the docs show of it ([`excerpts`]): an excerpt cannot go stale silently.
    Excerpt {
        /// The marker naming the excerpts (`<!-- excerpt: MARK -->` before a code block).
        mark: &'static str,
    },
    /// One check: passed if the command exits with status 0 and prints no `warning:` line other
    /// than the ones listed (cargo's own notes that are not problems, such as a dry run's).
    NoWarnings {
        /// Warning lines (after `warning: `) that do not count.
        allowed: &'static [&'static str],
    },
}

/// What a step needs before it can run.
#[derive(Clone, Debug)]
enum Needs {
    /// A rustup component, checked with `cargo <subcommand> --version`.
    Component {
        /// The cargo subcommand (`fmt`, `clippy`).
        subcommand: &'static str,
        /// The rustup component that provides it.
        component: &'static str,
    },
    /// The standard library of a rustup target.
    Target(&'static str),
}

/// One named step of `cargo xtask test`.
#[derive(Clone, Debug)]
struct Step {
    /// `group` or `group:detail`, for `--only` and the report.
    name: String,
    /// The command to run, or why the step cannot run.
    cmd: Result<Cmd, String>,
    judge: Judge,
    needs: Vec<Needs>,
    /// What to do when the step fails, if there is something better than reading the output.
    fix: Option<&'static str>,
    /// Host tools (and the Debian packages providing them) without which the step is skipped
    /// (counted apart, neither passed nor failed) rather than failed; `cargo xtask test`
    /// installs them before the first step where it may ([`host_env::deps`]).
    tools: Vec<crate::flash::Tool>,
}

impl Step {
    fn new(name: impl Into<String>, cmd: Cmd, judge: Judge) -> Self {
        Self::from_result(name, Ok(cmd), judge)
    }

    /// A step whose command may be unavailable (`Err` says why).
    fn from_result(name: impl Into<String>, cmd: Result<Cmd, String>, judge: Judge) -> Self {
        Self {
            name: name.into(),
            cmd,
            judge,
            needs: Vec::new(),
            fix: None,
            tools: Vec::new(),
        }
    }

    fn tools(mut self, tools: &[crate::flash::Tool]) -> Self {
        self.tools.extend_from_slice(tools);
        self
    }

    fn needs(mut self, need: Needs) -> Self {
        self.needs.push(need);
        self
    }

    fn fix(mut self, fix: &'static str) -> Self {
        self.fix = Some(fix);
        self
    }

    fn group(&self) -> &str {
        self.name.split(':').next().unwrap_or(&self.name)
    }
}

const RUSTFMT: Needs = Needs::Component {
    subcommand: "fmt",
    component: "rustfmt",
};
const CLIPPY: Needs = Needs::Component {
    subcommand: "clippy",
    component: "clippy",
};

/// Every step, in order. `quick` leaves out the loom step.
fn steps(root: &Path, quick: bool) -> Vec<Step> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the xtask binary: {e}"));
    let mut steps = vec![
        // Every tool any step uses, found, and from the Debian package the installer installs
        // (a tool a hand install provides from another package would be missing on a fresh
        // machine), and the ARM cross tools building and running a C program.
        Step::from_result(
            "doctor",
            exe.map(|exe| Cmd::new(exe).arg("doctor")),
            Judge::ExitStatus,
        )
        .fix("`cargo xtask doctor` lists what is missing or wrong; `--install` installs it"),
        // `--files-with-diff`: name the files rather than print every diff.
        Step::new(
            "fmt",
            Cmd::cargo().args(["fmt", "--all", "--check", "--", "--files-with-diff"]),
            Judge::ExitStatus,
        )
        .needs(RUSTFMT)
        .fix("run `cargo fmt --all` to format the files listed above"),
        Step::new(
            "clippy:host",
            Cmd::cargo().args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--all-features",
                "--",
                "-D",
                "warnings",
            ]),
            Judge::ExitStatus,
        )
        .needs(CLIPPY),
    ];

    for target in BARE_METAL_TARGETS {
        let crates: Vec<&str> = BARE_METAL
            .iter()
            .filter(|(krate, targets)| {
                targets.contains(&target)
                    && crate::crate_dir(root, krate).join("Cargo.toml").is_file()
            })
            .map(|(krate, _)| *krate)
            .collect();
        if crates.is_empty() {
            continue;
        }
        let packages: Vec<String> = crates
            .iter()
            .flat_map(|c| ["-p", c])
            .map(String::from)
            .collect();
        steps.push(
            Step::new(
                format!("clippy:{target}"),
                Cmd::cargo()
                    .arg("clippy")
                    .args(&packages)
                    .args(["--target", target, "--", "-D", "warnings"]),
                Judge::ExitStatus,
            )
            .needs(CLIPPY)
            .needs(Needs::Target(target)),
        );
        steps.push(
            Step::new(
                format!("build:{target}"),
                Cmd::cargo()
                    .arg("build")
                    .args(&packages)
                    .args(["--target", target]),
                Judge::ExitStatus,
            )
            .needs(Needs::Target(target)),
        );
        // The kernel writes its lock traces in the trace format, and the simulator reads them
        // with it: both must stay `no_std` (their default `std` feature off).
        for (package, step) in [
            ("sim", "sim-no-std"),
            ("trace-format", "trace-format-no-std"),
        ] {
            if crate::crate_dir(root, package).join("Cargo.toml").is_file() {
                steps.push(
                    Step::new(
                        format!("build:{target}-{step}"),
                        Cmd::cargo().args([
                            "build",
                            "-p",
                            package,
                            "--no-default-features",
                            "--target",
                            target,
                        ]),
                        Judge::ExitStatus,
                    )
                    .needs(Needs::Target(target)),
                );
            }
        }
    }

    // Plain `cargo test` of every member, so doc tests run too (the lock crate's README and
    // per-lock examples among them: `Doc-tests kernel_locks`).
    steps.push(Step::new(
        "test",
        Cmd::cargo().args(["test", "--workspace", "--all-features", "--no-fail-fast"]),
        Judge::Libtest,
    ));
    steps.push(lockdep_step());
    // The documentation book: its links and the README's figures checked, then built.
    steps.push(
        Step::from_result(
            "book",
            std::env::current_exe()
                .map(|exe| Cmd::new(exe).arg("book"))
                .map_err(|e| format!("cannot find the xtask binary: {e}")),
            Judge::ExitStatus,
        )
        .fix("`cargo xtask book` lists each dead link and page; `--update` rewrites the README's headline table"),
    );
    steps.extend(libfuzzer_steps());

    if !quick {
        steps.extend(LOOM_CRATES.map(|c| loom_step(root, c)));
    }
    steps.extend(lock_crate_steps(root));
    steps.extend(embed_steps(root));

    steps.extend(qemu_steps());
    steps.push(boot_demo_step(
        root,
        "hal-x86",
        "qemu:x86_64-boot",
        X86,
        "install QEMU for x86 (`apt-get install qemu-system-x86`) if it is missing",
    ));
    steps.push(boot_demo_step(
        root,
        "hal-armv7",
        "qemu:armv7-boot",
        ARM,
        "install QEMU for ARM (`apt-get install qemu-system-arm`) if it is missing",
    ));
    steps.extend(armv7_qemu_steps());
    steps.extend(fuzz_steps());
    steps.extend(memory_steps());
    steps.extend(END_TO_END.iter().map(|run| run.step(root)));
    steps.extend(flash_steps(root));

    for (example, package, features) in EXAMPLES {
        let name = format!("example:{example}");
        let file = crate::crate_dir(root, package)
            .join("examples")
            .join(format!("{example}.rs"));
        let cmd = if file.is_file() {
            Ok(Cmd::cargo().args([
                "run",
                "-p",
                package,
                "--example",
                example,
                "--features",
                features,
            ]))
        } else {
            Err(format!("{} does not exist", display_rel(root, &file)))
        };
        steps.push(Step::from_result(name, cmd, Judge::ExitStatus));
    }
    steps
}

/// Seconds each `libfuzzer:*` step fuzzes after its corpus replays: enough to catch a target
/// that no longer builds or crashes at once, short enough that the group (with the nightly
/// build of the targets) stays within a few minutes on two cores.
const LIBFUZZER_STEP_SECS: &str = "5";

/// One step per libFuzzer target: `cargo xtask fuzz --target T --time 5` (the corpus replay,
/// then a short run).
fn libfuzzer_steps() -> Vec<Step> {
    fuzz_runner::TARGETS
        .iter()
        .map(|t| {
            let cmd = std::env::current_exe()
                .map(|exe| {
                    Cmd::new(exe).args(["fuzz", "--target", t.name, "--time", LIBFUZZER_STEP_SECS])
                })
                .map_err(|e| format!("cannot find the xtask binary: {e}"));
            Step::from_result(format!("libfuzzer:{}", t.name), cmd, Judge::ExitStatus).fix(
                "a crash names its input under fuzz/artifacts/; replay it with the command \
                 printed, fix the crate, add a regression test (docs/fuzzing.md)",
            )
        })
        .collect()
}

/// The hosted suites that run the kernel's fine-grained strategy on host threads with the most
/// lock traffic ([`LOCKDEP_SUITES`]), with the lock-order checker on (`tests/lockdep` ->
/// `kernel/lockdep` -> `kernel-locks/lockdep`): every acquisition of the big-reader lock and
/// of the object locks is checked against the order the run has seen so far, and a core that
/// leaves the kernel holding a lock panics. Only the features these suites need, so that the
/// checker's reports are not mixed with tracing.
fn lockdep_step() -> Step {
    let mut cmd = Cmd::cargo().args(["test", "-p", "tests", "--features", "lockdep"]);
    for suite in LOCKDEP_SUITES {
        cmd = cmd.args(["--test", suite]);
    }
    Step::new("lockdep:hosted", cmd, Judge::Libtest).fix(
        "a `lockdep:` panic names the acquisition, the lock held and the recorded opposite \
         order with their lines: the kernel took its locks in an order that can deadlock",
    )
}

/// The suites of `lockdep:hosted` (`tests/tests/<name>.rs`).
const LOCKDEP_SUITES: &[&str] = &["stress", "adversarial"];

/// The steps that keep the lock crate usable outside this workspace:
/// * `lock-crate:msrv`: `cargo check` of the crate (every feature but those of
///   [`LOCK_CRATE_NEWER_RUST_FEATURES`], host and both bare-metal targets) with its minimum
///   supported Rust version, installed by rustup if missing (a minimal profile with the two
///   targets takes a few seconds from the Rust distribution server; a machine that cannot reach
///   it fails here, with the command to run). Its own target directory.
/// * `lock-crate:publish`: `cargo publish --dry-run`: packages the crate alone and builds the
///   package against crates.io, as publishing would; any cargo warning fails it.
fn lock_crate_steps(root: &Path) -> Vec<Step> {
    let target_dir = crate::target_dir(root);
    let msrv_cmd =
        msrv_features(&crate::crate_dir(root, LOCK_CRATE).join("Cargo.toml")).map(|features| {
            let checks: Vec<String> = ["", X86, ARM]
                .iter()
                .map(|target| {
                    let target = if target.is_empty() {
                        String::new()
                    } else {
                        format!(" --target {target}")
                    };
                    format!(
                        "rustup run {LOCK_CRATE_MSRV} cargo check -p {LOCK_CRATE} \
                     --features {features} --lib{target}"
                    )
                })
                .collect();
            let script = format!(
                "rustup toolchain install {LOCK_CRATE_MSRV} --profile minimal --target {X86} \
             --target {ARM} >/dev/null && {}",
                checks.join(" && ")
            );
            Cmd::new("bash")
                .args(["-c", &script])
                .env("CARGO_TARGET_DIR", target_dir.join("msrv"))
        });
    let msrv = Step::from_result(
        "lock-crate:msrv",
        msrv_cmd,
        Judge::NoWarnings { allowed: &[] },
    )
    .fix("the crate uses something newer than its rust-version, or rustup could not install the toolchain");
    let publish = Step::new(
        "lock-crate:publish",
        Cmd::cargo()
            .args(["publish", "--dry-run", "--allow-dirty", "-p", LOCK_CRATE])
            .env("CARGO_TARGET_DIR", target_dir.join("publish")),
        Judge::NoWarnings {
            allowed: &["aborting upload due to dry run"],
        },
    );
    // The misuse checks differ between debug and release builds (the crate README's table):
    // the `test` step runs the debug rows, this one the release rows, with every other test of
    // the crate in a release build beside them.
    let release = Step::new(
        "lock-crate:release",
        Cmd::cargo().args(["test", "-p", LOCK_CRATE, "--release", "--all-features"]),
        Judge::Libtest,
    );
    vec![msrv, publish, release, lock_crate_arm_threads(&target_dir)]
}

/// The Linux target whose user-mode emulation runs the lock crate's tests as ARMv7 code.
const ARM_LINUX: &str = "armv7-unknown-linux-gnueabihf";

/// `lock-crate:armv7-threads`: the lock crate's tests with every feature, as the host's
/// `test` step has them (stress tests on host threads, exact totals, misuse, the guards,
/// `lock_api`, RTM's simulated engines) built for ARMv7 Linux and run under QEMU's user-mode emulation
/// (`qemu-arm`, threads on the host's cores), each test one check. The host test step runs
/// them as x86_64 code; this one runs the crate's ARM-only code, its `ldrex`/`strex` loops and
/// the CLH lock's address-dependent first poll, on real threads, so that a wrong address or a
/// broken retry loop fails (QEMU on x86 does not show ARM's weaker reorderings: those are argued
/// in the module documentation). Its own target directory.
fn lock_crate_arm_threads(target_dir: &Path) -> Step {
    let env_target = ARM_LINUX.to_uppercase().replace('-', "_");
    Step::new(
        "lock-crate:armv7-threads",
        Cmd::cargo()
            .args(["test", "-p", LOCK_CRATE, "--all-features", "--target", ARM_LINUX])
            .env(
                format!("CARGO_TARGET_{env_target}_LINKER"),
                "arm-linux-gnueabihf-gcc",
            )
            .env(
                format!("CARGO_TARGET_{env_target}_RUNNER"),
                "qemu-arm -L /usr/arm-linux-gnueabihf",
            )
            .env("CARGO_TARGET_DIR", target_dir.join("arm-linux")),
        Judge::Libtest,
    )
    .needs(Needs::Target(ARM_LINUX))
    .fix("install the cross tools (`apt-get install qemu-user gcc-arm-linux-gnueabihf`) if they are missing")
}

/// The lock crate's features that its MSRV builds, comma-separated: every feature of its
/// manifest `manifest` but `default` and [`LOCK_CRATE_NEWER_RUST_FEATURES`], each of which must
/// be there (a renamed feature must not slip back into the check).
fn msrv_features(manifest: &Path) -> Result<String, String> {
    let text = fs::read_to_string(manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| format!("{}: {e}", manifest.display()))?;
    let features = match table.get("features") {
        Some(toml::Value::Table(features)) => features,
        _ => return Err(format!("{}: no [features] table", manifest.display())),
    };
    if let Some(missing) = LOCK_CRATE_NEWER_RUST_FEATURES
        .iter()
        .find(|feature| !features.contains_key(**feature))
    {
        return Err(format!(
            "{}: no feature `{missing}` (named in LOCK_CRATE_NEWER_RUST_FEATURES)",
            manifest.display()
        ));
    }
    Ok(features
        .keys()
        .filter(|name| {
            *name != "default" && !LOCK_CRATE_NEWER_RUST_FEATURES.contains(&name.as_str())
        })
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(","))
}

/// The outside-embedding check: `sync/embed-check`, a crate with a `[workspace]`
/// of its own that depends on the lock crate by path as another kernel would. Built for every
/// bare-metal target (x86_64, ARMv7, AArch64); its host tests (threads as CPUs, exact totals) run twice, once as they
/// are and once with the global `--cfg loom` that such a kernel uses for its own loom tests,
/// which must leave the lock crate unchanged. Target directories under `target/` of their own.
fn embed_steps(root: &Path) -> Vec<Step> {
    let manifest = crate::crate_dir(root, LOCK_CRATE).join("embed-check/Cargo.toml");
    if !manifest.is_file() {
        let why = format!("{} does not exist", display_rel(root, &manifest));
        return vec![Step::from_result("embed", Err(why), Judge::ExitStatus)];
    }
    let target_dir = crate::target_dir(root);
    let cargo = |args: &[&str], dir: &str| {
        Cmd::cargo()
            .args(args)
            .arg("--manifest-path")
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", target_dir.join(dir))
    };
    let mut steps: Vec<Step> = BARE_METAL_TARGETS
        .into_iter()
        .map(|target| {
            Step::new(
                format!("embed:{target}"),
                cargo(&["build", "--lib", "--target", target], "embed"),
                Judge::NoWarnings { allowed: &[] },
            )
            .needs(Needs::Target(target))
        })
        .collect();
    steps.push(
        Step::new(
            "embed:clippy",
            cargo(&["clippy", "--all-targets"], "embed").args(["--", "-D", "warnings"]),
            Judge::ExitStatus,
        )
        .needs(CLIPPY),
    );
    steps.push(Step::new(
        "embed:host",
        cargo(&["test"], "embed"),
        Judge::Libtest,
    ));
    // Setting RUSTFLAGS replaces `build.rustflags`; keep what the environment had.
    let rustflags = match std::env::var("RUSTFLAGS") {
        Ok(flags) if !flags.trim().is_empty() => format!("{flags} --cfg loom"),
        _ => "--cfg loom".to_owned(),
    };
    steps.push(Step::new(
        "embed:host-cfg-loom",
        cargo(&["test"], "embed-cfg-loom").env("RUSTFLAGS", rustflags),
        Judge::Libtest,
    ));
    steps
}

/// A step that runs this xtask binary's `qemu` command as `run` says.
fn qemu_step(name: impl Into<String>, run: &QemuRun, judge: Judge) -> Step {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the xtask binary: {e}"));
    let step = Step::from_result(name, exe.map(|exe| Cmd::new(exe).args(run.argv())), judge);
    if run.arch == Some(Arch::Armv7) {
        step.needs(Needs::Target(ARM))
    } else {
        step
    }
}

/// How a test-suite run with `smp` cores is judged.
fn suite(smp: u32) -> Judge {
    Judge::QemuSuite {
        min_plan: qemu::min_plan(smp as usize),
    }
}

/// The test suite on every core count of [`QEMU_SMP`] under every lock of the registry whose
/// rows ask for that count, booted as `tests` makes the run, the steps named
/// `<prefix>smp<cores>-<lock>`.
fn suite_matrix(prefix: &str, tests: impl Fn(u32, Lock) -> QemuRun) -> Vec<Step> {
    let mut steps = Vec::new();
    for &smp in QEMU_SMP {
        let rows = |lock: &Lock| match smp {
            1 => lock.rows().suite_smp1,
            _ => lock.rows().suite_smp4,
        };
        for lock in Lock::ALL.into_iter().filter(rows) {
            steps.push(qemu_step(
                format!("{prefix}smp{smp}-{}", lock.name()),
                &tests(smp, lock),
                suite(smp),
            ));
        }
    }
    steps
}

/// The files whose excerpts of command output are checked against a run.
const EXCERPT_FILES: [&str; 2] = ["README.md", "docs/getting-started.md"];

/// The excerpts marked `mark` in `text`: the lines of each code block that follows a line
/// `<!-- excerpt: MARK -->`, without blank lines and the `...` lines that stand for what is
/// left out.
fn excerpts(text: &str, mark: &str) -> Vec<String> {
    let marker = format!("<!-- excerpt: {mark} -->");
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != marker {
            continue;
        }
        let mut inside = false;
        for line in lines.by_ref() {
            if line.trim_start().starts_with("```") {
                if inside {
                    break;
                }
                inside = true;
            } else if inside && line.trim() != "..." && !line.trim().is_empty() {
                found.push(line.to_string());
            }
        }
    }
    found
}

/// A line with every run of digits replaced by `N` and its ends trimmed: the shape of a line
/// whose counts and times differ from run to run.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in line.trim().chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// The excerpt lines marked `mark` in [`EXCERPT_FILES`] that `output` has no line of the same
/// [`shape`] for, with their file. A file without the marker contributes nothing; a marker
/// found in no file is itself stale (it names an excerpt that was removed).
fn stale_excerpt_lines(root: &Path, mark: &str, output: &[String]) -> Vec<(String, String)> {
    let printed: std::collections::HashSet<String> = output.iter().map(|l| shape(l)).collect();
    let mut stale = Vec::new();
    let mut any = false;
    for file in EXCERPT_FILES {
        let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
        for line in excerpts(&text, mark) {
            any = true;
            if !printed.contains(&shape(&line)) {
                stale.push((file.to_string(), line));
            }
        }
    }
    if !any {
        stale.push((
            EXCERPT_FILES.join(", "),
            format!("<!-- excerpt: {mark} --> (no such excerpt)"),
        ));
    }
    stale
}

/// The QEMU steps: the demo once (4 cores, CLH), then the test suite with every core count of
/// [`QEMU_SMP`] and every lock. They run this xtask binary's `qemu` command, which builds the
/// image (once; later runs find it up to date) and boots it.
fn qemu_steps() -> Vec<Step> {
    let tests = |smp, lock| QemuRun::new(Workload::Tests, QEMU_TIMEOUT_SECS).with(smp, lock);
    // The demo's console must hold the lines the README and the book show of it.
    let mut steps = vec![qemu_step(
        "qemu:demo",
        &QemuRun::new(Workload::Demo, QEMU_TIMEOUT_SECS),
        Judge::Excerpt { mark: "qemu:demo" },
    )];
    steps.extend(suite_matrix("qemu:", tests));
    // `cpus=2` on a 4-core machine (what `--smp` means on hardware, where `cargo xtask flash`
    // writes it into the boot command line): the kernel uses two cores, the rest stay parked,
    // and the suite (its SMP self-test included) must hold.
    let mut cpus2 = tests(4, Lock::Ticket);
    cpus2.append = Some("cpus=2");
    steps.push(qemu_step("qemu:smp4-cpus2", &cpus2, suite(2)));
    // The suite with the fine-grained strategy (whose kernel object is the largest) twice
    // more: on the dev-profile image (`--debug`: debug assertions and overflow checks on), so
    // that the HAL's and the kernel's debug checks run in the guest too; and with the IPC
    // fastpath off (`--no-fastpath`: `fastpath=0`, and the boot line must say so), so that
    // every IPC takes the full path, whose results the same tests check.
    for (name, variant) in [
        ("qemu:x86_64-debug-smp4-fine", Variant::Debug),
        ("qemu:x86_64-smp4-fine-no-fastpath", Variant::NoFastpath),
    ] {
        steps.push(qemu_step(
            name,
            &tests(4, Lock::Fine).variant(variant),
            suite(4),
        ));
    }
    // A kernel stack overflow provoked on purpose must be caught by the guard page and
    // reported (`cargo xtask qemu --stack-overflow` judges the console and exit status).
    let mut overflow = QemuRun::new(Workload::StackOverflow, STACK_OVERFLOW_TIMEOUT_SECS);
    overflow.smp = Some(2);
    steps.push(qemu_step(
        "qemu:x86_64-stack-overflow",
        &overflow,
        Judge::ExitStatus,
    ));
    // The network server (`mode=net`): a NIC driver on core 0, and smoltcp and the RESP2
    // key-value server on each of 2 cores, driven from the host over the default network
    // (passt) by `cargo xtask qemu --net --check`'s scripted session (PING, SET/GET,
    // pipelining, INCR, an unknown command, two connections at once, every socket taken, core
    // 1's server with its own store); QEMU is stopped at the end either way. The virtio-net
    // driver on x86_64 microvm and ARM `-M virt`, the i.MX6 ENET driver on sabrelite; the same
    // session once more over QEMU's user network, the fallback. One core: `bench:redis-tiny`.
    let net = |check, arch, machine: Option<Machine>, timeout| {
        let mut run = QemuRun::new(Workload::Net { check }, timeout);
        run.arch = Some(arch);
        run.machine = machine;
        run.smp = Some(2);
        run
    };
    let mut user_network = net(true, Arch::X86_64, None, NET_TIMEOUT_SECS);
    user_network.network = Some("user");
    let checks = [
        (
            "net:x86_64-resp",
            net(true, Arch::X86_64, None, NET_TIMEOUT_SECS),
        ),
        (
            "net:armv7-virt-resp",
            net(true, Arch::Armv7, Some(Machine::Virt), NET_TIMEOUT_SECS),
        ),
        (
            "net:armv7-sabrelite-resp",
            net(
                true,
                Arch::Armv7,
                Some(Machine::Sabrelite),
                NET_TIMEOUT_SECS,
            ),
        ),
        ("net:x86_64-resp-user-network", user_network),
    ];
    for (name, run) in &checks {
        steps.push(qemu_step(*name, run, Judge::ExitStatus));
    }
    // The standard client load over the default network (`bench/redis-load/standard.sh`):
    // redis-benchmark with its default 50 connections, every test of its default list (21
    // tests, the LRANGE ones with replies of up to 600 elements), unpipelined and 16 deep,
    // against every core's server, then a read-back of every acknowledged write (the INCR
    // counter must equal the requests, the list and the stream hold what the tests left).
    // Fails if a connection is refused or reset, a request is not answered or answered with an
    // error, or a write is lost. The steps send 8,000 requests per test (a multiple of the 50
    // connections times the 16-deep pipeline, which the exact read-back needs), so both servers of
    // both guests fit in a few minutes; redis-benchmark's own default of 100,000 (4,200,000
    // requests per server, about 15 minutes on the x86_64 guest here) is the manual run that
    // docs/network.md describes.
    let load = "for p in $(echo $REDIS_TEST_PORTS | tr , ' '); do \
                REDIS_TEST_PORT=$p REQUESTS=8000 bench/redis-load/standard.sh || exit 1; done";
    for (name, arch, machine) in [
        ("net:x86_64-c50", Arch::X86_64, None),
        ("net:armv7-virt-c50", Arch::Armv7, Some(Machine::Virt)),
    ] {
        let mut run = net(false, arch, machine, 900);
        run.client = Some(load);
        steps.push(
            qemu_step(name, &run, Judge::ExitStatus)
                .tools(&[("redis-benchmark", "redis-tools"), ("passt", "passt")]),
        );
    }
    // The real clients against the guest's server: the YCSB binding (built with Maven from
    // `site.ycsb:core` and Jedis) runs its JUnit round trips with `REDIS_TEST_PORT` set, so a
    // server that does not answer fails them, then YCSB itself loads 100 records and runs 2000
    // operations of workload A (`run-ycsb.sh` fails unless every operation returned OK).
    let ycsb = "mvn -B -q -f bench/ycsb-redis/pom.xml package \
        && bench/ycsb-redis/run-ycsb.sh load -P bench/ycsb-redis/workloads/workloada \
           -p recordcount=100 -p redis.port=$REDIS_TEST_PORT \
        && bench/ycsb-redis/run-ycsb.sh run -P bench/ycsb-redis/workloads/workloada \
           -p recordcount=100 -p operationcount=2000 -p redis.port=$REDIS_TEST_PORT";
    let mut run = net(false, Arch::X86_64, None, 600);
    run.smp = Some(1);
    run.client = Some(ycsb);
    steps.push(
        qemu_step("net:x86_64-ycsb", &run, Judge::ExitStatus)
            .tools(&[("mvn", "maven"), ("java", "default-jre-headless")]),
    );
    // Redis's own test units (`bench/redis-suite/run.sh`: protocol, strings, counters,
    // keyspace, expiry, hashes, lists, sets, sorted sets) in the suite's external-server mode
    // against core 0's server, apart from the tests its lists name with their reasons.
    // `cargo xtask test` fetches the suite (Debian's Redis 7.0.15 source archive) first.
    for (name, arch, machine) in [
        ("net:x86_64-redis-suite", Arch::X86_64, None),
        (
            "net:armv7-virt-redis-suite",
            Arch::Armv7,
            Some(Machine::Virt),
        ),
    ] {
        let mut run = net(false, arch, machine, 1800);
        run.client = Some("REDIS_SUITE_GUEST=1 bench/redis-suite/run.sh");
        steps.push(
            qemu_step(name, &run, Judge::ExitStatus).tools(&[("tclsh", "tcl"), ("curl", "curl")]),
        );
    }
    steps
}

/// The boot media of `cargo xtask flash`, written to files under `<target>/flash-test` and
/// checked (`--check`): the pc image booted from the written file as a disk through GRUB and
/// multiboot2 under SeaBIOS on `-M pc` and `-M q35` and under UEFI (OVMF) on `-M q35`, each with
/// another core count and lock (`cpus online: N`, `lock: NAME` and the demo's success exit are
/// required); the Sabre Lite SD image's partition table, files, U-Boot header, boot script and
/// kernel. Skipped, not failed, when a tool is missing (`cargo xtask test` installs them
/// first where it may).
fn flash_steps(root: &Path) -> Vec<Step> {
    use crate::flash::{Tool, OVMF, PC_TOOLS, SD_TOOLS};
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the xtask binary: {e}"));
    let dir = crate::target_dir(root).join("flash-test");
    let ovmf: &[Tool] = &[(OVMF, "ovmf")];
    let qemu_x86: &[Tool] = &[("qemu-system-x86_64", "qemu-system-x86")];
    // (step, board, cores, lock, firmware, tools)
    type Run = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        Option<&'static str>,
    );
    let uboot: &[Tool] = &[
        (crate::flash::UBOOT_VIRT, "u-boot-qemu"),
        ("qemu-system-arm", "qemu-system-arm"),
    ];
    let runs: [(Run, Vec<Tool>); 5] = [
        (
            ("pc-seabios-pc", "pc", "2", "ticket", Some("seabios-pc")),
            [PC_TOOLS, qemu_x86].concat(),
        ),
        (
            ("pc-seabios-q35", "pc", "4", "clh", Some("seabios-q35")),
            [PC_TOOLS, qemu_x86].concat(),
        ),
        (
            ("pc-uefi", "pc", "2", "fine", Some("ovmf-q35")),
            [PC_TOOLS, qemu_x86, ovmf].concat(),
        ),
        (
            ("sabrelite-sd", "sabrelite", "4", "clh", None),
            SD_TOOLS.to_vec(),
        ),
        (
            (
                "sabrelite-uboot-virt",
                "sabrelite",
                "2",
                "ticket",
                Some("uboot-virt"),
            ),
            [SD_TOOLS, uboot].concat(),
        ),
    ];
    runs.into_iter()
        .map(|((name, board, smp, lock, firmware), tools)| {
            let file = dir.join(format!("{name}.img"));
            let cmd = exe.clone().and_then(|exe| {
                fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                let mut cmd = Cmd::new(exe)
                    .args(["flash", "--board", board, "--smp", smp, "--lock", lock])
                    .arg("--image")
                    .arg(&file)
                    .args(["--yes", "--check", "--timeout", "120"]);
                if let Some(fw) = firmware {
                    cmd = cmd.args(["--firmware", fw]);
                }
                Ok(cmd)
            });
            Step::from_result(format!("flash:{name}"), cmd, Judge::ExitStatus).tools(&tools)
        })
        .collect()
}

/// The ARMv7 image steps: the demo on each machine of [`Machine::ARMV7`] (4 cores, CLH), with
/// semihosting and without, then the test suite on each machine with every core count of
/// [`QEMU_SMP`] and every lock, judged like x86's (plus `qemu`'s ARM exit check: semihosting
/// status 0 only with the kernel's success line), the stack-overflow report, the dev-profile
/// image's suite (Sabre Lite) and the suite with the console on UART2.
fn armv7_qemu_steps() -> Vec<Step> {
    let mut steps = Vec::new();
    for machine in Machine::ARMV7 {
        let m = machine.name();
        let run = |workload, timeout| QemuRun::new(workload, timeout).on(Arch::Armv7, machine);
        let demo = run(Workload::Demo, QEMU_TIMEOUT_SECS);
        steps.push(qemu_step(
            format!("qemu:armv7-{m}-demo"),
            &demo,
            Judge::ExitStatus,
        ));
        // As on the real board without a debugger: the semihosting calls (command line, exit)
        // take the undefined-instruction vector's "unavailable" path.
        steps.push(qemu_step(
            format!("qemu:armv7-{m}-no-semihosting"),
            &demo.clone().variant(Variant::NoSemihosting),
            Judge::ExitStatus,
        ));
        let tests = |smp, lock| run(Workload::Tests, QEMU_TIMEOUT_SECS).with(smp, lock);
        steps.extend(suite_matrix(&format!("qemu:armv7-{m}-"), tests));
        let mut overflow = run(Workload::StackOverflow, STACK_OVERFLOW_TIMEOUT_SECS);
        overflow.smp = Some(2);
        steps.push(qemu_step(
            format!("qemu:armv7-{m}-stack-overflow"),
            &overflow,
            Judge::ExitStatus,
        ));
        // The fine-grained suite twice more, as on x86_64 (`qemu:x86_64-debug-smp4-fine`,
        // `qemu:x86_64-smp4-fine-no-fastpath`): the dev-profile image on sabrelite, the IPC
        // fastpath off on virt; and the Sabre Lite's real console, UART2: the suite with the
        // console moved there (QEMU's serial1) and UART1 as the user driver's device.
        for (only_on, name, variant) in [
            (
                Machine::Sabrelite,
                "qemu:armv7-sabrelite-debug-smp4-fine",
                Variant::Debug,
            ),
            (
                Machine::Virt,
                "qemu:armv7-virt-smp4-fine-no-fastpath",
                Variant::NoFastpath,
            ),
            (
                Machine::Sabrelite,
                "qemu:armv7-sabrelite-console-uart2",
                Variant::ConsoleUart2,
            ),
        ] {
            if machine == only_on {
                steps.push(qemu_step(
                    name,
                    &tests(4, Lock::Fine).variant(variant),
                    suite(4),
                ));
            }
        }
    }
    steps
}

/// The in-guest system-call fuzzer (`cargo xtask qemu --fuzz`, `mode=fuzz`), 4 cores, each
/// fuzzer making 10^5 calls: every lock on x86_64 (microvm) and on each ARMv7 machine with the
/// guest cores on one host thread (`--single-thread-tcg`: they interleave, also inside the
/// kernel, about 3 s a run), then one run per architecture with multi-threaded TCG (the cores
/// really run at once; about 60 s on x86_64 and 80 s on ARMv7 with 4 guest cores on the 2-vCPU
/// development VM, so not every lock). `qemu` judges each run: success status, no panic, and
/// every core's count line with at least 10^5 calls, no anomaly and a passed self-check.
fn fuzz_steps() -> Vec<Step> {
    let machines = std::iter::once((Arch::X86_64, Machine::Microvm))
        .chain(Machine::ARMV7.iter().map(|&m| (Arch::Armv7, m)));
    let mut runs: Vec<(Arch, Machine, Lock, bool)> = Vec::new();
    for (arch, machine) in machines {
        for lock in Lock::ALL.into_iter().filter(|l| l.rows().fuzz) {
            runs.push((arch, machine, lock, true));
        }
    }
    runs.push((Arch::X86_64, Machine::Microvm, Lock::Clh, false));
    runs.push((Arch::Armv7, Machine::Virt, Lock::Fine, false));
    runs.into_iter()
        .map(|(arch, machine, lock, single)| {
            let mut run = QemuRun::new(Workload::Fuzz, FUZZ_TIMEOUT_SECS)
                .on(arch, machine)
                .with(FUZZ_SMP, lock);
            if single {
                run = run.variant(Variant::SingleThreadTcg);
            }
            let name = format!(
                "fuzz:{}-{}{}",
                place(arch, machine),
                lock.name(),
                if single { "" } else { "-mttcg" }
            );
            qemu_step(name, &run, Judge::ExitStatus)
        })
        .collect()
}

/// How step names say where a run goes: `x86_64`, or `armv7-<machine>`.
fn place(arch: Arch, machine: Machine) -> String {
    match arch {
        Arch::X86_64 => "x86_64".to_owned(),
        Arch::Armv7 => format!("armv7-{}", machine.name()),
    }
}

/// The pager set-ups the memory steps run: (name, `--pager`, `--nodes`).
type Pagers = (&'static str, Option<&'static str>, Option<u32>);

/// The memory system (`cargo xtask qemu --memory`, `servers::memory`): per-core pagers under
/// every lock on 4 cores and under `none` on 1 core, the global pager, two memory nodes (under
/// the ticket lock, and under CNA, whose pagers' map the loader fills from the nodes), and
/// one and two cores with the CLH lock, on x86_64 (microvm) and ARMv7 (sabrelite; virt with fewer
/// locks), and two memory nodes the firmware describes (x86_64 `-M pc`, ACPI SRAT; under the
/// ticket lock and under CNA, which takes the cores' nodes from it), the guest
/// cores on one host thread (a run takes a few seconds). `qemu` judges each
/// run: success status, and every check the configuration plans printed `ok` once.
fn memory_steps() -> Vec<Step> {
    const PERCORE: Pagers = ("percore", None, None);
    const GLOBAL: Pagers = ("global", Some("global"), None);
    const NODES2: Pagers = ("nodes2", None, Some(2));
    // Every lock of the registry on 4 cores (its pagers lock with the same algorithm), then the
    // other set-ups.
    let full: Vec<(Lock, u32, Pagers)> = Lock::ALL
        .into_iter()
        .filter(|&lock| lock != Lock::None)
        .map(|lock| (lock, 4, PERCORE))
        .chain([
            (Lock::None, 1, PERCORE),
            (Lock::Clh, 1, PERCORE),
            (Lock::Clh, 2, PERCORE),
            (Lock::Clh, 4, GLOBAL),
            (Lock::Ticket, 4, NODES2),
            (Lock::Cna, 4, NODES2),
        ])
        .collect();
    let short: &[(Lock, u32, Pagers)] = &[
        (Lock::Fine, 4, PERCORE),
        (Lock::None, 1, PERCORE),
        (Lock::Clh, 4, GLOBAL),
    ];
    let memory =
        || QemuRun::new(Workload::Memory, QEMU_TIMEOUT_SECS).variant(Variant::SingleThreadTcg);
    let mut steps = Vec::new();
    for (arch, machine, runs) in [
        (Arch::X86_64, Machine::Microvm, &full[..]),
        (Arch::Armv7, Machine::Sabrelite, &full[..]),
        (Arch::Armv7, Machine::Virt, short),
    ] {
        for &(lock, smp, (variant, pager, nodes)) in runs {
            let mut run = memory().on(arch, machine).with(smp, lock);
            run.pager = pager;
            run.nodes = nodes;
            let name = format!(
                "memory:{}-smp{smp}-{}-{variant}",
                place(arch, machine),
                lock.name()
            );
            steps.push(qemu_step(name, &run, Judge::ExitStatus));
        }
    }
    // The memory nodes from the firmware: `-M pc` with two QEMU-described nodes (cores 0-1 and
    // 2-3, 128 MiB each) in the ACPI SRAT; `qemu` also wants the loader's `numa: srat, 2 nodes`.
    let mut srat = memory().with(4, Lock::Ticket);
    srat.machine = Some(Machine::Pc);
    srat.numa = Some(2);
    steps.push(qemu_step("memory:x86_64-pc-srat", &srat, Judge::ExitStatus));
    // The same under the CNA big lock, whose CPU-to-node map the kernel fills from the SRAT;
    // `qemu` also wants its `cna:` line to put the cores on QEMU's two nodes.
    let mut srat_cna = srat.clone();
    srat_cna.lock = Some(Lock::Cna);
    steps.push(qemu_step(
        "memory:x86_64-pc-srat-cna",
        &srat_cna,
        Judge::ExitStatus,
    ));
    steps
}

/// One end-to-end step: this xtask binary's `command` with `args` and `--out <target>/<out>`,
/// judged by its exit status. The `bench` ones also get the QEMU suite's `--timeout` and need
/// both bare-metal targets.
struct EndToEnd {
    /// The step's name.
    name: &'static str,
    /// The subcommand.
    command: &'static str,
    /// Its options.
    args: &'static [&'static str],
    /// The output folder under the target directory.
    out: &'static str,
    /// Host tools without which the step is skipped.
    tools: &'static [crate::flash::Tool],
}

/// The end-to-end runs of the benchmark driver, the trace commands and the simulator, in order.
const END_TO_END: &[EndToEnd] = &[
    // The benchmark driver on a tiny configuration: lock `none` on both architectures, the
    // `qemu-icount` and `hosted` platforms, 1 core, the hosted benchmark's `--quick` and
    // `--check`, which boots every `-icount` point twice and requires identical samples, then
    // reads results.json, results.csv, the three figures (SVG and PNG) and report.md back;
    // well under a minute once the images and the hosted benchmark are built.
    EndToEnd {
        name: "bench:tiny",
        command: "bench",
        args: &bench::TINY,
        out: "bench-tiny",
        tools: &[],
    },
    // The memory suite on a tiny configuration: per-core and global pagers under `-icount` on
    // both architectures (1 core, a two-point page sweep, every point booted twice and
    // required identical, and the 2-core request boot) and hosted on 1 and 2 cores, then every
    // output read back; under a minute once built.
    EndToEnd {
        name: "bench:memory-tiny",
        command: "bench",
        args: &bench::MEMORY_TINY,
        out: "bench-memory-tiny",
        tools: &[],
    },
    // The network macro-benchmark on a tiny configuration: the network image with locks none
    // (1 core) and clh (1 and 2 cores: every core's server at once) on x86_64 (microvm) and
    // ARMv7 (virt), and the Linux baseline of each architecture, each driven by
    // redis-benchmark (SET and GET, unpipelined and pipelined) and YCSB workload A (load, then
    // run), with the server's CPU section sampled for utilisation; fails if any client run
    // fails. About two minutes (the first run also downloads the Debian packages of the
    // baselines).
    EndToEnd {
        name: "bench:redis-tiny",
        command: "bench",
        args: &bench::REDIS_TINY,
        out: "bench-redis-tiny",
        tools: &[
            ("mvn", "maven"),
            ("java", "default-jre-headless"),
            ("redis-benchmark", "redis-tools"),
            ("dpkg-deb", "dpkg"),
            ("apt-cache", "apt"),
        ],
    },
    // The network soak on a short run: 15 s on each architecture (x86_64 microvm and ARMv7
    // virt, 2 cores, clh): the three looping clients on both servers, then the read-back of
    // every acknowledged write, results.json and report.md.
    EndToEnd {
        name: "bench:redis-soak-tiny",
        command: "bench",
        args: &[
            "redis",
            "--soak",
            "--soak-time",
            "15",
            "--arch",
            "all",
            "--lock",
            "clh",
        ],
        out: "bench-redis-soak-tiny",
        tools: &[("redis-benchmark", "redis-tools"), ("passt", "passt")],
    },
    // Kernel lock tracing and the simulator: the hosted IPC workload recorded on 2 cores with
    // tracing on (the example refuses a trace that misses an entry), the trace file written,
    // and `cargo xtask sim`'s analysis, replay and 1..64-core sweep with its JSON and plots.
    EndToEnd {
        name: "trace:hosted",
        command: "trace",
        args: &["locks", "--hosted", "--cores", "2", "--lock", "clh"],
        out: "trace-hosted",
        tools: &[],
    },
    // Kernel lock tracing inside the images: both images built with their `trace` feature, the
    // demo booted on 2 cores with 50 round trips per pair and `trace=1` under `-icount`
    // (microvm, sabrelite), the trace each prints read and checked (records from every core in
    // time order, ordered lock timestamps, the ping-pong's Call and ReplyRecv entries, nothing
    // lost, the file read back equal) and the simulator's analysis, replay and sweep run on it.
    // Seconds once built (the traced images are built in `<target>/features-trace`, apart from
    // the others).
    EndToEnd {
        name: "trace:image",
        command: "trace",
        args: &[
            "locks", "--image", "--check", "--arch", "all", "--cores", "2", "--rounds", "50",
            "--lock", "clh",
        ],
        out: "trace-image",
        tools: &[],
    },
    // The cache model's calibration benchmark: the line and lock hand-off between CPUs 0 and 1
    // and a short kernel run on one and two cores taking turns measured, the calibration file
    // written and read back (the same release build of the `tests` examples as
    // `trace:hosted`; seconds). Needs two host CPUs.
    EndToEnd {
        name: "sim:calibrate",
        command: "sim",
        args: &["--calibrate", "--quick"],
        out: "sim-calibrate",
        tools: &[],
    },
    // `cargo xtask sim` without `--trace`: it records a hosted trace first (the same release
    // build of the `tests` examples as `trace:hosted`), then analyses it, replays it and sweeps
    // 1..8 simulated cores.
    EndToEnd {
        name: "sim:record",
        command: "sim",
        args: &["--max-cores", "8"],
        out: "sim-record",
        tools: &[],
    },
];

impl EndToEnd {
    /// The step.
    fn step(&self, root: &Path) -> Step {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find the xtask binary: {e}"));
        let out = crate::target_dir(root).join(self.out);
        let bench = self.command == "bench";
        let cmd = exe.map(|exe| {
            let cmd = Cmd::new(exe).arg(self.command).args(self.args);
            let cmd = if bench {
                cmd.args(["--timeout".to_owned(), QEMU_TIMEOUT_SECS.to_string()])
            } else {
                cmd
            };
            cmd.arg("--out").arg(out)
        });
        let step = Step::from_result(self.name, cmd, Judge::ExitStatus).tools(self.tools);
        if bench {
            step.needs(Needs::Target(X86)).needs(Needs::Target(ARM))
        } else {
            step
        }
    }
}

/// A HAL's own boot demo (`hal-<arch>/src/bin/boot-demo.rs`: the HAL without the kernel, with
/// the shared checks of `hal_common::demo` and the interrupt-controller self-tests) on each
/// machine of the architecture, with 1, 2 or 4 cores, through the HAL's script in matrix mode.
/// The script requires, for every run, the success exit status and `cpus online: N` (ARMv7 also
/// the `boot-demo: all checks passed` line), and prints a summary line per run.
fn boot_demo_step(
    root: &Path,
    hal: &str,
    name: &str,
    target: &'static str,
    fix: &'static str,
) -> Step {
    let script = root.join(hal).join("scripts/qemu-boot-demo.sh");
    let cmd = if script.is_file() {
        Ok(Cmd::new("bash").arg(script).env("MATRIX", "1"))
    } else {
        Err(format!("{} does not exist", display_rel(root, &script)))
    };
    Step::from_result(name, cmd, Judge::ExitStatus)
        .needs(Needs::Target(target))
        .fix(fix)
}

/// The crates with loom models: (step, crate, the crate's own loom cfg, features the models
/// need). Each crate has a cfg of its own, so that a program's global `--cfg loom` leaves it
/// alone.
const LOOM_CRATES: [(&str, &str, &str, &[&str]); 3] = [
    // The RTM models use the simulated engines of `rtm::testing`.
    ("loom", LOCK_CRATE, LOOM_CFG, &["testing"]),
    ("loom:frame-ring", "frame-ring", "frame_ring_loom", &[]),
    // The kernel's fastpath/wake handshake, over the lock crate built on loom's atomics.
    (
        "loom:kernel",
        "kernel",
        "kernel_loom --cfg kernel_locks_loom",
        &[],
    ),
];

/// A loom step: every `<crate>/tests/loom_*.rs` target, under the crate's own loom cfg, in
/// release mode, in its own target directory (changing `RUSTFLAGS` would otherwise rebuild
/// everything in the main one, back and forth; the crates share it, each under its cfg).
fn loom_step(root: &Path, (name, krate, cfg, features): (&str, &str, &str, &[&str])) -> Step {
    let tests_dir = crate::crate_dir(root, krate).join("tests");
    let mut targets: Vec<String> = fs::read_dir(&tests_dir)
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let stem = path.file_stem()?.to_str()?.to_owned();
            (path.extension()? == "rs" && stem.starts_with("loom_")).then_some(stem)
        })
        .collect();
    targets.sort();
    if targets.is_empty() {
        let why = format!(
            "no loom model tests found (expected {}/loom_*.rs)",
            display_rel(root, &tests_dir)
        );
        return Step::from_result(name, Err(why), Judge::Libtest);
    }
    // Setting RUSTFLAGS replaces `build.rustflags` from .cargo/config.toml, so keep whatever the
    // environment already had and add the cfg.
    let rustflags = match std::env::var("RUSTFLAGS") {
        Ok(flags) if !flags.trim().is_empty() => format!("{flags} --cfg {cfg}"),
        _ => format!("--cfg {cfg}"),
    };
    let mut cmd = Cmd::cargo().args(["test", "-p", krate, "--release", "--no-fail-fast"]);
    if !features.is_empty() {
        cmd = cmd.args(["--features".to_owned(), features.join(",")]);
    }
    for target in &targets {
        cmd = cmd.args(["--test", target]);
    }
    let cmd = cmd
        .env("RUSTFLAGS", rustflags)
        .env("CARGO_TARGET_DIR", crate::target_dir(root).join("loom"));
    Step::new(name, cmd, Judge::Libtest)
}

/// `path` relative to `root` if it is inside it.
fn display_rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The outcome of one step.
#[derive(Debug, Default)]
struct Outcome {
    passed: usize,
    failed: usize,
    /// Tests reported skipped (QEMU suites): neither passed nor failed.
    skipped: usize,
    /// Names of failed checks (tests, or the step itself).
    failures: Vec<String>,
}

/// Runs `cargo xtask test`.
pub fn run(root: &Path, args: &TestArgs) -> ExitCode {
    let all = steps(root, args.quick);
    if args.list {
        for step in &all {
            let what = match &step.cmd {
                Ok(cmd) => cmd.display(),
                Err(why) => format!("(cannot run: {why})"),
            };
            println!("{:<28} {what}", step.name);
        }
        return ExitCode::SUCCESS;
    }

    let selected: Vec<&Step> = if args.only.is_empty() {
        all.iter().collect()
    } else {
        let unknown: Vec<&String> = args
            .only
            .iter()
            .filter(|o| !all.iter().any(|s| s.name == **o || s.group() == *o))
            .collect();
        if !unknown.is_empty() {
            let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
            eprintln!(
                "cargo xtask test: unknown step {unknown:?}{}; the steps are: {}",
                if args.quick && unknown.iter().any(|u| *u == "loom") {
                    " (--quick leaves out loom)"
                } else {
                    ""
                },
                names.join(", ")
            );
            println!("test: 0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
        all.iter()
            .filter(|s| args.only.iter().any(|o| s.name == *o || s.group() == o))
            .collect()
    };

    // The doctor first: the Debian packages the selected steps need (their groups in
    // `deps::NEEDS` and the tools each step names), installed if missing, then the probes
    // that check the tools work together (see `deps`). What it cannot fix is named here,
    // before any step runs.
    let names = selected.iter().map(|s| s.name.as_str());
    let mut tools = crate::deps::for_steps(names);
    for (what, package) in selected.iter().flat_map(|s| s.tools.iter()) {
        let tool = crate::deps::Tool { what, package };
        if !tools.contains(&tool) {
            tools.push(tool);
        }
    }
    let probe = || {
        if selected
            .iter()
            .any(|s| s.name.starts_with("lock-crate:armv7"))
        {
            crate::deps::probe_arm_cross()
        } else {
            Ok(())
        }
    };
    // The tools from crates.io (mdBook) that the selected steps run.
    let cargo_tools = || -> Result<(), String> {
        if selected
            .iter()
            .any(|s| s.name == "book" || s.name == "doctor")
        {
            for tool in host_env::cargo_tools::CARGO_TOOLS {
                host_env::cargo_tools::ensure("cargo xtask test", root, tool)?;
            }
        }
        // The source archives (Redis's test suite) that the selected steps read.
        if selected
            .iter()
            .any(|s| s.name.ends_with("-redis-suite") || s.name == "doctor")
        {
            for archive in host_env::sources::SOURCES {
                host_env::sources::ensure("cargo xtask test", root, archive)?;
            }
        }
        Ok(())
    };
    if let Err(why) = crate::deps::ensure("cargo xtask test", &tools)
        .and_then(|()| probe())
        .and_then(|()| cargo_tools())
    {
        eprintln!("cargo xtask test: {why}");
        eprintln!("(`cargo xtask doctor` lists every tool and package the steps use)");
        println!("test: 0 passed, 1 failed");
        return ExitCode::FAILURE;
    }

    let mut checker = Preconditions::new(root);
    let mut total = Outcome::default();
    let count = selected.len();
    let mut times = StepTimes::load(root);
    let started = std::time::Instant::now();
    for (i, step) in selected.iter().enumerate() {
        let timing = times.timing(
            started.elapsed(),
            selected[i..].iter().map(|s| s.name.as_str()),
        );
        let label = format!("[{}/{count}{timing}] {}", i + 1, step.name);
        let step_started = std::time::Instant::now();
        // The start of the progress line shows which step is running; its result completes it.
        if args.verbose {
            println!("{label} ...");
        } else {
            print!("{label} ... ");
            let _ = std::io::Write::flush(&mut std::io::stdout());
        }
        let outcome = run_step(root, step, &label, &mut checker, args.verbose);
        times.record(&step.name, step_started.elapsed());
        total.passed += outcome.passed;
        total.failed += outcome.failed;
        total.skipped += outcome.skipped;
        total.failures.extend(outcome.failures);
    }

    times.save();
    println!(
        "test: ran {count} step{} in {}",
        if count == 1 { "" } else { "s" },
        crate::progress::human(started.elapsed())
    );
    if !total.failures.is_empty() {
        println!();
        println!("failed checks:");
        for failure in &total.failures {
            println!("  {failure}");
        }
    }
    if total.skipped == 0 {
        println!("test: {} passed, {} failed", total.passed, total.failed);
    } else {
        println!(
            "test: {} passed, {} skipped, {} failed",
            total.passed, total.skipped, total.failed
        );
    }
    if total.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// How long each step took the last time it ran here (`<target>/xtask-test/step-times.json`),
/// for the estimate of what is left: the steps still to run take what they took last time, or,
/// for a step with no history, the mean of the steps done in this run.
struct StepTimes {
    file: PathBuf,
    last: std::collections::BTreeMap<String, f64>,
    /// Seconds of the steps done in this run.
    done: Vec<f64>,
}

impl StepTimes {
    fn load(root: &Path) -> StepTimes {
        let file = crate::target_dir(root)
            .join("xtask-test")
            .join("step-times.json");
        let last = fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        StepTimes {
            file,
            last,
            done: Vec::new(),
        }
    }

    fn record(&mut self, name: &str, took: Duration) {
        self.last.insert(name.to_owned(), took.as_secs_f64());
        self.done.push(took.as_secs_f64());
    }

    /// `, T so far, about L left` before the steps `left` (this one first) run; empty before
    /// anything is known.
    fn timing<'a>(&self, elapsed: Duration, left: impl Iterator<Item = &'a str>) -> String {
        let mean =
            (!self.done.is_empty()).then(|| self.done.iter().sum::<f64>() / self.done.len() as f64);
        let mut estimate = 0.0;
        for name in left {
            match self.last.get(name).copied().or(mean) {
                Some(secs) => estimate += secs,
                None => return String::new(),
            }
        }
        if self.done.is_empty() {
            format!(
                ", about {} in all",
                crate::progress::human(Duration::from_secs_f64(estimate))
            )
        } else {
            format!(
                ", {} so far, about {} left",
                crate::progress::human(elapsed),
                crate::progress::human(Duration::from_secs_f64(estimate))
            )
        }
    }

    /// Writes the times back (merged with the steps this run did not run); a failure to write
    /// only loses the estimate.
    fn save(&self) {
        if let Some(dir) = self.file.parent() {
            let _ = fs::create_dir_all(dir);
        }
        if let Ok(text) = serde_json::to_string_pretty(&self.last) {
            let _ = fs::write(&self.file, text + "\n");
        }
    }
}

/// Runs one step and prints its progress line (and the output tail if it failed).
fn run_step(
    root: &Path,
    step: &Step,
    label: &str,
    checker: &mut Preconditions,
    verbose: bool,
) -> Outcome {
    // Completes the progress line (repeating the label when output came in between).
    let finish = |text: &str| {
        if verbose {
            println!("{label}: {text}");
        } else {
            println!("{text}");
        }
    };
    let failed_to_run = |why: String| {
        finish(&format!("FAILED, could not run: {why}"));
        Outcome {
            passed: 0,
            failed: 1,
            failures: vec![format!("{}: could not run", step.name)],
            ..Outcome::default()
        }
    };

    let cmd = match &step.cmd {
        Ok(cmd) => cmd,
        Err(why) => return failed_to_run(why.clone()),
    };
    let missing: Vec<String> = step
        .tools
        .iter()
        .filter(|t| !crate::flash::missing_tools(std::slice::from_ref(t)).is_empty())
        .map(|(tool, pkg)| format!("{tool} missing (apt-get install {pkg})"))
        .collect();
    if !missing.is_empty() {
        finish(&format!("skipped: {}", missing.join("; ")));
        return Outcome {
            skipped: 1,
            ..Outcome::default()
        };
    }
    for need in &step.needs {
        if let Err(why) = checker.check(need) {
            return failed_to_run(why);
        }
    }

    if verbose {
        println!("$ {}", cmd.display());
    }
    let out = match cmd.run_captured(root, verbose, STEP_TIMEOUT) {
        Ok(out) => out,
        Err(err) => return failed_to_run(format!("`{}`: {err}", cmd.display())),
    };
    let secs = out.elapsed.as_secs_f64();
    let mut outcome = Outcome::default();
    match step.judge {
        _ if out.timed_out => {
            // Tests that passed before the hang still count (libtest steps).
            if step.judge == Judge::Libtest {
                outcome.passed = libtest::parse(&out.lines).passed;
            }
            outcome.failed = 1;
            outcome.failures.push(format!(
                "{}: timed out after {} s and was killed",
                step.name,
                STEP_TIMEOUT.as_secs()
            ));
            finish(&format!(
                "FAILED: timed out after {secs:.0} s, killed (the output so far is below)"
            ));
        }
        Judge::ExitStatus => {
            if out.status.success() {
                outcome.passed = 1;
                finish(&format!("ok ({secs:.1} s)"));
            } else {
                outcome.failed = 1;
                outcome.failures.push(step.name.clone());
                finish(&format!("FAILED ({}, {secs:.1} s)", out.status));
            }
        }
        Judge::Excerpt { mark } => {
            let stale = stale_excerpt_lines(root, mark, &out.lines);
            if out.status.success() && stale.is_empty() {
                outcome.passed = 1;
                finish(&format!("ok ({secs:.1} s)"));
            } else {
                outcome.failed = 1;
                outcome.failures.push(step.name.clone());
                finish(&format!("FAILED ({}, {secs:.1} s)", out.status));
                for (file, line) in &stale {
                    println!("  {file}: the excerpt shows `{line}`, which this run did not print");
                }
            }
        }
        Judge::NoWarnings { allowed } => {
            let warnings: Vec<&String> = out
                .lines
                .iter()
                .filter(|line| {
                    line.trim_start()
                        .strip_prefix("warning: ")
                        .is_some_and(|w| !allowed.iter().any(|a| w.trim() == *a))
                })
                .collect();
            if out.status.success() && warnings.is_empty() {
                outcome.passed = 1;
                finish(&format!("ok ({secs:.1} s)"));
            } else {
                outcome.failed = 1;
                outcome.failures.push(step.name.clone());
                if out.status.success() {
                    finish(&format!(
                        "FAILED: {} warning(s), first: {} ({secs:.1} s)",
                        warnings.len(),
                        warnings[0].trim()
                    ));
                } else {
                    finish(&format!("FAILED ({}, {secs:.1} s)", out.status));
                }
            }
        }
        Judge::QemuSuite { min_plan } => {
            let suite = crate::qemu::parse_suite(&out.lines, min_plan);
            outcome.passed = suite.passed;
            outcome.skipped = suite.skipped;
            // Every failed test, and every problem with the run (missing plan, sentinel or
            // test), is one failed check.
            outcome.failed = suite.failed + suite.problems;
            outcome.failures = suite
                .failures
                .iter()
                .map(|f| format!("{}: {f}", step.name))
                .collect();
            if !out.status.success() && outcome.failed == 0 {
                outcome.failed = 1;
                outcome
                    .failures
                    .push(format!("{}: QEMU run failed ({})", step.name, out.status));
            }
            let verdict = if outcome.failed == 0 { "ok" } else { "FAILED" };
            let skipped = if suite.skipped == 0 {
                String::new()
            } else {
                format!(", {} skipped ({})", suite.skipped, suite.skips.join(", "))
            };
            finish(&format!(
                "{verdict}: {} passed{skipped}, {} failed in the guest ({secs:.1} s)",
                suite.passed, suite.failed
            ));
        }
        Judge::Libtest => {
            let summary = libtest::parse(&out.lines);
            outcome.passed = summary.passed;
            outcome.failed = summary.failed;
            outcome.failures = summary
                .failures
                .iter()
                .map(|f| format!("{}: {f}", step.name))
                .collect();
            if summary.failures.len() < summary.failed {
                outcome.failures.push(format!(
                    "{}: {} failing test(s) without a name in the output",
                    step.name,
                    summary.failed - summary.failures.len()
                ));
            }
            let mut note = format!(
                "{} passed, {} failed, {} ignored in {} test binaries",
                summary.passed, summary.failed, summary.ignored, summary.binaries
            );
            for binary in &summary.unfinished {
                // Crashed or killed: libtest never printed its result.
                outcome.failed += 1;
                outcome.failures.push(format!(
                    "{}: {binary}: the test binary ended without a result",
                    step.name
                ));
            }
            if !summary.unfinished.is_empty() {
                note.push_str(&format!(
                    "; {} test binaries ended without a result",
                    summary.unfinished.len()
                ));
            }
            if !out.status.success() && outcome.failed == 0 {
                // A build error or another cargo error: no test failed, yet the command did.
                outcome.failed += 1;
                outcome
                    .failures
                    .push(format!("{}: command failed ({})", step.name, out.status));
                note.push_str(&format!("; the command failed: {}", out.status));
            } else if out.status.success() && summary.binaries == 0 {
                outcome.failed += 1;
                outcome.failures.push(format!("{}: no test ran", step.name));
                note.push_str("; no test binary reported a result");
            }
            let verdict = if outcome.failed == 0 { "ok" } else { "FAILED" };
            finish(&format!("{verdict}: {note} ({secs:.1} s)"));
        }
    }
    if outcome.failed > 0 {
        print_failure_details(root, cmd, &out, verbose);
        if let Some(fix) = step.fix {
            println!("    fix: {fix}");
        }
    }
    outcome
}

/// Prints how to reproduce a failed step, the tail of its output, and hints for known errors.
fn print_failure_details(root: &Path, cmd: &Cmd, out: &Captured, verbose: bool) {
    println!("    command: (cd {} && {})", root.display(), cmd.display());
    if !verbose {
        let start = out.lines.len().saturating_sub(TAIL_LINES);
        if start > 0 {
            println!(
                "    ---- last {TAIL_LINES} of {} lines ----",
                out.lines.len()
            );
        } else {
            println!("    ---- output ----");
        }
        for line in &out.lines[start..] {
            println!("    | {line}");
        }
        println!("    ----");
        // A failed test's own report (`---- name stdout ----` up to the next blank line after
        // its panic) is usually far above the tail in a workspace run: show it too.
        let reports = failure_reports(&out.lines[..start]);
        if !reports.is_empty() {
            println!("    ---- failed tests' reports ----");
            for line in reports {
                println!("    | {line}");
            }
            println!("    ----");
        }
    }
    for hint in hints(&out.lines) {
        println!("    hint: {hint}");
    }
}

/// The libtest failure reports in `lines`: each `---- <test> stdout ----` block up to the
/// `failures:` list or the next block, at most 40 lines each.
fn failure_reports(lines: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut taken = None;
    for line in lines {
        if line.starts_with("---- ") && line.ends_with(" stdout ----") {
            taken = Some(0);
        } else if line.trim() == "failures:" || line.starts_with("test result:") {
            taken = None;
        }
        if let Some(n) = taken.as_mut() {
            if *n < 40 {
                out.push(line.as_str());
            }
            *n += 1;
        }
    }
    out
}

/// Fixes for errors that mean a missing tool rather than a broken project.
fn hints(lines: &[String]) -> Vec<String> {
    let mut hints = Vec::new();
    for line in lines {
        if let Some(pos) = line.find("the `") {
            if line.contains("target may not be installed") {
                let rest = &line[pos + 5..];
                if let Some(target) = rest.split('`').next() {
                    hints.push(format!("run `rustup target add {target}`"));
                }
            }
        }
        if line.contains("'cargo-fmt' is not installed") || line.contains("no such command: `fmt`")
        {
            hints.push("run `rustup component add rustfmt`".into());
        }
        if line.contains("'cargo-clippy' is not installed")
            || line.contains("no such command: `clippy`")
        {
            hints.push("run `rustup component add clippy`".into());
        }
    }
    hints.dedup();
    hints
}

/// Checks (once each) that the tools and targets the steps need are installed.
struct Preconditions {
    root: PathBuf,
    checked: Vec<(String, Result<(), String>)>,
    sysroot: Option<Option<PathBuf>>,
}

impl Preconditions {
    fn new(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
            checked: Vec::new(),
            sysroot: None,
        }
    }

    fn check(&mut self, need: &Needs) -> Result<(), String> {
        let key = format!("{need:?}");
        if let Some((_, result)) = self.checked.iter().find(|(k, _)| *k == key) {
            return result.clone();
        }
        let result = match need {
            Needs::Component {
                subcommand,
                component,
            } => {
                let found = Cmd::cargo()
                    .args([*subcommand, "--version"])
                    .read_stdout(&self.root)
                    .is_some();
                if found {
                    Ok(())
                } else {
                    Err(format!(
                        "`cargo {subcommand}` is not available; install it with \
                         `rustup component add {component}` (rust-toolchain.toml lists it, so \
                         `rustup toolchain install` in the workspace also installs it)"
                    ))
                }
            }
            Needs::Target(target) => self.check_target(target),
        };
        self.checked.push((key, result.clone()));
        result
    }

    fn check_target(&mut self, target: &str) -> Result<(), String> {
        let root = self.root.clone();
        let sysroot = self.sysroot.get_or_insert_with(|| {
            Cmd::new("rustc")
                .args(["--print", "sysroot"])
                .read_stdout(&root)
                .map(PathBuf::from)
        });
        let Some(sysroot) = sysroot else {
            // Cannot tell; let cargo report the problem.
            return Ok(());
        };
        let lib = sysroot.join("lib").join("rustlib").join(target).join("lib");
        let has_core = fs::read_dir(&lib).into_iter().flatten().any(|e| {
            e.ok()
                .and_then(|e| e.file_name().to_str().map(|n| n.starts_with("libcore-")))
                .unwrap_or(false)
        });
        if has_core {
            Ok(())
        } else {
            Err(format!(
                "the standard library for target {target} is not installed; install it with \
                 `rustup target add {target}` (rust-toolchain.toml lists it, so \
                 `rustup toolchain install` in the workspace also installs it)"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The "Adding a lock" section of `docs/locks.md`.
    fn adding_a_lock_section(root: &Path) -> String {
        let text = fs::read_to_string(root.join("docs/locks.md")).expect("docs/locks.md");
        let start = text
            .find("## Adding a lock")
            .expect("an \"Adding a lock\" section");
        let rest = &text[start + 2..];
        rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
    }

    #[test]
    fn the_adding_a_lock_walkthrough_holds() {
        let root = crate::workspace_root();
        let section = adding_a_lock_section(&root);
        let quoted: Vec<&str> = section.split('`').skip(1).step_by(2).collect();
        // Every file it names exists (`<name>` stands for the new lock's).
        let files: Vec<&&str> = quoted
            .iter()
            .filter(|q| q.contains('/') && !q.contains(' ') && q.contains('.'))
            .filter(|q| !q.contains("<name>"))
            .collect();
        assert!(files.len() >= 8, "only {files:?}");
        for file in files {
            assert!(
                root.join(file).exists(),
                "docs/locks.md names {file}, which is not there"
            );
        }
        // Every command it shows parses, for every registered lock.
        let commands: Vec<&&str> = quoted
            .iter()
            .filter(|q| q.starts_with("cargo xtask "))
            .collect();
        assert!(commands.len() >= 5, "only {commands:?}");
        for command in commands {
            for entry in lock_registry::ENTRIES {
                let line = command.replace("<name>", entry.name);
                let words: Vec<&str> = std::iter::once("xtask")
                    .chain(line.split_whitespace().skip(2))
                    .collect();
                if let Err(e) = <crate::Cli as clap::Parser>::try_parse_from(&words) {
                    panic!("docs/locks.md shows `{command}`; `{line}` does not parse:\n{e}");
                }
            }
        }
    }

    #[test]
    fn a_registered_lock_reaches_every_command_and_its_matrix_rows() {
        let root = crate::workspace_root();
        let names: Vec<String> = steps(&root, false).into_iter().map(|s| s.name).collect();
        for entry in lock_registry::ENTRIES {
            for word in std::iter::once(entry.name).chain(entry.aliases.iter().copied()) {
                for line in [
                    format!("qemu --tests --lock {word}"),
                    format!("bench ipc --lock {word}"),
                    format!("bench memory --lock {word}"),
                    format!("trace locks --image --lock {word}"),
                    format!("flash --board pc --lock {word} --image x.img"),
                ] {
                    let words: Vec<&str> = std::iter::once("xtask")
                        .chain(line.split_whitespace())
                        .collect();
                    if let Err(e) = <crate::Cli as clap::Parser>::try_parse_from(&words) {
                        panic!("`cargo xtask {line}` does not parse:\n{e}");
                    }
                }
            }
            let lock = entry.name;
            let rows = entry.rows;
            let wanted = [
                (rows.suite_smp1, format!("qemu:smp1-{lock}")),
                (rows.suite_smp4, format!("qemu:smp4-{lock}")),
                (rows.suite_smp1, format!("qemu:armv7-virt-smp1-{lock}")),
                (rows.suite_smp4, format!("qemu:armv7-sabrelite-smp4-{lock}")),
                (rows.fuzz, format!("fuzz:x86_64-{lock}")),
                (rows.fuzz, format!("fuzz:armv7-virt-{lock}")),
            ];
            for (row, step) in wanted {
                assert_eq!(names.contains(&step), row, "{step}: row {row}");
            }
        }
    }

    #[test]
    fn excerpts_are_read_and_matched_by_their_shape() {
        let doc = "text\n<!-- excerpt: qemu:demo -->\n```text\ncpus online: 4\n...\nall 4 programs reported after 2212 ms\n```\n\n```text\nnot an excerpt\n```\n";
        assert_eq!(
            excerpts(doc, "qemu:demo"),
            ["cpus online: 4", "all 4 programs reported after 2212 ms"]
        );
        assert!(excerpts(doc, "other").is_empty());
        assert_eq!(
            shape("  all 4 programs reported after 2212 ms "),
            "all N programs reported after N ms"
        );
        let printed: std::collections::HashSet<String> =
            ["cpus online: 2", "all 2 programs reported after 17 ms"]
                .iter()
                .map(|l| shape(l))
                .collect();
        for line in excerpts(doc, "qemu:demo") {
            assert!(printed.contains(&shape(&line)), "{line}");
        }
        assert!(!printed.contains(&shape("cpus offline: 2")));
    }

    #[test]
    fn the_docs_have_the_demos_excerpts() {
        let root = crate::workspace_root();
        for file in EXCERPT_FILES {
            let text = std::fs::read_to_string(root.join(file)).unwrap();
            assert!(
                !excerpts(&text, "qemu:demo").is_empty(),
                "{file} has no `qemu:demo` excerpt"
            );
        }
    }

    #[test]
    fn the_end_to_end_steps_spell_their_commands_as_the_command_line_takes_them() {
        use clap::Parser;
        for run in END_TO_END {
            let mut words = vec!["xtask", run.command];
            words.extend(run.args);
            if run.command == "bench" {
                words.extend(["--timeout", "60"]);
                assert!(
                    ["ipc", "memory", "redis", "locks"].contains(&run.args[0]),
                    "{}: a bench step names its suite first, not the old spelling: {:?}",
                    run.name,
                    run.args
                );
            }
            if run.command == "trace" {
                assert!(
                    ["exec", "locks"].contains(&run.args[0]),
                    "{}: a trace step names `exec` or `locks` first: {:?}",
                    run.name,
                    run.args
                );
            }
            words.extend(["--out", "x"]);
            if let Err(e) = crate::Cli::try_parse_from(&words) {
                panic!(
                    "step {}: `cargo {}` does not parse:\n{e}",
                    run.name,
                    words.join(" ")
                );
            }
        }
    }

    #[test]
    fn the_help_names_every_group_in_the_order_the_steps_run() {
        let mut groups: Vec<String> = Vec::new();
        for step in steps(&crate::workspace_root(), false) {
            if !groups.iter().any(|g| g == step.group()) {
                groups.push(step.group().to_owned());
            }
        }
        let listed: Vec<&str> = GROUPS.iter().map(|(g, _)| *g).collect();
        assert_eq!(groups, listed);
        let help = long_help();
        assert!(help.contains("  qemu "), "{help}");
    }

    #[test]
    fn every_step_that_runs_xtask_gives_it_a_valid_command_line() {
        use clap::Parser;
        let root = crate::workspace_root();
        let exe = std::env::current_exe().unwrap();
        let mut seen = 0;
        for step in steps(&root, false) {
            let Ok(cmd) = &step.cmd else { continue };
            let command = cmd.command(&root);
            if Path::new(command.get_program()) != exe {
                continue;
            }
            let args = command.get_args().map(|a| a.to_str().unwrap().to_owned());
            let parsed =
                crate::Cli::try_parse_from(std::iter::once("xtask".to_owned()).chain(args));
            assert!(parsed.is_ok(), "{}: {}", step.name, parsed.unwrap_err());
            seen += 1;
        }
        assert!(seen > 90, "{seen} steps run xtask");
    }

    #[test]
    fn the_estimate_uses_the_last_run_and_the_mean_of_this_one() {
        let mut t = StepTimes {
            file: PathBuf::from("/nonexistent/step-times.json"),
            last: [("a".to_owned(), 60.0), ("b".to_owned(), 120.0)]
                .into_iter()
                .collect(),
            done: Vec::new(),
        };
        // Nothing run yet: the history alone, or nothing when a step has none.
        assert_eq!(
            t.timing(Duration::ZERO, ["a", "b"].into_iter()),
            ", about 3 min 0 s in all"
        );
        assert_eq!(t.timing(Duration::ZERO, ["a", "new"].into_iter()), "");
        // One step done in 30 s: a step with no history counts as 30 s.
        t.record("a", Duration::from_secs(30));
        assert_eq!(
            t.timing(Duration::from_secs(30), ["b", "new"].into_iter()),
            ", 30 s so far, about 2 min 30 s left"
        );
    }

    fn names(steps: &[Step]) -> Vec<&str> {
        steps.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn step_list_covers_every_kind_of_check() {
        let root = crate::workspace_root();
        let all = steps(&root, false);
        let names = names(&all);
        for expected in [
            "doctor",
            "fmt",
            "clippy:host",
            "clippy:x86_64-unknown-none",
            "clippy:armv7a-none-eabi",
            "build:x86_64-unknown-none",
            "build:armv7a-none-eabi",
            "test",
            "lockdep:hosted",
            "loom",
            "loom:frame-ring",
            "loom:kernel",
            "example:embed",
            "qemu:demo",
            "qemu:smp1-clh",
            "qemu:smp4-none",
            "qemu:armv7-sabrelite-demo",
            "qemu:armv7-virt-smp4-rtm",
            "qemu:x86_64-stack-overflow",
            "qemu:armv7-sabrelite-stack-overflow",
            "qemu:armv7-virt-stack-overflow",
            "qemu:armv7-sabrelite-console-uart2",
            "net:x86_64-resp",
            "net:armv7-virt-resp",
            "net:armv7-sabrelite-resp",
            "net:x86_64-ycsb",
            "net:x86_64-c50",
            "net:armv7-virt-c50",
            "net:x86_64-resp-user-network",
            "bench:tiny",
            "bench:memory-tiny",
            "bench:redis-tiny",
            "bench:redis-soak-tiny",
            "trace:hosted",
            "trace:image",
            "sim:calibrate",
            "sim:record",
        ] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }
        let quick = steps(&root, true);
        assert!(!names_contain(&quick, "loom"));
    }

    #[test]
    fn failure_reports_are_picked_out_of_a_long_log() {
        let lines: Vec<String> = [
            "running 2 tests",
            "test a ... ok",
            "test b ... FAILED",
            "",
            "failures:",
            "",
            "---- b stdout ----",
            "thread 'b' panicked at src/lib.rs:3:5:",
            "assertion failed: x",
            "",
            "failures:",
            "    b",
            "",
            "test result: FAILED. 1 passed; 1 failed",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            failure_reports(&lines),
            [
                "---- b stdout ----",
                "thread 'b' panicked at src/lib.rs:3:5:",
                "assertion failed: x",
                ""
            ]
        );
        assert!(failure_reports(&lines[..4]).is_empty());
    }

    fn names_contain(steps: &[Step], name: &str) -> bool {
        steps.iter().any(|s| s.name == name)
    }

    #[test]
    fn msrv_step_leaves_out_the_features_that_need_a_newer_rust() {
        let root = crate::workspace_root();
        let manifest = crate::crate_dir(&root, LOCK_CRATE).join("Cargo.toml");
        let features = msrv_features(&manifest).unwrap();
        let features: Vec<&str> = features.split(',').collect();
        for expected in ["lock_api", "lockdep", "testing"] {
            assert!(features.contains(&expected), "{features:?}");
        }
        for newer in LOCK_CRATE_NEWER_RUST_FEATURES {
            assert!(!features.contains(newer), "{features:?}");
        }
        let step = lock_crate_steps(&root).remove(0);
        assert_eq!(step.name, "lock-crate:msrv");
        let shown = step.cmd.unwrap().display();
        assert!(!shown.contains("--all-features"), "{shown}");
        assert!(
            shown.contains("--features lock_api,lockdep,testing "),
            "{shown}"
        );
    }

    #[test]
    fn bare_metal_table_names_existing_targets() {
        for (krate, targets) in BARE_METAL {
            assert!(!targets.is_empty(), "{krate} has no target");
            for t in *targets {
                assert!(BARE_METAL_TARGETS.contains(t));
            }
        }
    }

    #[test]
    fn loom_step_uses_its_own_target_dir_and_cfg() {
        let root = crate::workspace_root();
        for (c, cfg) in
            LOOM_CRATES
                .into_iter()
                .zip(["kernel_locks_loom", "frame_ring_loom", "kernel_loom"])
        {
            let step = loom_step(&root, c);
            let shown = step.cmd.expect("the crate has loom tests").display();
            assert!(shown.contains(&format!("--cfg {cfg}")), "{shown}");
            assert!(shown.contains("loom "), "{shown}");
            assert!(shown.contains("loom_"), "{shown}");
            assert!(shown.contains("--release"), "{shown}");
        }
    }

    #[test]
    fn the_lock_crates_loom_step_runs_every_lock_model() {
        let root = crate::workspace_root();
        let step = loom_step(&root, LOOM_CRATES[0]);
        let shown = step.cmd.expect("the lock crate has loom tests").display();
        for model in [
            "loom_brlock",
            "loom_clh",
            "loom_cna",
            "loom_mcs",
            "loom_qspin",
            "loom_rtm",
            "loom_ticket",
        ] {
            assert!(
                shown.contains(&format!("--test {model}")),
                "{model}: {shown}"
            );
        }
    }

    #[test]
    fn a_step_whose_tool_is_missing_is_skipped_not_failed() {
        let root = crate::workspace_root();
        let step = Step::new("flash:x", Cmd::new("false"), Judge::ExitStatus)
            .tools(&[("no-such-tool-xyz", "xyz-pkg")]);
        let mut checker = Preconditions::new(&root);
        let out = run_step(&root, &step, "[1/1] flash:x", &mut checker, false);
        assert_eq!((out.passed, out.skipped, out.failed), (0, 1, 0));
        // With the tool present the command runs (and `false` fails).
        let step =
            Step::new("flash:y", Cmd::new("false"), Judge::ExitStatus).tools(&[("sh", "dash")]);
        let out = run_step(&root, &step, "[1/1] flash:y", &mut checker, false);
        assert_eq!((out.passed, out.skipped, out.failed), (0, 0, 1));
    }

    #[test]
    fn hints_name_the_rustup_fix() {
        let lines = vec![
            "error[E0463]: can't find crate for `core`".to_owned(),
            "  = note: the `armv7a-none-eabi` target may not be installed".to_owned(),
        ];
        assert_eq!(hints(&lines), ["run `rustup target add armv7a-none-eabi`"]);
    }
}
