//! Executed-instruction traces of one IPC round trip under QEMU: how many guest instructions
//! it takes, in which functions, and how many of them are barriers.
//!
//! `cargo xtask trace exec` prints and records these counts, and the benchmarks take the same
//! measurement as their `ipc-barriers` records; both call [`measure`].
//!
//! # Why
//! The seed paper's ARM result is that every extra lock costs barriers on a weakly ordered core
//! (it counts 6 on seL4's IPC path with the big lock, 16 fine-grained). Barriers are mostly
//! emitted by the compiler for atomic orderings (an `Acquire` load is `ldr; dmb ish` on ARMv7),
//! so they cannot be counted in the source: they are counted as executed. The same trace says
//! where the round trip's instructions go, which is what to read before optimising the path.
//!
//! # How
//! QEMU runs the demo (one client/server pair in two address spaces) on one core under
//! `-icount shift=0 -singlestep -d exec,nochain`: every guest instruction is its own
//! translation block, and every execution of one is logged with its address ("Trace 0: 0x…
//! [cs_base/pc/flags/cflags] symbol"). The demo runs twice, with `rounds=N` and `rounds=2N`,
//! under the same deterministic clock; the difference of the two runs divided by `N` is the
//! cost of one round trip, with boot, set-up and shutdown cancelled out.
//!
//! Each executed address is looked up in the kernel ELF and the user ELF it embeds: the
//! function it belongs to (symbol table, demangled) and whether the instruction is a barrier:
//! * ARMv7 (A32 encodings; the images are built in ARM state): `dmb` (`0xf57ff05x`), `dsb`
//!   (`0xf57ff04x`), `isb` (`0xf57ff06x`).
//! * x86_64: `mfence`/`lfence`/`sfence`, and the locked read-modify-writes (a `lock` prefix, or
//!   `xchg` with a memory operand), which are full barriers on x86.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::Duration;

use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};
use serde_json::json;

use crate::qemu::{explain_armv7, explain_status, Arch, Guest, Lock, Machine};

/// Kinds of barrier instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// ARM data memory barrier.
    Dmb,
    /// ARM data synchronisation barrier.
    Dsb,
    /// ARM instruction synchronisation barrier.
    Isb,
    /// x86 `mfence`, `lfence` or `sfence`.
    Fence,
    /// x86 locked read-modify-write (`lock` prefix, or `xchg` with memory).
    Locked,
}

impl Kind {
    /// The name printed.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Dmb => "dmb",
            Kind::Dsb => "dsb",
            Kind::Isb => "isb",
            Kind::Fence => "fence",
            Kind::Locked => "locked",
        }
    }

    /// The kinds `arch` has.
    pub fn of_arch(arch: Arch) -> &'static [Kind] {
        match arch {
            Arch::Armv7 => &[Kind::Dmb, Kind::Dsb, Kind::Isb],
            Arch::X86_64 => &[Kind::Fence, Kind::Locked],
        }
    }

    /// The barrier an A32 instruction word is, if any (any option field: `ish`, `sy`, ...).
    pub fn of_a32(word: u32) -> Option<Kind> {
        match word & 0xffff_fff0 {
            0xf57f_f040 => Some(Kind::Dsb),
            0xf57f_f050 => Some(Kind::Dmb),
            0xf57f_f060 => Some(Kind::Isb),
            _ => None,
        }
    }

    /// The barrier the x86_64 instruction starting at `bytes[0]` is, if any.
    pub fn of_x86(bytes: &[u8]) -> Option<Kind> {
        let mut i = 0;
        // Legacy prefixes (operand/address size, rep, segment), then at most one REX.
        while let Some(&b) = bytes.get(i) {
            match b {
                0xF0 => return Some(Kind::Locked),
                0x66 | 0x67 | 0xF2 | 0xF3 | 0x2E | 0x36 | 0x3E | 0x26 | 0x64 | 0x65 => i += 1,
                _ => break,
            }
        }
        if bytes.get(i).is_some_and(|b| b & 0xF0 == 0x40) {
            i += 1;
        }
        match bytes.get(i..)? {
            // mfence, lfence, sfence: 0f ae f0 / e8 / f8.
            [0x0F, 0xAE, 0xF0 | 0xE8 | 0xF8, ..] => Some(Kind::Fence),
            // xchg r/m, r with a memory operand (ModRM.mod != 3) is implicitly locked.
            [0x86 | 0x87, modrm, ..] if modrm >> 6 != 3 => Some(Kind::Locked),
            _ => None,
        }
    }
}

