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
