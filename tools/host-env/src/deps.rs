//! The Debian packages the commands need, installed when they are missing.
//!
//! `cargo xtask test` and `cargo xtask qemu` are all the set-up a fresh Debian machine needs:
//! before they start, [`ensure`] looks for each tool they use (a program on `PATH` or a file
//! such as a firmware image) and installs the Debian package that provides a missing one, with
//! `apt-get` when running as root or through `sudo -n` when that works without a password.
//! Elsewhere (another distribution, no privileges) it prints the one command to run and the
//! caller stops, instead of failing later with a less clear error. `XTASK_NO_INSTALL=1` turns
//! installing off (the command is printed instead).

use std::path::Path;
use std::process::Command;

/// Something a command needs and the Debian package that provides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tool {
    /// A program looked up on `PATH`, or an absolute file path.
    pub what: &'static str,
    /// The Debian package.
    pub package: &'static str,
}

/// QEMU for both architectures: every QEMU step and `cargo xtask qemu`.
pub const QEMU: &[Tool] = &[
    Tool {
        what: "qemu-system-x86_64",
        package: "qemu-system-x86",
    },
    Tool {
        what: "qemu-system-arm",
        package: "qemu-system-arm",
    },
];

/// The `lock-crate:armv7-threads` step: QEMU's user-mode emulation, which runs the lock
/// crate's tests built for ARMv7 Linux, the cross compiler that links them, and the ARM C
/// library's development files: the start files and `libc.so` the link needs, and the headers
/// of any C a build script compiles. The compiler only recommends the last package, so an
/// install with `--no-install-recommends` leaves it out: it is named here on its own.
/// [`probe_arm_cross`] checks that the three together build and run a C program.
pub const ARM_USER: &[Tool] = &[
    Tool {
        what: "qemu-arm",
        package: "qemu-user",
    },
    Tool {
        what: "arm-linux-gnueabihf-gcc",
        package: "gcc-arm-linux-gnueabihf",
    },
    Tool {
        what: ARM_SYSROOT_CRT1,
        package: "libc6-dev-armhf-cross",
    },
    Tool {
        what: "/usr/arm-linux-gnueabihf/include/bits/libc-header-start.h",
        package: "libc6-dev-armhf-cross",
    },
];

/// The ARM C library's directory, which `qemu-arm -L` takes as the guest's root.
pub const ARM_SYSROOT: &str = "/usr/arm-linux-gnueabihf";

/// A start file of the ARM C library that every program's link needs.
const ARM_SYSROOT_CRT1: &str = "/usr/arm-linux-gnueabihf/lib/crt1.o";

/// The YCSB client (`net:x86_64-ycsb`, `bench:redis-tiny`, `bench redis`): Maven builds
/// the Jedis binding, Java runs it.
pub const YCSB: &[Tool] = &[
    Tool {
        what: "mvn",
        package: "maven",
    },
    Tool {
        what: "java",
        package: "default-jre-headless",
    },
];

/// passt, the network steps' default way from the guest's NIC to the host.
pub const PASST: Tool = Tool {
    what: "passt",
    package: "passt",
};

/// The network server's host side: passt, the user-mode network process that connects the
/// guest's NIC to the host by default (`cargo xtask qemu --net`, the `net:*` steps, the redis
/// suite), and the real Redis client: `qemu --net` tells how to reach the server with it, and
/// its `--check` runs it against the server beside xtask's own RESP client.
pub const NET: &[Tool] = &[
    PASST,
    Tool {
        what: "redis-cli",
        package: "redis-tools",
    },
];

/// The source-line mapper of `cargo xtask trace exec --lines`.
pub const ADDR2LINE: &[Tool] = &[Tool {
    what: "addr2line",
    package: "binutils",
}];

/// The clients and the baseline server of `cargo xtask bench redis` and its
/// `bench:redis-tiny` step: redis-benchmark, and the real redis-server that the Linux baseline
/// runs (copied into its initramfs).
pub const REDIS_BENCH: &[Tool] = &[
    Tool {
        what: "redis-benchmark",
        package: "redis-tools",
    },
    Tool {
        what: "redis-server",
        package: "redis-server",
    },
];

