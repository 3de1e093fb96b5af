//! The documentation book: `docs/` is an mdBook whose table of contents is `docs/SUMMARY.md`,
//! and the README at the top of the repository is its front door.
//!
//! mdBook renders what the summary names and says nothing about a link that leads nowhere, so
//! [`check`] does that before a build (`cargo xtask book`, and the `book` step of
//! `cargo xtask test`):
//! - every chapter the summary names exists, and every Markdown page under `docs/` is a chapter
//!   (mdBook renders no other page, so a link to one is a dead link in the book);
//! - every relative link and image of a chapter, and of the files it `{{#include}}`s, resolves
//!   inside the book: to a chapter (and to one of its headings, if it names an anchor) or to a
//!   file mdBook copies beside the pages (figures, results data). A link out of `docs/` works
//!   on a forge's file view but not in the built book, so it is refused;
//! - every relative link of the README resolves in the repository, anchors included;
//! - external links (`http:`, `https:`, `mailto:`) are counted, not fetched: the build machines
//!   have no internet.
//!
//! The README's headline table and the results page's tables are generated from the committed
//! runs ([`generated`], [`headline`]).
//!
//! The build itself is `mdbook build` (the binary is installed like the other tools, see
//! `host_env::deps`); [`build_command`] says how it is run.

pub mod command;
pub mod generated;
pub mod headline;
pub mod markdown;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};

/// The book's folder, relative to the repository.
pub const BOOK_DIR: &str = "docs";
/// The table of contents, relative to [`BOOK_DIR`].
pub const SUMMARY: &str = "SUMMARY.md";
/// The front page, relative to the repository.
pub const FRONT_PAGE: &str = "README.md";
/// Where the built book goes, relative to the repository.
pub const OUT_DIR: &str = "target/book";

/// Something wrong with the book, at a place in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file, relative to the repository.
    pub file: PathBuf,
    /// The 1-based line (0 when the problem is the file as a whole).
    pub line: usize,
    /// What is wrong, in a sentence.
    pub what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.what)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.what)
        }
    }
}

/// What a successful [`check`] looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Checked {
    /// Chapters in the summary.
    pub chapters: usize,
    /// Relative links and images resolved (chapters, included files and the README).
    pub links: usize,
    /// External links counted but not fetched.
    pub external: usize,
}

/// The command that builds the book into [`OUT_DIR`] (`docs/book.toml` names it), as program
/// and arguments, run from the repository.
pub fn build_command() -> (&'static str, [&'static str; 2]) {
    ("mdbook", ["build", BOOK_DIR])
}

/// The chapters `SUMMARY.md` names, relative to the book, with their lines. A draft chapter
/// (an empty link target) is reported as a problem: mdBook would render it as a page that
/// does not exist.
pub fn chapters(summary: &str, file: &Path) -> (Vec<(PathBuf, usize)>, Vec<Problem>) {
    let page = markdown::parse(summary);
    let mut found = Vec::new();
    let mut problems = Vec::new();
    for link in page.links {
        if link.target.is_empty() {
            problems.push(Problem {
                file: file.to_path_buf(),
                line: link.line,
                what: "a draft chapter (no file): write the page or take it out".into(),
            });
        } else if is_external(&link.target) {
            problems.push(Problem {
                file: file.to_path_buf(),
                line: link.line,
                what: format!("`{}` is not a page of the book", link.target),
            });
        } else {
            found.push((
                PathBuf::from(link.target.split('#').next().unwrap_or_default()),
                link.line,
            ));
        }
    }
    (found, problems)
}

/// Whether a link target leaves the repository (and is only counted).
fn is_external(target: &str) -> bool {
    ["http://", "https://", "mailto:", "ftp://"]
        .iter()
        .any(|p| target.starts_with(p))
}

/// `path` with `.` and `..` folded, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A page read once: its text parsed, by repository-relative path.
struct Pages {
    repo: PathBuf,
    parsed: HashMap<PathBuf, Option<markdown::Page>>,
}

