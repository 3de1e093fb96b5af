//! The repository's own book passes the checks: every chapter exists, every page is a chapter,
//! and every link of the book and the README leads somewhere (see the crate documentation).

use std::path::Path;

#[test]
fn the_repositorys_book_and_readme_have_no_dead_links() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match book::check(&repo) {
        Ok(checked) => assert!(checked.chapters > 10, "only {} chapters", checked.chapters),
        Err(problems) => {
            let list: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
            panic!("{} problem(s) in the book:\n{}", list.len(), list.join("\n"));
        }
    }
}
