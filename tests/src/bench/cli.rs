//! The command lines of the hosted benchmark binaries (`benches/ipc_hosted.rs`,
//! `benches/memory_hosted.rs`), written once: flags and their values, comma-separated lists,
//! and a usage error that exits with status 2.
//!
//! Hand-parsed rather than with `clap`: `cargo bench` passes its own `--bench` flag to
//! harness-less benches, and the two binaries take a handful of flags each.

use super::Lock;

/// The longest busy delay `--delays` takes, in cycles (a million: a few hundred microseconds,
/// far past sel4bench's 32,000).
pub const MAX_DELAY: u64 = 1_000_000;

/// The arguments of a benchmark binary, read flag by flag.
pub struct Args {
    name: &'static str,
    usage: &'static str,
    args: Vec<String>,
    next: usize,
}

impl Args {
    /// The process's arguments; `name` and `usage` make the error messages.
    pub fn from_env(name: &'static str, usage: &'static str) -> Args {
        Args::new(name, usage, std::env::args().skip(1).collect())
    }

    /// `args` (without the program name).
    pub fn new(name: &'static str, usage: &'static str, args: Vec<String>) -> Args {
        Args {
            name,
            usage,
            args,
            next: 0,
        }
    }

    /// Whether `flag` is anywhere on the command line (for flags that shape the defaults).
    pub fn has(&self, flag: &str) -> bool {
        self.args.iter().any(|a| a == flag)
    }

    /// The next flag, skipping the `--bench` that `cargo bench` adds; `None` at the end.
    pub fn flag(&mut self) -> Option<String> {
        loop {
            let a = self.args.get(self.next)?.clone();
            self.next += 1;
            if a != "--bench" {
                return Some(a);
            }
        }
    }

    /// The value of `flag`, the next argument.
    pub fn value(&mut self, flag: &str) -> String {
        let v = self.args.get(self.next).cloned();
        self.next += 1;
        v.unwrap_or_else(|| self.fail(&format!("{flag} needs a value")))
    }

    /// A positive number for `flag`.
    pub fn positive(&mut self, flag: &str) -> usize {
        let v = self.value(flag);
        self.number(flag, &v)
    }

    /// A comma-separated list of positive numbers for `flag`.
    pub fn numbers(&mut self, flag: &str) -> Vec<usize> {
        let v = self.value(flag);
        v.split(',').map(|x| self.number(flag, x)).collect()
    }

    /// A comma-separated list of `flag`'s values, each read by `parse`.
    pub fn items<T>(&mut self, flag: &str, parse: impl Fn(&str) -> Option<T>) -> Vec<T> {
        let v = self.value(flag);
        v.split(',')
            .map(|x| {
                parse(x.trim()).unwrap_or_else(|| self.fail(&format!("{flag}: unknown `{x}`")))
            })
            .collect()
    }

    /// The busy delays of `flag` in cycles (`0,500,32000`): whole numbers up to
    /// [`MAX_DELAY`].
    pub fn delays(&mut self, flag: &str) -> Vec<u64> {
        self.items(flag, |x| x.parse().ok().filter(|d| *d <= MAX_DELAY))
    }

    /// The kernel strategies of `flag` (`none,clh,ticket,fine,rtm`).
    pub fn locks(&mut self, flag: &str) -> Vec<Lock> {
        self.items(flag, Lock::parse)
    }

    /// Prints `msg` and the usage, and exits with status 2.
    pub fn fail(&self, msg: &str) -> ! {
        eprintln!("{}: {msg}\nusage: {} {}", self.name, self.name, self.usage);
        std::process::exit(2)
    }

    fn number(&self, flag: &str, x: &str) -> usize {
        x.trim()
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .unwrap_or_else(|| self.fail(&format!("{flag}: not a positive number: `{x}`")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Args {
        Args::new("t", "[...]", a.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn flags_values_and_lists() {
        let mut a = args(&[
            "--bench", "--cores", "1,2", "--locks", "clh,none", "--runs", "3",
        ]);
        assert!(a.has("--runs") && !a.has("--quick"));
        assert_eq!(a.flag().as_deref(), Some("--cores"));
        assert_eq!(a.numbers("--cores"), vec![1, 2]);
        assert_eq!(a.flag().as_deref(), Some("--locks"));
        assert_eq!(a.locks("--locks"), vec![Lock::Clh, Lock::None]);
        assert_eq!(a.flag().as_deref(), Some("--runs"));
        assert_eq!(a.positive("--runs"), 3);
        assert_eq!(a.flag(), None);
        let mut d = args(&["--delays", "0,500,32000"]);
        assert_eq!(d.flag().as_deref(), Some("--delays"));
        assert_eq!(d.delays("--delays"), vec![0, 500, 32_000]);
    }
}