/// Redis's own test suite (`bench/redis-suite/run.sh`, steps `net:*-redis-suite`): its
/// harness is Tcl, and curl fetches the suite's source archive ([`crate::sources`]).
pub const REDIS_SUITE: &[Tool] = &[
    Tool {
        what: "tclsh",
        package: "tcl",
    },
    Tool {
        what: "curl",
        package: "curl",
    },
];

/// The boot-media tools of `cargo xtask flash` and its `flash:*` test steps: GRUB for BIOS and
/// UEFI, xorriso and mtools (`grub-mkrescue`), OVMF (UEFI for QEMU), sfdisk, mkimage, and
/// Debian's U-Boot for QEMU virt (the SD image's boot test).
pub const FLASH: &[Tool] = &[
    Tool {
        what: "grub-mkrescue",
        package: "grub-common",
    },
    Tool {
        what: "/usr/lib/grub/i386-pc/modinfo.sh",
        package: "grub-pc-bin",
    },
    Tool {
        what: "/usr/lib/grub/x86_64-efi/modinfo.sh",
        package: "grub-efi-amd64-bin",
    },
    Tool {
        what: "xorriso",
        package: "xorriso",
    },
    Tool {
        what: "mcopy",
        package: "mtools",
    },
    Tool {
        what: "/usr/share/ovmf/OVMF.fd",
        package: "ovmf",
    },
    Tool {
        what: "sfdisk",
        package: "fdisk",
    },
    Tool {
        what: "mkimage",
        package: "u-boot-tools",
    },
    Tool {
        what: "/usr/lib/u-boot/qemu_arm/u-boot.bin",
        package: "u-boot-qemu",
    },
];

/// A set of tools and who needs them: `cargo xtask doctor` reports them group by group, and
/// `cargo xtask test` installs the groups of the steps it runs.
#[derive(Clone, Copy, Debug)]
pub struct Need {
    /// What needs the tools, for the report.
    pub used_by: &'static str,
    /// The test steps that need them: a step whose name starts with one of these.
    pub steps: &'static [&'static str],
    /// The tools.
    pub tools: &'static [Tool],
}

/// Every tool any command or test step uses, by who needs it. `.ci/run` installs the same
/// packages (a unit test keeps the two lists equal).
pub const NEEDS: &[Need] = &[
    Need {
        used_by: "cargo xtask qemu, bench, flash; every QEMU test step",
        steps: &["qemu", "fuzz", "memory", "bench", "flash", "net"],
        tools: QEMU,
    },
    Need {
        used_by: "step lock-crate:armv7-threads (the lock crate's tests as ARMv7 Linux code)",
        steps: &["lock-crate:armv7"],
        tools: ARM_USER,
    },
    Need {
        used_by: "cargo xtask qemu --net; steps net:*; bench redis",
        steps: &["net", "bench:redis"],
        tools: NET,
    },
    Need {
        used_by: "redis-benchmark and the Linux baseline: steps net:*; bench redis",
        steps: &["net", "bench:redis"],
        tools: REDIS_BENCH,
    },
    Need {
        used_by: "the YCSB client: steps net:x86_64-ycsb, bench:redis-tiny; bench redis",
        steps: &["net:x86_64-ycsb", "bench:redis"],
        tools: YCSB,
    },
    Need {
        used_by: "Redis's own test suite: steps net:*-redis-suite",
        steps: &["net:x86_64-redis-suite", "net:armv7-virt-redis-suite"],
        tools: REDIS_SUITE,
    },
    Need {
        used_by: "cargo xtask flash; steps flash:*",
        steps: &["flash"],
        tools: FLASH,
    },
    Need {
        used_by: "cargo xtask trace exec --lines",
        steps: &[],
        tools: ADDR2LINE,
    },
];

