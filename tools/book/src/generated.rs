//! The parts of the README and the book that are generated from the committed runs.
//!
//! A generated block sits between a line `<!-- generated: NAME ... -->` and a line
//! `<!-- end of generated: NAME -->` in its page; [`BLOCKS`] says which page holds which block
//! and what renders it. `cargo xtask book --update` rewrites every block from the data
//! ([`update`]); `cargo xtask book`, the `book` step and a test of this crate fail when a block
//! is not what the data give ([`stale`]), so a figure on these pages cannot drift from the
//! runs it comes from.

use std::path::Path;

use crate::headline::{mean, percent, read, records};

/// A generated block: the page, the block's name and what renders it from the repository.
pub struct Block {
    /// The page, relative to the repository.
    pub page: &'static str,
    /// The block's name in its markers.
    pub name: &'static str,
    /// Renders the block's Markdown from the committed runs.
    pub render: fn(&Path) -> Result<String, String>,
}

/// Every generated block.
pub const BLOCKS: &[Block] = &[
    Block {
        page: "README.md",
        name: "headline",
        render: crate::headline::render,
    },
    Block {
        page: "docs/results.md",
        name: "memory-scaling",
        render: memory_scaling,
    },
    Block {
        page: "docs/results.md",
        name: "redis-throughput",
        render: redis_throughput,
    },
    Block {
        page: "docs/locks.md",
        name: "host-locks",
        render: host_locks,
    },
];

/// The line that opens block `name`.
pub fn begin(name: &str) -> String {
    format!(
        "<!-- generated: {name} (from docs/bench by `cargo xtask book --update`; edit tools/book/src, not this block) -->"
    )
}

/// The line that closes block `name`.
pub fn end(name: &str) -> String {
    format!("<!-- end of generated: {name} -->")
}

/// The byte range of block `name`'s body in `text` (after its opening line, up to its closing
/// line).
fn body(text: &str, name: &str) -> Option<(usize, usize)> {
    let open = begin(name);
    let start = text.find(&open)? + open.len();
    let start = start + usize::from(text[start..].starts_with('\n'));
    let stop = text[start..].find(&end(name))? + start;
    Some((start, stop))
}

/// What block `name` holds in `text`, if its markers are there.
pub fn current<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    body(text, name).map(|(a, b)| &text[a..b])
}

/// `text` with block `name`'s body replaced by `with`.
pub fn splice(text: &str, name: &str, with: &str) -> Result<String, String> {
    let (a, b) =
        body(text, name).ok_or_else(|| format!("no `{name}` block (its markers are missing)"))?;
    Ok(format!("{}{}{}", &text[..a], with, &text[b..]))
}

/// The blocks that differ from what the data give, as `page: block` with what the data give.
pub fn stale(repo: &Path) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for block in BLOCKS {
        let text = std::fs::read_to_string(repo.join(block.page))
            .map_err(|e| format!("{}: {e}", block.page))?;
        let want = (block.render)(repo)?;
        if current(&text, block.name) != Some(want.as_str()) {
            out.push((format!("{}: block `{}`", block.page, block.name), want));
        }
    }
    Ok(out)
}

/// Rewrites every block from the data; returns the blocks that changed.
pub fn update(repo: &Path) -> Result<Vec<String>, String> {
    let mut changed = Vec::new();
    for block in BLOCKS {
        let path = repo.join(block.page);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", block.page))?;
        let new = splice(&text, block.name, &(block.render)(repo)?)
            .map_err(|e| format!("{}: {e}", block.page))?;
        if new != text {
            std::fs::write(&path, new).map_err(|e| format!("{}: {e}", block.page))?;
            changed.push(format!("{}: {}", block.page, block.name));
        }
    }
    Ok(changed)
}

