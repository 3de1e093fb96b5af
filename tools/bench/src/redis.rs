//! `cargo xtask bench redis`: the network macro-benchmark (Figures 3 and 4
//! of the big-lock paper) against the kernel's own Redis-protocol server (`mode=net`).
//!
//! For every architecture with a virtio NIC (x86_64 `-M microvm`, ARMv7 `-M virt`), lock and
//! core count, it boots the network image under QEMU (TCG: real time, not `-icount`, since the
//! clients are real programs on the host) and drives the server with clients nobody here
//! wrote:
//! * `redis-benchmark` (Debian's redis-tools): SET and GET with its default 50 connections,
//!   unpipelined and 16-deep pipelined, random keys;
//! * YCSB 0.17.0 workload A (50% reads, 50% updates, zipfian) through this project's Jedis
//!   binding (`bench/ycsb-redis`): the load phase of 32,000 records (the paper's), then the run
//!   phase, 4 client threads.
//!
//! The guests reach the host over passt, the default network of `cargo xtask qemu --net`
//! (`qemu_runner::net`): QEMU's user network, which the suite falls back to when passt cannot run,
//! stalls under 50 connections opened at once. The report's method names the network used.
//!
//! While each client runs, a sampler reads the server's `INFO` every half second: its `# CPU`
//! section has the kernel's cycle counter and each core's idle cycles (`KernelInfo`), so the
//! utilisation of each core over exactly the client's run is `1 - idle / elapsed`, summed over
//! the samples (on 32-bit ARM the counters are one word wide: each half-second difference is
//! taken modulo the word). Reported per client run: operations per second, latency
//! percentiles from the client's own output, utilisation per core and on average, and
//! Xput = throughput / average utilisation (the paper's metric: throughput per fully busy core).
//!
//! The kernel's image runs one server per core (a smoltcp stack and a key-value store on each,
//! fed by the virtio-net driver on core 0 through shared-memory rings; `servers::net`), on
//! guest ports 6379 + k, as the Linux + Redis baseline (`linux.rs`) runs one `redis-server`
//! per core: each client runs once per server, all at the same time, and the throughputs add
//! up.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use serde_json::{json, Value};

use super::layout;
use super::plot::{self, Line, LinePanel, Point};
use super::RunArgs;
use host_env::proc::Cmd;
use protocol::results::Results;
use qemu_runner::qemu::{self, Arch, Lock, Machine, QemuArgs};

/// The suite's own folder under `<target>/bench` (its runs and `latest`): its results have their
/// own schema, which `bench compare` does not read.
const SUITE_DIR: &str = "redis";
/// The soak's folder under `<target>/bench` (`--soak`: results of another schema).
const SOAK_DIR: &str = "redis-soak";
/// Connections of `redis-benchmark`: its default. The guest serves 128 per core at once.
const CLIENTS: u32 = 50;
/// YCSB's client threads.
const YCSB_THREADS: u32 = 4;
/// Depth of the pipelined runs.
const PIPELINE: u32 = 16;
/// How often the sampler reads `INFO`.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// How long the Linux baseline may take to boot on an idle host (scaled like the kernel's,
/// [`qemu_runner::net::boot_deadline`]).
const LINUX_BOOT: Duration = Duration::from_secs(120);
/// The longest a client may run.
const CLIENT_LIMIT: Duration = Duration::from_secs(600);
/// The YCSB binding's jar that says it is built.
const YCSB_BUILT: &str = "bench/ycsb-redis/target/lib/core-0.17.0.jar";

/// The lock name of the Linux + Redis baseline's rows.
pub const LINUX: &str = "linux";

/// Figure file stems.
pub const STEMS: [&str; 2] = ["redis-throughput", "redis-xput"];

/// `cargo xtask qemu`'s options, for building them from words.
#[derive(Parser)]
struct QemuCli {
    #[command(flatten)]
    args: QemuArgs,
}

/// Sizes of the client runs.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    /// Requests per unpipelined redis-benchmark test.
    requests: u32,
    /// Requests per pipelined test.
    pipelined: u32,
    /// YCSB records loaded.
    records: u32,
    /// YCSB operations of the run phase.
    operations: u32,
    /// Runs of each client per point; the row is the median run by throughput.
    repeats: usize,
}

impl Sizes {
    fn new(quick: bool) -> Sizes {
        if quick {
            Sizes {
                requests: 2_000,
                pipelined: 10_000,
                records: 1_000,
                operations: 2_000,
                repeats: 1,
            }
        } else {
            Sizes {
                requests: 20_000,
                pipelined: 100_000,
                records: 32_000,
                operations: 20_000,
                repeats: 3,
            }
        }
    }
}

/// One client run: what ran, what it measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub arch: String,
    pub board: String,
    pub lock: String,
    pub cores: u32,
    /// `redis-benchmark` or `ycsb`.
    pub client: String,
    /// `SET`, `GET`, `SET -P 16`, `A` ...
    pub workload: String,
    pub ops_per_s: f64,
    /// Latency percentiles in milliseconds, as the client printed them.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Busy fraction of each core over the run.
    pub utilisation: Vec<f64>,
    pub seconds: f64,
    /// Throughput of every run of this client at this point (the row is their median run).
    pub runs: Vec<f64>,
}

impl Row {
    /// Average utilisation over the cores.
    pub fn mean_utilisation(&self) -> f64 {
        if self.utilisation.is_empty() {
            return f64::NAN;
        }
        self.utilisation.iter().sum::<f64>() / self.utilisation.len() as f64
    }

    /// Throughput per fully busy core (the paper's Xput).
    pub fn xput(&self) -> f64 {
        self.ops_per_s / self.mean_utilisation()
    }
}

/// One reading of the server's `# CPU` section.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuSample {
    pub cycles: u64,
    pub idle: Vec<u64>,
    pub word_bits: u32,
}

/// Parses the `# CPU` section of an `INFO` reply.
pub fn parse_cpu(info: &str) -> Result<CpuSample, String> {
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let number = |name: &str| -> Result<u64, String> {
        field(name)
            .ok_or_else(|| format!("INFO has no `{name}` (is this the kernel's server?)"))?
            .parse()
            .map_err(|_| format!("INFO: `{name}` is not a number"))
    };
    let cpus = number("cpus")?;
    if !(1..=64).contains(&cpus) {
        return Err(format!("INFO: cpus {cpus}"));
    }
    let word_bits = number("word_bits")? as u32;
    if word_bits != 32 && word_bits != 64 {
        return Err(format!("INFO: word_bits {word_bits}"));
    }
    Ok(CpuSample {
        cycles: number("kernel_cycles")?,
        idle: (0..cpus)
            .map(|c| number(&format!("idle_cycles_cpu{c}")))
            .collect::<Result<_, _>>()?,
        word_bits,
    })
}