/// The tools of every [`NEEDS`] group that one of the steps `names` needs (the `doctor` step
/// checks them all, so it needs every group).
pub fn for_steps<'a>(names: impl IntoIterator<Item = &'a str> + Clone) -> Vec<Tool> {
    let mut tools: Vec<Tool> = Vec::new();
    for need in NEEDS {
        let needed = names
            .clone()
            .into_iter()
            .any(|n| n == "doctor" || need.steps.iter().any(|p| n.starts_with(p)));
        if needed {
            for t in need.tools {
                if !tools.contains(t) {
                    tools.push(*t);
                }
            }
        }
    }
    tools
}

/// Checks that the ARM cross tools work together, as the `lock-crate:armv7-threads` step uses
/// them: a C program (including `<stdio.h>`, as a build script's C code would) compiled and
/// linked with `arm-linux-gnueabihf-gcc`, then run under `qemu-arm -L`, must print its line.
/// A file check alone would not see a broken or partial install; this does, and its error
/// names the packages.
pub fn probe_arm_cross() -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("xtask-arm-probe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = (|| {
        let src = dir.join("probe.c");
        let exe = dir.join("probe");
        std::fs::write(
            &src,
            "#include <stdio.h>\nint main(void) { puts(\"arm probe ok\"); return 0; }\n",
        )
        .map_err(|e| format!("{}: {e}", src.display()))?;
        let packages = "gcc-arm-linux-gnueabihf libc6-dev-armhf-cross qemu-user";
        let built = Command::new("arm-linux-gnueabihf-gcc")
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .output()
            .map_err(|e| format!("cannot run arm-linux-gnueabihf-gcc ({e}); install {packages}"))?;
        if !built.status.success() {
            let why = String::from_utf8_lossy(&built.stderr);
            let first = why.lines().find(|l| l.contains("error")).unwrap_or("");
            return Err(format!(
                "the ARM cross compiler cannot build a C program ({}); it needs the ARM C \
                 library's headers and start files: install {packages}",
                first.trim()
            ));
        }
        let ran = Command::new("qemu-arm")
            .args(["-L", ARM_SYSROOT])
            .arg(&exe)
            .output()
            .map_err(|e| format!("cannot run qemu-arm ({e}); install {packages}"))?;
        if !String::from_utf8_lossy(&ran.stdout).contains("arm probe ok") {
            return Err(format!(
                "qemu-arm -L {ARM_SYSROOT} could not run an ARM program ({}); install {packages}",
                ran.status
            ));
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// The Debian package that owns `path`, as `dpkg-query -S` says (`None`: no package does, or
/// there is no dpkg). Architecture qualifiers (`passt:amd64`) are dropped.
fn owner(path: &Path) -> Option<String> {
    // With merged /usr, a program found as /bin/x may be registered as /usr/bin/x or the
    // other way round.
    let text = path.to_string_lossy();
    let other = match text.strip_prefix("/usr") {
        Some(rest) if rest.starts_with("/bin/") || rest.starts_with("/sbin/") => rest.to_owned(),
        _ if text.starts_with("/bin/") || text.starts_with("/sbin/") => format!("/usr{text}"),
        _ => String::new(),
    };
    owner_of(path).or_else(|| (!other.is_empty()).then(|| owner_of(Path::new(&other)))?)
}

fn owner_of(path: &Path) -> Option<String> {
    let out = Command::new("dpkg-query")
        .arg("-S")
        .arg(path)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8_lossy(&out.stdout);
    // Diversions are listed first (`diversion by dash from: /bin/sh`).
    let line = text.lines().find(|l| !l.starts_with("diversion by"))?;
    let packages = line.rsplit_once(": ").map(|(p, _)| p)?;
    // `a, b: /path` when several packages share a directory: the first is enough here.
    let first = packages.split(", ").next()?;
    Some(first.split(':').next().unwrap_or(first).to_owned())
}

/// Where `tool` is on this machine: its absolute path, or the first `PATH` entry that has it.
fn locate(tool: &Tool) -> Option<std::path::PathBuf> {
    if tool.what.starts_with('/') {
        let p = Path::new(tool.what);
        return p.exists().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool.what))
        .find(|p| p.is_file())
}

/// One tool as `cargo xtask doctor` found it.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// There, from the package that [`Tool::package`] names (or from no package at all:
    /// alternatives links and tools installed by hand are not in dpkg's database).
    Ok(Option<String>),
    /// Not there.
    Missing,
    /// There, but from another package: a fresh machine that installs the named package may not
    /// get it, so the installer's list is wrong.
    OtherPackage(String),
}