/// The memory suite's run: the change of the time per page from 1 to 2 cores at 100 pages,
/// per platform and pager, beside the paper's 48-core figures.
fn memory_scaling(repo: &Path) -> Result<String, String> {
    let rel = "docs/bench/memory/results.json";
    let results = read(repo, rel)?;
    let recs = records(&results, rel)?;
    let change =
        |platform: &str, board: &str, bench: &str, variant: &str| -> Result<String, String> {
            let at = |cores: &str| {
                mean(
                    recs,
                    rel,
                    &[
                        ("platform", platform),
                        ("board", board),
                        ("bench", bench),
                        ("variant", variant),
                        ("pages", "100"),
                        ("cores", cores),
                    ],
                )
            };
            Ok(format!("{:+.1}%", percent(at("2")?, at("1")?)))
        };
    let mut out = String::from(
        "| platform | per-core alloc | per-core free | global alloc | global free |\n|---|---:|---:|---:|---:|\n",
    );
    for (label, platform, board) in [
        ("qemu MTTCG, x86_64 microvm (ns, noisy)", "qemu", "microvm"),
        ("qemu MTTCG, ARMv7 sabrelite", "qemu", "sabrelite"),
        ("qemu MTTCG, ARMv7 virt", "qemu", "virt"),
        ("hosted, kernel on host threads (cycles)", "hosted", "host"),
    ] {
        let mut row = format!("| {label} |");
        for (bench, variant) in [
            ("memory-alloc", "percore"),
            ("memory-free", "percore"),
            ("memory-alloc", "global"),
            ("memory-free", "global"),
        ] {
            row.push_str(&format!(" {} |", change(platform, board, bench, variant)?));
        }
        out.push_str(&row);
        out.push('\n');
    }
    out.push_str("| paper, 48 cores | +4% | +5% | L4Re: +2500% | +230% |\n");
    Ok(out)
}

