//! `docs/abi.md` is generated from this crate's source and checked against it, so the document
//! cannot drift from the code: every call number, its registers (from `Syscall::encode`), its
//! description, rights and arguments (from the doc comments of `Syscall`), and every error code.
//!
//! `ABI_DOC_UPDATE=1 cargo test -p abi --test abi_doc` rewrites the document after a change.
//! The register layout is checked against the decoder too: a call must refuse a non-zero value
//! in every register the document says it does not use.

use abi::syscall::nr;
use abi::{Error, Regs, Syscall};

const SYSCALL_RS: &str = include_str!("../src/syscall.rs");
const ERROR_RS: &str = include_str!("../src/error.rs");
const DOC: &str = "../../docs/abi.md";

/// One system call as the source describes it.
#[derive(Debug)]
struct Call {
    number: usize,
    konst: String,
    name: String,
    doc: String,
    /// (field, its doc).
    fields: Vec<(String, String)>,
    /// The six registers of `encode`: the number constant, then field names or "0".
    regs: Vec<String>,
}

fn doc_text(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| l.trim().trim_start_matches("///").trim())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `nr` constants: (variant, constant, number).
fn numbers() -> Vec<(String, String, usize)> {
    let body = SYSCALL_RS
        .split("pub mod nr {")
        .nth(1)
        .expect("mod nr")
        .split("\n}\n")
        .next()
        .unwrap();
    let lines: Vec<&str> = body.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l.trim().strip_prefix("pub const ") else {
            continue;
        };
        let (name, value) = rest.split_once(": usize = ").expect("const");
        if name == "MAX" {
            continue;
        }
        let value: usize = value.trim_end_matches(';').parse().expect("number");
        let variant = lines[i - 1]
            .split("Syscall::")
            .nth(1)
            .and_then(|v| v.split(['`', ']']).next())
            .unwrap_or_else(|| panic!("nr::{name} has no [`Syscall::...`] doc link"));
        out.push((variant.to_string(), name.to_string(), value));
    }
    out
}

/// A variant of `Syscall`: name, doc, (field, doc) pairs.
type Variant = (String, String, Vec<(String, String)>);

/// Variants of `Syscall` with their docs and fields.
fn variants() -> Vec<Variant> {
    let body = SYSCALL_RS
        .split("pub enum Syscall {")
        .nth(1)
        .expect("enum Syscall")
        .split("\n}\n")
        .next()
        .unwrap();
    let mut out = Vec::new();
    let mut docs: Vec<&str> = Vec::new();
    let mut current: Option<Variant> = None;
    for l in body.lines() {
        let t = l.trim();
        if t.starts_with("///") {
            docs.push(l);
        } else if l.starts_with("    ") && !l.starts_with("        ") && !t.starts_with('}') {
            let name = t.trim_end_matches([',', '{', ' ']).to_string();
            if let Some(v) = current.take() {
                out.push(v);
            }
            current = Some((name, doc_text(&docs), Vec::new()));
            docs.clear();
        } else if l.starts_with("        ") && t.contains(':') {
            let field = t.split(':').next().unwrap().to_string();
            current
                .as_mut()
                .expect("field outside a variant")
                .2
                .push((field, doc_text(&docs)));
            docs.clear();
        }
    }
    out.extend(current);
    out
}

/// The register list of each variant in `encode`.
fn layouts() -> Vec<(String, Vec<String>)> {
    let body = SYSCALL_RS
        .split("pub fn encode(&self) -> Regs {")
        .nth(1)
        .expect("fn encode")
        .split("\n    }\n")
        .next()
        .unwrap();
    let mut out = Vec::new();
    for arm in body.split("Syscall::").skip(1) {
        let name: String = arm.chars().take_while(|c| c.is_alphanumeric()).collect();
        let expr = arm.split_once("=>").expect("arm").1;
        let regs: Vec<String> = if let Some(m) = expr.trim_start().strip_prefix("m(") {
            // m(NR, slot, msg): the message words follow.
            let args: Vec<&str> = m.split(')').next().unwrap().split(',').collect();
            let mut r = vec![args[0].trim().to_string(), clean(args[1])];
            r.extend((0..4).map(|i| format!("msg[{i}]")));
            r
        } else {
            let list = expr.rsplit('[').next().unwrap().split(']').next().unwrap();
            list.split(',')
                .map(clean)
                .filter(|s| !s.is_empty())
                .collect()
        };
        out.push((name, regs));
    }
    out
}

