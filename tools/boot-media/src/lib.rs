//! `cargo xtask flash`: make a board's boot medium and write it, safely, to a disk or a file.
//!
//! * `--board pc`: a disk image that boots on BIOS and UEFI PCs: `grub-mkrescue` (GRUB from
//!   Debian's grub-pc-bin and grub-efi-amd64-bin) makes a hybrid image (ISO 9660 with an MBR
//!   and an EFI system partition) holding the kernel (`/boot/locked-in`, the same ELF that
//!   `cargo xtask qemu` boots through PVH) and a `grub.cfg` that starts it through its
//!   multiboot2 entry with the kernel command line, GRUB's console on COM1 and the screen.
//! * `--board sabrelite`: an SD card image: an MBR with one FAT32 partition (made with sfdisk
//!   and mtools, nothing mounted) holding `uImage` (the kernel as a flat binary in a U-Boot
//!   legacy image, `mkimage`), `boot.scr` and `6x_bootscript` (the compiled boot script the
//!   stock U-Boot looks for) and `locked-in.elf` (the ELF `cargo xtask qemu --arch armv7`
//!   boots, for `bootelf`).
//!
//! The target (`--device` or `--image`) is checked first ([`safety`]), the medium is built in
//! `target/flash/<board>/`, then written with progress output, synced, its page-cache copy
//! dropped, read back and compared by SHA-256. `--dry-run` prints every step and writes
//! nothing. `--check` (for `cargo xtask test`) verifies the written medium: the pc image is
//! booted from the written file by QEMU under the firmware named, the SD image's partition
//! table, files, boot script and U-Boot header are read back and its kernel compared with the
//! ELF.

// Their readers are the tools' maintainers (`cargo doc --document-private-items`): the docs
// link to private items on purpose.
#![allow(rustdoc::private_intra_doc_links)]

pub mod safety;

use std::fs;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use sha2::{Digest, Sha256};

use host_env::proc::Cmd;
use protocol::console::SHUTDOWN_SUCCESS;
use qemu_runner::board::{self, Board};
use qemu_runner::qemu::{self, Arch, Lock};
use safety::{Intent, SysRoots, Target};

/// OVMF, the UEFI firmware for QEMU (Debian package `ovmf`).
pub const OVMF: &str = "/usr/share/ovmf/OVMF.fd";

/// U-Boot for QEMU's 32-bit ARM virt machine (Debian package `u-boot-qemu`).
pub const UBOOT_VIRT: &str = "/usr/lib/u-boot/qemu_arm/u-boot.bin";

/// A tool a medium needs and the Debian package that provides it. A name with a `/` is a file
/// or directory that must exist.
pub type Tool = (&'static str, &'static str);

/// What `grub-mkrescue` needs for a BIOS + UEFI image.
pub const PC_TOOLS: &[Tool] = &[
    ("grub-mkrescue", "grub-common"),
    ("/usr/lib/grub/i386-pc/modinfo.sh", "grub-pc-bin"),
    ("/usr/lib/grub/x86_64-efi/modinfo.sh", "grub-efi-amd64-bin"),
    ("xorriso", "xorriso"),
    ("mformat", "mtools"),
];

/// What the SD card image needs.
pub const SD_TOOLS: &[Tool] = &[
    ("sfdisk", "fdisk"),
    ("mformat", "mtools"),
    ("mcopy", "mtools"),
    ("mdir", "mtools"),
    ("mkimage", "u-boot-tools"),
];

/// Firmware a `--check` boot of the pc image runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Firmware {
    /// SeaBIOS (QEMU's default BIOS) on `-M pc` (i440FX).
    SeabiosPc,
    /// SeaBIOS on `-M q35`.
    SeabiosQ35,
    /// UEFI: OVMF (`/usr/share/ovmf/OVMF.fd`) on `-M q35`.
    OvmfQ35,
    /// The SD image: Debian's U-Boot for QEMU's ARM virt machine (`u-boot-qemu`,
    /// [`UBOOT_VIRT`]) on `-M virt -cpu cortex-a15` with the card as a virtio disk: its distro
    /// boot runs `boot.scr`, which loads `uImage` and starts it with `bootm` (the image runs on
    /// virt too: same load address, the HAL picks the machine from the CPU).
    UbootVirt,
}

impl Firmware {
    fn name(self) -> &'static str {
        match self {
            Firmware::SeabiosPc => "seabios-pc",
            Firmware::SeabiosQ35 => "seabios-q35",
            Firmware::OvmfQ35 => "ovmf-q35",
            Firmware::UbootVirt => "uboot-virt",
        }
    }
}

/// Options of `cargo xtask flash`.
#[derive(Debug, Args, Clone)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["device", "image"])))]
pub struct FlashArgs {
    /// The board (a file boards/<board>.toml with a [flash] section): `pc` or `sabrelite`.
    #[arg(long)]
    pub board: String,

    /// The kernel's locking strategy (`lock=` on the kernel command line).
    #[arg(long, value_enum, default_value = "clh")]
    pub lock: Lock,

    /// Cores the kernel uses (`cpus=` on the kernel command line; default: the board file's
    /// `cores`). Cores beyond it are started and stay parked.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub smp: Option<u32>,

    /// What the kernel runs: `demo` (an IPC ping-pong pair per core) or `test` (its test
    /// suite).
    #[arg(long, default_value = "demo", value_parser = ["demo", "test"])]
    pub mode: String,

    /// More kernel command-line words (`key=value`), put first so that they win.
    #[arg(long, value_name = "WORDS")]
    pub append: Option<String>,

    /// The whole disk to write (`/dev/sdX`, `/dev/mmcblkN`): refused if mounted, holding `/`,
    /// a partition, or not a block device or regular file.
    #[arg(long, value_name = "DEV")]
    pub device: Option<PathBuf>,

    /// Write the medium to this file instead (created or overwritten), e.g. to `dd` it later
    /// or boot it in QEMU.
    #[arg(long, value_name = "FILE")]
    pub image: Option<PathBuf>,

    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,