/// Each core's busy fraction over `samples` (in time order): the idle and elapsed differences
/// of consecutive samples, each modulo the counters' word, summed.
pub fn utilisation(samples: &[CpuSample]) -> Result<Vec<f64>, String> {
    let (Some(first), true) = (samples.first(), samples.len() >= 2) else {
        return Err("fewer than two CPU samples".into());
    };
    let mask = if first.word_bits >= 64 {
        u64::MAX
    } else {
        (1u64 << first.word_bits) - 1
    };
    let cores = first.idle.len();
    let mut elapsed = 0u64;
    let mut idle = vec![0u64; cores];
    for pair in samples.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.idle.len() != cores {
            return Err("the core count changed between samples".into());
        }
        let d = b.cycles.wrapping_sub(a.cycles) & mask;
        elapsed += d;
        for (sum, (x, y)) in idle.iter_mut().zip(a.idle.iter().zip(&b.idle)) {
            // A core's idle time within one interval cannot exceed the interval.
            *sum += (y.wrapping_sub(*x) & mask).min(d);
        }
    }
    if elapsed == 0 {
        return Err("the kernel's cycle counter did not advance".into());
    }
    Ok(idle
        .iter()
        .map(|&i| 1.0 - i as f64 / elapsed as f64)
        .collect())
}

/// A client's results as parsed from its output.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub ops_per_s: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// Parses `redis-benchmark --csv` output: the row of `test` (quoted CSV: test, rps,
/// avg_latency_ms, min, p50, p95, p99, max).
pub fn parse_redis_benchmark(lines: &[String], test: &str) -> Result<Measured, String> {
    for line in lines {
        let cells: Vec<&str> = line
            .split(',')
            .map(|c| c.trim().trim_matches('"'))
            .collect();
        if cells.first() != Some(&test) || cells.len() < 7 {
            continue;
        }
        let num = |i: usize| cells[i].parse::<f64>().ok();
        let Some(rps) = num(1).filter(|r| *r > 0.0) else {
            return Err(format!(
                "redis-benchmark: no requests per second in {line:?}"
            ));
        };
        return Ok(Measured {
            ops_per_s: rps,
            p50_ms: num(4),
            p99_ms: num(6),
        });
    }
    Err(format!(
        "redis-benchmark printed no `{test}` result (last line: {:?})",
        lines.last().map(String::as_str).unwrap_or("")
    ))
}

/// Parses YCSB's summary: `[OVERALL], Throughput(ops/sec), N` and the read and update
/// latency percentiles (microseconds; the larger of the two is reported).
pub fn parse_ycsb(lines: &[String]) -> Result<Measured, String> {
    let value = |section: &str, metric: &str| {
        lines.iter().find_map(|l| {
            let cells: Vec<&str> = l.split(',').map(str::trim).collect();
            (cells.len() == 3 && cells[0] == section && cells[1] == metric)
                .then(|| cells[2].parse::<f64>().ok())
                .flatten()
        })
    };
    let ops = value("[OVERALL]", "Throughput(ops/sec)")
        .filter(|v| *v > 0.0)
        .ok_or("YCSB printed no [OVERALL] throughput")?;
    let worst = |metric: &str| {
        let r = value("[READ]", metric);
        let u = value("[UPDATE]", metric);
        match (r, u) {
            (Some(a), Some(b)) => Some(a.max(b) / 1000.0),
            (a, b) => a.or(b).map(|v| v / 1000.0),
        }
    };
    Ok(Measured {
        ops_per_s: ops,
        p50_ms: worst("50thPercentileLatency(us)").or(worst("AverageLatency(us)")),
        p99_ms: worst("99thPercentileLatency(us)"),
    })
}

/// The board the suite boots for `arch`: the one with a virtio-mmio NIC.
pub(super) fn machine_for(arch: Arch) -> Machine {
    match arch {
        Arch::X86_64 => Machine::Microvm,
        Arch::Armv7 => Machine::Virt,
    }
}

/// Runs `bench redis`. Every option is checked before anything is built.
pub fn run(root: &Path, args: &RunArgs, plan: &super::plan::Plan) -> ExitCode {
    match run_inner(root, args, plan) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("cargo xtask bench: {e}");
            ExitCode::from(2)
        }
    }
}

