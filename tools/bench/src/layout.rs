//! Where results go: one folder per run under `target/bench/runs/`, named after the time and
//! the git revision, and `target/bench/latest` naming the newest run that produced records.
//!
//! ```text
//! target/bench/
//!   runs/2026-11-23T10-00-00-c0c71e2/        results.json, results.csv, figures, report.md
//!   runs/2026-11-23T11-30-12-c0c71e2-dirty/  (tracked files differed from the commit)
//!   latest -> runs/2026-11-23T11-30-12-c0c71e2-dirty
//! ```
//!
//! `latest` is a relative symbolic link; where one cannot be made, it is a small file whose one
//! line is the run's path relative to `target/bench/`. It is switched (atomically, through a
//! rename) only once a run has written its files and produced records, so a failed or empty run
//! leaves the previous results where `latest` finds them. `--out DIR` writes into `DIR` instead;
//! there a run without records keeps the earlier files ([`Destination::keeps_previous`]).
//!
//! Nothing here knows what a record holds: the layout is the same for every suite.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use host_env::proc::Cmd;

/// The folder of the runs, under the bench root.
pub const RUNS: &str = "runs";
/// The name of the pointer to the newest run, in the bench root.
pub const LATEST: &str = "latest";
/// The results file every run writes and `compare` reads.
pub const RESULTS_JSON: &str = "results.json";

/// Where one run writes its files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// A new folder `root/runs/<name>`; `root/latest` is switched to it when the run produced
    /// records.
    Run {
        /// The bench root (`target/bench`).
        root: PathBuf,
        /// The run's own folder.
        dir: PathBuf,
    },
    /// `--out DIR`: written there, replacing the files of an earlier run (unless this one
    /// produced no records).
    Explicit(PathBuf),
}

impl Destination {
    /// The folder the files go into.
    pub fn dir(&self) -> &Path {
        match self {
            Destination::Run { dir, .. } | Destination::Explicit(dir) => dir,
        }
    }

    /// Whether a run that produced `records` records must leave the folder alone: an explicit
    /// `--out` folder that already holds results, and a run that produced none.
    pub fn keeps_previous(&self, records: usize) -> bool {
        match self {
            Destination::Run { .. } => false,
            Destination::Explicit(dir) => records == 0 && dir.join(RESULTS_JSON).is_file(),
        }
    }
}

/// The date and time of a Unix time (UTC): year, month, day, hour, minute, second.
pub fn civil(secs: u64) -> (i64, u32, u32, u32, u32, u32) {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        month as u32,
        day as u32,
        (rem / 3600) as u32,
        (rem % 3600 / 60) as u32,
        (rem % 60) as u32,
    )
}

/// The name of a run's folder: `YYYY-MM-DDTHH-MM-SS-<revision>` (UTC; no colons, so that the
/// name is a valid file name everywhere).
pub fn run_name(unix: u64, revision: &str) -> String {
    let (y, mo, d, h, mi, s) = civil(unix);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{s:02}-{revision}")
}

/// The checkout's revision: the short commit hash, with `-dirty` when tracked files differ from
/// it; `nogit` when git or the repository is unavailable.
pub fn git_revision(root: &Path) -> String {
    let Some(hash) = Cmd::new("git")
        .args(["rev-parse", "--short=7", "HEAD"])
        .read_stdout(root)
        .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
    else {
        return "nogit".into();
    };
    let dirty = Cmd::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .read_stdout(root)
        .is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{hash}-dirty")
    } else {
        hash
    }
}

/// Makes sure `dir` exists and can be written: creates it (and its parents), then creates and
/// removes a probe file. The error says which of the two failed and why.
pub fn ensure_writable(dir: &Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!("{} exists and is not a directory", dir.display()));
    }
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let probe = dir.join(format!(".write-test-{}", std::process::id()));
    fs::write(&probe, b"")
        .map_err(|e| format!("{} is not writable: {e}", dir.display()))
        .and_then(|()| {
            fs::remove_file(&probe).map_err(|e| {
                format!(
                    "{} is not writable (cannot remove {}: {e})",
                    dir.display(),
                    probe.display()
                )
            })
        })
}

