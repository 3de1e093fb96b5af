//! Running child processes with their output captured (stdout and stderr interleaved, in the
//! order the child wrote them, as on a terminal).

use std::ffi::{OsStr, OsString};
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a finished child process left behind.
#[derive(Debug)]
pub struct Captured {
    /// How it ended.
    pub status: ExitStatus,
    /// Its output, stdout and stderr merged, one entry per line.
    pub lines: Vec<String>,
    /// Wall-clock time from spawn to exit.
    pub elapsed: Duration,
    /// Whether it was killed for running out of time.
    pub timed_out: bool,
    /// Whether it was killed because a line it printed was the one awaited
    /// ([`Cmd::run_until`]).
    pub stopped: bool,
}

/// A command to run: program, arguments and extra environment, kept as data so that it can be
/// printed for the user to reproduce.
#[derive(Clone, Debug)]
pub struct Cmd {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
}

impl Cmd {
    /// `program` with no arguments.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        Self {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// `cargo`: the cargo that runs xtask (`$CARGO`), else the one on `PATH`.
    pub fn cargo() -> Self {
        Self::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// The command as a shell line, for messages (`KEY=value program args`). `$CARGO` is shown
    /// as plain `cargo`.
    pub fn display(&self) -> String {
        let mut words = Vec::new();
        for (k, v) in &self.env {
            words.push(format!(
                "{}={}",
                k.to_string_lossy(),
                quote(&v.to_string_lossy())
            ));
        }
        let program = self.program.to_string_lossy();
        let is_cargo = Path::new(program.as_ref())
            .file_stem()
            .is_some_and(|s| s == "cargo");
        words.push(if is_cargo {
            "cargo".to_owned()
        } else {
            quote(&program)
        });
        words.extend(self.args.iter().map(|a| quote(&a.to_string_lossy())));
        words.join(" ")
    }

    /// The command as a `std::process::Command` run in `dir`, for callers that manage the
    /// child themselves.
    pub fn command(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).current_dir(dir);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs the command in `dir` with stdout and stderr captured into one stream of lines;
    /// `echo` also prints each line as it arrives. Standard input is closed.
    ///
    /// If the output has not ended (every process holding the pipe exited) after `timeout`, the
    /// child and all its descendants are killed and [`Captured::timed_out`] is set.
    pub fn run_captured(&self, dir: &Path, echo: bool, timeout: Duration) -> io::Result<Captured> {
        self.run_streamed(dir, timeout, &mut |line| {
            if echo {
                println!("{line}");
            }
        })
    }

    /// [`Cmd::run_captured`], handing each line to `on_line` as it arrives (for progress
    /// output) besides keeping it.
    pub fn run_streamed(
        &self,
        dir: &Path,
        timeout: Duration,
        on_line: &mut dyn FnMut(&str),
    ) -> io::Result<Captured> {
        self.run_until(dir, timeout, on_line, &|_| false)
    }

    /// [`Cmd::run_streamed`] that also ends the command (kills it, with `stopped` set) once it
    /// printed a line for which `stop` holds: for a process that does not exit by itself at
    /// the end of what is awaited (a guest that halts instead of powering off).
    pub fn run_until(
        &self,
        dir: &Path,
        timeout: Duration,
        on_line: &mut dyn FnMut(&str),
        stop: &dyn Fn(&str) -> bool,
    ) -> io::Result<Captured> {
        let start = Instant::now();
        let (mut child, rx) = self.spawn_lines(dir)?;
        let mut lines = Vec::new();
        let mut timed_out = false;
        let mut stopped = false;
        // After a kill, how long to keep collecting what the killed processes had written.
        let mut deadline = start + timeout;
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(line) => {
                    on_line(&line);
                    let done = !stopped && !timed_out && stop(&line);
                    lines.push(line);
                    if done {
                        stopped = true;
                        kill_tree(&mut child);
                        deadline = Instant::now() + Duration::from_secs(5);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) if !timed_out && !stopped => {
                    timed_out = true;
                    kill_tree(&mut child);
                    deadline = Instant::now() + Duration::from_secs(5);
                }
                // Killed, and still something holds the pipe open: stop reading.
                Err(mpsc::RecvTimeoutError::Timeout) => break,
            }
        }
        let status = child.wait()?;
        Ok(Captured {
            status,
            lines,
            elapsed: start.elapsed(),
            timed_out,
            stopped,
        })
    }

