//! Reading libtest's console output (as printed by `cargo test`) to count individual tests.
//!
//! The lines used are the per-binary summary
//! `test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s`,
//! the per-test failure line `test path::name ... FAILED`, and cargo's
//! `Running tests/clh.rs (target/debug/deps/clh-0123)` / `Doc-tests sync` headers that say which
//! binary the following tests belong to.

/// Totals over every test binary found in one `cargo test` output.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Sum of the `passed` counts.
    pub passed: usize,
    /// Sum of the `failed` counts.
    pub failed: usize,
    /// Sum of the `ignored` counts.
    pub ignored: usize,
    /// How many `test result:` lines were seen (one per test binary that ran to the end).
    pub binaries: usize,
    /// Test binaries cargo started that never printed a `test result:` line (crashed, killed, or
    /// exited early), by name.
    pub unfinished: Vec<String>,
    /// Failing tests, as `binary: test name`.
    pub failures: Vec<String>,
}

/// Parses the merged stdout and stderr of `cargo test`.
pub fn parse<S: AsRef<str>>(lines: &[S]) -> Summary {
    let mut summary = Summary::default();
    let mut binary = String::from("?");
    // Whether the current binary printed its result line yet.
    let mut open = false;
    for line in lines {
        let line = line.as_ref().trim_end();
        let trimmed = line.trim_start();
        let header = if let Some(rest) = trimmed.strip_prefix("Running ") {
            // `Running unittests src/lib.rs (target/...)` or `Running tests/clh.rs (target/...)`.
            let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
            Some(rest.split(" (").next().unwrap_or(rest).to_owned())
        } else {
            trimmed
                .strip_prefix("Doc-tests ")
                .map(|krate| format!("doc-tests {krate}"))
        };
        if let Some(name) = header {
            if open {
                summary.unfinished.push(std::mem::take(&mut binary));
            }
            binary = name;
            open = true;
        } else if let Some(rest) = line.strip_prefix("test result: ") {
            open = false;
            summary.binaries += 1;
            summary.passed += count(rest, "passed");
            summary.failed += count(rest, "failed");
            summary.ignored += count(rest, "ignored");
        } else if let Some(name) = line
            .strip_prefix("test ")
            .and_then(|rest| rest.strip_suffix(" ... FAILED"))
        {
            summary.failures.push(format!("{binary}: {name}"));
        }
    }
    if open {
        summary.unfinished.push(binary);
    }
    summary
}

/// The number before `word` in `ok. 3 passed; 1 failed; ...` (0 if absent).
fn count(result: &str, word: &str) -> usize {
    result
        .split([';', '.'])
        .filter_map(|part| {
            let mut words = part.split_whitespace();
            let n = words.next()?.parse().ok()?;
            (words.next()? == word).then_some(n)
        })
        .next()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
   Compiling sync v0.1.0 (/work/main/sync)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 1.00s
     Running unittests src/lib.rs (target/debug/deps/sync-0123)

running 2 tests
test pad::tests::padding ... ok
test relax::tests::backoff ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running tests/clh.rs (target/debug/deps/clh-4567)

running 3 tests
test stress_two ... FAILED
test stress_one ... ok
test slow ... ignored

failures:

---- stress_two stdout ----
thread 'stress_two' panicked at sync/tests/clh.rs:10:5

failures:
    stress_two

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.10s

   Doc-tests sync

running 1 test
test sync/src/lib.rs - (line 5) ... FAILED

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.20s
";

    #[test]
    fn counts_tests_and_names_failures() {
        let lines: Vec<&str> = SAMPLE.lines().collect();
        let s = parse(&lines);
        assert_eq!(s.passed, 3);
        assert_eq!(s.failed, 2);
        assert_eq!(s.ignored, 1);
        assert_eq!(s.binaries, 3);
        assert_eq!(
            s.failures,
            [
                "tests/clh.rs: stress_two",
                "doc-tests sync: sync/src/lib.rs - (line 5)"
            ]
        );
    }

    #[test]
    fn a_binary_without_result_line_is_unfinished() {
        let lines = [
            "     Running tests/a.rs (target/debug/deps/a-1)",
            "test one ... ok",
            "error: test failed, to rerun pass `--test a`",
            "Caused by: process didn't exit successfully (signal: 11, SIGSEGV)",
            "     Running tests/b.rs (target/debug/deps/b-2)",
            "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
            "     Running tests/c.rs (target/debug/deps/c-3)",
        ];
        let s = parse(&lines);
        assert_eq!(s.unfinished, ["tests/a.rs", "tests/c.rs"]);
        assert_eq!(s.binaries, 1);
    }

    #[test]
    fn no_result_line_means_no_binary() {
        let s = parse(&["error[E0425]: cannot find value `x` in this scope"]);
        assert_eq!(s, Summary::default());
    }

    #[test]
    fn count_reads_each_field() {
        let r = "ok. 12 passed; 0 failed; 4 ignored; 0 measured; 7 filtered out; finished in 1.5s";
        assert_eq!(count(r, "passed"), 12);
        assert_eq!(count(r, "ignored"), 4);
        assert_eq!(count(r, "failed"), 0);
        assert_eq!(count(r, "bogus"), 0);
    }
}
