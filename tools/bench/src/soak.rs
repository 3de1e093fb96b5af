//! `cargo xtask bench redis --soak`: the network server under a long mixed load, with
//! everything it acknowledged read back at the end.
//!
//! For each architecture of the plan (x86_64 microvm, ARMv7 virt; virtio-net over passt, the
//! default network), it boots the network image with 2 cores (one server per core) and runs
//! three clients against every core's server at once, each in a loop until `--soak-time`
//! (default 10 minutes) has passed:
//! * `redis-benchmark -c 50 -n 20000 -t set,get,incr`: unpipelined, and every test opens its
//!   50 connections at once and closes them at its end (the load that once stalled);
//! * `redis-benchmark -c 8 -P 32 -n 51200 -t set,get,incr,hset,mset`: deep pipelines;
//! * a reconnecting client (xtask's own RESP client): a new connection for every `SET
//!   soak:key:i i` and `INCR soak:acks`, every tenth one reading an earlier key back.
//!
//! Neither benchmark uses `-r`, so every INCR of both goes to the one key
//! `counter:__rand_int__`. redis-benchmark sends its requests in rounds of `-P` per connection
//! and finishes the round that reaches `-n`: unless `-n` is a multiple of `-c` times `-P`, it
//! sends more than `-n` (real Redis counts 50,016 INCRs after `-c 8 -P 32 -n 50000`), so each
//! `-n` here is such a multiple. At the end, per server: the counter must equal the INCR
//! requests of every completed benchmark run, `soak:acks` the reconnecting client's acknowledged INCRs, and
//! every `soak:key:i` it wrote must read back as `i`. A benchmark run that fails (a refused or
//! reset connection, a stall past [`RUN_LIMIT`]) or any mismatch fails the soak. The result
//! (runs, requests, connections opened, the read-back) goes to `results.json` and `report.md`.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use host_env::proc::Cmd;
use qemu_runner::net::{encode, Client, Reply};
use qemu_runner::qemu::{self, Arch, Lock};

/// Cores of the soak's guests (one server per core).
pub const CORES: u32 = 2;
/// The longest one benchmark run may take before it counts as stalled.
const RUN_LIMIT: Duration = Duration::from_secs(300);
/// Reads of the final read-back per pipelined batch.
const READ_BATCH: usize = 100;

/// One looping redis-benchmark client.
struct Bench {
    name: &'static str,
    /// `redis-benchmark` options after `-h` and `-p`.
    args: &'static [&'static str],
    /// Requests of one run: `-n` times the tests.
    requests: u64,
    /// INCR requests of one run (to `counter:__rand_int__`).
    incrs: u64,
    /// Connections one run opens: `-c` times the tests.
    connections: u64,
}

/// The two benchmark clients.
const BENCHES: [Bench; 2] = [
    Bench {
        name: "redis-benchmark -c 50 (unpipelined)",
        args: &["-c", "50", "-n", "20000", "-t", "set,get,incr", "-q"],
        requests: 3 * 20_000,
        incrs: 20_000,
        connections: 3 * 50,
    },
    Bench {
        name: "redis-benchmark -c 8 -P 32",
        args: &[
            "-c",
            "8",
            "-P",
            "32",
            "-n",
            "51200",
            "-t",
            "set,get,incr,hset,mset",
            "-q",
        ],
        requests: 5 * 51_200,
        incrs: 51_200,
        connections: 5 * 8,
    },
];

/// What one client did against one server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// The client.
    pub client: String,
    /// The reconnecting client (its INCRs go to `soak:acks`), not a benchmark (theirs go to
    /// `counter:__rand_int__`).
    pub reconnecting: bool,
    /// The server's host port.
    pub port: u16,
    /// Completed runs (benchmarks) or iterations (the reconnecting client).
    pub runs: u64,
    /// Requests answered.
    pub requests: u64,
    /// Connections opened.
    pub connections: u64,
    /// INCRs acknowledged.
    pub incrs: u64,
    /// Why it stopped early, if it did.
    pub error: Option<String>,
}

/// One architecture's soak.
#[derive(Clone, Debug)]
pub struct Soak {
    /// `x86_64` or `armv7`.
    pub arch: String,
    /// The QEMU machine.
    pub board: String,
    /// The kernel lock.
    pub lock: String,
    /// The network the guest was on.
    pub network: qemu_runner::net::Network,
    /// How long the clients ran.
    pub seconds: f64,
    /// Every client against every server.
    pub clients: Vec<Totals>,
    /// The read-back, one line per check.
    pub readback: Vec<String>,
    /// What failed (empty: the soak passed).
    pub errors: Vec<String>,
}