/// The code of the kernel and user ELF files: executable bytes by address, and function
/// symbols.
#[derive(Debug, Default)]
pub struct Image {
    /// Executable sections: start address and bytes.
    code: Vec<(u64, Vec<u8>)>,
    /// QEMU `-dfilter` ranges: the executable sections but the x86 boot code (`.boot`, the
    /// 32-bit PVH entry, whose `rep stos` alone would log millions of lines).
    traced: Vec<(u64, u64)>,
    /// Function symbols: start, size (0 for assembly labels), demangled name without hash.
    functions: Vec<(u64, u64, String)>,
}

impl Image {
    /// Adds an ELF file's executable sections and function symbols.
    pub fn add_elf(&mut self, data: &[u8]) -> Result<(), String> {
        let file = object::File::parse(data).map_err(|e| format!("not an ELF file: {e}"))?;
        for s in file.symbols() {
            let named = s
                .name()
                .ok()
                .filter(|n| !n.is_empty() && !n.starts_with('$'));
            if let (SymbolKind::Text, Some(name)) = (s.kind(), named) {
                let name = format!("{:#}", rustc_demangle::demangle(name));
                self.functions.push((s.address(), s.size(), name));
            }
        }
        self.functions.sort();
        for section in file.sections().filter(|s| s.kind() == SectionKind::Text) {
            let bytes = section
                .data()
                .map_err(|e| format!("reading section {:?}: {e}", section.name()))?;
            if !section.name().is_ok_and(|n| n.starts_with(".boot")) {
                self.traced.push((section.address(), section.size()));
            }
            self.code.push((section.address(), bytes.to_vec()));
        }
        Ok(())
    }

    /// The `-dfilter` argument that limits the trace to the traced sections.
    pub fn dfilter(&self) -> String {
        let ranges: Vec<String> = self
            .traced
            .iter()
            .map(|(start, size)| format!("{start:#x}+{size:#x}"))
            .collect();
        ranges.join(",")
    }

    /// The function holding `addr`: the sized symbol covering it, else the nearest label below
    /// it (assembly stubs have no size), else `?`.
    pub fn function_at(&self, addr: u64) -> &str {
        let i = self
            .functions
            .partition_point(|(start, _, _)| *start <= addr);
        let Some((start, size, name)) = i.checked_sub(1).map(|i| &self.functions[i]) else {
            return "?";
        };
        if addr < start + size || *size == 0 {
            name
        } else {
            "?"
        }
    }

    /// Up to `len` bytes of code at `addr`.
    pub fn bytes_at(&self, addr: u64, len: usize) -> Option<&[u8]> {
        self.code.iter().find_map(|(start, bytes)| {
            let off = usize::try_from(addr.checked_sub(*start)?).ok()?;
            let end = bytes.len().min(off.checked_add(len)?);
            (off < bytes.len()).then(|| &bytes[off..end])
        })
    }

