//! Host tools that Debian does not package, installed from crates.io with `cargo install`.
//!
//! mdBook, which builds the documentation book (`cargo xtask book` and the `book` step of
//! `cargo xtask test`), and cargo-fuzz, which builds and runs the libFuzzer targets under
//! fuzz/ (`cargo xtask fuzz` and the `libfuzzer:*` steps). Each tool is pinned to one version and installed into
//! `<target>/tools` ([`path`]), so the checkout's build does not depend on what `~/.cargo/bin`
//! holds, `cargo clean` removes it with the rest, and a fresh machine gets exactly the version
//! the project was checked with. [`ensure`] installs a missing or other-version tool (a few
//! minutes, once, with cargo's own progress on the terminal); `XTASK_NO_INSTALL=1` turns that
//! off and prints the command instead, as for the Debian packages ([`crate::deps`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tool built from a crate with `cargo install`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CargoTool {
    /// The program the crate installs.
    pub program: &'static str,
    /// The crate on crates.io.
    pub krate: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// What `<program> --version` prints for that version (its first line).
    pub version_line: &'static str,
    /// Who needs it, for messages and `cargo xtask doctor`.
    pub used_by: &'static str,
}

/// mdBook: the documentation book.
pub const MDBOOK: CargoTool = CargoTool {
    program: "mdbook",
    krate: "mdbook",
    version: "0.5.4",
    version_line: "mdbook v0.5.4",
    used_by: "cargo xtask book; step book",
};

/// cargo-fuzz: the libFuzzer targets under fuzz/ (built with the pinned nightly,
/// [`crate::nightly`]).
pub const CARGO_FUZZ: CargoTool = CargoTool {
    program: "cargo-fuzz",
    krate: "cargo-fuzz",
    version: "0.13.2",
    version_line: "cargo-fuzz 0.13.2",
    used_by: "cargo xtask fuzz; steps libfuzzer:*",
};

/// Every cargo-installed tool, for `cargo xtask doctor`.
pub const CARGO_TOOLS: &[CargoTool] = &[MDBOOK, CARGO_FUZZ];

/// Where the tools are installed (`cargo install --root`).
pub fn root_dir(workspace: &Path) -> PathBuf {
    crate::target_dir(workspace).join("tools")
}

/// The installed program's path.
pub fn path(workspace: &Path, tool: &CargoTool) -> PathBuf {
    root_dir(workspace).join("bin").join(tool.program)
}

/// What the program at `path` says its version is (the first line of `--version`), if it runs.
pub fn installed_version(path: &Path) -> Option<String> {
    let out = Command::new(path).arg("--version").output().ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string()
    })
}

/// The `cargo install` arguments that install `tool` under `workspace`'s target directory.
pub fn install_args(workspace: &Path, tool: &CargoTool) -> Vec<String> {
    vec![
        "install".into(),
        "--locked".into(),
        tool.krate.into(),
        "--version".into(),
        format!("={}", tool.version),
        "--root".into(),
        root_dir(workspace).display().to_string(),
    ]
}

/// How `tool` stands on this machine: `Ok(path)` when the pinned version is installed, else
/// `Err` saying what is there instead.
pub fn check(workspace: &Path, tool: &CargoTool) -> Result<PathBuf, String> {
    let path = path(workspace, tool);
    if !path.is_file() {
        return Err(format!(
            "{} is not installed ({} missing)",
            tool.program,
            path.display()
        ));
    }
    match installed_version(&path) {
        Some(v) if v == tool.version_line => Ok(path),
        Some(v) => Err(format!(
            "{} says `{v}`, not `{}`",
            path.display(),
            tool.version_line
        )),
        None => Err(format!("{} does not run", path.display())),
    }
}

/// Makes sure the pinned version of `tool` is installed, installing it with `cargo install`
/// when it is missing or another version (`who` names the command, for the messages). Returns
/// the program's path.
pub fn ensure(who: &str, workspace: &Path, tool: &CargoTool) -> Result<PathBuf, String> {
    let why = match check(workspace, tool) {
        Ok(path) => return Ok(path),
        Err(why) => why,
    };
    let args = install_args(workspace, tool);
    let command = format!("cargo {}", args.join(" "));
    if std::env::var_os("XTASK_NO_INSTALL").is_some() {
        return Err(format!(
            "{who} needs {} {}: {why}; install it with:\n    {command}",
            tool.krate, tool.version
        ));
    }
    println!(
        "{who}: {why}; installing {} {} from crates.io into {} (a few minutes, once): {command}",
        tool.krate,
        tool.version,
        root_dir(workspace).display()
    );
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(&args)
        .current_dir(workspace)
        .status()
        .map_err(|e| format!("{who}: cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "{who}: `{command}` failed ({status}); it needs the crates.io registry (or a mirror of it)"
        ));
    }
    check(workspace, tool).map_err(|why| format!("{who}: installed {}, but {why}", tool.krate))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_go_under_the_target_directory() {
        let ws = Path::new("/w");
        let p = path(ws, &MDBOOK);
        assert!(p.ends_with("tools/bin/mdbook"), "{}", p.display());
        let args = install_args(ws, &MDBOOK);
        assert_eq!(
            &args[..5],
            ["install", "--locked", "mdbook", "--version", "=0.5.4"]
        );
        assert_eq!(args[5], "--root");
        assert!(args[6].ends_with("tools"), "{}", args[6]);
    }

    #[test]
    fn a_missing_tool_is_reported_with_its_path() {
        let ws = std::env::temp_dir().join(format!("cargo-tools-{}", std::process::id()));
        let tool = CargoTool {
            program: "no-such-tool",
            krate: "x",
            version: "1.0.0",
            version_line: "x 1.0.0",
            used_by: "t",
        };
        let err = check(&ws, &tool).unwrap_err();
        assert!(err.contains("no-such-tool is not installed"), "{err}");
    }

    #[test]
    fn the_version_line_matches_the_version() {
        for tool in CARGO_TOOLS {
            assert!(tool.version_line.ends_with(tool.version), "{tool:?}");
        }
    }
}