fn run_inner(root: &Path, args: &RunArgs, plan: &super::plan::Plan) -> Result<bool, String> {
    let mut tools = host_env::deps::QEMU.to_vec();
    tools.extend_from_slice(host_env::deps::NET);
    tools.extend_from_slice(host_env::deps::REDIS_BENCH);
    tools.extend_from_slice(host_env::deps::YCSB);
    host_env::deps::ensure("cargo xtask bench redis", &tools)?;
    // Figures 3 and 4 are against cores: 1 and 2 unless asked (this host has 2).
    let cores: Vec<u32> = if args.cores.is_empty() {
        vec![1, 2]
    } else {
        plan.cores.clone()
    };
    let sizes = Sizes::new(args.quick);
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let revision = layout::git_revision(root);
    let suite_root = super::bench_root(root).join(if args.soak { SOAK_DIR } else { SUITE_DIR });
    let (out_dir, run_root) = match args.out.as_deref() {
        Some(dir) => {
            let dir = super::absolute(dir);
            layout::ensure_writable(&dir).map_err(|e| format!("--out: {e}"))?;
            (dir, None)
        }
        None => {
            let dir = layout::create_run_dir(&suite_root, &layout::run_name(unix, &revision))?;
            (dir, Some(suite_root.clone()))
        }
    };
    let start = Instant::now();
    let machine = super::machine::detect(root);
    println!("bench: redis suite; results go to {}", out_dir.display());
    println!(
        "bench: machine: {} ({} host cores), {}, {}",
        machine.cpu, machine.host_cores, machine.qemu, machine.rustc
    );
    let mut notes: Vec<String> = vec![
        "The kernel's image runs one server per core (a smoltcp stack and a key-value store \
         each, guest port 6379 + core), fed by one virtio-net driver on core 0 through \
         shared-memory rings; Linux runs one redis-server per core. Each client runs once per \
         server, all at the same time, and the throughputs add up."
            .into(),
        "A stack blocks in Wait when smoltcp has nothing to do; while smoltcp has a timer \
         pending it arms its core's tick line first, so a frame or the next 10 ms timer tick \
         wakes it, and polls (counted busy) only for a timer due within a tick."
            .into(),
    ];
    let mut errors: Vec<String> = Vec::new();

    // YCSB: the binding, built once (Maven fetches its dependencies the first time).
    let ycsb = prepare_ycsb(root);
    if let Err(why) = &ycsb {
        errors.push(format!("YCSB not run: {why}"));
    }

    let elves: Vec<(Arch, PathBuf)> = plan
        .archs
        .iter()
        .map(|&arch| {
            qemu::ensure_qemu(arch)?;
            println!("bench: building the {} image", qemu::arch_name(arch));
            qemu::build_image(root, arch, false, "bench").map(|elf| (arch, elf))
        })
        .collect::<Result<_, _>>()?;

    if args.soak {
        return soak(root, args, plan, &elves, &out_dir, &machine);
    }

    // The Linux baselines, one per architecture, unless --no-linux.
    let mut baselines: Vec<super::linux::Baseline> = Vec::new();
    for &arch in plan.archs.iter().filter(|_| !args.no_linux) {
        let name = qemu::arch_name(arch);
        println!("bench: preparing the {name} Linux + Redis baseline (Debian packages)");
        match super::linux::prepare(root, arch) {
            Ok(b) => {
                println!(
                    "bench: linux baseline ({name}): kernel {}, {}",
                    b.release, b.redis
                );
                notes.push(format!(
                    "Linux baseline ({name}): Debian's kernel {} and {} (one instance per core) \
                     on the same QEMU machine ({name} {}, same board file) and network; its \
                     utilisation from /proc/stat (idle + iowait) sampled the same way.",
                    b.release,
                    b.redis,
                    machine_for(arch).name()
                ));
                baselines.push(b);
            }
            Err(e) => errors.push(format!("{name} Linux baseline not run: {e}")),
        }
    }
    if baselines.is_empty() {
        notes.push(
            "No Linux + Redis baseline in this run (--no-linux, or it could not be built: see \
             the errors)."
                .into(),
        );
    }

    if plan.locks.iter().any(|l| l.name() == "none") && cores.iter().any(|&c| c > 1) {
        notes.push(
            "lock=none runs on 1 core only: with more, the driver and the stacks signal each \
             other's notifications across cores, which no lock cannot protect (the guest \
             refuses it)."
                .into(),
        );
    }
    // Points: (arch, the image and lock or (None) the Linux baseline, cores).
    type Point<'e> = (Arch, Option<(&'e PathBuf, Lock)>, u32);
    let mut points: Vec<Point> = Vec::new();
    for (arch, elf) in &elves {
        for &lock in &plan.locks {
            for n in super::cores_for(lock.name(), &cores) {
                points.push((*arch, Some((elf, lock)), n));
            }
        }
        if baselines.iter().any(|b| b.arch == *arch) {
            for &n in &cores {
                points.push((*arch, None, n));
            }
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    let mut progress = host_env::progress::Progress::new("bench", points.len());
    // The networks the points ran over (passt unless it could not run).
    let mut networks: Vec<qemu_runner::net::Network> = Vec::new();
    for (arch, what, n) in &points {
        let lock = what.map_or(LINUX, |(_, l)| l.name());
        let label = format!(
            "{} {} {} core{}",
            qemu::arch_name(*arch),
            lock,
            n,
            if *n == 1 { "" } else { "s" }
        );
        println!("{}", progress.next(&format!("{label}: booting")));
        let booted = match what {
            Some((elf, l)) => boot_ours(root, *arch, elf, *l, *n),
            None => match baselines.iter().find(|b| b.arch == *arch) {
                Some(b) => boot_linux(root, b, *n, None),
                None => unreachable!("Linux points exist only with a baseline"),
            },
        };
        match booted {
            Ok((server, target)) => {
                if !networks.contains(&server.network) {
                    networks.push(server.network);
                }
                let id = PointId {
                    arch: *arch,
                    lock,
                    cores: *n,
                    label: &label,
                };
                let (measured, errs) = measure(root, server, &target, &id, sizes, ycsb.is_ok());
                rows.extend(measured);
                errors.extend(errs.into_iter().map(|e| format!("{label}: {e}")));
            }
            Err(e) => {
                println!("bench: {label}: FAILED: {e}");
                errors.push(format!("{label}: {e}"));
            }
        }
    }
    if machine.host_cores < cores.iter().copied().max().unwrap_or(1) as usize {
        notes.push(format!(
            "Some core counts exceed this host's {} cores: their guest cores share host cores.",
            machine.host_cores
        ));
    }

    let method = json!({
        "platform": "qemu (TCG, real time; the clients are real programs on the host)",
        "network": network_method(&networks),
        "redis_benchmark": format!(
            "redis-benchmark -c {CLIENTS} -r 100000 --csv, -t set and -t get each with -n \
             {} unpipelined and -n {} with -P {PIPELINE}",
            sizes.requests, sizes.pipelined
        ),
        "ycsb": format!(
            "YCSB 0.17.0 workload A (bench/ycsb-redis/workloads/workloada), recordcount {}, \
             operationcount {}, {YCSB_THREADS} threads; load phase, then the run phase measured",
            sizes.records, sizes.operations
        ),
        "repeats": format!(
            "each client {} time(s) per point, one boot per point; the row is the run with the \
             median throughput (all runs' throughput in runs_ops_per_s)",
            sizes.repeats
        ),
        "utilisation": format!(
            "the server's INFO # CPU section (kernel cycle counter and per-core idle cycles) read \
             every {} ms during each client run; busy = 1 - idle / elapsed per core",
            SAMPLE_EVERY.as_millis()
        ),
        "xput": "throughput / average utilisation over the guest's cores",
        "retries": format!(
            "a client run that fails (a connect reset, say) is run \
             again, up to {ATTEMPTS} attempts; the console shows each retry"
        ),
        "quick": args.quick,
    });
    let results = Results {
        generated_by: super::generated_by(unix, start.elapsed().as_secs_f64(), &revision),
        machine: json!(machine),
        plan: json!({
            "suite": "redis",
            "cores": cores,
            "quick": args.quick,
        }),
        method: method.clone(),
        notes: notes.clone(),
        missing: Vec::new(),
        errors: errors.iter().map(|e| json!(e)).collect(),
        records: rows.iter().map(row_json).collect::<Vec<Value>>(),
        summary: Vec::new(),
    };
    let write = |name: &str, text: String| {
        let path = out_dir.join(name);
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write(super::RESULTS_JSON, results.to_json())?;
    write(super::RESULTS_CSV, csv(&rows))?;
    write(super::REPORT_MD, report(&rows, &method, &notes, &errors))?;
    let figures = write_figures(&out_dir, &rows, machine.host_cores)?;

    println!("\nbench: redis results:");
    print!("{}", table(&rows));
    for e in &errors {
        println!("bench: ERROR: {e}");
    }
    for f in &figures {
        println!("bench: wrote {}", f.display());
    }
    if let Some(root) = run_root {
        super::publish(&root, &out_dir, rows.len())?;
    }
    println!(
        "bench: {} client runs in {:.0} s{}",
        rows.len(),
        start.elapsed().as_secs_f64(),
        if errors.is_empty() {
            ""
        } else {
            " (with errors, listed above)"
        }
    );
    Ok(errors.is_empty() && !rows.is_empty())
}

/// Builds the YCSB binding unless it is built; `Err` says why YCSB cannot run.
fn prepare_ycsb(root: &Path) -> Result<(), String> {
    for tool in ["java", "mvn"] {
        if Cmd::new(tool).arg("-version").read_stdout(root).is_none()
            && Cmd::new(tool).arg("--version").read_stdout(root).is_none()
        {
            return Err(format!(
                "`{tool}` is missing (YCSB needs Java and Maven: apt-get install \
                 default-jdk-headless maven)"
            ));
        }
    }
    if root.join(YCSB_BUILT).exists() {
        return Ok(());
    }
    println!("bench: building the YCSB binding (bench/ycsb-redis, Maven)");
    let out = Cmd::new("mvn")
        .args(["-B", "-q", "-f", "bench/ycsb-redis/pom.xml", "package"])
        .run_captured(root, false, CLIENT_LIMIT)
        .map_err(|e| format!("cannot run mvn: {e}"))?;
    if !out.status.success() || out.timed_out {
        return Err(format!(
            "building the binding failed: {}",
            out.lines.last().map(String::as_str).unwrap_or("")
        ));
    }
    Ok(())
}

/// What a booted point serves: the host ports of its server instances and how to read its
/// cores' utilisation.
pub(super) struct Target {
    /// The host ports of the server instances, core 0's first.
    pub ports: Vec<u16>,
    probe: Probe,
}

/// Where utilisation comes from.
#[derive(Clone, Copy, Debug)]
enum Probe {
    /// The kernel's server: `INFO`'s `# CPU` section, on this host port.
    Info(u16),
    /// Linux: `/proc/stat` over HTTP on this host port (the baseline's busybox `httpd`).
    ProcStat(u16),
}

impl Probe {
    /// Connects (where the probe keeps a connection) and takes one sample per call.
    fn sampler(self) -> Result<Box<dyn FnMut() -> Result<CpuSample, String> + Send>, String> {
        match self {
            Probe::Info(port) => {
                let mut reader = qemu_runner::net::InfoReader::connect(port)?;
                Ok(Box::new(move || parse_cpu(&reader.info()?)))
            }
            Probe::ProcStat(port) => Ok(Box::new(move || parse_proc_stat(&http_get(port)?))),
        }
    }
}

/// The body of `GET /cgi-bin/stat` from 127.0.0.1:`port`: read until the connection closes or
/// the body holds `/proc/stat`'s `intr` line, which follows the `cpu` lines, so that a close
/// the network passes on late does not hold the sample up.
fn http_get(port: u16) -> Result<String, String> {
    use std::io::{Read, Write};
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("/proc/stat server: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET /cgi-bin/stat HTTP/1.0\r\n\r\n")
        .map_err(|e| format!("/proc/stat server: {e}"))?;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let body = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes).into_owned();
        text.split_once("\r\n\r\n")
            .map_or(text.as_str(), |(_, body)| body)
            .to_owned()
    };
    loop {
        match s.read(&mut chunk) {
            Ok(0) => return Ok(body(&bytes)),
            Ok(n) => {
                bytes.extend_from_slice(&chunk[..n]);
                if body(&bytes).contains("\nintr ") {
                    return Ok(body(&bytes));
                }
            }
            Err(e) => {
                return Err(format!(
                    "/proc/stat server: {e} (after {} bytes of the reply)",
                    bytes.len()
                ))
            }
        }
    }
}

