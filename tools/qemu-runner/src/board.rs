//! Board descriptions: one TOML file per board in `boards/` (memory map, console UART, load
//! address, core count, timer frequency, QEMU model, flash medium), read by `cargo xtask qemu`,
//! `bench`, `trace` and `flash` instead of constants spread across xtask.
//!
//! A board is a machine the kernel runs on: a physical one (`pc`, `sabrelite`: they have a
//! `[flash]` section, so `cargo xtask flash` can make its boot medium) or a QEMU-only one
//! (`microvm`, `virt`). Each QEMU machine name (`-M`) belongs to exactly one board; `pc` covers
//! QEMU's `pc` and `q35`. The kernel's own copies of the ARM facts live in
//! `hal-armv7/src/machine.rs` (the HAL picks the machine at run time from the CPU); the unit
//! tests below check that the files say what the HALs and xtask's command lines assume.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

/// A board description (`boards/<name>.toml`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Board {
    /// The board's name: the file's stem and the value of `--board`.
    pub name: String,
    /// One line for humans.
    pub description: String,
    /// `x86_64` or `armv7`.
    pub arch: String,
    /// The board's cores: what `--smp` may ask for at most, and its default where a command
    /// takes the board's count.
    pub cores: u32,
    /// Physical address the kernel image is linked and loaded at.
    pub load_address: u64,
    /// The physical memory map (empty where the firmware reports it at boot).
    #[serde(default)]
    pub memory: Vec<Region>,
    /// The kernel's console.
    pub console: Console,
    /// The cycle/tick source.
    pub timer: Timer,
    /// How QEMU models the board.
    pub qemu: Qemu,
    /// How `cargo xtask flash` makes the boot medium; absent for QEMU-only boards.
    pub flash: Option<Flash>,
}

/// One range of the memory map.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// What it is.
    pub name: String,
    /// Physical start.
    pub start: u64,
    /// Length in bytes.
    pub size: u64,
    /// Device memory (true) or RAM (false).
    #[serde(default)]
    pub device: bool,
}

/// The console UART.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Console {
    /// The UART's name on the board (`COM1`, `UART2`, `PL011`).
    pub uart: String,
    /// Its physical (or I/O port) address.
    pub base: u64,
    /// Baud rate (8N1).
    pub baud: u32,
    /// The UART QEMU's model of the board connects to `-serial`, if another one.
    pub qemu_uart: Option<String>,
    /// Its address.
    pub qemu_base: Option<u64>,
}

/// The timer the kernel counts cycles with.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Timer {
    /// Which timer.
    pub source: String,
    /// Its frequency on the board in Hz; 0 when the kernel measures or reads it at boot.
    pub hz: u64,
    /// Its frequency under QEMU, if different.
    pub qemu_hz: Option<u64>,
}

/// QEMU's model of the board.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Qemu {
    /// The `-M` names that model this board (the first is the default).
    pub machines: Vec<String>,
    /// `-cpu`, when the machine's default CPU is not the one wanted.
    pub cpu: Option<String>,
    /// `-m`.
    pub memory: String,
    /// Extra QEMU arguments: the devices user drivers get besides the board's own.
    #[serde(default)]
    pub devices: Vec<String>,
}

/// What `cargo xtask flash` writes.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Flash {
    /// `grub-disk` (a BIOS+UEFI disk image through GRUB) or `uboot-sd` (an SD card with a FAT
    /// boot partition for U-Boot).
    pub medium: String,
    /// U-Boot's address for loading files (`uboot-sd`).
    pub uboot_loadaddr: Option<u64>,
}

/// The directory of the board files.
pub fn dir(root: &Path) -> PathBuf {
    root.join("boards")
}

