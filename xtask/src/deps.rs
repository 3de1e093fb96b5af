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
/// crate's tests built for ARMv7 Linux, and the cross compiler that links them (with the ARM C
/// library that `qemu-arm -L` loads).
pub const ARM_USER: &[Tool] = &[
    Tool {
        what: "qemu-arm",
        package: "qemu-user",
    },
    Tool {
        what: "arm-linux-gnueabihf-gcc",
        package: "gcc-arm-linux-gnueabihf",
    },
];

/// The real Redis client: `cargo xtask qemu --net` tells how to reach the server with it, and
/// its `--check` (the `net:*` test steps) runs it against the server beside xtask's own
/// RESP client.
pub const NET: &[Tool] = &[Tool {
    what: "redis-cli",
    package: "redis-tools",
}];

/// The source-line mapper of `cargo xtask trace --lines`.
pub const ADDR2LINE: &[Tool] = &[Tool {
    what: "addr2line",
    package: "binutils",
}];

/// The user-mode network process of `cargo xtask qemu --net --network passt` and the
/// `net:x86_64-c50-passt` step.
pub const PASST: &[Tool] = &[Tool {
    what: "passt",
    package: "passt",
}];

/// The clients and the baseline server of `cargo xtask bench --suite redis` and its
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
        for t in QEMU
            .iter()
            .chain(FLASH)
            .chain(NET)
            .chain(PASST)
            .chain(REDIS_BENCH)
            .chain(ARM_USER)
        {
            assert!(
                listed.contains(&t.package),
                ".ci/run does not install {} (for {})",
                t.package,
                t.what
            );
        }
    }

    #[test]
    fn the_install_command_names_every_package() {
        assert_eq!(
            install_command(&["qemu-system-x86", "ovmf"]),
            "sudo apt-get install -y --no-install-recommends qemu-system-x86 ovmf"
        );
    }
}
