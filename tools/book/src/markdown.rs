//! What the checks need from a Markdown page: its links and images, its headings' anchors and
//! its `{{#include}}` directives.
//!
//! Pages are parsed with `pulldown-cmark` and the options mdBook renders with, so a link inside a
//! code block or span is not a link here either, and a heading's anchor is the id mdBook gives it
//! (the heading's text lower-cased, whitespace as `-`, everything but letters, digits, `_` and
//! `-` dropped, `-1`, `-2`, ... appended to repeats). An explicit `{#id}` attribute wins.

use std::collections::HashSet;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// A link or image target found on a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The target as written (`other.md#anchor`, `../kernel/`, `https://...`).
    pub target: String,
    /// The 1-based line it stands on.
    pub line: usize,
}

/// The parts of one page the checks look at.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Page {
    /// Every link and image target, in page order.
    pub links: Vec<Link>,
    /// Every heading's anchor, as mdBook generates it.
    pub anchors: HashSet<String>,
    /// Every `{{#include path}}` (and `{{#rustdoc_include path}}`) path, with its line.
    pub includes: Vec<Link>,
}

/// mdBook's parser options (`mdbook-markdown`'s defaults).
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// The anchor mdBook gives a heading with this text (before making repeats unique).
pub fn anchor_of(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c)
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Reads `text`'s links, anchors and includes.
pub fn parse(text: &str) -> Page {
    let mut page = Page::default();
    let mut heading: Option<(String, Option<String>)> = None;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => {
                page.links.push(Link {
                    target: dest_url.to_string(),
                    line: line_of(text, range.start),
                });
            }
            Event::Start(Tag::Heading { id, .. }) => {
                heading = Some((String::new(), id.map(|id| id.to_string())));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((content, _)) = heading.as_mut() {
                    content.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((content, explicit)) = heading.take() {
                    let id = explicit.unwrap_or_else(|| anchor_of(&content));
                    unique_insert(&mut page.anchors, id);
                }
            }
            _ => {}
        }
    }
    page.includes = includes(text);
    page
}

/// Inserts `id`, or `id-1`, `id-2`, ... if it is taken, as mdBook numbers repeated headings.
fn unique_insert(used: &mut HashSet<String>, id: String) {
    if used.insert(id.clone()) {
        return;
    }
    let mut n = 1u32;
    while !used.insert(format!("{id}-{n}")) {
        n += 1;
    }
}

/// The `{{#include path}}` directives of a page (mdBook expands them before parsing; an
/// `:anchor` or line range after the path is dropped).
fn includes(text: &str) -> Vec<Link> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("{{#") {
            let after = &rest[start + 3..];
            let Some(end) = after.find("}}") else { break };
            let directive = after[..end].trim();
            let mut words = directive.split_whitespace();
            if let (Some("include" | "rustdoc_include"), Some(path)) = (words.next(), words.next())
            {
                let path = path.split(':').next().unwrap_or(path);
                found.push(Link {
                    target: path.to_string(),
                    line: i + 1,
                });
            }
            rest = &after[end + 2..];
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_images_with_their_lines() {
        let page =
            parse("# Title\n\nSee [a](a.md#x) and\n![fig](fig.svg).\n\n[r]: ref.md\n\nUse [r].\n");
        let targets: Vec<_> = page
            .links
            .iter()
            .map(|l| (l.target.as_str(), l.line))
            .collect();
        assert_eq!(targets, [("a.md#x", 3), ("fig.svg", 4), ("ref.md", 8)]);
    }

    #[test]
    fn code_is_not_a_link() {
        let page = parse("```text\n[a](nowhere.md)\n```\n\nand `[b](nowhere.md)` too\n");
        assert!(page.links.is_empty(), "{:?}", page.links);
    }

    #[test]
    fn anchors_as_mdbook_makes_them() {
        let page = parse(
            "# Getting started\n## 15. The layout: one job a crate\n## `cargo xtask test`\n\
             ## Notes\n## Notes\n## Custom {#my-id}\n",
        );
        for id in [
            "getting-started",
            "15-the-layout-one-job-a-crate",
            "cargo-xtask-test",
            "notes",
            "notes-1",
            "my-id",
        ] {
            assert!(
                page.anchors.contains(id),
                "{id} missing from {:?}",
                page.anchors
            );
        }
        assert_eq!(page.anchors.len(), 6);
    }

    #[test]
    fn includes_with_anchors_dropped() {
        let page =
            parse("{{#include ../CHANGELOG.md}}\ntext {{#include a.rs:here}} {{#title x}}\n");
        let paths: Vec<_> = page
            .includes
            .iter()
            .map(|l| (l.target.as_str(), l.line))
            .collect();
        assert_eq!(paths, [("../CHANGELOG.md", 1), ("a.rs", 2)]);
    }
}