impl Soak {
    /// Requests answered by all clients.
    pub fn requests(&self) -> u64 {
        self.clients.iter().map(|c| c.requests).sum()
    }

    /// Connections opened by all clients.
    pub fn connections(&self) -> u64 {
        self.clients.iter().map(|c| c.connections).sum()
    }
}

/// Runs one benchmark client in a loop against `port` until `until` or `stop`.
fn bench_loop(root: &Path, bench: &Bench, port: u16, until: Instant, stop: &AtomicBool) -> Totals {
    let mut t = Totals {
        client: bench.name.to_owned(),
        port,
        ..Totals::default()
    };
    while Instant::now() < until && !stop.load(Ordering::Relaxed) {
        let cmd = Cmd::new("redis-benchmark")
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(bench.args.iter().copied());
        match cmd.run_captured(root, false, RUN_LIMIT) {
            Ok(out) if out.status.success() && !out.timed_out => {
                t.runs += 1;
                t.requests += bench.requests;
                t.incrs += bench.incrs;
                t.connections += bench.connections;
            }
            Ok(out) => {
                let last = out
                    .lines
                    .iter()
                    .rev()
                    .flat_map(|l| l.split('\r'))
                    .map(str::trim)
                    .find(|l| !l.is_empty() && !l.contains("rps="))
                    .unwrap_or("")
                    .to_owned();
                t.error = Some(if out.timed_out {
                    format!(
                        "run {} stalled: not done after {} s",
                        t.runs + 1,
                        RUN_LIMIT.as_secs()
                    )
                } else {
                    format!("run {} failed ({}): {last}", t.runs + 1, out.status)
                });
                stop.store(true, Ordering::Relaxed);
                break;
            }
            Err(e) => {
                t.error = Some(format!("cannot run {}: {e}", cmd.display()));
                stop.store(true, Ordering::Relaxed);
                break;
            }
        }
    }
    t
}

/// The reconnecting client: a new connection per `SET soak:key:i i` + `INCR soak:acks`, every
/// tenth one reading key `i / 2` back, until `until` or `stop`.
fn reconnect_loop(port: u16, until: Instant, stop: &AtomicBool) -> Totals {
    let mut t = Totals {
        client: "reconnecting client (a connection per SET + INCR)".to_owned(),
        reconnecting: true,
        port,
        ..Totals::default()
    };
    let step = |i: u64, t: &mut Totals| -> Result<(), String> {
        let mut c = Client::connect(port, Instant::now() + Duration::from_secs(30))?;
        t.connections += 1;
        let key = format!("soak:key:{i}");
        c.expect(&["SET", &key, &i.to_string()], Reply::Simple("OK".into()))?;
        match c.call(&["INCR", "soak:acks"])? {
            Reply::Int(_) => t.incrs += 1,
            other => return Err(format!("INCR soak:acks: got {other:?}")),
        }
        t.requests += 2;
        if i % 10 == 9 {
            let back = i / 2;
            c.expect(
                &["GET", &format!("soak:key:{back}")],
                Reply::bulk(&back.to_string()),
            )?;
            t.requests += 1;
        }
        Ok(())
    };
    let mut i = 0;
    while Instant::now() < until && !stop.load(Ordering::Relaxed) {
        if let Err(e) = step(i, &mut t) {
            t.error = Some(format!("iteration {i}: {e}"));
            stop.store(true, Ordering::Relaxed);
            break;
        }
        t.runs += 1;
        i += 1;
    }
    t
}

/// The integer value of `key` on the server at `port`.
fn int_value(c: &mut Client, key: &str) -> Result<i64, String> {
    match c.call(&["GET", key])? {
        Reply::Bulk(Some(v)) => String::from_utf8_lossy(&v)
            .parse()
            .map_err(|_| format!("GET {key}: not a number: {:?}", String::from_utf8_lossy(&v))),
        Reply::Bulk(None) => Ok(0),
        other => Err(format!("GET {key}: got {other:?}")),
    }
}