fn clean(e: &str) -> String {
    let e = e.trim();
    let e = e
        .strip_prefix("s(")
        .map(|s| s.trim_end_matches(')'))
        .unwrap_or(e);
    let e = e.split('.').next().unwrap();
    e.split(" as ").next().unwrap().trim().to_string()
}

fn calls() -> Vec<Call> {
    let vars = variants();
    let lays = layouts();
    let mut calls: Vec<Call> = numbers()
        .into_iter()
        .map(|(name, konst, number)| {
            let (_, doc, fields) = vars
                .iter()
                .find(|v| v.0 == name)
                .unwrap_or_else(|| panic!("nr::{konst} names {name}, which is not a variant"));
            let regs = lays
                .iter()
                .find(|l| l.0 == name)
                .unwrap_or_else(|| panic!("encode has no arm for {name}"))
                .1
                .clone();
            assert_eq!(regs.len(), 6, "{name}: encode gives {regs:?}");
            assert_eq!(regs[0], konst, "{name}: encode's number");
            Call {
                number,
                konst,
                name,
                doc: doc.clone(),
                fields: fields.clone(),
                regs,
            }
        })
        .collect();
    calls.sort_by_key(|c| c.number);
    assert_eq!(calls.len(), vars.len(), "every variant has a number");
    calls
}

/// Rust doc links and code spans as plain Markdown.
fn md(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("[`") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let end = after
            .find('`')
            .map(|e| after[1..].find('`').map(|x| x + 2).unwrap_or(e));
        let Some(end) = end else { break };
        let code = &after[..end];
        out.push_str(code);
        rest = &after[end..];
        rest = rest.strip_prefix(']').unwrap_or(rest);
        if let Some(r) = rest.strip_prefix('(') {
            rest = r.split_once(')').map(|x| x.1).unwrap_or(r);
        }
    }
    out.push_str(rest);
    out.replace("Syscall::", "").replace("Error::", "")
}

const X86_REGS: [&str; 6] = ["rax", "rdi", "rsi", "rdx", "r10", "r8"];
const ARM_REGS: [&str; 6] = ["r0", "r1", "r2", "r3", "r4", "r5"];