/// Linux's `/proc/stat` as a [`CpuSample`]: per core, idle = idle + iowait, and the clock is
/// the largest core total of user..steal (USER_HZ ticks; the cores' totals agree to a tick).
pub fn parse_proc_stat(text: &str) -> Result<CpuSample, String> {
    let mut totals = Vec::new();
    let mut idle = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else { continue };
        let Some(core) = name.strip_prefix("cpu").filter(|c| !c.is_empty()) else {
            continue;
        };
        let core: usize = core
            .parse()
            .map_err(|_| format!("/proc/stat: bad line {line:?}"))?;
        let v: Vec<u64> = words.take(8).filter_map(|w| w.parse().ok()).collect();
        if v.len() < 5 || core != totals.len() {
            return Err(format!("/proc/stat: bad line {line:?}"));
        }
        totals.push(v.iter().sum::<u64>());
        idle.push(v[3] + v[4]);
    }
    let cycles = totals
        .iter()
        .copied()
        .max()
        .ok_or("/proc/stat has no cpuN lines")?;
    Ok(CpuSample {
        cycles,
        idle,
        word_bits: 64,
    })
}

/// `--soak`: [`super::soak`] on every architecture's image, with the plan's first lock (clh
/// unless `--lock` says otherwise; `none` cannot run the soak's 2 cores), then its
/// `results.json` and `report.md`.
fn soak(
    root: &Path,
    args: &RunArgs,
    plan: &super::plan::Plan,
    elves: &[(Arch, PathBuf)],
    out_dir: &Path,
    machine: &super::records::Machine,
) -> Result<bool, String> {
    let lock = plan
        .locks
        .iter()
        .copied()
        .find(|l| l.name() != "none")
        .ok_or("--soak runs 2 cores, which lock none cannot: give --lock clh (or another)")?;
    let duration = Duration::from_secs(args.soak_time);
    let mut soaks = Vec::new();
    let mut networks = Vec::new();
    for (arch, elf) in elves {
        let s = super::soak::run(root, *arch, elf, lock, duration);
        println!(
            "bench: soak {} {}: {} requests, {} connections in {:.0} s: {}",
            s.arch,
            s.lock,
            s.requests(),
            s.connections(),
            s.seconds,
            if s.errors.is_empty() {
                "passed (every acknowledged write read back)".to_owned()
            } else {
                format!("FAILED: {}", s.errors.join("; "))
            }
        );
        if !networks.contains(&s.network) {
            networks.push(s.network);
        }
        soaks.push(s);
    }
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let results = Results {
        generated_by: super::generated_by(
            unix,
            soaks.iter().map(|s| s.seconds).sum::<f64>(),
            &layout::git_revision(root),
        ),
        machine: json!(machine),
        plan: json!({
            "suite": "redis-soak",
            "duration_s": duration.as_secs(),
            "cores": super::soak::CORES,
        }),
        method: json!({ "network": network_method(&networks) }),
        notes: Vec::new(),
        missing: Vec::new(),
        errors: soaks
            .iter()
            .flat_map(|s| {
                s.errors
                    .iter()
                    .map(move |e| json!(format!("{} {}: {e}", s.arch, s.lock)))
            })
            .collect(),
        records: super::soak::records(&soaks),
        summary: Vec::new(),
    };
    let report = format!(
        "# Network soak: the Redis-protocol server under a long mixed load\n\n\
         Machine: {} ({} host cores), {}, {}.\n\n{}",
        machine.cpu,
        machine.host_cores,
        machine.qemu,
        machine.rustc,
        super::soak::report(&soaks, duration, &networks_named(&networks))
    );
    let write = |name: &str, text: String| {
        let path = out_dir.join(name);
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write(super::RESULTS_JSON, results.to_json())?;
    write(super::REPORT_MD, report)?;
    println!("bench: soak results in {}", out_dir.display());
    Ok(soaks.iter().all(|s| s.errors.is_empty()))
}

/// The networks the points ran over, by name (`passt`).
fn networks_named(networks: &[qemu_runner::net::Network]) -> String {
    let names: Vec<&str> = networks.iter().map(|n| n.describe()).collect();
    names.join(" and ")
}

/// The method's description of the networks the points ran over.
fn network_method(networks: &[qemu_runner::net::Network]) -> String {
    use qemu_runner::net::Network;
    let passt = "passt (the default): the passt process listens on host ports on 127.0.0.1 and \
                 forwards them to the guest's ports 6379 + k (core k's server) over QEMU's \
                 -netdev stream";
    let user = format!(
        "QEMU's user network (libslirp; a fallback, because passt could not run): {}",
        qemu_runner::net::USER_NETWORK_LIMIT
    );
    match networks {
        [] => "none (no point booted)".to_owned(),
        [Network::Passt] => passt.to_owned(),
        [Network::User] => user,
        _ => format!("some points over {passt}; others over {user}"),
    }
}

/// Boots the kernel's network image for one point.
pub(super) fn boot_ours(
    root: &Path,
    arch: Arch,
    elf: &Path,
    lock: Lock,
    cores: u32,
) -> Result<(qemu_runner::net::Server, Target), String> {
    let machine = machine_for(arch);
    let words: Vec<String> = [
        "qemu",
        "--net",
        "--arch",
        qemu::arch_name(arch),
        "--machine",
        machine.name(),
        "--lock",
        lock.name(),
        "--smp",
        &cores.to_string(),
        "--timeout",
        "3600",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let qargs = QemuCli::try_parse_from(&words)
        .map_err(|e| format!("qemu options {words:?}: {e}"))?
        .args;
    let server = qemu_runner::net::start(root, &qargs, elf, false)?;
    let ports = server.ports();
    Ok((
        server,
        Target {
            probe: Probe::Info(ports[0]),
            ports,
        },
    ))
}

/// Boots a Linux baseline on its architecture's machine with `cores` cores: a
/// `redis-server` per core.
fn boot_linux(
    root: &Path,
    baseline: &super::linux::Baseline,
    cores: u32,
    network: Option<qemu_runner::net::Network>,
) -> Result<(qemu_runner::net::Server, Target), String> {
    // The servers' ports, then /proc/stat's.
    let base =
        qemu_runner::net::free_ports(cores + 1).map_err(|e| format!("no free host ports: {e}"))?;
    let ports: Vec<u16> = (0..cores as u16).map(|k| base + k).collect();
    let stat = base + cores as u16;
    let mut forwards: Vec<(u16, u16)> = ports
        .iter()
        .enumerate()
        .map(|(i, &p)| (p, super::linux::REDIS_PORT + i as u16))
        .collect();
    forwards.push((stat, super::linux::STAT_PORT));
    let machine = machine_for(baseline.arch);
    // A boot that does not come up is tried once more: Linux under TCG on a loaded host can
    // stall in its early timer set-up (see `linux::x86_append`), and one lost boot should not
    // cost the whole point. The same network as the kernel's image (passt by default).
    let boot = || {
        let (network, passt) = qemu_runner::net::choose_network(root, network, &forwards)?;
        let mut extra = vec!["-initrd".to_owned(), baseline.initrd.display().to_string()];
        extra.extend(match network {
            qemu_runner::net::Network::Passt => qemu_runner::net::qemu_args_passt(base, machine),
            qemu_runner::net::Network::User => {
                qemu_runner::net::qemu_args_forwarding(&forwards, machine)
            }
        });
        let cmd = qemu::guest_cmd(&qemu::Guest {
            arch: baseline.arch,
            machine,
            smp: cores,
            elf: &baseline.kernel,
            append: baseline.append.clone(),
            extra,
            console_port: 0,
            semihosting: true,
        });
        let limit = qemu_runner::net::boot_deadline(
            LINUX_BOOT,
            cores,
            qemu_runner::net::host_cores(),
            qemu_runner::net::load_average(),
            false,
        );
        qemu_runner::net::start_cmd(
            root,
            &cmd,
            qemu_runner::net::Boot {
                port: base,
                stacks: cores,
                limit,
                advice: None,
                passt,
                echo: false,
            },
        )
    };
    let server = boot().or_else(|e| {
        println!("bench: linux {cores} core(s): {e}; booting once more");
        boot()
    })?;
    Ok((
        server,
        Target {
            ports,
            probe: Probe::ProcStat(stat),
        },
    ))
}

/// What one point is.
struct PointId<'a> {
    arch: Arch,
    lock: &'a str,
    cores: u32,
    label: &'a str,
}

/// Runs every client against a booted point: the rows measured and the errors of the clients
/// that failed. With several server instances (one per core), each client runs once per
/// instance, all at the same time, and the throughputs add up.
fn measure(
    root: &Path,
    mut server: qemu_runner::net::Server,
    target: &Target,
    id: &PointId<'_>,
    sizes: Sizes,
    with_ycsb: bool,
) -> (Vec<Row>, Vec<String>) {
    let machine = machine_for(id.arch);
    let row = |client: &str, workload: &str, runs: Vec<Run>| {
        let all: Vec<f64> = runs.iter().map(|r| r.0.ops_per_s).collect();
        let (m, util, secs) = median_run(runs);
        Row {
            arch: qemu::arch_name(id.arch).to_owned(),
            board: machine.name().to_owned(),
            lock: id.lock.to_owned(),
            cores: id.cores,
            client: client.to_owned(),
            workload: workload.to_owned(),
            ops_per_s: m.ops_per_s,
            p50_ms: m.p50_ms,
            p99_ms: m.p99_ms,
            utilisation: util,
            seconds: secs,
            runs: all,
        }
    };
    let label = id.label;
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for (test, pipeline) in [("SET", 1), ("GET", 1), ("SET", PIPELINE), ("GET", PIPELINE)] {
        let n = if pipeline == 1 {
            sizes.requests
        } else {
            sizes.pipelined
        };
        let workload = if pipeline == 1 {
            test.to_owned()
        } else {
            format!("{test} -P {pipeline}")
        };
        println!("bench: {label}: redis-benchmark {workload} ({n} requests)");
        let make = |port: u16| {
            Cmd::new("redis-benchmark").args([
                "-h".to_owned(),
                "127.0.0.1".to_owned(),
                "-p".to_owned(),
                port.to_string(),
                "-c".to_owned(),
                CLIENTS.to_string(),
                "-n".to_owned(),
                n.to_string(),
                "-r".to_owned(),
                "100000".to_owned(),
                "-P".to_owned(),
                pipeline.to_string(),
                "-t".to_owned(),
                test.to_lowercase(),
                "--csv".to_owned(),
            ])
        };
        match repeat(sizes.repeats, || {
            let r = retried(&format!("{label}: redis-benchmark {workload}"), || {
                run_clients(root, target, &make, |lines| {
                    parse_redis_benchmark(lines, test)
                })
            });
            settle();
            r
        }) {
            Ok(runs) => rows.push(row("redis-benchmark", &workload, runs)),
            Err(e) => errors.push(format!("redis-benchmark {workload}: {e}")),
        }
    }
    if with_ycsb {
        let ycsb = |phase: &'static str| {
            move |port: u16| {
                Cmd::new("bench/ycsb-redis/run-ycsb.sh").args([
                    phase.to_owned(),
                    "-P".to_owned(),
                    "bench/ycsb-redis/workloads/workloada".to_owned(),
                    "-p".to_owned(),
                    "redis.host=127.0.0.1".to_owned(),
                    "-p".to_owned(),
                    format!("redis.port={port}"),
                    "-p".to_owned(),
                    format!("recordcount={}", sizes.records),
                    "-p".to_owned(),
                    format!("operationcount={}", sizes.operations),
                    "-threads".to_owned(),
                    YCSB_THREADS.to_string(),
                ])
            }
        };
        println!(
            "bench: {label}: YCSB workload A: load {} records",
            sizes.records
        );
        match retried(&format!("{label}: YCSB load"), || {
            run_clients(root, target, &ycsb("load"), parse_ycsb)
        }) {
            Ok(_) => {
                settle();
                println!(
                    "bench: {label}: YCSB workload A: run {} operations{}",
                    sizes.operations,
                    if sizes.repeats > 1 {
                        format!(", {} times", sizes.repeats)
                    } else {
                        String::new()
                    }
                );
                match repeat(sizes.repeats, || {
                    let r = retried(&format!("{label}: YCSB run"), || {
                        run_clients(root, target, &ycsb("run"), parse_ycsb)
                    });
                    settle();
                    r
                }) {
                    Ok(runs) => rows.push(row("ycsb", "A", runs)),
                    Err(e) => errors.push(format!("YCSB run: {e}")),
                }
            }
            Err(e) => errors.push(format!("YCSB load: {e}")),
        }
    }
    if !errors.is_empty() {
        server.tail();
    }
    (rows, errors)
}

