//! `cargo xtask qemu --net`: boots the network server (`mode=net`, `servers::net`: the NIC
//! driver on core 0, a stack and key-value server on every core) with a NIC (virtio-net; on
//! sabrelite the i.MX6's own ENET, QEMU's `imx.enet`), the guest ports 6379, 6380, ... (core k's server on 6379 + k) forwarded to host ports
//! on 127.0.0.1, and either serves until Ctrl-C or `--timeout`, runs a `--client` command with
//! the ports in its environment, or (`--check`) drives a scripted RESP session from the host and
//! stops.
//!
//! The session is a small RESP2 client written here. With several cores, core 1's server first
//! (and so on): 100 pipelined SETs, a store of its own, its `INFO` naming its stack. Then core
//! 0's: PING, SET/GET, 100 pipelined SETs then 100 pipelined GETs, INCR and INCRBY, an unknown
//! command, a second connection open at the same time as the first, sharing the store, a
//! malformed request (a protocol error, then the server closes), a client leaving in the middle
//! of a request, and as many connections as the guest has sockets plus one, which must be
//! refused rather than hang. Then the real `redis-cli` (Debian's redis-tools, installed with
//! the QEMU packages for `--net`) runs PING, SET, GET, INCRBY and HSET, each on a connection of
//! its own. QEMU is killed at the end whatever happens ([`Qemu`]'s `Drop`). The machines with
//! virtio-mmio transports run it with virtio-net (x86_64 `-M microvm`, ARM `-M virt`), and
//! ARM `-M sabrelite` with its i.MX6 ENET (the guest's `servers::net::enet` driver).
//!
//! Two ways to the host (`--network`):
//! - `passt`, the default: the passt process (Debian package), which QEMU reaches over a UNIX
//!   socket (`-netdev stream`, QEMU 7.2 and later). It listens on the host ports itself and
//!   gives the guest the addresses of QEMU's user network (10.0.2.15/24, gateway 10.0.2.2), so
//!   the guest needs no configuration of its own.
//! - `user`: QEMU's user network (libslirp, built into QEMU), the fallback when passt is not
//!   installed and cannot be, or does not start; the run says so. libslirp listens on each
//!   forwarded host port with a backlog of one (`listen(s, 1)` in its `tcp_listen`), so when a
//!   client opens many connections at once (`redis-benchmark -c 50`) the host kernel's accept
//!   queue of that socket overflows, the dropped SYNs are retried after 1, 3, 7, 15 ... s, and
//!   the client stalls near zero requests a second. `docs/network.md` shows the backlog and
//!   the overflow counter of such a run; since the limit is the host side's, the Linux + Redis
//!   baseline meets it too, which is why every network step and the redis suite run over
//!   passt.
//!
//! Either way the host `connect` succeeds before the guest has seen anything (the host side
//! accepts on the guest's behalf), so readiness is the guest's `net: listening` line, and
//! every read has a deadline.
//!
//! `redis-benchmark -c 50` once failed with "Connection reset by peer" on both networks. A
//! capture (`-object filter-dump`) showed the resets were the guest's: between its tests
//! redis-benchmark closes 50 connections and opens 50 new ones at once, and with 64 sockets the
//! closing ones (last ACK still to come) left too few listening. The server has 128 per core.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitCode};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::qemu::{qemu_cmd, Machine, QemuArgs};

/// The guest port the server listens on (`servers::net::PORT`).
pub const GUEST_PORT: u16 = 6379;
/// Seconds the guest may take to boot and print its `net: listening` line on an idle host
/// with at least as many cores as the guest; [`boot_deadline`] scales it.
const BOOT_SECS: u64 = 30;
/// The longest [`boot_deadline`] waits, however loaded the host.
const BOOT_SECS_MAX: u64 = 300;
/// Seconds one reply may take.
const REPLY_SECS: u64 = 10;
/// Keys of the pipelined batch.
const BATCH: usize = 100;
/// Connections the guest serves at once (`servers::net::SOCKETS`): one more is refused.
const GUEST_SOCKETS: usize = 128;

/// QEMU options for the network device: QEMU's user network with host ports `port`,
/// `port + 1`, ... on 127.0.0.1 forwarded to the `stacks` per-core servers' guest ports 6379,
/// 6380, ..., and `machine`'s NIC ([`nic_args`]).
pub fn qemu_args(port: u16, stacks: u32, machine: Machine) -> Vec<String> {
    qemu_args_forwarding(&server_forwards(port, stacks), machine)
}

/// [`qemu_args`] with any number of (host port, guest port) forwards.
pub fn qemu_args_forwarding(forwards: &[(u16, u16)], machine: Machine) -> Vec<String> {
    let mut netdev = "user,id=n0".to_owned();
    for (host, guest) in forwards {
        netdev.push_str(&format!(",hostfwd=tcp:127.0.0.1:{host}-:{guest}"));
    }
    let mut args = vec!["-netdev".into(), netdev];
    args.extend(nic_args(machine));
    args
}

/// The NIC attached to the user network `n0`: a virtio-net device on a virtio-mmio transport
/// (microvm and ARM virt; the board's options already ask for modern virtio-mmio), or, on
/// sabrelite, the i.MX6's own ENET (QEMU's `imx.enet`, built into the SoC model: it takes the
/// first `-net nic`).
pub fn nic_args(machine: Machine) -> Vec<String> {
    match machine {
        Machine::Sabrelite => vec!["-net".into(), "nic,netdev=n0,model=imx.enet".into()],
        _ => vec!["-device".into(), "virtio-net-device,netdev=n0".into()],
    }
}