impl Pages {
    fn get(&mut self, rel: &Path) -> Option<&markdown::Page> {
        let repo = &self.repo;
        self.parsed
            .entry(rel.to_path_buf())
            .or_insert_with(|| {
                std::fs::read_to_string(repo.join(rel))
                    .ok()
                    .map(|t| markdown::parse(&t))
            })
            .as_ref()
    }
}

/// Where links are resolved and what they may reach.
struct Scope<'a> {
    /// The folder links are relative to (repository-relative).
    base: PathBuf,
    /// `Some(chapters)`: a book page, whose links must stay in the book and reach only chapters
    /// among its pages; `None`: the README, whose links may reach anything in the repository.
    book: Option<&'a HashSet<PathBuf>>,
}

/// Checks one link found in `file` (at `line`), resolved in `scope`.
fn check_link(
    pages: &mut Pages,
    scope: &Scope<'_>,
    file: &Path,
    link: &markdown::Link,
    checked: &mut Checked,
    problems: &mut Vec<Problem>,
) {
    if is_external(&link.target) {
        checked.external += 1;
        return;
    }
    checked.links += 1;
    let problem = |what: String| Problem {
        file: file.to_path_buf(),
        line: link.line,
        what,
    };
    let (path, anchor) = match link.target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (link.target.as_str(), None),
    };
    let target = if path.is_empty() {
        file.to_path_buf()
    } else {
        normalize(&scope.base.join(path))
    };
    if target.starts_with("..") {
        problems.push(problem(format!(
            "`{}` leads out of the repository",
            link.target
        )));
        return;
    }
    if let Some(chapters) = scope.book {
        if !target.starts_with(BOOK_DIR) {
            problems.push(problem(format!(
                "`{}` leads out of the book ({}/): the built book has no such page; link a page of the book, or name the file in code",
                link.target, BOOK_DIR
            )));
            return;
        }
        let in_book = target
            .strip_prefix(BOOK_DIR)
            .unwrap_or(&target)
            .to_path_buf();
        if target.extension().is_some_and(|e| e == "md") && !chapters.contains(&in_book) {
            let what = if pages.repo.join(&target).is_file() {
                format!(
                    "`{}` is a page that is not in {SUMMARY}: mdBook does not render it",
                    link.target
                )
            } else {
                format!("`{}`: no such page", link.target)
            };
            problems.push(problem(what));
            return;
        }
    }
    let on_disk = pages.repo.join(&target);
    if !on_disk.exists() {
        problems.push(problem(format!("`{}`: no such file", link.target)));
        return;
    }
    if scope.book.is_some() && on_disk.is_dir() {
        problems.push(problem(format!(
            "`{}` is a folder: the built book has no page for it; link a page or a file in it",
            link.target
        )));
        return;
    }
    if let Some(anchor) = anchor {
        if target.extension().is_some_and(|e| e == "md") {
            let known = pages
                .get(&target)
                .is_some_and(|p| p.anchors.contains(anchor));
            if !known {
                problems.push(problem(format!(
                    "`{}`: no heading with the anchor `#{anchor}` there",
                    link.target
                )));
            }
        }
    }
}