/// Creates the folder of a new run under `root/runs/`: `name`, or `name-2`, `name-3`, ... if a
/// run of the same second and revision exists. Returns its path.
pub fn create_run_dir(root: &Path, name: &str) -> Result<PathBuf, String> {
    let runs = root.join(RUNS);
    ensure_writable(&runs)?;
    for n in 1..1000 {
        let dir = if n == 1 {
            runs.join(name)
        } else {
            runs.join(format!("{name}-{n}"))
        };
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
    }
    Err(format!(
        "cannot create a run folder in {}: {name} and 998 numbered variants exist",
        runs.display()
    ))
}

/// How `latest` names the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatestKind {
    /// A symbolic link.
    Symlink,
    /// A file holding the run's path (symbolic links could not be made here).
    File,
}

/// Points `root/latest` at `run` (a folder under `root`), atomically: the new link (or file) is
/// made under a temporary name and renamed over the old one.
pub fn switch_latest(root: &Path, run: &Path) -> Result<LatestKind, String> {
    let target = run.strip_prefix(root).unwrap_or(run).to_path_buf();
    let latest = root.join(LATEST);
    if latest.is_dir() && !is_symlink(&latest) {
        return Err(format!(
            "{} is a directory, not a link to a run: move it away so that it can name the \
             newest run",
            latest.display()
        ));
    }
    let tmp = root.join(format!(".{LATEST}.tmp-{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let kind = if make_symlink(&target, &tmp).is_ok() {
        LatestKind::Symlink
    } else {
        let mut text = target.to_string_lossy().into_owned();
        text.push('\n');
        fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
        LatestKind::File
    };
    fs::rename(&tmp, &latest).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!("cannot replace {}: {e}", latest.display())
    })?;
    Ok(kind)
}

/// Whether `path` is a symbolic link (not following it).
fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// A symbolic link at `link` to `target`.
#[cfg(unix)]
fn make_symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// No symbolic links: `latest` is a file.
#[cfg(not(unix))]
fn make_symlink(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "no symlinks"))
}

/// The run `root/latest` names, if any: the link's target or the file's line, relative to
/// `root`.
pub fn read_latest(root: &Path) -> Option<PathBuf> {
    let latest = root.join(LATEST);
    let target = if is_symlink(&latest) {
        fs::read_link(&latest).ok()?
    } else if latest.is_file() {
        PathBuf::from(fs::read_to_string(&latest).ok()?.trim())
    } else {
        return None;
    };
    Some(if target.is_absolute() {
        target
    } else {
        root.join(target)
    })
}