/// Reads and checks `boards/<name>.toml`.
pub fn load(root: &Path, name: &str) -> Result<Board, String> {
    let path = dir(root).join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "cannot read the board file {}: {e} (the boards are: {})",
            path.display(),
            names(root).join(", ")
        )
    })?;
    let board = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if board.name != name {
        return Err(format!(
            "{}: name = \"{}\", but the file is named {name}.toml",
            path.display(),
            board.name
        ));
    }
    Ok(board)
}

/// Parses and checks one board file's text.
pub fn parse(text: &str) -> Result<Board, String> {
    let board: Board = toml::from_str(text).map_err(|e| e.to_string())?;
    if !matches!(board.arch.as_str(), "x86_64" | "armv7") {
        return Err(format!(
            "arch = \"{}\": must be \"x86_64\" or \"armv7\"",
            board.arch
        ));
    }
    if !(1..=8).contains(&board.cores) {
        return Err(format!(
            "cores = {}: the kernel is built for 1 to 8",
            board.cores
        ));
    }
    if board.qemu.machines.is_empty() {
        return Err("[qemu] machines is empty".into());
    }
    if let Some(flash) = &board.flash {
        match flash.medium.as_str() {
            "grub-disk" => {}
            "uboot-sd" if flash.uboot_loadaddr.is_some() => {}
            "uboot-sd" => return Err("[flash] medium uboot-sd needs uboot_loadaddr".into()),
            other => {
                return Err(format!(
                    "[flash] medium = \"{other}\": must be grub-disk or uboot-sd"
                ))
            }
        }
    }
    Ok(board)
}

/// The names of the board files present, sorted.
pub fn names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir(root))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            (path.extension()? == "toml").then(|| path.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    names
}

/// Every board, read once per process.
fn all() -> &'static Result<Vec<Board>, String> {
    static ALL: OnceLock<Result<Vec<Board>, String>> = OnceLock::new();
    ALL.get_or_init(|| {
        let root = host_env::workspace_root();
        names(&root).iter().map(|n| load(&root, n)).collect()
    })
}

impl Board {
    /// `Err` (naming the board file) when `--smp smp` asks for more cores than the board has:
    /// checked before anything is built, rather than left to QEMU's refusal or a guest that
    /// misses cores.
    pub fn check_smp(&self, smp: u32) -> Result<(), String> {
        if smp > self.cores {
            return Err(format!(
                "--smp {smp}: board `{}` has {} cores (boards/{}.toml); use --smp 1..={}",
                self.name, self.cores, self.name, self.cores
            ));
        }
        Ok(())
    }
}

/// The board whose QEMU model is `-M machine`.
pub fn for_qemu_machine(machine: &str) -> Result<&'static Board, String> {
    let boards = all().as_ref().map_err(Clone::clone)?;
    boards
        .iter()
        .find(|b| b.qemu.machines.iter().any(|m| m == machine))
        .ok_or_else(|| {
            format!(
                "no board file in boards/ lists the QEMU machine `{machine}` in [qemu] machines"
            )
        })
}