/// How `tool` is found on this machine.
pub fn check(tool: &Tool) -> Found {
    match locate(tool) {
        None => Found::Missing,
        Some(path) => match owner(&path) {
            Some(p) if p != tool.package => Found::OtherPackage(p),
            p => Found::Ok(p),
        },
    }
}

/// `cargo xtask doctor`: every tool of [`NEEDS`], found or missing, with its package; with
/// `install`, installs the missing ones first; then the ARM cross probe. Returns whether all is
/// well.
pub fn doctor(install: bool) -> bool {
    let mut ok = true;
    if install {
        let all: Vec<Tool> = NEEDS.iter().flat_map(|n| n.tools.iter().copied()).collect();
        if let Err(why) = ensure("cargo xtask doctor", &all) {
            eprintln!("{why}");
            ok = false;
        }
    }
    let mut missing: Vec<&str> = Vec::new();
    for need in NEEDS {
        println!("{}:", need.used_by);
        for tool in need.tools {
            let line = match check(tool) {
                Found::Ok(Some(_)) => format!("ok       {} ({})", tool.what, tool.package),
                Found::Ok(None) => format!(
                    "ok       {} (not from a Debian package here; a fresh machine gets it from {})",
                    tool.what, tool.package
                ),
                Found::Missing => {
                    ok = false;
                    if !missing.contains(&tool.package) {
                        missing.push(tool.package);
                    }
                    format!("MISSING  {} (package {})", tool.what, tool.package)
                }
                Found::OtherPackage(p) => {
                    ok = false;
                    format!(
                        "WRONG    {} comes from package {p}, not {}: fix its entry in \
                         tools/host-env/src/deps.rs and .ci/run",
                        tool.what, tool.package
                    )
                }
            };
            println!("  {line}");
        }
    }
    // The probe runs whenever the two programs are there, so that it also shows what a
    // missing file above breaks.
    let programs = ARM_USER.iter().filter(|t| !t.what.starts_with('/'));
    if programs.clone().all(|t| locate(t).is_some()) {
        match probe_arm_cross() {
            Ok(()) => println!(
                "ARM cross probe: ok (a C program built, linked and run as ARMv7 Linux code)"
            ),
            Err(why) => {
                ok = false;
                println!("ARM cross probe: FAILED: {why}");
            }
        }
    } else {
        println!("ARM cross probe: not run (qemu-arm or arm-linux-gnueabihf-gcc missing)");
    }
    let workspace = crate::workspace_root();
    for tool in crate::cargo_tools::CARGO_TOOLS {
        println!("{} (from crates.io, `cargo install`):", tool.used_by);
        let found = if install {
            crate::cargo_tools::ensure("cargo xtask doctor", &workspace, tool)
        } else {
            crate::cargo_tools::check(&workspace, tool)
        };
        match found {
            Ok(path) => println!(
                "  ok       {} {} ({})",
                tool.program,
                tool.version,
                path.display()
            ),
            Err(why) => {
                ok = false;
                println!(
                    "  MISSING  {} {}: {why} (`cargo xtask doctor --install` installs it; `cargo xtask \
                     book` and `cargo xtask test` do so themselves)",
                    tool.program, tool.version
                );
            }
        }
    }
    for archive in crate::sources::SOURCES {
        println!(
            "{} (a source archive from Debian's archive):",
            archive.used_by
        );
        let found = if install {
            crate::sources::ensure("cargo xtask doctor", &workspace, archive)
        } else {
            crate::sources::check(&workspace, archive)
        };
        match found {
            Ok(dir) => println!("  ok       {} ({})", archive.what, dir.display()),
            Err(why) => {
                ok = false;
                println!(
                    "  MISSING  {}: {why} (`cargo xtask doctor --install` fetches it; `cargo \
                     xtask test` does so itself for the steps that read it)",
                    archive.what
                );
            }
        }
    }
    println!(
        "{} (rustup toolchain):",
        crate::cargo_tools::CARGO_FUZZ.used_by
    );
    let nightly = if install {
        crate::nightly::ensure("cargo xtask doctor")
    } else {
        crate::nightly::find()
    };
    match nightly {
        Ok(name) => println!(
            "  ok       {} ({}, as `{name}`)",
            crate::nightly::CHANNEL,
            crate::nightly::VERSION_LINE
        ),
        Err(why) => {
            ok = false;
            println!(
                "  MISSING  {}: {why} (`{}`; `cargo xtask doctor --install` and `cargo xtask fuzz` \
                 install it)",
                crate::nightly::CHANNEL,
                crate::nightly::install_command()
            );
        }
    }
    if !missing.is_empty() {
        println!("to install what is missing: {}", install_command(&missing));
        println!(
            "(or `cargo xtask doctor --install`; `cargo xtask test` installs what its steps need)"
        );
    }
    ok
}

