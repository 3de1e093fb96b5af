//! The machine `cargo xtask` runs on: what every other tool crate needs from the host.
//!
//! * [`proc`]: child processes, with their output captured or streamed and a time limit.
//! * [`progress`]: progress lines for commands made of many similar parts.
//! * [`deps`]: the Debian packages the commands need, checked (`cargo xtask doctor`) and
//!   installed when missing.
//! * [`toolchain`]: the pinned toolchain's targets and components, installed when missing.
//! * [`nightly`]: the pinned nightly toolchain that builds the fuzz targets.
//! * [`cargo_tools`] and [`sources`]: the tools from crates.io (mdBook, cargo-fuzz) and the
//!   source archives from Debian's archive (Redis's test suite) that steps use, pinned and
//!   installed into the target directory.
//! * [`exit_code`]: how a command ends, its error printed once in one form.
//! * The workspace's layout: its root ([`workspace_root`]), cargo's target directory
//!   ([`target_dir`]) and the folder of each package ([`CRATE_DIRS`], [`crate_dir`]).
//!
//! These live apart from the commands so that the QEMU runner, the benchmarks, the trace tools
//! and the boot-media writer share one way of running programs and finding files.

pub mod cargo_tools;
pub mod deps;
pub mod nightly;
pub mod proc;
pub mod progress;
pub mod sources;
pub mod toolchain;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The exit status of the command `command` (`sim`, `trace`, `flash`) that ended with
/// `outcome`: success, or failure with the error printed as `<command>: error: <error>`.
pub fn exit_code(command: &str, outcome: Result<(), String>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{command}: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: the first folder, from the running package's manifest directory
/// upwards, whose `Cargo.toml` declares a `[workspace]`.
///
/// `cargo run` (and so `cargo xtask`) sets `CARGO_MANIFEST_DIR` for the program too; that value
/// is preferred over the one compiled in, which goes stale if the checkout moves and cargo reuses
/// the binary. Walking up (rather than taking a fixed parent) finds the root from `xtask/` and
/// from `tools/<name>/` alike.
pub fn workspace_root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.join("Cargo.toml").is_file())
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    root_above(&manifest).unwrap_or(manifest)
}

/// The first of `dir` and its ancestors whose `Cargo.toml` has a `[workspace]` table.
fn root_above(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| {
            std::fs::read_to_string(d.join("Cargo.toml"))
                .is_ok_and(|text| text.lines().any(|line| line.trim_end() == "[workspace]"))
        })
        .map(Path::to_path_buf)
}

/// Every workspace package and its folder, relative to the workspace root (the root
/// `Cargo.toml`'s `members`, which a unit test keeps this equal to).
pub const CRATE_DIRS: &[(&str, &str)] = &[
    ("kernel", "kernel"),
    ("kernel-locks", "sync"),
    ("pager", "pager"),
    ("hal-common", "hal-common"),
    ("hal-x86", "hal-x86"),
    ("hal-armv7", "hal-armv7"),
    ("servers", "servers"),
    ("tests", "tests"),
    ("xtask", "xtask"),
    ("host-env", "tools/host-env"),
    ("qemu-runner", "tools/qemu-runner"),
    ("bench", "tools/bench"),
    ("trace-tools", "tools/trace-tools"),
    ("boot-media", "tools/boot-media"),
    ("book", "tools/book"),
    ("fuzz-runner", "tools/fuzz-runner"),
    ("image-common", "images/common"),
    ("image-x86", "images/x86"),
    ("image-armv7", "images/armv7"),
    ("abi", "lib/abi"),
    ("sim", "lib/sim"),
    ("trace-format", "lib/trace-format"),
    ("kv-resp", "lib/kv-resp"),
    ("frame-ring", "lib/frame-ring"),
    ("protocol", "lib/protocol"),
    ("lock-registry", "lib/lock-registry"),
];

