//! What to measure: the command line's selections turned into platforms, boards and locks.

use clap::ValueEnum;

use lock_registry::Kind;
use qemu_runner::qemu::{Arch, Lock, Machine};

/// `--lock` values: a strategy of the registry (its names and aliases, `brlock` for `fine`),
/// or `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockArg {
    /// One strategy.
    Lock(Lock),
    /// Every strategy of the registry, each once.
    All,
}

/// Every `--lock` value, for `clap`: the registry's strategies, then `all`.
const LOCK_ARGS: [LockArg; lock_registry::COUNT + 1] = {
    let mut args = [LockArg::All; lock_registry::COUNT + 1];
    let mut i = 0;
    while i < lock_registry::COUNT {
        args[i] = LockArg::Lock(lock_registry::ALL[i]);
        i += 1;
    }
    args
};

impl ValueEnum for LockArg {
    fn value_variants<'a>() -> &'a [Self] {
        &LOCK_ARGS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self {
            LockArg::Lock(lock) => lock.to_possible_value(),
            LockArg::All => Some(
                clap::builder::PossibleValue::new("all")
                    .help("Every strategy (`brlock` and `fine` once)"),
            ),
        }
    }
}

/// `--arch` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ArchArg {
    /// x86_64: QEMU `-M microvm`, and the host for `hosted`.
    #[value(name = "x86_64")]
    X86_64,
    /// ARMv7-A: QEMU `-M sabrelite` (4x Cortex-A9) and `-M virt -cpu cortex-a15`.
    #[value(name = "armv7")]
    Armv7,
    /// Both.
    All,
}

/// `--platform` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlatformArg {
    /// The kernel on host threads (`cargo bench -p tests --bench ipc_hosted`), TSC cycles.
    Hosted,
    /// QEMU with `-icount shift=0`: deterministic guest instruction counts.
    QemuIcount,
    /// QEMU multi-threaded TCG: multicore throughput in wall-clock time (noisy).
    Qemu,
    /// All three.
    All,
}

/// Where a record was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Platform {
    /// The kernel on host threads, entered through `Kernel::syscall`.
    Hosted,
    /// A guest under QEMU `-icount shift=0`.
    QemuIcount,
    /// A guest under QEMU multi-threaded TCG.
    Qemu,
}

impl Platform {
    /// The name used in records and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Hosted => "hosted",
            Platform::QemuIcount => "qemu-icount",
            Platform::Qemu => "qemu",
        }
    }

    /// Every platform, in report order.
    pub const ALL: [Platform; 3] = [Platform::Hosted, Platform::QemuIcount, Platform::Qemu];
}

/// The canonical order of the kernel locks in tables and plots: the baseline first, then the
/// registry's order.
pub const LOCK_ORDER: [&str; lock_registry::COUNT] = {
    let mut order = [""; lock_registry::COUNT];
    let mut i = 0;
    while i < lock_registry::COUNT {
        order[i] = lock_registry::REPORT_ORDER[i].name();
        i += 1;
    }
    order
};

/// The strategy a kernel lock name (`lock=` as the kernel prints it) belongs to: `none`,
/// `fine`, `rtm` or `big-lock` (every big lock, and names the registry does not know).
pub fn strategy_of(lock: &str) -> &'static str {
    match Lock::parse(lock).map(Lock::kind) {
        Some(Kind::NoLock) => "none",
        Some(Kind::FineGrained) => "fine",
        Some(Kind::Elided) => "rtm",
        Some(Kind::BigLock) | None => "big-lock",
    }
}

/// The position of `lock` in [`LOCK_ORDER`] (unknown names last).
pub fn lock_rank(lock: &str) -> usize {
    LOCK_ORDER
        .iter()
        .position(|l| *l == lock)
        .unwrap_or(LOCK_ORDER.len())
}

/// The resolved selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Kernel locks, in [`LOCK_ORDER`], `brlock` folded into `fine`, `none` always included.
    pub locks: Vec<Lock>,
    /// Whether `none` was added as the baseline (not asked for).
    pub baseline_added: bool,
    /// Architectures.
    pub archs: Vec<Arch>,
    /// Platforms, in [`Platform::ALL`] order.
    pub platforms: Vec<Platform>,
    /// Core counts for the multicore runs, ascending, distinct.
    pub cores: Vec<u32>,
}