/// How the guest's NIC reaches the host (`cargo xtask qemu --net --network ...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Network {
    /// passt (Debian package `passt`): a user-mode network process that QEMU talks to over a
    /// UNIX socket (`-netdev stream`); it forwards the host ports itself. The default.
    Passt,
    /// QEMU's user network (slirp, built into QEMU): its port forwarding holds one pending
    /// connection per port, so many connections opened at once stall.
    User,
}

impl Network {
    /// The network as the console names it.
    pub fn describe(self) -> &'static str {
        match self {
            Network::Passt => "passt",
            Network::User => "QEMU's user network",
        }
    }
}

/// What the fallback to QEMU's user network cannot hold, said whenever it is used.
pub const USER_NETWORK_LIMIT: &str = "QEMU's user network (libslirp) listens on each forwarded \
    port with a backlog of one connection, so clients that open many connections at once \
    (redis-benchmark -c 50, YCSB with many threads) can stall for minutes and be reset; \
    install passt (`sudo apt-get install passt`) for the default network";

/// The UNIX socket between passt and QEMU for host port `port` (in the temporary directory:
/// passt, started as root, drops to user `nobody`).
pub fn passt_socket(port: u16) -> PathBuf {
    std::env::temp_dir().join(format!("locked-in-passt-{port}.socket"))
}

/// QEMU options for the network device on `machine`, on passt's socket for host port `port`.
pub fn qemu_args_passt(port: u16, machine: Machine) -> Vec<String> {
    let mut args = vec![
        "-netdev".into(),
        format!(
            "stream,id=n0,server=off,addr.type=unix,addr.path={}",
            passt_socket(port).display()
        ),
    ];
    args.extend(nic_args(machine));
    args
}

/// The (host port, guest port) pairs of `stacks` servers: host `port + k` to guest
/// [`GUEST_PORT`]` + k`.
pub fn server_forwards(port: u16, stacks: u32) -> Vec<(u16, u16)> {
    (0..stacks.max(1) as u16)
        .map(|k| (port + k, GUEST_PORT + k))
        .collect()
}

/// passt's command line: the guest's address, prefix and gateway as QEMU's user network has
/// them (the guests' static configuration), IPv4 only, no DHCP, and each (host port, guest
/// port) of `forwards` on 127.0.0.1 (one `-t` each), on the socket of `forwards`' first host
/// port; in the foreground, quiet, and gone when QEMU disconnects (`-1`).
pub fn passt_cmd(forwards: &[(u16, u16)]) -> host_env::proc::Cmd {
    let socket = passt_socket(forwards.first().map_or(0, |f| f.0));
    let mut cmd = host_env::proc::Cmd::new("passt").args([
        "-f",
        "-q",
        "-1",
        "-4",
        "--no-dhcp",
        "-s",
        &socket.display().to_string(),
        "-a",
        "10.0.2.15",
        "-n",
        "24",
        "-g",
        "10.0.2.2",
    ]);
    for (host, guest) in forwards {
        cmd = cmd.args(["-t".to_owned(), format!("127.0.0.1/{host}:{guest}")]);
    }
    cmd
}

/// A running passt: killed on drop, its socket removed.
pub struct Passt {
    child: Child,
    socket: PathBuf,
}

