//! `cargo xtask trace`: what one IPC round trip executes, instruction by instruction: how many
//! guest instructions, in which functions, and how many of them are barriers.
//!
//! Why barriers are counted as executed, and how a trace is taken and read, is in
//! [`qemu_runner::exectrace`]; the same trace says where the round trip's instructions go,
//! which is what to read before optimising the path.
//!
//! This module holds the command's options and its three modes: the exec traces per lock and
//! machine (with `--lines`, per source line), `--hosted` (a lock trace of the hosted harness,
//! replayed by the simulator) and `--image` (the lock trace the image records itself).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use qemu_runner::exectrace::{image_of, measure, record, user_elf, Kind};
use qemu_runner::qemu::{Arch, Lock, Machine};
/// What every trace takes: the machines, the locks, the run's length and where it goes.
#[derive(Debug, Args, Clone)]
pub struct TraceOpts {
    /// Architectures: x86_64 (microvm), armv7 (sabrelite and virt) or all.
    #[arg(long, value_enum, default_value = "all")]
    arch: ArchChoice,

    /// Locks (comma-separated) [default: every strategy: clh, ticket, fine, rtm, none; a lock
    /// trace records the first one given, default clh].
    #[arg(long, value_enum, value_delimiter = ',')]
    lock: Vec<Lock>,

    /// Round trips of the shorter run (the longer runs twice as many); with --image, of the
    /// demo that is traced.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    rounds: u64,

    /// Where to write trace.json [default: target/bench] (a lock trace: the trace file and
    /// the simulator's output [default: target/sim]).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// The options of the QEMU exec traces (`trace exec`).
#[derive(Debug, Args, Clone, Default)]
pub struct ExecOpts {
    /// Functions to list per run, by instructions per round trip (0: none).
    #[arg(long, default_value_t = DEFAULT_TOP)]
    top: usize,

    /// Boot with `fastpath=0`, so that Call and ReplyRecv take the kernel's full path (what the
    /// IPC fastpath saves is the difference to a run without this flag).
    #[arg(long)]
    no_fastpath: bool,

    /// Also list the N source lines with the most instructions per round trip, each address
    /// mapped to its innermost inlined function and `file:line` (the kernel's and the user
    /// program's ELF files, with `addr2line` from binutils). The profile that finds where a
    /// round trip goes below the function level (0: none).
    #[arg(long, default_value_t = 0)]
    lines: usize,
}

/// `--top`'s default.
const DEFAULT_TOP: usize = 12;

/// The options of the kernel lock traces (`trace locks`).
#[derive(Debug, Args, Clone)]
pub struct LockTraceOpts {
    /// Record in the hosted harness: run the kernel's workload on --cores host threads with
    /// tracing on (`--features trace`), write the trace file, print its analysis and the
    /// simulator's replay and 1..64-core sweep (as `cargo xtask sim`). --lock: clh, ticket or
    /// fine (the first one given; default clh).
    #[arg(long)]
    hosted: bool,

    /// Record inside the QEMU images: build the image with its `trace` feature, boot the demo
    /// (one ping-pong pair per core, --rounds round trips) on --cores cores with `trace=1`
    /// under `-icount shift=0,sleep=off`, read the trace the image prints at the end, write it
    /// (`image-<machine>-<lock>-<cores>cores.trace` in --out [default: target/sim]) and
    /// analyse and sweep it as --hosted does. --arch: x86_64 (microvm), armv7 (sabrelite) or
    /// all; --lock: the first one given (default clh).
    #[arg(long, conflicts_with = "hosted")]
    image: bool,

    /// With --image: check each trace (records from every core in time order, ordered lock
    /// timestamps, the ping-pong's Call and ReplyRecv entries, nothing lost, the file read back
    /// from disk equal) and fail otherwise (`cargo xtask test`'s `trace:image` step).
    #[arg(long, requires = "image")]
    check: bool,

    /// With --hosted: the cores (host threads) to record on; with --image: the guest's cores.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=8))]
    cores: u16,

    /// With --hosted: the workload: `ipc` (a caller and a server per core: the ping-pong),
    /// `client-server` (one server thread on core 0 and one client on every core, core 0's
    /// too, each making 2000 Calls to it on one shared endpoint; lock clh, ticket or fine) or
    /// `memory` (the memory benchmark's: a worker per core whose page faults and frees
    /// user-level pagers serve, 100 pages per task, 16 tasks; lock clh or ticket).
    #[arg(long, value_enum, default_value_t = Workload::Ipc, requires = "hosted")]
    workload: Workload,

