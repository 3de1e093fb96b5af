//! `cargo xtask book`: check the book and the README, then build the book with mdBook.
//!
//! The checks come first ([`crate::check`], and the generated blocks against the committed
//! runs, [`crate::generated`]), so a dead link or a stale figure fails before mdBook
//! runs. mdBook itself is installed into the target directory when missing
//! ([`host_env::cargo_tools::MDBOOK`]). A warning or error line from mdBook fails the command
//! too: mdBook carries on past a page it cannot render.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use host_env::cargo_tools::{self, MDBOOK};
use host_env::proc::Cmd;

/// Options of `cargo xtask book`.
#[derive(Debug, Args)]
pub struct BookArgs {
    /// Rewrite the generated blocks (the README's headline table, the results page's tables)
    /// from the committed runs under docs/bench instead of failing when they differ, then check
    /// and build as usual.
    #[arg(long)]
    pub update: bool,

    /// Check the links and the headline table only; do not build (no mdBook needed).
    #[arg(long)]
    pub check_only: bool,
}

/// How long mdBook may take to build the book before it counts as hung.
const BUILD_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs `cargo xtask book`.
pub fn run(root: &Path, args: &BookArgs) -> ExitCode {
    host_env::exit_code("book", book(root, args))
}

fn book(root: &Path, args: &BookArgs) -> Result<(), String> {
    if args.update {
        for block in crate::generated::update(root)? {
            println!("book: rewrote {block} from the committed runs");
        }
    }
    let stale = crate::generated::stale(root)?;
    if !stale.is_empty() {
        let list: Vec<String> = stale
            .iter()
            .map(|(what, want)| format!("  {what}; from the data:\n{want}"))
            .collect();
        return Err(format!(
            "generated blocks differ from the committed runs (`cargo xtask book --update` rewrites them):\n{}",
            list.join("\n")
        ));
    }
    let checked = crate::check(root).map_err(|problems| {
        let list: Vec<String> = problems.iter().map(|p| format!("  {p}")).collect();
        format!(
            "{} problem(s) in the book:\n{}",
            problems.len(),
            list.join("\n")
        )
    })?;
    println!(
        "book: {} chapters; {} links and images resolved, {} external links counted (not fetched); {} generated blocks match the data",
        checked.chapters,
        checked.links,
        checked.external,
        crate::generated::BLOCKS.len()
    );
    if args.check_only {
        return Ok(());
    }
    let mdbook = cargo_tools::ensure("cargo xtask book", root, &MDBOOK)?;
    let (_, build) = crate::build_command();
    let out = Cmd::new(&mdbook)
        .args(build)
        .run_captured(root, false, BUILD_TIMEOUT)
        .map_err(|e| format!("cannot run {}: {e}", mdbook.display()))?;
    let complaints: Vec<&String> = out
        .lines
        .iter()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    if out.timed_out || !out.status.success() || !complaints.is_empty() {
        return Err(format!(
            "mdbook build {} failed ({}):\n{}",
            crate::BOOK_DIR,
            if out.timed_out {
                "timed out".to_string()
            } else {
                out.status.to_string()
            },
            out.lines.join("\n")
        ));
    }
    println!(
        "book: built with {} into {} ({:.1} s); open {}/index.html",
        MDBOOK.version_line,
        crate::OUT_DIR,
        out.elapsed.as_secs_f64(),
        crate::OUT_DIR
    );
    Ok(())
}