impl Plan {
    /// Resolves the command-line lists (an empty list means `all`; `cores` empty means 1,2,4).
    pub fn new(
        locks: &[LockArg],
        archs: &[ArchArg],
        platforms: &[PlatformArg],
        cores: &[u32],
    ) -> Result<Plan, String> {
        let all_locks = locks.is_empty() || locks.contains(&LockArg::All);
        let mut chosen: Vec<Lock> = Vec::new();
        for name in LOCK_ORDER {
            let wanted = all_locks
                || locks.iter().any(|l| match l {
                    LockArg::Lock(lock) => lock.name() == name,
                    LockArg::All => true,
                });
            if wanted {
                chosen.extend(Lock::parse(name));
            }
        }
        let baseline_added = !chosen.contains(&Lock::None);
        if baseline_added {
            chosen.insert(0, Lock::None);
        }
        let all_archs = archs.is_empty() || archs.contains(&ArchArg::All);
        let mut resolved_archs = Vec::new();
        if all_archs || archs.contains(&ArchArg::X86_64) {
            resolved_archs.push(Arch::X86_64);
        }
        if all_archs || archs.contains(&ArchArg::Armv7) {
            resolved_archs.push(Arch::Armv7);
        }
        let all_platforms = platforms.is_empty() || platforms.contains(&PlatformArg::All);
        let resolved_platforms = Platform::ALL
            .into_iter()
            .filter(|p| {
                all_platforms
                    || platforms.iter().any(|a| {
                        matches!(
                            (a, p),
                            (PlatformArg::Hosted, Platform::Hosted)
                                | (PlatformArg::QemuIcount, Platform::QemuIcount)
                                | (PlatformArg::Qemu, Platform::Qemu)
                        )
                    })
            })
            .collect();
        let mut cores: Vec<u32> = if cores.is_empty() {
            vec![1, 2, 4]
        } else {
            cores.to_vec()
        };
        if let Some(bad) = cores.iter().find(|c| !(1..=8).contains(*c)) {
            return Err(format!(
                "--cores: {bad} is out of range (1..=8; the kernel is built for at most 8 cores)"
            ));
        }
        cores.sort_unstable();
        cores.dedup();
        Ok(Plan {
            locks: chosen,
            baseline_added,
            archs: resolved_archs,
            platforms: resolved_platforms,
            cores,
        })
    }

    /// Checks that every core count of the `qemu` runs fits every board they boot: `board`
    /// gives a QEMU machine's board name and core count (boards/*.toml). The `qemu-icount` runs
    /// boot one core and the hosted ones need no board, so only `qemu` is checked.
    pub fn check_boards(
        &self,
        board: impl Fn(Machine) -> Result<(String, u32), String>,
    ) -> Result<(), String> {
        if !self.platforms.contains(&Platform::Qemu) {
            return Ok(());
        }
        let Some(&most) = self.cores.iter().max() else {
            return Ok(());
        };
        for &arch in &self.archs {
            for &machine in Plan::boards(arch) {
                let (name, cores) = board(machine)?;
                if most > cores {
                    return Err(format!(
                        "--cores {most}: board `{name}` (QEMU -M {}) has {cores} cores \
                         (boards/{name}.toml); the qemu platform boots it with each --cores \
                         count, so they must be 1..={cores} (or leave out --platform qemu or \
                         --arch {})",
                        machine.name(),
                        qemu_runner::qemu::arch_name(arch)
                    ));
                }
            }
        }
        Ok(())
    }

