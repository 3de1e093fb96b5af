//! `cargo xtask trace locks --image`: kernel lock traces recorded inside the QEMU images.
//!
//! # How
//! The image is built with its `trace` feature and boots the demo (one IPC ping-pong pair per
//! core, `rounds=N`) with `trace=1` under single-threaded TCG with `-icount shift=0,sleep=off`,
//! so that the guest's clock advances one nanosecond per instruction and the run is
//! deterministic. Once every program reported, the image prints each core's ring between
//! `TRACE-BEGIN` and `TRACE-END` (`image_common::trace`): hex text, one record per line in the
//! trace file's own encoding. [`parse_console`] decodes that block with `sim`'s record reader
//! into a [`sim::trace::Trace`]; the file it writes is what `cargo xtask sim --trace` reads, and
//! [`crate::sim::analyse_and_sweep`] then prints the same analysis, replay and sweep as
//! `--hosted`.
//!
//! The header's frequency is the true rate of the guest's counter under `-icount` where the
//! benchmark tables know it ([`bench::records::true_hz`]: the TSC counts instructions,
//! 1 GHz; the A9 global timer 100 MHz; CNTVCT 62.5 MHz), else what the image calibrated.

use std::path::{Path, PathBuf};
use std::time::Duration;

use protocol::console::{self, Line, TraceCore, TraceEnd};
use sim::trace::{Record, Strategy, Trace, RECORD_SIZE};

use qemu_runner::qemu::{explain_armv7, explain_status, Arch, Guest, Lock, Machine};

/// System-call numbers the demo's ping-pong makes (`abi::syscall::nr`).
const CALL: u16 = abi::syscall::nr::CALL as u16;
/// See [`CALL`].
const REPLY_RECV: u16 = abi::syscall::nr::REPLY_RECV as u16;

/// A trace read from an image's console.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsoleTrace {
    /// The trace, records sorted by entry time (per core in the order written).
    pub trace: Trace,
    /// The `lock=` name the image printed.
    pub lock: String,
    /// The counter's name as the image printed it (`tsc`, `debugcall`).
    pub counter: String,
    /// The counter frequency the image printed (its calibration).
    pub guest_hz: u64,
    /// Records and lost records of each core, as the image counted them.
    pub per_core: Vec<(usize, usize)>,
}

impl ConsoleTrace {
    /// Records the rings had no longer kept, all cores.
    pub fn lost(&self) -> usize {
        self.per_core.iter().map(|(_, l)| l).sum()
    }
}

/// The kernel strategy a `lock=` name is (from the registry's kinds).
pub fn strategy_of(lock: &str) -> Option<Strategy> {
    Some(match qemu_runner::qemu::Lock::parse(lock)?.kind() {
        lock_registry::Kind::BigLock => Strategy::BigLock,
        lock_registry::Kind::FineGrained => Strategy::FineGrained,
        lock_registry::Kind::Elided => Strategy::Rtm,
        lock_registry::Kind::NoLock => Strategy::None,
    })
}

/// One `TRACE-RECORD` line's hex digits as a record.
fn decode_hex(hex: &str, index: usize) -> Result<Record, String> {
    let mut bytes = [0u8; RECORD_SIZE];
    console::decode_hex(hex, &mut bytes).ok_or_else(|| {
        format!(
            "trace record {index}: {} characters, expected {} hex digits",
            hex.len(),
            2 * RECORD_SIZE
        )
    })?;
    Record::decode(&bytes, index).map_err(|e| e.to_string())
}

/// A malformed trace line, for the error.
fn malformed(l: &str, problem: &str) -> String {
    format!("bad line: {l} ({problem})")
}