    /// The barrier the instruction at `addr` is, if any.
    pub fn barrier_at(&self, arch: Arch, addr: u64) -> Option<Kind> {
        match arch {
            Arch::Armv7 => {
                let b = self.bytes_at(addr, 4).filter(|b| b.len() == 4)?;
                Kind::of_a32(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            Arch::X86_64 => Kind::of_x86(self.bytes_at(addr, 16)?),
        }
    }
}

/// What one traced run executed: executions per guest address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Executions of each address.
    pub hits: HashMap<u64, u64>,
}

impl Tally {
    /// Every executed instruction.
    pub fn instructions(&self) -> u64 {
        self.hits.values().sum()
    }
}

/// The guest address of a QEMU `-d exec` line: `Trace 0: 0x7f.. [00000000/40200000/...] sym`.
pub fn trace_pc(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("Trace ")?;
    let fields = rest.split_once('[')?.1.split_once(']')?.0;
    let pc = fields.split('/').nth(1)?;
    u64::from_str_radix(pc, 16).ok()
}

/// Counts the executions of each address in a `-d exec` log.
pub fn tally(log: impl BufRead) -> Result<Tally, String> {
    let mut t = Tally::default();
    for line in log.lines() {
        let line = line.map_err(|e| format!("reading the trace: {e}"))?;
        if let Some(pc) = trace_pc(&line) {
            *t.hits.entry(pc).or_default() += 1;
        }
    }
    Ok(t)
}

/// One round trip's cost, from two runs that differ by `extra_rounds` round trips.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PerRoundTrip {
    /// Guest instructions per round trip (trap paths included).
    pub instructions: f64,
    /// Instructions per round trip, by function.
    pub by_function: BTreeMap<String, f64>,
    /// Barriers per round trip, by kind.
    pub barriers: BTreeMap<Kind, f64>,
    /// Barriers per round trip, by function and kind.
    pub barriers_by_function: BTreeMap<(String, Kind), f64>,
    /// Instructions per round trip that ran more often in the shorter run (polling loops whose
    /// trip count depends on the host): a measure of how exact the other figures are.
    pub noise: f64,
    /// Executions per round trip, by address (nonzero differences only): what `--lines` maps
    /// to source lines.
    pub by_address: BTreeMap<u64, f64>,
}

impl PerRoundTrip {
    /// Every barrier per round trip.
    pub fn total_barriers(&self) -> f64 {
        self.barriers.values().sum()
    }

    /// The `n` functions with the most instructions per round trip, most first.
    pub fn top_functions(&self, n: usize) -> Vec<(&str, f64)> {
        let mut v: Vec<(&str, f64)> = self
            .by_function
            .iter()
            .map(|(f, c)| (f.as_str(), *c))
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        v.truncate(n);
        v
    }
}

/// The difference `long - short` divided by `extra_rounds`, per address, signed: a polling loop
/// (the console waiting for the host to drain its pipe) may run a few times more in the
/// shorter run, and its negative difference cancels its share of noise in the total instead of
/// being dropped. [`PerRoundTrip::noise`] says how much moved backwards.
pub fn per_round_trip(
    arch: Arch,
    image: &Image,
    short: &Tally,
    long: &Tally,
    extra_rounds: u64,
) -> Result<PerRoundTrip, String> {
    if extra_rounds == 0 || long.instructions() <= short.instructions() {
        return Err(format!(
            "the longer run executed {} instructions, the shorter {}: not comparable",
            long.instructions(),
            short.instructions()
        ));
    }
    let n = extra_rounds as f64;
    let mut out = PerRoundTrip::default();
    let pcs: BTreeMap<u64, ()> = long
        .hits
        .keys()
        .chain(short.hits.keys())
        .map(|&pc| (pc, ()))
        .collect();
    for &pc in pcs.keys() {
        let a = short.hits.get(&pc).copied().unwrap_or(0) as f64;
        let b = long.hits.get(&pc).copied().unwrap_or(0) as f64;
        let d = (b - a) / n;
        if d == 0.0 {
            continue;
        }
        if d < 0.0 {
            out.noise -= d;
        }
        let function = image.function_at(pc).to_owned();
        out.instructions += d;
        out.by_address.insert(pc, d);
        if let Some(kind) = image.barrier_at(arch, pc) {
            *out.barriers.entry(kind).or_default() += d;
            *out.barriers_by_function
                .entry((function.clone(), kind))
                .or_default() += d;
        }
        *out.by_function.entry(function).or_default() += d;
    }
    out.by_function.retain(|_, v| v.abs() > 1e-9);
    out.barriers.retain(|_, v| v.abs() > 1e-9);
    out.barriers_by_function.retain(|_, v| v.abs() > 1e-9);
    Ok(out)
}

