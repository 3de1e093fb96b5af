//! Source archives from Debian's archive that a step reads, fetched once and pinned by SHA-256.
//!
//! One so far: Redis 7.0.15's source (Debian's `redis_7.0.15.orig.tar.gz`, the version of
//! the `redis-tools` and `redis-server` packages the network steps install), whose `tests/`
//! are Redis's own test suite; `bench/redis-suite/run.sh` runs its units against the kernel's
//! key-value server. The project does not carry the suite: [`ensure`] downloads the archive
//! with curl from Debian's pool, checks its SHA-256 and unpacks it into
//! `<target>/tools/src/<dir>` ([`path`]), so `cargo clean` removes it with the rest and every
//! machine runs exactly the checked files. `XTASK_NO_INSTALL=1` turns the download off and
//! prints the commands instead, as for the Debian packages ([`crate::deps`]) and the crates.io
//! tools ([`crate::cargo_tools`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// An archive to fetch and unpack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceArchive {
    /// What it is, for messages.
    pub what: &'static str,
    /// Where it is fetched from.
    pub url: &'static str,
    /// Its SHA-256, in lower-case hex.
    pub sha256: &'static str,
    /// The directory the archive unpacks into (its single top-level directory).
    pub dir: &'static str,
    /// A file inside `dir` whose presence says the archive is unpacked.
    pub marker: &'static str,
    /// Who needs it, for messages and `cargo xtask doctor`.
    pub used_by: &'static str,
}

/// Redis 7.0.15's source tree, for its test suite.
pub const REDIS_SOURCE: SourceArchive = SourceArchive {
    what: "Redis 7.0.15's source and test suite",
    url: "http://deb.debian.org/debian/pool/main/r/redis/redis_7.0.15.orig.tar.gz",
    sha256: "4b1dc4ee6d622a09fff9c6777191209750fb5e5a725ef78ea012d6eef4c22982",
    dir: "redis-7.0.15",
    marker: "tests/test_helper.tcl",
    used_by: "bench/redis-suite/run.sh; steps net:*-redis-suite",
};

/// Every archive, for `cargo xtask doctor`.
pub const SOURCES: &[SourceArchive] = &[REDIS_SOURCE];

/// Where the archives are unpacked.
pub fn root_dir(workspace: &Path) -> PathBuf {
    crate::target_dir(workspace).join("tools").join("src")
}

/// The unpacked tree's path.
pub fn path(workspace: &Path, archive: &SourceArchive) -> PathBuf {
    root_dir(workspace).join(archive.dir)
}

/// The unpacked tree, if it is there.
pub fn check(workspace: &Path, archive: &SourceArchive) -> Result<PathBuf, String> {
    let dir = path(workspace, archive);
    if dir.join(archive.marker).is_file() {
        Ok(dir)
    } else {
        Err(format!(
            "{} is not unpacked in {}",
            archive.what,
            dir.display()
        ))
    }
}

/// The shell commands that fetch, check and unpack `archive` (what [`ensure`] runs, and what
/// it prints when it may not).
fn commands(workspace: &Path, archive: &SourceArchive) -> [String; 3] {
    let root = root_dir(workspace);
    let file = root.join(format!("{}.tar.gz", archive.dir));
    [
        format!("curl -fsSL -o {} {}", file.display(), archive.url),
        format!(
            "echo '{}  {}' | sha256sum -c --quiet",
            archive.sha256,
            file.display()
        ),
        format!("tar -xzf {} -C {}", file.display(), root.display()),
    ]
}

/// Makes sure `archive` is unpacked, fetching it when it is not (`who` names the command, for
/// the messages). Returns the unpacked tree's path.
pub fn ensure(who: &str, workspace: &Path, archive: &SourceArchive) -> Result<PathBuf, String> {
    let why = match check(workspace, archive) {
        Ok(dir) => return Ok(dir),
        Err(why) => why,
    };
    let steps = commands(workspace, archive);
    if std::env::var_os("XTASK_NO_INSTALL").is_some() {
        return Err(format!(
            "{who} needs {}: {why}; fetch it with:\n    {}",
            archive.what,
            steps.join(" && \\\n    ")
        ));
    }
    let root = root_dir(workspace);
    std::fs::create_dir_all(&root).map_err(|e| format!("{who}: {}: {e}", root.display()))?;
    println!(
        "{who}: {why}; fetching it from Debian's archive ({})",
        archive.url
    );
    for step in &steps {
        let status = Command::new("sh")
            .args(["-c", step])
            .status()
            .map_err(|e| format!("{who}: cannot run sh: {e}"))?;
        if !status.success() {
            return Err(format!(
                "{who}: `{step}` failed ({status}); fetching {} needs Debian's archive \
                 (deb.debian.org) and curl",
                archive.what
            ));
        }
    }
    let file = root.join(format!("{}.tar.gz", archive.dir));
    let _ = std::fs::remove_file(&file);
    check(workspace, archive).map_err(|why| format!("{who}: unpacked the archive, but {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archives_go_under_the_target_directory() {
        let ws = Path::new("/w");
        let dir = path(ws, &REDIS_SOURCE);
        assert!(dir.ends_with("tools/src/redis-7.0.15"), "{}", dir.display());
        let [fetch, sum, unpack] = commands(ws, &REDIS_SOURCE);
        assert!(fetch.starts_with("curl -fsSL -o ") && fetch.ends_with(REDIS_SOURCE.url));
        assert!(sum.contains(REDIS_SOURCE.sha256), "{sum}");
        assert!(unpack.starts_with("tar -xzf "), "{unpack}");
    }

    #[test]
    fn pins_are_well_formed() {
        for a in SOURCES {
            assert_eq!(a.sha256.len(), 64, "{}", a.what);
            assert!(a
                .sha256
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            assert!(a.url.ends_with(".tar.gz"), "{}", a.url);
        }
    }

    #[test]
    fn a_missing_tree_is_reported_with_its_place() {
        let ws = std::env::temp_dir().join(format!("host-env-sources-{}", std::process::id()));
        let err = check(&ws, &REDIS_SOURCE).unwrap_err();
        assert!(err.contains("tools/src/redis-7.0.15"), "{err}");
    }
}