    /// With --hosted --workload memory: one global pager on core 0 instead of one per core.
    #[arg(long, requires = "hosted")]
    global_pager: bool,
}

/// `cargo xtask trace exec` / `trace locks`.
#[derive(Debug, clap::Subcommand)]
enum TraceCommand {
    /// What one IPC round trip executes under QEMU: instructions, functions and barriers.
    ///
    /// For each architecture and lock, runs the one-core demo twice under QEMU with
    /// `-icount shift=0 -singlestep -d exec,nochain`, with `rounds=N` and `rounds=2N`, and
    /// divides the difference by N. Prints a table and writes <out>/trace.json.
    Exec {
        #[command(flatten)]
        trace: TraceOpts,
        #[command(flatten)]
        exec: ExecOpts,
    },
    /// Record a kernel lock trace (--hosted: on host threads; --image: inside the QEMU
    /// images), then analyse, replay and sweep it with the simulator.
    Locks {
        #[command(flatten)]
        trace: TraceOpts,
        #[command(flatten)]
        locks: LockTraceOpts,
    },
}

/// Options of `cargo xtask trace`: `trace exec`, `trace locks`, or the old spelling (every
/// option at once, `--hosted` and `--image` choosing a lock trace), kept for one release.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: Option<TraceCommand>,

    #[command(flatten)]
    trace: TraceOpts,
    #[command(flatten)]
    exec: ExecOpts,
    #[command(flatten)]
    locks: LockTraceOpts,
}

/// A trace, whichever way it was spelt.
#[derive(Debug, Clone)]
struct Trace {
    trace: TraceOpts,
    exec: ExecOpts,
    locks: LockTraceOpts,
}

impl Default for LockTraceOpts {
    fn default() -> Self {
        Self {
            hosted: false,
            image: false,
            check: false,
            cores: 2,
            workload: Workload::Ipc,
            global_pager: false,
        }
    }
}

impl TraceArgs {
    /// The trace asked for; `Err` for `trace locks` without --hosted or --image, or, in the
    /// old spelling, exec-trace options beside --hosted or --image.
    fn resolve(&self) -> Result<Trace, String> {
        match &self.command {
            Some(TraceCommand::Exec { trace, exec }) => Ok(Trace {
                trace: trace.clone(),
                exec: exec.clone(),
                locks: LockTraceOpts::default(),
            }),
            Some(TraceCommand::Locks { trace, locks }) => {
                if !locks.hosted && !locks.image {
                    return Err("`trace locks` records on the host (--hosted) or in the images (--image): name one".into());
                }
                Ok(Trace {
                    trace: trace.clone(),
                    exec: ExecOpts {
                        top: DEFAULT_TOP,
                        ..ExecOpts::default()
                    },
                    locks: locks.clone(),
                })
            }
            None => {
                let lock_trace = self.locks.hosted || self.locks.image;
                if lock_trace && (self.exec.no_fastpath || self.exec.lines > 0) {
                    return Err("--no-fastpath and --lines are for the exec traces (`trace exec`), not --hosted or --image".into());
                }
                Ok(Trace {
                    trace: self.trace.clone(),
                    exec: self.exec.clone(),
                    locks: self.locks.clone(),
                })
            }
        }
    }

    /// How this trace is spelt now, for the note an old spelling prints.
    fn new_spelling(&self) -> Option<&'static str> {
        match (&self.command, self.locks.hosted, self.locks.image) {
            (Some(_), _, _) => None,
            (None, true, _) => Some("cargo xtask trace locks --hosted"),
            (None, _, true) => Some("cargo xtask trace locks --image"),
            (None, false, false) => Some("cargo xtask trace exec"),
        }
    }
}

/// `--workload` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Workload {
    /// IPC ping-pong, one private pair per core.
    Ipc,
    /// A client per core Calling one shared server on core 0.
    ClientServer,
    /// The memory benchmark's page faults and frees.
    Memory,
}

/// `--arch` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ArchChoice {
    /// x86_64 on microvm.
    #[value(name = "x86_64")]
    X86_64,
    /// ARMv7 on sabrelite (Cortex-A9) and virt (Cortex-A15).
    Armv7,
    /// Both.
    All,
}

/// `cargo xtask trace`: traces, prints a table, writes `trace.json`.
pub fn run(root: &Path, args: &TraceArgs) -> ExitCode {
    if let Some(now) = args.new_spelling() {
        eprintln!("note: this trace is spelt `{now}` now; `cargo xtask trace` without `exec` or `locks` keeps working for one release");
    }
    host_env::exit_code(
        "trace",
        args.resolve().and_then(|trace| run_inner(root, &trace)),
    )
}