/// Whether `tool` is present: an absolute path exists, or a program is on `PATH`.
fn present(tool: &Tool, path_var: Option<&std::ffi::OsStr>) -> bool {
    if tool.what.starts_with('/') {
        return Path::new(tool.what).exists();
    }
    path_var.is_some_and(|p| std::env::split_paths(p).any(|d| d.join(tool.what).is_file()))
}

/// The packages of the tools missing from `tools` (each once, in order).
pub fn missing(tools: &[Tool], path_var: Option<&std::ffi::OsStr>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for t in tools.iter().filter(|t| !present(t, path_var)) {
        if !out.contains(&t.package) {
            out.push(t.package);
        }
    }
    out
}

/// The command that installs `packages`.
pub fn install_command(packages: &[&str]) -> String {
    format!(
        "sudo apt-get install -y --no-install-recommends {}",
        packages.join(" ")
    )
}

/// Whether this process runs as root (and so may install packages or refresh their lists).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn works(cmd: &mut Command) -> bool {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Makes sure every tool in `tools` is there, installing the missing packages when it may.
/// `Err` says what to run (and why it could not be done here); the caller stops.
pub fn ensure(who: &str, tools: &[Tool]) -> Result<(), String> {
    let path_var = std::env::var_os("PATH");
    let need = missing(tools, path_var.as_deref());
    if need.is_empty() {
        return Ok(());
    }
    let command = install_command(&need);
    let apt = Path::new("/usr/bin/apt-get").exists();
    let allowed = std::env::var_os("XTASK_NO_INSTALL").is_none();
    let sudo = if is_root() {
        Some(false)
    } else if works(Command::new("sudo").args(["-n", "true"])) {
        Some(true)
    } else {
        None
    };
    let (Some(sudo), true, true) = (sudo, apt, allowed) else {
        return Err(format!(
            "{who} needs {} (missing); install with:\n    {command}{}",
            need.join(", "),
            if !apt {
                "\n(no apt-get here: install the equivalent packages of your distribution)"
            } else {
                ""
            }
        ));
    };
    eprintln!("{who}: installing {} (apt-get)", need.join(", "));
    let apt_get = |args: &[&str]| {
        let mut c = if sudo {
            let mut c = Command::new("sudo");
            c.args(["-n", "apt-get"]);
            c
        } else {
            Command::new("apt-get")
        };
        c.env("DEBIAN_FRONTEND", "noninteractive").args(args);
        c.status().is_ok_and(|s| s.success())
    };
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend(need.iter().copied());
    // The package lists of a fresh machine may be empty: update once and retry on failure.
    if apt_get(&args) || (apt_get(&["update", "-qq"]) && apt_get(&args)) {
        let still = missing(tools, std::env::var_os("PATH").as_deref());
        if still.is_empty() {
            return Ok(());
        }
        return Err(format!(
            "{who}: installed, but still missing {}; try:\n    {}",
            still.join(", "),
            install_command(&still)
        ));
    }
    Err(format!(
        "{who}: `apt-get install` failed for {}; run it yourself:\n    {command}",
        need.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_on_the_path_and_absolute_files() {
        let dir = std::env::temp_dir().join(format!("xtask-deps-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("present-tool"), "").unwrap();
        let path = std::env::join_paths([&dir]).unwrap();
        let tools = [
            Tool {
                what: "present-tool",
                package: "pkg-a",
            },
            Tool {
                what: "absent-tool",
                package: "pkg-b",
            },
            Tool {
                what: "other-absent-tool",
                package: "pkg-b",
            },
            Tool {
                what: "/definitely/not/here.fd",
                package: "pkg-c",
            },
        ];
        assert_eq!(missing(&tools, Some(&path)), ["pkg-b", "pkg-c"]);
        assert_eq!(missing(&tools[..1], Some(&path)), Vec::<&str>::new());
        assert_eq!(missing(&tools[..1], None), ["pkg-a"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ci_installs_every_package_the_commands_know() {
        let run = std::fs::read_to_string(crate::workspace_root().join(".ci/run")).unwrap();
        let list = run
            .split("packages=(")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .expect(".ci/run has a packages=( ... ) list");
        let listed: Vec<&str> = list.split_whitespace().collect();
        for t in NEEDS.iter().flat_map(|n| n.tools) {
            assert!(
                listed.contains(&t.package),
                ".ci/run does not install {} (for {})",
                t.package,
                t.what
            );
        }
        for package in listed {
            assert!(
                NEEDS
                    .iter()
                    .flat_map(|n| n.tools)
                    .any(|t| t.package == package),
                ".ci/run installs {package}, which no entry of NEEDS names"
            );
        }
    }

    #[test]
    fn steps_get_the_groups_they_need() {
        let tools = for_steps(["lock-crate:armv7-threads"]);
        assert!(tools.iter().any(|t| t.package == "libc6-dev-armhf-cross"));
        assert!(!tools.iter().any(|t| t.package == "passt"));
        let tools = for_steps(["net:x86_64-c50", "fmt"]);
        for package in ["passt", "redis-tools", "qemu-system-x86"] {
            assert!(tools.iter().any(|t| t.package == package), "{package}");
        }
        assert!(for_steps(["fmt", "clippy:host"]).is_empty());
        let all: Vec<Tool> = NEEDS.iter().flat_map(|n| n.tools.iter().copied()).collect();
        for t in &all {
            assert!(for_steps(["doctor"]).contains(t), "{}", t.what);
        }
        // Each tool once, however many groups name it.
        let all = for_steps(["net", "bench:redis-tiny", "flash:pc-bios"]);
        for (i, t) in all.iter().enumerate() {
            assert!(!all[..i].contains(t), "{} twice", t.what);
        }
    }

    #[test]
    fn a_tool_from_another_package_is_reported() {
        // /bin/sh exists on every machine this runs on and is never redis-tools's.
        let wrong = Tool {
            what: "/bin/sh",
            package: "redis-tools",
        };
        match check(&wrong) {
            Found::OtherPackage(p) => assert_ne!(p, "redis-tools"),
            // No dpkg (another distribution), or a /bin/sh no package owns.
            Found::Ok(None) => {}
            other => panic!("{other:?}"),
        }
        let absent = Tool {
            what: "/no/such/file/anywhere",
            package: "x",
        };
        assert_eq!(check(&absent), Found::Missing);
    }

    #[test]
    fn the_install_command_names_every_package() {
        assert_eq!(
            install_command(&["qemu-system-x86", "ovmf"]),
            "sudo apt-get install -y --no-install-recommends qemu-system-x86 ovmf"
        );
    }
}
