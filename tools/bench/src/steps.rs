//! The steps of a kernel benchmark run, planned before the first one starts so that each says
//! `[i/N]`: the hosted benchmark, the image builds, every guest boot, the ARMv7 barrier traces,
//! and (counted by the caller) writing the files.
//!
//! What the producers need is checked first ([`hosted_ready`], [`guest_archs`]): a producer
//! that cannot run is recorded as missing and gets no steps.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::guest::{self, GuestRun, KernelTrace};
use super::hosted;
use super::memory::{self, Sweep};
use super::plan::{Plan, Platform};
use super::records::{self, Machine, Origin, RawRecord};
use super::{Collected, RunArgs};
use qemu_runner::qemu::{self, Arch, Lock};

/// One step that can take more than a moment.
#[derive(Clone, Debug)]
pub enum Step {
    /// The hosted benchmark (built, then run once for every lock and core count).
    Hosted,
    /// Building an architecture's image.
    Build(Arch),
    /// Building it with its `trace` feature (`--kernel-trace built|on`), into
    /// `<target>/features-trace`.
    BuildTraced(Arch),
    /// One guest boot (`qemu-icount` when `icount` is set, else `qemu`).
    Guest(GuestRun),
    /// The ARMv7 barrier count of one lock on sabrelite (`cargo xtask trace exec`).
    Barriers(Lock),
}

impl Step {
    /// What the step does, for the progress line.
    pub fn label(&self) -> String {
        match self {
            Step::Hosted => "hosted benchmark (cargo bench -p tests --bench ipc_hosted)".into(),
            Step::Build(arch) => format!("building the {} image", qemu::arch_name(*arch)),
            Step::BuildTraced(arch) => format!(
                "building the {} image with its `trace` feature",
                qemu::arch_name(*arch)
            ),
            Step::Guest(run) => run.label(),
            Step::Barriers(lock) => format!(
                "armv7 {} smp1 lock={} barrier trace (icount, singlestep)",
                qemu::Machine::Sabrelite.name(),
                lock.name()
            ),
        }
    }
}

/// Prints `text` without a line end, at once (the step's result follows on the same line).
fn print_now(text: &str) {
    print!("{text}");
    let _ = std::io::Write::flush(&mut std::io::stdout());
}

/// Whether the hosted benchmark can run for `plan`; if not, why is noted (`--arch` without
/// x86_64) or recorded as missing (not an x86_64 host, no `--records` support).
pub fn hosted_ready(root: &Path, plan: &Plan, memory: bool, c: &mut Collected) -> bool {
    if !plan.platforms.contains(&Platform::Hosted) {
        return false;
    }
    if !plan.archs.contains(&Arch::X86_64) {
        c.notes.push(
            "hosted: not run, it measures the x86_64 host and --arch excludes x86_64.".into(),
        );
        return false;
    }
    if !cfg!(target_arch = "x86_64") {
        c.missing
            .push("hosted: this host is not x86_64 (the hosted benchmark reads the TSC)".into());
        return false;
    }
    if let Err(why) = hosted::available(root, hosted::source(memory)) {
        c.missing.push(format!("hosted: {why}"));
        return false;
    }
    true
}

/// The crates whose sources must print the record markers for a guest of `arch` to benchmark.
fn guest_sources(arch: Arch) -> [&'static str; 4] {
    match arch {
        Arch::X86_64 => ["images/x86", "images/common", "servers", "hal-x86"],
        Arch::Armv7 => ["images/armv7", "images/common", "servers", "hal-armv7"],
    }
}

/// Whether any `.rs` file under `dir` mentions `needle`.
pub fn sources_mention(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            sources_mention(&p, needle)
        } else {
            p.extension().is_some_and(|x| x == "rs")
                && fs::read_to_string(&p).is_ok_and(|t| t.contains(needle))
        }
    })
}

/// The architectures whose guests can be benchmarked for `plan`'s guest platforms: their
/// sources print the record markers and their QEMU is there (installed if it can be). The
/// others are recorded as missing.
pub fn guest_archs(root: &Path, plan: &Plan, c: &mut Collected) -> Vec<Arch> {
    let platforms: Vec<&str> = plan
        .platforms
        .iter()
        .filter(|p| **p != Platform::Hosted)
        .map(|p| p.name())
        .collect();
    if platforms.is_empty() {
        return Vec::new();
    }
    let platforms = platforms.join(", ");
    let mut ready = Vec::new();
    for &arch in &plan.archs {
        let name = qemu::arch_name(arch);
        let sources = guest_sources(arch);
        if !sources
            .iter()
            .any(|s| sources_mention(&root.join(s).join("src"), guest::BEGIN))
        {
            c.missing.push(format!(
                "{platforms}: the {name} guest does not print {} anywhere in {}: {name} has \
                 no guest benchmarks (mode=bench)",
                guest::BEGIN,
                sources.join(", ")
            ));
            continue;
        }
        if let Err(e) = qemu::ensure_qemu(arch) {
            c.missing.push(format!("{platforms}: {name}: {e}"));
            continue;
        }
        ready.push(arch);
    }
    ready
}