/// What `--hosted` records: the trace file's name stem and the `trace_hosted` example's
/// arguments other than `--cores` and `--out`; an error for a lock the workload cannot run.
fn hosted_plan(args: &Trace) -> Result<(String, Vec<&'static str>), String> {
    let lock = args.trace.lock.first().copied().unwrap_or(Lock::Clh);
    let name =
        match (lock, args.locks.workload) {
            (Lock::Clh | Lock::Ticket, _) => lock.name(),
            (Lock::Fine, Workload::Ipc | Workload::ClientServer) => lock.name(),
            (Lock::None, Workload::ClientServer) => return Err(
                "--workload client-server needs a kernel lock (clh, ticket or fine), not none: \
                 every core's client Calls the one server, so the cores share its endpoint, \
                 TCB and run queue"
                    .into(),
            ),
            (other, _) => {
                return Err(format!(
                    "--hosted records clh, ticket or fine (the memory workload: clh or ticket), \
                 not {}",
                    other.name()
                ))
            }
        };
    Ok(match args.locks.workload {
        Workload::Ipc => (format!("hosted-{name}"), vec!["--lock", name]),
        Workload::ClientServer => (
            format!("hosted-client-server-{name}"),
            vec![
                "--lock",
                name,
                "--workload",
                "client-server",
                "--per",
                "2000",
            ],
        ),
        Workload::Memory => {
            let pager = if args.locks.global_pager {
                "global"
            } else {
                "percore"
            };
            (
                format!("hosted-memory-{pager}-{name}"),
                vec![
                    "--lock",
                    name,
                    "--workload",
                    "memory",
                    "--pages",
                    "100",
                    "--tasks",
                    "16",
                    "--pager",
                    pager,
                ],
            )
        }
    })
}

/// `--hosted`: records a kernel lock trace in the hosted harness, then analyses and sweeps it.
fn run_hosted(root: &Path, args: &Trace) -> Result<(), String> {
    let (stem, example_args) = hosted_plan(args)?;
    let out = args
        .trace
        .out
        .clone()
        .unwrap_or_else(|| host_env::target_dir(root).join("sim"));
    let file = out.join(format!("{stem}-{}cores.trace", args.locks.cores));
    crate::sim::record_hosted(root, args.locks.cores, &example_args, &file)?;
    crate::sim::analyse_and_sweep(&file, None, None, 64, &out)
}