/// The results file a path given to `compare` means: a `results.json` (or any file) itself, a
/// folder holding `results.json`, a bench root whose `latest` names a run, or a `latest` file.
pub fn results_file(path: &Path) -> Result<PathBuf, String> {
    if !path.exists() {
        return Err(format!("{}: no such file or directory", path.display()));
    }
    // `latest` itself (link or file): the run it names, shown by its own name.
    if path.file_name().is_some_and(|n| n == LATEST) {
        if let Some(run) = path.parent().and_then(read_latest) {
            if run.file_name() != path.file_name() {
                return results_file(&run);
            }
        }
    }
    if path.is_dir() {
        let file = path.join(RESULTS_JSON);
        if file.is_file() {
            return Ok(file);
        }
        if let Some(run) = read_latest(path) {
            let file = run.join(RESULTS_JSON);
            return if file.is_file() {
                Ok(file)
            } else {
                Err(format!(
                    "{}: `{LATEST}` names {}, which holds no {RESULTS_JSON}",
                    path.display(),
                    run.display()
                ))
            };
        }
        return Err(format!(
            "{} holds no {RESULTS_JSON} (and no `{LATEST}` naming a run): give a run's folder \
             or a results.json",
            path.display()
        ));
    }
    Ok(path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh, empty temporary folder for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "xtask-layout-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn run_names_carry_time_and_revision() {
        assert_eq!(run_name(0, "abc1234"), "1970-01-01T00-00-00-abc1234");
        assert_eq!(
            run_name(1_795_323_600 + 3600 * 29 + 61, "c0c71e2-dirty"),
            "2026-11-23T10-01-01-c0c71e2-dirty"
        );
        assert_eq!(civil(951_782_400), (2000, 2, 29, 0, 0, 0));
    }

    #[test]
    fn this_checkout_has_a_revision() {
        let rev = git_revision(&host_env::workspace_root());
        let hash = rev.trim_end_matches("-dirty");
        assert!(
            rev == "nogit" || (hash.len() >= 7 && hash.chars().all(|c| c.is_ascii_hexdigit())),
            "{rev}"
        );
    }

    #[test]
    fn run_folders_never_collide() {
        let root = scratch("collide");
        let a = create_run_dir(&root, "2026-11-23T10-00-00-abc").unwrap();
        let b = create_run_dir(&root, "2026-11-23T10-00-00-abc").unwrap();
        assert_ne!(a, b);
        assert!(
            b.ends_with("runs/2026-11-23T10-00-00-abc-2"),
            "{}",
            b.display()
        );
        assert!(a.is_dir() && b.is_dir());
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn latest_follows_the_switch_and_compare_finds_it() {
        let root = scratch("latest");
        assert_eq!(read_latest(&root), None);
        let one = create_run_dir(&root, "one").unwrap();
        let two = create_run_dir(&root, "two").unwrap();
        fs::write(one.join(RESULTS_JSON), "{}").unwrap();
        fs::write(two.join(RESULTS_JSON), "{}").unwrap();
        let kind = switch_latest(&root, &one).unwrap();
        assert_eq!(read_latest(&root), Some(root.join("runs/one")));
        assert_eq!(
            results_file(&root).unwrap(),
            root.join("runs/one/results.json")
        );
        switch_latest(&root, &two).unwrap();
        assert_eq!(read_latest(&root), Some(root.join("runs/two")));
        if kind == LatestKind::Symlink {
            // Relative, so that the bench root can move.
            assert_eq!(
                fs::read_link(root.join(LATEST)).unwrap(),
                PathBuf::from("runs/two")
            );
        }
        assert_eq!(
            results_file(&root.join(LATEST)).unwrap(),
            root.join("runs/two/results.json")
        );
        // No temporary left behind.
        let names: Vec<String> = fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_latest_file_is_read_as_well() {
        let root = scratch("latest-file");
        let run = create_run_dir(&root, "r").unwrap();
        fs::write(run.join(RESULTS_JSON), "{}").unwrap();
        fs::write(root.join(LATEST), "runs/r\n").unwrap();
        assert_eq!(read_latest(&root), Some(root.join("runs/r")));
        assert_eq!(results_file(&root).unwrap(), run.join(RESULTS_JSON));
        assert_eq!(
            results_file(&root.join(LATEST)).unwrap(),
            run.join(RESULTS_JSON)
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_latest_directory_is_not_replaced() {
        let root = scratch("latest-dir");
        let run = create_run_dir(&root, "r").unwrap();
        fs::create_dir(root.join(LATEST)).unwrap();
        let err = switch_latest(&root, &run).unwrap_err();
        assert!(err.contains("is a directory"), "{err}");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn results_paths_are_resolved_or_explained() {
        let root = scratch("resolve");
        let err = results_file(&root.join("nope")).unwrap_err();
        assert!(err.contains("no such file"), "{err}");
        let err = results_file(&root).unwrap_err();
        assert!(err.contains("holds no results.json"), "{err}");
        let file = root.join("a.json");
        fs::write(&file, "{}").unwrap();
        assert_eq!(results_file(&file).unwrap(), file);
        fs::write(root.join(RESULTS_JSON), "{}").unwrap();
        assert_eq!(results_file(&root).unwrap(), root.join(RESULTS_JSON));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn writability_is_checked_with_reasons() {
        let root = scratch("writable");
        let nested = root.join("a/b");
        ensure_writable(&nested).unwrap();
        assert!(nested.is_dir());
        let file = root.join("file");
        fs::write(&file, "x").unwrap();
        let err = ensure_writable(&file).unwrap_err();
        assert!(err.contains("not a directory"), "{err}");
        let err = ensure_writable(&file.join("below")).unwrap_err();
        assert!(err.contains("cannot create"), "{err}");
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn only_an_explicit_folder_with_results_is_kept_from_an_empty_run() {
        let root = scratch("keep");
        let explicit = Destination::Explicit(root.clone());
        assert!(!explicit.keeps_previous(0), "nothing to keep yet");
        fs::write(root.join(RESULTS_JSON), "{}").unwrap();
        assert!(explicit.keeps_previous(0));
        assert!(!explicit.keeps_previous(3));
        let run = Destination::Run {
            root: root.clone(),
            dir: root.join("runs/x"),
        };
        assert!(!run.keeps_previous(0));
        assert_eq!(run.dir(), root.join("runs/x"));
        fs::remove_dir_all(&root).unwrap();
    }
}
