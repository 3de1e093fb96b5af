//! `cargo xtask qemu`: build the x86_64 or ARMv7 image and boot it under QEMU, streaming the
//! console.
//!
//! # ARMv7 (`--arch armv7`)
//! `image-armv7` is loaded as an ELF (`-kernel`) on `-M sabrelite` (default, 4x Cortex-A9) or
//! `-M virt -cpu cortex-a15`, with `-semihosting`: the kernel reads its command line through
//! SYS_GET_CMDLINE and exits through SYS_EXIT_EXTENDED with status 0 (success) or 1. QEMU also
//! exits with 0 when the guest resets or powers off, so status 0 counts as success only with
//! the kernel's `shutting down: success` line (and the `cpus online: N` and `lock: NAME` lines
//! the run must print).
//!
//! # x86_64
//! The image (`image-x86`) is booted directly through QEMU's PVH loader (`-kernel`), on
//! `-M microvm` by default (the fastest to boot), with the lock and mode on the kernel command
//! line (`-append "lock=clh mode=demo"`). The guest ends the run itself through the
//! `isa-debug-exit` device: status 33 means success, 35 a failure the kernel reported; 0 is a
//! triple fault (with `-no-reboot`), anything else a QEMU error. A run that has not ended after
//! `--timeout` seconds is killed and reported as a hang with the last console lines.
//!
//! With `--tests` the image runs its test suite instead of the demo and prints one
//! `TEST <name> ... ok|FAILED` line per test between `TESTS PLANNED n` and `ALL TESTS RAN n`;
//! [`parse_suite`] checks those lines (also for `cargo xtask test`, which runs the suite with
//! 1 and 4 cores and every lock).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, ValueEnum};

use host_env::proc::Cmd;
use protocol::console::{self, Line, Outcome, SHUTDOWN_SUCCESS};

/// Console lines shown when a run fails.
pub const TAIL: usize = 25;

/// Prints the last [`TAIL`] console `lines` on stderr, each prefixed with `who`.
pub fn print_tail(who: &str, lines: &[String]) {
    let start = lines.len().saturating_sub(TAIL);
    eprintln!(
        "{who}: ---- last {} console lines ----",
        lines.len() - start
    );
    for line in &lines[start..] {
        eprintln!("{who}: | {line}");
    }
}

/// Seconds a run may take unless `--timeout` says otherwise.
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// Architectures `--arch` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Arch {
    /// x86_64 (qemu-system-x86_64, PVH boot).
    #[value(name = "x86_64")]
    X86_64,
    /// ARMv7-A (qemu-system-arm, ELF loader, semihosting exit).
    #[value(name = "armv7")]
    Armv7,
}

/// Kernel locking strategies (`lock=` on the kernel command line): the registry's list, whose
/// `clap` values are `--lock`'s (`brlock` an alias of `fine`).
pub use lock_registry::Lock;

/// QEMU machine types the image boots on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Machine {
    /// Minimal virtual machine: no PCI, no firmware tables beyond the MADT; boots fastest.
    Microvm,
    /// Q35 chipset (PCIe).
    Q35,
    /// i440FX PC.
    Pc,
    /// ARMv7: NXP i.MX6Q Sabre Lite, 4x Cortex-A9 MPCore (the seed paper's board).
    Sabrelite,
    /// ARMv7: QEMU virt with Cortex-A15 cores (GICv2, PSCI, generic timer).
    Virt,
}

impl Machine {
    /// QEMU's name of the machine.
    pub fn name(self) -> &'static str {
        match self {
            Machine::Microvm => "microvm",
            Machine::Q35 => "q35",
            Machine::Pc => "pc",
            Machine::Sabrelite => "sabrelite",
            Machine::Virt => "virt",
        }
    }

    /// The architecture the machine emulates.
    pub fn arch(self) -> Arch {
        match self {
            Machine::Microvm | Machine::Q35 | Machine::Pc => Arch::X86_64,
            Machine::Sabrelite | Machine::Virt => Arch::Armv7,
        }
    }

    /// The ARMv7 machines `cargo xtask test` runs on.
    pub const ARMV7: [Machine; 2] = [Machine::Sabrelite, Machine::Virt];
}

impl Arch {
    /// The default machine.
    pub fn default_machine(self) -> Machine {
        match self {
            Arch::X86_64 => Machine::Microvm,
            Arch::Armv7 => Machine::Sabrelite,
        }
    }
}

/// Options of `cargo xtask qemu`.
#[derive(Debug, Args, Clone)]
pub struct QemuArgs {
    /// Target architecture.
    #[arg(long, value_enum, default_value = "x86_64")]
    pub arch: Arch,

    /// Number of cores (1..=8; the kernel is built for at most 8).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub smp: u32,

    /// The kernel's locking strategy (`brlock` is the fine-grained strategy, named after its
    /// big-reader lock).
    #[arg(long, value_enum, default_value = "clh")]
    pub lock: Lock,

    /// QEMU machine type (default: microvm for x86_64, sabrelite for armv7).
    #[arg(long, value_enum)]
    pub machine: Option<Machine>,

    /// Keep running until Ctrl-C (no timeout; the console takes input).
    #[arg(long)]
    pub interactive: bool,

    /// Build the optimised image (the default: the kernel's IPC paths are ~10x slower
    /// unoptimised under emulation).
    #[arg(long, conflicts_with = "debug")]
    pub release: bool,

    /// Build the dev-profile image instead: debug assertions and overflow checks on. The
    /// image crates, where the kernel's generic code is compiled, are optimised all the same
    /// (opt-level 2, Cargo.toml): unoptimised, building the kernel object overflowed the boot
    /// core's stack.
    #[arg(long)]
    pub debug: bool,

    /// Run the image's test suite instead of the demo.
    #[arg(long)]
    pub tests: bool,

    /// Boot `mode=stackoverflow`: a user program asks for a kernel stack overflow (a debug
    /// call); the run passes only if the kernel stops with its `kernel stack overflow on CPU n
    /// (stack guard at 0x...)` report and the failure status (a hang or a missing report
    /// fails).
    #[arg(long, conflicts_with = "tests")]
    pub stack_overflow: bool,

    /// Boot `mode=fuzz`: a system-call fuzzer on every core beside its ping-pong pair (see
    /// `servers::programs::fuzz`). The run passes only if the kernel shuts down with success, prints no
    /// panic, and every core's fuzzer reports its `fuzz: cpu N: C calls (...)` line with at
    /// least `--calls` calls, no anomaly and a passed self-check.
    #[arg(long, conflicts_with_all = ["tests", "stack_overflow"])]
    pub fuzz: bool,

    /// Boot the memory system (`mode=bench bench=memory`, see `servers::memory`): a loader
    /// starts user-level pagers (one per core, or one global pager with `--pager global`) and a
    /// workload per core; the run passes only if the kernel shuts down with success and every
    /// `TEST memory:...` check the configuration plans printed `ok` (see `--pages`, `--nodes`).
    #[arg(long, conflicts_with_all = ["tests", "stack_overflow", "fuzz"])]
    pub memory: bool,

    /// `--memory`: one pager per core (`percore`, the default) or one on core 0 for all
    /// (`global`).
    #[arg(long, value_parser = ["percore", "global"], requires = "memory")]
    pub pager: Option<String>,

    /// `--memory`: memory nodes the cores and the pool are split into (1..=4; the partitions
    /// follow them).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=4), requires = "memory")]
    pub nodes: Option<u8>,