    /// Print every step (commands, files, the write) and write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// After writing, verify the medium (used by `cargo xtask test`): boot the pc image from
    /// the written file under each `--firmware` in QEMU and require `cpus online: N`, the
    /// lock and the kernel's success exit; read the SD image's partition table, files, boot
    /// script and U-Boot header back and compare its kernel with the ELF QEMU boots.
    #[arg(long)]
    pub check: bool,

    /// Firmware for `--check` boots (repeatable): for the pc image seabios-pc, seabios-q35,
    /// ovmf-q35 (default: all three); for the SD image uboot-virt (default: none, only the
    /// contents are checked).
    #[arg(long, value_enum)]
    pub firmware: Vec<Firmware>,

    /// Seconds a `--check` boot may take.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
}

/// Runs `cargo xtask flash`.
pub fn run(root: &Path, args: &FlashArgs) -> ExitCode {
    host_env::exit_code("flash", flash(root, args))
}

/// Prints and runs commands, or only prints them under `--dry-run`.
struct Runner {
    dry_run: bool,
}

impl Runner {
    fn step(&self, what: &str) {
        let prefix = if self.dry_run {
            "flash (dry run)"
        } else {
            "flash"
        };
        eprintln!("{prefix}: {what}");
    }

    fn run(&self, cmd: Cmd, dir: &Path) -> Result<(), String> {
        self.step(&format!("$ {}", cmd.display()));
        if self.dry_run {
            return Ok(());
        }
        let out = cmd
            .run_captured(dir, false, Duration::from_secs(300))
            .map_err(|e| format!("could not run `{}`: {e}", cmd.display()))?;
        if out.status.success() && !out.timed_out {
            Ok(())
        } else {
            Err(format!(
                "`{}` failed ({}):\n{}",
                cmd.display(),
                out.status,
                out.lines.join("\n")
            ))
        }
    }