/// What each workspace package may depend on among the others (its `[dependencies]` and
/// `[build-dependencies]`; dev-dependencies are free), and so what it never depends on. A unit
/// test holds every `Cargo.toml` to it; `docs/design.md` ("Layout") says why each line is so.
///
/// The shape: the lock crate and the small shared crates depend on nothing of ours; the
/// kernel only on the ABI, the locks and the trace format; a HAL on the kernel and
/// `hal-common`, never on the other HAL; user programs never on the kernel; the images join
/// kernel, HAL and programs; nothing that runs in a guest depends on a host tool.
pub const LAYOUT: &[(&str, &[&str])] = &[
    ("kernel-locks", &[]),
    ("abi", &[]),
    ("protocol", &[]),
    ("trace-format", &[]),
    ("kv-resp", &[]),
    ("frame-ring", &[]),
    ("lock-registry", &[]),
    ("sim", &["trace-format"]),
    ("kernel", &["abi", "kernel-locks", "trace-format"]),
    ("pager", &["abi", "kernel-locks"]),
    ("hal-common", &["kernel"]),
    ("hal-x86", &["kernel", "hal-common"]),
    ("hal-armv7", &["kernel", "hal-common"]),
    (
        "servers",
        &[
            "abi",
            "protocol",
            "kernel-locks",
            "pager",
            "kv-resp",
            "frame-ring",
        ],
    ),
    (
        "image-common",
        &[
            "kernel",
            "hal-common",
            "servers",
            "kernel-locks",
            "protocol",
            "lock-registry",
        ],
    ),
    (
        "image-x86",
        &[
            "kernel",
            "hal-x86",
            "image-common",
            "kernel-locks",
            "servers",
        ],
    ),
    (
        "image-armv7",
        &[
            "kernel",
            "hal-armv7",
            "image-common",
            "kernel-locks",
            "servers",
        ],
    ),
    (
        "tests",
        &[
            "kernel",
            "kernel-locks",
            "pager",
            "sim",
            "protocol",
            "trace-format",
            "lock-registry",
        ],
    ),
    ("host-env", &[]),
    ("qemu-runner", &["host-env", "protocol", "lock-registry"]),
    (
        "bench",
        &["host-env", "qemu-runner", "protocol", "lock-registry"],
    ),
    (
        "boot-media",
        &["host-env", "qemu-runner", "protocol", "lock-registry"],
    ),
    ("book", &["host-env"]),
    ("fuzz-runner", &["host-env"]),
    (
        "trace-tools",
        &[
            "host-env",
            "qemu-runner",
            "bench",
            "protocol",
            "sim",
            "abi",
            "lock-registry",
        ],
    ),
    (
        "xtask",
        &[
            "host-env",
            "qemu-runner",
            "bench",
            "trace-tools",
            "boot-media",
            "book",
            "fuzz-runner",
            "lock-registry",
        ],
    ),
];

/// The folder of the workspace package `package` under `root`.
///
/// # Panics
/// If `package` is not a workspace package: the callers name packages in constants.
pub fn crate_dir(root: &Path, package: &str) -> PathBuf {
    let (_, dir) = CRATE_DIRS
        .iter()
        .find(|(name, _)| *name == package)
        .unwrap_or_else(|| panic!("`{package}` is not a package of this workspace"));
    root.join(dir)
}