    /// `--memory` on `--machine pc` or `q35`: QEMU describes this many memory nodes (2..=4) in
    /// the ACPI SRAT (`-numa node,...,memdev=...`: the cores and the board's memory split into
    /// that many consecutive nodes), and the run passes only if the loader took its nodes from
    /// the SRAT (`numa: srat, N nodes`) and the node checks pass; with `--lock cna` also only
    /// if the kernel put its cores on those nodes (its `cna:` line). `-M microvm` has no SRAT.
    #[arg(long, value_parser = clap::value_parser!(u8).range(2..=4), requires = "memory",
          conflicts_with = "nodes")]
    pub numa: Option<u8>,

    /// Calls each fuzzer makes (`--fuzz`; the kernel's default is 100000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub calls: Option<u64>,

    /// The fuzzers' seed (`--fuzz`; decimal or 0x hex; default: the guest's cycle counter).
    /// Every run prints the seed it used.
    #[arg(long)]
    pub seed: Option<String>,

    /// Run all guest cores on one host thread (`-accel tcg,thread=single`): the cores still
    /// interleave (QEMU switches between them, also inside the kernel), but never run at the
    /// same instant. On a host with fewer cores than the guest this is far faster under
    /// contention (a 4-core fuzz run: about 3 s instead of 60 s on 2 host cores), because a
    /// lock holder's thread is never descheduled while the others spin.
    #[arg(long)]
    pub single_thread_tcg: bool,

    /// Sabre Lite only: the console on UART2, as on the real board (its console connector),
    /// instead of UART1: `console=uart2` on the kernel command line and QEMU's `serial1` on
    /// stdio. UART1 then becomes the user driver's test device.
    #[arg(long)]
    pub console_uart2: bool,

    /// ARMv7: boot without `-semihosting`, as on the real board without a debugger. The
    /// kernel then cannot read its command line (it runs the demo with the image's defaults:
    /// the CLH lock, 1000 rounds; `--lock` is not passed on) nor end QEMU: its semihosting
    /// calls take the undefined-instruction path and return "unavailable". The run passes when
    /// the kernel shuts down with success, all `--smp` cores online, and then reports that it
    /// cannot exit; QEMU is stopped there.
    #[arg(long, conflicts_with_all = ["tests", "stack_overflow", "fuzz", "memory", "net", "interactive", "rounds", "append", "console_uart2"])]
    pub no_semihosting: bool,

    /// Boot with the kernel's IPC fastpath off (`fastpath=0`): `Call` and `ReplyRecv` always
    /// take the full path. The run also fails unless the kernel's boot line reports the
    /// fastpath off. `cargo xtask test` runs the guest suite both ways on both architectures,
    /// so that the fastpath's results are checked against the full path's.
    #[arg(long, conflicts_with = "no_semihosting")]
    pub no_fastpath: bool,

    /// Round trips of each ping-pong pair (default: 500 for the demo, 20 for the tests).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: Option<u32>,

    /// Seconds before a run that has not ended is killed and reported as a hang (default 60;
    /// with `--net`, no limit unless given: the server runs until Ctrl-C).
    #[arg(long)]
    pub timeout: Option<u64>,

    /// Boot the network server (`mode=net`, see `servers::net`): a user-level NIC driver
    /// (virtio-net; the i.MX6 ENET on sabrelite) on core 0 and, on every core, a TCP/IP stack and a Redis-protocol key-value server,
    /// reachable from the host through QEMU's user network on forwarded ports (`redis-cli -p
    /// PORT ping`, printed when the server is up; core k's server on PORT + k). Runs until
    /// Ctrl-C or `--timeout`.
    #[arg(long, conflicts_with_all = ["tests", "stack_overflow", "fuzz", "memory"])]
    pub net: bool,

    /// `--net`: how the NIC reaches the host: `passt` (the passt process, Debian package
    /// `passt`, over `-netdev stream`), or `user` (QEMU's user network, libslirp, built into
    /// QEMU; its port forwarding holds one pending connection per port, so clients that open
    /// many connections at once, such as `redis-benchmark -c 50`, stall there). Default: passt,
    /// installed when missing; the user network when passt cannot be installed or does not
    /// start, which the run says.
    #[arg(long, value_enum, requires = "net")]
    pub network: Option<crate::net::Network>,

    /// `--net`: the host port forwarded to core 0's server (guest port 6379); core `k`'s is this
    /// port + k (default: free ones).
    #[arg(long, requires = "net")]
    pub port: Option<u16>,

    /// `--net`: instead of serving until stopped, run a scripted RESP session from the host
    /// (with several cores, each other core's server first: pipelined SETs, a store of its
    /// own; then core 0's: PING, SET/GET, 100 pipelined SETs and GETs, INCR, an unknown
    /// command, a second concurrent connection, a malformed request, a client leaving
    /// mid-request, one connection more than the server's sockets), then stop QEMU; the exit
    /// status says whether every reply was right (the `cargo xtask test` steps `net:*-resp`).
    #[arg(long, requires = "net")]
    pub check: bool,

    /// `--net`: once the server is up, run this shell command against it instead of serving
    /// (environment: `REDIS_TEST_HOST=127.0.0.1`, `REDIS_TEST_PORT=<core 0's port>`,
    /// `REDIS_TEST_PORTS=<every core's port, comma-separated>`), then stop QEMU; the command's
    /// exit status is the result (the `net:x86_64-ycsb` and `net:x86_64-c50` steps run their
    /// clients this way).
    #[arg(
        long,
        requires = "net",
        conflicts_with = "check",
        value_name = "SHELL COMMAND"
    )]
    pub client: Option<String>,

    /// More kernel command-line words (`key=value`); they come first, so they override the
    /// ones xtask sets (`--append lock=bogus` shows the kernel's own check).
    #[arg(long, value_name = "WORDS")]
    pub append: Option<String>,
}

/// What the images' boot line says when the command line turned the IPC fastpath off.
pub const FASTPATH_OFF: &str = "IPC fastpath off";

/// The QEMU binary for `arch`.
pub fn qemu_binary(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "qemu-system-x86_64",
        Arch::Armv7 => "qemu-system-arm",
    }
}

/// The Debian package providing it.
fn qemu_package(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "qemu-system-x86",
        Arch::Armv7 => "qemu-system-arm",
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

fn is_root() -> bool {
    Cmd::new("id")
        .arg("-u")
        .read_stdout(Path::new("/"))
        .is_some_and(|uid| uid == "0")
}

/// Makes sure QEMU is installed: installs it with apt-get when running as root, else says how.
pub fn ensure_qemu(arch: Arch) -> Result<(), String> {
    let bin = qemu_binary(arch);
    if on_path(bin) {
        return Ok(());
    }
    let pkg = qemu_package(arch);
    let cmd = format!(
        "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {pkg}"
    );
    if !is_root() {
        return Err(format!(
            "{bin} is not installed; install it with:\n    sudo sh -c '{cmd}'"
        ));
    }
    eprintln!("qemu: {bin} missing; running `{cmd}`");
    let ok = Cmd::new("sh")
        .args(["-c", &cmd])
        .run_inherited(Path::new("/"))
        .is_ok_and(|s| s.success());
    if ok && on_path(bin) {
        Ok(())
    } else {
        Err(format!(
            "installing {pkg} failed; install it by hand: {cmd}"
        ))
    }
}

/// The package and bare-metal target of `arch`'s image.
fn image_crate(arch: Arch) -> (&'static str, &'static str) {
    match arch {
        Arch::X86_64 => ("image-x86", "x86_64-unknown-none"),
        Arch::Armv7 => ("image-armv7", "armv7a-none-eabi"),
    }
}

/// The package name and bare-metal target of `arch`'s image.
pub fn image_package(arch: Arch) -> (&'static str, &'static str) {
    image_crate(arch)
}

/// Where [`build_image`] leaves the image for `arch`.
pub fn image_path(root: &Path, arch: Arch, debug: bool) -> PathBuf {
    let (package, target) = image_crate(arch);
    host_env::target_dir(root)
        .join(target)
        .join(if debug { "debug" } else { "release" })
        .join(package)
}

/// Builds the image for `arch` (release unless `debug`); returns its path. Cargo's output goes
/// to the terminal; `who` prefixes the message (`qemu`, `bench`).
pub fn build_image(root: &Path, arch: Arch, debug: bool, who: &str) -> Result<PathBuf, String> {
    build_image_with(root, arch, debug, who, &[])
}

/// [`build_image`] with the image's cargo `features` (e.g. `trace`). An image with features is
/// built in a target directory of its own (`<target>/features-<names>`), so that it never
/// replaces the featureless image other steps boot, and the two builds do not undo each other.
pub fn build_image_with(
    root: &Path,
    arch: Arch,
    debug: bool,
    who: &str,
    features: &[&str],
) -> Result<PathBuf, String> {
    let profile = if debug { "debug" } else { "release" };
    let (package, target) = image_crate(arch);
    let mut cmd = Cmd::cargo().args(["build", "-p", package, "--target", target]);
    if !debug {
        cmd = cmd.arg("--release");
    }
    let mut dir = host_env::target_dir(root);
    if !features.is_empty() {
        dir = dir.join(format!("features-{}", features.join("-")));
        cmd = cmd
            .args(["--features", &features.join(",")])
            .env("CARGO_TARGET_DIR", &dir);
    }
    eprintln!("{who}: building the image ({profile}): {}", cmd.display());
    let status = cmd
        .run_inherited(root)
        .map_err(|e| format!("could not run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building the image failed ({status})"));
    }
    Ok(dir
        .join(target)
        .join(if debug { "debug" } else { "release" })
        .join(package))
}

/// One guest boot: what [`guest_cmd`] turns into a QEMU command line.
#[derive(Clone, Debug)]
pub struct Guest<'a> {
    /// The architecture (and so the QEMU binary).
    pub arch: Arch,
    /// The machine; must be one of `arch`'s.
    pub machine: Machine,
    /// Cores (`-smp`).
    pub smp: u32,
    /// The image to boot (`-kernel`).
    pub elf: &'a Path,
    /// The kernel command line (`-append`).
    pub append: String,
    /// More QEMU arguments, after the standard ones (e.g. `-icount shift=0`).
    pub extra: Vec<String>,
    /// The serial port on stdio (0: `serial0`; the Sabre Lite's real console UART2 is
    /// QEMU's `serial1`).
    pub console_port: u8,
    /// ARMv7: `-semihosting`, through which the kernel reads its command line and ends the
    /// run (off only for `cargo xtask qemu --no-semihosting`).
    pub semihosting: bool,
}

/// `-serial` options that put serial port `port` on stdio (the ones before it on nothing).
fn serial_args(port: u8) -> Vec<&'static str> {
    let mut a = Vec::new();
    for _ in 0..port {
        a.extend(["-serial", "null"]);
    }
    a.extend(["-serial", "stdio"]);
    a
}