/// The guest boots of `platform` (`qemu-icount` or `qemu`) on `archs`: every board and lock;
/// under `qemu` also every core count, for the multicore benchmark and (unless `quick`) the
/// client-server one.
pub fn guest_runs(
    plan: &Plan,
    platform: Platform,
    args: &RunArgs,
    archs: &[Arch],
) -> Vec<GuestRun> {
    let mut runs = Vec::new();
    for base in one_core_boots(plan, platform, args, archs, "ipc") {
        if base.icount {
            runs.push(base);
            continue;
        }
        for &n in &plan.cores {
            runs.push(GuestRun {
                smp: n,
                bench: "multicore",
                ..base.clone()
            });
        }
        if !args.quick {
            for &n in &plan.cores {
                for variant in ["shared", "dedicated"] {
                    // One shared server for clients on several cores shares its
                    // objects across cores, which lock=none cannot protect.
                    if variant == "shared" && base.lock == Lock::None && n > 1 {
                        continue;
                    }
                    runs.push(GuestRun {
                        smp: n,
                        bench: "clientserver",
                        clients: Some(n),
                        variant: Some(variant),
                        ..base.clone()
                    });
                }
            }
        }
    }
    runs
}

/// The one-core boot of `bench` on every board of `archs` with every lock of `plan`, in that
/// order, as `platform` and `args` run it: what each suite's boots on `platform` are made from.
pub fn one_core_boots(
    plan: &Plan,
    platform: Platform,
    args: &RunArgs,
    archs: &[Arch],
    bench: &'static str,
) -> Vec<GuestRun> {
    let icount = platform == Platform::QemuIcount;
    let mut boots = Vec::new();
    for &arch in archs {
        for &machine in Plan::boards(arch) {
            for &lock in &plan.locks {
                let base = (args.runs, icount, args.timeout);
                boots.push(GuestRun::one_core(arch, machine, lock, bench, base));
            }
        }
    }
    boots
}

/// Every step of a run, in order: the hosted benchmark (if `hosted`), the image builds, the
/// `qemu-icount` boots, the barrier traces (ARMv7, IPC suite, not with `--quick`), the `qemu`
/// boots. With `sweep` the boots are the memory suite's ([`memory::guest_runs`]).
pub fn plan_steps(
    plan: &Plan,
    args: &RunArgs,
    sweep: Option<&Sweep>,
    hosted: bool,
    archs: &[Arch],
) -> Vec<Step> {
    let mut steps = Vec::new();
    if hosted {
        steps.push(Step::Hosted);
    }
    steps.extend(archs.iter().map(|a| match args.kernel_trace {
        KernelTrace::Off => Step::Build(*a),
        KernelTrace::Built | KernelTrace::On => Step::BuildTraced(*a),
    }));
    for platform in [Platform::QemuIcount, Platform::Qemu] {
        if !plan.platforms.contains(&platform) {
            continue;
        }
        let runs = match sweep {
            Some(sweep) => memory::guest_runs(plan, sweep, platform, args, archs),
            None => guest_runs(plan, platform, args, archs),
        };
        steps.extend(runs.into_iter().map(|run| {
            Step::Guest(GuestRun {
                kernel_trace: args.kernel_trace,
                ..run
            })
        }));
        // The barrier traces count the untraced kernel's barriers.
        if sweep.is_none()
            && platform == Platform::QemuIcount
            && !args.quick
            && archs.contains(&Arch::Armv7)
            && args.kernel_trace == KernelTrace::Off
        {
            steps.extend(plan.locks.iter().map(|l| Step::Barriers(*l)));
        }
    }
    steps
}