/// Reads the `TRACE-BEGIN` .. `TRACE-END` block of an image's console (`lines`, other lines
/// ignored) booted on `board` under `-icount` (`icount`: whether the counter's true rate under
/// `-icount` replaces the image's calibration).
pub fn parse_console(lines: &[String], board: &str, icount: bool) -> Result<ConsoleTrace, String> {
    let mut lines = lines.iter().map(|l| l.trim_end_matches(['\r', '\n']));
    let mut header = None;
    for l in lines.by_ref() {
        match Line::parse(l) {
            Line::TraceBegin(h) => {
                header = Some(h);
                break;
            }
            Line::Malformed {
                kind: console::TRACE_BEGIN,
                problem,
            } => return Err(malformed(l, problem)),
            _ => {}
        }
    }
    let header = header.ok_or(
        "no TRACE-BEGIN line on the console (was the image built with --features trace \
            and booted with trace=1?)",
    )?;
    let cores = u16::try_from(header.cores)
        .ok()
        .filter(|&c| c > 0)
        .ok_or_else(|| format!("cores={} in the trace header", header.cores))?;
    let lock = header.lock.to_owned();
    let strategy = strategy_of(&lock).ok_or_else(|| format!("unknown lock={lock}"))?;
    let counter = header.counter.to_owned();
    let guest_hz = header.hz;
    let frequency_hz = bench::records::true_hz(&counter, board, icount, guest_hz as f64)
        .map_or(guest_hz, |hz| hz.round() as u64);
    if frequency_hz == 0 {
        return Err("the trace header's counter frequency is 0".into());
    }
    let mut records = Vec::new();
    let mut per_core = Vec::new();
    let mut core_start = 0;
    let mut ended = false;
    for l in lines {
        match Line::parse(l) {
            Line::TraceRecord(hex) => records.push(decode_hex(hex, records.len())?),
            Line::Malformed {
                kind: console::TRACE_RECORD,
                ..
            } => {
                let hex = l.trim().trim_start_matches(console::TRACE_RECORD).trim();
                return Err(decode_hex(hex, records.len())
                    .err()
                    .unwrap_or_else(|| format!("trace record {}: not hex: {hex}", records.len())));
            }
            Line::Malformed {
                kind: console::TRACE_CORE | console::TRACE_END,
                problem,
            } => return Err(malformed(l, problem)),
            Line::TraceCore(TraceCore {
                core,
                records: n,
                lost,
            }) => {
                if core != per_core.len() || n != records.len() - core_start {
                    return Err(format!(
                        "{l}: expected core {} with {} records",
                        per_core.len(),
                        records.len() - core_start
                    ));
                }
                if let Some(r) = records[core_start..]
                    .iter()
                    .find(|r| usize::from(r.core) != core)
                {
                    return Err(format!(
                        "core {core}'s ring holds a record of core {}",
                        r.core
                    ));
                }
                per_core.push((n, lost));
                core_start = records.len();
            }
            Line::TraceEnd(TraceEnd { records: n, .. }) => {
                if n != records.len() || per_core.len() != usize::from(cores) {
                    return Err(format!(
                        "{l}: read {} records of {} cores (header: {cores} cores)",
                        records.len(),
                        per_core.len()
                    ));
                }
                ended = true;
                break;
            }
            _ => {}
        }
    }
    if !ended {
        return Err(format!(
            "the console ended inside the trace (no TRACE-END after {} records)",
            records.len()
        ));
    }
    // One timeline: stable, so each core's records keep the order its ring wrote them in.
    records.sort_by_key(|r| r.entry);
    Ok(ConsoleTrace {
        trace: Trace {
            cores,
            strategy,
            frequency_hz,
            records,
        },
        lock,
        counter,
        guest_hz,
        per_core,
    })
}

/// What [`check`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Records per core.
    pub per_core: Vec<usize>,
    /// `Call` entries.
    pub calls: usize,
    /// `ReplyRecv` entries.
    pub reply_recvs: usize,
}

/// The checks of `cargo xtask test`'s `trace:image` step on a trace of the demo on `cores`
/// cores with `rounds` round trips per pair: records from every core, each core's records in
/// time order, every record's lock timestamps ordered (requested <= acquired <= released <=
/// exit), at least `rounds` Call and ReplyRecv entries per core, nothing lost, and the file's
/// bytes read back to the same trace.
pub fn check(ct: &ConsoleTrace, cores: u16, rounds: usize) -> Result<Checked, String> {
    let t = &ct.trace;
    if t.cores != cores {
        return Err(format!("{} cores in the trace, {cores} booted", t.cores));
    }
    if ct.lost() != 0 {
        return Err(format!("{} records lost (ring too small?)", ct.lost()));
    }
    let mut out = Checked::default();
    for c in 0..cores {
        let rs = t.core_records(c);
        if rs.is_empty() {
            return Err(format!("no records from core {c}"));
        }
        if let Some(w) = rs.windows(2).find(|w| w[1].entry < w[0].entry) {
            return Err(format!(
                "core {c}: records out of time order ({} after {})",
                w[1].entry, w[0].entry
            ));
        }
        if let Some(w) = rs.windows(2).find(|w| w[1].entry < w[0].exit_at()) {
            return Err(format!(
                "core {c}: an entry at {} before the previous one's exit at {}",
                w[1].entry,
                w[0].exit_at()
            ));
        }
        for r in &rs {
            r.validate().map_err(|e| format!("core {c}: {e}: {r:?}"))?;
        }
        let syscalls = |n| {
            rs.iter()
                .filter(|r| r.kind == sim::trace::EntryKind::Syscall && r.number == n)
                .count()
        };
        let (calls, replies) = (syscalls(CALL), syscalls(REPLY_RECV));
        if calls < rounds || replies < rounds {
            return Err(format!(
                "core {c}: {calls} Call and {replies} ReplyRecv entries for {rounds} round trips"
            ));
        }
        out.calls += calls;
        out.reply_recvs += replies;
        out.per_core.push(rs.len());
    }
    let back = Trace::from_bytes(&t.to_bytes()).map_err(|e| format!("reading back: {e}"))?;
    if back != *t {
        return Err("the trace file does not read back to the same trace".into());
    }
    Ok(out)
}