/// Checks the book under `repo` (see the module documentation). `Err` lists every problem
/// found, in file order.
pub fn check(repo: &Path) -> Result<Checked, Vec<Problem>> {
    let mut pages = Pages {
        repo: repo.to_path_buf(),
        parsed: HashMap::new(),
    };
    let mut problems = Vec::new();
    let mut checked = Checked::default();
    let book = Path::new(BOOK_DIR);
    let summary_file = book.join(SUMMARY);
    let Ok(summary) = std::fs::read_to_string(repo.join(&summary_file)) else {
        return Err(vec![Problem {
            file: summary_file,
            line: 0,
            what: "missing: the book has no table of contents".into(),
        }]);
    };
    let (listed, mut found) = chapters(&summary, &summary_file);
    problems.append(&mut found);
    let mut chapters = HashSet::new();
    for (chapter, line) in &listed {
        let rel = normalize(chapter);
        if !repo.join(book).join(&rel).is_file() {
            problems.push(Problem {
                file: summary_file.clone(),
                line: *line,
                what: format!("chapter `{}`: no such page", chapter.display()),
            });
        }
        if !chapters.insert(rel) {
            problems.push(Problem {
                file: summary_file.clone(),
                line: *line,
                what: format!("chapter `{}` is listed twice", chapter.display()),
            });
        }
    }
    checked.chapters = chapters.len();
    for page in markdown_files(&repo.join(book)) {
        let rel = page
            .strip_prefix(repo.join(book))
            .unwrap_or(&page)
            .to_path_buf();
        if rel != Path::new(SUMMARY) && !chapters.contains(&rel) {
            problems.push(Problem {
                file: book.join(&rel),
                line: 0,
                what: format!("not in {SUMMARY}: mdBook does not render it; list it as a chapter"),
            });
        }
    }
    let mut sorted: Vec<_> = chapters.iter().cloned().collect();
    sorted.sort();
    for chapter in &sorted {
        let file = book.join(chapter);
        let Some(page) = pages.get(&file).cloned() else {
            continue;
        };
        let scope = Scope {
            base: file.parent().unwrap_or(book).to_path_buf(),
            book: Some(&chapters),
        };
        let mut anchors = page.anchors.clone();
        for link in &page.links {
            check_link(&mut pages, &scope, &file, link, &mut checked, &mut problems);
        }
        for include in &page.includes {
            let included = normalize(&scope.base.join(&include.target));
            let Some(inner) = pages.get(&included).cloned() else {
                problems.push(Problem {
                    file: file.clone(),
                    line: include.line,
                    what: format!("includes `{}`: no such file", include.target),
                });
                continue;
            };
            // The included text renders in this chapter, so its links are resolved from here.
            for link in &inner.links {
                check_link(
                    &mut pages,
                    &scope,
                    &included,
                    link,
                    &mut checked,
                    &mut problems,
                );
            }
            anchors.extend(inner.anchors.iter().cloned());
        }
        if let Some(Some(parsed)) = pages.parsed.get_mut(&file) {
            parsed.anchors = anchors;
        }
    }
    let front = PathBuf::from(FRONT_PAGE);
    if let Some(page) = pages.get(&front).cloned() {
        let scope = Scope {
            base: PathBuf::new(),
            book: None,
        };
        for link in &page.links {
            check_link(
                &mut pages,
                &scope,
                &front,
                link,
                &mut checked,
                &mut problems,
            );
        }
    } else {
        problems.push(Problem {
            file: front,
            line: 0,
            what: "missing".into(),
        });
    }
    if problems.is_empty() {
        Ok(checked)
    } else {
        Err(problems)
    }
}

