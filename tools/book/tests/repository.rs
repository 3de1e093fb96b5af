//! The repository's own book and README pass the checks of this crate: every chapter exists,
//! every page is a chapter, every link leads somewhere, and every generated block is what the
//! committed runs give.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_repositorys_book_and_readme_have_no_dead_links() {
    match book::check(&repo()) {
        Ok(checked) => assert!(checked.chapters > 10, "only {} chapters", checked.chapters),
        Err(problems) => {
            let list: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
            panic!(
                "{} problem(s) in the book:\n{}",
                list.len(),
                list.join("\n")
            );
        }
    }
}

#[test]
fn the_generated_blocks_are_what_the_committed_runs_give() {
    let stale = book::generated::stale(&repo()).unwrap_or_else(|e| panic!("{e}"));
    for (what, want) in &stale {
        eprintln!("{what} differs; from the data:\n{want}");
    }
    assert!(
        stale.is_empty(),
        "{} generated block(s) differ; `cargo xtask book --update` rewrites them",
        stale.len()
    );
}