/// The target directory cargo uses: `$CARGO_TARGET_DIR` if set, else `<root>/target`.
pub fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                root.join(dir)
            }
        }
        _ => root.join("target"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace packages `manifest` depends on (normal and build dependencies, on any
    /// target), by package name.
    fn workspace_deps(manifest: &toml::Table, packages: &[&str]) -> Vec<String> {
        let mut tables: Vec<&toml::Table> = Vec::new();
        for key in ["dependencies", "build-dependencies"] {
            if let Some(t) = manifest.get(key).and_then(toml::Value::as_table) {
                tables.push(t);
            }
        }
        for target in manifest
            .get("target")
            .and_then(toml::Value::as_table)
            .into_iter()
            .flat_map(|t| t.values())
        {
            for key in ["dependencies", "build-dependencies"] {
                if let Some(t) = target.get(key).and_then(toml::Value::as_table) {
                    tables.push(t);
                }
            }
        }
        let mut deps: Vec<String> = tables
            .iter()
            .flat_map(|t| t.iter())
            .map(|(key, spec)| {
                spec.get("package")
                    .and_then(toml::Value::as_str)
                    .unwrap_or(key)
                    .to_owned()
            })
            .filter(|name| packages.contains(&name.as_str()))
            .collect();
        deps.sort();
        deps.dedup();
        deps
    }

    #[test]
    fn dependencies_follow_the_layout() {
        let root = workspace_root();
        let packages: Vec<&str> = CRATE_DIRS.iter().map(|(p, _)| *p).collect();
        for package in &packages {
            assert!(
                LAYOUT.iter().any(|(p, _)| p == package),
                "{package} has no line in LAYOUT: say what it may depend on"
            );
        }
        for (package, dir) in CRATE_DIRS {
            let manifest: toml::Table = std::fs::read_to_string(root.join(dir).join("Cargo.toml"))
                .unwrap()
                .parse()
                .unwrap();
            let allowed = LAYOUT.iter().find(|(p, _)| p == package).unwrap().1;
            for dep in workspace_deps(&manifest, &packages) {
                assert!(
                    allowed.contains(&dep.as_str()),
                    "{package} depends on {dep}, which the layout does not allow (LAYOUT, \
                     docs/design.md)"
                );
            }
        }
    }

    #[test]
    fn a_forbidden_dependency_is_seen() {
        let manifest: toml::Table = r#"
            [dependencies]
            sim = { path = "../lib/sim" }
            locks = { path = "../sync", package = "kernel-locks" }
            [target.'cfg(unix)'.build-dependencies]
            host-env = { path = "../tools/host-env" }
            [dev-dependencies]
            bench = { path = "../tools/bench" }
        "#
        .parse()
        .unwrap();
        let packages = ["sim", "kernel-locks", "host-env", "bench"];
        assert_eq!(
            workspace_deps(&manifest, &packages),
            ["host-env", "kernel-locks", "sim"]
        );
    }

    #[test]
    fn crate_dirs_are_the_workspace_members() {
        let root = workspace_root();
        let manifest: toml::Table = std::fs::read_to_string(root.join("Cargo.toml"))
            .unwrap()
            .parse()
            .unwrap();
        let members: Vec<&str> = manifest["workspace"]["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        let dirs: Vec<&str> = CRATE_DIRS.iter().map(|(_, dir)| *dir).collect();
        assert_eq!(members, dirs, "CRATE_DIRS lists the members in their order");
        for (package, dir) in CRATE_DIRS {
            let own: toml::Table = std::fs::read_to_string(root.join(dir).join("Cargo.toml"))
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(own["package"]["name"].as_str(), Some(*package), "{dir}");
            assert_eq!(crate_dir(&root, package), root.join(dir));
        }
    }

    #[test]
    fn root_holds_the_workspace_manifest() {
        assert!(workspace_root().join("Cargo.toml").is_file());
    }

    #[test]
    fn the_root_is_found_from_a_nested_package() {
        let root = workspace_root();
        // This crate sits two levels below the root, xtask one: both find the same root.
        assert_eq!(
            root_above(Path::new(env!("CARGO_MANIFEST_DIR"))),
            Some(root.clone())
        );
        assert_eq!(root_above(&root.join("xtask")), Some(root.clone()));
        assert_eq!(root_above(&root.join("tools/host-env/src")), Some(root));
    }

    #[test]
    fn a_member_manifest_is_not_the_root() {
        // A package's own manifest has no `[workspace]` table, so the walk goes past it.
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_ne!(root_above(here).as_deref(), Some(here));
    }
}