    fn write(&self, path: &Path, text: &str) -> Result<(), String> {
        self.step(&format!(
            "write {} ({} bytes):\n{}",
            path.display(),
            text.len(),
            text.lines()
                .map(|l| format!("    | {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        ));
        if self.dry_run {
            return Ok(());
        }
        fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// The tools of `tools` that are missing, as `"<tool> (apt-get install <package>)"`.
pub fn missing_tools(tools: &[Tool]) -> Vec<String> {
    tools
        .iter()
        .filter(|(tool, _)| {
            if tool.contains('/') {
                !Path::new(tool).exists()
            } else {
                !on_path(tool)
            }
        })
        .map(|(tool, pkg)| format!("{tool} (apt-get install {pkg})"))
        .collect()
}

/// The kernel command line for the board and options.
pub fn kernel_cmdline(args: &FlashArgs, board: &Board) -> String {
    let cpus = args.smp.unwrap_or(board.cores);
    let mut line = args.append.clone().map(|a| a + " ").unwrap_or_default();
    // A board whose console is another UART than QEMU's model uses (the Sabre Lite's UART2)
    // tells the kernel so: `console=uart2`.
    let c = &board.console;
    if c.qemu_uart.as_ref().is_some_and(|q| *q != c.uart) {
        line.push_str(&format!("console={} ", c.uart.to_lowercase()));
    }
    line.push_str(&format!(
        "lock={} mode={} rounds={} cpus={cpus}",
        args.lock.name(),
        args.mode,
        if args.mode == "test" { 20 } else { 500 }
    ));
    line
}

fn flash(root: &Path, args: &FlashArgs) -> Result<(), String> {
    let board = board::load(root, &args.board)?;
    let Some(medium) = board.flash.as_ref().map(|f| f.medium.clone()) else {
        let flashable: Vec<String> = board::names(root)
            .into_iter()
            .filter(|n| board::load(root, n).is_ok_and(|b| b.flash.is_some()))
            .collect();
        return Err(format!(
            "board {} has no [flash] section (a QEMU-only machine); boards with a boot medium: {}",
            board.name,
            flashable.join(", ")
        ));
    };
    if let Some(smp) = args.smp {
        board.check_smp(smp)?;
    }
    // The target first: a refusal must come before any work.
    let (path, intent) = match (&args.device, &args.image) {
        (Some(d), _) => (d.clone(), Intent::Device),
        (None, Some(i)) => (i.clone(), Intent::Image),
        (None, None) => return Err("give --device DEV or --image FILE".into()),
    };
    let target = safety::check(&path, safety::stat(&path), intent, &SysRoots::real())?;
    let tools = match medium.as_str() {
        "grub-disk" => PC_TOOLS,
        _ => SD_TOOLS,
    };
    let missing = missing_tools(tools);
    if !missing.is_empty() {
        return Err(format!(
            "missing tools for the {} medium: {}",
            board.name,
            missing.join(", ")
        ));
    }
    for fw in &args.firmware {
        let (fits, needs): (bool, Tool) = match fw {
            Firmware::SeabiosPc | Firmware::SeabiosQ35 => (
                medium == "grub-disk",
                ("qemu-system-x86_64", "qemu-system-x86"),
            ),
            Firmware::OvmfQ35 => (medium == "grub-disk", (OVMF, "ovmf")),
            Firmware::UbootVirt => (medium == "uboot-sd", (UBOOT_VIRT, "u-boot-qemu")),
        };
        if !fits {
            return Err(format!(
                "--firmware {} does not boot the {} medium of board {}",
                fw.name(),
                medium,
                board.name
            ));
        }
        let m = missing_tools(&[needs]);
        if args.check && !m.is_empty() {
            return Err(format!(
                "--check under {} needs {}",
                fw.name(),
                m.join(", ")
            ));
        }
    }

    let r = Runner {
        dry_run: args.dry_run,
    };
    r.step(&format!("target {}", target.describe(&path)));

    let cmdline = kernel_cmdline(args, &board);
    r.step(&format!(
        "board {} ({}); kernel command line \"{cmdline}\"",
        board.name, board.description
    ));
    let arch = if board.arch == "armv7" {
        Arch::Armv7
    } else {
        Arch::X86_64
    };
    let elf = if args.dry_run {
        let elf = qemu::image_path(root, arch, false);
        let (package, target) = qemu::image_package(arch);
        r.step(&format!(
            "$ cargo build -p {package} --target {target} --release (the image QEMU boots: {})",
            elf.display()
        ));
        elf
    } else {
        qemu::build_image(root, arch, false, "flash")?
    };
    let work = host_env::target_dir(root).join("flash").join(&board.name);
    r.step(&format!("work directory {}", work.display()));
    if !args.dry_run {
        let _ = fs::remove_dir_all(&work);
        fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    }
    let medium_path = match medium.as_str() {
        "grub-disk" => make_pc(&r, &work, &elf, &cmdline)?,
        _ => make_sd(&r, &work, &elf, &cmdline, &board)?,
    };

    if args.dry_run {
        r.step(&format!(
            "would write {} to {}, sync, read it back and compare SHA-256; nothing written",
            medium_path.display(),
            path.display()
        ));
        return Ok(());
    }
    let len = fs::metadata(&medium_path)
        .map_err(|e| format!("{}: {e}", medium_path.display()))?
        .len();
    if let Target::Disk { size, .. } = target {
        if size < len {
            return Err(format!(
                "{} holds {} but the medium needs {}",
                path.display(),
                safety::human(size),
                safety::human(len)
            ));
        }
    }
    let ask = match target {
        Target::Disk { .. } => true,
        Target::File { exists, len } => exists && len > 0,
    };
    if ask && !args.yes {
        confirm(&path, &target)?;
    }
    let digest = write_verified(&medium_path, &path, matches!(target, Target::Disk { .. }))?;
    eprintln!(
        "flash: done: {} ({}) written to {}, read back, sha256 {digest}",
        medium_path.display(),
        safety::human(len),
        path.display()
    );
    if matches!(target, Target::Disk { .. }) {
        eprintln!("flash: you can remove the medium now");
    }

    if args.check {
        match medium.as_str() {
            "grub-disk" => {
                let firmware = if args.firmware.is_empty() {
                    vec![Firmware::SeabiosPc, Firmware::SeabiosQ35, Firmware::OvmfQ35]
                } else {
                    args.firmware.clone()
                };
                let smp = args.smp.unwrap_or(board.cores);
                for fw in firmware {
                    check_pc_boot(root, &path, fw, smp, args.lock, args.timeout)?;
                }
            }
            _ => {
                check_sd(&path, &elf, &cmdline, &board)?;
                if args.firmware.contains(&Firmware::UbootVirt) {
                    check_uboot_boot(
                        root,
                        &path,
                        args.smp.unwrap_or(board.cores),
                        args.lock,
                        args.timeout,
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// Asks on the terminal; only `yes` goes on.
fn confirm(path: &Path, target: &Target) -> Result<(), String> {
    eprintln!("flash: about to OVERWRITE {}", target.describe(path));
    eprint!("flash: everything on it will be lost; type `yes` to continue: ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| format!("cannot read the answer: {e}"))?;
    if answer.trim() == "yes" {
        Ok(())
    } else {
        Err("not confirmed; nothing written (pass --yes to skip the question)".into())
    }
}

/// The GRUB configuration of the pc medium.
pub fn grub_cfg(cmdline: &str) -> String {
    format!(
        "# locked-in: made by `cargo xtask flash --board pc`.\n\
         # GRUB talks on COM1 (115200 8N1) and the screen; the kernel's console is COM1.\n\
         serial --unit=0 --speed=115200 --word=8 --parity=no --stop=1\n\
         terminal_input serial console\n\
         terminal_output serial console\n\
         set timeout=2\n\
         set default=0\n\
         \n\
         menuentry \"locked-in ({cmdline})\" {{\n\
         \x20   echo \"Loading locked-in through multiboot2 ...\"\n\
         \x20   multiboot2 /boot/locked-in {cmdline}\n\
         \x20   boot\n\
         }}\n"
    )
}

fn make_pc(r: &Runner, work: &Path, elf: &Path, cmdline: &str) -> Result<PathBuf, String> {
    let tree = work.join("tree");
    let grub_dir = tree.join("boot/grub");
    r.step(&format!("mkdir -p {}", grub_dir.display()));
    if !r.dry_run {
        fs::create_dir_all(&grub_dir).map_err(|e| format!("{}: {e}", grub_dir.display()))?;
    }
    let kernel = tree.join("boot/locked-in");
    r.step(&format!("copy {} to {}", elf.display(), kernel.display()));
    if !r.dry_run {
        fs::copy(elf, &kernel).map_err(|e| format!("copying {}: {e}", elf.display()))?;
    }
    r.run(
        Cmd::new("grub-file")
            .arg("--is-x86-multiboot2")
            .arg(&kernel),
        work,
    )
    .map_err(|e| format!("the kernel has no valid multiboot2 header: {e}"))?;
    r.write(&grub_dir.join("grub.cfg"), &grub_cfg(cmdline))?;
    let img = work.join("pc.img");
    r.run(
        Cmd::new("grub-mkrescue")
            .arg("-o")
            .arg(&img)
            .arg(&tree)
            .args(["--", "-volid", "LOCKEDIN"]),
        work,
    )?;
    Ok(img)
}

/// The U-Boot script of the SD medium (compiled into `boot.scr` by `mkimage -T script`).
pub fn boot_cmd(cmdline: &str, loadaddr: u64) -> String {
    format!(
        "# locked-in: made by `cargo xtask flash --board sabrelite`; compiled into boot.scr.\n\
         # The Sabre Lite's stock U-Boot runs it from the SD card's first partition.\n\
         setenv bootargs \"{cmdline}\"\n\
         setenv li_dev \"mmc 0:1\"\n\
         if test -n \"${{devtype}}\"; then setenv li_dev \"${{devtype}} ${{devnum}}:${{distro_bootpart}}\"; fi\n\
         if test -n \"${{dtype}}\"; then setenv li_dev \"${{dtype}} ${{disk}}:1\"; fi\n\
         setenv li_addr {loadaddr:#x}\n\
         if test -n \"${{kernel_addr_r}}\"; then setenv li_addr ${{kernel_addr_r}}; fi\n\
         echo \"locked-in: loading uImage from ${{li_dev}} to ${{li_addr}}\"\n\
         load ${{li_dev}} ${{li_addr}} uImage\n\
         if test -n \"${{fdtcontroladdr}}\"; then bootm ${{li_addr}} - ${{fdtcontroladdr}}; else bootm ${{li_addr}}; fi\n"
    )
}

/// Size of the SD card image and where its partition starts (sector 2048: 1 MiB).
const SD_SIZE: u64 = 64 << 20;
const SD_PART_START: u64 = 2048;

fn make_sd(
    r: &Runner,
    work: &Path,
    elf: &Path,
    cmdline: &str,
    board: &Board,
) -> Result<PathBuf, String> {
    let loadaddr = board
        .flash
        .as_ref()
        .and_then(|f| f.uboot_loadaddr)
        .ok_or("the board file has no uboot_loadaddr")?;
    let bin = work.join("locked-in.bin");
    let (load, entry) = if r.dry_run {
        r.step(&format!(
            "flatten the PT_LOAD segments of {} into {}",
            elf.display(),
            bin.display()
        ));
        (board.load_address, board.load_address)
    } else {
        let data = fs::read(elf).map_err(|e| format!("{}: {e}", elf.display()))?;
        let flat = flatten_elf(&data)?;
        r.step(&format!(
            "flatten the PT_LOAD segments of {} into {} ({} bytes at {:#x}, entry {:#x})",
            elf.display(),
            bin.display(),
            flat.bytes.len(),
            flat.load,
            flat.entry
        ));
        if flat.load != board.load_address {
            return Err(format!(
                "the image is linked at {:#x}, the board file says load_address = {:#x}",
                flat.load, board.load_address
            ));
        }
        fs::write(&bin, &flat.bytes).map_err(|e| format!("{}: {e}", bin.display()))?;
        (flat.load, flat.entry)
    };
    let uimage = work.join("uImage");
    r.run(
        Cmd::new("mkimage")
            .args(["-A", "arm", "-O", "linux", "-T", "kernel", "-C", "none"])
            .args(["-a", &format!("{load:#x}"), "-e", &format!("{entry:#x}")])
            .args(["-n", "locked-in"])
            .arg("-d")
            .arg(&bin)
            .arg(&uimage),
        work,
    )?;
    let cmd_file = work.join("boot.cmd");
    r.write(&cmd_file, &boot_cmd(cmdline, loadaddr))?;
    let scr = work.join("boot.scr");
    r.run(
        Cmd::new("mkimage")
            .args(["-A", "arm", "-O", "linux", "-T", "script", "-C", "none"])
            .args(["-n", "locked-in boot script", "-d"])
            .arg(&cmd_file)
            .arg(&scr),
        work,
    )?;
    let img = work.join("sd.img");
    r.step(&format!(
        "create {} ({}) of zeros",
        img.display(),
        safety::human(SD_SIZE)
    ));
    if !r.dry_run {
        let f = fs::File::create(&img).map_err(|e| format!("{}: {e}", img.display()))?;
        f.set_len(SD_SIZE)
            .map_err(|e| format!("{}: {e}", img.display()))?;
    }
    let table = format!("label: dos\nstart={SD_PART_START}, type=c, bootable\n");
    r.step(&format!("partition table for sfdisk: {table:?}"));
    if !r.dry_run {
        sfdisk(&img, &table, work)?;
    } else {
        r.step(&format!(
            "$ sfdisk --no-reread --no-tell-kernel {}",
            img.display()
        ));
    }
    let part = format!("{}@@{}", img.display(), SD_PART_START * 512);
    r.run(
        Cmd::new("mformat")
            .args(["-i", &part, "-F", "-v", "LOCKEDIN"])
            .arg("::"),
        work,
    )?;
    for (src, name) in [
        (&uimage, "uImage"),
        (&scr, "boot.scr"),
        (&scr, "6x_bootscript"),
        (&elf.to_path_buf(), "locked-in.elf"),
        (&cmd_file, "boot.cmd"),
    ] {
        r.run(
            Cmd::new("mcopy")
                .args(["-i", &part])
                .arg(src)
                .arg(format!("::{name}")),
            work,
        )?;
    }
    Ok(img)
}

fn sfdisk(img: &Path, table: &str, work: &Path) -> Result<(), String> {
    let mut child = std::process::Command::new("sfdisk")
        .args(["--no-reread", "--no-tell-kernel", "-q"])
        .arg(img)
        .current_dir(work)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not run sfdisk: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("sfdisk has no stdin")?
        .write_all(table.as_bytes())
        .map_err(|e| format!("writing to sfdisk: {e}"))?;
    let out = child
        .wait_with_output()
        .map_err(|e| format!("sfdisk: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "sfdisk failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// An ELF's loadable bytes as one flat image.
#[derive(Debug, PartialEq, Eq)]
pub struct Flat {
    /// Physical address of the first byte.
    pub load: u64,
    /// The entry point.
    pub entry: u64,
    /// The bytes from the lowest to the end of the highest segment's file contents (gaps
    /// zero-filled; `.bss` beyond the file contents left to the kernel, which zeroes it).
    pub bytes: Vec<u8>,
}

/// Lays the `PT_LOAD` segments of a 32-bit ELF out at their physical addresses.
pub fn flatten_elf(data: &[u8]) -> Result<Flat, String> {
    use object::elf::{FileHeader32, PT_LOAD};
    use object::read::elf::{FileHeader, ProgramHeader};
    use object::Endianness;
    let header =
        FileHeader32::<Endianness>::parse(data).map_err(|e| format!("not an ELF32: {e}"))?;
    let endian = header.endian().map_err(|e| e.to_string())?;
    let segments: Vec<_> = header
        .program_headers(endian, data)
        .map_err(|e| e.to_string())?
        .iter()
        .filter(|p| p.p_type(endian) == PT_LOAD && p.p_filesz(endian) > 0)
        .collect();
    let load = segments
        .iter()
        .map(|p| u64::from(p.p_paddr(endian)))
        .min()
        .ok_or("the ELF has no loadable segment")?;
    let end = segments
        .iter()
        .map(|p| u64::from(p.p_paddr(endian)) + u64::from(p.p_filesz(endian)))
        .max()
        .unwrap_or(load);
    if end - load > 256 << 20 {
        return Err(format!(
            "the segments span {:#x}..{end:#x}: too large",
            load
        ));
    }
    let mut bytes = vec![0u8; (end - load) as usize];
    for p in &segments {
        let off = (u64::from(p.p_paddr(endian)) - load) as usize;
        let src = p
            .data(endian, data)
            .map_err(|_| "a segment lies outside the file")?;
        bytes[off..off + src.len()].copy_from_slice(src);
    }
    Ok(Flat {
        load,
        entry: u64::from(header.e_entry(endian)),
        bytes,
    })
}

/// Writes `src` to `dst` with progress, syncs, drops the cached copy, reads it back and
/// compares SHA-256 digests; returns the digest.
fn write_verified(src: &Path, dst: &Path, is_device: bool) -> Result<String, String> {
    let total = fs::metadata(src)
        .map_err(|e| format!("{}: {e}", src.display()))?
        .len();
    let mut input = fs::File::open(src).map_err(|e| format!("{}: {e}", src.display()))?;
    let mut out = fs::OpenOptions::new()
        .write(true)
        .create(!is_device)
        .truncate(!is_device)
        .open(dst)
        .map_err(|e| format!("cannot open {} for writing: {e}", dst.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 4 << 20];
    let mut done = 0u64;
    let start = Instant::now();
    loop {
        let n = input
            .read(&mut buf)
            .map_err(|e| format!("reading {}: {e}", src.display()))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])
            .map_err(|e| format!("writing {} at byte {done}: {e}", dst.display()))?;
        hasher.update(&buf[..n]);
        done += n as u64;
        // On a terminal one line is rewritten; in a log each step is a line.
        let end = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            "\r"
        } else {
            "\n"
        };
        eprint!(
            "{}flash: writing {}: {} of {} ({:.0}%)   ",
            if end == "\r" { "\r" } else { "" },
            dst.display(),
            safety::human(done),
            safety::human(total),
            done as f64 * 100.0 / total.max(1) as f64
        );
        if end == "\n" {
            eprintln!();
        }
    }
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!();
    }
    eprintln!("flash: syncing {} ...", dst.display());
    out.sync_all()
        .map_err(|e| format!("syncing {}: {e}", dst.display()))?;
    drop_cache(&out);
    drop(out);
    let written = format!("{:x}", hasher.finalize());

    eprintln!("flash: reading {} back ...", dst.display());
    let mut back = fs::File::open(dst).map_err(|e| format!("{}: {e}", dst.display()))?;
    drop_cache(&back);
    let mut hasher = Sha256::new();
    let mut left = total;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        back.read_exact(&mut buf[..want])
            .map_err(|e| format!("reading {} back: {e}", dst.display()))?;
        hasher.update(&buf[..want]);
        left -= want as u64;
    }
    let read = format!("{:x}", hasher.finalize());
    if read != written {
        return Err(format!(
            "verification FAILED: wrote sha256 {written}, read back {read} from {}",
            dst.display()
        ));
    }
    eprintln!(
        "flash: verified {} in {:.1} s: sha256 {read}",
        safety::human(total),
        start.elapsed().as_secs_f64()
    );
    Ok(read)
}

/// Asks the kernel to drop its cached pages of `file`, so that a read-back comes from the
/// medium (the data is synced first, so the pages are clean).
fn drop_cache(file: &fs::File) {
    use std::os::fd::AsRawFd;
    // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open for the
    // duration of the call (borrowed from `file`).
    let _ = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// Boots the written pc medium in QEMU under `fw` and checks the console and exit status.
fn check_pc_boot(
    root: &Path,
    disk: &Path,
    fw: Firmware,
    smp: u32,
    lock: Lock,
    timeout: u64,
) -> Result<(), String> {
    let machine = match fw {
        Firmware::SeabiosPc => "pc",
        _ => "q35",
    };
    qemu::ensure_qemu(Arch::X86_64)?;
    let mut cmd = Cmd::new(qemu::qemu_binary(Arch::X86_64))
        .args(["-M", machine, "-cpu", "max", "-smp"])
        .arg(smp.to_string())
        .args([
            "-m",
            "256M",
            "-display",
            "none",
            "-serial",
            "stdio",
            "-no-reboot",
            "-device",
            "isa-debug-exit,iobase=0xf4,iosize=0x04",
        ]);
    if fw == Firmware::OvmfQ35 {
        cmd = cmd.args(["-bios", OVMF]);
    }
    // A read-only snapshot: the check must not change the medium it checks.
    let cmd = cmd
        .arg("-drive")
        .arg(format!("file={},format=raw,snapshot=on", disk.display()));
    eprintln!("flash: check ({}): {}", fw.name(), cmd.display());
    let out = cmd
        .run_captured(root, false, Duration::from_secs(timeout))
        .map_err(|e| format!("could not run QEMU: {e}"))?;
    let tail = || {
        let start = out.lines.len().saturating_sub(qemu::TAIL);
        out.lines[start..]
            .iter()
            .map(|l| format!("    | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let verdict = judge_pc_boot(&out.lines, out.status.code(), out.timed_out, smp, lock);
    match verdict {
        Ok(summary) => {
            eprintln!(
                "flash: check ({}): ok: {summary} ({:.1} s)",
                fw.name(),
                out.elapsed.as_secs_f64()
            );
            Ok(())
        }
        Err(why) => Err(format!(
            "the medium did not boot under {}: {why}\n{}",
            fw.name(),
            tail()
        )),
    }
}

/// The verdict on a GRUB boot's console and QEMU status: GRUB must have loaded the kernel
/// through multiboot2, which must print `cpus online: {smp}`, `lock: {lock}` and shut down with
/// success (isa-debug-exit status 33) without a panic.
pub fn judge_pc_boot(
    lines: &[String],
    code: Option<i32>,
    timed_out: bool,
    smp: u32,
    lock: Lock,
) -> Result<String, String> {
    let has = |needle: &str| lines.iter().any(|l| l.contains(needle));
    let lock_name = lock.name();
    let mut missing = Vec::new();
    for needle in [
        "Loading locked-in through multiboot2".to_owned(),
        "multiboot2 boot ok".to_owned(),
        format!("cpus online: {smp}"),
        format!("lock: {lock_name} "),
        SHUTDOWN_SUCCESS.to_owned(),
    ] {
        if !has(&needle) {
            missing.push(format!("`{}`", needle.trim_end()));
        }
    }
    if has("!!! PANIC") {
        return Err("the kernel panicked".into());
    }
    if timed_out {
        return Err(format!(
            "no exit before the timeout (missing: {})",
            missing.join(", ")
        ));
    }
    let (ok, what) = qemu::explain_status(code);
    if !ok {
        return Err(what);
    }
    if !missing.is_empty() {
        return Err(format!("the console lacks {}", missing.join(", ")));
    }
    let programs = lines
        .iter()
        .find(|l| l.starts_with("all ") && l.contains("programs reported"))
        .cloned()
        .unwrap_or_default();
    Ok(format!(
        "GRUB -> multiboot2 -> cpus online: {smp}, lock {lock_name}, {what}; {programs}"
    ))
}

/// Boots the written SD image with Debian's U-Boot for QEMU virt ([`Firmware::UbootVirt`]) and
/// requires U-Boot to run the card's script and `bootm` the uImage, and the kernel to bring up
/// `smp` cores with `lock`, both read from U-Boot's `bootargs` in the device tree, and shut
/// down with success (semihosting status 0 with its success lines).
fn check_uboot_boot(
    root: &Path,
    card: &Path,
    smp: u32,
    lock: Lock,
    timeout: u64,
) -> Result<(), String> {
    qemu::ensure_qemu(Arch::Armv7)?;
    let cmd = Cmd::new(qemu::qemu_binary(Arch::Armv7))
        .args(["-M", "virt", "-cpu", "cortex-a15", "-m", "256M", "-smp"])
        .arg(smp.to_string())
        .args(["-bios", UBOOT_VIRT])
        .arg("-drive")
        .arg(format!(
            "if=none,file={},format=raw,id=card,snapshot=on",
            card.display()
        ))
        .args([
            "-device",
            "virtio-blk-device,drive=card",
            "-nic",
            "none",
            "-semihosting",
            "-display",
            "none",
            "-serial",
            "stdio",
            "-no-reboot",
        ]);
    eprintln!("flash: check (uboot-virt): {}", cmd.display());
    let out = cmd
        .run_captured(root, false, Duration::from_secs(timeout))
        .map_err(|e| format!("could not run QEMU: {e}"))?;
    let has = |needle: &str| out.lines.iter().any(|l| l.contains(needle));
    let mut missing: Vec<&str> = [
        "Found U-Boot script /boot.scr",
        "locked-in: loading uImage from virtio 0:1",
        "Image Name:   locked-in",
        "Starting kernel ...",
        "(from device tree)",
    ]
    .into_iter()
    .filter(|n| !has(n))
    .collect();
    let (ok, what) = qemu::explain_armv7(out.status.code(), &out.lines, smp, lock);
    if out.timed_out {
        missing.push("an exit before the timeout");
    }
    if ok && missing.is_empty() && !has("!!! PANIC") {
        eprintln!(
            "flash: check (uboot-virt): ok: U-Boot ran boot.scr, bootm started uImage, the \
             kernel read its command line from the device tree; cpus online: {smp}, lock {}; \
             {what} ({:.1} s)",
            lock.name(),
            out.elapsed.as_secs_f64()
        );
        return Ok(());
    }
    let start = out.lines.len().saturating_sub(qemu::TAIL);
    Err(format!(
        "the card did not boot through U-Boot: {what}{}\n{}",
        if missing.is_empty() {
            String::new()
        } else {
            format!("; missing: {}", missing.join(", "))
        },
        out.lines[start..]
            .iter()
            .map(|l| format!("    | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    ))
}

fn output(cmd: Cmd) -> Result<String, String> {
    let out = cmd
        .run_captured(Path::new("/"), false, Duration::from_secs(60))
        .map_err(|e| format!("could not run `{}`: {e}", cmd.display()))?;
    if !out.status.success() {
        return Err(format!(
            "`{}` failed ({}): {}",
            cmd.display(),
            out.status,
            out.lines.join("\n")
        ));
    }
    Ok(out.lines.join("\n"))
}

/// Checks the written SD image: partition table, files, boot script, U-Boot header, kernel.
fn check_sd(img: &Path, elf: &Path, cmdline: &str, board: &Board) -> Result<(), String> {
    let img = &fs::canonicalize(img).map_err(|e| format!("{}: {e}", img.display()))?;
    let work = img.with_extension("check");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;

    // 1. The partition table.
    let dump = output(Cmd::new("sfdisk").arg("--dump").arg(img))?;
    let part_line = dump
        .lines()
        .find(|l| l.contains(" : start="))
        .ok_or_else(|| format!("no partition in the table:\n{dump}"))?;
    let compact: String = part_line.split_whitespace().collect::<Vec<_>>().join(" ");
    if !dump.contains("label: dos")
        || !compact.contains(&format!("start= {SD_PART_START},"))
        || !compact.contains("type=c")
        || !compact.contains("bootable")
        || dump.lines().filter(|l| l.contains(" : start=")).count() != 1
    {
        return Err(format!(
            "unexpected partition table (want one bootable FAT32 LBA partition at sector \
             {SD_PART_START}):\n{dump}"
        ));
    }
    eprintln!("flash: check: partition table: {compact}");

    // 2. The files on the FAT partition.
    let part = format!("{}@@{}", img.display(), SD_PART_START * 512);
    let listing = output(Cmd::new("mdir").args(["-i", &part, "-b", "::"]))?;
    for name in [
        "uImage",
        "boot.scr",
        "6x_bootscript",
        "locked-in.elf",
        "boot.cmd",
    ] {
        if !listing
            .lines()
            .any(|l| l.trim_end() == format!("::/{name}"))
        {
            return Err(format!("{name} is not on the boot partition:\n{listing}"));
        }
        let to = work.join(name);
        output(
            Cmd::new("mcopy")
                .args(["-n", "-i", &part])
                .arg(format!("::{name}"))
                .arg(&to),
        )?;
    }
    eprintln!("flash: check: boot partition holds uImage, boot.scr, 6x_bootscript, locked-in.elf, boot.cmd");

    // 3. The kernel ELF is the one QEMU boots.
    let qemu_elf = fs::read(elf).map_err(|e| format!("{}: {e}", elf.display()))?;
    let on_card = fs::read(work.join("locked-in.elf")).map_err(|e| e.to_string())?;
    if on_card != qemu_elf {
        return Err(format!(
            "locked-in.elf differs from {} (the ELF `cargo xtask qemu --arch armv7` boots)",
            elf.display()
        ));
    }

    // 4. The U-Boot image: header fields and payload.
    let flat = flatten_elf(&qemu_elf)?;
    let info = output(Cmd::new("mkimage").arg("-l").arg(work.join("uImage")))?;
    let want = [
        "Image Name:   locked-in".to_owned(),
        "Image Type:   ARM Linux Kernel Image (uncompressed)".to_owned(),
        format!("Load Address: {:08x}", flat.load),
        format!("Entry Point:  {:08x}", flat.entry),
        format!("Data Size:    {} Bytes", flat.bytes.len()),
    ];
    for w in &want {
        if !info
            .lines()
            .any(|l| l.trim() == w.as_str() || l.trim().starts_with(w.as_str()))
        {
            return Err(format!("mkimage -l lacks `{w}`:\n{info}"));
        }
    }
    let uimage = fs::read(work.join("uImage")).map_err(|e| e.to_string())?;
    if uimage.len() != 64 + flat.bytes.len() || uimage[64..] != flat.bytes[..] {
        return Err(
            "the uImage payload is not the ELF's loadable segments laid out at their addresses"
                .into(),
        );
    }
    if flat.load != board.load_address {
        return Err(format!(
            "the kernel loads at {:#x}, the board file says {:#x}",
            flat.load, board.load_address
        ));
    }
    eprintln!(
        "flash: check: uImage: load {:#x}, entry {:#x}, {} bytes = the flattened ELF; \
         locked-in.elf byte-identical to {}",
        flat.load,
        flat.entry,
        flat.bytes.len(),
        elf.display()
    );

    // 5. The boot script: its header, and its text is the one made for this command line.
    let scr_info = output(Cmd::new("mkimage").arg("-l").arg(work.join("boot.scr")))?;
    if !scr_info.contains("Image Type:   ARM Linux Script") {
        return Err(format!(
            "boot.scr is not a U-Boot script image:\n{scr_info}"
        ));
    }
    let scr = fs::read(work.join("boot.scr")).map_err(|e| e.to_string())?;
    let loadaddr = board
        .flash
        .as_ref()
        .and_then(|f| f.uboot_loadaddr)
        .unwrap_or_default();
    let text = boot_cmd(cmdline, loadaddr);
    // A script image: 64-byte header, a table of lengths (one, then a 0), the script.
    let body = scr.get(64 + 8..).unwrap_or(&[]);
    if !body.starts_with(text.as_bytes()) {
        return Err("boot.scr does not hold the expected boot script".into());
    }
    if fs::read(work.join("6x_bootscript")).map_err(|e| e.to_string())? != scr {
        return Err("6x_bootscript differs from boot.scr".into());
    }
    for needle in [
        format!("setenv bootargs \"{cmdline}\""),
        format!("setenv li_addr {loadaddr:#x}"),
        "load ${li_dev} ${li_addr} uImage".to_owned(),
        "bootm ${li_addr}".to_owned(),
    ] {
        if !text.contains(&needle) {
            return Err(format!("the boot script lacks `{needle}`"));
        }
    }
    eprintln!("flash: check: boot.scr: U-Boot script image with `{}`, loads uImage to ${{kernel_addr_r}} or {loadaddr:#x} and runs bootm", cmdline);
    let _ = fs::remove_dir_all(&work);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(board: &str) -> FlashArgs {
        FlashArgs {
            board: board.into(),
            lock: Lock::Ticket,
            smp: Some(2),
            mode: "demo".into(),
            append: None,
            device: None,
            image: Some("/tmp/x.img".into()),
            yes: true,
            dry_run: false,
            check: false,
            firmware: Vec::new(),
            timeout: 60,
        }
    }

    #[test]
    fn command_line_carries_lock_mode_and_cores() {
        let root = host_env::workspace_root();
        let pc = board::load(&root, "pc").unwrap();
        assert_eq!(
            kernel_cmdline(&args("pc"), &pc),
            "lock=ticket mode=demo rounds=500 cpus=2"
        );
        let mut a = args("pc");
        a.smp = None;
        a.mode = "test".into();
        a.append = Some("clock=pit".into());
        assert_eq!(
            kernel_cmdline(&a, &pc),
            "clock=pit lock=ticket mode=test rounds=20 cpus=4"
        );
        let cfg = grub_cfg("lock=clh cpus=4");
        assert!(cfg.contains("multiboot2 /boot/locked-in lock=clh cpus=4\n"));
        assert!(cfg.contains("serial --unit=0 --speed=115200"));
        let scr = boot_cmd("lock=clh", 0x1200_0000);
        assert!(scr.contains("setenv li_addr 0x12000000\n"));
        assert!(scr.contains("load ${li_dev} ${li_addr} uImage\n"));
        assert!(scr.contains("else bootm ${li_addr}; fi\n"));
    }

    #[test]
    fn missing_tools_name_their_package() {
        let m = missing_tools(&[
            ("sh", "dash"),
            ("no-such-tool-xyz", "xyz-tools"),
            ("/no/such/file", "ovmf"),
        ]);
        assert_eq!(
            m,
            [
                "no-such-tool-xyz (apt-get install xyz-tools)",
                "/no/such/file (apt-get install ovmf)"
            ]
        );
    }

    #[test]
    fn elf_segments_are_flattened_at_their_addresses() {
        // A hand-made little-endian ELF32 with two PT_LOAD segments and a gap.
        let mut elf = vec![0u8; 0x200];
        elf[..4].copy_from_slice(b"\x7fELF");
        elf[4] = 1; // ELFCLASS32
        elf[5] = 1; // little-endian
        elf[6] = 1;
        let put16 =
            |e: &mut Vec<u8>, off: usize, v: u16| e[off..off + 2].copy_from_slice(&v.to_le_bytes());
        let put32 =
            |e: &mut Vec<u8>, off: usize, v: u32| e[off..off + 4].copy_from_slice(&v.to_le_bytes());
        put16(&mut elf, 16, 2); // ET_EXEC
        put16(&mut elf, 18, 40); // EM_ARM
        put32(&mut elf, 20, 1);
        put32(&mut elf, 24, 0x4020_0010); // entry
        put32(&mut elf, 28, 52); // phoff
        put16(&mut elf, 40, 52); // ehsize
        put16(&mut elf, 42, 32); // phentsize
        put16(&mut elf, 44, 3); // phnum
        let ph = |e: &mut Vec<u8>, i: usize, kind: u32, off: u32, paddr: u32, filesz: u32| {
            let b = 52 + 32 * i;
            put32(e, b, kind);
            put32(e, b + 4, off);
            put32(e, b + 8, paddr);
            put32(e, b + 12, paddr);
            put32(e, b + 16, filesz);
            put32(e, b + 20, filesz + 0x100);
        };
        ph(&mut elf, 0, 1, 0x100, 0x4020_0000, 8);
        ph(&mut elf, 1, 1, 0x180, 0x4020_0010, 4);
        ph(&mut elf, 2, 4, 0x1f0, 0, 4); // PT_NOTE: not loaded
        elf[0x100..0x108].copy_from_slice(b"ABCDEFGH");
        elf[0x180..0x184].copy_from_slice(b"WXYZ");
        let flat = flatten_elf(&elf).unwrap();
        assert_eq!(flat.load, 0x4020_0000);
        assert_eq!(flat.entry, 0x4020_0010);
        assert_eq!(flat.bytes, b"ABCDEFGH\0\0\0\0\0\0\0\0WXYZ");
        assert!(flatten_elf(b"not an elf").is_err());
    }

    #[test]
    fn pc_boot_verdicts() {
        let good: Vec<String> = [
            "Loading locked-in through multiboot2 ...",
            "locked-in x86_64 image: multiboot2 boot ok, cmdline \"x\"",
            "cpus online: 2",
            "lock: ticket (big kernel lock, ticket lock)",
            "all 2 programs reported after 400 ms",
            "shutting down: success (uptime 450 ms)",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert!(judge_pc_boot(&good, Some(33), false, 2, Lock::Ticket).is_ok());
        // Wrong core count, lock, status, a PVH boot, a panic, a hang.
        assert!(judge_pc_boot(&good, Some(33), false, 4, Lock::Ticket).is_err());
        assert!(judge_pc_boot(&good, Some(33), false, 2, Lock::Clh).is_err());
        assert!(judge_pc_boot(&good, Some(0), false, 2, Lock::Ticket).is_err());
        assert!(judge_pc_boot(&good, Some(33), true, 2, Lock::Ticket).is_err());
        let mut pvh = good.clone();
        pvh[1] = "locked-in x86_64 image: PVH boot ok".into();
        assert!(judge_pc_boot(&pvh, Some(33), false, 2, Lock::Ticket).is_err());
        let mut panic = good.clone();
        panic.push("!!! PANIC on cpu 0".into());
        assert!(judge_pc_boot(&panic, Some(33), false, 2, Lock::Ticket).is_err());
    }

    #[test]
    fn dry_run_writes_nothing_and_refusals_come_first() {
        let root = host_env::workspace_root();
        let dir = std::env::temp_dir().join(format!("xtask-flash-dry-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for board in ["pc", "sabrelite"] {
            let mut a = args(board);
            a.dry_run = true;
            a.image = Some(dir.join("medium.img"));
            match flash(&root, &a) {
                Ok(()) => {}
                // Without the tools the run stops before anything, naming the packages.
                Err(e) => assert!(
                    e.contains("missing tools") && e.contains("apt-get install"),
                    "{e}"
                ),
            }
            assert!(
                !dir.join("medium.img").exists(),
                "{board}: the dry run wrote the target"
            );
            // A character device is refused before the tools or the build are looked at.
            a.image = None;
            a.device = Some("/dev/null".into());
            let e = flash(&root, &a).unwrap_err();
            assert!(e.contains("character device"), "{e}");
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn qemu_only_boards_and_unknown_boards_are_refused() {
        let root = host_env::workspace_root();
        let e = flash(&root, &args("microvm")).unwrap_err();
        assert!(
            e.contains("no [flash] section") && e.contains("pc, sabrelite"),
            "{e}"
        );
        let e = flash(&root, &args("nosuchboard")).unwrap_err();
        assert!(e.contains("cannot read the board file"), "{e}");
    }
}