/// One client run: what it measured, each core's utilisation, its wall time.
type Run = (Measured, Vec<f64>, f64);

/// Attempts per client run: a client that fails is run again, and only the third failure is an
/// error. Each retry is printed and the report's method says so. A safety net: a connect can be
/// reset when a client closes and reopens its connections at once and the server has too few
/// sockets.
const ATTEMPTS: usize = 3;

/// `f` until it succeeds, at most [`ATTEMPTS`] times; the last error otherwise.
fn retried<T>(what: &str, mut f: impl FnMut() -> Result<T, String>) -> Result<T, String> {
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) => {
                if attempt < ATTEMPTS {
                    println!("bench: {what}: attempt {attempt} failed ({e}); again");
                    settle();
                }
                last = e;
            }
        }
    }
    Err(last)
}

/// `f` run `n` times (at least once); the first error ends it.
fn repeat(n: usize, mut f: impl FnMut() -> Result<Run, String>) -> Result<Vec<Run>, String> {
    (0..n.max(1)).map(|_| f()).collect()
}

/// The run with the median throughput (the lower middle one of an even count).
fn median_run(mut runs: Vec<Run>) -> Run {
    runs.sort_by(|a, b| a.0.ops_per_s.total_cmp(&b.0.ops_per_s));
    let mid = (runs.len().max(1) - 1) / 2;
    runs.swap_remove(mid)
}