/// [`for_qemu_machine`], or a clear message and exit status 2: xtask cannot build a QEMU
/// command line without the board files, which are part of the checkout.
pub fn for_qemu_machine_or_exit(machine: &str) -> &'static Board {
    for_qemu_machine(machine).unwrap_or_else(|e| {
        eprintln!("xtask: {e}");
        std::process::exit(2)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> PathBuf {
        host_env::workspace_root()
    }

    #[test]
    fn more_cores_than_the_board_has_are_refused_naming_its_file() {
        let sabrelite = for_qemu_machine("sabrelite").unwrap();
        assert!(sabrelite.check_smp(sabrelite.cores).is_ok());
        assert!(sabrelite.check_smp(1).is_ok());
        let err = sabrelite.check_smp(8).unwrap_err();
        assert!(err.contains("board `sabrelite` has 4 cores"), "{err}");
        assert!(err.contains("boards/sabrelite.toml"), "{err}");
    }

    #[test]
    fn every_board_file_parses_and_is_named_after_its_file() {
        let names = names(&root());
        assert_eq!(names, ["microvm", "pc", "sabrelite", "virt"]);
        for name in &names {
            load(&root(), name).unwrap();
        }
    }

    #[test]
    fn every_qemu_machine_has_exactly_one_board() {
        use clap::ValueEnum;
        let boards: Vec<Board> = names(&root())
            .iter()
            .map(|n| load(&root(), n).unwrap())
            .collect();
        for m in crate::qemu::Machine::value_variants() {
            let owners: Vec<&str> = boards
                .iter()
                .filter(|b| b.qemu.machines.iter().any(|x| x == m.name()))
                .map(|b| b.name.as_str())
                .collect();
            assert_eq!(owners.len(), 1, "{}: {owners:?}", m.name());
            let b = for_qemu_machine(m.name()).unwrap();
            assert_eq!(b.arch, crate::qemu::arch_name(m.arch()));
        }
    }

    /// The facts the kernel has compiled in (hal-armv7/src/machine.rs, timer.rs, link.ld and
    /// hal-x86/link.ld) must match the board files: a change to one without the other fails
    /// here.
    #[test]
    fn board_files_match_the_hals() {
        let sabre = load(&root(), "sabrelite").unwrap();
        let virt = load(&root(), "virt").unwrap();
        let machine_rs = std::fs::read_to_string(root().join("hal-armv7/src/machine.rs")).unwrap();
        let timer_rs = std::fs::read_to_string(root().join("hal-armv7/src/timer.rs")).unwrap();
        let arm_ld = std::fs::read_to_string(root().join("hal-armv7/link.ld")).unwrap();
        let x86_ld = std::fs::read_to_string(root().join("hal-x86/link.ld")).unwrap();
        let hex = |v: u64| format!("0x{:04X}_{:04X}", v >> 16, v & 0xFFFF);
        assert!(machine_rs.contains(&format!(
            "IMX_UART1: usize = {};",
            hex(sabre.console.qemu_base.unwrap())
        )));
        assert!(machine_rs.contains(&format!("VIRT_PL011: usize = {};", hex(virt.console.base))));
        let ram = &sabre.memory[0];
        assert!(machine_rs.contains(&format!(
            "Machine::Sabrelite => ({}, {}),",
            hex(ram.start),
            hex(ram.size)
        )));
        assert!(timer_rs.contains(&format!(
            "QEMU_A9_PERIPHCLK_HZ: u64 = {};",
            sabre
                .timer
                .qemu_hz
                .unwrap()
                .to_string()
                .as_bytes()
                .rchunks(3)
                .rev()
                .map(|c| std::str::from_utf8(c).unwrap())
                .collect::<Vec<_>>()
                .join("_")
        )));
        for b in [&sabre, &virt] {
            assert!(arm_ld.contains(&format!(". = {:#x};", b.load_address)));
        }
        for n in ["pc", "microvm"] {
            let b = load(&root(), n).unwrap();
            assert!(x86_ld.contains(&format!(". = {:#x};", b.load_address)));
            assert_eq!(b.console.base, 0x3f8);
        }
    }

    #[test]
    fn malformed_boards_are_refused_with_a_reason() {
        let good = std::fs::read_to_string(root().join("boards/sabrelite.toml")).unwrap();
        assert!(parse(&good).is_ok());
        let bad_arch = good.replace("arch = \"armv7\"", "arch = \"riscv\"");
        assert!(parse(&bad_arch).unwrap_err().contains("arch"));
        let bad_cores = good.replace("cores = 4", "cores = 64");
        assert!(parse(&bad_cores).unwrap_err().contains("cores"));
        let unknown = good.replace("cores = 4", "cores = 4\ncolour = \"red\"");
        assert!(parse(&unknown).unwrap_err().contains("colour"));
        let no_loadaddr = good.replace("uboot_loadaddr = 0x12000000", "");
        assert!(parse(&no_loadaddr).unwrap_err().contains("uboot_loadaddr"));
    }
}