/// The QEMU command that boots `guest`: console on stdio, no display, no reboot, and the exit
/// device (x86 `isa-debug-exit`) or semihosting (ARMv7) through which the kernel ends the run.
pub fn guest_cmd(guest: &Guest) -> Cmd {
    // The machine's board file (boards/*.toml) says the CPU model, memory and extra devices.
    let board = crate::board::for_qemu_machine_or_exit(guest.machine.name());
    let q = &board.qemu;
    let cpu: Vec<&str> = q.cpu.iter().flat_map(|c| ["-cpu", c.as_str()]).collect();
    let cmd = if guest.arch == Arch::Armv7 {
        Cmd::new(qemu_binary(guest.arch))
            .args(["-M", guest.machine.name()])
            .args(cpu)
            .args(["-m", &q.memory, "-smp"])
            .arg(guest.smp.to_string())
            .args(["-display", "none"])
            .args(serial_args(guest.console_port))
            .args(guest.semihosting.then_some("-semihosting"))
            .args(["-no-reboot", "-kernel"])
            .arg(guest.elf)
            .args(["-append", &guest.append])
            .args(&q.devices)
    } else {
        Cmd::new(qemu_binary(guest.arch))
            .args(["-M", guest.machine.name()])
            .args(cpu)
            .arg("-smp")
            .arg(guest.smp.to_string())
            .args(["-m", &q.memory, "-display", "none"])
            .args(serial_args(guest.console_port))
            .args([
                "-no-reboot",
                "-device",
                "isa-debug-exit,iobase=0xf4,iosize=0x04",
                "-kernel",
            ])
            .arg(guest.elf)
            .args(["-append", &guest.append])
            .args(&q.devices)
    };
    cmd.args(&guest.extra)
}

/// The QEMU command for `elf`.
pub fn qemu_cmd(args: &QemuArgs, elf: &Path) -> Cmd {
    let rounds = args
        .rounds
        .unwrap_or(if args.tests || args.fuzz { 20 } else { 500 });
    // The extra words go first: the kernel reads the first `key=value` of a key, so they
    // override xtask's own.
    let mut append = args.append.clone().map(|a| a + " ").unwrap_or_default();
    if args.no_fastpath {
        append.push_str("fastpath=0 ");
    }
    let mode = if args.stack_overflow {
        "stackoverflow"
    } else if args.fuzz {
        if let Some(calls) = args.calls {
            append.push_str(&format!("calls={calls} "));
        }
        if let Some(seed) = &args.seed {
            append.push_str(&format!("seed={seed} "));
        }
        "fuzz"
    } else if args.tests {
        "test"
    } else if args.net {
        "net"
    } else if args.memory {
        append.push_str(&format!(
            "bench=memory runs=2 pages=32 pager={} nodes={} ",
            args.pager.as_deref().unwrap_or("percore"),
            args.nodes.unwrap_or(1)
        ));
        "bench"
    } else {
        "demo"
    };
    if args.console_uart2 {
        append.push_str("console=uart2 ");
    }
    append.push_str(&format!(
        "lock={} mode={mode} rounds={rounds}",
        args.lock.name()
    ));
    let machine = args.machine.unwrap_or(args.arch.default_machine());
    let mut extra = if args.single_thread_tcg {
        vec!["-accel".into(), "tcg,thread=single".into()]
    } else {
        Vec::new()
    };
    if let Some(port) = args.port.filter(|_| args.net) {
        extra.extend(match args.network {
            Some(crate::net::Network::User) => crate::net::qemu_args(port, args.smp, machine),
            Some(crate::net::Network::Passt) | None => crate::net::qemu_args_passt(port, machine),
        });
    }
    if let Some(n) = args.numa {
        let board = crate::board::for_qemu_machine_or_exit(machine.name());
        let mib = memory_mib(&board.qemu.memory).unwrap_or_else(|| {
            eprintln!(
                "qemu: cannot read the board's memory size `{}` (want e.g. 256M or 1G)",
                board.qemu.memory
            );
            std::process::exit(2)
        });
        extra.extend(numa_args(mib, args.smp, u32::from(n)));
    }
    guest_cmd(&Guest {
        arch: args.arch,
        machine,
        smp: args.smp,
        elf,
        append,
        extra,
        console_port: u8::from(args.console_uart2),
        semihosting: !args.no_semihosting,
    })
}

/// A QEMU memory size (`256M`, `1G`, a bare number is MiB) in MiB.
pub fn memory_mib(size: &str) -> Option<u64> {
    let size = size.trim();
    let (digits, scale) = match size.as_bytes().last()? {
        b'M' | b'm' => (&size[..size.len() - 1], 1),
        b'G' | b'g' => (&size[..size.len() - 1], 1024),
        _ => (size, 1),
    };
    digits.parse::<u64>().ok().map(|n| n * scale)
}

/// QEMU options that describe `nodes` memory nodes in the ACPI SRAT of `-M pc` / `q35`: the
/// `mib` MiB of guest memory in `nodes` RAM backends (equal sizes, the last takes the rest;
/// QEMU 7.2 wants all of `-m` in nodes, and `memdev=` rather than the legacy `mem=`), and the
/// `smp` cores in consecutive groups, core `c` on node `c * nodes / smp` (the split `nodes=`
/// makes). A node with no core gets memory only.
pub fn numa_args(mib: u64, smp: u32, nodes: u32) -> Vec<String> {
    let mut a = Vec::new();
    let each = mib / u64::from(nodes);
    for n in 0..nodes {
        let size = if n + 1 == nodes {
            mib - each * u64::from(n)
        } else {
            each
        };
        a.push("-object".to_owned());
        a.push(format!("memory-backend-ram,id=numa{n},size={size}M"));
        let cpus: Vec<u32> = (0..smp).filter(|c| c * nodes / smp == n).collect();
        let cpus = match (cpus.first(), cpus.last()) {
            (Some(lo), Some(hi)) => format!(",cpus={lo}-{hi}"),
            _ => String::new(),
        };
        a.push("-numa".to_owned());
        a.push(format!("node,nodeid={n}{cpus},memdev=numa{n}"));
    }
    a
}

/// A console line without the image's `  [cpu C thread T] ` prefix of user programs' output.
pub fn user_text(line: &str) -> &str {
    let t = line.trim_start();
    match t.strip_prefix("[cpu ").and_then(|r| r.split_once("] ")) {
        Some((who, rest)) if who.contains(" thread ") => rest,
        _ => t,
    }
}

/// The loader's line naming where its memory nodes come from (`servers::memory::loader`):
/// `--numa N` wants the SRAT's, `--nodes N` (N > 1) the configuration's, otherwise none.
pub fn expected_numa_line(numa: Option<u8>, nodes: Option<u8>) -> String {
    match (numa, nodes) {
        (Some(n), _) => format!("numa: srat, {n} nodes"),
        (None, Some(n)) if n > 1 => format!("numa: config nodes={n}"),
        _ => "numa: none".to_owned(),
    }
}

/// Checks the `cna:` line of a `--lock cna --numa N` run: the kernel's cores `0..cores` must be
/// on the NUMA nodes QEMU put them on in the SRAT ([`numa_args`]: core `c` on node
/// `c * nodes / smp`, the node number being its proximity domain), which are `nodes` distinct
/// nodes when the kernel runs on every core. Returns the line, or what is wrong.
pub fn check_cna_nodes(
    lines: &[String],
    nodes: u8,
    smp: u32,
    cores: usize,
) -> Result<String, String> {
    let Some(line) = lines
        .iter()
        .map(|l| user_text(l))
        .find(|l| l.starts_with("cna: "))
    else {
        return Err("the kernel printed no `cna:` line (its cores' NUMA nodes)".to_owned());
    };
    let want: Vec<u32> = (0..cores as u32)
        .map(|c| c * u32::from(nodes) / smp)
        .collect();
    let mut distinct = want.clone();
    distinct.dedup();
    let got = line
        .strip_prefix("cna: cores' NUMA nodes [")
        .and_then(|rest| rest.trim_end().strip_suffix("] (srat proximity domains)"))
        .map(|list| {
            list.split(", ")
                .map(|n| n.parse::<u32>())
                .collect::<Result<Vec<u32>, _>>()
        });
    match got {
        Some(Ok(got)) if got == want => Ok(format!(
            "{cores} cores on {} NUMA nodes from the SRAT: {line}",
            distinct.len()
        )),
        Some(Ok(got)) => {
            let mut got_distinct = got.clone();
            got_distinct.sort_unstable();
            got_distinct.dedup();
            Err(format!(
                "the kernel put its cores on {} NUMA nodes {got:?}, QEMU's SRAT on {} {want:?}: \
                 {line}",
                got_distinct.len(),
                distinct.len()
            ))
        }
        _ => Err(format!(
            "the kernel did not take its cores' NUMA nodes from the SRAT: {line}"
        )),
    }
}