/// Lets the server free the sockets of the last client before the next one connects.
fn settle() {
    std::thread::sleep(Duration::from_millis(500));
}

/// Runs the client `make(port)` against every server instance of `target` at once, with the
/// sampler around them: the summed throughput (latency: the worst instance's), each core's
/// utilisation, and the wall time of the slowest.
fn run_clients(
    root: &Path,
    target: &Target,
    make: &(dyn Fn(u16) -> Cmd + Sync),
    parse: impl Fn(&[String]) -> Result<Measured, String>,
) -> Result<Run, String> {
    let mut probe = target.probe.sampler()?;
    let first = probe()?;
    // The stop message wakes the sampler at once, so its last sample closes the window right
    // when the clients end (a sleeping sampler would count up to a period of idle time after
    // them).
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let sampler = std::thread::spawn(move || -> Result<Vec<CpuSample>, String> {
        let mut samples = vec![first];
        loop {
            let last = !matches!(
                stopped.recv_timeout(SAMPLE_EVERY),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            );
            samples.push(probe()?);
            if last {
                return Ok(samples);
            }
        }
    });
    let outs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = target
            .ports
            .iter()
            .map(|&port| {
                let cmd = make(port);
                s.spawn(move || (cmd.display(), cmd.run_captured(root, false, CLIENT_LIMIT)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread panicked"))
            .collect()
    });
    let _ = stop.send(());
    let samples = sampler
        .join()
        .map_err(|_| "the CPU sampler panicked".to_string())?;
    let mut total = Measured {
        ops_per_s: 0.0,
        p50_ms: None,
        p99_ms: None,
    };
    let mut secs: f64 = 0.0;
    for (shown, out) in outs {
        let out = out.map_err(|e| format!("cannot run {shown}: {e}"))?;
        if out.timed_out {
            return Err(format!("timed out after {} s", CLIENT_LIMIT.as_secs()));
        }
        if !out.status.success() {
            return Err(format!(
                "{} ({})",
                out.status,
                out.lines.last().map(String::as_str).unwrap_or("")
            ));
        }
        let m = parse(&out.lines)?;
        total.ops_per_s += m.ops_per_s;
        let worst = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        total.p50_ms = worst(total.p50_ms, m.p50_ms);
        total.p99_ms = worst(total.p99_ms, m.p99_ms);
        secs = secs.max(out.elapsed.as_secs_f64());
    }
    Ok((total, utilisation(&samples?)?, secs))
}

fn row_json(r: &Row) -> Value {
    json!({
        "arch": r.arch, "board": r.board, "lock": r.lock, "cores": r.cores,
        "client": r.client, "workload": r.workload, "ops_per_s": r.ops_per_s,
        "p50_ms": r.p50_ms, "p99_ms": r.p99_ms, "utilisation": r.utilisation,
        "mean_utilisation": r.mean_utilisation(), "xput": r.xput(), "seconds": r.seconds,
        "runs_ops_per_s": r.runs,
    })
}

fn opt(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3}")).unwrap_or_default()
}

/// `results.csv`: one line per client run.
pub fn csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "arch,board,lock,cores,client,workload,ops_per_s,p50_ms,p99_ms,mean_utilisation,xput,\
         seconds\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{:.1},{},{},{:.4},{:.1},{:.2}",
            r.arch,
            r.board,
            r.lock,
            r.cores,
            r.client,
            r.workload,
            r.ops_per_s,
            opt(r.p50_ms),
            opt(r.p99_ms),
            r.mean_utilisation(),
            r.xput(),
            r.seconds
        );
    }
    s
}

/// The columns of the results tables (the console's and report.md's).
const COLUMNS: [&str; 10] = [
    "arch", "lock", "cores", "client", "workload", "ops/s", "p50 ms", "p99 ms", "util", "Xput",
];

impl Row {
    /// This row's cells under [`COLUMNS`].
    fn cells(&self) -> [String; 10] {
        [
            self.arch.clone(),
            self.lock.clone(),
            self.cores.to_string(),
            self.client.clone(),
            self.workload.clone(),
            format!("{:.0}", self.ops_per_s),
            opt(self.p50_ms),
            opt(self.p99_ms),
            format!("{:.1}%", self.mean_utilisation() * 100.0),
            format!("{:.0}", self.xput()),
        ]
    }
}

