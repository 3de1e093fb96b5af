//! The pinned nightly toolchain that builds the libFuzzer targets (`cargo xtask fuzz`, the
//! `libfuzzer:*` steps of `cargo xtask test`).
//!
//! cargo-fuzz compiles with `-Zsanitizer=address` and LLVM's coverage instrumentation, which
//! only nightly compilers accept; the rest of the project builds with the stable toolchain
//! of `rust-toolchain.toml`. The nightly is pinned to one date ([`CHANNEL`]) so that a fresh
//! machine fuzzes with the compiler the committed corpus and the coverage figures of
//! docs/fuzzing.md came from. rustup's channel name is the date of the release, one day after
//! the date in `rustc --version` (the commit's): `nightly-2026-05-20` says
//! `rustc 1.97.0-nightly (e50aa6fba 2026-05-19)`.
//!
//! [`find`] accepts that toolchain under its own name or as a machine's plain `nightly` when
//! that one is the same build (its `rustc --version` is [`VERSION_LINE`]); [`ensure`]
//! installs it with rustup when neither is there (`rustup toolchain install`, a minimal
//! profile: the fuzz targets need nothing else), unless `XTASK_NO_INSTALL=1`.

use std::process::Command;

/// The rustup channel of the pinned nightly.
pub const CHANNEL: &str = "nightly-2026-05-20";

/// What the pinned nightly's `rustc --version` says.
pub const VERSION_LINE: &str = "rustc 1.97.0-nightly (e50aa6fba 2026-05-19)";

/// The command that installs the pinned nightly.
pub fn install_command() -> String {
    format!("rustup toolchain install {CHANNEL} --profile minimal")
}

/// What `rustup run <toolchain> rustc --version` prints, if that toolchain is installed.
fn version_of(toolchain: &str) -> Option<String> {
    let out = Command::new("rustup")
        .args(["run", toolchain, "rustc", "--version"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The name under which rustup has the pinned nightly: [`CHANNEL`], or `nightly` when that
/// is the same build. `Err` says what is there instead.
pub fn find() -> Result<String, String> {
    if let Some(v) = version_of(CHANNEL) {
        return if v == VERSION_LINE {
            Ok(CHANNEL.to_string())
        } else {
            Err(format!("{CHANNEL} says `{v}`, not `{VERSION_LINE}`"))
        };
    }
    match version_of("nightly") {
        Some(v) if v == VERSION_LINE => Ok("nightly".to_string()),
        Some(v) => Err(format!(
            "{CHANNEL} is not installed (the plain `nightly` is another build: `{v}`)"
        )),
        None => Err(format!("{CHANNEL} is not installed")),
    }
}

/// [`find`], installing the pinned nightly with rustup when it is missing (`who` names the
/// command, for the messages). Returns the toolchain name to run it by.
pub fn ensure(who: &str) -> Result<String, String> {
    let why = match find() {
        Ok(name) => return Ok(name),
        Err(why) => why,
    };
    let command = install_command();
    if std::env::var_os("XTASK_NO_INSTALL").is_some() {
        return Err(format!(
            "{who} needs the nightly toolchain {CHANNEL}: {why}; install it with:\n    {command}"
        ));
    }
    println!("{who}: {why}; installing it (rustup, once): {command}");
    let status = Command::new("rustup")
        .args(["toolchain", "install", CHANNEL, "--profile", "minimal"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .status()
        .map_err(|e| {
            format!("{who}: cannot run rustup ({e}); install the toolchain with:\n    {command}")
        })?;
    if !status.success() {
        return Err(format!(
            "{who}: `{command}` failed ({status}); it needs the Rust release server"
        ));
    }
    find().map_err(|why| format!("{who}: installed {CHANNEL}, but {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_channel_is_the_day_after_the_commit_date() {
        let commit = VERSION_LINE
            .trim_end_matches(')')
            .rsplit(' ')
            .next()
            .unwrap();
        let channel = CHANNEL.strip_prefix("nightly-").unwrap();
        let day = |d: &str| -> u32 { d.rsplit('-').next().unwrap().parse().unwrap() };
        assert_eq!(commit[..7], channel[..7], "{commit} {channel}");
        assert_eq!(day(commit) + 1, day(channel), "{commit} {channel}");
    }

    #[test]
    fn the_install_command_names_the_channel() {
        assert_eq!(
            install_command(),
            "rustup toolchain install nightly-2026-05-20 --profile minimal"
        );
    }
}