/// Reads back what the clients of one server left: the benchmarks' counter, the reconnecting
/// client's counter and every key it wrote. `Ok` lines say what matched; `Err` what did not.
fn read_back(port: u16, totals: &[&Totals]) -> Result<Vec<String>, String> {
    let mut c = Client::connect(port, Instant::now() + Duration::from_secs(120))?;
    let mut lines = Vec::new();
    let benched: u64 = totals
        .iter()
        .filter(|t| !t.reconnecting)
        .map(|t| t.incrs)
        .sum();
    let counter = int_value(&mut c, "counter:__rand_int__")?;
    if counter != benched as i64 {
        return Err(format!(
            "port {port}: counter:__rand_int__ is {counter} after {benched} acknowledged INCRs"
        ));
    }
    lines.push(format!(
        "port {port}: counter:__rand_int__ = {counter}, the benchmarks' acknowledged INCRs"
    ));
    let Some(rc) = totals.iter().find(|t| t.reconnecting) else {
        return Ok(lines);
    };
    let acks = int_value(&mut c, "soak:acks")?;
    if acks != rc.incrs as i64 {
        return Err(format!(
            "port {port}: soak:acks is {acks} after {} acknowledged INCRs",
            rc.incrs
        ));
    }
    // Every key of a completed iteration (an iteration that failed failed the soak before
    // the read-back).
    let keys = rc.runs;
    let mut i = 0;
    while i < keys {
        let end = (i + READ_BATCH as u64).min(keys);
        let batch: Vec<u8> = (i..end)
            .flat_map(|k| encode(&["GET", &format!("soak:key:{k}")]))
            .collect();
        c.send(&batch)?;
        for k in i..end {
            let want = Reply::bulk(&k.to_string());
            let got = c.reply()?;
            if got != want {
                return Err(format!(
                    "port {port}: soak:key:{k}: expected {want:?}, got {got:?}"
                ));
            }
        }
        i = end;
    }
    lines.push(format!(
        "port {port}: soak:acks = {acks} and all {keys} soak:key:i read back as written"
    ));
    Ok(lines)
}

/// Soaks the network image `elf` of `arch` with `lock` for `duration`.
pub fn run(root: &Path, arch: Arch, elf: &Path, lock: Lock, duration: Duration) -> Soak {
    let machine = super::redis::machine_for(arch);
    let mut soak = Soak {
        arch: qemu::arch_name(arch).to_owned(),
        board: machine.name().to_owned(),
        lock: lock.name().to_owned(),
        network: qemu_runner::net::Network::Passt,
        seconds: 0.0,
        clients: Vec::new(),
        readback: Vec::new(),
        errors: Vec::new(),
    };
    let (mut server, target) = match super::redis::boot_ours(root, arch, elf, lock, CORES) {
        Ok(booted) => booted,
        Err(e) => {
            soak.errors.push(format!("boot: {e}"));
            return soak;
        }
    };
    soak.network = server.network;
    let started = Instant::now();
    let until = started + duration;
    let stop = AtomicBool::new(false);
    println!(
        "bench: soak {} {}: {} clients on each of {} servers for {} (over {})",
        soak.arch,
        soak.lock,
        BENCHES.len() + 1,
        target.ports.len(),
        host_env::progress::human(duration),
        server.network.describe()
    );
    // Once a minute: how long it has run and how long is left.
    let clients: Vec<Totals> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for &port in &target.ports {
            for bench in &BENCHES {
                let stop = &stop;
                handles.push(s.spawn(move || bench_loop(root, bench, port, until, stop)));
            }
            let stop = &stop;
            handles.push(s.spawn(move || reconnect_loop(port, until, stop)));
        }
        s.spawn(|| {
            let minute = Duration::from_secs(60);
            while Instant::now() + minute < until && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(minute);
                if !stop.load(Ordering::Relaxed) {
                    println!(
                        "bench: soak {}: {} so far, {} left",
                        qemu::arch_name(arch),
                        host_env::progress::human(started.elapsed()),
                        host_env::progress::human(until.saturating_duration_since(Instant::now()))
                    );
                }
            }
        });
        handles
            .into_iter()
            .map(|h| h.join().expect("soak client thread panicked"))
            .collect()
    });
    soak.seconds = started.elapsed().as_secs_f64();
    for t in &clients {
        if let Some(e) = &t.error {
            soak.errors
                .push(format!("{} on port {}: {e}", t.client, t.port));
        }
    }
    if soak.errors.is_empty() {
        for &port in &target.ports {
            let mine: Vec<&Totals> = clients.iter().filter(|t| t.port == port).collect();
            match read_back(port, &mine) {
                Ok(lines) => soak.readback.extend(lines),
                Err(e) => soak.errors.push(format!("read-back: {e}")),
            }
        }
    }
    if !soak.errors.is_empty() {
        server.tail();
    }
    soak.clients = clients;
    soak
}