/// The user ELF the image's build script built (newest `build/<package>-*/out/user.elf`).
pub fn user_elf(root: &Path, arch: Arch) -> Result<PathBuf, String> {
    let (package, target) = match arch {
        Arch::X86_64 => ("image-x86", "x86_64-unknown-none"),
        Arch::Armv7 => ("image-armv7", "armv7a-none-eabi"),
    };
    let build = host_env::target_dir(root)
        .join(target)
        .join("release")
        .join("build");
    std::fs::read_dir(&build)
        .map_err(|e| format!("reading {}: {e}", build.display()))?
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{package}-"))
        })
        .map(|e| e.path().join("out").join("user.elf"))
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .ok_or_else(|| format!("{package}'s user ELF (out/user.elf) was not found"))
}

/// The code of the image `elf` of `arch` and of the user ELF its build embedded.
pub fn image_of(root: &Path, arch: Arch, elf: &Path) -> Result<Image, String> {
    let mut image = Image::default();
    for file in [elf.to_path_buf(), user_elf(root, arch)?] {
        let data = std::fs::read(&file).map_err(|e| format!("reading {}: {e}", file.display()))?;
        image
            .add_elf(&data)
            .map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(image)
}

/// Runs the one-core demo with `rounds` round trips, traced into `log`, and tallies it.
fn traced_run(
    root: &Path,
    guest: &Guest,
    lock: Lock,
    dfilter: &str,
    log: &Path,
) -> Result<Tally, String> {
    let mut guest = guest.clone();
    guest
        .extra
        .extend(["-dfilter".to_owned(), dfilter.to_owned()]);
    guest.extra.extend(
        [
            "-icount",
            "shift=0",
            "-singlestep",
            "-d",
            "exec,nochain",
            "-D",
        ]
        .map(String::from)
        .into_iter()
        .chain([log.display().to_string()]),
    );
    let cmd = crate::qemu::guest_cmd(&guest);
    let run = cmd
        .run_captured(root, false, Duration::from_secs(600))
        .map_err(|e| format!("could not run {}: {e}", cmd.display()))?;
    let (ok, why) = match guest.arch {
        Arch::Armv7 => explain_armv7(run.status.code(), &run.lines, 1, lock),
        Arch::X86_64 => explain_status(run.status.code()),
    };
    if run.timed_out || !ok {
        let _ = std::fs::remove_file(log);
        let tail: Vec<String> = run.lines.iter().rev().take(15).rev().cloned().collect();
        let why = if run.timed_out {
            "timed out".to_owned()
        } else {
            why
        };
        return Err(format!("{}: {why}\n{}", cmd.display(), tail.join("\n")));
    }
    let t = File::open(log)
        .map_err(|e| format!("opening {}: {e}", log.display()))
        .and_then(|f| tally(BufReader::new(f)));
    // Kept on request (`cargo xtask trace exec --help`): per-address counts need the raw logs.
    if std::env::var_os("XTASK_KEEP_TRACE").is_none() {
        let _ = std::fs::remove_file(log);
    }
    t
}

/// Traces `rounds` and `2 * rounds` round trips of `lock` on `machine` and returns the cost of
/// one.
pub fn measure(
    root: &Path,
    elf: &Path,
    image: &Image,
    machine: Machine,
    lock: Lock,
    rounds: u64,
    fastpath: bool,
) -> Result<PerRoundTrip, String> {
    let dir = host_env::target_dir(root).join("trace");
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let run = |n: u64| {
        let guest = Guest {
            arch: machine.arch(),
            machine,
            smp: 1,
            elf,
            append: format!(
                "lock={} mode=demo rounds={n} fastpath={}",
                lock.name(),
                u8::from(fastpath)
            ),
            extra: Vec::new(),
            console_port: 0,
            semihosting: true,
        };
        let log = dir.join(format!("{}-{}-{n}.log", machine.name(), lock.name()));
        traced_run(root, &guest, lock, &image.dfilter(), &log)
    };
    let short = run(rounds)?;
    let long = run(2 * rounds)?;
    per_round_trip(machine.arch(), image, &short, &long, rounds)
}

/// A raw record (docs/bench-protocol.md, `bench: ipc-barriers`) of one traced lock.
pub fn record(machine: Machine, lock: Lock, rounds: u64, p: &PerRoundTrip) -> serde_json::Value {
    let barriers: BTreeMap<&str, f64> = p.barriers.iter().map(|(k, n)| (k.name(), *n)).collect();
    let by_function: Vec<serde_json::Value> = p
        .barriers_by_function
        .iter()
        .map(|((f, k), n)| json!({"function": f, "kind": k.name(), "per_round_trip": n}))
        .collect();
    let top: Vec<serde_json::Value> = p
        .top_functions(20)
        .into_iter()
        .map(|(f, n)| json!({"function": f, "instructions": n}))
        .collect();
    json!({
        "bench": "ipc-barriers",
        "variant": "cross-as",
        "board": machine.name(),
        "arch": match machine.arch() { Arch::X86_64 => "x86_64", Arch::Armv7 => "armv7" },
        "lock": lock.name(),
        "cores": 1,
        "clients": 0,
        "unit": "barriers",
        "samples": [p.total_barriers()],
        "extra": {
            "barriers": barriers,
            "instructions_per_round_trip": p.instructions,
            "noise_instructions": p.noise,
            "rounds": [rounds, 2 * rounds],
            "method": "executed instructions of the one-core demo, difference of two runs \
                       (rounds N and 2N) under QEMU -icount shift=0 -singlestep -d \
                       exec,nochain, divided by N",
            "barriers_by_function": by_function,
            "top_functions": top,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a32_barrier_encodings() {
        assert_eq!(Kind::of_a32(0xf57f_f05b), Some(Kind::Dmb)); // dmb ish
        assert_eq!(Kind::of_a32(0xf57f_f05f), Some(Kind::Dmb)); // dmb sy
        assert_eq!(Kind::of_a32(0xf57f_f04f), Some(Kind::Dsb)); // dsb sy
        assert_eq!(Kind::of_a32(0xf57f_f047), Some(Kind::Dsb)); // dsb nsh
        assert_eq!(Kind::of_a32(0xf57f_f06f), Some(Kind::Isb)); // isb sy
        assert_eq!(Kind::of_a32(0xe1a0_0000), None); // mov r0, r0
        assert_eq!(Kind::of_a32(0xf57f_f01f), None); // clrex
    }

    #[test]
    fn x86_barrier_encodings() {
        assert_eq!(Kind::of_x86(&[0x0F, 0xAE, 0xF0]), Some(Kind::Fence)); // mfence
        assert_eq!(Kind::of_x86(&[0x0F, 0xAE, 0xE8]), Some(Kind::Fence)); // lfence
        assert_eq!(
            Kind::of_x86(&[0xF0, 0x48, 0x0F, 0xB1, 0x0A]),
            Some(Kind::Locked)
        ); // lock cmpxchg
        assert_eq!(
            Kind::of_x86(&[0x66, 0xF0, 0x0F, 0xC1, 0x07]),
            Some(Kind::Locked)
        ); // lock xadd
        assert_eq!(Kind::of_x86(&[0x48, 0x87, 0x07]), Some(Kind::Locked)); // xchg [rdi], rax
        assert_eq!(Kind::of_x86(&[0x48, 0x87, 0xC1]), None); // xchg rcx, rax
        assert_eq!(Kind::of_x86(&[0x48, 0x89, 0x07]), None); // mov [rdi], rax
        assert_eq!(Kind::of_x86(&[0x0F, 0xAE]), None); // truncated
    }

    #[test]
    fn trace_lines_give_the_guest_pc() {
        let line = "Trace 0: 0x7fd244000100 [00000000/40200000/00000370/ff020201] _start";
        assert_eq!(trace_pc(line), Some(0x4020_0000));
        assert_eq!(
            trace_pc("cpu_io_recompile: rewound execution of TB to 40201234"),
            None
        );
        assert_eq!(trace_pc("Trace 0: garbage"), None);
    }

    /// Two ARM functions: `lock` at 0x100 (dmb, dmb) and `switch` at 0x200 (isb, nop).
    fn image() -> Image {
        let dmb = 0xf57f_f05bu32.to_le_bytes();
        let isb = 0xf57f_f06fu32.to_le_bytes();
        let nop = 0xe1a0_0000u32.to_le_bytes();
        Image {
            code: vec![(0x100, [dmb, dmb].concat()), (0x200, [isb, nop].concat())],
            functions: vec![(0x100, 8, "lock".into()), (0x200, 8, "switch".into())],
            traced: vec![(0x100, 8), (0x200, 8)],
        }
    }

    fn log(pcs: &[u64]) -> String {
        pcs.iter()
            .map(|pc| format!("Trace 0: 0x7f00 [00000000/{pc:08x}/00000370/ff020201] f\n"))
            .collect()
    }

    #[test]
    fn difference_of_two_runs_per_round_trip() {
        let img = image();
        // Boot: 3 instructions, one dmb; each round trip: two dmb, one isb, one nop.
        let boot = [0x10, 0x100, 0x14];
        let trip = [0x100, 0x104, 0x200, 0x204];
        let run = |n: usize| {
            let mut pcs = boot.to_vec();
            for _ in 0..n {
                pcs.extend(trip);
            }
            tally(log(&pcs).as_bytes()).unwrap()
        };
        let p = per_round_trip(Arch::Armv7, &img, &run(10), &run(20), 10).unwrap();
        assert_eq!(p.instructions, 4.0);
        assert_eq!(p.total_barriers(), 3.0);
        assert_eq!(p.barriers[&Kind::Dmb], 2.0);
        assert_eq!(p.barriers_by_function[&("switch".into(), Kind::Isb)], 1.0);
        assert_eq!(p.by_function["switch"], 2.0);
        assert_eq!(p.top_functions(1), vec![("lock", 2.0)]);
        assert_eq!(p.noise, 0.0);
        // Swapped runs are refused, not reported as negative counts.
        assert!(per_round_trip(Arch::Armv7, &img, &run(20), &run(10), 10).is_err());
        // A polling loop that ran once more in the shorter run is noise, and cancels.
        let mut short = run(10);
        *short.hits.entry(0x10).or_default() += 10;
        let p = per_round_trip(Arch::Armv7, &img, &short, &run(20), 10).unwrap();
        assert_eq!(p.noise, 1.0);
        assert_eq!(p.instructions, 3.0);
        assert_eq!(p.total_barriers(), 3.0);
    }

    #[test]
    fn lines_other_than_traces_are_ignored() {
        let mut text = log(&[0x100]);
        text.push_str("cpu_io_recompile: rewound execution of TB to 40201234\nStopped\n");
        let t = tally(text.as_bytes()).unwrap();
        assert_eq!(t.instructions(), 1);
        assert_eq!(t.hits[&0x100], 1);
    }

    #[test]
    fn functions_and_labels() {
        let mut img = image();
        img.functions.push((0x300, 0, "asm_stub".into()));
        assert_eq!(img.function_at(0x104), "lock");
        assert_eq!(img.function_at(0x108), "?");
        assert_eq!(img.function_at(0x310), "asm_stub");
        assert_eq!(img.function_at(0x50), "?");
        assert_eq!(
            img.bytes_at(0x204, 16),
            Some(&0xe1a0_0000u32.to_le_bytes()[..])
        );
        assert_eq!(img.bytes_at(0x208, 4), None);
        assert_eq!(img.dfilter(), "0x100+0x8,0x200+0x8");
    }
}
