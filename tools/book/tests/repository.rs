//! The repository's own book and README pass the checks of this crate: every chapter exists,
//! every page is a chapter, every link leads somewhere, and the README's headline table is what
//! the committed runs give.

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
fn the_readmes_headline_table_is_what_the_committed_runs_give() {
    let readme = std::fs::read_to_string(repo().join(book::FRONT_PAGE)).unwrap();
    let table = book::headline::render(&repo()).unwrap_or_else(|e| panic!("{e}"));
    let held = book::headline::current(&readme).expect("the README has no headline table markers");
    assert!(
        held == table,
        "the README's headline table differs from the committed runs; `cargo xtask book --update` rewrites it.\n\
         README:\n{held}\nfrom the data:\n{table}"
    );
}