/// The soaks as JSON.
pub fn records(soaks: &[Soak]) -> Vec<Value> {
    soaks
        .iter()
        .map(|s| {
            json!({
                "arch": s.arch,
                "board": s.board,
                "lock": s.lock,
                "seconds": s.seconds,
                "requests": s.requests(),
                "connections": s.connections(),
                "clients": s.clients.iter().map(|c| json!({
                    "client": c.client,
                    "port": c.port,
                    "runs": c.runs,
                    "requests": c.requests,
                    "connections": c.connections,
                    "incrs": c.incrs,
                    "error": c.error,
                })).collect::<Vec<_>>(),
                "readback": s.readback,
                "errors": s.errors,
                "passed": s.errors.is_empty(),
            })
        })
        .collect()
}

/// The soak's section of `report.md`.
pub fn report(soaks: &[Soak], duration: Duration, network: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Soak\n\n{} of mixed clients against each core's server of a {CORES}-core guest, \
         over {network}: `redis-benchmark -c 50 -n 20000 -t set,get,incr` (every test opens \
         its 50 connections at once), `redis-benchmark -c 8 -P 32 -n 51200 -t \
         set,get,incr,hset,mset`, and a client that opens a new connection for every SET + \
         INCR, each in a loop; then every acknowledged write read back.\n",
        host_env::progress::human(duration)
    );
    let _ = writeln!(
        md,
        "| arch | board | lock | seconds | requests | connections | requests/s | result |\n\
         |---|---|---|---:|---:|---:|---:|---|"
    );
    for s in soaks {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.0} | {} | {} | {:.0} | {} |",
            s.arch,
            s.board,
            s.lock,
            s.seconds,
            s.requests(),
            s.connections(),
            s.requests() as f64 / s.seconds.max(1e-9),
            if s.errors.is_empty() {
                "passed"
            } else {
                "FAILED"
            }
        );
    }
    for s in soaks {
        let _ = writeln!(md, "\n### {} {}\n", s.arch, s.lock);
        let _ = writeln!(
            md,
            "| client | port | runs | requests | connections | INCRs |\n|---|---:|---:|---:|---:|---:|"
        );
        for c in &s.clients {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                c.client, c.port, c.runs, c.requests, c.connections, c.incrs
            );
        }
        md.push('\n');
        for line in &s.readback {
            let _ = writeln!(md, "- read back: {line}");
        }
        for e in &s.errors {
            let _ = writeln!(md, "- ERROR: {e}");
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_benchmarks_totals_follow_their_options() {
        for b in &BENCHES {
            let value = |flag: &str| -> u64 {
                let i = b.args.iter().position(|a| *a == flag).unwrap();
                b.args[i + 1].parse().unwrap()
            };
            let tests = b.args[b.args.iter().position(|a| *a == "-t").unwrap() + 1]
                .split(',')
                .count() as u64;
            assert_eq!(b.requests, value("-n") * tests, "{}", b.name);
            assert_eq!(b.connections, value("-c") * tests, "{}", b.name);
            assert_eq!(b.incrs, value("-n"), "{}: one INCR test", b.name);
            assert!(
                !b.args.contains(&"-r"),
                "{}: -r would spread the INCRs",
                b.name
            );
            // Whole rounds of -P per connection: redis-benchmark sends exactly -n.
            let pipeline = if b.args.contains(&"-P") {
                value("-P")
            } else {
                1
            };
            assert_eq!(value("-n") % (value("-c") * pipeline), 0, "{}", b.name);
        }
    }

    #[test]
    fn the_report_says_what_failed() {
        let soak = Soak {
            arch: "x86_64".into(),
            board: "microvm".into(),
            lock: "clh".into(),
            network: qemu_runner::net::Network::Passt,
            seconds: 600.0,
            clients: vec![Totals {
                client: "c".into(),
                reconnecting: false,
                port: 1,
                runs: 2,
                requests: 120,
                connections: 300,
                incrs: 40,
                error: None,
            }],
            readback: vec!["port 1: ok".into()],
            errors: vec!["read-back: port 1: counter is 39".into()],
        };
        let md = report(
            std::slice::from_ref(&soak),
            Duration::from_secs(600),
            "passt",
        );
        assert!(
            md.contains("| x86_64 | microvm | clh | 600 | 120 | 300 | 0 | FAILED |"),
            "{md}"
        );
        assert!(
            md.contains("- ERROR: read-back: port 1: counter is 39"),
            "{md}"
        );
        let j = records(&[soak]);
        assert_eq!(j[0]["passed"], false);
        assert_eq!(j[0]["requests"], 120);
    }
}