    /// The QEMU machines measured for `arch`.
    pub fn boards(arch: Arch) -> &'static [Machine] {
        match arch {
            Arch::X86_64 => &[Machine::Microvm],
            Arch::Armv7 => &Machine::ARMV7,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_lock_adds_the_baseline() {
        let p = Plan::new(&[LockArg::Lock(Lock::Clh)], &[], &[], &[]).unwrap();
        assert_eq!(p.locks, vec![Lock::None, Lock::Clh]);
        assert!(p.baseline_added);
        assert_eq!(p.archs, vec![Arch::X86_64, Arch::Armv7]);
        assert_eq!(p.platforms, Platform::ALL.to_vec());
        assert_eq!(p.cores, vec![1, 2, 4]);
    }

    #[test]
    fn brlock_is_fine_and_all_is_every_strategy_once() {
        let p = Plan::new(
            &[
                LockArg::Lock(Lock::Fine),
                LockArg::Lock(Lock::Fine),
                LockArg::Lock(Lock::None),
            ],
            &[],
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(p.locks, vec![Lock::None, Lock::Fine]);
        assert!(!p.baseline_added);
        let all = Plan::new(&[LockArg::All], &[], &[], &[]).unwrap();
        assert_eq!(all.locks, lock_registry::REPORT_ORDER.to_vec());
    }

    #[test]
    fn lists_are_resolved_and_checked() {
        let p = Plan::new(
            &[LockArg::Lock(Lock::None)],
            &[ArchArg::Armv7],
            &[PlatformArg::QemuIcount, PlatformArg::Hosted],
            &[4, 1, 4],
        )
        .unwrap();
        assert_eq!(p.archs, vec![Arch::Armv7]);
        assert_eq!(p.platforms, vec![Platform::Hosted, Platform::QemuIcount]);
        assert_eq!(p.cores, vec![1, 4]);
        assert!(Plan::new(&[], &[], &[], &[0]).is_err());
        assert!(Plan::new(&[], &[], &[], &[9]).is_err());
    }

    /// The board files' facts, as `check_boards` asks for them.
    fn board_of(machine: Machine) -> Result<(String, u32), String> {
        qemu_runner::board::for_qemu_machine(machine.name()).map(|b| (b.name.clone(), b.cores))
    }

    #[test]
    fn qemu_core_counts_must_fit_the_boards() {
        let qemu = |cores: &[u32], archs: &[ArchArg]| {
            Plan::new(
                &[LockArg::Lock(Lock::Clh)],
                archs,
                &[PlatformArg::Qemu],
                cores,
            )
            .unwrap()
            .check_boards(board_of)
        };
        assert!(qemu(&[1, 2, 4], &[]).is_ok());
        let err = qemu(&[1, 8], &[]).unwrap_err();
        assert!(
            err.starts_with("--cores 8: board `microvm` (QEMU -M microvm) has 4 cores"),
            "{err}"
        );
        assert!(err.contains("boards/microvm.toml"), "{err}");
        let err = qemu(&[6], &[ArchArg::Armv7]).unwrap_err();
        assert!(err.contains("board `sabrelite`"), "{err}");
        // A made-up board of 2 cores names itself.
        let two = Plan::new(&[], &[ArchArg::X86_64], &[PlatformArg::Qemu], &[4])
            .unwrap()
            .check_boards(|_| Ok(("tiny".into(), 2)))
            .unwrap_err();
        assert!(
            two.contains("board `tiny`") && two.contains("1..=2"),
            "{two}"
        );
        // Other platforms boot no multicore guest: anything the kernel takes is fine.
        let hosted = Plan::new(
            &[],
            &[],
            &[PlatformArg::Hosted, PlatformArg::QemuIcount],
            &[8],
        )
        .unwrap();
        assert!(hosted.check_boards(board_of).is_ok());
        // A board that cannot be read is an error too.
        assert!(Plan::new(&[], &[], &[PlatformArg::Qemu], &[1])
            .unwrap()
            .check_boards(|_| Err("no board".into()))
            .is_err());
    }

    #[test]
    fn strategies_of_locks() {
        assert_eq!(strategy_of("clh"), "big-lock");
        assert_eq!(strategy_of("ticket"), "big-lock");
        assert_eq!(strategy_of("brlock"), "fine");
        assert_eq!(strategy_of("none"), "none");
        assert!(lock_rank("none") < lock_rank("clh"));
    }
}