/// Runs the steps, numbering them out of `progress`; the records, notes and errors go to `c`.
#[allow(clippy::too_many_arguments)]
pub fn execute(
    root: &Path,
    args: &RunArgs,
    plan: &Plan,
    steps: &[Step],
    machine: &Machine,
    sweep: Option<&Sweep>,
    out_dir: &Path,
    progress: &mut host_env::progress::Progress,
    c: &mut Collected,
) {
    let mut images: BTreeMap<&'static str, Result<PathBuf, ()>> = BTreeMap::new();
    let mut trace_image: Option<Result<qemu_runner::exectrace::Image, String>> = None;
    for step in steps {
        let line = progress.next(&step.label());
        match step {
            Step::Hosted => {
                println!("{line}");
                run_hosted(root, args, plan, machine, sweep, out_dir, c);
            }
            Step::Build(arch) | Step::BuildTraced(arch) => {
                println!("{line}");
                let name = qemu::arch_name(*arch);
                let features = match step {
                    Step::BuildTraced(_) => args.kernel_trace.features(),
                    _ => &[],
                };
                let built =
                    qemu::build_image_with(root, *arch, false, "bench", features).map_err(|e| {
                        c.errors.push(format!("{name}: {e}"));
                        println!("bench:   FAILED: {e}; its guest steps are skipped");
                    });
                images.insert(name, built);
            }
            Step::Guest(run) => {
                print_now(&format!("{line} ... "));
                match images.get(qemu::arch_name(run.arch)) {
                    Some(Ok(elf)) => run_guest(root, args, run, elf, machine, c),
                    _ => println!("skipped (no image)"),
                }
            }
            Step::Barriers(lock) => {
                print_now(&format!("{line} ... "));
                let Some(Ok(elf)) = images.get(qemu::arch_name(Arch::Armv7)) else {
                    println!("skipped (no image)");
                    continue;
                };
                let image = trace_image.get_or_insert_with(|| {
                    qemu_runner::exectrace::image_of(root, Arch::Armv7, elf)
                });
                match image {
                    Ok(image) => run_barrier_trace(root, *lock, elf, image, machine, c),
                    Err(e) => {
                        println!("FAILED");
                        c.errors
                            .push(format!("qemu-icount: armv7 barrier trace: {e}"));
                    }
                }
            }
        }
    }
}

/// The hosted benchmark: one run for every lock and core count, its output shown line by line
/// as it arrives (the build, then one line per measured point).
fn run_hosted(
    root: &Path,
    args: &RunArgs,
    plan: &Plan,
    machine: &Machine,
    sweep: Option<&Sweep>,
    out_dir: &Path,
    c: &mut Collected,
) {
    let locks: Vec<&str> = plan.locks.iter().map(|l| l.name()).collect();
    let path = out_dir.join(".hosted-records.json");
    let cmd = match sweep {
        Some(sweep) => {
            let mut pages = sweep.pages.clone();
            if args.quick {
                pages = vec![sweep.core_pages];
            }
            hosted::memory_command(
                &path,
                &locks,
                &plan.cores,
                &sweep.pagers,
                &pages,
                args.runs,
                args.quick,
            )
        }
        None => hosted::command(&path, &locks, &plan.cores, args.runs, args.quick),
    };
    println!("bench:   {}", cmd.display());
    let t = Instant::now();
    if let Some(over) = plan
        .cores
        .iter()
        .find(|n| **n as usize > machine.host_cores)
    {
        c.notes.push(format!(
            "hosted: {over} cores asked for on a {}-core host: those points are oversubscribed.",
            machine.host_cores
        ));
    }
    let verbose = args.verbose;
    let mut building = false;
    let mut show = |line: &str| {
        let line = line.trim();
        if verbose {
            println!("{line}");
            return;
        }
        // cargo's per-crate lines once, as one line; the benchmark's own lines all.
        let cargo_step = [
            "Compiling ",
            "Downloading ",
            "Downloaded ",
            "Locking ",
            "Updating ",
        ]
        .iter()
        .any(|p| line.starts_with(p));
        if line.is_empty() || (cargo_step && building) {
            return;
        }
        building |= cargo_step;
        let shown = if cargo_step {
            "building the benchmark (cargo bench, release profile) ..."
        } else {
            line
        };
        println!(
            "bench:   hosted {:>4.0} s | {shown}",
            t.elapsed().as_secs_f64()
        );
    };
    match hosted::run(root, &cmd, &path, &mut show) {
        Ok(raws) => {
            let n = raws.len();
            let origin = Origin {
                platform: Platform::Hosted,
                arch: "x86_64",
                board: "host",
                machine,
                retries: 0,
            };
            add_records(&raws, &origin, c);
            println!(
                "bench:   hosted: {n} records ({:.1} s)",
                t.elapsed().as_secs_f64()
            );
        }
        Err(e) => {
            println!("bench:   hosted: FAILED");
            c.errors.push(format!("hosted: {e}"));
        }
    }
}