fn run_inner(root: &Path, args: &Trace) -> Result<(), String> {
    if args.locks.hosted {
        return run_hosted(root, args);
    }
    let arches: &[Arch] = match args.trace.arch {
        ArchChoice::X86_64 => &[Arch::X86_64],
        ArchChoice::Armv7 => &[Arch::Armv7],
        ArchChoice::All => &[Arch::X86_64, Arch::Armv7],
    };
    if args.locks.image {
        let out = args
            .trace
            .out
            .clone()
            .unwrap_or_else(|| host_env::target_dir(root).join("sim"));
        let lock = args.trace.lock.first().copied().unwrap_or(Lock::Clh);
        let opts = crate::imagetrace::Options {
            lock,
            cores: args.locks.cores,
            rounds: args.trace.rounds,
            check: args.locks.check,
        };
        return crate::imagetrace::run(root, arches, &opts, &out).map(|_| ());
    }
    let locks = if args.trace.lock.is_empty() {
        Lock::ALL.to_vec()
    } else {
        args.trace.lock.clone()
    };
    if args.exec.lines > 0 {
        host_env::deps::ensure("cargo xtask trace exec --lines", host_env::deps::ADDR2LINE)?;
    }
    let mut records = Vec::new();
    let machines_of = |arch: Arch| -> &'static [Machine] {
        match arch {
            Arch::X86_64 => &[Machine::Microvm],
            Arch::Armv7 => &Machine::ARMV7,
        }
    };
    let mut progress = host_env::progress::Progress::new(
        "trace",
        arches
            .iter()
            .map(|&a| machines_of(a).len() * locks.len())
            .sum(),
    );
    for &arch in arches {
        qemu_runner::qemu::ensure_qemu(arch)?;
        let elf = qemu_runner::qemu::build_image(root, arch, false, "trace")?;
        let image = image_of(root, arch, &elf)?;
        let elfs = [elf.clone(), user_elf(root, arch)?];
        let machines = machines_of(arch);
        let kinds = Kind::of_arch(arch);
        eprintln!(
            "trace: {arch:?}: {} runs of the one-core demo (rounds={} and {}) under -icount \
             shift=0 -singlestep -d exec,nochain{}",
            2 * machines.len() * locks.len(),
            args.trace.rounds,
            2 * args.trace.rounds,
            if args.exec.no_fastpath {
                ", fastpath=0"
            } else {
                ""
            }
        );
        eprintln!(
            "trace: the demo's round trip includes its client's user code (the reply check, \
             the typed library loop: about 200 instructions), so `insns` is above `cargo xtask \
             bench`'s ipc-roundtrip, whose raw loop has none; kernel and trap paths are the same"
        );
        print!(
            "{:<10} {:<7} {:>8} {:>6} {:>8}",
            "machine", "lock", "insns", "noise", "barriers"
        );
        for k in kinds {
            print!(" {:>7}", k.name());
        }
        println!();
        for &machine in machines {
            for &lock in &locks {
                eprintln!(
                    "{}",
                    progress.next(&format!(
                        "{} {}: two traced runs",
                        machine.name(),
                        lock.name()
                    ))
                );
                let p = measure(
                    root,
                    &elf,
                    &image,
                    machine,
                    lock,
                    args.trace.rounds,
                    !args.exec.no_fastpath,
                )?;
                print!(
                    "{:<10} {:<7} {:>8.1} {:>6.1} {:>8.1}",
                    machine.name(),
                    lock.name(),
                    p.instructions,
                    p.noise,
                    p.total_barriers()
                );
                for k in kinds {
                    print!(" {:>7.1}", p.barriers.get(k).copied().unwrap_or(0.0));
                }
                println!();
                for ((function, k), n) in &p.barriers_by_function {
                    println!("    {n:>6.1} {:<6} in {function}", k.name());
                }
                for (function, n) in p.top_functions(args.exec.top) {
                    println!("    {n:>6.1} insns  in {function}");
                }
                if args.exec.lines > 0 {
                    for (line, n) in source_lines(&elfs, &p.by_address, args.exec.lines)? {
                        println!("    {n:>6.1} insns  at {line}");
                    }
                }
                records.push(record(machine, lock, args.trace.rounds, &p));
            }
        }
    }
    let out = args
        .trace
        .out
        .clone()
        .unwrap_or_else(|| host_env::target_dir(root).join("bench"));
    std::fs::create_dir_all(&out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let path = out.join("trace.json");
    let text = serde_json::to_string_pretty(&records).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n").map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!(
        "trace: wrote {} ({} in all)",
        path.display(),
        host_env::progress::human(progress.elapsed())
    );
    Ok(())
}