/// `x` to three figures (one decimal below 100).
fn three_figures(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// Thousands of operations per second, to three figures.
fn kilo(ops: f64) -> String {
    three_figures(ops / 1000.0)
}

/// The redis suite's run: throughput per architecture, core count and workload, for every
/// lock and Linux + Redis.
fn redis_throughput(repo: &Path) -> Result<String, String> {
    let rel = "docs/bench/redis/results.json";
    let results = read(repo, rel)?;
    let recs = records(&results, rel)?;
    const LOCKS: [&str; 6] = ["none", "clh", "ticket", "fine", "rtm", "linux"];
    let mut out = String::from(
        "| arch | cores | workload | none | clh | ticket | fine | rtm | Linux + Redis |\n|---|---:|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (arch, board, label) in [
        ("x86_64", "microvm", "x86_64"),
        ("armv7", "virt", "armv7 virt"),
    ] {
        for cores in [1u64, 2] {
            for (client, workload, name) in [
                ("redis-benchmark", "SET", "redis-benchmark SET"),
                ("redis-benchmark", "GET -P 16", "redis-benchmark GET -P 16"),
                ("ycsb", "A", "YCSB A"),
            ] {
                let mut row = format!("| {label} | {cores} | {name} |");
                for lock in LOCKS {
                    let found = recs.iter().find(|r| {
                        r["arch"] == arch
                            && r["board"] == board
                            && r["cores"].as_u64() == Some(cores)
                            && r["client"] == client
                            && r["workload"] == workload
                            && r["lock"] == lock
                    });
                    let cell = match found.and_then(|r| r["ops_per_s"].as_f64()) {
                        Some(ops) => kilo(ops),
                        None => "-".into(),
                    };
                    row.push_str(&format!(" {cell} |"));
                }
                out.push_str(&row);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// Millions (or thousands) of operations per second to three figures: `401M`, `12.0M`.
fn ops(v: f64) -> String {
    let (x, unit) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else {
        (v / 1e3, "k")
    };
    format!("{}{unit}", three_figures(x))
}

/// The lock micro-benchmarks' committed run (`cargo xtask bench locks`): the machine, one row
/// per lock and peer (uncontended ns and ticks, ops/s per thread count), and the parity verdicts.
fn host_locks(repo: &Path) -> Result<String, String> {
    let rel = "docs/bench/host-locks.json";
    let results = read(repo, rel)?;
    let recs = records(&results, rel)?;
    let m = &results["machine"];
    let method = &results["method"];
    let str_of = |v: &serde_json::Value| v.as_str().unwrap_or("?").to_owned();
    let threads: Vec<u64> = method["threads"]
        .as_array()
        .ok_or_else(|| format!("{rel}: no `method.threads`"))?
        .iter()
        .filter_map(serde_json::Value::as_u64)
        .collect();
    let mut out = format!(
        "The committed run ([`bench/host-locks.json`](bench/host-locks.json); {}, **{}, {} CPUs, \
         RTM: {}**, {}{}, {} rounds):\n\n",
        str_of(&results["generated_by"]["utc"]),
        str_of(&m["cpu_model"]),
        m["logical_cpus"].as_u64().unwrap_or(0),
        str_of(&m["rtm"]["summary"]),
        str_of(&m["rustc"]),
        m["tsc_ghz"]
            .as_f64()
            .map(|g| format!(", TSC {g:.2} GHz estimated by the run"))
            .unwrap_or_default(),
        method["rounds"].as_u64().unwrap_or(0),
    );
    out.push_str("| lock | uncontended ns | uncontended ticks |");
    for t in &threads {
        out.push_str(&format!(
            " {t} thread{} ops/s |",
            if *t == 1 { "" } else { "s" }
        ));
    }
    out.push_str("\n|---|---:|---:|");
    out.push_str(&"---:|".repeat(threads.len()));
    out.push('\n');
    let median = |v: &serde_json::Value| v["median"].as_f64();
    for r in recs {
        let name = str_of(&r["name"]);
        let label = match r["origin"].as_str() {
            Some("kernel-locks") => name,
            Some(origin) => format!("{name} ({origin})"),
            None => name,
        };
        let un = &r["uncontended"];
        let cell = |v: Option<f64>, digits: usize| {
            v.map_or_else(|| "-".to_owned(), |x| format!("{x:.digits$}"))
        };
        out.push_str(&format!(
            "| {label} | {} | {} |",
            cell(median(&un["ns_per_op"]), 2),
            cell(median(&un["ticks_per_op"]), 1)
        ));
        for t in &threads {
            let run = r["contended"]
                .as_array()
                .and_then(|runs| runs.iter().find(|c| c["threads"].as_u64() == Some(*t)));
            let text = match run.map(|c| &c["ops_per_s"]) {
                Some(o) => match (median(o), o["min"].as_f64(), o["max"].as_f64()) {
                    (Some(med), Some(lo), Some(hi)) => {
                        format!("{} ({}-{})", ops(med), ops(lo), ops(hi))
                    }
                    _ => "-".into(),
                },
                None => "-".into(),
            };
            out.push_str(&format!(" {text} |"));
        }
        out.push('\n');
    }
    let pairs = results["summary"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if !pairs.is_empty() {
        out.push_str("\nParity in this run (uncontended: median of the per-round medians; contended: median ops/s; verdict against the rounds' own spread):\n\n");
    }
    for pair in pairs {
        let un = &pair["uncontended"];
        let mut line = format!(
            "* {} vs {}: uncontended {:.2} vs {:.2} {} ({:+.1}%, at or below in {} of {} rounds)",
            str_of(&pair["ours"]),
            str_of(&pair["peer"]),
            un["ours"].as_f64().unwrap_or(f64::NAN),
            un["peer"].as_f64().unwrap_or(f64::NAN),
            str_of(&un["unit"]),
            (un["ratio"].as_f64().unwrap_or(f64::NAN) - 1.0) * 100.0,
            un["rounds_at_or_below_peer"].as_u64().unwrap_or(0),
            un["rounds"].as_u64().unwrap_or(0),
        );
        for c in pair["contended"].as_array().into_iter().flatten() {
            let t = c["threads"].as_u64().unwrap_or(0);
            if t < 2 {
                continue;
            }
            line.push_str(&format!(
                "; {t} threads {} vs {} {} ({:+.1}%)",
                ops(c["ours_ops_per_s"].as_f64().unwrap_or(f64::NAN)),
                c["peer"]
                    .as_str()
                    .unwrap_or(pair["peer"].as_str().unwrap_or("?")),
                ops(c["peer_ops_per_s"].as_f64().unwrap_or(f64::NAN)),
                (c["ratio"].as_f64().unwrap_or(f64::NAN) - 1.0) * 100.0,
            ));
        }
        let verdict = pair["verdict"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| {
                if pair["met"].as_bool() == Some(true) {
                    "met".into()
                } else {
                    "not-met".into()
                }
            });
        line.push_str(&format!(": **{verdict}**\n"));
        out.push_str(&line);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_replaces_only_the_block() {
        let page = format!("# X\n\n{}\n| old |\n{}\n\nafter\n", begin("t"), end("t"));
        let out = splice(&page, "t", "| new |\n").unwrap();
        assert_eq!(
            out,
            format!("# X\n\n{}\n| new |\n{}\n\nafter\n", begin("t"), end("t"))
        );
        assert_eq!(current(&out, "t"), Some("| new |\n"));
        assert!(splice("no markers", "t", "x").is_err());
        assert_eq!(current(&out, "other"), None);
    }

    #[test]
    fn operations_per_second_to_three_figures() {
        assert_eq!(ops(401_352_522.0), "401M");
        assert_eq!(ops(12_031_417.0), "12.0M");
        assert_eq!(ops(3.2e9), "3.2G");
    }

    #[test]
    fn thousands_to_three_figures() {
        assert_eq!(kilo(23_419.2), "23.4");
        assert_eq!(kilo(161_290.0), "161");
        assert_eq!(kilo(5_100.0), "5.1");
    }
}