/// One guest boot (two under `--check` for `qemu-icount`, which must agree); finishes the
/// progress line with the outcome.
fn run_guest(
    root: &Path,
    args: &RunArgs,
    run: &GuestRun,
    elf: &Path,
    machine: &Machine,
    c: &mut Collected,
) {
    let t = Instant::now();
    let label = run.label();
    let result = guest::with_retries(
        |_| run.attempt(root, elf, args.verbose),
        |msg| print_now(&format!("\nbench:   {label}: {msg} ... ")),
    );
    let (raws, retries) = match result {
        Ok(ok) => ok,
        Err(e) => {
            println!("FAILED");
            c.errors.push(format!("{label}: {e}"));
            return;
        }
    };
    if run.icount && args.check {
        match guest::with_retries(|_| run.attempt(root, elf, args.verbose), |_| {}) {
            Ok((again, _)) if samples_of(&again) == samples_of(&raws) => {}
            Ok((again, _)) => c.errors.push(format!(
                "{label}: two -icount runs gave different samples: {:?} then {:?}",
                samples_of(&raws),
                samples_of(&again)
            )),
            Err(e) => c.errors.push(format!("{label} (second run): {e}")),
        }
    }
    let mut raws = raws;
    if run.icount && run.bench == "memory" {
        raws.retain(|r| memory::icount_keeps(&r.bench, run.smp));
    }
    let expected = run.lock.name();
    if let Some(bad) = raws.iter().find(|r| r.lock != expected) {
        c.errors.push(format!(
            "{label}: a record says lock `{}`, the guest was booted with `{expected}`",
            bad.lock
        ));
        println!("FAILED");
        return;
    }
    let origin = Origin {
        platform: if run.icount {
            Platform::QemuIcount
        } else {
            Platform::Qemu
        },
        arch: qemu::arch_name(run.arch),
        board: run.machine.name(),
        machine,
        retries,
    };
    let before = c.records.len();
    add_records(&raws, &origin, c);
    for r in &mut c.records[before..] {
        r.kernel_trace = run.kernel_trace.name().to_owned();
        if run.kernel_trace != KernelTrace::Off {
            r.method = format!("{}; {}", r.method, run.kernel_trace.describe());
        }
    }
    // The guest's memory records do not carry their page count: it is the boot's `pages=`
    // (for `memory-ipc`, the point the Calls were measured after).
    if let Some(pages) = run.pages {
        for r in &mut c.records[before..] {
            if r.pages == 0 && r.bench.starts_with("memory-") {
                r.pages = pages;
            }
        }
    }
    println!(
        "ok, {} records{} ({:.1} s)",
        c.records.len() - before,
        if retries > 0 {
            format!(", after {retries} retries")
        } else {
            String::new()
        },
        t.elapsed().as_secs_f64()
    );
}

/// The barrier count of the ARMv7 IPC path (`cargo xtask trace exec`) on sabrelite, the paper's
/// board, for `lock`: an `ipc-barriers` record of the `qemu-icount` platform (the traces run
/// under `-icount shift=0`). About 6 s.
fn run_barrier_trace(
    root: &Path,
    lock: Lock,
    elf: &Path,
    image: &qemu_runner::exectrace::Image,
    machine: &Machine,
    c: &mut Collected,
) {
    let board = qemu::Machine::Sabrelite;
    let t = Instant::now();
    const ROUNDS: u64 = 100;
    let raw = qemu_runner::exectrace::measure(root, elf, image, board, lock, ROUNDS, true)
        .and_then(|p| {
            serde_json::from_value::<RawRecord>(qemu_runner::exectrace::record(
                board, lock, ROUNDS, &p,
            ))
            .map_err(|e| format!("trace record: {e}"))
        });
    match raw {
        Ok(raw) => {
            let origin = Origin {
                platform: Platform::QemuIcount,
                arch: "armv7",
                board: board.name(),
                machine,
                retries: 0,
            };
            add_records(&[raw], &origin, c);
            println!("ok ({:.1} s)", t.elapsed().as_secs_f64());
        }
        Err(e) => {
            println!("FAILED");
            c.errors.push(format!(
                "qemu-icount: armv7 {} lock={} barrier trace: {e}",
                board.name(),
                lock.name()
            ));
        }
    }
}

/// The samples of every record, for the determinism check.
fn samples_of(raws: &[RawRecord]) -> Vec<(String, String, Vec<f64>)> {
    raws.iter()
        .map(|r| (r.bench.clone(), r.variant.clone(), r.samples.clone()))
        .collect()
}