/// The `n` source lines with the most executions per round trip in `by_address`, most first:
/// each address mapped by `addr2line -i` to its innermost inlined function and `file:line`,
/// in the first of `elfs` that knows it (the kernel image, then the user program).
fn source_lines(
    elfs: &[PathBuf],
    by_address: &BTreeMap<u64, f64>,
    n: usize,
) -> Result<Vec<(String, f64)>, String> {
    let mut left: Vec<u64> = by_address.keys().copied().collect();
    let mut by_line: BTreeMap<String, f64> = BTreeMap::new();
    for elf in elfs {
        if left.is_empty() {
            break;
        }
        let out = std::process::Command::new("addr2line")
            .args(["-f", "-C", "-i", "-a", "-e"])
            .arg(elf)
            .args(left.iter().map(|a| format!("{a:#x}")))
            .output()
            .map_err(|e| format!("could not run addr2line: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "addr2line -e {} failed ({}): {}",
                elf.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let unknown = parse_addr2line(&String::from_utf8_lossy(&out.stdout), |pc, line| {
            *by_line.entry(line).or_default() += by_address.get(&pc).copied().unwrap_or(0.0);
        });
        left = unknown;
    }
    for pc in left {
        *by_line
            .entry("?? (no line information)".into())
            .or_default() += by_address[&pc];
    }
    let mut v: Vec<(String, f64)> = by_line.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    Ok(v)
}

/// Reads `addr2line -f -i -a` output: per address a `0x...` line, then a function line and a
/// `file:line` line per inlined frame, innermost first. Calls `found` with each address and
/// `function (file:line)` of its innermost frame (the file shortened to its last two path
/// components); returns the addresses it had no line for.
fn parse_addr2line(text: &str, mut found: impl FnMut(u64, String)) -> Vec<u64> {
    let mut unknown = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(head) = lines.next() {
        let Some(pc) = head
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
        else {
            continue;
        };
        let function = lines.next().unwrap_or("??");
        let place = lines.next().unwrap_or("??:0");
        // The outer inlined frames, up to the next address.
        while lines.peek().is_some_and(|l| !l.starts_with("0x")) {
            lines.next();
        }
        if function == "??" && place.starts_with("??") {
            unknown.push(pc);
            continue;
        }
        let place = place.split(" (discriminator").next().unwrap_or(place);
        let parts: Vec<&str> = place.rsplit('/').take(2).collect();
        let short: Vec<&str> = parts.into_iter().rev().collect();
        found(pc, format!("{function} ({})", short.join("/")));
    }
    unknown
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        trace: TraceArgs,
    }

    #[test]
    fn addr2line_output_maps_each_address_to_its_innermost_frame() {
        // Two inlined frames for the first address, one frame for the second, none known for
        // the third (what addr2line prints for an address outside the file's line table).
        let text = "0x40200010\n\
                    kernel_locks::raw::check_cpu\n\
                    /work/main/kernel-locks/src/raw.rs:106\n\
                    kernel::kernel::Kernel<S,H>::hold\n\
                    /work/main/kernel/src/kernel.rs:633 (discriminator 2)\n\
                    0x40200014\n\
                    kernel::kernel::Kernel<S,H>::entry\n\
                    /work/main/kernel/src/kernel.rs:1031 (discriminator 1)\n\
                    0x00400000\n\
                    ??\n\
                    ??:0\n";
        let mut found = Vec::new();
        let unknown = parse_addr2line(text, |pc, line| found.push((pc, line)));
        assert_eq!(
            found,
            [
                (
                    0x4020_0010,
                    "kernel_locks::raw::check_cpu (src/raw.rs:106)".to_owned()
                ),
                (
                    0x4020_0014,
                    "kernel::kernel::Kernel<S,H>::entry (src/kernel.rs:1031)".to_owned()
                ),
            ]
        );
        assert_eq!(unknown, [0x40_0000]);
    }

    #[test]
    fn lines_is_for_the_exec_traces_only() {
        assert!(Cli::try_parse_from(["trace", "exec", "--lines", "20"]).is_ok());
        assert!(Cli::try_parse_from(["trace", "locks", "--hosted", "--lines", "20"]).is_err());
        // The old spelling: parsed, then refused with the reason.
        let old = Cli::try_parse_from(["trace", "--hosted", "--lines", "20"]).unwrap();
        assert!(old.trace.resolve().unwrap_err().contains("exec traces"));
        assert_eq!(
            old.trace.new_spelling(),
            Some("cargo xtask trace locks --hosted")
        );
        let locks = Cli::try_parse_from(["trace", "locks"]).unwrap();
        assert!(locks.trace.resolve().unwrap_err().contains("--hosted"));
    }

    fn plan(args: &[&str]) -> Result<(String, Vec<&'static str>), String> {
        let cli = Cli::try_parse_from(std::iter::once("trace").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        hosted_plan(&cli.trace.resolve()?)
    }

    #[test]
    fn hosted_workloads_and_the_locks_they_take() {
        let (stem, a) = plan(&["--hosted"]).unwrap();
        assert_eq!((stem.as_str(), a), ("hosted-clh", vec!["--lock", "clh"]));
        let (stem, a) =
            plan(&["--hosted", "--workload", "client-server", "--lock", "fine"]).unwrap();
        assert_eq!(stem, "hosted-client-server-fine");
        assert_eq!(a[..4], ["--lock", "fine", "--workload", "client-server"]);
        for lock in ["clh", "ticket"] {
            let (stem, _) =
                plan(&["--hosted", "--workload", "client-server", "--lock", lock]).unwrap();
            assert_eq!(stem, format!("hosted-client-server-{lock}"));
        }
        // A shared server needs a lock.
        let e = plan(&["--hosted", "--workload", "client-server", "--lock", "none"]).unwrap_err();
        assert!(e.contains("needs a kernel lock"), "{e}");
        let (stem, a) = plan(&["--hosted", "--workload", "memory", "--global-pager"]).unwrap();
        assert_eq!(stem, "hosted-memory-global-clh");
        assert!(a.ends_with(&["--pager", "global"]));
        assert!(plan(&["--hosted", "--workload", "memory", "--lock", "fine"]).is_err());
        assert!(
            plan(&["--workload", "client-server"]).is_err(),
            "needs --hosted"
        );
    }
}