/// Every `.md` file under `dir`, sorted.
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch repository with these files, removed on drop.
    struct Repo(PathBuf);

    impl Repo {
        fn new(name: &str, files: &[(&str, &str)]) -> Repo {
            let root =
                std::env::temp_dir().join(format!("book-check-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            for (path, text) in files {
                let p = root.join(path);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            }
            Repo(root)
        }
    }

    impl Drop for Repo {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn whats(problems: &[Problem]) -> Vec<String> {
        problems.iter().map(|p| p.to_string()).collect()
    }

    const GOOD: &[(&str, &str)] = &[
        ("README.md", "# X\n[start](docs/start.md#what-you-need) [code](kernel/) [web](https://example.org)\n"),
        ("kernel/lib.rs", ""),
        ("CHANGELOG.md", "# Changes\n## Unreleased\nSee [start](start.md).\n"),
        ("docs/SUMMARY.md", "# Summary\n\n- [Start](start.md)\n- [Results](results.md)\n  - [Run](bench/run/report.md)\n- [Changes](changes.md)\n"),
        ("docs/start.md", "# Start\n## What you need\n[results](results.md#ipc) and [changes](changes.md#unreleased)\n"),
        ("docs/results.md", "# Results\n## IPC\n![fig](bench/run/fig.svg) [run](bench/run/report.md) [self](#ipc)\n"),
        ("docs/bench/run/report.md", "# Run\n[data](results.json)\n"),
        ("docs/bench/run/results.json", "{}"),
        ("docs/bench/run/fig.svg", "<svg/>"),
        ("docs/changes.md", "{{#include ../CHANGELOG.md}}\n"),
    ];

    #[test]
    fn a_sound_book_passes() {
        let repo = Repo::new("good", GOOD);
        let checked = check(&repo.0).unwrap_or_else(|p| panic!("{:#?}", whats(&p)));
        assert_eq!(checked.chapters, 4);
        assert_eq!(checked.external, 1);
        assert_eq!(checked.links, 9);
    }

    fn with(changes: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut files: Vec<(String, String)> = GOOD
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        for (path, text) in changes {
            files.retain(|(p, _)| p != path);
            if !text.is_empty() {
                files.push((path.to_string(), text.to_string()));
            }
        }
        files
    }

    fn problems_of(name: &str, changes: &[(&str, &str)]) -> Vec<String> {
        let files = with(changes);
        let borrowed: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let repo = Repo::new(name, &borrowed);
        whats(&check(&repo.0).expect_err("the broken book passed"))
    }

    #[test]
    fn a_missing_chapter_fails() {
        let p = problems_of("missing", &[("docs/results.md", "")]);
        assert!(
            p.iter()
                .any(|w| w.contains("chapter `results.md`: no such page")),
            "{p:#?}"
        );
    }

    #[test]
    fn a_page_outside_the_summary_fails() {
        let p = problems_of("orphan", &[("docs/orphan.md", "# Orphan\n")]);
        assert_eq!(p, ["docs/orphan.md: not in SUMMARY.md: mdBook does not render it; list it as a chapter"]);
    }

    #[test]
    fn a_dead_link_fails_with_its_line() {
        let p = problems_of(
            "dead",
            &[("docs/start.md", "# Start\n\nsee [x](nowhere.md)\n")],
        );
        assert!(
            p.iter()
                .any(|w| w.starts_with("docs/start.md:3: `nowhere.md`: no such page")),
            "{p:#?}"
        );
    }

    #[test]
    fn a_wrong_anchor_fails() {
        let p = problems_of(
            "anchor",
            &[("docs/start.md", "# Start\n[r](results.md#memory)\n")],
        );
        assert!(
            p.iter()
                .any(|w| w.contains("no heading with the anchor `#memory`")),
            "{p:#?}"
        );
        let p = problems_of(
            "readme-anchor",
            &[("README.md", "[s](docs/start.md#nothing)\n")],
        );
        assert!(p.iter().any(|w| w.starts_with("README.md:1:")), "{p:#?}");
    }

    #[test]
    fn a_link_out_of_the_book_fails() {
        let p = problems_of(
            "out",
            &[("docs/start.md", "# Start\n[k](../kernel/lib.rs)\n")],
        );
        assert!(
            p.iter().any(|w| w.contains("leads out of the book")),
            "{p:#?}"
        );
    }

    #[test]
    fn an_included_files_links_resolve_from_the_chapter() {
        let p = problems_of(
            "include",
            &[("CHANGELOG.md", "# Changes\nSee [start](docs/start.md).\n")],
        );
        assert!(
            p.iter()
                .any(|w| w.starts_with("CHANGELOG.md:2: `docs/start.md`")),
            "{p:#?}"
        );
    }

    #[test]
    fn a_folder_link_in_the_book_fails_but_not_in_the_readme() {
        let p = problems_of("folder", &[("docs/start.md", "# Start\n[b](bench/run/)\n")]);
        assert!(p.iter().any(|w| w.contains("is a folder")), "{p:#?}");
    }

    #[test]
    fn draft_chapters_fail() {
        let p = problems_of(
            "draft",
            &[(
                "docs/SUMMARY.md",
                "# Summary\n- [Start](start.md)\n- [Later]()\n",
            )],
        );
        assert!(p.iter().any(|w| w.contains("a draft chapter")), "{p:#?}");
    }

    #[test]
    fn normalize_folds_dots() {
        assert_eq!(
            normalize(Path::new("docs/./a/../b.md")),
            PathBuf::from("docs/b.md")
        );
        assert_eq!(normalize(Path::new("../x")), PathBuf::from("../x"));
    }
}