/// The rows as a text table, each column as wide as its widest cell (text left, numbers right).
fn table(rows: &[Row]) -> String {
    let cells: Vec<[String; 10]> = rows.iter().map(Row::cells).collect();
    let widths: Vec<usize> = (0..COLUMNS.len())
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].len())
                .chain([COLUMNS[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |row: &[&str]| {
        let parts: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c < 5 && c != 2 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        format!("  {}\n", parts.join(" "))
    };
    let mut s = line(&COLUMNS);
    for r in &cells {
        s.push_str(&line(&r.iter().map(String::as_str).collect::<Vec<_>>()));
    }
    s
}

/// Distinct values in first-seen order.
fn distinct<T: PartialEq + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// The rows grouped by (arch, workload), in first-seen order: one group per panel of the
/// figures and per target of the report.
fn groups(rows: &[Row]) -> Vec<(&str, &str, Vec<&Row>)> {
    let mut out: Vec<(&str, &str, Vec<&Row>)> = Vec::new();
    for r in rows {
        match out
            .iter_mut()
            .find(|(a, w, _)| *a == r.arch && *w == r.workload)
        {
            Some((_, _, sel)) => sel.push(r),
            None => out.push((&r.arch, &r.workload, vec![r])),
        }
    }
    out
}

/// `(max - min) / max` of `values` (0 for fewer than two).
fn spread_of(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.collect();
    if v.len() < 2 {
        return 0.0;
    }
    let hi = v.iter().copied().fold(f64::MIN, f64::max);
    let lo = v.iter().copied().fold(f64::MAX, f64::min);
    (hi - lo) / hi
}

/// The spread of the strategies' throughput at the largest core count of each (arch,
/// workload): (max - min) / max, and beside it the noise: the largest spread of one point's
/// repeated runs there. The paper's finding is that the strategies are close (target: 5%).
fn spreads(rows: &[Row]) -> Vec<(String, String, u32, f64, f64)> {
    let mut out = Vec::new();
    for (arch, w, sel) in groups(rows) {
        let sel: Vec<&Row> = sel.into_iter().filter(|r| r.lock != LINUX).collect();
        let Some(max_cores) = sel.iter().map(|r| r.cores).max() else {
            continue;
        };
        let at: Vec<&Row> = sel.into_iter().filter(|r| r.cores == max_cores).collect();
        if at.len() < 2 {
            continue;
        }
        let between = spread_of(at.iter().map(|r| r.ops_per_s));
        let noise = at
            .iter()
            .map(|r| spread_of(r.runs.iter().copied()))
            .fold(0.0, f64::max);
        out.push((arch.to_owned(), w.to_owned(), max_cores, between, noise));
    }
    out
}

/// `report.md`.
pub fn report(rows: &[Row], method: &Value, notes: &[String], errors: &[String]) -> String {
    let mut s = String::from(
        "# Network macro-benchmark: Redis protocol\n\n\
         The kernel's network server (`mode=net`: virtio-net driver, smoltcp, the `kv-resp` \
         key-value server) under QEMU, driven by `redis-benchmark` and YCSB workload A, per \
         locking strategy. Figures: `redis-throughput` (throughput against cores, the \
         paper's Figure 3) and `redis-xput` (Xput = throughput / average core \
         utilisation, Figure 4).\n\n## Method\n\n",
    );
    if let Some(m) = method.as_object() {
        for (k, v) in m {
            let _ = writeln!(
                s,
                "- {k}: {}",
                v.as_str().map_or(v.to_string(), str::to_owned)
            );
        }
    }
    let _ = writeln!(
        s,
        "\n## Results\n\n| {} |\n|---|---|---:|---|---|---:|---:|---:|---:|---:|",
        COLUMNS.join(" | ")
    );
    for r in rows {
        let _ = writeln!(s, "| {} |", r.cells().join(" | "));
    }
    s.push_str("\n## Targets\n\n");
    let spread = spreads(rows);
    if spread.is_empty() {
        s.push_str(
            "- The strategies within 5% of each other: not measured (fewer than two locks).\n",
        );
    }
    for (arch, w, cores, sp, noise) in spread {
        let _ = writeln!(
            s,
            "- {arch} {w} at {cores} core(s): the strategies' throughput within {:.1}% of each \
             other (target 5%, the paper's finding): {}; one point's repeated runs spread by up \
             to {:.1}%{}",
            sp * 100.0,
            if sp <= 0.05 { "met" } else { "not met" },
            noise * 100.0,
            if sp > 0.05 && sp <= noise {
                " (the difference is within the run-to-run noise)"
            } else {
                ""
            }
        );
    }
    let mut compared = false;
    for linux in rows.iter().filter(|r| r.lock == LINUX) {
        for r in rows.iter().filter(|r| {
            r.lock != LINUX
                && r.arch == linux.arch
                && r.workload == linux.workload
                && r.cores == linux.cores
        }) {
            compared = true;
            let _ = writeln!(
                s,
                "- {} {} {} at {} core(s): Xput {:.0} against Linux's {:.0} ({:+.0}%; target: at \
                 or above): {}",
                r.arch,
                r.lock,
                r.workload,
                r.cores,
                r.xput(),
                linux.xput(),
                (r.xput() / linux.xput() - 1.0) * 100.0,
                if r.xput() >= linux.xput() {
                    "met"
                } else {
                    "not met"
                }
            );
        }
    }
    if !compared {
        s.push_str(
            "- Xput at or above Linux's on the same QEMU machine: not measured (no Linux rows).\n",
        );
    }
    s.push_str("\n## Notes\n\n");
    for n in notes {
        let _ = writeln!(s, "- {n}");
    }
    if !errors.is_empty() {
        s.push_str("\n## Errors\n\n");
        for e in errors {
            let _ = writeln!(s, "- {e}");
        }
    }
    s
}

/// Line panels of one metric: per (arch, workload), x = cores, a line per lock.
fn panels(
    rows: &[Row],
    host_cores: usize,
    unit: &str,
    value: impl Fn(&Row) -> f64,
) -> Vec<LinePanel> {
    groups(rows)
        .into_iter()
        .map(|(arch, w, sel)| {
            let lines = distinct(sel.iter().map(|r| r.lock.clone()))
                .into_iter()
                .map(|lock| Line {
                    points: sel
                        .iter()
                        .filter(|r| r.lock == lock)
                        .map(|r| Point {
                            x: r.cores,
                            cores: r.cores,
                            mean: value(r),
                            sd: 0.0,
                            oversubscribed: r.cores as usize > host_cores,
                        })
                        .collect(),
                    lock,
                })
                .collect();
            LinePanel {
                title: format!("{arch} ({}): {} {w}", sel[0].board, sel[0].client),
                unit: unit.to_owned(),
                x_desc: "cores",
                lines,
                emulated: true,
                host_cores,
                ideal: false,
            }
        })
        .collect()
}

/// Writes Figures 3 and 4; returns the paths.
fn write_figures(dir: &Path, rows: &[Row], host_cores: usize) -> Result<Vec<PathBuf>, String> {
    let mut written = plot::write_lines(
        dir,
        STEMS[0],
        "Figure 3 (network): Redis-protocol throughput against cores, per lock (median run)",
        "no client run succeeded",
        &panels(rows, host_cores, "ops/s", |r| r.ops_per_s),
    )?;
    written.extend(plot::write_lines(
        dir,
        STEMS[1],
        "Figure 4 (network): Xput = throughput / average core utilisation, per lock",
        "no client run succeeded",
        &panels(rows, host_cores, "ops/s per busy core", Row::xput),
    )?);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cycles: u64, idle: &[u64], bits: u32) -> CpuSample {
        CpuSample {
            cycles,
            idle: idle.to_vec(),
            word_bits: bits,
        }
    }

    #[test]
    fn cpu_section_parses_and_rejects_what_is_not_ours() {
        let info = "# Server\r\nredis_version:7.0.0\r\n\r\n# CPU\r\ncpus:2\r\ncounter_hz:100\r\n\
                    word_bits:64\r\nkernel_cycles:1000\r\nidle_cycles_cpu0:10\r\n\
                    idle_cycles_cpu1:900\r\n";
        assert_eq!(parse_cpu(info).unwrap(), sample(1000, &[10, 900], 64));
        let real_redis = "# Server\r\nredis_version:7.0.15\r\n# CPU\r\nused_cpu_sys:1.0\r\n";
        assert!(parse_cpu(real_redis).unwrap_err().contains("cpus"));
        assert!(parse_cpu(&info.replace("idle_cycles_cpu1:900", "x"))
            .unwrap_err()
            .contains("idle_cycles_cpu1"));
    }

    #[test]
    fn utilisation_sums_intervals_and_wraps_32_bit_counters() {
        let s = [
            sample(1000, &[0, 0], 64),
            sample(2000, &[250, 1000], 64),
            sample(3000, &[250, 2000], 64),
        ];
        let u = utilisation(&s).unwrap();
        assert!((u[0] - 0.875).abs() < 1e-9, "{u:?}");
        assert!(u[1].abs() < 1e-9, "{u:?}");
        // 32-bit: the counter wraps between the samples.
        let w = [
            sample(u32::MAX as u64 - 99, &[u32::MAX as u64 - 9], 32),
            sample(100, &[40], 32),
        ];
        let u = utilisation(&w).unwrap();
        assert!((u[0] - 0.75).abs() < 1e-9, "{u:?}");
        assert!(utilisation(&s[..1]).is_err());
        assert!(utilisation(&[s[0].clone(), s[0].clone()]).is_err());
    }

    #[test]
    fn redis_benchmark_csv_and_ycsb_output_parse() {
        let lines: Vec<String> = [
            "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\
             \"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"",
            "\"SET\",\"18656.72\",\"0.096\",\"0.040\",\"0.103\",\"0.135\",\"0.151\",\"1.207\"",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let m = parse_redis_benchmark(&lines, "SET").unwrap();
        assert_eq!(
            m,
            Measured {
                ops_per_s: 18656.72,
                p50_ms: Some(0.103),
                p99_ms: Some(0.151)
            }
        );
        assert!(parse_redis_benchmark(&lines, "GET").is_err());

        let y: Vec<String> = [
            "[OVERALL], RunTime(ms), 2000",
            "[OVERALL], Throughput(ops/sec), 4521.5",
            "[READ], 50thPercentileLatency(us), 180",
            "[READ], 99thPercentileLatency(us), 400",
            "[UPDATE], 50thPercentileLatency(us), 200",
            "[UPDATE], 99thPercentileLatency(us), 350",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let m = parse_ycsb(&y).unwrap();
        assert_eq!(m.ops_per_s, 4521.5);
        assert_eq!(m.p50_ms, Some(0.2));
        assert_eq!(m.p99_ms, Some(0.4));
        assert!(parse_ycsb(&y[2..]).is_err());
    }

    fn row(lock: &str, ops: f64, util: &[f64]) -> Row {
        Row {
            arch: "x86_64".into(),
            board: "microvm".into(),
            lock: lock.into(),
            cores: 1,
            client: "redis-benchmark".into(),
            workload: "SET".into(),
            ops_per_s: ops,
            p50_ms: Some(0.1),
            p99_ms: None,
            utilisation: util.to_vec(),
            seconds: 1.0,
            runs: vec![ops],
        }
    }

    #[test]
    fn the_strategies_spread_is_judged_beside_the_run_to_run_noise() {
        let mut a = row("none", 1000.0, &[1.0]);
        a.runs = vec![1000.0, 800.0, 1010.0];
        let b = row("clh", 900.0, &[1.0]);
        let linux = row(LINUX, 10.0, &[1.0]);
        let s = spreads(&[a, b, linux]);
        assert_eq!(s.len(), 1, "linux is not a strategy: {s:?}");
        let (_, _, cores, between, noise) = &s[0];
        assert_eq!(*cores, 1);
        assert!((between - 0.1).abs() < 1e-9, "{between}");
        assert!((noise - 210.0 / 1010.0).abs() < 1e-9, "{noise}");
        let text = report(
            &[row("none", 1000.0, &[1.0]), row("clh", 900.0, &[1.0])],
            &json!({}),
            &[],
            &[],
        );
        assert!(text.contains("within 10.0% of each other"), "{text}");
        assert!(!text.contains("within the run-to-run noise"), "{text}");
    }

    #[test]
    fn xput_report_and_csv() {
        let rows = [row("none", 1000.0, &[0.5]), row("clh", 980.0, &[1.0, 0.0])];
        assert!((rows[0].xput() - 2000.0).abs() < 1e-9);
        assert!((rows[1].xput() - 1960.0).abs() < 1e-9);
        let text = report(&rows, &json!({"quick": true}), &["a note".into()], &[]);
        assert!(
            text.contains("within 2.0% of each other (target 5%"),
            "{text}"
        );
        assert!(text.contains(": met"), "{text}");
        assert!(text.contains("- a note"), "{text}");
        let c = csv(&rows);
        assert_eq!(c.lines().count(), 3);
        assert!(c.contains("x86_64,microvm,clh,1,redis-benchmark,SET,980.0,0.100,,0.5000,1960.0"));
        assert!(
            text.contains(
                "| x86_64 | clh | 1 | redis-benchmark | SET | 980 | 0.100 |  | 50.0% | 1960 |"
            ),
            "{text}"
        );
        let t = table(&rows);
        assert_eq!(t.lines().count(), 3, "{t}");
        assert!(
            t.lines()
                .all(|l| l.len() == t.lines().next().unwrap().len()),
            "{t}"
        );
        let p = panels(&rows, 2, "ops/s", |r| r.ops_per_s);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].lines.len(), 2);
    }
}