/// The machine `--image` boots for `arch`: microvm, or the Sabre Lite (Cortex-A9, the board
/// of the thesis's ARM figures).
pub fn machine_for(arch: Arch) -> Machine {
    match arch {
        Arch::X86_64 => Machine::Microvm,
        Arch::Armv7 => Machine::Sabrelite,
    }
}

/// Builds the image of `arch` with tracing, boots the demo on `cores` cores with `rounds` round
/// trips per pair under `-icount`, and returns the trace it printed.
pub fn record(
    root: &Path,
    arch: Arch,
    lock: Lock,
    cores: u16,
    rounds: u64,
) -> Result<ConsoleTrace, String> {
    qemu_runner::qemu::ensure_qemu(arch)?;
    let elf = qemu_runner::qemu::build_image_with(root, arch, false, "trace", &["trace"])?;
    let machine = machine_for(arch);
    let guest = Guest {
        arch,
        machine,
        smp: u32::from(cores),
        elf: &elf,
        append: format!("lock={} mode=demo rounds={rounds} trace=1", lock.name()),
        extra: ["-icount", "shift=0,sleep=off"].map(String::from).to_vec(),
        console_port: 0,
        semihosting: true,
    };
    let cmd = qemu_runner::qemu::guest_cmd(&guest);
    eprintln!("trace: {}", cmd.display());
    let run = cmd
        .run_captured(root, false, Duration::from_secs(300))
        .map_err(|e| format!("could not run {}: {e}", cmd.display()))?;
    let (ok, why) = match arch {
        Arch::Armv7 => explain_armv7(run.status.code(), &run.lines, u32::from(cores), lock),
        Arch::X86_64 => explain_status(run.status.code()),
    };
    if run.timed_out || !ok {
        let kept: Vec<&str> = run
            .lines
            .iter()
            .filter(|l| !l.starts_with("TRACE-RECORD"))
            .map(String::as_str)
            .collect();
        let tail = &kept[kept.len().saturating_sub(15)..];
        let why = if run.timed_out {
            "timed out".into()
        } else {
            why
        };
        return Err(format!("{}: {why}\n{}", cmd.display(), tail.join("\n")));
    }
    parse_console(&run.lines, machine.name(), true)
}

/// What `cargo xtask trace locks --image` records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The kernel's lock.
    pub lock: Lock,
    /// The guest's cores.
    pub cores: u16,
    /// Round trips of each core's ping-pong pair.
    pub rounds: u64,
    /// Whether to [`check`] each trace and fail on a bad one.
    pub check: bool,
}