    /// Starts the command in `dir` in the background, its standard streams closed (a helper
    /// process whose output nobody reads, such as passt).
    pub fn spawn_quiet(&self, dir: &Path) -> io::Result<Child> {
        self.command(dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
    }

    /// Starts the command in `dir` with standard input closed and stdout and stderr merged into
    /// one pipe, read by a thread that sends each line (without its line end) on the returned
    /// channel; the channel closes once every process holding the pipe has exited.
    pub fn spawn_lines(&self, dir: &Path) -> io::Result<(Child, mpsc::Receiver<String>)> {
        let (reader, writer) = io::pipe()?;
        let child = {
            // The command owns the pipe's write ends; it is dropped at the end of this block, so
            // that the reader sees end-of-file once the child (and its children) exit.
            let mut cmd = self.command(dir);
            cmd.stdin(std::process::Stdio::null())
                .stdout(writer.try_clone()?)
                .stderr(writer);
            cmd.spawn()?
        };
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(reader);
            let mut buf = Vec::new();
            while matches!(reader.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
                let line = String::from_utf8_lossy(&buf)
                    .trim_end_matches(['\n', '\r'])
                    .to_owned();
                if tx.send(line).is_err() {
                    break;
                }
                buf.clear();
            }
        });
        Ok((child, rx))
    }

    /// Runs the command in `dir` with the terminal's stdin, stdout and stderr.
    pub fn run_inherited(&self, dir: &Path) -> io::Result<ExitStatus> {
        self.command(dir).status()
    }

    /// Runs the command in `dir` and returns its trimmed stdout if it exits successfully.
    pub fn read_stdout(&self, dir: &Path) -> Option<String> {
        let out = self
            .command(dir)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }
}

/// Kills `child` and, on Linux, every process descended from it (cargo's rustc and test
/// processes; killing only cargo would leave them running). The tree is frozen first (SIGSTOP,
/// until no new process appears), so that nothing reacts to a parent's death or escapes by
/// forking, then killed at once.
fn kill_tree(child: &mut Child) {
    let signal = |sig: &str, pids: &[u32]| {
        let _ = Command::new("kill")
            .arg(sig)
            .arg("--")
            .args(pids.iter().map(u32::to_string))
            .stderr(std::process::Stdio::null())
            .status();
    };
    let mut frozen: Vec<u32> = Vec::new();
    for _ in 0..5 {
        let mut tree = vec![child.id()];
        tree.extend(descendants(child.id()));
        let new: Vec<u32> = tree.into_iter().filter(|p| !frozen.contains(p)).collect();
        if new.is_empty() {
            break;
        }
        signal("-STOP", &new);
        frozen.extend(new);
    }
    signal("-KILL", &frozen);
    let _ = child.kill();
}

/// The processes descended from `root` (not `root` itself), from `/proc`; empty elsewhere.
fn descendants(root: u32) -> Vec<u32> {
    // (pid, parent pid) of every process.
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid ...`; comm may contain spaces and parentheses.
            let after_comm = &stat[stat.rfind(')')? + 1..];
            let ppid = after_comm.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for &(pid, ppid) in &parents {
            if ppid == parent && !found.contains(&pid) {
                found.push(pid);
                frontier.push(pid);
            }
        }
    }
    found
}

/// Quotes a word for a POSIX shell if it needs it.
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_only_when_needed() {
        let cmd = Cmd::new("cargo")
            .args(["test", "-p", "kernel-locks", "a b"])
            .env("RUSTFLAGS", "--cfg loom");
        assert_eq!(
            cmd.display(),
            "RUSTFLAGS='--cfg loom' cargo test -p kernel-locks 'a b'"
        );
    }

    /// `sh -c script`.
    fn sh(script: &str) -> Cmd {
        Cmd::new("sh").args(["-c", script])
    }

    #[test]
    fn captures_both_streams_in_order() {
        let out = sh("echo one; echo two >&2; echo three; exit 3")
            .run_captured(Path::new("."), false, Duration::from_secs(60))
            .expect("sh runs");
        assert_eq!(out.lines, ["one", "two", "three"]);
        assert_eq!(out.status.code(), Some(3));
        assert!(!out.timed_out);
    }

    #[test]
    fn streamed_lines_arrive_one_by_one() {
        let mut seen = Vec::new();
        let out = sh("echo one; echo two")
            .run_streamed(Path::new("."), Duration::from_secs(60), &mut |l| {
                seen.push(l.to_owned())
            })
            .expect("sh runs");
        assert_eq!(seen, ["one", "two"]);
        assert_eq!(out.lines, seen);
    }

    #[test]
    fn a_step_past_its_time_is_killed_with_its_children() {
        // `sh` starts a child `sleep` that holds the pipe too: both must go.
        let out = sh("echo started; sleep 30; echo never")
            .run_captured(Path::new("."), false, Duration::from_millis(500))
            .expect("sh runs");
        assert!(out.timed_out);
        assert_eq!(out.lines, ["started"]);
        assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
    }
}