impl Passt {
    /// Starts passt for `forwards` (its socket named by the first host port) and waits (at
    /// most 5 s) for its socket.
    pub fn start(root: &Path, forwards: &[(u16, u16)]) -> Result<Passt, String> {
        let socket = passt_socket(forwards.first().map_or(0, |f| f.0));
        let _ = std::fs::remove_file(&socket);
        let cmd = passt_cmd(forwards);
        let child = cmd
            .spawn_quiet(root)
            .map_err(|e| format!("could not run {}: {e}", cmd.display()))?;
        let mut passt = Passt { child, socket };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !passt.socket.exists() {
            if let Ok(Some(status)) = passt.child.try_wait() {
                return Err(format!("{} exited ({status})", cmd.display()));
            }
            if Instant::now() > deadline {
                return Err(format!("{} made no socket within 5 s", cmd.display()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // The socket file appears at bind(); listen() follows at once.
        std::thread::sleep(Duration::from_millis(50));
        Ok(passt)
    }
}

impl Drop for Passt {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// A free TCP port on 127.0.0.1 (the kernel picks one; it is free again when this returns,
/// so QEMU can usually bind it).
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// The first of `n` consecutive free TCP ports on 127.0.0.1 (each bound once to check, free
/// again when this returns).
pub fn free_ports(n: u32) -> io::Result<u16> {
    let n = n.max(1) as u16;
    for _ in 0..100 {
        let base = free_port()?;
        if base.checked_add(n).is_none() {
            continue;
        }
        let held: Result<Vec<TcpListener>, _> = (1..n)
            .map(|k| TcpListener::bind((Ipv4Addr::LOCALHOST, base + k)))
            .collect();
        if held.is_ok() {
            return Ok(base);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        format!("no {n} consecutive free ports found in 100 tries"),
    ))
}

/// A running QEMU whose console lines arrive on a channel (and are echoed); killed on drop.
struct Qemu {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    echo: bool,
}

impl Qemu {
    fn spawn(cmd: &host_env::proc::Cmd, root: &Path, echo: bool) -> io::Result<Qemu> {
        let (child, lines) = cmd.spawn_lines(root)?;
        Ok(Qemu {
            child,
            lines,
            seen: Vec::new(),
            echo,
        })
    }

    /// Waits until a console line satisfies `ready` (`Ok`), or one satisfies `failed`, QEMU
    /// exits or `deadline` passes (`Err` says which).
    fn wait_for(
        &mut self,
        ready: impl Fn(&str) -> bool,
        failed: impl Fn(&str) -> bool,
        deadline: Instant,
    ) -> Result<String, String> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    // The console, echoed as it arrives.
                    if self.echo {
                        println!("{line}");
                    }
                    self.seen.push(line.clone());
                    if ready(&line) {
                        return Ok(line);
                    }
                    if failed(&line) {
                        return Err(format!("the guest failed: {line}"));
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => return Err("timed out".into()),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().ok().and_then(|s| s.code());
                    return Err(format!("QEMU exited (status {status:?})"));
                }
            }
        }
    }

    /// Prints the last console lines.
    fn tail(&mut self) {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        crate::qemu::print_tail("net", &self.seen);
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        // Already gone is fine: either way it is reaped.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A console line that means the server will not come up.
fn guest_failed(line: &str) -> bool {
    line.contains("net: FAILED") || line.contains("PANIC") || line.contains("!!! ")
}

/// A booted network server: QEMU (killed on drop) and the host ports that reach the guest's
/// servers.
pub struct Server {
    qemu: Qemu,
    /// The network the guest's NIC is on.
    pub network: Network,
    /// passt, on that network (dropped after QEMU).
    _passt: Option<Passt>,
    /// The host port forwarded to the guest's [`GUEST_PORT`] (core 0's server); core `k`'s
    /// is `port + k`.
    pub port: u16,
    /// The servers (one per core for the kernel's image).
    pub stacks: u32,
    /// When QEMU was started.
    pub started: Instant,
}

impl Server {
    /// The host ports of the servers, core 0's first.
    pub fn ports(&self) -> Vec<u16> {
        (0..self.stacks as u16).map(|k| self.port + k).collect()
    }

    /// Prints the last console lines (after a failure).
    pub fn tail(&mut self) {
        self.qemu.tail();
    }
}

/// How long a guest may take to print its `net: listening` line: `base` on an idle host with
/// at least as many cores as the guest, scaled by the host's load (`load1`, the one-minute
/// load average, per host core: a loaded host gives each QEMU thread less time) and, under
/// multi-threaded TCG, by how many guest cores share each host core (a guest core whose host
/// thread is descheduled while it holds a lock stalls the others). At most [`BOOT_SECS_MAX`]
/// (or `base`, if that is larger).
pub fn boot_deadline(
    base: Duration,
    smp: u32,
    host_cores: usize,
    load1: f64,
    single_thread_tcg: bool,
) -> Duration {
    let host = host_cores.max(1) as f64;
    let load = 1.0 + load1.max(0.0) / host;
    let oversubscribed = if single_thread_tcg {
        1.0
    } else {
        (f64::from(smp.max(1)) / host).max(1.0)
    };
    let scaled = base.mul_f64(load * oversubscribed);
    scaled.min(Duration::from_secs(BOOT_SECS_MAX).max(base))
}

/// The one-minute load average (`/proc/loadavg`; 0 where there is none).
pub fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// The host's cores.
pub fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// What to try when a guest of `smp` cores boots slowly on this host, or `None` when there is
/// nothing better to try.
pub fn slow_boot_advice(smp: u32, host_cores: usize, single_thread_tcg: bool) -> Option<String> {
    (smp as usize > host_cores && !single_thread_tcg).then(|| {
        format!(
            "{smp} guest cores on {host_cores} host cores under multi-threaded TCG boot slowly \
             (a guest core whose host thread is descheduled holds up the others): try \
             `--single-thread-tcg` (all guest cores on one host thread) or `--smp {host_cores}`"
        )
    })
}

/// The way the guest reaches the host, and passt when that is it. `requested` is `--network`:
/// passt or the user network as asked (passt installed when missing, and its failure to start
/// an error); `None`, the default, is passt, or QEMU's user network when passt cannot be
/// installed or does not start, which is said together with what the user network cannot hold.
pub fn choose_network(
    root: &Path,
    requested: Option<Network>,
    forwards: &[(u16, u16)],
) -> Result<(Network, Option<Passt>), String> {
    let passt = || {
        host_env::deps::ensure("passt (the default network)", &[host_env::deps::PASST])?;
        Passt::start(root, forwards)
    };
    match requested {
        Some(Network::User) => Ok((Network::User, None)),
        Some(Network::Passt) => Ok((Network::Passt, Some(passt()?))),
        None => match passt() {
            Ok(p) => Ok((Network::Passt, Some(p))),
            Err(why) => {
                eprintln!(
                    "net: falling back to QEMU's user network: passt is not usable here ({why}). \
                     {USER_NETWORK_LIMIT}."
                );
                Ok((Network::User, None))
            }
        },
    }
}

/// Boots the network image at `elf` with `args` and waits for the server's `net: listening`
/// line, at most [`boot_deadline`] of [`BOOT_SECS`] (or the `--timeout`, if shorter). One
/// server per core: host ports `args.port`, `args.port + 1`, ... (free ones unless `--port`
/// names the first), over the network [`choose_network`] picks. `echo`: the console is echoed
/// as it arrives.
pub fn start(root: &Path, args: &QemuArgs, elf: &Path, echo: bool) -> Result<Server, String> {
    let port = args
        .port
        .map_or_else(|| free_ports(args.smp), Ok)
        .map_err(|e| format!("no free host port: {e}"))?;
    let mut args = args.clone();
    args.port = Some(port);
    let (network, passt) = choose_network(root, args.network, &server_forwards(port, args.smp))?;
    args.network = Some(network);
    let cores = host_cores();
    let deadline = boot_deadline(
        Duration::from_secs(BOOT_SECS),
        args.smp,
        cores,
        load_average(),
        args.single_thread_tcg,
    );
    // The boot may take the deadline, or the whole `--timeout` if that is shorter.
    let boot = deadline.min(
        args.timeout
            .map(Duration::from_secs)
            .unwrap_or(Duration::MAX),
    );
    start_cmd(
        root,
        &qemu_cmd(&args, elf),
        Boot {
            port,
            stacks: args.smp,
            limit: boot,
            advice: slow_boot_advice(args.smp, cores, args.single_thread_tcg),
            passt,
            echo,
        },
    )
}

/// How [`start_cmd`] boots a guest.
pub struct Boot {
    /// The host port of the guest's first server; the `k`th is `port + k`.
    pub port: u16,
    /// The guest's servers.
    pub stacks: u32,
    /// How long the guest may take to print `net: listening`.
    pub limit: Duration,
    /// What to try when the boot is slow, said while waiting and on a timeout.
    pub advice: Option<String>,
    /// passt, when the guest's NIC is on it (kept until the server is dropped).
    pub passt: Option<Passt>,
    /// Echo the console as it arrives.
    pub echo: bool,
}

/// How often a slow boot says it is still waiting.
const BOOT_PROGRESS: Duration = Duration::from_secs(10);

/// Starts the QEMU command `cmd` and waits for its guest's `net: listening` line, at most
/// `boot.limit`; every [`BOOT_PROGRESS`] without it, says how long it has waited and, where
/// there is some, what to try.
pub fn start_cmd(root: &Path, cmd: &host_env::proc::Cmd, boot: Boot) -> Result<Server, String> {
    if boot.echo {
        eprintln!("net: {}", cmd.display());
    }
    let started = Instant::now();
    let mut qemu =
        Qemu::spawn(cmd, root, boot.echo).map_err(|e| format!("could not run QEMU: {e}"))?;
    let deadline = started + boot.limit;
    loop {
        let step = (Instant::now() + BOOT_PROGRESS).min(deadline);
        match qemu.wait_for(|l| l.contains("net: listening on"), guest_failed, step) {
            Ok(_) => break,
            Err(why) if why == "timed out" && Instant::now() < deadline => {
                eprintln!(
                    "net: the server is not up after {} s (host load {:.1} on {} cores); \
                     waiting up to {} s{}",
                    started.elapsed().as_secs(),
                    load_average(),
                    host_cores(),
                    boot.limit.as_secs(),
                    boot.advice
                        .as_deref()
                        .map(|a| format!(" ({a})"))
                        .unwrap_or_default()
                );
            }
            Err(why) => {
                qemu.tail();
                return Err(format!(
                    "the server did not come up within {} s: {why}{}",
                    boot.limit.as_secs(),
                    boot.advice
                        .as_deref()
                        .filter(|_| why == "timed out")
                        .map(|a| format!("; {a}"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    Ok(Server {
        qemu,
        network: if boot.passt.is_some() {
            Network::Passt
        } else {
            Network::User
        },
        _passt: boot.passt,
        port: boot.port,
        stacks: boot.stacks,
        started,
    })
}

/// Runs `cargo xtask qemu --net` with the image at `elf`.
pub fn run(root: &Path, args: &QemuArgs, elf: &Path) -> ExitCode {
    let server = match start(root, args, elf, true) {
        Ok(s) => s,
        Err(why) => {
            eprintln!("net: FAILED: {why}");
            return ExitCode::FAILURE;
        }
    };
    let ports = server.ports();
    let Server {
        mut qemu,
        network,
        _passt,
        port,
        stacks,
        started: start,
    } = server;
    let limit = args.timeout.map(Duration::from_secs);
    let up = start.elapsed().as_secs_f64();
    let port_list: Vec<String> = ports.iter().map(u16::to_string).collect();
    let over = format!("over {}", network.describe());
    if let Some(client) = &args.client {
        let cmd = host_env::proc::Cmd::new("sh")
            .args(["-c", client.as_str()])
            .env("REDIS_TEST_HOST", "127.0.0.1")
            .env("REDIS_TEST_PORT", port.to_string())
            .env("REDIS_TEST_PORTS", port_list.join(","));
        eprintln!(
            "net: the server is up after {up:.1} s on port {port} ({over}); running: {client}"
        );
        let limit = limit.unwrap_or(Duration::from_secs(600));
        return match cmd.run_captured(root, true, limit.saturating_sub(start.elapsed())) {
            Ok(out) if out.status.success() && !out.timed_out => {
                eprintln!(
                    "net: ok: the client command succeeded ({:.1} s)",
                    out.elapsed.as_secs_f64()
                );
                ExitCode::SUCCESS
            }
            Ok(out) => {
                eprintln!(
                    "net: FAILED: the client command {} ({:.1} s)",
                    if out.timed_out {
                        "timed out".to_owned()
                    } else {
                        out.status.to_string()
                    },
                    out.elapsed.as_secs_f64()
                );
                qemu.tail();
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("net: FAILED: could not run the client command: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.check {
        let deadline = start + limit.unwrap_or(Duration::from_secs(60));
        // The other cores' servers first: the session ends with every socket of core 0's
        // server taken and then closed, and a connection made while they close waits for
        // slirp's retransmission (seconds).
        let result = per_core_session(&ports, deadline)
            .and_then(|cores| Ok(format!("{}; {cores}", session(port, deadline)?)))
            .and_then(|ours| Ok(format!("{ours}; {}", redis_cli_session(root, port)?)));
        let secs = start.elapsed().as_secs_f64();
        return match result {
            Ok(summary) => {
                eprintln!("net: ok: {summary} (server up after {up:.1} s, {secs:.1} s in all)");
                ExitCode::SUCCESS
            }
            Err(why) => {
                eprintln!("net: FAILED: {why} ({secs:.1} s)");
                qemu.tail();
                ExitCode::FAILURE
            }
        };
    }
    let reach = if stacks == 1 {
        format!(
            "`redis-cli -p {port} ping` (127.0.0.1:{port} is the guest's 10.0.2.15:{GUEST_PORT})"
        )
    } else {
        format!(
            "one server per core, each with a store of its own: `redis-cli -p {port} ping` for \
             core 0, ... `-p {}` for core {} (127.0.0.1:{port}+k is the guest's \
             10.0.2.15:{GUEST_PORT}+k)",
            port + stacks as u16 - 1,
            stacks - 1
        )
    };
    eprintln!(
        "net: the server is up after {up:.1} s ({over}): {reach}; {}",
        match limit {
            Some(l) => format!("stopping after {} s", l.as_secs()),
            None => "stop with Ctrl-C".to_owned(),
        }
    );
    let end = limit.map_or(Instant::now() + Duration::from_secs(u64::MAX / 4), |l| {
        start + l
    });
    match qemu.wait_for(|_| false, guest_failed, end) {
        Err(why) if why == "timed out" => {
            eprintln!("net: --timeout reached, QEMU stopped");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("net: FAILED: {why}");
            qemu.tail();
            ExitCode::FAILURE
        }
        Ok(_) => unreachable!("no line is the ready line"),
    }
}

/// The real client against the server: `redis-cli` (Debian's redis-tools, which `cargo xtask
/// qemu --net` installs when missing) runs a few commands, each on a connection of its own,
/// and its output (raw, since it is not a terminal) must be what Redis would print.
fn redis_cli_session(root: &Path, port: u16) -> Result<String, String> {
    let port = port.to_string();
    let steps: [(&[&str], &str); 5] = [
        (&["PING"], "PONG"),
        (&["SET", "cli:greeting", "hello from redis-cli"], "OK"),
        (&["GET", "cli:greeting"], "hello from redis-cli"),
        (&["INCRBY", "cli:counter", "41"], "41"),
        (&["HSET", "cli:hash", "field", "value"], "1"),
    ];
    for (args, want) in steps {
        let cmd = host_env::proc::Cmd::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port])
            .args(args.iter().copied());
        let out = cmd
            .run_captured(root, false, Duration::from_secs(10))
            .map_err(|e| format!("redis-cli: {e} (install redis-tools)"))?;
        let got = out.lines.join("\n");
        if !out.status.success() || out.timed_out || got != want {
            return Err(format!(
                "redis-cli {}: expected {want:?}, got {got:?} ({}{})",
                args.join(" "),
                out.status,
                if out.timed_out { ", timed out" } else { "" }
            ));
        }
    }
    Ok(format!(
        "redis-cli: {} commands as Redis answers them",
        steps.len()
    ))
}

/// A RESP2 reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+text`.
    Simple(String),
    /// `-text`.
    Error(String),
    /// `:n`.
    Int(i64),
    /// `$n` and the bytes (`None`: `$-1`).
    Bulk(Option<Vec<u8>>),
    /// `*n` and the elements (`None`: `*-1`).
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The bulk string `s`.
    pub fn bulk(s: &str) -> Reply {
        Reply::Bulk(Some(s.as_bytes().to_vec()))
    }
}

/// One connection to the server (a small RESP2 client; every read has a deadline).
pub struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    deadline: Instant,
}

/// A command as a RESP array of bulk strings.
pub fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

impl Client {
    /// Connects to 127.0.0.1:`port`; no read waits past `deadline`.
    pub fn connect(port: u16, deadline: Instant) -> Result<Client, String> {
        let s = TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .map_err(|e| format!("connecting to 127.0.0.1:{port}: {e}"))?;
        s.set_nodelay(true).map_err(|e| e.to_string())?;
        let writer = s.try_clone().map_err(|e| e.to_string())?;
        Ok(Client {
            reader: BufReader::new(s),
            writer,
            deadline,
        })
    }

    /// Sends `bytes` (commands, possibly many: a pipeline).
    pub fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.writer
            .write_all(bytes)
            .map_err(|e| format!("sending: {e}"))
    }

    /// Reads one reply, waiting at most [`REPLY_SECS`] (and never past the deadline).
    pub fn reply(&mut self) -> Result<Reply, String> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("the session's time is up".into());
        }
        let wait = left.min(Duration::from_secs(REPLY_SECS));
        self.reader
            .get_ref()
            .set_read_timeout(Some(wait))
            .map_err(|e| e.to_string())?;
        read_reply(&mut self.reader).map_err(|e| match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                format!("no reply within {} s", wait.as_secs())
            }
            _ => format!("reading a reply: {e}"),
        })
    }

    /// Sends one command and reads its reply.
    pub fn call(&mut self, args: &[&str]) -> Result<Reply, String> {
        self.send(&encode(args))?;
        self.reply()
    }

    /// Sends `args`, requiring `want` back.
    pub fn expect(&mut self, args: &[&str], want: Reply) -> Result<(), String> {
        let got = self.call(args)?;
        if got == want {
            Ok(())
        } else {
            Err(format!(
                "{}: expected {want:?}, got {got:?}",
                args.join(" ")
            ))
        }
    }
}

fn read_line(r: &mut impl BufRead) -> io::Result<String> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if !line.ends_with(b"\r\n") {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "connection closed or line without CRLF: {:?}",
                String::from_utf8_lossy(&line)
            ),
        ));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// Reads one RESP2 reply.
fn read_reply(r: &mut impl BufRead) -> io::Result<Reply> {
    let line = read_line(r)?;
    let (kind, rest) = line.split_at_checked(1).unwrap_or(("", ""));
    let int = |s: &str| {
        s.parse::<i64>()
            .map_err(|_| bad(format!("bad number in {line:?}")))
    };
    Ok(match kind {
        "+" => Reply::Simple(rest.to_owned()),
        "-" => Reply::Error(rest.to_owned()),
        ":" => Reply::Int(int(rest)?),
        "$" => match int(rest)? {
            -1 => Reply::Bulk(None),
            n if n >= 0 => {
                let mut data = vec![0; n as usize + 2];
                r.read_exact(&mut data)?;
                if !data.ends_with(b"\r\n") {
                    return Err(bad("bulk string without CRLF".into()));
                }
                data.truncate(n as usize);
                Reply::Bulk(Some(data))
            }
            n => return Err(bad(format!("bulk length {n}"))),
        },
        "*" => match int(rest)? {
            -1 => Reply::Array(None),
            n if n >= 0 => Reply::Array(Some(
                (0..n).map(|_| read_reply(r)).collect::<io::Result<_>>()?,
            )),
            n => return Err(bad(format!("array length {n}"))),
        },
        _ => return Err(bad(format!("not a RESP reply: {line:?}"))),
    })
}

/// A new connection that the server answers PING on. The server frees a socket a moment
/// after its client closed (it sees the FIN, closes its side, then listens again), so a reset
/// is retried for up to a second.
fn served(port: u16, deadline: Instant) -> Result<Client, String> {
    let mut last = String::new();
    for _ in 0..50 {
        let mut c = Client::connect(port, deadline)?;
        match c.call(&["PING"]) {
            Ok(Reply::Simple(p)) if p == "PONG" => return Ok(c),
            Ok(r) => return Err(format!("PING: expected PONG, got {r:?}")),
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("no connection served: {last}"))
}

/// A connection for reading the server's `INFO` (the benchmark's utilisation sampler).
pub struct InfoReader(Client);

impl InfoReader {
    /// Connects to the server on host port `port` (retrying while a socket is being freed).
    pub fn connect(port: u16) -> Result<InfoReader, String> {
        served(port, Instant::now() + Duration::from_secs(REPLY_SECS)).map(InfoReader)
    }

    /// The `INFO` text. Each call has [`REPLY_SECS`] of its own: the sampler reads for as long
    /// as a client runs, which may be far longer.
    pub fn info(&mut self) -> Result<String, String> {
        self.0.deadline = Instant::now() + Duration::from_secs(REPLY_SECS);
        match self.0.call(&["INFO"])? {
            Reply::Bulk(Some(text)) => Ok(String::from_utf8_lossy(&text).into_owned()),
            other => Err(format!("INFO: expected a bulk string, got {other:?}")),
        }
    }
}

/// The scripted session against the server on host port `port`; a summary, or the first
/// wrong or missing reply.
fn session(port: u16, deadline: Instant) -> Result<String, String> {
    let t = Instant::now();
    let ok = || Reply::Simple("OK".into());
    let mut a = Client::connect(port, deadline)?;
    a.expect(&["PING"], Reply::Simple("PONG".into()))
        .map_err(|e| format!("first connection: {e}"))?;
    let first = t.elapsed();
    // An empty store, whatever ran before (the redis-benchmark run leaves its keys).
    a.expect(&["FLUSHALL"], ok())?;
    a.expect(&["SET", "greeting", "hello, world"], ok())?;
    a.expect(&["GET", "greeting"], Reply::bulk("hello, world"))?;
    a.expect(&["GET", "missing"], Reply::Bulk(None))?;

    // A pipelined batch: every SET in one write, then the replies; the same for the GETs.
    let mut batch = Vec::new();
    for i in 0..BATCH {
        batch.extend(encode(&["SET", &format!("key:{i}"), &format!("value-{i}")]));
    }
    a.send(&batch)?;
    for i in 0..BATCH {
        let r = a.reply().map_err(|e| format!("pipelined SET {i}: {e}"))?;
        if r != ok() {
            return Err(format!("pipelined SET key:{i}: expected OK, got {r:?}"));
        }
    }
    let mut batch = Vec::new();
    for i in 0..BATCH {
        batch.extend(encode(&["GET", &format!("key:{i}")]));
    }
    a.send(&batch)?;
    for i in 0..BATCH {
        let r = a.reply().map_err(|e| format!("pipelined GET {i}: {e}"))?;
        if r != Reply::bulk(&format!("value-{i}")) {
            return Err(format!("pipelined GET key:{i}: got {r:?}"));
        }
    }

    a.expect(&["INCR", "counter"], Reply::Int(1))?;
    a.expect(&["INCR", "counter"], Reply::Int(2))?;
    a.expect(&["INCRBY", "counter", "40"], Reply::Int(42))?;
    match a.call(&["NOSUCHCOMMAND", "x"])? {
        Reply::Error(e) if e.starts_with("ERR unknown command") => {}
        r => {
            return Err(format!(
                "an unknown command: expected -ERR unknown command, got {r:?}"
            ))
        }
    }
    // The connection goes on after the error.
    a.expect(&["PING"], Reply::Simple("PONG".into()))?;

    // A second connection while the first stays open: both served, one store.
    let mut b = Client::connect(port, deadline)?;
    b.expect(&["PING"], Reply::Simple("PONG".into()))
        .map_err(|e| format!("second connection: {e}"))?;
    b.expect(&["GET", "greeting"], Reply::bulk("hello, world"))?;
    b.expect(&["SET", "from-b", "2"], ok())?;
    a.expect(&["GET", "from-b"], Reply::bulk("2"))?;
    b.expect(&["INCR", "counter"], Reply::Int(43))?;
    a.expect(&["GET", "counter"], Reply::bulk("43"))?;
    b.expect(&["QUIT"], ok())?;
    // Closed on our side too, so that the server's socket is free again (a client that never
    // closes after QUIT holds it in FIN-WAIT-2).
    drop(b);
    a.expect(&["DBSIZE"], Reply::Int(BATCH as i64 + 3))?;

    // A malformed request: a protocol error, then the server closes that connection.
    let mut m = Client::connect(port, deadline)?;
    m.send(b"*2\r\n$abc\r\n")?;
    match m.reply()? {
        Reply::Error(e) if e.starts_with("ERR Protocol error") => {}
        r => {
            return Err(format!(
                "a malformed request: expected -ERR Protocol error, got {r:?}"
            ))
        }
    }
    if let Ok(r) = m.reply() {
        return Err(format!(
            "a malformed request: the connection stayed open ({r:?})"
        ));
    }
    drop(m);
    // A client that leaves in the middle of a request.
    let mut p = Client::connect(port, deadline)?;
    p.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk")?;
    drop(p);
    a.expect(&["PING"], Reply::Simple("PONG".into()))
        .map_err(|e| format!("after a client left mid-request: {e}"))?;

    // Every socket taken: one more connection is refused (reset), never queued for ever, and
    // a socket closed is listening again.
    let mut more = Vec::new();
    for i in 1..GUEST_SOCKETS {
        let c = served(port, deadline)
            .map_err(|e| format!("connection {} of {GUEST_SOCKETS}: {e}", i + 1))?;
        more.push(c);
    }
    let mut extra = Client::connect(port, deadline)?;
    match extra.call(&["PING"]) {
        Err(e) if !e.starts_with("no reply") => {}
        r => {
            return Err(format!(
                "connection {} (one more than the server's sockets): expected it refused, got \
                 {r:?}",
                GUEST_SOCKETS + 1
            ))
        }
    }
    drop(more.pop());
    served(port, deadline)
        .map_err(|e| format!("after one of the full set of connections closed: {e}"))?;
    a.expect(&["GET", "greeting"], Reply::bulk("hello, world"))?;
    Ok(format!(
        "PING, SET/GET, {BATCH} pipelined SETs and GETs, INCR/INCRBY, an unknown command, a \
         second concurrent connection, a malformed request, a client leaving mid-request and \
         {GUEST_SOCKETS} connections plus a refused one all handled right (first reply after \
         {:.0} ms, session {:.2} s)",
        first.as_secs_f64() * 1e3,
        t.elapsed().as_secs_f64()
    ))
}

/// With one server per core (`ports`, core 0's first): every other core's server answers on
/// its own port, pipelined, with a store of its own, and its `INFO` names its stack.
fn per_core_session(ports: &[u16], deadline: Instant) -> Result<String, String> {
    if ports.len() < 2 {
        return Ok("1 core's server".to_owned());
    }
    let mut zero = Client::connect(ports[0], deadline)?;
    zero.expect(&["SET", "core", "0"], Reply::Simple("OK".into()))?;
    for (k, &port) in ports.iter().enumerate().skip(1) {
        let fail = |e: String| format!("core {k}'s server (host port {port}): {e}");
        let mut c = served(port, deadline).map_err(fail)?;
        c.expect(&["FLUSHALL"], Reply::Simple("OK".into()))
            .map_err(fail)?;
        c.expect(&["GET", "core"], Reply::Bulk(None))
            .map_err(|e| fail(format!("its store is core 0's: {e}")))?;
        let mut batch = Vec::new();
        for i in 0..BATCH {
            batch.extend(encode(&[
                "SET",
                &format!("key:{i}"),
                &format!("core-{k}-{i}"),
            ]));
        }
        batch.extend(encode(&["SET", "core", &k.to_string()]));
        c.send(&batch).map_err(fail)?;
        for i in 0..=BATCH {
            match c.reply().map_err(fail)? {
                Reply::Simple(ok) if ok == "OK" => {}
                r => return Err(fail(format!("pipelined SET {i}: expected OK, got {r:?}"))),
            }
        }
        c.expect(
            &["GET", &format!("key:{}", BATCH - 1)],
            Reply::bulk(&format!("core-{k}-{}", BATCH - 1)),
        )
        .map_err(fail)?;
        c.expect(&["DBSIZE"], Reply::Int(BATCH as i64 + 1))
            .map_err(fail)?;
        match c.call(&["INFO"]).map_err(fail)? {
            Reply::Bulk(Some(text)) => {
                let text = String::from_utf8_lossy(&text);
                let want = format!("stack:{k}\r\nport:{}\r\n", GUEST_PORT as usize + k);
                if !text.contains(&want) {
                    return Err(fail(format!("INFO does not say {want:?}: {text}")));
                }
            }
            r => return Err(fail(format!("INFO: expected a bulk string, got {r:?}"))),
        }
    }
    zero.expect(&["GET", "core"], Reply::bulk("0"))
        .map_err(|e| format!("core 0's store after the other cores' SETs: {e}"))?;
    let others = match ports.len() - 1 {
        1 => "core 1's server".to_owned(),
        n => format!("the servers of cores 1..{n} each"),
    };
    Ok(format!(
        "{others} answered {BATCH} pipelined SETs on its own port with a store of its own"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_commands_as_bulk_string_arrays() {
        assert_eq!(encode(&["GET", "k"]), b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
    }

    #[test]
    fn reads_every_reply_kind() {
        let mut r: &[u8] =
            b"+OK\r\n-ERR x\r\n:42\r\n$3\r\nabc\r\n$-1\r\n*2\r\n:1\r\n$0\r\n\r\n*-1\r\n";
        assert_eq!(read_reply(&mut r).unwrap(), Reply::Simple("OK".into()));
        assert_eq!(read_reply(&mut r).unwrap(), Reply::Error("ERR x".into()));
        assert_eq!(read_reply(&mut r).unwrap(), Reply::Int(42));
        assert_eq!(read_reply(&mut r).unwrap(), Reply::bulk("abc"));
        assert_eq!(read_reply(&mut r).unwrap(), Reply::Bulk(None));
        assert_eq!(
            read_reply(&mut r).unwrap(),
            Reply::Array(Some(vec![Reply::Int(1), Reply::bulk("")]))
        );
        assert_eq!(read_reply(&mut r).unwrap(), Reply::Array(None));
        assert!(read_reply(&mut r).is_err());
    }

    #[test]
    fn forwards_the_host_port_to_the_guest_port() {
        let a = qemu_args(16379, 1, Machine::Microvm);
        assert!(a.contains(&"user,id=n0,hostfwd=tcp:127.0.0.1:16379-:6379".to_owned()));
        assert!(a.contains(&"virtio-net-device,netdev=n0".to_owned()));
        let two = qemu_args(16379, 2, Machine::Virt);
        assert!(two.contains(
            &"user,id=n0,hostfwd=tcp:127.0.0.1:16379-:6379,hostfwd=tcp:127.0.0.1:16380-:6380"
                .to_owned()
        ));
        assert_eq!(two[2..], ["-device", "virtio-net-device,netdev=n0"]);
    }

    #[test]
    fn sabrelite_uses_its_own_enet() {
        let a = qemu_args(16379, 2, Machine::Sabrelite);
        assert_eq!(
            a,
            [
                "-netdev",
                "user,id=n0,hostfwd=tcp:127.0.0.1:16379-:6379,hostfwd=tcp:127.0.0.1:16380-:6380",
                "-net",
                "nic,netdev=n0,model=imx.enet"
            ]
        );
    }

    #[test]
    fn passt_forwards_every_core_and_qemu_reaches_it_by_its_socket() {
        let one = passt_cmd(&server_forwards(16379, 1)).display();
        assert!(one.ends_with("-t 127.0.0.1/16379:6379"), "{one}");
        assert!(one.contains("-a 10.0.2.15 -n 24 -g 10.0.2.2"), "{one}");
        let two = passt_cmd(&server_forwards(16379, 2)).display();
        assert!(
            two.ends_with("-t 127.0.0.1/16379:6379 -t 127.0.0.1/16380:6380"),
            "{two}"
        );
        // Any forwards (the Linux baseline's servers and its /proc/stat port).
        let linux = passt_cmd(&[(20000, 6379), (20001, 9000)]).display();
        assert!(
            linux.ends_with("-t 127.0.0.1/20000:6379 -t 127.0.0.1/20001:9000"),
            "{linux}"
        );
        let sock = passt_socket(16379).display().to_string();
        assert!(two.contains(&format!("-s {sock}")), "{two}");
        let q = qemu_args_passt(16379, Machine::Microvm);
        assert!(q.contains(&format!(
            "stream,id=n0,server=off,addr.type=unix,addr.path={sock}"
        )));
    }

    #[test]
    fn the_boot_deadline_grows_with_load_and_oversubscription() {
        let base = Duration::from_secs(BOOT_SECS);
        // Idle, as many host cores as guest cores: the base.
        assert_eq!(boot_deadline(base, 2, 2, 0.0, false), base);
        // 4 guest cores on 2 host cores under multi-threaded TCG: twice as long; on one host
        // thread, not.
        assert_eq!(boot_deadline(base, 4, 2, 0.0, false), base * 2);
        assert_eq!(boot_deadline(base, 4, 2, 0.0, true), base);
        // A host busy with another job on each core: twice as long again.
        assert_eq!(boot_deadline(base, 4, 2, 2.0, false), base * 4);
        // Never beyond the cap, never below the base.
        assert_eq!(
            boot_deadline(base, 64, 1, 50.0, false),
            Duration::from_secs(BOOT_SECS_MAX)
        );
        let long = Duration::from_secs(BOOT_SECS_MAX * 2);
        assert_eq!(boot_deadline(long, 1, 2, 0.0, false), long);
    }

    #[test]
    fn a_slow_oversubscribed_boot_suggests_single_thread_tcg() {
        let advice = slow_boot_advice(4, 2, false).unwrap();
        assert!(advice.contains("--single-thread-tcg"), "{advice}");
        assert!(advice.contains("--smp 2"), "{advice}");
        assert_eq!(slow_boot_advice(4, 2, true), None);
        assert_eq!(slow_boot_advice(2, 2, false), None);
    }

    #[test]
    fn the_info_sampler_outlives_the_reply_deadline() {
        // A stand-in server answering INFO as often as asked, for longer than REPLY_SECS.
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut w = s;
            loop {
                // PING first (`served`), then INFOs: every request is a 1- or 2-line array.
                let Ok(cmd) = read_reply(&mut r) else { return };
                let reply: &[u8] = match cmd {
                    Reply::Array(Some(a)) if a.first() == Some(&Reply::bulk("PING")) => {
                        b"+PONG\r\n"
                    }
                    _ => b"$4\r\ninfo\r\n",
                };
                if w.write_all(reply).is_err() {
                    return;
                }
            }
        });
        let mut info = InfoReader::connect(port).unwrap();
        // Pretend the sampler has been reading for longer than a reply may take.
        info.0.deadline = Instant::now() - Duration::from_secs(1);
        assert_eq!(info.info().unwrap(), "info");
        drop(info);
        server.join().unwrap();
    }

    #[test]
    fn consecutive_free_ports_are_free() {
        let base = free_ports(3).unwrap();
        for k in 0..3 {
            TcpListener::bind((Ipv4Addr::LOCALHOST, base + k)).unwrap();
        }
    }
}