fn render() -> String {
    let mut d = String::new();
    d.push_str(
        "# The system-call ABI\n\n\
         Generated from `lib/abi/src/syscall.rs` and `lib/abi/src/error.rs` by `lib/abi/tests/abi_doc.rs`, which \
         `cargo xtask test` runs: it fails when this file and the code differ. After changing the \
         ABI, run `ABI_DOC_UPDATE=1 cargo test -p abi --test abi_doc` and commit the result.\n\n\
         User programs depend on the `abi` crate (`Syscall::encode`, `syscall::result`), not on \
         the kernel; `servers/src/sys.rs` shows the trap on both architectures.\n\n\
         ## Registers\n\n\
         A call passes six words: word 0 is the call number, words 1..5 the arguments. Every \
         argument word a call does not use must be zero (else `InvalidArgument`). The kernel \
         answers in the same six registers: word 0 is 0 on success or an error code; on success \
         word 1 is the call's result (the sender's badge for IPC, the notification word for \
         `Wait`, a new object's index, ...) and words 2..5 the received message. No other \
         register changes (x86_64: except `rcx` and `r11`, which `syscall` takes).\n\n\
         | word | x86_64 (`syscall`) | ARMv7 (`svc #0`) |\n|---|---|---|\n",
    );
    for i in 0..6 {
        d.push_str(&format!(
            "| {i} | `{}` | `{}` |\n",
            X86_REGS[i], ARM_REGS[i]
        ));
    }
    d.push_str(
        "\nNumbers from 0x100 up are the image's debug calls (console, test reports, \
         shutdown), handled by the HAL without entering the kernel.\n\n\
         ## Two phases\n\n\
         Every call is decoded completely first (`Syscall::decode`: the number, unused words \
         zero, ranges), then the kernel resolves the capabilities and checks every \
         precondition without changing anything, and only then executes, which cannot fail. So a \
         call that returns an error changed nothing (except `Recv`/`ReplyRecv`, which drop a \
         held reply capability first, as documented below).\n\n\
         Every call that names a capability slot can also fail with `OutOfRange` (slot beyond \
         the CSpace), `InvalidCap` (empty slot), `WrongType` and `MissingRight`; the rights each \
         needs are named below.\n\n\
         ## Calls\n\n| nr | call | word 1 | word 2 | word 3 | word 4 | word 5 |\n|---:|---|---|---|---|---|---|\n",
    );
    for c in calls() {
        let w: Vec<String> = c.regs[1..]
            .iter()
            .map(|r| {
                if r == "0" {
                    "-".into()
                } else {
                    format!("`{r}`")
                }
            })
            .collect();
        d.push_str(&format!(
            "| {} | [{}](#{}) | {} |\n",
            c.number,
            c.name,
            c.name.to_lowercase(),
            w.join(" | ")
        ));
    }
    for c in calls() {
        d.push_str(&format!(
            "\n### {}\n\n`nr::{}` = {}. {}\n",
            c.name,
            c.konst,
            c.number,
            md(&c.doc)
        ));
        if !c.fields.is_empty() {
            d.push('\n');
            for (f, doc) in &c.fields {
                let word = c.regs.iter().position(|r| r == f);
                let word = match word {
                    Some(i) => format!("word {i}"),
                    None if f == "msg" => "words 2..5".to_string(),
                    None => "see above".to_string(),
                };
                d.push_str(&format!("- `{f}` ({word}): {}\n", md(doc)));
            }
        }
    }
    d.push_str(
        "\n## Errors\n\nThe code in result word 0.\n\n| code | error | meaning |\n|---:|---|---|\n",
    );
    let body = ERROR_RS.split("pub enum Error {").nth(1).unwrap();
    let mut docs: Vec<&str> = Vec::new();
    for l in body.lines() {
        let t = l.trim();
        if t.starts_with("///") {
            docs.push(l);
        } else if let Some((name, code)) = t.trim_end_matches(',').split_once(" = ") {
            d.push_str(&format!(
                "| {code} | `{name}` | {} |\n",
                md(&doc_text(&docs))
            ));
            docs.clear();
        } else if t == "}" {
            break;
        }
    }
    d
}

#[test]
fn docs_abi_md_matches_the_code() {
    let want = render();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DOC);
    if std::env::var_os("ABI_DOC_UPDATE").is_some() {
        std::fs::write(&path, &want).expect("write docs/abi.md");
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let line = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .map_or(have.lines().count().min(want.lines().count()), |i| i);
        panic!(
            "docs/abi.md differs from the ABI in the code from line {} on; run \
             `ABI_DOC_UPDATE=1 cargo test -p abi --test abi_doc` and review the diff",
            line + 1
        );
    }
}

#[test]
fn every_error_code_is_in_the_table() {
    let doc = render();
    for e in Error::ALL {
        assert!(
            doc.contains(&format!("| {} | `{e:?}` |", e.code())),
            "{e:?} missing"
        );
    }
}

#[test]
fn the_documented_unused_words_are_refused_when_non_zero() {
    for c in calls() {
        for (i, r) in c.regs.iter().enumerate().skip(1) {
            if r != "0" {
                continue;
            }
            let mut raw: Regs = [c.number, 0, 0, 0, 0, 0];
            raw[i] = 1;
            assert_eq!(
                Syscall::decode(&raw),
                Err(Error::InvalidArgument),
                "{}: word {i} is documented unused but accepted when non-zero",
                c.name
            );
        }
    }
}

#[test]
fn every_number_the_decoder_knows_is_documented() {
    let documented: Vec<usize> = calls().iter().map(|c| c.number).collect();
    for n in 0..=nr::MAX + 8 {
        let known = Syscall::decode(&[n, 0, 0, 0, 0, 0]) != Err(Error::UnknownSyscall);
        assert_eq!(
            known,
            documented.contains(&n),
            "call number {n}: decoder and document disagree"
        );
    }
}