/// Converts raw records into `c.records` (errors into `c.errors`).
fn add_records(raws: &[RawRecord], origin: &Origin, c: &mut Collected) {
    for raw in raws {
        match records::convert(raw, origin) {
            Ok(r) => c.records.push(r),
            Err(e) => c.errors.push(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::run_args as args;
    use super::super::plan::{ArchArg, LockArg, PlatformArg};
    use super::*;

    fn plan(
        locks: &[LockArg],
        archs: &[ArchArg],
        platforms: &[PlatformArg],
        cores: &[u32],
    ) -> Plan {
        Plan::new(locks, archs, platforms, cores).unwrap()
    }

    #[test]
    fn every_step_is_counted_before_the_first() {
        // --lock clh (and the none baseline), x86_64, qemu-icount: one build, two boots.
        let p = plan(
            &[LockArg::Lock(Lock::Clh)],
            &[ArchArg::X86_64],
            &[PlatformArg::QemuIcount],
            &[],
        );
        let steps = plan_steps(&p, &args(&[]), None, false, &[Arch::X86_64]);
        let labels: Vec<String> = steps.iter().map(Step::label).collect();
        assert_eq!(labels.len(), 3, "{labels:?}");
        assert_eq!(labels[0], "building the x86_64 image");
        assert!(labels[1].contains("lock=none") && labels[1].contains("(icount)"));
        assert!(labels[2].contains("lock=clh"));

        // Everything for two locks on both architectures, cores 1,2: hosted, 2 builds,
        // icount 3 boards x 2 locks, 2 barrier traces, qemu 3 boards x 2 locks x (2
        // multicore + 4 client-server, less `none` shared on 2 cores).
        let p = plan(&[LockArg::Lock(Lock::Clh)], &[], &[], &[1, 2]);
        let archs = [Arch::X86_64, Arch::Armv7];
        let steps = plan_steps(&p, &args(&[]), None, true, &archs);
        let count = |f: fn(&Step) -> bool| steps.iter().filter(|s| f(s)).count();
        assert!(matches!(steps[0], Step::Hosted));
        assert_eq!(count(|s| matches!(s, Step::Build(_))), 2);
        assert_eq!(count(|s| matches!(s, Step::Guest(r) if r.icount)), 6);
        assert_eq!(count(|s| matches!(s, Step::Barriers(_))), 2);
        assert_eq!(
            count(|s| matches!(s, Step::Guest(r) if !r.icount)),
            3 * (2 * 6 - 1)
        );
        assert_eq!(steps.len(), 1 + 2 + 6 + 2 + 33);

        // --quick: no client-server boots, no barrier traces.
        let quick = plan_steps(&p, &args(&["--quick"]), None, true, &archs);
        assert_eq!(quick.len(), 1 + 2 + 6 + 3 * 2 * 2);
        // An architecture that cannot run has no steps.
        assert_eq!(
            plan_steps(&p, &args(&["--quick"]), None, false, &[]).len(),
            0
        );
        // --kernel-trace on: traced builds, every boot with trace=1, no barrier traces.
        let on = plan_steps(&p, &args(&["--kernel-trace", "on"]), None, true, &archs);
        assert_eq!(count_of(&on, |s| matches!(s, Step::BuildTraced(_))), 2);
        assert_eq!(count_of(&on, |s| matches!(s, Step::Build(_))), 0);
        assert_eq!(count_of(&on, |s| matches!(s, Step::Barriers(_))), 0);
        assert!(on.iter().all(|s| match s {
            Step::Guest(r) => r.append().ends_with(" trace=1"),
            _ => true,
        }));
        assert_eq!(on.len(), steps.len() - 2);
        // The memory suite: its own boots, no barrier traces.
        let sweep = Sweep::new(&[], &[]);
        let mem = plan_steps(&p, &args(&[]), Some(&sweep), true, &archs);
        assert_eq!(count_of(&mem, |s| matches!(s, Step::Barriers(_))), 0);
        assert!(mem
            .iter()
            .all(|s| !matches!(s, Step::Guest(r) if r.bench != "memory")));
    }

    fn count_of(steps: &[Step], f: fn(&Step) -> bool) -> usize {
        steps.iter().filter(|s| f(s)).count()
    }

    #[test]
    fn guest_sources_are_found_by_marker() {
        let root = host_env::workspace_root();
        // This crate's own sources print the marker (guest.rs defines it).
        assert!(sources_mention(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            guest::BEGIN
        ));
        assert!(!sources_mention(&root.join("does-not-exist"), guest::BEGIN));
    }
}