/// `cargo xtask trace locks --image`: records on each of `arches`, writes
/// `OUT/image-<machine>-<lock>-<cores>cores.trace`, and analyses and sweeps it into the folder
/// `OUT/image-<machine>-<lock>-<cores>cores/`.
pub fn run(
    root: &Path,
    arches: &[Arch],
    opts: &Options,
    out: &Path,
) -> Result<Vec<PathBuf>, String> {
    let &Options {
        lock,
        cores,
        rounds,
        check: checking,
    } = opts;
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let mut files = Vec::new();
    for &arch in arches {
        let ct = record(root, arch, lock, cores, rounds)?;
        let machine = machine_for(arch);
        println!(
            "trace: {}: {} records from {cores} cores ({} lost), lock {}, counter {} at {} Hz \
             (image: {} Hz)",
            machine.name(),
            ct.trace.records.len(),
            ct.lost(),
            ct.lock,
            ct.counter,
            ct.trace.frequency_hz,
            ct.guest_hz
        );
        let stem = format!("image-{}-{}-{cores}cores", machine.name(), lock.name());
        let file = out.join(format!("{stem}.trace"));
        std::fs::write(&file, ct.trace.to_bytes())
            .map_err(|e| format!("writing {}: {e}", file.display()))?;
        println!("trace: wrote {}", file.display());
        if checking {
            let c = check(&ct, cores, rounds as usize)?;
            let bytes =
                std::fs::read(&file).map_err(|e| format!("reading {}: {e}", file.display()))?;
            let back = Trace::from_bytes(&bytes).map_err(|e| format!("{}: {e}", file.display()))?;
            if back != ct.trace {
                return Err(format!("{} does not read back equal", file.display()));
            }
            println!(
                "trace: check: {}: ok: records per core {:?}, {} Call and {} ReplyRecv entries, \
                 lock timestamps ordered, nothing lost, the file reads back equal",
                machine.name(),
                c.per_core,
                c.calls,
                c.reply_recvs
            );
        }
        // The analysis of each architecture beside its file, in a folder of the same name.
        crate::sim::analyse_and_sweep(&file, None, None, 64, &out.join(&stem))?;
        files.push(file);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(core: u16, entry: u64, number: u16) -> Record {
        Record {
            entry,
            lock_requested: 1,
            lock_acquired: 5,
            lock_released: 50,
            exit: 60,
            core,
            number,
            thread: u32::from(core),
            ..Record::EMPTY
        }
    }

    fn hex(r: &Record) -> String {
        r.encode().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A console with a 2-core trace of `rounds` round trips per core among other lines.
    fn console(rounds: u64) -> Vec<String> {
        let mut l = vec![
            "boot: something".to_owned(),
            "TRACE-BEGIN cores=2 lock=clh counter=tsc hz=999999823 ring=2048\r".to_owned(),
        ];
        for core in 0..2u16 {
            for i in 0..rounds {
                let t = 1000 + 200 * i + u64::from(core) * 7;
                l.push(format!("TRACE-RECORD {}", hex(&rec(core, t, CALL))));
                l.push(format!(
                    "TRACE-RECORD {}",
                    hex(&rec(core, t + 100, REPLY_RECV))
                ));
            }
            l.push(format!("TRACE-CORE {core} records={} lost=0", 2 * rounds));
        }
        l.push(format!("TRACE-END records={} lost=0", 4 * rounds));
        l.push("shutting down: success".to_owned());
        l
    }

    #[test]
    fn reads_the_console_block_and_passes_the_checks() {
        let ct = parse_console(&console(3), "microvm", true).unwrap();
        assert_eq!(ct.trace.cores, 2);
        assert_eq!(ct.trace.strategy, Strategy::BigLock);
        assert_eq!(ct.trace.frequency_hz, 1_000_000_000);
        assert_eq!(ct.guest_hz, 999_999_823);
        assert_eq!(ct.trace.records.len(), 12);
        assert!(ct
            .trace
            .records
            .windows(2)
            .all(|w| w[0].entry <= w[1].entry));
        let c = check(&ct, 2, 3).unwrap();
        assert_eq!(c.per_core, [6, 6]);
        assert_eq!((c.calls, c.reply_recvs), (6, 6));
        assert!(check(&ct, 2, 4).is_err());
        assert!(check(&ct, 3, 3).is_err());
        // Without -icount the image's own calibration stands.
        let ct = parse_console(&console(1), "microvm", false).unwrap();
        assert_eq!(ct.trace.frequency_hz, 999_999_823);
    }

    #[test]
    fn refuses_damaged_blocks() {
        let mut c = console(2);
        c.truncate(5);
        assert!(parse_console(&c, "microvm", true)
            .unwrap_err()
            .contains("no TRACE-END"));
        assert!(parse_console(&["x".into()], "microvm", true)
            .unwrap_err()
            .contains("no TRACE-BEGIN"));
        let mut c = console(2);
        c[2] = "TRACE-RECORD 00zz".into();
        assert!(parse_console(&c, "microvm", true).is_err());
        let mut c = console(2);
        c[2].replace_range(13 + 64..13 + 66, "09"); // entry kind 9
        assert!(parse_console(&c, "microvm", true).is_err());
        let mut c = console(2);
        c[1] = "TRACE-BEGIN cores=2 lock=spin counter=tsc hz=1 ring=2048".into();
        assert!(parse_console(&c, "microvm", true)
            .unwrap_err()
            .contains("unknown lock"));
        c[1] = "TRACE-BEGIN cores=2 lock=clh counter=tsc hz=1".into();
        assert!(parse_console(&c, "microvm", true)
            .unwrap_err()
            .contains("bad line"));
        let mut c = console(2);
        let end = c.len() - 2;
        c[end] = "TRACE-END records=7 lost=0".into();
        assert!(parse_console(&c, "microvm", true).is_err());
        // A record in the wrong core's ring.
        let mut c = console(1);
        c[2] = format!("TRACE-RECORD {}", hex(&rec(1, 1000, CALL)));
        assert!(parse_console(&c, "microvm", true)
            .unwrap_err()
            .contains("holds a record of core 1"));
    }

    #[test]
    fn lock_names_map_to_strategies() {
        assert_eq!(strategy_of("ticket"), Some(Strategy::BigLock));
        assert_eq!(strategy_of("brlock"), Some(Strategy::FineGrained));
        assert_eq!(strategy_of("none"), Some(Strategy::None));
        assert_eq!(strategy_of("x"), None);
    }
}