/// What QEMU's exit status means.
pub fn explain_status(code: Option<i32>) -> (bool, String) {
    match code {
        Some(33) => (true, "status 33: the kernel shut down with success".into()),
        Some(35) => (
            false,
            "status 35: the kernel reported a failure (see the console above)".into(),
        ),
        Some(0) => (
            false,
            "status 0: triple fault or reset (with -no-reboot QEMU exits with 0; only 33 means \
             success)"
                .into(),
        ),
        Some(c) => (
            false,
            format!("status {c}: QEMU failed (or an unexpected exit code)"),
        ),
        None => (false, "QEMU was killed by a signal".into()),
    }
}

/// What the ARMv7 kernel prints when it cannot end QEMU (hal-armv7's `exit_qemu`).
const NO_SEMIHOSTING_EXIT: &str = "hal-armv7: semihosting unavailable";

/// The verdict on a `--no-semihosting` run (`stopped`: QEMU was stopped at the kernel's
/// "semihosting unavailable" line): the kernel must have shut down with success with every
/// core online, then reported that it cannot exit, and printed no fault report.
pub fn explain_no_semihosting(stopped: bool, lines: &[String], smp: u32) -> (bool, String) {
    let has = |p: &str| lines.iter().any(|l| l.starts_with(p));
    let fault = lines.iter().find(|l| l.contains("!!!"));
    if let Some(f) = fault {
        return (false, format!("the kernel reported a fault or panic: {f}"));
    }
    let missing: Vec<String> = [SHUTDOWN_SUCCESS.to_owned(), format!("cpus online: {smp}")]
        .into_iter()
        .filter(|p| !has(p))
        .collect();
    if !stopped {
        return (
            false,
            format!("QEMU ended without the kernel's `{NO_SEMIHOSTING_EXIT}` line"),
        );
    }
    if !missing.is_empty() {
        return (
            false,
            format!(
                "the kernel said it cannot exit, but the console lacks {}",
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    (
        true,
        "without semihosting the kernel shut down with success and reported that it cannot \
         exit (QEMU stopped there)"
            .into(),
    )
}

/// The verdict on an ARMv7 run's exit status and console: semihosting status 0 is success only
/// together with the kernel's `shutting down: success` line, `cpus online: {smp}` and
/// `lock: {lock}` (QEMU also exits with 0 on a guest reset or PSCI SYSTEM_OFF).
pub fn explain_armv7(code: Option<i32>, lines: &[String], smp: u32, lock: Lock) -> (bool, String) {
    let has = |prefix: &str| lines.iter().any(|l| l.starts_with(prefix));
    let lock_name = lock.name();
    let missing: Vec<String> = [
        SHUTDOWN_SUCCESS.to_owned(),
        format!("cpus online: {smp}"),
        format!("lock: {lock_name} "),
    ]
    .into_iter()
    .filter(|p| !has(p))
    .collect();
    match code {
        Some(0) if missing.is_empty() => (
            true,
            "status 0 with `shutting down: success`: the kernel shut down with success".into(),
        ),
        Some(0) => (
            false,
            format!(
                "status 0 but the console lacks {}: a reset or power-off, not the kernel's \
                 success exit",
                missing
                    .iter()
                    .map(|m| format!("`{}`", m.trim_end()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        // QEMU's own refusal (a bad option, more CPUs than the machine takes) exits with 1
        // too, before the kernel prints anything: its message names the binary.
        Some(1) => match qemu_error(lines) {
            Some(error) => (false, format!("QEMU did not start the guest: {error}")),
            None => (
                false,
                "status 1: the kernel reported a failure (see the console above)".into(),
            ),
        },
        Some(c) => (
            false,
            format!("status {c}: QEMU failed (or an unexpected exit code)"),
        ),
        None => (false, "QEMU was killed by a signal".into()),
    }
}

/// QEMU's own error message among `lines` (`qemu-system-arm: ...`) when the guest printed
/// nothing (no `locked-in ...` boot line): QEMU refused to start it. A warning QEMU prints
/// beside a guest that ran does not count.
pub fn qemu_error(lines: &[String]) -> Option<&str> {
    if lines.iter().any(|l| l.starts_with("locked-in ")) {
        return None;
    }
    lines
        .iter()
        .map(|l| l.trim())
        .find(|l| l.starts_with("qemu-system-") && l.contains(": "))
}

/// The programs the image planned to report DONE (`plan: thread T (name, cpu C) reports
/// DONE`) that have no `done: thread T (...)` line: what a run that hangs is waiting for.
pub fn never_reported(lines: &[String]) -> Vec<String> {
    let done: Vec<&str> = lines
        .iter()
        .filter_map(|l| match Line::parse(l) {
            Line::Done(who) => Some(who),
            _ => None,
        })
        .collect();
    lines
        .iter()
        .filter_map(|l| match Line::parse(l) {
            Line::Plan(who) => Some(who),
            _ => None,
        })
        .filter(|who| !done.contains(who))
        .map(str::to_string)
        .collect()
}

/// The verdict on a `--stack-overflow` run: the kernel must have printed its overflow report
/// (`kernel stack overflow on CPU n (stack guard at 0x...`) and stopped with its failure status
/// (x86_64 `isa-debug-exit` 35, ARMv7 semihosting 1), as for any other kernel panic.
pub fn explain_stack_overflow(arch: Arch, code: Option<i32>, lines: &[String]) -> (bool, String) {
    let report = lines
        .iter()
        .find(|l| l.contains("kernel stack overflow on CPU ") && l.contains("(stack guard at 0x"));
    let failure_status = match arch {
        Arch::X86_64 => Some(35),
        Arch::Armv7 => Some(1),
    };
    match report {
        Some(r) if code == failure_status => (
            true,
            format!(
                "the kernel caught its stack overflow and stopped (status {}): {}",
                code.unwrap_or(-1),
                r.trim_start_matches(['!', ' '])
            ),
        ),
        Some(_) => (
            false,
            format!(
                "overflow reported, but the exit status is {code:?}, not the kernel's failure \
                 status {failure_status:?}"
            ),
        ),
        None => (
            false,
            format!(
                "no `kernel stack overflow on CPU n (stack guard at 0x...)` report (status \
                 {code:?})"
            ),
        ),
    }
}

/// The `TEST memory:...` checks a memory-system run on `cores` cores prints (see
/// `servers::memory`): per worker the workload, a fault per fresh page and a fault again after
/// a free; on core 0 the malformed request, the foreign free and the algorithm switch, and
/// with per-core pagers on several cores the borrowing; the loader's conservation check, and
/// with several nodes the partitions' placement and (when core 0 borrowed) the loans' node.
pub fn memory_checks(cores: usize, global: bool, nodes: usize) -> usize {
    let borrow = !global && cores > 1;
    3 * cores
        + 3
        + usize::from(borrow)
        + 1
        + if nodes > 1 {
            1 + usize::from(borrow)
        } else {
            0
        }
}

/// The verdict on a `--memory` run's console: exactly `want` distinct `TEST memory:` lines,
/// all `ok`.
pub fn check_memory(lines: &[String], want: usize) -> Result<String, String> {
    let mut names = std::collections::BTreeSet::new();
    let mut failed = Vec::new();
    for line in lines {
        let Some(rest) = line.trim_start().strip_prefix("TEST memory:") else {
            continue;
        };
        let name = rest.split_whitespace().next().unwrap_or("");
        if !names.insert(name.to_owned()) {
            failed.push(format!("memory:{name} reported twice"));
        }
        if !rest.contains(" ... ok") {
            failed.push(format!("memory:{name} did not pass"));
        }
    }
    if names.len() != want {
        failed.push(format!("{} memory checks ran, {want} planned", names.len()));
    }
    if failed.is_empty() {
        Ok(format!("all {want} memory checks passed"))
    } else {
        Err(failed.join("; "))
    }
}

/// Calls per fuzzer when `--calls` is not given (the image's default, 10^5).
pub const FUZZ_DEFAULT_CALLS: u64 = 100_000;

/// The verdict on a `--fuzz` run's console: for every core `0..smp` exactly one line
/// `fuzz: cpu N: C calls (...); A anomalies; self-check ok` with `C >= min_calls` and `A == 0`.
/// Returns a summary (calls per core) or what is wrong.
pub fn check_fuzz(lines: &[String], smp: usize, min_calls: u64) -> Result<String, String> {
    let mut calls: Vec<Option<u64>> = vec![None; smp];
    let mut problems = Vec::new();
    for line in lines {
        let Some(rest) = line.split_once("fuzz: cpu ").map(|(_, r)| r) else {
            continue;
        };
        let Some((cpu, rest)) = rest.split_once(": ") else {
            continue;
        };
        let Some((n, rest)) = rest.split_once(" calls (") else {
            continue;
        };
        // Not a count line (the seed line, the codes lines): a count line that does not parse
        // is caught below as a missing one.
        let (Ok(cpu), Ok(n)) = (cpu.parse::<usize>(), n.parse::<u64>()) else {
            continue;
        };
        if cpu >= smp {
            problems.push(format!("a fuzzer on cpu {cpu} of {smp}: {line}"));
            continue;
        }
        if calls[cpu].replace(n).is_some() {
            problems.push(format!("cpu {cpu} reported twice"));
        }
        if n < min_calls {
            problems.push(format!("cpu {cpu}: {n} calls, fewer than {min_calls}"));
        }
        if !rest.contains("; 0 anomalies;") {
            problems.push(format!("cpu {cpu}: anomalies: {line}"));
        }
        if !rest.ends_with("self-check ok") {
            problems.push(format!("cpu {cpu}: self-check failed: {line}"));
        }
    }
    for (cpu, c) in calls.iter().enumerate() {
        if c.is_none() {
            problems.push(format!("no count line from the fuzzer of cpu {cpu}"));
        }
    }
    if problems.is_empty() {
        let per: Vec<String> = calls.iter().flatten().map(u64::to_string).collect();
        Ok(format!(
            "{} fuzzers, calls per core {} (at least {min_calls} each), no anomalies",
            smp,
            per.join(", ")
        ))
    } else {
        Err(problems.join("; "))
    }
}

/// The least `TESTS PLANNED` a `--tests` run on `smp` cores must announce, whatever the lock:
/// what the image plans today (see `image-x86`): `selftest::KERNEL_TESTS` (9) in-kernel tests,
/// `debugcalls::FINAL_TESTS` (8) final checks, one ping-pong test per core, the pager test (run,
/// or reported skipped under `--lock none`) and `image_common::selftest::USER_ERROR_TESTS` (7) error-path
/// tests. The guest may plan more (a new test needs no change here), never fewer: a guest that
/// plans nothing, or drops tests from its plan, fails the run. Keep this in step when a test
/// goes away.
pub fn min_plan(smp: usize) -> usize {
    const KERNEL_TESTS: usize = 9;
    const FINAL_TESTS: usize = 8;
    const PAGER_TEST: usize = 1;
    const USER_ERROR_TESTS: usize = 7;
    KERNEL_TESTS + FINAL_TESTS + smp + PAGER_TEST + USER_ERROR_TESTS
}

/// The verdict on a test-suite run's console.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Suite {
    /// Tests reported exactly once, `ok`.
    pub passed: usize,
    /// Tests reported with any other result (`FAILED ...`), or more than once.
    pub failed: usize,
    /// Tests reported exactly once, `skipped` (neither passed nor failed).
    pub skipped: usize,
    /// Names of the failed tests, then the problems with the run (plan, sentinel, missing or
    /// malformed test lines).
    pub failures: Vec<String>,
    /// Entries of `failures` that are run problems, not failed tests: each is one more failed
    /// check.
    pub problems: usize,
    /// Names of the skipped tests.
    pub skips: Vec<String>,
    /// `TESTS PLANNED n`.
    pub planned: Option<usize>,
    /// `ALL TESTS RAN n`.
    pub ran: Option<usize>,
}

/// Parses `TEST <name> ... <result>`, `TESTS PLANNED n` and `ALL TESTS RAN n` lines and judges
/// the run. A result starting with `ok` passes, one starting with `skipped` is a skip, anything
/// else fails. Every name must appear exactly once (a repeat fails that test); the distinct
/// names must number exactly the plan, which must be at least `min_plan` (and never 0); the
/// `ALL TESTS RAN` sentinel must be there and agree. Each violation is one more problem.
pub fn parse_suite(lines: &[String], min_plan: usize) -> Suite {
    let mut s = Suite::default();
    // (name, result, times reported), in order of first appearance.
    let mut tests: Vec<(String, Outcome, usize)> = Vec::new();
    let mut problems = Vec::new();
    let mut plans = 0;
    for line in lines {
        match Line::parse(line) {
            Line::Test { name, outcome, .. } => {
                match tests.iter_mut().find(|(n, _, _)| n == name) {
                    Some(t) => {
                        t.2 += 1;
                        if outcome == Outcome::Failed {
                            t.1 = Outcome::Failed;
                        }
                    }
                    None => tests.push((name.to_owned(), outcome, 1)),
                }
            }
            Line::Malformed {
                kind: console::TEST,
                ..
            } => problems.push(format!("malformed test line `{}`", line.trim())),
            Line::TestsPlanned(n) => {
                plans += 1;
                s.planned = Some(n);
            }
            Line::Malformed {
                kind: console::TESTS_PLANNED,
                ..
            } => {
                plans += 1;
                s.planned = None;
            }
            Line::AllTestsRan(n) => s.ran = Some(n),
            Line::Malformed {
                kind: console::ALL_TESTS_RAN,
                ..
            } => s.ran = None,
            _ => {}
        }
    }
    if plans > 1 {
        problems.push("more than one `TESTS PLANNED` line".into());
    }
    for (name, res, times) in &tests {
        if *times > 1 {
            s.failed += 1;
            s.failures.push(format!("{name} (reported {times} times)"));
        } else {
            match res {
                Outcome::Ok => s.passed += 1,
                Outcome::Skipped => {
                    s.skipped += 1;
                    s.skips.push(name.clone());
                }
                Outcome::Failed => {
                    s.failed += 1;
                    s.failures.push(name.clone());
                }
            }
        }
    }
    let seen = tests.len();
    match s.planned {
        None => problems.push("no `TESTS PLANNED n` line".into()),
        Some(p) if p == 0 || p < min_plan => problems.push(format!(
            "{p} tests planned, the run needs at least {}",
            min_plan.max(1)
        )),
        Some(p) if p != seen => problems.push(format!(
            "{p} tests planned, {seen} distinct tests reported: tests are missing or unplanned"
        )),
        Some(_) => {}
    }
    match s.ran {
        None => problems.push("no `ALL TESTS RAN n` sentinel: the suite did not finish".into()),
        Some(r) if r != seen => problems.push(format!(
            "the guest reported {r} tests run, {seen} distinct test lines seen"
        )),
        Some(_) => {}
    }
    s.problems = problems.len();
    s.failures.extend(problems);
    s
}

/// Runs `cargo xtask qemu`.
pub fn run(root: &Path, args: &QemuArgs) -> ExitCode {
    // passt is installed (or the run falls back to the user network) by `net::choose_network`;
    // redis-cli is needed by `--check` only.
    let mut tools = host_env::deps::QEMU.to_vec();
    if args.net && args.check {
        tools.extend(host_env::deps::NET.iter().filter(|t| t.what == "redis-cli"));
    }
    if let Err(why) = host_env::deps::ensure("cargo xtask qemu", &tools) {
        eprintln!("{why}");
        return ExitCode::FAILURE;
    }
    if let Some(m) = args.machine {
        if m.arch() != args.arch {
            eprintln!(
                "qemu: machine {} is not an {} machine (use --arch {})",
                m.name(),
                arch_name(args.arch),
                arch_name(m.arch())
            );
            return ExitCode::FAILURE;
        }
    }
    let machine = args.machine.unwrap_or(args.arch.default_machine());
    let board = match crate::board::for_qemu_machine(machine.name()) {
        Ok(board) => board,
        Err(e) => {
            eprintln!("qemu: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = board.check_smp(args.smp) {
        eprintln!("qemu: {e}");
        return ExitCode::FAILURE;
    }
    if args.net && matches!(args.machine, Some(Machine::Pc | Machine::Q35)) {
        eprintln!(
            "qemu: --net needs a machine with a NIC the server drives: microvm (x86_64, the \
             default), virt or sabrelite (armv7); pc and q35 have virtio only over PCI, which \
             the server does not drive"
        );
        return ExitCode::FAILURE;
    }
    if args.numa.is_some() && !matches!(args.machine, Some(Machine::Pc | Machine::Q35)) {
        eprintln!(
            "qemu: --numa needs --machine pc or q35: QEMU builds an SRAT only for those \
             (`-M microvm`'s ACPI tables are FACP and APIC, and ARMv7 has no ACPI)"
        );
        return ExitCode::FAILURE;
    }
    if args.no_semihosting && args.arch != Arch::Armv7 {
        eprintln!("qemu: --no-semihosting is for --arch armv7 (x86_64 has no semihosting)");
        return ExitCode::FAILURE;
    }
    if args.no_semihosting && args.lock != Lock::Clh {
        eprintln!(
            "qemu: --no-semihosting runs the image's default lock, clh: the kernel cannot read \
             `lock={}` from its command line without semihosting",
            args.lock.name()
        );
        return ExitCode::FAILURE;
    }
    if args.console_uart2 && args.machine != Some(Machine::Sabrelite) {
        eprintln!(
            "qemu: --console-uart2 is for --arch armv7 --machine sabrelite (the i.MX6's UART2)"
        );
        return ExitCode::FAILURE;
    }
    if let Err(e) = ensure_qemu(args.arch) {
        eprintln!("qemu: {e}");
        return ExitCode::FAILURE;
    }
    let elf = match build_image(root, args.arch, args.debug, "qemu") {
        Ok(elf) => elf,
        Err(e) => {
            eprintln!("qemu: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.net {
        return crate::net::run(root, args, &elf);
    }
    let cmd = qemu_cmd(args, &elf);
    eprintln!("qemu: {}", cmd.display());
    if args.interactive {
        eprintln!("qemu: interactive, no timeout; stop with Ctrl-C");
        return match cmd.run_inherited(root) {
            Ok(status) => {
                let (ok, what) = match args.arch {
                    Arch::X86_64 => explain_status(status.code()),
                    // No console captured: status 0 cannot be told from a reset.
                    Arch::Armv7 => (
                        status.code() == Some(0),
                        format!("status {:?} (semihosting exit)", status.code()),
                    ),
                };
                eprintln!("qemu: {what}");
                if ok {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }
            Err(e) => {
                eprintln!("qemu: could not run {}: {e}", qemu_binary(args.arch));
                ExitCode::FAILURE
            }
        };
    }

    let timeout = args.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if args.no_semihosting {
        eprintln!(
            "qemu: no semihosting: the kernel runs the demo with its default settings (the \
             command line is unreadable), and QEMU is stopped once it reports that it cannot exit"
        );
    }
    let out = match cmd.run_until(
        root,
        Duration::from_secs(timeout),
        &mut |line| println!("{line}"),
        &|line| args.no_semihosting && line.contains(NO_SEMIHOSTING_EXIT),
    ) {
        Ok(out) => out,
        Err(e) => {
            eprintln!("qemu: could not run {}: {e}", qemu_binary(args.arch));
            return ExitCode::FAILURE;
        }
    };
    let secs = out.elapsed.as_secs_f64();
    let tail = || print_tail("qemu", &out.lines);
    if out.timed_out {
        eprintln!(
            "qemu: HANG: no exit after {} s, QEMU killed ({} cores, lock {})",
            timeout,
            args.smp,
            args.lock.name()
        );
        tail();
        for who in never_reported(&out.lines) {
            eprintln!("qemu: never reported DONE: {who}");
        }
        return ExitCode::FAILURE;
    }
    let (mut ok, what) = match args.arch {
        _ if args.no_semihosting => explain_no_semihosting(out.stopped, &out.lines, args.smp),
        _ if args.stack_overflow => {
            explain_stack_overflow(args.arch, out.status.code(), &out.lines)
        }
        Arch::X86_64 => explain_status(out.status.code()),
        Arch::Armv7 => explain_armv7(out.status.code(), &out.lines, args.smp, args.lock),
    };
    if args.no_fastpath && !out.lines.iter().any(|l| l.contains(FASTPATH_OFF)) {
        eprintln!(
            "qemu: the kernel did not report `{FASTPATH_OFF}` although fastpath=0 was passed"
        );
        ok = false;
    }
    let panicked = out.lines.iter().any(|l| l.contains("!!! PANIC"));
    if args.tests {
        let suite = parse_suite(&out.lines, min_plan(args.smp as usize));
        eprintln!(
            "qemu: tests: {} passed, {} skipped, {} failed{}{}",
            suite.passed,
            suite.skipped,
            suite.failed,
            if suite.skips.is_empty() {
                String::new()
            } else {
                format!(" (skipped: {})", suite.skips.join(", "))
            },
            if suite.failures.is_empty() {
                String::new()
            } else {
                format!(" ({})", suite.failures.join("; "))
            }
        );
        ok &= suite.failures.is_empty();
    }
    if args.fuzz {
        let min = args.calls.unwrap_or(FUZZ_DEFAULT_CALLS);
        match check_fuzz(&out.lines, args.smp as usize, min) {
            Ok(summary) => eprintln!("qemu: fuzz: {summary}"),
            Err(why) => {
                eprintln!("qemu: fuzz: FAILED: {why}");
                ok = false;
            }
        }
    }
    if args.memory {
        let global = args.pager.as_deref() == Some("global");
        let cores = args
            .append
            .as_deref()
            .and_then(|a| a.split_whitespace().find_map(|w| w.strip_prefix("cpus=")))
            .and_then(|n| n.parse::<usize>().ok())
            .map_or(args.smp as usize, |c| c.min(args.smp as usize));
        let nodes = args.numa.or(args.nodes).unwrap_or(1) as usize;
        let want = memory_checks(cores, global, nodes);
        match check_memory(&out.lines, want) {
            Ok(summary) => eprintln!("qemu: memory: {summary}"),
            Err(why) => {
                eprintln!("qemu: memory: FAILED: {why}");
                ok = false;
            }
        }
        let numa = expected_numa_line(args.numa, args.nodes);
        match out
            .lines
            .iter()
            .map(|l| user_text(l))
            .find(|l| l.starts_with("numa: "))
        {
            Some(l) if l.starts_with(&numa) => eprintln!("qemu: memory: {l}"),
            other => {
                eprintln!(
                    "qemu: memory: FAILED: the loader should print `{numa}`, printed {other:?}"
                );
                ok = false;
            }
        }
        if let Some(n) = args.numa.filter(|_| args.lock == Lock::Cna) {
            match check_cna_nodes(&out.lines, n, args.smp, cores) {
                Ok(summary) => eprintln!("qemu: cna: {summary}"),
                Err(why) => {
                    eprintln!("qemu: cna: FAILED: {why}");
                    ok = false;
                }
            }
        }
    }
    ok &= !panicked;
    if ok {
        eprintln!("qemu: {what} ({secs:.2} s wall, boot to exit)");
        ExitCode::SUCCESS
    } else {
        eprintln!("qemu: FAILED: {what} ({secs:.2} s wall)");
        if panicked {
            eprintln!("qemu: the kernel panicked");
        }
        tail();
        ExitCode::FAILURE
    }
}

/// The `--arch` value of `arch`.
pub fn arch_name(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "x86_64",
        Arch::Armv7 => "armv7",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    /// A complete run of `n` passing tests, with the given extra lines before the sentinel.
    fn run(n: usize, extra: &str) -> Vec<String> {
        let mut text = format!("TESTS PLANNED {n}\n");
        for i in 0..n {
            text += &format!("TEST t{i} ... ok (detail {i})\nnoise\n");
        }
        text += extra;
        text += &format!("ALL TESTS RAN {n}\n");
        lines(&text)
    }

    #[test]
    fn complete_suite_passes() {
        let s = parse_suite(&run(3, ""), 3);
        assert_eq!((s.passed, s.failed, s.skipped), (3, 0, 0));
        assert!(s.failures.is_empty(), "{:?}", s.failures);
        assert_eq!(s.problems, 0);
    }

    #[test]
    fn failed_line_mentioning_ok_is_a_failure() {
        let s = parse_suite(
            &lines(
                "TESTS PLANNED 2\nTEST a ... ok\nTEST b ... FAILED (want 1 ... ok, got 2)\n\
                 ALL TESTS RAN 2\n",
            ),
            2,
        );
        assert_eq!((s.passed, s.failed), (1, 1));
        assert_eq!(s.failures, vec!["b".to_owned()]);
        assert_eq!(s.problems, 0);
    }

    #[test]
    fn duplicate_line_cannot_hide_a_missing_test() {
        // Three planned, `c` missing, `a` reported twice: three lines, yet a failure.
        let s = parse_suite(
            &lines(
                "TESTS PLANNED 3\nTEST a ... ok\nTEST b ... ok\nTEST a ... ok\n\
                 ALL TESTS RAN 3\n",
            ),
            3,
        );
        assert_eq!((s.passed, s.failed), (1, 1));
        assert!(
            s.failures[0].starts_with("a (reported 2 times)"),
            "{:?}",
            s.failures
        );
        assert!(s.problems >= 1, "{:?}", s.failures);
    }

    #[test]
    fn missing_sentinel_or_plan_is_a_failure() {
        let mut l = run(2, "");
        l.pop();
        let s = parse_suite(&l, 2);
        assert_eq!(
            (s.passed, s.failed, s.problems),
            (2, 0, 1),
            "{:?}",
            s.failures
        );
        assert!(s.failures[0].contains("sentinel"));
        let s = parse_suite(&run(2, "")[1..], 2);
        assert_eq!(s.problems, 1, "{:?}", s.failures);
        // A test that never reported.
        let s = parse_suite(
            &lines("TESTS PLANNED 3\nTEST a ... ok\nALL TESTS RAN 1\n"),
            3,
        );
        assert_eq!(s.problems, 1, "{:?}", s.failures);
        // Unfinished, with a failure.
        let s = parse_suite(
            &lines("TESTS PLANNED 3\nTEST a ... ok\nTEST b ... FAILED (why)\n"),
            3,
        );
        assert_eq!(
            (s.passed, s.failed, s.problems),
            (1, 1, 2),
            "{:?}",
            s.failures
        );
    }

    #[test]
    fn empty_or_short_plan_is_a_failure() {
        let s = parse_suite(&lines("TESTS PLANNED 0\nALL TESTS RAN 0\n"), 0);
        assert_eq!(s.problems, 1, "{:?}", s.failures);
        let s = parse_suite(&lines("TESTS PLANNED 0\nALL TESTS RAN 0\n"), min_plan(1));
        assert_eq!(s.problems, 1, "{:?}", s.failures);
        // A consistent run that planned fewer tests than xtask knows of.
        let s = parse_suite(&run(3, ""), 4);
        assert_eq!((s.passed, s.problems), (3, 1), "{:?}", s.failures);
        // More than the floor is fine.
        assert!(parse_suite(&run(5, ""), 4).failures.is_empty());
        assert_eq!(min_plan(4), min_plan(1) + 3);
    }

    #[test]
    fn skips_count_separately() {
        let mut l = run(2, "TEST p ... skipped (no pager under lock none)\n");
        l[0] = "TESTS PLANNED 3".into();
        *l.last_mut().unwrap() = "ALL TESTS RAN 3".into();
        let s = parse_suite(&l, 3);
        assert_eq!((s.passed, s.failed, s.skipped), (2, 0, 1));
        assert_eq!(s.skips, vec!["p".to_owned()]);
        assert!(s.failures.is_empty(), "{:?}", s.failures);
    }

    #[test]
    fn a_run_without_semihosting_passes_only_after_a_clean_shutdown_and_its_report() {
        let lines = |s: &str| s.lines().map(str::to_owned).collect::<Vec<_>>();
        let good = lines(
            "cpus online: 4\nshutting down: success (uptime 9 ms)\n\
             hal-armv7: semihosting unavailable (run QEMU with -semihosting): cannot exit",
        );
        assert!(explain_no_semihosting(true, &good, 4).0);
        // QEMU ended (or timed out) before the report; a core missing; a fault report.
        assert!(!explain_no_semihosting(false, &good, 4).0);
        assert!(!explain_no_semihosting(true, &good, 2).0);
        let mut faulted = good.clone();
        faulted.insert(0, "!!! EXCEPTION on cpu 0: undefined instruction".into());
        let (ok, why) = explain_no_semihosting(true, &faulted, 4);
        assert!(!ok && why.contains("fault"), "{why}");
        let no_success = lines("cpus online: 4\nhal-armv7: semihosting unavailable");
        assert!(!explain_no_semihosting(true, &no_success, 4).0);
    }

    #[test]
    fn malformed_line_is_a_problem() {
        let s = parse_suite(&run(1, "TEST oops ok\n"), 1);
        assert_eq!((s.passed, s.problems), (1, 1), "{:?}", s.failures);
    }

    /// The arguments of `cargo xtask qemu` with everything at its default.
    fn default_args(arch: Arch) -> QemuArgs {
        QemuArgs {
            arch,
            smp: 4,
            lock: Lock::Clh,
            machine: None,
            interactive: false,
            release: false,
            debug: false,
            tests: false,
            stack_overflow: false,
            fuzz: false,
            memory: false,
            pager: None,
            nodes: None,
            numa: None,
            calls: None,
            seed: None,
            single_thread_tcg: false,
            console_uart2: false,
            no_semihosting: false,
            no_fastpath: false,
            rounds: None,
            timeout: None,
            net: false,
            network: None,
            port: None,
            check: false,
            client: None,
            append: None,
        }
    }

    #[test]
    fn net_mode_adds_the_nic_and_the_forwarded_port() {
        let mut net = default_args(Arch::X86_64);
        net.net = true;
        net.smp = 1;
        net.port = Some(16379);
        net.network = Some(crate::net::Network::User);
        assert_eq!(
            qemu_cmd(&net, Path::new("/img")).display(),
            "qemu-system-x86_64 -M microvm -cpu max -smp 1 -m 256M -display none -serial stdio \
             -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel /img -append \
             'lock=clh mode=net rounds=500' -global virtio-mmio.force-legacy=false -device \
             virtio-rng-device -netdev user,id=n0,hostfwd=tcp:127.0.0.1:16379-:6379 -device \
             virtio-net-device,netdev=n0"
        );
        // sabrelite: the SoC's own ENET on the same user network.
        let mut imx = default_args(Arch::Armv7);
        imx.net = true;
        imx.smp = 2;
        imx.port = Some(16379);
        imx.machine = Some(Machine::Sabrelite);
        imx.network = Some(crate::net::Network::User);
        assert_eq!(
            qemu_cmd(&imx, Path::new("/img")).display(),
            "qemu-system-arm -M sabrelite -m 1G -smp 2 -display none -serial stdio -semihosting \
             -no-reboot -kernel /img -append 'lock=clh mode=net rounds=500' -netdev \
             user,id=n0,hostfwd=tcp:127.0.0.1:16379-:6379,hostfwd=tcp:127.0.0.1:16380-:6380 \
             -net nic,netdev=n0,model=imx.enet"
        );
        // The default network is passt's socket.
        imx.network = None;
        let passt = qemu_cmd(&imx, Path::new("/img")).display();
        assert!(
            passt.contains(&format!(
                "-netdev stream,id=n0,server=off,addr.type=unix,addr.path={} -net \
                 nic,netdev=n0,model=imx.enet",
                crate::net::passt_socket(16379).display()
            )),
            "{passt}"
        );
    }

    #[test]
    fn qemu_command_lines() {
        let elf = Path::new("/img");
        assert_eq!(
            qemu_cmd(&default_args(Arch::X86_64), elf).display(),
            "qemu-system-x86_64 -M microvm -cpu max -smp 4 -m 256M -display none -serial stdio \
             -no-reboot -device isa-debug-exit,iobase=0xf4,iosize=0x04 -kernel /img -append \
             'lock=clh mode=demo rounds=500' -global virtio-mmio.force-legacy=false -device \
             virtio-rng-device"
        );
        let mut arm = default_args(Arch::Armv7);
        arm.tests = true;
        arm.machine = Some(Machine::Virt);
        assert_eq!(
            qemu_cmd(&arm, elf).display(),
            "qemu-system-arm -M virt -cpu cortex-a15 -m 256M -smp 4 -display none -serial stdio \
             -semihosting -no-reboot -kernel /img -append 'lock=clh mode=test rounds=20' \
             -global virtio-mmio.force-legacy=false -device virtio-rng-device"
        );
        // Extra arguments come last.
        let guest = Guest {
            arch: Arch::Armv7,
            machine: Machine::Sabrelite,
            smp: 1,
            elf,
            append: "lock=none".into(),
            extra: vec!["-icount".into(), "shift=0".into()],
            console_port: 0,
            semihosting: true,
        };
        assert_eq!(
            guest_cmd(&guest).display(),
            "qemu-system-arm -M sabrelite -m 1G -smp 1 -display none -serial stdio -semihosting \
             -no-reboot -kernel /img -append lock=none -icount shift=0"
        );
    }

    #[test]
    fn a_hang_names_the_programs_that_never_reported() {
        let lines: Vec<String> = [
            "plan: thread 0 (root, cpu 0) reports DONE",
            "plan: thread 18 (hello, cpu 0) reports DONE",
            "plan: thread 19 (hello, cpu 1) reports DONE",
            "  [cpu 0 thread 18] hello from cpu 0",
            "done: thread 18 (hello, cpu 0)",
            "done: thread 0 (root, cpu 0)",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(never_reported(&lines), ["thread 19 (hello, cpu 1)"]);
        assert!(never_reported(&lines[..1]).len() == 1);
        assert!(never_reported(&[]).is_empty());
    }

    #[test]
    fn a_stack_overflow_run_needs_the_report_and_the_failure_status() {
        let report = lines(
            "stackoverflow: recursing\n!!! kernel stack overflow on CPU 0 (stack guard at \
             0xffffffff8021f000: the kernel stack of cpu 0)",
        );
        assert!(explain_stack_overflow(Arch::X86_64, Some(35), &report).0);
        assert!(explain_stack_overflow(Arch::Armv7, Some(1), &report).0);
        // Success, a triple fault or a reset is not the kernel catching the overflow.
        assert!(!explain_stack_overflow(Arch::X86_64, Some(33), &report).0);
        assert!(!explain_stack_overflow(Arch::X86_64, Some(0), &report).0);
        assert!(!explain_stack_overflow(Arch::Armv7, Some(0), &report).0);
        let other = lines("!!! EXCEPTION on cpu 0: vector 14 (#PF page fault)");
        assert!(!explain_stack_overflow(Arch::X86_64, Some(35), &other).0);
    }

    #[test]
    fn numa_options_describe_qemu_nodes() {
        assert_eq!(memory_mib("256M"), Some(256));
        assert_eq!(memory_mib("1G"), Some(1024));
        assert_eq!(memory_mib("512"), Some(512));
        assert_eq!(memory_mib("lots"), None);
        assert_eq!(
            numa_args(256, 4, 2),
            [
                "-object",
                "memory-backend-ram,id=numa0,size=128M",
                "-numa",
                "node,nodeid=0,cpus=0-1,memdev=numa0",
                "-object",
                "memory-backend-ram,id=numa1,size=128M",
                "-numa",
                "node,nodeid=1,cpus=2-3,memdev=numa1",
            ]
        );
        // Three nodes of 256 MiB: 85 + 85 + 86; one core: nodes 1 and 2 have memory only.
        let a = numa_args(256, 1, 3);
        assert_eq!(a[1], "memory-backend-ram,id=numa0,size=85M");
        assert_eq!(a[3], "node,nodeid=0,cpus=0-0,memdev=numa0");
        assert_eq!(a[7], "node,nodeid=1,memdev=numa1");
        assert_eq!(a[9], "memory-backend-ram,id=numa2,size=86M");
        assert_eq!(expected_numa_line(Some(2), None), "numa: srat, 2 nodes");
        assert_eq!(expected_numa_line(None, Some(2)), "numa: config nodes=2");
        assert_eq!(expected_numa_line(None, Some(1)), "numa: none");
        assert_eq!(expected_numa_line(None, None), "numa: none");
        assert_eq!(
            user_text("  [cpu 0 thread 0] numa: srat, 2 nodes"),
            "numa: srat, 2 nodes"
        );
        assert_eq!(user_text("numa: none"), "numa: none");
    }

    #[test]
    fn a_cna_run_on_srat_nodes_wants_the_kernels_cores_on_them() {
        let good =
            lines("boot: srat\ncna: cores' NUMA nodes [0, 0, 1, 1] (srat proximity domains)\n");
        let summary = check_cna_nodes(&good, 2, 4, 4).unwrap();
        assert!(summary.starts_with("4 cores on 2 NUMA nodes"), "{summary}");
        // `cpus=2` of 4: both on node 0.
        let two = lines("cna: cores' NUMA nodes [0, 0] (srat proximity domains)");
        assert!(check_cna_nodes(&two, 2, 4, 2).is_ok());
        let four = lines("cna: cores' NUMA nodes [0, 1, 2, 3] (srat proximity domains)");
        assert!(check_cna_nodes(&four, 4, 4, 4).is_ok());

        for (text, why) in [
            ("lock: cna", "no `cna:` line"),
            (
                "cna: no NUMA description from the firmware, every core on node 0",
                "did not take",
            ),
            (
                "cna: cores' NUMA nodes [0, 0, 0, 0] (srat proximity domains; 2 of the cores not \
                 placed by it, on node 0)",
                "did not take",
            ),
            (
                "cna: cores' NUMA nodes [0, 0, 0, 0] (srat proximity domains)",
                "on 1 NUMA nodes [0, 0, 0, 0], QEMU's SRAT on 2",
            ),
            (
                "cna: cores' NUMA nodes [0, 1, 0, 1] (srat proximity domains)",
                "on 2 NUMA nodes",
            ),
            (
                "cna: cores' NUMA nodes [0, x] (srat proximity domains)",
                "did not take",
            ),
        ] {
            let err = check_cna_nodes(&lines(text), 2, 4, 4).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
        assert_eq!(user_text("[cpu 0] x"), "[cpu 0] x");
    }

    #[test]
    fn a_memory_run_needs_every_planned_check_passed_once() {
        let want = memory_checks(2, false, 1);
        assert_eq!(want, 3 * 2 + 3 + 1 + 1);
        let names = [
            "workload_cpu0",
            "workload_cpu1",
            "fault_per_fresh_page_cpu0",
            "fault_per_fresh_page_cpu1",
            "refault_after_free_cpu0",
            "refault_after_free_cpu1",
            "malformed_request_refused",
            "foreign_free_refused",
            "algorithm_switch_with_pages_outstanding",
            "borrow_beyond_partition_then_return",
            "conservation_after_workload",
        ];
        let good: Vec<String> = names
            .iter()
            .map(|n| format!("TEST memory:{n} ... ok (details)"))
            .collect();
        assert_eq!(
            check_memory(&good, want),
            Ok("all 11 memory checks passed".into())
        );
        assert!(check_memory(&good[1..], want)
            .unwrap_err()
            .contains("10 memory checks ran, 11 planned"));
        let mut bad = good.clone();
        bad[3] = "TEST memory:fault_per_fresh_page_cpu1 ... FAILED (x)".into();
        assert!(check_memory(&bad, want)
            .unwrap_err()
            .contains("did not pass"));
        let mut twice = good.clone();
        twice[0] = twice[1].clone();
        assert!(check_memory(&twice, want)
            .unwrap_err()
            .contains("reported twice"));
        assert_eq!(memory_checks(4, true, 1), 12 + 3 + 1);
        assert_eq!(memory_checks(4, false, 2), 12 + 3 + 1 + 1 + 2);
    }

    #[test]
    fn a_fuzz_run_needs_every_cores_count_line_with_enough_calls() {
        let line = |cpu: usize, n: u64, anomalies: u64, check: &str| {
            format!(
                "  [cpu {cpu} thread 3] fuzz: cpu {cpu}: {n} calls (90000 kernel: 1 ok, 89999 \
                 errors; 10000 image; 6000 hostile sp); {anomalies} anomalies; self-check {check}"
            )
        };
        let good: Vec<String> = (0..4).map(|c| line(c, 100_000, 0, "ok")).collect();
        let ok = check_fuzz(&good, 4, 100_000);
        assert_eq!(
            ok,
            Ok(
                "4 fuzzers, calls per core 100000, 100000, 100000, 100000 (at least 100000 \
                each), no anomalies"
                    .into()
            )
        );
        // A missing core, too few calls, an anomaly, a failed self-check, a repeat.
        assert!(check_fuzz(&good[..3], 4, 100_000)
            .unwrap_err()
            .contains("no count line from the fuzzer of cpu 3"));
        let mut few = good.clone();
        few[2] = line(2, 99_999, 0, "ok");
        assert!(check_fuzz(&few, 4, 100_000)
            .unwrap_err()
            .contains("cpu 2: 99999 calls, fewer than 100000"));
        let mut bad = good.clone();
        bad[1] = line(1, 100_000, 3, "ok");
        assert!(check_fuzz(&bad, 4, 100_000)
            .unwrap_err()
            .contains("cpu 1: anomalies"));
        bad[1] = line(1, 100_000, 0, "FAILED");
        assert!(check_fuzz(&bad, 4, 100_000)
            .unwrap_err()
            .contains("cpu 1: self-check failed"));
        let mut twice = good.clone();
        twice.push(line(0, 100_000, 0, "ok"));
        assert!(check_fuzz(&twice, 4, 100_000)
            .unwrap_err()
            .contains("cpu 0 reported twice"));
        // The seed line and the codes lines are not count lines.
        let mut more = good.clone();
        more.push(
            "  [cpu 0 thread 3] fuzz: cpu 0: seed 0x1, 100000 calls (replay: seed=0x1)".into(),
        );
        more.push("  [cpu 0 thread 3] fuzz: cpu 0: codes ok=1 UnknownSyscall=2".into());
        assert!(check_fuzz(&more, 4, 100_000).is_ok());
        let mut args = default_args(Arch::X86_64);
        args.fuzz = true;
        args.calls = Some(7);
        args.seed = Some("0x2a".into());
        assert!(qemu_cmd(&args, Path::new("/img"))
            .display()
            .contains("-append 'calls=7 seed=0x2a lock=clh mode=fuzz rounds=20'"));
        args.single_thread_tcg = true;
        assert!(qemu_cmd(&args, Path::new("/img"))
            .display()
            .contains(" -accel tcg,thread=single"));
    }

    #[test]
    fn only_status_33_is_success() {
        assert!(explain_status(Some(33)).0);
        for code in [Some(0), Some(1), Some(35), None] {
            assert!(!explain_status(code).0);
        }
    }

    #[test]
    fn armv7_status_0_needs_the_success_lines() {
        let good = lines(
            "cpus online: 4\nlock: clh (big kernel lock)\nshutting down: success (uptime 1 ms)",
        );
        assert!(explain_armv7(Some(0), &good, 4, Lock::Clh).0);
        // A reset (status 0) without the kernel's lines is not a success.
        assert!(!explain_armv7(Some(0), &lines("cpus online: 4"), 4, Lock::Clh).0);
        // Wrong core count or lock.
        assert!(!explain_armv7(Some(0), &good, 1, Lock::Clh).0);
        assert!(!explain_armv7(Some(0), &good, 4, Lock::Ticket).0);
        for code in [Some(1), Some(33), None] {
            assert!(!explain_armv7(code, &good, 4, Lock::Clh).0);
        }
        let fine = lines("cpus online: 1\nlock: fine (fine-grained)\nshutting down: success");
        assert!(explain_armv7(Some(0), &fine, 1, Lock::Fine).0);
    }

    #[test]
    fn qemu_refusing_to_start_is_not_blamed_on_the_kernel() {
        let refused = lines(
            "qemu-system-arm: Invalid SMP CPUs 8. The max CPUs supported by machine \
             'sabrelite' is 4",
        );
        let (ok, why) = explain_armv7(Some(1), &refused, 8, Lock::Clh);
        assert!(!ok);
        assert!(why.starts_with("QEMU did not start the guest: qemu-system-arm: Invalid SMP"));
        let (_, why) = explain_armv7(Some(1), &lines("!!! panic"), 4, Lock::Clh);
        assert!(why.contains("the kernel reported a failure"), "{why}");
        // A QEMU warning beside a guest that booted and failed is the guest's failure.
        let booted = lines(
            "qemu-system-arm: warning: nic imx.enet.1 has no peer\nlocked-in armv7 image: \
             sabrelite\n!!! panic",
        );
        let (_, why) = explain_armv7(Some(1), &booted, 4, Lock::Clh);
        assert!(why.contains("the kernel reported a failure"), "{why}");
    }
}
