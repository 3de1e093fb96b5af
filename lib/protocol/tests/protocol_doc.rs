//! `docs/bench-protocol.md` is checked against the crate: every generated section of the
//! document must be what [`protocol::doc::section`] writes now, and every section must be there.
//! `PROTOCOL_DOC_UPDATE=1 cargo test -p protocol --features std --test protocol_doc` rewrites
//! the sections after a change.

#![cfg(feature = "std")]

use protocol::doc::{section, SECTIONS};

const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bench-protocol.md");

fn begin(name: &str) -> String {
    format!("<!-- generated from lib/protocol: {name} -->\n")
}

fn end(name: &str) -> String {
    format!("<!-- end of {name} -->")
}

/// The document with every generated section written anew; the names that are missing.
fn regenerate(text: &str) -> (String, Vec<&'static str>) {
    let mut out = text.to_owned();
    let mut missing = Vec::new();
    for name in SECTIONS {
        let (b, e) = (begin(name), end(name));
        let Some(start) = out.find(&b).map(|i| i + b.len()) else {
            missing.push(*name);
            continue;
        };
        let Some(stop) = out[start..].find(&e).map(|i| start + i) else {
            missing.push(*name);
            continue;
        };
        let mut body = String::new();
        assert!(section(&mut body, name).unwrap(), "unknown section {name}");
        out.replace_range(start..stop, &body);
    }
    (out, missing)
}

#[test]
fn the_protocol_document_is_generated_from_the_crate() {
    let text = std::fs::read_to_string(DOC).expect("docs/bench-protocol.md");
    let (fresh, missing) = regenerate(&text);
    assert!(
        missing.is_empty(),
        "docs/bench-protocol.md lacks the generated sections {missing:?} (each between `{}` and `{}`)",
        begin("NAME").trim_end(),
        end("NAME")
    );
    if fresh != text {
        if std::env::var_os("PROTOCOL_DOC_UPDATE").is_some() {
            std::fs::write(DOC, fresh).expect("write docs/bench-protocol.md");
            return;
        }
        panic!(
            "docs/bench-protocol.md differs from lib/protocol; run \
             `PROTOCOL_DOC_UPDATE=1 cargo test -p protocol --features std --test protocol_doc`"
        );
    }
}

#[test]
fn an_unknown_section_is_refused() {
    assert!(!section(&mut String::new(), "no-such-section").unwrap());
}

/// Every results file committed under `docs/bench/` (each suite's `results.json`, the lock
/// micro-benchmarks' `host-locks*.json`) is in the one results schema.
#[test]
fn committed_results_fit_the_one_schema() {
    fn walk(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("docs/bench").flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                walk(&path, found);
            } else if name == "results.json"
                || (name.starts_with("host-locks") && name.ends_with(".json"))
            {
                found.push(path);
            }
        }
    }
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bench"));
    let mut found = Vec::new();
    walk(root, &mut found);
    assert!(
        found.len() >= 4,
        "results files under docs/bench: {found:?}"
    );
    for path in found {
        let text = std::fs::read_to_string(&path).unwrap();
        let results = protocol::results::Results::<serde_json::Value>::parse(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            results.plan.get("suite").is_some()
                || results.records.iter().all(|r| r.get("bench").is_some()),
            "{}: neither plan.suite nor benchmark records",
            path.display()
        );
    }
}
