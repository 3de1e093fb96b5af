//! The pinned toolchain's targets and components, installed when they are missing.
//!
//! `rust-toolchain.toml` names the toolchain, its bare-metal targets and its components.
//! rustup installs them with the toolchain when it installs the toolchain itself, but not when
//! the toolchain was already there without them (a machine that had 1.95.0 before this
//! checkout): then the first image build fails with "can't find crate for `core`". The
//! commands that build images call [`ensure`] first, which asks rustup what is installed and,
//! when a target or component is missing, runs `rustup target add` / `rustup component add`
//! for the toolchain the command runs on. `XTASK_NO_INSTALL=1` turns installing off (the command is
//! printed instead), as for the Debian packages ([`crate::deps`]).
//!
//! xtask cannot install the toolchain it runs on: that is rustup's own first step
//! (`.ci/run`, or rustup's auto-install on the first `cargo` in the checkout).

use std::path::Path;
use std::process::Command;

/// What `rust-toolchain.toml` lists.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pinned {
    /// `targets = [...]`.
    pub targets: Vec<String>,
    /// `components = [...]`.
    pub components: Vec<String>,
}

/// The strings of the array `key = [ "a", "b" ]` in `text` (one line, as the file writes it).
fn array(text: &str, key: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix(key))
        .filter_map(|l| l.trim_start().strip_prefix('='))
        .flat_map(|l| {
            l.trim()
                .trim_start_matches('[')
                .trim_end_matches(']')
                .split(',')
                .map(|s| s.trim().trim_matches('"').to_owned())
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Parses the parts of `rust-toolchain.toml` that matter here.
pub fn parse(text: &str) -> Pinned {
    Pinned {
        targets: array(text, "targets"),
        components: array(text, "components"),
    }
}

/// Whether rustup's `installed` list (one name per line, components with their host suffix,
/// `llvm-tools-preview` listed as `llvm-tools-<host>`) holds `name`.
fn listed(installed: &str, name: &str) -> bool {
    let name = name.strip_suffix("-preview").unwrap_or(name);
    installed.lines().map(str::trim).any(|l| {
        l == name
            || l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('-') && rest[1..].contains("-unknown-"))
    })
}

/// The targets and components of `pinned` missing from rustup's lists.
pub fn missing(pinned: &Pinned, targets: &str, components: &str) -> (Vec<String>, Vec<String>) {
    let absent = |names: &[String], installed: &str| -> Vec<String> {
        names
            .iter()
            .filter(|n| !listed(installed, n))
            .cloned()
            .collect()
    };
    (
        absent(&pinned.targets, targets),
        absent(&pinned.components, components),
    )
}

fn rustup_list(root: &Path, what: &str) -> Option<String> {
    let out = Command::new("rustup")
        .args([what, "list", "--installed"])
        .current_dir(root)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run(root: &Path, args: &[&str]) -> bool {
    Command::new("rustup")
        .args(args)
        .current_dir(root)
        .status()
        .is_ok_and(|s| s.success())
}

/// Makes sure the targets and components `rust-toolchain.toml` lists are installed for the
/// pinned toolchain. Without rustup (a toolchain from elsewhere) it checks nothing: cargo then
/// reports a missing target itself. `Err` says what to run; the caller stops.
pub fn ensure(who: &str, root: &Path) -> Result<(), String> {
    let Ok(text) = std::fs::read_to_string(root.join("rust-toolchain.toml")) else {
        return Ok(());
    };
    let pinned = parse(&text);
    let (Some(targets), Some(components)) =
        (rustup_list(root, "target"), rustup_list(root, "component"))
    else {
        return Ok(());
    };
    let (t, c) = missing(&pinned, &targets, &components);
    if t.is_empty() && c.is_empty() {
        return Ok(());
    }
    let what: Vec<&str> = t.iter().chain(&c).map(String::as_str).collect();
    let command = install_command(&t, &c);
    if std::env::var_os("XTASK_NO_INSTALL").is_some() {
        return Err(format!(
            "{who} needs the Rust {} (missing); install with:\n    {command}",
            what.join(", ")
        ));
    }
    eprintln!("{who}: installing the Rust {} (rustup)", what.join(", "));
    // `target add` and `component add` act on the toolchain this command runs on (cargo's
    // rustup proxy names it in `RUSTUP_TOOLCHAIN`), which is the one that builds the images;
    // `rustup toolchain install` with no name would follow that variable too, and install the
    // toolchain's name only, without the file's lists.
    let ok = (t.is_empty() || run(root, &[&["target", "add"][..], &as_strs(&t)].concat()))
        && (c.is_empty() || run(root, &[&["component", "add"][..], &as_strs(&c)].concat()));
    let still = match (rustup_list(root, "target"), rustup_list(root, "component")) {
        (Some(t), Some(c)) => missing(&pinned, &t, &c),
        _ => (t, c),
    };
    if ok && still.0.is_empty() && still.1.is_empty() {
        return Ok(());
    }
    let left: Vec<&str> = still.0.iter().chain(&still.1).map(String::as_str).collect();
    Err(format!(
        "{who}: rustup could not install the Rust {}; run:\n    {}",
        left.join(", "),
        install_command(&still.0, &still.1)
    ))
}

/// The commands that install the targets `t` and components `c`.
pub fn install_command(t: &[String], c: &[String]) -> String {
    let mut parts = Vec::new();
    if !t.is_empty() {
        parts.push(format!("rustup target add {}", t.join(" ")));
    }
    if !c.is_empty() {
        parts.push(format!("rustup component add {}", c.join(" ")));
    }
    parts.join(" && ")
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_workspace_file() {
        let text = std::fs::read_to_string(crate::workspace_root().join("rust-toolchain.toml"))
            .expect("rust-toolchain.toml");
        let p = parse(&text);
        assert!(
            p.targets.iter().any(|t| t == "x86_64-unknown-none"),
            "{p:?}"
        );
        assert!(p.targets.iter().any(|t| t == "armv7a-none-eabi"), "{p:?}");
        assert!(p.components.iter().any(|c| c == "rust-src"), "{p:?}");
    }

    #[test]
    fn finds_what_rustup_lacks() {
        let pinned = parse(
            "[toolchain]\nchannel = \"1.95.0\"\ncomponents = [\"rust-src\", \"llvm-tools-preview\", \
             \"clippy\"]\ntargets = [\"x86_64-unknown-none\", \"armv7a-none-eabi\"]\n",
        );
        // What rustup printed on a machine whose 1.95.0 came without them (2026-11-24).
        let targets = "x86_64-unknown-linux-gnu\n";
        let components = "cargo-x86_64-unknown-linux-gnu\nclippy-x86_64-unknown-linux-gnu\n\
                          rust-std-x86_64-unknown-linux-gnu\nrustc-x86_64-unknown-linux-gnu\n";
        let (t, c) = missing(&pinned, targets, components);
        assert_eq!(t, ["x86_64-unknown-none", "armv7a-none-eabi"]);
        assert_eq!(c, ["rust-src", "llvm-tools-preview"]);
        // ... and once they are installed.
        let targets = "armv7a-none-eabi\nx86_64-unknown-linux-gnu\nx86_64-unknown-none\n";
        let components = "clippy-x86_64-unknown-linux-gnu\nllvm-tools-x86_64-unknown-linux-gnu\n\
                          rust-src\n";
        assert_eq!(missing(&pinned, targets, components), (vec![], vec![]));
        // A component is not taken for another whose name it starts ("rust" for "rust-src").
        assert!(!listed("rust-src\n", "rust"));
        assert_eq!(
            install_command(&["armv7a-none-eabi".into()], &["rust-src".into()]),
            "rustup target add armv7a-none-eabi && rustup component add rust-src"
        );
    }
}
